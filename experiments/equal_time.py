"""train.py runs compared at equal wall time, interleaved seed by seed.

The shared machinery of `experiments.learned_models` and
`experiments.connect_four_recipe`: a section is (settings shared by its
sides, [(side name, the side's own settings)]). Each cell is one `train.py`
run in a subprocess, alone on the machine, with `--max-training-s` (every
side stops after the first iteration past the same budget) and the same
settings but the ones compared. The runs are interleaved seed by seed (A
seed 0, B seed 0, A seed 1, ...), so a drift of the machine's speed falls
on every side. With `side_by_side` a seed's sides run at the same time
instead, each pinned to its own share of the cores.

The results file (benchmarks/results/<name>-cpu.json) keeps, per run, its
settings, iterations, self-play games and final figures, the run folder
(its sessions.jsonl names the commit, command and machine) and the
evaluation curve of every run; `plot` draws one figure of every run's
curve against training minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from benchmarks import harness

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

Section = Tuple[Dict[str, Any], List[Tuple[str, Dict[str, Any]]]]

# final.json figures a row keeps (those a run has).
FIGURES = ("final_score_mean", "final_score_median", "final_score_sem",
           "final_policy_score_mean", "final_tile_1024_rate",
           "final_tile_2048_rate", "final_random_score_mean", "final_vs_perfect_wins",
           "final_vs_perfect_draws", "final_vs_perfect_losses", "final_vs_perfect_as_first",
           "final_vs_perfect_as_second", "final_policy_optimal", "final_vs_random_score",
           "final_vs_uct_score", "final_solver_search_accuracy",
           "final_solver_search_accuracy_opening", "final_solver_search_accuracy_middle",
           "final_solver_search_accuracy_late", "final_solver_search_accuracy_hard",
           "final_solver_policy_accuracy", "final_vs_solver_first_wins",
           "final_vs_solver_first_draws", "final_vs_solver_first_losses", "final_first_move",
           "final_first_move_value", "training_s",
           "total_games", "iterations", "mean_simulations_per_s")
# Metric names of the evaluation curve (by prefix).
CURVE_PREFIXES = ("score_", "tile_", "vs_perfect_", "policy_optimal", "solver_",
                  "vs_solver_first_", "first_move")


def command(run_dir: str, settings: Dict[str, Any], seed: int, seconds: float) -> List[str]:
    """The train.py command line of one cell (settings as flags)."""
    line = [sys.executable, os.path.join(ROOT, "train.py"), "--run-dir", run_dir,
            "--no-progress", "--overwrite", "--seed", str(seed), "--max-training-s", str(seconds)]
    for name, value in settings.items():
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, bool):
            line.append(flag if value else f"--no-{name.replace('_', '-')}")
        else:
            line += [flag, str(value)]
    return line


def start_cell(run_dir: str, settings: Dict[str, Any], seed: int, seconds: float,
               cores: Sequence[int] = None) -> Tuple[List[str], float, subprocess.Popen]:
    """Starts one train.py run in a subprocess, pinned to `cores` (CPU
    numbers; None: the cores this process may use). Returns (command line,
    start time, process) for `finish_cell`."""
    line = command(run_dir, settings, seed, seconds)
    pin = None if cores is None else (lambda: os.sched_setaffinity(0, set(cores)))
    # stderr to a file, not a pipe: a run that writes more than a pipe holds
    # while another is awaited would block.
    errors = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(line, stdout=subprocess.DEVNULL, stderr=errors, text=True,
                               cwd=ROOT, preexec_fn=pin)
    process.errors = errors
    return line, time.perf_counter(), process


def wait_all(started: Sequence[Tuple[List[str], float, subprocess.Popen]]) -> List[float]:
    """Waits for every run `start_cell` started; the `time.perf_counter()`
    time each one ended (seen within a second)."""
    ended: List[Optional[float]] = [None] * len(started)
    while any(t is None for t in ended):
        for index, (_, _, process) in enumerate(started):
            if ended[index] is None and process.poll() is not None:
                ended[index] = time.perf_counter()
        if any(t is None for t in ended):
            time.sleep(1.0)
    return ended


def finish_cell(run_dir: str, started: Tuple[List[str], float, subprocess.Popen],
                ended: Optional[float] = None) -> Dict[str, Any]:
    """Waits for a run `start_cell` started; its final.json figures, its wall
    time (to `ended`, when `wait_all` saw it end; else to now) and its
    command."""
    line, tick, process = started
    process.wait()
    process.errors.seek(0)
    stderr = process.errors.read()
    process.errors.close()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(line)} failed:\n{stderr[-3000:]}")
    with open(os.path.join(run_dir, "final.json")) as f:
        final = json.load(f)
    row = {k: final[k] for k in FIGURES if k in final}
    row["wall_s"] = round((ended or time.perf_counter()) - tick, 1)
    row["command"] = " ".join(line[1:])
    return row


def run_cell(run_dir: str, settings: Dict[str, Any], seed: int, seconds: float) -> Dict[str, Any]:
    """One train.py run, alone on the machine; its final.json figures."""
    return finish_cell(run_dir, start_cell(run_dir, settings, seed, seconds))


def core_shares(num_sides: int) -> List[List[int]]:
    """The cores this process may use, split into `num_sides` equal disjoint
    shares (the first ones), for sides run at the same time."""
    cores = sorted(os.sched_getaffinity(0))
    if num_sides > len(cores):
        raise ValueError(f"side_by_side: {num_sides} sides need as many cores, this process "
                         f"may use {len(cores)} ({cores})")
    share = len(cores) // num_sides
    return [cores[i * share:(i + 1) * share] for i in range(num_sides)]


def curve(run_dir: str) -> List[Dict[str, Any]]:
    """(iteration, training seconds, the evaluation's figures) of every
    evaluated iteration of a run."""
    rows = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            shown = {k: v for k, v in record.items() if k.startswith(CURVE_PREFIXES)}
            if shown:
                rows.append(dict(iteration=record["iteration"], elapsed_s=record["elapsed_s"],
                                 **shown))
    return rows


def plot(curves: Dict[str, List[Dict[str, Any]]], name: str, key: str, title: str) -> str:
    """Every run's `key` against training minutes in one figure:
    results/plots/<name>-cpu.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(7, 4))
    for run, rows in curves.items():
        points = [(r["elapsed_s"] / 60.0, r[key]) for r in rows if key in r]
        if points:
            axis.plot(*zip(*points), marker="o", label=run)
    axis.set_xlabel("training minutes (2-core CPU)")
    axis.set_ylabel(key)
    axis.set_title(title)
    axis.legend(fontsize=8)
    path = os.path.join(harness.RESULTS_DIR, "plots", f"{name}-cpu.png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return path


def select_sides(parser, section_name: str, section: Section, chosen) -> Section:
    """`section` with only the sides named in `chosen` (None or empty: all);
    an unknown name is a command-line error of `parser` (an argparse
    parser) naming the section's sides."""
    common, sides = section
    if not chosen:
        return section
    unknown = sorted(set(chosen) - {name for name, _ in sides})
    if unknown:
        parser.error(f"--sides: no side {unknown} in section {section_name!r} "
                     f"(it has {[name for name, _ in sides]})")
    return common, [(name, settings) for name, settings in sides if name in chosen]


def compare(name: str, section: Section, minutes: float, seeds: Sequence[int],
            judged: Sequence[str], plot_key: str, run_root: str = None,
            save: bool = True, extra_settings: Dict[str, Any] = None,
            side_by_side: bool = False) -> List[Dict[str, Any]]:
    """Runs every side of `section` for `minutes` of training per seed,
    interleaved; prints a row per run, plots `plot_key` and writes
    results/<name>-cpu.json (columns: the run's size and `judged`).

    side_by_side: run a seed's sides at the same time, each pinned to its own
    equal share of the cores (`core_shares`; with 2 cores and 2 sides, one
    core each), instead of one after the other with the whole machine: half
    the wall time, and a drift of the machine falls on both sides at once.
    Each run then has fewer cores, so its figures are not those of a run
    alone on the machine."""
    run_root = run_root or tempfile.mkdtemp(prefix=f"{name}_")
    common, sides = section
    shares = core_shares(len(sides)) if side_by_side else None
    rows: List[Dict[str, Any]] = []
    for seed in seeds:
        cells = [(side, settings, os.path.join(run_root, f"{side}_seed{seed}"))
                 for side, settings in sides]
        if side_by_side:
            started = [start_cell(run_dir, dict(common, **settings), seed, 60.0 * minutes,
                                  cores=share)
                       for (_, settings, run_dir), share in zip(cells, shares)]
            ended = wait_all(started)
            finished = [finish_cell(run_dir, run, end)
                        for (_, _, run_dir), run, end in zip(cells, started, ended)]
        else:
            finished = [run_cell(run_dir, dict(common, **settings), seed, 60.0 * minutes)
                        for _, settings, run_dir in cells]
        for (side, _, run_dir), figures, share in zip(cells, finished,
                                                       shares or [None] * len(cells)):
            row = dict(side=side, seed=seed, run_dir=run_dir, **figures)
            if share is not None:
                row["cores"] = share
            rows.append(row)
            print(json.dumps({k: row[k] for k in row if k not in ("command", "run_dir")}),
                  flush=True)
    settings = dict(harness.provenance(seed=list(seeds)), minutes=minutes, seeds=list(seeds),
                    run_dir=run_root, common=common, sides=dict(sides), side_by_side=side_by_side,
                    cores=shares, **(extra_settings or {}))
    columns = ["side", "seed", "iterations", "total_games", "training_s"] + list(judged)
    curves = {f"{row['side']}_seed{row['seed']}": curve(row["run_dir"]) for row in rows}
    if save and any(plot_key in r for c in curves.values() for r in c):
        print("plot:", plot(curves, name, plot_key, f"{name}: {minutes} min per run"))
    harness.report(name, f"{name}: {minutes} min per run, seeds {list(seeds)}", columns, rows,
                   settings, save_results=save, curves=[curves])
    return rows
