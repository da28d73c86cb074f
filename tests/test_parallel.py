"""Several simulations per step (`simulations_per_step=P`, mcts_jax/parallel.py):
P = 1 is today's search; for P > 1 the tree invariants hold after any
sequence of searches, subtree moves and resets (hypothesis), collisions
create one node and share its evaluation (a hand-computed tree), capacity
is never exceeded, compact and replayed layouts equal the dense stored one,
rows are independent, the same key gives the same tree, the solver proves
exact minimax values, and the choice of root move at equal simulations stays
close to P = 1 on random game trees with exact minimax values."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import mcts_jax
from mcts_jax import tree as tree_lib
from problems.game_trees import GameTree
from problems.synthetic import HashedProblem, random_root_codes
from test_invariants import A, B, EMPTY, K, PROBLEM, SIMS, check_invariants, run_search

P = 3  # SIMS = 5 simulations in steps of 3 and 2


def test_one_path_per_step_is_todays_search():
    root, illegal = PROBLEM.root(random_root_codes(1, B))
    for rule in ("uct", "gumbel"):
        default = run_search(rule, 7, root, illegal, None, False, simulations_per_step=1)
        key = jax.random.key(7)
        plain = (mcts_jax.uct_policy(None, key, root, PROBLEM.recurrent_fn, SIMS,
                                     invalid_actions=illegal) if rule == "uct" else
                 mcts_jax.gumbel_policy(None, key, root, PROBLEM.recurrent_fn, SIMS,
                                        invalid_actions=illegal, max_num_considered_actions=4))
        for a, b in zip(jax.tree.leaves(default.search_tree), jax.tree.leaves(plain.search_tree)):
            if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
                a, b = jax.random.key_data(a), jax.random.key_data(b)
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


operation = st.one_of(
    st.tuples(st.just("search"), st.sampled_from(("uct", "puct", "gumbel")),
              st.integers(0, 2**31 - 1)),
    st.tuples(st.just("subtree"), st.lists(st.integers(0, A - 1), min_size=B, max_size=B)),
    st.tuples(st.just("reset"), st.lists(st.booleans(), min_size=B, max_size=B)),
)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(layout=st.sampled_from([None, K]), solver=st.booleans(), seed=st.integers(0, 2**16),
       operations=st.lists(operation, min_size=1, max_size=5))
def test_tree_invariants_with_parallel_paths(layout, solver, seed, operations):
    """Every node consistent with its parent and the simulator, no illegal or
    duplicate child, visits >= 1 + children's, capacity kept; the root gains
    exactly SIMS visits per search (each path is one simulation)."""
    tree = EMPTY[layout]
    fresh_codes = np.asarray(random_root_codes(seed, B), np.uint32)
    searches = 0
    for op in operations:
        if op[0] == "search":
            if searches == 3:
                continue
            searches += 1
            kept = np.asarray(tree.num_nodes) > 0
            codes = np.where(kept, np.asarray(tree.embeddings[:, 0]), fresh_codes)
            root, illegal = PROBLEM.root(codes)
            before = np.where(kept, np.asarray(tree.node_visits[:, 0]), 1)
            out = run_search(op[1], op[2], root, illegal, tree, solver, simulations_per_step=P)
            tree = out.search_tree
            check_invariants(tree, solver, op[1], parallel=True)
            root_solved = np.asarray(tree.solved[:, 0]) if solver else np.zeros(B, bool)
            gained = np.asarray(tree.node_visits[:, 0]) - before
            assert ((gained == SIMS) | root_solved).all(), gained
            for b in range(B):  # one child per (node, action): no duplicate expansion
                children = np.asarray(tree.children[b, :int(tree.num_nodes[b])]).ravel()
                children = children[children >= 0]
                assert len(set(children.tolist())) == len(children)
                assert sorted(children.tolist()) == list(range(1, int(tree.num_nodes[b])))
        elif op[0] == "subtree":
            tree = mcts_jax.get_subtree(tree, jnp.asarray(op[1], jnp.int32))
            check_invariants(tree, solver, "uct", parallel=True)
        else:
            tree = mcts_jax.reset_tree(tree, jnp.asarray(np.asarray(op[1])))


# ---- a hand-computed tree: one legal move, so every path of a step collides -------

def one_move_recurrent_fn(params, rng_key, action, embedding):
    """A game where only action 0 is legal; every transition gives reward 0.25,
    discount -1 and value 0.5 (for the player to move next)."""
    del params, rng_key, action
    batch = embedding.shape[0]
    output = mcts_jax.RecurrentFnOutput(
        reward=jnp.full((batch,), 0.25), discount=jnp.full((batch,), -1.0),
        prior_logits=jnp.zeros((batch, 2)), value=jnp.full((batch,), 0.5),
        invalid_actions=jnp.tile(jnp.array([False, True]), (batch, 1)))
    return output, embedding + 1


def test_collisions_create_one_node_and_share_its_evaluation():
    """One step of P = 4 paths from a fresh root whose only legal move is 0:
    the first path creates node 1, the three others collide on the same edge
    and back up node 1's value: node 1 has 4 visits and value sum 4 * 0.5,
    the root 1 + 4 visits and value sum 0 + 4 * (0.25 - 0.5)."""
    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((1, 2)), value=jnp.zeros((1,)),
                                 embedding=jnp.zeros((1,), jnp.int32))
    invalid = jnp.array([[False, True]])
    calls = []

    def counted(params, rng_key, action, embedding):
        calls.append(action.shape)
        return one_move_recurrent_fn(params, rng_key, action, embedding)

    out = mcts_jax.uct_policy(None, jax.random.key(0), root, counted, 4,
                              invalid_actions=invalid, simulations_per_step=4)
    tree = jax.device_get(out.search_tree)
    assert calls == [(4,)]  # one recurrent_fn call for the step's B x P leaves
    assert int(tree.num_nodes[0]) == 2
    assert tree.children[0, 0, 0] == 1 and tree.children[0, 1, 0] == tree_lib.UNEXPANDED
    assert int(tree.node_visits[0, 1]) == 4 and int(tree.node_visits[0, 0]) == 5
    np.testing.assert_allclose(tree.value_sums[0, 1], 4 * 0.5)
    np.testing.assert_allclose(tree.value_sums[0, 0], 4 * (0.25 - 0.5))
    # A second step goes one deeper: all 4 paths pass node 1 and share node 2.
    out = mcts_jax.uct_policy(None, jax.random.key(0), root, one_move_recurrent_fn, 8,
                              invalid_actions=invalid, simulations_per_step=4)
    tree = jax.device_get(out.search_tree)
    assert int(tree.num_nodes[0]) == 3
    np.testing.assert_array_equal(tree.node_visits[0, :3], [9, 8, 4])


def test_capacity_is_never_exceeded_with_parallel_paths():
    """A continued tree close to full: paths that would create a node past
    `max_nodes` re-evaluate their leaf; every simulation is still counted."""
    codes = random_root_codes(33, 8)
    problem = HashedProblem(num_actions=4, illegal_eighths=1, terminal_sixteenths=0)
    root, illegal = problem.root(codes)
    tree = None
    for move in range(3):
        out = mcts_jax.uct_policy(None, jax.random.key(move), root, problem.recurrent_fn,
                                  32, invalid_actions=illegal, tree=tree, max_nodes=40,
                                  simulations_per_step=8)
        result = jax.device_get(out.search_tree)
        assert (result.num_nodes <= 40).all() and (result.children < 40).all()
        before = 1 if tree is None else np.maximum(np.asarray(tree.node_visits[:, 0]), 1)
        np.testing.assert_array_equal(result.node_visits[:, 0], before + 32)
        tree = out.search_tree  # continue the same (fuller) trees
    assert (np.asarray(tree.num_nodes) == 40).any()  # some row did fill up


@pytest.mark.parametrize("policy", ["uct", "gumbel"])
def test_compact_and_replayed_layouts_equal_the_dense_one(policy):
    """K = A compact slots, and replayed embeddings, give the dense stored
    tree's visit counts and values with P = 4 (collisions and steering are
    computed in slot space and do not depend on the layout)."""
    problem = HashedProblem(num_actions=A, illegal_eighths=2, terminal_sixteenths=1)
    root, illegal = problem.root(random_root_codes(5, 4))
    run = functools.partial(
        mcts_jax.uct_policy if policy == "uct" else mcts_jax.gumbel_policy, None,
        jax.random.key(3), root, problem.recurrent_fn, 24, invalid_actions=illegal,
        simulations_per_step=4)
    dense = run().search_tree.summary()
    for options in (dict(max_children=A), dict(replay_embeddings=True, max_depth=24)):
        other = run(**options).search_tree.summary()
        np.testing.assert_array_equal(np.asarray(other.visit_counts),
                                      np.asarray(dense.visit_counts))
        np.testing.assert_allclose(np.asarray(other.qvalues), np.asarray(dense.qvalues),
                                   atol=1e-6)


def test_rows_are_independent_and_keys_reproduce():
    """Changing row 1's root leaves row 0's tree unchanged; the same key
    gives the same tree."""
    codes = random_root_codes(8, 2)
    root, illegal = PROBLEM.root(codes)
    other_codes = codes.copy()
    other_codes[1] += 12345
    other_root, other_illegal = PROBLEM.root(other_codes)

    def run(root, illegal):
        return mcts_jax.gumbel_policy(None, jax.random.key(4), root, PROBLEM.recurrent_fn, 20,
                                      invalid_actions=illegal, simulations_per_step=4
                                      ).search_tree

    first, again, other = run(root, illegal), run(root, illegal), run(other_root, other_illegal)
    for a, b, c in zip(jax.tree.leaves(first), jax.tree.leaves(again), jax.tree.leaves(other)):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b, c = (jax.random.key_data(x) for x in (a, b, c))
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        if np.ndim(a) >= 1 and np.shape(a)[0] == 2:
            np.testing.assert_array_equal(np.asarray(a)[0], np.asarray(c)[0])


def test_solver_proves_exact_minimax_with_parallel_paths():
    """A small game tree searched to the end: the proven root value equals the
    exact minimax value, for P = 1 and P = 8."""
    game = GameTree(depth=3, branching=3)
    codes = np.arange(16, dtype=np.uint64) * 7919 + 11
    exact = game.root_action_values(codes).max(axis=-1) / game.reward_scale
    for paths in (1, 8):
        out = mcts_jax.uct_policy(None, jax.random.key(0), game.root(codes), game.recurrent_fn,
                                  200, solver=True, simulations_per_step=paths)
        assert np.asarray(out.search_tree.solved[:, 0]).all()
        np.testing.assert_allclose(np.asarray(out.search_tree.solved_values[:, 0]), exact,
                                   atol=1e-5)


def test_root_moves_at_equal_simulations_stay_close_to_one_path_per_step():
    """On random game trees with exact minimax values, the share of roots
    where the most visited move is optimal with P = 16 stays within 0.06 of
    P = 1 at 256 simulations (UCT and PUCT, 192 roots; the benchmark
    measures more roots and budgets)."""
    game = GameTree(depth=6, branching=4)
    codes = random_root_codes(2024, 192)
    optimal = game.optimal_actions(codes)
    root = game.root(codes)
    for policy in (mcts_jax.uct_policy,
                   functools.partial(mcts_jax.alphazero_policy, dirichlet_fraction=0.0)):
        shares = []
        for paths in (1, 16):
            out = policy(None, jax.random.key(1), root, game.recurrent_fn, 256,
                         simulations_per_step=paths)
            chosen = np.asarray(jnp.argmax(out.search_tree.summary().visit_counts, axis=-1))
            shares.append(optimal[np.arange(len(codes)), chosen].mean())
        assert abs(shares[1] - shares[0]) <= 0.06, shares


def test_more_steps_than_the_in_flight_counter_holds_is_a_clear_error():
    # P = 2**20 keeps 21 bits for the count of a node's paths, so 2**10 steps fit;
    # the call is refused before anything is built or traced.
    root, illegal = PROBLEM.root(random_root_codes(1, B))
    paths = 2 ** 20
    with pytest.raises(ValueError, match="simulations_per_step=1048576 makes 1025 steps"):
        mcts_jax.uct_policy(None, jax.random.key(0), root, PROBLEM.recurrent_fn,
                            paths * 1025, invalid_actions=illegal, simulations_per_step=paths)
