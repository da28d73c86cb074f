"""A training run folder as a results file: the curve and the final figures.

    python -m benchmarks.training_run runs/connect_four_cpu --name connect_four_training-cpu

reads the run's config.json, metrics.jsonl, sessions.jsonl (the commit,
command and machine of every session that trained it) and final.json, and
writes benchmarks/results/<name>.json: the settings, the sessions, one row
per evaluated iteration (`curve`: training seconds, games and updates so
far and every evaluation figure), the end-of-run evaluation, `timing`
(seconds per iteration; games, simulations and updates per second) and
`milestones` (tic-tac-toe: the first evaluation with no loss against perfect
play). Quoted training figures come from this file, never retyped.

A run trained on another machine (a GPU lent for minutes) is written there
(`--results-dir`); MCTS_JAX_COMMIT (MCTS_JAX_DIRTY=1: uncommitted changes,
see `harness.provenance`) names the commit of the tree sent when that
machine's .git may be stale, and the note says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
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
    """Over the iterations without an evaluation once updates have started
    (the earlier ones compile and have no updates): the median seconds per
    iteration (between consecutive records), of its self-play and of its
    updates; the medians of self-play's games and simulations per second
    (metrics.jsonl's `games_per_s`, `simulations_per_s`) and of updates per
    second; and over the whole run, self-play games per second of training
    (compilation, updates, evaluations and checkpoints included)."""
    plain = [(a, b) for a, b in zip(records, records[1:])
             if b.get("eval_s", 0) < 0.5 and b.get("updates", 0) > a.get("updates", 0) > 0]
    if not plain:
        return {}
    out = dict(iterations=len(plain),
               median_iteration_s=round(statistics.median(
                   b["elapsed_s"] - a["elapsed_s"] for a, b in plain), 3),
               median_self_play_s=round(statistics.median(b["self_play_s"] for _, b in plain), 3),
               median_update_s=round(statistics.median(b["update_s"] for _, b in plain), 4))
    for name in ("games_per_s", "simulations_per_s"):
        values = [b[name] for _, b in plain if name in b]
        if values:
            out[f"median_{name}"] = round(statistics.median(values), 1)
    updates = [(b["updates"] - a["updates"]) / b["update_s"] for a, b in plain
               if b.get("update_s", 0) > 0]
    if updates:
        out["median_updates_per_s"] = round(statistics.median(updates), 1)
    last = records[-1]
    if last.get("elapsed_s") and last.get("total_games") is not None:
        out["games_per_training_s"] = round(last["total_games"] / last["elapsed_s"], 1)
    return out


def milestones(records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The first evaluated iteration that played perfect tic-tac-toe (no
    loss against `envs.perfect_play` in its games, `first_perfect_play`:
    its iteration, seconds of training so far (`elapsed_s`, as the loop
    counts them: compilation and evaluations included; `eval_s_so_far`: the
    evaluations' share), games and updates so far, its games and its raw
    policy's optimality), and whether every later evaluation stayed perfect
    (`stayed_perfect`). None when it never did; {} without such evaluations."""
    judged = [r for r in records if r.get("vs_perfect_losses") is not None]
    if not judged:
        return {}
    first = next((r for r in judged if r["vs_perfect_losses"] == 0), None)
    if first is None:
        return dict(first_perfect_play=None, evaluations=len(judged))
    eval_s = sum(r.get("eval_s", 0.0) for r in records if r["iteration"] <= first["iteration"])
    games = sum(first.get(f"vs_perfect_{k}", 0) for k in ("wins", "draws", "losses"))
    later = [r for r in judged if r["iteration"] > first["iteration"]]
    return dict(first_perfect_play=dict(
        iteration=first["iteration"], elapsed_s=first.get("elapsed_s"),
        eval_s_so_far=round(eval_s, 2), total_games=first.get("total_games"),
        updates=first.get("updates"), games=games,
        policy_optimal=first.get("policy_optimal")),
        stayed_perfect=all(r["vs_perfect_losses"] == 0 for r in later),
        evaluations=len(judged))


def results(run_dir: str, note: str = "", unfinished: bool = False) -> Dict[str, Any]:
    """The results record of the run in `run_dir` (see the module docstring);
    `note`: free text kept with it. `unfinished`: the run stopped before its
    final.json (the record says `final: null`). A commit named by
    MCTS_JAX_COMMIT is stated in the note."""
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
    settings = harness.provenance(seed=config.get("seed"))
    if settings.get("commit_source"):
        if not re.fullmatch(r"[0-9a-f]{40}", str(settings["commit"])):  # written all the same
            print(f"warning: {settings['commit']!r} is not a full git commit id (40 hex "
                  f"digits); tests/test_results_provenance.py will ask for one", file=sys.stderr)
        state = "with uncommitted changes" if settings["dirty"] else "clean"
        note = (f"{note} " if note else "") + (
            f"The working tree sent was commit {settings['commit']}, {state} (the sessions "
            f"name what that machine's copy of .git said while training).")
    return dict(benchmark="training_run", machine=harness.machine_info(),
                settings=dict(settings, run_dir=run_dir, note=note, config=config),
                sessions=sessions, timing=timing(records), milestones=milestones(records),
                curve=curve(records), final=final)


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def summary(stages_path: str, *paths: str) -> str:
    """The table `benchmarks/gpu_training.sh` prints last: a row per results
    file (training, games, the solver's accuracies or the last evaluation
    against perfect play, self-play and update rates, the seconds to perfect
    play), then the seconds of each stage listed in `stages_path`."""
    rows = []
    for path in paths:
        with open(path) as f:
            record = json.load(f)
        final, timing = record.get("final") or {}, record.get("timing") or {}
        game = record["settings"]["config"]["game"]
        judge, perfect = "-", "-"
        if game == "connect_four" and "final_vs_solver_first_wins" in final:
            judge = "{}-{}-{} first vs solver".format(
                *(final[f"final_vs_solver_first_{k}"] for k in ("wins", "draws", "losses")))
        judged = [row for row in record["curve"] if "vs_perfect_losses" in row]
        if game != "connect_four" and judged:  # the last evaluation (no end-of-run matches)
            judge = "{}-{}-{} vs perfect (it. {})".format(
                *(judged[-1][f"vs_perfect_{k}"] for k in ("wins", "draws", "losses")),
                judged[-1]["iteration"])
        if game == "tic_tac_toe":
            first = (record.get("milestones") or {}).get("first_perfect_play")
            perfect = "never" if first is None else (
                f"{first['elapsed_s']} (it. {first['iteration']})")
        search = _percent(final.get("final_solver_search_accuracy"))
        if "final_solver_search_accuracy" in final:
            search += f" @{final['final_simulations']}"
        rows.append([game, record["settings"]["config"]["preset"], record["machine"]["device"],
                     f"{final.get('training_s')} ({final.get('iterations')} it.)",
                     final.get("total_games"), search,
                     _percent(final.get("final_solver_policy_accuracy")), judge,
                     timing.get("median_games_per_s"), timing.get("median_simulations_per_s"),
                     timing.get("median_updates_per_s"), perfect, final.get("final_eval_s")])
    head = ["game", "preset", "device", "training s", "games", "search acc. @sims",
            "raw acc.", "W-D-L", "games/s", "sims/s", "updates/s", "s to perfect play",
            "final eval s"]
    lines = [harness.markdown_table(head, [["-" if cell is None else cell for cell in row]
                                           for row in rows])]
    with open(stages_path) as f:
        stages = ", ".join(f"{name} {seconds} s" for name, seconds in
                           (line.split() for line in f if line.strip()))
    return "\n".join(lines + ["", f"stages: {stages}",
                              "games/s, sims/s: self-play phase medians; updates/s: update "
                              "phase median (results files' timing)"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a train.py run folder")
    parser.add_argument("--name", required=True,
                        help="results file name (<results-dir>/<name>.json)")
    parser.add_argument("--note", default="", help="free text kept in the file")
    parser.add_argument("--unfinished", action="store_true",
                        help="the run stopped before its final evaluation: keep the curve")
    parser.add_argument("--results-dir", default=harness.RESULTS_DIR,
                        help="folder of the results file (default benchmarks/results)")
    args = parser.parse_args(argv)
    record = results(args.run_dir, args.note, args.unfinished)
    path = harness.write_json(os.path.join(args.results_dir, args.name + ".json"), record)
    print(f"wrote {path}: {len(record['curve'])} evaluations, sessions at commits "
          f"{sorted({s.get('commit', '')[:7] for s in record['sessions']})}; timing "
          f"{record['timing']}")
    if record["milestones"]:
        print(f"milestones {record['milestones']}")
    for row in record["curve"]:
        shown = {k: row[k] for k in ("iteration", "elapsed_s", "solver_policy_accuracy",
                                     "solver_search_accuracy", "vs_solver_first_wins")
                 if k in row}
        print(shown)


if __name__ == "__main__":
    main()
