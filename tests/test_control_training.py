"""Sampled AlphaZero on a control task (training/control): the value targets
against the episode replayed in gymnax, the sampled policy loss against a
hand-written Gaussian density, the learner moving the policy to the
search's preferred actions, the prior ablation's identity at temperature 1,
episode returns against gymnax's own loop, bad settings refused, and a tiny
train.py run that resumes."""

import json
import math
import os

import gymnax  # in the dev extra (and the control extra)
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from training import build, loop
from training import config as config_lib
from training.control import evaluation as control_eval
from training.control.learner import SampledLearner
from training.networks import LOG_STD_RANGE

TINY = config_lib.resolve(dict(game="pendulum", preset="tiny"))
DISCOUNT = TINY.discount


@pytest.fixture(scope="module")
def parts():
    return build.build(TINY)


def _gymnax_rewards(states0, actions):
    """Rewards [T, B] of playing actions [T, B, 1] from gymnax states [B],
    one state at a time with gymnax's own step."""
    env, env_params = gymnax.make("Pendulum-v1")
    rewards = np.zeros(actions.shape[:2])
    for row in range(actions.shape[1]):
        state = jax.tree.map(lambda x: x[row], states0)
        for t in range(actions.shape[0]):
            _, state, reward, _, _ = env.step_env(jax.random.key(0), state,
                                                  jnp.asarray(actions[t, row, 0]), env_params)
            rewards[t, row] = float(reward)
    return rewards


def test_value_targets_are_the_discounted_returns_of_each_episode(parts):
    player, model = parts.self_play, parts.model
    variables = model.init(jax.random.key(0))
    state = player.init(jax.random.key(1))
    states0 = jax.tree.map(np.asarray, state.states)
    buffer = player.new_buffer(400)
    slots, scores = [], []
    for t in range(200):
        state, buffer, stats = player.step(variables, jax.random.key(100 + t), state, buffer)
        slots.append(np.asarray(stats.action))
        if int(stats.games):
            scores.append(float(stats.score))
    assert len(scores) == 1 and int(stats.games) == 2  # every episode ends at the time limit
    actions = np.asarray(buffer.actions)[np.arange(200)[:, None], np.arange(2)[None, :],
                                         np.stack(slots)]          # [T, B, 1] played
    rewards = _gymnax_rewards(states0, actions)
    returns = np.zeros_like(rewards)
    running = np.zeros(2)
    for t in reversed(range(200)):
        running = rewards[t] + DISCOUNT * running
        returns[t] = running
    status = np.asarray(buffer.status)
    assert (status[:200] == 2).all() and (status[200:] == 0).all()
    np.testing.assert_allclose(np.asarray(buffer.value)[:200], returns, rtol=2e-4, atol=1e-2)
    assert scores[0] == pytest.approx(rewards.sum(), rel=1e-4)
    weights = np.asarray(buffer.policy)[:200]
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert np.abs(np.asarray(buffer.actions)[:200]).max() <= 2.0


def _squashed_gaussian_log_density(mean, log_std, action, low=-2.0, high=2.0):
    unit = (action - low) / (high - low) * 2 - 1
    x = math.atanh(unit)
    z = (x - mean) / math.exp(log_std)
    return (-0.5 * z * z - log_std - 0.5 * math.log(2 * math.pi)
            - math.log(1 - unit * unit) - math.log((high - low) / 2))


