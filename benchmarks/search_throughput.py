"""Simulations per second of the search itself, ours against mctx.

The recurrent_fn is a synthetic hashed game tree (`mcts_jax.synthetic`) that
costs almost nothing, so the figures measure the tree search: selection,
expansion bookkeeping and backup. Both libraries get identical inputs and run
in this process, one after the other.

    python -m benchmarks.search_throughput            # the issue's grid
    python -m benchmarks.search_throughput --batch-sizes 64 --simulations 32 128
"""

from __future__ import annotations

import argparse

import jax
import numpy as np

import mcts_jax
from benchmarks import harness
from mcts_jax.synthetic import HashedProblem, random_root_codes


COLUMNS = ["B", "A", "simulations", "ours_puct", "ours_uct", "mctx_muzero", "puct/mctx",
           "ours_puct_us_per_sim", "mctx_muzero_us_per_sim"]


def make_runners(batch_size, num_actions, num_simulations, max_depth=None):
    problem = HashedProblem(num_actions=num_actions)
    root, _ = problem.root(random_root_codes(batch_size, batch_size))
    key = jax.random.key(0)
    runners = {}

    @jax.jit
    def ours_puct(key, root):
        return mcts_jax.alphazero_policy(None, key, root, problem.recurrent_fn, num_simulations,
                                         dirichlet_fraction=0.0,
                                         max_depth=max_depth).action_weights

    @jax.jit
    def ours_uct(key, root):
        return mcts_jax.uct_policy(None, key, root, problem.recurrent_fn,
                                   num_simulations, max_depth=max_depth).action_weights

    runners["ours_puct"] = lambda: ours_puct(key, root)
    runners["ours_uct"] = lambda: ours_uct(key, root)
    try:
        import mctx
    except ImportError:
        return runners
    their_root = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                   embedding=root.embedding)
    their_fn = harness.mctx_recurrent_fn(problem.recurrent_fn, mctx)

    @jax.jit
    def mctx_muzero(key, root):
        return mctx.muzero_policy(None, key, root, their_fn, num_simulations,
                                  dirichlet_fraction=0.0, max_depth=max_depth).action_weights

    runners["mctx_muzero"] = lambda: mctx_muzero(key, their_root)
    return runners


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--num-actions", type=int, nargs="+", default=[9, 82])
    parser.add_argument("--simulations", type=int, nargs="+", default=[32, 128, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mctx-budget-s", type=float, default=60.0,
                        help="skip an mctx cell whose estimated time per call exceeds this")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="depth limit for both libraries: PUCT on these random trees "
                             "dives deeper as simulations grow, and a simulation costs "
                             "O(depth); a limit isolates the cost of tree size")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)

    rows = []
    mctx_seconds_per_sim = {}  # (B, A) -> seconds per simulation, to skip hopeless cells
    for num_actions in args.num_actions:
        for batch_size in args.batch_sizes:
            for num_simulations in sorted(args.simulations):
                runners = make_runners(batch_size, num_actions, num_simulations,
                                       args.max_depth)
                row = dict(B=batch_size, A=num_actions, simulations=num_simulations)
                for name, fn in runners.items():
                    estimate = mctx_seconds_per_sim.get((batch_size, num_actions), 0) * \
                        num_simulations * num_simulations  # mctx's cost grows with the tree
                    if name.startswith("mctx") and estimate > args.mctx_budget_s:
                        row[name] = "skipped"
                        continue
                    timing = harness.time_call(fn, args.repeats)
                    row[name] = batch_size * num_simulations / timing["median_s"]
                    row[f"{name}_us_per_sim"] = 1e6 * timing["median_s"] / num_simulations
                    row[f"{name}_compile_s"] = timing["compile_s"]
                    if name.startswith("mctx"):
                        mctx_seconds_per_sim[(batch_size, num_actions)] = \
                            timing["median_s"] / num_simulations / num_simulations
                if isinstance(row.get("mctx_muzero"), float):
                    row["puct/mctx"] = row["ours_puct"] / row["mctx_muzero"]
                rows.append(row)
                print(harness.markdown_table(COLUMNS, [row]).splitlines()[-1], flush=True)

    name = "search_throughput" if args.max_depth is None else \
        f"search_throughput-max_depth{args.max_depth}"
    harness.report(name,
                   "Simulations per second (B x simulations / median wall time of one search "
                   "call)", COLUMNS, rows, vars(args), not args.no_save)
    return rows


if __name__ == "__main__":
    main()
