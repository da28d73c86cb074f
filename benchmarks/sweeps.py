"""Throughput sweeps: simulations per second against batch size and against
num_simulations, ours against mctx on identical inputs.

Problems (`problem_setup`), each a root batch and a recurrent_fn both
libraries receive unchanged (mctx through `harness.mctx_recurrent_fn`):
`synthetic` (the hashed tree of `problems.synthetic`, A = 9, a
recurrent_fn costing almost nothing: the figures measure the search) and
`synthetic_82` (82 actions, Go 9x9's count); `tic_tac_toe` (pgx stepped at
every expansion, uniform priors, value 0, lean states for both);
`tic_tac_toe_net` and `connect_four_net` (the same with the game's default
network); `chess` (uniform priors, ours compact with `max_children=218`
and, as `ours_alphazero_dense`, dense: the library factor at equal layout
and the layout factor, `layout_ratio`, are reported apart).

Runners (`policy_fn`): ours `uct`, `alphazero` (no root noise), `gumbel`;
mctx `muzero` (identical visit counts to alphazero) and `gumbel_muzero`.
A cell is one jitted search of B roots, its runners timed in the same
rounds (`harness.interleaved_rounds`), ours / mctx per round.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence

import jax

import envs
import mcts_jax
from benchmarks import harness
from mcts_jax import evaluators
from training import presets
from problems.synthetic import HashedProblem, random_root_codes

PROBLEMS = ("synthetic", "synthetic_82", "tic_tac_toe", "tic_tac_toe_net", "connect_four_net",
            "chess")
# A problem's pgx game, for the problems that step one.
GAMES = {"tic_tac_toe": "tic_tac_toe", "tic_tac_toe_net": "tic_tac_toe",
         "connect_four_net": "connect_four", "chess": "chess"}
# ours -> the mctx runner it is compared with (identical visit counts / rules).
COUNTERPARTS = {"ours_alphazero": "mctx_muzero", "ours_gumbel": "mctx_gumbel",
                "ours_alphazero_dense": "mctx_muzero"}
# Problems where ours runs the compact layout with K child slots; there
# "ours_alphazero_dense" (the dense layout) joins ours_alphazero.
MAX_CHILDREN = {"chess": 218}
# compact runner -> the same runner dense (the layout factor, `layout_ratio`).
LAYOUT_PAIRS = {"ours_alphazero": "ours_alphazero_dense"}


def runners_for(problem: str, runners: Sequence[str]) -> List[str]:
    """`runners`, plus ours_alphazero_dense on a compact-layout problem when
    ours_alphazero is among them."""
    extra = [dense for compact, dense in LAYOUT_PAIRS.items()
             if problem in MAX_CHILDREN and compact in runners and dense not in runners]
    return list(runners) + extra


@functools.lru_cache(maxsize=None)
def problem_setup(problem: str, batch_size: int) -> Dict[str, Any]:
    """{params, root (RootFnOutput [B]), invalid [B, A] bool, recurrent_fn}."""
    key = jax.random.key(1)
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")
    if problem.startswith("synthetic"):
        hashed = HashedProblem(num_actions=82 if problem == "synthetic_82" else 9)
        root, invalid = hashed.root(random_root_codes(0, batch_size))
        return dict(params=None, root=root, invalid=invalid, recurrent_fn=hashed.recurrent_fn)
    game = envs.make(GAMES[problem])
    states = game.init(jax.random.key(0), batch_size)
    if problem.endswith("_net"):
        model = presets.default_model(game)
        params, evaluator = model.init(jax.random.key(2)), model.evaluator
    else:
        params, evaluator = None, evaluators.Uniform()
    root, invalid = game.root(params, key, states, evaluator)
    return dict(params=params, root=root, invalid=invalid,
                recurrent_fn=game.recurrent_fn(evaluator))


# Our runners' policies (the compact/dense layout is an option of the call).
OURS = {"ours_uct": mcts_jax.uct_policy,
        "ours_alphazero": functools.partial(mcts_jax.alphazero_policy, dirichlet_fraction=0.0),
        "ours_alphazero_dense": functools.partial(mcts_jax.alphazero_policy,
                                                  dirichlet_fraction=0.0),
        "ours_gumbel": mcts_jax.gumbel_policy}


def policy_fn(runner: str, recurrent_fn: Callable, num_simulations: int,
              **options) -> Callable:
    """fn(params, key, root, invalid) -> PolicyOutput of one runner (`OURS`,
    `mctx_muzero` without root noise, `mctx_gumbel`), every side on the same
    root and recurrent_fn (mctx through `harness.mctx_recurrent_fn` and
    `harness.mctx_root`); `options`: further keywords of our policies (tree
    options such as max_children), which mctx's runners ignore."""
    if runner.startswith("ours_"):
        return lambda params, key, root, invalid: OURS[runner](
            params, key, root, recurrent_fn, num_simulations, invalid_actions=invalid, **options)
    import mctx
    their_fn = harness.mctx_recurrent_fn(recurrent_fn, mctx)
    policy = {"mctx_muzero": functools.partial(mctx.muzero_policy, dirichlet_fraction=0.0),
              "mctx_gumbel": mctx.gumbel_muzero_policy}[runner]
    return lambda params, key, root, invalid: policy(
        params, key, harness.mctx_root(mctx, root), their_fn, num_simulations,
        invalid_actions=invalid)


