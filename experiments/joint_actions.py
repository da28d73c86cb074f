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

`--speed`: instead, simulations per second of one search from the start
state, dense against sampled (K = --samples) on the same problem, both
PUCT, interleaved rounds (`harness.interleaved_rounds`), for each N <=
--dense-up-to and budget:

    python -m experiments.joint_actions --speed --agents 2 3 4 --simulations 1000 --rounds 5
"""

from __future__ import annotations

import functools
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
        plugins = (sampled.SampledActions(problem.joint_moves, samples),)
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
    for _ in range(problem.horizon):
        logits = problem.prior_logits(embedding, dense=False).reshape(
            problem.instances, problem.num_agents, NUM_MOVES)
        joint = problem.joint_moves.joint_id(jnp.argmax(logits, axis=-1))
        reward, embedding = problem.step(embedding, joint)
        total = total + reward
    return np.asarray(total, np.float64)


def speed_rows(args) -> list:
    """Dense against sampled search of one step from the start, interleaved."""
    rows = []
    for agents in args.agents:
        if agents > args.dense_up_to:
            continue
        problem = JointActions(agents, instances=args.instances, seed=args.seed)
        for simulations in args.simulations:
            sides = {}
            for method in ("dense", "sampled"):
                policy, dense = make_policy(problem, method, "puct", args)
                root = problem.root(jnp.arange(problem.instances, dtype=jnp.int32),
                                    dense=dense)
                recurrent_fn = problem.recurrent_fn(dense)
                sides[method] = functools.partial(
                    lambda policy, root, recurrent_fn: policy(
                        None, jax.random.key(args.seed), root, recurrent_fn, simulations).action,
                    policy, root, recurrent_fn)
            timing = harness.interleaved_rounds(sides, args.rounds,
                                                pairs=[("sampled", "dense")])
            work = problem.instances * simulations
            for method in sides:
                rows.append(dict(agents=agents, joint_actions=problem.num_joint_actions,
                                 simulations=simulations, method=method,
                                 **harness.throughput_fields(timing["sides"][method], work)))
            rows[-1].update(harness.ratio_fields(timing["ratios"]["sampled/dense"],
                                                 "sampled_over_dense"))
            print(rows[-2:], flush=True)
    return rows


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
    cli.add_argument("--speed", action="store_true",
                     help="simulations per second, dense against sampled, interleaved")
    cli.add_argument("--rounds", type=int, default=5, help="interleaved rounds (--speed)")
    cli.add_argument("--name", default=None,
                     help="results name (default joint_actions, or joint_actions_speed)")
    args = cli.parse_args(argv)
    if args.speed:
        rows = speed_rows(args)
        settings = {**vars(args), **harness.provenance(seed=args.seed), "policy": "puct"}
        columns = ["agents", "joint_actions", "simulations", "method", "sims_per_s",
                   "sims_per_s_min", "sims_per_s_max", "sampled_over_dense",
                   "sampled_over_dense_min", "sampled_over_dense_max"]
        harness.report(args.name or "joint_actions_speed", "Joint actions: simulations per "
                       "second, dense against sampled (K = %d), PUCT, interleaved" % args.samples,
                       columns, [[row.get(c, "") for c in columns] for row in rows], settings,
                       save_results=not args.no_save, runs=rows)
        return rows

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
    harness.report(args.name or "joint_actions", "Joint actions: plan score (1 optimal, 0 random) by agents, "
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
