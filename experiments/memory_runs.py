"""Peak resident memory of real chess searches: does it grow with the
number of simulations, and how far does B go on one machine?

    python -m experiments.memory_runs --runs 1024x32 1024x800 4096x32 5120x32

Each run (B searches of S simulations, `--runs BxS ...`) is one chess search
(ours, `alphazero_policy`, compact K=218, lean pgx states, uniform priors)
in a process of its own, whose peak resident memory the OS reports; beside
it the exact tree bytes (`game.tree_memory`). `fit` is a least-squares line
through the measured points of a simulation count, nothing beyond them.
Writes results/memory_runs-<backend>.json (the exact bytes per node without
running anything: the suite's `memory` section, `python -m benchmarks --only memory`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import jax

import envs
from benchmarks import harness


def run_one(batch_size: int, num_simulations: int, max_nodes: int, replay: bool) -> dict:
    """One chess search in this process (called in a subprocess)."""
    import mcts_jax
    from mcts_jax import evaluators
    game = envs.make("chess")
    evaluator = evaluators.Uniform()
    states = game.init(jax.random.key(0), batch_size)
    root, invalid = game.root(None, jax.random.key(1), states, evaluator)
    start = time.perf_counter()
    out = mcts_jax.alphazero_policy(None, jax.random.key(2), root,
                                    game.recurrent_fn(evaluator), num_simulations,
                                    invalid_actions=invalid, max_nodes=max_nodes,
                                    max_children=game.max_legal_moves, replay_embeddings=replay)
    jax.block_until_ready(out.action)
    seconds = time.perf_counter() - start
    return dict(B=batch_size, simulations=num_simulations, max_nodes=max_nodes, replay=replay,
                seconds=seconds, nodes_used=int(out.search_tree.num_nodes.sum()),
                peak_rss_GiB=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                tree_GiB=game.tree_memory(batch_size, max_nodes, game.max_legal_moves,
                                          replay).total_bytes / 2**30)


def measure(batch_size, num_simulations, max_nodes, replay):
    command = [sys.executable, "-m", "experiments.memory_runs", "--run-one", str(batch_size),
               str(num_simulations), str(max_nodes), str(int(replay))]
    done = subprocess.run(command, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if done.returncode != 0:
        return dict(B=batch_size, simulations=num_simulations, max_nodes=max_nodes,
                    replay=replay, error=done.stderr.strip().splitlines()[-1:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def fit_rows(runs):
    """Least squares peak_rss_GiB = intercept + slope x B over the measured
    runs of one simulation count with at least two batch sizes: describes
    the measured points (no figure beyond them)."""
    out = []
    for simulations in sorted({run["simulations"] for run in runs if "peak_rss_GiB" in run}):
        points = [(run["B"], run["peak_rss_GiB"]) for run in runs
                  if run["simulations"] == simulations and "peak_rss_GiB" in run]
        if len({b for b, _ in points}) < 2:
            continue
        mean_b = sum(b for b, _ in points) / len(points)
        mean_r = sum(r for _, r in points) / len(points)
        slope = (sum((b - mean_b) * (r - mean_r) for b, r in points)
                 / sum((b - mean_b) ** 2 for b, _ in points))
        out.append(dict(simulations=simulations, batch_sizes=sorted(b for b, _ in points),
                        intercept_GiB=mean_r - slope * mean_b, MiB_per_search=slope * 1024))
    return out


def parse_run(text: str):
    """"1024x800" -> (1024, 800): B searches of that many simulations."""
    batch_size, simulations = text.lower().split("x")
    return int(batch_size), int(simulations)


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--runs", nargs="+", default=[], type=parse_run, metavar="BxS",
                        help="chess searches (compact K=218) of B searches of S simulations, "
                             "each in its own process")
    parser.add_argument("--max-nodes", type=int, default=801)
    parser.add_argument("--replay", action="store_true", help="measure replayed embeddings")
    parser.add_argument("--run-one", nargs=4, type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_one:  # a worker process: one search, its figures on stdout
        print(json.dumps(run_one(*args.run_one[:3], bool(args.run_one[3]))))
        return None
    if not args.runs:
        parser.error("--runs: give at least one BxS (e.g. --runs 1024x32)")
    settings = dict(harness.provenance(seed=0), runs=[f"{b}x{s}" for b, s in args.runs],
                    max_nodes=args.max_nodes, replay=args.replay,
                    stores="ours: compact K=218, lean pgx chess states (replay: root only)")
    runs = []
    for batch_size, num_simulations in args.runs:
        runs.append(measure(batch_size, num_simulations, args.max_nodes, args.replay))
        print(runs[-1], flush=True)
        if not args.no_save:  # a killed sweep keeps what it measured
            harness.save("memory_runs", runs, settings, fit=fit_rows(runs))
    print("\nLeast squares peak_rss_GiB = intercept + slope x B (the measured points only)")
    print(harness.markdown_table(["simulations", "batch_sizes", "intercept_GiB",
                                  "MiB_per_search"], fit_rows(runs)))
    harness.report("memory_runs", "Chess searches (ours, compact K=218): peak resident memory",
                   ["B", "simulations", "max_nodes", "replay", "tree_GiB", "peak_rss_GiB",
                    "seconds", "nodes_used"], runs, settings, not args.no_save,
                   fit=fit_rows(runs))
    return runs


if __name__ == "__main__":
    main()
