"""The network of a control task, and what a control run's search steps.

`ControlModel` wraps a `training.networks.Model` (an MLP over the task's
observation [B, obs_dim]) whose policy head has the distribution's
parameters as outputs (`DiagonalGaussian.num_params`: the means, then the
log standard deviations) instead of action logits:

    model = ControlModel.make(network_config, task)
    variables = model.init(key)
    gaussian, value = model.predict(variables, observation)   # [B, 2 d], [B]

The log standard deviations are clipped to `networks.LOG_STD_RANGE`
(`networks.gaussian_parameters`), in search and in training alike.
`value` is the discounted return still to come from the observation (the
one agent's point of view), on the task's reward scale (the network's
`value_scale` is its unit).

What the search steps (`root`, `recurrent_fn`, and `proposal`: the
policy's parameters at an observation, for the raw policy):
`TrueDynamics` (Sampled AlphaZero: the task's own step, this network at
the leaves) or `LearnedDynamics` (Sampled MuZero: a learned model of
continuous actions, `training.muzero.networks.make_continuous_model`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax

from training import networks
from training.muzero.search import LearnedRecurrentFn, learned_root

@dataclasses.dataclass(frozen=True, eq=False)
class ControlModel:
    """A policy-value network whose policy is a Gaussian (module docstring).
    Compared by identity: build it with `make`, which caches one per
    (config, task shapes)."""

    network: networks.Model

    @staticmethod
    def make(config: networks.NetworkConfig, task) -> "ControlModel":
        return _make(config, tuple(task.observation_shape), task.distribution().num_params)

    @property
    def config(self) -> networks.NetworkConfig:
        return self.network.config

    def init(self, rng_key: jax.Array):
        return self.network.init(rng_key)

    def num_parameters(self, variables) -> int:
        return self.network.num_parameters(variables)

    def predict(self, variables, observation: jax.Array):
        """(Gaussian parameters [B, 2 d], value [B]) of observations [B, obs_dim]."""
        raw, value = self.network.predict(variables, observation)
        return networks.gaussian_parameters(raw), value

    def apply_train(self, variables, observation: jax.Array):
        """(Gaussian parameters, value, new batch_stats) in training mode."""
        raw, value, batch_stats = self.network.apply_train(variables, observation)
        return networks.gaussian_parameters(raw), value, batch_stats

    @functools.cached_property
    def evaluator(self) -> Any:
        """`predict`, one object per model: every search on it shares one
        compiled recurrent_fn (`ControlTask.recurrent_fn` caches by it)."""
        return self.predict


@functools.lru_cache(maxsize=None)
def _make(config: networks.NetworkConfig, observation_shape, num_params: int) -> ControlModel:
    return ControlModel(networks.make_model_of_shapes(config, observation_shape, num_params))


# ---- what a search steps: the task itself, or a learned model ------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class TrueDynamics:
    """Sampled AlphaZero's model: the task's own step
    (`ControlTask.recurrent_fn`), the `ControlModel` at the leaves."""

    task: Any
    model: ControlModel

    def root(self, variables, states):
        """The search's root at gymnax states [B]."""
        return self.task.root(self.model.evaluator, variables, states)

    @property
    def recurrent_fn(self):
        return self.task.recurrent_fn(self.model.evaluator)

    def proposal(self, variables, observation: jax.Array) -> jax.Array:
        """[B, 2 d] the proposal's parameters at observations [B, obs_dim]."""
        return self.model.predict(variables, observation)[0]


@dataclasses.dataclass(frozen=True, eq=False)
class LearnedDynamics:
    """Sampled MuZero's model: a `LearnedModel` with continuous actions
    (`training.muzero.networks.make_continuous_model`) from the state's
    observation on, discounting each step by the task's discount."""

    task: Any
    model: Any

    def root(self, variables, states):
        """The search's root at gymnax states [B]: the learned model's
        (`learned_root`; every sampled action is allowed)."""
        observation = self.task.observe(states)
        legal = jax.numpy.ones((observation.shape[0], 1), bool)
        root, _ = learned_root(self.model, variables, observation, legal)
        return root

    @property
    def recurrent_fn(self):
        return LearnedRecurrentFn(self.model, self.task.discount)

    def proposal(self, variables, observation: jax.Array) -> jax.Array:
        return self.model.initial(variables, observation)[1]
