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
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax

mctx = pytest.importorskip("mctx")

BATCH, ACTIONS, SIMULATIONS = 40, 5, 24
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


MCTX_FIELDS = ("node_visits", "raw_values", "node_values", "parents", "action_from_parent",
               "children_index", "children_prior_logits", "children_visits",
               "children_rewards", "children_discounts", "children_values",
               "root_invalid_actions")


def assert_same_arrays(a, b, name):
    """Same shape, dtype and non-finite entries; finite floats within 1e-5
    relative (1e-6 absolute near 0); integers and bools exactly."""
    a, b = np.asarray(a), np.asarray(b)
    assert (a.shape, a.dtype) == (b.shape, b.dtype), (name, a.shape, a.dtype, b.shape, b.dtype)
    if a.dtype.kind != "f":
        np.testing.assert_array_equal(a, b, err_msg=name)
        return
    finite = np.isfinite(a)
    np.testing.assert_array_equal(finite, np.isfinite(b), err_msg=f"{name}: non-finite entries")
    np.testing.assert_array_equal(a[~finite], b[~finite], err_msg=f"{name}: non-finite values")
    np.testing.assert_allclose(a[finite], b[finite], rtol=1e-5, atol=1e-6, err_msg=name)


def assert_same_mctx_tree(a, b):
    """Every array an mctx user reads of the two trees, strictly (see
    `assert_same_arrays`), the summary, the root Q-values and extra_data."""
    for name in MCTX_FIELDS:
        assert_same_arrays(getattr(a, name), getattr(b, name), name)
    assert (a.num_actions, a.num_simulations) == (b.num_actions, b.num_simulations)
    assert (a.ROOT_INDEX, a.NO_PARENT, a.UNVISITED) == (b.ROOT_INDEX, b.NO_PARENT, b.UNVISITED)
    ours_summary, theirs_summary = a.summary(), b.summary()
    for name in ("visit_counts", "visit_probs", "value", "qvalues"):
        assert_same_arrays(getattr(ours_summary, name), getattr(theirs_summary, name),
                           f"summary().{name}")
    rows = a.node_visits.shape[0]
    for node in (0, 1, a.num_simulations):
        assert_same_arrays(a.qvalues(jnp.full((rows,), node)), b.qvalues(jnp.full((rows,), node)),
                           f"qvalues({node})")
    assert len(jax.tree.leaves(a.extra_data)) == len(jax.tree.leaves(b.extra_data))
    for x, y in zip(jax.tree.leaves(a.extra_data), jax.tree.leaves(b.extra_data)):
        assert_same_arrays(x, y, "extra_data")


def assert_same_tree(ours, theirs):
    """The two policy outputs: the whole mctx tree, the action and its weights."""
    assert type(ours.search_tree).__name__ == "MctxTree"
    assert_same_mctx_tree(ours.search_tree, theirs.search_tree)
    assert_same_arrays(ours.action, theirs.action, "action")
    assert_same_arrays(ours.action_weights, theirs.action_weights, "action_weights")


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


# ---- mctx's search signature, its selection functions and Q transforms ----------------------

def search_both(seed, ours_selection, theirs_selection, extra=None):
    """`search` with mctx's keywords on both sides: (ours, theirs) trees.
    `*_selection`: (root_action_selection_fn, interior_action_selection_fn);
    `extra`: (our extra_data, theirs)."""
    (logits, value, codes), invalid, ours_fn, theirs_fn = random_problem(seed)
    key = jax.random.key(seed + 200)
    mask = invalid.astype(jnp.float32)  # mctx's documented 0/1 mask

    def run(library, fn, selection, extra_data):
        root = library.RootFnOutput(prior_logits=logits, value=value, embedding=codes)
        return library.search(None, key, root=root, recurrent_fn=fn,
                              root_action_selection_fn=selection[0],
                              interior_action_selection_fn=selection[1],
                              num_simulations=SIMULATIONS, invalid_actions=mask,
                              extra_data=extra_data)

    ours = run(mcts_jax, ours_fn, ours_selection, None if extra is None else extra[0])
    theirs = jax.jit(lambda: run(mctx, theirs_fn, theirs_selection,
                                 None if extra is None else extra[1]))()
    return ours, theirs, logits


def muzero_selection(library, **constants):
    return (functools.partial(library.muzero_action_selection, depth=0, **constants),
            functools.partial(library.muzero_action_selection, **constants))


def test_search_with_mctx_signature_and_our_muzero_selection():
    """mcts_jax.search(root=, recurrent_fn=, root_action_selection_fn=, ...)
    with our `muzero_action_selection` builds mctx's tree."""
    ours, theirs, _ = search_both(31, muzero_selection(mcts_jax), muzero_selection(mctx))
    assert type(ours).__name__ == "MctxTree"
    assert_same_mctx_tree(ours, theirs)


def test_search_runs_mctx_own_selection_functions_on_our_tree():
    """mctx's own selection functions (and through them its Q transforms),
    given our `MctxTree` row by row, build mctx's tree."""
    constants = dict(pb_c_init=2.0, qtransform=functools.partial(
        mctx.qtransform_by_min_max, min_value=-2.0, max_value=2.0))
    ours, theirs, _ = search_both(32, muzero_selection(mctx, **constants),
                                  muzero_selection(mctx, **constants))
    assert_same_mctx_tree(ours, theirs)


