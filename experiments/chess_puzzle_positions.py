"""Chess puzzles found and verified by Stockfish: mates in two, mates in
three and material-winning tactics, with every move that solves each.

    python -m experiments.chess_puzzle_positions      # writes experiments/chess_puzzles.json

How they are found (no puzzle database): Stockfish plays itself at a
random low Skill Level (0-5, `--nodes` a move) after a few random opening
plies, one game per seed. Every position from ply 10 on is scanned at
depth `SCAN_DEPTH` with MultiPV 2, and a game gives at most one position
to each set:
- "mate_in_two" / "mate_in_three": the side to move mates in 2 / 3;
- "tactics": no mate, Stockfish's best move is not a capture, the mover is
  not already ahead in material (balance <= +1 pawn), and the best move is
  at least 250 cp better than the second best.

Stockfish's Skill Level picks its moves with a clock-seeded random number
generator, so the self-play games (and the positions found) differ from
run to run; the verification of each position does not.

How they are verified (the data file keeps only positions that pass), with
Stockfish 15.1, one thread, a fresh hash each analysis:
- mates: at depth `VERIFY_DEPTH` Stockfish reports mate in exactly N for
  the side to move; then each legal move is played and analysed at depth
  `MOVE_DEPTH`: the move "keeps mate in N" when the opponent is then mated
  in exactly N - 1. `solutions` lists those moves; a position is kept when
  there are at most `MAX_SOLUTIONS` (one or a few answers, a puzzle).
  Stockfish can report a longer mate than the shortest at a small depth,
  so the mates in three are re-checked move by move at depth 16
  (`--recheck 16`) and a move found there is added to `solutions`. The
  mates in two are also checked exhaustively by python-chess
  (`experiments.mate_in_two_positions.mating_moves`, every reply answered
  by a mate in one), which must list the same moves.
- tactics: at depth `VERIFY_DEPTH` with MultiPV 2 the best move is the same
  as at the scan, its score is at least +150 cp and not a mate, the second
  best is at least `TACTIC_GAP` (200) cp worse, and the material balance
  after Stockfish's line (its first 10 plies) is at least 2 pawns better
  for the mover than now: the move wins material. `solutions` is the best
  move alone (any move within 100 cp of it would count, and with a gap of
  200 cp there is none other).

A search solves a puzzle when the move it plays is in `solutions`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

import chess
import chess.engine

from engines.opponents import find_binary

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chess_puzzles.json")
SCAN_DEPTH = 10
VERIFY_DEPTH = 18
MOVE_DEPTH = 10
TACTIC_GAP = 200
SCAN_GAP = 250
MAX_SOLUTIONS = 3
PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5,
                chess.QUEEN: 9, chess.KING: 0}
SETS = {"mate_in_two": 2, "mate_in_three": 3, "tactics": None}


def material(board: chess.Board, color: bool) -> int:
    """The material of `color` minus its opponent's, in pawns."""
    total = 0
    for piece in board.piece_map().values():
        value = PIECE_VALUES[piece.piece_type]
        total += value if piece.color == color else -value
    return total


def analyse(engine, board, depth, multipv=1):
    engine.configure({"Clear Hash": None})
    return engine.analyse(board, chess.engine.Limit(depth=depth), multipv=multipv)


def mate_solutions(engine, board, n, depth=MOVE_DEPTH):
    """The moves after which the opponent is mated in exactly n - 1 (as
    Stockfish reports it at `depth`: a mate it reports is a real one, but
    at a small depth it can report a longer mate than the shortest)."""
    moves = []
    for move in list(board.legal_moves):
        board.push(move)
        if n == 1:
            ok = board.is_checkmate()
        else:
            ok = (not board.is_game_over() and
                  analyse(engine, board, depth)[0]["score"].relative == chess.engine.Mate(
                      -(n - 1)))
        board.pop()
        if ok:
            moves.append(move.uci())
    return sorted(moves)


def classify(engine, board):
    """The set a scanned position is a candidate for, or None."""
    if board.is_game_over():
        return None, None
    infos = analyse(engine, board, SCAN_DEPTH, multipv=2)
    if len(infos) < 2:
        return None, None
    best, second = (info["score"].relative for info in infos[:2])
    move = infos[0]["pv"][0]
    if best.is_mate():
        n = best.mate()
        return {2: "mate_in_two", 3: "mate_in_three"}.get(n), move
    if second.is_mate() or board.is_capture(move):
        return None, None
    if material(board, board.turn) > 1:
        return None, None
    if best.score() - second.score() >= SCAN_GAP:
        return "tactics", move
    return None, None


