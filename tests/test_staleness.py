"""devtools.staleness: which results files were measured at older library
code, and the commands that regenerate them."""

import glob
import json
import os
import subprocess
import sys

import pytest

from devtools import staleness

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t",
                           "-c", "commit.gpgsign=false", *args],
                          capture_output=True, text=True, check=True).stdout.strip()


def _write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(content)


def _result(folder, name, commit, command, dependencies=None, **settings):
    record = dict(benchmark=name, machine=dict(device="cpu"),
                  settings=dict(settings, command=command, dirty=False,
                                **({"commit": commit} if commit else {})))
    if dependencies is not None:
        record["dependencies"] = dependencies
    _write(os.path.join(folder, name + ".json"), json.dumps(record))


def _run(capsys, *argv):
    assert staleness.main(list(argv)) == 0  # a report, never a gate
    return capsys.readouterr().out


@pytest.fixture
def repo(tmp_path):
    """A throwaway repository: commit `old`, then `head` changes mcts_jax/core.py."""
    path = str(tmp_path / "repo")
    os.makedirs(path)
    _git(path, "init", "-q")
    _write(os.path.join(path, "mcts_jax", "core.py"), "x = 1\n")
    _write(os.path.join(path, "envs", "game.py"), "y = 1\n")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "old")
    old = _git(path, "rev-parse", "HEAD")
    _write(os.path.join(path, "mcts_jax", "core.py"), "x = 2\n")
    _git(path, "commit", "-q", "-am", "head")
    return path, old, _git(path, "rev-parse", "HEAD")


def test_report_marks_files_measured_at_older_library_code(repo, tmp_path, capsys):
    path, old, head = repo
    results = str(tmp_path / "results")
    python = "/usr/bin/python3 -m benchmarks."
    _result(results, "old_core", old, python + "figure --rounds 3", ["mcts_jax/core.py"])
    _result(results, "old_core_again", old, python + "figure --rounds 3", ["mcts_jax/core.py"])
    _result(results, "old_game_only", old, python + "game_figure", ["envs/game.py"])
    _result(results, "old_everything", old, python + "everything")  # no dependencies: all
    _result(results, "at_head", head, python + "head_figure", ["mcts_jax/core.py"])
    _result(results, "comparison", old, python + "before_after --before 1234567",
            ["mcts_jax/core.py"], before="1234567")
    _result(results, "unknown", "f" * 40, python + "lost")
    _result(results, "unnamed", None, python + "unnamed")

    rows = {row["file"]: row for row in staleness.report(results, path)}
    assert {name: row["status"] for name, row in rows.items()} == {
        "old_core.json": "stale", "old_core_again.json": "stale",
        "old_game_only.json": "current", "old_everything.json": "stale",
        "at_head.json": "current", "comparison.json": "stale",
        "unknown.json": "unknown (commit not in this clone)", "unnamed.json": "no provenance"}
    assert rows["old_core.json"]["changed"] == ["mcts_jax/core.py"]
    assert rows["old_core.json"]["command"] == "python -m benchmarks.figure --rounds 3"

    table = _run(capsys, "--results-dir", results, "--repo", path)
    line = next(line for line in table.splitlines() if line.startswith("| old_core.json"))
    assert old[:10] in line and "1: mcts_jax/core.py" in line
    assert "`python -m benchmarks.figure --rounds 3`" in line
    assert "8 results files" in table and "4 stale" in table

    shown = _run(capsys, "--results-dir", results, "--repo", path, "--stale-only")
    assert "| old_core.json" in shown and "| unknown.json" in shown
    assert "| at_head.json" not in shown and "| old_game_only.json" not in shown

    # the stale files' commands, each once; a comparison only as a comment
    assert _run(capsys, "--results-dir", results, "--repo", path, "--commands").splitlines() == [
        "python -m benchmarks.figure --rounds 3", "python -m benchmarks.everything",
        "# comparison.json a comparison with 1234567: re-running compares it with today's "
        "code: python -m devtools.before_after --before 1234567"]

    listed = json.loads(_run(capsys, "--results-dir", results, "--repo", path, "--json"))
    assert listed["head"] == head
    assert {row["file"] for row in listed["rows"]} == set(rows)


