"""Every search measurement that matters on an accelerator, in one prepared run.

The parts run in order of importance, each in its slice of one wall-clock
budget (`deadlines`), each writing its results file as it ends (a part cut
short keeps what it measured and names what it skipped, and why):
`throughput` (ours against mctx on a free synthetic tree with 82 actions
and on pgx Connect Four with its network, B = 1 ... 65536, 64 and 800
simulations, AlphaZero / MuZero and Gumbel), `self_play` (a self-play step
of `train.py` with our Gumbel search against the same with mctx's, and each
search's share), `chess` (pgx chess, ours compact K = 218 against mctx, both
storing our lean state), `tree_steps` (time per edge walked, 32 to 2048
simulations), `parallel` (B = 1, our parallel leaves P = 1 ... 64 against
mctx), `largest_chess` (the largest chess search each side fits in the
device's memory) and `profile` (the compiled program's loops, kernels and
host round trips). Cells are timed by `harness.interleaved_rounds` under the
part's deadline; a side whose estimated call is too long, or a cell that
would end after the deadline, is skipped (`skip_by_estimate`).

    python -m benchmarks.gpu_search                   # on the GPU, about 7 minutes
    python -m benchmarks.gpu_search --budget-s 300 --parts throughput self_play
    python -m benchmarks.gpu_search --tiny --results-dir /tmp/r   # the same code on a CPU
    python -m benchmarks.gpu_search --report-only --results-dir benchmarks/results \\
        --device nvidia-h200

`benchmarks/gpu_search.sh` runs it on a lease. Results:
`<results-dir>/gpu_search_<part>-<device>.json`, the report
`gpu_search-<device>.md` and `plots/gpu_search-<device>-*.png`.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import time
import traceback
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import jax

from benchmarks import harness, sweeps
from benchmarks import report as report_lib

PARTS = ("throughput", "self_play", "chess", "tree_steps", "parallel", "largest_chess", "profile")
# Each part's share of the budget; time a part leaves unused goes to the later ones.
SHARES = {"throughput": 0.30, "self_play": 0.16, "chess": 0.14, "tree_steps": 0.12,
          "parallel": 0.08, "largest_chess": 0.14, "profile": 0.06}
# (ours, mctx) runner names of `sweeps` per policy family.
FAMILIES = {"alphazero": ("ours_alphazero", "mctx_muzero"),
            "gumbel": ("ours_gumbel", "mctx_gumbel")}


def _cells(problem, family, batch_sizes, simulations):
    return tuple((problem, family, b, s) for s in simulations for b in batch_sizes)


# What one run measures (the full run for a GPU, or `--tiny`), recorded in
# every part's settings: the throughput and chess (problem, family, B,
# simulations) cells, most important first, and each later part's sizes by
# its prefix; the cell whose program `profile` reads; interleaved rounds per
# cell when time allows; `max_call_s`: a side whose estimated call is longer
# is skipped; `default_compile_s`: a side's compilation before any of its
# cells ran.
FULL = dict(
    throughput=(_cells("synthetic_82", "alphazero", (1, 64, 1024, 8192, 65536), (64,))
                + _cells("synthetic_82", "alphazero", (1, 64, 1024, 8192), (800,))
                + _cells("connect_four_net", "alphazero", (64, 1024, 8192), (64,))
                + _cells("synthetic_82", "gumbel", (64, 1024, 8192), (64,))
                + _cells("connect_four_net", "gumbel", (1024, 8192), (64,))
                + _cells("synthetic_82", "gumbel", (1024,), (800,))
                + _cells("connect_four_net", "alphazero", (1024,), (800,))),
    chess=(_cells("chess", "alphazero", (64, 1024), (64,))
           + _cells("chess", "gumbel", (1024,), (64,))),
    self_play_games=(1024, 4096), self_play_simulations=32, self_play_game="connect_four",
    tree_steps_batch=256, tree_steps_actions=82, tree_steps_simulations=(32, 128, 512, 2048),
    parallel_problem="connect_four_net", parallel_simulations=256, parallel_paths=(1, 4, 16, 64),
    largest_game="chess", largest_max_nodes=801,
    profile_cell=("synthetic_82", "alphazero", 1024, 64), rounds=3, max_call_s=6.0,
    default_compile_s=8.0)

# The same code paths at CPU sizes (a test runs it): tic-tac-toe stands in for
# chess (its compilation alone would take minutes on two cores).
TINY = dict(
    throughput=(_cells("synthetic_82", "alphazero", (4,), (8,))
                + _cells("connect_four_net", "gumbel", (4,), (8,))),
    chess=_cells("tic_tac_toe", "alphazero", (4,), (8,)),
    self_play_games=(8,), self_play_simulations=4, self_play_game="tic_tac_toe",
    tree_steps_batch=4, tree_steps_actions=9, tree_steps_simulations=(16,),
    parallel_problem="synthetic_82", parallel_simulations=16, parallel_paths=(1, 4),
    largest_game="tic_tac_toe", largest_max_nodes=33,
    profile_cell=("synthetic_82", "alphazero", 8, 8), rounds=2, max_call_s=30.0,
    default_compile_s=3.0)


# ---- the budget -------------------------------------------------------------------------
def deadlines(total_s: float, parts: Sequence[str]) -> Iterator[Tuple[str, float]]:
    """(part, its deadline in perf_counter seconds) for each of `parts` in
    turn, as it starts: its share of the time still left of one wall-clock
    budget, over the shares of the parts still to run."""
    end = time.perf_counter() + total_s
    for index, part in enumerate(parts):
        now = time.perf_counter()
        yield part, now + max(0.0, end - now) * SHARES[part] / sum(
            SHARES[p] for p in parts[index:])


def estimate(rows: Sequence[Dict[str, Any]], batch_size: int, simulations: int, mctx: bool,
             default_compile_s: float) -> Tuple[float, float]:
    """(compile_s, call_s) of a side's cell from its measured `rows` (B,
    simulations, median_s, compile_s) of the same problem: the largest one no
    larger than the cell in B and in S (else the smallest one), its call
    scaled linearly in B and in S (in S squared for mctx, whose every step
    rewrites its whole tree); no rows: (default_compile_s, 0)."""
    below = [r for r in rows if r["B"] <= batch_size and r["simulations"] <= simulations]
    if below:
        near = max(below, key=lambda r: (r["B"] * r["simulations"], r["simulations"]))
    elif rows:
        near = min(rows, key=lambda r: r["B"] * r["simulations"])
    else:
        return default_compile_s, 0.0
    growth = (simulations / near["simulations"]) ** (2 if mctx else 1)
    return near["compile_s"], near["median_s"] * max(1.0, batch_size / near["B"]) * max(1.0, growth)


def skip_by_estimate(sizes: Dict[str, Any], deadline: float, rows: Sequence[Dict[str, Any]],
                     names: Sequence[str], batch_size: int, simulations: int) -> Dict[str, str]:
    """{name: why} for the sides of one cell not to run (`names`: runners, or
    tree_steps' sides, matched to `rows` by runner or side): a side whose
    estimated call exceeds `max_call_s`, and every side when the cell's
    compilations and three calls each would end after `deadline`."""
    skipped, needed = {}, 0.0
    for name in names:
        own = [r for r in rows if name in (r.get("runner"), r.get("side")) and "median_s" in r]
        compile_s, call_s = estimate(own, batch_size, simulations, name.startswith("mctx"),
                                     sizes["default_compile_s"])
        if call_s > sizes["max_call_s"]:
            skipped[name] = f"estimated {call_s:.1f} s per call > {sizes['max_call_s']} s"
        else:
            needed += compile_s + 3 * call_s
    left = deadline - time.perf_counter()
    if needed > left:
        skipped.update({name: f"budget: about {needed:.0f} s needed, {left:.0f} s left"
                        for name in names if name not in skipped})
    return skipped


# ---- 1 and 3: throughput cells ------------------------------------------------------------
def throughput(cells, sizes: Dict[str, Any], deadline: float) -> List[Dict[str, Any]]:
    """`sweeps.sweep`'s rows of `cells` (per cell and runner: sims_per_s with
    its range, us_per_sim, compile_s, the per-round ratio ours / mctx) with
    the cell's policy `family`; skipped runners and failed cells name why."""
    def skip(rows, problem, *cell):
        return skip_by_estimate(sizes, deadline, [r for r in rows if r["problem"] == problem],
                                *cell)

    return sweeps.sweep([(problem, FAMILIES[family], b, s, dict(family=family))
                         for problem, family, b, s in cells], sizes["rounds"], skip, _print,
                        deadline)


