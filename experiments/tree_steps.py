"""Time per tree step as the tree grows: ours against mctx.

A simulation walks edges from the root down to a leaf; its depth is the
number of edges it walks. A search of S simulations walks E edges in all,
E = the sum of the visit counts of every non-root node (each simulation adds
one visit to every node on its path, the new leaf included), so the mean
depth of the simulated paths is E / S. This runner times one batched search
of B roots for S = 32 ... 4096 simulations and divides by the edges walked:
`ns_per_edge` = call seconds / (B x E). A search whose step cost does not
depend on the tree's size keeps ns_per_edge flat as S grows; a search that
rewrites its whole tree every step grows with S.

Both sides get identical inputs (the same roots, key and synthetic hashed
recurrent_fn, `problems.synthetic`, which costs almost nothing) and compute
the same search: our alphazero_policy (no root noise) and mctx.muzero_policy
give identical visit counts; both store one uint32 code per node in a dense
tree. E is read from each side's own tree (an untimed call). The sides of a
cell are timed in the same interleaved rounds (`harness.interleaved_rounds`);
ours/mctx is the ratio of edges walked per second, formed within each round.

    python -m experiments.tree_steps            # S = 32, 64, ..., 4096, B = 8
    python -m experiments.tree_steps --quick    # S = 32, 128, 512, 3 rounds
    python -m experiments.tree_steps --sides ours --batch-size 1 --simulations 256 2048 16384
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Dict, List, Sequence

from benchmarks import gpu_search, harness

FULL_SIMULATIONS = (32, 64, 128, 256, 512, 1024, 2048, 4096)
QUICK_SIMULATIONS = (32, 128, 512)
COLUMNS = ["simulations", "side", "tree_kib", "mean_depth", "ns_per_edge", "ns_per_edge_min",
           "ns_per_edge_max", "us_per_simulation", "ours/mctx edges per s", "compile_s"]


def tree_kib(batch_size: int, num_actions: int, max_nodes: int) -> float:
    """KiB of our B dense trees of `max_nodes` nodes on the hashed problem
    (one uint32 code per node stored), exact (`mcts_jax.memory.tree_memory`):
    where this passes a cache's size, each step's reads start to miss it."""
    import jax.numpy as jnp
    from mcts_jax import memory
    report = memory.tree_memory(jnp.zeros((batch_size,), jnp.uint32), num_actions=num_actions,
                                batch_size=batch_size, max_nodes=max_nodes)
    return report.total_bytes / 1024


def measure(batch_size: int, num_actions: int, simulations: Sequence[int], rounds: int,
            seed: int = 0, log: Callable[[str], None] = print,
            sides: Sequence[str] = ("ours", "mctx")) -> List[Dict[str, Any]]:
    """One row per (simulations, side) of `benchmarks.gpu_search.tree_step_rows`
    (the GPU run's part 4 measures the same cells): mean_depth, ns_per_edge
    (median and range over the rounds), us_per_simulation, and for ours the
    ratio of edges walked per second ours / mctx (median and range)."""
    rows = []
    for num_simulations in simulations:
        for row in gpu_search.tree_step_rows(batch_size, num_actions, num_simulations, rounds,
                                             seed, sides=sides):
            row["tree_kib"] = tree_kib(batch_size, num_actions, num_simulations + 1)
            rows.append(row)
            log(harness.markdown_table(COLUMNS, [row]).splitlines()[-1])
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"simulations {QUICK_SIMULATIONS}, {harness.ROUNDS['quick']} rounds")
    parser.add_argument("--simulations", type=int, nargs="+", default=None,
                        help=f"default {FULL_SIMULATIONS} ({QUICK_SIMULATIONS} with --quick)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--num-actions", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved rounds per cell (default 5; 3 with --quick)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sides", nargs="+", default=["ours", "mctx"], choices=["ours", "mctx"],
                        help="the searches timed (default both; ours alone reaches large S "
                             "in minutes, mctx's time per step grows with the tree)")
    parser.add_argument("--name", default=None,
                        help="results file: results/<name>-<device>.json (default tree_steps, "
                             "tree_steps-quick with --quick)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    simulations = args.simulations or (QUICK_SIMULATIONS if args.quick else FULL_SIMULATIONS)
    rounds = args.rounds or harness.ROUNDS[mode]
    rows = measure(args.batch_size, args.num_actions, simulations, rounds, args.seed,
                   sides=args.sides)
    settings = dict(harness.provenance(seed=args.seed), mode=mode, simulations=list(simulations),
                    sides=list(args.sides), rounds=rounds, batch_size=args.batch_size, num_actions=args.num_actions,
                    problem=f"HashedProblem(num_actions={args.num_actions}), "
                            f"roots random_root_codes(seed + B, B)")
    harness.report(args.name or ("tree_steps-quick" if args.quick else "tree_steps"),
                   f"Time per edge walked (B = {args.batch_size}, A = {args.num_actions}; "
                   f"median over {rounds} interleaved rounds)", COLUMNS, rows, settings,
                   not args.no_save)
    return rows


if __name__ == "__main__":
    main()
