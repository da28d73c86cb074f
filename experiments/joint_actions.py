"""Joint actions of N agents (mctx #108): sampled against dense search, judged by the exact optimum.

For each number of agents N and simulation budget, the instances of
`envs.joint_actions.JointActions(N)` (a ring of 8 cells, 3 steps, 5 moves
per agent: 5^N joint actions) are played closed-loop: at each step one
search from the current state, its move played. The return is compared
with the instance's exact optimum and with the exact mean return of random
moves: score = (return - random) / (optimum - random), 1 for an optimal
plan, 0 for random play. Methods:

- dense: one slot per joint id (5^N slots per node; only where N <= --dense-up-to);
- sampled: `SampledActions(Factored(N, 5), K)` (uniform proposal, the
  corrected prior, K = --samples);
- widened: K = --widened-samples sampled actions opened by
  `ProgressiveWidening(1, 0.5)` (below the root for Gumbel).

Beside them, "prior": each agent plays its own most likely move under the
greedy prior, no search (what the search starts from).

Policies, both as for evaluation (no noise): "puct" (AlphaZeroPolicy, no
root noise, the most visited move) and "gumbel" (GumbelPolicy, Gumbel noise
scale 0, m = 16 considered actions: the 16 of highest prior).

    python -m experiments.joint_actions --agents 2 3 4 5 6 8 --simulations 1000 10000
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import mcts_jax
from benchmarks import harness
from envs.joint_actions import NUM_MOVES, JointActions
from mcts_jax import sampled, widening

CONSIDERED = 16


def make_policy(problem: JointActions, method: str, policy: str, args):
    """(the policy value, dense?) of one method and policy."""
    plugins = ()
    if method != "dense":
        samples = args.samples if method == "sampled" else args.widened_samples
        plugins = (sampled.SampledActions(sampled.Factored(problem.num_agents, NUM_MOVES),
                                          samples),)
        if method == "widened":
            plugins += (widening.ProgressiveWidening(1.0, 0.5, root=policy != "gumbel"),)
    options = dict(plugins=plugins, value_range=None)
    if policy == "puct":
        return mcts_jax.AlphaZeroPolicy.make(dirichlet_fraction=0.0, temperature=0.0,
                                             **options), method == "dense"
    return mcts_jax.GumbelPolicy.make(max_num_considered_actions=CONSIDERED, gumbel_scale=0.0,
                                      **options), method == "dense"


def play(problem: JointActions, policy, dense: bool, simulations: int, seed: int):
    """(returns [I], seconds of the searches after the first, which compiles)."""
    instance = jnp.arange(problem.instances, dtype=jnp.int32)
    root = problem.root(instance, dense=dense)
    embedding, total = root.embedding, jnp.zeros(problem.instances)
    recurrent_fn = problem.recurrent_fn(dense)
    seconds = []
    for step in range(problem.horizon):
        root = root.replace(embedding=embedding)
        key = jax.random.fold_in(jax.random.key(seed), step)
        start = time.perf_counter()
        out = policy(None, key, root, recurrent_fn, simulations)
        joint = out.action if dense else sampled.chosen_action(out.search_tree, out.action)
        joint = jax.block_until_ready(joint)
        seconds.append(time.perf_counter() - start)
        reward, embedding = problem.step(embedding, joint)
        total = total + reward
    return np.asarray(total, np.float64), seconds[1:]


def play_prior(problem: JointActions) -> np.ndarray:
    """[I] returns of playing every agent's most likely prior move, no search."""
    embedding = problem.root(jnp.arange(problem.instances, dtype=jnp.int32)).embedding
    total = jnp.zeros(problem.instances)
    place = NUM_MOVES ** jnp.arange(problem.num_agents, dtype=jnp.int32)
    for _ in range(problem.horizon):
        logits = problem.prior_logits(embedding, dense=False).reshape(
            problem.instances, problem.num_agents, NUM_MOVES)
        joint = jnp.sum(jnp.argmax(logits, axis=-1).astype(jnp.int32) * place, axis=-1)
        reward, embedding = problem.step(embedding, joint)
        total = total + reward
    return np.asarray(total, np.float64)


def main(argv=None):
    cli = harness.parser(__doc__, seed=True)
    cli.add_argument("--agents", type=int, nargs="+", default=[2, 3, 4, 5, 6, 8])
    cli.add_argument("--simulations", type=int, nargs="+", default=[1000, 10000])
    cli.add_argument("--methods", nargs="+", default=["dense", "sampled", "widened"],
                     choices=["dense", "sampled", "widened"])
    cli.add_argument("--policies", nargs="+", default=["puct", "gumbel"],
                     choices=["puct", "gumbel"])
    cli.add_argument("--instances", type=int, default=16)
    cli.add_argument("--samples", type=int, default=20)
    cli.add_argument("--widened-samples", type=int, default=64)
    cli.add_argument("--dense-up-to", type=int, default=4,
                     help="the largest N searched densely (5^N slots per node)")
    cli.add_argument("--name", default="joint_actions")
    args = cli.parse_args(argv)

    rows = []
    for agents in args.agents:
        problem = JointActions(agents, instances=args.instances, seed=args.seed)
        optimum, random = problem.optimum(), problem.random_return()
        greedy = (play_prior(problem) - random) / (optimum - random)
        rows.append(dict(agents=agents, joint_actions=problem.num_joint_actions,
                         simulations=0, method="prior", policy="-",
                         optimum=float(optimum.mean()), random=float(random.mean()),
                         score=float(greedy.mean()), score_min=float(greedy.min()),
                         optimal=int(np.sum(greedy >= 1 - 1e-6)), search_s=0.0,
                         sims_per_s=0.0))
        for simulations in args.simulations:
            for method in args.methods:
                if method == "dense" and agents > args.dense_up_to:
                    continue
                for policy_name in args.policies:
                    policy, dense = make_policy(problem, method, policy_name, args)
                    start = time.perf_counter()
                    returns, seconds = play(problem, policy, dense, simulations, args.seed)
                    score = (returns - random) / (optimum - random)
                    rows.append(dict(
                        agents=agents, joint_actions=problem.num_joint_actions,
                        simulations=simulations, method=method, policy=policy_name,
                        optimum=float(optimum.mean()), random=float(random.mean()),
                        score=float(score.mean()),
                        score_min=float(score.min()),
                        optimal=int(np.sum(returns >= optimum - 1e-5)),
                        search_s=float(np.median(seconds)),
                        sims_per_s=problem.instances * simulations / float(np.median(seconds)),
                        wall_s=time.perf_counter() - start))
                    print({k: (round(v, 3) if isinstance(v, float) else v)
                           for k, v in rows[-1].items()}, flush=True)
    settings = {**vars(args), **harness.provenance(seed=args.seed),
                "problem": dict(cells=8, horizon=3, moves=NUM_MOVES), "considered": CONSIDERED}
    harness.report(args.name, "Joint actions: plan score (1 optimal, 0 random) by agents, "
                   "budget, method and policy",
                   ["agents", "joint_actions", "simulations", "method", "policy", "score",
                    "score_min", "optimal", "search_s", "sims_per_s"],
                   [[r[c] for c in ("agents", "joint_actions", "simulations", "method",
                                    "policy", "score", "score_min", "optimal", "search_s",
                                    "sims_per_s")] for r in rows],
                   settings, save_results=not args.no_save, runs=rows)
    return rows


if __name__ == "__main__":
    main()
