"""Graph search (`transpositions=True`, mcts_jax/graph.py).

- Exact agreement with a plain-Python reference graph search
  (tests/reference_graph.py) on a game whose moves commute (tests/dag_game.py):
  the same positions, node visits, edge visits and values, node for node.
- The graph's invariants under every option that takes it (PUCT, Gumbel,
  expand_all, P paths per step, the compact layout, the solver): one node per
  position, a node's visits 1 + its edges' visits, its value sum recomputed
  from its children, every child pointer a legal move of its position.
- The solver through shared nodes: proven values equal exact minimax, on the
  commuting game and on tic-tac-toe (tests/tictactoe_minimax.py), and the empty
  tic-tac-toe board is proven a draw in at most one node per reachable
  position (5,478).
- Re-rooting keeps exactly the reachable positions; repetitions end a path;
  the mctx view, the memory report, pgx position keys and the errors.
"""

from __future__ import annotations

import collections
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
import tictactoe
import tictactoe_minimax as minimax
from dag_game import DagGame, masks_of
from mcts_jax import graph
from reference_graph import reference_graph_search

GAME = DagGame(num_actions=6, length=4)
ROOT_MASKS = [0, 0b000011, 0b010000, 0b100001]
ROOT, ILLEGAL = GAME.root(ROOT_MASKS)


def dag_search(policy=mcts_jax.uct_policy, num_simulations=60, roots=None, **options):
    root, illegal = (ROOT, ILLEGAL) if roots is None else GAME.root(roots)
    out = policy(None, jax.random.key(0), root, GAME.recurrent_fn, num_simulations,
                 invalid_actions=illegal, transpositions=True, **options)
    return out, jax.device_get(out.search_tree)


def used(tree, row):
    return int(tree.num_nodes[row])


def check_graph_invariants(tree, game=GAME):
    """One node per position; visits 1 + edge visits; child pointers are the
    position's legal moves; the root's value sum is recomputed from its
    children (every simulation passes the root; another node keeps the
    value of its last recomputation, which a child reached through another
    parent may have changed since), a leaf's is its raw value, and every
    mean value lies in [-1, 1]."""
    for row in range(tree.batch_size):
        n = used(tree, row)
        masks = masks_of(tree, row)[:n]
        assert len(set(masks.tolist())) == n, "a position has two nodes"
        children = np.asarray(tree.children[row, :n], np.int64)
        edges = np.asarray(tree.edge_visits[row, :n])
        visits = np.asarray(tree.node_visits[row, :n])
        sums = np.asarray(tree.value_sums[row, :n], np.float64)
        np.testing.assert_array_equal(visits, 1 + edges.sum(-1))
        assert np.all(edges[children < 0] == 0)
        slot_actions = (np.arange(children.shape[1])[None, :].repeat(n, 0)
                        if tree.children_actions is None
                        else np.asarray(tree.children_actions[row, :n]))
        rewards = np.asarray(tree.rewards[row], np.float64)
        discounts = np.asarray(tree.discounts[row], np.float64)
        raw = np.asarray(tree.raw_values[row, :n], np.float64)
        assert np.all(np.abs(sums / visits) <= 1 + 1e-6)
        for node in range(n):
            expected = raw[node]
            for slot in np.flatnonzero(children[node] >= 0):
                child = children[node, slot]
                assert masks[child] == masks[node] | 1 << int(slot_actions[node, slot])
                expected += edges[node, slot] * (rewards[child] + discounts[child]
                                                 * sums[child] / visits[child])
            if node == 0 or not np.any(edges[node]):
                assert sums[node] == pytest.approx(expected, abs=1e-4 * visits[node])


# ---- against the reference --------------------------------------------------------------

@pytest.mark.parametrize("num_simulations", [10, 60, 200])
def test_graph_search_equals_the_reference(num_simulations):
    _, tree = dag_search(num_simulations=num_simulations)
    for row, root_mask in enumerate(ROOT_MASKS):
        reference = reference_graph_search(GAME, root_mask, num_simulations)
        n = used(tree, row)
        masks = masks_of(tree, row)[:n]
        assert n == len(reference)
        assert set(masks.tolist()) == set(reference)
        children = np.asarray(tree.children[row])
        for node, mask in enumerate(masks.tolist()):
            expected = reference[mask]
            assert tree.node_visits[row, node] == expected.visits
            assert tree.value_sums[row, node] == pytest.approx(expected.value_sum, abs=1e-4)
            edges = {action: int(tree.edge_visits[row, node, action])
                     for action in np.flatnonzero(children[node] >= 0)}
            assert edges == {action: visits for action, (_, visits) in expected.edges.items()}
    # Far fewer nodes than the tree of the same search.
    tree_search = mcts_jax.uct_policy(None, jax.random.key(0), ROOT, GAME.recurrent_fn,
                                      num_simulations, invalid_actions=ILLEGAL).search_tree
    if num_simulations >= 60:
        assert np.all(np.asarray(tree.num_nodes) < np.asarray(tree_search.num_nodes))


