"""Continuous-control tasks of gymnax (Pendulum-v1, ...) in the search contract.

gymnax (an optional extra: `pip install -e ".[control]"`) writes classic
control tasks as pure JAX functions. `ControlTask` batches one of them and
hands a sampled search (`mcts_jax.sampled.SampledActions`) the task's own
dynamics as its model, the "Sampled AlphaZero" setting: the search's
recurrent_fn steps the true environment.

- a state is gymnax's `EnvState` with a leading batch axis [B];
- an action is a float vector [B, action_dim] in [low, high] (the task's
  bounds: Pendulum's torque in [-2, 2]);
- reward: the task's reward of the step (Pendulum: minus the cost of the
  state the step starts from, in [-16.3, 0]); discount: `discount`, 0 once
  the episode ends (a natural end or the time limit: 200 steps for Pendulum);
- an observation is gymnax's, and with `time_in_observation` one more
  entry: the share of the episode's steps still to come (1 at the start, 0
  at the time limit). The time limit ends an episode, so a value depends
  on the time left; with it in the observation a value function can see
  it (Pardo et al. 2018, "Time Limits in Reinforcement Learning"); train.py's
  control runs turn it on;
- the proposal is `distribution()`, a `DiagonalGaussian` squashed into the
  bounds, whose parameters [B, 2 * action_dim] (means, then log standard
  deviations) the evaluator gives with its value.

An evaluator is `evaluator(params, observation [B, obs_dim]) -> (gaussian
parameters [B, 2 * action_dim], value [B])`, value the discounted return
to come from that observation; `zero_evaluator` knows nothing (mean 0,
standard deviation 1 before squashing, value 0).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Tuple

import jax
import jax.numpy as jnp

from mcts_jax.base import RecurrentFnOutput, RootFnOutput
from mcts_jax.sampled import DiagonalGaussian

Evaluator = Callable[[Any, jax.Array], Tuple[jax.Array, jax.Array]]

# The control tasks train.py trains (--game NAME): our name -> gymnax id.
CONTROL_TASKS = {"pendulum": "Pendulum-v1"}


def _gymnax():
    try:
        import gymnax
    except ImportError as error:  # an optional extra
        raise ImportError("envs.control needs gymnax: pip install -e \".[control]\"") from error
    return gymnax


@dataclasses.dataclass(frozen=True, eq=False)
class ControlTask:
    """One gymnax task for batches [B] (module docstring).

    Attributes:
      name: a gymnax id with a continuous (Box) action space, e.g. "Pendulum-v1".
      discount: the search's discount of one step, in (0, 1].
      time_in_observation: append the share of the episode still to come
        to each observation (module docstring).
    """

    name: str = "Pendulum-v1"
    discount: float = 0.99
    time_in_observation: bool = False
    num_players = 1  # one agent: its rewards are the returns

    @classmethod
    def named(cls, game: str, discount: float = 0.99) -> "ControlTask":
        """The task of train.py's --game name (`CONTROL_TASKS`), the time
        left in its observations."""
        if game not in CONTROL_TASKS:
            raise ValueError(f"unknown control task {game!r}; known: {', '.join(CONTROL_TASKS)}")
        return cls(CONTROL_TASKS[game], discount, time_in_observation=True)

    def __post_init__(self):
        if isinstance(self.discount, bool) or not (
                isinstance(self.discount, (int, float)) and 0 < self.discount <= 1):
            raise ValueError(f"ControlTask discount must be a number in (0, 1], got "
                             f"{self.discount!r}")
        gymnax = _gymnax()
        if self.name not in gymnax.registered_envs:
            raise ValueError(f"ControlTask name must be a gymnax id, got {self.name!r}")
        env, env_params = gymnax.make(self.name)
        space = env.action_space(env_params)
        if not hasattr(space, "low"):
            raise ValueError(f"ControlTask needs a continuous (Box) action space; "
                             f"{self.name} has {type(space).__name__}")
        object.__setattr__(self, "env", env)
        object.__setattr__(self, "env_params", env_params)
        object.__setattr__(self, "action_dim", int(math.prod(space.shape)))
        object.__setattr__(self, "low", float(jnp.min(jnp.asarray(space.low))))
        object.__setattr__(self, "high", float(jnp.max(jnp.asarray(space.high))))
        object.__setattr__(self, "max_steps", int(env_params.max_steps_in_episode))
        shape = tuple(env.observation_space(env_params).shape)
        if self.time_in_observation:
            shape = shape[:-1] + (shape[-1] + 1,)
        object.__setattr__(self, "observation_shape", shape)

    def symmetry_tables(self):
        """None: a control task has no board symmetries to augment with."""
        return None

    def distribution(self) -> DiagonalGaussian:
        """The proposal family: a Gaussian squashed into [low, high]."""
        return DiagonalGaussian(self.action_dim, low=self.low, high=self.high)

    # ---- the environment, batched ---------------------------------------------------------
    def reset(self, key: jax.Array, batch_size: int):
        """(observations [B, obs_dim], states [B]) of `batch_size` new episodes."""
        keys = jax.random.split(key, batch_size)
        observation, states = jax.vmap(self.env.reset_env, in_axes=(0, None))(
            keys, self.env_params)
        return self._with_time(observation, states), states

    def step(self, states, actions: jax.Array):
        """(observations, states, rewards [B], done [B] bool) of `actions`
        [B, action_dim]; an ended episode is not reset."""
        keys = jax.random.split(jax.random.key(0), actions.shape[0])  # the dynamics are exact
        action = actions if self.action_dim > 1 else actions[:, 0]
        observation, states, reward, done, _ = jax.vmap(
            self.env.step_env, in_axes=(0, 0, 0, None))(keys, states, action, self.env_params)
        # gymnax's step_env reports natural ends only; the time limit ends an episode too.
        done = done.astype(jnp.bool_) | (states.time >= self.max_steps)
        return self._with_time(observation, states), states, reward.astype(jnp.float32), done

    def observe(self, states) -> jax.Array:
        """[B, obs_dim] observations of `states`."""
        return self._with_time(
            jax.vmap(self.env.get_obs, in_axes=(0, None))(states, self.env_params), states)

    def _with_time(self, observation: jax.Array, states) -> jax.Array:
        """gymnax's observations [B, n], with the time left appended when
        `time_in_observation` ([B, n + 1])."""
        if not self.time_in_observation:
            return observation
        left = 1.0 - states.time.astype(jnp.float32) / self.max_steps
        return jnp.concatenate([observation, left[:, None]], axis=-1)

    # ---- the search contract ----------------------------------------------------------------
    def root(self, evaluator: Evaluator, params: Any, states) -> RootFnOutput:
        """The search's root at `states` [B]; `prior_logits` are the
        proposal's parameters [B, 2 * action_dim]."""
        gaussian, value = evaluator(params, self.observe(states))
        return RootFnOutput(prior_logits=gaussian, value=value, embedding=states)

    @functools.lru_cache(maxsize=None)
    def recurrent_fn(self, evaluator: Evaluator):
        """The search's recurrent_fn over the true dynamics, with `evaluator`
        at the new states (one function per task and evaluator, so searches
        share their compilation)."""
        def recurrent_fn(params, rng_key, action, states):
            del rng_key
            observation, states, reward, done = self.step(states, action)
            gaussian, value = evaluator(params, observation)
            output = RecurrentFnOutput(
                reward=reward, discount=jnp.where(done, 0.0, self.discount).astype(jnp.float32),
                prior_logits=gaussian, value=jnp.where(done, 0.0, value))
            return output, states
        return recurrent_fn


def zero_evaluator(params: Any, observation: jax.Array) -> Tuple[jax.Array, jax.Array]:
    """No knowledge (for a 1-D action): mean 0, log standard deviation 0
    before squashing, value 0."""
    del params
    return jnp.zeros(observation.shape[:1] + (2,), jnp.float32), \
        jnp.zeros(observation.shape[:1], jnp.float32)
