"""Sampled search (Hubert et al. 2021, Sampled MuZero) as a plug-in.

An action space too large to enumerate (continuous vectors, or a factored
joint action of N agents x M moves) is searched through K sampled actions
per node. Pass `SearchOptions(plugins=(SampledActions(dist, K),))` with a
tree of K actions per node (the root's and recurrent_fn's `prior_logits`
are then the distribution's parameters [B, P], not K logits):

- when a node is evaluated (the root before the policy's root setup, a new
  node at expansion) it draws K actions from the proposal beta = pi with
  temperature `temperature` (pi: the distribution `dist` with the network's
  parameters) and keeps them in the plug-in's record (`SampledRecord`,
  `[B, N, K, *action_shape]`);
- its K slot priors are the paper's corrected prior: slot i gets weight
  pi(a_i) / beta(a_i), normalised over the K slots. Summed over the slots
  holding one action a this is normalise(beta_hat(a) / beta(a) * pi(a)),
  beta_hat the samples' empirical distribution (a duplicate in a discrete
  space counts twice). With temperature 1 every weight is 1: the prior is
  uniform over the K slots (uniform over the distinct samples where, as in
  a continuous space, none repeats; an action drawn twice has twice the
  mass). `prior="uniform"` puts 1/K on every slot whatever the temperature
  (Stoix's choice, for the ablation);
- recurrent_fn gets the stored action of the slot it expands (a vector
  [B, action_dim], or a joint id [B] int32) instead of the slot number.

The search chooses a slot: `root_actions(tree)` gives each row's K root
actions and `chosen_action(tree, slot)` the action of a slot. The policy
target is the search's `action_weights` over the K root slots. With the
PUCT policies the root's Dirichlet noise applies to the K corrected
priors; with Gumbel the Gumbel-top-k considers m of the K sampled slots
(Gumbel noise on their corrected log-priors) and sequential halving runs
among them, the Gumbel MuZero recipe for sampled actions.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import tree as tree_lib
from mcts_jax.plugin import SearchPlugin


@dataclasses.dataclass(frozen=True)
class DiagonalGaussian:
    """A Gaussian over R^action_dim with diagonal covariance; parameters
    [..., 2 * action_dim]: the means, then the log standard deviations.
    With `low` and `high` (floats), actions are squashed into [low, high]
    by low + (tanh(x) + 1) / 2 * (high - low)."""

    action_dim: int
    low: Optional[float] = None
    high: Optional[float] = None
    action_shape: tuple = dataclasses.field(init=False)
    action_dtype: Any = dataclasses.field(init=False, default=jnp.float32)
    num_params: int = dataclasses.field(init=False)

    def __post_init__(self):
        if not isinstance(self.action_dim, int) or self.action_dim < 1:
            raise ValueError(f"DiagonalGaussian action_dim must be an int >= 1, got "
                             f"{self.action_dim!r}")
        if (self.low is None) != (self.high is None):
            raise ValueError("DiagonalGaussian low and high must be given together")
        if self.low is not None and not self.low < self.high:
            raise ValueError(f"DiagonalGaussian low must be below high, got low={self.low}, "
                             f"high={self.high}")
        object.__setattr__(self, "action_shape", (self.action_dim,))
        object.__setattr__(self, "num_params", 2 * self.action_dim)

    def tempered(self, params: chex.Array, temperature: float) -> chex.Array:
        """pi^(1/temperature), renormalised: the standard deviations times
        sqrt(temperature)."""
        mean, log_std = jnp.split(params, 2, axis=-1)
        return jnp.concatenate([mean, log_std + 0.5 * math.log(temperature)], axis=-1)

    def sample(self, key: chex.PRNGKey, params: chex.Array, num: int) -> chex.Array:
        """[..., num, action_dim] float32 actions."""
        mean, log_std = jnp.split(params.astype(jnp.float32), 2, axis=-1)
        noise = jax.random.normal(key, mean.shape[:-1] + (num, self.action_dim))
        return self._squash(mean[..., None, :] + jnp.exp(log_std)[..., None, :] * noise)

    def mean_action(self, params: chex.Array) -> chex.Array:
        """[..., action_dim] the means, squashed into the bounds: the action
        of a deterministic policy (no sampling)."""
        mean, _ = jnp.split(params.astype(jnp.float32), 2, axis=-1)
        return self._squash(mean)

    def log_prob(self, params: chex.Array, actions: chex.Array) -> chex.Array:
        """log density of `actions` [..., num, action_dim] -> [..., num]."""
        mean, log_std = jnp.split(params.astype(jnp.float32), 2, axis=-1)
        x, log_jacobian = self._unsquash(actions)
        z = (x - mean[..., None, :]) * jnp.exp(-log_std)[..., None, :]
        log_density = -0.5 * z ** 2 - log_std[..., None, :] - 0.5 * math.log(2 * math.pi)
        return jnp.sum(log_density - log_jacobian, axis=-1)

    def _squash(self, x):
        if self.low is None:
            return x
        return self.low + (jnp.tanh(x) + 1.0) / 2.0 * (self.high - self.low)

    def _unsquash(self, actions):
        if self.low is None:
            return actions, jnp.zeros_like(actions)
        unit = jnp.clip((actions - self.low) / (self.high - self.low) * 2.0 - 1.0,
                        -1.0 + 1e-6, 1.0 - 1e-6)
        return (jnp.arctanh(unit),
                jnp.log1p(-unit ** 2) + math.log((self.high - self.low) / 2.0))


@dataclasses.dataclass(frozen=True)
class Factored:
    """N agents each choosing one of M moves, as one joint id
    sum_i move_i * M^i in [0, M^N); parameters [..., N * M]: each agent's
    move logits (agent 0 first), the agents independent."""

    num_agents: int
    num_moves: int
    action_shape: tuple = dataclasses.field(init=False, default=())
    action_dtype: Any = dataclasses.field(init=False, default=jnp.int32)
    num_params: int = dataclasses.field(init=False)

    def __post_init__(self):
        for name in ("num_agents", "num_moves"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Factored {name} must be an int >= 1, got {value!r}")
        if self.num_moves ** self.num_agents >= 2 ** 31:
            raise ValueError(f"Factored joint ids must fit int32: num_moves ** num_agents = "
                             f"{self.num_moves}^{self.num_agents} is too large")
        object.__setattr__(self, "num_params", self.num_agents * self.num_moves)

    def tempered(self, params: chex.Array, temperature: float) -> chex.Array:
        return params / temperature

    def _logits(self, params):
        return params.astype(jnp.float32).reshape(
            params.shape[:-1] + (self.num_agents, self.num_moves))

    def sample(self, key: chex.PRNGKey, params: chex.Array, num: int) -> chex.Array:
        """[..., num] int32 joint ids."""
        logits = self._logits(params)[..., None, :, :]
        logits = jnp.broadcast_to(logits, logits.shape[:-3] + (num,) + logits.shape[-2:])
        moves = jax.random.categorical(key, logits, axis=-1)
        return self.joint_id(moves)

    def _place_values(self) -> chex.Array:
        """[N] int32: M^i, the weight of agent i's move in a joint id."""
        return self.num_moves ** jnp.arange(self.num_agents, dtype=jnp.int32)

    def joint_id(self, moves: chex.Array) -> chex.Array:
        """[..., N] moves -> [...] int32 joint ids."""
        return jnp.sum(moves.astype(jnp.int32) * self._place_values(), axis=-1)

    def moves(self, joint: chex.Array) -> chex.Array:
        """[...] joint ids -> [..., N] int32 moves."""
        return (joint[..., None] // self._place_values()) % self.num_moves

    def log_prob(self, params: chex.Array, actions: chex.Array) -> chex.Array:
        """log probability of joint ids `actions` [..., num] -> [..., num]."""
        log_p = jax.nn.log_softmax(self._logits(params), axis=-1)[..., None, :, :]
        picked = jnp.take_along_axis(
            jnp.broadcast_to(log_p, actions.shape + log_p.shape[-2:]),
            self.moves(actions)[..., None], axis=-1)[..., 0]
        return jnp.sum(picked, axis=-1)


def corrected_log_priors(dist: Any, params: chex.Array, actions: chex.Array,
                         temperature: float, prior: str = "corrected") -> chex.Array:
    """[..., K] log slot priors (unnormalised) of the K sampled `actions`:
    log pi(a_i) - log beta(a_i) (module docstring), or 0 for "uniform"."""
    if prior == "uniform" or temperature == 1.0:
        return jnp.zeros(actions.shape[:params.ndim], jnp.float32)
    beta = dist.tempered(params, temperature)
    return dist.log_prob(params, actions) - dist.log_prob(beta, actions)


@chex.dataclass(frozen=True)
class SampledRecord:
    """`SampledActions`' arrays: actions `[B, N, K, *action_shape]`, node i's
    K sampled actions (slot k of node i is action actions[:, i, k])."""

    actions: chex.Array


@dataclasses.dataclass(frozen=True)
class SampledActions(SearchPlugin):
    """Sampled nodes (module docstring): `distribution` (DiagonalGaussian,
    Factored, or any frozen value with `num_params`, `action_shape`,
    `action_dtype`, `tempered`, `sample`, `log_prob`), K =
    `num_samples` actions per node (the tree's num_actions), proposal
    temperature `temperature`, `prior` "corrected" or "uniform"."""

    distribution: Any
    num_samples: int
    temperature: float = 1.0
    prior: str = "corrected"

    def __post_init__(self):
        if not isinstance(self.num_samples, int) or self.num_samples < 1:
            raise ValueError(f"SampledActions num_samples must be an int >= 1, got "
                             f"{self.num_samples!r}")
        if not self.temperature > 0:
            raise ValueError(f"SampledActions temperature must be > 0, got {self.temperature!r}")
        if self.prior not in ("corrected", "uniform"):
            raise ValueError(f"SampledActions prior must be 'corrected' or 'uniform', got "
                             f"{self.prior!r}")
        for name in ("num_params", "action_shape", "sample", "log_prob", "tempered"):
            if not hasattr(self.distribution, name):
                raise TypeError(f"SampledActions distribution must have {name} (see "
                                f"DiagonalGaussian), got {type(self.distribution).__name__}")

    def check(self, policy, options):
        if options.max_children is not None:
            raise ValueError("SampledActions needs the dense layout (max_children=None): "
                             "a node's K slots are its K sampled actions")
        if options.transpositions:
            raise ValueError("SampledActions does not apply to a graph search "
                             "(transpositions=True): sampled actions have no positions")
        if options.replay_embeddings:
            raise ValueError("SampledActions cannot replay embeddings "
                             "(replay_embeddings=True): the tree keeps slots, not actions")

    def slots_per_node(self, num_actions):
        return self.num_samples

    def init_record(self, tree):
        if tree.num_actions != self.num_samples:
            raise ValueError(f"SampledActions(num_samples={self.num_samples}) needs a tree "
                             f"of K={self.num_samples} slots per node, got num_actions="
                             f"{tree.num_actions}")
        shape = (tree.batch_size, tree.max_nodes, self.num_samples) + tuple(
            self.distribution.action_shape)
        return SampledRecord(actions=jnp.zeros(shape, self.distribution.action_dtype))

    def evaluated(self, rng_key, output):
        params = output.prior_logits
        if params.shape[-1] != self.distribution.num_params:
            raise ValueError(f"prior_logits must hold the distribution's parameters: "
                             f"[..., {self.distribution.num_params}] for "
                             f"{self.distribution}, got {params.shape}")
        if getattr(output, "invalid_actions", None) is not None:
            raise ValueError("SampledActions takes no invalid_actions from recurrent_fn: "
                             "the distribution samples legal actions")
        proposal = self.distribution.tempered(params, self.temperature)
        actions = self.distribution.sample(rng_key, proposal, self.num_samples)
        expected = params.shape[:-1] + (self.num_samples,) + tuple(
            self.distribution.action_shape)
        if actions.shape != expected:
            raise ValueError(f"{type(self.distribution).__name__}.sample returned actions of "
                             f"shape {actions.shape}; expected {expected} "
                             f"([..., K, *action_shape])")
        actions = actions.astype(self.distribution.action_dtype)
        logits = corrected_log_priors(self.distribution, params, actions, self.temperature,
                                      self.prior)
        return output.replace(prior_logits=logits), actions

    def root_record(self, tree, record, entry):
        return record.replace(actions=record.actions.at[:, tree_lib.ROOT_INDEX].set(entry))

    def new_nodes(self, tree, record, write_at, new):
        rows = tree_lib.batch_rows(tree.batch_size).reshape((-1,) + (1,) * (write_at.ndim - 1))
        return record.replace(actions=record.actions.at[rows, write_at].set(new.entry,
                                                                             mode="drop"))

    def edge_action(self, tree, record, parent, slot, action):
        rows = tree_lib.batch_rows(tree.batch_size).reshape((-1,) + (1,) * (parent.ndim - 1))
        return record.actions[rows, parent, slot]


def _record(tree: tree_lib.Tree) -> SampledRecord:
    records = [each for each in (tree.plugin_records or ()) if isinstance(each, SampledRecord)]
    if len(records) != 1:
        raise ValueError(f"tree must come from a search with one SampledActions plug-in; it "
                         f"holds {len(records)} sampled records")
    return records[0]


def root_actions(tree: tree_lib.Tree) -> chex.Array:
    """`[B, K, *action_shape]`: each row's K sampled root actions (slot order,
    the order of the search's `action_weights`)."""
    return _record(tree).actions[:, tree_lib.ROOT_INDEX]


def chosen_action(tree: tree_lib.Tree, slot: chex.Array) -> chex.Array:
    """`[B, *action_shape]`: the root action of `slot` [B] (the search's
    `action`)."""
    actions = root_actions(tree)
    return actions[tree_lib.batch_rows(tree.batch_size), slot]
