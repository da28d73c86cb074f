"""The learner of a control task: the sampled policy target and the value.

Loss per sample (Hubert et al. 2021, section 4: the policy improvement
target lives on the K sampled actions):
  policy: `-sum_k w_k log pi(a_k | s)`, the K sampled root actions a_k
    [K, d] weighted by the search's w_k (its `action_weights`), pi the
    network's Gaussian (a density: the loss can be negative);
  value: `((v - t) / value_scale)^2` against the discounted return t;
  total = policy + value_weight * value.
The optimiser is the board games' (`training.learner.make_optimizer`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import chex
import jax
import jax.numpy as jnp
import optax

from training import replay
from training.control.model import ControlModel
from training.networks import LOG_STD_RANGE
from training.learner import LearnerState

SAMPLE_FIELDS = ("observation", "actions", "policy", "value")


@dataclasses.dataclass(frozen=True, eq=False)
class SampledLearner:
    """Updates of a `ControlModel` on a `SampledReplay` (static argument:
    compare by identity). distribution: the proposal family whose
    `log_prob` scores the stored actions."""

    model: ControlModel
    distribution: Any
    optimizer: optax.GradientTransformation
    batch_size: int
    value_weight: float = 1.0
    mesh: Optional[Any] = None

    def init(self, variables) -> LearnerState:
        return LearnerState(variables=variables,
                            opt_state=self.optimizer.init(variables["params"]),
                            updates=jnp.zeros((), jnp.int32))

    def num_ready(self, buffer) -> jax.Array:
        """[] int32 samples that can be drawn."""
        return replay.num_ready(buffer)

    def loss(self, params, batch_stats, observation, actions, weights, value_target):
        """(total, (metrics, batch_stats)); observation [n, obs_dim], actions
        [n, K, d], weights [n, K], value_target [n]."""
        gaussian, value, new_stats = self.model.apply_train(
            {"params": params, "batch_stats": batch_stats}, observation)
        log_pi = self.distribution.log_prob(gaussian, actions)            # [n, K]
        policy_loss = -jnp.mean(jnp.sum(weights * log_pi, axis=-1))
        value_loss = jnp.mean(((value - value_target) / self.model.config.value_scale) ** 2)
        total = policy_loss + self.value_weight * value_loss
        _, log_std = jnp.split(gaussian, 2, axis=-1)
        metrics = dict(loss=total, policy_loss=policy_loss, value_loss=value_loss,
                       policy_log_std=jnp.mean(log_std),
                       policy_std_at_floor=jnp.mean(log_std <= LOG_STD_RANGE[0]))
        return total, (metrics, new_stats)

    def update(self, state: LearnerState, rng_key: chex.PRNGKey, buffer):
        """One update on a minibatch drawn from `buffer`: (state, metrics)."""
        return _update(self, state, rng_key, buffer)


@functools.partial(jax.jit, static_argnums=0, donate_argnums=1)
def _update(self: SampledLearner, state: LearnerState, rng_key, buffer):
    batch = replay.sample(buffer, rng_key, self.batch_size, self.mesh, fields=SAMPLE_FIELDS)
    grads, (metrics, batch_stats) = jax.grad(self.loss, has_aux=True)(
        state.variables["params"], state.variables["batch_stats"], *batch)
    updates, opt_state = self.optimizer.update(grads, state.opt_state,
                                               state.variables["params"])
    params = optax.apply_updates(state.variables["params"], updates)
    metrics["grad_norm"] = optax.tree.norm(grads)
    return LearnerState(variables={"params": params, "batch_stats": batch_stats},
                        opt_state=opt_state, updates=state.updates + 1), metrics
