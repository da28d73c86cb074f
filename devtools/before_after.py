"""Throughput of this working tree's policies against an earlier commit's, in one process.

    python -m devtools.before_after --before 29e8322            # the default grid
    python -m devtools.before_after --before HEAD~3 --rounds 7 --batch-size 64

The earlier commit's `mcts_jax/` is extracted with `git archive` into a
temporary folder and imported as `mcts_jax_before` (its imports rewritten),
so both versions run in this process on identical inputs: the same root
arrays and the same recurrent_fn object (a synthetic hashed game tree, and
pgx tic-tac-toe with uniform priors and one random playout per leaf). Cells
are measured interleaved: in every round each cell times both versions
back to back, the order alternating between rounds, so a drift of the
machine's speed hits both sides alike. The report gives the median
simulations/s of each side and the median and range of the per-round ratio
after / before. Results: results/before_after-<device>.json, with the commit,
a dirty flag and the command line.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import jax

import envs
import mcts_jax
from benchmarks import harness
from mcts_jax import evaluators
from mcts_jax.synthetic import HashedProblem, random_root_codes

COLUMNS = ["problem", "policy", "B", "simulations", "before_sims_per_s", "after_sims_per_s",
           "ratio_median", "ratio_min", "ratio_max"]


def import_commit(revision: str):
    """`mcts_jax` of `revision`, importable as `mcts_jax_before`."""
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True,
                          text=True, check=True).stdout.strip()
    folder = tempfile.mkdtemp(prefix="mcts_jax_before_")
    archive = os.path.join(folder, "before.tar")
    subprocess.run(["git", "-C", root, "archive", "-o", archive, revision, "mcts_jax"],
                   check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    os.rename(os.path.join(folder, "mcts_jax"), os.path.join(folder, "mcts_jax_before"))
    for directory, _, files in os.walk(os.path.join(folder, "mcts_jax_before")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path) as f:
                    source = f.read()
                with open(path, "w") as f:
                    f.write(re.sub(r"\bmcts_jax\b", "mcts_jax_before", source))
    sys.path.insert(0, folder)
    return importlib.import_module("mcts_jax_before")


def problems(batch_size: int):
    """name -> (root, invalid_actions, recurrent_fn), shared by both versions."""
    hashed = HashedProblem(num_actions=16, illegal_eighths=1)
    root, invalid = hashed.root(random_root_codes(1, batch_size))
    game = envs.make("tic_tac_toe")
    playouts = evaluators.RandomPlayouts(num_playouts=1, max_length=9)
    states = game.init(jax.random.key(0), batch_size)
    game_root, game_invalid = game.root(None, jax.random.key(1), states, playouts)
    return {"synthetic A=16": (root, invalid, hashed.recurrent_fn),
            "tic_tac_toe playouts": (game_root, game_invalid, game.recurrent_fn(playouts))}


def in_library(library, problem):
    """The problem in `library`'s own output types (each version checks that
    the root and recurrent_fn outputs are its classes): the same arrays, the
    recurrent_fn's outputs re-wrapped (no computation)."""
    root, invalid, recurrent_fn = problem
    if library is mcts_jax:
        return problem

    def converted(params, rng_key, action, embedding):
        output, embedding = recurrent_fn(params, rng_key, action, embedding)
        return library.RecurrentFnOutput(**{name: getattr(output, name) for name in (
            "reward", "discount", "prior_logits", "value", "invalid_actions")}), embedding

    return (library.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                 embedding=root.embedding), invalid, converted)


