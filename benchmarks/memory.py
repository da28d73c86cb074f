"""Memory per tree node: ours (dense, compact, compact with replayed states)
against mctx storing a full pgx state, for chess, Go 9x9 and tic-tac-toe.

Tree sizes are exact and allocate nothing: ours from `mcts_jax.memory`
(the shapes `init_tree` allocates), mctx's from `jax.eval_shape` of
`mctx.muzero_policy` (its `search_tree`). Then, optionally, real runs: a chess
search in a subprocess per batch size, whose peak resident memory is read
from the OS, to find the largest batch of 800-simulation searches that fits
in a memory budget.

    python -m benchmarks.memory                                # the table
    python -m benchmarks.memory --measure-batches 1024 4096 --measure-simulations 800
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
COLUMNS = ["game", "layout", "bytes_per_node", "embedding_bytes_per_node",
           "GiB_for_B1024_N801"]


def mctx_bytes_per_node(game, batch_size: int, num_simulations: int) -> float:
    """Bytes per node of mctx's search tree with full pgx states as embeddings."""
    import mctx

    def search(states):
        def recurrent_fn(params, rng_key, action, states):
            states = game.step(states, action)
            zeros = jnp.zeros(states.current_player.shape, jnp.float32)
            return mctx.RecurrentFnOutput(
                reward=zeros, discount=zeros - 1,
                prior_logits=jnp.zeros(states.legal_action_mask.shape, jnp.float32),
                value=zeros), states

        root = mctx.RootFnOutput(
            prior_logits=jnp.zeros(states.legal_action_mask.shape, jnp.float32),
            value=jnp.zeros(states.current_player.shape, jnp.float32), embedding=states)
        return mctx.muzero_policy(None, jax.random.key(0), root, recurrent_fn,
                                  num_simulations).search_tree

    states = jax.eval_shape(lambda key: game.init(key, batch_size), jax.random.key(0))
    tree = jax.eval_shape(search, states)
    total = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree))
    return total / (batch_size * (num_simulations + 1))


def layout_rows(batch_size=1024, max_nodes=801, games=None):
    """Rows of bytes per node for `games` (names of GAMES; None: all)."""
    rows = []
    for name in GAMES:
        if games is not None and name not in games:
            continue
        game = envs.make(name)
        max_children = game.max_legal_moves
        layouts = [("ours dense", None, False), (f"ours compact K={max_children}",
                                                 max_children, False),
                   (f"ours compact K={max_children}, replay", max_children, True)]
        for label, k, replay in layouts:
            report = game.tree_memory(batch_size, max_nodes, k, replay)
            rows.append(dict(game=name, layout=label, bytes_per_node=report.bytes_per_node,
                             embedding_bytes_per_node=report.embedding_bytes_per_node,
                             GiB_for_B1024_N801=report.bytes_per_node * 1024 * 801 / 2**30))
        try:
            per_node = mctx_bytes_per_node(game, 8, max_nodes - 1)
        except ImportError:
            continue
        rows.append(dict(game=name, layout="mctx + full pgx state", bytes_per_node=per_node,
                         embedding_bytes_per_node=game.full_bytes(),
                         GiB_for_B1024_N801=per_node * 1024 * 801 / 2**30))
    return rows


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measure-batches", type=int, nargs="*", default=[])
    parser.add_argument("--measure-simulations", type=int, nargs="+", default=[800])
    parser.add_argument("--max-nodes", type=int, default=801)
    parser.add_argument("--replay", action="store_true", help="measure replayed embeddings")
    parser.add_argument("--run-one", nargs=4, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    if args.run_one:
        print(json.dumps(run_one(*args.run_one[:3], bool(args.run_one[3]))))
        return None

    rows = layout_rows()
    harness.report("memory", "Tree memory per node (exact, B=1024 searches of N=801 nodes)",
                   COLUMNS, rows, vars(args), not args.no_save)
    if args.measure_batches:
        runs = []
        for batch_size in args.measure_batches:
            for num_simulations in args.measure_simulations:
                runs.append(measure(batch_size, num_simulations, args.max_nodes, args.replay))
                print(runs[-1], flush=True)
                if not args.no_save:  # a killed sweep keeps what it measured
                    harness.save("memory_runs", runs, vars(args))
        harness.report("memory_runs", "Chess searches (compact K=218): peak resident memory",
                       ["B", "simulations", "max_nodes", "replay", "tree_GiB", "peak_rss_GiB",
                        "seconds", "nodes_used"], runs, vars(args), not args.no_save)
    return rows


if __name__ == "__main__":
    main()
