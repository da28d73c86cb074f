"""Shared timing and reporting helpers for the benchmarks.

Timing rule: the first call is timed separately as compilation; then one
warm-up call; then `repeats` timed calls, each synchronised with
`block_until_ready`, and the median is reported. Ratios are only quoted
between figures measured in the same process, one after the other.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import statistics
import time
from importlib import metadata
from typing import Any, Callable, Dict, List, Sequence

import jax

from mcts_jax.training import reporting

RESULTS_DIR = os.path.join(os.path.dirname(__file__), "results")


def block(tree: Any) -> Any:
    return jax.tree.map(lambda x: x.block_until_ready() if hasattr(x, "block_until_ready") else x,
                        tree)


def time_call(fn: Callable[[], Any], repeats: int) -> Dict[str, float]:
    """{'compile_s': first call, 'median_s': median of `repeats` warm calls}."""
    start = time.perf_counter()
    block(fn())
    compile_s = time.perf_counter() - start
    block(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        block(fn())
        times.append(time.perf_counter() - start)
    return dict(compile_s=compile_s, median_s=statistics.median(times), min_s=min(times))


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


def provenance() -> Dict[str, Any]:
    """What a results file must name to be traced to code: the git commit of
    this working tree, whether it had uncommitted changes, and the command
    (the training runs' `reporting.provenance`, without its date: results
    files carry theirs in `machine`)."""
    record = reporting.provenance()
    del record["date"]
    return record


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


def markdown_table(columns: Sequence[str], rows: List[Dict[str, Any]]) -> str:
    def cell(value):
        if isinstance(value, float):
            return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(cell(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def save(name: str, rows: List[Dict[str, Any]], settings: Dict[str, Any]) -> str:
    """Writes results/<name>-<backend>.json with the machine description."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    info = machine_info()
    path = os.path.join(RESULTS_DIR, f"{name}-{info['backend']}.json")
    with open(path, "w") as f:
        json.dump(dict(benchmark=name, machine=info, settings=settings, rows=rows), f, indent=2)
    return path


def report(name: str, title: str, columns: Sequence[str], rows: List[Dict[str, Any]],
           settings: Dict[str, Any], save_results: bool = True) -> None:
    """Prints the table under `title` and, unless told not to, saves the JSON."""
    print(f"\n{title}")
    print(markdown_table(columns, rows))
    if save_results:
        print("saved", save(name, rows, settings))
