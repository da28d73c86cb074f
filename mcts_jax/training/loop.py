"""The AlphaZero training loop: self-play, updates, evaluation, checkpoints.

    config, run_dir = loop.open_run("runs/tic_tac_toe", explicit_flags)
    summary = loop.train(config, run_dir)

One iteration: `moves_per_iteration` self-play moves of all B games (one
jitted step each), then `updates_per_iteration` updates on minibatches of the
replay buffer (once it holds `min_replay` ready samples), then evaluation
and an Elo snapshot when due, then one metrics record, then a checkpoint when
due. The run folder holds:

    config.json      the settings (printed at start)
    metrics.jsonl    one record per iteration (losses, speed, evaluations)
    checkpoints/     orbax, the last `keep_checkpoints`
    snapshots/       network variables of the Elo snapshots
    final.json       end-of-run evaluation
    plots/           loss.png, elo.png, win_rates.png
    tensorboard/     if a TensorBoard writer is installed

Devices (`config.devices`, see `mcts_jax.sharding` and docs/multi_device.md):
the B self-play games, the replay buffer's game rows and every minibatch are
split over a 1-D "data" mesh; the network, optimiser state and keys are
replicated; one compiled program per step, partitioned by XLA. Checkpoints
hold plain arrays (gathered), so a run restores on any device count.
Evaluation matches run on one device of each process. With several
processes only process 0 writes the metrics, snapshots, plots and final.json.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import time
from typing import Any, Callable, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import envs
from envs import symmetry
from mcts_jax import networks, sharding
from mcts_jax.training import checkpoint as checkpoint_lib
from mcts_jax.training import config as config_lib
from mcts_jax.training import evaluation as evaluation_lib
from mcts_jax.training import learner as learner_lib
from mcts_jax.training import plots, replay, self_play
from mcts_jax.training.config import TrainConfig


def default_run_dir(config: TrainConfig) -> str:
    suffix = "" if config.preset == "default" else f"_{config.preset}"
    return os.path.join("runs", config.game + suffix)


def _write_json(path: str, data) -> None:
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(temporary, path)


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
        changes = config_lib.changed_settings(saved, config)
        if changes:
            log("changed settings on resume: " + "; ".join(changes))
    else:
        config = fresh
    make_mesh(config)  # the device count and batch sizes fit, before anything is written
    os.makedirs(run_dir, exist_ok=True)
    _write_json(config_path, config.to_json())
    return config, run_dir


class _TensorBoard:
    """Scalars to TensorBoard when a writer is installed (tensorboardX or
    torch); otherwise nothing."""

    def __init__(self, directory: str):
        self.writer = None
        try:
            from tensorboardX import SummaryWriter  # type: ignore
        except ImportError:
            try:
                from torch.utils.tensorboard import SummaryWriter  # type: ignore
            except ImportError:
                return
        self.writer = SummaryWriter(directory)

    def write(self, record: Dict[str, Any]) -> None:
        if self.writer is None:
            return
        for key, value in record.items():
            if isinstance(value, (int, float)) and key != "iteration":
                self.writer.add_scalar(key, value, record["iteration"])
        self.writer.flush()


def make_mesh(config: TrainConfig) -> jax.sharding.Mesh:
    """The 1-D "data" mesh of `config.devices` devices (0: every device).
    Raises ValueError naming the flag when --num-games or --train-batch-size
    is not a multiple of the device count."""
    mesh = sharding.make_mesh(config.devices or None)
    hint = f" (--devices {sharding.num_devices(mesh)})"
    sharding.check_divisible("--num-games", config.num_games, mesh, hint)
    sharding.check_divisible("--train-batch-size", config.train_batch_size, mesh, hint)
    return mesh


def state_shardings(mesh: jax.sharding.Mesh, variables, state):
    """(variables, state) shardings: the network, optimiser state, counters
    and key replicated; the games in progress split along B (axis 0) and the
    replay buffer [T, B, ...] along its game rows (axis 1)."""
    whole = sharding.replicated(mesh)
    state_specs = jax.tree.map(lambda _: whole, state)
    state_specs["self_play"] = sharding.batch_shardings(state["self_play"], mesh)
    state_specs["buffer"] = sharding.batch_shardings(state["buffer"], mesh, axis=1)
    return jax.tree.map(lambda _: whole, variables), state_specs


def place(mesh: jax.sharding.Mesh, variables, state):
    """(variables, state) put on the mesh (see `state_shardings`); host or
    one-device arrays (a fresh state, a restored checkpoint) of any origin."""
    variable_specs, state_specs = state_shardings(mesh, variables, state)
    return sharding.put(variables, variable_specs), sharding.put(state, state_specs)


@functools.lru_cache(maxsize=8)
def build(config: TrainConfig, mesh: Optional[jax.sharding.Mesh] = None):
    """(game, model, SelfPlay, Learner) of a config, split over `mesh` (None:
    one device). Cached: the same config and mesh give the same objects, so a
    second run in one process (a resumed run, a notebook, a test) reuses the
    compiled steps."""
    game = envs.make(config.game)
    model = networks.make_model(config.network_config(), game)
    player = self_play.SelfPlay(
        game=game, model=model, policy=config.policy, num_simulations=config.simulations,
        num_games=config.num_games, max_nodes=config.search_max_nodes,
        reuse_tree=config.reuse_tree, temperature_moves=config.temperature_moves,
        dirichlet_fraction=config.dirichlet_fraction, dirichlet_alpha=config.dirichlet_alpha,
        considered_actions=config.considered_actions,
        random_opening_plies=config.random_opening_plies,
        max_game_length=config.max_game_length, mesh=mesh, search_mode=config.search_mode)
    optimizer = learner_lib.make_optimizer(
        config.learning_rate, config.total_updates, config.warmup_fraction,
        config.end_learning_rate_fraction, config.weight_decay, config.clip_norm)
    use_symmetry = config.augment and symmetry.tables(config.game) is not None
    learner = learner_lib.Learner(model=model, optimizer=optimizer,
                                  batch_size=config.train_batch_size,
                                  value_weight=config.value_weight,
                                  symmetries=config.game if use_symmetry else None,
                                  mesh=mesh)
    return game, model, player, learner


def initial_state(config: TrainConfig, model, player, learner):
    """(variables, state) of a fresh run, on the default device (see `place`);
    `state` is what a checkpoint holds besides the variables."""
    key = jax.random.key(config.seed)
    key, init_key, play_key = jax.random.split(key, 3)
    variables = model.init(init_key)
    learner_state = learner.init(variables)
    dummy = player.game.init(jax.random.key(0), 1)
    buffer = replay.init(config.replay_slots, config.num_games,
                         dummy.observation.shape[1:], dummy.observation.dtype,
                         player.game.num_actions)
    state = dict(opt_state=learner_state.opt_state, updates=learner_state.updates,
                 buffer=buffer, self_play=player.init(play_key), key=key,
                 games=jnp.zeros((), jnp.int32), moves=jnp.zeros((), jnp.int32))
    return variables, state


def checkpoint_identity(config: TrainConfig) -> Dict[str, Any]:
    """What a checkpoint must match to be resumed by this configuration: the
    game and the network's architecture (checked before any array is read)."""
    return dict(game=config.game, network=dataclasses.asdict(config.network_config()))


