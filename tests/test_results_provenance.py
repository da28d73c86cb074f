"""Every committed results file can be traced to the code that measured it.

The rule (benchmarks/README.md, "Provenance and staleness"): each
benchmarks/results/*.json names in its settings the commit, whether the tree
had uncommitted changes (`dirty`) and the command line; it was measured on a
clean tree; and every `mcts_jax/`, `envs/` and `training/` file the measuring process had
imported (`dependencies`) still has the bytes it had then
(`dependency_sha256`, written by `harness.write_json`). A change to any of
those files makes the test fail until the file is regenerated with the
command it names. Content hashes need no git history, so the check is the
same in a shallow clone.

Records of the past are not re-measured on every change: finished training
runs (settings with a `run_dir`: the figures come from a run of hours whose
sessions name their own commits) and before/after comparisons of a past
change (settings with `before`: the figures are about the two commits they
name, not about HEAD). They need the provenance keys and a commit id,
nothing more.
"""

import glob
import json
import os
import re
import subprocess

import pytest

from benchmarks.harness import file_sha256

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = sorted(glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.json")))
KEYS = ("commit", "dirty", "command")


def _load(path):
    with open(path) as f:
        return json.load(f)


def _sha256(relative_path):
    """harness.file_sha256 of the file today, or "missing" if it is gone."""
    if not os.path.exists(os.path.join(ROOT, relative_path)):
        return "missing"
    return file_sha256(relative_path)


def _commit_known(commit):
    """True when git knows `commit`, or when this checkout cannot say (no git,
    or a shallow clone that lacks older commits)."""
    try:
        shallow = subprocess.run(["git", "-C", ROOT, "rev-parse", "--is-shallow-repository"],
                                 capture_output=True, text=True)
        known = subprocess.run(["git", "-C", ROOT, "cat-file", "-e", f"{commit}^{{commit}}"],
                               capture_output=True, text=True)
    except OSError:
        return True
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        return True
    return known.returncode == 0


def test_there_are_results_to_check():
    assert len(RESULTS) >= 10


@pytest.mark.parametrize("path", RESULTS, ids=os.path.basename)
def test_results_file_names_a_clean_commit_whose_code_is_todays(path):
    name = os.path.basename(path)
    record = _load(path)
    settings = record.get("settings", {})
    missing = [key for key in KEYS if key not in settings]
    assert not missing, f"{name} lacks provenance {missing}"
    commit = settings["commit"]
    assert re.fullmatch(r"[0-9a-f]{40}", str(commit)), f"{name}: commit {commit!r}"
    assert _commit_known(commit), f"{name} names commit {commit}, which this repository lacks"
    if settings.get("run_dir") or settings.get("before"):
        return  # a record of the past (see the module docstring)
    assert settings["dirty"] is False, f"{name} was measured with uncommitted changes"
    hashes = record.get("dependency_sha256")
    assert hashes, (f"{name} does not record the bytes of the code it measured; re-run "
                    f"its command: {settings['command']}")
    assert set(hashes) == set(record["dependencies"])
    changed = sorted(path for path, digest in hashes.items() if _sha256(path) != digest)
    assert not changed, (f"{name} was measured at {commit[:10]}; since then these files it "
                         f"depends on changed: {changed}. Re-run its command: "
                         f"{settings['command']}")
