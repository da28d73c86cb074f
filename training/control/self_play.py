"""Self-play of a control task: B episodes at once, one sampled search per step.

Each step searches every row's state with the run's policy value and a
`mcts_jax.sampled.SampledActions` plug-in over what the run's search steps
(`training.control.model`: the task's true dynamics with the network at
the leaves for Sampled AlphaZero, `ControlSelfPlay`; a learned model for
Sampled MuZero, `LearnedControlSelfPlay`), the network's Gaussian as the
proposal. It writes one pending sample per row into the replay, plays the
searched action (sampled from the search's weights for the first
`temperature_moves` steps), credits the reward and restarts the rows
whose episode ended (gymnax's reset: a random start).

A sample is (observation [obs_dim], the K sampled root actions [K, d], the
search's weights over them [K], the value target): the policy target is
the search's `action_weights` over the samples (the visit distribution for
PUCT, the improved policy for Gumbel), the learner's cross-entropy
`-sum_k w_k log pi(a_k | s)` (Hubert et al. 2021, section 4). The value
target is the discounted return from the sample's step to the end of its
episode (`replay.credit_rewards` with the task's discount), the episode's
time limit included as its end, as the search's discount treats it; with
`search_value_weight` w > 0 it is mixed with the search's root value.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import sampled
from training import replay
from training.muzero import trajectories
from training.self_play import StepStats


@chex.dataclass(frozen=True)
class SampledReplay(replay.ReplayBuffer):
    """The replay ring [T, B] (`replay.ReplayBuffer`) with each sample's
    sampled root actions: actions [T, B, K, *action_shape]; `policy`
    [T, B, K] holds the search's weights over them (slot order)."""

    actions: chex.Array


@chex.dataclass(frozen=True)
class EpisodeState:
    """The episodes in progress. states: gymnax states [B] (never ended:
    ended rows are restarted); ply: [B] int32 steps taken in the row's
    episode; returns: [B] float32 its undiscounted return so far."""

    states: Any
    ply: chex.Array
    returns: chex.Array


@dataclasses.dataclass(frozen=True, eq=False)
class ControlSelfPlay:
    """Self-play of one control task with one network and one policy value
    (with a `SampledActions` plug-in). Compared by identity: it is the
    static argument of the compiled step.

    simulator: what the search steps (`training.control.model.TrueDynamics`
    or `LearnedDynamics`, which hold the task and the model); policy: a
    policy value whose plug-ins include `SampledActions`;
    num_simulations, num_games (B): per step; search_value_weight: the
    value target's share of the root value; temperature_moves: the first
    steps of each episode whose action is sampled from the search's
    weights (the most visited sample after them; 0 for Gumbel, whose own
    noise explores).
    """

    simulator: Any
    policy: Any
    num_simulations: int
    num_games: int
    search_value_weight: float = 0.0
    mesh: Optional[Any] = None
    temperature_moves: int = 0

    def __post_init__(self):
        if self.mesh is not None and self.mesh.devices.size > 1:
            raise ValueError(f"control self-play runs on one device (--devices 1), got a mesh "
                             f"of {self.mesh.devices.size}")
        plugins = [each for each in self.policy.options.plugins
                   if isinstance(each, sampled.SampledActions)]
        if len(plugins) != 1:
            raise ValueError(f"ControlSelfPlay policy must have one SampledActions plug-in, "
                             f"got {len(plugins)}")
        object.__setattr__(self, "sampling", plugins[0])

    @property
    def task(self):
        """The `envs.control.ControlTask` the episodes play."""
        return self.simulator.task

    def search(self, variables, rng_key, states, num_simulations: Optional[int] = None):
        """The `PolicyOutput` of a search at gymnax states [B]."""
        simulator = self.simulator
        return self.policy(variables, rng_key, simulator.root(variables, states),
                           simulator.recurrent_fn, num_simulations or self.num_simulations)

    def init(self, rng_key: chex.PRNGKey) -> EpisodeState:
        """B fresh episodes."""
        _, states = self.task.reset(rng_key, self.num_games)
        return EpisodeState(states=states, ply=jnp.zeros((self.num_games,), jnp.int32),
                            returns=jnp.zeros((self.num_games,), jnp.float32))

    def new_buffer(self, num_slots: int) -> SampledReplay:
        """An empty ring of `num_slots` x B samples. A sample waits for its
        episode's end, so `num_slots` must hold one episode."""
        if num_slots < self.task.max_steps:
            raise ValueError(f"the replay ring must hold a whole episode: {num_slots} slots "
                             f"per game row, the task's episodes last {self.task.max_steps} "
                             f"steps (--replay-size >= {self.task.max_steps * self.num_games})")
        ring = replay.init(num_slots, self.num_games, self.task.observation_shape, jnp.float32,
                           self.sampling.num_samples)
        distribution = self.sampling.distribution
        actions = jnp.zeros((num_slots, self.num_games, self.sampling.num_samples)
                            + tuple(distribution.action_shape), distribution.action_dtype)
        return SampledReplay(**{f.name: getattr(ring, f.name)
                                for f in dataclasses.fields(ring)}, actions=actions)

    def record(self, buffer: SampledReplay, observation, root_actions, weights, action,
               search_value) -> SampledReplay:
        """The buffer with one pending sample per row written (traced):
        observations [B, obs_dim], the K root actions [B, K, d], the
        search's weights [B, K], the played action [B, d] (unused here),
        the root value [B]."""
        del action
        buffer = buffer.replace(actions=jax.lax.dynamic_update_index_in_dim(
            buffer.actions, root_actions, buffer.cursor, axis=0))
        return replay.add(buffer, observation, weights,
                          jnp.zeros((self.num_games,), jnp.int32), search_value=search_value,
                          search_value_weight=self.search_value_weight)

    def credit(self, buffer: SampledReplay, reward, done) -> SampledReplay:
        """The buffer after the step (traced): reward [B], done [B]."""
        return replay.credit_rewards(buffer, reward[:, None], done, self.search_value_weight,
                                     self.task.discount)

    def step(self, variables, rng_key: chex.PRNGKey, state: EpisodeState, buffer):
        """One step of every episode: (state, buffer, `StepStats`). Compiled once."""
        return _step(self, variables, rng_key, state, buffer)


