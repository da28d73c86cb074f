"""Memory per tree node: ours (dense, compact, compact with replayed states)
against mctx, for chess, Go 9x9 and tic-tac-toe, with what each side stores.

Tree sizes are exact and allocate nothing: ours from `mcts_jax.memory`
(the shapes `init_tree` allocates), mctx's from `jax.eval_shape` of
`mctx.muzero_policy` (its `search_tree`), once with our lean pgx state as
its embedding (like for like) and once with the full pgx state (what an
mctx user stores). `factor_rows` splits the comparison into its factors:
library (ours dense vs mctx dense, same lean state), layout (ours compact
vs ours dense), replay, and embedding (mctx full vs lean state), then their
product (mctx full vs ours compact).

Then, separately, real runs (`--runs BxS ...`, results/memory_runs-*.json):
a chess search (ours, compact K=218, lean states) in a subprocess per cell,
whose peak resident memory is read from the OS.

    python -m benchmarks.memory                                    # the table
    python -m benchmarks.memory --runs 1024x32 1024x800 4096x32 5120x32
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
import jax.numpy as jnp

import envs
from benchmarks import harness

GAMES = ("chess", "go_9x9", "tic_tac_toe")  # K = their most legal moves (registry)
COLUMNS = ["game", "layout", "stores", "bytes_per_node", "embedding_bytes_per_node",
           "GiB_for_B1024_N801"]


# What each layout stores per node (the "stores" column).
STORES = {
    "ours dense": "lean pgx state; A child slots (dense)",
    "ours compact": "lean pgx state; K child slots (legal moves only)",
    "ours compact, replay": "no state (the root's only, replayed); K child slots",
    "mctx + lean state": "lean pgx state (ours); A child slots (dense)",
    "mctx + full pgx state": "full pgx state; A child slots (dense)",
}


def mctx_bytes_per_node(game, batch_size: int, num_simulations: int,
                        embedding: str = "full") -> float:
    """Bytes per node of mctx's search tree with pgx states as embeddings:
    `embedding` "full" (the pgx state) or "lean" (our `game.lean_state`)."""
    import mctx
    store = (lambda states: states) if embedding == "full" else game.lean_state

    def search(states):
        def recurrent_fn(params, rng_key, action, stored):
            states = stored if embedding == "full" else game.full_state(stored)
            states = game.step(states, action)
            zeros = jnp.zeros(states.current_player.shape, jnp.float32)
            return mctx.RecurrentFnOutput(
                reward=zeros, discount=zeros - 1,
                prior_logits=jnp.zeros(states.legal_action_mask.shape, jnp.float32),
                value=zeros), store(states)

        root = mctx.RootFnOutput(
            prior_logits=jnp.zeros(states.legal_action_mask.shape, jnp.float32),
            value=jnp.zeros(states.current_player.shape, jnp.float32), embedding=store(states))
        return mctx.muzero_policy(None, jax.random.key(0), root, recurrent_fn,
                                  num_simulations).search_tree

    states = jax.eval_shape(lambda key: game.init(key, batch_size), jax.random.key(0))
    tree = jax.eval_shape(search, states)
    total = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree))
    return total / (batch_size * (num_simulations + 1))


def layout_rows(batch_size=1024, max_nodes=801, games=None):
    """Rows {game, layout, stores, bytes_per_node, embedding_bytes_per_node,
    GiB_for_B1024_N801} for `games` (names of GAMES; None: all)."""
    rows = []

    def add(name, layout, stores, per_node, embedding):
        rows.append(dict(game=name, layout=layout, stores=STORES[stores],
                         bytes_per_node=per_node, embedding_bytes_per_node=embedding,
                         GiB_for_B1024_N801=per_node * 1024 * 801 / 2**30))

    for name in GAMES:
        if games is not None and name not in games:
            continue
        game = envs.make(name)
        max_children = game.max_legal_moves
        layouts = [("ours dense", "ours dense", None, False),
                   (f"ours compact K={max_children}", "ours compact", max_children, False),
                   (f"ours compact K={max_children}, replay", "ours compact, replay",
                    max_children, True)]
        for label, stores, k, replay in layouts:
            report = game.tree_memory(batch_size, max_nodes, k, replay)
            add(name, label, stores, report.bytes_per_node, report.embedding_bytes_per_node)
        try:
            lean = mctx_bytes_per_node(game, 8, max_nodes - 1, "lean")
            full = mctx_bytes_per_node(game, 8, max_nodes - 1, "full")
        except ImportError:
            continue
        add(name, "mctx + lean state", "mctx + lean state", lean, game.lean_bytes())
        add(name, "mctx + full pgx state", "mctx + full pgx state", full, game.full_bytes())
    return rows


# (factor, numerator layout, denominator layout): bytes per node of the
# numerator over the denominator's; layouts by their "stores" keys.
FACTORS = (
    ("library: mctx dense / ours dense (both the lean state)", "mctx + lean state",
     "ours dense"),
    ("layout: ours dense / ours compact", "ours dense", "ours compact"),
    ("replay: ours compact / ours compact, replay", "ours compact", "ours compact, replay"),
    ("embedding: mctx full pgx state / mctx lean state", "mctx + full pgx state",
     "mctx + lean state"),
    ("product: mctx full pgx state / ours compact", "mctx + full pgx state", "ours compact"),
)


def factor_rows(rows):
    """The memory comparison as separate factors, from `layout_rows` rows:
    {game, factor, ratio} for each FACTORS entry whose layouts are present."""
    by_stores = {(row["game"], key): row["bytes_per_node"] for row in rows
                 for key, text in STORES.items() if row["stores"] == text}
    out = []
    for name in dict.fromkeys(row["game"] for row in rows):
        for factor, numerator, denominator in FACTORS:
            a, b = by_stores.get((name, numerator)), by_stores.get((name, denominator))
            if a and b:
                out.append(dict(game=name, factor=factor, ratio=a / b))
    return out


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
    command = [sys.executable, "-m", "benchmarks.memory", "--run-one", str(batch_size),
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", nargs="*", default=[], type=parse_run, metavar="BxS",
                        help="measure chess searches (compact K=218) of B searches of S "
                             "simulations, each in its own process, and write "
                             "results/memory_runs-*.json (instead of the table)")
    parser.add_argument("--max-nodes", type=int, default=801)
    parser.add_argument("--replay", action="store_true", help="measure replayed embeddings")
    parser.add_argument("--run-one", nargs=4, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    if args.run_one:
        print(json.dumps(run_one(*args.run_one[:3], bool(args.run_one[3]))))
        return None

    if not args.runs:
        rows = layout_rows()
        settings = dict(harness.provenance(seed=None), batch_size=1024, max_nodes=801)
        factors = factor_rows(rows)
        print("\nThe comparison's factors (bytes per node, numerator / denominator)")
        print(harness.markdown_table(["game", "factor", "ratio"], factors))
        harness.report("memory", "Tree memory per node (exact, B=1024 searches of N=801 nodes)",
                       COLUMNS, rows, settings, not args.no_save, factors=factors)
        return rows
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
