"""Two-player sign convention on tic-tac-toe: the immediate win is found for
either side to move, and its Q-value is +1 from the mover's point of view."""

import jax
import numpy as np
import pytest

import mcts_jax
import tictactoe

WIN_IN_ONE = [("XX.OO....", 2), ("XX.OO.X..", 5), ("X..OO.X.X", 5), ("OX.OX..X.", 6)]


@pytest.mark.parametrize("policy", ["uct", "puct"])
def test_immediate_win_found_for_both_players(policy):
    pictures = [p for p, _ in WIN_IN_ONE]
    wins = np.array([w for _, w in WIN_IN_ONE])
    players = [tictactoe.parse(p)[1] for p in pictures]
    assert set(players) == {1, 2}, "the suite must cover both sides to move"
    root, illegal = tictactoe.make_root(pictures)
    if policy == "uct":
        out = mcts_jax.uct_policy(None, jax.random.key(0), root, tictactoe.recurrent_fn, 200,
                                  invalid_actions=illegal)
    else:
        out = mcts_jax.alphazero_policy(None, jax.random.key(0), root, tictactoe.recurrent_fn,
                                        200, invalid_actions=illegal, dirichlet_fraction=0.0,
                                        final_action="most_visited")
    np.testing.assert_array_equal(out.action, wins)
    summary = out.search_tree.summary()
    np.testing.assert_allclose(summary.qvalues[np.arange(len(wins)), wins], 1.0)
    assert (summary.value > 0).all()
