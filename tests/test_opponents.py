"""External engines as arena players (engines/opponents.py): Stockfish over
UCI, GNU Go over GTP, and the Elo interval of a match score."""

import math

import jax
import pytest

import envs
from engines.opponents import GtpPlayer, UciPlayer, close_all, elo_interval
from engines.gtp_client import find_binary
from training import arena


def test_elo_interval_matches_the_logistic_formula():
    elo, low, high = elo_interval(30, 20, 10)     # score 0.666..., 60 games
    assert elo == pytest.approx(400 * math.log10(2))
    assert low < elo < high
    even, low0, high0 = elo_interval(10, 0, 10)
    assert even == 0.0 and low0 == pytest.approx(-high0)
    assert elo_interval(5, 0, 0)[0] == math.inf
    with pytest.raises(ValueError, match="at least one game"):
        elo_interval(0, 0, 0)


def test_stockfish_as_a_player_mates_in_one():
    chess = pytest.importorskip("chess")
    stockfish = find_binary("stockfish")
    if stockfish is None:
        pytest.skip("Stockfish is not installed (apt-get install stockfish)")
    from envs import chess_tools

    fen = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
    player = UciPlayer(stockfish, nodes=200, skill_level=20)
    try:
        state = chess_tools.from_fen(fen)
        board = chess.Board(fen)
        board.push_uci(chess_tools.action_to_uci(state, player.move(jax.device_get(state))))
        assert board.is_checkmate()
    finally:
        close_all()
    with pytest.raises(ValueError, match="nodes or movetime"):
        UciPlayer(stockfish)


def test_gnu_go_beats_random_play_in_the_arena():
    gnugo = find_binary("gnugo")
    if gnugo is None:
        pytest.skip("GNU Go is not installed (apt-get install gnugo)")
    game = envs.make("go_9x9")
    try:
        result = arena.play_match(game, GtpPlayer(gnugo, level=0), None, arena.RandomPlayer(),
                                  None, jax.random.key(0), num_games=2)
    finally:
        close_all()
    assert (result.wins, result.unfinished) == (2, 0), result