def train(config: TrainConfig, run_dir: str, progress: bool = True,
          log: Callable[[str], None] = print) -> Dict[str, Any]:
    """Runs (or continues) the training run in `run_dir`; returns the final
    evaluation record (also written to final.json)."""
    started = time.perf_counter()
    mesh = make_mesh(config)
    primary = sharding.is_primary()
    if not primary:
        log = lambda *_: None  # noqa: E731  (process 0 reports)
        progress = False
    game, model, player, learner = build(config, mesh)
    suite = evaluation_lib.Evaluation(config, game, model, log=log)
    checkpoints = checkpoint_lib.Checkpointer(os.path.join(run_dir, "checkpoints"),
                                              keep=config.keep_checkpoints,
                                              identity=checkpoint_identity(config))
    metrics_path = os.path.join(run_dir, "metrics.jsonl")
    snapshot_dir = os.path.join(run_dir, "snapshots")
    tensorboard = _TensorBoard(os.path.join(run_dir, "tensorboard"))

    variables, state = initial_state(config, model, player, learner)
    log(f"mcts_jax AlphaZero training: {config.game}, run folder {run_dir}")
    log(config_lib.describe(config))
    log(f"network: {config.network_config()}, {model.num_parameters(variables):,} parameters; "
        f"devices: {sharding.describe(mesh)}")

    start, variables, state, meta = checkpoints.restore_latest(variables, state, log=log)
    variables, state = place(mesh, variables, state)
    elapsed_before = float(meta.get("elapsed_s", 0.0))
    if start:
        log(f"resuming from the checkpoint of iteration {start}")
    records = checkpoint_lib.truncate_metrics(metrics_path, start)
    for stale in checkpoint_lib.list_snapshots(snapshot_dir):
        if stale > start and primary:  # made after the checkpoint: redone
            shutil.rmtree(os.path.join(snapshot_dir, f"{stale:06d}"))
    pool: Dict[int, Any] = {}  # Elo snapshots, on this process's first device
    if config.elo_every:
        for it in checkpoint_lib.list_snapshots(snapshot_dir):
            if it <= start:
                pool[it] = checkpoint_lib.load_snapshot(snapshot_dir, it, variables)
        if 0 not in pool:
            if primary:
                checkpoint_lib.save_snapshot(snapshot_dir, 0, variables)
            pool[0] = _local_copy(variables)
    learner_state = learner_lib.LearnerState(variables=variables, opt_state=state["opt_state"],
                                             updates=state["updates"])
    sims_per_move = config.num_games * config.simulations

    bar = tqdm(total=config.iterations, initial=start, desc=config.game, unit="it",
               disable=not progress, dynamic_ncols=True)
    for iteration in range(start + 1, config.iterations + 1):
        key, play_key, update_key, eval_key = jax.random.split(state["key"], 4)
        record: Dict[str, Any] = dict(iteration=iteration)

        # ---- self-play ------------------------------------------------------
        tick = time.perf_counter()
        totals = jnp.zeros((3,), jnp.int32)
        self_play_state, buffer = state["self_play"], state["buffer"]
        move_keys = jax.random.split(play_key, config.moves_per_iteration)
        for move in tqdm(range(config.moves_per_iteration), desc="self-play", leave=False,
                         disable=not progress, unit="move"):
            move_key = move_keys[move]
            self_play_state, buffer, stats = player.step(learner_state.variables, move_key,
                                                         self_play_state, buffer)
            totals = totals + jnp.stack([stats.games, stats.plies, stats.draws])
        totals = np.asarray(totals)  # waits for the device
        play_seconds = time.perf_counter() - tick
        games, plies, draws = (int(x) for x in totals)
        record.update(games=games, mean_game_length=round(plies / max(games, 1), 2),
                      draw_rate=round(draws / max(games, 1), 4),
                      games_per_s=round(games / play_seconds, 1),
                      simulations_per_s=round(config.moves_per_iteration * sims_per_move
                                              / play_seconds, 1),
                      self_play_s=round(play_seconds, 2))

        # ---- updates ----------------------------------------------------------
        tick = time.perf_counter()
        ready = int(replay.num_ready(buffer))
        record["replay_ready"] = ready
        if ready >= max(config.min_replay, 1):
            sums: Dict[str, Any] = {}
            update_keys = jax.random.split(update_key, config.updates_per_iteration)
            for step in tqdm(range(config.updates_per_iteration), desc="updates", leave=False,
                             disable=not progress, unit="update"):
                learner_state, metrics = learner.update(learner_state, update_keys[step], buffer)
                sums = metrics if not sums else jax.tree.map(jnp.add, sums, metrics)
            record.update({name: round(float(v) / config.updates_per_iteration, 5)
                           for name, v in sums.items()})
        record["updates"] = int(learner_state.updates)
        record["update_s"] = round(time.perf_counter() - tick, 2)
        state = dict(state, self_play=self_play_state, buffer=buffer, key=key,
                     games=state["games"] + games,
                     moves=state["moves"] + config.moves_per_iteration * config.num_games)
        record["total_games"] = int(state["games"])

        # ---- evaluation ---------------------------------------------------------
        tick = time.perf_counter()
        last = iteration == config.iterations
        evaluated = None
        if config.eval_every and (iteration % config.eval_every == 0 or last):
            evaluated = _local_copy(learner_state.variables)
            record.update(suite.periodic(evaluated, _local_key(eval_key, 0)))
        if config.elo_every and (iteration % config.elo_every == 0 or last):
            if evaluated is None:
                evaluated = _local_copy(learner_state.variables)
            record["elo_matches"] = suite.elo_matches(evaluated, iteration, pool,
                                                      _local_key(eval_key, 1))
            if primary:
                checkpoint_lib.save_snapshot(snapshot_dir, iteration, evaluated)
            pool[iteration] = evaluated
            ratings = evaluation_lib.elo_ratings(records + [record])
            if iteration in ratings:
                record["elo"] = ratings[iteration]
        record["eval_s"] = round(time.perf_counter() - tick, 2)
        record["elapsed_s"] = round(elapsed_before + time.perf_counter() - started, 2)

        # ---- metrics, then checkpoint -------------------------------------------------
        if primary:
            checkpoint_lib.append_metrics(metrics_path, record)
            tensorboard.write(record)
        records.append(record)
        if iteration % config.checkpoint_every == 0 or last:
            saved_variables, saved_state = _for_checkpoint(
                learner_state.variables, dict(state, opt_state=learner_state.opt_state,
                                              updates=learner_state.updates))
            checkpoints.save(iteration, saved_variables, saved_state,
                             dict(elapsed_s=record["elapsed_s"]))
        _report(bar, record, log)

    bar.close()
    checkpoints.close()

    # ---- end of run -----------------------------------------------------------------
    final_key = jax.random.fold_in(jax.random.key(config.seed), 10 ** 6)
    summary: Dict[str, Any] = dict(iterations=config.iterations,
                                   total_games=int(state["games"]))
    tick = time.perf_counter()
    summary.update(suite.final(_local_copy(learner_state.variables), final_key))
    summary["final_eval_s"] = round(time.perf_counter() - tick, 2)
    ratings = evaluation_lib.elo_ratings(records)
    summary["elo"] = {str(k): v for k, v in sorted(ratings.items())}
    speeds = [r for r in records if "games_per_s" in r][1:]  # the first includes compiling
    if speeds:
        summary["mean_games_per_s"] = round(float(np.mean([r["games_per_s"] for r in speeds])), 1)
        summary["mean_simulations_per_s"] = round(
            float(np.mean([r["simulations_per_s"] for r in speeds])), 1)
    summary["training_s"] = records[-1]["elapsed_s"] if records else None
    summary["wall_s_this_session"] = round(time.perf_counter() - started, 2)
    if primary:
        _write_json(os.path.join(run_dir, "final.json"), summary)
        plots.write_plots(records, ratings, os.path.join(run_dir, "plots"), config.game)
    log("final evaluation: " + json.dumps(summary))
    for line in describe_summary(config, summary):
        log(line)
    return summary


