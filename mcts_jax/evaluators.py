"""Leaf evaluators: where a new node's prior and value come from.

An evaluator is a callable `(params, rng_key, game, states) -> (prior_logits
[B, A], value [B])`, the value from the point of view of the player to move in
`states`, on the game's reward scale ([-1, 1] for the registry's games;
points for 2048, +-3 for backgammon: `envs.make_chance_game`). `Evaluator`
is its type. An evaluator reads the game only through `Game`, the small
protocol this module defines (a batched step, the legal mask, whose move it
is, whether a state has ended and what a transition paid); the `envs` games
implement it, and so can any game written in JAX. Evaluators are frozen
dataclasses, so equal settings compare equal and share one compiled search.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Protocol, Tuple, runtime_checkable

import jax
import jax.numpy as jnp

# evaluator(params, rng_key, game, states [B]) -> (prior_logits [B, A], value [B]);
# value is for the player to move in `states`; `game` implements `Game` and
# `states` are its batched states, not terminal. (`envs.Evaluator` is this type.)
Evaluator = Callable[[Any, jax.Array, Any, Any], Tuple[jax.Array, jax.Array]]


@runtime_checkable
class Game(Protocol):
    """What an evaluator reads of a game (the `envs` games implement it).

    `states` is any pytree of batched states, leading axis [B]; players are
    int32 ids. Rewards and `heuristic` are on the game's own scale.

    `num_actions` is A, the size of the action space, and the methods are

    - `step(states, actions [B] int32, rng_key) -> states`: one move in
      every row (a stochastic game draws its chance outcome from `rng_key`);
    - `legal_actions(states) -> [B, A] bool`: True = legal;
    - `current_player(states) -> [B] int32`: the player to move;
    - `is_terminal(states) -> [B] bool`: the game has ended;
    - `reward_for(states, player [B]) -> [B] float32`: what the transition
      into `states` paid `player`;
    - `heuristic(states) -> [B] float32`: an estimate of a non-terminal
      state for its player to move (0 where a game has none); read only by
      `Minimax` at its horizon and `RandomPlayouts(heuristic_at_cutoff=True)`.

    A game may also say `max_legal_moves` (the most legal moves a state can
    have; `Minimax` considers that many moves by default, else A). `Network`
    reads `states.observation` (the observation of the player to move, as
    pgx states hold it), nothing of the game.
    """

    num_actions: int

    def step(self, states: Any, actions: jax.Array, rng_key: jax.Array) -> Any: ...

    def legal_actions(self, states: Any) -> jax.Array: ...

    def current_player(self, states: Any) -> jax.Array: ...

    def is_terminal(self, states: Any) -> jax.Array: ...

    def reward_for(self, states: Any, player: jax.Array) -> jax.Array: ...

    def heuristic(self, states: Any) -> jax.Array: ...


def _uniform_logits(game: Game, states: Any) -> jax.Array:
    """[B, A] zeros: uniform priors."""
    return jnp.zeros((_batch_size(states), game.num_actions), jnp.float32)


def _batch_size(states: Any) -> int:
    """B, the leading axis of every leaf of `states`."""
    return jax.tree.leaves(states)[0].shape[0]


@dataclasses.dataclass(frozen=True)
class Uniform:
    """Uniform priors and value 0: the search sees only terminal results."""

    def __call__(self, params, rng_key, game, states):
        del params, rng_key
        return _uniform_logits(game, states), jnp.zeros((_batch_size(states),), jnp.float32)


@dataclasses.dataclass(frozen=True)
class RandomPlayouts:
    """Uniform priors; value = mean result of `num_playouts` uniformly random
    games played from the state, each cut at `max_length` moves. A result is
    the sum of the rewards the playout collects for the player to move:
    1 / 0 / -1 in the two-player board games (rewarded only at the end, so an
    unfinished playout counts 0), +-1 to +-3 in backgammon, and in 2048 (one
    player) the points scored in the rest of the game, hundreds to thousands.

    Batched: the B x num_playouts games advance together, one pgx step per
    move for all of them, until every one has ended or hit the cap.

    heuristic_at_cutoff: a playout cut at `max_length` adds
    `game.heuristic` of the state it reached (for its player to move,
    turned to the view of the playout's player) instead of nothing. For
    long games whose playouts cannot be afforded to the end (backgammon's
    run 90-700 plies; its heuristic is the pip-count race), so short
    playouts still say who is ahead.
    """

    num_playouts: int = 1
    max_length: int = 512
    heuristic_at_cutoff: bool = False

    def __call__(self, params, rng_key, game, states):
        del params
        batch_size = _batch_size(states)
        repeated = jax.tree.map(lambda x: jnp.repeat(x, self.num_playouts, axis=0), states)
        player = game.current_player(repeated)

        def cond(carry):
            step, _, _, _ = carry
            return (step < self.max_length) & ~jnp.all(game.is_terminal(carry[1]))

        def body(carry):
            step, playing, result, key = carry
            key, action_key, step_key = jax.random.split(key, 3)
            legal = game.legal_actions(playing)
            action = jax.random.categorical(action_key, jnp.where(legal, 0.0, -jnp.inf))
            playing = game.step(playing, action, step_key)
            # pgx gives rewards only on the transition that ends the game.
            return step + 1, playing, result + game.reward_for(playing, player), key

        initial = (jnp.int32(0), repeated, jnp.zeros(player.shape, jnp.float32), rng_key)
        _, reached, result, _ = jax.lax.while_loop(cond, body, initial)
        if self.heuristic_at_cutoff:
            same_side = game.current_player(reached) == player
            estimate = game.heuristic(reached) * jnp.where(same_side, 1.0, -1.0)
            result = result + jnp.where(game.is_terminal(reached), 0.0, estimate)
        value = result.reshape(batch_size, self.num_playouts).mean(axis=1)
        return _uniform_logits(game, states), value


@dataclasses.dataclass(frozen=True)
class Minimax:
    """Value = depth-limited negamax over the legal moves; priors from the
    same search: softmax(q / prior_temperature) of each move's negamax value
    q (from `move_values`), so a move that mates or wins material is tried
    first. A legal move beyond `max_moves` gets logit 0 (as a move of value
    0). `prior_temperature=None` gives uniform priors (this evaluator's
    behaviour before issue 64): with uniform priors PUCT sees every
    unvisited move at the lowest Q, and a search led by one good-looking move
    can leave a mate in one unvisited for thousands of simulations.

    Terminal results are exact; at the horizon `game.heuristic(states)` (material
    for chess, 0 otherwise) is used. Each level considers up to `max_moves`
    legal moves per state (the lowest action ids; None = the game's
    `max_legal_moves`, so no legal move is dropped), so one
    evaluation steps B x max_moves^depth states: keep depth small (1 to 3)
    and set max_moves for large action spaces (chess has at most 218 legal
    moves).

    Cost and memory. Legal moves come first in each row, so a level steps
    its moves `moves_per_chunk` at a time and stops once every row's legal
    moves are done: a chess position with 35 legal moves costs 48 steps,
    not 218. A level whose rows x chunk would hold more than
    `max_bytes_per_pass` bytes of full game states steps its rows in
    sequential passes (`lax.map`), so memory stays about constant in B (a
    step's temporaries are a few times the states it steps); the default,
    256 MiB, is about 360 chess rows at a chunk of 16 (one chess state is
    46 KB) and never splits the small games' batches. The values are the
    same either way, up to float rounding of `game.heuristic` (1 ulp; a
    game whose width fits one chunk and one pass runs exactly the one-step
    program). None for either: all at once, as one step of B x
    max_moves states (`uct_policy(expand_all=True)` evaluates every child of
    a leaf: for chess that is 218 children x 218 moves, 47,524 steps and
    over 8 GB of temporaries per position). A stochastic game's chance
    outcomes are drawn from one key per chunk and per pass.
    """

    depth: int = 1
    max_moves: Optional[int] = None
    prior_temperature: Optional[float] = 0.1
    moves_per_chunk: Optional[int] = 16
    max_bytes_per_pass: Optional[int] = 2 ** 28

    def __post_init__(self):
        if self.prior_temperature is not None and not self.prior_temperature > 0:
            raise ValueError(f"Minimax: prior_temperature must be None or > 0, got "
                             f"{self.prior_temperature!r}")
        for name in ("moves_per_chunk", "max_bytes_per_pass"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int) and not isinstance(value, bool)
                                          and value > 0):
                raise ValueError(f"Minimax: {name} must be None or an int > 0, got {value!r}")

    def __call__(self, params, rng_key, game, states):
        del params
        if self.depth == 0 or self.prior_temperature is None:
            return _uniform_logits(game, states), self.negamax(rng_key, game, states,
                                                               self.depth)
        moves, valid, q = self.move_values(rng_key, game, states, self.depth)
        best = jnp.max(jnp.where(valid, q, -jnp.inf), axis=1)
        value = jnp.where(jnp.isfinite(best), best, 0.0)
        rows = jnp.arange(moves.shape[0])[:, None]
        logits = _uniform_logits(game, states).at[rows, moves].set(
            jnp.where(valid, q / self.prior_temperature, 0.0))
        return logits, value

    def negamax(self, rng_key, game, states, depth):
        """[B] value of non-terminal `states` for their player to move."""
        if depth == 0:
            return game.heuristic(states).astype(jnp.float32)
        _, valid, q = self.move_values(rng_key, game, states, depth)
        best = jnp.max(jnp.where(valid, q, -jnp.inf), axis=1)
        return jnp.where(jnp.isfinite(best), best, 0.0)

    def move_values(self, rng_key, game, states, depth):
        """Negamax Q of the candidate moves of `states` (depth >= 1).

        Returns (moves [B, W] action ids, valid [B, W] bool, q [B, W] float,
        the value of each move for the player to move in `states`).
        """
        legal = game.legal_actions(states)
        batch_size, num_actions = legal.shape
        width = min(self.max_moves or getattr(game, "max_legal_moves", num_actions),
                    num_actions)
        # Legal actions first, lowest ids first.
        order = legal.astype(jnp.float32) - jnp.arange(num_actions) / (2.0 * num_actions)
        _, moves = jax.lax.top_k(order, width)  # [B, width]
        valid = jnp.take_along_axis(legal, moves, axis=1)
        chunk = self._chunk(width)
        rows = self._rows_per_pass(states, batch_size, chunk)
        if rows >= batch_size:
            return moves, valid, self._move_q(rng_key, game, states, moves, valid, depth)
        # Sequential passes of `rows` rows; the last pass repeats the final
        # row where the batch does not divide (its values are dropped).
        passes = -(-batch_size // rows)
        index = jnp.minimum(jnp.arange(passes * rows), batch_size - 1).reshape(passes, rows)

        def one_pass(key_and_rows):
            key, part = key_and_rows
            part_states = jax.tree.map(lambda x: x[part], states)
            return self._move_q(key, game, part_states, moves[part], valid[part], depth)

        q = jax.lax.map(one_pass, (jax.random.split(rng_key, passes), index))
        return moves, valid, q.reshape(passes * rows, width)[:batch_size]

    def _chunk(self, width):
        return min(width, self.moves_per_chunk or width)

    def _rows_per_pass(self, states, batch_size, chunk):
        """How many rows one pass steps (static: from the shapes)."""
        if self.max_bytes_per_pass is None:
            return batch_size
        row_bytes = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(states)) / batch_size
        return max(1, int(self.max_bytes_per_pass // (row_bytes * chunk)))

    def _move_q(self, rng_key, game, states, moves, valid, depth):
        """[B, W] negamax value of playing `moves` [B, W] (legal ones first,
        `valid` [B, W]) in `states` [B], for the player to move in `states`;
        0 where a chunk holds no row's legal move."""
        batch_size, width = moves.shape
        chunk = self._chunk(width)
        if chunk == width:
            return self._chunk_q(rng_key, game, states, moves, depth)
        chunks = -(-width // chunk)
        padded = jnp.pad(moves, ((0, 0), (0, chunks * chunk - width)), mode="edge")
        needed = (jnp.max(jnp.sum(valid, axis=1)) + chunk - 1) // chunk

        def one_chunk(i, q):
            part = jax.lax.dynamic_slice_in_dim(padded, i * chunk, chunk, axis=1)
            values = self._chunk_q(jax.random.fold_in(rng_key, i), game, states, part, depth)
            return jax.lax.dynamic_update_slice_in_dim(q, values, i * chunk, axis=1)

        q = jax.lax.fori_loop(0, needed, one_chunk,
                              jnp.zeros((batch_size, chunks * chunk), jnp.float32))
        return q[:, :width]

    def _chunk_q(self, rng_key, game, states, moves, depth):
        """[B, C] negamax value of each of `moves` [B, C] in `states` [B]."""
        batch_size, per_row = moves.shape
        step_key, deeper_key = jax.random.split(rng_key)
        repeated = jax.tree.map(lambda x: jnp.repeat(x, per_row, axis=0), states)
        mover = game.current_player(repeated)
        children = game.step(repeated, moves.reshape(-1), step_key)
        terminal = game.is_terminal(children)
        sign = jnp.where(game.current_player(children) == mover, 1.0, -1.0)
        below = self.negamax(deeper_key, game, children, depth - 1)
        q = game.reward_for(children, mover) + jnp.where(terminal, 0.0, sign * below)
        return q.reshape(batch_size, per_row)

    def best_action(self, rng_key, game, states):
        """[B] the move a depth-`depth` minimax player makes (lowest id on ties)."""
        moves, valid, q = self.move_values(rng_key, game, states, self.depth)
        best = jnp.argmax(jnp.where(valid, q, -jnp.inf), axis=1)
        return jnp.take_along_axis(moves, best[:, None], axis=1)[:, 0].astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class Network:
    """Priors and value from a function of the observation.

    apply_fn(params, observation [B, ...]) -> (logits [B, A], value [B]), value
    for the player to move, in [-1, 1]. Observations are pgx's, from the
    point of view of the player to move.
    """

    apply_fn: Callable[[Any, jax.Array], Any]

    def __call__(self, params, rng_key, game, states):
        del rng_key
        logits, value = self.apply_fn(params, states.observation)
        return logits.astype(jnp.float32), value.reshape(-1).astype(jnp.float32)
