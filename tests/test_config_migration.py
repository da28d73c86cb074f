"""A run folder written before issue 65 still loads, plays and resumes.

tests/data/run_before_65/ is a real run folder made by commit 8acb5d8 (the
flat 78-field TrainConfig):

    python train.py --game tic_tac_toe --preset tiny --iterations 1 --eval-every 0 \\
        --elo-every 0 --final-games 0 --run-dir <dir> --no-progress

kept whole but for its plots: config.json, metrics.jsonl, sessions.jsonl,
final.json and the 140 KB checkpoint of iteration 1 (orbax: network,
optimizer, replay buffer and games in progress).
A change to the config's layout or to the checkpoint's must keep this test
green: users have run folders like it on disk.
"""

import dataclasses
import json
import os
import shutil

import jax
import numpy as np

from training import config as config_lib
from training import loop
from training.agent import Agent

BEFORE = os.path.join(os.path.dirname(__file__), "data", "run_before_65")


def test_the_saved_config_loads_with_every_setting():
    with open(os.path.join(BEFORE, "config.json")) as f:
        saved = json.load(f)
    config = config_lib.load_json(os.path.join(BEFORE, "config.json"))
    # Every saved setting reaches the config unchanged (none dropped or
    # renamed); settings added since (sampled search's) keep their defaults.
    assert {name: getattr(config, name) for name in saved} == saved
    added = {f.name for f in dataclasses.fields(config)} - set(saved)
    assert added == {"num_samples", "proposal_temperature", "sampled_prior"}
    assert all(getattr(config, name) == getattr(config_lib.TrainConfig(), name)
               for name in added)
    assert (config.game, config.preset, config.iterations) == ("tic_tac_toe", "tiny", 1)
    config_lib.validate(config)


def test_the_old_run_plays_and_resumes(tmp_path):
    run_dir = str(tmp_path / "run")
    shutil.copytree(BEFORE, run_dir)
    # Its one iteration (4 plies of 16 tic-tac-toe games) finished no game:
    # the old checkpoint does not record its updates, so no warning is due.
    agent = Agent.load(run_dir)
    assert agent.iteration == 1 and agent.game.name == "tic_tac_toe"
    states = agent.game.init(jax.random.key(0), 2)
    actions = np.asarray(agent.act(jax.random.key(1), states, num_simulations=4))
    assert np.asarray(states.legal_action_mask)[np.arange(2), actions].all()
    # Resuming continues from the old checkpoint's iteration 1 to 2.
    lines = []
    config, run_dir = loop.open_run(run_dir, dict(iterations=2), log=lines.append)
    assert config.iterations == 2 and config.num_games == 16
    summary = loop.train(config, run_dir, progress=False, log=lines.append)
    assert any("resuming from the checkpoint of iteration 1" in line for line in lines)
    assert summary["iterations"] == 2
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    assert [r["iteration"] for r in records] == [1, 2]
