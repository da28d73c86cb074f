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
recurrent_fn, `mcts_jax.synthetic`, which costs almost nothing) and compute
the same search: our alphazero_policy (no root noise) and mctx.muzero_policy
give identical visit counts; both store one uint32 code per node in a dense
tree. E is read from each side's own tree (an untimed call). The sides of a
cell are timed in the same interleaved rounds (`harness.interleaved_rounds`);
ours/mctx is the ratio of edges walked per second, formed within each round.

    python -m experiments.tree_steps            # S = 32, 64, ..., 4096, B = 8
    python -m experiments.tree_steps --quick    # S = 32, 128, 512, 3 rounds
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, Dict, List, Sequence

import jax

import mcts_jax
from benchmarks import harness
from mcts_jax.synthetic import HashedProblem, random_root_codes

FULL_SIMULATIONS = (32, 64, 128, 256, 512, 1024, 2048, 4096)
QUICK_SIMULATIONS = (32, 128, 512)
COLUMNS = ["simulations", "side", "mean_depth", "ns_per_edge", "ns_per_edge_min",
           "ns_per_edge_max", "us_per_simulation", "ours/mctx edges per s", "compile_s"]


def searches(batch_size: int, num_actions: int, num_simulations: int,
             seed: int = 0) -> Dict[str, Dict[str, Callable[[], Any]]]:
    """{side: {"run": one batched search (timed), "edges": the number of
    edges its B searches walked in all (untimed)}} for "ours" and, when
    installed, "mctx"."""
    problem = HashedProblem(num_actions=num_actions)
    root, _ = problem.root(random_root_codes(seed + batch_size, batch_size))
    key = jax.random.key(seed)

    def ours(key, root):
        return mcts_jax.alphazero_policy(None, key, root, problem.recurrent_fn, num_simulations,
                                         dirichlet_fraction=0.0)

    sides = {"ours": (ours, root)}
    try:
        import mctx
    except ImportError:
        mctx = None
    if mctx is not None:
        their_fn = harness.mctx_recurrent_fn(problem.recurrent_fn, mctx)

        def theirs(key, root):
            return mctx.muzero_policy(None, key, root, their_fn, num_simulations,
                                      dirichlet_fraction=0.0)

        sides["mctx"] = (theirs, mctx.RootFnOutput(prior_logits=root.prior_logits,
                                                   value=root.value, embedding=root.embedding))
    out = {}
    for name, (policy, side_root) in sides.items():
        run = jax.jit(lambda k, r, policy=policy: policy(k, r).action_weights)
        # node 0 is the root in both trees; every other node's visits count
        # the simulations that walked the edge into it
        edges = jax.jit(lambda k, r, policy=policy: policy(k, r).search_tree
                        .node_visits[:, 1:].sum())
        out[name] = dict(run=lambda run=run, r=side_root: run(key, r),
                         edges=lambda edges=edges, r=side_root: int(edges(key, r)))
    return out


def measure(batch_size: int, num_actions: int, simulations: Sequence[int], rounds: int,
            seed: int = 0, log: Callable[[str], None] = print) -> List[Dict[str, Any]]:
    """One row per (simulations, side): mean_depth (edges walked / simulations,
    over the B searches), ns_per_edge (median over the rounds, and its range),
    us_per_simulation (call seconds / simulations), and for ours the ratio of
    edges walked per second ours / mctx (median and range over the rounds)."""
    rows = []
    for num_simulations in simulations:
        sides = searches(batch_size, num_actions, num_simulations, seed)
        edges = {name: side["edges"]() for name, side in sides.items()}
        pairs = [("ours", "mctx")] if "mctx" in sides else []
        result = harness.interleaved_rounds({name: side["run"] for name, side in sides.items()},
                                            rounds, pairs, work=edges)
        for name, side in result["sides"].items():
            row = dict(simulations=num_simulations, side=name, B=batch_size, A=num_actions,
                       edges_walked=edges[name],
                       mean_depth=edges[name] / (batch_size * num_simulations),
                       ns_per_edge=1e9 * side["median_s"] / edges[name],
                       ns_per_edge_min=1e9 * side["min_s"] / edges[name],
                       ns_per_edge_max=1e9 * side["max_s"] / edges[name],
                       us_per_simulation=1e6 * side["median_s"] / num_simulations,
                       compile_s=side["compile_s"], seconds=side["seconds"], rounds=rounds)
            ratio = result["ratios"].get(f"{name}/mctx")
            if ratio is not None:
                row.update({"ours/mctx edges per s": harness.ratio_text(ratio),
                            "ratio": ratio["median"], "ratio_min": ratio["min"],
                            "ratio_max": ratio["max"]})
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
    parser.add_argument("--name", default=None,
                        help="results file: results/<name>-<device>.json (default tree_steps, "
                             "tree_steps-quick with --quick)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    simulations = args.simulations or (QUICK_SIMULATIONS if args.quick else FULL_SIMULATIONS)
    rounds = args.rounds or harness.ROUNDS[mode]
    rows = measure(args.batch_size, args.num_actions, simulations, rounds, args.seed)
    settings = dict(harness.provenance(seed=args.seed), mode=mode, simulations=list(simulations),
                    rounds=rounds, batch_size=args.batch_size, num_actions=args.num_actions,
                    problem=f"HashedProblem(num_actions={args.num_actions}), "
                            f"roots random_root_codes(seed + B, B)")
    harness.report(args.name or ("tree_steps-quick" if args.quick else "tree_steps"),
                   f"Time per edge walked (B = {args.batch_size}, A = {args.num_actions}; "
                   f"median over {rounds} interleaved rounds)", COLUMNS, rows, settings,
                   not args.no_save)
    return rows


if __name__ == "__main__":
    main()
