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
lean: `observation` (recomputed by pgx on every step) and `legal_action_mask`
(the tree already marks illegal child slots, and no illegal action is ever
stepped) are replaced by empty placeholders. `full_state` puts them back.
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

LEAN_FIELDS = ("observation", "legal_action_mask")
MAX_LEGAL_MOVES = {"chess": 218}


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
    def lean_state(self, states: pgx.State) -> pgx.State:
        """The embedding stored per node: recomputable fields emptied."""
        batch_size = states.current_player.shape[0]
        return states.replace(observation=jnp.zeros((batch_size, 0), jnp.bool_),
                              legal_action_mask=jnp.zeros((batch_size, 0), jnp.bool_))

    def full_state(self, lean: pgx.State) -> pgx.State:
        """A steppable state from a lean one. The legal mask is set all-True:
        the search never steps an illegal action; the observation is zeros
        (pgx recomputes it on every step)."""
        batch_size = lean.current_player.shape[0]
        dummy = jax.eval_shape(self.env.init, jax.random.key(0))
        return lean.replace(
            observation=jnp.zeros((batch_size,) + dummy.observation.shape,
                                  dummy.observation.dtype),
            legal_action_mask=jnp.ones((batch_size, self.num_actions), jnp.bool_))

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
