"""MCTS-solver (`solver=True`) against an exact minimax solver of tic-tac-toe.

Positions come from `tictactoe_minimax.all_reachable_positions()` (the 4520
non-terminal positions reachable by legal play) and are searched with the
jax.numpy tic-tac-toe of `tests/tictactoe.py` (value 0 everywhere, exact
terminal rewards), many positions as the rows of one search call.

Budget. With the solver, a simulation from an unproven root never enters a
proven child, and a node all of whose legal children are proven is proven
itself, so each simulation reaches an unexpanded edge and creates one node
(with `expand_all`, it expands one non-terminal node). Hence a budget of
`game_tree_size(board)` simulations (the number of nodes of the full game tree
below the position, at most sum_{k=1..e} e!/(e-k)! for e empty squares) with
one more node slot is always enough to prove the root.
"""

from __future__ import annotations

import collections
import random

import jax
import numpy as np
import pytest

import mcts_jax
import tictactoe
import tictactoe_minimax as minimax

SAMPLE_SEED = 20240611
LOSS_EPS = 1e-6


def search(policy, boards, num_simulations, max_nodes=None, seed=0, **options):
    """One batched search of `boards`; returns (actions [B], summary, tree) on host."""
    root, illegal = tictactoe.make_root([minimax.to_tictactoe(b) for b in boards])
    if policy == "uct":
        run = mcts_jax.uct_policy
    else:
        run = mcts_jax.alphazero_policy
        options.setdefault("dirichlet_fraction", 0.0)
    out = run(None, jax.random.key(seed), root, tictactoe.recurrent_fn, num_simulations,
              invalid_actions=illegal, max_nodes=max_nodes, solver=True, **options)
    return (np.asarray(out.action), jax.device_get(out.search_tree.summary()),
            jax.device_get(out.search_tree))


def check_proven_children(boards, summary):
    """Every root action reported proven is legal and its proven Q-value is the
    exact value of the move for the root mover; a proven root has its exact
    minimax value. Returns the number of proven root actions."""
    count = 0
    for row, board in enumerate(boards):
        legal = set(minimax.legal_moves(board))
        for action in np.flatnonzero(summary.proven[row]):
            assert action in legal, (minimax.to_tictactoe(board), action)
            expected = minimax.move_value(board, int(action))
            assert summary.proven_qvalues[row, action] == pytest.approx(expected, abs=1e-5), (
                minimax.to_tictactoe(board), int(action), expected)
            count += 1
        if summary.root_proven[row]:
            assert summary.root_proven_value[row] == pytest.approx(minimax.value(board),
                                                                   abs=1e-5), \
                minimax.to_tictactoe(board)
    return count


def sample_positions(count, seed):
    positions = minimax.all_reachable_positions()
    assert len(positions) == 4520
    return random.Random(seed).sample(positions, count)


def budget_groups(boards):
    """Rows grouped by empty squares (<= 5, 6, 7, 8+), each with the number of
    simulations that is sure to prove every position of its group."""
    groups = collections.defaultdict(list)
    for board in boards:
        groups[min(max(minimax.empties(board), 5), 8)].append(board)
    for key in sorted(groups):
        rows = groups[key]
        yield rows, max(minimax.game_tree_size(b) for b in rows)


def assert_proves_every_position(policy, boards, **options):
    assert sum(len(rows) for rows, _ in budget_groups(boards)) == len(boards)
    for rows, budget in budget_groups(boards):
        actions, summary, tree = search(policy, rows, budget, max_nodes=budget + 1, **options)
        unproven = [minimax.to_tictactoe(b) for b, p in zip(rows, summary.root_proven) if not p]
        assert not unproven, f"{len(unproven)} roots unproven after {budget} simulations: " \
                             f"{unproven[:5]}"
        check_proven_children(rows, summary)
        for row, (board, action) in enumerate(zip(rows, actions)):
            assert int(action) in minimax.optimal_moves(board), (
                minimax.to_tictactoe(board), int(action), minimax.optimal_moves(board))
            if minimax.value(board) < 1:  # no win: proven only once every move is
                assert summary.proven[row][minimax.legal_moves(board)].all(), \
                    minimax.to_tictactoe(board)


# ---- (a) the solver proves positions, with the exact values ---------------------

