"""The Stockfish-verified chess puzzles of experiments/chess_puzzles.json
(experiments/chess_puzzle_positions.py): every answer checked by
python-chess, and a few positions again by Stockfish where it is installed."""

import json
import os

import pytest

chess = pytest.importorskip("chess")

from engines.opponents import find_binary  # noqa: E402
from experiments import chess_puzzle_positions as puzzles  # noqa: E402
from experiments.mate_in_two_positions import mating_moves  # noqa: E402

with open(puzzles.OUT) as f:
    SETS = json.load(f)["sets"]


def test_every_set_has_puzzles_with_legal_distinct_answers():
    assert set(SETS) == set(puzzles.SETS)
    fens = [p["fen"] for positions in SETS.values() for p in positions]
    assert len(fens) == len(set(fens))
    for name, positions in SETS.items():
        assert len(positions) >= 10, name
        for p in positions:
            board = chess.Board(p["fen"])
            assert board.is_valid() and not board.is_game_over(), p
            legal = {m.uci() for m in board.legal_moves}
            assert p["solutions"] and set(p["solutions"]) <= legal, p
            # (the re-check at a greater depth may add a mate in three's move)
            assert name == "mate_in_three" or len(p["solutions"]) <= puzzles.MAX_SOLUTIONS


def test_mates_in_two_are_exhaustively_mates_in_two():
    # python-chess alone: every reply to a solution allows a mate in one,
    # and no other first move forces mate in two (a few, to stay quick).
    for p in SETS["mate_in_two"][:6]:
        assert mating_moves(p["fen"]) == p["solutions"], p["fen"]


def test_tactics_win_material_along_the_line_and_do_not_capture_first():
    for p in SETS["tactics"]:
        board = chess.Board(p["fen"])
        first = chess.Move.from_uci(p["solutions"][0])
        assert not board.is_capture(first) and p["line"][0] == p["solutions"][0]
        mover = board.turn
        before = puzzles.material(board, mover)
        for move in p["line"]:
            board.push_uci(move)          # raises on an illegal move
        assert puzzles.material(board, mover) - before == p["material_gain"] >= 2
        assert p["gap_cp"] >= puzzles.TACTIC_GAP


def test_stockfish_agrees_on_a_few_positions():
    binary = find_binary("stockfish")
    if binary is None:
        pytest.skip("Stockfish is not installed (apt-get install stockfish)")
    import chess.engine

    engine = chess.engine.SimpleEngine.popen_uci([binary])
    try:
        engine.configure({"Threads": 1})
        for name, n in (("mate_in_two", 2), ("mate_in_three", 3)):
            for p in SETS[name][:2]:
                info = puzzles.analyse(engine, chess.Board(p["fen"]), 12)[0]
                assert info["score"].relative == chess.engine.Mate(n), p
                board = chess.Board(p["fen"])
                board.push_uci(p["solutions"][0])
                # A fresh hash and enough depth: at a small depth Stockfish
                # can report a longer mate than the shortest.
                info = puzzles.analyse(engine, board, 16)[0]
                assert info["score"].relative == chess.engine.Mate(-(n - 1)), p
        for p in SETS["tactics"][:2]:
            info = puzzles.analyse(engine, chess.Board(p["fen"]), 14)[0]
            assert info["pv"][0].uci() == p["solutions"][0], p
    finally:
        engine.quit()
