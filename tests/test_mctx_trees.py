"""`muzero_policy` and `gumbel_muzero_policy` build mctx's whole tree.

On random problems (random priors, values and rewards, discounts in
{-1, 0.997, 1} and terminal edges with discount 0, random root masks) and
with every Q transform and non-default arguments, our mctx-signature
policies and mctx's (the peer, same inputs, same key) agree on every node
(visits, value, raw value, parent, action from parent) and every edge
(child index, prior, reward, discount, visits, value), within 1e-4, and
on the action and action_weights. Node indices match because both write
node i + 1 at simulation i. The root's noise, PUCT's 1e-7 tie-breaking noise
and the Gumbel noise are drawn from the same keys, so even exact ties
(uniform priors, equal values) are broken alike.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax

mctx = pytest.importorskip("mctx")

BATCH, ACTIONS, SIMULATIONS = 32, 5, 24
DISCOUNTS = jnp.array([-1.0, 0.997, 1.0, 0.0])  # 0: a terminal edge


def random_problem(seed: int, ties: bool = False):
    """(root, invalid_actions, our recurrent_fn, mctx's recurrent_fn): a random
    deterministic MDP. States are int32 codes, hashed with the action into
    the next code; each code's reward, discount, priors and value come from
    `fold_in(key, code)`. `ties`: uniform priors and values in {-1, 0, 1}."""
    key = jax.random.key(seed)

    def outputs(code):
        k1, k2, k3, k4 = jax.random.split(jax.random.fold_in(key, code), 4)
        logits = jnp.zeros((ACTIONS,)) if ties else 2.0 * jax.random.normal(k3, (ACTIONS,))
        value = (jax.random.randint(k4, (), -1, 2).astype(jnp.float32) if ties
                 else jax.random.uniform(k4, (), minval=-1.0, maxval=1.0))
        reward = jax.random.uniform(k1, (), minval=-1.0, maxval=1.0)
        discount = DISCOUNTS[jax.random.choice(k2, 4, p=jnp.array([0.45, 0.2, 0.2, 0.15]))]
        return reward, discount, logits, value

    def step(action, code):
        mixed = (code.astype(jnp.uint32) * jnp.uint32(ACTIONS) + action.astype(jnp.uint32)
                 + jnp.uint32(1)) * jnp.uint32(2654435761)
        next_code = (mixed >> jnp.uint32(1)).astype(jnp.int32)
        return jax.vmap(outputs)(next_code), next_code

    def ours(params, rng_key, action, code):
        (reward, discount, logits, value), code = step(action, code)
        return mcts_jax.RecurrentFnOutput(reward=reward, discount=discount,
                                          prior_logits=logits, value=value), code

    def theirs(params, rng_key, action, code):
        (reward, discount, logits, value), code = step(action, code)
        return mctx.RecurrentFnOutput(reward=reward, discount=discount,
                                      prior_logits=logits, value=value), code

    codes = jax.random.randint(jax.random.fold_in(key, 2 ** 31 + 1), (BATCH,), 0, 2 ** 30)
    _, _, logits, value = jax.vmap(outputs)(codes)
    invalid = jax.random.bernoulli(jax.random.fold_in(key, 2 ** 31 + 2), 0.3, (BATCH, ACTIONS))
    invalid = invalid.at[:, 0].set(jnp.where(invalid.all(-1), False, invalid[:, 0]))
    return (logits, value, codes), invalid, ours, theirs


def assert_same_tree(ours, theirs):
    """Every node and edge of the two trees, within 1e-4."""
    a, b = ours.search_tree, theirs.search_tree
    np.testing.assert_array_equal(a.node_visits, b.node_visits)
    np.testing.assert_array_equal(a.parents, b.parents)
    np.testing.assert_array_equal(a.action_from_parent, b.action_from_parent)
    np.testing.assert_array_equal(a.children_index, b.children_index)
    np.testing.assert_array_equal(a.children_visits, b.children_visits)
    for name in ("node_values", "raw_values", "children_rewards", "children_discounts",
                 "children_values"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=1e-4, err_msg=name)
    expanded = np.asarray(b.node_visits) > 0
    np.testing.assert_allclose(
        np.asarray(jax.nn.softmax(a.children_prior_logits))[expanded],
        np.asarray(jax.nn.softmax(b.children_prior_logits))[expanded], atol=1e-4,
        err_msg="children priors")
    np.testing.assert_array_equal(ours.action, theirs.action)
    np.testing.assert_allclose(ours.action_weights, theirs.action_weights, atol=1e-4)
    np.testing.assert_allclose(a.qvalues(jnp.zeros(BATCH, jnp.int32)),
                               b.qvalues(jnp.zeros(BATCH, jnp.int32)), atol=1e-4)


def run_both(policy_name, seed, our_kwargs, their_kwargs, ties=False):
    (logits, value, codes), invalid, ours_fn, theirs_fn = random_problem(seed, ties)
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=codes)
    their_root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=codes)
    key = jax.random.key(seed + 100)
    ours = getattr(mcts_jax, policy_name)(None, key, root, ours_fn, SIMULATIONS,
                                          invalid_actions=invalid, **our_kwargs)
    theirs = jax.jit(lambda k: getattr(mctx, policy_name)(
        None, k, their_root, theirs_fn, SIMULATIONS, invalid_actions=invalid,
        **their_kwargs))(key)
    # Terminal edges were reached and searched below (mctx's semantics).
    assert np.any(np.asarray(theirs.search_tree.children_discounts) == 0)
    return ours, theirs


MUZERO_CASES = {
    "defaults": ({}, {}),
    "min_max": (dict(qtransform=functools.partial(mcts_jax.qtransform_by_min_max,
                                                  min_value=-3.0, max_value=3.0),
                     dirichlet_fraction=0.1, dirichlet_alpha=0.7, pb_c_init=1.7,
                     pb_c_base=300.0, temperature=0.5, max_depth=4),
                dict(qtransform=functools.partial(mctx.qtransform_by_min_max,
                                                  min_value=-3.0, max_value=3.0),
                     dirichlet_fraction=0.1, dirichlet_alpha=0.7, pb_c_init=1.7,
                     pb_c_base=300.0, temperature=0.5, max_depth=4)),
    # High temperature: mctx samples unvisited actions too (log of a 0 weight
    # is log(tiny), not -inf), and so must we.
    "hot_temperature": (dict(temperature=30.0), dict(temperature=30.0)),
    "parent_and_siblings_epsilon": (
        dict(qtransform=functools.partial(mcts_jax.qtransform_by_parent_and_siblings,
                                          epsilon=0.05), dirichlet_fraction=0.0),
        dict(qtransform=functools.partial(mctx.qtransform_by_parent_and_siblings,
                                          epsilon=0.05), dirichlet_fraction=0.0)),
}


@pytest.mark.parametrize("case", sorted(MUZERO_CASES))
def test_muzero_policy_builds_mctx_tree(case):
    ours, theirs = run_both("muzero_policy", 1 + sorted(MUZERO_CASES).index(case),
                            *MUZERO_CASES[case])
    assert_same_tree(ours, theirs)


def test_muzero_policy_breaks_exact_ties_as_mctx():
    """Uniform priors and values in {-1, 0, 1}: many exact ties, decided by
    mctx's 1e-7 noise, drawn from the same keys on both sides."""
    ours, theirs = run_both("muzero_policy", 7, dict(dirichlet_fraction=0.0),
                            dict(dirichlet_fraction=0.0), ties=True)
    assert_same_tree(ours, theirs)


GUMBEL_CASES = {
    "defaults": ({}, {}),
    "raw_value_no_rescale": (
        dict(qtransform=functools.partial(mcts_jax.qtransform_completed_by_mix_value,
                                          value_scale=0.5, maxvisit_init=10.0,
                                          rescale_values=False, use_mixed_value=False),
             max_num_considered_actions=4, gumbel_scale=0.5, max_depth=3),
        dict(qtransform=functools.partial(mctx.qtransform_completed_by_mix_value,
                                          value_scale=0.5, maxvisit_init=10.0,
                                          rescale_values=False, use_mixed_value=False),
             max_num_considered_actions=4, gumbel_scale=0.5, max_depth=3)),
    "rescaled_epsilon": (
        dict(qtransform=functools.partial(mcts_jax.qtransform_completed_by_mix_value,
                                          use_mixed_value=False, epsilon=0.01),
             max_num_considered_actions=2),
        dict(qtransform=functools.partial(mctx.qtransform_completed_by_mix_value,
                                          use_mixed_value=False, epsilon=0.01),
             max_num_considered_actions=2)),
}


@pytest.mark.parametrize("case", sorted(GUMBEL_CASES))
def test_gumbel_muzero_policy_builds_mctx_tree(case):
    ours, theirs = run_both("gumbel_muzero_policy", 11 + sorted(GUMBEL_CASES).index(case),
                            *GUMBEL_CASES[case])
    assert_same_tree(ours, theirs)
    np.testing.assert_allclose(ours.search_tree.extra_data.root_gumbel,
                               theirs.search_tree.extra_data.root_gumbel, atol=1e-6)


def test_numeric_masks_as_mctx_documents_them():
    """mctx's invalid_actions are 'ones at invalid actions': a 0/1 float mask
    gives the same search as the bool mask."""
    (logits, value, codes), invalid, ours_fn, _ = random_problem(23)
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=codes)
    for policy in (mcts_jax.muzero_policy, mcts_jax.gumbel_muzero_policy):
        as_bool = policy(None, jax.random.key(4), root, ours_fn, 8, invalid_actions=invalid)
        as_float = policy(None, jax.random.key(4), root, ours_fn, 8,
                          invalid_actions=invalid.astype(jnp.float32))
        np.testing.assert_array_equal(as_bool.search_tree.node_visits,
                                      as_float.search_tree.node_visits)
        assert not np.any(np.asarray(invalid)[np.arange(BATCH), np.asarray(as_float.action)])


def test_compact_layout_builds_the_same_tree_as_dense():
    """Our compact layout (K slots >= the legal moves) answers mctx's
    attributes in action space exactly as the dense tree does."""
    (logits, value, codes), invalid, ours_fn, _ = random_problem(21)
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=codes)
    run = functools.partial(mcts_jax.gumbel_muzero_policy, None, jax.random.key(3), root,
                            ours_fn, SIMULATIONS, invalid_actions=invalid)
    dense, compact = run(), run(max_children=ACTIONS)
    assert_same_tree(compact, dense)