@pytest.mark.parametrize("expand_all", [False, True])
def test_uct_solver_proves_random_reachable_positions(expand_all):
    boards = sample_positions(500, SAMPLE_SEED)
    assert len(set(boards)) == 500
    assert_proves_every_position("uct", boards, expand_all=expand_all)


@pytest.mark.slow
def test_solver_on_the_empty_board():
    """The largest tree: 549945 nodes below the empty board (a draw). Slow
    (about 70 s on 2 CPU cores): a simulation's cost grows with max_nodes."""
    board = minimax.EMPTY_BOARD
    budget = minimax.game_tree_size(board)
    assert budget == 549945
    actions, summary, _ = search("uct", [board], budget, max_nodes=budget + 1)
    assert summary.root_proven[0] and summary.root_proven_value[0] == 0.0
    assert summary.proven[0].all()
    np.testing.assert_array_equal(summary.proven_qvalues[0], 0.0)
    check_proven_children([board], summary)


# ---- (b) too few simulations: never play a proven loss --------------------------

def immediate_wins(board):
    return [m for m in minimax.legal_moves(board) if minimax.winner(minimax.play(board, m))]


def blunders(board):
    """Moves after which the opponent wins at once."""
    return [m for m in minimax.legal_moves(board)
            if not minimax.is_terminal(minimax.play(board, m))
            and immediate_wins(minimax.play(board, m))]


def blunder_positions(count, seed, empties=(5, 6)):
    """Positions with no immediate win for the mover, some moves that lose at
    once and some that do not."""
    candidates = [b for b in minimax.all_reachable_positions()
                  if minimax.empties(b) in empties and not immediate_wins(b)
                  and 0 < len(blunders(b)) < len(minimax.legal_moves(b))]
    return random.Random(seed).sample(candidates, min(count, len(candidates)))


def assert_never_plays_a_proven_loss(boards, actions, summary):
    """Returns how many rows had a proven loss next to another legal move."""
    informative = 0
    for row, board in enumerate(boards):
        legal = np.zeros(9, bool)
        legal[minimax.legal_moves(board)] = True
        assert legal[actions[row]], (minimax.to_tictactoe(board), int(actions[row]))
        lost = summary.proven[row] & (summary.proven_qvalues[row] <= -1.0 + LOSS_EPS)
        if (legal & ~lost).any():
            informative += int(lost.any())
            assert not lost[actions[row]], (
                f"{minimax.to_tictactoe(board)}: played proven loss {int(actions[row])}; "
                f"proven losses {np.flatnonzero(lost).tolist()}")
    return informative


@pytest.mark.parametrize("final_action", ["most_visited", "highest_value", "sampled"])
def test_uct_solver_avoids_proven_losses_with_small_budget(final_action):
    boards = blunder_positions(200, SAMPLE_SEED + 1)
    assert len(boards) == 200
    actions, summary, _ = search("uct", boards, 20, final_action=final_action, seed=3)
    assert summary.root_proven.mean() < 0.5, "20 simulations should rarely prove these roots"
    assert check_proven_children(boards, summary) > 0
    informative = assert_never_plays_a_proven_loss(boards, actions, summary)
    assert informative >= 20, f"only {informative} rows had a proven loss to avoid"


# ---- (c) the same with PUCT (alphazero_policy) ----------------------------------

@pytest.mark.parametrize("final_action", ["sampled", "most_visited"])
def test_alphazero_solver_proves_random_reachable_positions(final_action):
    boards = sample_positions(100, SAMPLE_SEED + 2)
    assert_proves_every_position("puct", boards, final_action=final_action)


@pytest.mark.parametrize("final_action", ["sampled", "most_visited", "highest_value"])
def test_alphazero_solver_avoids_proven_losses_with_small_budget(final_action):
    boards = blunder_positions(100, SAMPLE_SEED + 3)
    actions, summary, _ = search("puct", boards, 20, final_action=final_action, seed=4)
    assert summary.root_proven.mean() < 0.5
    assert check_proven_children(boards, summary) > 0
    informative = assert_never_plays_a_proven_loss(boards, actions, summary)
    assert informative >= 10, f"only {informative} rows had a proven loss to avoid"


