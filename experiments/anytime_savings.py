"""Simulations and wall time a stop rule saves at equal decision quality
(issue 62, "Measure"), judged exactly.

For each problem and budget N, every position is searched twice with the
same key: a full AlphaZero search (temperature 0, no root noise) of N
simulations, and the same search with `stopping.VisitGap()`, which stops a
row once its most visited root action can no longer be overtaken in the
simulations left. Reported per (problem, N):

- B = the whole set as one batch: simulations each row spent with the stop
  (its root visits - 1; mean, median, and the share of N saved), the share
  of rows whose move is the full search's (100% by construction: checked,
  and the run fails otherwise), the accuracy of both against the exact
  judge, and the wall time of both (`harness.interleaved_rounds`: median
  and range over the rounds, and the per-round ratio full / stopped).
  A batch's loop ends only when its last row has stopped.
- B = 1: a sample of the positions, one row per call (one compiled program
  per side, reused), the whole sample timed as one call per side.

Problems and judges:
- tictactoe: every reachable non-terminal position (4520), judged by
  `envs.perfect_play`; evaluator `Uniform` (no value, so the search learns
  only from terminal rewards).
- connect_four: the 1000 random-play positions
  (`connect_four_solver.RANDOM_PLAY_PATH`, labelled by bitbully); evaluator
  `RandomPlayouts` (one playout per leaf).
- chess_mates: the mates in one of tests/chess_positions.py (python-chess
  says the move mates) and the mates in two of
  benchmarks/data/mate_in_two.json (the move is a verified mating first
  move); evaluator `Minimax(depth=1)`, `max_children=218`.

The sizes (`FULL_LIMITS`, `FULL_SIMULATIONS`) fit the shared 2-core CPU
machine: Connect Four's first 300 positions, chess's first 8 (mates in one)
at N 16 and 32 only; `--limit`, `--simulations` ask for more.

    python -m experiments.anytime_savings            # the measurement
    python -m experiments.anytime_savings --quick    # tiny shapes, a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Callable, Dict, List

import jax
import numpy as np

import envs
import mcts_jax
from benchmarks import harness
from envs import chess_tools, connect_four_solver, perfect_play
from mcts_jax import evaluators, stopping

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBLEMS = ("tictactoe", "connect_four", "chess_mates")
# Positions per problem (0: the whole set). The full run searches the first
# 300 of Connect Four's 1000 (the file is shuffled, so a prefix mixes every
# stage): 1000 x 800 simulations of random playouts take minutes per call on
# the 2-core machine, and each side is called rounds + 2 times.
# Chess is slower still: Minimax(depth=1) steps pgx chess for every child of
# every leaf (about 0.5 s per simulation for 4 boards on that machine), so
# the full run searches the first 8 positions (mates in one) at N 16 and 32.
FULL_LIMITS = dict(tictactoe=0, connect_four=300, chess_mates=8)
FULL_SIMULATIONS = dict(tictactoe=[200, 800], connect_four=[200, 800], chess_mates=[16, 32])
QUICK_LIMITS = dict(tictactoe=24, connect_four=24, chess_mates=4)
COLUMNS = ["problem", "N", "B", "positions", "sims_mean", "sims_median", "saved_pct",
           "same_move_pct", "accuracy_full", "accuracy_stopped", "full_s", "stopped_s",
           "full/stopped"]


def chess_puzzles():
    """{"mate_in_one": [(fen, None)], "mate_in_two": [(fen, mating moves)]}:
    the mates in one of tests/chess_positions.py (python-chess judges them)
    and benchmarks/data/mate_in_two.json's verified mates in two."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from chess_positions import MATE_IN_ONE

    with open(os.path.join(ROOT, "benchmarks", "data", "mate_in_two.json")) as f:
        two = json.load(f)["positions"]
    return {"mate_in_one": [(fen, None) for fen in MATE_IN_ONE],
            "mate_in_two": [(p["fen"], set(p["mating_moves"])) for p in two]}


