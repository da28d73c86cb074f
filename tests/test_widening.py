"""Progressive widening (mcts_jax/widening.py): the open slots against a
plain-Python reference, a search whose visited slots stay within k(n), the
root left open for Gumbel, and bad settings refused."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from mcts_jax import sampled, widening

from test_sampled import GAUSSIAN, TARGET, continuous_bandit, continuous_root


def open_slots_reference(priors, legal, visits, coefficient, exponent):
    """Plain Python: the ceil(C * n^alpha) legal slots of highest prior."""
    opened = []
    for row_priors, row_legal, n in zip(priors, legal, visits):
        allowed = max(1, math.ceil(coefficient * max(int(n), 1) ** exponent))
        order = sorted((slot for slot in range(len(row_priors)) if row_legal[slot]),
                       key=lambda slot: (-row_priors[slot], slot))
        keep = set(order[:allowed])
        opened.append([slot in keep for slot in range(len(row_priors))])
    return np.array(opened)


@pytest.mark.parametrize("coefficient,exponent", [(1.0, 0.5), (2.0, 0.25), (0.5, 1.0),
                                                  (1.5, 0.7)])
def test_open_slots_match_plain_python(coefficient, exponent):
    rng = np.random.default_rng(7)
    batch, slots = 64, 9
    priors = rng.choice([0.05, 0.1, 0.2, 0.3], size=(batch, slots)).astype(np.float32)  # ties
    legal = rng.random((batch, slots)) < 0.8
    visits = rng.integers(0, 120, size=batch).astype(np.int32)
    stats = mcts_jax.ChildrenStats(
        index=jnp.zeros((batch, slots), jnp.int32), legal=jnp.asarray(legal),
        actions=jnp.tile(jnp.arange(slots, dtype=jnp.int32), (batch, 1)),
        visits=jnp.zeros((batch, slots), jnp.int32), qvalues=jnp.zeros((batch, slots)),
        priors=jnp.asarray(np.where(legal, priors, 0.0)), solved=jnp.zeros((batch, slots), bool),
        solved_qvalues=jnp.zeros((batch, slots)), node_visits=jnp.asarray(visits),
        node_value=jnp.zeros(batch), raw_value=jnp.zeros(batch),
        depth=jnp.ones(batch, jnp.int32), rng_key=None)
    plugin = widening.ProgressiveWidening(coefficient, exponent)
    got = np.asarray(plugin.open_slots(None, None, stats))
    want = open_slots_reference(np.where(legal, priors, 0.0), legal, visits, coefficient,
                                exponent)
    np.testing.assert_array_equal(got & legal, want)
    # At the root with root=False every slot is open.
    root_stats = stats.replace(depth=jnp.zeros(batch, jnp.int32))
    assert bool(jnp.all(widening.ProgressiveWidening(coefficient, exponent, root=False)
                        .open_slots(None, None, root_stats)))


def root_visits(tree):
    """[B, K] visits of each root child slot."""
    root = jnp.zeros((tree.batch_size,), jnp.int32)
    return np.asarray(mcts_jax.children_stats(tree, root).visits)


def flat_bandit(params, rng_key, action, embedding):
    """Every action worth the same: PUCT then spreads its visits by prior."""
    n = action.shape[0]
    return mcts_jax.RecurrentFnOutput(reward=jnp.zeros(n), discount=jnp.zeros(n),
                                      prior_logits=jnp.zeros((n, 2)),
                                      value=jnp.zeros(n)), embedding


def test_sampled_search_visits_exactly_the_first_k_of_n_samples():
    batch, samples, sims = 8, 32, 96
    plugins = (sampled.SampledActions(GAUSSIAN, samples),
               widening.ProgressiveWidening(coefficient=1.0, exponent=0.5))
    policy = mcts_jax.MuZeroPolicy.make(plugins=plugins, dirichlet_fraction=0.0,
                                        temperature=0.0)
    out = policy(None, jax.random.PRNGKey(3), continuous_root(batch), flat_bandit, sims)
    # Temperature 1: equal corrected priors, so the open slots are the first
    # k(n) samples. The last descent saw the root at n = sims visits.
    k_final = math.ceil(math.sqrt(sims))
    visited = root_visits(out.search_tree) > 0
    np.testing.assert_array_equal(visited, np.broadcast_to(np.arange(samples) < k_final, visited.shape))
    assert out.action_weights.shape == (batch, samples)
    # Without widening the same search spreads over every sample.
    wide = mcts_jax.MuZeroPolicy.make(plugins=plugins[:1], dirichlet_fraction=0.0,
                                      temperature=0.0)(
        None, jax.random.PRNGKey(3), continuous_root(batch), flat_bandit, sims)
    assert (root_visits(wide.search_tree) > 0).all()


def test_several_paths_per_step_widen_alike():
    """P = 4 paths per step: the root still opens exactly the first 10 of 32."""
    plugins = (sampled.SampledActions(GAUSSIAN, 32), widening.ProgressiveWidening(1.0, 0.5))
    out = mcts_jax.AlphaZeroPolicy.make(plugins=plugins, dirichlet_fraction=0.0,
                                        temperature=0.0, simulations_per_step=4)(
        None, jax.random.PRNGKey(3), continuous_root(8), flat_bandit, 96)
    visited = root_visits(out.search_tree) > 0
    np.testing.assert_array_equal(visited, np.broadcast_to(np.arange(32) < 10, visited.shape))


def test_widening_finds_the_bandit_optimum():
    """Continuous bandit, 64 samples a node, UCT (every open sample tried
    once): widening still converges, to within 0.1 of a* on average."""
    plugins = (sampled.SampledActions(GAUSSIAN, 64), widening.ProgressiveWidening(2.0, 0.5))
    out = mcts_jax.UCTPolicy.make(plugins=plugins)(
        None, jax.random.PRNGKey(5), continuous_root(16), continuous_bandit, 128)
    action = sampled.chosen_action(out.search_tree, out.action)[:, 0]
    assert float(jnp.mean(jnp.abs(action - TARGET))) < 0.1
    # 2 sqrt(127) -> at most 23 of the 64 samples were ever tried.
    assert (root_visits(out.search_tree)[:, 23:] == 0).all()


def test_dense_tree_opens_highest_priors_first():
    batch, actions, sims = 4, 6, 40
    logits = jnp.tile(jnp.array([0.0, 2.0, -1.0, 1.0, 0.5, -3.0]), (batch, 1))
    root = mcts_jax.RootFnOutput(prior_logits=logits, value=jnp.zeros(batch),
                                 embedding=jnp.zeros(batch))

    def recurrent_fn(params, rng_key, action, embedding):
        return mcts_jax.RecurrentFnOutput(
            reward=jnp.where(action == 5, 1.0, 0.0), discount=jnp.zeros(batch),
            prior_logits=jnp.zeros((batch, actions)), value=jnp.zeros(batch)), embedding

    # UCT tries every open slot once before it returns to one: a slot is
    # visited as soon as it opens.
    plugin = widening.ProgressiveWidening(coefficient=1.0, exponent=0.5)
    out = mcts_jax.UCTPolicy.make(plugins=(plugin,))(
        None, jax.random.PRNGKey(0), root, recurrent_fn, sims)
    visited = root_visits(out.search_tree) > 0
    by_prior = [1, 3, 4, 0, 2, 5]  # slot order by logit, highest first
    k_final = math.ceil(math.sqrt(sims))  # 7 > 6: every slot opens in the end
    assert visited[:, by_prior[:min(k_final, actions)]].all()
    # The best action (slot 5, the lowest prior) is found only once it opens:
    # it opens once the root has more than (6 - 1)^2 = 25 visits.
    small = mcts_jax.UCTPolicy.make(plugins=(plugin,))(
        None, jax.random.PRNGKey(0), root, recurrent_fn, 20)
    assert not root_visits(small.search_tree)[:, 5].any()
    assert root_visits(out.search_tree)[:, 5].all()


def test_gumbel_widens_below_the_root_only():
    plugins = (sampled.SampledActions(GAUSSIAN, 8), widening.ProgressiveWidening())
    root = continuous_root(4)
    with pytest.raises(ValueError, match="root=False"):
        mcts_jax.GumbelPolicy.make(plugins=plugins)(None, jax.random.PRNGKey(0), root,
                                                     continuous_bandit, 16)
    out = mcts_jax.GumbelPolicy.make(
        plugins=(plugins[0], widening.ProgressiveWidening(root=False)),
        max_num_considered_actions=8, gumbel_scale=0.0)(
        None, jax.random.PRNGKey(0), root, continuous_bandit, 64)
    action = sampled.chosen_action(out.search_tree, out.action)[:, 0]
    samples = sampled.root_actions(out.search_tree)[..., 0]
    # Every root sample was considered: the best of the 8 is played.
    np.testing.assert_allclose(np.asarray(jnp.abs(action - TARGET)),
                               np.asarray(jnp.min(jnp.abs(samples - TARGET), axis=-1)),
                               atol=1e-6)


@pytest.mark.parametrize("kwargs,match", [
    (dict(coefficient=0.0), "coefficient"), (dict(coefficient=float("inf")), "coefficient"),
    (dict(coefficient=True), "coefficient"), (dict(exponent=0.0), "exponent"),
    (dict(exponent=1.5), "exponent"), (dict(root=1), "root")])
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        widening.ProgressiveWidening(**kwargs)
