"""Searching with the learned model: the root, the recurrent functions, a player.

The search is the library's own (`mcts_jax.MuZeroPolicy`, `GumbelPolicy`
with mctx's options, `StochasticMuZeroPolicy`), called through the
application's one search call (`training.search.run`); what it steps is
the learned model, never the game:

    simulator = LearnedSimulator(model, discount)
    out = training.search.run(policy, simulator, variables, rng_key, states, 32)

    root, invalid = learned_root(model, variables, observation, legal)
    recurrent_fn = LearnedRecurrentFn(model, discount)             # MuZero
    recurrent_fn = (LearnedDecisionFn(model), LearnedChanceFn(model, discount))  # Stochastic

Only the root's legal moves come from the game (the position being
played); below the root every action is allowed, as in MuZero. `discount`
is the search's discount of one move: -1 for the two-player zero-sum games
(the perspective flips every move; the learned model has no terminal
state, past a game's end it learns rewards and values of 0), the return's
discount (0.997, say) for one-player games.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

import mcts_jax
from training import search as search_lib
from training.muzero.networks import LearnedModel


def learned_root(model: LearnedModel, variables, observation, legal):
    """(RootFnOutput with the latent as embedding, invalid_actions [B, A])
    for observations [B, ...] and legal [B, A] bool of the positions."""
    latent, logits, value_logits = model.initial(variables, observation)
    root = mcts_jax.RootFnOutput(prior_logits=logits,
                                 value=model.config.value_support.scalar(value_logits),
                                 embedding=latent)
    return root, ~legal


@dataclasses.dataclass(frozen=True)
class LearnedRecurrentFn:
    """MuZero's recurrent_fn: dynamics then prediction. `params` are the
    model's variables; the embedding is the latent [B, D]."""

    model: LearnedModel
    discount: float

    def __call__(self, params, rng_key, action, latent):
        del rng_key
        reward, logits, value, next_latent = _transition(self.model, params, latent, action)
        discount = jnp.full(action.shape[:1], self.discount, jnp.float32)
        return mcts_jax.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                          value=value), next_latent


@dataclasses.dataclass(frozen=True)
class LearnedDecisionFn:
    """Stochastic MuZero's decision function: the afterstate of an action,
    its chance logits and Q (for the player who chose the action)."""

    model: LearnedModel

    def __call__(self, params, rng_key, action, latent):
        del rng_key
        net = self.model.module(params)
        afterstate = net.afterstate(latent, action)
        chance_logits, q_logits = net.afterstate_predict(afterstate)
        return mcts_jax.DecisionRecurrentFnOutput(
            chance_logits=chance_logits,
            afterstate_value=self.model.config.value_support.scalar(q_logits)), afterstate


@dataclasses.dataclass(frozen=True)
class LearnedChanceFn:
    """Stochastic MuZero's chance function: the next latent of an
    afterstate and a chance code, its reward, priors and value."""

    model: LearnedModel
    discount: float

    def __call__(self, params, rng_key, code, afterstate):
        del rng_key
        reward, logits, value, next_latent = _transition(self.model, params, afterstate, code)
        return mcts_jax.ChanceRecurrentFnOutput(
            action_logits=logits, value=value, reward=reward,
            discount=jnp.full(code.shape, self.discount, jnp.float32)), next_latent


def _transition(model: LearnedModel, params, latent, action_or_code):
    """dynamics then prediction: (reward [B], policy logits [B, A], value
    [B], next latent [B, D]), the scalars read off their supports."""
    net = model.module(params)
    next_latent, reward_logits = net.dynamics(latent, action_or_code)
    logits, value_logits = net.predict(next_latent)
    config = model.config
    return (config.reward_support.scalar(reward_logits), logits,
            config.value_support.scalar(value_logits), next_latent)


def recurrent_fns(model: LearnedModel, discount: float) -> Any:
    """What a policy steps: `LearnedRecurrentFn`, or the pair of decision and
    chance functions when the model has chance codes."""
    if model.config.stochastic:
        return LearnedDecisionFn(model), LearnedChanceFn(model, discount)
    return LearnedRecurrentFn(model, discount)


class Positions(NamedTuple):
    """What the learned model's root reads of positions [B] (pgx states
    have both fields): observation [B, ...] and legal_action_mask [B, A]."""

    observation: Any
    legal_action_mask: Any


@dataclasses.dataclass(frozen=True)
class LearnedSimulator:
    """The learned model as what a search steps (`training.search.run`):
    the root from the positions' observations and legal moves, then the
    model's own transitions (every action allowed below the root).
    `discount`: the search's discount of one move (-1 for two players)."""

    model: LearnedModel
    discount: float

    @property
    def takes_chance_nodes(self) -> bool:
        return self.model.config.stochastic

    def root(self, params, rng_key, states):
        """(RootFnOutput, invalid_actions [B, A]) of positions [B] (pgx
        states or `Positions`); the key is unused."""
        del rng_key
        return learned_root(self.model, params, states.observation, states.legal_action_mask)

    @property
    def recurrent_fn(self):
        return recurrent_fns(self.model, self.discount)

    def kind(self) -> str:
        """What it is, for `training.search.check_fit`'s message."""
        if self.takes_chance_nodes:
            return "the model has chance codes (afterstates and learned chance outcomes)"
        return "the model has no chance codes"

    def __str__(self) -> str:
        return "the learned model"


@dataclasses.dataclass(frozen=True)
class LearnedModelPlayer:
    """An `arena` player that searches with a learned model (`simulator`, a
    `LearnedSimulator`): `player(variables, rng_key, game, states) ->
    actions [B]`. It reads only the states' observations and legal moves."""

    simulator: Any
    policy: Any               # a mcts_jax.Policy value
    num_simulations: int

    def search(self, params, rng_key, game, states) -> mcts_jax.PolicyOutput:
        """The search of states [B]: its `mcts_jax.PolicyOutput`."""
        return _player_search(self, params, rng_key,
                              Positions(states.observation, game.legal_actions(states)))

    def __call__(self, params, rng_key, game, states):
        return self.search(params, rng_key, game, states).action


@functools.partial(jax.jit, static_argnums=0)
def _player_search(player: LearnedModelPlayer, params, rng_key, positions):
    return search_lib.run(player.policy, player.simulator, params, rng_key, positions,
                          player.num_simulations)
