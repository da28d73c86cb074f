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


def test_expand_all_finds_the_win_and_keeps_visit_sums():
    pictures = [p for p, _ in WIN_IN_ONE]
    wins = np.array([w for _, w in WIN_IN_ONE])
    root, illegal = tictactoe.make_root(pictures)
    out = mcts_jax.uct_policy(None, jax.random.key(0), root, tictactoe.recurrent_fn, 60,
                              invalid_actions=illegal, expand_all=True)
    np.testing.assert_array_equal(out.action, wins)
    tree = jax.device_get(out.search_tree)
    for row in range(len(wins)):
        n = int(tree.num_nodes[row])
        children = tree.children[row, :n]
        expanded = children >= 0
        # a node's children are created all together or not at all
        legal = children != mcts_jax.ILLEGAL
        assert ((expanded | ~legal).all(-1) | ~expanded.any(-1)).all()
        sums = np.where(expanded, tree.node_visits[row][np.maximum(children, 0)], 0).sum(-1)
        inner = expanded.any(-1)
        np.testing.assert_array_equal(tree.node_visits[row, :n][inner], 1 + sums[inner])
