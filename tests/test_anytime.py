"""Anytime search: stop rules (mcts_jax/stopping.py) and chunked searches
for a time or simulation budget (mcts_jax/anytime.py).

The claims checked: a row stopped by `VisitGap` plays the full search's
move; its tree is the tree of a search of the simulations it spent (a stop
truncates, it changes nothing before); the loop ends when every row has
stopped (fewer recurrent_fn calls); a user's stop rule runs through a
policy, sharding and self-play; the chunked loop compiles once and its
answer after every chunk is the continued tree's; bad input is refused by
name."""

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from mcts_jax import anytime, plugin, sharding, stopping, tree_search
from problems.synthetic import HashedProblem, random_root_codes
from tiny_self_play import play_checked_moves

BATCH = 16
SIMULATIONS = 96
PROBLEM = HashedProblem(num_actions=4, illegal_eighths=1, terminal_sixteenths=3)
ROOT, INVALID = PROBLEM.root(random_root_codes(3, BATCH))
POLICY = mcts_jax.AlphaZeroPolicy.make(dirichlet_fraction=0.0, temperature=0.0)
STOPPING = POLICY.replace(plugins=(stopping.VisitGap(),))


def search(policy, num_simulations=SIMULATIONS, key=0, **kwargs):
    return policy(None, jax.random.key(key), ROOT, PROBLEM.recurrent_fn, num_simulations,
                  invalid_actions=INVALID, **kwargs)


@functools.lru_cache(maxsize=None)
def full_and_stopped():
    return search(POLICY), search(STOPPING)


def spent_per_row(tree):
    return np.asarray(tree.node_visits)[:, 0] - 1  # a fresh root starts with one visit


def test_a_row_stopped_by_the_visit_gap_plays_the_full_searchs_move():
    full, stopped = full_and_stopped()
    np.testing.assert_array_equal(stopped.action, full.action)
    spent = spent_per_row(stopped.search_tree)
    assert np.all(spent <= SIMULATIONS)
    assert np.sum(spent < SIMULATIONS) >= BATCH // 4, spent  # the rule does stop rows
    # Where a row stopped, its leader's lead exceeded the simulations left.
    summary = stopped.search_tree.summary()
    visits = np.where(np.asarray(INVALID), -1, np.asarray(summary.visit_counts))
    top = np.sort(visits, axis=-1)[:, ::-1]
    stopped_rows = spent < SIMULATIONS
    assert np.all((top[:, 0] - top[:, 1] > SIMULATIONS - spent)[stopped_rows])
    # The most visited action of the stopped tree is the full tree's.
    np.testing.assert_array_equal(np.argmax(visits, -1)[stopped_rows],
                                  np.asarray(full.action)[stopped_rows])


