"""The learned model's learner: K-step unrolled losses, reanalyse, one jitted update.

For each window drawn from the trajectory replay (`trajectories.sample`),
the model starts from the first position's observation and unrolls the K
moves that were played:

    s_0 = representation(o_t)
    for k = 0..K:   policy and value of s_k          vs  pi_t+k, z_t+k
                    (k < K) s_k+1, r_k = dynamics(s_k, a_t+k)   vs  u_t+k

Stochastic MuZero unrolls through the afterstate: as_k = afterstate(s_k,
a_t+k), whose Q (vs z_t+k) and chance logits (vs the encoder's code of
o_t+k+1, a stop-gradient one-hot) are trained, and s_k+1, r_k =
dynamics(as_k, code); the encoder is trained through the dynamics
(straight-through) and by the commitment loss ||onehot - softmax(e)||^2.

Losses (per position, cross-entropies; values and rewards on their
categorical supports): policy (where the step is a searched position of
the game), value and reward (0 past the game's end: absorbing), chance and
commitment (Stochastic MuZero). Step 0 weighs 1, each unrolled step 1/K;
the gradient into each new latent is halved (MuZero's dynamics scaling).
total = policy + value_weight (value [+ Q]) + reward [+ chance +
commitment_weight commitment] [+ consistency_weight consistency: 1 - the
cosine between each predicted latent and the stop-gradient representation
of the real next observation, EfficientZero's temporal consistency; it also
gives Stochastic MuZero's encoder a reason to use its codes]; weight decay
is in adamw.

Sampled MuZero (`distribution` set, training/control): the policy target
of a step is the search's weights w over its K sampled root actions a_k,
and the policy loss is `-sum_k w_k log pi(a_k | s)` with pi the
prediction's distribution (a density for continuous actions); the played
actions the unroll replays are vectors. No augmentation, no reanalyse.

Reanalyse (MuZero Reanalyse): a `reanalyse_fraction` of each minibatch
gets fresh targets from the current network: the policy targets of its
K + 1 positions from a new search with the learned model, and, for n-step
value targets, the bootstrap values from the network's value at t + k + n.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, Optional

import chex
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh

import envs
from envs import symmetry
from mcts_jax import sharding
from training.learner import LearnerState
from training import search as search_lib
from training.muzero import search as learned_search
from training.muzero import trajectories
from training.muzero.networks import LearnedModel, quantise


def scale_gradient(x: jax.Array, factor: float) -> jax.Array:
    """x, with its gradient multiplied by `factor`."""
    return x * factor + jax.lax.stop_gradient(x) * (1.0 - factor)


@chex.dataclass(frozen=True)
class Targets:
    """What one minibatch is trained towards ([n, K + 1] unless said).

    policy [n, K + 1, A] and has_policy; value; actions [n, K] (random past
    a game's end; [n, K, d] vectors, 0 past the end, for continuous
    actions); reward [n, K]; alive [n, K + 1]; observation [n, K + 1,
    ...] (the encoder's inputs, Stochastic MuZero; the first is the
    representation's input); sampled_actions [n, K + 1, K_s, ...]: the
    sampled root actions `policy` weighs (Sampled MuZero), or None."""

    observation: chex.Array
    policy: chex.Array
    has_policy: chex.Array
    value: chex.Array
    actions: chex.Array
    reward: chex.Array
    alive: chex.Array
    sampled_actions: Optional[chex.Array] = None


@chex.dataclass(frozen=True)
class Unrolled:
    """The model unrolled K steps along played moves ([n, ...] arrays).

    predictions: K + 1 pairs (policy logits [n, A], value logits [n, V]) at
    steps 0..K (step 0 from the representation alone); transitions: K dicts,
    one per move k: reward_logits [n, R] and the new latent [n, D] (before
    the gradient scaling), and for Stochastic MuZero the afterstate's
    chance_logits [n, C] and q_logits [n, V] and the encoder's code_logits
    [n, C] of the real next observation."""

    predictions: list
    transitions: list


@dataclasses.dataclass(frozen=True, eq=False)
class LearnedModelLearner:
    """Updates of one learned model (static argument: compared by identity).

    value_targets "outcome" or "n_step" (see `trajectories`); td_steps n;
    discount gamma of one move (n-step targets; the search's discount of a
    one-player game); reanalyse_policy / reanalyse_simulations: the search
    that recomputes targets (a `mcts_jax.Policy` value); symmetries: the
    game whose board symmetries augment each window (`augment`), or None."""

    model: LearnedModel
    optimizer: optax.GradientTransformation
    batch_size: int
    num_unroll: int
    value_targets: str
    td_steps: int
    discount: float
    search_discount: float
    value_weight: float = 1.0
    commitment_weight: float = 1.0
    consistency_weight: float = 0.0
    code_usage_weight: float = 0.0
    reanalyse_fraction: float = 0.0
    reanalyse_policy: Any = None
    reanalyse_simulations: int = 0
    symmetries: Optional[str] = None   # game name whose symmetries augment windows
    mesh: Optional[Mesh] = None
    distribution: Any = None           # Sampled MuZero's proposal family (None: action ids)

    @property
    def window(self) -> int:
        """W, moves per drawn window."""
        return self.num_unroll + 1 + (self.td_steps if self.value_targets == "n_step" else 0)

    @property
    def num_reanalysed(self) -> int:
        return int(round(self.reanalyse_fraction * self.batch_size))

    def init(self, variables) -> LearnerState:
        return LearnerState(variables=variables,
                            opt_state=self.optimizer.init(variables["params"]),
                            updates=jnp.zeros((), jnp.int32))

    def num_ready(self, buffer: trajectories.TrajectoryBuffer) -> jax.Array:
        """[] int32 slots a window can start from."""
        return trajectories.num_usable(buffer, self.window, self.value_targets)

    def targets(self, variables, rng_key, window: trajectories.Window) -> Targets:
        """The targets of a drawn window, the first `num_reanalysed` rows
        reanalysed with `variables`."""
        steps, unroll = self.num_unroll + 1, self.num_unroll
        policy = window.policy[:, :steps]
        has_policy = window.alive[:, :steps] & window.searched[:, :steps]
        bootstrap = None
        count = self.num_reanalysed
        if count:
            search_key, rng_key = jax.random.split(rng_key)
            fresh_policy, fresh_bootstrap = self.reanalyse(variables, search_key, window, count)
            policy = policy.at[:count].set(fresh_policy)
            has_policy = has_policy.at[:count].set(window.alive[:count, :steps])
            if self.value_targets == "n_step":
                bootstrap = window.search_value.at[:count].set(fresh_bootstrap)
        value = trajectories.value_targets(window, unroll, self.value_targets, self.td_steps,
                                           self.discount, bootstrap)
        alive = window.alive[:, :steps]
        played = window.action[:, :unroll]
        if self.distribution is None:
            past_end = jax.random.randint(rng_key, played.shape, 0, policy.shape[-1])
        else:  # a sampled search's actions: past the end, zeros
            past_end = jnp.zeros_like(played)
        living = alive[:, :unroll].reshape(alive[:, :unroll].shape + (1,) * (played.ndim - 2))
        sampled_actions = window.sampled_actions
        return Targets(observation=window.observation[:, :steps], policy=policy,
                       has_policy=has_policy, value=value,
                       actions=jnp.where(living, played, past_end),
                       reward=jnp.where(alive[:, :unroll], window.reward[:, :unroll], 0.0),
                       alive=alive,
                       sampled_actions=None if sampled_actions is None
                       else sampled_actions[:, :steps])

    def augment(self, rng_key, targets: Targets) -> Targets:
        """Each window seen through one random board symmetry of its own: its
        K + 1 observations and policies and its K actions alike, so that the
        unroll replays the image of the moves that were played (values,
        rewards and the chance encoder's codes need no map: the encoder
        reads the transformed next observation)."""
        tables = envs.make(self.symmetries).symmetry_tables()
        n, steps = targets.policy.shape[:2]
        index = jax.random.randint(rng_key, (n,), 0, tables["observation"].shape[0])
        index = sharding.constrain_batch(index, self.mesh)
        flat = lambda x: x.reshape((n * steps,) + x.shape[2:])  # noqa: E731
        observation, policy = symmetry.apply(tables, jnp.repeat(index, steps),
                                             flat(targets.observation), flat(targets.policy))
        return targets.replace(observation=observation.reshape(targets.observation.shape),
                               policy=policy.reshape(targets.policy.shape),
                               actions=symmetry.map_actions(tables, index, targets.actions))

    def reanalyse(self, variables, rng_key, window: trajectories.Window, count: int):
        """(policy [count, K + 1, A] of fresh searches at the first `count`
        rows' positions, bootstrap values [count, W] from the network)."""
        steps = self.num_unroll + 1
        observation = window.observation[:count]
        flat = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
        legal = window.legal[:count, :steps]
        # A position past the game's end has no legal move: any legal set will do.
        legal = jnp.where(jnp.any(legal, axis=-1, keepdims=True), legal, True)
        out = search_lib.run(self.reanalyse_policy,
                             learned_search.LearnedSimulator(self.model, self.search_discount),
                             variables, rng_key,
                             learned_search.Positions(flat(observation[:, :steps]), flat(legal)),
                             self.reanalyse_simulations)
        policy = out.action_weights.reshape(count, steps, -1)
        _, values = self.model.predict(variables, flat(observation))
        return jax.lax.stop_gradient(policy), jax.lax.stop_gradient(
            values.reshape(count, -1))

    def unroll(self, net, targets: Targets) -> "Unrolled":
        """The model unrolled along the played moves of `targets` from the
        first observation: K + 1 predictions and K transitions (the
        gradient into each new latent halved, MuZero's dynamics scaling)."""
        config = self.model.config
        latent = net.represent(targets.observation[:, 0])
        predictions, transitions = [], []
        for k in range(self.num_unroll + 1):
            predictions.append(net.predict(latent))
            if k == self.num_unroll:
                break
            action = targets.actions[:, k]
            step: Dict[str, Any] = {}
            if config.stochastic:
                afterstate = net.afterstate(latent, action)
                step["chance_logits"], step["q_logits"] = net.afterstate_predict(afterstate)
                step["code_logits"] = net.encode(targets.observation[:, k + 1])
                code = quantise(step["code_logits"])
                latent, step["reward_logits"] = net.dynamics(afterstate, code)
            else:
                latent, step["reward_logits"] = net.dynamics(latent, action)
            step["latent"] = latent
            transitions.append(step)
            latent = scale_gradient(latent, 0.5)
        return Unrolled(predictions=predictions, transitions=transitions)

    def loss(self, params, targets: Targets):
        """(total loss, metrics) of one minibatch."""
        config = self.model.config
        net = self.model.module({"params": params, "batch_stats": {}})
        unroll = self.num_unroll
        unrolled = self.unroll(net, targets)
        sums: Dict[str, Any] = {}

        def add(name, value):
            sums[name] = sums.get(name, 0.0) + value

        for k, (logits, value_logits) in enumerate(unrolled.predictions):
            weight = 1.0 if k == 0 else 1.0 / unroll
            mask = targets.has_policy[:, k].astype(jnp.float32)
            policy_target = targets.policy[:, k]
            if self.distribution is None:
                log_probs = jax.nn.log_softmax(logits, axis=-1)
            else:  # log pi of the K sampled actions (a density: no KL to report)
                log_probs = self.distribution.log_prob(logits, targets.sampled_actions[:, k])
            cross_entropy = -jnp.sum(policy_target * log_probs, axis=-1)
            add("policy_loss", weight * jnp.mean(mask * cross_entropy))
            if self.distribution is None:
                entropy = -jnp.sum(policy_target * jnp.log(jnp.maximum(policy_target, 1e-12)),
                                   -1)
                add("policy_kl", weight * jnp.mean(mask * (cross_entropy - entropy)))
            add("value_loss", weight * jnp.mean(config.value_support.loss(value_logits,
                                                                          targets.value[:, k])))
            value_error = jnp.mean(jnp.abs(config.value_support.scalar(value_logits)
                                           - targets.value[:, k]))
            if k == 0:
                sums["value_error_0"] = value_error
            if k == unroll:
                sums["value_error_last"] = value_error

        for k, step in enumerate(unrolled.transitions):
            weight = 1.0 if k == 0 else 1.0 / unroll
            next_weight = 1.0 / unroll
            real = targets.alive[:, k + 1].astype(jnp.float32)
            if config.stochastic:
                add("q_loss", weight * jnp.mean(config.value_support.loss(
                    step["q_logits"], targets.value[:, k])))
                code_logits = step["code_logits"]
                hard = jax.lax.stop_gradient(quantise(code_logits))
                add("chance_loss", weight * jnp.mean(real * -jnp.sum(
                    hard * jax.nn.log_softmax(step["chance_logits"]), axis=-1)))
                add("commitment_loss", weight * jnp.mean(real * jnp.sum(
                    (hard - jax.nn.softmax(code_logits)) ** 2, axis=-1)))
                # Codebook usage: the entropy of the minibatch's mean code
                # distribution, short of its maximum log C (0 when every code
                # is used alike; log C when one code takes every outcome).
                usage = jnp.sum(real[:, None] * jax.nn.softmax(code_logits), axis=0) / \
                    jnp.maximum(jnp.sum(real), 1.0)
                add("code_usage_loss", weight * (jnp.log(usage.shape[-1]) + jnp.sum(
                    usage * jnp.log(jnp.maximum(usage, 1e-12)))))
            if self.consistency_weight:
                # EfficientZero's temporal consistency: the latent the dynamics
                # predicts should point where the representation of the real
                # next observation points (a stop-gradient target).
                # Latents are scaled to [0, 1]; centred, their cosine compares
                # directions rather than the shared positive mean.
                target = jax.lax.stop_gradient(net.represent(targets.observation[:, k + 1]))
                target = target - jnp.mean(target, axis=-1, keepdims=True)
                predicted = step["latent"] - jnp.mean(step["latent"], axis=-1, keepdims=True)
                cosine = jnp.sum(predicted * target, axis=-1) / jnp.maximum(
                    jnp.linalg.norm(predicted, axis=-1) * jnp.linalg.norm(target, axis=-1),
                    1e-6)
                add("consistency_loss", next_weight * jnp.mean(real * (1.0 - cosine)))
            add("reward_loss", next_weight * jnp.mean(config.reward_support.loss(
                step["reward_logits"], targets.reward[:, k])))
            add("reward_error", jnp.mean(jnp.abs(config.reward_support.scalar(
                step["reward_logits"]) - targets.reward[:, k])) / unroll)

        total = sums["policy_loss"] + sums["reward_loss"] + self.value_weight * (
            sums["value_loss"] + sums.get("q_loss", 0.0))
        if config.stochastic:
            total = (total + sums["chance_loss"]
                     + self.commitment_weight * sums["commitment_loss"]
                     + self.code_usage_weight * sums["code_usage_loss"])
        if self.consistency_weight:
            total = total + self.consistency_weight * sums["consistency_loss"]
        sums["loss"] = total
        return total, sums

    def model_error(self, variables, rng_key, buffer: trajectories.TrajectoryBuffer,
                    num_windows: int = 256):
        """How far the learned model drifts from the real game along played
        moves: (reward error [K], value error [K + 1]), the mean absolute
        error of the unrolled model's reward for move k and value at step k
        against the game's rewards and the value targets, over `num_windows`
        windows of the replay (no reanalyse). Step 0 is the representation
        alone; step k has gone through k learned transitions."""
        return _model_error(self, variables, rng_key, buffer, num_windows)

    def update(self, state: LearnerState, rng_key, buffer: trajectories.TrajectoryBuffer):
        """One update on a minibatch of windows drawn from `buffer`: (state, metrics)."""
        return _update(self, state, rng_key, buffer)


@functools.partial(jax.jit, static_argnums=0, donate_argnums=1)
def _update(self: LearnedModelLearner, state: LearnerState, rng_key, buffer):
    sample_key, target_key = jax.random.split(rng_key)
    window = trajectories.sample(buffer, sample_key, self.batch_size, self.window,
                                 self.value_targets, self.mesh)
    window = sharding.constrain_batch(window, self.mesh)
    if self.symmetries is not None:
        target_key, symmetry_key = jax.random.split(target_key)
    targets = self.targets(state.variables, target_key, window)
    if self.symmetries is not None:
        targets = self.augment(symmetry_key, targets)
    targets = sharding.constrain_batch(targets, self.mesh)
    grads, metrics = jax.grad(self.loss, has_aux=True)(state.variables["params"], targets)
    updates, opt_state = self.optimizer.update(grads, state.opt_state,
                                               state.variables["params"])
    params = optax.apply_updates(state.variables["params"], updates)
    metrics["grad_norm"] = optax.tree.norm(grads)
    new_state = LearnerState(variables={"params": params, "batch_stats": {}},
                             opt_state=opt_state, updates=state.updates + 1)
    return sharding.constrain_replicated((new_state, metrics), self.mesh)


@functools.partial(jax.jit, static_argnums=(0, 4))
def _model_error(self: LearnedModelLearner, variables, rng_key, buffer, num_windows: int):
    sample_key, target_key = jax.random.split(rng_key)
    window = trajectories.sample(buffer, sample_key, num_windows, self.window,
                                 self.value_targets, None)
    targets = dataclasses.replace(self, reanalyse_fraction=0.0, batch_size=num_windows).targets(
        variables, target_key, window)
    config = self.model.config
    unrolled = self.unroll(self.model.module(variables), targets)
    value_error = [jnp.mean(jnp.abs(config.value_support.scalar(value_logits)
                                    - targets.value[:, k]))
                   for k, (_, value_logits) in enumerate(unrolled.predictions)]
    reward_error = [jnp.mean(jnp.abs(config.reward_support.scalar(step["reward_logits"])
                                     - targets.reward[:, k]))
                    for k, step in enumerate(unrolled.transitions)]
    return jnp.stack(reward_error), jnp.stack(value_error)
