"""Stochastic search (chance nodes): ours against mctx on identical inputs.

    python -m benchmarks.stochastic_search                       # B = 1 .. 1024
    python -m benchmarks.stochastic_search --batch-sizes 1 64 --rounds 3

Both libraries run `stochastic_muzero_policy` with the same root, the same
decision and chance functions (`ChanceTree(informed=True)`: hashed priors,
values, outcome probabilities and rewards, so the functions cost almost
nothing and the figures measure the search), the same key and the same
settings (mctx's defaults), and store the same embeddings. Each round times
ours then mctx once per cell (interleaved); the report gives the median over
rounds of each and the median and spread (min-max) of the per-round ratio.

Results: results/stochastic_search-<device>.json with commit and command.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Dict, List

import jax

import mcts_jax
from benchmarks import harness
from mcts_jax.chance_trees import ChanceTree
from mcts_jax.synthetic import random_root_codes

COLUMNS = ["B", "simulations", "ours_sims_per_s", "mctx_sims_per_s", "ours/mctx",
           "ratio_min", "ratio_max", "rounds"]


def runners(batch_size: int, num_simulations: int, tree: ChanceTree):
    """{"ours": () -> None, "mctx": () -> None}, compiled."""
    root = tree.root(random_root_codes(batch_size, batch_size))
    functions = (tree.decision_recurrent_fn, tree.chance_recurrent_fn)
    counter = iter(range(10 ** 9))

    ours = jax.jit(lambda key: mcts_jax.stochastic_muzero_policy(
        None, key, root, *functions, num_simulations, checks="off").action)
    out = {"ours": ours}
    try:
        import mctx
    except ImportError:
        mctx = None
    if mctx is not None:
        mctx_root = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                      embedding=root.embedding)
        out["mctx"] = jax.jit(lambda key: mctx.stochastic_muzero_policy(
            None, key, mctx_root, *functions, num_simulations).action)
    for fn in out.values():
        jax.block_until_ready(fn(jax.random.key(0)))  # compile
    return {name: (lambda fn=fn: jax.block_until_ready(fn(jax.random.key(next(counter)))))
            for name, fn in out.items()}


def measure(batch_sizes, simulations, rounds: int, tree: ChanceTree,
            log=print) -> List[Dict[str, Any]]:
    rows = []
    for num_simulations in simulations:
        for batch_size in batch_sizes:
            run = runners(batch_size, num_simulations, tree)
            seconds: Dict[str, List[float]] = {name: [] for name in run}
            for _ in range(rounds):
                for name, fn in run.items():  # interleaved: ours, mctx, ours, mctx, ...
                    start = time.perf_counter()
                    fn()
                    seconds[name].append(time.perf_counter() - start)
            work = batch_size * num_simulations
            row = dict(B=batch_size, simulations=num_simulations,
                       ours_sims_per_s=round(work / statistics.median(seconds["ours"])),
                       rounds=rounds)
            if "mctx" in seconds:
                ratios = [m / o for o, m in zip(seconds["ours"], seconds["mctx"])]
                row.update(mctx_sims_per_s=round(work / statistics.median(seconds["mctx"])),
                           **{"ours/mctx": round(statistics.median(ratios), 2),
                              "ratio_min": round(min(ratios), 2),
                              "ratio_max": round(max(ratios), 2)})
            rows.append(row)
            log(row)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 16, 128, 1024])
    parser.add_argument("--simulations", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--branching", type=int, default=4)
    parser.add_argument("--outcomes", type=int, default=6)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    tree = ChanceTree(depth=args.depth, branching=args.branching, outcomes=args.outcomes,
                      informed=True)
    rows = measure(args.batch_sizes, args.simulations, args.rounds, tree)
    settings = dict(seed=0, problem=repr(tree), **harness.provenance(), **vars(args))
    harness.report("stochastic_search", "Stochastic MuZero search, simulations per second "
                   "(identical inputs, interleaved rounds)", COLUMNS, rows, settings,
                   save_results=not args.no_save)


if __name__ == "__main__":
    main()
