"""Our searches judged by outside references: chess puzzles checked with
python-chess, matches against Stockfish and GNU Go (engines/opponents.py).

Parts (`--parts`):
- "puzzles": the solve rate of each recipe (`RECIPES`) by simulations on
  the sets of `puzzle_sets()`: the mates in one of tests/chess_positions.py
  (solved: python-chess says the move mates), the mates in two of
  benchmarks/data/mate_in_two.json (solved: the move is one of the verified
  mating first moves), and the Stockfish-verified sets of
  experiments/chess_puzzles.json ("sf_mate_in_two", "sf_mate_in_three",
  "sf_tactics"; solved: the move is one of the position's `solutions`,
  experiments/chess_puzzle_positions.py). All positions of the chosen sets
  are searched as one batch per recipe and simulation count
  (`uct_expand_all_minimax` gives every child of an expanded leaf its own
  depth-1 minimax; before `Minimax` stepped its moves in chunks and its
  rows in passes, XLA asked for 632 GB at 75 positions).
- "stockfish": a recipe without a network (`--chess-recipe`) against
  Stockfish at `--skill-level` with `--stockfish-nodes` per move, in the
  arena (half the games with each colour, `--opening-moves` random first
  plies for varied openings); Elo and its 95% interval (`elo_interval`).
- "stockfish_time": our UCI engine (engines/uci.py, `--uci-options`) against
  Stockfish at `--skill-level`, both at `--movetime` seconds a move
  (`go movetime`), both pinned to one CPU (`--cpu`, taskset) with one
  thread; from each of `OPENINGS` once with each colour (`--games` in
  all). A game still going at `--max-plies` is adjudicated by Stockfish at
  full strength (depth 12): a side at least 400 cp ahead wins, otherwise a
  draw. The time each side really took a move is recorded; our engine
  checks its clock between chunks of simulations and overshoots, so it is
  told `--movetime` less its running mean overshoot, which brings its
  time a move near Stockfish's (the games table gives both). `--time-stockfish-nodes` gives Stockfish a
  node budget instead (ours keeps `--movetime`).
- "gnugo": UCT with random playouts (`--go-simulations`, one position per
  search) against GNU Go `--gnugo-level` on 9x9, in the arena.

    python -m experiments.engines_judged --parts puzzles --simulations 32 128
    python -m experiments.engines_judged --parts gnugo --games 4
    python -m experiments.engines_judged --parts stockfish_time --games 20 --movetime 0.5
"""

from __future__ import annotations

import json
import os
import sys
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
# "seconds": the whole batch's search (all sets), compile included.
PUZZLE_COLUMNS = ["recipe", "set", "positions", "simulations", "solved", "solve_rate",
                  "seconds"]
MATCH_COLUMNS = ["ours", "opponent", "games", "wins", "draws", "losses", "elo", "elo_low",
                 "elo_high", "seconds"]


PUZZLES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chess_puzzles.json")


def puzzle_sets():
    """{set name: [(FEN, the set of solving moves, or None: any mating
    move)]}: `chess_puzzles()` and the Stockfish-verified sets of
    experiments/chess_puzzles.json, prefixed "sf_"."""
    sets = chess_puzzles()
    if os.path.exists(PUZZLES_PATH):
        with open(PUZZLES_PATH) as f:
            for name, positions in json.load(f)["sets"].items():
                sets["sf_" + name] = [(p["fen"], set(p["solutions"])) for p in positions]
    return sets


def solve(recipe, fens, simulations, seed):
    """The recipe's move (UCI) in each (FEN, solutions) of `fens` and
    whether it solves it, all searched as one batch."""
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
    moves, solved = [], []
    for row, (fen, solutions) in enumerate(fens):
        state = jax.tree.map(lambda x: x[row], states)
        move = chess_tools.action_to_uci(state, int(out.action[row]))
        moves.append(move)
        if solutions is None:
            board = chess.Board(fen)
            board.push_uci(move)
            solved.append(board.is_checkmate())
        else:
            solved.append(move in solutions)
    return moves, solved


def run_puzzles(args, rows, moves_played):
    sets = {name: fens for name, fens in puzzle_sets().items() if name in args.sets}
    batch = [position for fens in sets.values() for position in fens]
    for recipe in args.recipes:
        for simulations in args.simulations:
            started = time.perf_counter()
            moves, solved = solve(recipe, batch, simulations, args.seed)
            seconds = round(time.perf_counter() - started, 1)
            at = 0
            for name, fens in sets.items():
                count = int(sum(solved[at:at + len(fens)]))
                at += len(fens)
                row = dict(recipe=recipe, set=name, positions=len(fens),
                           simulations=simulations, solved=count,
                           solve_rate=round(count / len(fens), 3), seconds=seconds)
                print(row, flush=True)
                rows.append(row)
                moves_played.append(dict(recipe=recipe, set=name, simulations=simulations,
                                         moves=moves[at - len(fens):at]))


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


