"""KataGo's forced playouts and policy target pruning (`AlphaZeroPolicy(
forced_playouts=k)`): every legal root child gets about sqrt(k P N) visits,
and the training target takes them back where PUCT would not have spent
them. The pruning is checked against a one-visit-at-a-time reference in
numpy on searched trees; the forcing by the visits it guarantees."""

import jax
import numpy as np
import pytest

import envs
import mcts_jax
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax.qtransforms import qtransform_by_parent_and_siblings
from problems.synthetic import HashedProblem, random_root_codes
from training import config as config_lib
from training import policies

PROBLEM = HashedProblem(num_actions=7, illegal_eighths=2, terminal_sixteenths=2)
ROOT, INVALID = PROBLEM.root(random_root_codes(11, 24))
K = 2.0
SIMULATIONS = 64
PB_C_INIT, PB_C_BASE = 1.25, 19652.0


def _search(forced_playouts):
    policy = mcts_jax.AlphaZeroPolicy.make(forced_playouts=forced_playouts,
                                           final_action="most_visited", temperature=0.0,
                                           dirichlet_fraction=0.25)
    return policy(None, jax.random.key(5), ROOT, PROBLEM.recurrent_fn, SIMULATIONS,
                  invalid_actions=INVALID)


@pytest.fixture(scope="module")
def searches():
    return {k: _search(k) for k in (0.0, K)}


def _root(tree):
    root = np.zeros((tree.batch_size,), np.int32)
    stats = tree_lib.children_stats(tree, root)
    return stats, np.asarray(qtransform_by_parent_and_siblings(tree, root, stats))


def _owed(stats, total):
    return np.sqrt(K * np.asarray(stats.priors) * total)


def test_every_legal_root_child_gets_its_forced_visits(searches):
    lagging = {}
    for k, out in searches.items():
        stats, _ = _root(out.search_tree)
        visits, legal = np.asarray(stats.visits), np.asarray(stats.legal)
        total = visits.sum(-1, keepdims=True)
        # Debts are paid one child per simulation; with at most 7 children a
        # debt waits at most 6 simulations, and sqrt(k P N) grows by < 1 each.
        owed_late = _owed(stats, np.maximum(total - legal.sum(-1, keepdims=True), 0))
        lagging[k] = legal & (visits + 1 < owed_late)
    assert not lagging[K].any()
    assert lagging[0.0].any()  # plain PUCT leaves some low-prior child short


def _pruned_reference(stats, qvalues):
    """Policy target pruning one visit at a time (KataGo's description)."""
    visits = np.asarray(stats.visits).astype(np.float64)
    priors, legal = np.asarray(stats.priors), np.asarray(stats.legal)
    parent = np.asarray(stats.node_visits).astype(np.float64)
    pruned = np.zeros_like(visits)
    for row in range(visits.shape[0]):
        c = PB_C_INIT + np.log((parent[row] + PB_C_BASE + 1.0) / PB_C_BASE)

        def score(slot, n):
            return qvalues[row, slot] + c * np.sqrt(parent[row]) * priors[row, slot] / (1.0 + n)

        best = int(np.argmax(np.where(legal[row], visits[row], -1.0)))
        allowance = np.floor(np.sqrt(K * priors[row] * visits[row].sum()))
        for slot in np.flatnonzero(legal[row]):
            n = visits[row, slot]
            if slot != best:
                taken = 0
                while taken < allowance[slot] and n >= 1 and \
                        score(slot, n - 1) <= score(best, visits[row, best]):
                    n, taken = n - 1, taken + 1
                n = 0.0 if n <= 1 else n
            pruned[row, slot] = n
    return pruned


def test_policy_target_pruning_matches_a_visit_by_visit_reference(searches):
    out = searches[K]
    stats, qvalues = _root(out.search_tree)
    expected = _pruned_reference(stats, qvalues)
    got = selection.prune_forced_visits(
        out.search_tree, np.zeros((out.search_tree.batch_size,), np.int32), stats,
        forced_playouts=K, pb_c_init=PB_C_INIT, pb_c_base=PB_C_BASE,
        qtransform=qtransform_by_parent_and_siblings)
    np.testing.assert_array_equal(np.asarray(got), expected)
    np.testing.assert_allclose(np.asarray(out.action_weights),
                               expected / expected.sum(-1, keepdims=True), rtol=1e-6)
    visits = np.asarray(stats.visits)
    assert (expected < visits).any()  # some forced visits were taken back
    # The move is still the most visited one; its share of the target only grows.
    np.testing.assert_array_equal(np.asarray(out.action), visits.argmax(-1))
    rows = np.arange(visits.shape[0])
    share = visits[rows, visits.argmax(-1)] / visits.sum(-1)
    assert (np.asarray(out.action_weights)[rows, visits.argmax(-1)] >= share - 1e-6).all()


def test_forced_playouts_is_a_checked_static_setting():
    with pytest.raises(ValueError, match="forced_playouts"):
        mcts_jax.AlphaZeroPolicy(forced_playouts=-1.0)
    with pytest.raises(TypeError, match="forced_playouts"):
        mcts_jax.AlphaZeroPolicy(forced_playouts="2")
    assert mcts_jax.AlphaZeroPolicy(forced_playouts=2) != mcts_jax.AlphaZeroPolicy()


def test_training_uses_forced_playouts_in_self_play_only():
    config = config_lib.resolve(dict(game="tic_tac_toe", policy="alphazero",
                                     forced_playouts=2.0))
    config_lib.validate(config)
    assert config_lib.self_play_policy(config.records.search, envs.make("tic_tac_toe")).forced_playouts == 2.0
    evaluation = policies.policy_from_name("alphazero", num_actions=9, root_noise=False,
                                           forced_playouts=2.0)
    assert evaluation.forced_playouts == 0.0
    with pytest.raises(ValueError, match="--forced-playouts"):
        config_lib.validate(config_lib.resolve(dict(game="tic_tac_toe", policy="gumbel",
                                                    forced_playouts=2.0)))
