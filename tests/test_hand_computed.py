"""Exact trees after k simulations on tiny deterministic problems, computed by
hand (the arithmetic is written out in the comments)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax

NUM_ACTIONS = 2


def table_problem(values, root_logits):
    """States are path codes: child code = 3 * code + action + 1 (root 0).
    Two-player (discount -1), no rewards, value of a code from `values`."""
    table = np.zeros(64, np.float32)
    for code, value in values.items():
        table[code] = value
    table = jnp.asarray(table)

    def recurrent_fn(params, rng_key, action, code):
        new_code = code * 3 + action + 1
        return mcts_jax.RecurrentFnOutput(
            reward=jnp.zeros(code.shape, jnp.float32),
            discount=-jnp.ones(code.shape, jnp.float32),
            prior_logits=jnp.zeros(code.shape + (NUM_ACTIONS,), jnp.float32),
            value=table[jnp.minimum(new_code, 63)],
        ), new_code

    root = mcts_jax.RootFnOutput(prior_logits=jnp.asarray([root_logits], jnp.float32),
                                 value=jnp.zeros(1), embedding=jnp.zeros(1, jnp.int32))
    return root, recurrent_fn


def node_by_code(tree, code):
    codes = np.asarray(tree.embeddings[0])[: int(tree.num_nodes[0])]
    (index,) = np.flatnonzero(codes == code)
    return index


def test_uct_five_simulations_by_hand():
    # Values (for the player to move at the node): code 1 -> -0.5, 2 -> 0.2,
    # 4 -> 0.6, 5 -> 0.1, 16 -> -0.3. uct_c = 1.
    # sim 1: both root children unvisited -> a0 (lowest id) -> code 1 (v -0.5).
    #        root: visits 2, sum 0 + 0.5.
    # sim 2: a1 unvisited -> code 2 (v 0.2). root: visits 3, sum 0.3.
    # sim 3: root N=3: Q0 = 0.5, Q1 = -0.2, same bonus -> a0; code 1 has no
    #        children -> expand its a0 -> code 4 (v 0.6). code1: 2, -1.1; root: 4, 0.9.
    # sim 4: Q0 = 0.55 + sqrt(ln4/2) = 1.383 vs Q1 = -0.2 + sqrt(ln4) = 0.977 -> a0;
    #        at code 1: a1 unvisited -> code 5 (v 0.1). code1: 3, -1.2; root: 5, 1.0.
    # sim 5: Q0 = 0.4 + sqrt(ln5/3) = 1.133 vs Q1 = -0.2 + sqrt(ln5) = 1.069 -> a0;
    #        at code 1 (N=3): code4 -0.6 + sqrt(ln3) = 0.448, code5 -0.1 + 1.048
    #        = 0.948 -> code 5, which has no children -> its a0 -> code 16 (v -0.3).
    #        code16: 1, -0.3; code5: 2, 0.4; code1: 4, -1.5; root: 6, 1.3.
    root, recurrent_fn = table_problem({1: -0.5, 2: 0.2, 4: 0.6, 5: 0.1, 16: -0.3}, [0.0, 0.0])
    out = mcts_jax.uct_policy(None, jax.random.key(0), root, recurrent_fn, 5, uct_c=1.0)
    tree = out.search_tree
    expected = {0: (6, 1.3), 1: (4, -1.5), 2: (1, 0.2), 4: (1, 0.6), 5: (2, 0.4), 16: (1, -0.3)}
    assert int(tree.num_nodes[0]) == len(expected)
    for code, (visits, value_sum) in expected.items():
        index = node_by_code(tree, code)
        assert int(tree.node_visits[0, index]) == visits, code
        assert float(tree.value_sums[0, index]) == pytest.approx(value_sum, abs=1e-6), code
    summary = tree.summary()
    np.testing.assert_array_equal(summary.visit_counts[0], [4, 1])
    np.testing.assert_allclose(summary.qvalues[0], [1.5 / 4, -0.2], atol=1e-6)
    np.testing.assert_allclose(summary.value[0], 1.3 / 6, atol=1e-6)
    assert int(out.action[0]) == 0


def test_puct_three_simulations_by_hand():
    # Root priors softmax([0, ln 3]) = [0.25, 0.75]; others uniform. Values:
    # code 2 -> 0.2, code 7 -> 0.4, code 8 -> -0.5. pb_c_init 1.25, base 19652.
    # sim 1: nothing visited, Q terms 0, bonus prop. to prior -> a1 -> code 2.
    #        root: 2 visits, sum -0.2.
    # sim 2: root mean -0.1; visited Q1 = -0.2; min-max over {-0.1, -0.2}
    #        gives Q1 -> 0 and unvisited -> 0. Bonus c*sqrt2*[0.25/1, 0.75/2] -> a1.
    #        code 2 (uniform priors, nothing visited) -> a0 -> code 7 (v 0.4).
    #        code2: 2, -0.2; root: 3, 0.2.
    # sim 3: root mean 0.0667, Q1 = 0.1 -> normalised [0, 1]; bonuses equal
    #        (0.25/1 = 0.75/3) -> a1. At code 2: mean -0.1, Q(a0) = -0.4 -> 0;
    #        bonus 0.5/2 vs 0.5/1 -> a1 -> code 8 (v -0.5).
    #        code8: 1, -0.5; code2: 3, 0.3; root: 4, -0.3.
    root, recurrent_fn = table_problem({2: 0.2, 7: 0.4, 8: -0.5}, [0.0, np.log(3.0)])
    out = mcts_jax.alphazero_policy(None, jax.random.key(0), root, recurrent_fn, 3,
                                    dirichlet_fraction=0.0, final_action="most_visited")
    tree = out.search_tree
    expected = {0: (4, -0.3), 2: (3, 0.3), 7: (1, 0.4), 8: (1, -0.5)}
    assert int(tree.num_nodes[0]) == len(expected)
    for code, (visits, value_sum) in expected.items():
        index = node_by_code(tree, code)
        assert int(tree.node_visits[0, index]) == visits, code
        assert float(tree.value_sums[0, index]) == pytest.approx(value_sum, abs=1e-6), code
    np.testing.assert_allclose(tree.priors[0, 0], [0.25, 0.75], atol=1e-6)
    summary = tree.summary()
    np.testing.assert_array_equal(summary.visit_counts[0], [0, 3])
    np.testing.assert_allclose(summary.qvalues[0], [0.0, -0.1], atol=1e-6)
    np.testing.assert_allclose(out.action_weights[0], [0.0, 1.0])


def test_expand_all_two_simulations_by_hand():
    # Same values as the UCT example. sim 1: the root's first visit expands
    # both children at once: code 1 (v -0.5) and code 2 (v 0.2), one visit
    # each; the root gains two visits and -(-0.5) + -(0.2) = 0.3.
    # sim 2: Q0 = 0.5 > Q1 = -0.2 (same bonus) -> code 1, whose children
    # are all created: code 4 (v 0.6), code 5 (v 0.1). code 1: 3 visits,
    # -0.5 - 0.6 - 0.1 = -1.2; root: 5 visits, 0.3 + 0.6 + 0.1 = 1.0.
    root, recurrent_fn = table_problem({1: -0.5, 2: 0.2, 4: 0.6, 5: 0.1}, [0.0, 0.0])
    out = mcts_jax.uct_policy(None, jax.random.key(0), root, recurrent_fn, 2, uct_c=1.0,
                              expand_all=True)
    tree = out.search_tree
    assert tree.max_nodes == 2 * NUM_ACTIONS + 1
    expected = {0: (5, 1.0), 1: (3, -1.2), 2: (1, 0.2), 4: (1, 0.6), 5: (1, 0.1)}
    assert int(tree.num_nodes[0]) == len(expected)
    for code, (visits, value_sum) in expected.items():
        index = node_by_code(tree, code)
        assert int(tree.node_visits[0, index]) == visits, code
        assert float(tree.value_sums[0, index]) == pytest.approx(value_sum, abs=1e-6), code
