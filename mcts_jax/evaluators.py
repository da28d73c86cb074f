"""Leaf evaluators: where a new node's prior and value come from.

An evaluator is a callable `(params, rng_key, game, states) -> (prior_logits
[B, A], value [B])`, the value from the point of view of the player to move in
`states`, in [-1, 1]. `game` is an `envs` game (batched `step`,
`legal_actions`, `current_player`, `is_terminal`, `reward_for`). Evaluators
are frozen dataclasses, so equal settings compare equal and share one compiled
search.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp


def _uniform_logits(game, states):
    return jnp.zeros((states.current_player.shape[0], game.num_actions), jnp.float32)


@dataclasses.dataclass(frozen=True)
class Uniform:
    """Uniform priors and value 0: the search sees only terminal results."""

    def __call__(self, params, rng_key, game, states):
        del params, rng_key
        return _uniform_logits(game, states), jnp.zeros(states.current_player.shape, jnp.float32)


@dataclasses.dataclass(frozen=True)
class RandomPlayouts:
    """Uniform priors; value = mean result of `num_playouts` uniformly random
    games played from the state, each cut at `max_length` moves (an unfinished
    playout counts 0). Results are 1 / 0 / -1 for the player to move.

    Batched: the B x num_playouts games advance together, one pgx step per
    move for all of them, until every one has ended or hit the cap.
    """

    num_playouts: int = 1
    max_length: int = 512

    def __call__(self, params, rng_key, game, states):
        del params
        batch_size = states.current_player.shape[0]
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
        _, _, result, _ = jax.lax.while_loop(cond, body, initial)
        value = result.reshape(batch_size, self.num_playouts).mean(axis=1)
        return _uniform_logits(game, states), value


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
