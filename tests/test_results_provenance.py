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

A change meant to alter no behaviour (a redesign) need not re-measure
everything: `python -m benchmarks.equivalence --before REV --speed-record
NAME` shows that today's library files are the same program as REV's (every
output array of its battery and every number of seeded `train.py` runs
identical, no before/after throughput cell slower than 5%), and records the
sha256 of the library files on both sides. A results file whose recorded
dependencies are REV's bytes is then as valid as on the day it was measured,
as long as today's bytes of those same files are the record's "after" side
(files the results file never imported may have changed since).

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


def _vouching_records():
    """Equivalence records (benchmarks.equivalence) that vouch: identical
    behaviour and speed within tolerance. Returns (name, before commit,
    {path: sha256 before}, {path: sha256 after}) each; a record vouches for
    a results file when its "after" side is today's bytes of every file
    that results file depends on (see `_vouched`)."""
    vouching = []
    for path in RESULTS:
        record = _load(path)
        settings = record.get("settings", {})
        if record.get("benchmark") != "equivalence" or not settings.get("vouches"):
            continue
        if settings["worst_ratio_median"] >= settings["speed_tolerance"]:
            before = {row["path"]: row["sha256"] for row in record["library_before"]}
            after = {row["path"]: row["sha256"] for row in record["library_after"]}
            vouching.append((os.path.basename(path), settings["before_commit"], before, after))
    return vouching


def _vouched(hashes):
    """Names of the equivalence records that vouch for a results file whose
    dependencies had the bytes `hashes` ({path: sha256}) when measured:
    the record's "before" side holds those bytes and its "after" side
    today's bytes of the same files ("missing" on both: a file gone since).
    The record showed its whole library the same program on both sides; a
    results file's figures depend only on the files it imported, so a later
    change to files it never imported (a new trainer in training/, say)
    leaves the record's word standing."""
    today = {path: _sha256(path) for path in hashes}
    return [name for name, _, before, after in VOUCHING
            if all(before.get(path) == digest and after.get(path, "missing") == today[path]
                   for path, digest in hashes.items())]


def _library_files():
    paths = []
    for top in ("mcts_jax", "envs", "training"):
        for path in glob.glob(os.path.join(ROOT, top, "**", "*.py"), recursive=True):
            paths.append(os.path.relpath(path, ROOT).replace(os.sep, "/"))
    return sorted(paths)


VOUCHING = _vouching_records()


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
    vouched_by = _vouched(hashes)
    assert not changed or vouched_by, (
        f"{name} was measured at {commit[:10]}; since then these files it depends on changed: "
        f"{changed}. Re-run its command: {settings['command']}, or show that today's code is "
        f"the same program (python -m benchmarks.equivalence)")
