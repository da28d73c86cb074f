"""Policy-level behaviour: determinism, batch independence, compilation reuse,
the final-action choices, root noise, value scales and argument errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from mcts_jax import tree_search
from problems.synthetic import HashedProblem, random_root_codes

PROBLEM = HashedProblem(num_actions=6, illegal_eighths=2, terminal_sixteenths=2)
SIMULATIONS = 24


def search(rule, codes, key=0, **options):
    root, illegal = PROBLEM.root(codes)
    policy = mcts_jax.uct_policy if rule == "uct" else mcts_jax.alphazero_policy
    return policy(None, jax.random.key(key), root, PROBLEM.recurrent_fn, SIMULATIONS,
                  invalid_actions=illegal, **options)


def assert_trees_equal(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_same_key_same_tree_bit_for_bit():
    codes = random_root_codes(10, 8)
    first = search("puct", codes, key=3)
    second = search("puct", codes, key=3)
    assert_trees_equal(first, second)
    other = search("puct", codes, key=4)  # Dirichlet noise differs
    assert not np.array_equal(other.search_tree.priors[:, 0], first.search_tree.priors[:, 0])


@pytest.mark.parametrize("rule", ["uct", "puct"])
def test_rows_are_independent(rule):
    codes = random_root_codes(11, 6)
    options = dict(final_action="most_visited")
    if rule == "puct":
        options["dirichlet_fraction"] = 0.0
    batched = search(rule, codes, **options)
    for row in range(len(codes)):
        single = search(rule, codes[row:row + 1], **options)
        row_tree = jax.tree.map(lambda x: x[row:row + 1], batched)
        assert_trees_equal(row_tree, single)


def test_second_call_does_not_recompile():
    codes = random_root_codes(12, 4)
    search("uct", codes)
    size = tree_search._compiled._cache_size()
    search("uct", random_root_codes(13, 4), key=9)
    assert tree_search._compiled._cache_size() == size

    root, illegal = PROBLEM.root(codes)

    @jax.jit
    def user_step(key, root, illegal):
        return mcts_jax.alphazero_policy(None, key, root, PROBLEM.recurrent_fn, 8,
                                         invalid_actions=illegal).action

    user_step(jax.random.key(0), root, illegal)
    user_step(jax.random.key(1), root, illegal)
    assert user_step._cache_size() == 1


def test_final_action_choices():
    codes = random_root_codes(14, 32)
    most = search("uct", codes, final_action="most_visited")
    summary = most.search_tree.summary()
    counts = np.asarray(summary.visit_counts)
    assert (counts[np.arange(32), np.asarray(most.action)] == counts.max(-1)).all()
    best = search("uct", codes, final_action="highest_value")
    q = np.where(counts > 0, np.asarray(summary.qvalues), -np.inf)
    np.testing.assert_allclose(q[np.arange(32), np.asarray(best.action)], q.max(-1))
    greedy = search("uct", codes, final_action="sampled", temperature=0.0)
    np.testing.assert_array_equal(greedy.action, most.action)


def test_sampled_action_follows_visit_counts_to_the_power_one_over_tau():
    codes = np.repeat(random_root_codes(15, 1), 4000)
    tau = 2.0
    out = search("uct", codes, final_action="sampled", temperature=tau)
    counts = np.asarray(out.search_tree.summary().visit_counts[0], np.float64)
    expected = counts ** (1 / tau) / np.sum(counts ** (1 / tau))
    frequencies = np.bincount(np.asarray(out.action), minlength=counts.size) / len(codes)
    np.testing.assert_allclose(frequencies, expected, atol=0.03)
    assert (frequencies[counts == 0] == 0).all()
    np.testing.assert_allclose(out.action_weights[0], counts / counts.sum(), rtol=1e-6)


def test_root_noise_only_on_legal_actions():
    codes = random_root_codes(16, 16)
    root, illegal = PROBLEM.root(codes)
    out = search("puct", codes, dirichlet_fraction=0.5)
    priors = np.asarray(out.search_tree.priors[:, 0])
    np.testing.assert_allclose(priors.sum(-1), 1.0, rtol=1e-5)
    assert (priors[np.asarray(illegal)] == 0).all()
    clean = search("puct", codes, dirichlet_fraction=0.0).search_tree.priors[:, 0]
    assert np.abs(priors - np.asarray(clean)).max() > 0.01


def test_zero_one_rewards_are_the_same_search():
    """[0, 1] values are the [-1, 1] search up to y = (x + 1) / 2; for UCT the
    exploration constant scales with the range, so c on [0, 1] is 2c on [-1, 1]."""
    codes = random_root_codes(17, 8)
    root, illegal = PROBLEM.root(codes)

    def to_unit(output):
        return output.replace(value=(output.value + 1) / 2, reward=(output.reward + 1) / 2)

    def unit_recurrent_fn(params, key, action, code):
        output, code = PROBLEM.recurrent_fn(params, key, action, code)
        return to_unit(output), code

    unit_root = root.replace(value=(root.value + 1) / 2)
    unit = mcts_jax.uct_policy(None, jax.random.key(0), unit_root, unit_recurrent_fn,
                               SIMULATIONS, invalid_actions=illegal, uct_c=0.5,
                               value_range=(0.0, 1.0))
    symmetric = mcts_jax.uct_policy(None, jax.random.key(0), root, PROBLEM.recurrent_fn,
                                    SIMULATIONS, invalid_actions=illegal, uct_c=1.0)
    a, b = unit.search_tree.summary(), symmetric.search_tree.summary()
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    visited = np.asarray(b.visit_counts) > 0
    np.testing.assert_allclose(np.asarray(a.qvalues)[visited],
                               (np.asarray(b.qvalues)[visited] + 1) / 2, atol=1e-5)
    np.testing.assert_allclose(a.value, (np.asarray(b.value) + 1) / 2, atol=1e-5)


BAD_CALLS = [
    ("num_simulations", dict(num_simulations=0), ValueError),
    ("max_nodes", dict(max_nodes=5), ValueError),
    ("max_depth", dict(max_depth=0), ValueError),
    ("final_action", dict(final_action="best"), ValueError),
    ("temperature", dict(temperature=-1.0), ValueError),
    ("value_range", dict(value_range=(0.0, 2.0)), ValueError),
    ("invalid_actions", dict(invalid_actions=np.zeros((4, 5), bool)), ValueError),
    ("invalid_actions", dict(invalid_actions=np.zeros((4, 6), np.int32)), TypeError),
    ("invalid_actions", dict(invalid_actions=np.ones((4, 6), bool)), ValueError),
    ("root.value", dict(root_value=np.array([0.0, np.nan, 0.0, 0.0])), ValueError),
    ("root.prior_logits", dict(root_logits_shape=(4,)), ValueError),
    ("root.embedding", dict(embedding=np.zeros(3, np.uint32)), ValueError),
    ("recurrent_fn returned prior_logits", dict(bad_recurrent=True), ValueError),
]


@pytest.mark.parametrize("argument,change,error", BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
def test_bad_arguments_raise_clear_errors(argument, change, error):
    codes = random_root_codes(18, 4)
    root, illegal = PROBLEM.root(codes)
    change = dict(change)
    num_simulations = change.pop("num_simulations", 8)
    if "root_value" in change:
        root = root.replace(value=jnp.asarray(change.pop("root_value"), jnp.float32))
    if "root_logits_shape" in change:
        root = root.replace(prior_logits=jnp.zeros(change.pop("root_logits_shape")))
    if "embedding" in change:
        root = root.replace(embedding=change.pop("embedding"))
    recurrent_fn = PROBLEM.recurrent_fn
    if change.pop("bad_recurrent", False):
        def recurrent_fn(params, key, action, code):
            output, code = PROBLEM.recurrent_fn(params, key, action, code)
            return output.replace(prior_logits=output.prior_logits[:, :3]), code
    options = dict(invalid_actions=illegal)
    options.update(change)
    with pytest.raises(error, match=argument.split()[0].replace(".", r"\.")):
        mcts_jax.alphazero_policy(None, jax.random.key(0), root, recurrent_fn,
                                  num_simulations, **options)