def tictactoe(limit):
    states = perfect_play.reachable_states()
    optimal = perfect_play.reachable_positions()["optimal"]
    if limit:
        states, optimal = jax.tree.map(lambda x: x[:limit], states), optimal[:limit]
    return dict(game=envs.make("tic_tac_toe"), states=states, evaluator=evaluators.Uniform(),
                options={}, judge=lambda actions: optimal[np.arange(len(actions)), actions])


def connect_four(limit):
    positions = connect_four_solver.load_positions(connect_four_solver.RANDOM_PLAY_PATH,
                                                   limit=limit or None)
    game = envs.make("connect_four")
    return dict(game=game, states=connect_four_solver.states_from_moves(positions["moves"], game),
                evaluator=evaluators.RandomPlayouts(num_playouts=1), options={},
                judge=lambda actions: positions["optimal"][np.arange(len(actions)), actions])


def chess_mates(limit):
    import chess

    fens = [item for items in chess_puzzles().values() for item in items]
    fens = fens[:limit] if limit else fens
    states = chess_tools.batch_from_fens([fen for fen, _ in fens])

    def judge(actions):
        correct = []
        for row, (fen, mating) in enumerate(fens):
            move = chess_tools.action_to_uci(jax.tree.map(lambda x: x[row], states),
                                             int(actions[row]))
            board = chess.Board(fen)
            board.push_uci(move)
            correct.append(board.is_checkmate() if mating is None else move in mating)
        return np.asarray(correct)

    return dict(game=envs.make("chess"), states=states, evaluator=evaluators.Minimax(depth=1),
                options=dict(max_children=218), judge=judge)


def searcher(problem: Dict[str, Any], num_simulations: int, stop: bool) -> Callable:
    """fn(states) -> PolicyOutput: one jitted search of `states` [B]."""
    game, evaluator = problem["game"], problem["evaluator"]
    policy = mcts_jax.AlphaZeroPolicy.make(dirichlet_fraction=0.0, temperature=0.0,
                                           **problem["options"])
    if stop:
        policy = policy.replace(plugins=(stopping.VisitGap(),))
    recurrent_fn = game.recurrent_fn(evaluator)

    @jax.jit
    def search(states):
        root, invalid = game.root(None, jax.random.key(1), states, evaluator)
        return policy(None, jax.random.key(2), root, recurrent_fn, num_simulations,
                      invalid_actions=invalid)
    return search


def spent(output) -> np.ndarray:
    return np.asarray(output.search_tree.node_visits)[:, 0] - 1  # a fresh root has 1 visit


def _time_text(side):
    """A side's seconds as "median (min-max)", written as ratios are."""
    return harness.ratio_text({k: side[f"{k}_s"] for k in ("median", "min", "max")})


