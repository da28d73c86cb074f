"""Gumbel MuZero policy: a hand-computed improved policy, finding wins with
tiny budgets, sequential halving's visit pattern, and reuse."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
import tictactoe
from mcts_jax import selection
from problems.synthetic import HashedProblem, random_root_codes


def test_improved_policy_by_hand():
    # Root priors P = [0.5, 0.3, 0.2], root value 0.1; children values (for
    # the opponent) [0.2, -0.4, 0.6] -> Q = [-0.2, 0.4, -0.6] for the root.
    # No noise, 2 considered actions, 2 simulations: a0 then a1 get one visit.
    # Mixed value for the unvisited a2: (0.1 + 2 * (0.5*-0.2 + 0.3*0.4) / 0.8) / 3
    # = 0.05. Completed Q [-0.2, 0.4, 0.05] -> min-max [0, 1, 0.41667], times
    # (50 + 1) * 0.1 = 5.1. Improved policy softmax(log P + that); the action
    # is the better of the two survivors by log P + sigma(Q): a1.
    values = jnp.asarray([0.2, -0.4, 0.6])

    def recurrent_fn(params, key, action, embedding):
        return mcts_jax.RecurrentFnOutput(
            reward=jnp.zeros(1), discount=-jnp.ones(1), prior_logits=jnp.zeros((1, 3)),
            value=values[action]), embedding

    root = mcts_jax.RootFnOutput(prior_logits=jnp.log(jnp.asarray([[0.5, 0.3, 0.2]])),
                                 value=jnp.asarray([0.1]), embedding=jnp.zeros(1))
    out = mcts_jax.gumbel_policy(None, jax.random.key(0), root, recurrent_fn, 2,
                                 max_num_considered_actions=2, gumbel_scale=0.0)
    np.testing.assert_array_equal(out.search_tree.summary().visit_counts[0], [1, 1, 0])
    sigma_q = 5.1 * np.array([0.0, 1.0, (0.05 + 0.2) / 0.6])
    logits = np.log([0.5, 0.3, 0.2]) + sigma_q
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(out.action_weights[0], expected, rtol=1e-5)
    assert int(out.action[0]) == 1


def test_halving_schedule_properties():
    for considered, simulations in itertools.product([1, 2, 3, 5, 16], [2, 7, 16, 50]):
        schedule = selection.halving_schedule(considered, simulations)
        assert len(schedule) == simulations
        if considered > 1:
            # the first `considered` simulations visit each considered action once
            assert schedule[:min(considered, simulations)] == tuple(
                [0] * min(considered, simulations))
        # The schedule is realisable: at every step some action (the best
        # survivor, here the lowest index) has exactly the target visit count.
        counts = [0] * max(considered, 1)
        for target in schedule:
            candidates = [i for i, c in enumerate(counts) if c == target]
            assert candidates, (considered, simulations, schedule)
            counts[candidates[0]] += 1
        if considered >= 3 and simulations >= 2 * considered:
            # halving: the two survivors end with the most visits
            assert sorted(counts)[-2] > sorted(counts)[0]


def positions_with_a_win(max_empty):
    """Tic-tac-toe positions (X or O to move) with an immediate win and at
    most `max_empty` empty squares, from a fixed seed."""
    rng = np.random.default_rng(7)
    found = []
    while len(found) < 12:
        board = ["."] * 9
        moves = rng.permutation(9)[:9 - int(rng.integers(2, max_empty + 1))]
        for i, cell in enumerate(moves):
            board[cell] = "X" if i % 2 == 0 else "O"
        picture = "".join(board)
        b, player = tictactoe.parse(picture)
        mark = player

        def wins(cells):
            return any(all(cells[i] == mark for i in line) for line in tictactoe.LINES)

        def over(cells):
            return any(all(cells[i] == m for i in line) for m in (1, 2)
                       for line in tictactoe.LINES)

        if over(b):
            continue
        winning = [c for c in range(9) if b[c] == 0 and wins(np.where(np.arange(9) == c,
                                                                       mark, b))]
        if winning:
            found.append((picture, winning))
    return found


@pytest.mark.parametrize("num_simulations", [2, 4, 8, 16])
def test_finds_the_win_with_few_simulations(num_simulations):
    """With a budget that covers the legal moves once, the win is chosen:
    always without Gumbel noise (evaluation play), and almost always with
    noise of scale 1 (a Gumbel sample can, rarely, outweigh sigma(Q))."""
    empty = min(num_simulations, 5)  # a win in one needs at least 4 marks down
    cases = positions_with_a_win(empty)
    root, illegal = tictactoe.make_root([p for p, _ in cases])
    found = []
    for scale in (0.0, 1.0):
        for seed in range(4 if scale else 1):
            out = mcts_jax.gumbel_policy(None, jax.random.key(seed), root,
                                         tictactoe.recurrent_fn, num_simulations,
                                         invalid_actions=illegal, gumbel_scale=scale)
            hits = [int(a) in winning for (_, winning), a in zip(cases, np.asarray(out.action))]
            if scale == 0.0:
                assert all(hits), [c for c, hit in zip(cases, hits) if not hit]
            found.extend(hits)
    assert np.mean(found) >= 0.95


def test_continues_a_reused_tree():
    problem = HashedProblem(num_actions=6)
    codes = random_root_codes(40, 8)
    root, _ = problem.root(codes)
    first = mcts_jax.gumbel_policy(None, jax.random.key(0), root, problem.recurrent_fn, 16,
                                   max_nodes=64)
    kept = mcts_jax.get_subtree(first.search_tree, first.action)
    child_root, _ = problem.root(np.asarray(kept.embeddings[:, 0]))
    second = mcts_jax.gumbel_policy(None, jax.random.key(1), child_root, problem.recurrent_fn,
                                    16, tree=kept)
    np.testing.assert_array_equal(second.search_tree.node_visits[:, 0],
                                  np.maximum(np.asarray(kept.node_visits[:, 0]), 1) + 16)
    # the chosen action is among those visited most in this search
    gained = (np.asarray(second.search_tree.summary().visit_counts)
              - np.asarray(kept.summary().visit_counts))
    chosen = gained[np.arange(8), np.asarray(second.action)]
    np.testing.assert_array_equal(chosen, gained.max(-1))
