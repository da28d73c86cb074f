"""The GTP engine: our Go search (pgx's Go, 9x9 or 19x19) for GUIs and
tournament managers.

    python -m engines.gtp --simulations 400      # or the console script mcts-jax-gtp

Speaks GTP version 2 (https://www.lysator.liu.se/~gunnar/gtp/) on
stdin/stdout: `protocol_version`, `name`, `version`, `known_command`,
`list_commands`, `boardsize` (9 or 19), `clear_board`, `komi`, `play`,
`genmove`, `undo`, `final_score`, `showboard`, `time_settings`,
`time_left`, `quit`. A reply is
`= result` or `? message`, then an empty line; an optional command id is
echoed. The search settings are command-line options (as GNU Go's
`--level`); `genmove` searches `--simulations` (or until `--seconds`), in
chunks of one compiled search, keeping the tree between moves (subtree
reuse). With a clock (`time_settings`, `time_left`) a move also stops at
its share of the time left (`move_seconds`). pgx's rules: area scoring, positional superko (a move that repeats
a position loses), the game ends after two passes or 2 x size^2 moves.
Two moves of one colour in a row are joined by a pass of the other, as GTP
allows.

Vertices: columns A..T without I from the left, rows 1..size from the
bottom; pgx's point index is row_from_top * size + column.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from typing import Callable, List, Optional, TextIO

import jax
import numpy as np
import pgx.go
from pgx._src.games.go import _count_scores  # pgx internals; pinned by pgx>=2.6,<3

import envs
from engines import analysis as analysis_lib

COLUMNS = "ABCDEFGHJKLMNOPQRST"
SIZES = (9, 19)
NAME, VERSION = "mcts_jax", "0.1"
COMMANDS = ("protocol_version", "name", "version", "known_command", "list_commands",
            "boardsize", "clear_board", "komi", "play", "genmove", "undo", "final_score",
            "showboard", "time_settings", "time_left", "quit")
# The clock: a move in main time takes the time left over this many moves
# still to play (at least), and every move keeps this margin for the
# protocol's round trip.
MOVES_LEFT_MIN = 20
SAFETY_S = 0.2


class GtpError(ValueError):
    """A command that fails: answered `? message`."""


@dataclasses.dataclass
class Clock:
    """GTP's time system (`time_settings main byo_time byo_stones`) and the
    controller's last `time_left time stones` for each colour. Canadian
    byo-yomi: after the main time, `byo_stones` moves in every `byo_time`
    seconds; `byo_time > 0` with `byo_stones == 0` means no time limit."""

    main_time: float = 0.0
    byo_time: float = 0.0
    byo_stones: int = 0
    left: dict = dataclasses.field(default_factory=dict)   # colour -> (seconds, stones)

    @property
    def unlimited(self) -> bool:
        return self.byo_time > 0 and self.byo_stones == 0


def move_seconds(clock: Optional[Clock], color: int, empty_points: int) -> Optional[float]:
    """The seconds one move of `color` may take (None: no clock): in a
    byo-yomi period the period's time over its stones still to play, in
    main time the time left over the moves still expected (half the empty
    points, at least MOVES_LEFT_MIN) plus one byo-yomi move's share; never
    below a tenth of a second."""
    if clock is None or clock.unlimited:
        return None
    seconds, stones = clock.left.get(color, (clock.main_time, 0))
    if stones > 0:
        share = seconds / stones
    elif seconds > 0:
        share = seconds / max(empty_points // 2, MOVES_LEFT_MIN)
        if clock.byo_stones > 0:
            share += clock.byo_time / clock.byo_stones
    elif clock.byo_stones > 0:
        share = clock.byo_time / clock.byo_stones
    else:
        return None if clock.main_time == 0 and clock.byo_time == 0 else 0.1
    return max(share - SAFETY_S, 0.1)


def vertex_to_action(vertex: str, size: int) -> int:
    """'D4' or 'pass' -> pgx action (size^2 for pass). GtpError if malformed
    or off the board."""
    text = vertex.strip().upper()
    if text == "PASS":
        return size * size
    if len(text) < 2 or text[0] not in COLUMNS[:size] or not text[1:].isdigit():
        raise GtpError(f"invalid vertex {vertex!r}")
    column, row = COLUMNS.index(text[0]), int(text[1:])
    if not 1 <= row <= size:
        raise GtpError(f"invalid vertex {vertex!r}: off the {size}x{size} board")
    return (size - row) * size + column


def action_to_vertex(action: int, size: int) -> str:
    """pgx action -> 'D4' or 'pass'."""
    if action == size * size:
        return "pass"
    row_from_top, column = divmod(int(action), size)
    return f"{COLUMNS[column]}{size - row_from_top}"


def parse_color(text: str) -> int:
    """GTP colour -> 0 black, 1 white (pgx's colour: black moves first)."""
    word = text.lower()
    if word in ("b", "black"):
        return 0
    if word in ("w", "white"):
        return 1
    raise GtpError(f"invalid color {text!r}")


def make_game(size: int, komi: float):
    """The `envs` Go game of `size` with `komi` (the registry's game, with
    pgx's environment built for that komi when it is not 7.5)."""
    game = envs.make(f"go_{size}x{size}")
    if komi == 7.5:
        return game
    return dataclasses.replace(game, env=pgx.go.Go(size=size, komi=komi))


class GtpEngine:
    """The protocol state: the board as the moves from the empty board, the
    search settings, the search (`Analysis`)."""

    def __init__(self, settings: analysis_lib.SearchSettings, simulations: int,
                 seconds: Optional[float] = None, size: int = 9, komi: float = 7.5,
                 seed: int = 0):
        self.settings, self.simulations, self.seconds = settings, simulations, seconds
        self.seed = seed
        self.size, self.komi = size, komi
        self.actions: List[int] = []
        self.clock: Optional[Clock] = None
        self._setup()

    def _setup(self) -> None:
        self.game = make_game(self.size, self.komi)
        self._step = jax.jit(self.game.env.step)
        self._scores = jax.jit(lambda x: _count_scores(x, self.size))
        self.analysis = analysis_lib.Analysis(self.game, self.settings, seed=self.seed)
        self.searched: Optional[List[int]] = None   # the moves to the tree's root
        self.state = self._replay(self.actions)

    def _replay(self, actions: List[int]):
        state = self.game.env.init(jax.random.key(0))
        for action in actions:
            state = self._step(state, action)
        return state

    @property
    def to_move(self) -> int:
        return int(self.state._x.color)

    def _push(self, action: int) -> None:
        if bool(self.state.terminated):
            raise GtpError("illegal move: the game is over")
        if not bool(self.state.legal_action_mask[action]):
            raise GtpError(f"illegal move {action_to_vertex(action, self.size)}")
        self.state = self._step(self.state, action)
        self.actions.append(action)

    def _pass_until(self, color: int) -> None:
        if self.to_move != color:
            self._push(self.size * self.size)

    # ---- the commands ----------------------------------------------------

    def play(self, color: int, action: int) -> None:
        before = (self.state, list(self.actions))
        try:
            self._pass_until(color)
            self._push(action)
        except GtpError:
            self.state, self.actions = before
            raise

    def genmove(self, color: int) -> str:
        if bool(self.state.terminated):
            raise GtpError("the game is over")
        self._pass_until(color)
        moves = None
        if self.searched is not None and self.actions[:len(self.searched)] == self.searched:
            moves = self.actions[len(self.searched):]
        self.analysis.set_position(self.state, moves)
        self.searched = list(self.actions)
        budgets = [b for b in (self.seconds, move_seconds(
            self.clock, color, int(np.sum(np.asarray(self.state._x.board) == 0))))
            if b is not None]
        deadline = time.time() + min(budgets) if budgets else None
        while True:
            self.analysis.search_chunk()
            if self.analysis.nodes >= self.simulations or self.analysis.full:
                break
            if deadline is not None and time.time() >= deadline:
                break
            if bool(self.analysis.tree.solved[0, 0]):
                break
        action = self.analysis.best_moves(1)[0].action
        self._push(action)
        return action_to_vertex(action, self.size)

    def final_score(self) -> str:
        black, white = (float(v) for v in self._scores(self.state._x))
        margin = black - self.komi - white
        if margin == 0:
            return "0"
        return f"B+{margin:g}" if margin > 0 else f"W+{-margin:g}"

    def showboard(self) -> str:
        board = np.asarray(self.state._x.board).reshape(self.size, self.size)
        letters = "   " + " ".join(COLUMNS[:self.size])
        rows = [letters]
        for r in range(self.size):
            cells = " ".join("X" if v > 0 else "O" if v < 0 else "." for v in board[r])
            rows.append(f"{self.size - r:2d} {cells} {self.size - r:2d}")
        rows.append(letters)
        return "\n" + "\n".join(rows)

    def execute(self, command: str, args: List[str]) -> str:
        """The result of one command (without `= `); GtpError for a failure."""
        if command == "protocol_version":
            return "2"
        if command == "name":
            return NAME
        if command == "version":
            return VERSION
        if command == "known_command":
            return "true" if args and args[0] in COMMANDS else "false"
        if command == "list_commands":
            return "\n".join(COMMANDS)
        if command == "boardsize":
            if len(args) != 1 or not args[0].isdigit():
                raise GtpError("boardsize needs one integer")
            if int(args[0]) not in SIZES:
                raise GtpError("unacceptable size")
            self.size, self.actions = int(args[0]), []
            self._setup()
            return ""
        if command == "clear_board":
            self.actions = []
            self.searched = None
            self.state = self._replay([])
            return ""
        if command == "komi":
            try:
                komi = float(args[0])
            except (IndexError, ValueError):
                raise GtpError("komi needs one number") from None
            if komi != self.komi:
                self.komi = komi
                self._setup()
            return ""
        if command == "play":
            if len(args) != 2:
                raise GtpError("play needs a color and a vertex")
            self.play(parse_color(args[0]), vertex_to_action(args[1], self.size))
            return ""
        if command == "genmove":
            if len(args) != 1:
                raise GtpError("genmove needs a color")
            return self.genmove(parse_color(args[0]))
        if command == "undo":
            if not self.actions:
                raise GtpError("cannot undo")
            self.actions = self.actions[:-1]
            self.searched = None
            self.state = self._replay(self.actions)
            return ""
        if command == "time_settings":
            try:
                main_time, byo_time, byo_stones = float(args[0]), float(args[1]), int(args[2])
            except (IndexError, ValueError):
                raise GtpError("time_settings needs main_time byo_yomi_time byo_yomi_stones "
                               "(numbers, the last an integer)") from None
            if len(args) != 3 or min(main_time, byo_time, byo_stones) < 0:
                raise GtpError("time_settings needs three non-negative numbers")
            self.clock = Clock(main_time, byo_time, byo_stones)
            return ""
        if command == "time_left":
            if len(args) != 3:
                raise GtpError("time_left needs a color, a time and a number of stones")
            color = parse_color(args[0])
            try:
                seconds, stones = float(args[1]), int(args[2])
            except ValueError:
                raise GtpError("time_left needs a color, a time and a number of "
                               "stones") from None
            if seconds < 0 or stones < 0:
                raise GtpError("time_left needs a color and two non-negative numbers")
            self.clock = self.clock or Clock()
            self.clock.left[color] = (seconds, stones)
            return ""
        if command == "final_score":
            return self.final_score()
        if command == "showboard":
            return self.showboard()
        raise GtpError("unknown command")

    def warm_up(self) -> None:
        """Compiles the search and the board's steps (before the first genmove)."""
        self.analysis.set_position(self.state)
        self.analysis.warm_up()
        self._scores(self.state._x)


def respond(engine: GtpEngine, line: str, write: Callable[[str], None]) -> bool:
    """Answers one line; False after `quit`."""
    line = line.split("#", 1)[0].strip()
    if not line:
        return True
    tokens = line.split()
    command_id = ""
    if tokens[0].isdigit():
        command_id, tokens = tokens[0], tokens[1:]
        if not tokens:
            write(f"?{command_id} missing command\n")
            return True
    command, args = tokens[0].lower(), tokens[1:]
    if command == "quit":
        write(f"={command_id}\n")
        return False
    try:
        result = engine.execute(command, args)
        write(f"={command_id} {result}".rstrip() + "\n")
    except GtpError as error:
        write(f"?{command_id} {error}\n")
    except Exception as error:  # never die on a command
        write(f"?{command_id} internal error: {type(error).__name__}: {error}\n")
    return True


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mcts-jax-gtp", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=9, choices=SIZES, help="the board size")
    parser.add_argument("--komi", type=float, default=7.5)
    parser.add_argument("--policy", default="uct", choices=analysis_lib.POLICY_NAMES)
    parser.add_argument("--evaluator", default="playouts", choices=analysis_lib.EVALUATOR_NAMES)
    parser.add_argument("--playouts", type=int, default=1, help="random playouts per leaf")
    parser.add_argument("--simulations", type=int, default=400, help="simulations per genmove")
    parser.add_argument("--seconds", type=float, default=None,
                        help="at most this long per genmove (checked between chunks)")
    parser.add_argument("--chunk", type=int, default=32, help="simulations per compiled call")
    parser.add_argument("--max-nodes", type=int, default=8192, help="tree capacity")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-warm-up", action="store_true",
                        help="compile on the first genmove instead of at start")
    return parser.parse_args(argv)


def engine_from_args(args: argparse.Namespace) -> GtpEngine:
    settings = analysis_lib.SearchSettings(
        policy=args.policy, evaluator=args.evaluator, playouts=args.playouts, chunk=args.chunk,
        max_nodes=args.max_nodes, solver=False)
    return GtpEngine(settings, args.simulations, args.seconds, args.size, args.komi, args.seed)


def main(argv: Optional[List[str]] = None, stdin: TextIO = None, stdout: TextIO = None) -> None:
    args = parse_args(argv)
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    try:
        engine = engine_from_args(args)
    except ValueError as error:
        sys.exit(f"mcts-jax-gtp: {error}")
    if not args.no_warm_up:
        engine.warm_up()

    def write(text: str) -> None:
        stdout.write(text + "\n")
        stdout.flush()

    for line in stdin:
        if not respond(engine, line, write):
            break


if __name__ == "__main__":
    main()