# Varied openings for the equal-time match, each played once with each
# colour: common first moves, 2 to 4 plies (UCI).
OPENINGS = [
    "e2e4 e7e5", "d2d4 d7d5", "e2e4 c7c5", "c2c4 e7e5", "g1f3 d7d5",
    "e2e4 e7e6", "e2e4 c7c6", "d2d4 g8f6 c2c4 e7e6", "e2e4 e7e5 g1f3 b8c6",
    "d2d4 d7d5 c2c4 c7c6", "e2e4 d7d5", "d2d4 g8f6 c2c4 g7g6", "e2e4 g7g6",
    "b1c3 d7d5", "f2f4 d7d5",
]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GAME_COLUMNS = ["game", "opening", "ours_white", "result", "plies", "end", "ours_s_per_move",
                "stockfish_s_per_move"]


def _uci_engine(command, cpu, options):
    import chess.engine

    if cpu is not None:
        command = ["taskset", "-c", str(cpu), *command]
    env = dict(os.environ, PYTHONPATH=ROOT)
    engine = chess.engine.SimpleEngine.popen_uci(command, timeout=600, cwd=ROOT, env=env)
    engine.configure(options)
    engine.ping()     # our engine compiles its search here
    return engine


def adjudicate(judge, board):
    """1 / 0 / 0.5 for White: Stockfish's depth-12 score, 400 cp a win."""
    import chess.engine

    score = judge.analyse(board, chess.engine.Limit(depth=12))["score"].white()
    cp = score.score(mate_score=10000)
    return 1.0 if cp >= 400 else 0.0 if cp <= -400 else 0.5


def play_timed_game(ours, stockfish, judge, opening, ours_white, movetime, max_plies,
                    stockfish_nodes=None):
    """One game at `movetime` seconds a move for both (Stockfish:
    `stockfish_nodes` a move instead, when given); (our score, plies, how it
    ended, our and Stockfish's mean seconds a move)."""
    import chess
    import chess.engine

    board = chess.Board()
    for move in opening.split():
        board.push_uci(move)
    took = {True: [], False: []}     # ours?
    game_id = object()
    margin = 0.0   # our engine's mean overshoot so far, taken off the time it is told
    end = None
    while end is None:
        if board.is_game_over(claim_draw=True):
            end = board.outcome(claim_draw=True).termination.name.lower()
            white = {True: 1.0, False: 0.0, None: 0.5}[board.outcome(claim_draw=True).winner]
        elif board.ply() >= max_plies:
            end, white = "adjudicated", adjudicate(judge, board)
        else:
            ours_to_move = board.turn == (chess.WHITE if ours_white else chess.BLACK)
            if ours_to_move:
                limit = chess.engine.Limit(time=max(0.05, movetime - margin))
            elif stockfish_nodes:
                limit = chess.engine.Limit(nodes=stockfish_nodes)
            else:
                limit = chess.engine.Limit(time=movetime)
            started = time.perf_counter()
            try:
                move = (ours if ours_to_move else stockfish).play(board, limit,
                                                                  game=game_id).move
            except chess.engine.EngineError:    # an illegal or missing move loses
                move = None
            took[ours_to_move].append(time.perf_counter() - started)
            if ours_to_move:
                overshoot = took[True][-1] - limit.time
                margin += 0.3 * (overshoot - margin) if len(took[True]) > 1 else overshoot
            if move is None or not board.is_legal(move):
                end, white = "illegal move", 0.0 if board.turn == chess.WHITE else 1.0
            else:
                board.push(move)
    score = white if ours_white else 1.0 - white
    mean = lambda xs: round(float(np.mean(xs)), 3) if xs else None  # noqa: E731
    return score, board.ply(), end, mean(took[True]), mean(took[False])


