"""The GTP engine (engines/gtp.py) driven through its protocol by our GTP
client (engines/gtp_client.py), and a short 9x9 game against GNU Go where it
is installed: GNU Go accepts every move of ours, we accept every one of its,
and at the end both boards hold the same stones (GNU Go's `list_stones` is
the independent judge of captures and coordinates)."""

import os
import sys

import pytest

import time

from engines.gtp import Clock, GtpError, action_to_vertex, move_seconds, vertex_to_action
from engines.gtp_client import GtpClient, find_binary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
# Small and quick: UCT with one random playout a leaf, 32 simulations a move.
COMMAND = [sys.executable, "-m", "engines.gtp", "--simulations", "32", "--chunk", "16",
           "--max-nodes", "256"]


@pytest.fixture(scope="module")
def engine():
    with GtpClient(COMMAND, env=ENV, cwd=ROOT) as client:
        yield client


def test_vertices_round_trip_on_both_sizes():
    for size in (9, 19):
        vertices = {action_to_vertex(a, size) for a in range(size * size + 1)}
        assert len(vertices) == size * size + 1
        for action in range(size * size + 1):
            assert vertex_to_action(action_to_vertex(action, size), size) == action
    assert action_to_vertex(0, 9) == "A9" and action_to_vertex(80, 9) == "J1"
    assert "I" not in "".join(action_to_vertex(a, 19) for a in range(361))
    for bad in ("I5", "A10", "Z1", "D", "44"):
        with pytest.raises(GtpError):
            vertex_to_action(bad, 9)


def test_standard_commands(engine):
    assert engine.send("protocol_version") == "2"
    assert engine.send("name") == "mcts_jax"
    assert engine.send("known_command genmove") == "true"
    assert engine.send("known_command fly") == "false"
    commands = engine.send("list_commands").split("\n")
    for name in ("boardsize", "clear_board", "komi", "play", "genmove", "undo",
                 "final_score", "showboard", "time_settings", "time_left", "quit"):
        assert name in commands
    engine.send("boardsize 9")
    engine.send("clear_board")
    engine.send("play black C3")
    engine.send("play white D4")
    board = engine.send("showboard")
    rows = {line.split()[0]: line.split()[1:10] for line in board.split("\n")
            if line.strip() and line.split()[0].isdigit()}
    assert rows["3"][2] == "X" and rows["4"][3] == "O"
    # Area scoring: one stone each, the board shared, komi decides.
    engine.send("komi 0.5")
    engine.send("undo")
    assert engine.send("final_score").startswith("B+")
    engine.send("komi 7.5")
    engine.send("clear_board")


def test_bad_input_answered_with_a_question_mark(engine):
    engine.send("clear_board")
    engine.send("play black E5")
    for command, message in (("play white E5", "illegal move"),
                             ("play white Z9", "invalid vertex"),
                             ("play purple E4", "invalid color"),
                             ("boardsize 13", "unacceptable size"),
                             ("fly away", "unknown command"),
                             ("komi much", "komi"),
                             ("time_settings 60 x 5", "time_settings needs"),
                             ("time_settings 60 -1 5", "non-negative"),
                             ("time_left green 10 0", "invalid color"),
                             ("time_left black 10", "time_left needs")):
        with pytest.raises(GtpError, match=message):
            engine.send(command)
    engine.send("clear_board")
    with pytest.raises(GtpError, match="cannot undo"):
        engine.send("undo")
    # Still playing: a move of white's on the empty board.
    vertex_to_action(engine.send("genmove white"), 9)
    engine.send("clear_board")


def test_a_moves_share_of_the_clock():
    # No clock, or byo-yomi time with no stones (GTP: no limit): no deadline.
    assert move_seconds(None, 0, 81) is None
    assert move_seconds(Clock(0.0, 10.0, 0), 0, 81) is None
    # Main time before any time_left: the main time over the moves expected
    # (half the empty points, at least 20), plus one byo-yomi move's share.
    assert move_seconds(Clock(60.0, 0.0, 0), 0, 81) == pytest.approx(60 / 40 - 0.2)
    assert move_seconds(Clock(60.0, 30.0, 10), 1, 20) == pytest.approx(60 / 20 + 3 - 0.2)
    # In a byo-yomi period: the period's time left over its stones to play.
    clock = Clock(60.0, 30.0, 10, left={0: (12.0, 4), 1: (50.0, 0)})
    assert move_seconds(clock, 0, 81) == pytest.approx(12 / 4 - 0.2)
    assert move_seconds(clock, 1, 81) == pytest.approx(50 / 40 + 3 - 0.2)
    # Never below a tenth of a second.
    assert move_seconds(Clock(1.0, 0.0, 0), 0, 81) == pytest.approx(0.1)


def test_genmove_keeps_to_the_clock():
    # 100,000 simulations a move would take minutes here; the clock
    # gives white a tenth of a second (10 moves in one second of byo-yomi).
    command = [sys.executable, "-m", "engines.gtp", "--simulations", "100000", "--chunk", "16",
               "--max-nodes", "100001"]
    with GtpClient(command, env=ENV, cwd=ROOT) as slow:
        slow.send("time_settings 0 1 10")
        slow.send("time_left white 1 10")
        start = time.time()
        vertex_to_action(slow.send("genmove white"), 9)
        assert time.time() - start < 10.0


def test_a_short_game_against_gnu_go(engine):
    gnugo = find_binary("gnugo")
    if gnugo is None:
        pytest.skip("GNU Go is not installed (apt-get install gnugo)")
    engine.send("boardsize 9")
    engine.send("clear_board")
    with GtpClient([gnugo, "--mode", "gtp", "--level", "0", "--chinese-rules"]) as judge:
        judge.send("boardsize 9")
        judge.send("clear_board")
        judge.send("komi 7.5")
        colors = ("black", "white")
        for ply in range(16):
            color = colors[ply % 2]
            if ply % 2 == 0:
                move = engine.send(f"genmove {color}")
                judge.send(f"play {color} {move}")      # GNU Go accepts our move
            else:
                move = judge.send(f"genmove {color}")
                assert move != "resign"
                engine.send(f"play {color} {move}")     # and we accept its move
        ours = engine.send("showboard")
        rows = [line.split() for line in ours.split("\n")
                if line.strip() and line.split()[0].isdigit()]
        stones = {"X": set(), "O": set()}
        for row in rows:
            for column, cell in zip("ABCDEFGHJ", row[1:10]):
                if cell in stones:
                    stones[cell].add(f"{column}{row[0]}")
        assert stones["X"] == set(judge.send("list_stones black").split())
        assert stones["O"] == set(judge.send("list_stones white").split())
        assert stones["X"] and stones["O"]
