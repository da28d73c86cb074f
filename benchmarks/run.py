"""The benchmark suite: one command, JSON results, a markdown report and PNG plots.

    python -m benchmarks --quick        # a few minutes on a 2-core CPU
    python -m benchmarks --full         # the published sweeps (meant for a GPU)
    python -m benchmarks --full --only batch-tic_tac_toe_net quality
    python -m benchmarks --full --report-only   # rebuild tables/plots from the JSON

Each section writes `results/<section>-<mode>-<device>.json` (machine,
device, versions, settings and every figure) as soon as it is measured, so a
run cut short keeps what it finished and sections can run in separate
commands. Then the report is rebuilt from every section file of that mode and
device: `results/report-<mode>-<device>.md`, `results/plots/<mode>-<device>-*.png`,
and the block of that mode and device in `benchmarks/README.md`.

Timing: `harness.interleaved_rounds` (3 rounds quick, 5 full); provenance
(commit, tree state, command line, seed): `harness.provenance`.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from benchmarks import harness

BENCHMARKS_DIR = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(BENCHMARKS_DIR, "README.md")
NEW_BLOCKS_ANCHOR = "<!-- suite:new blocks go here -->"


ALL_RUNNERS = ("ours_uct", "ours_alphazero", "ours_gumbel", "mctx_muzero", "mctx_gumbel")
# The sizes of each mode: `rounds` (interleaved rounds per cell), `runners`,
# `call_budget_s` (a runner whose call took longer is skipped for larger
# cells), then each section's own, recorded in its settings (`batch`: every
# batch-<problem> but chess, which runs where the mode has `chess`;
# `simulations`: throughput against num_simulations; `stochastic`: each
# problem's budgets; `chess_search`, full only: the chess-sized factors).
MODES: Dict[str, Dict[str, Any]] = {
    "quick": dict(
        rounds=harness.ROUNDS["quick"], call_budget_s=5.0, runners=ALL_RUNNERS,
        batch=dict(problems=("synthetic", "tic_tac_toe_net"), batch_sizes=(1, 16, 256),
                   simulations=32),
        simulations=dict(problems=("tic_tac_toe",), batch_size=16, simulations=(8, 32, 128)),
        quality=dict(trees=((4, 8), (6, 4)), simulations=(8, 32, 128), roots=256),
        memory=dict(games=None),
        features=dict(problems=("synthetic", "tic_tac_toe"), batch_sizes=(64,), simulations=64),
        baselines=dict(simulations=1024, batch_sizes=(1, 256)),
        stochastic=dict(simulations={"synthetic": (64,), "2048": (64,)},
                        batch_sizes=(1, 16, 128))),
    "full": dict(
        rounds=harness.ROUNDS["full"], call_budget_s=20.0, runners=ALL_RUNNERS,
        batch=dict(problems=("synthetic", "tic_tac_toe", "tic_tac_toe_net"),
                   batch_sizes=(1, 4, 16, 64, 256, 1024, 4096, 16384), simulations=64),
        chess=dict(batch_sizes=(1, 4, 16, 64, 256, 1024), simulations=32),
        simulations=dict(problems=("synthetic", "tic_tac_toe", "tic_tac_toe_net"),
                         batch_size=1024, simulations=(16, 64, 256, 1024)),
        quality=dict(trees=((4, 16), (6, 8), (8, 4)), simulations=(8, 32, 128, 512),
                     roots=1024),
        memory=dict(games=None),
        features=dict(problems=("synthetic", "tic_tac_toe"), batch_sizes=(64, 1024),
                      simulations=256),
        baselines=dict(simulations=4096, batch_sizes=(1, 256, 4096)),
        stochastic=dict(simulations={"synthetic": (64, 256), "2048": (64,)},
                        batch_sizes=(1, 16, 128, 1024)),
        chess_search=dict(problems=("synthetic", "pgx_chess"), batch_sizes=(64,),
                          simulations=(128,))),
    # For tests/test_benchmarks.py: every section, tiny shapes.
    "tiny": dict(
        rounds=2, call_budget_s=5.0, runners=("ours_alphazero", "mctx_muzero"),
        batch=dict(problems=("synthetic",), batch_sizes=(4,), simulations=8),
        simulations=dict(problems=("synthetic",), batch_size=4, simulations=(8,)),
        quality=dict(trees=((3, 3),), simulations=(8,), roots=32),
        memory=dict(games=("tic_tac_toe",)),
        features=dict(problems=("synthetic",), batch_sizes=(4,), simulations=8),
        baselines=dict(simulations=64, batch_sizes=(1,)),
        stochastic=dict(simulations={"synthetic": (8,)}, batch_sizes=(2,))),
}


# ---- sections: each returns (rows, settings) ------------------------------------
def _throughput(problems, cells, config, log):
    from benchmarks import sweeps
    measured = [(problem, sweeps.runners_for(problem, config["runners"]), b, s, {})
                for problem in problems for b, s in sorted(cells)]
    rows = sweeps.sweep(measured, config["rounds"], sweeps.slower_than(config["call_budget_s"]),
                        log)
    return rows, dict(problems=list(problems), cells=[list(c) for c in cells],
                      runners=list(config["runners"]), rounds=config["rounds"],
                      order="interleaved")


def section_batch(problem: str) -> Callable:
    def run(config, log):
        sizes = config["chess" if problem == "chess" else "batch"]
        return _throughput([problem], [(b, sizes["simulations"]) for b in sizes["batch_sizes"]],
                           config, log)
    return run


def section_sims(config, log):
    sizes = config["simulations"]
    cells = [(sizes["batch_size"], s) for s in sizes["simulations"]]
    return _throughput(sizes["problems"], cells, config, log)


def section_quality(config, log):
    from benchmarks import quality
    sizes = config["quality"]
    return quality.measure(sizes["trees"], sizes["simulations"], config["runners"],
                           sizes["roots"], log=log), sizes


def section_memory(config, log):
    from benchmarks import memory
    return (memory.layout_rows(games=config["memory"]["games"]),
            dict(batch_size=1024, max_nodes=801))


def section_features(config, log):
    from benchmarks import feature_costs
    sizes = config["features"]
    rows = feature_costs.measure(sizes["batch_sizes"], sizes["simulations"], config["rounds"],
                                 sizes["problems"], log=log)
    return rows, dict(sizes, rounds=config["rounds"])


def section_baselines(config, log):
    """Tic-tac-toe UCT with random playouts: plain Python, OpenSpiel C++ and
    ours in the same interleaved rounds (benchmarks/baselines/compare.py)."""
    from benchmarks.baselines import compare
    sizes = config["baselines"]
    rows = compare.measure(sizes["simulations"], sizes["batch_sizes"], config["rounds"])
    for row in rows:
        log(str(row))
    return rows, dict(sizes, rounds=config["rounds"], order="interleaved")


def section_stochastic(config, log):
    """Chance nodes: both libraries' stochastic_muzero_policy on identical
    inputs (benchmarks/stochastic_search.py), in interleaved rounds."""
    from benchmarks import stochastic_search
    sizes = config["stochastic"]
    rows = []
    for problem, simulations in sizes["simulations"].items():
        rows += stochastic_search.measure(problem, sizes["batch_sizes"], simulations,
                                          config["rounds"], log=lambda row: log(str(row)))
    return rows, dict(sizes, tree=repr(stochastic_search.TREE), rounds=config["rounds"],
                      order="interleaved")


def section_chess_search(config, log):
    """Chess-sized search (A = 4672): ours compact and dense against mctx, as
    separate factors (benchmarks/chess_search.py), in interleaved rounds."""
    from benchmarks import chess_search
    sizes = config["chess_search"]
    rows = chess_search.measure(sizes["problems"], sizes["batch_sizes"], sizes["simulations"],
                                config["rounds"], log=log)
    return rows, dict(sizes, rounds=config["rounds"], order="interleaved")


SECTIONS: Dict[str, Callable] = {
    "batch-synthetic": section_batch("synthetic"),
    "batch-tic_tac_toe": section_batch("tic_tac_toe"),
    "batch-tic_tac_toe_net": section_batch("tic_tac_toe_net"),
    "batch-chess": section_batch("chess"),
    "simulations": section_sims,
    "quality": section_quality,
    "memory": section_memory,
    "features": section_features,
    "baselines": section_baselines,
    "stochastic": section_stochastic,
    "chess_search": section_chess_search,
}


def selected_sections(config: Dict[str, Any], only: Optional[Sequence[str]]) -> List[str]:
    """Section names to run: all with work in `config`, or those matching `only`
    (a name or a prefix such as "batch")."""
    def matches(name, prefix):
        return name == prefix or name.startswith(prefix + "-")

    def has_work(name):
        problem = name[len("batch-"):] if name.startswith("batch-") else None
        if problem is None:
            return name in config
        if problem == "chess":
            return "chess" in config
        batch = config["batch"]
        return problem in batch["problems"] and bool(batch["batch_sizes"])

    unknown = [o for o in only or () if not any(matches(name, o) for name in SECTIONS)]
    if unknown:
        raise ValueError(f"--only: unknown sections {unknown}; known: {list(SECTIONS)}")
    return [name for name in SECTIONS
            if has_work(name) and (only is None or any(matches(name, o) for o in only))]


def section_path(results_dir: str, section: str, tag: str) -> str:
    return os.path.join(results_dir, f"{section}-{tag}.json")


def run_sections(mode: str, config: Dict[str, Any], sections: Sequence[str], results_dir: str,
                 log: Callable[[str], None] = print) -> str:
    """Runs `sections`, writing each one's JSON when it finishes; returns the tag."""
    info = harness.machine_info()
    tag = f"{mode}-{harness.device_slug(info)}"
    os.makedirs(results_dir, exist_ok=True)
    for section in sections:
        log(f"== {section} ({tag})")
        start = time.perf_counter()
        rows, settings = SECTIONS[section](config, log)
        settings = dict(harness.provenance(seed=0), **settings)
        harness.write_json(section_path(results_dir, section, tag),
                           dict(benchmark=section, mode=mode, machine=info, settings=settings,
                                seconds=time.perf_counter() - start, rows=rows))
    return tag


