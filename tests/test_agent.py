"""training.agent.Agent: load a run folder and play its network."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from training import arena
from training.agent import Agent
from training import loop


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    run_dir = str(tmp_path_factory.mktemp("agent") / "run")
    # Self-play searches two paths per step (--simulations-per-step 2).
    explicit = dict(preset="tiny", iterations=2, eval_every=0, elo_every=0, final_games=0,
                    simulations_per_step=2)
    config, run_dir = loop.open_run(run_dir, explicit, log=lambda *_: None)
    loop.train(config, run_dir, progress=False, log=lambda *_: None)
    return run_dir


def test_load_and_act(run_dir):
    agent = Agent.load(run_dir)
    assert agent.iteration == 2 and agent.game.name == "tic_tac_toe"
    states = agent.game.init(jax.random.key(0), 6)
    states = agent.game.step(states, jnp.array([0, 1, 2, 3, 4, 5]))
    # The raw policy: the legal argmax of the network's logits.
    logits, _ = agent.policy_value(states)
    expected = np.argmax(np.where(np.asarray(states.legal_action_mask), np.asarray(logits),
                                  -np.inf), axis=1)
    np.testing.assert_array_equal(np.asarray(agent.act(jax.random.key(1), states,
                                                       num_simulations=0)), expected)
    # A greedy search is legal, and the same whatever the key.
    actions = np.asarray(agent.act(jax.random.key(2), states, num_simulations=16))
    again = np.asarray(agent.act(jax.random.key(3), states, num_simulations=16))
    assert actions.shape == (6,) and actions.dtype == np.int32
    assert np.asarray(states.legal_action_mask)[np.arange(6), actions].all()
    np.testing.assert_array_equal(actions, again)
    # Four paths per step, one network call for their leaves: legal moves.
    parallel = np.asarray(agent.act(jax.random.key(2), states, num_simulations=16,
                                    simulations_per_step=4))
    assert np.asarray(states.legal_action_mask)[np.arange(6), parallel].all()
    sampled = agent.act(jax.random.key(4), states, num_simulations=16, greedy=False)
    assert np.asarray(states.legal_action_mask)[np.arange(6), np.asarray(sampled)].all()
    # Its player plugs into the arena.
    result = arena.play_match(agent.game, agent.player(16), agent.variables,
                              arena.RandomPlayer(), None, jax.random.key(5), 8)
    assert result.num_games == 8


def test_load_an_earlier_checkpoint_and_missing_folder(run_dir, tmp_path):
    # The tiny preset's first iteration (4 plies of each game) finishes no
    # game: its checkpoint holds the initial network, and loading it says so.
    with pytest.warns(UserWarning, match="after 0 learner updates"):
        first = Agent.load(run_dir, iteration=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        last = Agent.load(run_dir)
    assert first.iteration == 1
    differs = [not np.array_equal(np.asarray(a), np.asarray(b))
               for a, b in zip(jax.tree.leaves(first.variables), jax.tree.leaves(last.variables))]
    assert any(differs)
    with pytest.raises(FileNotFoundError):
        Agent.load(str(tmp_path / "nothing"))


def test_self_play_stops_keeps_every_move_and_measures_the_targets(run_dir):
    """experiments.self_play_stops on a trained run: the stopped search plays
    the full search's move in every row (the experiment fails otherwise),
    and a target can change only where simulations were saved."""
    from experiments import self_play_stops

    agent = Agent.load(run_dir)
    positions = self_play_stops.self_play_positions(agent, games=4, steps=6,
                                                    num_simulations=8, seed=0)
    assert jax.tree.leaves(positions)[0].shape[0] == 24
    assert not np.asarray(agent.game.is_terminal(positions)).any()
    [row] = self_play_stops.main(["--run-dir", run_dir, "--budgets", "16", "--games", "4",
                                  "--steps", "6", "--batch", "8", "--batches", "2",
                                  "--rounds", "1", "--no-save"])
    assert row["same_move_pct"] == 100.0 and 0.0 <= row["saved_pct"] < 100.0
    assert 0.0 <= row["target_tv_mean"] <= 1.0 and 0.0 <= row["target_changed_pct"] <= 100.0
    if row["saved_pct"] == 0.0:
        assert row["target_changed_pct"] == 0.0 and row["root_value_change"] == 0.0
