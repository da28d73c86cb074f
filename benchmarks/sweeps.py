"""Throughput sweeps: simulations per second against batch size and against
num_simulations, for the three policies, ours against mctx on identical inputs.

Problems (`PROBLEMS`), each a root batch and a recurrent_fn that both
libraries receive unchanged (mctx through `harness.mctx_recurrent_fn`, which
only moves illegal actions into the logits, as mctx has no `invalid_actions`
below the root):

- `synthetic`: the hashed game tree of `mcts_jax.synthetic` (A=9), a
  recurrent_fn that costs almost nothing: the figures measure the search;
- `tic_tac_toe`: pgx tic-tac-toe stepped at every expansion, uniform priors,
  value 0 (lean pgx states as embeddings, for both libraries);
- `tic_tac_toe_net`: the same with priors and value from a small network
  (the default tic-tac-toe MLP of `mcts_jax.networks`, 3 x 128 units);
- `chess`: pgx chess, uniform priors, value 0; ours with the compact layout
  (`max_children=218`), mctx dense.

Runners (`RUNNERS`): ours `uct`, `alphazero` (no root noise) and `gumbel`;
mctx `muzero` (the counterpart of alphazero: identical visit counts) and
`gumbel_muzero`. A cell is one jitted search of B roots; its figure is
B x num_simulations / the median wall time of a call (`harness.time_call`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence

import jax
import jax.numpy as jnp

import envs
import mcts_jax
from benchmarks import harness
from mcts_jax import evaluators, networks
from mcts_jax.synthetic import HashedProblem, random_root_codes

PROBLEMS = ("synthetic", "tic_tac_toe", "tic_tac_toe_net", "chess")
RUNNERS = ("ours_uct", "ours_alphazero", "ours_gumbel", "mctx_muzero", "mctx_gumbel")
# ours -> the mctx runner it is compared with (identical visit counts / rules).
COUNTERPARTS = {"ours_alphazero": "mctx_muzero", "ours_gumbel": "mctx_gumbel"}
MAX_CHILDREN = {"chess": 218}


@functools.lru_cache(maxsize=None)
def problem_setup(problem: str, batch_size: int) -> Dict[str, Any]:
    """{params, root (RootFnOutput [B]), invalid [B, A] bool, recurrent_fn}."""
    key = jax.random.key(1)
    if problem == "synthetic":
        hashed = HashedProblem(num_actions=9)
        root, invalid = hashed.root(random_root_codes(0, batch_size))
        return dict(params=None, root=root, invalid=invalid, recurrent_fn=hashed.recurrent_fn)
    if problem not in PROBLEMS:
        raise ValueError(f"problem must be one of {PROBLEMS}, got {problem!r}")
    game = envs.make("chess" if problem == "chess" else "tic_tac_toe")
    states = game.init(jax.random.key(0), batch_size)
    if problem == "tic_tac_toe_net":
        model = networks.make_model(None, game)
        params, evaluator = model.init(jax.random.key(2)), model.evaluator
    else:
        params, evaluator = None, evaluators.Uniform()
    root, invalid = game.root(params, key, states, evaluator)
    return dict(params=params, root=root, invalid=invalid,
                recurrent_fn=game.recurrent_fn(evaluator))


@functools.lru_cache(maxsize=None)
def compiled_search(problem: str, runner: str, num_simulations: int) -> Callable:
    """A jitted fn(params, key, root, invalid) -> action [B] for one cell."""
    recurrent_fn = problem_setup(problem, 1)["recurrent_fn"]
    max_children = MAX_CHILDREN.get(problem)
    if runner.startswith("ours_"):
        common = dict(invalid_actions=None, max_children=max_children)
        policy = {"ours_uct": mcts_jax.uct_policy,
                  "ours_alphazero": functools.partial(mcts_jax.alphazero_policy,
                                                      dirichlet_fraction=0.0),
                  "ours_gumbel": mcts_jax.gumbel_policy}[runner]

        def search(params, key, root, invalid):
            return policy(params, key, root, recurrent_fn, num_simulations,
                          **dict(common, invalid_actions=invalid)).action
        return jax.jit(search)
    import mctx
    their_fn = harness.mctx_recurrent_fn(recurrent_fn, mctx)
    policy = {"mctx_muzero": functools.partial(mctx.muzero_policy, dirichlet_fraction=0.0),
              "mctx_gumbel": mctx.gumbel_muzero_policy}[runner]

    def their_search(params, key, root, invalid):
        their_root = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                       embedding=root.embedding)
        return policy(params, key, their_root, their_fn, num_simulations,
                      invalid_actions=invalid).action
    return jax.jit(their_search)


def available_runners(runners: Sequence[str]) -> List[str]:
    """`runners` without the mctx ones when mctx is not installed."""
    try:
        import mctx  # noqa: F401
        return list(runners)
    except ImportError:
        return [r for r in runners if not r.startswith("mctx")]


def measure_cell(problem: str, runner: str, batch_size: int, num_simulations: int,
                 repeats: int) -> Dict[str, Any]:
    """One row: sims_per_s, us_per_sim (per batch), compile_s for one cell."""
    setup = problem_setup(problem, batch_size)
    search = compiled_search(problem, runner, num_simulations)
    key = jax.random.key(3)
    timing = harness.time_call(
        lambda: search(setup["params"], key, setup["root"], setup["invalid"]), repeats)
    return dict(problem=problem, runner=runner, B=batch_size, simulations=num_simulations,
                sims_per_s=batch_size * num_simulations / timing["median_s"],
                us_per_sim=1e6 * timing["median_s"] / num_simulations,
                compile_s=timing["compile_s"], median_s=timing["median_s"])


def sweep(problems: Sequence[str], runners: Sequence[str], cells: Sequence[tuple],
          repeats: int, call_budget_s: float, done: Optional[Dict[tuple, dict]] = None,
          log: Callable[[str], None] = print) -> List[Dict[str, Any]]:
    """Measures every (problem, runner, B, simulations) with (B, simulations)
    in `cells`. A runner whose previous call on this problem took more than
    `call_budget_s` is skipped for the larger cells (recorded as skipped).
    `done` caches measured cells between sweeps of one run."""
    done = {} if done is None else done
    rows = []
    for problem in problems:
        for runner in available_runners(runners):
            too_slow_at = None
            for batch_size, num_simulations in sorted(cells):
                cell = (problem, runner, batch_size, num_simulations)
                if cell not in done:
                    if too_slow_at is not None and (batch_size >= too_slow_at[0] and
                                                     num_simulations >= too_slow_at[1]):
                        done[cell] = dict(problem=problem, runner=runner, B=batch_size,
                                          simulations=num_simulations,
                                          skipped=f"a smaller cell took > {call_budget_s} s")
                    else:
                        done[cell] = measure_cell(problem, runner, batch_size,
                                                  num_simulations, repeats)
                        log(f"{problem:16s} {runner:15s} B={batch_size:<6d} "
                            f"sims={num_simulations:<5d} "
                            f"{done[cell]['sims_per_s']:14,.0f} sims/s "
                            f"(compile {done[cell]['compile_s']:.1f} s)")
                row = done[cell]
                if row.get("median_s", 0.0) > call_budget_s and too_slow_at is None:
                    too_slow_at = (batch_size, num_simulations)
                rows.append(row)
    return rows


def ratio_rows(rows: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """ours / mctx throughput for every cell where both ran (same run)."""
    figures = {(r["problem"], r["runner"], r["B"], r["simulations"]): r.get("sims_per_s")
               for r in rows}
    out = []
    for (problem, runner, batch_size, sims), value in sorted(figures.items()):
        theirs = figures.get((problem, COUNTERPARTS.get(runner), batch_size, sims))
        if runner in COUNTERPARTS and value and theirs:
            out.append(dict(problem=problem, ours=runner, mctx=COUNTERPARTS[runner],
                            B=batch_size, simulations=sims, ratio=value / theirs))
    return out
