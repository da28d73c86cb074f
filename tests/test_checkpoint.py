"""Checkpoints: an exact round trip of the training state, and kill -9 during
training followed by a restart that resumes from the last checkpoint with a
metrics file that has every iteration exactly once."""

import json
import os
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax.training import checkpoint as checkpoint_lib
from mcts_jax.training import config as config_lib
from mcts_jax.training import loop

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_round_trip_restores_every_leaf(tmp_path):
    # With subtree reuse the state also holds the search trees (whose lean
    # embeddings have zero-size placeholder arrays).
    config = config_lib.resolve(dict(preset="tiny", reuse_tree=True))
    game, model, player, learner = loop.build(config)
    variables, state = loop.initial_state(config, model, player, learner)
    # Move the state away from its initial values.
    state = dict(state, key=jax.random.key(42), games=jnp.int32(17))
    state["self_play"], state["buffer"], _ = player.step(
        variables, jax.random.key(1), state["self_play"], state["buffer"])
    saver = checkpoint_lib.Checkpointer(str(tmp_path / "ckpt"), keep=2)
    saver.save(5, variables, state, dict(elapsed_s=1.5))
    assert saver.latest() == 5
    fresh_variables, fresh_state = loop.initial_state(
        config_lib.resolve(dict(preset="tiny", reuse_tree=True, seed=9)), model, player, learner)
    got_variables, got_state, meta = saver.restore(5, fresh_variables, fresh_state)
    assert meta["iteration"] == 5 and meta["elapsed_s"] == 1.5
    for a, b in zip(jax.tree.leaves(variables), jax.tree.leaves(got_variables)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert jax.tree.structure(state) == jax.tree.structure(got_state)
    packed, got_packed = checkpoint_lib.pack_keys(state), checkpoint_lib.pack_keys(got_state)
    for a, b in zip(jax.tree.leaves(packed), jax.tree.leaves(got_packed)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The restored key draws the same numbers as the saved one.
    assert jax.random.uniform(got_state["key"]) == jax.random.uniform(jax.random.key(42))
    saver.close()


def _train(run_dir, *extra):
    command = [sys.executable, os.path.join(ROOT, "train.py"), "--preset", "tiny",
               "--run-dir", run_dir, "--no-progress", "--iterations", "20",
               "--eval-every", "0", "--elo-every", "5", "--final-games", "0",
               "--checkpoint-every", "1", *extra]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _iterations(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    return [r["iteration"] for r in checkpoint_lib.read_metrics(path)]


def test_kill_9_then_resume(tmp_path):
    run_dir = str(tmp_path / "run")
    process = _train(run_dir)
    checkpoints = os.path.join(run_dir, "checkpoints")
    deadline = time.time() + 240
    latest = None
    while time.time() < deadline and process.poll() is None:
        steps = [int(d) for d in os.listdir(checkpoints) if d.isdigit()] \
            if os.path.isdir(checkpoints) else []
        if steps and max(steps) >= 2:
            latest = max(steps)
            break
        time.sleep(0.05)
    assert process.poll() is None, "training ended before it could be killed:\n" + \
        process.communicate()[0]
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    killed_at = _iterations(run_dir)
    assert killed_at == list(range(1, len(killed_at) + 1)), killed_at
    last_checkpoint = max(int(d) for d in os.listdir(checkpoints) if d.isdigit())
    assert last_checkpoint >= latest

    restart = _train(run_dir)
    output = restart.communicate(timeout=300)[0]
    assert restart.returncode == 0, output
    # It resumed from a checkpoint at or after the one seen before the kill,
    # losing at most the iteration in progress.
    resumed_from = [line for line in output.splitlines() if "resuming from" in line]
    assert resumed_from, output
    resumed_at = int(resumed_from[0].split("iteration")[-1])
    assert resumed_at >= max(latest, len(killed_at) - 1), (resumed_at, killed_at)
    assert _iterations(run_dir) == list(range(1, 21))
    records = checkpoint_lib.read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    # Every iteration's updates counted once (none before min_replay samples).
    assert records[-1]["updates"] == sum(2 for r in records if "loss" in r) > 30
    elo_iterations = [r["iteration"] for r in records if "elo_matches" in r]
    assert elo_iterations == [5, 10, 15, 20]
    assert checkpoint_lib.list_snapshots(os.path.join(run_dir, "snapshots")) == [0, 5, 10, 15, 20]
    summary = json.load(open(os.path.join(run_dir, "final.json")))
    assert summary["iterations"] == 20


class _Crash(Exception):
    pass


def test_resumed_run_equals_uninterrupted_run(tmp_path):
    """A run stopped after iteration 2's checkpoint and resumed ends with the
    same network and the same metrics as a run that was never stopped."""
    explicit = dict(preset="tiny", iterations=3, eval_every=0, elo_every=1, final_games=0,
                    checkpoint_every=1)
    quiet = lambda *_: None  # noqa: E731
    config, straight = loop.open_run(str(tmp_path / "straight"), explicit, log=quiet)
    loop.train(config, straight, progress=False, log=quiet)

    def crash_after_iteration_2(message):
        if message.startswith("iteration 2:"):
            raise _Crash()

    config, stopped = loop.open_run(str(tmp_path / "stopped"), explicit, log=quiet)
    try:
        loop.train(config, stopped, progress=False, log=crash_after_iteration_2)
    except _Crash:
        pass
    assert _iterations(stopped) == [1, 2]
    config, stopped = loop.open_run(stopped, explicit, log=quiet)
    loop.train(config, stopped, progress=False, log=quiet)

    def load(run_dir):
        records = checkpoint_lib.read_metrics(os.path.join(run_dir, "metrics.jsonl"))
        for r in records:  # timings differ, results must not
            for k in [k for k in r if k.endswith("_s") or k.endswith("_per_s")]:
                del r[k]
        return records

    assert load(stopped) == load(straight)
    from mcts_jax.agent import Agent
    a, b = Agent.load(straight), Agent.load(stopped)
    assert a.iteration == b.iteration == 3
    for x, y in zip(jax.tree.leaves(a.variables), jax.tree.leaves(b.variables)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
