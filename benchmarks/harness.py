"""Shared timing and reporting helpers for the benchmarks.

Timing: `interleaved_rounds`, the one timing loop (each round times every
side of a cell once, the order reversed every other round; ratios are
formed within each round, never across processes).

Provenance (`provenance`, `write_json`): every results file names the git
commit of the working tree, whether it had uncommitted changes, the command
line and the seed (where the runner has one); `save` and `write_json`
refuse a record without the first three, and add the source files of
`mcts_jax/`, `envs/` and `training/` that the process had imported
(`python -m devtools.staleness` reports whether they changed since).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from importlib import metadata
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import jax

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The top-level folders whose commands write results files, each into its own
# results/: the suite (benchmarks/), the one-off experiments (experiments/)
# and the tools that guard changes (devtools/).
RESULTS_FOLDERS = ("benchmarks", "experiments", "devtools")


def _results_dir_of_command() -> str:
    """The results/ of the folder the running command belongs to (`python -m
    experiments.x` -> experiments/results/); benchmarks/results/ for anything
    else (the suite, a test, an interactive session)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    folder = spec.name.split(".")[0] if spec is not None and spec.name else ""
    return os.path.join(REPOSITORY, folder if folder in RESULTS_FOLDERS else "benchmarks",
                        "results")


RESULTS_DIR = _results_dir_of_command()
# The source trees a results file depends on (what its figures measure).
LIBRARY_TREES = ("mcts_jax", "envs", "training")
# What a results file must carry (in its "settings") to be traced to code;
# runners with random inputs add "seed".
PROVENANCE_KEYS = ("commit", "dirty", "command")
# Rounds of `interleaved_rounds` per mode.
ROUNDS = {"quick": 3, "full": 5}


def block(tree: Any) -> Any:
    return jax.tree.map(lambda x: x.block_until_ready() if hasattr(x, "block_until_ready") else x,
                        tree)


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> Dict[str, Any]:
    device = jax.devices()[0]
    return dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        platform=platform.platform(),
        processor=_cpu_model(),
        cpu_count=os.cpu_count(),
        backend=jax.default_backend(),
        device=getattr(device, "device_kind", str(device)),
        device_count=jax.device_count(),
        versions={name: _version(name) for name in
                  ("mcts_jax", "jax", "jaxlib", "mctx", "pgx", "flax", "numpy")},
    )


_NO_SEED = object()


def _git(*args) -> str:
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True,
                              cwd=REPOSITORY).stdout.strip()
    except OSError:
        return ""


def _tree_state() -> Dict[str, Any]:
    """The commit of the working tree and whether tracked files other than
    the results/ folders (`RESULTS_FOLDERS`) and markdown pages (regenerating
    results rewrites them, and they are not code) have uncommitted changes."""
    excluded = [f":(exclude){folder}/results" for folder in RESULTS_FOLDERS]
    return dict(commit=_git("rev-parse", "HEAD"),
                dirty=bool(_git("status", "--porcelain", "--untracked-files=no", "--", ".",
                                *excluded, ":(exclude)*.md")))


# Read when a benchmark starts (it imports this module before the library
# code it measures), so that a commit made while a long run goes on cannot
# be credited with figures the earlier code measured.
_AT_START = _tree_state()


def provenance(seed: Any = _NO_SEED) -> Dict[str, Any]:
    """What a results file must name to be traced to code: {commit: the git
    commit of the working tree when this process started ("" outside a
    checkout), dirty: whether it had uncommitted changes then (`_tree_state`),
    command: the command line} and, when given, {seed: the seed its random
    inputs come from} (None: inputs with no single seed). The training runs'
    `reporting.provenance` without its date, asked of git here so that a
    benchmark does not import (and depend on) the training package."""
    record = dict(_AT_START, command=" ".join(getattr(sys, "orig_argv", sys.argv)))
    if os.environ.get("MCTS_JAX_COMMIT"):
        # A copy of the tree on another machine (the device machine) may carry
        # a stale .git: the sender names the commit it sent, and whether clean.
        record.update(commit=os.environ["MCTS_JAX_COMMIT"],
                      dirty=os.environ.get("MCTS_JAX_DIRTY", "0") != "0",
                      commit_source="MCTS_JAX_COMMIT: the tree sent to this machine")
    if seed is not _NO_SEED:
        record["seed"] = seed
    return record


def check_provenance(settings: Dict[str, Any]) -> None:
    """Raises ValueError unless `settings` carries every PROVENANCE_KEYS."""
    missing = [key for key in PROVENANCE_KEYS if key not in (settings or {})]
    if missing:
        raise ValueError(f"a results file needs its provenance: settings lack {missing} "
                         "(add harness.provenance(seed) to them)")


def dependencies() -> List[str]:
    """Repository paths of the `mcts_jax/`, `envs/` and `training/` source files this
    process has imported (sorted): the code a results file depends on."""
    paths = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        relative = os.path.relpath(os.path.abspath(path), REPOSITORY)
        if relative.split(os.sep)[0] in LIBRARY_TREES and relative.endswith(".py"):
            paths.add(relative.replace(os.sep, "/"))
    return sorted(paths)


