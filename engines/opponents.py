"""External engines as arena players (training/arena.py), and Elo with its
interval.

    stockfish = UciPlayer(find_binary("stockfish"), nodes=100, skill_level=0)
    gnugo = GtpPlayer(find_binary("gnugo"), level=0)
    result = arena.play_match(game, SearchPlayer(...), params, stockfish, None, key, 20,
                              opening_moves=4)
    elo, low, high = elo_interval(result.wins, result.draws, result.losses)

A player is a frozen dataclass called inside the arena's compiled ply; it
asks its engine on the host (`jax.pure_callback`), one position at a time.
The engine process is started on first use and kept (one per player value)
until `close_all`. What the engine sees is the position only: a chess
position as a FEN (python-chess's `chess.engine` speaks UCI: the optional
`engines` extra, `pip install mcts_jax[engines]`), a Go position as its
stones placed on an empty board (`clear_board`, then `play` for each stone;
the colour to move is asked with `genmove`). The history is lost, so an
engine does not see repetitions (chess) or superko (Go). A terminal row
gets action 0 (the arena ignores it); an engine that answers `resign` or a
move that pgx does not allow passes (Go) or, in chess, plays its first
legal move (counted in `ExternalPlayerStats`).
"""

from __future__ import annotations

import atexit
import dataclasses
import math
from typing import Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from engines.gtp import GtpError, action_to_vertex, vertex_to_action
from engines.gtp_client import GtpClient, find_binary

_PROCESSES: Dict[object, object] = {}
# Moves an engine gave that pgx did not allow (per player value).
FALLBACKS: Dict[object, int] = {}


def close_all() -> None:
    """Stops every engine the players started."""
    for process in list(_PROCESSES.values()):
        try:
            process.quit() if hasattr(process, "quit") else process.close()
        except Exception:  # an engine that already died
            pass
    _PROCESSES.clear()


atexit.register(close_all)


def _rows(states):
    """The host copies of states [n], one unbatched state per row."""
    host = jax.device_get(states)
    n = int(np.shape(host.current_player)[0])
    return [jax.tree.map(lambda x: x[i], host) for i in range(n)]


def _as_actions(player, states, host_fn):
    n = states.current_player.shape[0]
    return jax.pure_callback(host_fn, jax.ShapeDtypeStruct((n,), jnp.int32), states)


@dataclasses.dataclass(frozen=True)
class UciPlayer:
    """A UCI chess engine as an arena player (pgx chess).

    command: the engine's program (e.g. `find_binary("stockfish")`).
    nodes / movetime: the engine's budget per move (nodes searched; seconds).
    skill_level: Stockfish's `Skill Level` (0-20), None: the engine's default.
    options: further (name, value) UCI options, e.g. (("Threads", 1),).
    """

    command: str
    nodes: Optional[int] = None
    movetime: Optional[float] = None
    skill_level: Optional[int] = None
    options: Tuple[Tuple[str, object], ...] = ()

    def __post_init__(self):
        if not self.command:
            raise ValueError("UciPlayer: command must name an engine program (got "
                             f"{self.command!r}; Stockfish: apt-get install stockfish)")
        if self.nodes is None and self.movetime is None:
            raise ValueError("UciPlayer: give nodes or movetime (the engine's budget)")

    def engine(self):
        if self not in _PROCESSES:
            import chess.engine

            engine = chess.engine.SimpleEngine.popen_uci([self.command], timeout=120)
            options = dict(self.options)
            if self.skill_level is not None:
                options["Skill Level"] = self.skill_level
            if options:
                engine.configure(options)
            _PROCESSES[self] = engine
        return _PROCESSES[self]

    def move(self, state) -> int:
        """The pgx action the engine plays in the unbatched host state."""
        import chess
        import chess.engine

        from envs import chess_tools

        if bool(state.terminated):
            return 0
        board = chess.Board(chess_tools.to_fen(state))
        limit = chess.engine.Limit(nodes=self.nodes, time=self.movetime)
        result = self.engine().play(board, limit)
        try:
            return chess_tools.uci_to_action(state, result.move.uci())
        except (ValueError, AttributeError):
            FALLBACKS[self] = FALLBACKS.get(self, 0) + 1
            return int(np.flatnonzero(np.asarray(state.legal_action_mask))[0])

    def __call__(self, params, rng_key, game, states):
        del params, rng_key, game

        def host(states):
            return np.asarray([self.move(s) for s in _rows(states)], np.int32)

        return _as_actions(self, states, host)


