"""Evaluation during and after training, batched (`training.arena`).

The agent is the network searched with the run's policy, greedy (no root
noise), at `eval_simulations` (periodic) or `final_simulations` (end).
Opponents:
  - random: uniformly random legal moves;
  - uct: UCT with `uct_playouts` random playouts per leaf, at
    `uct_simulations` (0: the agent's budget);
  - perfect (tic-tac-toe): uniformly random among the optimal moves
    (`envs.perfect_play`); plus `policy_optimal`, the fraction of the 4520
    reachable positions where the raw network's legal argmax is optimal;
  - solver (Connect Four, when bitbully is installed): uniformly random
    among the moves the perfect solver finds optimal
    (`envs.connect_four_solver.SolverPlayer`), `solver_games` games of which
    half with the agent moving first (a perfect first player wins them all:
    `vs_solver_first_*`; as second the agent always loses, kept as
    `vs_solver_as_second`); plus move accuracy on the first
    `solver_positions` positions of the random-play set
    (`connect_four_solver.RANDOM_PLAY_PATH`: random games cut at plies
    4-30; the move keeps the game-theoretic value), of the raw network
    (legal argmax, `solver_policy_accuracy`) and of the agent's search
    (`solver_search_accuracy`), overall, by stage (`_opening`, `_middle`,
    `_late`) and by difficulty (`_hard`, `_medium`, `_easy`: one, 2-3, 4-6
    optimal moves), and at the end by both (`_opening_hard`, ...);
  - 2048 (one player): no opponent; `eval_games` games played to the end
    (or --max-game-length): the mean and median score and the share of
    games whose best tile reached 512, 1024, 2048 (`score_*`, `tile_*`),
    and at the end the same for a uniformly random player beside it;
  - backgammon: random and UCT (open loop: each simulation steps with a
    sampled roll) as above, matches played by whose turn it is; the agent
    searches with `stochastic_muzero_policy` (chance nodes for the dice);
  - earlier snapshots (Elo): the current network against the last few
    snapshots, `elo_opening_moves` random plies opening each game; ratings by
    maximum likelihood over every match of the run, the first snapshot
    (iteration 0, the untrained network) rated 0.
Every figure is from the agent's point of view.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional

import jax
import numpy as np

import envs
from envs import connect_four_solver, perfect_play
from mcts_jax import evaluators
from training import arena
from training.config import EvaluationConfig


class Evaluation:
    """The evaluation suite of one run (its players are built once, so every
    match compiles once per shape).

    agent / final_agent: the arena players of the periodic and the
    end-of-run evaluation (`training.build.Parts`: the algorithm's greedy
    search at `eval_simulations` / `final_simulations`); model: the raw
    network (`predict`), judged on its own where the game has a judge;
    config: the run's evaluation settings alone (`TrainConfig.evaluation`).
    """

    def __init__(self, config: EvaluationConfig, game, model: Any, *, agent: Any,
                 final_agent: Any, log: Callable[[str], None] = print):
        self.config = config
        self.game = game
        self.model = model
        self.stochastic = isinstance(game, envs.ChanceGame)
        self.one_player = getattr(game, "num_players", 2) == 1
        self.agent = agent
        self.final_agent = final_agent
        playouts = evaluators.RandomPlayouts(
            num_playouts=config.uct_playouts,
            max_length=config.uct_playout_length or config.max_game_length or 512,
            heuristic_at_cutoff=config.uct_playout_length > 0)
        # UCT's exploration constant is for values in [-1, 1]: backgammon's
        # +-1 to +-3 are min-max normalised (value_range None).
        uct_options = (("value_range", None),) if self.stochastic else ()
        self.uct = arena.SearchPlayer(playouts, "uct",
                                      config.uct_simulations or config.eval_simulations,
                                      options=uct_options)
        self.final_uct = arena.SearchPlayer(playouts, "uct", config.final_simulations,
                                            options=uct_options)
        self.max_plies = config.max_game_length or None
        self._predict = jax.jit(model.predict)
        self.positions = (perfect_play.reachable_positions()
                          if game.name == "tic_tac_toe" else None)
        self.benchmark = self._solver_benchmark(log) if game.name == "connect_four" else None
        self._benchmark_states = {}
        self._empty_board = None  # pgx state [1] of the empty board (Connect Four)

    # ---- Connect Four against the perfect solver ------------------------------------

    def _solver_benchmark(self, log) -> Optional[Dict[str, Any]]:
        """The benchmark positions (as many as the run uses), or None with a
        one-line notice when the solver or the file is missing."""
        config = self.config
        wanted = max(config.solver_positions, config.final_solver_positions)
        if not (wanted or config.solver_games):
            return None
        if not connect_four_solver.available():
            log("connect_four: bitbully is not installed, no evaluation against the perfect "
                "solver (pip install 'mcts_jax[eval]')")
            return None
        path = connect_four_solver.RANDOM_PLAY_PATH
        if not os.path.exists(path):
            log(f"connect_four: no benchmark file at {path}; only games against the perfect "
                f"solver")
            return {}
        return connect_four_solver.load_positions(path, limit=max(wanted, 1))

    def _benchmark_slice(self, count: int):
        """(positions, pgx states) of the first `count` benchmark positions
        (states built once per count)."""
        positions = {k: (v[:count] if k != "meta" else v) for k, v in self.benchmark.items()}
        if count not in self._benchmark_states:
            self._benchmark_states[count] = connect_four_solver.states_from_moves(
                positions["moves"], self.game)
        return positions, self._benchmark_states[count]

    def solver_accuracy(self, variables, key, agent, count: int,
                        prefix: str = "", cells: bool = False) -> Dict[str, Any]:
        """Move accuracy on the first `count` benchmark positions of the raw
        network (legal argmax) and of `agent`'s search, overall, by stage and
        by difficulty (`cells`: by both as well)."""
        if not self.benchmark or count < 1:
            return {}
        positions, states = self._benchmark_slice(count)
        logits, _ = self._predict(variables, states.observation)
        out: Dict[str, Any] = {f"{prefix}solver_positions": len(positions["moves"])}
        choices = dict(policy=connect_four_solver.legal_argmax(logits, positions["legal"]),
                       search=np.asarray(agent(variables, key, self.game, states)))
        for name, chosen in choices.items():
            for group, accuracy in connect_four_solver.move_accuracy(chosen, positions,
                                                                     cells).items():
                suffix = "" if group == "all" else f"_{group}"
                out[f"{prefix}solver_{name}_accuracy{suffix}"] = round(accuracy, 4)
        return out

    def solver_match(self, agent, variables, key, num_games: int,
                     prefix: str = "") -> Dict[str, Any]:
        """`num_games` against the perfect solver, half with the agent first."""
        if self.benchmark is None or num_games < 2:
            return {}
        result = self.match(agent, variables, connect_four_solver.SolverPlayer(), None, key,
                            num_games)
        wins, draws, losses = result.first
        return {f"{prefix}vs_solver_first_wins": wins, f"{prefix}vs_solver_first_draws": draws,
                f"{prefix}vs_solver_first_losses": losses,
                f"{prefix}vs_solver_first_score": round((wins + 0.5 * draws)
                                                        / max(1, wins + draws + losses), 4),
                f"{prefix}vs_solver_as_second": list(result.second)}

    def first_move(self, agent, variables, key, prefix: str = "") -> Dict[str, Any]:
        """The agent's move from the empty board (`first_move`, a column) and
        the game-theoretic value it keeps for the first player
        (`first_move_value`: +1 only for the centre column, the one winning
        move; 0 or -1 for the others). A first player that wins against the
        solver needs it; it decides the agent's games as first player."""
        if self.benchmark is None:
            return {}
        if self._empty_board is None:
            self._empty_board = connect_four_solver.states_from_moves([""], self.game)
        column = int(np.asarray(agent(variables, key, self.game, self._empty_board))[0])
        value = -connect_four_solver.solve([column])  # the second player is to move after it
        return {f"{prefix}first_move": column, f"{prefix}first_move_value": value}

    def match(self, player, variables, opponent, opponent_params, key, num_games, opening=0):
        return arena.play_match(self.game, player, variables, opponent, opponent_params, key,
                                num_games, opening_moves=opening, max_plies=self.max_plies)

    def policy_optimality(self, variables) -> float:
        """Tic-tac-toe: fraction of reachable positions where the raw policy is optimal."""
        logits, _ = self._predict(variables, self.positions["observations"])
        return perfect_play.policy_optimality(np.asarray(logits), self.positions)

    def solo(self, player, variables, key, num_games: int, prefix: str = "") -> Dict[str, Any]:
        """A one-player game (2048): `num_games` games of `player`; the mean
        and median score, and for 2048 the share of games whose best tile
        reached 512, 1024 and 2048."""
        result = arena.play_solo(self.game, player, variables, key, num_games, self.max_plies)
        out: Dict[str, Any] = {f"{prefix}score_mean": round(result.mean_score, 1),
                               f"{prefix}score_median": round(float(np.median(result.scores)), 1),
                               f"{prefix}moves_mean": round(float(np.mean(result.moves)), 1),
                               f"{prefix}unfinished": result.unfinished}
        if self.game.name == "2048":
            best_tile = 2 ** np.asarray(result.final_states._board).max(axis=-1)
            for tile in (512, 1024, 2048):
                out[f"{prefix}tile_{tile}_rate"] = round(float(np.mean(best_tile >= tile)), 4)
            out[f"{prefix}best_tile"] = int(best_tile.max())
        return out

    def periodic(self, variables, key, num_games: Optional[int] = None) -> Dict[str, Any]:
        """Agent against random, UCT and (tic-tac-toe) perfect play; for a
        one-player game, its scores."""
        num_games = num_games or self.config.eval_games
        if self.one_player:
            return self.solo(self.agent, variables, key, max(num_games, 1)) if num_games else {}
        if num_games < 2:
            return {}
        keys = jax.random.split(key, 3)
        out: Dict[str, Any] = {}
        out.update(self.match(self.agent, variables, arena.RandomPlayer(), None, keys[0],
                              num_games).as_dict("vs_random_"))
        out.update(self.match(self.agent, variables, self.uct, None, keys[1],
                              num_games).as_dict("vs_uct_"))
        if self.game.name == "tic_tac_toe":
            out.update(self.match(self.agent, variables, perfect_play.PerfectPlayer(), None,
                                  keys[2], num_games).as_dict("vs_perfect_"))
            out["policy_optimal"] = round(self.policy_optimality(variables), 4)
        if self.game.name == "connect_four":
            solver_keys = jax.random.split(jax.random.fold_in(key, 3))
            out.update(self.solver_match(self.agent, variables, solver_keys[0],
                                         self.config.solver_games))
            out.update(self.solver_accuracy(variables, solver_keys[1], self.agent,
                                            self.config.solver_positions))
            out.update(self.first_move(self.agent, variables, jax.random.fold_in(key, 4)))
        return out

    def final(self, variables, key) -> Dict[str, Any]:
        """End of run: `final_games` at `final_simulations` against the
        strongest reference (perfect play for tic-tac-toe, UCT at the same
        budget otherwise, and the perfect solver for Connect Four) and
        against random; Connect Four's benchmark accuracy on
        `final_solver_positions` positions."""
        num_games = self.config.final_games
        out: Dict[str, Any] = dict(final_simulations=self.config.final_simulations,
                                   final_games=num_games)
        if self.one_player:
            if num_games:
                keys = jax.random.split(key)
                out.update(self.solo(self.final_agent, variables, keys[0], num_games, "final_"))
                out.update(self.solo(arena.RandomPlayer(), None, keys[1], num_games,
                                     "final_random_"))
            return out
        solver_keys = jax.random.split(jax.random.fold_in(key, 3))
        if self.game.name == "connect_four":
            out.update(self.solver_accuracy(variables, solver_keys[1], self.final_agent,
                                            self.config.final_solver_positions, "final_",
                                            cells=True))
            out.update(self.first_move(self.final_agent, variables, jax.random.fold_in(key, 4),
                                       "final_"))
        if num_games < 2:
            return out
        keys = jax.random.split(key, 3)
        result = self.match(self.final_agent, variables, arena.RandomPlayer(), None, keys[0],
                            num_games)
        out.update(result.as_dict("final_vs_random_"))
        result = self.match(self.final_agent, variables, self.final_uct, None, keys[1],
                            num_games)
        out.update(result.as_dict("final_vs_uct_"))
        out["final_vs_uct_as_first"] = list(result.first)
        out["final_vs_uct_as_second"] = list(result.second)
        if self.game.name == "tic_tac_toe":
            result = self.match(self.final_agent, variables, perfect_play.PerfectPlayer(), None,
                                keys[2], num_games)
            out.update(result.as_dict("final_vs_perfect_"))
            out["final_vs_perfect_as_first"] = list(result.first)
            out["final_vs_perfect_as_second"] = list(result.second)
            out["final_policy_optimal"] = round(self.policy_optimality(variables), 4)
        if self.game.name == "connect_four":
            out.update(self.solver_match(self.final_agent, variables, solver_keys[0],
                                         num_games, "final_"))
        return out

    def elo_matches(self, variables, iteration: int, pool: Dict[int, Any], key) -> List[List]:
        """Current network against up to `elo_opponents` snapshots of `pool`
        ({iteration: variables}, earlier iterations): the last ones, and the
        first. Returns [[iteration, opponent, score, games], ...]."""
        earlier = sorted(i for i in pool if i < iteration)
        if not earlier or self.config.elo_opponents == 0 or self.config.eval_games < 2:
            return []
        chosen = earlier[-self.config.elo_opponents:]
        if earlier[0] not in chosen:
            chosen = [earlier[0]] + chosen[1:]
        matches = []
        for opponent, match_key in zip(chosen, jax.random.split(key, len(chosen))):
            result = self.match(self.agent, variables, self.agent, pool[opponent], match_key,
                                self.config.eval_games, opening=self.config.elo_opening_moves)
            matches.append([iteration, opponent, result.wins + 0.5 * result.draws,
                            result.num_games])
        return matches


def elo_ratings(records: List[Dict[str, Any]]) -> Dict[int, float]:
    """Ratings of every snapshot from the `elo_matches` of metrics records
    (snapshot 0 rated 0)."""
    matches = [m for r in records for m in r.get("elo_matches", [])]
    if not matches:
        return {}
    ratings = arena.fit_elo([(int(i), int(j), s, n) for i, j, s, n in matches], anchor=0)
    return {int(k): round(v, 1) for k, v in ratings.items()}