def cell(name, problem, states, num_simulations, rounds, judged):
    """One row: stopped vs full at the batch of `states` (judged: accuracy
    and same move over it) or one row per call over them."""
    full, stopped = (searcher(problem, num_simulations, stop) for stop in (False, True))
    count = int(jax.tree.leaves(states)[0].shape[0])
    one_by_one = not judged
    rows_of = [jax.tree.map(lambda x, i=i: x[i:i + 1], states) for i in range(count)]

    def run(search):
        if one_by_one:
            return [search(row) for row in rows_of]
        return search(states)

    outputs = {}

    def timed(side, search):
        def call():
            outputs[side] = run(search)  # the last timed call's answer is the one judged
            return outputs[side]
        return call

    timing = harness.interleaved_rounds(
        {"full": timed("full", full), "stopped": timed("stopped", stopped)}, rounds,
        pairs=[("stopped", "full")])
    if one_by_one:
        actions = {side: np.concatenate([np.asarray(o.action) for o in outs])
                   for side, outs in outputs.items()}
        used = np.concatenate([spent(o) for o in outputs["stopped"]])
    else:
        actions = {side: np.asarray(o.action) for side, o in outputs.items()}
        used = spent(outputs["stopped"])
    same = float(np.mean(actions["full"] == actions["stopped"]))
    if same < 1.0 or np.any(used > num_simulations):
        raise SystemExit(f"{name} N={num_simulations}: VisitGap changed {1 - same:.1%} of the "
                         f"moves or spent more than N (max {used.max()}): a bug in stopping.py")
    accuracy = {side: (float(np.mean(judged(actions[side]))) if judged else "")
                for side in actions}
    ratio = timing["ratios"]["stopped/full"]
    row = dict(problem=name, N=num_simulations, B=count if judged else 1, positions=count,
               sims_mean=float(np.mean(used)), sims_median=float(statistics.median(used)),
               saved_pct=round(100 * (1 - float(np.mean(used)) / num_simulations), 1),
               same_move_pct=round(100 * same, 1), accuracy_full=accuracy["full"],
               accuracy_stopped=accuracy["stopped"],
               full_s=_time_text(timing["sides"]["full"]),
               stopped_s=_time_text(timing["sides"]["stopped"]),
               **{"full/stopped": harness.ratio_text(ratio)}, timing=timing,
               spent_histogram=np.bincount(np.minimum(used * 10 // num_simulations, 10),
                                           minlength=11).tolist())
    print({k: v for k, v in row.items() if k not in ("timing", "spent_histogram")}, flush=True)
    return row


def measure(args) -> List[Dict[str, Any]]:
    builders = dict(tictactoe=tictactoe, connect_four=connect_four, chess_mates=chess_mates)
    rows = []
    for name in args.problems:
        problem = builders[name](args.limit.get(name, 0))
        count = int(jax.tree.leaves(problem["states"])[0].shape[0])
        sample = np.random.default_rng(args.seed).choice(count, min(args.sample, count),
                                                         replace=False)
        sample_states = jax.tree.map(lambda x: x[np.sort(sample)], problem["states"])
        for num_simulations in args.simulations or FULL_SIMULATIONS[name]:
            rows.append(cell(name, problem, problem["states"], num_simulations, args.rounds,
                             problem["judge"]))
            rows.append(cell(name, problem, sample_states, num_simulations, args.rounds, None))
    return rows


def parse_limits(items: List[str]) -> Dict[str, int]:
    limits = {}
    for item in items:
        name, _, count = item.partition("=")
        if name not in PROBLEMS or not count.isdigit():
            raise SystemExit(f"--limit: expected PROBLEM=COUNT with PROBLEM one of {PROBLEMS} "
                             f"and COUNT an int >= 0, got {item!r}")
        limits[name] = int(count)
    return limits


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="tiny shapes (QUICK_LIMITS positions), N 16 and 48, a sample "
                             "of 3, 2 rounds")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    parser.add_argument("--simulations", nargs="+", type=int, default=None,
                        help="budgets N for every problem (default: FULL_SIMULATIONS)")
    parser.add_argument("--limit", nargs="+", default=None, metavar="PROBLEM=COUNT",
                        help="the first COUNT positions of a problem's set (0: all)")
    parser.add_argument("--sample", type=int, default=None,
                        help="positions searched one per call (B = 1)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default=None)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    quick = dict(simulations=[16, 48], limit=QUICK_LIMITS, sample=3, rounds=2)
    full = dict(simulations=None, limit=FULL_LIMITS, sample=16,
                rounds=harness.ROUNDS["quick"])
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.simulations and min(args.simulations) < 1:
        raise SystemExit(f"--simulations: every budget must be >= 1, got {args.simulations}")
    if isinstance(args.limit, list):
        args.limit = parse_limits(args.limit)
    args.name = args.name or ("anytime_savings-quick" if args.quick else "anytime_savings")
    settings = dict(harness.provenance(seed=args.seed), **vars(args))
    rows = measure(args)
    harness.report(args.name, "Simulations and wall time saved by VisitGap() at equal "
                   "decisions (seconds: median (range) over interleaved rounds)", COLUMNS,
                   rows, settings, not args.no_save)
    return rows


if __name__ == "__main__":
    main()
