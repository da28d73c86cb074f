"""A trained Connect Four agent on the solver-labelled positions, by budget.

    python -m experiments.connect_four_agent --run-dir runs/connect_four_cpu \
        --simulations 200 800 3200 --uct-simulations 4000

Move accuracy (the chosen column keeps the game-theoretic value, judged by
the perfect solver bitbully) on the 1000 positions of a set under
benchmarks/data/ (`--set random_play`, the default: train.py's set, random
games cut at plies 4-30; `--set mixed`: every stage, random and near-perfect
games), overall, by stage and by difficulty (one, 2-3, 4-6 optimal moves), of

- the raw policy network (its legal argmax, no search);
- the agent's search (greedy) at each `--simulations`, with the run's
  policy or each of `--policies` (names of `training.policies.POLICIES`;
  a "+solver" suffix turns on the MCTS-solver, which proves wins and losses
  in the tree): the same network searched another way;
- the network's value alone, one ply deep: the move whose resulting position
  the value head rates worst for the opponent;
- UCT with one random playout per leaf at `--uct-simulations` (no network),
  for scale;
- with `--first-player-games N`: N games of each search moving first against
  the solver (a random move among its best), and in each game the ply of the
  search's first move that gives up the win (the solver judges every move it
  makes): whether the first-player games are lost at the first move, in the
  opening or later.

If accuracy keeps rising with the budget, the search is what limits the
agent at the training budget; if it flattens, the network (its policy and
value) is. Saved to benchmarks/results/connect_four_agent-<backend>.json with
the run's sessions (commit, command) and this command's provenance.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Dict

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import harness
from experiments.connect_four_positions import SETS
from envs import connect_four_solver as solver
from mcts_jax import evaluators
from training import arena
from training.policies import POLICIES
from training.agent import Agent
from training import checkpoint as checkpoint_lib


def value_one_ply(agent: Agent, states, legal: np.ndarray) -> np.ndarray:
    """[N] columns: for each legal move, the value head on the position after
    it (for the opponent, who is then to move; a finished game counts as its
    result), and the move whose value is lowest for the opponent."""
    game = agent.game
    num = legal.shape[0]
    scores = np.full(legal.shape, np.inf)
    for column in range(legal.shape[1]):
        moved = game.step(states, jnp.full((num,), column, jnp.int32), jax.random.key(0))
        _, value = agent.policy_value(moved)
        # the opponent's view: after a winning move the game is over and the
        # mover's reward is +1, the opponent's -1
        mover = states.current_player
        terminal = np.asarray(game.is_terminal(moved))
        reward = np.asarray(jnp.take_along_axis(moved.rewards, mover[:, None], axis=1)[:, 0])
        opponent_value = np.where(terminal, -reward, np.asarray(value))
        scores[:, column] = np.where(legal[:, column], opponent_value, np.inf)
    return np.argmin(scores, axis=1)


def first_player_lines(game, player, variables, rng_key, num_games: int) -> Dict[str, Any]:
    """`num_games` games of `player` (an `arena` player) moving first against
    `SolverPlayer`. Returns its wins, draws and losses and `first_mistake`:
    {ply: games} of the ply (0, 2, 4, ...) of the player's first move that
    does not keep the position's value (a first player starts from a won
    position), "none" for the games without one (all won).

    The games are an `arena.play_match` of 2 x `num_games` (half with each
    side first): the first half are these games, each of the player's moves
    there judged by the solver after its ply (`on_ply`)."""
    first_mistake = np.full(num_games, -1)

    def judge(ply, states, actions, a_moved):
        moved = np.asarray(a_moved)[:num_games]  # rows where the player moves first
        if not moved.any():
            return
        mine = jax.tree.map(lambda x: x[:num_games], states)
        live = ~np.asarray(game.is_terminal(mine))
        _, optimal = solver.solve_states(mine)
        kept = optimal[np.arange(num_games), np.asarray(actions)[:num_games]]
        first_mistake[moved & live & ~kept & (first_mistake < 0)] = ply

    result = arena.play_match(game, player, variables, solver.SolverPlayer(), None, rng_key,
                              2 * num_games, on_ply=judge)
    wins, draws, losses = result.first
    plies, counts = np.unique(first_mistake, return_counts=True)
    return dict(wins=wins, draws=draws, losses=losses,
                first_mistake={("none" if p < 0 else str(p)): int(c)
                               for p, c in zip(plies, counts)})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True, help="a train.py Connect Four run folder")
    parser.add_argument("--simulations", type=int, nargs="+", default=[200, 800, 3200])
    parser.add_argument("--policies", nargs="+", default=None,
                        help="search policies to compare (default: the run's; "
                             "name+solver adds the MCTS-solver)")
    parser.add_argument("--uct-simulations", type=int, nargs="*", default=[4000])
    parser.add_argument("--first-player-games", type=int, default=0,
                        help="games of each search moving first against the solver, with "
                             "the ply of its first losing move (default 0: none)")
    parser.add_argument("--positions", type=int, default=1000)
    parser.add_argument("--set", choices=sorted(SETS), default="random_play",
                        help="the labelled positions (experiments.connect_four_positions)")
    parser.add_argument("--name", default="connect_four_agent")
    args = parser.parse_args(argv)

    for label in args.policies or []:  # before any work
        name, _, extra = label.partition("+")
        if name not in POLICIES or extra not in ("", "solver"):
            parser.error(f"--policies: {label!r} is not a policy name of {sorted(POLICIES)} "
                         f"with an optional '+solver'")
    agent = Agent.load(args.run_dir)
    positions = solver.load_positions(SETS[args.set], limit=args.positions)
    states = solver.states_from_moves(positions["moves"], agent.game)
    legal = np.asarray(positions["legal"])
    rows, lines = [], []

    def score(player: str, budget, chosen, seconds):
        accuracy = solver.move_accuracy(chosen, positions)
        rows.append(dict(player=player, simulations=budget, seconds=round(seconds, 1),
                         **{k: round(v, 4) for k, v in accuracy.items()}))
        print(rows[-1], flush=True)

    tick = time.perf_counter()
    logits, _ = agent.policy_value(states)
    score("raw policy network", 0, solver.legal_argmax(logits, legal), time.perf_counter() - tick)
    tick = time.perf_counter()
    score("value head, one ply", 0, value_one_ply(agent, states, legal),
          time.perf_counter() - tick)
    for label in args.policies or [agent.config.policy]:
        name, _, extra = label.partition("+")
        for budget in args.simulations:
            player = arena.SearchPlayer(
                agent.model.evaluator, name, budget, greedy=True,
                max_num_considered_actions=agent.config.max_num_considered_actions,
                options=(("solver", True),) if extra else ())
            tick = time.perf_counter()
            chosen = jax.jit(player, static_argnums=2)(agent.variables, jax.random.key(budget),
                                                       agent.game, states)
            score(f"search ({label})", budget, np.asarray(chosen), time.perf_counter() - tick)
            if args.first_player_games:
                tick = time.perf_counter()
                line = first_player_lines(agent.game, player, agent.variables,
                                          jax.random.key(budget + 2), args.first_player_games)
                lines.append(dict(player=f"search ({label})", simulations=budget, **line,
                                  seconds=round(time.perf_counter() - tick, 1)))
                print(lines[-1], flush=True)
    for budget in args.uct_simulations:
        uct = arena.SearchPlayer(evaluators.RandomPlayouts(num_playouts=1), "uct", budget)
        tick = time.perf_counter()
        chosen = uct(None, jax.random.key(budget + 1), agent.game, states)
        score("UCT, 1 random playout per leaf", budget, np.asarray(chosen),
              time.perf_counter() - tick)
    sessions = checkpoint_lib.read_metrics(os.path.join(args.run_dir, "sessions.jsonl"))
    settings = dict(harness.provenance(seed=None), keys="search: key(budget), UCT: key(budget + 1)",
                    run_dir=args.run_dir, iteration=agent.iteration,
                    run_sessions=sessions, positions=len(positions["moves"]),
                    position_set=args.set,
                    simulations=args.simulations, uct_simulations=args.uct_simulations,
                    policies=args.policies or [agent.config.policy],
                    first_player_games=args.first_player_games,
                    first_player_keys="game: key(budget + 2)")
    harness.report(args.name, f"Connect Four agent of {args.run_dir} (iteration "
                   f"{agent.iteration}) on {len(positions['moves'])} solver-labelled positions",
                   ["player", "simulations", "all", "opening", "middle", "late", "hard",
                    "medium", "easy", "seconds"],
                   rows, settings, first_player=lines)
    if lines:
        print("\nMoving first against the solver (first_mistake: {ply of the search's first "
              "move that gives up the win: games})")
        print(harness.markdown_table(["player", "simulations", "wins", "draws", "losses",
                                      "first_mistake", "seconds"], lines))


if __name__ == "__main__":
    main()
