"""Several simulations per step (`simulations_per_step=P`): quality and speed.

    python -m benchmarks.parallel_leaves --section quality   # game trees, exact minimax
    python -m benchmarks.parallel_leaves --section speed     # B = 1 and 8, pgx games

Quality: for random `GameTree(depth, branching)` roots (exact minimax by
brute force), the share of roots whose most visited move (Gumbel: the
halving winner) is optimal, for P in {1, 4, 16, 64}, both steerings, at
equal simulations. Speed: simulations per second of UCT with one random
playout per leaf (chess: uniform priors and value 0, compact layout, K =
218, no playout) at B = 1 and 8, P in {1, 4, 16, 64}; every round times each
P once, in turn (interleaved), and the report gives the median over rounds.
OpenSpiel's C++ MCTSBot (tic-tac-toe, one random rollout) is timed in the
same rounds when pyspiel is installed. Results:
results/parallel_leaves_<section>-<device>.json with commit and command.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from typing import Any, Dict, List

import jax
import jax.numpy as jnp
import numpy as np

import envs
import mcts_jax
from benchmarks import harness
from benchmarks.baselines import openspiel_mcts
from mcts_jax import evaluators
from mcts_jax.game_trees import GameTree, random_root_codes

POLICIES = {
    "uct": mcts_jax.uct_policy,
    "alphazero": functools.partial(mcts_jax.alphazero_policy, dirichlet_fraction=0.0),
    "gumbel": mcts_jax.gumbel_policy,
}


def chosen_moves(policy: str, game: GameTree, root, num_simulations: int, paths: int,
                 steering: str) -> np.ndarray:
    out = POLICIES[policy](None, jax.random.key(1), root, game.recurrent_fn, num_simulations,
                           simulations_per_step=paths, steering=steering)
    if policy == "gumbel":
        return np.asarray(out.action)
    return np.asarray(jnp.argmax(out.search_tree.summary().visit_counts, axis=-1))


def quality(trees, simulations, paths_list, num_roots: int, log=print) -> List[Dict[str, Any]]:
    rows = []
    for depth, branching in trees:
        game = GameTree(depth=depth, branching=branching)
        codes = random_root_codes(0, num_roots)
        optimal = game.optimal_actions(codes)
        root = game.root(codes)
        for policy in POLICIES:
            for num_simulations in simulations:
                for paths in paths_list:
                    for steering in ("unobserved", "virtual_loss") if paths > 1 else ("-",):
                        moves = chosen_moves(policy, game, root, num_simulations, paths,
                                             "unobserved" if steering == "-" else steering)
                        share = float(optimal[np.arange(num_roots), moves].mean())
                        rows.append(dict(tree=f"{depth}x{branching}", policy=policy,
                                         simulations=num_simulations, P=paths,
                                         steering=steering, optimal_share=round(share, 4),
                                         roots=num_roots))
                        log(rows[-1])
    return rows


def speed_runner(name: str, batch_size: int, num_simulations: int, paths: int):
    """A () -> None that runs one search of `name` at B = batch_size."""
    game = envs.make(name)
    if name == "chess":
        evaluator, options = evaluators.Uniform(), dict(max_children=game.max_legal_moves)
    else:
        evaluator, options = evaluators.RandomPlayouts(), {}
    recurrent_fn = game.recurrent_fn(evaluator)
    states = game.init(jax.random.key(0), batch_size)
    root, invalid = game.root(None, jax.random.key(1), states, evaluator)
    search = jax.jit(lambda key: mcts_jax.uct_policy(
        None, key, root, recurrent_fn, num_simulations, invalid_actions=invalid,
        simulations_per_step=paths, checks="off", **options).action)
    counter = iter(range(10 ** 9))
    jax.block_until_ready(search(jax.random.key(0)))  # compile
    return lambda: jax.block_until_ready(search(jax.random.key(next(counter))))


def speed(games, batch_sizes, paths_list, num_simulations: int, rounds: int,
          log=print) -> List[Dict[str, Any]]:
    rows = []
    for name in games:
        for batch_size in batch_sizes:
            runners = {paths: speed_runner(name, batch_size, num_simulations, paths)
                       for paths in paths_list}
            with_openspiel = name == "tic_tac_toe" and batch_size == 1
            times: Dict[Any, List[float]] = {key: [] for key in list(runners) + ["openspiel"]}
            for _ in range(rounds):
                for paths, run in runners.items():
                    start = time.perf_counter()
                    run()
                    times[paths].append(time.perf_counter() - start)
                if with_openspiel:
                    rate = openspiel_mcts.simulations_per_second(num_simulations, repeats=1)
                    if rate is not None:
                        times["openspiel"].append(num_simulations / rate)
            one = statistics.median(times[1]) if 1 in times else None
            for key, seconds in times.items():
                if not seconds:
                    continue
                median = statistics.median(seconds)
                rows.append(dict(game=name, B=batch_size,
                                 P=key if key != "openspiel" else "openspiel C++ MCTSBot",
                                 simulations=num_simulations,
                                 sims_per_s=round(batch_size * num_simulations / median),
                                 speedup_vs_P1=round(one / median, 2) if one else None,
                                 rounds=len(seconds)))
                log(rows[-1])
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", choices=("quality", "speed"), required=True)
    parser.add_argument("--paths", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--simulations", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--trees", nargs="+", default=["6x4", "4x8"])
    parser.add_argument("--roots", type=int, default=512)
    parser.add_argument("--games", nargs="+", default=["tic_tac_toe", "connect_four", "chess"])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--name", default=None,
                        help="results file: results/<name>-<device>.json (default "
                             "parallel_leaves_<section>)")
    args = parser.parse_args(argv)
    settings = dict(seed=0, **harness.provenance())
    if args.section == "quality":
        trees = [tuple(int(x) for x in tree.split("x")) for tree in args.trees]
        rows = quality(trees, args.simulations, args.paths, args.roots)
        columns = ["tree", "policy", "simulations", "P", "steering", "optimal_share", "roots"]
        title = "Share of roots whose chosen move is minimax-optimal, by P (equal simulations)"
    else:
        num_simulations = max(args.simulations)
        rows = speed(args.games, args.batch_sizes, args.paths, num_simulations, args.rounds)
        columns = ["game", "B", "P", "simulations", "sims_per_s", "speedup_vs_P1", "rounds"]
        title = f"Simulations per second by P, interleaved rounds ({num_simulations} per search)"
    settings.update(vars(args))
    harness.report(args.name or f"parallel_leaves_{args.section}", title, columns, rows, settings,
                   save_results=not args.no_save)


if __name__ == "__main__":
    main()
