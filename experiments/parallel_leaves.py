"""Several simulations per step (`simulations_per_step=P`): quality and speed.

    python -m experiments.parallel_leaves --section quality   # game trees, exact minimax
    python -m experiments.parallel_leaves --section games     # tic-tac-toe, chess mates
    python -m experiments.parallel_leaves --section speed     # B = 1 and 8, pgx games

Quality: for random `GameTree(depth, branching)` roots (exact minimax by
brute force), the share of roots whose most visited move (Gumbel: the
halving winner) is optimal, for P in {1, 4, 16, 64}, both steerings, at
equal simulations. Games (P in {1, 4, 16} unless --paths, both steerings,
equal simulations), with exact judges:
- tic-tac-toe: every non-terminal position reachable from the empty board
  (4520; `envs.perfect_play`), searched together by UCT with one random
  playout per leaf; the share where the chosen (most visited) move keeps
  the game-theoretic value, over all positions and over the 3191
  "decisive" ones where some legal move loses value, averaged over
  --seeds keys (the row gives the range over seeds);
- chess: the mate-in-two positions of benchmarks/data/mate_in_two.json
  (python-chess verified, `experiments.mate_in_two_positions`), searched
  together by the chess analysis notebook's proof search (PUCT, uniform
  priors and value 0, MCTS-solver, compact layout K = 218): the share whose
  chosen move is a first move that forces mate, and the share proven.
Speed: simulations per second of UCT with one random playout per leaf
(chess: uniform priors and value 0, compact layout, K = 218, no playout) at
B = 1 and 8, P in {1, 4, 16, 64}; every round times each P once, in turn
(interleaved), and the report gives the median over rounds. Rows "floor
P=p" time the recurrent_fn alone on the very leaves the P = p search
evaluated (recorded from one search; `ceil(simulations / p)` calls of B x p
transitions in one jitted `fori_loop`), in the same rounds: the most
simulations per second that search could reach if selection, expansion and
backup were free. OpenSpiel's C++ MCTSBot (tic-tac-toe, one random
rollout) is timed in the same rounds when pyspiel is installed. Results:
results/parallel_leaves_<section>-<device>.json with commit and command.
"""

from __future__ import annotations

import argparse
import functools
import json
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
from experiments.mate_in_two_positions import DEFAULT_OUT as MATE_IN_TWO_PATH
from envs import chess_tools, perfect_play
from mcts_jax import evaluators
from problems.game_trees import GameTree, random_root_codes

POLICIES = {
    "uct": mcts_jax.uct_policy,
    "alphazero": functools.partial(mcts_jax.alphazero_policy, dirichlet_fraction=0.0),
    "gumbel": mcts_jax.gumbel_policy,
}


def steerings(paths: int):
    return ("unobserved", "virtual_loss") if paths > 1 else ("-",)


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
                    for steering in steerings(paths):
                        moves = chosen_moves(policy, game, root, num_simulations, paths,
                                             "unobserved" if steering == "-" else steering)
                        share = float(optimal[np.arange(num_roots), moves].mean())
                        rows.append(dict(tree=f"{depth}x{branching}", policy=policy,
                                         simulations=num_simulations, P=paths,
                                         steering=steering, optimal_share=round(share, 4),
                                         roots=num_roots))
                        log(rows[-1])
    return rows


def tic_tac_toe_quality(simulations, paths_list, seeds: int, log=print) -> List[Dict[str, Any]]:
    """UCT with one random playout per leaf from every reachable position
    (see the module docstring)."""
    game = envs.make("tic_tac_toe")
    states = perfect_play.reachable_states()
    optimal = np.asarray(perfect_play.optimal_moves(states))
    decisive = (optimal != np.asarray(states.legal_action_mask)).any(axis=1)
    evaluator = evaluators.RandomPlayouts()
    recurrent_fn = game.recurrent_fn(evaluator)
    rows = []
    for num_simulations in simulations:
        for paths in paths_list:
            for steering in steerings(paths):
                shares, decisive_shares = [], []
                for seed in range(seeds):
                    root_key, search_key = jax.random.split(jax.random.key(seed))
                    root, invalid = game.root(None, root_key, states, evaluator)
                    out = mcts_jax.uct_policy(
                        None, search_key, root, recurrent_fn, num_simulations,
                        invalid_actions=invalid, simulations_per_step=paths, checks="off",
                        steering="unobserved" if steering == "-" else steering)
                    kept = optimal[np.arange(len(optimal)), np.asarray(out.action)]
                    shares.append(kept.mean())
                    decisive_shares.append(kept[decisive].mean())
                rows.append(dict(
                    game="tic_tac_toe", simulations=num_simulations, P=paths,
                    steering=steering, positions=len(optimal),
                    share=round(float(np.mean(shares)), 4),
                    decisive=int(decisive.sum()),
                    decisive_share=round(float(np.mean(decisive_shares)), 4),
                    decisive_range=f"{min(decisive_shares):.4f}-{max(decisive_shares):.4f}",
                    seeds=seeds))
                log(rows[-1])
    return rows