@pytest.mark.parametrize("final_action", ["most_visited", "highest_value", "sampled"])
def test_alphazero_solver_choice_when_only_unvisited_moves_are_not_lost(final_action):
    """Priors steer PUCT into a move that loses at once, so after a few
    simulations the only visited root moves can be proven losses while the
    other moves are still unvisited. The chosen move must then be a legal move
    that is not a proven loss. Checked after each of the first 8 simulations
    (one simulation per call, continuing the tree)."""
    boards = blunder_positions(64, SAMPLE_SEED + 6, empties=(4, 5, 6))
    steered = [min(blunders(b)) for b in boards]
    root, illegal = tictactoe.make_root([minimax.to_tictactoe(b) for b in boards])
    logits = np.full((len(boards), 9), -30.0, np.float32)
    logits[np.arange(len(boards)), steered] = 0.0
    root = root.replace(prior_logits=jax.numpy.asarray(logits))
    tree = None
    informative = 0
    for step in range(8):
        out = mcts_jax.alphazero_policy(None, jax.random.key(step), root, tictactoe.recurrent_fn,
                                        1, invalid_actions=illegal, max_nodes=16, solver=True,
                                        dirichlet_fraction=0.0, final_action=final_action,
                                        tree=tree)
        tree = out.search_tree
        summary = jax.device_get(tree.summary())
        check_proven_children(boards, summary)
        informative += assert_never_plays_a_proven_loss(boards, np.asarray(out.action), summary)
    assert informative > 0


# ---- (d) no simulation is spent inside a proven subtree -------------------------

def tree_arrays(tree):
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in leaves}


