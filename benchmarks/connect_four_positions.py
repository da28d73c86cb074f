"""The Connect Four position benchmark: labelled positions at every game stage.

    python -m benchmarks.connect_four_positions            # writes benchmarks/data/...json
    python -m benchmarks.connect_four_positions --out positions.json --count 200

Positions are move lists from the empty board, drawn from two kinds of games:

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
the solver's score of each column. The file lists them in a shuffled order,
so a prefix mixes every stage and source. Everything is drawn from
`random.Random(--seed)`: the same seed and solver give the same file.

The solver's time per position (cold: transposition table cleared before
each) is measured on the kept positions and printed by stage, and saved to
benchmarks/results/connect_four_solver-cpu.json.
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
from typing import Dict, List

import numpy as np

from envs import connect_four_solver as solver

DEFAULT_OUT = solver.POSITIONS_PATH
SOURCES = ("random", "noisy")


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


def generate(count: int, seed: int, log=print) -> List[Dict]:
    rng = random.Random(seed)
    cells = [(source, stage) for source in SOURCES for stage in solver.STAGES]
    quotas = [count // len(cells) + (i < count % len(cells)) for i in range(len(cells))]
    seen = set()
    positions = []
    for (source, (stage, low, high)), quota in zip(cells, quotas):
        kept = trivial = repeated = ended = 0
        while kept < quota:
            moves = _play(rng, source, low, high)
            if moves is None:
                ended += 1
                continue
            grid = solver.grid_from_moves(moves)
            key = grid.tobytes()
            if key in seen:
                repeated += 1
                continue
            seen.add(key)
            value, optimal = solver.analyse_grid(grid)
            if optimal.sum() == solver.legal_columns(grid).sum():
                trivial += 1
                continue
            scores = solver.move_scores(moves)
            positions.append(dict(moves=solver.moves_to_string(moves), source=source,
                                  value=int(value),
                                  optimal="".join(str(c) for c in np.flatnonzero(optimal)),
                                  scores=[scores.get(c) for c in range(solver.COLUMNS)]))
            kept += 1
        log(f"{source:>6} {stage:>7}: {kept} kept; redrawn: {ended} games ended before the stage, "
            f"{repeated} repeated boards, {trivial} with every move optimal")
    rng.shuffle(positions)
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
    parser.add_argument("--out", default=DEFAULT_OUT, help="the JSON file to write")
    parser.add_argument("--count", type=int, default=1000, help="positions in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-timings", action="store_true",
                        help="skip the solver timing (and its results file)")
    args = parser.parse_args(argv)
    from importlib import metadata

    command = "python -m benchmarks.connect_four_positions" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    started = time.perf_counter()
    positions = generate(args.count, args.seed)
    counts = collections.Counter((row["source"], solver.stage_of(len(row["moves"])))
                                 for row in positions)
    values = collections.Counter(row["value"] for row in positions)
    header = dict(
        description="Connect Four positions (move lists from the empty board, columns 0-6) "
                    "labelled by a perfect solver; see benchmarks/connect_four_positions.py",
        fields=dict(moves="columns played from the empty board, first mover first",
                    source="random: uniformly random games; noisy: solver-optimal moves "
                           "mixed with random ones (eps ~ U[0.05, 0.5] per game)",
                    value="game-theoretic value for the player to move: 1 win, 0 draw, -1 loss",
                    optimal="the columns that keep that value",
                    scores="bitbully's score per column (null: full); sign as value, larger "
                           "magnitude: a quicker win or a slower loss"),
        stages={name: [low, high] for name, low, high in solver.STAGES},
        command=command, seed=args.seed,
        solver=f"bitbully {metadata.version('bitbully')} (default opening book)",
        count=len(positions),
        counts={f"{source}/{stage}": counts[(source, stage)] for source in SOURCES
                for stage, _, _ in solver.STAGES},
        values={str(v): values[v] for v in (1, 0, -1)})
    write(args.out, positions, header)
    print(f"wrote {len(positions)} positions to {args.out} ({os.path.getsize(args.out):,} bytes, "
          f"{time.perf_counter() - started:.1f} s); values {dict(values)}")
    if not args.no_timings:
        from benchmarks import harness
        rows = time_solver(positions)
        harness.report("connect_four_solver",
                       "bitbully score_all_moves per position, cold (transposition table "
                       "cleared before each), by stage",
                       ["stage", "positions", "median_ms", "p90_ms", "max_ms", "total_s"], rows,
                       dict(harness.provenance(seed=args.seed), count=len(positions),
                            solver=header["solver"]))


if __name__ == "__main__":
    main()
