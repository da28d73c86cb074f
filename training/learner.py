"""The learner: loss, optimiser, one jitted update on a replay minibatch.

Loss per sample, for the player to move in the observation:
  policy: cross-entropy `-sum_a pi(a) log softmax(logits)(a)` against the
    search's policy target pi;
  value: `((v - t) / value_scale)^2` against the value target t: the
    returns z from the sample to the game's end (the final result in
    {-1, 0, 1} for the board games), or z mixed with the search's root value
    (`--search-value-weight`, see `replay`); v and t on the game's reward
    scale, the error in units of the network's `value_scale`;
  total = policy + value_weight * value (weight decay is in adamw).
Optimiser: global-norm clipping, then adamw with a linear warmup and a cosine
decay over the run's updates.

On a device mesh (`mesh` set, see `mcts_jax.sharding`) the update is data
parallel: the minibatch is split over the devices, the variables and
optimiser state are replicated, and XLA sums the gradients (and the batch
norm statistics) across devices inside the compiled update; the result
equals the one-device update up to the order of float additions.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import chex
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

import envs
from envs import symmetry
from mcts_jax import sharding
from training import networks
from training import replay


@chex.dataclass(frozen=True)
class LearnerState:
    """variables: {"params", "batch_stats"} of the network; opt_state: optax
    state of the params; updates: [] int32, updates applied so far."""

    variables: Any
    opt_state: Any
    updates: chex.Array


def make_optimizer(learning_rate: float, total_updates: int, warmup_fraction: float,
                   end_fraction: float, weight_decay: float,
                   clip_norm: float) -> optax.GradientTransformation:
    """clip_by_global_norm -> adamw with warmup + cosine decay."""
    warmup = max(1, int(round(warmup_fraction * total_updates)))
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0, peak_value=learning_rate, warmup_steps=warmup,
        decay_steps=max(warmup + 1, total_updates), end_value=learning_rate * end_fraction)
    return optax.chain(optax.clip_by_global_norm(clip_norm),
                       optax.adamw(schedule, weight_decay=weight_decay))


@dataclasses.dataclass(frozen=True, eq=False)
class Learner:
    """Updates of one model with one optimiser (static argument: compare by identity)."""

    model: networks.Model
    optimizer: optax.GradientTransformation
    batch_size: int
    value_weight: float = 1.0
    symmetries: Optional[str] = None   # game name whose symmetries augment samples
    mesh: Optional[Mesh] = None        # data-parallel over its "data" axis (None: one device)

    # The replay's arrays a minibatch draws, in the order `loss` takes them
    # after the variables (a learner of another target names its own).
    sample_fields = ("observation", "policy", "value")

    def init(self, variables) -> LearnerState:
        return LearnerState(variables=variables,
                            opt_state=self.optimizer.init(variables["params"]),
                            updates=jnp.zeros((), jnp.int32))

    def num_ready(self, buffer: replay.ReplayBuffer) -> jax.Array:
        """[] int32 samples that can be drawn."""
        return replay.num_ready(buffer)

    def loss(self, params, batch_stats, observation, policy_target, value_target):
        """(total loss, (metrics dict, new batch_stats)) on one minibatch."""
        logits, value, new_stats = self.model.apply_train(
            {"params": params, "batch_stats": batch_stats}, observation)
        log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
        policy_loss = -jnp.mean(jnp.sum(policy_target * log_probs, axis=-1))
        # Entropy of the target: policy_loss - entropy is the KL divergence.
        target_entropy = -jnp.mean(jnp.sum(
            policy_target * jnp.log(jnp.maximum(policy_target, 1e-12)), axis=-1))
        value_loss = jnp.mean(((value - value_target) / self.model.config.value_scale) ** 2)
        total = policy_loss + self.value_weight * value_loss
        metrics = dict(loss=total, policy_loss=policy_loss, value_loss=value_loss,
                       policy_kl=policy_loss - target_entropy)
        return total, (metrics, new_stats)

    def update(self, state: LearnerState, rng_key: chex.PRNGKey,
               buffer: replay.ReplayBuffer):
        """One update on a minibatch drawn from `buffer`: (state, metrics)."""
        return _update(self, state, rng_key, buffer)


@functools.partial(jax.jit, static_argnums=0, donate_argnums=1)
def _update(self: Learner, state: LearnerState, rng_key, buffer):
    sample_key, sym_key = jax.random.split(rng_key)
    batch = replay.sample(buffer, sample_key, self.batch_size, self.mesh,
                          fields=self.sample_fields)
    if self.symmetries is not None:
        observation, policy_target, value_target = batch
        tables = envs.make(self.symmetries).symmetry_tables()
        index = jax.random.randint(sym_key, (self.batch_size,), 0, tables["observation"].shape[0])
        index = sharding.constrain_batch(index, self.mesh)
        observation, policy_target = symmetry.apply(tables, index, observation, policy_target)
        batch = (observation, policy_target, value_target)
    batch = sharding.constrain_batch(batch, self.mesh)
    grad_fn = jax.grad(self.loss, has_aux=True)
    grads, (metrics, batch_stats) = grad_fn(state.variables["params"],
                                            state.variables["batch_stats"], *batch)
    updates, opt_state = self.optimizer.update(grads, state.opt_state,
                                               state.variables["params"])
    params = optax.apply_updates(state.variables["params"], updates)
    metrics["grad_norm"] = optax.tree.norm(grads)
    new_state = LearnerState(variables={"params": params, "batch_stats": batch_stats},
                             opt_state=opt_state, updates=state.updates + 1)
    return sharding.constrain_replicated((new_state, metrics), self.mesh)
