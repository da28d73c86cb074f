"""Checkpoints: an exact round trip of the training state, and kill -9 during
training followed by a restart that resumes from the last checkpoint with a
metrics file that has every iteration exactly once."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from subprocess_env import compiled_like_this_process

from training import checkpoint as checkpoint_lib
from training import config as config_lib
from training import loop
from training.state import TrainState

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_round_trip_restores_every_leaf(tmp_path):
    # With subtree reuse the state also holds the search trees (whose lean
    # embeddings have zero-size placeholder arrays).
    config = config_lib.resolve(dict(preset="tiny", reuse_tree=True))
    game, model, player, learner = loop.build(config)
    state = loop.initial_state(config, model, player, learner)
    # Move the state away from its initial values.
    state = state.replace(key=jax.random.key(42), games=jnp.int32(17))
    games, buffer, _ = player.step(state.variables, jax.random.key(1), state.self_play,
                                   state.buffer)
    state = state.replace(self_play=games, buffer=buffer)
    variables, arrays = state.saved_items()
    saver = checkpoint_lib.Checkpointer(str(tmp_path / "ckpt"), keep=2)
    saver.save(5, variables, arrays, dict(elapsed_s=1.5))
    assert saver.latest() == 5
    fresh = loop.initial_state(
        config_lib.resolve(dict(preset="tiny", reuse_tree=True, seed=9)), model, player, learner)
    got_variables, got_arrays, meta = saver.restore(5, *fresh.saved_items())
    got_state = TrainState.from_saved_items(got_variables, got_arrays)
    assert meta["iteration"] == 5 and meta["elapsed_s"] == 1.5
    for a, b in zip(jax.tree.leaves(variables), jax.tree.leaves(got_variables)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert jax.tree.structure(state) == jax.tree.structure(got_state)
    packed, got_packed = checkpoint_lib.pack_keys(state), checkpoint_lib.pack_keys(got_state)
    for a, b in zip(jax.tree.leaves(packed), jax.tree.leaves(got_packed)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The restored key draws the same numbers as the saved one.
    assert jax.random.uniform(got_state.key) == jax.random.uniform(jax.random.key(42))
    saver.close()


ITERATIONS = 10


def _train(run_dir, cache_dir, *extra):
    """train.py on the tiny preset, a checkpoint every iteration; the compiled
    programs are shared through a persistent cache so that restarts are quick."""
    command = [sys.executable, os.path.join(ROOT, "train.py"), "--preset", "tiny",
               "--run-dir", run_dir, "--no-progress", "--iterations", str(ITERATIONS),
               "--eval-every", "0", "--elo-every", "4", "--final-games", "0",
               "--checkpoint-every", "1", *extra]
    env = compiled_like_this_process(JAX_COMPILATION_CACHE_DIR=cache_dir,
                                     JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def timeless_metrics(run_dir):
    """The run's metrics.jsonl records without timings (seconds, rates):
    what must be the same between two runs of the same settings."""
    records = checkpoint_lib.read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    for r in records:
        for k in [k for k in r if k.endswith("_s") or k.endswith("_per_s")]:
            del r[k]
    return records


def _iterations(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    return [r["iteration"] for r in checkpoint_lib.read_metrics(path)]


def _steps(checkpoints):
    """(complete steps, names of orbax's temporary folders of a step being written)."""
    try:
        names = os.listdir(checkpoints)
    except FileNotFoundError:
        return [], []
    return sorted(int(n) for n in names if n.isdigit()), [n for n in names if "tmp" in n]


def _kill_at(process, run_dir, moment, rng, window_s, deadline=240.0):
    """SIGKILLs `process` at `moment`: 'writing' as soon as a checkpoint is
    being written (its temporary folder exists), 'running' a random
    0..`window_s` seconds after the first iteration of this process is in the
    metrics file. Returns what the folder held at the kill, or None when the
    run finished first."""
    checkpoints = os.path.join(run_dir, "checkpoints")
    before = len(_iterations(run_dir))
    give_up = time.time() + deadline
    fire_at = None
    while time.time() < give_up and process.poll() is None:
        if moment == "writing":
            steps, writing = _steps(checkpoints)
            if writing:
                break
            time.sleep(0.0005)
            continue
        if fire_at is None and len(_iterations(run_dir)) > before:
            fire_at = time.time() + rng.uniform(0.0, window_s)
        if fire_at is not None and time.time() >= fire_at:
            break
        time.sleep(0.005)
    if process.poll() is not None:
        output = process.communicate()[0]
        assert process.returncode == 0, output
        return None
    assert time.time() < give_up, f"no {moment} moment within {deadline} s"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    steps, writing = _steps(checkpoints)
    return dict(moment=moment, steps=steps, writing=writing, metrics=_iterations(run_dir))


def _resumed_from(output):
    lines = [line for line in output.splitlines() if "resuming from" in line]
    return int(lines[0].split("iteration")[-1]) if lines else 0


def test_sigkill_at_random_moments_loses_nothing(tmp_path):
    """train.py killed with SIGKILL three times (one of them while a checkpoint
    is being written, the others at random moments of training), restarted
    each time: every restart resumes from the newest complete checkpoint
    without finding a damaged one, the metrics file never repeats or skips an
    iteration, and the finished run equals bit for bit a run never killed.
    (Each kill costs a restart of train.py, about 7 s of imports and cached
    compilations, so three: the one mid-write and two at random moments.)"""
    cache = str(tmp_path / "compile_cache")
    straight_dir = str(tmp_path / "straight")
    straight = _train(straight_dir, cache)
    output = straight.communicate(timeout=300)[0]
    assert straight.returncode == 0, output

    # Kill within an iteration's time after a new metrics line, so that every
    # life of the run adds one or two iterations and the three kills land
    # before the run ends.
    straight_records = checkpoint_lib.read_metrics(os.path.join(straight_dir, "metrics.jsonl"))
    elapsed = [r["elapsed_s"] for r in straight_records]
    # The tiny preset's updates take milliseconds: their time is recorded
    # finely enough that an iteration that made updates never reads 0 s
    # (benchmarks/training_run.py divides by it).
    for before, after in zip(straight_records, straight_records[1:]):
        if after["updates"] > before["updates"]:
            assert after["update_s"] > 0 and after["self_play_s"] > 0, after
    window_s = float(np.median(np.diff(elapsed)))
    rng = random.Random(20261122)
    moments = ["running"] * 3
    moments[rng.randrange(3)] = "writing"
    run_dir = str(tmp_path / "run")
    process = _train(run_dir, cache)
    seen = []
    for moment in moments:
        at_kill = _kill_at(process, run_dir, moment, rng, window_s)
        if at_kill is None:  # the run finished before this kill
            process = None
            break
        seen.append(at_kill)
        process = _train(run_dir, cache)
        # Peek at the restart's first lines: it resumes from the newest step
        # folder that was complete at the kill, and reports no damage.
        lines = [process.stdout.readline()]
        while not lines[-1].startswith("network:"):
            lines.append(process.stdout.readline())
            assert lines[-1], "".join(lines)
        # Resuming, a warning, or iteration 1. orbax's own log lines come
        # first when the kill landed while it was deleting an old step
        # ("WARNING:absl:Metadata file does not exist: .../checkpoints/1/...");
        # they are orbax's note on that step, not ours: read past them.
        lines.append(process.stdout.readline())
        while lines[-1].startswith(("WARNING:absl:", "INFO:absl:")):
            lines.append(process.stdout.readline())
        output = "".join(line for line in lines if not line.startswith("WARNING:absl:"))
        assert "warning" not in output, output
        complete = seen[-1]["steps"]
        assert _resumed_from(output) == (max(complete) if complete else 0), (seen[-1], output)
        assert seen[-1]["metrics"] == list(range(1, len(seen[-1]["metrics"]) + 1)), seen[-1]
    if process is not None:
        rest = process.communicate(timeout=300)[0]
        assert process.returncode == 0, rest
        assert "warning" not in rest, rest
    assert len(seen) == len(moments), seen  # every kill landed before the run ended
    assert [s for s in seen if s["moment"] == "writing" and s["writing"]], seen  # died mid-write
    assert len({len(s["metrics"]) for s in seen}) > 1, seen  # training moved between kills

    assert _iterations(run_dir) == list(range(1, ITERATIONS + 1))
    snapshots = checkpoint_lib.list_snapshots(os.path.join(run_dir, "snapshots"))
    assert snapshots == checkpoint_lib.list_snapshots(os.path.join(straight_dir, "snapshots"))
    assert snapshots == [0, 4, 8, ITERATIONS]

    assert timeless_metrics(run_dir) == timeless_metrics(straight_dir)
    from training.agent import Agent
    a, b = Agent.load(straight_dir), Agent.load(run_dir)
    assert a.iteration == b.iteration == ITERATIONS
    for x, y in zip(jax.tree.leaves(a.variables), jax.tree.leaves(b.variables)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


class _Crash(Exception):
    pass


@pytest.mark.parametrize("overlap", [False, True], ids=["sequential", "overlap_phases"])
def test_resumed_run_equals_uninterrupted_run(tmp_path, overlap):
    """A run stopped after iteration 2's checkpoint and resumed ends with the
    same network and the same metrics as a run that was never stopped (also
    with self-play and updates on two threads: both start from the
    iteration's state, which the checkpoint holds)."""
    explicit = dict(preset="tiny", iterations=3, eval_every=0, elo_every=1, final_games=0,
                    checkpoint_every=1, overlap_phases=overlap, min_replay=8)
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

    assert timeless_metrics(stopped) == timeless_metrics(straight)
    assert timeless_metrics(straight)[-1]["updates"] > 0  # the learner took part
    from training.agent import Agent
    a, b = Agent.load(straight), Agent.load(stopped)
    assert a.iteration == b.iteration == 3
    for x, y in zip(jax.tree.leaves(a.variables), jax.tree.leaves(b.variables)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# ---- damaged checkpoints and checkpoints of another run ------------------------

IDENTITY = dict(game="tic_tac_toe", network=dict(kind="mlp", hidden=8, num_layers=2))


def _small_run(seed):
    rng = np.random.default_rng(seed)
    variables = {"params": {"dense": {"kernel": rng.normal(size=(9, 8)).astype(np.float32),
                                      "bias": rng.normal(size=(8,)).astype(np.float32)}}}
    state = {"buffer": rng.integers(-1, 2, size=(64, 9)).astype(np.int8),
             "updates": np.int32(seed), "key": jax.random.key(seed),
             "placeholder": np.zeros((0, 3), np.int8)}
    return variables, state


def _saved_three(directory, identity=IDENTITY):
    saver = checkpoint_lib.Checkpointer(directory, keep=3, identity=identity)
    runs = {}
    for iteration in (1, 2, 3):
        runs[iteration] = _small_run(iteration)
        saver.save(iteration, *runs[iteration], dict(elapsed_s=float(iteration)))
    return saver, runs


def _assert_same_run(got, want):
    got_variables, got_state = got
    want_variables, want_state = want
    for a, b in zip(jax.tree.leaves(want_variables), jax.tree.leaves(got_variables)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for a, b in zip(jax.tree.leaves(checkpoint_lib.pack_keys(want_state)),
                    jax.tree.leaves(checkpoint_lib.pack_keys(got_state))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _files(step_dir):
    return sorted(os.path.join(root, name) for root, _, names in os.walk(step_dir)
                  for name in names)


def _damage(path, how):
    data = open(path, "rb").read()
    if how == "truncate":
        data = data[:len(data) // 2]
    elif how == "empty":
        data = b""
    else:  # flip bytes in the middle, same size
        middle = len(data) // 2
        data = data[:middle] + bytes(b ^ 0x5A for b in data[middle:middle + 8]) + \
            data[middle + 8:]
    with open(path, "wb") as f:
        f.write(data)


def test_every_damaged_file_is_detected_or_harmless(tmp_path):
    """Each file of the newest checkpoint in turn, truncated to half, emptied or
    with bytes flipped: restoring it either raises DamagedCheckpointError or
    gives back exactly what was saved (never other numbers, never another
    exception), and `restore_latest` then resumes from an intact checkpoint
    with the saved values of that iteration. The data files must be caught.
    Each case works on its own copy of the folder (tensorstore caches what it
    has read by path, as a process restarted after a crash would not)."""
    pristine = str(tmp_path / "pristine")
    saver, runs = _saved_three(pristine)
    saver.close()
    like = _small_run(99)
    detected = set()
    names = [os.path.relpath(path, pristine) for path in _files(os.path.join(pristine, "3"))]
    for case, (name, how) in enumerate((n, h) for n in names
                                       for h in ("truncate", "empty", "flip")):
        directory = str(tmp_path / f"case{case}")
        shutil.copytree(pristine, directory)
        _damage(os.path.join(directory, name), how)
        saver = checkpoint_lib.Checkpointer(directory, keep=3, identity=IDENTITY)
        try:
            got = saver.restore(3, *like)
        except checkpoint_lib.DamagedCheckpointError as error:
            assert "checkpoint 3" in str(error) and directory in str(error), str(error)
            detected.add((name, how))
        else:
            _assert_same_run(got[:2], runs[3])
        messages = []
        iteration, *got, meta = saver.restore_latest(*like, log=messages.append)
        assert meta["iteration"] == iteration == (2 if (name, how) in detected else 3)
        assert len(messages) == (iteration == 2)
        _assert_same_run(got, runs[iteration])
        saver.close()
        shutil.rmtree(directory)
    # The data files that restore reads (orbax also leaves the per-process
    # files it merged them from, which are never read again).
    data_files = {name for name in names if name.split("/")[2:3] == ["d"]}
    assert len(data_files) == 2, names
    for how in ("truncate", "empty", "flip"):
        missed = data_files - {name for name, h in detected if h == how}
        assert not missed, (how, sorted(missed))
    assert ("3/meta/metadata", "truncate") in detected


def test_all_checkpoints_damaged_is_an_error_not_a_fresh_start(tmp_path):
    directory = str(tmp_path / "ckpt")
    saver, _ = _saved_three(directory)
    for step in (1, 2, 3):
        state_files = [p for p in _files(os.path.join(directory, str(step), "state"))
                       if "/d/" in p]
        for path in state_files:
            _damage(path, "flip")
    with pytest.raises(checkpoint_lib.DamagedCheckpointError, match="no intact checkpoint"):
        saver.restore_latest(*_small_run(99), log=lambda _: None)
    saver.close()


def test_checkpoint_of_another_game_or_network_is_refused(tmp_path):
    directory = str(tmp_path / "ckpt")
    saver, _ = _saved_three(directory)
    saver.close()
    like = _small_run(99)
    other_game = checkpoint_lib.Checkpointer(directory, identity=dict(IDENTITY, game="chess"))
    with pytest.raises(checkpoint_lib.CheckpointError,
                       match="game 'tic_tac_toe'; this run trains 'chess'"):
        other_game.restore_latest(*like, log=lambda _: None)
    other_network = checkpoint_lib.Checkpointer(
        directory, identity=dict(IDENTITY, network=dict(IDENTITY["network"], hidden=16)))
    with pytest.raises(checkpoint_lib.CheckpointError, match="another network: hidden: "
                       "checkpoint 8, this run 16"):
        other_network.restore_latest(*like, log=lambda _: None)
    # Without an identity (e.g. a library user's own loop) the shapes still
    # have to match, and the message names the array.
    anonymous = checkpoint_lib.Checkpointer(directory)
    variables, state = like
    wider = {"params": {"dense": {"kernel": np.zeros((9, 16), np.float32),
                                  "bias": np.zeros((16,), np.float32)}}}
    with pytest.raises(checkpoint_lib.CheckpointError, match=r"\['params'\]\['dense'\]\['bias'\]"):
        anonymous.restore(3, wider, state)
    with pytest.raises(checkpoint_lib.CheckpointError, match="other shapes"):
        anonymous.restore_variables(wider)
    bigger_buffer = dict(state, buffer=np.zeros((128, 9), np.int8))
    with pytest.raises(checkpoint_lib.CheckpointError, match=r"\['buffer'\]"):
        anonymous.restore(3, variables, bigger_buffer)
    for saver in (other_game, other_network, anonymous):
        saver.close()


def test_restore_variables_skips_a_damaged_newest_checkpoint(tmp_path):
    directory = str(tmp_path / "ckpt")
    saver, runs = _saved_three(directory)
    for path in _files(os.path.join(directory, "3", "variables")):
        if "/d/" in path:
            _damage(path, "flip")
    with pytest.warns(UserWarning, match="checkpoint 3"):
        variables, iteration = saver.restore_variables(_small_run(99)[0])
    assert iteration == 2
    _assert_same_run((variables, {}), (runs[2][0], {}))
    with pytest.raises(checkpoint_lib.DamagedCheckpointError, match="checkpoint 3"):
        saver.restore_variables(_small_run(99)[0], iteration=3)
    saver.close()


# ---- checkpoints written in the background ---------------------------------------

def test_background_save_writes_the_arrays_as_they_were_when_saved(tmp_path):
    """With background=True, `save` copies the arrays before it returns: a
    caller that overwrites them in place at once (as a donating update would)
    does not change the checkpoint, and restoring waits for the write."""
    directory = str(tmp_path / "ckpt")
    saver = checkpoint_lib.Checkpointer(directory, keep=3, background=True)
    runs = {}
    for iteration in (1, 2):
        variables, state = _small_run(iteration)
        runs[iteration] = jax.tree.map(np.copy, (variables, state["buffer"]))
        saver.save(iteration, variables, state, dict(elapsed_s=float(iteration)))
        variables["params"]["dense"]["kernel"][...] = -7.0  # the caller reuses its memory
        state["buffer"][...] = 5
    assert saver.steps() == [1, 2]
    for iteration in (1, 2):
        got_variables, got_state, meta = saver.restore(iteration, *_small_run(99))
        want_variables, want_buffer = runs[iteration]
        _assert_same_run((got_variables, {}), (want_variables, {}))
        np.testing.assert_array_equal(np.asarray(got_state["buffer"]), want_buffer)
        assert meta["elapsed_s"] == float(iteration)
    saver.close()


def test_background_write_error_is_raised_not_lost(tmp_path, monkeypatch):
    """A background write that fails raises its error at the next `save` (or
    `wait`, `close`), and no checkpoint of that iteration is on disk."""
    directory = str(tmp_path / "ckpt")
    saver = checkpoint_lib.Checkpointer(directory, background=True)
    saver.save(1, *_small_run(1), dict(elapsed_s=1.0))
    saver.wait()

    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(saver.manager, "save", disk_full)
    saver.save(2, *_small_run(2), dict(elapsed_s=2.0))  # returns: the write fails later
    with pytest.raises(OSError, match="No space left"):  # the error of iteration 2
        saver.save(3, *_small_run(3), dict(elapsed_s=3.0))
    saver.save(4, *_small_run(4), dict(elapsed_s=4.0))
    with pytest.raises(OSError, match="No space left"):  # the error of iteration 4
        saver.close()
    monkeypatch.undo()
    again = checkpoint_lib.Checkpointer(directory)
    assert again.steps() == [1]
    again.close()