def test_policy_loss_is_the_search_weighted_log_density(parts):
    learner, model = parts.learner, parts.model
    variables = model.init(jax.random.key(2))
    observation = jax.random.normal(jax.random.key(3), (4,) + parts.game.observation_shape)
    actions = jax.random.uniform(jax.random.key(4), (4, 3, 1), minval=-1.9, maxval=1.9)
    weights = jax.nn.softmax(jax.random.normal(jax.random.key(5), (4, 3)))
    values = jnp.array([-10.0, -50.0, 0.0, -300.0])
    total, (metrics, _) = learner.loss(variables["params"], variables["batch_stats"],
                                       observation, actions, weights, values)
    gaussian, predicted = model.predict(variables, observation)
    gaussian, actions, weights = (np.asarray(x, np.float64) for x in (gaussian, actions, weights))
    expected = -np.mean([sum(weights[n, k] * _squashed_gaussian_log_density(
        gaussian[n, 0], np.clip(gaussian[n, 1], *LOG_STD_RANGE), actions[n, k, 0])
        for k in range(3)) for n in range(4)])
    assert float(metrics["policy_loss"]) == pytest.approx(expected, rel=1e-4, abs=1e-4)
    value_loss = np.mean(((np.asarray(predicted) - np.asarray(values)) / 100.0) ** 2)
    assert float(metrics["value_loss"]) == pytest.approx(value_loss, rel=1e-4)
    assert float(total) == pytest.approx(expected + value_loss, rel=1e-4, abs=1e-4)


def test_learner_moves_the_policy_to_the_searched_actions(parts):
    """A buffer whose search put all its weight on a sampled action of 1.5
    (beside two random ones): after 150 updates the raw policy's action is
    near 1.5 at every observation."""
    from training.learner import make_optimizer
    player, model = parts.self_play, parts.model
    learner = SampledLearner(model=model, distribution=player.sampling.distribution,
                             optimizer=make_optimizer(3e-2, 150, 0.0, 1.0, 0.0, 10.0),
                             batch_size=64)
    buffer = player.new_buffer(200)
    keys = jax.random.split(jax.random.key(6), 3)
    actions = jax.random.uniform(keys[0], buffer.actions.shape, minval=-1.95, maxval=1.95)
    actions = actions.at[:, :, 1].set(1.5)
    weights = jnp.zeros(buffer.policy.shape).at[:, :, 1].set(1.0)
    buffer = buffer.replace(observation=jax.random.normal(keys[1], buffer.observation.shape),
                            actions=actions, policy=weights,
                            status=jnp.full(buffer.status.shape, 2, jnp.int8))
    state = learner.init(model.init(jax.random.key(7)))
    for step in range(150):
        state, _ = learner.update(state, jax.random.key(step), buffer)
    gaussian, _ = model.predict(state.variables, buffer.observation[0])
    played = np.asarray(player.sampling.distribution.mean_action(gaussian))
    assert np.abs(played - 1.5).max() < 0.1, played.ravel()


def test_the_prior_ablation_is_one_search_at_temperature_one():
    """With the proposal at temperature 1, beta = pi: the corrected prior is
    uniform over the samples, so the ablation's two sides play the same
    games bit for bit; at temperature 2 their policy targets differ."""
    def buffers(prior, temperature):
        config = config_lib.resolve(dict(game="pendulum", preset="tiny", sampled_prior=prior,
                                         proposal_temperature=temperature))
        parts = build.build(config)
        variables = parts.model.init(jax.random.key(8))
        state = parts.self_play.init(jax.random.key(9))
        buffer = parts.self_play.new_buffer(400)
        for t in range(4):
            state, buffer, _ = parts.self_play.step(variables, jax.random.key(t), state, buffer)
        return jax.tree.map(np.asarray, (buffer.actions, buffer.policy))
    same = [buffers(prior, 1.0) for prior in ("corrected", "uniform")]
    for a, b in zip(*same):
        np.testing.assert_array_equal(a, b)
    hot = [buffers(prior, 2.0) for prior in ("corrected", "uniform")]
    # The first step's root samples are the same; searched with other
    # priors they get other targets (and the games part from there).
    np.testing.assert_array_equal(hot[0][0][0], hot[1][0][0])
    assert not np.array_equal(hot[0][1][0], hot[1][1][0])


def test_episode_returns_equal_gymnax_s_own_loop(parts):
    class Constant:
        task = parts.game

        def actions(self, variables, rng_key, states):
            return jnp.full((states.time.shape[0], 1), 0.7)
    key = jax.random.key(10)
    returns = control_eval.episode_returns(Constant(), None, key, 3)
    _, states0 = parts.game.reset(jax.random.split(key)[0], 3)
    expected = _gymnax_rewards(jax.tree.map(np.asarray, states0),
                               np.full((200, 3, 1), 0.7)).sum(axis=0)
    np.testing.assert_allclose(returns, expected, rtol=1e-4)


