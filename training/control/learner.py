"""Sampled AlphaZero's learner: the sampled policy target and the value.

Loss per sample (Hubert et al. 2021, section 4: the policy improvement
target lives on the K sampled actions):
  policy: `-sum_k w_k log pi(a_k | s)`, the K sampled root actions a_k
    [K, d] weighted by the search's w_k (its `action_weights`), pi the
    network's Gaussian (a density: the loss can be negative);
  value: `((v - t) / value_scale)^2` against the discounted return t;
  total = policy + value_weight * value.
The update (minibatch draw, optimiser, device mesh) is the board games'
`training.learner.Learner`'s; this learner draws the sampled actions too
and scores them with the proposal family's `log_prob`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp

from training.learner import Learner
from training.networks import LOG_STD_RANGE


@dataclasses.dataclass(frozen=True, eq=False)
class SampledLearner(Learner):
    """Updates of a `ControlModel` on a `SampledReplay` (static argument:
    compare by identity). distribution: the proposal family whose
    `log_prob` scores the stored actions."""

    distribution: Any = None

    sample_fields = ("observation", "actions", "policy", "value")

    def loss(self, params, batch_stats, observation, actions, weights, value_target):
        """(total, (metrics, batch_stats)); observation [n, obs_dim], actions
        [n, K, d], weights [n, K], value_target [n] (the one agent's
        discounted return)."""
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