def assert_extra_simulations_change_nothing(policy, boards, num_simulations, seed):
    """Searches with N and N + 50 simulations (same key, same capacity) give the
    same action and the same tree, bit for bit. Returns the N search."""
    capacity = num_simulations + 51
    short = search(policy, boards, num_simulations, max_nodes=capacity, seed=seed)
    long = search(policy, boards, num_simulations + 50, max_nodes=capacity, seed=seed)
    assert short[1].root_proven.all(), "the premise: every root is proven within N"
    check_proven_children(boards, short[1])
    short_arrays, long_arrays = tree_arrays(short[2]), tree_arrays(long[2])
    assert short_arrays.keys() == long_arrays.keys()
    for name in short_arrays:
        a, b = short_arrays[name], long_arrays[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        if a.tobytes() != b.tobytes():
            differ = np.flatnonzero((a != b).reshape(a.shape[0], -1).any(axis=1))
            raise AssertionError(
                f"tree field {name} changed after the root was proven, in rows "
                f"{differ.tolist()[:10]} ({len(differ)} of {len(boards)}), e.g. "
                f"{[minimax.to_tictactoe(boards[r]) for r in differ[:3]]}")
    np.testing.assert_array_equal(short[0], long[0])
    return short


@pytest.mark.parametrize("policy", ["uct", "puct"])
def test_simulations_after_a_win_is_proven_change_nothing(policy):
    """Roots with a win in one: proven as soon as the winning move is tried (for
    UCT within the first e simulations, each legal move being tried once), long
    before their tree (up to 293 nodes) is exhausted at N = 60."""
    boards = [b for b in sample_positions(4520, SAMPLE_SEED + 4)
              if minimax.empties(b) == 5 and immediate_wins(b)][:24]
    assert len(boards) == 24
    short = assert_extra_simulations_change_nothing(policy, boards, 60, seed=5)
    np.testing.assert_array_equal(short[1].root_proven_value, 1.0)
    for board, action in zip(boards, short[0]):
        assert int(action) in minimax.optimal_moves(board), minimax.to_tictactoe(board)


@pytest.mark.parametrize("policy", ["uct", "puct"])
def test_simulations_after_a_full_proof_change_nothing(policy):
    """Positions with 6 empty squares and a budget sure to prove them."""
    boards = [b for b in sample_positions(4520, SAMPLE_SEED + 4) if minimax.empties(b) == 6][:24]
    budget = max(minimax.game_tree_size(b) for b in boards)
    assert_extra_simulations_change_nothing(policy, boards, budget, seed=5)


@pytest.mark.parametrize("policy", ["uct", "puct"])
def test_proven_nodes_are_never_visited_again(policy):
    """Direct check, one simulation per call (continuing the tree): once a node
    is proven its visits, value sum and proof never change, and until the root
    is proven every simulation creates exactly one node."""
    boards = [b for b in sample_positions(4520, SAMPLE_SEED + 5) if minimax.empties(b) == 5][:16]
    capacity = max(minimax.game_tree_size(b) for b in boards) + 1
    root, illegal = tictactoe.make_root([minimax.to_tictactoe(b) for b in boards])
    run = mcts_jax.uct_policy if policy == "uct" else mcts_jax.alphazero_policy
    options = {} if policy == "uct" else dict(dirichlet_fraction=0.0)
    tree = None
    previous = None
    proven_after = 0
    for step in range(capacity + 5):
        out = run(None, jax.random.key(step), root, tictactoe.recurrent_fn, 1,
                  invalid_actions=illegal, max_nodes=capacity, solver=True, tree=tree,
                  **options)
        tree = out.search_tree
        now = jax.device_get(dict(visits=tree.node_visits, sums=tree.value_sums,
                                  solved=tree.solved, solved_values=tree.solved_values,
                                  num_nodes=tree.num_nodes))
        if previous is not None:
            was = previous["solved"]
            assert (now["solved"] | ~was).all(), "a proof was withdrawn"
            for name in ("visits", "sums", "solved_values"):
                changed = was & (now[name] != previous[name])
                assert not changed.any(), (
                    f"step {step}: {name} of proven nodes changed at "
                    f"(row, node) {np.argwhere(changed)[:5].tolist()}")
            root_was_proven = was[:, 0]
            grew = now["num_nodes"] - previous["num_nodes"]
            np.testing.assert_array_equal(grew, np.where(root_was_proven, 0, 1))
        previous = now
        if now["solved"][:, 0].all():
            proven_after += 1
            if proven_after > 5:
                break
    assert previous["solved"][:, 0].all(), "every root should be proven within the budget"
    summary = jax.device_get(tree.summary())
    check_proven_children(boards, summary)


def test_summary_value_of_a_proven_root_is_its_proven_value():
    """`summary().value` of a root the solver proved is its exact value for
    the root mover (1 won, -1 lost), not the mean of the simulations that
    found the proof (about 0.06 on these won positions before the fix); an
    unproven root keeps the mean backed-up value."""
    positions = minimax.all_reachable_positions()
    won = [b for b in positions if minimax.value(b) == 1][:3]
    lost = [b for b in positions if minimax.value(b) == -1][:3]
    boards = won + lost
    _, summary, tree = search("alphazero", boards, 400, max_nodes=401)
    assert summary.root_proven.all()
    np.testing.assert_array_equal(summary.value, [minimax.value(b) for b in boards])
    # Too few simulations to prove the empty board: the mean stays.
    _, summary, tree = search("alphazero", [minimax.EMPTY_BOARD], 20, max_nodes=21)
    assert not summary.root_proven[0]
    root = mcts_jax.tree.ROOT_INDEX
    mean = tree.value_sums[0, root] / tree.node_visits[0, root]
    assert summary.value[0] == pytest.approx(mean)


def test_a_tree_fills_fewer_slots_than_simulations_where_the_game_is_small():
    """What `Tree.num_nodes` and the README say: a simulation that ends on a
    terminal node already in the tree creates no node, so a search of a
    position with few moves left fills at most one slot per position below
    the root (plus the root), far fewer than num_simulations + 1; with
    `node_per_simulation` (mctx's numbering) the same search leaves the
    other slots empty and num_nodes is num_simulations + 1."""
    boards = [b for b in minimax.all_reachable_positions()
              if len(minimax.legal_moves(b)) == 3][:4]
    root, illegal = tictactoe.make_root([minimax.to_tictactoe(b) for b in boards])
    below = np.array([minimax.game_tree_size(b) for b in boards])
    used = {}
    for numbering in (False, True):
        out = mcts_jax.alphazero_policy(None, jax.random.key(0), root, tictactoe.recurrent_fn,
                                        32, invalid_actions=illegal, dirichlet_fraction=0.0,
                                        node_per_simulation=numbering)
        tree = jax.device_get(out.search_tree)
        used[numbering] = (tree.node_visits > 0).sum(axis=1)
        assert (used[numbering] <= below + 1).all() and (used[numbering] < 33).all()
        np.testing.assert_array_equal(tree.num_nodes, 33 if numbering else used[numbering])
    np.testing.assert_array_equal(used[False], used[True])
