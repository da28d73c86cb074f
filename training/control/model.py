"""The network of a control task: a Gaussian policy over the actions and a value.

`ControlModel` wraps a `training.networks.Model` (an MLP over the task's
observation [B, obs_dim]) whose policy head has the distribution's
parameters as outputs (`DiagonalGaussian.num_params`: the means, then the
log standard deviations) instead of action logits:

    model = ControlModel.make(network_config, task)
    variables = model.init(key)
    gaussian, value = model.predict(variables, observation)   # [B, 2 d], [B]

The log standard deviations are clipped to `LOG_STD_RANGE` (before the
tanh squash into the task's bounds), in search and in training alike, so
that a proposal neither collapses to a point nor spreads past the bounds.
`value` is the discounted return still to come from the observation (the
one agent's point of view), on the task's reward scale (the network's
`value_scale` is its unit).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from training import networks

# Pre-squash standard deviations between e^-5 (0.007) and e^1 (2.7).
LOG_STD_RANGE = (-5.0, 1.0)


def bounded(raw: jax.Array) -> jax.Array:
    """[..., 2 d] network outputs -> Gaussian parameters, the log standard
    deviations (the second half) clipped to `LOG_STD_RANGE`."""
    mean, log_std = jnp.split(raw.astype(jnp.float32), 2, axis=-1)
    return jnp.concatenate([mean, jnp.clip(log_std, *LOG_STD_RANGE)], axis=-1)


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
        return bounded(raw), value

    def apply_train(self, variables, observation: jax.Array):
        """(Gaussian parameters, value, new batch_stats) in training mode."""
        raw, value, batch_stats = self.network.apply_train(variables, observation)
        return bounded(raw), value, batch_stats

    @functools.cached_property
    def evaluator(self) -> Any:
        """`predict`, one object per model: every search on it shares one
        compiled recurrent_fn (`ControlTask.recurrent_fn` caches by it)."""
        return self.predict


@functools.lru_cache(maxsize=None)
def _make(config: networks.NetworkConfig, observation_shape, num_params: int) -> ControlModel:
    return ControlModel(networks.make_model_of_shapes(config, observation_shape, num_params))
