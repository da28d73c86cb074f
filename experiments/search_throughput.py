"""Simulations per second of the search itself, ours against mctx.

The recurrent_fn is a synthetic hashed game tree (`problems.synthetic`) that
costs almost nothing, so the figures measure the tree search: selection,
expansion bookkeeping and backup. Both libraries get identical inputs (the
same roots, key and recurrent_fn; mctx through `harness.mctx_recurrent_fn`)
and compute the same thing: our alphazero_policy (no root noise) and
mctx.muzero_policy give identical visit counts; both store the same
embedding (a uint32 code per node) in a dense tree. Every cell's runners are
timed in the same interleaved rounds (`harness.interleaved_rounds`) and
puct/mctx is the median (and range) of the ratio formed within each round
(round i of ours over round i of mctx). `--orders interleaved sequential`
also measures every cell the old way (all rounds of one runner, then the
next), to show what interleaving changes to the spread.

    python -m experiments.search_throughput            # the issue's grid
    python -m experiments.search_throughput --batch-sizes 64 --simulations 32 128
    python -m experiments.search_throughput --batch-sizes 64 --num-actions 9 \
        --simulations 128 --orders interleaved sequential --name search_throughput-orders
"""

from __future__ import annotations

import argparse

import jax

import mcts_jax
from benchmarks import harness
from problems.synthetic import HashedProblem, random_root_codes


COLUMNS = ["order", "B", "A", "simulations", "ours_puct", "ours_uct", "mctx_muzero", "puct/mctx",
           "puct/mctx range", "ours_puct_us_per_sim", "mctx_muzero_us_per_sim"]


def make_runners(batch_size, num_actions, num_simulations, max_depth=None, seed=0):
    """{name: a call running one batched search} for ours_puct, ours_uct and
    (if installed) mctx_muzero; roots: `random_root_codes(seed + B, B)`."""
    problem = HashedProblem(num_actions=num_actions)
    root, _ = problem.root(random_root_codes(seed + batch_size, batch_size))
    key = jax.random.key(seed)
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
    parser.add_argument("--rounds", type=int, default=harness.ROUNDS["full"],
                        help="interleaved rounds per cell")
    parser.add_argument("--orders", nargs="+", default=["interleaved"],
                        choices=["interleaved", "sequential"],
                        help="interleaved: every runner once per round; sequential: all "
                             "rounds of one runner, then the next (the old way); both: each "
                             "cell measured both ways, one after the other")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mctx-budget-s", type=float, default=60.0,
                        help="skip an mctx cell whose estimated time per call exceeds this")
    parser.add_argument("--max-depth", type=int, default=None,
                        help="depth limit for both libraries: PUCT on these random trees "
                             "dives deeper as simulations grow, and a simulation costs "
                             "O(depth); a limit isolates the cost of tree size")
    parser.add_argument("--name", default=None,
                        help="results file: results/<name>-<device>.json (default "
                             "search_throughput[-max_depthD])")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)

    rows = []
    mctx_seconds_per_sim = {}  # (B, A) -> seconds per simulation, to skip hopeless cells
    cells = [(num_actions, batch_size, num_simulations) for num_actions in args.num_actions
             for batch_size in args.batch_sizes for num_simulations in sorted(args.simulations)]
    for num_actions, batch_size, num_simulations in cells:
        runners = make_runners(batch_size, num_actions, num_simulations, args.max_depth,
                               args.seed)
        skipped = {}
        estimate = mctx_seconds_per_sim.get((batch_size, num_actions), 0) * \
            num_simulations * num_simulations  # mctx's cost grows with the tree
        if "mctx_muzero" in runners and estimate > args.mctx_budget_s:
            del runners["mctx_muzero"]
            skipped["mctx_muzero"] = "skipped"
        pairs = [("ours_puct", "mctx_muzero")] if "mctx_muzero" in runners else []
        for order in args.orders:
            row = dict(order=order, B=batch_size, A=num_actions, simulations=num_simulations,
                       rounds=args.rounds, **skipped)
            result = harness.interleaved_rounds(runners, args.rounds, pairs,
                                                sequential=order == "sequential")
            for name, side in result["sides"].items():
                row[name] = batch_size * num_simulations / side["median_s"]
                row[f"{name}_us_per_sim"] = 1e6 * side["median_s"] / num_simulations
                if order == args.orders[0]:  # later orders find the runner compiled
                    row[f"{name}_compile_s"] = side["compile_s"]
                row[f"{name}_seconds"] = side["seconds"]
            if "mctx_muzero" in result["sides"]:
                mctx_seconds_per_sim[(batch_size, num_actions)] = \
                    result["sides"]["mctx_muzero"]["median_s"] / num_simulations ** 2
                ratio = result["ratios"]["ours_puct/mctx_muzero"]
                row.update({"puct/mctx": ratio["median"], "puct/mctx_min": ratio["min"],
                            "puct/mctx_max": ratio["max"],
                            "puct/mctx range": f"{ratio['min']:.3g}-{ratio['max']:.3g}"})
            rows.append(row)
            print(harness.markdown_table(COLUMNS, [row]).splitlines()[-1], flush=True)

    name = args.name or ("search_throughput"
                         + ("" if args.max_depth is None else f"-max_depth{args.max_depth}"))
    harness.report(name,
                   "Simulations per second (B x simulations / median wall time of one search "
                   f"call over {args.rounds} rounds; puct/mctx: median and range of the "
                   "per-round ratio)", COLUMNS, rows,
                   dict(harness.provenance(seed=args.seed), **vars(args)), not args.no_save)
    return rows


if __name__ == "__main__":
    main()
