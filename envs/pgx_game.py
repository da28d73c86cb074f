"""A pgx game seen through the search contract.

`PgxGame` wraps one pgx environment for batches of states [B]: init, step, the
player to move, legal masks, terminal results, and the two pieces a search
needs, a root (`root`) and a `recurrent_fn` built on the true simulator and a
leaf evaluator.

Rewards and values are from the point of view of the player to move (1 win,
0 draw, -1 loss), the transition reward is for the player who moved, and a
terminal (or truncated) transition has discount 0, so every game here fits the
[-1, 1] two-player convention of mcts_jax.

Embeddings: the search stores one embedding per node, so the pgx state is kept
lean (`lean_state`), and `full_state` puts back what was dropped:

- `observation` is dropped: pgx recomputes it on every step, and under `jit`
  XLA removes that computation when nothing reads it (an evaluator that does
  not look at observations, or a replayed transition), so the observation
  is computed only when a network needs it.
- both legal masks (`legal_action_mask`, and chess's internal copy) are
  dropped: the tree already marks illegal child slots, no illegal action is
  ever stepped, and pgx recomputes them after each move.
- boards and board histories are stored as int8 (int16 above 127 cells).
- chess keeps only the newest `CHESS_HASH_WINDOW` position hashes of its
  513: a position can only repeat one seen since the last capture or pawn
  move, and the game ends after 100 such half-moves, so older hashes never
  match (repetition draws and the repetition planes of the observation are
  unchanged; a test steps lean and full states side by side).

`lean_bytes()` gives the bytes per node: chess 11.7 KB -> about 1.5 KB.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import pgx

import mcts_jax

# evaluator(params, rng_key, game, states [B]) -> (prior_logits [B, A], value [B]);
# value is for the player to move in `states`; `states` are full pgx states
# (observation and legal mask present) that are not terminal.
Evaluator = Callable[[Any, chex.PRNGKey, "PgxGame", pgx.State], Tuple[chex.Array, chex.Array]]

MAX_LEGAL_MOVES = {"chess": 218}
# Newest position hashes a lean chess state keeps (see the module docstring).
CHESS_HASH_WINDOW = 102
BOARD_FIELDS = ("board", "board_history")


@dataclasses.dataclass(frozen=True, eq=False)
class PgxGame:
    """One pgx game, batched. Compare by identity (it is a static jit argument).

    Attributes:
      name: the pgx env id, e.g. "tic_tac_toe".
      env: the pgx environment.
      num_actions: A, the size of the action space.
      observation_shape: shape of one observation.
    """

    name: str
    env: pgx.Env

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    @property
    def max_legal_moves(self) -> int:
        """An upper bound on the legal moves of any position (chess: 218)."""
        return MAX_LEGAL_MOVES.get(self.name, self.num_actions)

    @property
    def observation_shape(self) -> Tuple[int, ...]:
        return self.env.observation_shape

    # ---- batched simulator -----------------------------------------------
    def init(self, rng_key: chex.PRNGKey, batch_size: int) -> pgx.State:
        """[B] initial states (pgx picks who moves first from the key)."""
        return jax.vmap(self.env.init)(jax.random.split(rng_key, batch_size))

    def step(self, states: pgx.State, actions: chex.Array,
             rng_key: Optional[chex.PRNGKey] = None) -> pgx.State:
        """Steps [B] full states with actions [B]; stochastic games use the key."""
        if rng_key is None:
            return jax.vmap(self.env.step)(states, actions)
        keys = jax.random.split(rng_key, actions.shape[0])
        return jax.vmap(self.env.step)(states, actions, keys)

    @staticmethod
    def current_player(states: pgx.State) -> chex.Array:
        """[B] int32 pgx player id (0 or 1) of the player to move."""
        return states.current_player

    @staticmethod
    def legal_actions(states: pgx.State) -> chex.Array:
        """[B, A] bool legal mask (pgx marks all actions legal once terminal)."""
        return states.legal_action_mask

    @staticmethod
    def is_terminal(states: pgx.State) -> chex.Array:
        """[B] bool: the game is over (terminated or truncated)."""
        return states.terminated | states.truncated

    @staticmethod
    def reward_for(states: pgx.State, player: chex.Array) -> chex.Array:
        """[B] reward of the last transition for `player` [B]."""
        return jnp.take_along_axis(states.rewards, player[:, None].astype(jnp.int32), 1)[:, 0]

    def heuristic(self, states: pgx.State) -> chex.Array:
        """[B] static evaluation in (-1, 1) for the player to move, used at a
        minimax horizon: material for chess (`chess_tools.material`), 0 for
        the other games."""
        if self.name == "chess":
            from envs import chess_tools
            return chess_tools.material(states)
        return jnp.zeros(states.current_player.shape, jnp.float32)

    # ---- lean embeddings ---------------------------------------------------
    @functools.cached_property
    def _full_shapes(self) -> pgx.State:
        """Shapes and dtypes of one full state (no batch axis)."""
        return jax.eval_shape(self.env.init, jax.random.key(0))

    def _board_dtype(self):
        return jnp.int8 if self._full_shapes._x.board.shape[-1] <= 127 else jnp.int16

    def lean_state(self, states: pgx.State) -> pgx.State:
        """The embedding stored per node [B]: recomputable fields emptied,
        boards narrowed (see the module docstring)."""
        batch_size = states.current_player.shape[0]
        empty = jnp.zeros((batch_size, 0), jnp.bool_)
        inner = states._x
        narrowed = {name: getattr(inner, name).astype(self._board_dtype())
                    for name in BOARD_FIELDS if hasattr(inner, name)}
        if self.name == "chess":
            narrowed.update(legal_action_mask=empty,
                            hash_history=inner.hash_history[:, :CHESS_HASH_WINDOW])
        return states.replace(observation=empty, legal_action_mask=empty,
                              _x=inner._replace(**narrowed))

    def full_state(self, lean: pgx.State) -> pgx.State:
        """A steppable state [B] from a lean one. The legal masks are set
        all-True (the search never steps an illegal action; pgx recomputes
        them on every step); the observation is zeros (pgx recomputes it on
        every step); boards get their dtypes back; chess hashes older than
        the window are zeros (they never match, see the module docstring)."""
        batch_size = lean.current_player.shape[0]
        shapes = self._full_shapes

        def zeros(leaf):
            return jnp.zeros((batch_size,) + leaf.shape, leaf.dtype)

        inner = lean._x
        restored = {name: getattr(inner, name).astype(getattr(shapes._x, name).dtype)
                    for name in BOARD_FIELDS if hasattr(inner, name)}
        if self.name == "chess":
            restored.update(
                legal_action_mask=jnp.ones((batch_size, self.num_actions), jnp.bool_),
                hash_history=zeros(shapes._x.hash_history).at[:, :CHESS_HASH_WINDOW].set(
                    inner.hash_history))
        return lean.replace(
            observation=zeros(shapes.observation),
            legal_action_mask=jnp.ones((batch_size, self.num_actions), jnp.bool_),
            _x=inner._replace(**restored))

    def lean_bytes(self) -> int:
        """Bytes of one lean state (the per-node embedding of a search)."""
        lean = jax.eval_shape(lambda key: self.lean_state(self.init(key, 1)), jax.random.key(0))
        return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(lean))

    def tree_memory(self, batch_size: int, max_nodes: int, max_children: Optional[int] = None,
                    replay_embeddings: bool = False) -> "mcts_jax.memory.MemoryReport":
        """The memory of a batch of search trees over this game's lean states
        (see `mcts_jax.memory.tree_memory`); `report.table()` prints it."""
        lean = jax.eval_shape(lambda key: self.lean_state(self.init(key, 1)), jax.random.key(0))
        one = jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape[1:], leaf.dtype), lean)
        return mcts_jax.memory.tree_memory(one, self.num_actions, batch_size, max_nodes,
                                           max_children, replay_embeddings)

    def full_bytes(self) -> int:
        """Bytes of one full pgx state (what an mctx user would store)."""
        return sum(leaf.size * leaf.dtype.itemsize
                   for leaf in jax.tree.leaves(self._full_shapes))

    # ---- the search contract -------------------------------------------------
    def root(self, params: Any, rng_key: chex.PRNGKey, states: pgx.State,
             evaluator: Evaluator) -> Tuple[mcts_jax.RootFnOutput, chex.Array]:
        """(RootFnOutput, invalid_actions [B, A]) for full, non-terminal states.
        Compiled once per game, evaluator and shapes (also outside jit)."""
        return _root(self, evaluator, params, rng_key, states)

    def recurrent_fn(self, evaluator: Evaluator) -> mcts_jax.RecurrentFn:
        """A recurrent_fn that steps the true simulator and evaluates the new
        states with `evaluator`. The same evaluator gives the same function
        object, so repeated searches reuse one compilation."""
        return _recurrent_fn_for(self, evaluator)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _root(game: PgxGame, evaluator: Evaluator, params, rng_key, states):
    logits, value = evaluator(params, rng_key, game, states)
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=value,
                                 embedding=game.lean_state(states))
    return root, ~game.legal_actions(states)


_RECURRENT_FNS: dict = {}


def _recurrent_fn_for(game: PgxGame, evaluator: Evaluator) -> mcts_jax.RecurrentFn:
    key = (id(game), evaluator)
    if key in _RECURRENT_FNS:
        return _RECURRENT_FNS[key][1]

    def recurrent_fn(params, rng_key, action, embedding):
        step_key, eval_key = jax.random.split(rng_key)
        states = game.full_state(embedding)
        mover = game.current_player(states)
        states = game.step(states, action, step_key)
        terminal = game.is_terminal(states)
        same_player = game.current_player(states) == mover
        logits, value = evaluator(params, eval_key, game, states)
        output = mcts_jax.RecurrentFnOutput(
            reward=game.reward_for(states, mover),
            discount=jnp.where(terminal, 0.0, jnp.where(same_player, 1.0, -1.0)),
            prior_logits=logits,
            value=jnp.where(terminal, 0.0, value),
            invalid_actions=~game.legal_actions(states),
        )
        return output, game.lean_state(states)

    _RECURRENT_FNS[key] = (game, recurrent_fn)  # keep `game` alive with its id
    return recurrent_fn