_print = functools.partial(print, flush=True)


def _keep(part: str, rows: List[Dict[str, Any]], row: Dict[str, Any]) -> None:
    """Appends `row` to `rows` and logs its figures (not its lists) on one line."""
    rows.append(row)
    _print(f"{part}: " + ", ".join(f"{key} {harness.fmt(value)}" for key, value in row.items()
                                   if not isinstance(value, (list, dict))))


# ---- 2: a self-play step with either search --------------------------------------------
def mctx_gumbel_policy(params, rng_key, root, recurrent_fn, num_simulations,
                       invalid_actions=None, tree=None):
    """`mctx.gumbel_muzero_policy` (`sweeps.policy_fn`: at most 16 considered
    actions, as ours) with our policies' signature, for `SelfPlay`."""
    del tree
    return sweeps.policy_fn("mctx_gumbel", recurrent_fn, num_simulations)(
        params, rng_key, root, invalid_actions)


def self_play(sizes: Dict[str, Any], deadline: float) -> List[Dict[str, Any]]:
    """Per B: the step's and the search's seconds for each side (median of
    interleaved rounds of 3 steps), the search's share of its step, and the
    ratios ours / mctx of steps and of searches per second."""
    import envs
    from training import policies, presets
    from training import self_play as self_play_lib
    game = envs.make(sizes["self_play_game"])
    model = presets.default_model(game)
    variables = model.init(jax.random.key(0))
    policies_by_side = {"ours_gumbel": policies.policy_from_name("gumbel",
                                                                 num_actions=game.num_actions)}
    if sweeps.available_runners(["mctx_gumbel"]):
        policies_by_side["mctx_gumbel"] = mctx_gumbel_policy
    rows = []
    for num_games in sizes["self_play_games"]:
        if time.perf_counter() > deadline:
            _keep("self_play", rows, dict(B=num_games, skipped="budget"))
            continue
        sides, searches = {}, {}
        for name, policy in policies_by_side.items():
            play = self_play_lib.SelfPlay(game=game, model=model, policy=policy,
                                          num_simulations=sizes["self_play_simulations"],
                                          num_games=num_games)
            carry = {"state": play.init(jax.random.key(1)), "buffer": play.new_buffer(4),
                     "key": jax.random.key(2)}

            def step(play=play, carry=carry):
                carry["key"], key = jax.random.split(carry["key"])
                carry["state"], carry["buffer"], stats = play.step(variables, key,
                                                                   carry["state"],
                                                                   carry["buffer"])
                return stats.action

            search = jax.jit(lambda v, k, s, play=play: play.search(v, k, s).action_weights)
            sides[f"{name} step"] = step
            searches[f"{name} search"] = lambda search=search, carry=carry: search(
                variables, jax.random.key(4), carry["state"].states)
        try:
            result = harness.interleaved_rounds(
                dict(sides, **searches), sizes["rounds"],
                [("ours_gumbel step", "mctx_gumbel step"),
                 ("ours_gumbel search", "mctx_gumbel search")], calls_per_round=3,
                deadline=deadline)
        except Exception as error:
            _keep("self_play", rows, dict(B=num_games, error=harness.error_text(error)))
            continue
        for name in policies_by_side:
            step, whole_search = (result["sides"][f"{name} {kind}"] for kind in ("step", "search"))
            step_s, search_s = step["median_s"], whole_search["median_s"]
            row = dict(B=num_games, simulations=sizes["self_play_simulations"], side=name,
                       step_s=step_s, search_s=search_s, search_share=search_s / step_s,
                       games_moves_per_s=num_games / step_s,
                       sims_per_s_in_step=num_games * sizes["self_play_simulations"] / step_s,
                       step_compile_s=step["compile_s"], step_seconds=step["seconds"],
                       search_seconds=whole_search["seconds"], rounds=result["rounds"])
            for kind in ("step", "search"):
                row.update(harness.ratio_fields(
                    result["ratios"].get(f"{name} {kind}/mctx_gumbel {kind}"), f"{kind}_ratio"))
            _keep("self_play", rows, row)
    return rows


