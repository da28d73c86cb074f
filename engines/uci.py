"""The UCI engine: our chess search for GUIs and tournament managers.

    python -m engines.uci          # or the console script mcts-jax-uci

Speaks UCI (https://www.wbec-ridderkerk.nl/html/UCIProtocol.html) on
stdin/stdout: `uci`, `isready` (compiles the search, so the first `go`
is fast), `ucinewgame`, `position startpos|fen FEN [moves ...]`, `go`
(`nodes`, `movetime`, `wtime/btime/winc/binc/movestogo`, `infinite`), `stop`,
`setoption`, `quit`. The search runs in a worker thread in chunks of one
compiled program; between chunks it checks `stop` and its deadline and
prints `info` lines (nodes, nps, score cp or mate, pv; one per MultiPV
line). When a new position is the previous one followed by moves, the tree
is kept (subtree reuse). Bad input (an unknown command, a malformed FEN, an
illegal move) is answered with `info string ...` and otherwise ignored, as
UCI asks; the engine never stops on it. The rules are pgx's chess
(`envs.make("chess")`, moves through `envs.chess_tools`).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from typing import Callable, List, Optional, TextIO, Tuple

import jax

import envs
import mcts_jax
from engines import analysis as analysis_lib
from envs import chess_tools

START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
NAME = "mcts_jax"
# A move's share of the remaining clock, and the margin kept for the reply.
MOVES_TO_GO = 30
SAFETY_MS = 50
INFO_INTERVAL_S = 0.5

# Engine options: UCI name -> (type, default, SearchSettings field or None, extra).
OPTIONS = {
    "Policy": ("combo", "alphazero", "policy", analysis_lib.POLICY_NAMES),
    "Evaluator": ("combo", "uniform", "evaluator", analysis_lib.EVALUATOR_NAMES),
    "Playouts": ("spin", 1, "playouts", (1, 64)),
    "Chunk": ("spin", 64, "chunk", (1, 4096)),
    "MaxNodes": ("spin", 8192, "max_nodes", (2, 1 << 20)),
    "Solver": ("check", True, "solver", None),
    "ExpandAll": ("check", False, "expand_all", None),
    "Simulations": ("spin", 800, None, (1, 1 << 20)),   # `go` with no limit
    "MultiPV": ("spin", 1, None, (1, 218)),
    "AgentDir": ("string", "", None, None),              # a training run's folder
    "Seed": ("spin", 0, None, (0, 1 << 30)),
}


def uci_option_lines() -> List[str]:
    lines = []
    for name, (kind, default, _, extra) in OPTIONS.items():
        if kind == "combo":
            values = " ".join(f"var {v}" for v in extra)
            lines.append(f"option name {name} type combo default {default} {values}")
        elif kind == "spin":
            lines.append(f"option name {name} type spin default {default} min {extra[0]} "
                         f"max {extra[1]}")
        elif kind == "check":
            lines.append(f"option name {name} type check default {str(default).lower()}")
        else:
            lines.append(f"option name {name} type string default "
                         f"{default if default else '<empty>'}")
    return lines


@dataclasses.dataclass
class Limits:
    """One `go`: nodes (simulations), a deadline (seconds since epoch),
    depth (the best line's length in plies), mate (moves: a proven mate
    ends the search, as a proof of any result does), infinite."""

    nodes: Optional[int] = None
    deadline: Optional[float] = None
    depth: Optional[int] = None
    mate: Optional[int] = None
    infinite: bool = False


def parse_go(tokens: List[str], white_to_move: bool, default_nodes: int,
             now: float) -> Limits:
    """The limits of `go` tokens (after the word `go`); raises ValueError
    naming a malformed value."""
    numbers = {}
    infinite = False
    i = 0
    while i < len(tokens):
        word = tokens[i]
        if word in ("infinite", "ponder"):
            infinite = infinite or word == "infinite"
            i += 1
        elif word in ("nodes", "movetime", "wtime", "btime", "winc", "binc", "movestogo",
                      "depth", "mate"):
            if i + 1 >= len(tokens):
                raise ValueError(f"go {word}: a number must follow")
            try:
                numbers[word] = int(tokens[i + 1])
            except ValueError:
                raise ValueError(f"go {word}: expected an integer, got {tokens[i + 1]!r}") \
                    from None
            i += 2
        elif word == "searchmoves":
            raise ValueError("go searchmoves is not supported")
        else:
            raise ValueError(f"go: unknown parameter {word!r}")
    for word in ("nodes", "depth", "mate"):
        if numbers.get(word, 1) < 1:
            raise ValueError(f"go {word}: expected a positive integer, got {numbers[word]}")
    limits = Limits(nodes=numbers.get("nodes"), depth=numbers.get("depth"),
                    mate=numbers.get("mate"), infinite=infinite)
    if "movetime" in numbers:
        limits.deadline = now + max(numbers["movetime"] - SAFETY_MS, 1) / 1000.0
    clock, inc = ("wtime", "winc") if white_to_move else ("btime", "binc")
    if clock in numbers:
        remaining = numbers[clock]
        moves_to_go = max(numbers.get("movestogo", MOVES_TO_GO), 1)
        budget = remaining / moves_to_go + 0.8 * numbers.get(inc, 0)
        budget = min(budget, remaining - SAFETY_MS)
        budget_s = max(budget, 1) / 1000.0
        limits.deadline = min(limits.deadline or float("inf"), now + budget_s)
    if limits.nodes is None and limits.deadline is None and not infinite:
        limits.nodes = default_nodes
    return limits


class UciEngine:
    """The protocol state: options, the position, the search thread.
    `write` prints one line of the engine's output."""

    def __init__(self, write: Callable[[str], None]):
        self._write_raw = write
        self._lock = threading.Lock()
        self.values = {name: spec[1] for name, spec in OPTIONS.items()}
        self.game = envs.make("chess")
        self._step = jax.jit(self.game.env.step)
        self.analysis: Optional[analysis_lib.Analysis] = None
        self.base_fen, self.moves = START_FEN, []      # the position, as given
        self.state = chess_tools.from_fen(START_FEN)
        self.actions: List[int] = []                   # pgx actions of self.moves
        self.searched: Optional[Tuple[str, List[int]]] = None  # the tree's root
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()

    def write(self, line: str) -> None:
        with self._lock:
            self._write_raw(line)

    # ---- options ---------------------------------------------------------

    def settings(self) -> analysis_lib.SearchSettings:
        fields = {spec[2]: self.values[name] for name, spec in OPTIONS.items() if spec[2]}
        return analysis_lib.SearchSettings(max_children=self.game.max_legal_moves, **fields)

    def make_analysis(self) -> analysis_lib.Analysis:
        if self.analysis is None:
            network = None
            if self.values["AgentDir"]:
                from training.agent import Agent

                agent = Agent.load(self.values["AgentDir"])
                if agent.game.name != "chess":
                    raise ValueError(f"AgentDir {self.values['AgentDir']!r} trained "
                                     f"{agent.game.name!r}, not chess")
                network = (agent.model.evaluator, agent.variables)
            self.analysis = analysis_lib.Analysis(self.game, self.settings(), network,
                                                  seed=int(self.values["Seed"]))
            self.searched = None
        return self.analysis

    def setoption(self, tokens: List[str]) -> None:
        if not tokens or tokens[0] != "name":
            raise ValueError("setoption: expected 'setoption name NAME [value VALUE]'")
        if "value" in tokens:
            at = tokens.index("value")
            name, value = " ".join(tokens[1:at]), " ".join(tokens[at + 1:])
        else:
            name, value = " ".join(tokens[1:]), ""
        match = [n for n in OPTIONS if n.lower() == name.lower()]
        if not match:
            raise ValueError(f"setoption: unknown option {name!r}; the options are "
                             f"{', '.join(OPTIONS)}")
        name = match[0]
        kind, _, field, extra = OPTIONS[name]
        if kind == "combo":
            if value not in extra:
                raise ValueError(f"setoption {name}: {value!r} is not one of {list(extra)}")
            parsed = value
        elif kind == "spin":
            try:
                parsed = int(value)
            except ValueError:
                raise ValueError(f"setoption {name}: expected an integer, got {value!r}") \
                    from None
            if not extra[0] <= parsed <= extra[1]:
                raise ValueError(f"setoption {name}: {parsed} is outside [{extra[0]}, "
                                 f"{extra[1]}]")
        elif kind == "check":
            if value.lower() not in ("true", "false"):
                raise ValueError(f"setoption {name}: expected true or false, got {value!r}")
            parsed = value.lower() == "true"
        else:
            parsed = "" if value in ("", "<empty>") else value
        old = dict(self.values)
        self.values[name] = parsed
        if field is not None or name in ("AgentDir", "Seed"):
            try:
                self.settings()
            except ValueError as error:
                self.values = old
                raise ValueError(f"setoption {name}: {error}") from None
            self.analysis = None    # rebuilt (and compiled) by the next isready or go

    # ---- the position ----------------------------------------------------

    def position(self, tokens: List[str]) -> None:
        """`position startpos|fen FEN [moves m1 m2 ...]`. A malformed FEN
        keeps the old position; an illegal move keeps the moves before it.
        Raises ValueError with the reason in both cases."""
        if not tokens or tokens[0] not in ("startpos", "fen"):
            raise ValueError("position: expected 'startpos' or 'fen FEN' first")
        at = tokens.index("moves") if "moves" in tokens else len(tokens)
        if tokens[0] == "startpos":
            fen = START_FEN
        else:
            fen = " ".join(tokens[1:at])
        state = chess_tools.from_fen(fen)   # ValueError for a malformed FEN
        moves, actions, error = [], [], None
        for move in tokens[at + 1:]:
            try:
                action = chess_tools.uci_to_action(state, move)
            except ValueError as e:
                error = f"position: {e}; kept the {len(moves)} moves before it"
                break
            state = self._step(state, action)
            moves.append(move)
            actions.append(action)
        self.base_fen, self.moves, self.state, self.actions = fen, moves, state, actions
        if error:
            raise ValueError(error)

    def _moves_since_search(self) -> Optional[List[int]]:
        if self.searched is None:
            return None
        fen, actions = self.searched
        if fen != self.base_fen or actions != self.actions[:len(actions)]:
            return None
        return self.actions[len(actions):]

    # ---- the search ------------------------------------------------------

    def isready(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            analysis = self.make_analysis()
            if not getattr(analysis, "compiled", False):
                if analysis.state is None:
                    analysis.set_position(self.state)
                analysis.warm_up()
                analysis.compiled = True
                # The position's own steps and conversions, compiled once too.
                pv_uci(self.state, [int(a) for a in analysis.warm_up_line()], self._step)
        self.write("readyok")

    def go(self, tokens: List[str]) -> None:
        self.wait_unless_infinite()
        white = int(self.state._x.color) == 0
        limits = parse_go(tokens, white, int(self.values["Simulations"]), time.time())
        if bool(self.state.terminated) or not chess_tools.legal_uci_moves(self.state):
            self.write("info string the game is over: no legal move")
            self.write("bestmove (none)")
            return
        if limits.mate is not None and not self.values["Solver"]:
            self.write("info string go mate needs the solver to prove a mate "
                       "(setoption name Solver value true); searching the other limits")
        analysis = self.make_analysis()
        if analysis.set_position(self.state, self._moves_since_search()):
            self.write(f"info string kept the tree: {analysis.root_visits} visits")
        self.searched = (self.base_fen, list(self.actions))
        self._stop.clear()
        self._thread = threading.Thread(target=self._search, args=(analysis, limits),
                                        daemon=True)
        self._thread.start()

    def _search(self, analysis: analysis_lib.Analysis, limits: Limits) -> None:
        start = last_info = time.time()
        try:
            while not self._stop.is_set():
                done = limits.nodes is not None and analysis.nodes >= limits.nodes
                done = done or (limits.deadline is not None and time.time() >= limits.deadline)
                done = done or analysis.full or (analysis.nodes > 0 and self._root_proven())
                done = done or (limits.depth is not None and analysis.nodes > 0 and bool(
                    mcts_jax.anytime.best_line(analysis.tree, limits.depth)[0, -1] >= 0))
                if done and not limits.infinite:
                    break
                if done:   # infinite: wait for stop
                    self._stop.wait(0.05)
                    continue
                analysis.search_chunk()
                if time.time() - last_info >= INFO_INTERVAL_S:
                    self.report(analysis, time.time() - start)
                    last_info = time.time()
            if analysis.nodes == 0:
                analysis.search_chunk()
            lines = self.report(analysis, time.time() - start)
            self.write(f"bestmove {chess_tools.action_to_uci(self.state, lines[0].action)}")
        except Exception as error:  # never leave the GUI waiting without a move
            self.write(f"info string search failed: {type(error).__name__}: {error}")
            moves = sorted(chess_tools.legal_uci_moves(self.state))
            self.write(f"bestmove {moves[0] if moves else '(none)'}")

    def _root_proven(self) -> bool:
        tree = self.analysis.tree
        return tree is not None and bool(tree.solved[0, 0])

    def report(self, analysis: analysis_lib.Analysis, elapsed: float):
        lines = analysis.best_moves(int(self.values["MultiPV"]))
        nps = int(analysis.nodes / max(elapsed, 1e-6))
        for rank, line in enumerate(lines, 1):
            self.write(f"info depth {len(line.pv)} multipv {rank} score {score_text(line)} "
                       f"nodes {analysis.nodes} nps {nps} time {int(elapsed * 1000)} "
                       f"pv {' '.join(pv_uci(self.state, line.pv, self._step))}")
        return lines

    def stop(self) -> None:
        self._stop.set()
        self.wait()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    # ---- the loop --------------------------------------------------------

    def handle(self, line: str) -> bool:
        """One command; False after `quit`. Bad input is answered with
        `info string` and ignored."""
        tokens = line.split()
        if not tokens:
            return True
        command, rest = tokens[0], tokens[1:]
        try:
            if command == "uci":
                self.write(f"id name {NAME}")
                self.write("id author the mcts_jax developers")
                for option in uci_option_lines():
                    self.write(option)
                self.write("uciok")
            elif command == "isready":
                self.isready()
            elif command == "ucinewgame":
                self.stop()
                self.searched = None
                if self.analysis is not None:
                    self.analysis.set_position(self.state)
            elif command == "setoption":
                self.wait_unless_infinite()
                self.setoption(rest)
            elif command == "position":
                self.wait_unless_infinite()
                self.position(rest)
            elif command == "go":
                self.go(rest)
            elif command == "stop":
                self.stop()
            elif command == "ponderhit":
                pass
            elif command == "quit":
                self.stop()
                return False
            elif command == "debug":
                pass
            else:
                self.write(f"info string unknown command: {line.strip()}")
        except ValueError as error:
            self.write(f"info string {error}")
        return True

    def wait_unless_infinite(self) -> None:
        """A command that changes the position waits for the search's
        move (an infinite search is stopped)."""
        if self._thread is not None and self._thread.is_alive():
            self.stop()


def score_text(line: analysis_lib.Line) -> str:
    """`cp N` or `mate N` (N in moves, negative when the mover is mated)."""
    if line.proven and line.proven_value > 0:
        return f"mate {(len(line.pv) + 1) // 2}"
    if line.proven and line.proven_value < 0:
        return f"mate -{max(len(line.pv) // 2, 1)}"
    return f"cp {analysis_lib.centipawns(line.q)}"


def pv_uci(state, actions: List[int], step) -> List[str]:
    """The UCI strings of a line of pgx actions from `state` (stops at the
    first move that does not apply)."""
    moves = []
    for action in actions:
        if bool(state.terminated) or not bool(state.legal_action_mask[action]):
            break
        moves.append(chess_tools.action_to_uci(state, action))
        state = step(state, action)
    return moves


def main(stdin: TextIO = None, stdout: TextIO = None) -> None:
    """The engine's loop on stdin/stdout until `quit` or end of input."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout

    def write(text: str) -> None:
        stdout.write(text + "\n")
        stdout.flush()

    engine = UciEngine(write)
    for line in stdin:
        if not engine.handle(line):
            break
    engine.stop()


if __name__ == "__main__":
    main()
