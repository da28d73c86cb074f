"""gymnax control tasks in the search contract (envs/control.py): the batched
step against gymnax's own, the recurrent_fn's rewards and discounts, a
sampled search over the true dynamics, and bad settings refused."""

import gymnax  # in the dev extra (and the control extra)
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from envs.control import ControlTask, zero_evaluator
from mcts_jax import sampled

TASK = ControlTask("Pendulum-v1", discount=0.9)


def test_batched_step_equals_gymnax_one_state_at_a_time():
    _, states = TASK.reset(jax.random.key(3), 5)
    actions = jnp.linspace(-2.5, 2.5, 5)[:, None]  # beyond the bounds: clipped alike
    observation, after, reward, done = TASK.step(states, actions)
    env, env_params = gymnax.make("Pendulum-v1")
    for row in range(5):
        state = jax.tree.map(lambda x: x[row], states)
        obs_1, state_1, reward_1, done_1, _ = env.step_env(jax.random.key(0), state,
                                                            actions[row, 0], env_params)
        np.testing.assert_allclose(np.asarray(observation[row]), np.asarray(obs_1), rtol=1e-6)
        assert float(reward[row]) == pytest.approx(float(reward_1), rel=1e-6)
        assert bool(done[row]) == bool(done_1 | (state_1.time >= 200))
        np.testing.assert_allclose(np.asarray(after.theta[row]), np.asarray(state_1.theta))
    assert TASK.action_dim == 1 and (TASK.low, TASK.high) == (-2.0, 2.0)


def test_recurrent_fn_discounts_and_ends_episodes():
    _, states = TASK.reset(jax.random.key(0), 3)
    states = states.replace(time=jnp.array([0, 198, 199]))
    output, after = TASK.recurrent_fn(zero_evaluator)(None, jax.random.key(1),
                                                       jnp.zeros((3, 1)), states)
    np.testing.assert_allclose(np.asarray(output.discount), [0.9, 0.9, 0.0])
    assert np.asarray(after.time).tolist() == [1, 199, 200]
    assert output.prior_logits.shape == (3, 2) and bool(jnp.all(output.reward <= 0))


def test_sampled_search_over_the_true_dynamics_prefers_the_better_torque():
    """At the bottom at rest, a one-step search (discount 0 beyond it) ranks
    torques by the step's cost: the chosen one is the sample of lowest
    |torque| (the only cost a step from rest can change is 0.001 u^2)."""
    _, states = TASK.reset(jax.random.key(5), 4)
    states = states.replace(theta=jnp.full(4, np.pi), theta_dot=jnp.zeros(4))
    plugin = sampled.SampledActions(TASK.distribution(), 6)
    policy = mcts_jax.GumbelPolicy.make(plugins=(plugin,), gumbel_scale=0.0,
                                        max_num_considered_actions=6, value_range=None,
                                        max_depth=1)
    out = policy(None, jax.random.key(2), TASK.root(zero_evaluator, None, states),
                 TASK.recurrent_fn(zero_evaluator), 24)
    samples = sampled.root_actions(out.search_tree)[..., 0]
    chosen = sampled.chosen_action(out.search_tree, out.action)[:, 0]
    np.testing.assert_allclose(np.asarray(jnp.abs(chosen)),
                               np.asarray(jnp.min(jnp.abs(samples), axis=-1)), rtol=1e-6)
    assert bool(jnp.all((samples >= -2.0) & (samples <= 2.0)))


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="discount"):
        ControlTask(discount=0.0)
    with pytest.raises(ValueError, match="gymnax id"):
        ControlTask("Pendulum-v9")
    with pytest.raises(ValueError, match="continuous"):
        ControlTask("CartPole-v1")


def test_the_time_left_is_appended_to_observations_when_asked():
    task = ControlTask.named("pendulum")
    plain = ControlTask("Pendulum-v1")
    assert task.time_in_observation and task.observation_shape == (4,)
    observation, states = task.reset(jax.random.key(4), 2)
    np.testing.assert_allclose(np.asarray(observation[:, 3]), 1.0)
    for step in range(3):
        observation, states, _, _ = task.step(states, jnp.full((2, 1), 0.5))
    np.testing.assert_allclose(np.asarray(observation[:, 3]), 1.0 - 3 / 200)
    np.testing.assert_allclose(np.asarray(observation[:, :3]), np.asarray(plain.observe(states)))
    np.testing.assert_allclose(np.asarray(task.observe(states)), np.asarray(observation))
