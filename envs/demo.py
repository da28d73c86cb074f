"""Prints one UCT search (random playouts) on a tic-tac-toe position.

    python -m envs.demo
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

import envs
import mcts_jax
from mcts_jax import evaluators, selection


def board_picture(state) -> str:
    """3x3 picture from pgx's tic-tac-toe board (-1 empty, 0 X, 1 O)."""
    board = np.asarray(state._x.board).reshape(3, 3)
    marks = {-1: ".", 0: "X", 1: "O"}
    return "\n".join(" ".join(marks[int(c)] for c in row) for row in board)


def main():
    game = envs.make("tic_tac_toe")
    state = game.init(jax.random.key(0), batch_size=1)
    for move in (0, 4, 8):  # X corner, O centre, X opposite corner
        state = game.step(state, jnp.array([move]))
    evaluator = evaluators.RandomPlayouts(num_playouts=1)
    root, invalid = game.root(None, jax.random.key(1), state, evaluator)
    start = time.perf_counter()
    out = mcts_jax.uct_policy(None, jax.random.key(2), root, game.recurrent_fn(evaluator),
                              num_simulations=2000, invalid_actions=invalid,
                              uct_c=selection.UCT_C)
    summary = out.search_tree.summary()
    elapsed = time.perf_counter() - start
    print("Position (O to move):")
    print(board_picture(jax.tree.map(lambda x: x[0], state)))
    print(f"\nUCT, 2000 simulations with one random playout each ({elapsed:.1f} s with compile)")
    print("action  visits   Q (for O)")
    for action in np.argsort(-np.asarray(summary.visit_counts[0])):
        if bool(invalid[0, action]):
            continue
        print(f"{action:6d}  {int(summary.visit_counts[0, action]):6d}   "
              f"{float(summary.qvalues[0, action]):+.3f}")
    print(f"\nchosen move: {int(out.action[0])} (an edge square; a corner loses)")


if __name__ == "__main__":
    main()
