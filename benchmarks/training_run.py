"""A training run folder as a results file: the curve and the final figures.

    python -m benchmarks.training_run runs/connect_four_cpu --name connect_four_training-cpu

reads the run's config.json, metrics.jsonl, sessions.jsonl (the git commit,
command and machine of every session that trained it) and final.json, and
writes benchmarks/results/<name>.json: the settings, the sessions, one row
per evaluated iteration (training seconds so far, self-play games so far,
and every evaluation figure of that iteration: the solver's move accuracy
of the raw network and of the search, games against the solver, UCT,
random, tic-tac-toe's perfect play, 2048's scores, a learned model's drift)
and the end-of-run evaluation. Nothing
is retyped by hand: quoted training figures come from this file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any, Dict, List

from benchmarks import harness
from training import checkpoint as checkpoint_lib

# Keys of an iteration record that belong to its evaluation.
EVALUATION_PREFIXES = ("solver_", "vs_", "policy_optimal", "elo", "score_", "tile_", "model_")


def curve(records: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One row per evaluated iteration: iteration, training seconds, games
    so far, updates so far and the evaluation's figures."""
    rows = []
    for record in records:
        figures = {k: v for k, v in record.items()
                   if k.startswith(EVALUATION_PREFIXES) and k != "elo_matches"}
        if not any(k.startswith(("solver_", "vs_", "score_")) for k in figures):
            continue
        rows.append(dict(iteration=record["iteration"], elapsed_s=record.get("elapsed_s"),
                         total_games=record.get("total_games"), updates=record.get("updates"),
                         **figures))
    return rows


def timing(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Median seconds per iteration (wall, between consecutive records, over
    iterations without an evaluation), of its self-play and of its updates,
    once updates have started (the earlier ones have no updates and the
    first ones compile)."""
    plain = [(a, b) for a, b in zip(records, records[1:])
             if b.get("eval_s", 0) < 0.5 and b.get("updates", 0) > a.get("updates", 0) > 0]
    if not plain:
        return {}
    return dict(iterations=len(plain),
                median_iteration_s=round(statistics.median(
                    b["elapsed_s"] - a["elapsed_s"] for a, b in plain), 3),
                median_self_play_s=round(statistics.median(b["self_play_s"] for _, b in plain), 3),
                median_update_s=round(statistics.median(b["update_s"] for _, b in plain), 3))


def results(run_dir: str, note: str = "", unfinished: bool = False) -> Dict[str, Any]:
    """The results record of the run in `run_dir` (see the module docstring);
    `note`: free text kept with it (what the run was for). `unfinished`: the
    run stopped before its end-of-run evaluation (final.json): the record
    keeps its curve and says `final: null`."""
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    final_path = os.path.join(run_dir, "final.json")
    if os.path.exists(final_path):
        with open(final_path) as f:
            final = json.load(f)
    elif unfinished:
        final = None
    else:
        raise FileNotFoundError(f"{run_dir} has no final.json: the run has not finished "
                                f"(--unfinished keeps its curve without one)")
    sessions = (final or {}).pop("sessions", None) or checkpoint_lib.read_metrics(
        os.path.join(run_dir, "sessions.jsonl"))
    records = checkpoint_lib.read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    return dict(benchmark="training_run", machine=harness.machine_info(),
                settings=dict(harness.provenance(seed=config.get("seed")), run_dir=run_dir,
                              note=note, config=config),
                sessions=sessions, timing=timing(records), curve=curve(records), final=final)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a train.py run folder")
    parser.add_argument("--name", required=True,
                        help="results file name (benchmarks/results/<name>.json)")
    parser.add_argument("--note", default="", help="free text kept in the file")
    parser.add_argument("--unfinished", action="store_true",
                        help="the run stopped before its final evaluation: keep the curve")
    args = parser.parse_args(argv)
    record = results(args.run_dir, args.note, args.unfinished)
    path = harness.write_json(os.path.join(harness.RESULTS_DIR, args.name + ".json"), record)
    print(f"wrote {path}: {len(record['curve'])} evaluations, sessions at commits "
          f"{sorted({s.get('commit', '')[:7] for s in record['sessions']})}; timing "
          f"{record['timing']}")
    for row in record["curve"]:
        shown = {k: row[k] for k in ("iteration", "elapsed_s", "solver_policy_accuracy",
                                     "solver_search_accuracy", "vs_solver_first_wins")
                 if k in row}
        print(shown)


if __name__ == "__main__":
    main()
