"""Subtree reuse: get_subtree keeps exactly the chosen child's subtree,
continued searches start from the inherited visits, capacity is never
exceeded, and rows reset or fall back to a fresh root on their own."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
import tictactoe
from problems.synthetic import HashedProblem, random_root_codes

PROBLEM = HashedProblem(num_actions=4, illegal_eighths=1, terminal_sixteenths=2)
BATCH = 8


def search(codes, num_simulations, tree=None, max_nodes=None, key=0, problem=PROBLEM,
           **options):
    root, illegal = problem.root(codes)
    return mcts_jax.alphazero_policy(None, jax.random.key(key), root, problem.recurrent_fn,
                                     num_simulations, invalid_actions=illegal, tree=tree,
                                     max_nodes=max_nodes, dirichlet_fraction=0.0,
                                     final_action="most_visited", **options)


def subtree_by_path(tree, row, start):
    """{action path from `start`: per-node record} for one row of a tree."""
    tree = jax.device_get(tree)
    out = {}

    def walk(node, path):
        out[path] = dict(
            visits=int(tree.node_visits[row, node]),
            value_sum=float(tree.value_sums[row, node]),
            raw_value=float(tree.raw_values[row, node]),
            priors=tuple(np.asarray(tree.priors[row, node]).tolist()),
            solved=bool(tree.solved[row, node]),
            terminal=bool(tree.is_terminal[row, node]),
            embedding=int(tree.embeddings[row, node]),
            edge=(float(tree.rewards[row, node]), float(tree.discounts[row, node]))
            if path else None)
        for action, child in enumerate(tree.children[row, node]):
            if child >= 0:
                walk(int(child), path + (action,))
            else:
                out[path + (action, "slot")] = int(child)

    walk(start, ())
    return out


def test_get_subtree_keeps_the_chosen_subtree_exactly():
    codes = random_root_codes(30, BATCH)
    out = search(codes, 60, max_nodes=80, solver=True)
    old = out.search_tree
    new = mcts_jax.get_subtree(old, out.action)
    for row in range(BATCH):
        child = int(old.children[row, 0, int(out.action[row])])
        assert child > 0
        expected = subtree_by_path(old, row, child)
        got = subtree_by_path(new, row, 0)
        expected[()]["edge"] = got[()]["edge"] = None
        assert got == expected, row
        assert int(new.num_nodes[row]) == len([p for p in expected if "slot" not in p])
        assert int(new.parents[row, 0]) == -1
        used = int(new.num_nodes[row])
        assert (np.asarray(new.node_visits[row, used:]) == 0).all()
        assert (np.asarray(new.parents[row, 1:used]) < np.arange(1, used)).all()


def test_continued_search_starts_from_inherited_visits():
    problem = HashedProblem(num_actions=4, illegal_eighths=1)  # no terminal children
    codes = random_root_codes(31, BATCH)
    first = search(codes, 40, max_nodes=200, problem=problem)
    kept = mcts_jax.get_subtree(first.search_tree, first.action)
    inherited = np.asarray(first.search_tree.summary().visit_counts)[
        np.arange(BATCH), np.asarray(first.action)]
    np.testing.assert_array_equal(kept.node_visits[:, 0], inherited)
    child_codes = np.asarray(kept.embeddings[:, 0])
    second = search(child_codes, 40, tree=kept, problem=problem)
    np.testing.assert_array_equal(second.search_tree.node_visits[:, 0], inherited + 40)


def test_terminal_child_gives_an_empty_row():
    problem = HashedProblem(num_actions=4, terminal_sixteenths=8)
    out = search(random_root_codes(36, 32), 20, problem=problem)
    tree = jax.device_get(out.search_tree)
    child = tree.children[np.arange(32), 0, np.asarray(out.action)]
    terminal = tree.is_terminal[np.arange(32), child]
    assert terminal.any() and (~terminal).any()
    kept = mcts_jax.get_subtree(out.search_tree, out.action)
    np.testing.assert_array_equal(np.asarray(kept.num_nodes) == 0, terminal)


def test_unexpanded_child_starts_fresh():
    codes = random_root_codes(32, BATCH)
    out = search(codes, 3, max_nodes=16)
    visits = np.asarray(out.search_tree.summary().visit_counts)
    legal = ~np.asarray(PROBLEM.root(codes)[1])
    unexpanded = np.argmax((visits == 0) & legal, axis=-1)
    assert ((visits == 0) & legal).any(-1).all()
    empty = mcts_jax.get_subtree(out.search_tree, jnp.asarray(unexpanded))
    np.testing.assert_array_equal(empty.num_nodes, 0)
    child_codes = np.array([PROBLEM.step_code(int(c), int(a)) for c, a in zip(codes, unexpanded)],
                           np.uint64)
    resumed = search(child_codes, 10, tree=empty)
    fresh = search(child_codes, 10, max_nodes=16)
    leaves = jax.tree.leaves(resumed.search_tree), jax.tree.leaves(fresh.search_tree)
    for a, b in zip(*leaves):
        np.testing.assert_array_equal(a, b)


def test_capacity_is_never_exceeded():
    codes = random_root_codes(33, BATCH)
    tree = None
    for move in range(4):
        out = search(codes, 30, tree=tree, max_nodes=40, key=move)
        result = jax.device_get(out.search_tree)
        assert (result.num_nodes <= 40).all()
        children = result.children
        assert (children < 40).all()
        # every visit is accounted for: the root gained exactly 30
        tree = mcts_jax.get_subtree(out.search_tree, out.action)
        codes = np.asarray(tree.embeddings[:, 0]).astype(np.uint64)
        fresh_rows = np.asarray(tree.num_nodes) == 0
        codes[fresh_rows] = [PROBLEM.step_code(int(c), int(a)) for c, a in
                             zip(np.asarray(out.search_tree.embeddings[:, 0])[fresh_rows],
                                 np.asarray(out.action)[fresh_rows])]
        before = np.asarray(tree.node_visits[:, 0])
        after = search(codes, 30, tree=tree, key=10 + move).search_tree.node_visits[:, 0]
        np.testing.assert_array_equal(np.asarray(after), np.maximum(before, 1) + 30)


def test_reset_tree_empties_only_masked_rows():
    codes = random_root_codes(34, BATCH)
    tree = search(codes, 12).search_tree
    mask = np.arange(BATCH) % 2 == 0
    reset = mcts_jax.reset_tree(tree, jnp.asarray(mask))
    np.testing.assert_array_equal(np.asarray(reset.num_nodes)[mask], 0)
    assert (np.asarray(reset.node_visits)[mask] == 0).all()
    for a, b in zip(jax.tree.leaves(reset), jax.tree.leaves(tree)):
        np.testing.assert_array_equal(np.asarray(a)[~mask], np.asarray(b)[~mask])
    with pytest.raises(ValueError, match="mask"):
        mcts_jax.reset_tree(tree, jnp.ones(3, bool))


def test_full_tictactoe_game_with_reuse():
    """Self-play of whole games: each search inherits the chosen child's visits."""
    pictures = ["........."] * 4
    root, illegal = tictactoe.make_root(pictures)
    state = root.embedding
    tree = None
    simulations = 48
    for move in range(9):
        board = np.asarray(state["board"])
        root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((4, 9)), value=jnp.zeros(4),
                                     embedding=state)
        out = mcts_jax.alphazero_policy(None, jax.random.key(move), root,
                                        tictactoe.recurrent_fn, simulations,
                                        invalid_actions=jnp.asarray(board != 0), tree=tree,
                                        max_nodes=400, dirichlet_fraction=0.25,
                                        temperature=1.0)
        inherited = np.zeros(4, int) if tree is None else np.asarray(tree.node_visits[:, 0])
        np.testing.assert_array_equal(out.search_tree.node_visits[:, 0],
                                      np.maximum(inherited, 1) + simulations)
        assert (board.reshape(-1)[np.asarray(out.action) + 9 * np.arange(4)] == 0).all()
        output, state = tictactoe.recurrent_fn(None, None, out.action, state)
        over = np.asarray(output.discount) == 0
        tree = mcts_jax.get_subtree(out.search_tree, out.action)
        if over.any():
            break
        kept_boards = np.asarray(tree.embeddings["board"][:, 0])
        np.testing.assert_array_equal(kept_boards[np.asarray(tree.num_nodes) > 0],
                                      np.asarray(state["board"])[np.asarray(tree.num_nodes) > 0])
    assert move >= 4


