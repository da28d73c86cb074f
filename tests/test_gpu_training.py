"""benchmarks/gpu_training.sh (issue 53: Connect Four and tic-tac-toe on one
GPU in a short lease), run end to end on the CPU with --tiny, and the
figures benchmarks/training_run.py adds for it (rates, milestones, the
commit of a tree sent to another machine)."""

import glob
import json
import os
import subprocess
import tarfile

import pytest

from benchmarks import training_run
from envs import connect_four_solver
from subprocess_env import REPO_ROOT, compiled_like_this_process, pythonpath_with_repo

SCRIPT = os.path.join(REPO_ROOT, "benchmarks", "gpu_training.sh")


def _head_commit():
    try:
        head = subprocess.run(["git", "-C", REPO_ROOT, "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        return None
    return head if len(head) == 40 else None


@pytest.mark.slow
@pytest.mark.skipif(not connect_four_solver.available(),
                    reason="bitbully (the Connect Four judge) is not installed")
def test_tiny_run_writes_both_results_files_and_one_tarball(tmp_path):
    out, packed = tmp_path / "results", tmp_path / "OUT"
    head = _head_commit()
    variables = dict(OUT=str(packed), TMPDIR=str(tmp_path), PYTHONPATH=pythonpath_with_repo())
    if head:  # the commit of a tree sent to a device whose .git may be stale
        variables.update(MCTS_JAX_COMMIT=head, MCTS_JAX_DIRTY="1")
    proc = subprocess.run(["bash", SCRIPT, "--tiny", "--no-wheels", "--out", str(out),
                           "--run-root", str(tmp_path / "runs")],
                          env=compiled_like_this_process(**variables), capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # The summary table is printed last, one row per game.
    tail = proc.stdout.strip().splitlines()[-8:]
    assert any(line.startswith("| connect_four | tiny |") for line in tail), tail
    assert any(line.startswith("| tic_tac_toe | tiny |") for line in tail), tail

    records = {}
    for game in ("connect_four", "tic_tac_toe"):
        [path] = glob.glob(str(out / f"{game}_tiny_preset-*.json"))
        with open(path) as f:
            records[game] = json.load(f)
    for game, record in records.items():
        settings = record["settings"]
        assert record["benchmark"] == "training_run"
        assert {"commit", "dirty", "command", "seed", "run_dir", "note"} <= set(settings)
        assert "gpu_training.sh" in settings["note"] and settings["config"]["game"] == game
        assert {"device", "backend", "versions"} <= set(record["machine"])
        [session] = record["sessions"]
        assert {"commit", "command", "device"} <= set(session)
        assert f"--game {game}" in session["command"]
        if head:
            assert settings["commit"] == head and settings["dirty"] is True
            assert settings["commit_source"].startswith("MCTS_JAX_COMMIT")
            assert f"The working tree sent was commit {head}, with uncommitted" in (
                settings["note"])
        final, timing = record["final"], record["timing"]
        for rate in ("median_games_per_s", "median_simulations_per_s", "median_updates_per_s",
                     "games_per_training_s"):
            assert timing[rate] > 0, (game, rate, timing)
        assert final["training_s"] > 0 and final["total_games"] > 0

    final = records["connect_four"]["final"]
    for name in ("search", "policy"):
        assert 0.0 <= final[f"final_solver_{name}_accuracy"] <= 1.0
    assert final["final_solver_positions"] == 16
    first = [final[f"final_vs_solver_first_{k}"] for k in ("wins", "draws", "losses")]
    assert sum(first) == final["final_games"] // 2
    assert records["connect_four"]["milestones"] == {}

    # tic-tac-toe: judged by its evaluations (the last one at its last
    # iteration), no end-of-run matches
    record = records["tic_tac_toe"]
    last = record["curve"][-1]
    assert last["iteration"] == record["final"]["iterations"]
    versus = [last[f"vs_perfect_{k}"] for k in ("wins", "draws", "losses")]
    assert sum(versus) == record["settings"]["config"]["eval_games"]
    assert record["final"]["final_games"] == 0
    milestones = record["milestones"]
    assert milestones["evaluations"] >= 1 and "first_perfect_play" in milestones

    with tarfile.open(packed / "gpu_training.tar.gz") as tar:
        names = set(tar.getnames())
    assert len(os.listdir(packed)) == 1
    for game in ("connect_four", "tic_tac_toe"):
        for name in ("config.json", "metrics.jsonl", "final.json", "sessions.jsonl"):
            assert f"gpu_training/runs/{game}_tiny/{name}" in names
        assert any(n.startswith(f"gpu_training/runs/{game}_tiny/plots/") for n in names)
        assert any(n.startswith(f"gpu_training/results/{game}_tiny_preset-") for n in names)
    assert {"gpu_training/log.txt", "gpu_training/summary.md",
            "gpu_training/stages.txt"} <= names
    assert not any("checkpoints" in n or "snapshots" in n for n in names)


def _record(iteration, elapsed, updates, **figures):
    return dict(iteration=iteration, elapsed_s=elapsed, updates=updates, self_play_s=0.5,
                update_s=0.25, games_per_s=100.0 * iteration, simulations_per_s=1000.0,
                total_games=10 * iteration, eval_s=figures.pop("eval_s", 0.0), **figures)


def test_training_run_rates_and_first_perfect_play():
    records = [_record(1, 10.0, 0), _record(2, 11.0, 8),
               _record(3, 12.0, 16, eval_s=2.0, vs_perfect_wins=1, vs_perfect_draws=2,
                       vs_perfect_losses=1),
               _record(4, 13.0, 24), _record(5, 14.0, 32),
               _record(6, 17.0, 40, eval_s=2.0, vs_perfect_wins=0, vs_perfect_draws=4,
                       vs_perfect_losses=0, policy_optimal=0.9),
               _record(7, 20.0, 48, eval_s=2.0, vs_perfect_wins=0, vs_perfect_draws=3,
                       vs_perfect_losses=1)]
    timing = training_run.timing(records)
    # pairs (4, 5) and (3, 4) ... without an evaluation in the later record, updates started
    assert timing["iterations"] == 2
    assert timing["median_games_per_s"] == 450.0 and timing["median_simulations_per_s"] == 1000.0
    assert timing["median_updates_per_s"] == 32.0  # 8 updates in 0.25 s
    assert timing["games_per_training_s"] == 3.5  # 70 games in 20 s
    milestones = training_run.milestones(records)
    assert milestones == dict(first_perfect_play=dict(
        iteration=6, elapsed_s=17.0, eval_s_so_far=4.0, total_games=60, updates=40, games=4,
        policy_optimal=0.9), stayed_perfect=False, evaluations=3)
    assert training_run.milestones(records[:5]) == dict(first_perfect_play=None, evaluations=1)
    assert training_run.milestones([_record(1, 1.0, 0)]) == {}
