"""Simulations per second with a real pgx simulator in the loop.

Each search step calls the game's true simulator (pgx), so these figures
include the cost of the game. Sides, all timed in the same interleaved
rounds per cell (`harness.interleaved_rounds`), each with what it computes
and stores:

- `ours_puct` / `mctx_muzero`: the same recurrent_fn (pgx step, uniform
  priors, value 0) under our alphazero_policy and mctx.muzero_policy
  (identical visit counts); both store our lean pgx state per node (mctx
  through `harness.mctx_recurrent_fn`), dense trees.
- `ours_puct_playout` / `mctx_playout`: the same with one random playout
  per leaf (the same recurrent_fn again, so the same simulator work).
- `ours_uct_playout` / `openspiel_uct` (tic-tac-toe, B=1 only): UCT with one
  random playout per leaf, our uct_policy against OpenSpiel's C++ MCTSBot
  (c = 1.4, one search at a time, its own C++ state per node), the same
  number of simulations per search.

Ratios (ours / peer simulations per second) are formed within each round;
the table gives their median and range.

    python -m experiments.simulator_throughput
    python -m experiments.simulator_throughput --games tic_tac_toe --batch-sizes 1 256
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


def runners_for(game, batch_size, num_simulations, include_mctx, playouts, seed=0):
    """{side: a call running one batched search} (see the module docstring)."""
    states = game.init(jax.random.key(seed), batch_size)
    key = jax.random.key(seed + 1)
    runners = {}
    choices = [("", evaluators.Uniform())]
    if playouts:
        choices.append(("_playout", evaluators.RandomPlayouts(num_playouts=1)))
    for label, evaluator in choices:
        recurrent_fn = game.recurrent_fn(evaluator)
        root, invalid = game.root(None, key, states, evaluator)
        if label:
            runners["ours_uct" + label] = (jax.jit(
                lambda k, r, i, f=recurrent_fn: mcts_jax.uct_policy(
                    None, k, r, f, num_simulations, invalid_actions=i).action_weights),
                root, invalid)
        runners["ours_puct" + label] = (jax.jit(
            lambda k, r, i, f=recurrent_fn: mcts_jax.alphazero_policy(
                None, k, r, f, num_simulations, invalid_actions=i,
                dirichlet_fraction=0.0).action_weights), root, invalid)
        if include_mctx:
            import mctx
            # mctx stores per node what recurrent_fn returns: the same lean
            # states as ours (like for like).
            wrapped = harness.mctx_recurrent_fn(recurrent_fn, mctx)
            name = "mctx_muzero" if not label else "mctx" + label
            runners[name] = (jax.jit(lambda k, r, i, f=wrapped: mctx.muzero_policy(
                None, k, mctx.RootFnOutput(prior_logits=r.prior_logits, value=r.value,
                                           embedding=r.embedding),
                f, num_simulations, invalid_actions=i, dirichlet_fraction=0.0).action_weights),
                root, invalid)
    return {name: (lambda fn=fn, r=r, i=i: fn(key, r, i)) for name, (fn, r, i) in runners.items()}


PAIRS = (("ours_puct", "mctx_muzero", "puct/mctx"),
         ("ours_puct_playout", "mctx_playout", "puct_playout/mctx"),
         ("ours_uct_playout", "openspiel_uct", "uct_playout/openspiel"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", nargs="+", default=["tic_tac_toe", "chess"])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 256, 4096])
    parser.add_argument("--simulations", type=int, default=None,
                        help="per search (default: 64 tic-tac-toe, 32 chess)")
    parser.add_argument("--rounds", type=int, default=harness.ROUNDS["full"],
                        help="interleaved rounds per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-mctx", action="store_true")
    parser.add_argument("--playout-games", nargs="*", default=["tic_tac_toe"],
                        help="games that also get the random-playout rows (a random chess "
                             "game of up to 512 plies per leaf is far too slow on a CPU)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)

    rows = []
    columns = ["game", "B", "simulations", "ours_puct", "mctx_muzero", "puct/mctx",
               "ours_puct_playout", "mctx_playout", "puct_playout/mctx", "ours_uct_playout",
               "openspiel_uct", "uct_playout/openspiel"]
    for name in args.games:
        game = envs.make(name)
        num_simulations = args.simulations or DEFAULT_SIMULATIONS.get(name, 32)
        for batch_size in args.batch_sizes:
            row = dict(game=name, B=batch_size, simulations=num_simulations, rounds=args.rounds)
            mctx_fits = mctx_bytes_estimate(game, batch_size, num_simulations) < MEMORY_LIMIT_BYTES
            if not mctx_fits:
                row["mctx_muzero"] = row["mctx_playout"] = "skipped (memory)"
            runners = runners_for(game, batch_size, num_simulations,
                                  include_mctx=mctx_fits and not args.no_mctx,
                                  playouts=name in args.playout_games, seed=args.seed)
            work = {runner: batch_size * num_simulations for runner in runners}
            if name == "tic_tac_toe" and batch_size == 1:
                spiel = openspiel_mcts.search_fn(num_simulations, args.seed)
                if spiel is None:
                    row["openspiel_uct"] = "not installed"
                else:
                    runners["openspiel_uct"], work["openspiel_uct"] = spiel, num_simulations
            pairs = [(a, b) for a, b, _ in PAIRS if a in runners and b in runners]
            result = harness.interleaved_rounds(runners, args.rounds, pairs, work)
            for runner_name, side in result["sides"].items():
                row[runner_name] = work[runner_name] / side["median_s"]
                row[runner_name + "_compile_s"] = side["compile_s"]
                row[runner_name + "_seconds"] = side["seconds"]
            for a, b, label in PAIRS:
                ratio = result["ratios"].get(f"{a}/{b}")
                if ratio is not None:
                    row[label] = harness.ratio_text(ratio)
                    row.update({f"{label}_median": ratio["median"], f"{label}_min": ratio["min"],
                                f"{label}_max": ratio["max"]})
            rows.append(row)
            print(harness.markdown_table(columns, [row]).splitlines()[-1], flush=True)

    harness.report("simulator_throughput",
                   "Simulations per second with the pgx simulator in the loop (median over "
                   f"{args.rounds} interleaved rounds; ratios: median (range) per round)",
                   columns, rows, dict(harness.provenance(seed=args.seed), **vars(args)),
                   not args.no_save)
    return rows


if __name__ == "__main__":
    main()
