"""The Connect Four position benchmarks: labelled positions by game stage and difficulty.

    python -m experiments.connect_four_positions                    # the mixed set
    python -m experiments.connect_four_positions --set random_play  # train.py's set
    python -m experiments.connect_four_positions --out positions.json --count 200

Two sets, 1000 positions each, under benchmarks/data/:

- `connect_four_random_play.json` (`--set random_play`), the set a training
  run is judged on: positions of uniformly random games at a ply drawn
  uniformly from 4 to 30 (a game over before it is redrawn);
- `connect_four_positions.json` (`--set mixed`, the default): every stage
  (plies 0-41) from random and near-perfect games, as below.

Positions are move lists from the empty board. The mixed set draws them from
two kinds of games:

- random: both sides play uniformly random legal moves;
- noisy: each game draws eps ~ U[0.05, 0.5]; every move is a uniformly
  random optimal move (by the solver) with probability 1 - eps, a uniformly
  random legal move otherwise, so games stay near perfect play for long
  stretches and positions are balanced more often than in random games.

Each (source, stage) cell gets an equal share of `--count`; a position's ply
is drawn uniformly within its stage (`envs.connect_four_solver.STAGES`:
opening 0-9, middle 10-24, late 25-41), and its game is played from the empty
board to that ply; a game that ends first gives a ply drawn uniformly from
the stage's plies it reached (none: redrawn). A position is kept when
the game is not over, no earlier kept position has the same board, and at
least one legal move loses the game-theoretic value (a position where every
move keeps it tests nothing). Every kept position is labelled by bitbully:
the value for the player to move, the optimal columns (those keeping it) and
the solver's score of each column. Its difficulty follows from how many
moves keep the value (`envs.connect_four_solver.DIFFICULTIES`: one is hard,
2-3 medium, 4-6 easy), like the published Connect Four test sets that
grade positions by stage and difficulty. The file lists them in a shuffled
order, so a prefix mixes every stage and source. Everything is drawn from
`random.Random(--seed)`: the same seed and solver give the same file.

The solver's time per position (cold: transposition table cleared before
each) is measured on the kept positions and printed by stage, and saved to
experiments/results/connect_four_solver-cpu.json.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import sys
import time
from typing import Dict, List, Union

import numpy as np

from envs import connect_four_solver as solver

SOURCES = ("random", "noisy")
SETS = {"mixed": solver.POSITIONS_PATH, "random_play": solver.RANDOM_PLAY_PATH}
# The random-play set's plies (games over before their drawn ply are redrawn).
RANDOM_PLAY_PLIES = (4, 30)


def _play(rng: random.Random, source: str, low: int, high: int):
    """Moves of a game played to a ply drawn from [low, high]; if the game
    ends first, a ply drawn from [low, last ply before the end] of it; None
    if it ends before `low`."""
    target = rng.randint(low, high)
    eps = rng.uniform(0.05, 0.5)
    grid = np.zeros((solver.COLUMNS, solver.ROWS), np.int8)
    heights = [0] * solver.COLUMNS
    moves: List[int] = []
    while len(moves) < target:
        if source == "noisy" and rng.random() >= eps:
            _, optimal = solver.analyse_grid(grid)
            move = rng.choice(np.flatnonzero(optimal).tolist())
        else:
            move = rng.choice([c for c in range(solver.COLUMNS) if heights[c] < solver.ROWS])
        grid[move, heights[move]] = 1 + len(moves) % 2
        moves.append(move)
        heights[move] += 1
        if solver._wins_at(grid, move, heights[move] - 1):
            last = len(moves) - 1  # the last position before the game ended
            return None if last < low else moves[:rng.randint(low, last)]
    return moves


def _label(moves: List[int], source: str, seen: set) -> Union[Dict, str]:
    """The labelled row of the position after `moves`, or why it is left out:
    "repeated" (its board was drawn already) or "trivial" (every legal move
    keeps the value)."""
    grid = solver.grid_from_moves(moves)
    key = grid.tobytes()
    if key in seen:
        return "repeated"
    seen.add(key)
    value, optimal = solver.analyse_grid(grid)
    if optimal.sum() == solver.legal_columns(grid).sum():
        return "trivial"
    scores = solver.move_scores(moves)
    return dict(moves=solver.moves_to_string(moves), source=source, value=int(value),
                optimal="".join(str(c) for c in np.flatnonzero(optimal)),
                scores=[scores.get(c) for c in range(solver.COLUMNS)])


def generate(count: int, seed: int, log=print) -> List[Dict]:
    """The mixed set: `count` positions, an equal share per (source, stage)."""
    rng = random.Random(seed)
    cells = [(source, stage) for source in SOURCES for stage in solver.STAGES]
    quotas = [count // len(cells) + (i < count % len(cells)) for i in range(len(cells))]
    seen: set = set()
    positions = []
    for (source, (stage, low, high)), quota in zip(cells, quotas):
        kept, redrawn = 0, collections.Counter()
        while kept < quota:
            moves = _play(rng, source, low, high)
            row = "ended" if moves is None else _label(moves, source, seen)
            if isinstance(row, str):
                redrawn[row] += 1
                continue
            positions.append(row)
            kept += 1
        log(f"{source:>6} {stage:>7}: {kept} kept; redrawn: {redrawn['ended']} games ended "
            f"before the stage, {redrawn['repeated']} repeated boards, "
            f"{redrawn['trivial']} with every move optimal")
    rng.shuffle(positions)
    return positions


def generate_random_play(count: int, seed: int, log=print) -> List[Dict]:
    """The random-play set: `count` positions of uniformly random games, each
    at a ply drawn uniformly from `RANDOM_PLAY_PLIES` (a game that ends
    first is redrawn: every position is undecided, not over)."""
    rng = random.Random(seed)
    low, high = RANDOM_PLAY_PLIES
    seen: set = set()
    positions, redrawn = [], collections.Counter()
    while len(positions) < count:
        ply = rng.randint(low, high)
        moves = _play(rng, "random", ply, ply)
        row = "ended" if moves is None else _label(moves, "random", seen)
        if isinstance(row, str):
            redrawn[row] += 1
            continue
        positions.append(row)
    log(f"random play, plies {low}-{high}: {len(positions)} kept; redrawn: "
        f"{redrawn['ended']} games over before their ply, {redrawn['repeated']} repeated "
        f"boards, {redrawn['trivial']} with every move optimal")
    return positions


def time_solver(positions: List[Dict]) -> List[Dict]:
    """Cold solver time per position (transposition table cleared), by stage."""
    from bitbully import Board
    agent = solver._solver()
    by_stage = collections.defaultdict(list)
    for row in positions:
        board = Board(solver.grid_from_moves(row["moves"]).tolist())
        agent.reset_transposition_table()
        start = time.perf_counter()
        agent.score_all_moves(board)
        by_stage[solver.stage_of(len(row["moves"]))].append(time.perf_counter() - start)
        by_stage["all"].append(by_stage[solver.stage_of(len(row["moves"]))][-1])
    rows = []
    for stage in [s for s, _, _ in solver.STAGES] + ["all"]:
        times = sorted(by_stage[stage])
        if times:
            rows.append(dict(stage=stage, positions=len(times),
                             median_ms=round(1000 * statistics.median(times), 3),
                             p90_ms=round(1000 * times[int(0.9 * (len(times) - 1))], 3),
                             max_ms=round(1000 * times[-1], 3),
                             total_s=round(sum(times), 3)))
    return rows


def write(path: str, positions: List[Dict], header: Dict) -> None:
    """JSON with one position per line (small diffs, about 100 bytes each)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    head = json.dumps(header, indent=1)[:-2]  # without the closing brace
    lines = [json.dumps(row, separators=(",", ":")) for row in positions]
    with open(path, "w") as f:
        f.write(head + ',\n "positions": [\n' + ",\n".join(lines) + "\n ]\n}\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(SETS), default="mixed",
                        help="mixed: every stage, random and near-perfect games; random_play: "
                             "random games at plies 4-30 (the training run's set)")
    parser.add_argument("--out", default=None,
                        help="the JSON file to write (default: the set's file under "
                             "benchmarks/data/)")
    parser.add_argument("--count", type=int, default=1000, help="positions in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-timings", action="store_true",
                        help="skip the solver timing (and its results file; the mixed set only)")
    args = parser.parse_args(argv)
    from importlib import metadata

    command = "python -m experiments.connect_four_positions" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    out = args.out or SETS[args.set]
    from benchmarks import harness
    # Before the data file is rewritten: the tree as the run found it.
    provenance = harness.provenance(seed=args.seed)
    started = time.perf_counter()
    if args.set == "mixed":
        positions = generate(args.count, args.seed)
        source_note = ("random: uniformly random games; noisy: solver-optimal moves mixed with "
                       "random ones (eps ~ U[0.05, 0.5] per game)")
    else:
        positions = generate_random_play(args.count, args.seed)
        source_note = (f"random: uniformly random games, cut at a ply drawn uniformly from "
                       f"{RANDOM_PLAY_PLIES[0]}-{RANDOM_PLAY_PLIES[1]}")
    sources = SOURCES if args.set == "mixed" else ("random",)
    counts = collections.Counter((row["source"], solver.stage_of(len(row["moves"])))
                                 for row in positions)
    difficulties = collections.Counter(
        (solver.stage_of(len(row["moves"])), solver.difficulty_of(len(row["optimal"])))
        for row in positions)
    values = collections.Counter(row["value"] for row in positions)
    header = dict(
        description="Connect Four positions (move lists from the empty board, columns 0-6) "
                    "labelled by a perfect solver; see experiments/connect_four_positions.py",
        set=args.set,
        fields=dict(moves="columns played from the empty board, first mover first",
                    source=source_note,
                    value="game-theoretic value for the player to move: 1 win, 0 draw, -1 loss",
                    optimal="the columns that keep that value",
                    scores="bitbully's score per column (null: full); sign as value, larger "
                           "magnitude: a quicker win or a slower loss"),
        stages={name: [low, high] for name, low, high in solver.STAGES},
        difficulties={name: (f"{low}" if low == high else f"{low}-{high}") + " optimal move"
                      + ("" if high == 1 else "s") for name, low, high in solver.DIFFICULTIES},
        command=command, seed=args.seed,
        solver=f"bitbully {metadata.version('bitbully')} (default opening book)",
        count=len(positions),
        counts={f"{source}/{stage}": counts[(source, stage)] for source in sources
                for stage, _, _ in solver.STAGES},
        difficulty_counts={f"{stage}/{difficulty}": difficulties[(stage, difficulty)]
                           for stage, _, _ in solver.STAGES
                           for difficulty, _, _ in solver.DIFFICULTIES},
        values={str(v): values[v] for v in (1, 0, -1)})
    write(out, positions, header)
    print(f"wrote {len(positions)} positions to {out} ({os.path.getsize(out):,} bytes, "
          f"{time.perf_counter() - started:.1f} s); values {dict(values)}")
    if not args.no_timings and args.set == "mixed":
        rows = time_solver(positions)
        harness.report("connect_four_solver",
                       "bitbully score_all_moves per position, cold (transposition table "
                       "cleared before each), by stage",
                       ["stage", "positions", "median_ms", "p90_ms", "max_ms", "total_s"], rows,
                       dict(provenance, count=len(positions),
                            solver=header["solver"]))


if __name__ == "__main__":
    main()