def test_tree_from_another_configuration_is_rejected():
    codes = random_root_codes(35, BATCH)
    tree = search(codes, 8).search_tree
    with pytest.raises(ValueError, match="max_nodes"):
        search(codes, 8, tree=tree, max_nodes=20)
    with pytest.raises(ValueError, match="rows"):
        search(codes[:4], 8, tree=tree)
    other = HashedProblem(num_actions=5)
    root, _ = other.root(codes)
    with pytest.raises(ValueError, match="A="):
        mcts_jax.uct_policy(None, jax.random.key(0), root, other.recurrent_fn, 8, tree=tree)


def test_kept_prior_logits_are_dropped_by_a_search_without_them_and_never_invented():
    """A tree that kept its prior logits continues, in a search that keeps
    none, as the same tree without them; a search that keeps them refuses a
    tree that kept none (its nodes' logits are not known)."""
    codes = random_root_codes(36, BATCH)
    with_logits = mcts_jax.get_subtree(*_tree_and_action(search(codes, 12, keep_prior_logits=True)))
    without = mcts_jax.get_subtree(*_tree_and_action(search(codes, 12)))
    assert with_logits.prior_logits is not None and without.prior_logits is None
    continued = search(codes, 6, tree=with_logits).search_tree
    reference = search(codes, 6, tree=without).search_tree
    assert continued.prior_logits is None
    for got, want in zip(jax.tree.leaves(continued), jax.tree.leaves(reference)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(ValueError, match="KeptPriorLogits") as refused:
        search(codes, 6, tree=without, keep_prior_logits=True)
    assert "keep_prior_logits=False" in str(refused.value)  # what to do instead


def _tree_and_action(out):
    return out.search_tree, out.action


def test_tree_kept_across_games_with_select_rows():
    """A tree searched at the initial position is put back into the rows
    whose game restarted; they continue it instead of starting fresh."""
    problem = HashedProblem(num_actions=4, illegal_eighths=1)
    start = random_root_codes(37, 1).repeat(BATCH)  # every game starts here
    first = search(start, 20, max_nodes=100, problem=problem)
    kept_initial = first.search_tree
    moved = mcts_jax.get_subtree(first.search_tree, first.action)
    restarted = jnp.asarray(np.arange(BATCH) < 3)
    tree = mcts_jax.select_rows(restarted, kept_initial, moved)
    codes = np.where(np.asarray(restarted), start,
                     np.asarray(moved.embeddings[:, 0]).astype(np.uint64))
    fresh_rows = np.asarray(tree.num_nodes) == 0
    codes[fresh_rows] = [problem.step_code(int(s), int(a)) for s, a in
                         zip(start[fresh_rows], np.asarray(first.action)[fresh_rows])]
    out = search(codes, 20, tree=tree, problem=problem)
    visits = np.asarray(out.search_tree.node_visits[:, 0])
    np.testing.assert_array_equal(visits[:3], 21 + 20)
    np.testing.assert_array_equal(visits[3:], np.maximum(np.asarray(moved.node_visits[3:, 0]),
                                                         1) + 20)
