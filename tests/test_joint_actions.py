"""The joint-action problem (envs/joint_actions.py): its exact optimum
against brute force over every plan, its JAX step against plain Python, the
dense and factored priors as one distribution, and searches judged by the
optimum."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from envs.joint_actions import NUM_MOVES, JointActions
from mcts_jax import sampled


@pytest.mark.parametrize("agents,horizon", [(1, 3), (2, 2), (3, 2), (2, 3)])
def test_optimum_equals_brute_force(agents, horizon):
    problem = JointActions(agents, instances=3, horizon=horizon, seed=4)
    brute = [problem.brute_force_optimum(i) for i in range(3)]
    np.testing.assert_allclose(problem.optimum(), brute, rtol=1e-6)


def test_random_return_is_the_mean_over_every_plan():
    problem = JointActions(2, instances=2, horizon=2, seed=5)
    plans = list(itertools.product(range(problem.num_joint_actions), repeat=2))
    for instance in range(2):
        mean = np.mean([problem.plan_return(instance, plan) for plan in plans])
        assert problem.random_return()[instance] == pytest.approx(mean, abs=1e-6)


def test_jax_step_matches_plain_python():
    problem = JointActions(5, instances=6, seed=2)
    plans = np.random.default_rng(0).integers(0, problem.num_joint_actions, size=(6, 3))
    embedding = problem.root(jnp.arange(6)).embedding
    total = jnp.zeros(6)
    for step in range(3):
        reward, embedding = problem.step(embedding, jnp.asarray(plans[:, step], jnp.int32))
        total = total + reward
    want = [problem.plan_return(i, plans[i]) for i in range(6)]
    np.testing.assert_allclose(np.asarray(total), want, rtol=1e-5, atol=1e-6)
    assert np.asarray(embedding["step"]).tolist() == [3] * 6


def test_dense_and_factored_priors_are_one_distribution():
    problem = JointActions(3, instances=4)
    factored = problem.root(jnp.arange(4)).prior_logits          # [B, N * 5]
    dense = problem.root(jnp.arange(4), dense=True).prior_logits  # [B, 5^N]
    ids = jnp.tile(jnp.arange(problem.num_joint_actions, dtype=jnp.int32)[None], (4, 1))
    np.testing.assert_allclose(
        np.asarray(sampled.Factored(3, NUM_MOVES).log_prob(factored, ids)),
        np.asarray(jax.nn.log_softmax(dense, axis=-1)), atol=1e-5)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="num_agents"):
        JointActions(0)
    with pytest.raises(ValueError, match="cells"):
        JointActions(9, cells=8)
    with pytest.raises(ValueError, match="prior_scale"):
        JointActions(2, prior_scale=float("nan"))


def play(problem, policy, dense, simulations):
    """Closed-loop returns [I]: one search per step, its move played."""
    root = problem.root(jnp.arange(problem.instances), dense=dense)
    embedding, total = root.embedding, jnp.zeros(problem.instances)
    for step in range(problem.horizon):
        out = policy(None, jax.random.key(step), root.replace(embedding=embedding),
                     problem.recurrent_fn(dense), simulations)
        joint = out.action if dense else sampled.chosen_action(out.search_tree, out.action)
        reward, embedding = problem.step(embedding, joint)
        total = total + reward
    return np.asarray(total)


def test_searches_find_the_optimum_of_a_small_problem():
    """Two agents, 25 joint actions, 2 steps: a search of 2,000 simulations
    covers the 625 plans; dense and sampled (K = 25) Gumbel search plays
    the optimal plan on most instances, far above random play."""
    problem = JointActions(2, instances=8, horizon=2, seed=1)
    optimum, random = problem.optimum(), problem.random_return()
    dense = play(problem, mcts_jax.GumbelPolicy.make(max_num_considered_actions=25,
                                                     gumbel_scale=0.0, value_range=None),
                 True, 2000)
    assert np.sum(dense >= optimum - 1e-5) >= 6
    plugin = sampled.SampledActions(sampled.Factored(2, NUM_MOVES), 25)
    sampled_returns = play(problem, mcts_jax.GumbelPolicy.make(
        max_num_considered_actions=25, gumbel_scale=0.0, value_range=None, plugins=(plugin,)),
        False, 2000)
    score = (sampled_returns - random) / (optimum - random)
    assert score.mean() > 0.8, score
