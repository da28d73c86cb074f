"""Sampled search (mcts_jax/sampled.py): the corrected prior against a
plain-Python reference, bandits whose optimum is known, reuse, bad inputs,
and the plain search untouched by the new hooks."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from mcts_jax import sampled

TARGET = 0.6  # the continuous bandit's optimum, a* in [-1, 1]
GAUSSIAN = sampled.DiagonalGaussian(1, low=-1.0, high=1.0)


def continuous_bandit(params, rng_key, action, embedding):
    """One step, reward -(a - a*)^2, then a terminal node."""
    n = action.shape[0]
    assert action.shape == (n, 1) and action.dtype == jnp.float32
    output = mcts_jax.RecurrentFnOutput(
        reward=-jnp.sum((action - TARGET) ** 2, axis=-1), discount=jnp.zeros(n),
        prior_logits=jnp.zeros((n, 2)), value=jnp.zeros(n))
    return output, embedding


def continuous_root(batch):
    return mcts_jax.RootFnOutput(prior_logits=jnp.zeros((batch, 2)), value=jnp.zeros(batch),
                                 embedding=jnp.zeros(batch))


# Factored bandit: 2 agents x 5 moves, a joint reward with an interaction term.
FACTORED = sampled.Factored(num_agents=2, num_moves=5)
SOLO = np.array([[0.1, 0.5, 0.2, 0.0, 0.3], [0.4, 0.0, 0.2, 0.1, 0.3]], np.float32)
PAIR = np.array([[0.0, 0.0, 0.0, 0.6, 0.0]] * 5, np.float32)  # agent 1 at move 3 pairs
PAIR[1, 1] = -0.7  # both on move 1 collide


def joint_reward_np(moves):
    return SOLO[0, moves[0]] + SOLO[1, moves[1]] + PAIR[moves[0], moves[1]]


def factored_bandit(params, rng_key, action, embedding):
    n = action.shape[0]
    assert action.shape == (n,) and action.dtype == jnp.int32
    moves = FACTORED.moves(action)
    reward = (jnp.asarray(SOLO)[0, moves[:, 0]] + jnp.asarray(SOLO)[1, moves[:, 1]]
              + jnp.asarray(PAIR)[moves[:, 0], moves[:, 1]])
    output = mcts_jax.RecurrentFnOutput(reward=reward, discount=jnp.zeros(n),
                                        prior_logits=jnp.zeros((n, 10)), value=jnp.zeros(n))
    return output, embedding


# ---- the corrected prior against plain Python -------------------------------------------------

def test_corrected_prior_matches_plain_python_with_duplicates():
    logits = [[1.0, 0.0, -1.0], [0.5, 0.5, -2.0]]  # 2 agents x 3 moves
    dist = sampled.Factored(num_agents=2, num_moves=3)
    params = jnp.asarray(np.array(logits, np.float32).reshape(1, 6))
    samples = [(0, 0), (0, 0), (1, 2), (2, 1), (0, 0), (1, 0)]  # (0, 0) drawn three times
    ids = jnp.asarray([[a + 3 * b for a, b in samples]], jnp.int32)
    temperature = 0.5

    def probs(row, tau):
        weights = [math.exp(x / tau) for x in row]
        return [w / sum(weights) for w in weights]

    def pi(move, tau=1.0):
        return probs(logits[0], tau)[move[0]] * probs(logits[1], tau)[move[1]]

    # Per distinct action: normalise(beta_hat / beta * pi), beta_hat counting duplicates.
    distinct = sorted(set(samples))
    weight = {a: samples.count(a) / len(samples) / pi(a, temperature) * pi(a) for a in distinct}
    reference = {a: w / sum(weight.values()) for a, w in weight.items()}

    slot_logits = sampled.corrected_log_priors(dist, params, ids, temperature)
    slot_priors = np.asarray(jax.nn.softmax(slot_logits, axis=-1))[0]
    for action in distinct:
        mass = sum(p for p, s in zip(slot_priors, samples) if s == action)
        assert mass == pytest.approx(reference[action], rel=1e-5)
    # Duplicate slots share their action's mass evenly.
    assert slot_priors[0] == pytest.approx(slot_priors[1]) == pytest.approx(slot_priors[4])
    # Temperature 1: every slot 1/K (the duplicated action holds 3/K).
    flat = jax.nn.softmax(sampled.corrected_log_priors(dist, params, ids, 1.0), axis=-1)
    np.testing.assert_allclose(np.asarray(flat)[0], 1 / 6, rtol=1e-6)
    uniform = sampled.corrected_log_priors(dist, params, ids, temperature, prior="uniform")
    np.testing.assert_allclose(np.asarray(jax.nn.softmax(uniform, axis=-1))[0], 1 / 6, rtol=1e-6)


def test_gaussian_log_prob_matches_plain_python():
    dist = sampled.DiagonalGaussian(2)
    params = jnp.asarray([[0.3, -0.2, math.log(0.5), 0.0]])
    actions = jnp.asarray([[[0.1, 0.4], [-1.0, 2.0]]])
    got = np.asarray(dist.log_prob(params, actions))[0]
    for k, (x, y) in enumerate([(0.1, 0.4), (-1.0, 2.0)]):
        want = (-0.5 * ((x - 0.3) / 0.5) ** 2 - math.log(0.5) - 0.5 * math.log(2 * math.pi)
                - 0.5 * (y + 0.2) ** 2 - 0.5 * math.log(2 * math.pi))
        assert got[k] == pytest.approx(want, rel=1e-5)
    # Squashed: samples stay in the bounds and the density integrates to ~1.
    squashed = sampled.DiagonalGaussian(1, low=-2.0, high=1.0)
    draws = squashed.sample(jax.random.PRNGKey(0), jnp.asarray([[0.5, 0.3]]), 2000)
    assert float(draws.min()) >= -2.0 and float(draws.max()) <= 1.0
    grid = jnp.linspace(-2.0 + 1e-4, 1.0 - 1e-4, 20001)[None, :, None]
    density = jnp.exp(squashed.log_prob(jnp.asarray([[0.5, 0.3]]), grid))[0]
    assert float(jnp.sum(density) * (3.0 / 20000)) == pytest.approx(1.0, abs=1e-2)


# ---- searches --------------------------------------------------------------------------------

def search_continuous(policy, num_simulations, batch=16, seed=0, policy_kw=None, **kw):
    policy_kw = policy_kw or {}
    plugin = sampled.SampledActions(GAUSSIAN, 8, **kw)
    out = policy.make(plugins=(plugin,), **policy_kw)(
        None, jax.random.PRNGKey(seed), continuous_root(batch), continuous_bandit,
        num_simulations)
    return out, sampled.chosen_action(out.search_tree, out.action)[:, 0]


def test_continuous_bandit_converges_with_more_simulations():
    errors = {}
    for sims in (8, 128):
        # No root noise, the most visited slot: the search's own choice.
        out, action = search_continuous(mcts_jax.MuZeroPolicy, sims, policy_kw=dict(
            dirichlet_fraction=0.0, temperature=0.0))
        errors[sims] = float(jnp.mean(jnp.abs(action - TARGET)))
        samples = sampled.root_actions(out.search_tree)[..., 0]  # [B, K]
        assert samples.shape == (16, 8) and out.action_weights.shape == (16, 8)
    # The chosen sample ranks among the best of its row's K: on average in
    # the better half (rank 0 = the closest to a*).
    rank = jnp.sum(jnp.abs(samples - TARGET) < jnp.abs(action - TARGET)[:, None], axis=-1)
    assert float(jnp.mean(rank)) < 2.0, rank
    print("mean |a - a*|:", errors)
    assert errors[128] < errors[8]
    assert errors[128] < 0.2


def test_gumbel_picks_the_best_sample():
    out, action = search_continuous(mcts_jax.GumbelPolicy, 64, policy_kw=dict(
        max_num_considered_actions=8, gumbel_scale=0.0))  # no noise: the best Q wins
    samples = sampled.root_actions(out.search_tree)[..., 0]
    best = jnp.min(jnp.abs(samples - TARGET), axis=-1)
    np.testing.assert_allclose(np.asarray(jnp.abs(action - TARGET)), np.asarray(best), atol=1e-6)


def test_factored_bandit_finds_the_exhaustive_optimum():
    optimum = max(itertools.product(range(5), repeat=2), key=joint_reward_np)
    plugin = sampled.SampledActions(FACTORED, 32, temperature=2.0)
    batch = 4
    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((batch, 10)), value=jnp.zeros(batch),
                                 embedding=jnp.zeros(batch))
    # Gumbel without noise: sequential halving over the 32 slots keeps the best Q.
    policy = mcts_jax.GumbelPolicy.make(plugins=(plugin,), max_num_considered_actions=32,
                                        gumbel_scale=0.0)
    out = policy(None, jax.random.PRNGKey(1), root, factored_bandit, 128)
    chosen = sampled.chosen_action(out.search_tree, out.action)
    samples = np.asarray(sampled.root_actions(out.search_tree))
    for row in range(batch):
        moves = tuple(int(m) for m in FACTORED.moves(chosen[row]))
        sampled_moves = [tuple(int(m) for m in FACTORED.moves(jnp.asarray(a))) for a in samples[row]]
        best_sampled = max(joint_reward_np(m) for m in sampled_moves)
        assert joint_reward_np(moves) == pytest.approx(best_sampled)
        if optimum in sampled_moves:
            assert moves == optimum
    # The root's priors in the tree are the corrected ones (temperature 2).
    want = jax.nn.softmax(sampled.corrected_log_priors(
        FACTORED, root.prior_logits, sampled.root_actions(out.search_tree), 2.0), axis=-1)
    np.testing.assert_allclose(np.asarray(out.search_tree.priors[:, 0]), np.asarray(want),
                               rtol=1e-5)


def two_step_bandit(params, rng_key, action, embedding):
    """Two actions in a row; the reward of the second depends on the first."""
    n = action.shape[0]
    depth = embedding + 1
    reward = jnp.where(depth == 2, -(action[:, 0] - TARGET) ** 2, -(action[:, 0] + 0.5) ** 2)
    output = mcts_jax.RecurrentFnOutput(
        reward=reward, discount=jnp.where(depth >= 2, 0.0, 1.0),
        prior_logits=jnp.zeros((n, 2)), value=jnp.zeros(n))
    return output, depth


def test_deeper_nodes_get_their_own_samples_and_reuse_keeps_them():
    plugin = sampled.SampledActions(GAUSSIAN, 4)
    policy = mcts_jax.MuZeroPolicy.make(plugins=(plugin,))
    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((2, 2)), value=jnp.zeros(2),
                                 embedding=jnp.zeros(2, jnp.int32))
    out = policy(None, jax.random.PRNGKey(3), root, two_step_bandit, 24)
    tree = out.search_tree
    record = sampled._record(tree)
    child = tree.children[jnp.arange(2), 0, out.action]
    assert bool(jnp.all(child > 0))
    child_actions = record.actions[jnp.arange(2), child]
    # A child's samples are its own draw, not its parent's.
    assert not bool(jnp.allclose(child_actions, sampled.root_actions(tree)))
    subtree = mcts_jax.get_subtree(tree, out.action)
    np.testing.assert_array_equal(np.asarray(sampled.root_actions(subtree)),
                                  np.asarray(child_actions))
    again = policy(None, jax.random.PRNGKey(4), root.replace(embedding=jnp.ones(2, jnp.int32)),
                   two_step_bandit, 8, tree=subtree)
    np.testing.assert_array_equal(np.asarray(sampled.root_actions(again.search_tree)),
                                  np.asarray(child_actions))
    assert bool(jnp.all(again.search_tree.node_visits[:, 0] > subtree.node_visits[:, 0]))


# ---- bad inputs ------------------------------------------------------------------------------

def test_bad_inputs_have_clear_errors():
    with pytest.raises(ValueError, match="num_samples"):
        sampled.SampledActions(GAUSSIAN, 0)
    with pytest.raises(ValueError, match="temperature"):
        sampled.SampledActions(GAUSSIAN, 4, temperature=0.0)
    with pytest.raises(ValueError, match="prior"):
        sampled.SampledActions(GAUSSIAN, 4, prior="flat")
    with pytest.raises(TypeError, match="distribution"):
        sampled.SampledActions(object(), 4)
    with pytest.raises(ValueError, match="low and high"):
        sampled.DiagonalGaussian(1, low=0.0)
    with pytest.raises(ValueError, match="num_moves"):
        sampled.Factored(2, 0)
    plugin = sampled.SampledActions(GAUSSIAN, 4)
    root = continuous_root(2)
    call = dict(params=None, rng_key=jax.random.PRNGKey(0), root=root,
                recurrent_fn=continuous_bandit, num_simulations=4)
    with pytest.raises(ValueError, match="dense layout"):
        mcts_jax.MuZeroPolicy.make(plugins=(plugin,), max_children=2)(**call)
    with pytest.raises(ValueError, match="graph search"):
        mcts_jax.AlphaZeroPolicy.make(plugins=(plugin,), transpositions=True,
                                   position_key=lambda e: jnp.zeros((e.shape[0], 2),
                                                                       jnp.uint32))(**call)
    with pytest.raises(ValueError, match=r"prior_logits must hold the distribution's param"):
        mcts_jax.MuZeroPolicy.make(plugins=(plugin,))(
            **dict(call, root=root.replace(prior_logits=jnp.zeros((2, 3)))))

    class WrongShape(sampled.DiagonalGaussian):
        def sample(self, key, params, num):
            return super().sample(key, params, num)[..., 0]

    wrong = sampled.SampledActions(WrongShape(1), 4)
    with pytest.raises(ValueError, match="sample returned actions of shape"):
        mcts_jax.MuZeroPolicy.make(plugins=(wrong,))(**call)


# ---- the plain search is untouched -----------------------------------------------------------

import dataclasses  # noqa: E402


@dataclasses.dataclass(frozen=True)
class IdentityHooks(mcts_jax.SearchPlugin):
    """Overrides the new hooks with the defaults' behaviour, so the phases
    take the plug-in branches: the search must not change."""

    def evaluated(self, rng_key, output):
        return output, None

    def edge_action(self, tree, record, parent, slot, action):
        return action


def test_identity_hooks_leave_the_search_unchanged():
    def recurrent_fn(params, rng_key, action, embedding):
        n = action.shape[0]
        logits = jnp.sin(embedding[:, None] * 3.0 + jnp.arange(5.0))
        output = mcts_jax.RecurrentFnOutput(
            reward=jnp.cos(action * 1.7 + embedding), discount=jnp.full((n,), 0.9),
            prior_logits=logits, value=jnp.sin(embedding))
        return output, embedding + action.astype(jnp.float32) + 1.0

    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((3, 5)), value=jnp.zeros(3),
                                 embedding=jnp.arange(3.0))
    plain = mcts_jax.MuZeroPolicy.make()(None, jax.random.PRNGKey(5), root, recurrent_fn, 20)
    hooked = mcts_jax.MuZeroPolicy.make(plugins=(IdentityHooks(),))(
        None, jax.random.PRNGKey(5), root, recurrent_fn, 20)
    np.testing.assert_array_equal(np.asarray(plain.action), np.asarray(hooked.action))
    for name in ("node_visits", "value_sums", "children", "priors"):
        np.testing.assert_array_equal(np.asarray(getattr(plain.search_tree, name)),
                                      np.asarray(getattr(hooked.search_tree, name)))


def test_several_paths_per_step_expand_their_own_samples():
    plugin = sampled.SampledActions(GAUSSIAN, 4)
    policy = mcts_jax.AlphaZeroPolicy.make(plugins=(plugin,), simulations_per_step=2,
                                           dirichlet_fraction=0.0, temperature=0.0)
    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((2, 2)), value=jnp.zeros(2),
                                 embedding=jnp.zeros(2, jnp.int32))
    out = policy(None, jax.random.PRNGKey(6), root, two_step_bandit, 16)
    tree = out.search_tree
    actions = np.asarray(sampled._record(tree).actions)  # [B, N, K, 1]
    for row in range(2):
        children = [int(c) for c in np.asarray(tree.children[row, 0]) if 0 < c < tree.max_nodes]
        assert len(children) >= 2  # several root samples expanded
        # Each child holds K draws of its own, and the edge it hangs from is a root sample.
        for child in children:
            assert not np.allclose(actions[row, child], actions[row, 0])
            slot = int(tree.actions_from_parent[row, child])
            assert 0 <= slot < 4