def verify(engine, name, fen, scan_move):
    """The position's record, or None when it fails its set's checks."""
    board = chess.Board(fen)
    n = SETS[name]
    if n is not None:
        score = analyse(engine, board, VERIFY_DEPTH)[0]["score"].relative
        if score != chess.engine.Mate(n):
            return None
        solutions = mate_solutions(engine, board, n)
        if not 1 <= len(solutions) <= MAX_SOLUTIONS:
            return None
        if n == 2:
            from experiments.mate_in_two_positions import mating_moves

            if mating_moves(fen) != solutions:
                return None
        return dict(fen=fen, solutions=solutions, stockfish=f"mate {n}")
    infos = analyse(engine, board, VERIFY_DEPTH, multipv=2)
    if len(infos) < 2 or infos[0]["pv"][0] != scan_move:
        return None
    best, second = (info["score"].relative for info in infos[:2])
    if best.is_mate() or second.is_mate() or best.score() < 150:
        return None
    gap = best.score() - second.score()
    if gap < TACTIC_GAP:
        return None
    line = board.copy()
    for move in infos[0]["pv"][:10]:
        line.push(move)
    gain = material(line, board.turn) - material(board, board.turn)
    if gain < 2:
        return None
    return dict(fen=fen, solutions=[scan_move.uci()], stockfish=f"cp {best.score()}",
                gap_cp=gap, second=infos[1]["pv"][0].uci(), material_gain=gain,
                line=[m.uci() for m in infos[0]["pv"][:10]])


def recheck(path, depth, log=print):
    """Adds to each mate in three's `solutions` the moves that keep mate in
    three at `depth` too (the union of two sound checks), in place."""
    binary = find_binary("stockfish")
    engine = chess.engine.SimpleEngine.popen_uci([binary])
    engine.configure({"Threads": 1})
    with open(path) as f:
        doc = json.load(f)
    try:
        for p in doc["sets"]["mate_in_three"]:
            more = mate_solutions(engine, chess.Board(p["fen"]), 3, depth)
            if set(more) - set(p["solutions"]):
                log(f"{p['fen']}: {p['solutions']} + {sorted(set(more) - set(p['solutions']))}")
            p["solutions"] = sorted(set(p["solutions"]) | set(more))
    finally:
        engine.quit()
    doc["depths"]["mate_in_three_recheck"] = depth
    doc["recheck_command"] = f"python -m experiments.chess_puzzle_positions --recheck {depth}"
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def game_positions(engine, seed, nodes, opening_plies=4, max_plies=160):
    """The FENs of one Stockfish self-play game (seeded random opening and
    Skill Level), from ply 10 on."""
    rng = random.Random(seed)
    board = chess.Board()
    engine.configure({"Skill Level": rng.randint(0, 5)})
    for ply in range(max_plies):
        if board.is_game_over():
            break
        if ply < opening_plies:
            move = rng.choice(list(board.legal_moves))
        else:
            move = engine.play(board, chess.engine.Limit(nodes=nodes)).move
        board.push(move)
        if ply >= 9:
            yield board.fen()


def build(target, nodes, max_games, minutes=None, log=print, save=None):
    binary = find_binary("stockfish")
    if binary is None:
        raise SystemExit("stockfish is not installed (apt-get install stockfish)")
    player = chess.engine.SimpleEngine.popen_uci([binary])
    judge = chess.engine.SimpleEngine.popen_uci([binary])
    player.configure({"Threads": 1})
    judge.configure({"Threads": 1})
    found = {name: [] for name in SETS}
    seen = set()
    started = time.time()
    try:
        for seed in range(max_games):
            if all(len(v) >= target for v in found.values()):
                break
            if minutes is not None and time.time() - started > 60 * minutes:
                log(f"stopped after {minutes} minutes")
                break
            used = set()
            for fen in game_positions(player, seed, nodes):
                board = chess.Board(fen)
                name, move = classify(judge, board)
                if name is None or name in used or len(found[name]) >= target:
                    continue
                key = " ".join(fen.split()[:4])
                if key in seen:
                    continue
                record = verify(judge, name, fen, move)
                if record is None:
                    continue
                seen.add(key)
                used.add(name)
                found[name].append(dict(game_seed=seed, **record))
            log(f"game {seed}: " + ", ".join(f"{k} {len(v)}" for k, v in found.items())
                + f" ({time.time() - started:.0f} s)")
            if save is not None and used:
                save(found)
    finally:
        player.quit()
        judge.quit()
    return found


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", type=int, default=25, help="positions per set")
    parser.add_argument("--nodes", type=int, default=2000, help="self-play nodes a move")
    parser.add_argument("--max-games", type=int, default=400)
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop after this long (the sets found so far are kept)")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--recheck", type=int, default=None, metavar="DEPTH",
                        help="only re-check the mates in three of --out at DEPTH")
    args = parser.parse_args(argv)
    if args.recheck:
        recheck(args.out, args.recheck)
        return
    command = (f"python -m experiments.chess_puzzle_positions --target {args.target} "
               f"--nodes {args.nodes}" + (f" --minutes {args.minutes:g}" if args.minutes else ""))

    def save(found):
        doc = dict(description=__doc__.split("\n\n")[0].replace("\n", " "),
                   method=__doc__.split("\n\n", 2)[2].strip(),
                   fields=dict(fen="the position (side to move solves it)",
                               solutions="every move (UCI) that solves it",
                               stockfish="Stockfish's verifying score for the side to move",
                               game_seed="the self-play game it came from"),
                   engine="Stockfish 15.1, Threads 1",
                   depths=dict(scan=SCAN_DEPTH, verify=VERIFY_DEPTH, move=MOVE_DEPTH),
                   command=command, sets=found)
        with open(args.out + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)

    found = build(args.target, args.nodes, args.max_games, args.minutes, save=save)
    save(found)
    print({k: len(v) for k, v in found.items()}, "written to", args.out)


if __name__ == "__main__":
    main()
