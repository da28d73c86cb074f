"""A few self-play moves of tic-tac-toe with a tiny network, each checked:
how the tests run a search variant (a user's rule, a plug-in, a stop rule)
through training's self-play."""

import jax
import jax.numpy as jnp
import numpy as np

import envs
from training import networks, replay, self_play


def play_checked_moves(policy, num_simulations: int, num_games: int, moves: int,
                       reuse_tree: bool = False):
    """Plays `moves` self-play steps of `num_games` games with `policy`;
    asserts every move is legal and every recorded policy target sums to 1.
    Returns the replay buffer."""
    game = envs.make("tic_tac_toe")
    model = networks.make_model(networks.NetworkConfig(kind="mlp", hidden=16, num_layers=1,
                                                       value_hidden=8), game)
    variables = model.init(jax.random.key(0))
    player = self_play.SelfPlay(game=game, model=model, policy=policy,
                                num_simulations=num_simulations, num_games=num_games,
                                reuse_tree=reuse_tree)
    state = player.init(jax.random.key(1))
    buffer = replay.init(8, num_games, (3, 3, 2), jnp.bool_, 9)
    rows = np.arange(num_games)
    for t in range(moves):
        legal = np.asarray(state.states.legal_action_mask)
        state, buffer, info = player.step(variables, jax.random.key(10 + t), state, buffer)
        assert legal[rows, np.asarray(info.action)].all()
        np.testing.assert_allclose(np.asarray(buffer.policy)[t].sum(-1), 1.0, atol=1e-5)
    return buffer