def test_root_statistics_are_edge_statistics():
    out, tree = dag_search(num_simulations=60)
    summary = jax.device_get(out.search_tree.summary())
    expanded = np.asarray(tree.children[:, 0]) >= 0
    np.testing.assert_array_equal(summary.visit_counts,
                                  np.where(expanded, np.asarray(tree.edge_visits[:, 0]), 0))
    assert np.all(summary.visit_counts.sum(-1) == 60)
    np.testing.assert_allclose(summary.value, tree.value_sums[:, 0] / tree.node_visits[:, 0],
                               rtol=1e-6)


# ---- invariants under every option --------------------------------------------------------

@pytest.mark.parametrize("policy, options", [
    (mcts_jax.alphazero_policy, dict(dirichlet_fraction=0.0)),
    (mcts_jax.gumbel_policy, dict(max_num_considered_actions=4)),
    (mcts_jax.uct_policy, dict(expand_all=True, max_nodes=64)),
    (mcts_jax.uct_policy, dict(simulations_per_step=4)),
    (mcts_jax.alphazero_policy, dict(simulations_per_step=3, steering="virtual_loss")),
    (mcts_jax.uct_policy, dict(max_children=3)),
    (mcts_jax.uct_policy, dict(solver=True)),
], ids=["puct", "gumbel", "expand_all", "paths4", "paths3_virtual_loss", "compact3", "solver"])
def test_graph_invariants(policy, options):
    _, tree = dag_search(policy, num_simulations=48, **options)
    check_graph_invariants(tree)
    assert np.all(np.asarray(tree.num_nodes) <= len(GAME.positions()))


# ---- the solver through shared nodes ----------------------------------------------------

def test_solver_proves_the_commuting_game_exactly():
    exact = GAME.minimax()
    positions = len(GAME.positions())
    out, tree = dag_search(num_simulations=400, solver=True, max_nodes=positions)
    summary = jax.device_get(out.search_tree.summary())
    assert summary.root_proven.all()
    for row, root_mask in enumerate(ROOT_MASKS):
        assert summary.root_proven_value[row] == pytest.approx(exact[root_mask])
        masks = masks_of(tree, row)[:used(tree, row)]
        for node in np.flatnonzero(np.asarray(tree.solved[row, :len(masks)])):
            if tree.is_terminal[row, node]:
                assert tree.solved_values[row, node] == 0.0
            else:
                assert tree.solved_values[row, node] == pytest.approx(exact[int(masks[node])])


def test_solver_on_tic_tac_toe_positions_with_transpositions():
    boards = random.Random(5).sample(minimax.all_reachable_positions(), 48)
    root, illegal = tictactoe.make_root([minimax.to_tictactoe(b) for b in boards])
    out = mcts_jax.uct_policy(None, jax.random.key(1), root, tictactoe.recurrent_fn, 3000,
                              invalid_actions=illegal, solver=True, transpositions=True,
                              max_nodes=1200)
    summary = jax.device_get(out.search_tree.summary())
    assert summary.root_proven.all()
    for row, board in enumerate(boards):
        assert summary.root_proven_value[row] == minimax.value(board)
        for action in np.flatnonzero(summary.proven[row]):
            assert summary.proven_qvalues[row, action] == minimax.move_value(board, int(action))
        assert int(out.action[row]) in minimax.optimal_moves(board)


def test_empty_board_is_proven_a_draw_in_one_node_per_position():
    reachable = len(minimax.all_reachable_positions(include_terminal=True))
    assert reachable == 5478
    root, illegal = tictactoe.make_root(["." * 9])
    out = mcts_jax.uct_policy(None, jax.random.key(2), root, tictactoe.recurrent_fn, 30000,
                              invalid_actions=illegal, solver=True, transpositions=True,
                              max_nodes=reachable)
    summary = out.search_tree.summary()
    assert bool(summary.root_proven[0]) and float(summary.root_proven_value[0]) == 0.0
    assert int(out.search_tree.num_nodes[0]) <= reachable
    np.testing.assert_array_equal(summary.proven_qvalues[0], 0.0)


