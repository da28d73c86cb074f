"""A user's own selection rule or Q transform that goes wrong (issue 33):
each mistake either raises a clear error when the search is traced, or is
handled so that the search stays well defined, or warns.

- scores on illegal slots are ignored (never descended);
- NaN scores are never chosen; a node whose legal slots are all NaN is still
  descended, into a legal slot (the highest prior);
- all -inf is a dead end (documented); +inf is "choose this";
- a wrong shape or dtype (of a rule, or of a Q transform inside our rules)
  raises, naming the function, the expected [B, K] and what came back;
- a rule made anew on every call warns once (`mcts_jax.RecompileWarning`).

Tiny shapes: B = 2 roots, A = 4 actions, a few simulations.
"""

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from problems.synthetic import HashedProblem

B, A, SIMS = 2, 4, 8
PROBLEM = HashedProblem(num_actions=A)
# Row 0: action 0 (the highest prior) and 3 illegal; row 1: action 1 illegal.
INVALID = jnp.array([[True, False, False, True], [False, True, False, False]])
ROOT = mcts_jax.RootFnOutput(
    prior_logits=jnp.array([[3.0, 0.0, 1.0, 0.5], [0.0, 2.0, 0.5, 1.0]]),
    value=jnp.zeros(B),
    embedding=jnp.array([11, 23], jnp.uint32))
# The legal action with the highest prior in each row.
BEST_LEGAL_PRIOR = np.array([2, 3])


def run(root_rule, interior_rule=None, **options):
    return mcts_jax.search(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, SIMS,
                           root_rule=root_rule, interior_rule=interior_rule,
                           invalid_actions=INVALID, **options)


def root_visits(tree):
    return np.asarray(tree.summary().visit_counts)


def assert_only_legal_visited(visits):
    assert np.all(visits[np.asarray(INVALID)] == 0), visits
    # Every simulation went down into a root child: no dead end at the root.
    np.testing.assert_array_equal(visits.sum(-1), SIMS)


# ---- scores on illegal slots ------------------------------------------------------------

def puct_highest_on_illegal(tree, node, stats):
    """PUCT on the legal slots, but the illegal ones score highest."""
    scores = mcts_jax.puct_scores(tree, node, stats)
    return jnp.where(stats.legal, scores, 1e9)


def test_scores_on_illegal_slots_are_ignored():
    tree = run(puct_highest_on_illegal)
    assert_only_legal_visited(root_visits(tree))
    # The illegal slots' scores play no part at all: the very same tree as PUCT's.
    reference = run(mcts_jax.puct_scores)
    np.testing.assert_array_equal(tree.node_visits, reference.node_visits)
    np.testing.assert_array_equal(tree.children, reference.children)


# ---- NaN, -inf, +inf ---------------------------------------------------------------------

def puct_nan_at_action_2(tree, node, stats):
    scores = mcts_jax.puct_scores(tree, node, stats)
    return jnp.where(stats.actions == 2, jnp.nan, scores)


def test_nan_slots_are_never_visited_and_the_rest_is_searched():
    tree = run(puct_nan_at_action_2)
    visits = root_visits(tree)
    assert_only_legal_visited(visits)
    assert np.all(visits[:, 2] == 0), visits
    # Below the root too: no node was ever created through action 2.
    assert np.all(np.asarray(tree.children)[:, :, 2] == mcts_jax.UNEXPANDED)
    assert np.asarray(tree.num_nodes).min() > 2


def all_nan(tree, node, stats):
    return jnp.full(stats.priors.shape, jnp.nan)


def test_a_node_scored_all_nan_still_descends_into_a_legal_slot():
    tree = run(all_nan)
    visits = root_visits(tree)
    assert_only_legal_visited(visits)
    # The fallback: the legal slot with the highest prior (row 0's highest
    # prior, action 0, is illegal).
    np.testing.assert_array_equal(visits[np.arange(B), BEST_LEGAL_PRIOR], SIMS)
    out = mcts_jax.rule_policy(all_nan)(None, jax.random.key(1), ROOT, PROBLEM.recurrent_fn,
                                        SIMS, invalid_actions=INVALID)
    np.testing.assert_array_equal(out.action, BEST_LEGAL_PRIOR)


def nan_or_minus_inf(tree, node, stats):
    """-inf on action 3, NaN on the others: the NaN slots are the fallback."""
    return jnp.where(stats.actions == 3, -jnp.inf, jnp.nan)


def test_the_fallback_keeps_the_slots_a_rule_scored_minus_inf_closed():
    visits = root_visits(run(nan_or_minus_inf))
    assert_only_legal_visited(visits)
    assert np.all(visits[:, 3] == 0)
    # Row 1's best legal prior is action 3 (-inf): its next best, action 2.
    np.testing.assert_array_equal(visits[np.arange(B), [2, 2]], SIMS)


def all_minus_inf(tree, node, stats):
    return jnp.full(stats.priors.shape, -jnp.inf)


