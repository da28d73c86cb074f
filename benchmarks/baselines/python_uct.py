"""A plain-Python UCT on tic-tac-toe, written the way tutorials write it.

Objects for nodes, a list of 9 cells for the board, UCB1 selection, one
uniformly random playout per new leaf, results 1 / 0 / -1. Sequential: one
search at a time, one simulation at a time. It is the "what people use
without us" baseline of the benchmark suite, not a library component.
"""

from __future__ import annotations

import itertools
import math
import random
from typing import Callable, List, Optional

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8),
         (2, 4, 6))


def winner(board: List[int]) -> int:
    """1 or -1 if that player has three in a row, else 0 (board cells 1 / -1 / 0)."""
    for a, b, c in LINES:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return board[a]
    return 0


class Node:
    """A position after `move`; `player` is the player who made `move`.
    `total` sums results from that player's point of view."""

    def __init__(self, board: List[int], to_move: int, parent: Optional["Node"] = None,
                 move: Optional[int] = None):
        self.board, self.to_move, self.parent, self.move = board, to_move, parent, move
        self.children: List["Node"] = []
        self.untried = [] if winner(board) else [i for i in range(9) if board[i] == 0]
        self.visits, self.total = 0, 0.0

    def best_child(self, c: float) -> "Node":
        log_n = math.log(self.visits)
        return max(self.children,
                   key=lambda ch: ch.total / ch.visits + c * math.sqrt(log_n / ch.visits))

    def expand(self, rng: random.Random) -> "Node":
        move = self.untried.pop(rng.randrange(len(self.untried)))
        board = list(self.board)
        board[move] = self.to_move
        child = Node(board, -self.to_move, self, move)
        self.children.append(child)
        return child


def playout(board: List[int], to_move: int, rng: random.Random) -> int:
    """Result (1 / 0 / -1 for player 1) of uniformly random play from `board`."""
    board = list(board)
    while True:
        won = winner(board)
        empty = [i for i in range(9) if board[i] == 0]
        if won or not empty:
            return won
        board[rng.choice(empty)] = to_move
        to_move = -to_move


def search(board: List[int], to_move: int, num_simulations: int, c: float = 1.4,
           rng: Optional[random.Random] = None) -> int:
    """The most visited move after `num_simulations` UCT simulations from `board`
    (cells 1 / -1 / 0), `to_move` (1 or -1) to play."""
    rng = rng or random.Random(0)
    root = Node(list(board), to_move)
    for _ in range(num_simulations):
        node = root
        while not node.untried and node.children:
            node = node.best_child(c)
        if node.untried:
            node = node.expand(rng)
        result = playout(node.board, node.to_move, rng)
        while node is not None:
            node.visits += 1
            mover = -node.to_move  # the player who made node.move
            node.total += result * mover
            node = node.parent
    return max(root.children, key=lambda ch: ch.visits).move


def search_fn(num_simulations: int, seed: int = 0) -> Callable[[], int]:
    """A call running one search of `num_simulations` from the empty board
    (a new random stream per call: seed, seed + 1, ...), for
    `harness.interleaved_rounds`."""
    calls = itertools.count(seed)
    return lambda: search([0] * 9, 1, num_simulations, rng=random.Random(next(calls)))