# ---- reuse -----------------------------------------------------------------------------------

def reachable_positions(tree, row, start):
    children = np.asarray(tree.children[row])
    seen, frontier = {start}, [start]
    while frontier:
        frontier = [int(c) for node in frontier for c in children[node] if c >= 0
                    and int(c) not in seen and not seen.add(int(c))]
    return seen


def test_reuse_keeps_the_reachable_positions():
    out, tree = dag_search(num_simulations=120, max_nodes=60)
    subtree = jax.device_get(mcts_jax.get_subtree(out.search_tree, out.action))
    for row in range(len(ROOT_MASKS)):
        slot = int(out.action[row])
        child = int(tree.children[row, 0, slot])
        kept = reachable_positions(tree, row, child)
        old_masks = masks_of(tree, row)
        assert used(subtree, row) == len(kept)
        new_masks = masks_of(subtree, row)[:used(subtree, row)]
        assert new_masks[0] == old_masks[child]
        assert set(new_masks.tolist()) == {int(old_masks[n]) for n in kept}
        for node in range(1, used(subtree, row)):  # the parent chain reaches the new root
            steps, up = 0, node
            while up != 0:
                up = int(subtree.parents[row, up])
                steps += 1
                assert up >= 0 and steps < 10
            parent = int(subtree.parents[row, node])
            assert new_masks[node] == new_masks[parent] | 1 << int(
                subtree.actions_from_parent[row, node])
    check_graph_invariants(subtree)
    # Every kept position is found again through the table.
    keys = jnp.asarray(subtree.position_keys)
    for node in range(int(subtree.num_nodes.min())):
        found = graph.lookup(subtree, keys[:, node], subtree.rewards[:, node],
                             subtree.discounts[:, node])
        assert np.all(np.asarray(found.found)) and np.all(np.asarray(found.node) == node)
    # A continued search keeps one node per position.
    next_masks = [int(masks_of(tree, row)[int(tree.children[row, 0, int(out.action[row])])])
                  for row in range(len(ROOT_MASKS))]
    root, illegal = GAME.root(next_masks)
    continued = mcts_jax.uct_policy(None, jax.random.key(3), root, GAME.recurrent_fn, 40,
                                    invalid_actions=illegal, tree=subtree, transpositions=True)
    check_graph_invariants(jax.device_get(continued.search_tree))


# ---- repetitions ------------------------------------------------------------------------------

def ring_recurrent_fn(params, rng_key, action, state):
    """A ring of 3 positions: action 0 moves on (positions repeat), action 1
    ends the game with a reward of the position's sign. The same player keeps
    moving (discount 1)."""
    del params, rng_key
    position = jnp.where(action == 0, (state["position"] + 1) % 3, state["position"])
    done = action == 1
    reward = jnp.where(done, (position - 1).astype(jnp.float32) * 0.5, 0.0)
    out = mcts_jax.RecurrentFnOutput(
        reward=reward, discount=jnp.where(done, 0.0, 1.0),
        prior_logits=jnp.zeros((action.shape[0], 2)), value=jnp.zeros(action.shape[0]),
        invalid_actions=jnp.broadcast_to(done[:, None], (action.shape[0], 2)))
    return out, dict(position=position, done=done)


def test_a_repeated_position_ends_the_path():
    batch = 2
    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((batch, 2)), value=jnp.zeros(batch),
                                 embedding=dict(position=jnp.zeros(batch, jnp.int32),
                                                done=jnp.zeros(batch, bool)))
    out = mcts_jax.uct_policy(None, jax.random.key(0), root, ring_recurrent_fn, 100,
                              transpositions=True, solver=True, repetition_value=-0.25)
    tree = jax.device_get(out.search_tree)
    for row in range(batch):
        n = used(tree, row)
        positions = np.asarray(tree.embeddings["position"][row, :n])
        done = np.asarray(tree.embeddings["done"][row, :n])
        repeated = np.asarray(tree.is_terminal[row, :n]) & ~done
        assert repeated.sum() >= 1  # the ring closes on itself
        assert np.all(tree.raw_values[row, :n][repeated] == -0.25)
        assert not np.any(tree.solved[row, :n][repeated])  # a repetition is never a proof
        # at most one live node per position, one end per position, the repetitions
        assert (~repeated & ~done).sum() <= 3 and done.sum() <= 3
        assert int(tree.edge_visits[row, 0].sum()) == 100
    # the best line ends at position 2 (reward +0.5): play on from the root
    assert np.all(np.asarray(out.action) == 0)