def test_all_minus_inf_is_a_dead_end():
    """Documented: a node whose legal slots all score -inf is not descended;
    it is re-evaluated (the root counts the visit, no child does)."""
    tree = run(all_minus_inf)
    assert root_visits(tree).sum() == 0
    np.testing.assert_array_equal(tree.node_visits[:, 0], SIMS + 1)


def plus_inf_on_action_2(tree, node, stats):
    scores = mcts_jax.puct_scores(tree, node, stats)
    return jnp.where(stats.actions == 2, jnp.inf, scores)


def test_plus_inf_on_a_legal_slot_is_chosen():
    visits = root_visits(run(plus_inf_on_action_2))
    np.testing.assert_array_equal(visits[:, 2], SIMS)


# ---- wrong shape or dtype: a clear error when traced ------------------------------------

def half_the_slots(tree, node, stats):
    return mcts_jax.puct_scores(tree, node, stats)[:, :2]


def test_a_rule_of_the_wrong_shape_raises_naming_it():
    with pytest.raises(ValueError) as caught:
        run(half_the_slots)
    message = str(caught.value)
    assert "root_rule" in message and "half_the_slots" in message
    assert "[B, K] = [2, 4]" in message and "shape (2, 2)" in message and "float32" in message
    # Below the root, with its constants bound: the partial is named with them.
    with pytest.raises(ValueError, match=r"interior_rule is functools\.partial\(half_the_"
                                         r"slots_with, c=2\.0\).*\[B, K\] = \[2, 4\]"):
        run(mcts_jax.puct_scores, interior_rule=functools.partial(half_the_slots_with, c=2.0))


def half_the_slots_with(tree, node, stats, *, c):
    return c * mcts_jax.puct_scores(tree, node, stats)[:, :2]


def test_a_lambda_of_the_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"<lambda>.*shape \(2,\)"):
        run(lambda tree, node, stats: stats.priors[:, 0])


def bool_scores(tree, node, stats):
    return stats.legal


def int_scores(tree, node, stats):
    return stats.visits


def test_bool_and_integer_scores_are_refused():
    with pytest.raises(TypeError, match=r"dtype bool.*root_rule is bool_scores.*"
                                        r"jnp\.where\(mask, scores, -jnp\.inf\)"):
        run(bool_scores)
    with pytest.raises(TypeError, match=r"dtype int32.*int_scores.*astype\(jnp\.float32\)"):
        run(int_scores)


def one_value_per_row(tree, node, stats):
    return stats.node_value


def test_a_qtransform_of_the_wrong_shape_raises_naming_it():
    expected = r" is one_value_per_row: got shape \(2,\), dtype float32; expected float " \
        r"\[B, K\] = \[2, 4\]"
    with pytest.raises(ValueError, match=r"qtransform of puct_scores.*" + expected):
        mcts_jax.alphazero_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, SIMS,
                                  invalid_actions=INVALID, qtransform=one_value_per_row)
    with pytest.raises(ValueError, match=r"qtransform of halving_scores.*" + expected):
        mcts_jax.gumbel_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, SIMS,
                               invalid_actions=INVALID, qtransform=one_value_per_row)


# ---- a rule made anew on every call --------------------------------------------------------

def recompile_warnings(calls):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls()
    return [str(w.message) for w in caught if issubclass(w.category, mcts_jax.RecompileWarning)]


def test_a_lambda_made_on_every_call_warns_once():
    def three_searches():
        for _ in range(3):
            run(lambda tree, node, stats: mcts_jax.puct_scores(tree, node, stats))

    messages = recompile_warnings(three_searches)
    assert len(messages) == 1, messages
    assert "<lambda>" in messages[0] and "new function object" in messages[0]
    assert "module level" in messages[0] and "functools.partial" in messages[0]


def test_equal_or_different_constants_do_not_warn():
    def searches():
        for c in (1.0, 1.0, 2.0):
            run(functools.partial(mcts_jax.puct_scores, pb_c_init=c))
        for c in (1.0, 2.0):  # closures over different values: different rules
            run(lambda tree, node, stats, c=c: mcts_jax.puct_scores(tree, node, stats,
                                                                     pb_c_init=c))

    assert recompile_warnings(searches) == []


def test_a_qtransform_made_on_every_call_warns_once():
    def searches():
        for _ in range(3):
            mcts_jax.alphazero_policy(
                None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, SIMS,
                invalid_actions=INVALID,
                qtransform=lambda tree, node, stats: jnp.zeros(stats.priors.shape))

    messages = recompile_warnings(searches)
    assert len(messages) == 1 and "<lambda>" in messages[0], messages


def biased_rule(tree, node, stats, *, bias):
    return mcts_jax.puct_scores(tree, node, stats) + jnp.asarray(bias)[None, :]


def test_an_array_bound_in_a_rule_warns_once():
    def searches():
        for _ in range(3):
            run(functools.partial(biased_rule, bias=np.zeros(A, np.float32)))

    messages = recompile_warnings(searches)
    assert len(messages) == 1, messages
    assert "biased_rule" in messages[0] and "cannot be hashed (ndarray)" in messages[0]
