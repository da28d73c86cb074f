"""Exact tic-tac-toe play over pgx tic-tac-toe states.

A table over every board code (3^9 = 19683 codes, most unreachable), built once
at import by a memoised negamax over the 5478 positions reachable from the
empty board (a few milliseconds). Lookups are jittable:

    optimal = perfect_play.optimal_moves(states)        # [B, 9] bool
    value = perfect_play.value(states)                  # [B] int8, player to move

Board encoding. pgx keeps `state._x.board` as 9 ints, row-major (action a is
square a), -1 empty, 0 the first mover's mark (X), 1 the second's (O). The code
of a board is `sum_i digit_i * 3**i` with digit 0 empty, 1 X, 2 O. X always
moves first, so the mark to move is X when both marks are equally many.

Values are negamax values for the player to move: +1 win, 0 draw, -1 loss
under perfect play. A move is optimal when it keeps that value. In a finished
position there is no optimal move (the row of `OPTIMAL` is all False).

This is the library's own solver; `tests/tictactoe_minimax.py` is an
independent one, and the tests check the two agree on every position.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Dict, Tuple

import jax
import jax.numpy as jnp
import numpy as np

NUM_SQUARES = 9
NUM_CODES = 3 ** NUM_SQUARES
_LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
_POWERS = 3 ** np.arange(NUM_SQUARES)


def _winner(board: Tuple[int, ...]) -> int:
    for a, b, c in _LINES:
        if board[a] and board[a] == board[b] == board[c]:
            return board[a]
    return 0


def _solve() -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(value [C] int8, optimal [C, 9] bool, reachable [C] bool, terminal [C] bool)
    over board codes C = 3^9, by negamax from the empty board."""
    value = np.zeros(NUM_CODES, np.int8)
    optimal = np.zeros((NUM_CODES, NUM_SQUARES), bool)
    reachable = np.zeros(NUM_CODES, bool)
    terminal = np.zeros(NUM_CODES, bool)
    solved: Dict[Tuple[int, ...], int] = {}

    def negamax(board: Tuple[int, ...]) -> int:
        if board in solved:
            return solved[board]
        code = int(np.dot(board, _POWERS))
        reachable[code] = True
        if _winner(board):
            result = -1  # the player who just moved won
            terminal[code] = True
        elif 0 not in board:
            result = 0
            terminal[code] = True
        else:
            mark = 1 if board.count(1) == board.count(2) else 2
            move_values = {}
            for move in range(NUM_SQUARES):
                if board[move] == 0:
                    child = board[:move] + (mark,) + board[move + 1:]
                    move_values[move] = -negamax(child)
            result = max(move_values.values())
            for move, v in move_values.items():
                optimal[code, move] = v == result
        value[code] = result
        solved[board] = result
        return result

    negamax((0,) * NUM_SQUARES)
    return value, optimal, reachable, terminal


VALUE, OPTIMAL, REACHABLE, TERMINAL = _solve()


def board_codes(states) -> jax.Array:
    """[B] int32 board codes of batched pgx tic-tac-toe states."""
    digits = jnp.where(states._x.board < 0, 0, states._x.board + 1)  # -1/0/1 -> 0/1/2
    return jnp.sum(digits * jnp.asarray(_POWERS, jnp.int32), axis=-1).astype(jnp.int32)


def optimal_moves(states) -> jax.Array:
    """[B, 9] bool: the moves that keep the game-theoretic value, for the
    player to move (all False in a finished position)."""
    return jnp.asarray(OPTIMAL)[board_codes(states)]


def value(states) -> jax.Array:
    """[B] int8 negamax value for the player to move (+1 / 0 / -1)."""
    return jnp.asarray(VALUE)[board_codes(states)]