@dataclasses.dataclass(frozen=True)
class GtpPlayer:
    """A GTP Go engine as an arena player (pgx Go 9x9 or 19x19).

    command: the engine's program (e.g. `find_binary("gnugo")`); GNU Go is
    started with `--mode gtp --level level --chinese-rules
    --capture-all-dead` (area scoring as pgx's, and dead stones captured
    before it passes: pgx counts every stone left on the board as alive),
    any other program with `args` only.
    komi: told to the engine (pgx's games use 7.5).
    """

    command: str
    level: Optional[int] = 0
    args: Tuple[str, ...] = ()
    komi: float = 7.5

    def __post_init__(self):
        if not self.command:
            raise ValueError("GtpPlayer: command must name an engine program (got "
                             f"{self.command!r}; GNU Go: apt-get install gnugo)")

    def client(self) -> GtpClient:
        if self not in _PROCESSES:
            command = [self.command, *self.args]
            if "gnugo" in self.command:
                command += ["--mode", "gtp", "--chinese-rules", "--capture-all-dead"]
                if self.level is not None:
                    command += ["--level", str(self.level)]
            _PROCESSES[self] = GtpClient(command)
        return _PROCESSES[self]

    def move(self, state) -> int:
        if bool(state.terminated):
            return 0
        board = np.asarray(state._x.board)
        size = int(round(math.sqrt(board.shape[0])))
        client = self.client()
        client.send(f"boardsize {size}")
        client.send("clear_board")
        client.send(f"komi {self.komi}")
        for point in np.flatnonzero(board):
            color = "black" if board[point] > 0 else "white"
            client.send(f"play {color} {action_to_vertex(int(point), size)}")
        color = "black" if int(state._x.color) == 0 else "white"
        reply = client.send(f"genmove {color}")
        try:
            action = vertex_to_action(reply, size)
        except GtpError:          # resign
            action = size * size
        if not bool(state.legal_action_mask[action]):
            FALLBACKS[self] = FALLBACKS.get(self, 0) + 1
            action = size * size  # pass is always legal
        return action

    def __call__(self, params, rng_key, game, states):
        del params, rng_key, game

        def host(states):
            return np.asarray([self.move(s) for s in _rows(states)], np.int32)

        return _as_actions(self, states, host)


def elo_interval(wins: int, draws: int, losses: int,
                 z: float = 1.96) -> Tuple[float, float, float]:
    """The Elo difference of a player that scored wins / draws / losses, and
    its interval at `z` standard errors (1.96: 95%): the score's mean and
    standard error over the games (a draw is 1/2), each end turned into Elo
    by 400 log10(s / (1 - s)). A score of 0 or 1 gives an infinite end.
    ValueError without games."""
    games = wins + draws + losses
    if min(wins, draws, losses) < 0 or games == 0:
        raise ValueError(f"elo_interval needs non-negative counts and at least one game, got "
                         f"wins={wins}, draws={draws}, losses={losses}")
    score = (wins + 0.5 * draws) / games
    variance = (wins * (1 - score) ** 2 + draws * (0.5 - score) ** 2
                + losses * score ** 2) / games
    error = math.sqrt(variance / games)

    def elo(s: float) -> float:
        if s <= 0:
            return -math.inf
        if s >= 1:
            return math.inf
        return 400.0 * math.log10(s / (1 - s))

    return elo(score), elo(max(score - z * error, 0.0)), elo(min(score + z * error, 1.0))


__all__ = ["FALLBACKS", "GtpPlayer", "UciPlayer", "close_all", "elo_interval", "find_binary"]
