"""Is this working tree's library the same program as an earlier commit's?

    python -m devtools.equivalence --before 780f1a4 --speed-record before_after_redesign

For a change meant to alter no behaviour (a redesign, a move of modules):

1. The earlier commit is extracted with `git archive` into a temporary
   folder. `devtools/equivalence_battery.py` (this tree's copy, so both
   sides run the same cases) runs once with that folder's `mcts_jax`/`envs`
   and once with this tree's, each in its own process, and saves every
   output array of about 65 seeded searches (every policy and option, pgx
   games, chance games). The arrays are compared exactly: dtype, shape and
   bits (NaN equal to NaN, -0.0 not equal to 0.0). Arrays a later version
   adds beside unchanged ones (`NEW_OUTPUTS`: the prior logits the
   mctx-signature functions keep for mctx's `children_prior_logits` since
   issue 33) are counted as new outputs, not compared; a search whose
   callers read only the action compiles to the same program with or
   without them (XLA drops a loop value nothing reads).
2. `train.py` runs a few seeded iterations (AlphaZero, then Gumbel with tree
   reuse) in both folders; every number of `metrics.jsonl` but the timings
   must be equal.
3. With `--speed-record NAME`, the before/after throughput file
   `results/NAME-<device>.json` (`devtools.before_after` against the same
   commit) is read: its worst per-cell median ratio is recorded.

results/equivalence-<device>.json records the verdict, the sha256 of every
`mcts_jax/`, `envs/` and `training/` file at the earlier commit and in this
tree, and the speed figure. An identical record (speed within 5%) is what
vouches for a change that claims "no behaviour change"; figures measured at
the earlier commit are still listed by `python -m devtools.staleness`, and
are regenerated when a stage ends (benchmarks/README.md, "Provenance and
staleness").
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks import harness

BATTERY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "equivalence_battery.py")
# A few seeded iterations of train.py: self-play, search, replay, learner,
# symmetry augmentation and checkpoints, in seconds.
TRAINING_RUNS = {
    "train_alphazero": ["--iterations", "2", "--num-games", "8", "--num-simulations", "8",
                        "--train-batch-size", "16", "--updates-per-iteration", "2",
                        "--min-replay", "16", "--policy", "alphazero"],
    "train_gumbel_reuse": ["--iterations", "2", "--num-games", "8", "--num-simulations", "8",
                           "--train-batch-size", "16", "--updates-per-iteration", "2",
                           "--min-replay", "16", "--policy", "gumbel", "--reuse-tree"],
}
TRAINING_COMMON = ["--eval-every", "0", "--final-games", "0", "--elo-every", "0",
                   "--no-progress", "--checkpoint-every", "1", "--seed", "3"]
# Arrays the "after" side may add (name suffixes), beside unchanged ones.
NEW_OUTPUTS = (".prior_logits",)
# The slowest cell may be this much slower (after / before throughput).
SPEED_TOLERANCE = 0.95


def extract(revision: str, folder: str) -> str:
    """The whole tree of `revision` under `folder`; returns its full commit id."""
    archive = os.path.join(folder, "tree.tar")
    subprocess.run(["git", "-C", harness.REPOSITORY, "archive", "-o", archive, revision],
                   check=True)
    subprocess.run(["tar", "-xf", archive, "-C", folder], check=True)
    os.remove(archive)
    return subprocess.run(["git", "-C", harness.REPOSITORY, "rev-parse", f"{revision}^{{commit}}"],
                          capture_output=True, text=True, check=True).stdout.strip()


def library_hashes(root: str) -> dict:
    """{path: sha256} of every library source file under `root`."""
    hashes = {}
    for top in harness.LIBRARY_TREES:
        for path in glob.glob(os.path.join(root, top, "**", "*.py"), recursive=True):
            with open(path, "rb") as f:
                relative = os.path.relpath(path, root).replace(os.sep, "/")
                hashes[relative] = hashlib.sha256(f.read()).hexdigest()
    return dict(sorted(hashes.items()))


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """dtype, shape and bits equal (NaN payloads aside, NaN equals NaN)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        nan = np.isnan(a) & np.isnan(b)
        return bool(np.all((a == b) | nan) and np.array_equal(np.signbit(a), np.signbit(b)))
    return bool(np.array_equal(a, b))