def reachable_positions() -> Dict[str, np.ndarray]:
    """Every non-terminal position reachable from the empty board (4520),
    with what a network sees there.

    Returns a dict of numpy arrays, P = 4520:
      boards [P, 9] int8: 0 empty, 1 X, 2 O.
      observations [P, 3, 3, 2] bool: pgx's observation, from the point of
        view of the player to move (plane 0 its marks, plane 1 the opponent's).
      legal [P, 9] bool, optimal [P, 9] bool, value [P] int8 (player to move).
    """
    codes = np.flatnonzero(REACHABLE & ~TERMINAL)
    boards = (codes[:, None] // _POWERS[None, :]) % 3
    x_to_move = (boards == 1).sum(1) == (boards == 2).sum(1)
    mover = np.where(x_to_move, 1, 2)[:, None]
    other = np.where(x_to_move, 2, 1)[:, None]
    observations = np.stack([boards == mover, boards == other], axis=-1).reshape(-1, 3, 3, 2)
    return dict(boards=boards.astype(np.int8), observations=observations,
                legal=boards == 0, optimal=OPTIMAL[codes], value=VALUE[codes])


def _host_codes(states) -> np.ndarray:
    """`board_codes` of host (numpy) states."""
    board = np.asarray(states._x.board)
    return np.sum(np.where(board < 0, 0, board + 1) * _POWERS, axis=-1)


def reachable_states():
    """Every non-terminal position reachable from the empty board (4520) as
    one batch of pgx tic-tac-toe states, in the order of
    `reachable_positions()` (ascending board code), so row i of both
    describes the same position. Built by stepping pgx from its initial
    state, one ply at a time, keeping the first state seen per board."""
    import pgx  # only here: the tables above need no simulator

    env = pgx.make("tic_tac_toe")
    width = 2048  # > the most positions of one ply (1260): one compiled step

    @jax.jit
    def children(layer):
        every = jax.tree.map(lambda x: jnp.repeat(x, NUM_SQUARES, axis=0), layer)
        moves = jnp.tile(jnp.arange(NUM_SQUARES, dtype=jnp.int32), width)
        return jax.vmap(env.step)(every, moves), every.legal_action_mask[
            jnp.arange(width * NUM_SQUARES), moves]

    # Host-side (numpy) bookkeeping: eager jax ops would compile per shape.
    layer = jax.device_get(jax.vmap(env.init)(jax.random.split(jax.random.key(0), 1)))
    layers = []
    while layer.current_player.shape[0]:
        layers.append(layer)
        size = layer.current_player.shape[0]
        padded = jax.tree.map(lambda x: np.concatenate(
            [x, np.repeat(x[:1], width - size, axis=0)]), layer)
        after, legal = jax.device_get(children(padded))
        keep = legal & ~after.terminated
        keep[size * NUM_SQUARES:] = False
        _, first = np.unique(np.where(keep, _host_codes(after), -1), return_index=True)
        first = first[keep[first]]
        layer = jax.tree.map(lambda x: x[first], after)
    states = jax.tree.map(lambda *xs: np.concatenate(xs), *layers)
    order = np.argsort(_host_codes(states))
    return jax.tree.map(lambda x: jnp.asarray(x[order]), states)

def policy_optimality(logits: np.ndarray, positions: Dict[str, np.ndarray]) -> float:
    """Fraction of `positions` (from `reachable_positions`) where the legal
    argmax of `logits` [P, 9] is an optimal move."""
    masked = np.where(positions["legal"], np.asarray(logits, np.float32), -np.inf)
    choice = np.argmax(masked, axis=1)
    return float(np.mean(positions["optimal"][np.arange(len(choice)), choice]))


@dataclasses.dataclass(frozen=True)
class PerfectPlayer:
    """A perfect tic-tac-toe player for `training.arena`: a uniformly random
    move among the optimal ones. `params` is unused."""

    def __call__(self, params, rng_key, game, states) -> jax.Array:
        del params, game
        optimal = optimal_moves(states)
        legal = states.legal_action_mask
        allowed = jnp.where(jnp.any(optimal, axis=-1, keepdims=True), optimal, legal)
        return jax.random.categorical(rng_key, jnp.where(allowed, 0.0, -jnp.inf)).astype(
            jnp.int32)


@functools.lru_cache(maxsize=None)
def num_reachable_positions() -> int:
    return int(np.sum(REACHABLE & ~TERMINAL))
