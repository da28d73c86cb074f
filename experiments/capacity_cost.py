"""Does a simulation cost more in a larger tree array? (issue 61's step-cost lead)

One plain AlphaZero search (no root noise) of a fixed number of simulations
on the synthetic hashed tree (`problems.synthetic.HashedProblem`, 20
actions, B = 16) with the tree's capacity `max_nodes` set larger and larger:
the same simulations, the same nodes created, the same visits; only the
arrays' node axis [B, N, ...] grows. Each capacity runs S / 2 and S
simulations, all timed in the same interleaved rounds
(`harness.interleaved_rounds`); `us_per_simulation` is the difference of
their medians over S / 2 (what initialising and reading the larger arrays
costs once per search drops out). A flat `us_per_simulation` means a
simulation's cost does not depend on the capacity.

    python -m experiments.capacity_cost
    python -m experiments.capacity_cost --capacities 1001 8001 --rounds 2   # quick
"""

from __future__ import annotations

import functools

import jax

import mcts_jax
from benchmarks import harness
from problems.synthetic import HashedProblem, random_root_codes


def main(argv=None):
    cli = harness.parser(__doc__, seed=True)
    cli.add_argument("--capacities", type=int, nargs="+", default=[1001, 4001, 16001, 64001])
    cli.add_argument("--simulations", type=int, default=1000)
    cli.add_argument("--batch-size", type=int, default=16)
    cli.add_argument("--num-actions", type=int, default=20)
    cli.add_argument("--rounds", type=int, default=5)
    cli.add_argument("--name", default="capacity_cost")
    args = cli.parse_args(argv)
    if min(args.capacities) < args.simulations + 1:
        cli.error(f"--capacities must each be >= --simulations + 1 ({args.simulations + 1})")
    problem = HashedProblem(num_actions=args.num_actions)
    root, invalid = problem.root(random_root_codes(args.seed, args.batch_size))
    sides = {}
    for capacity in args.capacities:
        for simulations in (args.simulations // 2, args.simulations):
            search = jax.jit(functools.partial(
                mcts_jax.alphazero_policy, recurrent_fn=problem.recurrent_fn,
                num_simulations=simulations, dirichlet_fraction=0.0, max_nodes=capacity))
            sides[f"{capacity}/{simulations}"] = functools.partial(
                lambda search: search(None, jax.random.key(args.seed), root,
                                      invalid_actions=invalid).action, search)
    timing = harness.interleaved_rounds(sides, args.rounds)
    half = args.simulations - args.simulations // 2
    rows = []
    for capacity in args.capacities:
        full = timing["sides"][f"{capacity}/{args.simulations}"]
        short = timing["sides"][f"{capacity}/{args.simulations // 2}"]
        per_round = [(a - b) / half * 1e6 for a, b in zip(full["seconds"], short["seconds"])]
        rows.append(dict(max_nodes=capacity, simulations=args.simulations,
                         us_per_simulation=(full["median_s"] - short["median_s"]) / half * 1e6,
                         us_min=min(per_round), us_max=max(per_round),
                         search_s=full["median_s"], compile_s=full["compile_s"]))
    for row in rows:
        row["vs_smallest"] = row["us_per_simulation"] / rows[0]["us_per_simulation"]
    settings = {**vars(args), **harness.provenance(seed=args.seed), "policy": "alphazero"}
    columns = ["max_nodes", "simulations", "us_per_simulation", "us_min", "us_max",
               "vs_smallest", "search_s"]
    harness.report(args.name, "The cost of a simulation against the tree's capacity "
                   "(same simulations, same nodes)", columns,
                   [[row.get(c, "") for c in columns] for row in rows], settings,
                   save_results=not args.no_save, runs=rows)
    return rows


if __name__ == "__main__":
    main()
