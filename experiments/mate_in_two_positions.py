"""Chess mate-in-two positions, each verified with python-chess, with every
first move that forces mate.

    python -m experiments.mate_in_two_positions     # writes benchmarks/data/mate_in_two.json

Sources: the six MATE_IN_TWO positions of tests/chess_positions.py, and
puzzles of the Lichess puzzle database (https://database.lichess.org/,
released under CC0, public domain) tagged `mateIn2`, by puzzle id. A row of
that database gives the position before the opponent's last move and the
moves from there; the puzzle starts after the first move, which is applied
here. Some rows below are already in the puzzle's position (no move).

A position is kept when python-chess finds it legal, not over, with no
mate in one, and with at least one first move after which the game is not
over and every reply allows a mate in one. `mating_moves` lists every such
first move (UCI), so "the search found the mate" means its move is one of
them. A candidate that fails is reported and left out. The file lists the
positions in the order below (the repository's first).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

import chess

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks",
                           "data", "mate_in_two.json")
LICHESS = "Lichess puzzle database (CC0)"

# (puzzle id, FEN, the opponent's move that starts the puzzle or None)
LICHESS_PUZZLES = [
    ("00JQS", "5r1k/pb3Qpp/2p5/5p2/3P4/8/PPP2PPP/4R1K1 b - - 0 21", "f8f7"),
    ("00fgg", "4r1k1/p4ppp/8/8/8/8/PP1b1PPP/K2R4 w - - 0 21", "d1d2"),
    ("01337", "1k1r4/ppp3r1/8/P1b5/4R3/7P/1PP5/R6K b - - 0 25", "d8d2"),
    ("00kQE", "1rb3k1/p5pp/1p6/3R4/2B1p3/8/PP3rPP/1K5R b - - 1 26", "g8h8"),
    ("00JS1", "2r5/1p2k1pp/4p3/1N3p2/5P2/P2nP3/1R4PP/6K1 w - - 0 24", "b2d2"),
    ("01MPw", "3r4/p1k3q1/1p2p2p/2p1n1p1/2P1N3/P2R2Q1/1P3PPP/6K1 w - - 1 29", "d3e3"),
    ("0042j", "3r2k1/4nppp/pq1p1b2/1p2P3/2r2P2/2P1NR2/PP1Q2BP/3R2K1 b - - 0 24", "d6e5"),
    ("019yp", "5r1k/p1q3pp/2p1Q1p1/8/8/5RN1/P1P3P1/6K1 b - - 1 26", "f8f3"),
    ("00dpQ", "6k1/5ppp/8/4rP2/1r4P1/2RK3P/8/7B b - - 0 47", "b4b5"),
    ("01Uff", "8/5p2/2rk4/3b4/7P/3Q2P1/5P2/6K1 w - - 3 48", "d3h7"),
    ("008GK", "1k1r4/ppp3p1/8/1P5p/8/P3n2P/2P1r1P1/B3NRK1 b - - 4 31", "d8d1"),
    ("005N7", "r6k/2q3pp/8/2p1n3/R1Qp4/7P/2PB1PP1/6K1 b - - 0 32", "e5c4"),
    ("01Jrn", "5rk1/3q1r1p/1p1bQ1p1/8/1P4R1/7P/3N2P1/5R1K w - - 5 34", "e6d7"),
    ("0061g", "6k1/pp3pp1/2p1q1Pp/3b4/8/6Q1/PB3Pp1/3RrNK1 b - - 2 27", "e1d1"),
    ("01TXv", "Q1bk3r/2p2pNp/8/3PP3/2p3q1/B1P5/6BP/7K w - - 3 33", "a8c6"),
    ("00MS3", "rn1qr1k1/1p2bppp/2p2B2/p2p4/3P4/2N2N2/PPP1QPPP/2KRR3 b - - 0 12", "e7f6"),
    ("9cPIk", "2k3r1/8/P4p2/2P5/3n1n2/8/5P1K/RR6 w - - 0 38", "a6a7"),
    ("000Zo", "4r3/1k6/pp3r2/1b2P2p/3R1p2/P1R2P2/1P4PP/6K1 w - - 0 35", "e5f6"),
    ("aIBfE", "3r1k2/pR2N1bp/6p1/7n/8/8/PPPB1PPP/6K1 w - - 3 23", "d2b4"),
    ("AIbIx", "1k3b2/ppp1q3/3p1N1p/3P1PpP/2P1Q1P1/1P6/P7/1K6 b - - 2 43", "e7f6"),
    ("00sHx", "q3k1nr/1pp1nQpp/3p4/1P2p3/4P3/B1PP1b2/B5PP/5K2 b k - 0 17", "e8d7"),
    ("001Wz", "6k1/5ppp/r1p5/p1n1rP2/8/2P2N1P/2P3P1/3R2K1 w - - 0 22", None),
    ("001om", "5r1k/pp4pp/5p2/1BbQp1r1/7K/7P/1PP3P1/3R3R b - - 3 26", None),
    ("001w5", "1rb3k1/q4rP1/4p2p/3p3p/3P1P2/2P5/2QK3P/3R2R1 w - - 1 30", None),
    ("003Tx", "2r5/pR5p/5p1k/4p3/4R3/B4nPP/PP3P2/1K6 b - - 0 27", None),
    ("004X6", "1r4k1/p4ppp/2Q5/3pq3/8/P6P/2PR1PP1/1R4K1 b - - 0 26", None),
    ("006HV", "1r6/5k2/2Q1pNp1/p5Pp/1p2P2P/2P4R/KP3P2/3q4 b - - 0 31", None),
    ("007Rn", "4r1k1/p4p1p/1p6/6B1/3P2n1/P4Q2/1P4P1/7K b - - 0 34", None),
    ("007ku", "r1bq3Q/1np3p1/p5k1/1p1Pp3/1Pn2BP1/2b2P2/P3K3/R4N2 w - - 0 36", None),
    ("008oX", "6k1/2R3pp/2p4q/1p1p4/3P4/P7/1PP2R2/1K1Nr3 w - - 4 33", None),
    ("0092z", "2r3k1/3R1ppp/p1q5/2p2Q2/P7/7P/5PP1/6K1 w - - 4 27", None),
    ("009IO", "3r4/4kp1r/p2Np1p1/3bP3/P2n4/8/1P3RPP/5RK1 w - - 5 26", None),
    ("009f8", "8/1p4p1/pb2pp1p/3n1k2/3P4/P3BN1P/1P2KPP1/8 w - - 1 27", None),
    ("009lk", "1R6/6pk/2p4p/3bP2r/5B1P/2P1RqP1/P4P1Q/6K1 b - - 3 40", None),
    ("009oc", "5Q2/pbp3np/1p1pq1pk/1P6/P6P/6K1/8/8 w - - 0 33", None),
    ("009zR", "3Q4/p1p2ppp/4k3/8/5P2/4P3/Prqn2PP/3R1RK1 b - - 0 22", None),
]


def _mates_in_one(board: chess.Board) -> bool:
    for move in list(board.legal_moves):
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return True
    return False


def _forces_mate(board: chess.Board, move: chess.Move) -> bool:
    """After `move` the game goes on and every reply allows a mate in one."""
    board.push(move)
    try:
        if board.is_game_over():
            return False
        for reply in list(board.legal_moves):
            board.push(reply)
            ok = _mates_in_one(board)
            board.pop()
            if not ok:
                return False
        return True
    finally:
        board.pop()


def mating_moves(fen: str) -> Optional[List[str]]:
    """Every first move that mates in two (UCI, sorted); None unless the
    position is a legal mate in two with no mate in one."""
    board = chess.Board(fen)
    if not board.is_valid() or board.is_game_over() or _mates_in_one(board):
        return None
    moves = sorted(m.uci() for m in list(board.legal_moves) if _forces_mate(board, m))
    return moves or None


def candidates():
    """(source, id, FEN of the puzzle position) in file order."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tests"))
    from chess_positions import MATE_IN_TWO

    for i, fen in enumerate(MATE_IN_TWO):
        yield "tests/chess_positions.py MATE_IN_TWO", str(i), fen
    for puzzle_id, fen, first in LICHESS_PUZZLES:
        if first is not None:
            board = chess.Board(fen)
            board.push_uci(first)
            fen = board.fen()
        yield LICHESS, puzzle_id, fen


def build():
    positions, rejected = [], []
    for source, ident, fen in candidates():
        moves = mating_moves(fen)
        if moves is None:
            rejected.append((source, ident, fen))
            continue
        positions.append(dict(source=source, id=ident, fen=fen, mating_moves=moves))
    return positions, rejected


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    positions, rejected = build()
    for source, ident, fen in rejected:
        print(f"left out (not a mate in two with no mate in one): {source} {ident} {fen}")
    doc = dict(description=__doc__.split("\n\n")[0].replace("\n", " "),
               fields=dict(source="where the position comes from", id="index or puzzle id",
                           fen="the position, side to move mates in two",
                           mating_moves="every first move that forces mate in two (UCI)"),
               command="python -m experiments.mate_in_two_positions",
               positions=positions)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{len(positions)} positions written to {args.out}")


if __name__ == "__main__":
    main()