def library_files() -> List[str]:
    """Every `mcts_jax/`, `envs/` and `training/` source file (sorted): the dependencies of
    a process that did its work in subprocesses and imported none itself."""
    paths = []
    for top in LIBRARY_TREES:
        for folder, _, names in os.walk(os.path.join(REPOSITORY, top)):
            paths += [os.path.relpath(os.path.join(folder, name), REPOSITORY).replace(os.sep, "/")
                      for name in names if name.endswith(".py")]
    return sorted(paths)


def provenance_line(settings: Dict[str, Any]) -> str:
    """One line naming a results file's commit, tree state, command and seed."""
    commit = str(settings.get("commit") or "unknown")[:10]
    state = "uncommitted changes" if settings.get("dirty") else "clean tree"
    return (f"commit {commit} ({state}), seed {settings.get('seed')}, "
            f"command: `{settings.get('command', '')}`")


def file_sha256(relative_path: str) -> str:
    """The sha256 (hex) of a repository file's bytes."""
    with open(os.path.join(REPOSITORY, relative_path), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_json(path: str, record: Dict[str, Any]) -> str:
    """Writes a results record (with "settings") as JSON at `path`, after
    checking its provenance and adding `dependencies` (the imported library
    files) and `dependency_sha256` ({path: sha256 of its bytes}: a record of
    the code, no gate); marks `changed_during_run` the library files that
    differ from the commit the run started at. Returns the path."""
    check_provenance(record.get("settings"))
    paths = dependencies() or library_files()  # subprocess workers: the whole trees
    record = dict(record, dependencies=paths,
                  dependency_sha256={path: file_sha256(path) for path in paths})
    commit = record["settings"].get("commit")
    if commit and not record["settings"].get("commit_source"):
        changed = _git("diff", "--name-only", commit, "--", *paths).split()
        if changed:
            record["settings"] = dict(record["settings"], changed_during_run=changed)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    return path


def device_slug(info: Dict[str, Any] = None) -> str:
    """A file-name tag for the device: "cpu", or e.g. "nvidia-h100-80gb-hbm3"."""
    info = info or machine_info()
    if info["backend"] == "cpu":
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", str(info["device"]).lower()).strip("-") or info["backend"]


def mctx_recurrent_fn(recurrent_fn: Callable, mctx) -> Callable:
    """An mcts_jax recurrent_fn seen through mctx's contract: the same outputs
    and embeddings, with illegal actions (mctx has no `invalid_actions` below
    the root) given the lowest finite logit so that mctx never selects them."""
    def wrapped(params, rng_key, action, embedding):
        output, embedding = recurrent_fn(params, rng_key, action, embedding)
        logits = output.prior_logits
        if output.invalid_actions is not None:
            logits = jax.numpy.where(output.invalid_actions, jax.numpy.finfo(logits.dtype).min,
                                     logits)
        return mctx.RecurrentFnOutput(reward=output.reward, discount=output.discount,
                                      prior_logits=logits, value=output.value), embedding
    return wrapped


def mctx_root(mctx, root) -> Any:
    """Our RootFnOutput as mctx's (the same priors, value and embedding)."""
    return mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                             embedding=root.embedding)


def parser(doc: str, seed: bool = False) -> argparse.ArgumentParser:
    """The command line every standalone runner shares: its description (the
    first line of `doc`), `--no-save`, and where asked `--seed` (default 0)."""
    out = argparse.ArgumentParser(description=doc.split("\n")[0])
    if seed:
        out.add_argument("--seed", type=int, default=0)
    out.add_argument("--no-save", action="store_true", help="print, write no results file")
    return out


def fmt(value: Any) -> str:
    """A table cell: integers with thousands separators, floats to 3
    significant digits below 100 and whole above, anything else as text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def markdown_table(columns: Sequence[str], rows: Sequence[Any]) -> str:
    """A markdown table (right-aligned); a row is a dict read by `columns`
    or a sequence of cells in their order."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---:|" * len(columns)]
    for row in rows:
        cells = [row.get(c, "") for c in columns] if isinstance(row, dict) else row
        lines.append("| " + " | ".join(fmt(value) for value in cells) + " |")
    return "\n".join(lines)


def load_records(paths: Dict[str, str]) -> Dict[str, Dict[str, Any]]:
    """{name: the JSON at its path} for those of `paths` that exist."""
    found = {}
    for name, path in paths.items():
        if os.path.exists(path):
            with open(path) as f:
                found[name] = json.load(f)
    return found


def save(name: str, rows: List[Dict[str, Any]], settings: Dict[str, Any],
         **tables: List[Dict[str, Any]]) -> str:
    """Writes results/<name>-<backend>.json: the machine description, the
    settings (which must carry `provenance()`), the rows and any further
    named `tables` (lists of rows). A `name` that already ends with
    "-<backend>" (a `--name X-cpu` given by hand) gets no second suffix."""
    check_provenance(settings)
    info = machine_info()
    suffix = f"-{info['backend']}"
    name = name[:-len(suffix)] if name.endswith(suffix) else name
    path = os.path.join(RESULTS_DIR, f"{name}{suffix}.json")
    return write_json(path, dict(benchmark=name, machine=info, settings=settings, rows=rows,
                                 **tables))


