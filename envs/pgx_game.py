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
lean (`lean_state`), and `full_state` puts back what was dropped. What is
dropped or narrowed is the game's `LeanLayout` (its registry entry,
envs/registry.py):

- `observation` is dropped: pgx recomputes it on every step, and under `jit`
  XLA removes that computation when nothing reads it (an evaluator that does
  not look at observations, or a replayed transition), so the observation
  is computed only when a network needs it.
- legal masks (`legal_action_mask`, and inner copies such as chess's and
  shogi's) are dropped: the tree already marks illegal child slots, no
  illegal action is ever stepped, and pgx recomputes them after each move.
- boards and board histories are stored as int8 (int16 for Go 19x19's
  chain ids).
- history windows: chess and Gardner chess keep the newest 108 position
  hashes of their 513 / 257 (see the registry's comment; results and
  observations are unchanged; the conformance test steps lean and full
  states side by side).

`lean_bytes()` gives the bytes per node: chess 11.7 KB -> about 1.5 KB
(docs/games.md has every game's).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import pgx

import mcts_jax
from mcts_jax.evaluators import Evaluator  # the evaluator type, re-exported as envs.Evaluator


# Always dropped from a lean state (pgx recomputes both on every step).
_ALWAYS_DROPPED = ("observation", "legal_action_mask")


def _field(path) -> str:
    """A state leaf's path as the registry names it, e.g. "_x.board"."""
    return jax.tree_util.keystr(path)[1:]


@dataclasses.dataclass(frozen=True, eq=False)
class PgxGame:
    """One pgx game, batched. Compare by identity (it is a static jit argument).

    Build it with `envs.make(name)`.

    Attributes:
      name: the game's name, e.g. "tic_tac_toe" (its registry key).
      env: the pgx environment.
      spec: its `envs.registry.GameSpec` (bounds, symmetries, lean layout,
        default network, training settings).
      num_actions: A, the size of the action space.
      observation_shape: shape of one observation.
      discount: the search's discount of one move where the same player
        moves again: 1 (the default) for the games as pgx defines them;
        below 1 only for a one-player game (`envs.make(name, discount=)`),
        whose values are then discounted returns.
    """

    name: str
    env: pgx.Env
    spec: Any  # envs.registry.GameSpec
    discount: float = 1.0

    @property
    def num_players(self) -> int:
        return int(self.env.num_players)

    def search_discount(self, states: pgx.State, mover: chex.Array) -> chex.Array:
        """The search's discount [B] of the move that led to `states` [B],
        made by `mover` [B]: 0 at a terminal state, `self.discount` where
        `mover` moves again, -1 where the other player moves (values are
        always from the point of view of the player to move)."""
        same_player = self.current_player(states) == mover
        return jnp.where(self.is_terminal(states), 0.0,
                         jnp.where(same_player, self.discount, -1.0))

    @functools.cached_property
    def num_actions(self) -> int:
        # From the abstract state: pgx's own property runs `init` eagerly on
        # every call (slow for shogi and Go 19x19).
        return int(self._full_shapes.legal_action_mask.shape[-1])

    @property
    def max_legal_moves(self) -> int:
        """An upper bound on the legal moves of any position (chess: 218)."""
        return self.spec.max_legal_moves

    @property
    def longest_game(self) -> int:
        """An upper bound on a game's length in plies (chess: 512)."""
        return self.spec.longest_game

    def symmetry_tables(self):
        """This game's `envs.symmetry` tables, or None."""
        return self.spec.symmetry_tables()

    @functools.cached_property
    def observation_shape(self) -> Tuple[int, ...]:
        return tuple(self._full_shapes.observation.shape)

    # ---- batched simulator -----------------------------------------------
    def init(self, rng_key: chex.PRNGKey, batch_size: int) -> pgx.State:
        """[B] initial states (pgx picks who moves first from the key).
        Compiled once per game and batch size, also outside jit."""
        return _init(self, batch_size, rng_key)

    def step(self, states: pgx.State, actions: chex.Array,
             rng_key: Optional[chex.PRNGKey] = None) -> pgx.State:
        """Steps [B] full states with actions [B]; stochastic games use the key.
        Compiled once per game and shapes, also outside jit (a step run op by
        op compiles each of its few hundred operations on its own)."""
        return _step(self, states, actions, rng_key)

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
        minimax horizon: the registry's heuristic (material for chess and
        Gardner chess, `chess_tools.material`), 0 for the other games."""
        if self.spec.heuristic is not None:
            return self.spec.heuristic(states).astype(jnp.float32)
        return jnp.zeros(states.current_player.shape, jnp.float32)

    # ---- lean embeddings ---------------------------------------------------
    @functools.cached_property
    def _full_shapes(self) -> pgx.State:
        """Shapes and dtypes of one full state (no batch axis)."""
        return jax.eval_shape(self.env.init, jax.random.key(0))

    def lean_state(self, states: pgx.State) -> pgx.State:
        """The embedding stored per node [B]: observation and legal masks
        emptied ([B, 0]), boards narrowed, history windows cut (the game's
        `LeanLayout`, see the module docstring)."""
        layout = self.spec.lean
        dropped = set(_ALWAYS_DROPPED) | set(layout.masks)
        narrow, windows = dict(layout.narrow), dict(layout.windows)

        def lean(path, leaf):
            name = _field(path)
            if name in dropped:
                return jnp.zeros((leaf.shape[0], 0), jnp.bool_)
            if name in windows:
                leaf = leaf[:, :windows[name]]
            return leaf.astype(narrow[name]) if name in narrow else leaf

        return jax.tree_util.tree_map_with_path(lean, states)

    def full_state(self, lean: pgx.State) -> pgx.State:
        """A steppable state [B] from a lean one. Legal masks are set
        all-True (the search never steps an illegal action; pgx recomputes
        them on every step); the observation is zeros (pgx recomputes it on
        every step); narrowed fields get their dtypes back; rows past a
        history window are zeros (they never matter, see the registry)."""
        batch_size = lean.current_player.shape[0]
        layout = self.spec.lean
        masks = set(layout.masks) | {"legal_action_mask"}
        windows = dict(layout.windows)

        def full(path, leaf, shape):
            name = _field(path)
            if name in masks:
                return jnp.ones((batch_size,) + shape.shape, jnp.bool_)
            if name == "observation":
                return jnp.zeros((batch_size,) + shape.shape, shape.dtype)
            leaf = leaf.astype(shape.dtype)
            if name in windows:
                leaf = jnp.zeros((batch_size,) + shape.shape, shape.dtype).at[
                    :, :windows[name]].set(leaf)
            return leaf

        return jax.tree_util.tree_map_with_path(full, lean, self._full_shapes)

    def lean_bytes(self) -> int:
        """Bytes of one lean state (the per-node embedding of a search)."""
        lean = jax.eval_shape(lambda key: self.lean_state(self.init(key, 1)), jax.random.key(0))
        return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(lean))

    def tree_memory(self, batch_size: int, max_nodes: int, max_children: Optional[int] = None,
                    replay_embeddings: bool = False,
                    transpositions: bool = False) -> "mcts_jax.memory.MemoryReport":
        """The memory of a batch of search trees over this game's lean states
        (see `mcts_jax.memory.tree_memory`); `report.table()` prints it."""
        lean = jax.eval_shape(lambda key: self.lean_state(self.init(key, 1)), jax.random.key(0))
        one = jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(leaf.shape[1:], leaf.dtype), lean)
        return mcts_jax.memory.tree_memory(one, self.num_actions, batch_size, max_nodes,
                                           max_children, replay_embeddings, transpositions)

    def full_bytes(self) -> int:
        """Bytes of one full pgx state (what an mctx user would store)."""
        return sum(leaf.size * leaf.dtype.itemsize
                   for leaf in jax.tree.leaves(self._full_shapes))

    def position_key(self, embedding: pgx.State) -> chex.Array:
        """[M, 2] uint32 keys of lean states [M] (a search's embeddings): a
        hash of their position (`GameSpec.position`), for a graph search:
        `SearchOptions(transpositions=True, position_key=game.position_key)`."""
        return mcts_jax.hash_embedding(self.spec.position_of(embedding))

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
def _init(game: PgxGame, batch_size: int, rng_key):
    return jax.vmap(game.env.init)(jax.random.split(rng_key, batch_size))


@functools.partial(jax.jit, static_argnums=0)
def _step(game: PgxGame, states, actions, rng_key):
    if rng_key is None:
        return jax.vmap(game.env.step)(states, actions)
    keys = jax.random.split(rng_key, actions.shape[0])
    return jax.vmap(game.env.step)(states, actions, keys)


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
        logits, value = evaluator(params, eval_key, game, states)
        output = mcts_jax.RecurrentFnOutput(
            reward=game.reward_for(states, mover),
            discount=game.search_discount(states, mover),
            prior_logits=logits,
            value=jnp.where(terminal, 0.0, value),
            invalid_actions=~game.legal_actions(states),
        )
        return output, game.lean_state(states)

    _RECURRENT_FNS[key] = (game, recurrent_fn)  # keep `game` alive with its id
    return recurrent_fn