@pytest.mark.parametrize("settings, message", [
    (dict(game="pendulum", algorithm="alphazero"), "--algorithm sampled_alphazero and "
                                                   "sampled_muzero are for the control tasks"),
    (dict(game="connect_four", algorithm="sampled_muzero"), "got --algorithm sampled_muzero "
                                                            "on connect_four"),
    (dict(game="pendulum", algorithm="sampled_muzero", reanalyse_fraction=0.5),
     "--reanalyse-fraction must be 0 for --algorithm sampled_muzero"),
    (dict(game="pendulum", algorithm="sampled_muzero", value_targets="outcome"),
     "--value-targets must be n_step or auto"),
    (dict(game="tic_tac_toe", algorithm="sampled_alphazero"), "got --algorithm "
                                                              "sampled_alphazero on tic_tac_toe"),
    (dict(game="pendulum", reuse_tree=True), "--reuse-tree must be False for pendulum"),
    (dict(game="pendulum", elo_every=5), "--elo-every must be 0 for pendulum"),
    (dict(game="pendulum", network="resnet"), "--network must be 'mlp' for pendulum"),
    (dict(game="pendulum", value_head="tanh"), "--value-head must be 'linear' for pendulum"),
    (dict(game="pendulum", algorithm="sampled_muzero", search_value_weight=0.5),
     "--search-value-weight must be 0 for --algorithm sampled_muzero"),
    (dict(game="pendulum", sampled_prior="flat"), "--sampled-prior must be one of"),
    (dict(game="pendulum", num_samples=0), "--num-samples must be >= 1"),
])
def test_bad_settings_are_refused_naming_the_flag(settings, message):
    with pytest.raises(ValueError, match=message):
        config_lib.resolve(settings)


def test_a_replay_ring_shorter_than_an_episode_is_refused(parts):
    with pytest.raises(ValueError, match=r"must hold a whole episode: 100 slots .* "
                                         r"\(--replay-size >= 400\)"):
        parts.self_play.new_buffer(100)


@pytest.mark.parametrize("algorithm", ["sampled_alphazero", "sampled_muzero"])
def test_a_tiny_run_trains_evaluates_and_resumes(tmp_path, algorithm):
    run_dir = str(tmp_path / "pendulum")
    # The agents search more than self-play (4): their trees fit each call.
    settings = dict(game="pendulum", preset="tiny", algorithm=algorithm, eval_simulations=5,
                    final_simulations=6)
    config, _ = loop.open_run(run_dir, settings, log=lambda _: None)
    assert type(build.algorithm_for(config)).__name__ == {
        "sampled_alphazero": "SampledAlphaZero", "sampled_muzero": "SampledMuZero"}[algorithm]
    summary = loop.train(config, run_dir, progress=False, log=lambda _: None)
    # The learned model's windows are usable before the episodes end.
    updates = 2 if algorithm == "sampled_alphazero" else 4
    assert summary["total_updates"] == updates and summary["total_games"] == 2
    for prefix in ("final_", "final_policy_", "final_random_"):
        assert -2000 < summary[f"{prefix}score_mean"] < 0
    with open(os.path.join(run_dir, "final.json")) as f:
        assert json.load(f)["final_games"] == 2
    lines = []
    config, _ = loop.open_run(run_dir, dict(settings, iterations=3), log=lines.append)
    summary = loop.train(config, run_dir, progress=False, log=lines.append)
    assert any("resuming from the checkpoint of iteration 2" in line for line in lines)
    assert summary["iterations"] == 3 and summary["total_updates"] == updates + 2


# ---- Sampled MuZero ------------------------------------------------------------------

MUZERO = config_lib.resolve(dict(game="pendulum", preset="tiny", algorithm="sampled_muzero"))


@pytest.fixture(scope="module")
def muzero_parts():
    return build.build(MUZERO)


