"""Our searches judged by outside references: chess puzzles checked with
python-chess, matches against Stockfish and GNU Go (engines/opponents.py).

Parts (`--parts`):
- "puzzles": the solve rate of each recipe (`RECIPES`) on the mates in one
  of tests/chess_positions.py (solved: python-chess says the move mates) and
  the mates in two of benchmarks/data/mate_in_two.json (solved: the move is
  one of the verified mating first moves), by simulations. All positions of
  a set are searched as one batch.
- "stockfish": a recipe without a network (`--chess-recipe`) against
  Stockfish at `--skill-level` with `--stockfish-nodes` per move, in the
  arena (half the games with each colour, `--opening-moves` random first
  plies for varied openings); Elo and its 95% interval (`elo_interval`).
- "gnugo": UCT with random playouts (`--go-simulations`, one position per
  search) against GNU Go `--gnugo-level` on 9x9, in the arena.

    python -m experiments.engines_judged --parts puzzles --simulations 32 128
    python -m experiments.engines_judged --parts gnugo --games 4
"""

from __future__ import annotations

import time

import jax
import numpy as np

import envs
import mcts_jax
from benchmarks import harness
from engines.opponents import GtpPlayer, UciPlayer, close_all, elo_interval, find_binary
from envs import chess_tools
from experiments.anytime_savings import chess_puzzles
from mcts_jax import evaluators
from training import arena

# name -> (policy function, evaluator, search options); every recipe of
# docs/chess_analysis.md and DESIGN.md's classic engine (UCT, expand-all,
# minimax leaves), no network.
RECIPES = {
    "puct_uniform": (mcts_jax.alphazero_policy, evaluators.Uniform(), {}),
    "puct_minimax": (mcts_jax.alphazero_policy, evaluators.Minimax(depth=1), {}),
    "puct_minimax_uniform_priors": (mcts_jax.alphazero_policy,
                                    evaluators.Minimax(depth=1, prior_temperature=None), {}),
    "uct_expand_all_minimax": (mcts_jax.uct_policy, evaluators.Minimax(depth=1),
                               dict(expand_all=True)),
    "gumbel_minimax": (mcts_jax.gumbel_policy, evaluators.Minimax(depth=1), {}),
    "puct_playouts": (mcts_jax.alphazero_policy,
                      evaluators.RandomPlayouts(num_playouts=1, max_length=64,
                                                heuristic_at_cutoff=True), {}),
}
PUZZLE_COLUMNS = ["recipe", "set", "positions", "simulations", "solved", "solve_rate",
                  "seconds"]
MATCH_COLUMNS = ["ours", "opponent", "games", "wins", "draws", "losses", "elo", "elo_low",
                 "elo_high", "seconds"]


def solve(recipe, fens, simulations, seed):
    import chess

    policy, evaluator, options = RECIPES[recipe]
    game = envs.make("chess")
    states = chess_tools.batch_from_fens([fen for fen, _ in fens])
    root, invalid = game.root(None, jax.random.key(seed), states, evaluator)
    settings = dict(invalid_actions=invalid, max_children=218, solver=True, **options)
    if policy is mcts_jax.alphazero_policy:
        settings.update(dirichlet_fraction=0.0, temperature=0.0)
    if policy is mcts_jax.gumbel_policy:
        settings.update(gumbel_scale=0.0)
    out = policy(None, jax.random.key(seed + 1), root, game.recurrent_fn(evaluator),
                 simulations, **settings)
    solved = 0
    for row, (fen, mating) in enumerate(fens):
        state = jax.tree.map(lambda x: x[row], states)
        move = chess_tools.action_to_uci(state, int(out.action[row]))
        if mating is None:
            board = chess.Board(fen)
            board.push_uci(move)
            solved += board.is_checkmate()
        else:
            solved += move in mating
    return solved


def run_puzzles(args, rows):
    for name, fens in chess_puzzles().items():
        if name not in args.sets:
            continue
        for recipe in args.recipes:
            for simulations in args.simulations:
                started = time.perf_counter()
                solved = solve(recipe, fens, simulations, args.seed)
                row = dict(recipe=recipe, set=name, positions=len(fens),
                           simulations=simulations, solved=solved,
                           solve_rate=round(solved / len(fens), 3),
                           seconds=round(time.perf_counter() - started, 1))
                print(row, flush=True)
                rows.append(row)