# ---- 4: time per tree step as the tree grows ----------------------------------------------
def tree_step_rows(batch_size: int, num_actions: int, num_simulations: int, rounds: int,
                   seed: int = 0, deadline: Optional[float] = None,
                   sides: Sequence[str] = ("ours", "mctx")) -> List[Dict[str, Any]]:
    """One cell of the time per edge walked (experiments/tree_steps.py says
    why): B searches of S simulations on a free synthetic tree
    (`HashedProblem`, A actions), ours (alphazero_policy) against mctx
    (muzero_policy: identical visit counts) in interleaved rounds, for those
    of `sides` ("ours", "mctx") that are installed. Per side: the edges its
    searches walked (E, the visits of every non-root node, read from an
    untimed call), mean_depth (E / (B x S)), ns_per_edge (median, range),
    us_per_simulation, and for ours the per-round ratio of edges per second
    ours / mctx."""
    from problems.synthetic import HashedProblem, random_root_codes
    problem = HashedProblem(num_actions=num_actions)
    root, _ = problem.root(random_root_codes(seed + batch_size, batch_size))
    args = (None, jax.random.key(seed), root, None)
    runs, edges = {}, {}
    for name, runner in (("ours", "ours_alphazero"), ("mctx", "mctx_muzero")):
        if name not in sides or not sweeps.available_runners([runner]):
            continue
        search = sweeps.policy_fn(runner, problem.recurrent_fn, num_simulations)
        runs[name] = functools.partial(jax.jit(lambda *a, f=search: f(*a).action_weights), *args)
        # node 0 is the root in both trees; every other node's visits count
        # the simulations that walked the edge into it
        edges[name] = int(jax.jit(lambda *a, f=search: f(*a).search_tree
                                  .node_visits[:, 1:].sum())(*args))
    if not runs:
        return []
    result = harness.interleaved_rounds(runs, rounds, [("ours", "mctx")], edges,
                                        deadline=deadline)
    rows = []
    for name, side in result["sides"].items():
        ratio = result["ratios"].get(f"{name}/mctx")
        rows.append(dict(simulations=num_simulations, B=batch_size, A=num_actions, side=name,
                         edges_walked=edges[name],
                         mean_depth=edges[name] / (batch_size * num_simulations),
                         **{f"ns_per_edge{end}": 1e9 * side[f"{at}_s"] / edges[name]
                            for end, at in (("", "median"), ("_min", "min"), ("_max", "max"))},
                         us_per_simulation=1e6 * side["median_s"] / num_simulations,
                         median_s=side["median_s"], compile_s=side["compile_s"],
                         seconds=side["seconds"], rounds=result["rounds"],
                         **harness.ratio_fields(ratio),
                         **({"ours/mctx edges per s": harness.ratio_text(ratio)} if ratio else {})))
    return rows


