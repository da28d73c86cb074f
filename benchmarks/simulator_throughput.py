"""Simulations per second with a real pgx simulator in the loop.

Each search step calls the game's true simulator (pgx), so these figures
include the cost of the game. Rows:

- `ours_puct` / `mctx_muzero`: the same recurrent_fn (pgx step, uniform
  priors, value 0) under our alphazero_policy and mctx.muzero_policy.
- `ours_uct_playout` / `mctx_playout`: the same recurrent_fn with one random
  playout per leaf, under our uct_policy and mctx.muzero_policy.
- `openspiel_uct` (tic-tac-toe, B=1 only): OpenSpiel's C++ MCTSBot with one
  random rollout per leaf, timed over whole `step` calls (sequential: a batch
  of B would take B times as long).

    python -m benchmarks.simulator_throughput
    python -m benchmarks.simulator_throughput --games tic_tac_toe --batch-sizes 1 256
"""

from __future__ import annotations

import argparse

import jax

import envs
import mcts_jax
from benchmarks import harness
from benchmarks.baselines import openspiel_mcts
from mcts_jax import evaluators

DEFAULT_SIMULATIONS = {"tic_tac_toe": 64, "chess": 32}
# A rough per-node size of mctx's dense tree plus a full pgx state embedding,
# to skip cells that cannot fit in host memory.
MEMORY_LIMIT_BYTES = 12 * 2**30


def mctx_bytes_estimate(game, batch_size, num_simulations):
    state = jax.eval_shape(game.env.init, jax.random.key(0))
    state_bytes = sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(state))
    per_node = state_bytes + 6 * 4 * game.num_actions
    return batch_size * (num_simulations + 1) * per_node


def runners_for(game, batch_size, num_simulations, include_mctx, playouts):
    states = game.init(jax.random.key(0), batch_size)
    key = jax.random.key(1)
    runners = {}
    choices = [("", evaluators.Uniform())]
    if playouts:
        choices.append(("_playout", evaluators.RandomPlayouts(num_playouts=1)))
    for label, evaluator in choices:
        recurrent_fn = game.recurrent_fn(evaluator)
        root, invalid = game.root(None, key, states, evaluator)
        if label:
            runners["ours_uct" + label] = (jax.jit(lambda k, r, i, f=recurrent_fn: mcts_jax.uct_policy(
                None, k, r, f, num_simulations, invalid_actions=i).action_weights), root, invalid)
        else:
            runners["ours_puct"] = (jax.jit(lambda k, r, i, f=recurrent_fn: mcts_jax.alphazero_policy(
                None, k, r, f, num_simulations, invalid_actions=i,
                dirichlet_fraction=0.0).action_weights), root, invalid)
        if include_mctx:
            import mctx
            # mctx stores the full state per node (its embedding is what
            # recurrent_fn returns); give it the same lean states for fairness.
            wrapped = harness.mctx_recurrent_fn(recurrent_fn, mctx)
            name = "mctx_muzero" if not label else "mctx" + label
            runners[name] = (jax.jit(lambda k, r, i, f=wrapped: mctx.muzero_policy(
                None, k, mctx.RootFnOutput(prior_logits=r.prior_logits, value=r.value,
                                           embedding=r.embedding),
                f, num_simulations, invalid_actions=i, dirichlet_fraction=0.0).action_weights),
                root, invalid)
    return {name: (lambda fn=fn, r=r, i=i: fn(key, r, i)) for name, (fn, r, i) in runners.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", nargs="+", default=["tic_tac_toe", "chess"])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 256, 4096])
    parser.add_argument("--simulations", type=int, default=None,
                        help="per search (default: 64 tic-tac-toe, 32 chess)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-mctx", action="store_true")
    parser.add_argument("--playout-games", nargs="*", default=["tic_tac_toe"],
                        help="games that also get the random-playout rows (a random chess "
                             "game of up to 512 plies per leaf is far too slow on a CPU)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)

    rows = []
    columns = ["game", "B", "simulations", "ours_puct", "mctx_muzero", "puct/mctx",
               "ours_uct_playout", "mctx_playout", "openspiel_uct"]
    for name in args.games:
        game = envs.make(name)
        num_simulations = args.simulations or DEFAULT_SIMULATIONS.get(name, 32)
        for batch_size in args.batch_sizes:
            row = dict(game=name, B=batch_size, simulations=num_simulations)
            mctx_fits = mctx_bytes_estimate(game, batch_size, num_simulations) < MEMORY_LIMIT_BYTES
            if not mctx_fits:
                row["mctx_muzero"] = row["mctx_playout"] = "skipped (memory)"
            runners = runners_for(game, batch_size, num_simulations,
                                  include_mctx=mctx_fits and not args.no_mctx,
                                  playouts=name in args.playout_games)
            for runner_name, fn in runners.items():
                timing = harness.time_call(fn, args.repeats)
                row[runner_name] = batch_size * num_simulations / timing["median_s"]
                row[runner_name + "_compile_s"] = timing["compile_s"]
            if isinstance(row.get("mctx_muzero"), float):
                row["puct/mctx"] = row["ours_puct"] / row["mctx_muzero"]
            if name == "tic_tac_toe" and batch_size == 1:
                figure = openspiel_mcts.simulations_per_second(num_simulations * 16, args.repeats)
                row["openspiel_uct"] = figure if figure is not None else "not installed"
            rows.append(row)
            print(harness.markdown_table(columns, [row]).splitlines()[-1], flush=True)

    harness.report("simulator_throughput",
                   "Simulations per second with the pgx simulator in the loop", columns, rows,
                   vars(args), not args.no_save)
    return rows


if __name__ == "__main__":
    main()
