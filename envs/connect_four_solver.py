"""Connect Four judged by a perfect solver (bitbully, an optional dependency).

Connect Four is solved: the first player wins by opening in the centre
column. `bitbully` (`pip install "mcts_jax[eval]"`, a C++ solver with its
opening book) scores every move of a position exactly; this module maps pgx
Connect Four states and move lists to it and answers in the library's terms:

    value = connect_four_solver.solve("3344")              # +1 / 0 / -1, player to move
    connect_four_solver.optimal_moves("3344")              # [3]: the columns keeping it
    values, optimal = connect_four_solver.solve_states(states)   # pgx states [B]: [B], [B, 7]
    player = connect_four_solver.SolverPlayer()            # for training.arena.play_match

Values are for the player to move: +1 win, 0 draw, -1 loss under perfect
play. A move is optimal when it keeps that value (the fastest win is not
required). A finished position has no optimal move (its row of the optimal
mask is all False) and the value -1 after a win (the player to move has
lost) or 0 on a full board.

Board encodings. pgx keeps `state._x.board` as 42 ints, row-major with row 0
the TOP row (cell r * 7 + c), -1 empty, 0 a disc of the first mover, 1 of
the second; `state._x.color` is the colour to move (0: the first mover).
`state.current_player` is a pgx player id, drawn at random by `init`, and says
nothing about who moved first. bitbully takes a column-major [7][6] array,
row 0 the BOTTOM, 0 empty, 1 the first mover (X), 2 the second (O). Here a
position is that array, a "grid" (np.int8 [7, 6]); `grid_from_moves` and
`grid_from_pgx_board` build it, and its bytes are the key of the cache of
solved positions (so transpositions are solved once).

Solver cost: bitbully with its 12-ply opening book, cold (transposition
table cleared), one position of the mixed benchmark set at a time, is
measured by `python -m experiments.connect_four_positions` into
experiments/results/connect_four_solver-cpu.json, by stage: under a
millisecond at the median, at most tens of milliseconds in the opening,
and up to about half a second just past the book (plies 12-16).
Results are cached per position (`functools.lru_cache`, a million entries).

The position benchmark (`load_positions`, `move_accuracy`) and
`states_from_moves` need only numpy and pgx; everything that solves imports
bitbully on first use.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np

ROWS = 6
COLUMNS = 7
CELLS = ROWS * COLUMNS
# Game stages by the number of discs on the board (plies played).
STAGES = (("opening", 0, 9), ("middle", 10, 24), ("late", 25, CELLS - 1))
# Position difficulty by how many legal moves keep the game-theoretic value
# (a labelled position has at least one move that does not): one is hard.
DIFFICULTIES = (("hard", 1, 1), ("medium", 2, 3), ("easy", 4, COLUMNS - 1))
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "benchmarks", "data")
# Every stage, from random and near-perfect games (plies 0-41).
POSITIONS_PATH = os.path.join(_DATA, "connect_four_positions.json")
# Uniformly random games cut at plies 4-30: the set `train.py` judges its
# Connect Four agent on.
RANDOM_PLAY_PATH = os.path.join(_DATA, "connect_four_random_play.json")

Moves = Union[str, Sequence[int]]


def available() -> bool:
    """Whether bitbully (the solver) is importable."""
    return importlib.util.find_spec("bitbully") is not None


@functools.lru_cache(maxsize=None)
def _solver():
    """The bitbully solver with its default opening book (12 plies, loaded
    once, about half a second)."""
    from bitbully import BitBully
    return BitBully()


def stage_of(ply: int) -> str:
    """"opening" (plies 0-9), "middle" (10-24) or "late" (25-41)."""
    for name, low, high in STAGES:
        if low <= ply <= high:
            return name
    raise ValueError(f"ply must be in [0, {CELLS - 1}], got {ply}")


def difficulty_of(num_optimal: int) -> str:
    """"hard" (one move keeps the value), "medium" (2-3) or "easy" (4-6)."""
    for name, low, high in DIFFICULTIES:
        if low <= num_optimal <= high:
            return name
    raise ValueError(f"a labelled position has 1 to {COLUMNS - 1} optimal moves, "
                     f"got {num_optimal}")


# ---- boards ------------------------------------------------------------------

def _parse_moves(moves: Moves) -> List[int]:
    if isinstance(moves, str):
        return [int(c) for c in moves]
    return [int(c) for c in moves]


def moves_to_string(moves: Moves) -> str:
    return "".join(str(c) for c in _parse_moves(moves))


def winner(grid: np.ndarray) -> int:
    """1 or 2 when that player has four in a row in `grid` [7, 6], else 0."""
    for player in (1, 2):
        mine = np.asarray(grid) == player
        if (np.any(mine[:-3] & mine[1:-2] & mine[2:-1] & mine[3:])            # horizontal
                or np.any(mine[:, :-3] & mine[:, 1:-2] & mine[:, 2:-1] & mine[:, 3:])  # vertical
                or np.any(mine[:-3, :-3] & mine[1:-2, 1:-2] & mine[2:-1, 2:-1] & mine[3:, 3:])
                or np.any(mine[:-3, 3:] & mine[1:-2, 2:-1] & mine[2:-1, 1:-2] & mine[3:, :-3])):
            return player
    return 0


def _wins_at(grid: np.ndarray, column: int, row: int) -> bool:
    """Whether the disc at (column, row) is part of four in a row."""
    player = grid[column, row]
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            c, r = column + sign * dc, row + sign * dr
            while 0 <= c < COLUMNS and 0 <= r < ROWS and grid[c, r] == player:
                run += 1
                c, r = c + sign * dc, r + sign * dr
        if run >= 4:
            return True
    return False


def grid_from_moves(moves: Moves) -> np.ndarray:
    """The grid [7, 6] int8 (bitbully's layout) after the columns `moves`
    (a string such as "3342" or a sequence of ints 0-6) from the empty board.
    Raises ValueError on a column out of range, a full column, or a move
    after the game was won."""
    grid = np.zeros((COLUMNS, ROWS), np.int8)
    heights = [0] * COLUMNS
    won = False
    for ply, column in enumerate(_parse_moves(moves)):
        if not 0 <= column < COLUMNS:
            raise ValueError(f"move {ply}: column {column} out of range 0-6")
        if heights[column] == ROWS:
            raise ValueError(f"move {ply}: column {column} is full")
        if won:
            raise ValueError(f"move {ply}: the game was already won")
        grid[column, heights[column]] = 1 + ply % 2
        won = _wins_at(grid, column, heights[column])
        heights[column] += 1
    return grid


def grid_from_pgx_board(board) -> np.ndarray:
    """pgx `state._x.board` [..., 42] (-1 empty, 0 first mover, 1 second;
    row 0 the top) -> grids [..., 7, 6] int8 (bitbully's layout)."""
    board = np.asarray(board).reshape(np.shape(board)[:-1] + (ROWS, COLUMNS))
    cells = np.where(board < 0, 0, board + 1).astype(np.int8)
    return np.swapaxes(cells[..., ::-1, :], -1, -2)  # bottom row first, then column-major


def pgx_board_from_grid(grid) -> np.ndarray:
    """The inverse of `grid_from_pgx_board`: [..., 7, 6] -> [..., 42] int32."""
    grid = np.asarray(grid)
    rows = np.swapaxes(grid, -1, -2)[..., ::-1, :].astype(np.int32) - 1
    return rows.reshape(grid.shape[:-2] + (CELLS,))


def legal_columns(grid: np.ndarray) -> np.ndarray:
    """[7] bool: columns with room (whether or not the game is over)."""
    return np.asarray(grid)[:, ROWS - 1] == 0


def is_terminal(grid: np.ndarray) -> bool:
    return bool(winner(grid)) or not legal_columns(grid).any()


# ---- solving -------------------------------------------------------------------

@functools.lru_cache(maxsize=1 << 20)
def _scores(key: bytes) -> Tuple[Optional[int], ...]:
    """bitbully's score of each column of the position `key` (grid bytes),
    None for a full column; positive: the player to move wins after it."""
    from bitbully import Board
    grid = np.frombuffer(key, np.int8).reshape(COLUMNS, ROWS)
    scores = _solver().score_all_moves(Board(grid.tolist()))
    return tuple(scores.get(column) for column in range(COLUMNS))


@functools.lru_cache(maxsize=1 << 20)
def _analyse(key: bytes) -> Tuple[int, Tuple[bool, ...]]:
    grid = np.frombuffer(key, np.int8).reshape(COLUMNS, ROWS)
    if winner(grid):
        return -1, (False,) * COLUMNS
    if not legal_columns(grid).any():
        return 0, (False,) * COLUMNS
    signs = [None if s is None else int(np.sign(s)) for s in _scores(key)]
    value = max(s for s in signs if s is not None)
    return value, tuple(s == value for s in signs)


def analyse_grid(grid: np.ndarray) -> Tuple[int, np.ndarray]:
    """(value, optimal [7] bool) of one grid, for the player to move (cached)."""
    value, optimal = _analyse(np.ascontiguousarray(grid, np.int8).tobytes())
    return value, np.array(optimal)


def move_scores(moves: Moves) -> Dict[int, int]:
    """bitbully's exact score of every legal column after `moves` (a
    non-finished position): positive, the player to move wins (larger is
    sooner), 0 a draw, negative a loss."""
    grid = grid_from_moves(moves)
    if is_terminal(grid):
        raise ValueError(f"the game after {moves_to_string(moves)!r} is over")
    scores = _scores(grid.tobytes())
    return {c: s for c, s in enumerate(scores) if s is not None}


def solve(moves: Moves) -> int:
    """The game-theoretic value (+1 / 0 / -1) for the player to move after
    the columns `moves` from the empty board."""
    return analyse_grid(grid_from_moves(moves))[0]


def optimal_moves(moves: Moves) -> List[int]:
    """The columns that keep the game-theoretic value after `moves` (empty
    once the game is over)."""
    return np.flatnonzero(analyse_grid(grid_from_moves(moves))[1]).tolist()


def solve_grids(grids) -> Tuple[np.ndarray, np.ndarray]:
    """(values [...] int8, optimal [..., 7] bool) of grids [..., 7, 6]."""
    grids = np.asarray(grids, np.int8)
    flat = grids.reshape(-1, COLUMNS, ROWS)
    values = np.zeros(len(flat), np.int8)
    optimal = np.zeros((len(flat), COLUMNS), bool)
    for i, grid in enumerate(flat):
        values[i], optimal[i] = analyse_grid(grid)
    lead = grids.shape[:-2]
    return values.reshape(lead), optimal.reshape(lead + (COLUMNS,))


def solve_states(states) -> Tuple[np.ndarray, np.ndarray]:
    """(values [B] int8, optimal [B, 7] bool) of pgx Connect Four states
    [B] (full or `PgxGame.lean_state`), on the host."""
    return solve_grids(grid_from_pgx_board(np.asarray(states._x.board)))


def _solve_boards_callback(boards):
    values, optimal = solve_grids(grid_from_pgx_board(np.asarray(boards)))
    return values, optimal


def solve_states_jax(states) -> Tuple[jax.Array, jax.Array]:
    """`solve_states` usable inside `jit`: the solver runs on the host
    through `jax.pure_callback`. Returns (values [B] int8, optimal [B, 7] bool)."""
    boards = states._x.board
    lead = boards.shape[:-1]
    shapes = (jax.ShapeDtypeStruct(lead, jnp.int8),
              jax.ShapeDtypeStruct(lead + (COLUMNS,), jnp.bool_))
    return jax.pure_callback(_solve_boards_callback, shapes, boards, vmap_method="expand_dims")


@dataclasses.dataclass(frozen=True)
class SolverPlayer:
    """A perfect Connect Four player for `training.arena`: a uniformly random
    move among the optimal ones (the solver runs on the host through
    `jax.pure_callback`). `params` is unused. As the first player it always
    wins."""

    def __call__(self, params, rng_key, game, states) -> jax.Array:
        del params, game
        _, optimal = solve_states_jax(states)
        legal = states.legal_action_mask
        allowed = jnp.where(jnp.any(optimal, axis=-1, keepdims=True), optimal, legal)
        return jax.random.categorical(rng_key, jnp.where(allowed, 0.0, -jnp.inf)).astype(
            jnp.int32)


# ---- pgx states from move lists --------------------------------------------------

@functools.partial(jax.jit, static_argnums=0)
def _replay(game, states, moves, lengths):
    def body(states, inputs):
        ply, columns = inputs
        stepped = game.step(states, columns)
        keep = ply < lengths
        states = jax.tree.map(
            lambda new, old: jnp.where(keep.reshape((-1,) + (1,) * (new.ndim - 1)), new, old),
            stepped, states)
        return states, None

    states, _ = jax.lax.scan(body, states, (jnp.arange(moves.shape[1]), moves.T))
    return states


def states_from_moves(move_lists: Sequence[Moves], game=None):
    """Full pgx Connect Four states [B] after each move list, played by
    pgx itself (observation, legal mask, rewards as pgx makes them). The
    `current_player` ids are pgx's random draws (seed 0). One compilation
    per batch size."""
    if game is None:
        import envs
        game = envs.make("connect_four")
    parsed = [_parse_moves(m) for m in move_lists]
    moves = np.zeros((len(parsed), CELLS), np.int32)
    lengths = np.array([len(m) for m in parsed], np.int32)
    for i, m in enumerate(parsed):
        moves[i, :len(m)] = m
    states = game.init(jax.random.key(0), len(parsed))
    return _replay(game, states, jnp.asarray(moves), jnp.asarray(lengths))


# ---- the position benchmark --------------------------------------------------------

def load_positions(path: Optional[str] = None, limit: Optional[int] = None) -> Dict[str, object]:
    """The labelled benchmark positions of `path` (default `POSITIONS_PATH`;
    `RANDOM_PLAY_PATH`, the training run's set; both made by `python -m
    experiments.connect_four_positions`), the first `limit` of them (a file's
    order is shuffled, so a prefix mixes every stage).

    Returns a dict, P positions:
      moves: list of P move strings ("3342": columns from the empty board);
      ply [P] int32; stage: list of P stage names (`STAGES`); difficulty:
        list of P names (`DIFFICULTIES`, by the number of optimal moves);
        source: list of P ("random" or "noisy", how the game was played);
      value [P] int8 (player to move); optimal [P, 7] bool; legal [P, 7] bool;
      meta: the file's header (seed, command, solver, counts).
    Needs no solver.
    """
    with open(path or POSITIONS_PATH) as f:
        data = json.load(f)
    rows = data["positions"][:limit]
    optimal = np.zeros((len(rows), COLUMNS), bool)
    legal = np.zeros((len(rows), COLUMNS), bool)
    for i, row in enumerate(rows):
        optimal[i, [int(c) for c in row["optimal"]]] = True
        legal[i] = legal_columns(grid_from_moves(row["moves"]))
    return dict(moves=[row["moves"] for row in rows],
                ply=np.array([len(row["moves"]) for row in rows], np.int32),
                stage=[stage_of(len(row["moves"])) for row in rows],
                difficulty=[difficulty_of(len(row["optimal"])) for row in rows],
                source=[row["source"] for row in rows],
                value=np.array([row["value"] for row in rows], np.int8),
                optimal=optimal, legal=legal,
                meta={k: v for k, v in data.items() if k != "positions"})


def move_accuracy(chosen_columns, positions: Dict[str, object],
                  cells: bool = False) -> Dict[str, float]:
    """Fraction of `positions` (from `load_positions`) where the chosen column
    [P] keeps the game-theoretic value: {"all": ..., "opening": ...,
    "middle": ..., "late": ..., "hard": ..., "medium": ..., "easy": ...},
    and with `cells` each stage's difficulties too ("opening_hard", ...). A
    group with no position is left out."""
    chosen = np.asarray(chosen_columns).astype(np.int64)
    optimal = np.asarray(positions["optimal"])
    correct = optimal[np.arange(len(chosen)), chosen]
    stages = np.asarray(positions["stage"])
    difficulties = np.asarray(positions["difficulty"])
    out = {"all": float(np.mean(correct)) if len(correct) else float("nan")}
    groups = [(name, stages == name) for name, _, _ in STAGES]
    groups += [(name, difficulties == name) for name, _, _ in DIFFICULTIES]
    if cells:
        groups += [(f"{stage}_{difficulty}", (stages == stage) & (difficulties == difficulty))
                   for stage, _, _ in STAGES for difficulty, _, _ in DIFFICULTIES]
    for name, mask in groups:
        if mask.any():
            out[name] = float(np.mean(correct[mask]))
    return out


def legal_argmax(logits, legal) -> np.ndarray:
    """[P] the legal column of highest logit."""
    return np.argmax(np.where(np.asarray(legal), np.asarray(logits, np.float32), -np.inf), -1)
