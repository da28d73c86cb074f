"""What a stop rule would save, and change, in a trained agent's self-play
(issue 62: "stop rules in self-play where they keep the targets right").

    python -m experiments.self_play_stops --run-dir RUN
    python -m experiments.self_play_stops --run-dir RUN --batch 256 --budgets 8 32

A self-play step searches a batch of B positions, one per game, at the
run's full budget (`num_simulations`) or, with playout cap randomisation,
at its fast one (`fast_simulations`, which records no policy target). This
experiment asks what `stopping.VisitGap()` would do to those searches with
the run's network:

1. Positions: `--steps` moves of `--games` games of the agent against
   itself, each move sampled from a PUCT search of the full budget with
   root noise (as the first plies of self-play are), a finished game
   restarted as self-play restarts it; every position searched is kept.
2. For each budget N: batches of B positions drawn from them (seeded), each
   searched twice with the same keys, by PUCT with the run's root noise
   (`dirichlet_fraction`, `dirichlet_alpha`) and the most visited move,
   once in full and once with `VisitGap()`. Per budget:
   - simulations each row spent with the stop (its root visits - 1): the
     share of N saved;
   - the share of moves equal to the full search's (100% by construction:
     checked, the run fails otherwise);
   - the share of rows stopped before their first simulation (a single
     legal move: nothing can overtake it), which leave no visit
     distribution, so no policy target;
   - for the other rows, how far the stopped search's policy target (its
     visit distribution) is from the full one's: total variation distance,
     mean and 90th percentile, and the share whose target changed at all;
   - the root value's change (the search value that `search_value_weight`
     mixes into the value target), mean absolute;
   - the wall time of one batch, full and stopped, over interleaved rounds:
     a batch's loop ends only when its last row has stopped.

PUCT only: Gumbel self-play (the presets' choice) refuses `VisitGap`, since
sequential halving, not the visit count, picks its move (docs/anytime.md).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import harness
from mcts_jax import stopping
from training import arena
from training.agent import Agent

COLUMNS = ["N", "B", "batches", "saved_pct", "same_move_pct", "no_target_pct",
           "target_changed_pct",
           "target_tv_mean", "target_tv_p90", "root_value_change", "full_s", "stopped_s",
           "full/stopped"]


def self_play_positions(agent: Agent, games: int, steps: int, num_simulations: int,
                        seed: int):
    """The positions of `steps` moves of `games` games of the agent against
    itself, as self-play plays them: each move sampled from a PUCT search of
    `num_simulations` with root noise, a finished game restarted from the
    initial position. Returns a pgx state batch [games * steps]."""
    player = arena.SearchPlayer(agent.model.evaluator, "alphazero", num_simulations,
                                greedy=False)
    game = agent.game

    @jax.jit
    def move(key, states):
        search_key, step_key, reset_key = jax.random.split(key, 3)
        moved = game.step(states, player(agent.variables, search_key, game, states), step_key)
        done = game.is_terminal(moved)
        fresh = game.init(reset_key, games)
        return jax.tree.map(
            lambda a, b: jnp.where(done.reshape((-1,) + (1,) * (a.ndim - 1)), a, b),
            fresh, moved)

    states = game.init(jax.random.key(seed), games)
    key = jax.random.key(seed + 1)
    kept = []
    for _ in range(steps):
        kept.append(jax.tree.map(np.asarray, states))
        key, move_key = jax.random.split(key)
        states = move(move_key, states)
    return jax.tree.map(lambda *xs: np.concatenate(xs), *kept)


def searcher(agent: Agent, num_simulations: int, stop: bool):
    """fn(key, states) -> PolicyOutput: the run's PUCT search with root
    noise and the most visited move, with or without `VisitGap()`."""
    search = agent.config.records.search
    options = (("dirichlet_fraction", search.dirichlet_fraction),
               ("dirichlet_alpha", search.dirichlet_alpha))
    if stop:
        options += (("plugins", (stopping.VisitGap(),)),)
    player = arena.SearchPlayer(agent.model.evaluator, "alphazero", num_simulations,
                                greedy=True, options=options)
    game = agent.game
    return jax.jit(lambda key, states: player.search(agent.variables, key, game, states))


def compare(agent: Agent, positions, num_simulations: int, batch: int, batches: int,
            rounds: int, seed: int) -> Dict[str, Any]:
    """One row: the full and the stopped search of `batches` batches of
    `batch` positions drawn from `positions`."""
    full, stopped = searcher(agent, num_simulations, False), searcher(agent, num_simulations,
                                                                        True)
    count = int(jax.tree.leaves(positions)[0].shape[0])
    rng = np.random.default_rng(seed)
    spent, same, tv, changed, value_change, unsearched = [], [], [], [], [], []
    draws = []
    for index in range(batches):
        rows = np.sort(rng.choice(count, batch, replace=count < batch))
        states = jax.tree.map(lambda x, rows=rows: jnp.asarray(x[rows]), positions)
        key = jax.random.key(seed * 1000 + index)
        draws.append((key, states))
        out_full, out_stopped = full(key, states), stopped(key, states)
        summary_full = out_full.search_tree.summary()
        summary_stopped = out_stopped.search_tree.summary()
        visits_full = np.asarray(summary_full.visit_counts, np.float64)
        visits_stopped = np.asarray(summary_stopped.visit_counts, np.float64)
        # A row stopped before its first simulation (one legal move: nothing
        # can overtake it) has no visit distribution, so no target to compare.
        searched = visits_stopped.sum(axis=1) > 0
        legal = np.asarray(states.legal_action_mask).sum(axis=1)
        if np.any(~searched & (legal > 1)):
            raise SystemExit(f"N={num_simulations}: VisitGap stopped a row with "
                             f"{legal[~searched & (legal > 1)].min()} legal moves before its "
                             f"first simulation: a bug in stopping.py")
        target_full = visits_full / visits_full.sum(axis=1, keepdims=True)
        target_stopped = visits_stopped / np.maximum(visits_stopped.sum(axis=1, keepdims=True),
                                                     1.0)
        distance = 0.5 * np.abs(target_full - target_stopped).sum(axis=1)
        spent.append(visits_stopped.sum(axis=1))
        same.append(np.asarray(out_full.action) == np.asarray(out_stopped.action))
        unsearched.append(~searched)
        tv.append(distance[searched])
        changed.append(distance[searched] > 0)
        value_change.append(np.abs(np.asarray(summary_full.value)
                                   - np.asarray(summary_stopped.value)))
    spent, same, tv = np.concatenate(spent), np.concatenate(same), np.concatenate(tv)
    if not same.all() or spent.max() > num_simulations:
        raise SystemExit(f"N={num_simulations}: VisitGap changed {1 - same.mean():.1%} of the "
                         f"moves or spent more than N (max {spent.max()}): a bug in "
                         f"stopping.py")
    key, states = draws[0]
    timing = harness.interleaved_rounds(
        {"full": lambda: full(key, states), "stopped": lambda: stopped(key, states)}, rounds,
        pairs=[("stopped", "full")])
    text = lambda side: harness.ratio_text(  # noqa: E731
        {k: timing["sides"][side][f"{k}_s"] for k in ("median", "min", "max")})
    row = dict(N=num_simulations, B=batch, batches=batches,
               saved_pct=round(100 * (1 - float(spent.mean()) / num_simulations), 1),
               same_move_pct=round(100 * float(same.mean()), 1),
               no_target_pct=round(100 * float(np.concatenate(unsearched).mean()), 1),
               target_changed_pct=round(100 * float(np.concatenate(changed).mean()), 1),
               target_tv_mean=round(float(tv.mean()), 4),
               target_tv_p90=round(float(np.percentile(tv, 90)), 4),
               root_value_change=round(float(np.concatenate(value_change).mean()), 4),
               full_s=text("full"), stopped_s=text("stopped"),
               **{"full/stopped": harness.ratio_text(timing["ratios"]["stopped/full"])},
               timing=timing)
    print({k: v for k, v in row.items() if k != "timing"}, flush=True)
    return row


def main(argv=None) -> List[Dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True, help="a trained board-game run")
    parser.add_argument("--budgets", type=int, nargs="+", default=None,
                        help="simulations N (default: the run's fast_simulations, if any, "
                             "and num_simulations)")
    parser.add_argument("--games", type=int, default=64,
                        help="self-play games whose positions are searched")
    parser.add_argument("--steps", type=int, default=48, help="moves of every game")
    parser.add_argument("--batch", type=int, default=None,
                        help="positions per search (default: the run's num_games)")
    parser.add_argument("--batches", type=int, default=8, help="batches judged per budget")
    parser.add_argument("--rounds", type=int, default=harness.ROUNDS["quick"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="self_play_stops")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    agent = Agent.load(args.run_dir)
    games = agent.config.records.self_play
    if args.budgets is None:
        args.budgets = [n for n in (games.fast_simulations,
                                    agent.config.records.search.num_simulations) if n > 0]
    if min(args.budgets) < 1:
        parser.error(f"--budgets: every budget must be >= 1, got {args.budgets}")
    for name in ("games", "steps", "batches", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be >= 1, got {getattr(args, name)}")
    args.batch = args.batch or games.num_games
    if args.batch < 1:
        parser.error(f"--batch: must be >= 1, got {args.batch}")
    positions = self_play_positions(agent, args.games, args.steps,
                                    agent.config.records.search.num_simulations, args.seed)
    count = int(jax.tree.leaves(positions)[0].shape[0])
    print(f"{count} self-play positions ({args.games} games x {args.steps} moves)", flush=True)
    rows = [compare(agent, positions, n, args.batch, args.batches, args.rounds, args.seed)
            for n in args.budgets]
    settings = dict(harness.provenance(seed=args.seed), **vars(args), positions=count,
                    iteration=agent.iteration, game=agent.config.game)
    harness.report(args.name, f"VisitGap() in self-play searches of {args.run_dir} "
                   f"(iteration {agent.iteration}; seconds: median (range) of one batch "
                   f"over interleaved rounds)", COLUMNS, rows, settings, not args.no_save)
    return rows


if __name__ == "__main__":
    main()
