"""Learned-model training runs compared at equal wall time, interleaved.

    python -m benchmarks.learned_models --section gumbel --minutes 4 --seeds 0
    python -m benchmarks.learned_models --section reanalyse --minutes 4 --seeds 0 1 2

Each cell is one `train.py` run in a subprocess, alone on the machine, with
`--max-training-s` (every side stops after the first iteration past the
same budget) and the same settings but the one compared. The runs are
interleaved seed by seed (A seed 0, B seed 0, A seed 1, ...), so a drift of
the machine's speed falls on both sides. Every run evaluates at its end
only (`--eval-every 0`: no evaluation time inside the budget) against the
game's strongest judge (tic-tac-toe: the perfect player, 200 games, half
as each side). The learning rate is constant after a short warmup
(`--iterations` well beyond the budget), the same for both sides.

Sections:
  gumbel     (tic-tac-toe) Gumbel MuZero (learned model) against AlphaZero with the same
             Gumbel search on the real game, at 4 and at 16 simulations.
  reanalyse  (tic-tac-toe) MuZero with --reanalyse-fraction 0.125 against 0.
  2048       Stochastic MuZero against AlphaZero searching the true chance
             model, the score curves of both in one plot
             (results/plots/learned_models_2048-cpu.png).

The results file (benchmarks/results/learned_models_<section>-cpu.json)
keeps, per run, its settings, iterations, self-play games and the final
figures, with the run folders (each has its sessions.jsonl: commit,
command, machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

from benchmarks import harness

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TIC_TAC_TOE = dict(game="tic_tac_toe", eval_every=0, elo_every=0, final_games=200,
                   final_simulations=64, iterations=2000, warmup_fraction=0.002,
                   end_learning_rate_fraction=1.0)
# 2048: a score curve for the plot (16 games every 10 iterations, inside the
# budget on both sides), the final mean over 100 games.
GAME_2048 = dict(game="2048", eval_every=10, eval_games=16, final_games=100,
                 iterations=2000, warmup_fraction=0.002, end_learning_rate_fraction=1.0)

# section -> (settings shared by its sides, [(side, its own settings)])
SECTIONS = {
    "gumbel": (TIC_TAC_TOE, [
        (f"{name}_{sims}", dict(algorithm=algorithm, policy="gumbel", num_simulations=sims,
                                final_simulations=sims))
        for sims in (4, 16)
        for name, algorithm in (("gumbel_muzero", "gumbel_muzero"),
                                ("alphazero_gumbel", "alphazero"))]),
    # 0.125 of a 256-window minibatch, K + 1 = 6 positions each: about 1.6 times
    # self-play's own searches per iteration (48 updates, 256 games x 18 moves).
    "reanalyse": (TIC_TAC_TOE, [
        ("muzero_reanalyse_0.125", dict(algorithm="muzero", reanalyse_fraction=0.125)),
        ("muzero_reanalyse_0", dict(algorithm="muzero", reanalyse_fraction=0.0))]),
    # Stochastic MuZero (learned chance codes) against AlphaZero searching the
    # true chance model (the tiles), the same network trunk and budgets.
    "2048": (GAME_2048, [
        ("stochastic_muzero", dict(algorithm="stochastic_muzero")),
        ("alphazero_true_chance", dict(algorithm="alphazero", policy="alphazero"))]),
}

FIGURES = ("final_score_mean", "final_score_median", "final_tile_1024_rate",
           "final_tile_2048_rate", "final_random_score_mean", "final_vs_perfect_wins", "final_vs_perfect_draws", "final_vs_perfect_losses",
           "final_vs_perfect_as_first", "final_vs_perfect_as_second", "final_policy_optimal",
           "final_vs_random_score", "final_vs_uct_score", "training_s", "total_games",
           "iterations", "mean_simulations_per_s")


def run_cell(run_dir: str, settings: Dict[str, Any], seed: int, seconds: float) -> Dict[str, Any]:
    """One train.py run; its final.json figures."""
    command = [sys.executable, os.path.join(ROOT, "train.py"), "--run-dir", run_dir,
               "--no-progress", "--overwrite", "--seed", str(seed),
               "--max-training-s", str(seconds)]
    for name, value in settings.items():
        command += [f"--{name.replace('_', '-')}", str(value)]
    tick = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    with open(os.path.join(run_dir, "final.json")) as f:
        final = json.load(f)
    row = {k: final[k] for k in FIGURES if k in final}
    row["wall_s"] = round(time.perf_counter() - tick, 1)
    row["command"] = " ".join(command[1:])
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=sorted(SECTIONS), required=True)
    parser.add_argument("--minutes", type=float, default=4.0, help="training budget per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--run-root", default=None, help="folder of the run folders")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    run_root = args.run_root or tempfile.mkdtemp(prefix=f"learned_models_{args.section}_")
    rows: List[Dict[str, Any]] = []
    common, sides = SECTIONS[args.section]
    for seed in args.seeds:
        for name, settings in sides:
            cell = dict(common, **settings)
            run_dir = os.path.join(run_root, f"{name}_seed{seed}")
            row = dict(side=name, seed=seed, run_dir=run_dir,
                       **run_cell(run_dir, cell, seed, 60.0 * args.minutes))
            rows.append(row)
            print(json.dumps({k: row[k] for k in row if k not in ("command", "run_dir")}),
                  flush=True)
    settings = dict(harness.provenance(seed=args.seeds), section=args.section,
                    minutes=args.minutes, seeds=args.seeds, run_dir=run_root,
                    common=common, sides=dict(sides))
    judged = (["final_score_mean", "final_score_median", "final_tile_1024_rate"]
              if common["game"] == "2048" else
              ["final_vs_perfect_wins", "final_vs_perfect_draws", "final_vs_perfect_losses",
               "final_policy_optimal"])
    columns = ["side", "seed", "iterations", "total_games", "training_s"] + judged
    curves = {row["side"] + f"_seed{row['seed']}": curve(row["run_dir"]) for row in rows}
    if common.get("eval_every") and not args.no_save:
        print("plot:", plot(curves, args.section))
    harness.report(f"learned_models_{args.section}",
                   f"{args.section}: {args.minutes} min per run, seeds {args.seeds}", columns,
                   rows, settings, save_results=not args.no_save, curves=[curves])


def curve(run_dir: str) -> List[Dict[str, Any]]:
    """(iteration, training seconds, the evaluation's score or match figures)
    of every evaluated iteration of a run."""
    rows = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            shown = {k: v for k, v in record.items()
                     if k.startswith(("score_", "tile_", "vs_perfect_", "policy_optimal"))}
            if shown:
                rows.append(dict(iteration=record["iteration"], elapsed_s=record["elapsed_s"],
                                 **shown))
    return rows


def plot(curves: Dict[str, List[Dict[str, Any]]], section: str) -> str:
    """The sides' learning curves in one plot (score or perfect-play losses
    against training minutes): results/plots/learned_models_<section>-cpu.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    key = "score_mean" if any("score_mean" in r for c in curves.values() for r in c) \
        else "vs_perfect_losses"
    figure, axis = plt.subplots(figsize=(7, 4))
    for name, rows in curves.items():
        points = [(r["elapsed_s"] / 60.0, r[key]) for r in rows if key in r]
        if points:
            axis.plot(*zip(*points), marker="o", label=name)
    axis.set_xlabel("training minutes (2-core CPU)")
    axis.set_ylabel(key)
    axis.set_title(f"learned models: {section}")
    axis.legend()
    path = os.path.join(harness.RESULTS_DIR, "plots", f"learned_models_{section}-cpu.png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)
    return path


if __name__ == "__main__":
    main()
