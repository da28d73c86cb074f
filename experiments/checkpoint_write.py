"""How long a checkpoint holds up training: written in turn, or in the background.

    python -m experiments.checkpoint_write                          # every case
    python -m experiments.checkpoint_write --cases connect_four_cpu --rounds 5

Each case is a training run's `TrainState` (`loop.initial_state` of its
settings) with every array of the state filled with random bytes (so that
nothing compresses better than a replay of real games would). Its
`Checkpointer.save` is timed both ways, interleaved round by round
(`harness.interleaved_rounds`), each side into its own folder:

  in_turn     background=False: `save` returns when the checkpoint is on
              disk (what the training loop did before 2026-11-27);
  background  background=True (the loop with one process): `save` returns
              once every array is copied to host memory; the checksums and
              files are written by a thread. Timed twice: until `save`
              returns (`blocking_s`, what an iteration waits) and until
              `wait` returns (`written_s`, the whole write).

The loop saves every `checkpoint_every` iterations; in the background the
write overlaps the next iteration's self-play and updates, which share the
machine's cores with it. Writes results/checkpoint_write-<backend>.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from typing import Any, Dict

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import harness

# name -> train.py settings of the run whose state is written.
CASES: Dict[str, Dict[str, Any]] = {
    "tic_tac_toe_default": dict(game="tic_tac_toe"),
    "connect_four_cpu": dict(game="connect_four", preset="cpu"),
    "connect_four_gpu": dict(game="connect_four", preset="gpu"),
    # experiments/gpu_2048.sh's AlphaZero run (1,024 games, a replay of 524,288).
    "2048_gpu_script": dict(game="2048", num_games=1024, train_batch_size=1024,
                            updates_per_iteration=64, replay_size=524288, min_replay=16384),
}
COLUMNS = ["case", "state_mb", "in_turn_s", "background_blocking_s", "background_written_s",
           "blocking_ratio"]


def random_state(settings: Dict[str, Any], seed: int = 0):
    """(variables, arrays) of the run's initial TrainState, every array
    (PRNG keys aside) overwritten with random bytes of its dtype."""
    from training import config as config_lib
    from training import loop

    config = config_lib.resolve(dict(settings))
    _, model, player, learner = loop.build(config)
    variables, arrays = loop.initial_state(config, model, player, learner).saved_items()
    rng = np.random.default_rng(seed)

    def noise(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            return x
        x = np.asarray(x)
        if x.dtype == np.bool_:
            return rng.integers(0, 2, x.shape).astype(np.bool_)
        return np.frombuffer(rng.bytes(x.nbytes), x.dtype).reshape(x.shape).copy()

    return jax.tree.map(noise, variables), jax.tree.map(noise, arrays)


def state_bytes(tree) -> int:
    return sum(np.asarray(x).nbytes for x in jax.tree.leaves(tree)
               if not jnp.issubdtype(x.dtype, jax.dtypes.prng_key))


def measure(name: str, rounds: int, scratch: str) -> Dict[str, Any]:
    """One case: both sides, interleaved; the row of the table."""
    from training import checkpoint as checkpoint_lib

    variables, arrays = random_state(CASES[name])
    savers = {side: checkpoint_lib.Checkpointer(os.path.join(scratch, name, side), keep=2,
                                                background=(side == "background"))
              for side in ("in_turn", "background")}
    iteration = iter(range(1, 10 ** 6))
    written = []

    def in_turn():
        savers["in_turn"].save(next(iteration), variables, arrays, dict(elapsed_s=0.0))

    def background():
        start = time.perf_counter()
        savers["background"].save(next(iteration), variables, arrays, dict(elapsed_s=0.0))
        blocking = time.perf_counter() - start
        savers["background"].wait()
        written.append(time.perf_counter() - start)
        return blocking

    # interleaved_rounds times each call whole; the background side's call
    # includes its wait, so its blocking part is recorded separately.
    blocking = []
    timed = harness.interleaved_rounds(
        dict(in_turn=in_turn, background=lambda: blocking.append(background())), rounds)
    for saver in savers.values():
        saver.close()
    shutil.rmtree(os.path.join(scratch, name), ignore_errors=True)
    blocking, written = blocking[2:], written[2:]  # drop the two untimed warm-up calls
    in_turn_s = timed["sides"]["in_turn"]["median_s"]
    blocking_s = float(np.median(blocking))
    return dict(case=name, state_mb=round(state_bytes((variables, arrays)) / 1e6, 1),
                in_turn_s=round(in_turn_s, 3), background_blocking_s=round(blocking_s, 3),
                background_written_s=round(float(np.median(written)), 3),
                blocking_ratio=round(in_turn_s / blocking_s, 1),
                in_turn_rounds_s=[round(t, 3) for t in timed["sides"]["in_turn"]["seconds"]],
                blocking_rounds_s=[round(t, 3) for t in blocking])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scratch", default=None,
                        help="folder for the checkpoints written (default: a temporary one)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    scratch = args.scratch or tempfile.mkdtemp(prefix="checkpoint_write_")
    rows = [measure(name, args.rounds, scratch) for name in args.cases]
    settings = dict(cases={name: CASES[name] for name in args.cases}, rounds=args.rounds,
                    scratch_filesystem=os.path.abspath(scratch), **harness.provenance())
    harness.report("checkpoint_write", "Checkpointer.save: in turn against in the background "
                   "(median seconds of the rounds)", COLUMNS, rows, settings,
                   save_results=not args.no_save)


if __name__ == "__main__":
    main()
