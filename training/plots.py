"""PNG plots of a run from its metrics records: loss, Elo, win rates (with the
perfect-play and solver figures of tic-tac-toe and Connect Four), and for
Connect Four the solver figures over training time."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

# Figures without pyplot: no global backend switch, so importing the trainer
# in a notebook leaves inline plotting alone.
from matplotlib.figure import Figure


def _series(records: List[Dict[str, Any]], key: str):
    points = [(r["iteration"], r[key]) for r in records if r.get(key) is not None]
    return [p[0] for p in points], [p[1] for p in points]


def _first_win_rate(record: Dict[str, Any], prefix: str = ""):
    """Share of the games moving first against the solver that the agent won
    (None when `record` has none)."""
    wins = record.get(f"{prefix}vs_solver_first_wins")
    if wins is None:
        return None
    games = wins + record[f"{prefix}vs_solver_first_draws"] + \
        record[f"{prefix}vs_solver_first_losses"]
    return wins / max(1, games)


def write_solver_plot(records: List[Dict[str, Any]], summary: Optional[Dict[str, Any]],
                      path: str, title: str) -> bool:
    """Connect Four: move accuracy on the solver's positions (search and raw
    network) and the share of games won moving first against the perfect
    solver, against minutes of training (`elapsed_s`), with the end-of-run
    check of `summary` (final.json; at its `training_s`) as stars. False
    (nothing written) when there is no such figure."""
    timed = [r for r in records if r.get("elapsed_s") is not None]
    end = summary.get("training_s") if summary else None
    lines = []
    for label, figure in (
            ("search accuracy", lambda r, p: r.get(f"{p}solver_search_accuracy")),
            ("raw network accuracy", lambda r, p: r.get(f"{p}solver_policy_accuracy")),
            ("games won moving first vs the solver", _first_win_rate)):
        points = [(r["elapsed_s"] / 60, figure(r, "")) for r in timed]
        final = figure(summary, "final_") if end is not None else None
        lines.append((label, [p for p in points if p[1] is not None],
                      [(end / 60, final)] if final is not None else []))
    if not any(points or final for _, points, final in lines):
        return False
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for label, points, final in lines:
        color = None
        if points:
            (line,) = ax.plot(*zip(*points), marker="o", label=label)
            color = line.get_color()
        if final:
            ax.plot(*zip(*final), marker="*", markersize=12, linestyle="none", color=color,
                    label=None if points else f"{label} (end of run)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("minutes of training")
    ax.set_ylabel("fraction")
    ax.set_title(f"{title}: against the perfect solver (stars: end of run)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def write_plots(records: List[Dict[str, Any]], elo: Dict[int, float], directory: str,
                title: str, summary: Optional[Dict[str, Any]] = None) -> List[str]:
    """loss.png, elo.png, win_rates.png under `directory` (and solver.png,
    `write_solver_plot`, for a Connect Four run judged by the solver);
    returns their paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for key in ("loss", "policy_loss", "value_loss", "policy_kl"):
        x, y = _series(records, key)
        if x:
            ax.plot(x, y, label=key)
    ax.set_xlabel("iteration")
    ax.set_ylabel("loss (mean over the iteration's updates)")
    ax.set_title(f"{title}: training loss")
    if ax.get_lines():
        ax.legend()
    ax.grid(alpha=0.3)
    paths.append(os.path.join(directory, "loss.png"))
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=100)

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    if elo:
        iterations = sorted(elo)
        ax.plot(iterations, [elo[i] for i in iterations], marker="o")
    ax.set_xlabel("iteration (snapshot)")
    ax.set_ylabel("Elo (iteration 0 = 0)")
    ax.set_title(f"{title}: Elo of snapshots")
    ax.grid(alpha=0.3)
    paths.append(os.path.join(directory, "elo.png"))
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=100)

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for key, label in (("vs_random_score", "score vs random"), ("vs_uct_score", "score vs UCT"),
                       ("vs_perfect_score", "score vs perfect play"),
                       ("policy_optimal", "raw policy optimal (fraction)"),
                       ("vs_solver_first_score", "score vs perfect solver, moving first"),
                       ("solver_policy_accuracy", "raw policy accuracy (solver benchmark)"),
                       ("solver_search_accuracy", "search accuracy (solver benchmark)")):
        x, y = _series(records, key)
        if x:
            ax.plot(x, y, marker="o", label=label)
    x, y = _series(records, "vs_perfect_losses")
    games = [r.get("vs_perfect_wins", 0) + r.get("vs_perfect_draws", 0) + r["vs_perfect_losses"]
             for r in records if r.get("vs_perfect_losses") is not None]
    if x:
        ax.plot(x, [l / max(1, g) for l, g in zip(y, games)], marker="x",
                label="loss rate vs perfect play")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("iteration")
    ax.set_ylabel("score (win 1, draw 1/2) / rate")
    ax.set_title(f"{title}: evaluation")
    if ax.get_lines():
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    paths.append(os.path.join(directory, "win_rates.png"))
    fig.tight_layout()
    fig.savefig(paths[-1], dpi=100)

    solver_path = os.path.join(directory, "solver.png")
    if write_solver_plot(records, summary, solver_path, title):
        paths.append(solver_path)
    return paths