@dataclasses.dataclass(frozen=True, eq=False)
class LearnedControlSelfPlay(ControlSelfPlay):
    """Sampled MuZero's self-play: the search steps a learned model
    (`LearnedDynamics`, from the observation on), and every step goes to
    the trajectory replay (`training.muzero.trajectories`) with its played
    action [d], its reward, the K sampled root actions and the search's
    weights and root value."""

    def new_buffer(self, num_slots: int) -> trajectories.TrajectoryBuffer:
        """An empty trajectory ring of `num_slots` x B steps, with K sampled
        actions per step (a window may span an episode's end: no minimum)."""
        distribution = self.sampling.distribution
        return trajectories.init(num_slots, self.num_games, self.task.observation_shape,
                                 jnp.float32, self.sampling.num_samples,
                                 sampled_action_shape=tuple(distribution.action_shape),
                                 action_dtype=distribution.action_dtype)

    def record(self, buffer, observation, root_actions, weights, action, search_value):
        """The ring with one step per row written at the cursor (traced):
        observation [B, obs_dim], root_actions [B, K, d], weights [B, K],
        the played action [B, d], the root value [B]; its reward and end
        come with `credit`."""
        every = jnp.ones(weights.shape, jnp.bool_)  # any sampled slot may be searched
        return trajectories.add(buffer, observation, every, weights,
                                jnp.zeros((self.num_games,), jnp.int32), action, search_value,
                                jnp.ones((self.num_games,), jnp.bool_),
                                sampled_actions=root_actions)

    def credit(self, buffer, reward, done):
        """The ring after the step (traced): reward [B], done [B]."""
        return trajectories.credit(buffer, reward[:, None], done, discount=self.task.discount)


@functools.partial(jax.jit, static_argnums=0, donate_argnums=(3, 4))
def _step(self: ControlSelfPlay, variables, rng_key, state: EpisodeState,
          buffer: SampledReplay):
    search_key, reset_key = jax.random.split(rng_key)
    out = self.search(variables, search_key, state.states)
    tree = out.search_tree
    slot = out.action                                                # [B]
    if self.temperature_moves > 0:
        drawn = jax.random.categorical(
            jax.random.fold_in(rng_key, 1),
            jnp.log(jnp.maximum(out.action_weights, 1e-30))).astype(jnp.int32)
        slot = jnp.where(state.ply < self.temperature_moves, drawn, slot)
    action = sampled.chosen_action(tree, slot)                       # [B, d]
    search_value = tree.summary().value
    num_games = self.num_games
    buffer = self.record(buffer, self.task.observe(state.states), sampled.root_actions(tree),
                         out.action_weights, action, search_value)
    _, next_states, reward, done = self.task.step(state.states, action)
    buffer = self.credit(buffer, reward, done)
    returns = state.returns + reward
    _, fresh = self.task.reset(reset_key, num_games)
    restart = lambda new, old: jnp.where(  # noqa: E731
        done.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)
    stats = StepStats(games=jnp.sum(done, dtype=jnp.int32),
                      plies=jnp.sum(jnp.where(done, state.ply + 1, 0), dtype=jnp.int32),
                      draws=jnp.zeros((), jnp.int32), action=slot, done=done,
                      full_search=jnp.bool_(True), recorded=jnp.ones((num_games,), jnp.bool_),
                      search_value=search_value,
                      score=jnp.sum(jnp.where(done, returns, 0.0)))
    new_state = EpisodeState(states=jax.tree.map(restart, fresh, next_states),
                             ply=jnp.where(done, 0, state.ply + 1),
                             returns=jnp.where(done, 0.0, returns))
    return new_state, buffer, stats
