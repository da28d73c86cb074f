"""The AlphaZero training loop, as phases around one `TrainState`.

    config, run_dir = loop.open_run("runs/tic_tac_toe", explicit_flags)
    summary = loop.train(config, run_dir)

`train` reads top to bottom: `start_run` builds what stays fixed (the
config's parts, `training.build.build`: the algorithm, game, network,
self-play, learner and agents; then evaluation, checkpointer, reporter) into
a `Run`; `resume_state` restores the newest checkpoint or starts fresh; then
each iteration (`run_iteration`) is five phases:

    self_play_phase    `moves_per_iteration` jitted moves of all B games,
                       finished games' samples into the replay buffer
    update_phase       `updates_per_iteration` updates on minibatches, once
                       the buffer holds `min_replay` ready samples
    evaluate_phase     matches and an Elo snapshot, when due
    reporter.iteration one metrics record (reporting.py)
    checkpoint_phase   the TrainState to disk, when due

and `finish_run` plays the end-of-run evaluation. With `overlap_phases` the
first two run at the same time on two threads, both from the iteration's
starting state (`overlapped_phases`). Each phase takes the
TrainState and returns the next one (or a record of metrics); the state is
the only thing carried from one iteration to the next, and it is what a
checkpoint saves (state.py). The run folder holds:

    config.json      the settings (printed at start)
    metrics.jsonl    one record per iteration (losses, speed, evaluations)
    sessions.jsonl   one line per session: git commit, dirty, command, date
    checkpoints/     orbax, the last `keep_checkpoints`
    snapshots/       network variables of the Elo snapshots
    final.json       end-of-run evaluation
    plots/           loss.png, elo.png, win_rates.png
    tensorboard/     if a TensorBoard writer is installed

Devices (`--devices`, `records.run.devices`, see `mcts_jax.sharding` and docs/multi_device.md):
the B self-play games, the replay buffer's game rows and every minibatch are
split over a 1-D "data" mesh; the network, optimiser state and keys are
replicated; one compiled program per step, partitioned by XLA. Checkpoints
hold plain arrays (gathered), so a run restores on any device count.
Evaluation matches run on one device of each process. With several
processes only process 0 writes the metrics, snapshots, plots and final.json.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import shutil
import time
from typing import Any, Callable, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import sharding
from training import build as build_lib
from training import checkpoint as checkpoint_lib
from training import config as config_lib
from training import evaluation as evaluation_lib
from training import reporting, self_play
from training.config import TrainConfig
from training import state as state_lib
from training.state import TrainState


def default_run_dir(config: TrainConfig) -> str:
    """runs/<game>[_<algorithm>][_<preset>] (the algorithm when it learns a
    model: AlphaZero's runs keep the plain name)."""
    records = config.records
    algorithm, preset = records.run.algorithm, records.run.preset
    suffix = f"_{algorithm.name}" if algorithm.learned_model else ""
    suffix += "" if preset == "default" else f"_{preset}"
    return os.path.join("runs", records.game.game + suffix)


def open_run(run_dir: Optional[str], explicit: Dict[str, Any], overwrite: bool = False,
             resume: Optional[bool] = None, log: Callable[[str], None] = print
             ) -> Tuple[TrainConfig, str]:
    """The config and folder of a run, new or continued.

    A folder with a config.json is continued (its saved settings, with the
    explicit flags on top; shape-fixing flags must match) unless `overwrite`
    deletes it. resume=True requires such a folder, resume=False forbids it,
    None (default) continues when there is one.
    """
    fresh = config_lib.resolve(explicit)
    run_dir = run_dir or default_run_dir(fresh)
    config_path = os.path.join(run_dir, "config.json")
    if overwrite and os.path.exists(run_dir):
        shutil.rmtree(run_dir)
    exists = os.path.exists(config_path)
    if resume is True and not exists:
        raise FileNotFoundError(f"--resume: no run to continue in {run_dir} (no config.json)")
    if resume is False and exists:
        raise FileExistsError(f"{run_dir} already holds a run; use --overwrite or another "
                              f"--run-dir")
    if exists:
        saved = config_lib.load_json(config_path)
        if "game" not in explicit:
            explicit = dict(explicit, game=saved.game)
        if "preset" not in explicit:
            explicit = dict(explicit, preset=saved.preset)
        config = config_lib.resume_config(saved, explicit)
        log(f"continuing the run in {run_dir} with its saved settings (algorithm "
            f"{config.algorithm}, policy {config.policy}, preset {config.preset}); "
            f"--overwrite or another --run-dir starts a new one")
        changes = config_lib.changed_settings(saved, config)
        if changes:
            log("changed settings on resume: " + "; ".join(changes))
    else:
        config = fresh
    make_mesh(config)  # the device count and batch sizes fit, before anything is written
    os.makedirs(run_dir, exist_ok=True)
    reporting.write_json(config_path, config.to_json())
    return config, run_dir


def make_mesh(config: TrainConfig) -> jax.sharding.Mesh:
    """The 1-D "data" mesh of --devices devices (0: every device).
    Raises ValueError naming the flag when --num-games or --train-batch-size
    is not a multiple of the device count."""
    records = config.records
    mesh = sharding.make_mesh(records.run.devices or None)
    hint = f" (--devices {sharding.num_devices(mesh)})"
    sharding.check_divisible("--num-games", records.self_play.num_games, mesh, hint)
    sharding.check_divisible("--train-batch-size", records.optimizer.train_batch_size, mesh,
                             hint)
    return mesh


def state_shardings(mesh: jax.sharding.Mesh, state: TrainState) -> TrainState:
    """The shardings of a TrainState: the network, optimiser state, counters
    and key replicated; the games in progress split along B (axis 0) and the
    replay buffer [T, B, ...] along its game rows (axis 1)."""
    whole = sharding.replicated(mesh)
    return jax.tree.map(lambda _: whole, state).replace(
        self_play=sharding.batch_shardings(state.self_play, mesh),
        buffer=sharding.batch_shardings(state.buffer, mesh, axis=1))


def place(mesh: jax.sharding.Mesh, state: TrainState) -> TrainState:
    """`state` put on the mesh (see `state_shardings`); host or one-device
    arrays (a fresh state, a restored checkpoint) of any origin."""
    return sharding.put(state, state_shardings(mesh, state))


def build(config: TrainConfig, mesh: Optional[jax.sharding.Mesh] = None, policy: Any = None):
    """(game, model, SelfPlay, Learner) of a config: the four of its parts
    (`training.build.build`, cached: the same config, mesh and policy give
    the same objects) that a run's state is made from (`initial_state`)."""
    parts = build_lib.build(config, mesh, policy)
    return parts.game, parts.model, parts.self_play, parts.learner


def initial_state(config: TrainConfig, model, player, learner) -> TrainState:
    """The TrainState of a fresh run, on the default device (see `place`)."""
    records = config.records
    return state_lib.initial_state(records.run.seed, model, player, learner,
                                   records.replay.slots)


def checkpoint_identity(config: TrainConfig) -> Dict[str, Any]:
    """What a checkpoint must match to be resumed by this configuration
    (checked before any array is read): the game and the model's
    architecture (`identity()` of the run's algorithm)."""
    return build_lib.algorithm_for(config).identity()


@dataclasses.dataclass
class Run:
    """What stays fixed during a training run (rebuilt from the config on
    resume, never saved), and the Elo pool.

    Attributes:
      elo_pool: network variables of the Elo snapshots by iteration, on this
        process's first device (also on disk under snapshots/).
    """

    config: TrainConfig
    run_dir: str
    mesh: jax.sharding.Mesh
    primary: bool                      # process 0: writes the files
    algorithm: build_lib.Algorithm     # AlphaZero or the MuZero family
    game: Any
    model: Any                         # the network, or the learned model
    player: self_play.SelfPlay
    learner: Any                       # Learner, or LearnedModelLearner
    suite: Any                         # the algorithm's evaluation suite (Evaluation, ControlEvaluation)
    checkpoints: checkpoint_lib.Checkpointer
    reporter: reporting.Reporter
    started: float                     # time.perf_counter() at start
    elapsed_before: float = 0.0        # seconds trained before this session
    elo_pool: Dict[int, Any] = dataclasses.field(default_factory=dict)

    @property
    def snapshot_dir(self) -> str:
        return os.path.join(self.run_dir, "snapshots")

    iterations_done: int = 0           # the last finished iteration

    def elapsed(self) -> float:
        """Seconds trained so far, over every session of the run."""
        return self.elapsed_before + time.perf_counter() - self.started

    @property
    def records(self) -> config_lib.Records:
        """The config's records: the loop reads these (`records.run` its own)."""
        return self.config.records

    def out_of_time(self) -> bool:
        """The run has used its `max_training_s` (never, when 0)."""
        limit = self.records.run.max_training_s
        return bool(limit) and self.elapsed() >= limit

    def is_last(self, iteration: int) -> bool:
        """`iteration` ends the run: the configured last one, or the first to
        end past `max_training_s` (asked after its updates)."""
        return iteration == self.records.run.iterations or self.out_of_time()


def train(config: TrainConfig, run_dir: str, progress: bool = True,
          log: Callable[[str], None] = print, policy: Any = None) -> Dict[str, Any]:
    """Runs (or continues) the training run in `run_dir`; returns the final
    evaluation record (also written to final.json).

    policy: a policy value (`mcts_jax.Policy`, a user's own included) that
    self-play searches with, in place of the config's `policy` name. It is
    not saved with the run (a value may hold functions): pass it again to
    resume."""
    run = start_run(config, run_dir, progress, log, policy)
    try:
        state, start = resume_state(run)
        run.iterations_done = start
        for iteration in range(start + 1, run.records.run.iterations + 1):
            if run.out_of_time():  # a resumed run that had used its --max-training-s
                break
            state = run_iteration(run, state, iteration)
            if run.iterations_done == iteration and run.out_of_time():
                break
    finally:  # also on an error: the checkpoint being written is finished
        run.reporter.close()
        run.checkpoints.close()
    return finish_run(run, state)


def start_run(config: TrainConfig, run_dir: str, progress: bool,
              log: Callable[[str], None], policy: Any = None) -> Run:
    """The fixed parts of a run, built (`training.build.build`: compiled
    steps shared through its cache) and announced."""
    started = time.perf_counter()
    mesh = make_mesh(config)
    primary = sharding.is_primary()
    parts = build_lib.build(config, mesh, policy)
    algorithm = parts.algorithm
    reporter = reporting.Reporter(config.records, run_dir, primary, progress, log,
                                  search_label=algorithm.search_label)
    # One process: checkpoints are written by a background thread while the
    # next iteration runs (several processes write them together, in step).
    checkpoints = checkpoint_lib.Checkpointer(os.path.join(run_dir, "checkpoints"),
                                              keep=config.records.run.keep_checkpoints,
                                              identity=algorithm.identity(),
                                              background=jax.process_count() == 1)
    suite = algorithm.evaluation_suite(config.records.evaluation, parts.game, parts.model,
                                       agent=parts.agent, final_agent=parts.final_agent,
                                       log=reporter.log)
    reporter.log(f"mcts_jax {algorithm.title} training: {config.game}, run folder {run_dir}")
    reporter.log(config_lib.describe(config))
    if policy is not None:
        reporter.log(f"self-play policy (a value, not the config's name): "
                     f"{parts.self_play.policy!r}")
    return Run(config=config, run_dir=run_dir, mesh=mesh, primary=primary, algorithm=algorithm,
               game=parts.game, model=parts.model, player=parts.self_play,
               learner=parts.learner, suite=suite, checkpoints=checkpoints, reporter=reporter,
               started=started)


def resume_state(run: Run) -> Tuple[TrainState, int]:
    """(state, iteration it ends): the newest intact checkpoint's state, or a
    fresh one (iteration 0), placed on the mesh. Metrics and Elo snapshots
    made after that checkpoint are dropped (they are redone)."""
    fresh = initial_state(run.config, run.model, run.player, run.learner)
    run.reporter.log(f"network: {run.model.config}, "
                     f"{run.model.num_parameters(fresh.variables):,} parameters; "
                     f"devices: {sharding.describe(run.mesh)}")
    start, variables, arrays, meta = run.checkpoints.restore_latest(
        *fresh.saved_items(), log=run.reporter.log)
    state = place(run.mesh, TrainState.from_saved_items(variables, arrays))
    run.elapsed_before = float(meta.get("elapsed_s", 0.0))
    if start:
        run.reporter.log(f"resuming from the checkpoint of iteration {start}")
    run.reporter.resume(start)
    load_elo_pool(run, start, state.variables)
    return state, start


def load_elo_pool(run: Run, start: int, variables) -> None:
    """The Elo snapshots of iterations <= `start` into `run.elo_pool` (later
    ones deleted), and snapshot 0 (the untrained network) if missing."""
    snapshots = checkpoint_lib.list_snapshots(run.snapshot_dir)
    for stale in snapshots:
        if stale > start and run.primary:  # made after the checkpoint: redone
            shutil.rmtree(os.path.join(run.snapshot_dir, f"{stale:06d}"))
    if not run.records.evaluation.elo_every:
        return
    for iteration in snapshots:
        if iteration <= start:
            run.elo_pool[iteration] = checkpoint_lib.load_snapshot(run.snapshot_dir, iteration,
                                                                   variables)
    if 0 not in run.elo_pool:
        if run.primary:
            checkpoint_lib.save_snapshot(run.snapshot_dir, 0, variables)
        run.elo_pool[0] = _local_copy(variables)


def run_iteration(run: Run, state: TrainState, iteration: int) -> TrainState:
    """One training iteration: the five phases, in order (self-play and
    updates side by side with `overlap_phases`)."""
    key, play_key, update_key, eval_key = jax.random.split(state.key, 4)
    record: Dict[str, Any] = dict(iteration=iteration)
    state = state.replace(key=key)
    if run.records.run.overlap_phases:
        state, played, learned = overlapped_phases(run, state, play_key, update_key)
        record.update(played)
    else:
        state, played = self_play_phase(run, state, play_key)
        record.update(played)
        state, learned = update_phase(run, state, update_key)
    record.update(learned, total_games=int(state.games))
    last = run.is_last(iteration)
    record.update(evaluate_phase(run, state, iteration, eval_key, last))
    record["elapsed_s"] = round(run.elapsed(), 2)
    run.reporter.iteration(record)  # before the checkpoint (see checkpoint.py)
    checkpoint_phase(run, state, iteration, record["elapsed_s"], last)
    run.iterations_done = iteration
    return state


def overlapped_phases(run: Run, state: TrainState, play_key: jax.Array, update_key: jax.Array
                      ) -> Tuple[TrainState, Dict[str, Any], Dict[str, Any]]:
    """Self-play and updates at the same time, on two threads (each phase is
    a chain of jitted calls; JAX releases the GIL while they run, so on a CPU
    each phase gets its own core).

    Both start from the iteration's starting state: self-play plays with the
    network as it was before this iteration's updates, and the updates draw
    from the replay buffer as it was before this iteration's games. So the
    network is one iteration staler than in the sequential order, and the
    result depends only on the TrainState (a resumed run continues exactly).
    Each phase gets its own copy of what the other one donates (the buffer,
    the variables). Returns (state, self-play record, update record).
    """
    if jax.process_count() > 1:
        raise ValueError("--overlap-phases runs on one process only (two threads launching "
                         "collectives could interleave differently on each process)")
    play_variables = jax.tree.map(jnp.copy, state.variables)
    learn_state = state.replace(buffer=jax.tree.map(jnp.copy, state.buffer))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        updating = pool.submit(update_phase, run, learn_state, update_key, False)
        played_state, played = self_play_phase(run, state, play_key, play_variables)
        learned_state, learned = updating.result()
    return played_state.replace(learner=learned_state.learner), played, learned


def self_play_phase(run: Run, state: TrainState, key: jax.Array,
                    variables: Any = None) -> Tuple[TrainState, Dict[str, Any]]:
    """`moves_per_iteration` self-play moves of all B games with the
    network's `variables` (None: the current ones); finished games' samples
    go to the replay buffer."""
    games_setting, search = run.records.self_play, run.records.search
    variables = state.variables if variables is None else variables
    tick = time.perf_counter()
    totals = jnp.zeros((4,), jnp.int32)
    score = jnp.zeros((), jnp.float32)
    games_in_progress, buffer = state.self_play, state.buffer
    moves_per_iteration = games_setting.moves_per_iteration
    move_keys = jax.random.split(key, moves_per_iteration)
    for move in run.reporter.progress(range(moves_per_iteration), "self-play", "move"):
        games_in_progress, buffer, stats = run.player.step(
            variables, move_keys[move], games_in_progress, buffer)
        totals = totals + jnp.stack([stats.games, stats.plies, stats.draws,
                                     stats.full_search.astype(jnp.int32)])
        score = score + stats.score
    games, plies, draws, full_steps = (int(x) for x in np.asarray(totals))  # waits
    seconds = time.perf_counter() - tick
    fast_steps = moves_per_iteration - full_steps  # playout cap randomisation
    simulations = games_setting.num_games * (full_steps * search.num_simulations
                                             + fast_steps * games_setting.fast_simulations)
    record = dict(games=games, mean_game_length=round(plies / max(games, 1), 2),
                  draw_rate=round(draws / max(games, 1), 4),
                  games_per_s=round(games / seconds, 1),
                  simulations_per_s=round(simulations / seconds, 1),
                  self_play_s=round(seconds, 4))
    if getattr(run.game, "num_players", 2) == 1:  # 2048: the finished games' mean score, not draws
        del record["draw_rate"]
        record["mean_score"] = round(float(score) / max(games, 1), 1)
    moves = moves_per_iteration * games_setting.num_games
    return state.replace(self_play=games_in_progress, buffer=buffer, games=state.games + games,
                         moves=state.moves + moves), record


def update_phase(run: Run, state: TrainState, key: jax.Array,
                 progress: bool = True) -> Tuple[TrainState, Dict[str, Any]]:
    """`updates_per_iteration` learner updates on minibatches of the replay
    buffer, once it holds `min_replay` ready samples; the record holds the
    mean of each loss metric. progress: show a progress bar (when the
    reporter shows them)."""
    updates = run.records.optimizer.updates_per_iteration
    tick = time.perf_counter()
    ready = int(run.learner.num_ready(state.buffer))
    record: Dict[str, Any] = dict(replay_ready=ready)
    learner_state = state.learner
    if ready >= max(run.records.replay.min_replay, 1):
        sums: Dict[str, Any] = {}
        update_keys = jax.random.split(key, updates)
        steps = range(updates)
        for step in (run.reporter.progress(steps, "updates", "update") if progress else steps):
            learner_state, metrics = run.learner.update(learner_state, update_keys[step],
                                                        state.buffer)
            sums = metrics if not sums else jax.tree.map(jnp.add, sums, metrics)
        record.update({name: round(float(v) / updates, 5)
                       for name, v in sums.items()})
    record["updates"] = int(learner_state.updates)
    record["update_s"] = round(time.perf_counter() - tick, 4)
    return state.replace(learner=learner_state), record


def evaluate_phase(run: Run, state: TrainState, iteration: int, key: jax.Array,
                   last: Optional[bool] = None) -> Dict[str, Any]:
    """Matches against the reference opponents every `eval_every` iterations,
    and an Elo snapshot with its matches every `elo_every` (both at the last
    iteration too; `last` None: the configured last)."""
    evaluation = run.records.evaluation
    tick = time.perf_counter()
    last = iteration == run.records.run.iterations if last is None else last
    record: Dict[str, Any] = {}
    evaluated = None
    if evaluation.eval_every and (iteration % evaluation.eval_every == 0 or last):
        evaluated = _local_copy(state.variables)
        record.update(run.suite.periodic(evaluated, _local_key(key, 0)))
        record.update(run.algorithm.evaluate(run.learner, state.variables, state.buffer,
                                             _local_key(key, 2)))
    if evaluation.elo_every and (iteration % evaluation.elo_every == 0 or last):
        evaluated = _local_copy(state.variables) if evaluated is None else evaluated
        record["elo_matches"] = run.suite.elo_matches(evaluated, iteration, run.elo_pool,
                                                      _local_key(key, 1))
        if run.primary:
            checkpoint_lib.save_snapshot(run.snapshot_dir, iteration, evaluated)
        run.elo_pool[iteration] = evaluated
        ratings = evaluation_lib.elo_ratings(run.reporter.records + [record | dict(
            iteration=iteration)])
        if iteration in ratings:
            record["elo"] = ratings[iteration]
    record["eval_s"] = round(time.perf_counter() - tick, 2)
    return record


def checkpoint_phase(run: Run, state: TrainState, iteration: int, elapsed_s: float,
                     last: Optional[bool] = None) -> None:
    """The TrainState to disk every `checkpoint_every` iterations and at the
    last (`last` None: the configured last). Returns once the arrays are
    copied to host memory; with one process the files are written in the
    background while the next iteration runs (`Checkpointer`)."""
    last = iteration == run.records.run.iterations if last is None else last
    if iteration % run.records.run.checkpoint_every and not last:
        return
    variables, arrays = _for_checkpoint(*state.saved_items())
    # `updates` in the meta lets Agent.load tell an untrained network.
    run.checkpoints.save(iteration, variables, arrays,
                         dict(elapsed_s=elapsed_s, updates=int(state.learner.updates)))


def finish_run(run: Run, state: TrainState) -> Dict[str, Any]:
    """The end-of-run evaluation and summary (final.json, plots, console)."""
    settings, records = run.records.run, run.reporter.records
    # On the first device, as the periodic evaluation's key is: an uncommitted
    # key would compile every evaluation match again.
    final_key = sharding.local_copy(jax.random.fold_in(jax.random.key(settings.seed), 10 ** 6))
    summary: Dict[str, Any] = dict(iterations=run.iterations_done, total_games=int(state.games),
                                   total_updates=int(state.learner.updates))
    tick = time.perf_counter()
    summary.update(run.suite.final(_local_copy(state.variables), final_key))
    summary["final_eval_s"] = round(time.perf_counter() - tick, 2)
    ratings = evaluation_lib.elo_ratings(records)
    summary["elo"] = {str(k): v for k, v in sorted(ratings.items())}
    speeds = [r for r in records if "games_per_s" in r][1:]  # the first includes compiling
    if speeds:
        summary["mean_games_per_s"] = round(float(np.mean([r["games_per_s"] for r in speeds])), 1)
        summary["mean_simulations_per_s"] = round(
            float(np.mean([r["simulations_per_s"] for r in speeds])), 1)
    summary["training_s"] = records[-1]["elapsed_s"] if records else None
    summary["wall_s_this_session"] = round(time.perf_counter() - run.started, 2)
    run.reporter.final(summary, ratings)
    games, updates = summary["total_games"], summary["total_updates"]
    if updates == 0:
        run.reporter.log(f"warning: 0 learner updates ({games} finished self-play games): the "
                         f"network is untrained (more --iterations or --moves-per-iteration, "
                         f"or a lower --min-replay)")
    elif settings.preset == "tiny":
        run.reporter.log(f"--preset tiny is a smoke test of the pipeline at the smallest "
                         f"shapes ({games} games, {updates} updates): its agent is all but "
                         f"untrained")
    return summary


def _local_copy(variables):
    """A copy of replicated `variables` on this process's first device (what
    evaluation, Elo snapshots and the Agent use; updates donate the
    originals)."""
    return jax.tree.map(jnp.copy, sharding.local_copy(variables))


def _local_key(key, salt: int):
    """fold_in(key, salt) as a key on this process's first device."""
    return sharding.local_copy(jax.random.fold_in(key, salt))


def _for_checkpoint(variables, arrays):
    """What `Checkpointer.save` is given: the arrays as they are with one
    process (it reads them whole with np.asarray); with several, every leaf
    gathered to its global value in every process first (a collective)."""
    if jax.process_count() == 1:
        return variables, arrays
    return sharding.to_host(variables), sharding.to_host(arrays)