def test_the_trajectory_replay_keeps_what_was_played(muzero_parts):
    """Sampled MuZero's self-play writes each step's played action (the
    search's chosen sample), its reward (gymnax's, replayed), the K root
    actions beside the weights, and the episode's end; a drawn window's
    sampled actions line up with its policy and actions slot for slot."""
    player, model = muzero_parts.self_play, muzero_parts.model
    variables = model.init(jax.random.key(11))
    state = player.init(jax.random.key(12))
    states0 = jax.tree.map(np.asarray, state.states)
    buffer = player.new_buffer(400)
    slots = []
    for t in range(200):
        state, buffer, stats = player.step(variables, jax.random.key(200 + t), state, buffer)
        slots.append(np.asarray(stats.action))
    sampled_actions = np.asarray(buffer.sampled_actions)[:200]            # [T, B, K, 1]
    played = sampled_actions[np.arange(200)[:, None], np.arange(2)[None, :], np.stack(slots)]
    np.testing.assert_array_equal(np.asarray(buffer.action)[:200], played)
    np.testing.assert_allclose(np.asarray(buffer.reward)[:200],
                               _gymnax_rewards(states0, played), rtol=1e-5, atol=1e-5)
    over = np.asarray(buffer.game_over)[:200]
    assert over[199].all() and not over[:199].any()
    from training.muzero import trajectories
    window = trajectories.sample(buffer, jax.random.key(13), 8, 4, "n_step")
    policy = np.asarray(buffer.samples.policy)
    for n in range(8):
        for k in range(4):
            drawn = np.asarray(window.sampled_actions[n, k])
            hits = [(t, b) for t in range(200) for b in range(2)
                    if np.array_equal(sampled_actions[t, b], drawn)]
            assert len(hits) == 1
            t, b = hits[0]
            np.testing.assert_array_equal(policy[t, b], np.asarray(window.policy[n, k]))
            np.testing.assert_array_equal(played[t, b], np.asarray(window.action[n, k]))


def test_the_learned_model_s_policy_loss_is_the_sampled_cross_entropy(muzero_parts):
    """With a policy target at step 0 alone, the unrolled loss's policy
    term is -sum_k w_k log pi(a_k | s_0), pi the prediction's Gaussian at
    the representation of the observation, against a hand-written density."""
    from training.muzero.learner import Targets
    learner, model = muzero_parts.learner, muzero_parts.model
    variables = model.init(jax.random.key(14))
    n, unroll, k = 4, learner.num_unroll, 3
    keys = jax.random.split(jax.random.key(15), 4)
    observation = jax.random.normal(keys[0], (n, unroll + 1) + muzero_parts.game.observation_shape)
    sampled_actions = jax.random.uniform(keys[1], (n, unroll + 1, k, 1), minval=-1.9, maxval=1.9)
    weights = jax.nn.softmax(jax.random.normal(keys[2], (n, unroll + 1, k)))
    targets = Targets(observation=observation, policy=weights,
                      has_policy=jnp.zeros((n, unroll + 1), bool).at[:, 0].set(True),
                      value=jnp.zeros((n, unroll + 1)), reward=jnp.zeros((n, unroll)),
                      actions=jax.random.uniform(keys[3], (n, unroll, 1), minval=-2, maxval=2),
                      alive=jnp.ones((n, unroll + 1), bool), sampled_actions=sampled_actions)
    _, metrics = learner.loss(variables["params"], targets)
    _, gaussian, _ = model.initial(variables, observation[:, 0])
    gaussian, sampled_actions, weights = (np.asarray(x, np.float64)
                                          for x in (gaussian, sampled_actions, weights))
    expected = -np.mean([sum(weights[i, 0, j] * _squashed_gaussian_log_density(
        gaussian[i, 0], gaussian[i, 1], sampled_actions[i, 0, j, 0]) for j in range(k))
        for i in range(n)])
    assert float(metrics["policy_loss"]) == pytest.approx(expected, rel=1e-4, abs=1e-4)
    assert LOG_STD_RANGE[0] <= gaussian[:, 1].min() and gaussian[:, 1].max() <= LOG_STD_RANGE[1]
