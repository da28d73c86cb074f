"""A policy is root setup, search, final choice: every built-in policy is
written through its hooks (`split_key`, `root_setup`, `rules`, `choose`),
so a user's subclass that overrides any hook of any built-in is called.
Also the call path (a handful of library frames from a public policy to the
user's recurrent_fn) and the answers that used to be silent: a temperature
given to Gumbel, Gumbel's ties, a rule's NaN."""

import dataclasses
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import checkify

import mcts_jax
from devtools import call_path
from problems.chance_trees import ChanceTree
from problems.synthetic import HashedProblem, random_root_codes

BATCH, SIMULATIONS = 8, 12
PROBLEM = HashedProblem(num_actions=5)
ROOT, _ = PROBLEM.root(random_root_codes(7, BATCH))
CHANCE = ChanceTree(depth=3, branching=3, outcomes=2, informed=True)
CHANCE_ROOT = CHANCE.root(random_root_codes(8, BATCH))
CHANCE_FNS = (CHANCE.decision_recurrent_fn, CHANCE.chance_recurrent_fn)


def first_open_slot(tree, node, stats):
    """A rule that always descends into the lowest open slot."""
    slots = jnp.arange(stats.legal.shape[-1], dtype=jnp.float32)
    return jnp.where(stats.legal, -slots, -jnp.inf)


FIRST = mcts_jax.Rules(at_root=first_open_slot, below_root=first_open_slot)
# Each built-in, built so that its move depends on the choice key (a sampled
# move where it has a final_action), and the (root, recurrent_fn) it plays.
BUILT_INS = {
    "uct": (mcts_jax.UCTPolicy(final_action="sampled"), "plain"),
    "alphazero": (mcts_jax.AlphaZeroPolicy(), "plain"),
    "gumbel": (mcts_jax.GumbelPolicy(), "plain"),
    "rule": (mcts_jax.rule_policy(functools.partial(mcts_jax.puct_scores),
                                  final_action="sampled"), "plain"),
    "muzero": (mcts_jax.MuZeroPolicy(), "plain"),
    "stochastic_muzero": (mcts_jax.StochasticMuZeroPolicy(), "chance"),
    "stochastic_gumbel": (mcts_jax.StochasticGumbelPolicy(), "chance"),
}


def call(policy, kind, key):
    if kind == "chance":
        return policy(None, key, CHANCE_ROOT, CHANCE_FNS, SIMULATIONS)
    return policy(None, key, ROOT, PROBLEM.recurrent_fn, SIMULATIONS)


def subclass(policy, **hooks):
    """The policy as a value of a user's subclass overriding `hooks`."""
    cls = type(f"User{type(policy).__name__}", (type(policy),), hooks)
    kept = {field.name: getattr(policy, field.name) for field in dataclasses.fields(policy)
            if field.init}
    return cls(**kept)


def root_visits(output):
    return np.asarray(output.search_tree.summary().visit_counts)


@pytest.mark.parametrize("name", BUILT_INS)
def test_an_overridden_choose_is_called(name):
    policy, kind = BUILT_INS[name]

    def choose(self, rng_key, tree, temperature, options):
        action, weights = type(policy).choose(self, rng_key, tree, temperature, options)
        return jnp.full_like(action, 1), weights

    out = call(subclass(policy, choose=choose), kind, jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(out.action), 1)


@pytest.mark.parametrize("name", BUILT_INS)
def test_an_overridden_root_setup_is_called(name):
    policy, kind = BUILT_INS[name]

    def root_setup(self, rng_key, root, invalid_actions, tree, options):
        root, extra_data = type(policy).root_setup(self, rng_key, root, invalid_actions, tree,
                                                   options)
        boost = jnp.zeros(root.prior_logits.shape[-1]).at[0].set(40.0)
        return root.replace(prior_logits=root.prior_logits + boost), extra_data

    out = call(subclass(policy, root_setup=root_setup), kind, jax.random.key(0))
    tree = mcts_jax.mctx_compat.our_tree(out.search_tree)
    # the root searched is the one the hook set up: all prior mass on action 0
    assert np.all(np.asarray(tree.priors[:, 0, 0]) > 0.99)


@pytest.mark.parametrize("name", BUILT_INS)
def test_overridden_rules_are_called(name):
    policy, kind = BUILT_INS[name]
    out = call(subclass(policy, rules=lambda self, options: FIRST), kind, jax.random.key(0))
    visits = root_visits(out)
    np.testing.assert_array_equal(visits[:, 0], SIMULATIONS)  # every descent took slot 0


@pytest.mark.parametrize("name", BUILT_INS)
def test_an_overridden_split_key_is_called(name):
    policy, kind = BUILT_INS[name]
    different = [call(policy, kind, jax.random.key(k)) for k in (0, 1)]
    assert not (np.array_equal(root_visits(different[0]), root_visits(different[1]))
                and np.array_equal(different[0].action, different[1].action))
    fixed = jax.random.key(5)
    pinned = subclass(policy, split_key=lambda self, rng_key: (fixed, fixed, fixed))
    same = [call(pinned, kind, jax.random.key(k)) for k in (0, 1)]
    np.testing.assert_array_equal(root_visits(same[0]), root_visits(same[1]))
    np.testing.assert_array_equal(same[0].action, same[1].action)


# ---- the call path ---------------------------------------------------------------------

PACKAGE = os.path.dirname(os.path.abspath(mcts_jax.__file__)) + os.sep