def mate_in_two_positions(path: str = MATE_IN_TWO_PATH):
    """(states [M], mating [M, A] bool: the first moves that force mate)."""
    with open(path) as f:
        positions = json.load(f)["positions"]
    states = chess_tools.batch_from_fens([p["fen"] for p in positions])
    mating = np.zeros((len(positions), chess_tools.NUM_ACTIONS), bool)
    for i, position in enumerate(positions):
        state = jax.tree.map(lambda x: x[i], states)
        for uci in position["mating_moves"]:
            mating[i, chess_tools.uci_to_action(state, uci)] = True
    return states, mating


def mate_in_two_quality(simulations, paths_list, log=print) -> List[Dict[str, Any]]:
    """The chess analysis notebook's proof search on every mate in two."""
    game = envs.make("chess")
    states, mating = mate_in_two_positions()
    evaluator = evaluators.Uniform()
    recurrent_fn = game.recurrent_fn(evaluator)
    root, invalid = game.root(None, jax.random.key(0), states, evaluator)
    rows = []
    for num_simulations in simulations:
        for paths in paths_list:
            for steering in steerings(paths):
                out = mcts_jax.alphazero_policy(
                    None, jax.random.key(1), root, recurrent_fn, num_simulations,
                    invalid_actions=invalid, dirichlet_fraction=0.0,
                    final_action="most_visited", max_children=game.max_legal_moves,
                    solver=True, simulations_per_step=paths, checks="off",
                    steering="unobserved" if steering == "-" else steering)
                found = mating[np.arange(len(mating)), np.asarray(out.action)]
                proven = np.asarray(out.search_tree.summary().root_proven)
                rows.append(dict(game="chess mate in two", simulations=num_simulations,
                                 P=paths, steering=steering, positions=len(mating),
                                 share=round(float(found.mean()), 4),
                                 found=int(found.sum()),
                                 proven_share=round(float(proven.mean()), 4)))
                log(rows[-1])
    return rows


def speed_problem(name: str, batch_size: int):
    """(root, invalid_actions, recurrent_fn, search options) of the speed
    section: B initial positions of `name`."""
    game = envs.make(name)
    if name == "chess":
        evaluator, options = evaluators.Uniform(), dict(max_children=game.max_legal_moves)
    else:
        evaluator, options = evaluators.RandomPlayouts(), {}
    recurrent_fn = game.recurrent_fn(evaluator)
    states = game.init(jax.random.key(0), batch_size)
    root, invalid = game.root(None, jax.random.key(1), states, evaluator)
    return root, invalid, recurrent_fn, options


def speed_search(name: str, batch_size: int, num_simulations: int, paths: int, recurrent_fn=None):
    """A jitted key -> action [B] search (UCT, see the module docstring);
    `recurrent_fn` replaces the game's own when given (same signature)."""
    root, invalid, game_fn, options = speed_problem(name, batch_size)
    return jax.jit(lambda key: mcts_jax.uct_policy(
        None, key, root, recurrent_fn or game_fn, num_simulations, invalid_actions=invalid,
        simulations_per_step=paths, checks="off", **options).action)


def speed_runner(name: str, batch_size: int, num_simulations: int, paths: int):
    """A () -> None that runs one search of `name` at B = batch_size."""
    search = speed_search(name, batch_size, num_simulations, paths)
    counter = iter(range(10 ** 9))
    jax.block_until_ready(search(jax.random.key(0)))  # compile
    return lambda: jax.block_until_ready(search(jax.random.key(next(counter))))