def report(name: str, title: str, columns: Sequence[str], rows: List[Dict[str, Any]],
           settings: Dict[str, Any], save_results: bool = True,
           **tables: List[Dict[str, Any]]) -> None:
    """Prints the provenance line and the table under `title` and, unless
    told not to, saves the JSON (refused without provenance in `settings`)."""
    check_provenance(settings)
    print(f"\n{title}")
    print(provenance_line(settings))
    print(markdown_table(columns, rows))
    if save_results:
        print("saved", save(name, rows, settings, **tables))


# ---- interleaved measurement of the sides of one cell -----------------------------
def spread(values: Sequence[float]) -> Dict[str, float]:
    """{median, min, max} of `values`: how every figure here gives its range."""
    return dict(median=statistics.median(values), min=min(values), max=max(values))


def interleaved_rounds(sides: Dict[str, Callable[[], Any]], rounds: int,
                       pairs: Sequence[Tuple[str, str]] = (),
                       work: Optional[Dict[str, float]] = None, calls_per_round: int = 1,
                       sequential: bool = False,
                       deadline: Optional[float] = None) -> Dict[str, Any]:
    """Times the sides of one cell against each other.

    sides: name -> a call running one side's whole work (e.g. one batched
      search); each is called twice first (compilation, timed as
      `compile_s`, and a warm-up), then timed with `block_until_ready`.
    rounds: how many rounds. Round r times every side `calls_per_round`
      times back to back (its figure: their median), in the order of `sides`,
      reversed when r is odd; `sequential`: all rounds of one side, then the next.
    pairs: (ours, peer) names (absent sides left out); for each, the
      per-round ratio ours / peer = (work[ours] / t_ours) / (work[peer] /
      t_peer), > 1 when ours does more work per second.
    work: name -> units of work per call (e.g. B x simulations); default 1.
    deadline: a `time.perf_counter()` time: after the first round, a round
      runs only if one as long as the last ends before it (interleaved only).

    Returns {"sides": {name: {compile_s, seconds: [rounds], median_s, min_s,
    max_s}}, "ratios": {"ours/peer": {median, min, max, values: [rounds]}},
    "rounds", "order": "interleaved" or "sequential"}.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    work = work or {}
    compile_s = {}
    for name, fn in sides.items():
        start = time.perf_counter()
        block(fn())
        compile_s[name] = time.perf_counter() - start
        block(fn())
    seconds = {name: [] for name in sides}

    def one_round(name):
        times = []
        for _ in range(calls_per_round):
            start = time.perf_counter()
            block(sides[name]())
            times.append(time.perf_counter() - start)
        seconds[name].append(statistics.median(times))

    names = list(sides)
    if sequential:
        for name in names:
            for _ in range(rounds):
                one_round(name)
    else:
        last_round_s = 0.0
        for index in range(rounds):
            if index and deadline is not None and time.perf_counter() + last_round_s > deadline:
                break
            round_start = time.perf_counter()
            for name in (names if index % 2 == 0 else names[::-1]):
                one_round(name)
            last_round_s = time.perf_counter() - round_start
    out_sides = {name: dict(compile_s=compile_s[name], seconds=seconds[name],
                            **{f"{key}_s": value for key, value in spread(seconds[name]).items()})
                 for name in names}
    ratios = {}
    for ours, peer in pairs:
        if ours in sides and peer in sides:
            values = [(work.get(ours, 1.0) / a) / (work.get(peer, 1.0) / b)
                      for a, b in zip(seconds[ours], seconds[peer])]
            ratios[f"{ours}/{peer}"] = dict(spread(values), values=values)
    return dict(sides=out_sides, ratios=ratios, rounds=len(seconds[names[0]]) if names else 0,
                order="sequential" if sequential else "interleaved")


def throughput_fields(side: Dict[str, Any], work: float) -> Dict[str, Any]:
    """A side of `interleaved_rounds` as a row's figures: sims_per_s (work
    per median second) with its range, compile_s and the per-round seconds."""
    return dict(sims_per_s=work / side["median_s"], sims_per_s_min=work / side["max_s"],
                sims_per_s_max=work / side["min_s"], compile_s=side["compile_s"],
                seconds=side["seconds"])


def ratio_fields(ratio: Optional[Dict[str, float]], prefix: str = "ratio") -> Dict[str, float]:
    """A ratio of `interleaved_rounds` as a row's {prefix, prefix_min,
    prefix_max} ({} for None: no peer measured)."""
    if ratio is None:
        return {}
    return {prefix: ratio["median"], f"{prefix}_min": ratio["min"],
            f"{prefix}_max": ratio["max"]}


def error_text(error: BaseException) -> str:
    """An exception as a row's `error`: its type and the start of its message."""
    return f"{type(error).__name__}: {str(error)[:400]}"


def ratio_text(ratio: Dict[str, float]) -> str:
    """"4.42 (4.10-4.61)": a ratio's median and range over the rounds."""
    return f"{ratio['median']:.3g} ({ratio['min']:.3g}-{ratio['max']:.3g})"
