"""pgx's stochastic games searched with chance nodes: 2048 and backgammon.

    python -m experiments.stochastic_games --section 2048 --simulations 16 64 200
    python -m experiments.stochastic_games --section backgammon --games 500

2048: `stochastic_muzero_policy` with random playouts (no network), no root
noise, the most visited move played, unbounded returns (`value_range=None`),
on G games played to the end (or the ply cap) with pgx's own random tiles.
Per budget: mean and median score, the share of games that reached the 2048
tile (and 1024, 512), moves per game, and the search's time per move (all G
games advance together, so a move's time covers G searches).

Backgammon: the same search (two players, dice as chance nodes) against a
uniformly random player, half the games on each side; the win rate and the
mean points (+-1, 2 for a gammon, 3 for a backgammon) per game. Each ply,
only the games where the search is to move are searched (gathered into one
batch), and the time per searched position is the search's time over the
positions searched (batched, so it falls as the batch grows).

Results: results/stochastic_games_<section>-<device>.json with commit and
command.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Dict, List

import jax
import jax.numpy as jnp
import numpy as np

import envs
import mcts_jax
from benchmarks import harness
from mcts_jax import evaluators


def search_player(game, num_simulations: int, playout_length: int, value_range,
                  heuristic_at_cutoff: bool = False):
    """A jitted (key, states) -> actions [G] of the stochastic search."""
    evaluator = evaluators.RandomPlayouts(max_length=playout_length,
                                          heuristic_at_cutoff=heuristic_at_cutoff)
    decision_fn = game.decision_recurrent_fn(evaluator)
    chance_fn = game.chance_recurrent_fn(evaluator)

    @jax.jit
    def act(key, states):
        root_key, search_key = jax.random.split(key)
        root, invalid = game.root(None, root_key, states, evaluator)
        out = mcts_jax.stochastic_muzero_policy(
            None, search_key, root, decision_fn, chance_fn, num_simulations,
            invalid_actions=invalid, dirichlet_fraction=0.0, temperature=0.0,
            stop_at_terminal=True, value_range=value_range, checks="off")
        return out.action

    return act


# Backgammon: the positions searched in one step are padded to a multiple of
# this many rows (a compilation per padded size; with 500 games, at most 16).
SEARCH_BUCKET = 32


def random_actions(key, game, states):
    legal = game.legal_actions(states)
    return jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)


def play_2048(num_simulations: int, num_games: int, playout_length: int, seed: int,
              max_plies: int) -> Dict[str, Any]:
    game = envs.make_chance_game("2048")
    act = search_player(game, num_simulations, playout_length, None)
    step = jax.jit(game.step)
    key = jax.random.key(seed)
    states = game.init(jax.random.fold_in(key, 0), num_games)
    score = np.zeros(num_games)
    moves = np.zeros(num_games, np.int64)
    search_seconds, plies = 0.0, 0
    jax.block_until_ready(act(key, states))  # compile
    while plies < max_plies and not bool(np.all(np.asarray(game.is_terminal(states)))):
        key, act_key, step_key = jax.random.split(key, 3)
        start = time.perf_counter()
        actions = jax.block_until_ready(act(act_key, states))
        search_seconds += time.perf_counter() - start
        playing = ~np.asarray(game.is_terminal(states))
        states = step(states, actions, step_key)
        score += np.where(playing, np.asarray(states.rewards[:, 0]), 0.0)
        moves += playing
        plies += 1
    best_tile = 2 ** np.asarray(states._board).max(axis=-1)  # log2 of each tile
    return dict(simulations=num_simulations, games=num_games,
                mean_score=round(float(score.mean()), 1),
                median_score=round(float(np.median(score)), 1),
                reached_2048=round(float((best_tile >= 2048).mean()), 3),
                reached_1024=round(float((best_tile >= 1024).mean()), 3),
                reached_512=round(float((best_tile >= 512).mean()), 3),
                best_tile=int(best_tile.max()),
                mean_moves=round(float(moves.mean()), 1),
                ms_per_move=round(1e3 * search_seconds / max(plies, 1), 1),
                unfinished=int((~np.asarray(game.is_terminal(states))).sum()),
                playout_length=playout_length)


def play_backgammon(num_simulations: int, num_games: int, playout_length: int,
                    seed: int, max_plies: int, heuristic_at_cutoff: bool) -> Dict[str, Any]:
    game = envs.make_chance_game("backgammon")
    act = search_player(game, num_simulations, playout_length, None, heuristic_at_cutoff)
    step = jax.jit(game.step)
    random_act = jax.jit(lambda key, states: random_actions(key, game, states))
    key = jax.random.key(seed)
    states = game.init(jax.random.fold_in(key, 0), num_games)
    # Games 0 .. G/2 - 1: the search is player 0; the others: player 1.
    search_player_id = (np.arange(num_games) >= num_games // 2).astype(np.int32)
    points = np.zeros(num_games)
    plies, search_seconds, searched_positions = 0, 0.0, 0
    compiled: Dict[int, Any] = {}
    while plies < max_plies and not bool(np.all(np.asarray(game.is_terminal(states)))):
        key, act_key, random_key, step_key = jax.random.split(key, 4)
        playing = ~np.asarray(game.is_terminal(states))
        actions = np.array(random_act(random_key, states))
        # Only the games where the search is to move are searched, gathered
        # into a batch padded to a multiple of SEARCH_BUCKET rows (one
        # compilation per padded size, not per count).
        rows = np.flatnonzero(playing & (np.asarray(game.current_player(states))
                                         == search_player_id))
        if rows.size:
            padded = min(-(-rows.size // SEARCH_BUCKET) * SEARCH_BUCKET, num_games)
            gather = jnp.asarray(np.resize(rows, padded))
            batch = jax.tree.map(lambda x: x[gather], states)
            if padded not in compiled:  # compiled outside the timed search
                compiled[padded] = act.lower(act_key, batch).compile()
            start = time.perf_counter()
            searched = np.asarray(compiled[padded](act_key, batch))
            search_seconds += time.perf_counter() - start
            searched_positions += rows.size
            actions[rows] = searched[:rows.size]
        states = step(states, jnp.asarray(actions), step_key)
        rewards = np.asarray(states.rewards)
        points += np.where(playing, rewards[np.arange(num_games), search_player_id], 0.0)
        plies += 1
    finished = np.asarray(game.is_terminal(states))
    return dict(simulations=num_simulations, games=num_games,
                search_win_rate=round(float((points > 0).mean()), 3),
                search_wins_first_half=round(float((points[:num_games // 2] > 0).mean()), 3),
                search_wins_second_half=round(float((points[num_games // 2:] > 0).mean()), 3),
                mean_points=round(float(points.mean()), 3),
                unfinished=int((~finished).sum()), plies=plies,
                searched_positions=searched_positions,
                ms_per_searched_position=round(1e3 * search_seconds / max(searched_positions, 1),
                                               2),
                playout_length=playout_length, heuristic_at_cutoff=heuristic_at_cutoff)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--section", choices=("2048", "backgammon"), required=True)
    parser.add_argument("--simulations", type=int, nargs="+", default=None)
    parser.add_argument("--games", type=int, default=None)
    parser.add_argument("--playout-length", type=int, default=None,
                        help="moves per random playout before it is cut (2048: the points "
                             "of that many moves; backgammon: 0 points if unfinished)")
    parser.add_argument("--max-plies", type=int, default=None)
    parser.add_argument("--heuristic-at-cutoff", action="store_true",
                        help="a playout cut at --playout-length scores the game's heuristic "
                             "(backgammon: the pip-count race) instead of 0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    rows: List[Dict[str, Any]] = []
    if args.section == "2048":
        simulations = args.simulations or [16, 64, 200]
        for num_simulations in simulations:
            rows.append(play_2048(num_simulations, args.games or 16, args.playout_length or 64,
                                  args.seed, args.max_plies or 8192))
            print(rows[-1], flush=True)
        columns = ["simulations", "games", "mean_score", "median_score", "reached_2048",
                   "reached_1024", "reached_512", "best_tile", "mean_moves", "ms_per_move",
                   "unfinished", "playout_length"]
        title = "2048: stochastic search with random playouts (no network)"
    else:
        simulations = args.simulations or [32]
        for num_simulations in simulations:
            rows.append(play_backgammon(num_simulations, args.games or 500,
                                        args.playout_length or 1024, args.seed,
                                        args.max_plies or 4096, args.heuristic_at_cutoff))
            print(rows[-1], flush=True)
        columns = ["simulations", "games", "search_win_rate", "search_wins_first_half",
                   "search_wins_second_half", "mean_points", "unfinished", "plies",
                   "searched_positions", "ms_per_searched_position", "playout_length",
                   "heuristic_at_cutoff"]
        title = "Backgammon: stochastic search with random playouts against a random player"
    settings = dict(**harness.provenance(), **vars(args))
    harness.report(f"stochastic_games_{args.section}", title, columns, rows, settings,
                   save_results=not args.no_save)


if __name__ == "__main__":
    main()
