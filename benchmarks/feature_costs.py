"""What the MCTS-solver and subtree reuse cost against the plain search.

`solver=True` against `solver=False` (simulations per second, on
tic-tac-toe with pgx and uniform priors and on a synthetic tree), and one
`get_subtree` call (once per move) against one search, the three calls of
a cell in the same interleaved rounds. The suite's `features` section:

    python -m benchmarks --full --only features     # B = 64 and 1024, 256 simulations
"""

from __future__ import annotations

import jax

import mcts_jax
from benchmarks import harness, sweeps
from problems.synthetic import HashedProblem, random_root_codes


def synthetic_setup(batch_size):
    problem = HashedProblem(num_actions=9, terminal_sixteenths=3)
    root, invalid = problem.root(random_root_codes(0, batch_size))
    return root, invalid, problem.recurrent_fn


def tictactoe_setup(batch_size):
    setup = sweeps.problem_setup("tic_tac_toe", batch_size)  # pgx, uniform priors, value 0
    return setup["root"], setup["invalid"], setup["recurrent_fn"]


COLUMNS = ["problem", "B", "simulations", "plain_sims_per_s", "solver_sims_per_s",
           "solver/plain time", "plain_search_ms", "get_subtree_ms", "get_subtree/search"]
SETUPS = {"synthetic": synthetic_setup, "tic_tac_toe": tictactoe_setup}


def measure(batch_sizes, simulations, rounds, problems=tuple(SETUPS), log=print):
    """Rows of COLUMNS: alphazero_policy with and without the solver, and one
    get_subtree call, for each problem and batch size, the three timed in the
    same interleaved rounds (`harness.interleaved_rounds`); the time ratios
    are formed within each round (median, and its range in `_min`/`_max`)."""
    key = jax.random.key(0)
    rows = []
    for problem in problems:
        for batch_size in batch_sizes:
            root, invalid, recurrent_fn = SETUPS[problem](batch_size)
            searches = {solver: jax.jit(lambda k, r, i, s=solver: mcts_jax.alphazero_policy(
                None, k, r, recurrent_fn, simulations, invalid_actions=i,
                dirichlet_fraction=0.0, solver=s)) for solver in (False, True)}
            out = searches[False](key, root, invalid)
            subtree = jax.jit(mcts_jax.get_subtree)
            sides = {"plain": lambda: searches[False](key, root, invalid).action,
                     "solver": lambda: searches[True](key, root, invalid).action,
                     "get_subtree": lambda: subtree(out.search_tree, out.action).num_nodes}
            result = harness.interleaved_rounds(sides, rounds,
                                                [("plain", "solver"), ("plain", "get_subtree")])
            timed = {name: side["median_s"] for name, side in result["sides"].items()}
            row = dict(problem=problem, B=batch_size, simulations=simulations,
                       plain_sims_per_s=batch_size * simulations / timed["plain"],
                       solver_sims_per_s=batch_size * simulations / timed["solver"],
                       plain_search_ms=1e3 * timed["plain"],
                       solver_search_ms=1e3 * timed["solver"],
                       get_subtree_ms=1e3 * timed["get_subtree"], rounds=rounds,
                       **harness.ratio_fields(result["ratios"]["plain/solver"],
                                              "solver/plain time"),
                       **harness.ratio_fields(result["ratios"]["plain/get_subtree"],
                                              "get_subtree/search"))
            rows.append(row)
            log(str(row))
    return rows

