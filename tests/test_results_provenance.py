"""Every committed results file can be traced to the code that measured it.

The rule (benchmarks/README.md, "Provenance and staleness"): each
results file (benchmarks/, experiments/ and devtools/results/*.json) names in its settings the commit (the full id),
whether the tree had uncommitted changes (`dirty`) and the command line, and
names its machine; it was measured on a clean tree, whose library files did
not change while it ran; and its commit is one
this repository has (not checked in a shallow clone, which lacks older
commits). `git show <commit>` then gives the code behind its figures.

A figure is traceable, not a gate: nothing here compares library files with
the ones a results file measured, so a library change fails no test here.
Which figures were measured at older library code, and the commands that
regenerate them, is a report: `python -m devtools.staleness`.
"""

import glob
import json
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_FOLDERS = ("benchmarks", "experiments", "devtools")
RESULTS = sorted(path for folder in RESULTS_FOLDERS
                 for path in glob.glob(os.path.join(ROOT, folder, "results", "*.json")))
KEYS = ("commit", "dirty", "command")
# Records of training runs measured with uncommitted changes before the rule
# was kept (their notes say what the changes were). A new results file is
# measured on a clean tree; a regenerated one leaves this list.
DIRTY_BEFORE_THE_RULE = {
    "connect_four_ab_mix_cap-cpu.json",
    "connect_four_ab_z_only-cpu.json",
    "connect_four_overlap_off-cpu.json",
    "connect_four_overlap_on-cpu.json",
    "connect_four_training-cpu.json",
    "learned_models_gumbel-cpu.json",
}


def _git(*args):
    try:
        return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    except OSError:
        return None


def _history_is_complete():
    """True when this checkout's git has its whole history (no shallow clone)."""
    shallow = _git("rev-parse", "--is-shallow-repository")
    return shallow is not None and shallow.returncode == 0 and shallow.stdout.strip() == "false"


HISTORY_IS_COMPLETE = _history_is_complete()


def test_there_are_results_to_check():
    assert len(RESULTS) >= 10
    for folder in RESULTS_FOLDERS:  # each folder keeps its own records
        assert any(os.sep + os.path.join(folder, "results") + os.sep in path
                   for path in RESULTS), folder


@pytest.mark.parametrize("path", RESULTS, ids=os.path.basename)
def test_results_file_names_its_commit_command_and_machine(path):
    name = os.path.basename(path)
    with open(path) as f:
        record = json.load(f)
    settings = record.get("settings", {})
    missing = [key for key in KEYS if key not in settings]
    assert not missing, f"{name} lacks provenance {missing}"
    commit = settings["commit"]
    assert re.fullmatch(r"[0-9a-f]{40}", str(commit)), f"{name}: commit {commit!r}"
    assert isinstance(settings["dirty"], bool), f"{name}: dirty {settings['dirty']!r}"
    assert isinstance(settings["command"], str) and settings["command"].strip(), (
        f"{name}: command {settings['command']!r}")
    machine = record.get("machine")
    assert isinstance(machine, dict) and machine.get("device") and machine.get("platform"), (
        f"{name} does not name its machine (harness.machine_info)")
    if name not in DIRTY_BEFORE_THE_RULE:
        assert settings["dirty"] is False, f"{name} was measured with uncommitted changes"
    # The commit is read when the run starts; library files changed on disk
    # before it saved (harness.write_json marks them) make it untraceable.
    assert not settings.get("changed_during_run"), (
        f"{name}: library files changed while it ran: {settings['changed_during_run']}")


@pytest.mark.skipif(not HISTORY_IS_COMPLETE, reason="a shallow clone lacks older commits")
@pytest.mark.parametrize("path", RESULTS, ids=os.path.basename)
def test_results_file_commit_is_in_the_history(path):
    with open(path) as f:
        commit = str(json.load(f).get("settings", {}).get("commit"))
    known = _git("cat-file", "-e", f"{commit}^{{commit}}")
    assert known.returncode == 0, (
        f"{os.path.basename(path)} names commit {commit}, which this repository lacks")