@pytest.mark.parametrize("name", ["alphazero_policy", "gumbel_policy", "muzero_policy",
                                  "uct_policy"])
def test_a_public_policy_reaches_recurrent_fn_in_a_handful_of_frames(name):
    fn = getattr(mcts_jax, name)
    frames = call_path.frames_to_recurrent_fn(
        PACKAGE, lambda wrap: fn(None, jax.random.key(0), ROOT, wrap(PROBLEM.recurrent_fn), 3))
    assert frames[0].endswith(f":{name}") and frames[-1] == "phases.py:expand", frames
    assert len(frames) <= 7, frames


# ---- answers that were silent ----------------------------------------------------------

def test_gumbel_refuses_sigma_settings_that_a_given_qtransform_overrides():
    qtransform = functools.partial(mcts_jax.qtransform_completed_by_mix_value, value_scale=0.1)
    with pytest.raises(ValueError, match=r"\['value_scale'\] set sigma only when qtransform"):
        mcts_jax.GumbelPolicy(value_scale=1.0, qtransform=qtransform)
    with pytest.raises(ValueError, match="maxvisit_init"):
        mcts_jax.gumbel_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 4,
                               maxvisit_init=10.0, qtransform=qtransform)
    assert mcts_jax.GumbelPolicy(qtransform=qtransform).qtransform is not None


def test_gumbel_refuses_a_temperature():
    with pytest.raises(TypeError, match="unexpected keyword argument 'temperature'"):
        mcts_jax.GumbelPolicy(temperature=0.5)
    with pytest.raises(TypeError, match="gumbel_scale"):
        mcts_jax.gumbel_policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 4,
                               temperature=0.5)
    with pytest.raises(TypeError, match="takes no temperature"):
        mcts_jax.GumbelPolicy()(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 4,
                                temperature=0.5)


def considered_sets(output):
    visits = root_visits(output)
    return {tuple(np.flatnonzero(row)) for row in visits}


def test_gumbel_takes_tied_root_actions_in_random_order():
    """Equal priors and gumbel_scale=0 (deterministic play): our Gumbel
    considers a random m of the tied actions; mctx's signature keeps mctx's
    order (the first m ids), as mctx does."""
    problem = HashedProblem(num_actions=12)
    root, _ = problem.root(random_root_codes(3, 32))
    root = root.replace(prior_logits=jnp.zeros_like(root.prior_logits))
    ours = mcts_jax.gumbel_policy(None, jax.random.key(0), root, problem.recurrent_fn, 4,
                                  max_num_considered_actions=4, gumbel_scale=0.0)
    assert len(considered_sets(ours)) > 4  # rows draw different actions
    assert (0, 1, 2, 3) not in considered_sets(ours) or len(considered_sets(ours)) > 1
    assert len(set(np.asarray(ours.action).tolist())) > 2
    theirs = mcts_jax.gumbel_muzero_policy(None, jax.random.key(0), root, problem.recurrent_fn,
                                           4, max_num_considered_actions=4, gumbel_scale=0.0)
    assert considered_sets(theirs) == {(0, 1, 2, 3)}


def nan_on_first_slot(tree, node, stats):
    scores = mcts_jax.puct_scores(tree, node, stats)
    return scores.at[:, 0].set(jnp.nan)


def test_a_rules_nan_is_reported():
    policy = mcts_jax.rule_policy(nan_on_first_slot)
    with pytest.warns(mcts_jax.RuleNaNWarning, match="scored NaN on a legal child slot"):
        policy(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 6)
    with pytest.raises(checkify.JaxRuntimeError, match="scored NaN on a legal child slot"):
        policy.replace(checks="checkify")(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, 6)


@dataclasses.dataclass(frozen=True, kw_only=True)
class StochasticUCT(mcts_jax.muzero_policies.TakesChanceNodes, mcts_jax.UCTPolicy):
    """A user's UCT on a stochastic game, with the default final choice."""


def test_the_default_choice_on_a_stochastic_tree_weighs_the_decisions_only():
    out = StochasticUCT()(None, jax.random.key(3), CHANCE_ROOT, CHANCE_FNS, SIMULATIONS)
    num_decisions = CHANCE_ROOT.prior_logits.shape[-1]
    assert out.search_tree.num_decisions == num_decisions < out.search_tree.num_actions
    np.testing.assert_allclose(out.action_weights, out.search_tree.summary().visit_probs)
    assert out.action_weights.shape == (BATCH, num_decisions)
    np.testing.assert_allclose(np.sum(out.action_weights, axis=-1), 1.0, rtol=1e-6)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PolicyWithItsOwnFinalAction(mcts_jax.Policy):
    """A user's policy with a `final_action` field and no check of it."""

    final_action: str = "most_visited"

    def rules(self, options):
        return FIRST


def test_an_unchecked_final_action_of_a_users_policy_is_refused_naming_the_choices():
    """A name `choose_action` has no rule for raises when the search is
    traced; a known one plays (the lowest open slot, every visit there)."""
    out = PolicyWithItsOwnFinalAction()(None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn,
                                       SIMULATIONS)
    np.testing.assert_array_equal(np.asarray(out.action), np.zeros(BATCH, np.int32))
    with pytest.raises(ValueError, match="final_action must be one of .*'best'"):
        PolicyWithItsOwnFinalAction(final_action="best")(
            None, jax.random.key(0), ROOT, PROBLEM.recurrent_fn, SIMULATIONS)