def test_report_against_this_repositorys_history(tmp_path):
    """HEAD and an older commit of this checkout whose library files differ."""
    if _git(ROOT, "rev-parse", "--is-shallow-repository") != "false":
        pytest.skip("a shallow clone: the throwaway repository above tests the same")
    head = _git(ROOT, "rev-parse", "HEAD")
    parents = subprocess.run(["git", "-C", ROOT, "rev-list", "--max-count=50", "HEAD~1"],
                             capture_output=True, text=True).stdout.split()
    older = None
    for commit in parents:
        if _git(ROOT, "diff", "--name-only", commit, "HEAD", "--", *staleness.LIBRARY_TREES):
            older = commit
            break
    if older is None:
        pytest.skip("no recent commit with other library files")
    results = str(tmp_path / "results")
    _result(results, "measured_now", head, "/usr/bin/python3 -m benchmarks.now")
    _result(results, "measured_before", older, "/usr/bin/python3 -m benchmarks.before --seed 1")
    out = subprocess.run([sys.executable, "-m", "devtools.staleness", "--results-dir", results],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = {line.split(" | ")[0]: line for line in out.stdout.splitlines()
             if line.startswith("| measured_")}
    assert " | current | " in lines["| measured_now.json"]
    assert " | stale | " in lines["| measured_before.json"]
    changed = _git(ROOT, "diff", "--name-only", older, "HEAD", "--", *staleness.LIBRARY_TREES)
    assert changed.split()[0] in lines["| measured_before.json"]
    assert "`python -m benchmarks.before --seed 1`" in lines["| measured_before.json"]
    commands = subprocess.run([sys.executable, "-m", "devtools.staleness", "--results-dir",
                               results, "--commands"], cwd=ROOT, capture_output=True, text=True)
    assert commands.stdout.splitlines() == ["python -m benchmarks.before --seed 1"]


def test_runnable_command():
    assert staleness.runnable("/root/.pyenv/versions/3.11.7/bin/python3 -m benchmarks.x --a 1") \
        == "python -m benchmarks.x --a 1"
    assert staleness.runnable("python -m benchmarks.training_run RUN --name n --note it's two "
                              "words") == \
        "python -m benchmarks.training_run RUN --name n --note 'it'\"'\"'s two words'"


def test_moved_modules_run_from_their_new_place():
    """A command recorded before issue 65 names a module that left
    benchmarks/; the regeneration command names its new place, and the
    module is there."""
    import importlib.util
    assert staleness.runnable("/usr/bin/python3 -m benchmarks.connect_four_recipe --section a") \
        == "python -m experiments.connect_four_recipe --section a"
    assert staleness.runnable("python -m benchmarks.before_after --before abc") \
        == "python -m devtools.before_after --before abc"
    assert staleness.runnable("python -m benchmarks --quick") == "python -m benchmarks --quick"
    for old, new in staleness.MOVED_MODULES.items():
        assert importlib.util.find_spec(old) is None, old
        assert importlib.util.find_spec(new) is not None, new
    # a part that left a module which stayed: only its own commands move
    assert staleness.runnable("python -m benchmarks.memory --runs 1024x32 4096x32") \
        == "python -m experiments.memory_runs --runs 1024x32 4096x32"
    for (old, _), new in staleness.MOVED_PARTS.items():
        assert importlib.util.find_spec(old) is not None and importlib.util.find_spec(new), new
    # runners folded into suite sections run as their section
    assert staleness.runnable("/usr/bin/python3 -m benchmarks.memory") \
        == "python -m benchmarks --full --only memory"
    from benchmarks import run
    for old, new in staleness.FOLDED_MODULES.items():
        mode, section = new.split()[1][2:], new.split()[-1]
        assert run.selected_sections(run.MODES[mode], [section]) == [section], old


def test_every_results_file_of_the_repository_is_reported():
    """The default folders are the three results/ folders; a row names its
    file from the repository root."""
    rows = staleness.report(staleness.RESULTS_DIRS)
    files = {row["file"] for row in rows}
    for folder in ("benchmarks", "experiments", "devtools"):
        on_disk = glob.glob(os.path.join(ROOT, folder, "results", "*.json"))
        assert on_disk and {os.path.relpath(path, ROOT) for path in on_disk} <= files, folder
