"""An exact tic-tac-toe solver in plain Python, independent of mcts_jax and pgx.

Boards are 9-tuples, row-major (0 1 2 / 3 4 5 / 6 7 8), with 0 empty, 1 X and
2 O. X moves first, so the player to move is X when both marks are equally many.
Values are negamax values for the player to move: +1 win, 0 draw, -1 loss.

Converters:
  - `board_from_pgx(state)`: a (batched) pgx tic-tac-toe state -> boards. pgx
    keeps `state._x.board` as 9 ints, -1 empty, 0 the first mover's mark, 1 the
    second's (`state._x.color` is 0 for X, which always moves first; pgx's
    `current_player` is a player id chosen at random by `init`, unrelated to
    the mark).
  - `to_tictactoe(board)`: a board -> the `tests/tictactoe.py` picture string
    (already the same 0 / 1 / 2 encoding).
"""

from __future__ import annotations

import functools
import math
import random
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

EMPTY, X, O = 0, 1, 2
EMPTY_BOARD: Tuple[int, ...] = (0,) * 9
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def to_move(board: Sequence[int]) -> int:
    """The mark of the player to move (X first)."""
    return X if board.count(X) == board.count(O) else O


def winner(board: Sequence[int]) -> int:
    """The mark with three in a line, or 0."""
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return EMPTY


def is_terminal(board: Sequence[int]) -> bool:
    return winner(board) != EMPTY or EMPTY not in board


def legal_moves(board: Sequence[int]) -> List[int]:
    """Empty squares; none once the game is over."""
    if is_terminal(board):
        return []
    return [i for i, v in enumerate(board) if v == EMPTY]


def play(board: Sequence[int], move: int) -> Tuple[int, ...]:
    assert board[move] == EMPTY, (board, move)
    out = list(board)
    out[move] = to_move(board)
    return tuple(out)


def terminal_value(board: Sequence[int]) -> int:
    """Result of a finished game for the player who would move next (the one
    who did not make the last move): -1 if the other side won, else 0."""
    return -1 if winner(board) != EMPTY else 0


@functools.lru_cache(maxsize=None)
def value(board: Tuple[int, ...]) -> int:
    """Negamax value of `board` for the player to move."""
    board = tuple(board)
    if is_terminal(board):
        return terminal_value(board)
    return max(-value(play(board, m)) for m in legal_moves(board))


def move_value(board: Tuple[int, ...], move: int) -> int:
    """Value of playing `move` for the player to move at `board`: the terminal
    result if it ends the game (+1 a win, 0 a draw), else minus the value of the
    child for the opponent."""
    return -value(play(tuple(board), move))


def optimal_moves(board: Tuple[int, ...]) -> List[int]:
    """All moves that achieve `value(board)`."""
    board = tuple(board)
    best = value(board)
    return [m for m in legal_moves(board) if move_value(board, m) == best]


def perfect_move(board: Tuple[int, ...], rng: random.Random) -> int:
    """A move chosen uniformly at random among the optimal ones."""
    return rng.choice(optimal_moves(tuple(board)))


@functools.lru_cache(maxsize=None)
def game_tree_size(board: Tuple[int, ...]) -> int:
    """Nodes strictly below `board` in the full game tree (a terminal position
    has none below it). Each simulation of an MCTS-solver search of an unproven
    root creates one node, so this many simulations always suffice to prove it."""
    board = tuple(board)
    return sum(1 + game_tree_size(play(board, m)) for m in legal_moves(board))


def max_nodes_below(empties: int) -> int:
    """Upper bound on nodes below a position with `empties` empty squares,
    ignoring wins: sum_{k=1..e} e! / (e-k)!."""
    return sum(math.perm(empties, k) for k in range(1, empties + 1))


@functools.lru_cache(maxsize=None)
def _reachable() -> Tuple[Tuple[int, ...], ...]:
    seen = {EMPTY_BOARD}
    frontier = [EMPTY_BOARD]
    while frontier:
        nxt = []
        for board in frontier:
            for m in legal_moves(board):
                child = play(board, m)
                if child not in seen:
                    seen.add(child)
                    nxt.append(child)
        frontier = nxt
    return tuple(sorted(seen))


def all_reachable_positions(include_terminal: bool = False) -> List[Tuple[int, ...]]:
    """Positions reachable from the empty board by legal play (4520 non-terminal,
    5478 with the terminal ones), sorted."""
    return [b for b in _reachable() if include_terminal or not is_terminal(b)]


def empties(board: Sequence[int]) -> int:
    return sum(1 for v in board if v == EMPTY)


# ---- converters -------------------------------------------------------------

def board_from_pgx_arrays(pgx_board: Iterable[int]) -> Tuple[int, ...]:
    """One pgx `_x.board` (-1 empty, 0 X, 1 O) -> a board (0 / 1 / 2)."""
    out = tuple({-1: EMPTY, 0: X, 1: O}[int(v)] for v in np.asarray(pgx_board).reshape(-1))
    assert len(out) == 9
    return out


def board_from_pgx(state) -> List[Tuple[int, ...]] | Tuple[int, ...]:
    """Boards from a pgx tic-tac-toe state: a list for a batched state [B], a
    single board for an unbatched one. Also checks that pgx's own record of
    the mark to move (`_x.color`, 0 = X) agrees with the board."""
    boards = np.asarray(state._x.board)
    colors = np.asarray(state._x.color)
    if boards.ndim == 1:
        board = board_from_pgx_arrays(boards)
        assert to_move(board) == (X if int(colors) == 0 else O), (board, colors)
        return board
    out = [board_from_pgx_arrays(b) for b in boards]
    for board, color in zip(out, colors.reshape(-1)):
        assert to_move(board) == (X if int(color) == 0 else O), (board, color)
    return out


def x_player_id(state) -> np.ndarray:
    """pgx player id ([B] or scalar) who plays X (moved first): the player to
    move if the mark to move is X, else the other one."""
    current = np.asarray(state.current_player)
    color = np.asarray(state._x.color)
    return np.where(color == 0, current, 1 - current)


def to_tictactoe(board: Sequence[int]) -> str:
    """A board -> the picture string of `tests/tictactoe.py` ('X..O.....')."""
    return "".join(".XO"[v] for v in board)


def from_tictactoe(picture: str) -> Tuple[int, ...]:
    return tuple({".": EMPTY, "X": X, "O": O}[c] for c in picture)


def to_tictactoe_arrays(boards: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
    """Boards -> (board [B, 9] int32, player [B] int32), the embedding fields of
    `tests/tictactoe.py` (same 0 / 1 / 2 encoding, player = mark to move)."""
    return (np.asarray(boards, np.int32).reshape(-1, 9),
            np.asarray([to_move(b) for b in boards], np.int32))


def value_table() -> Dict[Tuple[int, ...], int]:
    return {b: value(b) for b in all_reachable_positions()}