def recorded_leaves(name: str, batch_size: int, num_simulations: int, paths: int):
    """(actions [steps, B * P], embeddings [steps, B * P, ...]): the inputs of
    every recurrent_fn call of one search (key 0), in order."""
    _, _, recurrent_fn, _ = speed_problem(name, batch_size)
    calls = []

    def recording_fn(params, rng_key, action, embedding):
        jax.debug.callback(lambda *x: calls.append(jax.device_get(x)), action, embedding,
                           ordered=True)
        return recurrent_fn(params, rng_key, action, embedding)

    jax.block_until_ready(speed_search(name, batch_size, num_simulations, paths,
                                       recording_fn)(jax.random.key(0)))
    jax.effects_barrier()
    steps = -(-num_simulations // paths)
    if len(calls) != steps:
        raise RuntimeError(f"recorded {len(calls)} recurrent_fn calls, expected {steps}")
    return jax.tree.map(lambda *xs: jnp.asarray(np.stack(xs)), *calls)


def floor_runner(name: str, batch_size: int, num_simulations: int, paths: int):
    """A () -> None that runs the recurrent_fn alone on the leaves one P = paths
    search evaluated: `ceil(num_simulations / paths)` calls of B x P
    transitions in one jitted fori_loop. Every output (value, priors,
    embedding...) is summed into the result so that XLA computes it all."""
    _, _, recurrent_fn, _ = speed_problem(name, batch_size)
    actions, embeddings = recorded_leaves(name, batch_size, num_simulations, paths)

    @jax.jit
    def evaluate(key):
        def call(i, carry):
            key, total = carry
            key, call_key = jax.random.split(key)
            outputs = recurrent_fn(None, call_key, actions[i],
                                   jax.tree.map(lambda x: x[i], embeddings))
            for leaf in jax.tree.leaves(outputs):
                total = total + jnp.sum(leaf.astype(jnp.float32))
            return key, total

        return jax.lax.fori_loop(0, actions.shape[0], call, (key, jnp.float32(0)))[1]

    counter = iter(range(10 ** 9))
    jax.block_until_ready(evaluate(jax.random.key(0)))  # compile
    return lambda: jax.block_until_ready(evaluate(jax.random.key(next(counter))))


def speed(games, batch_sizes, paths_list, num_simulations: int, rounds: int,
          floors: bool = True, log=print) -> List[Dict[str, Any]]:
    rows = []
    for name in games:
        for batch_size in batch_sizes:
            runners: Dict[Any, Any] = {paths: speed_runner(name, batch_size, num_simulations, paths)
                                       for paths in paths_list}
            if floors:
                for paths in paths_list:
                    runners[f"floor P={paths}"] = floor_runner(name, batch_size,
                                                               num_simulations, paths)
            with_openspiel = name == "tic_tac_toe" and batch_size == 1
            times: Dict[Any, List[float]] = {key: [] for key in list(runners) + ["openspiel"]}
            for _ in range(rounds):
                for key, run in runners.items():
                    start = time.perf_counter()
                    run()
                    times[key].append(time.perf_counter() - start)
                if with_openspiel:
                    rate = openspiel_mcts.simulations_per_second(num_simulations, repeats=1)
                    if rate is not None:
                        times["openspiel"].append(num_simulations / rate)
            one = statistics.median(times[1]) if times.get(1) else None
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
    parser.add_argument("--section", choices=("quality", "games", "speed"), required=True)
    parser.add_argument("--paths", type=int, nargs="+", default=None,
                        help="P values (default 1 4 16 64; games: 1 4 16)")
    parser.add_argument("--simulations", type=int, nargs="+", default=[64, 256, 1024],
                        help="quality: budgets; speed: the largest is the budget; games: "
                             "tic-tac-toe budgets")
    parser.add_argument("--chess-simulations", type=int, nargs="+", default=[512, 768, 1024],
                        help="games: budgets of the mate-in-two searches")
    parser.add_argument("--trees", nargs="+", default=["6x4", "4x8"])
    parser.add_argument("--roots", type=int, default=512)
    parser.add_argument("--seeds", type=int, default=3, help="games: tic-tac-toe keys")
    parser.add_argument("--games", nargs="+", default=["tic_tac_toe", "connect_four", "chess"])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-floor", action="store_true",
                        help="speed: leave out the recurrent_fn-alone rows")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--name", default=None,
                        help="results file: results/<name>-<device>.json (default "
                             "parallel_leaves_<section>)")
    args = parser.parse_args(argv)
    if args.paths is None:
        args.paths = [1, 4, 16] if args.section == "games" else [1, 4, 16, 64]
    settings = harness.provenance(seed=0)
    if args.section == "quality":
        trees = [tuple(int(x) for x in tree.split("x")) for tree in args.trees]
        rows = quality(trees, args.simulations, args.paths, args.roots)
        columns = ["tree", "policy", "simulations", "P", "steering", "optimal_share", "roots"]
        title = "Share of roots whose chosen move is minimax-optimal, by P (equal simulations)"
    elif args.section == "games":
        rows = (tic_tac_toe_quality(args.simulations, args.paths, args.seeds)
                + mate_in_two_quality(args.chess_simulations, args.paths))
        columns = ["game", "simulations", "P", "steering", "positions", "share", "decisive",
                   "decisive_share", "decisive_range", "seeds", "found", "proven_share"]
        title = ("Exact judges by P (equal simulations): tic-tac-toe, share of positions whose "
                 "move keeps the value; chess, share of mates in two found")
    else:
        num_simulations = max(args.simulations)
        rows = speed(args.games, args.batch_sizes, args.paths, num_simulations, args.rounds,
                     floors=not args.no_floor)
        columns = ["game", "B", "P", "simulations", "sims_per_s", "speedup_vs_P1", "rounds"]
        title = (f"Simulations per second by P, interleaved rounds ({num_simulations} per "
                 "search; floor: recurrent_fn alone on the same leaves)")
    settings.update(vars(args))
    harness.report(args.name or f"parallel_leaves_{args.section}", title, columns, rows, settings,
                   save_results=not args.no_save)


if __name__ == "__main__":
    main()
