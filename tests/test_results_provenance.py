"""Every committed results file can be traced to the code that measured it.

The rule (benchmarks/README.md, "Provenance and staleness"): each
benchmarks/results/*.json names in its settings the commit, whether the tree
had uncommitted changes (`dirty`) and the command line; it was measured on a
clean tree; and the files of `mcts_jax/` and `envs/` it depends on are the
same at that commit as at HEAD. The files it depends on are its
`dependencies` (the `mcts_jax/` and `envs/` sources the measuring process had
imported, written by `harness.write_json`), or the whole `mcts_jax/` and
`envs/` trees for a file without that list.

Records of the past are not re-measured on every change: finished training
runs (settings with a `run_dir`: the figures come from a run of hours whose
sessions name their own commits) and before/after comparisons of a past
change (settings with `before`: the figures are about the two commits they
name, not about HEAD). They need the provenance keys and a commit that
exists in the history, nothing more.
"""

import glob
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = sorted(glob.glob(os.path.join(ROOT, "benchmarks", "results", "*.json")))
KEYS = ("commit", "dirty", "command")


def git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)


def _history_available():
    done = git("rev-parse", "--is-shallow-repository")
    return done.returncode == 0 and done.stdout.strip() == "false"


pytestmark = pytest.mark.skipif(not _history_available(),
                                reason="needs a git checkout with its full history")


def _load(path):
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("path", RESULTS, ids=os.path.basename)
def test_results_file_names_a_clean_commit_whose_code_is_heads(path):
    record = _load(path)
    settings = record.get("settings", {})
    missing = [key for key in KEYS if key not in settings]
    assert not missing, f"{os.path.basename(path)} lacks provenance {missing}"
    commit = settings["commit"]
    assert git("cat-file", "-e", f"{commit}^{{commit}}").returncode == 0, \
        f"{os.path.basename(path)} names commit {commit!r}, which this repository lacks"
    if settings.get("run_dir") or settings.get("before"):
        return  # a record of the past (see the module docstring)
    assert settings["dirty"] is False, \
        f"{os.path.basename(path)} was measured with uncommitted changes"
    paths = record.get("dependencies") or ["mcts_jax", "envs"]
    changed = git("diff", "--name-only", commit, "HEAD", "--", *paths).stdout.split()
    assert not changed, (f"{os.path.basename(path)} was measured at {commit[:10]}; since "
                         f"then these files it depends on changed: {changed}. Re-run its "
                         f"command: {settings['command']}")
