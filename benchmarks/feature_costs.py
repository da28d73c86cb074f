"""What the search features cost: the MCTS-solver, subtree reuse and
expand-all, measured against the plain search in the same process.

- solver: simulations per second with `solver=False` and `solver=True` on
  tic-tac-toe (pgx simulator, uniform priors) and on a synthetic tree.
- get_subtree: the time of one `get_subtree` call against one search of the
  same tree size (the call runs once per move).

    python -m benchmarks.feature_costs
"""

from __future__ import annotations

import argparse

import jax

import envs
import mcts_jax
from benchmarks import harness
from mcts_jax import evaluators
from mcts_jax.synthetic import HashedProblem, random_root_codes


def synthetic_setup(batch_size):
    problem = HashedProblem(num_actions=9, terminal_sixteenths=3)
    root, invalid = problem.root(random_root_codes(0, batch_size))
    return root, invalid, problem.recurrent_fn


def tictactoe_setup(batch_size):
    game = envs.make("tic_tac_toe")
    evaluator = evaluators.Uniform()
    states = game.init(jax.random.key(0), batch_size)
    root, invalid = game.root(None, jax.random.key(1), states, evaluator)
    return root, invalid, game.recurrent_fn(evaluator)


COLUMNS = ["problem", "B", "simulations", "plain_sims_per_s", "solver_sims_per_s",
           "solver/plain time", "plain_search_ms", "get_subtree_ms", "get_subtree/search"]
SETUPS = {"synthetic": synthetic_setup, "tic_tac_toe": tictactoe_setup}


def measure(batch_sizes, simulations, repeats, problems=tuple(SETUPS), log=print):
    """Rows of COLUMNS: alphazero_policy with and without the solver, and one
    get_subtree call, for each problem and batch size (same process)."""
    key = jax.random.key(0)
    rows = []
    for problem in problems:
        for batch_size in batch_sizes:
            root, invalid, recurrent_fn = SETUPS[problem](batch_size)
            row = dict(problem=problem, B=batch_size, simulations=simulations)
            searches = {}
            for solver in (False, True):
                search = jax.jit(lambda k, r, i, s=solver: mcts_jax.alphazero_policy(
                    None, k, r, recurrent_fn, simulations, invalid_actions=i,
                    dirichlet_fraction=0.0, solver=s))
                searches[solver] = search
                timing = harness.time_call(lambda: search(key, root, invalid).action, repeats)
                label = "solver" if solver else "plain"
                row[f"{label}_sims_per_s"] = batch_size * simulations / timing["median_s"]
                row[f"{label}_search_ms"] = 1e3 * timing["median_s"]
            row["solver/plain time"] = row["solver_search_ms"] / row["plain_search_ms"]
            out = searches[False](key, root, invalid)
            subtree = jax.jit(mcts_jax.get_subtree)
            timing = harness.time_call(lambda: subtree(out.search_tree, out.action).num_nodes,
                                       repeats)
            row["get_subtree_ms"] = 1e3 * timing["median_s"]
            row["get_subtree/search"] = row["get_subtree_ms"] / row["plain_search_ms"]
            rows.append(row)
            log(str(row))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--simulations", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    rows = measure(args.batch_sizes, args.simulations, args.repeats)
    harness.report("feature_costs",
                   "Cost of the solver and of subtree reuse (alphazero_policy, same process)",
                   COLUMNS, rows, vars(args), not args.no_save)
    return rows


if __name__ == "__main__":
    main()
