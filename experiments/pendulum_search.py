"""Pendulum-v1 controlled by sampled search over its true dynamics, with no network.

The "Sampled AlphaZero" setting of issue 63 before any training: at every
step of 100 episodes (gymnax's Pendulum-v1, 200 steps, random starts) one
sampled search (`SampledActions(DiagonalGaussian(1, -2, 2), K)`) whose
recurrent_fn steps the true environment (`envs.control.ControlTask`), with
`zero_evaluator` (proposal N(0, 1) squashed into [-2, 2], leaf value 0), and
its action played. Mean return against random torques (the proposal
itself) and against K and the simulations; with a proposal at temperature 2
the corrected prior against a uniform one over the samples.

    python -m experiments.pendulum_search
    python -m experiments.pendulum_search --episodes 8 --simulations 16 --samples 3 10   # quick
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import mcts_jax
from benchmarks import harness
from envs.control import ControlTask, zero_evaluator
from mcts_jax import sampled


def episode_returns(task: ControlTask, choose, episodes: int, seed: int) -> np.ndarray:
    """[episodes] undiscounted returns of playing `choose(key, states) ->
    actions [B, 1]` for the whole episode."""
    key = jax.random.key(seed)
    _, states = task.reset(key, episodes)
    total = jnp.zeros(episodes)
    for step in range(task.max_steps):
        actions = choose(jax.random.fold_in(key, step + 1), states)
        _, states, reward, _ = task.step(states, actions)
        total = total + reward
    return np.asarray(total, np.float64)


def search_chooser(task: ControlTask, policy_name: str, samples: int, simulations: int,
                   temperature: float = 1.0, prior: str = "corrected"):
    plugin = sampled.SampledActions(task.distribution(), samples, temperature=temperature,
                                    prior=prior)
    if policy_name == "puct":
        policy = mcts_jax.AlphaZeroPolicy.make(plugins=(plugin,), dirichlet_fraction=0.0,
                                               temperature=0.0, value_range=None)
    else:
        policy = mcts_jax.GumbelPolicy.make(plugins=(plugin,), gumbel_scale=0.0,
                                            max_num_considered_actions=samples,
                                            value_range=None)
    recurrent_fn = task.recurrent_fn(zero_evaluator)

    @jax.jit
    def choose(key, states):
        out = policy(None, key, task.root(zero_evaluator, None, states), recurrent_fn,
                     simulations)
        return sampled.chosen_action(out.search_tree, out.action)
    return choose


def main(argv=None):
    cli = harness.parser(__doc__, seed=True)
    cli.add_argument("--episodes", type=int, default=100)
    cli.add_argument("--samples", type=int, nargs="+", default=[3, 10, 20])
    cli.add_argument("--simulations", type=int, nargs="+", default=[16, 64, 256])
    cli.add_argument("--policies", nargs="+", default=["puct", "gumbel"],
                     choices=["puct", "gumbel"])
    cli.add_argument("--name", default="pendulum_search")
    args = cli.parse_args(argv)
    task = ControlTask()
    rows = []

    def record(label, policy_name, samples, simulations, choose, **extra):
        start = time.perf_counter()
        returns = episode_returns(task, choose, args.episodes, args.seed)
        rows.append(dict(method=label, policy=policy_name, K=samples, simulations=simulations,
                         mean_return=float(returns.mean()),
                         sem=float(returns.std(ddof=1) / np.sqrt(len(returns))),
                         worst=float(returns.min()), wall_s=time.perf_counter() - start,
                         **extra))
        print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in rows[-1].items()},
              flush=True)

    proposal = task.distribution()

    @jax.jit
    def random_torques(key, states):
        params, _ = zero_evaluator(None, task.observe(states))
        return proposal.sample(key, params, 1)[:, 0]

    record("random", "-", 0, 0, random_torques)
    for simulations in args.simulations:
        for samples in args.samples:
            for policy_name in args.policies:
                record("search", policy_name, samples, simulations,
                       search_chooser(task, policy_name, samples, simulations))
    middle = args.samples[len(args.samples) // 2]
    simulations = args.simulations[len(args.simulations) // 2]
    for prior in ("corrected", "uniform"):
        record(f"temperature 2, {prior}", "puct", middle, simulations,
               search_chooser(task, "puct", middle, simulations, temperature=2.0, prior=prior))
    settings = {**vars(args), **harness.provenance(seed=args.seed), "task": task.name,
                "discount": task.discount, "evaluator": "zero_evaluator"}
    columns = ["method", "policy", "K", "simulations", "mean_return", "sem", "worst", "wall_s"]
    harness.report(args.name, "Pendulum-v1: mean return of 100 episodes, sampled search over "
                   "the true dynamics, no network", columns,
                   [[row[c] for c in columns] for row in rows], settings,
                   save_results=not args.no_save, runs=rows)
    return rows


if __name__ == "__main__":
    main()