def tree_steps(sizes: Dict[str, Any], deadline: float) -> List[Dict[str, Any]]:
    """`tree_step_rows` per S of `sizes`, a side skipped by `skip_by_estimate`."""
    batch_size, num_actions = sizes["tree_steps_batch"], sizes["tree_steps_actions"]
    rows: List[Dict[str, Any]] = []
    for num_simulations in sizes["tree_steps_simulations"]:
        skipped = skip_by_estimate(sizes, deadline, rows, ("ours", "mctx"), batch_size,
                                   num_simulations)
        for name, why in skipped.items():
            _keep("tree_steps", rows, dict(simulations=num_simulations, B=batch_size,
                                           A=num_actions, side=name, skipped=why))
        for row in tree_step_rows(batch_size, num_actions, num_simulations, sizes["rounds"],
                                  deadline=deadline,
                                  sides=[side for side in ("ours", "mctx") if side not in skipped]):
            _keep("tree_steps", rows, row)
    return rows


# ---- 5: one search at a time, parallel leaves --------------------------------------------
def parallel(sizes: Dict[str, Any], deadline: float) -> List[Dict[str, Any]]:
    """B = 1: ours (AlphaZero) with P = 1 ... paths per step against mctx
    (muzero_policy, B = 1), one interleaved measurement; simulations per
    second and the speed-up over ours at P = 1."""
    setup = sweeps.problem_setup(sizes["parallel_problem"], 1)
    s = sizes["parallel_simulations"]
    args = (setup["params"], jax.random.key(5), setup["root"], setup["invalid"])
    sides = {f"ours P={paths}": functools.partial(sweeps.compiled_search(
        sizes["parallel_problem"], "ours_alphazero", s, simulations_per_step=paths), *args)
        for paths in sizes["parallel_paths"]}
    if sweeps.available_runners(["mctx_muzero"]):
        sides["mctx_muzero"] = functools.partial(
            sweeps.compiled_search(sizes["parallel_problem"], "mctx_muzero", s), *args)
    if time.perf_counter() > deadline:
        return [dict(problem=sizes["parallel_problem"], skipped="budget")]
    rows = []
    pairs = [(name, "mctx_muzero") for name in sides if name.startswith("ours")]
    result = harness.interleaved_rounds(sides, sizes["rounds"], pairs, deadline=deadline)
    one = result["sides"][f"ours P={sizes['parallel_paths'][0]}"]["median_s"]
    for name, side in result["sides"].items():
        row = dict(problem=sizes["parallel_problem"], B=1, simulations=s, side=name,
                   sims_per_s=s / side["median_s"], call_ms=1e3 * side["median_s"],
                   speedup_vs_P1=one / side["median_s"], compile_s=side["compile_s"],
                   seconds=side["seconds"], rounds=result["rounds"])
        row.update(harness.ratio_fields(result["ratios"].get(f"{name}/mctx_muzero")))
        _keep("parallel", rows, row)
    return rows


