"""The search against an independent plain-Python reference on random hashed
game trees (illegal actions, terminal states, depth limits), plus the phase
invariants: masking, terminal handling, capacity."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mcts_jax
from reference_mcts import (HashedProblem, random_root_codes, reference_search, reference_to_shape,
                      tree_to_reference_shape)

BATCH = 12
SIMULATIONS = 40
PROBLEM = HashedProblem(num_actions=5, illegal_eighths=2, terminal_sixteenths=3)


def run(problem, rule, codes, num_simulations=SIMULATIONS, params=None, **options):
    root, illegal = problem.root(codes, params)
    if rule == "uct":
        return mcts_jax.uct_policy(params, jax.random.key(1), root, problem.recurrent_fn,
                                   num_simulations, invalid_actions=illegal, **options)
    return mcts_jax.alphazero_policy(params, jax.random.key(1), root, problem.recurrent_fn,
                                     num_simulations, invalid_actions=illegal,
                                     dirichlet_fraction=0.0, **options)


def assert_matches_reference(problem, rule, codes, tree, **options):
    for row, code in enumerate(codes):
        expected = reference_to_shape(reference_search(problem, int(code), SIMULATIONS,
                                                       rule=rule, **options))
        got = tree_to_reference_shape(tree, row)
        assert set(got) == set(expected), f"row {row}: different nodes expanded"
        for path, (visits, value_sum) in expected.items():
            assert got[path][0] == visits, (row, path)
            assert got[path][1] == pytest.approx(value_sum, abs=1e-4), (row, path)


@pytest.mark.parametrize("rule", ["uct", "puct"])
def test_matches_reference_search(rule):
    codes = random_root_codes(0, BATCH)
    out = run(PROBLEM, rule, codes)
    assert_matches_reference(PROBLEM, rule, codes, out.search_tree)


def test_matches_reference_with_depth_limit_and_spare_capacity():
    codes = random_root_codes(1, BATCH)
    out = run(PROBLEM, "uct", codes, max_depth=2, max_nodes=64)
    tree = out.search_tree
    assert_matches_reference(PROBLEM, "uct", codes, tree, max_depth=2, max_nodes=64)
    for row in range(BATCH):
        depths = [len(path) for path in tree_to_reference_shape(tree, row)]
        assert max(depths) <= 2


def test_terminal_nodes_are_never_expanded_and_back_up_their_reward():
    problem = HashedProblem(num_actions=3, terminal_sixteenths=8)
    out = run(problem, "uct", random_root_codes(2, BATCH), num_simulations=SIMULATIONS)
    tree = jax.device_get(out.search_tree)
    used = np.arange(tree.max_nodes)[None, :] < tree.num_nodes[:, None]
    terminal = tree.is_terminal & used
    assert terminal.any(), "the problem should reach terminal states"
    parents = np.where(used, tree.parents, -1)
    has_parent = parents >= 0
    parent_terminal = np.take_along_axis(tree.is_terminal, np.maximum(parents, 0), axis=1)
    assert not (parent_terminal & has_parent).any(), "a terminal node was expanded"
    assert (tree.children[terminal] == mcts_jax.ILLEGAL).all()
    # The value of a finished game is 0: everything a terminal node backs up is
    # its reward, seen from the parent.
    assert np.all(tree.value_sums[terminal] == 0.0)
    assert (tree.node_visits[terminal] > 1).any(), "terminal nodes should be revisited"


def assert_visit_invariants(tree):
    tree = jax.device_get(tree)
    for row in range(tree.batch_size):
        n = int(tree.num_nodes[row])
        assert 1 <= n <= tree.max_nodes
        children = tree.children[row, :n]
        expanded = children >= 0
        assert (children[expanded] < n).all()
        child_visit_sum = np.where(expanded, tree.node_visits[row][np.maximum(children, 0)],
                                   0).sum(-1)
        # Re-evaluated leaves (terminal, no legal child) count every
        # re-evaluation; every other node has one visit more than its children.
        leaf = tree.is_terminal[row, :n] | (children == mcts_jax.ILLEGAL).all(-1)
        np.testing.assert_array_equal(tree.node_visits[row, :n][~leaf],
                                      1 + child_visit_sum[~leaf])
        assert (tree.node_visits[row, :n][leaf] >= 1).all()


@settings(max_examples=25, deadline=None)
@given(illegal_eighths=st.integers(1, 7), terminal_sixteenths=st.integers(0, 6),
       seed=st.integers(0, 2**31 - 1), rule=st.sampled_from(["uct", "puct"]))
def test_illegal_actions_are_never_expanded(illegal_eighths, terminal_sixteenths, seed, rule):
    base = HashedProblem(num_actions=6, illegal_eighths=1)  # equal problems: one compilation
    params = dict(illegal_eighths=jnp.int32(illegal_eighths),
                  terminal_sixteenths=jnp.int32(terminal_sixteenths))
    checker = HashedProblem(num_actions=6, illegal_eighths=illegal_eighths,
                            terminal_sixteenths=terminal_sixteenths)
    codes = random_root_codes(seed, 8)
    out = run(base, rule, codes, num_simulations=32, params=params)
    tree = jax.device_get(out.search_tree)
    visit_counts = np.asarray(out.search_tree.summary().visit_counts)
    for row, code in enumerate(codes):
        root_illegal = checker.root_python(int(code))[2]
        for node in range(1, int(tree.num_nodes[row])):
            parent = int(tree.parents[row, node])
            action = int(tree.actions_from_parent[row, node])
            parent_code = int(tree.embeddings[row, parent])
            illegal = root_illegal if parent == 0 else checker.illegal(parent_code)
            assert not illegal[action], (row, node, action)
            assert int(tree.embeddings[row, node]) == checker.step_code(parent_code, action)
        assert all(int(v) == 0 for v, bad in zip(visit_counts[row], root_illegal) if bad)
    assert_visit_invariants(out.search_tree)


def test_visit_counts_add_up():
    out = run(PROBLEM, "puct", random_root_codes(3, BATCH))
    assert_visit_invariants(out.search_tree)
    np.testing.assert_array_equal(out.search_tree.node_visits[:, 0], SIMULATIONS + 1)
    np.testing.assert_array_equal(out.search_tree.summary().visit_counts.sum(-1), SIMULATIONS)


# The final choice reads the roots' priors as the search started
# (tree_search.run_policy): right only while no simulation writes a root's
# priors, whatever the features.
@pytest.mark.parametrize("options", [
    dict(), dict(solver=True), dict(transpositions=True), dict(max_children=3),
    dict(simulations_per_step=4), dict(expand_all=True), dict(replay_embeddings=True)],
    ids=["plain", "solver", "graph", "compact", "p4", "expand_all", "replay"])
def test_no_simulation_writes_the_roots_priors(options):
    codes = random_root_codes(7, 4)
    root, illegal = PROBLEM.root(codes)
    outputs = [mcts_jax.alphazero_policy(None, jax.random.key(3), root, PROBLEM.recurrent_fn,
                                         simulations, invalid_actions=illegal,
                                         dirichlet_fraction=0.25, **options)
               for simulations in (1, 24)]
    one, many = (np.asarray(out.search_tree.priors[:, 0]) for out in outputs)
    assert np.array_equal(one, many)
    assert np.all(np.asarray(outputs[1].search_tree.num_nodes) > 2)  # the search grew


def test_a_search_kept_for_its_action_carries_no_priors_through_its_loop():
    """UCT's rules never read the priors: where the caller keeps only the
    action and its weights, the compiled simulation loop carries no
    [B, N, A] float array (it did while the choice read the roots' priors
    from the tree after the loop)."""
    codes = random_root_codes(8, 4)
    root, illegal = PROBLEM.root(codes)

    def weights(key):
        return mcts_jax.uct_policy(None, key, root, PROBLEM.recurrent_fn, 16,
                                   invalid_actions=illegal).action_weights

    text = jax.jit(weights).lower(jax.random.key(0)).compile().as_text()
    carries = [line.split(" while(")[0] for line in text.splitlines() if " while(" in line]
    per_edge = f"f32[4,17,{PROBLEM.num_actions}]"
    assert carries and not any(per_edge in carry for carry in carries), carries
    assert any(f"s32[4,17,{PROBLEM.num_actions}]" in carry or
               f"s16[4,17,{PROBLEM.num_actions}]" in carry for carry in carries), carries