def test_a_row_stopped_before_its_first_simulation_answers_from_its_priors():
    """VisitGap ends a row with one legal move before any simulation: its
    move and its action weights (one-hot) are the full search's. A user's
    rule that stops every row at once leaves each root unvisited: it plays
    its legal action of highest prior, with the masked priors as weights."""
    num_actions = 4
    logits = jnp.array([[0.0, 0.0, 1.0, 2.0], [0.5, 0.0, 3.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    invalid = jnp.array([[True, True, False, False], [True, False, True, True],
                         [False, False, False, False]])
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=jnp.zeros(3),
                                 embedding=jnp.zeros(3))

    def recurrent_fn(params, key, action, embedding):
        del params, action
        return mcts_jax.RecurrentFnOutput(
            reward=jnp.zeros(3), discount=-jnp.ones(3), prior_logits=jnp.zeros((3, num_actions)),
            value=jax.random.uniform(key, (3,), minval=-1.0)), embedding

    def run(policy):
        return policy(None, jax.random.key(0), root, recurrent_fn, 12, invalid_actions=invalid)

    full, gap = run(POLICY), run(STOPPING)
    assert spent_per_row(gap.search_tree)[1] == 0  # one legal move: nothing to search
    np.testing.assert_array_equal(gap.action, full.action)
    np.testing.assert_array_equal(gap.action_weights[1], full.action_weights[1])
    np.testing.assert_array_equal(gap.action_weights[1], [0.0, 1.0, 0.0, 0.0])
    at_once = run(POLICY.replace(plugins=(stopping.StopWhen(
        lambda tree, budget: jnp.ones(tree.node_visits.shape[:1], bool)),)))
    assert np.all(spent_per_row(at_once.search_tree) == 0)
    np.testing.assert_array_equal(at_once.action, [3, 1, 0])
    legal_priors = np.where(np.asarray(invalid), 0.0, np.exp(np.asarray(logits)))
    np.testing.assert_allclose(at_once.action_weights,
                               legal_priors / legal_priors.sum(-1, keepdims=True), rtol=1e-5)


def test_a_stop_truncates_the_search_and_changes_nothing_before():
    _, stopped = full_and_stopped()
    spent = spent_per_row(stopped.search_tree)
    row = int(np.argmin(spent))
    shorter = search(POLICY, num_simulations=int(spent[row]))
    nodes = shorter.search_tree.max_nodes  # the shorter search's capacity: spent + 1
    for name in ("node_visits", "value_sums", "children", "parents", "raw_values"):
        np.testing.assert_array_equal(
            np.asarray(getattr(stopped.search_tree, name))[row, :nodes],
            np.asarray(getattr(shorter.search_tree, name))[row], err_msg=name)


def test_several_paths_per_step_stop_with_the_same_answer():
    full = search(POLICY.replace(simulations_per_step=4))
    stopped = search(STOPPING.replace(simulations_per_step=4))
    np.testing.assert_array_equal(stopped.action, full.action)
    assert np.any(spent_per_row(stopped.search_tree) < SIMULATIONS)


def counting_recurrent_fn(counter):
    def recurrent_fn(params, key, action, embedding):
        jax.debug.callback(lambda: counter.append(1))
        return PROBLEM.recurrent_fn(params, key, action, embedding)
    return recurrent_fn


def test_the_loop_ends_when_every_row_has_stopped():
    calls = []
    stop_after = stopping.StopWhen(functools.partial(
        lambda tree, budget, n: budget.spent >= n, n=5))
    out = POLICY(None, jax.random.key(0), ROOT, counting_recurrent_fn(calls), 40,
                 invalid_actions=INVALID, plugins=(stop_after,))
    jax.block_until_ready(out.action)
    assert len(calls) == 5, len(calls)  # not 40: the loop ended with the last row
    np.testing.assert_array_equal(spent_per_row(out.search_tree), 5)


def test_a_users_stop_rule_runs_through_sharding():
    rule = stopping.StopWhen(functools.partial(
        lambda tree, budget, gap: stopping.root_visit_gap(tree)[0] > gap, gap=6))
    policy = POLICY.replace(plugins=(rule,), simulations_per_step=2)
    one = search(policy, 48)
    split = sharding.search(sharding.make_mesh(), policy, None, jax.random.key(0), ROOT,
                            PROBLEM.recurrent_fn, 48, invalid_actions=INVALID, mode="exact")
    np.testing.assert_array_equal(split.search_tree.node_visits, one.search_tree.node_visits)
    np.testing.assert_array_equal(split.action, one.action)
    gap, _ = stopping.root_visit_gap(one.search_tree)
    spent = spent_per_row(one.search_tree)
    assert np.all((np.asarray(gap) > 6) | (spent == 48))
    assert np.any(spent < 48)


def test_a_stop_rule_in_self_play():
    policy = mcts_jax.AlphaZeroPolicy.make(plugins=(stopping.LeaderHeld(4),), max_nodes=17)
    play_checked_moves(policy, num_simulations=16, num_games=4, moves=3, reuse_tree=True)


def test_leader_held_stops_once_the_leader_has_held():
    out = search(POLICY.replace(plugins=(stopping.LeaderHeld(10),)))
    record = out.search_tree.plugin_records[0]
    spent = spent_per_row(out.search_tree)
    visits = np.asarray(out.search_tree.node_visits)[:, 0]
    held = visits - np.asarray(record["since"])[:, 0]
    assert np.all((held >= 10) | (spent == SIMULATIONS))
    assert np.any(spent < SIMULATIONS)
    _, leader = stopping.root_visit_gap(out.search_tree)
    np.testing.assert_array_equal(np.asarray(record["leader"])[:, 0], leader)


def test_chunks_compile_once_and_answer_after_every_chunk():
    before = tree_search._compiled._cache_size()
    seen = []
    for progress in anytime.search_in_chunks(POLICY, None, jax.random.key(5), ROOT,
                                             PROBLEM.recurrent_fn, chunk_simulations=8,
                                             max_simulations=40, invalid_actions=INVALID,
                                             stop_when_decided=False):
        tree = progress.output.search_tree
        assert progress.simulations == 8 * progress.chunks
        np.testing.assert_array_equal(np.asarray(tree.node_visits)[:, 0],
                                      progress.simulations + 1)
        seen.append(np.asarray(progress.output.action))
        line = anytime.best_line(tree, 3)
        assert line.shape == (BATCH, 3)
        summary = tree.summary()
        np.testing.assert_array_equal(line[:, 0], np.argmax(
            np.where(np.asarray(INVALID), -1, np.asarray(summary.visit_counts)), -1))
    assert len(seen) == 5
    assert tree_search._compiled._cache_size() - before == 1  # one program for every chunk
    assert tree.max_nodes == 41


def reference_line(tree, row, node, length):
    """The principal variation by hand: below `node`, the proven win for the
    player to move, else the most visited child (lower slot on ties)."""
    children = np.asarray(tree.children)[row]
    visits = np.asarray(tree.node_visits)[row]
    solved, solved_values = np.asarray(tree.solved)[row], np.asarray(tree.solved_values)[row]
    rewards, discounts = np.asarray(tree.rewards)[row], np.asarray(tree.discounts)[row]
    line = []
    while len(line) < length:
        kids = children[node]
        best, best_key = None, (False, 0)
        for slot, kid in enumerate(kids):
            if kid < 0 or visits[kid] == 0:
                continue
            won = bool(solved[kid]) and rewards[kid] + discounts[kid] * solved_values[kid] > 0
            if best is None or (won, visits[kid]) > best_key:
                best, best_key = slot, (won, visits[kid])
        if best is None:
            break
        line.append(best)
        node = kids[best]
    return line + [-1] * (length - len(line))


@pytest.mark.parametrize("solver", [False, True])
def test_best_line_is_the_hand_walked_principal_variation(solver):
    tree = search(POLICY.replace(solver=solver), 48).search_tree
    lines = anytime.best_line(tree, 4)
    below = anytime.best_line(tree, 3, first_actions=np.tile(np.arange(4), (BATCH, 1)))
    children = np.asarray(tree.children)
    assert lines.shape == (BATCH, 4) and below.shape == (BATCH, 4, 3)
    for row in range(BATCH):
        assert lines[row].tolist() == reference_line(tree, row, 0, 4)
        for action in range(4):
            child = children[row, 0, action]
            expected = ([action] + reference_line(tree, row, child, 2)
                        if child >= 0 and np.asarray(tree.node_visits)[row, child] > 0
                        else [-1, -1, -1])
            assert below[row, action].tolist() == expected, (row, action)
    if solver:  # the proven win comes first where it is not the most visited move
        summary = tree.summary()
        won = np.asarray(summary.proven) & (np.asarray(summary.proven_qvalues) > 0)
        most = np.argmax(np.asarray(summary.visit_counts), axis=1)
        assert any(won[r].any() and not won[r, most[r]] for r in range(BATCH))
    with pytest.raises(ValueError, match=r"first_actions must be \[B, M\]"):
        anytime.best_line(tree, 3, first_actions=np.arange(4))


def test_chunks_end_when_every_row_is_decided():
    progress = list(anytime.search_in_chunks(POLICY, None, jax.random.key(5), ROOT,
                                             PROBLEM.recurrent_fn, chunk_simulations=8,
                                             max_simulations=400, invalid_actions=INVALID))
    last = progress[-1]
    assert last.decided.all() and last.simulations < 400
    assert not progress[-2].decided.all()


def test_search_for_a_deadline_returns_the_last_answer(monkeypatch):
    # A clock that moves only when a chunk ends (one second per chunk): the
    # deadline of 2.5 s passes in chunk 3 whatever the machine's speed or
    # whether the chunk was compiled by an earlier test.
    now = [0.0]
    monkeypatch.setattr(anytime, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    seen = []

    def tick(progress):
        seen.append(progress)
        now[0] += 1.0

    last = anytime.search_for(POLICY, None, jax.random.key(5), ROOT, PROBLEM.recurrent_fn,
                              seconds=2.5, chunk_simulations=2, max_nodes=41,
                              invalid_actions=INVALID, on_chunk=tick)
    assert seen[-1] is last and [p.chunks for p in seen] == [1, 2, 3]
    assert last.simulations == 6


@pytest.mark.parametrize("call, error, message", [
    (lambda: search(mcts_jax.GumbelPolicy.make(plugins=(stopping.VisitGap(),)), 8),
     ValueError, "VisitGap stops when the most visited"),
    (lambda: search(STOPPING.replace(solver=True), 8), ValueError, "VisitGap with solver"),
    (lambda: stopping.VisitGap(margin=0), ValueError, "margin must be a number > 0"),
    (lambda: stopping.LeaderHeld(0), ValueError, "visits must be an int >= 1"),
    (lambda: search(POLICY.replace(plugins=(stopping.StopWhen(
        lambda tree, budget: budget.spent),)), 8), ValueError, r"\[B\] = \(16,\) bool"),
    (lambda: next(anytime.search_in_chunks(POLICY, None, jax.random.key(0), ROOT,
                                           PROBLEM.recurrent_fn, chunk_simulations=0,
                                           max_simulations=8)),
     ValueError, "chunk_simulations must be an int >= 1"),
    (lambda: next(anytime.search_in_chunks(POLICY, None, jax.random.key(0), ROOT,
                                           PROBLEM.recurrent_fn, chunk_simulations=8)),
     ValueError, "max_nodes: give the tree's capacity"),
    (lambda: anytime.search_for(POLICY, None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn,
                                seconds=0, chunk_simulations=8, max_nodes=9),
     ValueError, "seconds must be a number > 0"),
])
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_budget_is_what_the_rows_spent():
    budget = plugin.Budget(spent=jnp.asarray([0, 3]), total=jnp.asarray(5))
    np.testing.assert_array_equal(budget.left, [5, 2])
    assert plugin.may_stop_rows((stopping.VisitGap(),))
    assert not plugin.may_stop_rows(())
