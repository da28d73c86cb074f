"""training.networks: shapes, heads, BatchNorm modes, and the evaluator in a search."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
from training import networks

MLP = networks.NetworkConfig(kind="mlp", hidden=16, num_layers=2, value_hidden=8)
RESNET = networks.NetworkConfig(kind="resnet", channels=8, num_blocks=2, value_hidden=8)


def test_mlp_parameter_count_by_hand():
    game = envs.make("tic_tac_toe")
    model = networks.make_model(MLP, game)
    variables = model.init(jax.random.key(0))
    trunk = (18 * 16 + 16) + (16 * 16 + 16) + 2 * (2 * 16)  # two dense + two LayerNorms
    heads = (16 * 9 + 9) + (16 * 8 + 8) + (8 * 1 + 1)
    assert model.num_parameters(variables) == trunk + heads
    assert variables["batch_stats"] == {}


@pytest.mark.parametrize("name,config", [("tic_tac_toe", MLP), ("connect_four", RESNET)])
def test_shapes_value_range_and_caching(name, config):
    game = envs.make(name)
    model = networks.make_model(config, game)
    assert networks.make_model(config, game) is model
    assert model.evaluator is model.evaluator
    assert game.recurrent_fn(model.evaluator) is game.recurrent_fn(model.evaluator)
    variables = model.init(jax.random.key(1))
    states = game.init(jax.random.key(2), 5)
    states = game.step(states, jax.random.categorical(
        jax.random.key(5), jnp.where(states.legal_action_mask, 0.0, -jnp.inf)))
    logits, value = jax.jit(model.predict)(variables, states.observation)
    assert logits.shape == (5, game.num_actions) and value.shape == (5,)
    assert np.all(np.abs(np.asarray(value)) <= 1.0)
    other = model.init(jax.random.key(3))
    assert not np.allclose(np.asarray(jax.jit(model.predict)(other, states.observation)[0]),
                           np.asarray(logits))


def test_batchnorm_train_and_inference_modes():
    game = envs.make("connect_four")
    model = networks.make_model(RESNET, game)
    variables = model.init(jax.random.key(0))
    key = jax.random.key(4)
    states = game.init(key, 8)
    for _ in range(6):
        key, k = jax.random.split(key)
        legal = states.legal_action_mask
        states = game.step(states, jax.random.categorical(k, jnp.where(legal, 0.0, -jnp.inf)))
    obs = states.observation
    _, _, stats = jax.jit(model.apply_train)(variables, obs)
    moved = [not np.allclose(a, b) for a, b in zip(jax.tree.leaves(stats),
                                                   jax.tree.leaves(variables["batch_stats"]))]
    assert all(moved)  # training mode updates every running statistic
    # Inference uses the running statistics: a row's output does not depend on
    # the other rows of the batch.
    full = np.asarray(jax.jit(model.predict)(variables, obs)[0])
    alone = np.asarray(jax.jit(model.predict)(variables, obs[:1])[0])
    np.testing.assert_allclose(full[:1], alone, rtol=1e-5, atol=1e-5)


def test_evaluator_plugs_into_the_games_adapter():
    game = envs.make("tic_tac_toe")
    model = networks.make_model(MLP, game)
    variables = model.init(jax.random.key(0))
    states = game.init(jax.random.key(1), 4)
    root, invalid = game.root(variables, jax.random.key(2), states, model.evaluator)
    logits, value = model.predict(variables, states.observation)
    np.testing.assert_allclose(np.asarray(root.prior_logits), np.asarray(logits), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(root.value), np.asarray(value), rtol=1e-6)
    out = mcts_jax.alphazero_policy(variables, jax.random.key(3), root,
                                    game.recurrent_fn(model.evaluator), 8,
                                    invalid_actions=invalid, dirichlet_fraction=0.0)
    assert np.asarray(out.search_tree.summary().visit_counts).sum(axis=1).tolist() == [8] * 4


def test_config_is_validated():
    with pytest.raises(ValueError, match="kind"):
        networks.NetworkConfig(kind="transformer")
    with pytest.raises(ValueError, match="channels"):
        networks.NetworkConfig(channels=0)