# ---- 6: the largest chess search that fits -----------------------------------------------
def device_memory_bytes() -> Optional[int]:
    """The bytes the JAX allocator may use on the first device (None where
    the backend does not say, e.g. the CPU)."""
    try:
        stats = jax.devices()[0].memory_stats() or {}
    except Exception:
        return None
    return stats.get("bytes_limit")


def largest_chess(sizes: Dict[str, Any], deadline: float) -> List[Dict[str, Any]]:
    """Per side (ours compact with lean states, mctx dense with the same lean
    states): exact tree bytes per node, the largest B whose trees of N nodes
    take at most 90% of the device's memory, and XLA's memory analysis of
    the compiled search at that B (arguments + outputs + temporaries);
    where it says the program does not fit, B shrinks by a fifth and the
    analysis runs again (up to three times). Ours then runs once at its B
    when the budget allows (`ran`, `call_s`)."""
    import envs
    from mcts_jax import evaluators
    from benchmarks import memory as memory_bench
    game = envs.make(sizes["largest_game"])
    n = sizes["largest_max_nodes"]
    k = game.max_legal_moves
    limit = device_memory_bytes()
    per_node = {"ours_compact": game.tree_memory(8, n, k, False).bytes_per_node}
    try:
        per_node["mctx_lean"] = memory_bench.mctx_bytes_per_node(game, 8, n - 1, "lean")
        per_node["mctx_full"] = memory_bench.mctx_bytes_per_node(game, 8, n - 1, "full")
    except ImportError:
        pass
    # Without a device limit (the CPU), size for 16 MiB so that the code path runs.
    usable = 0.9 * (limit if limit else 2 ** 24)
    evaluator = evaluators.Uniform()
    recurrent_fn = game.recurrent_fn(evaluator)

    def search_fn(side):  # mctx's runner ignores our tree options
        runner = {"ours_compact": "ours_alphazero", "mctx_lean": "mctx_muzero"}[side]
        search = sweeps.policy_fn(runner, recurrent_fn, n - 1, max_nodes=n, max_children=k)
        return lambda root, invalid, key: search(None, key, root, invalid).action

    def shapes(batch_size):
        states = jax.eval_shape(lambda key: game.init(key, batch_size), jax.random.key(0))
        return jax.eval_shape(lambda s: game.root(None, jax.random.key(1), s, evaluator), states)

    rows = []
    for side in ("ours_compact", "mctx_lean"):
        if side not in per_node:
            continue
        batch_size = max(1, int(usable // (per_node[side] * n)))
        if batch_size > 64:
            batch_size -= batch_size % 64
        row = dict(game=sizes["largest_game"], side=side, max_nodes=n, bytes_per_node=per_node[side],
                   device_bytes_limit=limit, tree_only_B=batch_size)
        analysis = None
        for _ in range(4):
            if time.perf_counter() > deadline:
                row["skipped"] = "budget"
                break
            try:
                root, invalid = shapes(batch_size)
                start = time.perf_counter()
                compiled = jax.jit(search_fn(side)).lower(root, invalid,
                                                          jax.random.key(0)).compile()
                row["compile_s"] = time.perf_counter() - start
                analysis = compiled.memory_analysis()
            except Exception as error:
                row["error"] = harness.error_text(error)
                analysis = None
                break
            needed = _analysis_bytes(analysis)
            row.update(B=batch_size, nodes=batch_size * n, xla_bytes=needed,
                       xla_GiB=None if needed is None else needed / 2 ** 30,
                       fits=needed is None or limit is None or needed <= limit)
            if row["fits"]:
                break
            batch_size = max(1, int(batch_size * 0.8) // 64 * 64)
        if side == "ours_compact" and analysis is not None and row.get("fits"):
            # A real run at that B, if a call is likely to end in the part's time.
            left = deadline - time.perf_counter()
            if left > 30 or limit is None:
                try:
                    states = game.init(jax.random.key(0), batch_size)
                    root_value, invalid_value = game.root(None, jax.random.key(1), states,
                                                          evaluator)
                    start = time.perf_counter()
                    harness.block(compiled(root_value, invalid_value, jax.random.key(0)))
                    row.update(ran=True, call_s=time.perf_counter() - start)
                    del states, root_value, invalid_value
                except Exception as error:
                    row.update(ran=False, run_error=harness.error_text(error))
            else:
                row.update(ran=False, run_skipped=f"budget: {left:.0f} s left")
        _keep("largest_chess", rows, row)
    if "mctx_full" in per_node:
        rows.append(dict(game=sizes["largest_game"], side="mctx_full (bytes only)", max_nodes=n,
                         bytes_per_node=per_node["mctx_full"],
                         tree_only_B=int(usable // (per_node["mctx_full"] * n))))
    return rows


def _analysis_bytes(analysis) -> Optional[int]:
    if analysis is None:
        return None
    fields = ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
              "generated_code_size_in_bytes")
    total = sum(getattr(analysis, name, 0) or 0 for name in fields)
    return total - (getattr(analysis, "alias_size_in_bytes", 0) or 0)


# ---- 7: the compiled program of one search ------------------------------------------------
# HLO instructions that launch no kernel of their own.
_FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while",
         "conditional", "call", "after-all", "partition-id", "replica-id", "opt-barrier",
         "add-dependency", "copy-start", "copy-done"}
_HOST = ("send", "recv", "infeed", "outfeed", "send-done", "recv-done")


def hlo_loops(text: str) -> Dict[str, Any]:
    """What the optimized HLO module `text` runs: {computations: n, kernels
    (instructions that launch work, outside fused computations),
    host_transfers (send/recv/infeed/outfeed and host callbacks), loops:
    [{body, kernels_in_body, trip_count, nested_loops}]} (nested loops' own
    kernels are listed under their own entries)."""
    computations: Dict[str, List[Tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        line = re.sub(r"/\*.*?\*/", "", line)  # the /*index=5*/ comments of long tuples
        header = re.match(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if header and "=" not in line.split("{")[0]:
            current = header.group(2)
            computations[current] = []
            continue
        if line.strip() == "}":
            current = None
            continue
        assignment = re.match(r"^\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*(.*)$", line)
        if current is not None and assignment:
            # the opcode is the first `name(` after the result's shape
            opcode = re.search(r"(?:^|[\s)}\]])([a-z][a-z0-9\-]*)\(", assignment.group(2))
            if opcode:
                computations[current].append((opcode.group(1), line))
    fused = {name for name in computations if "fused" in name or "fusion" in name}

    def kernels(name):
        return sum(1 for opcode, _ in computations.get(name, []) if opcode not in _FREE)

    loops = []
    host = 0
    for name, instructions in computations.items():
        for opcode, line in instructions:
            if opcode in _HOST or (opcode == "custom-call" and "callback" in line.lower()):
                host += 1
            if opcode == "while":
                body = re.search(r"body=%?([\w.\-]+)", line)
                trip = re.search(r'"known_trip_count":\{"n":"(\d+)"', line)
                body_name = body.group(1) if body else "?"
                loops.append(dict(in_computation=name, body=body_name,
                                  kernels_in_body=kernels(body_name),
                                  trip_count=int(trip.group(1)) if trip else None,
                                  nested_loops=sum(1 for op, _ in computations.get(body_name, [])
                                                   if op == "while")))
    top = [name for name in computations if name not in fused]
    return dict(computations=len(computations),
                kernels=sum(kernels(name) for name in top), host_transfers=host, loops=loops)


def profile(sizes: Dict[str, Any], deadline: float) -> List[Dict[str, Any]]:
    """Per side of `profile_cell`: the compiled program's kernels, loops
    (with the kernels in each body and its trip count where XLA knows it)
    and host transfers, beside the measured time per simulation step."""
    problem, family, batch_size, num_simulations = sizes["profile_cell"]
    setup = sweeps.problem_setup(problem, batch_size)
    rows = []
    for side in FAMILIES[family]:
        if not sweeps.available_runners([side]):
            continue
        if time.perf_counter() > deadline:
            rows.append(dict(side=side, skipped="budget"))
            continue
        fn = sweeps.compiled_search(problem, side, num_simulations)
        args = (setup["params"], jax.random.key(3), setup["root"], setup["invalid"])
        compiled = fn.lower(*args).compile()
        program = hlo_loops(compiled.as_text())
        timed = harness.interleaved_rounds({side: lambda: compiled(*args)}, 5)["sides"][side]
        step_us = 1e6 * timed["median_s"] / num_simulations
        row = dict(problem=problem, family=family, B=batch_size, simulations=num_simulations,
                   side=side, us_per_simulation_step=step_us, **program)
        row["loop_summary"] = "; ".join(
            f"{loop['kernels_in_body']} kernels x {loop['trip_count'] or '?'}"
            for loop in program["loops"])
        _keep("profile", rows, row)
    return rows


# ---- running, saving, reporting -------------------------------------------------------
def run_part(part: str, sizes: Dict[str, Any], deadline: float) -> List[Dict[str, Any]]:
    """The rows of one of PARTS."""
    if part in ("throughput", "chess"):
        return throughput(sizes[part], sizes, deadline)
    return {"self_play": self_play, "tree_steps": tree_steps, "parallel": parallel,
            "largest_chess": largest_chess, "profile": profile}[part](sizes, deadline)


def part_path(results_dir: str, part: str, device: str) -> str:
    return os.path.join(results_dir, f"gpu_search_{part}-{device}.json")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget-s", type=float, default=400.0,
                        help="wall-clock seconds for all parts together (default 400)")
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    parser.add_argument("--tiny", action="store_true",
                        help="CPU sizes: the same code paths in a couple of minutes")
    parser.add_argument("--results-dir", default=harness.RESULTS_DIR)
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild the report and plots from the part files")
    parser.add_argument("--device", default=None,
                        help="device tag of the files (default: this machine's)")
    args = parser.parse_args(argv)
    device = args.device or harness.device_slug()
    if not args.report_only:
        # The profile part reads the program of a search compiled earlier:
        # the persistent cache gives it back instead of compiling it again.
        jax.config.update("jax_compilation_cache_dir", os.path.join(
            os.environ.get("TMPDIR", "/tmp"), "mcts_jax_gpu_search_cache"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        sizes = TINY if args.tiny else FULL
        info = harness.machine_info()
        print(f"device {info['device']} ({info['backend']}), jax {info['versions']['jax']}, "
              f"mctx {info['versions']['mctx']}, budget {args.budget_s:.0f} s", flush=True)
        for part, deadline in deadlines(args.budget_s, args.parts):
            start = time.perf_counter()
            _print(f"== {part}: {deadline - start:.0f} s")
            error = None
            try:
                rows = run_part(part, sizes, deadline)
            except Exception as exc:  # the part's error is its result; the next part runs
                traceback.print_exc()
                rows, error = [], harness.error_text(exc)
            settings = dict(harness.provenance(seed=0), part=part, tiny=args.tiny,
                            budget_s=args.budget_s, part_budget_s=deadline - start,
                            part_wall_s=time.perf_counter() - start, sizes=sizes)
            record = dict(benchmark=f"gpu_search_{part}", machine=info, settings=settings,
                          rows=rows, error=error)
            print("saved", harness.write_json(part_path(args.results_dir, part, device), record),
                  flush=True)
    print(write_report(args.results_dir, device))
    return 0


# ---- the report -----------------------------------------------------------------------
def _cell(row: Dict[str, Any], key: str) -> Any:
    """A row's `key` for the report: a ratio (`*ratio`) as "median (range)",
    `note` as why the row has no figures, else the value ("" where absent)."""
    if key == "note":
        return row.get("skipped") or row.get("error") or row.get("run_error") or ""
    if key.endswith("ratio"):
        return report_lib._ratio_text(row, key)
    return "" if row.get(key) is None else row[key]


_THROUGHPUT_COLUMNS = [("problem", "problem"), ("policy", "family"), ("B", "B"),
                       ("sims", "simulations"), ("runner", "runner"), ("sims/s", "sims_per_s"),
                       ("us per step", "us_per_sim"), ("ours/mctx", "ratio"),
                       ("rounds", "rounds"), ("note", "note")]
# Each part's table: (header, key of `_cell`) per column.
REPORT_COLUMNS = {
    "throughput": _THROUGHPUT_COLUMNS,
    "chess": _THROUGHPUT_COLUMNS,
    "self_play": [("B", "B"), ("side", "side"), ("step s", "step_s"), ("search s", "search_s"),
                  ("search share", "search_share"), ("game moves/s", "games_moves_per_s"),
                  ("ours/mctx step", "step_ratio"), ("ours/mctx search", "search_ratio"),
                  ("note", "note")],
    "tree_steps": [("sims", "simulations"), ("side", "side"), ("ns per edge", "ns_per_edge"),
                   ("mean depth", "mean_depth"), ("us per step", "us_per_simulation"),
                   ("ours/mctx", "ratio"), ("note", "note")],
    "parallel": [("side", "side"), ("sims/s", "sims_per_s"), ("ms a search", "call_ms"),
                 ("speed-up over P=1", "speedup_vs_P1"), ("ours/mctx", "ratio"),
                 ("note", "note")],
    "largest_chess": [("side", "side"), ("bytes per node", "bytes_per_node"), ("N", "max_nodes"),
                      ("B (trees alone)", "tree_only_B"), ("B analysed", "B"),
                      ("B x N", "nodes"), ("XLA GiB", "xla_GiB"), ("fits", "fits"),
                      ("ran", "ran"), ("call s", "call_s"), ("note", "note")],
    "profile": [("side", "side"), ("B", "B"), ("sims", "simulations"),
                ("kernels (whole program)", "kernels"),
                ("loops: kernels per body x trips", "loop_summary"),
                ("host transfers", "host_transfers"), ("us per step", "us_per_simulation_step")],
}


def report_tables(parts: Dict[str, Dict[str, Any]]) -> str:
    """The markdown tables of every part present."""
    first = next(iter(parts.values()), None)
    if first is None:
        return "no results"
    lines = [f"# Search on {first['machine']['device']} against mctx", "",
             report_lib.machine_line(first["machine"]) + " Every figure: median over "
             "interleaved rounds (range in brackets); ours/mctx formed within each round. "
             "Generated by `python -m benchmarks.gpu_search --report-only`.", ""]
    for part, record in parts.items():
        settings = record["settings"]
        lines += [f"## {part}", "", harness.provenance_line(settings) +
                  f"; part budget {settings['part_budget_s']:.0f} s, used "
                  f"{settings['part_wall_s']:.0f} s", ""]
        if record.get("error"):
            lines += [f"The part failed: `{record['error']}`", ""]
        columns = REPORT_COLUMNS[part]
        lines += [harness.markdown_table([header for header, _ in columns],
                                    [[_cell(row, key) for _, key in columns]
                                     for row in record["rows"]]), ""]
    return "\n".join(lines)


def write_plots(parts: Dict[str, Dict[str, Any]], results_dir: str, device: str) -> List[str]:
    """Throughput against B (a panel per problem and simulations) and ns per
    edge against simulations (`report.plot_throughput`); returns the paths."""
    folder = os.path.join(results_dir, "plots")
    os.makedirs(folder, exist_ok=True)
    rows = [dict(r, problem=f"{r['problem']}, {r['simulations']} simulations")
            for part in ("throughput", "chess") for r in parts.get(part, {}).get("rows", [])
            if r.get("sims_per_s")]
    # the tree steps as the runners they are (ours AlphaZero, mctx MuZero)
    steps = [dict(r, problem="time per tree step", runner=("ours_alphazero" if r["side"] == "ours"
                                                           else "mctx_muzero"))
             for r in parts.get("tree_steps", {}).get("rows", []) if r.get("ns_per_edge")]
    paths = []
    for name, figure_rows, axis, y, ylabel in (
            ("throughput", rows, "B", "sims_per_s", "simulations / s"),
            ("tree_steps", steps, "simulations", "ns_per_edge", "ns per edge walked")):
        if figure_rows:
            paths.append(os.path.join(folder, f"gpu_search-{device}-{name}.png"))
            report_lib.plot_throughput(figure_rows, axis, paths[-1], f"{name} on {device}",
                                       y=y, ylabel=ylabel)
    return paths


def write_report(results_dir: str, device: str) -> str:
    """Writes `gpu_search-<device>.md` and the plots from the part files;
    returns the report's text."""
    parts = harness.load_records({part: part_path(results_dir, part, device)
                                  for part in PARTS})
    text = report_tables(parts)
    plots = write_plots(parts, results_dir, device) if parts else []
    text += "".join(f"\n![{os.path.basename(p)}](plots/{os.path.basename(p)})\n" for p in plots)
    with open(os.path.join(results_dir, f"gpu_search-{device}.md"), "w") as f:
        f.write(text)
    return text


if __name__ == "__main__":
    raise SystemExit(main())
