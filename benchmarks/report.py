"""The suite's report: markdown tables and PNG plots from the section JSON files.

`markdown(sections, tag)` and `write(sections, tag, results_dir)`;
`sections` is {section name: its JSON} as `run.load_sections` returns.
Plots use matplotlib's object API (no pyplot, no global backend).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Sequence, Tuple

from benchmarks import harness
from benchmarks.harness import fmt as _fmt

RUNNER_STYLE = {  # colour, line style: ours solid, mctx dashed, same colour per rule
    "ours_uct": ("tab:green", "-"),
    "ours_alphazero": ("tab:blue", "-"),
    "ours_alphazero_dense": ("tab:cyan", "-."),
    "ours_gumbel": ("tab:red", "-"),
    "mctx_muzero": ("tab:blue", "--"),
    "mctx_gumbel": ("tab:red", "--"),
    "random": ("tab:gray", ":"),
}
PROBLEM_TITLES = {
    "synthetic": "synthetic tree (free recurrent_fn), A=9",
    "tic_tac_toe": "tic-tac-toe, pgx simulator, uniform priors",
    "tic_tac_toe_net": "tic-tac-toe, pgx + small network (MLP 3x128)",
    "chess": "chess, pgx simulator, uniform priors, our lean states for both (ours_alphazero "
             "compact K=218, ours_alphazero_dense and mctx dense)",
}
PLOTS = ("throughput-batch", "throughput-simulations", "quality", "memory", "baselines")


def _runners(rows) -> List[str]:
    seen = [r["runner"] for r in rows]
    return [name for name in RUNNER_STYLE if name in seen]


def _match(rows, key) -> Dict[str, Any]:
    """The first of `rows` holding every field of `key` ({} if none)."""
    return next((row for row in rows if all(row.get(k) == v for k, v in key.items())), {})


def _figure(rows, key, column="sims_per_s"):
    row = _match(rows, key)
    return row.get(column, row.get("skipped", ""))


def _rounds_note(rows, sides: str = "runner") -> List[str]:
    """[the note on how the figures of `rows` were timed] ([] if untimed)."""
    rounds = sorted({r["rounds"] for r in rows if "rounds" in r})
    if not rounds:
        return []
    return [f"Figures: median over {'/'.join(map(str, rounds))} interleaved rounds (every "
            f"{sides} of a cell once per round, the order reversed every other round); "
            "ratios: median (range) of the ratio formed within each round."]


def throughput_tables(rows: Sequence[Dict[str, Any]], axis: str) -> str:
    """One table per problem: `axis` ("B" or "simulations") down, runners across,
    then ours/mctx ratios of the same cells."""
    from benchmarks.sweeps import COUNTERPARTS
    out = []
    for problem in dict.fromkeys(r["problem"] for r in rows):
        mine = [r for r in rows if r["problem"] == problem]
        runners = _runners(mine)
        pairs = [(o, t) for o, t in COUNTERPARTS.items() if o in runners and t in runners]
        fixed = "simulations" if axis == "B" else "B"
        values = sorted({r[axis] for r in mine})
        layout = any("layout_ratio" in r for r in mine)
        fixed_value = mine[0][fixed]
        body = []
        for value in values:
            key = {"problem": problem, axis: value}
            cells = [_figure(mine, dict(key, runner=name)) for name in runners]
            ratios = [_ratio_text(_match(mine, dict(key, runner=ours)), "ratio")
                      for ours, _ in pairs]
            if layout:
                ratios.append(_ratio_text(_match(mine, dict(key, runner="ours_alphazero")),
                                          "layout_ratio"))
            body.append([value] + cells + ratios)
        columns = [axis] + runners + [f"{o[5:]}/{t[5:]}" for o, t in pairs]
        if layout:
            columns.append("alphazero compact/dense")
        out.append(f"**{PROBLEM_TITLES.get(problem, problem)}**, {fixed} = {fixed_value}; "
                   f"simulations per second:\n\n" + harness.markdown_table(columns, body))
        out += _rounds_note(mine)
        compile_s = [(name, _figure(mine, {"runner": name, axis: values[-1]}, "compile_s"))
                     for name in runners]
        compile_s = [f"{name} {seconds:.1f} s" for name, seconds in compile_s
                     if isinstance(seconds, float)]
        if compile_s:
            out.append(f"Compilation at {axis} = {values[-1]}: " + ", ".join(compile_s) + ".")
    return "\n\n".join(out)


def headlines(rows: Sequence[Dict[str, Any]], min_batch: int = 256) -> str:
    """Per problem: each runner's best throughput and its batch size, and the
    range of ours/mctx over batch sizes >= `min_batch` (same cells)."""
    from benchmarks.sweeps import COUNTERPARTS
    lines = []
    for problem in dict.fromkeys(r["problem"] for r in rows):
        mine = [r for r in rows if r["problem"] == problem and
                isinstance(r.get("sims_per_s"), float)]
        best = []
        for runner in _runners(mine):
            top = max((r for r in mine if r["runner"] == runner), key=lambda r: r["sims_per_s"])
            best.append(f"{runner} {top['sims_per_s']:,.0f} (B={top['B']:,})")
        ratios = []
        for ours, theirs in COUNTERPARTS.items():
            values = []
            for r in mine:
                own = _match(mine, dict(runner=ours, B=r["B"]))
                if r["runner"] == theirs and r["B"] >= min_batch and own:
                    values.append(own.get("ratio") or own["sims_per_s"] / r["sims_per_s"])
            if values:
                ratios.append(f"{ours}/{theirs} {min(values):.2f}x to {max(values):.2f}x")
        line = f"- {problem}: best simulations/s: " + ", ".join(best) + "."
        if ratios:
            line += f" At B >= {min_batch}: " + ", ".join(ratios) + "."
        lines.append(line)
    return "\n".join(lines)


def quality_tables(rows) -> str:
    out = []
    for depth, branching in dict.fromkeys((r["depth"], r["branching"]) for r in rows):
        mine = [r for r in rows if (r["depth"], r["branching"]) == (depth, branching)]
        runners = [n for n in _runners(mine) if n != "random"]
        random_fraction = _figure(mine, dict(runner="random"), "optimal_fraction")
        sims = sorted({r["simulations"] for r in mine if r["runner"] != "random"})
        body = [[s] + [_figure(mine, dict(runner=n, simulations=s), "optimal_fraction")
                       for n in runners] for s in sims]
        out.append(f"**depth {depth}, branching {branching}** ({mine[0]['roots']} roots; a "
                   f"random move is optimal {random_fraction:.3f} of the time): fraction of "
                   f"searches choosing a minimax-optimal root move\n\n"
                   + harness.markdown_table(["simulations"] + runners, body))
    return "\n\n".join(out)


def _ratio_text(row, key: str, bounds: str = "") -> str:
    """"median (min-max)" of the ratio `key` of a row, or ""; its range is
    `<bounds>_min` and `<bounds>_max` (default: `key`'s)."""
    if key not in row:
        return ""
    bounds = bounds or key
    return f"{_fmt(row[key])} ({_fmt(row[bounds + '_min'])}-{_fmt(row[bounds + '_max'])})"


def provenance_lines(sections: Dict[str, Dict[str, Any]]) -> str:
    """Which commit, tree state, command and seed produced each section file,
    sections with the same provenance grouped."""
    groups: Dict[str, List[str]] = {}
    for name, data in sections.items():
        groups.setdefault(harness.provenance_line(data["settings"]), []).append(name)
    return "\n".join(f"- {', '.join(names)}: {line}" for line, names in groups.items())


def _batch_rows(sections: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The rows of every `batch-<problem>` section, in order."""
    return [r for name, data in sections.items() if name.startswith("batch-")
            for r in data["rows"]]


def machine_line(info: Dict[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items())
    return (f"Device: **{info['device']}** (backend {info['backend']}, {info['device_count']} "
            f"device(s)); host: {info['processor']}, {info['cpu_count']} CPUs; {versions}; "
            f"measured {info['date']}.")


def markdown(sections: Dict[str, Dict[str, Any]], tag: str, image_prefix: str = "") -> str:
    """The report of one mode and device; images linked under `image_prefix`."""
    first = next(iter(sections.values()))
    mode = first.get("mode", tag.split("-")[0])
    parts = [f"## Suite results: `{tag}` (`python -m benchmarks --{mode}`)",
             machine_line(first["machine"]),
             f"Sections and their wall time: " + ", ".join(
                 f"{name} {data.get('seconds', 0):.0f} s" for name, data in sections.items())
             + ".",
             "Produced by:\n\n" + provenance_lines(sections)]

    def image(name):
        return f"![{name}]({image_prefix}plots/{tag}-{name}.png)"

    batch = _batch_rows(sections)
    if batch:
        parts += ["### Throughput against batch size", image("throughput-batch"),
                  headlines(batch), throughput_tables(batch, "B")]
    if "simulations" in sections:
        parts += ["### Throughput against num_simulations", image("throughput-simulations"),
                  throughput_tables(sections["simulations"]["rows"], "simulations")]
    if "quality" in sections:
        parts += ["### Search quality at a fixed budget", image("quality"),
                  quality_tables(sections["quality"]["rows"])]
    if "memory" in sections:
        from benchmarks.memory import factor_rows
        rows = sections["memory"]["rows"]
        parts += ["### Memory per node (exact, B=1024 searches of 801 nodes)", image("memory"),
                  harness.markdown_table(["game", "layout", "stores", "bytes_per_node",
                                          "embedding_bytes_per_node", "GiB_for_B1024_N801"], rows)]
        if all("stores" in row for row in rows):
            parts += ["The comparison as separate factors (bytes per node, first over second):",
                      harness.markdown_table(["game", "factor", "ratio"], factor_rows(rows))]
    if "features" in sections:
        from benchmarks.feature_costs import COLUMNS
        rows = [dict(row, **{key: _ratio_text(row, key) for key in
                             ("solver/plain time", "get_subtree/search") if key + "_min" in row})
                for row in sections["features"]["rows"]]
        parts += ["### Cost of the solver and of subtree reuse (alphazero_policy)",
                  harness.markdown_table(COLUMNS, rows)] + _rounds_note(rows, "call")
    if "baselines" in sections:
        rows = sections["baselines"]["rows"]
        columns = ["baseline", "B", "simulations", "sims_per_s"]
        if any("ratio_vs_openspiel" in row for row in rows):
            rows = [dict(row, vs_openspiel=_ratio_text(row, "ratio_vs_openspiel")) for row in rows]
            columns.append("vs_openspiel")
        parts += ["### What people use without us: UCT with random playouts on tic-tac-toe",
                  image("baselines"), harness.markdown_table(columns, rows)]
        parts += _rounds_note(rows, "side")
    if "stochastic" in sections:
        from benchmarks.stochastic_search import PROBLEM_TITLES as STOCHASTIC_TITLES
        rows = [dict(row, problem=STOCHASTIC_TITLES[row["problem"]],
                     ratio=_ratio_text(row, "ours/mctx", "ratio"))
                for row in sections["stochastic"]["rows"]]
        parts += ["### Chance nodes: stochastic_muzero_policy, ours vs mctx on identical inputs",
                  harness.markdown_table(["problem", "B", "simulations", "ours_sims_per_s",
                                          "mctx_sims_per_s", "ratio"], rows)]
    if "chess_search" in sections:
        from benchmarks.chess_search import COLUMNS, FACTOR_COLUMNS
        rows = sections["chess_search"]["rows"]
        factors = [dict(row, ratio=_ratio_text(row, "ratio")) for row in rows if "factor" in row]
        parts += ["### Chess-sized search (A = 4672): ours compact and dense against mctx",
                  harness.markdown_table(COLUMNS, [row for row in rows if "side" in row]),
                  "The comparison as separate factors (ours / peer simulations per second):",
                  harness.markdown_table(FACTOR_COLUMNS, factors)]
        parts += _rounds_note(rows, "side")
    return "\n\n".join(parts) + "\n"


# ---- plots ---------------------------------------------------------------------
def _new_figure(columns: int, width=5.0, height=3.8):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    figure = Figure(figsize=(width * columns, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _line(runner: str) -> Dict[str, Any]:
    """A runner's line: its RUNNER_STYLE, ours round markers, mctx hollow
    squares (so that identical curves, both Gumbels, show both)."""
    colour, style = RUNNER_STYLE[runner]
    mctx = runner.startswith("mctx")
    return dict(linestyle=style, color=colour, marker="s" if mctx else "o",
                fillstyle="none" if mctx else "full", label=runner)


def _panels(figure, keys) -> List[Tuple[Any, Any]]:
    """[(key, its panel)]: one panel per key of `keys`, side by side."""
    return [(key, figure.add_subplot(1, len(keys), index + 1)) for index, key in enumerate(keys)]


def _legend_and_save(figure, title: str, path: str) -> None:
    """One legend for all panels, right of them; title above."""
    handles = {}
    for ax in figure.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="center right", fontsize=8,
                  title="ours solid, mctx dashed", title_fontsize=8)
    figure.suptitle(title, fontsize=11)
    figure.tight_layout(rect=(0, 0, 1 - 1.8 / figure.get_figwidth(), 1))
    figure.savefig(path)


def plot_throughput(rows, axis: str, path: str, title: str, y: str = "sims_per_s",
                    ylabel: str = "simulations / s") -> None:
    """A panel per problem: `y` against `axis` ("B" or "simulations"), a
    line per runner, both axes logarithmic."""
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    figure = _new_figure(len(problems), width=4.6 + 2.0 / len(problems))
    for problem, ax in _panels(figure, problems):
        mine = [r for r in rows if r["problem"] == problem]
        for runner in _runners(mine):
            points = sorted((r[axis], r[y]) for r in mine
                            if r["runner"] == runner and isinstance(r.get(y), float))
            if points:
                ax.plot(*zip(*points), **_line(runner))
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size B (searches)" if axis == "B" else "num_simulations")
        ax.set_ylabel(ylabel)
        fixed = "simulations" if axis == "B" else "B"
        ax.set_title(f"{PROBLEM_TITLES.get(problem, problem)}\n{fixed} = {mine[0][fixed]}",
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    _legend_and_save(figure, title, path)


def plot_quality(rows, path: str, title: str) -> None:
    trees = list(dict.fromkeys((r["depth"], r["branching"]) for r in rows))
    figure = _new_figure(len(trees), width=4.6 + 2.0 / len(trees))
    for (depth, branching), ax in _panels(figure, trees):
        mine = [r for r in rows if (r["depth"], r["branching"]) == (depth, branching)]
        sims = sorted({r["simulations"] for r in mine if r["runner"] != "random"})
        for runner in _runners(mine):
            if runner == "random":
                colour, style = RUNNER_STYLE[runner]
                ax.plot([sims[0], sims[-1]], [mine[0]["optimal_fraction"]] * 2, style,
                        color=colour, label="random move")
                continue
            points = sorted((r["simulations"], r["optimal_fraction"]) for r in mine
                            if r["runner"] == runner)
            ax.plot(*zip(*points), **_line(runner))
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1)
        ax.set_xlabel("num_simulations")
        ax.set_ylabel("fraction choosing an optimal move")
        ax.set_title(f"random game tree, depth {depth}, branching {branching}\n"
                     f"{mine[0]['roots']} roots, exact minimax", fontsize=9)
        ax.grid(True, alpha=0.3)
    _legend_and_save(figure, title, path)


def plot_bars(labels: Sequence[str], values: Sequence[float], colours: Sequence[str],
              xlabel: str, path: str, title: str) -> None:
    figure = _new_figure(1, width=8.0, height=0.45 * len(labels) + 1.5)
    ax = figure.add_subplot(1, 1, 1)
    positions = list(range(len(labels)))[::-1]
    ax.barh(positions, values, color=colours)
    ax.set_yticks(positions)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(min(values) / 2, max(values) * 4)  # room for the value labels
    ax.set_xlabel(xlabel)
    for y, value in zip(positions, values):
        ax.text(value, y, f" {value:,.0f}", va="center", fontsize=7)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)


def write(sections: Dict[str, Dict[str, Any]], tag: str, results_dir: str) -> Dict[str, Any]:
    """Writes report-<tag>.md and plots/<tag>-*.png; returns {"files": paths}."""
    device = next(iter(sections.values()))["machine"]["device"]
    plots = os.path.join(results_dir, "plots")
    os.makedirs(plots, exist_ok=True)
    files = []

    def png(name):
        files.append(os.path.join(plots, f"{tag}-{name}.png"))
        return files[-1]

    batch = _batch_rows(sections)
    if batch:
        plot_throughput(batch, "B", png("throughput-batch"),
                        f"Throughput against batch size on {device}")
    if "simulations" in sections:
        plot_throughput(sections["simulations"]["rows"], "simulations",
                        png("throughput-simulations"),
                        f"Throughput against num_simulations on {device}")
    if "quality" in sections:
        plot_quality(sections["quality"]["rows"], png("quality"),
                     f"Search quality at a fixed budget ({device})")
    if "memory" in sections:
        rows = sections["memory"]["rows"]
        plot_bars([f"{r['game']}: {r['layout']}" for r in rows],
                  [r["bytes_per_node"] for r in rows],
                  ["tab:orange" if r["layout"].startswith("mctx") else "tab:blue" for r in rows],
                  "bytes per tree node (log scale)", png("memory"),
                  "Tree memory per node (pgx states as embeddings)")
    if "baselines" in sections:
        rows = [r for r in sections["baselines"]["rows"] if isinstance(r["sims_per_s"], float)]
        plot_bars([f"{r['baseline']}, B={r['B']}" for r in rows],
                  [r["sims_per_s"] for r in rows],
                  ["tab:blue" if r["baseline"].startswith("mcts_jax") else "tab:gray"
                   for r in rows],
                  "simulations / s (log scale)", png("baselines"),
                  f"Tic-tac-toe UCT with random playouts, {rows[0]['simulations']} "
                  f"simulations per search ({device})")
    path = os.path.join(results_dir, f"report-{tag}.md")
    with open(path, "w") as f:
        f.write(markdown(sections, tag))
    files.append(path)
    return dict(files=files)