def run_stockfish_time(args, rows, games):
    binary = find_binary("stockfish")
    if binary is None:
        raise SystemExit("stockfish is not installed (apt-get install stockfish)")
    options = dict(option.split("=", 1) for option in args.uci_options)
    ours = _uci_engine([sys.executable, "-m", "engines.uci"], args.cpu, options)
    stockfish = _uci_engine([binary], args.cpu, {"Threads": 1, "Hash": 16,
                                                 "Skill Level": args.skill_level})
    judge = _uci_engine([binary], None, {"Threads": 1})
    started = time.perf_counter()
    wins = draws = losses = 0
    try:
        for number in range(args.games):
            opening = OPENINGS[(number // 2) % len(OPENINGS)]
            ours_white = number % 2 == 0
            score, plies, end, ours_s, theirs_s = play_timed_game(
                ours, stockfish, judge, opening, ours_white, args.movetime, args.max_plies,
                args.time_stockfish_nodes)
            wins, draws, losses = wins + (score == 1), draws + (score == 0.5), \
                losses + (score == 0)
            games.append(dict(game=number, opening=opening, ours_white=ours_white,
                              result=score, plies=plies, end=end, ours_s_per_move=ours_s,
                              stockfish_s_per_move=theirs_s))
            print(games[-1], flush=True)
    finally:
        for engine in (ours, stockfish, judge):
            engine.quit()
    elo, low, high = (_elo_text(v) for v in elo_interval(wins, draws, losses))
    settings = ", ".join(f"{k} {v}" for k, v in options.items())
    budget = (f"{args.time_stockfish_nodes} nodes" if args.time_stockfish_nodes
              else f"{args.movetime} s")
    rows.append(dict(ours=f"UCI engine ({settings}), {args.movetime} s a move",
                     opponent=f"Stockfish 15.1 Skill Level {args.skill_level}, "
                              f"{budget} a move",
                     games=len(games), wins=wins, draws=draws, losses=losses, elo=elo,
                     elo_low=low, elo_high=high,
                     seconds=round(time.perf_counter() - started, 1)))
    print(rows[-1], flush=True)


def run_gnugo(args, rows):
    binary = find_binary("gnugo")
    if binary is None:
        raise SystemExit("gnugo is not installed (apt-get install gnugo)")
    paths = (("simulations_per_step", args.go_paths),) if args.go_paths > 1 else ()
    ours = arena.SearchPlayer(evaluators.RandomPlayouts(num_playouts=1), "uct",
                              args.go_simulations, options=paths)
    opponent = GtpPlayer(binary, level=args.gnugo_level)
    started = time.perf_counter()
    result = arena.play_match(envs.make("go_9x9"), ours, None, opponent, None,
                              jax.random.key(args.seed), args.games,
                              opening_moves=args.opening_moves)
    close_all()
    leaves = f", {args.go_paths} leaves a step" if args.go_paths > 1 else ""
    rows.append(match_row(f"uct, random playouts, {args.go_simulations} simulations{leaves}",
                          f"GNU Go 3.8 level {args.gnugo_level}", result, started))
    print(rows[-1], flush=True)


def main(argv=None):
    parser = harness.parser(__doc__, seed=True)
    parser.add_argument("--parts", nargs="+", default=["puzzles"],
                        choices=["puzzles", "stockfish", "stockfish_time", "gnugo"])
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--sets", nargs="+", default=["mate_in_one", "mate_in_two"],
                        choices=["mate_in_one", "mate_in_two", "sf_mate_in_two",
                                 "sf_mate_in_three", "sf_tactics"])
    parser.add_argument("--simulations", nargs="+", type=int, default=[32, 128])
    parser.add_argument("--chess-recipe", default="puct_minimax", choices=list(RECIPES))
    parser.add_argument("--chess-simulations", type=int, default=64)
    parser.add_argument("--skill-level", type=int, default=0)
    parser.add_argument("--stockfish-nodes", type=int, default=100)
    parser.add_argument("--max-plies", type=int, default=200)
    parser.add_argument("--movetime", type=float, default=0.5,
                        help="stockfish_time: seconds a move, both sides")
    parser.add_argument("--uci-options", nargs="*",
                        default=["Policy=alphazero", "Evaluator=minimax", "Chunk=2"],
                        help="stockfish_time: our engine's UCI options, NAME=VALUE")
    parser.add_argument("--time-stockfish-nodes", type=int, default=None,
                        help="stockfish_time: Stockfish searches this many nodes a move "
                             "instead of --movetime (ours keeps --movetime)")
    parser.add_argument("--cpu", type=int, default=0,
                        help="stockfish_time: the CPU both engines are pinned to")
    parser.add_argument("--go-simulations", type=int, default=64)
    parser.add_argument("--go-paths", type=int, default=1,
                        help="gnugo: leaves searched in parallel per step "
                             "(simulations_per_step; 1: one path a step)")
    parser.add_argument("--gnugo-level", type=int, default=0)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--opening-moves", type=int, default=2)
    parser.add_argument("--name", default="engines_judged")
    args = parser.parse_args(argv)
    settings = dict(harness.provenance(seed=args.seed), **vars(args))
    puzzles, moves_played, matches, games = [], [], [], []
    if "puzzles" in args.parts:
        run_puzzles(args, puzzles, moves_played)
    if "stockfish" in args.parts:
        run_stockfish(args, matches)
    if "stockfish_time" in args.parts:
        run_stockfish_time(args, matches, games)
    if "gnugo" in args.parts:
        run_gnugo(args, matches)
    print(harness.markdown_table(MATCH_COLUMNS, matches))
    harness.report(args.name, "Chess puzzles judged by python-chess and Stockfish; matches against "
                   "Stockfish and GNU Go", PUZZLE_COLUMNS, puzzles, settings,
                   not args.no_save, matches=matches, games=games,
                   puzzle_moves=moves_played)


if __name__ == "__main__":
    main()
