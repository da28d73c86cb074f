"""train.py on pgx's stochastic games (2048, backgammon): settings, value
targets of rewards that come every move, turn-based matches, a tiny run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from training import arena, networks
from training import config as config_lib
from training import loop, policies, replay, self_play

TINY_NET = networks.NetworkConfig(kind="mlp", hidden=16, num_layers=1, value_hidden=8,
                                  value_head="linear", value_scale=1000.0)


def test_stochastic_games_resolve_and_refuse_what_they_cannot_do():
    config = config_lib.resolve({"game": "2048", "preset": "tiny"})
    assert (config.policy, config.value_head, config.value_scale) == ("alphazero", "linear", 1000.0)
    assert config_lib.resolve({"game": "backgammon"}).value_scale == 3.0
    gumbel = config_lib.resolve({"game": "backgammon", "policy": "gumbel"})
    assert config_lib.search_policy_name(gumbel.records.search) == "stochastic_gumbel"
    assert config_lib.search_policy_name(config.records.search) == "stochastic"
    with pytest.raises(ValueError, match="--reuse-tree"):
        config_lib.resolve({"game": "2048", "reuse_tree": True})
    with pytest.raises(ValueError, match="--elo-every must be 0 for 2048"):
        config_lib.resolve({"game": "2048", "elo_every": 5})
    with pytest.raises(ValueError, match="--value-head"):
        config_lib.resolve({"game": "2048", "value_head": "sigmoid"})


def test_2048_value_targets_are_the_points_still_to_come():
    """Rows cut after 4 moves: the sample of move k holds the row's points
    from move k to the cut, i.e. the game's score minus the points of its
    first k moves (tracked by the self-play state's returns), and the
    step's score stat is the sum of the rows' scores."""
    game = envs.make("2048")
    model = networks.make_model(TINY_NET, game)
    variables = model.init(jax.random.key(0))
    rows, length = 6, 4
    policy = policies.policy_from_name("stochastic", num_actions=game.num_actions, max_nodes=5)
    player = self_play.SelfPlay(game=game, model=model, policy=policy, num_simulations=4,
                                num_games=rows, max_game_length=length)
    state = player.init(jax.random.key(1))
    buffer = replay.init(8, rows, game.observation_shape, jnp.bool_, game.num_actions)
    returns_before = [np.zeros(rows)]
    for t in range(length):
        state, buffer, stats = player.step(variables, jax.random.key(10 + t), state, buffer)
        returns_before.append(np.asarray(state.returns[:, 0]))
        assert bool(np.all(np.asarray(stats.done))) == (t == length - 1)
    scores = returns_before[length - 1] + (np.asarray(buffer.value)[length - 1])  # last move
    assert np.all(np.asarray(buffer.status)[:length] == replay.READY)
    np.testing.assert_allclose(np.asarray(buffer.value)[0], scores, rtol=1e-6)
    for k in range(length):
        np.testing.assert_allclose(np.asarray(buffer.value)[k], scores - returns_before[k],
                                   rtol=1e-6, atol=1e-3)
    assert float(stats.score) == pytest.approx(float(scores.sum()), rel=1e-6)
    assert np.all(scores > 0) and np.all(np.asarray(state.returns) == 0)  # rows restarted


def test_backgammon_matches_go_by_the_player_to_move():
    """Backgammon turns are 1 to 4 actions, so a match goes by
    `current_player` (the strict-alternation check would fail otherwise):
    every game finishes and is decided (backgammon has no draws)."""
    game = envs.make("backgammon")
    assert game.alternating_turns is False
    result = arena.play_match(game, arena.RandomPlayer(), None, arena.RandomPlayer(), None,
                              jax.random.key(3), num_games=8, max_plies=3000)
    assert result.unfinished == 0 and result.draws == 0 and result.wins + result.losses == 8


def test_tiny_2048_run_trains_and_reports_scores(tmp_path):
    config, run_dir = loop.open_run(str(tmp_path / "run"), {"game": "2048", "preset": "tiny"},
                                    log=lambda *_: None)
    summary = loop.train(config, run_dir, progress=False, log=lambda *_: None)
    assert summary["total_games"] == 2 * config.num_games  # cut at 8 moves, 16 moves played
    for prefix in ("final_", "final_random_"):
        assert summary[f"{prefix}score_mean"] > 0
        assert 0.0 <= summary[f"{prefix}tile_512_rate"] <= 1.0
    records = [r for r in loop.checkpoint_lib.read_metrics(f"{run_dir}/metrics.jsonl")]
    assert records[-1]["updates"] > 0 and "mean_score" in records[-1]
