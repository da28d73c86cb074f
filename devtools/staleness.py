"""Which results files were measured at older library code, and the commands
that regenerate them. A report, never a gate: it always exits with 0.

    python -m devtools.staleness                # every results file
    python -m devtools.staleness --stale-only   # leave out the current ones
    python -m devtools.staleness --commands     # the stale files' commands, one a line
    python -m devtools.staleness --json         # machine-readable

For each results file (`*.json` of benchmarks/results/, experiments/results/
and devtools/results/) it asks git which library files changed
between the commit the file names (`settings.commit`) and HEAD: `git diff
--name-only --no-renames <commit> HEAD -- mcts_jax envs training`, kept to
the file's `dependencies` (the library files the measuring process had
imported, `harness.write_json`) when it records them; a `training_run`
record's dependencies are only what read its run folder, so it is held to
the whole library. A file is

- "current": none of them changed since its commit;
- "stale": some did (the table names how many and the first few);
- "unknown (commit not in this clone)": git lacks its commit (a shallow
  clone, or a commit that was never pushed);
- "no provenance": it names no commit (every file should).

Only commits are compared: uncommitted edits of the working tree are not
counted (figures are measured on a clean tree anyway).

The regeneration command is the file's `settings.command` made runnable here:
the interpreter's path becomes `python`, and each argument is shell-quoted
(the free text after `--note`, which the recorded command line joined with
spaces, as one argument). Two kinds of command cannot simply be re-run, and
`--commands` prints them as `#` comment lines with the reason, so that its
output can be piped to a shell at the end of a stage:

- a command that reads an existing run folder (`benchmarks.training_run RUN`,
  or `--run-dir RUN`): the run must be trained again first (see the
  regeneration tables of experiments/README.md and the file's `sessions`);
- a comparison with an earlier commit (settings with `before`:
  `devtools.before_after`, `devtools.equivalence`): re-running it
  compares that commit with today's code, a different claim.

Some commands also write a file under another name that must be renamed
(the "Regenerating the results files" tables of benchmarks/, experiments/
and devtools/README.md say which).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shlex
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence

# This checkout (imports nothing of the library: the report needs no jax).
REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The library trees a results file measures (harness.LIBRARY_TREES).
LIBRARY_TREES = ("mcts_jax", "envs", "training")
# The folders of results files (benchmarks.harness.RESULTS_FOLDERS).
RESULTS_DIRS = tuple(os.path.join(REPOSITORY, folder, "results")
                     for folder in ("benchmarks", "experiments", "devtools"))
# Modules that left benchmarks/ (issue 65): a command recorded before names
# their old place, and runs from the new one.
MOVED_MODULES = dict(
    {f"benchmarks.{name}": f"experiments.{name}" for name in (
        "checkpoint_write", "connect_four_agent", "connect_four_positions",
        "connect_four_recipe", "equal_time", "graph_search", "learned_models",
        "mate_in_two_positions", "parallel_leaves", "search_parts", "search_throughput",
        "self_play_devices", "simulator_throughput", "stochastic_games", "tree_steps",
        "engines_judged", "anytime_savings")},
    **{f"benchmarks.{name}": f"devtools.{name}" for name in (
        "before_after", "call_path", "equivalence", "staleness")})
# Parts of a module that moved out alone: (old module, its option) -> new module.
MOVED_PARTS = {("benchmarks.memory", "--runs"): "experiments.memory_runs"}
# Standalone runners that became suite sections (issue 65): a command recorded
# before (no options: every such file was made with the defaults, which are
# the full mode's sizes) runs as the section, which writes
# <section>-full-<device>.json beside the old file.
FOLDED_MODULES = {
    "benchmarks.feature_costs": "benchmarks --full --only features",
    "benchmarks.memory": "benchmarks --full --only memory",
    "benchmarks.stochastic_search": "benchmarks --full --only stochastic",
    "benchmarks.chess_search": "benchmarks --full --only chess_search",
}
# How many changed files the table names.
SHOWN_CHANGES = 3
# Longest command the table shows whole (--json and --commands give all).
SHOWN_COMMAND = 160

CURRENT = "current"
STALE = "stale"
UNKNOWN = "unknown (commit not in this clone)"
NO_PROVENANCE = "no provenance"


def _git(repo: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)


def runnable(command: str) -> str:
    """A recorded command line (words joined with spaces) as a command to run
    from the repository root: `/usr/bin/python3 -m benchmarks.x --a 1` ->
    `python -m benchmarks.x --a 1`; a module that moved (`MOVED_MODULES`,
    `MOVED_PARTS`) by its new name, a runner folded into the suite
    (`FOLDED_MODULES`) as its section; every word shell-quoted where it
    needs it, and everything after `--note` one quoted argument."""
    words = command.split()
    if words and re.fullmatch(r"(.*/)?python[0-9.]*", words[0]):
        words[0] = "python"
    words = [MOVED_MODULES.get(word, word) for word in words]
    for (module, option), new_module in MOVED_PARTS.items():
        if module in words and option in words:
            words[words.index(module)] = new_module
    words = [part for word in words for part in FOLDED_MODULES.get(word, word).split()]
    if "--note" in words:
        at = words.index("--note") + 1
        words = words[:at] + [" ".join(words[at:])]
    return " ".join(shlex.quote(word) for word in words)


def _caveat(settings: Dict[str, Any], command: str) -> Optional[str]:
    """Why the command cannot simply be re-run (None: it can)."""
    if settings.get("before"):
        return (f"a comparison with {str(settings['before'])[:10]}: re-running compares it "
                f"with today's code")
    words = command.split()
    if "benchmarks.training_run" in words or "--run-dir" in words:
        return f"reads the run folder {settings.get('run_dir')}: train it again first"
    return None


class _Changes:
    """Library files changed between a commit and HEAD, asked of git once per commit."""

    def __init__(self, repo: str):
        self.repo = repo
        self.cache: Dict[str, Optional[List[str]]] = {}

    def __call__(self, commit: str) -> Optional[List[str]]:
        """Paths of the library trees that differ between `commit` and HEAD
        (sorted), or None when git does not have `commit`."""
        if commit not in self.cache:
            known = _git(self.repo, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0
            diff = (_git(self.repo, "diff", "--name-only", "--no-renames", commit, "HEAD", "--",
                         *LIBRARY_TREES) if known else None)
            self.cache[commit] = (sorted(diff.stdout.split()) if diff is not None
                                  and diff.returncode == 0 else None)
        return self.cache[commit]


def report(results_dirs: Sequence[str], repo: str = REPOSITORY) -> List[Dict[str, Any]]:
    """One row per results file of the folders `results_dirs` (sorted by name
    within each; a lone str is one folder): file (its path from the
    repository root, or its name for a folder outside it), commit, status (see
    the module docstring), changed (the library files it measured that
    changed since its commit), command (runnable), caveat (None, or why the
    command cannot simply be re-run)."""
    changes = _Changes(repo)
    rows = []
    folders = [results_dirs] if isinstance(results_dirs, str) else list(results_dirs)
    paths = [path for folder in folders
             for path in sorted(glob.glob(os.path.join(folder, "*.json")))]
    for path in paths:
        with open(path) as f:
            record = json.load(f)
        settings = record.get("settings") or {}
        commit = str(settings.get("commit") or "")
        command = runnable(str(settings.get("command") or ""))
        inside = os.path.abspath(path).startswith(os.path.abspath(repo) + os.sep)
        name = os.path.relpath(path, repo) if inside else os.path.basename(path)
        row = dict(file=name, commit=commit, status=NO_PROVENANCE,
                   changed=[], command=command, caveat=_caveat(settings, command))
        if commit:
            changed = changes(commit)
            if changed is None:
                row["status"] = UNKNOWN
            else:
                measured = record.get("dependencies")
                if record.get("benchmark") == "training_run":
                    measured = None  # it only read a run folder: the run trained with all
                if measured is not None:
                    measured = set(measured)
                    changed = [name for name in changed if name in measured]
                row.update(status=STALE if changed else CURRENT, changed=changed)
        rows.append(row)
    return rows


def commands(rows: List[Dict[str, Any]]) -> List[str]:
    """The stale files' regeneration commands, each once, in the order of the
    files: those to run first, then those that cannot simply be re-run, as
    `#` comment lines saying why."""
    plain, commented = [], []
    for row in rows:
        if row["status"] != STALE or not row["command"]:
            continue
        if row["caveat"]:
            line = f"# {row['file']} {row['caveat']}: {row['command']}"
            if line not in commented:
                commented.append(line)
        elif row["command"] not in plain:
            plain.append(row["command"])
    return plain + commented


def _changed_text(row: Dict[str, Any]) -> str:
    if row["status"] != STALE:
        return ""
    names = row["changed"][:SHOWN_CHANGES]
    more = len(row["changed"]) - len(names)
    return f"{len(row['changed'])}: " + ", ".join(names) + (f", +{more} more" if more else "")


def table(rows: List[Dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    lines = ["| file | measured at | status | library files changed since | regenerate with |",
             "|---|---|---|---|---|"]
    for row in rows:
        command = row["command"]
        if len(command) > SHOWN_COMMAND:
            command = command[:SHOWN_COMMAND] + "..."
        if row["caveat"]:
            command = f"({row['caveat']}) {command}"
        lines.append(f"| {row['file']} | {row['commit'][:10] or '-'} | {row['status']} | "
                     f"{_changed_text(row)} | `{command}` |")
    return "\n".join(lines)


def summary(rows: List[Dict[str, Any]], head: str) -> str:
    counts = {status: sum(row["status"] == status for row in rows)
              for status in (STALE, CURRENT, UNKNOWN, NO_PROVENANCE)}
    return (f"{len(rows)} results files against HEAD {head[:10]}: "
            + ", ".join(f"{n} {status}" for status, n in counts.items() if n))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results-dir", nargs="+", default=list(RESULTS_DIRS),
                        help="folders of the results files (default benchmarks/, "
                             "experiments/ and devtools/results)")
    parser.add_argument("--repo", default=REPOSITORY,
                        help="the git checkout whose history is asked (default this one)")
    parser.add_argument("--stale-only", action="store_true",
                        help="leave out the files known to be current")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--commands", action="store_true",
                        help="print only the stale files' regeneration commands, one a line")
    args = parser.parse_args(argv)
    rows = report(args.results_dir, args.repo)
    head = _git(args.repo, "rev-parse", "HEAD").stdout.strip()
    shown = [row for row in rows if row["status"] != CURRENT] if args.stale_only else rows
    if args.commands:
        print("\n".join(commands(rows)))
    elif args.json:
        print(json.dumps(dict(head=head, rows=shown), indent=1))
    else:
        print(summary(rows, head))
        print()
        print(table(shown))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # piped into `head`: still a report, exit 0
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