# Cell name -> (policy function, keyword arguments): each policy, mctx's
# signatures, and the options whose code paths differ (several paths per
# step, the solver, the compact layout). Every keyword is one both versions
# of a comparison accept.
VARIANTS = {
    "uct": ("uct_policy", {}),
    "alphazero": ("alphazero_policy", dict(dirichlet_fraction=0.25)),
    "gumbel": ("gumbel_policy", {}),
    "muzero": ("muzero_policy", {}),
    "gumbel_muzero": ("gumbel_muzero_policy", {}),
    "alphazero_p4": ("alphazero_policy", dict(dirichlet_fraction=0.25, simulations_per_step=4)),
    "alphazero_solver": ("alphazero_policy", dict(dirichlet_fraction=0.25, solver=True)),
    "uct_compact8": ("uct_policy", dict(max_children=8)),
    "alphazero_graph": ("alphazero_policy", dict(dirichlet_fraction=0.25, transpositions=True)),
    "uct_replay": ("uct_policy", dict(replay_embeddings=True)),
    "uct_expand_all": ("uct_policy", dict(expand_all=True)),
    # the whole output returned (every other cell returns action_weights):
    # since issue 33 the mctx signatures answer with mctx's tree, computed
    # from ours, and keep the prior logits
    "muzero_whole_output": ("muzero_policy", {}),
}
WHOLE_OUTPUT = {"muzero_whole_output"}


def runner(library, policy: str, problem, num_simulations: int):
    root, invalid, recurrent_fn = in_library(library, problem)
    function_name, options = VARIANTS[policy]
    function = getattr(library, function_name)

    @jax.jit
    def run(key):
        output = function(None, key, root, recurrent_fn, num_simulations,
                          invalid_actions=invalid, **options)
        return output if policy in WHOLE_OUTPUT else output.action_weights

    key = jax.random.key(0)
    return lambda: run(key)


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        harness.block(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per side per round")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--simulations", type=int, nargs="+", default=[64])
    parser.add_argument("--policies", nargs="+", choices=sorted(VARIANTS),
                        default=["uct", "alphazero", "gumbel"],
                        help="cells: a policy with its options (VARIANTS)")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--name", default="before_after",
                        help="results file: results/<name>-<device>.json")
    args = parser.parse_args(argv)

    before = import_commit(args.before)
    cells = []
    for name, problem in problems(args.batch_size).items():
        for policy in args.policies:
            for simulations in args.simulations:
                sides = {"before": runner(before, policy, problem, simulations),
                         "after": runner(mcts_jax, policy, problem, simulations)}
                for side in sides.values():  # compile and warm up
                    harness.block(side())
                    harness.block(side())
                cells.append(dict(problem=name, policy=policy, simulations=simulations,
                                  sides=sides, seconds={"before": [], "after": []}))
    for round_index in range(args.rounds):
        for cell in cells:
            order = ("before", "after") if round_index % 2 == 0 else ("after", "before")
            for side in order:
                cell["seconds"][side].append(timed(cell["sides"][side], args.repeats))
        print(f"round {round_index + 1}/{args.rounds} done", flush=True)

    rows = []
    for cell in cells:
        work = args.batch_size * cell["simulations"]
        ratios = [b / a for b, a in zip(cell["seconds"]["before"], cell["seconds"]["after"])]
        rows.append(dict(problem=cell["problem"], policy=cell["policy"], B=args.batch_size,
                         simulations=cell["simulations"],
                         before_sims_per_s=work / statistics.median(cell["seconds"]["before"]),
                         after_sims_per_s=work / statistics.median(cell["seconds"]["after"]),
                         ratio_median=statistics.median(ratios), ratio_min=min(ratios),
                         ratio_max=max(ratios),
                         before_seconds=cell["seconds"]["before"],
                         after_seconds=cell["seconds"]["after"]))
    settings = dict(before=args.before, before_commit=subprocess.run(
        ["git", "rev-parse", args.before], capture_output=True, text=True).stdout.strip(),
        rounds=args.rounds, repeats=args.repeats, seed=0, **harness.provenance())
    harness.report(args.name, f"After / before ({args.before}), interleaved, "
                   f"{args.rounds} rounds (ratio > 1: this tree is faster)",
                   COLUMNS, rows, settings, save_results=not args.no_save)


if __name__ == "__main__":
    main()
