"""What a training run tells the world: the metrics file, TensorBoard, the
console (progress bars and evaluation lines), final.json, plots and the
end-of-run summary.

    reporter = Reporter(config.records, run_dir, primary=True, progress=True, log=print,
                        search_label="gumbel")  # how the agent searches (the algorithm's)
    reporter.resume(start)            # metrics.jsonl cut back to the checkpoint;
                                      # sessions.jsonl: this session's commit and command
    reporter.iteration(record)        # one record per finished iteration
    reporter.final(summary, ratings)  # final.json, plots/, the summary lines

Only the primary process (process 0) writes files; every process may log.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from typing import Any, Callable, Dict, Iterable, List

import jax
from tqdm.auto import tqdm

from training import checkpoint as checkpoint_lib
from training import plots
from training.config import EvaluationConfig, Records


def write_json(path: str, data) -> None:
    """Writes `data` to `path` atomically (a temporary file, then a rename)."""
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(temporary, path)


def provenance() -> Dict[str, Any]:
    """What a result must name to be traced to code: the git commit of the
    mcts_jax checkout, whether it had uncommitted changes to tracked files,
    the command line, and the time (UTC). Commit and dirty are "" / False
    outside a git checkout."""
    def git(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True,
                                  cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
        except OSError:
            return ""
    return dict(commit=git("rev-parse", "HEAD"),
                dirty=bool(git("status", "--porcelain", "--untracked-files=no")),
                command=" ".join(getattr(sys, "orig_argv", sys.argv)),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


class TensorBoard:
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


# Metrics printed on the console after an evaluation, in this order.
SHOWN = ("loss", "games_per_s", "simulations_per_s", "score_mean", "tile_1024_rate",
         "tile_2048_rate", "vs_random_score", "vs_uct_score",
         "vs_perfect_losses", "policy_optimal", "vs_solver_first_wins",
         "solver_policy_accuracy", "solver_search_accuracy", "elo")


class Reporter:
    """The metrics history of a run and every place it is shown.

    Attributes:
      records: the metrics of every finished iteration, oldest first (read by
        the Elo ratings and the plots).
    """

    def __init__(self, settings: Records, run_dir: str, primary: bool, progress: bool,
                 log: Callable[[str], None], search_label: str):
        self.settings = settings  # the run's records: the game, the run's length, the evaluation
        self.search_label = search_label  # how the agent searches (the summary's lines)
        self.run_dir = run_dir
        self.primary = primary
        self.show_progress = progress and primary
        self.log = log if primary else (lambda *_: None)
        self.metrics_path = os.path.join(run_dir, "metrics.jsonl")
        self.tensorboard = TensorBoard(os.path.join(run_dir, "tensorboard"))
        self.records: List[Dict[str, Any]] = []
        self.bar = None

    @property
    def sessions_path(self) -> str:
        return os.path.join(self.run_dir, "sessions.jsonl")

    def resume(self, start: int) -> None:
        """Keeps the records of iterations <= `start` (the checkpoint the run
        continues from), notes this session in sessions.jsonl (its
        `provenance` and the iteration it starts from) and opens the progress
        bar."""
        self.records = checkpoint_lib.truncate_metrics(self.metrics_path, start)
        if self.primary:
            device = jax.devices()[0]
            checkpoint_lib.append_metrics(self.sessions_path, dict(
                provenance(), from_iteration=start, platform=platform.platform(),
                cpu_count=os.cpu_count(), device=getattr(device, "device_kind", str(device)),
                device_count=jax.device_count()))
        self.bar = tqdm(total=self.settings.run.iterations, initial=start,
                        desc=self.settings.game.game,
                        unit="it", disable=not self.show_progress, dynamic_ncols=True)

    def progress(self, items: Iterable, description: str, unit: str) -> Iterable:
        """`items`, with a transient progress bar while they are consumed."""
        return tqdm(items, desc=description, leave=False, disable=not self.show_progress,
                    unit=unit)

    def iteration(self, record: Dict[str, Any]) -> None:
        """Records one finished iteration: metrics.jsonl (fsynced, before the
        iteration's checkpoint), TensorBoard, the progress bar, and a console
        line after an evaluation."""
        if self.primary:
            checkpoint_lib.append_metrics(self.metrics_path, record)
            self.tensorboard.write(record)
        self.records.append(record)
        self.bar.set_postfix({k: record[k] for k in ("loss", "games_per_s", "simulations_per_s")
                              if k in record})
        self.bar.update(1)
        if any(k in record for k in ("vs_random_score", "score_mean", "elo")):
            shown = ", ".join(f"{k}={record[k]}" for k in SHOWN if k in record)
            message = f"iteration {record['iteration']}: {shown}"
            if self.bar.disable:
                self.log(message)
            else:
                self.bar.write(message)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def final(self, summary: Dict[str, Any], ratings: Dict[int, float]) -> None:
        """final.json and plots/ (primary process; `ratings`: the Elo rating
        of each snapshot iteration), then the summary lines."""
        if self.primary:
            summary = dict(summary, sessions=checkpoint_lib.read_metrics(self.sessions_path))
            write_json(os.path.join(self.run_dir, "final.json"), summary)
            plots.write_plots(self.records, ratings, os.path.join(self.run_dir, "plots"),
                              self.settings.game.game, summary)
        self.log("final evaluation: " + json.dumps(summary))
        for line in describe_summary(self.settings.evaluation, summary, self.search_label):
            self.log(line)


def describe_summary(evaluation: EvaluationConfig, summary: Dict[str, Any],
                     search_label: str) -> List[str]:
    """Readable lines of the end-of-run figures; `evaluation`: the run's
    evaluation record; `search_label`: how the agent searches (the
    algorithm's `search_label`)."""
    lines = [f"training: {summary['iterations']} iterations, {summary['total_games']} self-play "
             f"games, {summary.get('training_s')} s; self-play {summary.get('mean_games_per_s')} "
             f"games/s, {summary.get('mean_simulations_per_s')} simulations/s"]
    sims = summary.get("final_simulations")
    for name, label in (("perfect", "perfect play"),
                        ("uct", f"UCT ({sims} simulations, {evaluation.uct_playouts} random "
                                f"playout(s) per leaf)"),
                        ("random", "a random player")):
        if f"final_vs_{name}_wins" in summary:
            w, d, l = (summary[f"final_vs_{name}_{k}"] for k in ("wins", "draws", "losses"))
            lines.append(f"agent ({search_label}, {sims} simulations) vs {label}: {w} wins, "
                         f"{d} draws, {l} losses in {w + d + l} games (half as each side)")
    for prefix, label in (("final_", f"agent ({search_label}, {sims} simulations)"),
                          ("final_policy_", "raw policy network (no search)"),
                          ("final_random_", "a random player")):
        if f"{prefix}score_mean" in summary:
            tiles = ", ".join(f"{tile} tile in {100 * summary[f'{prefix}tile_{tile}_rate']:.1f}%"
                              for tile in (512, 1024, 2048)
                              if f"{prefix}tile_{tile}_rate" in summary)
            lines.append(f"{label}: mean score {summary[f'{prefix}score_mean']}, median "
                         f"{summary[f'{prefix}score_median']} in {summary['final_games']} games"
                         + (f"; {tiles}" if tiles else ""))
    if "final_policy_optimal" in summary:
        lines.append(f"raw policy network (no search) optimal in "
                     f"{100 * summary['final_policy_optimal']:.2f}% of the 4520 reachable "
                     f"non-terminal positions")
    if "final_vs_solver_first_wins" in summary:
        w, d, l = (summary[f"final_vs_solver_first_{k}"] for k in ("wins", "draws", "losses"))
        lines.append(f"agent ({search_label}, {sims} simulations) moving first vs the perfect "
                     f"solver (bitbully): {w} wins, {d} draws, {l} losses in {w + d + l} games "
                     f"(a perfect first player wins them all)")
    if "final_first_move" in summary:
        outcome = {1: "a win", 0: "a draw", -1: "a loss"}[summary["final_first_move_value"]]
        lines.append(f"first move from the empty board: column {summary['final_first_move']} "
                     f"(it keeps {outcome} for the first player; only the centre, 3, wins)")
    if "final_solver_positions" in summary:
        lines.append(f"move accuracy on {summary['final_solver_positions']} solver-labelled "
                     f"positions of random play, plies 4-30 (the move keeps the "
                     f"game-theoretic value; hard: one move does): raw policy network "
                     f"{_accuracy(summary, 'policy')}; search ({search_label}, {sims} "
                     f"simulations) {_accuracy(summary, 'search')}")
    return lines


def _accuracy(summary: Dict[str, Any], name: str) -> str:
    """'93.1% (opening 98.0%, middle 92.5%, late 90.0%; hard 85.0%, medium 95.1%, easy
    99.0%)' of final_solver_<name>_accuracy."""
    groups = [", ".join(f"{group} {100 * summary[f'final_solver_{name}_accuracy_{group}']:.1f}%"
                        for group in names
                        if f"final_solver_{name}_accuracy_{group}" in summary)
              for names in (("opening", "middle", "late"), ("hard", "medium", "easy"))]
    stages = "; ".join(g for g in groups if g)
    return f"{100 * summary[f'final_solver_{name}_accuracy']:.1f}% ({stages})"