def _local_copy(variables):
    """A copy of replicated `variables` on this process's first device (what
    evaluation, Elo snapshots and the Agent use; updates donate the
    originals)."""
    return jax.tree.map(jnp.copy, sharding.local_copy(variables))


def _local_key(key, salt: int):
    """fold_in(key, salt) as a key on this process's first device."""
    return sharding.local_copy(jax.random.fold_in(key, salt))


def _for_checkpoint(variables, state):
    """What `Checkpointer.save` is given: the arrays as they are with one
    process (it reads them whole with np.asarray); with several, every leaf
    gathered to its global value in every process first (a collective)."""
    if jax.process_count() == 1:
        return variables, state
    return sharding.to_host(variables), sharding.to_host(state)


def describe_summary(config: TrainConfig, summary: Dict[str, Any]):
    """Readable lines of the end-of-run figures."""
    lines = [f"training: {summary['iterations']} iterations, {summary['total_games']} self-play "
             f"games, {summary.get('training_s')} s; self-play {summary.get('mean_games_per_s')} "
             f"games/s, {summary.get('mean_simulations_per_s')} simulations/s"]
    sims = summary.get("final_simulations")
    for name, label in (("perfect", "perfect play"),
                        ("uct", f"UCT ({sims} simulations, {config.uct_playouts} random "
                                f"playout(s) per leaf)"),
                        ("random", "a random player")):
        if f"final_vs_{name}_wins" in summary:
            w, d, l = (summary[f"final_vs_{name}_{k}"] for k in ("wins", "draws", "losses"))
            lines.append(f"agent ({config.policy}, {sims} simulations) vs {label}: {w} wins, "
                         f"{d} draws, {l} losses in {w + d + l} games (half as each side)")
    if "final_policy_optimal" in summary:
        lines.append(f"raw policy network (no search) optimal in "
                     f"{100 * summary['final_policy_optimal']:.2f}% of the 4520 reachable "
                     f"non-terminal positions")
    if "final_vs_solver_first_wins" in summary:
        w, d, l = (summary[f"final_vs_solver_first_{k}"] for k in ("wins", "draws", "losses"))
        lines.append(f"agent ({config.policy}, {sims} simulations) moving first vs the perfect "
                     f"solver (bitbully): {w} wins, {d} draws, {l} losses in {w + d + l} games "
                     f"(a perfect first player wins them all)")
    if "final_solver_positions" in summary:
        def accuracy(name):
            stages = ", ".join(f"{stage} {100 * summary[f'final_solver_{name}_accuracy_{stage}']:.1f}%"
                               for stage in ("opening", "middle", "late")
                               if f"final_solver_{name}_accuracy_{stage}" in summary)
            return f"{100 * summary[f'final_solver_{name}_accuracy']:.1f}% ({stages})"
        lines.append(f"move accuracy on {summary['final_solver_positions']} solver-labelled "
                     f"positions (the move keeps the game-theoretic value): raw policy network "
                     f"{accuracy('policy')}; search ({config.policy}, {sims} simulations) "
                     f"{accuracy('search')}")
    return lines


_SHOWN = ("loss", "games_per_s", "simulations_per_s", "vs_random_score", "vs_uct_score",
          "vs_perfect_losses", "policy_optimal", "vs_solver_first_wins",
          "solver_policy_accuracy", "solver_search_accuracy", "elo")


def _report(bar, record: Dict[str, Any], log) -> None:
    bar.set_postfix({k: record[k] for k in ("loss", "games_per_s", "simulations_per_s")
                     if k in record})
    bar.update(1)
    if any(k in record for k in ("vs_random_score", "elo")):
        shown = ", ".join(f"{k}={record[k]}" for k in _SHOWN if k in record)
        message = f"iteration {record['iteration']}: {shown}"
        if bar.disable:
            log(message)
        else:
            bar.write(message)