@functools.lru_cache(maxsize=None)
def compiled_search(problem: str, runner: str, num_simulations: int, **options) -> Callable:
    """A jitted fn(params, key, root, invalid) -> action [B] for one cell;
    `options`: further keywords of our policies (`policy_fn`)."""
    max_children = None if runner.endswith("_dense") else MAX_CHILDREN.get(problem)
    search = policy_fn(runner, problem_setup(problem, 1)["recurrent_fn"], num_simulations,
                       max_children=max_children, **options)
    return jax.jit(lambda *args: search(*args).action)


def available_runners(runners: Sequence[str]) -> List[str]:
    """`runners` without the mctx ones when mctx is not installed."""
    try:
        import mctx  # noqa: F401
        return list(runners)
    except ImportError:
        return [r for r in runners if not r.startswith("mctx")]


def measure_cell(problem: str, runners: Sequence[str], batch_size: int, num_simulations: int,
                 rounds: int, deadline: Optional[float] = None) -> List[Dict[str, Any]]:
    """One row per runner for one cell, timed in the same interleaved rounds
    (up to `rounds`, fewer where `deadline` comes first): sims_per_s with its
    range, us_per_sim (per batch), compile_s, the per-round seconds, and the
    per-round ratios ours / mctx (`ratio*`) and compact / dense (`layout_ratio*`)."""
    setup = problem_setup(problem, batch_size)
    key = jax.random.key(3)
    sides = {runner: functools.partial(compiled_search(problem, runner, num_simulations),
                                       setup["params"], key, setup["root"], setup["invalid"])
             for runner in runners}
    pairs = list(COUNTERPARTS.items()) + list(LAYOUT_PAIRS.items())
    result = harness.interleaved_rounds(sides, rounds, pairs, deadline=deadline)
    work = batch_size * num_simulations
    rows = []
    for runner in runners:
        side = result["sides"][runner]
        row = dict(problem=problem, runner=runner, B=batch_size, simulations=num_simulations,
                   **harness.throughput_fields(side, work),
                   us_per_sim=1e6 * side["median_s"] / num_simulations,
                   median_s=side["median_s"], rounds=result["rounds"])
        ratio = result["ratios"].get(f"{runner}/{COUNTERPARTS.get(runner)}")
        if ratio is not None:
            row.update(ratio_vs=COUNTERPARTS[runner], **harness.ratio_fields(ratio))
        row.update(harness.ratio_fields(
            result["ratios"].get(f"{runner}/{LAYOUT_PAIRS.get(runner)}"), "layout_ratio"))
        rows.append(row)
    return rows


def sweep(cells: Sequence[tuple], rounds: int, skip: Callable[..., Dict[str, str]],
          log: Callable[[str], None] = print,
          deadline: Optional[float] = None) -> List[Dict[str, Any]]:
    """Measures `cells`, each (problem, runners, B, simulations, fields: more
    fields for its rows), the runners of a cell in the same interleaved
    rounds (`measure_cell`). `skip(rows so far, problem, runners, B,
    simulations)` -> {runner: why} for the runners not to run; each gets a
    row saying why. A cell that fails (out of memory, ...) gets one row
    naming its error."""
    rows: List[Dict[str, Any]] = []
    for problem, runners, batch_size, num_simulations, fields in cells:
        cell = f"{problem} B={batch_size} S={num_simulations}"
        base = dict(problem=problem, B=batch_size, simulations=num_simulations, **fields)
        names = available_runners(runners)
        skipped = skip(rows, problem, names, batch_size, num_simulations)
        for name, why in skipped.items():
            rows.append(dict(base, runner=name, skipped=why))
            log(f"{cell} {name}: skipped ({why})")
        active = [name for name in names if name not in skipped]
        if not active:
            continue
        try:
            measured = measure_cell(problem, active, batch_size, num_simulations, rounds,
                                    deadline)
        except Exception as error:  # recorded, and the next cell runs
            rows.append(dict(base, runner="+".join(active), error=harness.error_text(error)))
            log(f"{cell}: error {error!r}")
            continue
        for row in measured:
            rows.append(dict(base, **row))
            log(f"{cell} {row['runner']}: {row['sims_per_s']:,.0f} sims/s (compile "
                f"{row['compile_s']:.1f} s)"
                + (f", ours/mctx {row['ratio']:.3g}" if "ratio" in row else ""))
    return rows


def slower_than(call_budget_s: float) -> Callable[..., Dict[str, str]]:
    """The suite's `skip` of `sweep`: a runner whose median call on a problem
    took more than `call_budget_s` is skipped for the cells at least as
    large in B and in simulations."""
    def skip(rows, problem, runners, batch_size, num_simulations):
        return {row["runner"]: f"a smaller cell took > {call_budget_s} s" for row in rows
                if row["problem"] == problem and row["runner"] in runners
                and row.get("median_s", 0.0) > call_budget_s and row["B"] <= batch_size
                and row["simulations"] <= num_simulations}
    return skip