def load_sections(results_dir: str, tag: str) -> Dict[str, Dict[str, Any]]:
    """{section: its JSON} for every section file of `tag` in `results_dir`."""
    return harness.load_records({section: section_path(results_dir, section, tag)
                                 for section in SECTIONS})


def update_readme(readme: str, tag: str, body: str) -> None:
    """Replaces the block of `tag` in the results page, or adds it under its anchor."""
    begin, end = f"<!-- suite:{tag}:begin -->", f"<!-- suite:{tag}:end -->"
    text = open(readme).read()
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:  # newest first, under NEW_BLOCKS_ANCHOR ("Latest results")
        at = text.index(NEW_BLOCKS_ANCHOR) + len(NEW_BLOCKS_ANCHOR)
        text = text[:at] + "\n\n" + block + text[at:]
    with open(readme, "w") as f:
        f.write(text)


def main(argv=None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick")
    mode.add_argument("--full", dest="mode", action="store_const", const="full")
    mode.add_argument("--tiny", dest="mode", action="store_const", const="tiny",
                      help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="+", default=None,
                        help=f"sections or prefixes of: {', '.join(SECTIONS)}")
    parser.add_argument("--results-dir", default=harness.RESULTS_DIR)
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the report and plots from the JSON already there")
    parser.add_argument("--no-readme", action="store_true",
                        help="do not update benchmarks/README.md")
    args = parser.parse_args(argv)
    mode_name = args.mode or "quick"
    config = MODES[mode_name]
    from benchmarks import report
    if args.report_only:
        tag = f"{mode_name}-{harness.device_slug()}"
    else:
        tag = run_sections(mode_name, config, selected_sections(config, args.only),
                           args.results_dir)
    sections = load_sections(args.results_dir, tag)
    if not sections:
        raise SystemExit(f"no results for {tag} in {args.results_dir}")
    written = report.write(sections, tag, args.results_dir)
    print("wrote", *written["files"], sep="\n  ")
    if not args.no_readme and args.results_dir == harness.RESULTS_DIR:
        update_readme(README, tag, report.markdown(sections, tag, image_prefix="results/"))
        print("updated", README)
    return dict(tag=tag, sections=sections, **written)


if __name__ == "__main__":
    main()