def _elo_text(value):
    """An Elo figure rounded, or "-inf" / "inf" for a score of 0 or 1."""
    return str(value) if np.isinf(value) else round(value)


def match_row(ours, opponent, result, started):
    elo, low, high = (_elo_text(v) for v in elo_interval(result.wins, result.draws,
                                                          result.losses))
    return dict(ours=ours, opponent=opponent, games=result.num_games, wins=result.wins,
                draws=result.draws, losses=result.losses, elo=elo, elo_low=low,
                elo_high=high, seconds=round(time.perf_counter() - started, 1))


def run_stockfish(args, rows):
    binary = find_binary("stockfish")
    if binary is None:
        raise SystemExit("stockfish is not installed (apt-get install stockfish)")
    policy, evaluator, options = RECIPES[args.chess_recipe]
    name = "alphazero" if policy is mcts_jax.alphazero_policy else \
        "uct" if policy is mcts_jax.uct_policy else "gumbel"
    ours = arena.SearchPlayer(evaluator, name, args.chess_simulations,
                              options=tuple(dict(max_children=218, solver=True,
                                                 **options).items()))
    opponent = UciPlayer(binary, nodes=args.stockfish_nodes, skill_level=args.skill_level,
                         options=(("Threads", 1),))
    started = time.perf_counter()
    result = arena.play_match(envs.make("chess"), ours, None, opponent, None,
                              jax.random.key(args.seed), args.games,
                              opening_moves=args.opening_moves, max_plies=args.max_plies)
    close_all()
    rows.append(match_row(f"{args.chess_recipe}, {args.chess_simulations} simulations",
                          f"Stockfish 15.1 Skill Level {args.skill_level}, "
                          f"{args.stockfish_nodes} nodes", result, started))
    print(rows[-1], flush=True)


def run_gnugo(args, rows):
    binary = find_binary("gnugo")
    if binary is None:
        raise SystemExit("gnugo is not installed (apt-get install gnugo)")
    ours = arena.SearchPlayer(evaluators.RandomPlayouts(num_playouts=1), "uct",
                              args.go_simulations)
    opponent = GtpPlayer(binary, level=args.gnugo_level)
    started = time.perf_counter()
    result = arena.play_match(envs.make("go_9x9"), ours, None, opponent, None,
                              jax.random.key(args.seed), args.games,
                              opening_moves=args.opening_moves)
    close_all()
    rows.append(match_row(f"uct, random playouts, {args.go_simulations} simulations",
                          f"GNU Go 3.8 level {args.gnugo_level}", result, started))
    print(rows[-1], flush=True)


def main(argv=None):
    parser = harness.parser(__doc__, seed=True)
    parser.add_argument("--parts", nargs="+", default=["puzzles"],
                        choices=["puzzles", "stockfish", "gnugo"])
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--sets", nargs="+", default=["mate_in_one", "mate_in_two"])
    parser.add_argument("--simulations", nargs="+", type=int, default=[32, 128])
    parser.add_argument("--chess-recipe", default="puct_minimax", choices=list(RECIPES))
    parser.add_argument("--chess-simulations", type=int, default=64)
    parser.add_argument("--skill-level", type=int, default=0)
    parser.add_argument("--stockfish-nodes", type=int, default=100)
    parser.add_argument("--max-plies", type=int, default=200)
    parser.add_argument("--go-simulations", type=int, default=64)
    parser.add_argument("--gnugo-level", type=int, default=0)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--opening-moves", type=int, default=2)
    parser.add_argument("--name", default="engines_judged")
    args = parser.parse_args(argv)
    settings = dict(harness.provenance(seed=args.seed), **vars(args))
    puzzles, matches = [], []
    if "puzzles" in args.parts:
        run_puzzles(args, puzzles)
    if "stockfish" in args.parts:
        run_stockfish(args, matches)
    if "gnugo" in args.parts:
        run_gnugo(args, matches)
    print(harness.markdown_table(MATCH_COLUMNS, matches))
    harness.report(args.name, "Chess puzzles judged by python-chess; matches against "
                   "Stockfish and GNU Go", PUZZLE_COLUMNS, puzzles, settings,
                   not args.no_save, matches=matches)


if __name__ == "__main__":
    main()