def compare(part: str, before: dict, after: dict) -> dict:
    """One row: how many values of `part` were compared and which differ."""
    common = sorted(set(before) & set(after))
    differing = [name for name in common if not same_array(before[name], after[name])]
    added = sorted(set(after) - set(before))
    new_outputs = [name for name in added if name.endswith(NEW_OUTPUTS)]
    return dict(part=part, compared=len(common), differing=len(differing),
                only_before=len(set(before) - set(after)),
                only_after=len(added) - len(new_outputs), new_outputs=len(new_outputs),
                errors_both=sum(name.endswith("/error") for name in common),
                examples=", ".join((differing + sorted(
                    (set(before) ^ set(after)) - set(new_outputs)))[:5]))


def run_battery(library: str, out: str, cases) -> dict:
    subprocess.run([sys.executable, BATTERY, library, out, *cases], check=True)
    with np.load(out) as arrays:
        return {name: arrays[name] for name in arrays.files}


def training_metrics(library: str, run_dir: str, arguments) -> dict:
    """Every number `train.py` logged, timings aside, as named arrays."""
    subprocess.run([sys.executable, "train.py", "--run-dir", run_dir, *arguments,
                    *TRAINING_COMMON], cwd=library, check=True, stdout=subprocess.DEVNULL)
    values = {}
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            for key, value in record.items():
                timing = key.endswith("_s") or "per_s" in key
                if isinstance(value, (int, float)) and not timing:
                    values[f"iteration{record['iteration']}/{key}"] = np.asarray(value)
    return values


def speed_figure(name: str, before_commit: str) -> dict:
    """The worst median ratio of a before_after results file against the same commit."""
    path = os.path.join(harness.RESULTS_DIR, f"{name}-{harness.machine_info()['backend']}.json")
    with open(path) as f:
        record = json.load(f)
    if record["settings"].get("before_commit") != before_commit:
        raise ValueError(f"{path} compares against {record['settings'].get('before_commit')}, "
                         f"not {before_commit}")
    worst = min(row["ratio_median"] for row in record["rows"])
    return dict(speed_record=os.path.basename(path), worst_ratio_median=worst,
                speed_cells=len(record["rows"]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision to compare against")
    parser.add_argument("--speed-record", help="before_after results name to vouch for speed")
    parser.add_argument("--cases", nargs="*", default=[], help="only battery cases matching")
    parser.add_argument("--no-training", action="store_true")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--name", default="equivalence")
    args = parser.parse_args(argv)

    folder = tempfile.mkdtemp(prefix="equivalence_")
    before_tree = os.path.join(folder, "before")
    os.makedirs(before_tree)
    before_commit = extract(args.before, before_tree)
    sides = {"before": before_tree, "after": harness.REPOSITORY}
    arrays = {side: run_battery(library, os.path.join(folder, f"{side}.npz"), args.cases)
              for side, library in sides.items()}
    rows = [compare("searches", arrays["before"], arrays["after"])]
    if not args.no_training:
        for run, arguments in TRAINING_RUNS.items():
            metrics = {side: training_metrics(library, os.path.join(folder, f"{run}_{side}"),
                                              arguments)
                       for side, library in sides.items()}
            rows.append(compare(run, metrics["before"], metrics["after"]))
    identical = all(row["differing"] == row["only_before"] == row["only_after"] == 0
                    for row in rows)
    settings = dict(before=args.before, before_commit=before_commit, identical=identical,
                    cases=args.cases or "all", training_arguments=TRAINING_COMMON,
                    new_outputs=list(NEW_OUTPUTS),
                    speed_tolerance=SPEED_TOLERANCE, **harness.provenance())
    if args.speed_record:
        settings.update(speed_figure(args.speed_record, before_commit))
        settings["vouches"] = bool(identical and not args.cases and not args.no_training
                                   and settings["worst_ratio_median"] >= SPEED_TOLERANCE)
    hashes = {side: library_hashes(library) for side, library in sides.items()}
    harness.report(args.name, f"Same program as {args.before}? "
                   f"{'identical' if identical else 'DIFFERENT'}",
                   ["part", "compared", "differing", "only_before", "only_after", "new_outputs",
                    "errors_both", "examples"], rows, settings, save_results=not args.no_save,
                   library_before=[dict(path=p, sha256=h) for p, h in hashes["before"].items()],
                   library_after=[dict(path=p, sha256=h) for p, h in hashes["after"].items()])
    if not identical or (args.speed_record and not math.isfinite(
            settings["worst_ratio_median"])):
        sys.exit(1)


if __name__ == "__main__":
    main()
