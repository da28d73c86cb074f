"""experiments.search_parts: the masked searches are what they say."""

import jax
import numpy as np
import pytest

import envs
from experiments import search_parts
from mcts_jax import evaluators
from training import arena
from training import build
from training import config as config_lib
from training.agent import Agent

SIMULATIONS = 8


def _agent(algorithm: str) -> Agent:
    config = config_lib.resolve({"game": "2048", "preset": "tiny", "algorithm": algorithm})
    game = envs.make("2048")
    model = build.algorithm_for(config).make_model(game)
    return Agent(config=config, game=game, model=model, variables=model.init(jax.random.key(1)),
                 iteration=0)


@pytest.fixture(scope="module")
def states():
    """Eight 2048 positions a few random moves in."""
    game = envs.make("2048")
    states = game.init(jax.random.key(2), 8)
    for ply in range(6):
        key = jax.random.key(10 + ply)
        actions = arena.RandomPlayer()(None, key, game, states)
        states = game.step(states, actions, jax.random.fold_in(key, 1))
    return states


def test_alphazero_rewards_only_is_the_uniform_evaluator(states):
    """Uniform priors and value 0 on a true-model search are
    `evaluators.Uniform`: the same moves on the same keys; unmasked, the
    agent's own search (`Agent.player` of an AlphaZero 2048 run searches
    with chance nodes, whatever its config's policy name)."""
    agent = _agent("alphazero")
    key = jax.random.key(3)
    reference = arena.SearchPlayer(evaluators.Uniform(), "stochastic", SIMULATIONS)
    masked = search_parts.masked_player(agent, SIMULATIONS, True, True)
    for player, expected in ((masked, reference),
                             (search_parts.masked_player(agent, SIMULATIONS, False, False),
                              agent.player(SIMULATIONS))):
        np.testing.assert_array_equal(player(agent.variables, key, agent.game, states),
                                      expected(agent.variables, key, agent.game, states))


@pytest.mark.parametrize("algorithm", ["stochastic_muzero", "muzero"])
def test_learned_model_masks_cover_every_prior_and_value(states, algorithm):
    """With uniform priors and zero values the search does not depend on
    the prediction function (root and leaves) at all, and with zero values
    alone not on its value half; unmasked it does, and it is the agent's."""
    agent = _agent(algorithm)
    key = jax.random.key(4)
    other = jax.tree.map(lambda x: x, agent.variables)
    trunk = other["params"]["prediction_trunk"]
    other["params"]["prediction_trunk"] = jax.tree.map(
        lambda x: x + jax.random.normal(jax.random.key(5), x.shape, x.dtype), trunk)
    if algorithm == "stochastic_muzero":  # the afterstate Q, not the chance logits
        out = other["params"]["afterstate_prediction_trunk"]["out"]
        codes = agent.config.chance_codes
        noise = jax.random.normal(jax.random.key(6), out["kernel"].shape)
        out["kernel"] = out["kernel"].at[:, codes:].add(3.0 * noise[:, codes:])

    def weights(player, variables):
        return np.asarray(player.search(variables, key, agent.game, states).action_weights)

    masked = search_parts.masked_player(agent, SIMULATIONS, True, True)
    np.testing.assert_allclose(weights(masked, agent.variables), weights(masked, other),
                               atol=1e-6)
    unmasked = search_parts.masked_player(agent, SIMULATIONS, False, False)
    assert not np.allclose(weights(unmasked, agent.variables), weights(unmasked, other))
    np.testing.assert_array_equal(unmasked(agent.variables, key, agent.game, states),
                                  agent.player(SIMULATIONS)(agent.variables, key, agent.game,
                                                            states))