def test_search_with_mctx_signature_and_our_gumbel_selection():
    def selection(library):
        return (functools.partial(library.gumbel_muzero_root_action_selection,
                                  num_simulations=SIMULATIONS, max_num_considered_actions=4),
                library.gumbel_muzero_interior_action_selection)

    gumbel = jax.random.gumbel(jax.random.key(5), (BATCH, ACTIONS))
    ours, theirs, _ = search_both(
        33, selection(mcts_jax), selection(mctx),
        extra=(mcts_jax.GumbelMuZeroExtraData(root_gumbel=gumbel),
               mctx.GumbelMuZeroExtraData(root_gumbel=gumbel)))
    assert_same_mctx_tree(ours, theirs)


def clipped_q(tree, node_index):
    """A Q transform written mctx's way: the children's Q clipped to [-0.5,
    0.5], unvisited 0."""
    return jnp.clip(tree.qvalues(node_index), -0.5, 0.5)


def test_a_qtransform_written_mctx_way_runs_in_our_policy():
    """`muzero_policy(qtransform=f)` with `f(tree, node_index) -> [A]`,
    unchanged: the same tree as mctx's with the same function."""
    ours, theirs = run_both("muzero_policy", 34, dict(qtransform=clipped_q),
                            dict(qtransform=clipped_q))
    assert_same_tree(ours, theirs)


def test_our_qtransforms_answer_mctx_form_like_mctx_s():
    """Ours called as `qtransform(tree, node_index)` on a row of an
    `MctxTree` (unbatched, as mctx's selection functions give it) answer
    what mctx's do, for every node of 40 searched trees."""
    ours, _ = run_both("muzero_policy", 35, {}, {})
    view = ours.search_tree
    pairs = [
        (mcts_jax.qtransform_by_parent_and_siblings, mctx.qtransform_by_parent_and_siblings, {}),
        (mcts_jax.qtransform_by_min_max, mctx.qtransform_by_min_max,
         dict(min_value=-2.0, max_value=2.0)),
        (mcts_jax.qtransform_completed_by_mix_value, mctx.qtransform_completed_by_mix_value, {}),
        (mcts_jax.qtransform_completed_by_mix_value, mctx.qtransform_completed_by_mix_value,
         dict(rescale_values=False, use_mixed_value=False, value_scale=0.3)),
    ]
    row_tree = jax.tree.map(lambda x: x[3], view.replace(source_tree=None))
    theirs_tree = mctx.Tree(**{name: getattr(row_tree, name) for name in MCTX_FIELDS},
                            embeddings=row_tree.embeddings, extra_data=None)
    nodes = jnp.arange(SIMULATIONS + 1)
    for our_fn, their_fn, constants in pairs:
        got = jax.vmap(lambda n: our_fn(row_tree, n, **constants))(nodes)
        want = jax.vmap(lambda n: their_fn(theirs_tree, n, **constants))(nodes)
        assert_same_arrays(got, want, our_fn.__name__)


def test_recurrent_fn_may_return_mctx_output_and_tree_reuse_takes_the_view():
    """A recurrent_fn returning `mctx.RecurrentFnOutput` is taken as it is;
    `get_subtree` and `tree=` take the `MctxTree` the policy returned."""
    (logits, value, codes), invalid, ours_fn, theirs_fn = random_problem(36)
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=codes)
    with_ours = mcts_jax.muzero_policy(None, jax.random.key(1), root, ours_fn, 8,
                                       invalid_actions=invalid)
    with_theirs = mcts_jax.muzero_policy(None, jax.random.key(1), root, theirs_fn, 8,
                                         invalid_actions=invalid)
    assert_same_tree(with_theirs, with_ours)
    subtree = mcts_jax.get_subtree(with_ours.search_tree, with_ours.action)
    assert isinstance(subtree, mcts_jax.Tree)
    kept = np.asarray(subtree.node_visits[:, 0])
    chosen = np.asarray(with_ours.search_tree.children_visits)[
        np.arange(BATCH), 0, np.asarray(with_ours.action)]
    np.testing.assert_array_equal(kept[chosen > 0], chosen[chosen > 0])
    again = mcts_jax.muzero_policy(None, jax.random.key(2), root, ours_fn, 8,
                                   invalid_actions=invalid, tree=with_ours.search_tree)
    assert np.all(np.asarray(again.search_tree.node_visits[:, 0])
                  == np.asarray(with_ours.search_tree.node_visits[:, 0]) + 8)


def _compiled_text(fn, *args):
    """The optimized HLO without its source metadata (the callers' stack frames:
    a program read from the persistent compilation cache keeps the frames of
    whichever test compiled it first)."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    text = "\n".join(line for line in text.splitlines()  # the frame tables' sections
                      if not re.match(r"(FileNames|FunctionNames|FileLocations|StackFrames)$"
                                      r"|\d+ ", line))
    return re.sub(r"metadata=\{[^}]*\}", "", re.sub(r"\.\d+", "", text))


def test_kept_logits_cost_nothing_when_only_the_action_is_read():
    """The mctx-signature functions keep the prior logits (mctx's
    children_prior_logits); a caller that reads only the action gets the
    same compiled program as without them (XLA drops the unread array), so
    speed figures of such callers still hold."""
    (logits, value, codes), invalid, ours_fn, _ = random_problem(37)
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=codes)

    def action(key, keep):
        return mcts_jax.muzero_policy(None, key, root, ours_fn, 8, invalid_actions=invalid,
                                      keep_prior_logits=keep, checks="off").action

    kept = _compiled_text(functools.partial(action, keep=True), jax.random.key(0))
    dropped = _compiled_text(functools.partial(action, keep=False), jax.random.key(0))
    assert kept == dropped
    whole = jax.jit(lambda key: mcts_jax.muzero_policy(
        None, key, root, ours_fn, 8, invalid_actions=invalid, checks="off"))(jax.random.key(0))
    assert whole.search_tree.source_tree.prior_logits.shape == (BATCH, 9, ACTIONS)
