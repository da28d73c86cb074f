"""How a control run is judged: mean return over whole episodes.

`ControlAgent` acts in a batch of episodes: a sampled search over the
task's true dynamics with the greedy policy value (no root noise; the
search's choice), or with 0 simulations the network's Gaussian mean
squashed into the bounds (the raw policy, no search). `episode_returns`
plays E episodes from gymnax's random starts to the time limit, one
compiled scan per agent. `ControlEvaluation` is the loop's evaluation suite
for a control run (it has no opponents, so no Elo):

    periodic   score_mean / score_median / score_sem over `eval_games` episodes
               with the agent at `eval_simulations`
    final      the same over `final_games` episodes (final_score_*), the raw
               policy network's (final_policy_score_*) and random actions'
               from the proposal family with no knowledge (final_random_score_*)

A score is the undiscounted return of one episode (Pendulum-v1: 200 steps,
from about -1,200 for random torques to about -150 for a good controller).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import sampled


@dataclasses.dataclass(frozen=True, eq=False)
class ControlAgent:
    """Acts in B episodes at once (compared by identity: a static argument).

    simulator: what the search steps (`training.control.model.TrueDynamics`
    or `LearnedDynamics`, which hold the task); policy: a greedy policy
    value with a `SampledActions` plug-in; num_simulations: per step (0:
    the raw policy, the Gaussian's squashed mean).
    """

    simulator: Any
    policy: Any
    num_simulations: int

    @property
    def task(self):
        return self.simulator.task

    def actions(self, variables, rng_key, states) -> jax.Array:
        """[B, d] actions at gymnax states [B]."""
        if self.num_simulations == 0:
            gaussian = self.simulator.proposal(variables, self.task.observe(states))
            return self.task.distribution().mean_action(gaussian)
        out = self.policy(variables, rng_key, self.simulator.root(variables, states),
                          self.simulator.recurrent_fn, self.num_simulations)
        return sampled.chosen_action(out.search_tree, out.action)


class RandomAgent:
    """Random actions: the proposal family with no knowledge (mean 0,
    standard deviation 1 before squashing); `task`: the `ControlTask`."""

    def __init__(self, task):
        self.task = task

    def actions(self, variables, rng_key, states) -> jax.Array:
        del variables
        params = jnp.zeros((states.time.shape[0], self.task.distribution().num_params))
        return self.task.distribution().sample(rng_key, params, 1)[:, 0]


def episode_returns(agent, variables, rng_key, num_episodes: int) -> np.ndarray:
    """[num_episodes] undiscounted returns of `agent` (anything with
    `task` and `actions(variables, key, states)`) over whole episodes."""
    return np.asarray(_returns(agent, num_episodes, variables, rng_key), np.float64)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _returns(agent, num_episodes: int, variables, rng_key):
    task = agent.task
    reset_key, act_key = jax.random.split(rng_key)
    _, states = task.reset(reset_key, num_episodes)

    def one_step(carry, step):
        states, total, running = carry
        action = agent.actions(variables, jax.random.fold_in(act_key, step), states)
        _, states, reward, done = task.step(states, action)
        total = total + jnp.where(running, reward, 0.0)
        return (states, total, running & ~done), None

    start = (states, jnp.zeros((num_episodes,), jnp.float32), jnp.ones((num_episodes,), bool))
    (_, total, _), _ = jax.lax.scan(one_step, start, jnp.arange(task.max_steps))
    return total


def scores(returns: np.ndarray, prefix: str = "") -> Dict[str, float]:
    """Mean, median and standard error of episode returns, named with `prefix`."""
    sem = float(returns.std(ddof=1) / np.sqrt(len(returns))) if len(returns) > 1 else 0.0
    return {f"{prefix}score_mean": round(float(returns.mean()), 1),
            f"{prefix}score_median": round(float(np.median(returns)), 1),
            f"{prefix}score_sem": round(sem, 1)}


class ControlEvaluation:
    """The evaluation suite of a control run (module docstring); the
    loop's interface: `periodic`, `final`, `elo_matches`."""

    def __init__(self, config, task, model: Any, *, agent: ControlAgent,
                 final_agent: ControlAgent, log: Callable[[str], None] = print):
        del model  # the agents hold it
        self.config, self.task = config, task
        self.agent, self.final_agent, self.log = agent, final_agent, log
        self.policy_agent = dataclasses.replace(agent, num_simulations=0)

    def periodic(self, variables, key, num_games: Optional[int] = None) -> Dict[str, Any]:
        """The agent's scores over `eval_games` episodes."""
        num_games = num_games or self.config.eval_games
        return scores(episode_returns(self.agent, variables, key, num_games))

    def final(self, variables, key) -> Dict[str, Any]:
        """The agent's, the raw policy's and random actions' scores over
        `final_games` episodes (the same starts for the three)."""
        num_games = self.config.final_games
        out: Dict[str, Any] = dict(final_simulations=self.config.final_simulations,
                                   final_games=num_games)
        out.update(scores(episode_returns(self.final_agent, variables, key, num_games),
                          "final_"))
        out.update(scores(episode_returns(self.policy_agent, variables, key, num_games),
                          "final_policy_"))
        out.update(scores(episode_returns(RandomAgent(self.task), variables, key, num_games),
                          "final_random_"))
        return out

    def elo_matches(self, variables, iteration, pool, key):
        raise ValueError("a control task has no opponents: Elo needs --elo-every 0")
