"""The UCI engine (engines/uci.py) driven through its protocol: python-chess's
engine client for play and analysis, raw lines for bad input. Each engine is
one subprocess (`python -m engines.uci`), shared by the tests of its kind;
small settings keep it quick (chunks of 16, trees of 512 nodes)."""

import os
import queue
import subprocess
import sys
import threading
import time

import pytest

chess = pytest.importorskip("chess")
import chess.engine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
COMMAND = [sys.executable, "-m", "engines.uci"]
SMALL = {"Chunk": 16, "MaxNodes": 512}
# The position: Qxf7# mates in one.
QUEEN_MATE = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"


@pytest.fixture(scope="module")
def engine():
    engine = chess.engine.SimpleEngine.popen_uci(COMMAND, timeout=600, env=ENV, cwd=ROOT)
    engine.configure(SMALL)
    engine.ping()       # isready: compiles the search
    yield engine
    engine.quit()


def test_identifies_itself_and_its_options(engine):
    assert engine.id["name"] == "mcts_jax"
    for name in ("Policy", "Evaluator", "Simulations", "MultiPV", "AgentDir"):
        assert name in engine.options
    assert set(engine.options["Policy"].var) == {"alphazero", "uct", "gumbel"}


def test_plays_the_mate_in_one_and_scores_it_as_mate(engine):
    board = chess.Board(QUEEN_MATE)
    result = engine.play(board, chess.engine.Limit(nodes=128), info=chess.engine.INFO_ALL)
    board.push(result.move)
    assert board.is_checkmate(), result.move
    assert result.info["score"].relative == chess.engine.Mate(1)
    assert result.info["pv"][0] == result.move


def test_analysis_multipv_gives_distinct_legal_lines(engine):
    board = chess.Board()
    infos = engine.analyse(board, chess.engine.Limit(nodes=64), multipv=3)
    assert len(infos) == 3
    firsts = [info["pv"][0] for info in infos]
    assert len(set(firsts)) == 3
    for info in infos:
        assert info["nodes"] >= 64
        assert info["nps"] > 0
        probe = board.copy()
        for move in info["pv"]:
            assert move in probe.legal_moves
            probe.push(move)


def test_movetime_is_kept(engine):
    board = chess.Board()
    start = time.time()
    result = engine.play(board, chess.engine.Limit(time=0.5))
    # The search stops at its deadline or when the 512-node tree is full.
    assert time.time() - start < 5.0
    assert result.move in board.legal_moves


def test_go_depth_and_mate_end_the_search(engine):
    board = chess.Board()
    result = engine.play(board, chess.engine.Limit(depth=2, nodes=100_000),
                         info=chess.engine.INFO_ALL)
    # The best line reached two plies long before the 512-node tree filled.
    assert result.info["depth"] >= 2 and result.info["nodes"] <= 256, result.info
    mate = engine.play(chess.Board(QUEEN_MATE), chess.engine.Limit(mate=1, nodes=100_000),
                       info=chess.engine.INFO_ALL)
    assert mate.info["score"].relative == chess.engine.Mate(1)
    assert mate.info["nodes"] <= 256, mate.info   # the proof ends it


def test_a_game_goes_on_with_the_tree_kept():
    """Moves that follow the searched position keep its subtree: the
    engine says so (`info string kept the tree`), and the kept visits
    count towards the next search."""
    process = _Process.ready()
    try:
        process.send("position startpos moves e2e4")
        process.send("go nodes 256")
        best = process.expect("bestmove").split()[1]
        # Our move and a reply in our tree: the opponent's most likely move is
        # unknown, so follow the principal variation the engine printed.
        pv = process.last_pv()
        assert pv[0] == best and len(pv) >= 2, pv
        process.send(f"position startpos moves e2e4 {pv[0]} {pv[1]}")
        process.send("go nodes 16")
        kept = process.expect("info string kept the tree")
        assert int(kept.split(":")[1].split()[0]) >= 1
        process.expect("bestmove")
        # A position that does not follow starts afresh (no message).
        process.send("position fen " + QUEEN_MATE)
        process.send("go nodes 128")
        lines = process.until("bestmove")
        assert not any("kept the tree" in line for line in lines)
        assert lines[-1].split()[1] == "h5f7"
    finally:
        process.close()


def test_bad_input_is_answered_and_the_engine_goes_on():
    process = _Process.ready()
    try:
        process.send("flip the board")
        assert "unknown command: flip the board" in process.expect("info string")
        process.send("setoption name Policy value minimax_please")
        assert "Policy" in process.expect("info string")
        process.send("setoption name NoSuchOption value 3")
        assert "unknown option" in process.expect("info string")
        process.send("position fen rnbqkbnr/pppppppp/8/8 w KQkq - 0 1")   # 4 ranks
        assert "FEN" in process.expect("info string")
        process.send("position startpos moves e2e4 e7e5 e1e3 d2d4")       # e1e3 illegal
        message = process.expect("info string")
        assert "illegal move 'e1e3'" in message and "kept the 2 moves" in message
        process.send("go nodes 16 wtime abc")
        assert "wtime" in process.expect("info string")
        process.send("isready")
        process.expect("readyok")
        # The position kept: after 1. e4 e5 it is white's move.
        process.send("go nodes 16")
        move = chess.Move.from_uci(process.expect("bestmove").split()[1])
        board = chess.Board()
        board.push_uci("e2e4")
        board.push_uci("e7e5")
        assert move in board.legal_moves
        # A finished game: no move to make.
        process.send("position fen R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1")
        process.send("go nodes 16")
        assert process.expect("bestmove") == "bestmove (none)"
        # infinite runs until stop.
        process.send("position startpos")
        process.send("go infinite")
        time.sleep(1.0)
        assert process.poll_lines("bestmove") == []
        process.send("stop")
        move = chess.Move.from_uci(process.expect("bestmove").split()[1])
        assert move in chess.Board().legal_moves
        process.send("quit")
        assert process.process.wait(timeout=60) == 0
    finally:
        process.close()


class _Process:
    """The engine as a subprocess spoken to line by line."""

    def __init__(self):
        self.process = subprocess.Popen(COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, env=ENV, cwd=ROOT)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    @classmethod
    def ready(cls):
        """An engine past `uci` and `isready`, with the small settings."""
        process = cls()
        process.send("uci")
        process.expect("uciok")
        for name, value in SMALL.items():
            process.send(f"setoption name {name} value {value}")
        process.send("isready")
        process.expect("readyok", timeout=600)
        return process

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.strip())

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def until(self, prefix, timeout=120):
        got = []
        deadline = time.time() + timeout
        while True:
            line = self.lines.get(timeout=max(deadline - time.time(), 0.01))
            self.seen.append(line)
            got.append(line)
            if line.startswith(prefix):
                return got

    def expect(self, prefix, timeout=120):
        return self.until(prefix, timeout)[-1]

    def poll_lines(self, prefix):
        got = []
        while not self.lines.empty():
            line = self.lines.get()
            self.seen.append(line)
            got.append(line)
        return [line for line in got if line.startswith(prefix)]

    def last_pv(self):
        for line in reversed(self.seen):
            if " pv " in line:
                return line.split(" pv ")[1].split()
        return []

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