# ---- views, memory, keys, errors -------------------------------------------------------------

def test_mctx_view_shows_edges():
    out, tree = dag_search(num_simulations=60)
    view = mcts_jax.mctx_view(out.search_tree)
    expanded = np.asarray(tree.children) >= 0
    np.testing.assert_array_equal(np.asarray(view.children_visits),
                                  np.where(expanded, np.asarray(tree.edge_visits), 0))
    shared = collections.Counter(int(c) for c in np.asarray(view.children_index[0]).ravel()
                                 if c > 0)
    assert max(shared.values()) >= 2  # a node with two parents appears under both


def test_memory_report_counts_the_graph():
    embedding = jnp.zeros((), jnp.int32)
    plain = mcts_jax.memory.tree_memory(embedding, num_actions=6, batch_size=4, max_nodes=100)
    graph_report = mcts_jax.memory.tree_memory(embedding, num_actions=6, batch_size=4,
                                               max_nodes=100, transpositions=True)
    extra = 4 * (100 * 6 * 4 + 100 * 8 + graph.table_size(100) * 4)
    assert graph_report.total_bytes - plain.total_bytes == extra
    assert graph.table_size(100) == 256


def test_pgx_position_keys():
    from envs import chess_tools

    game = envs.make("chess")
    step = jax.jit(game.step)  # one compilation for every move
    key = jax.jit(lambda state: game.position_key(game.lean_state(state)))

    def play(moves):
        state = chess_tools.from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
        state = jax.tree.map(lambda x: x[None], state)
        for uci in moves:
            action = chess_tools.uci_to_action(jax.tree.map(lambda x: x[0], state), uci)
            state = step(state, jnp.asarray([action], jnp.int32))
        return np.asarray(key(state))[0]

    # Two move orders, one position: one key (the move counters differ).
    assert np.array_equal(play(["g1f3", "g8f6", "b1c3", "b8c6"]),
                          play(["b1c3", "b8c6", "g1f3", "g8f6"]))
    # The start position seen a second time is another position of the game.
    assert not np.array_equal(play([]), play(["g1f3", "g8f6", "f3g1", "f6g8"]))
    assert not np.array_equal(play(["g1f3"]), play(["b1c3"]))
    ttt = envs.make("tic_tac_toe")
    states = ttt.init(jax.random.key(0), 1)
    a = ttt.step(ttt.step(states, jnp.asarray([0])), jnp.asarray([4]))
    a = ttt.step(a, jnp.asarray([8]))
    b = ttt.step(ttt.step(states, jnp.asarray([8])), jnp.asarray([4]))
    b = ttt.step(b, jnp.asarray([0]))
    assert np.array_equal(ttt.position_key(ttt.lean_state(a)),
                          ttt.position_key(ttt.lean_state(b)))


def test_hash_embedding_keys():
    masks = jnp.asarray([0, 1, 2, 1], jnp.int32)
    keys = np.asarray(mcts_jax.hash_embedding(dict(mask=masks, flag=masks > 0)))
    assert keys.shape == (4, 2) and keys.dtype == np.uint32
    assert np.array_equal(keys[1], keys[3]) and len({tuple(k) for k in keys}) == 3


def test_errors():
    with pytest.raises(ValueError, match="position_key is read only by a graph search"):
        mcts_jax.SearchOptions(position_key=mcts_jax.hash_embedding)
    with pytest.raises(ValueError, match="repetition_value=2.0 is outside"):
        mcts_jax.SearchOptions(transpositions=True, repetition_value=2.0)
    with pytest.raises(ValueError, match="does not support chance nodes"):
        mcts_jax.SearchOptions(transpositions=True, num_chance_outcomes=2)
    with pytest.raises(ValueError, match="position_key must return"):
        dag_search(num_simulations=4, position_key=lambda emb: jnp.zeros((4, 3), jnp.uint32))
    out, _ = dag_search(num_simulations=8)
    with pytest.raises(ValueError, match="keeps its kind"):
        mcts_jax.uct_policy(None, jax.random.key(0), ROOT, GAME.recurrent_fn, 8,
                            invalid_actions=ILLEGAL, tree=out.search_tree)
    assert not mcts_jax.SearchOptions().transpositions
    plain = mcts_jax.uct_policy(None, jax.random.key(0), ROOT, GAME.recurrent_fn, 8,
                                invalid_actions=ILLEGAL).search_tree
    assert plain.edge_visits is None and plain.transposition_table is None
