"""Which parts of a trained one-player agent (2048) help its search.

    python -m experiments.search_parts --run-dir runs/2048 --games 32 --simulations 32

Plays `--games` games of the run's game with the run's search at each
`--simulations`, greedy, four ways, every way on the same seeds (the same
first boards and tile draws while the moves agree):

- `network`: the agent as trained;
- `uniform prior`: every prior the network gives, at the root and below,
  replaced by a uniform one (the value kept);
- `zero value`: every value the network gives replaced by 0 (a learned
  model's root value and afterstate Q too), so that the search adds up
  rewards alone (the prior kept);
- `rewards only`: both; what the search makes of the rewards alone, the
  game's own for an AlphaZero run (the true model) and the learned model's
  for a learned-model run.

If `zero value` beats `network`, the value head misleads the search; if
`uniform prior` does, the policy head does; `rewards only` against a
random mover says whether a learned model's rewards and chance codes are of
any use to a search. Each way's mean and median score, mean game length and
the share of games reaching the 512, 1024 and 2048 tiles, saved to
benchmarks/results/<name>-<backend>.json with the run's sessions (commit,
command) and this command's provenance.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time
from typing import Any, Dict, List

import jax
import jax.numpy as jnp

from benchmarks import harness
from training import checkpoint as checkpoint_lib
from training.agent import Agent
from training.evaluation import Evaluation
from training.muzero import search as learned_search

# way -> (uniform prior, zero value)
WAYS = {"network": (False, False), "uniform prior": (True, False),
        "zero value": (False, True), "rewards only": (True, True)}


@dataclasses.dataclass(frozen=True)
class MaskedEvaluator:
    """A leaf evaluator with its priors made uniform and/or its values 0."""

    evaluator: Any
    uniform_prior: bool
    zero_value: bool

    def __call__(self, params, rng_key, game, states):
        logits, value = self.evaluator(params, rng_key, game, states)
        return (jnp.zeros_like(logits) if self.uniform_prior else logits,
                jnp.zeros_like(value) if self.zero_value else value)


@dataclasses.dataclass(frozen=True)
class _MaskedDecisionFn:
    inner: learned_search.LearnedDecisionFn
    zero_value: bool

    def __call__(self, params, rng_key, action, latent):
        output, afterstate = self.inner(params, rng_key, action, latent)
        if self.zero_value:
            output = output.replace(afterstate_value=jnp.zeros_like(output.afterstate_value))
        return output, afterstate


@dataclasses.dataclass(frozen=True)
class _MaskedStepFn:
    """A learned model's chance function (Stochastic MuZero) or recurrent
    function (MuZero), its prior logits and value masked."""

    inner: Any
    uniform_prior: bool
    zero_value: bool

    def __call__(self, params, rng_key, action_or_code, latent):
        output, next_latent = self.inner(params, rng_key, action_or_code, latent)
        logits_field = "action_logits" if hasattr(output, "action_logits") else "prior_logits"
        changes = {}
        if self.uniform_prior:
            changes[logits_field] = jnp.zeros_like(getattr(output, logits_field))
        if self.zero_value:
            changes["value"] = jnp.zeros_like(output.value)
        return output.replace(**changes), next_latent


@dataclasses.dataclass(frozen=True)
class MaskedSimulator:
    """A learned model as the search steps it (`LearnedSimulator`), with
    its priors made uniform and/or its values (root value, afterstate Q,
    leaf values) 0; its rewards and chance codes kept. The search call is
    the application's own (`training.search.run`, through the agent's
    `LearnedModelPlayer`)."""

    inner: learned_search.LearnedSimulator
    uniform_prior: bool
    zero_value: bool

    @property
    def takes_chance_nodes(self) -> bool:
        return self.inner.takes_chance_nodes

    def kind(self) -> str:
        return self.inner.kind()

    def __str__(self) -> str:
        return f"{self.inner} (masked)"

    def root(self, params, rng_key, states):
        root, invalid = self.inner.root(params, rng_key, states)
        if self.uniform_prior:
            root = root.replace(prior_logits=jnp.zeros_like(root.prior_logits))
        if self.zero_value:
            root = root.replace(value=jnp.zeros_like(root.value))
        return root, invalid

    @property
    def recurrent_fn(self):
        functions = self.inner.recurrent_fn
        if self.takes_chance_nodes:
            decision, chance = functions
            return (_MaskedDecisionFn(decision, self.zero_value),
                    _MaskedStepFn(chance, self.uniform_prior, self.zero_value))
        return _MaskedStepFn(functions, self.uniform_prior, self.zero_value)


def masked_player(agent: Agent, num_simulations: int, uniform_prior: bool, zero_value: bool):
    """The agent's greedy search at `num_simulations`, masked as asked: a
    true-model search (`arena.SearchPlayer`) through its evaluator, a
    learned model's (`LearnedModelPlayer`) through what it steps."""
    player = agent.player(num_simulations)
    if isinstance(player, learned_search.LearnedModelPlayer):
        return dataclasses.replace(player, simulator=MaskedSimulator(player.simulator,
                                                                     uniform_prior, zero_value))
    return dataclasses.replace(player, evaluator=MaskedEvaluator(player.evaluator,
                                                                 uniform_prior, zero_value))


def play(agent: Agent, evaluation: Evaluation, player, num_games: int,
         seed: int) -> Dict[str, Any]:
    """`num_games` games of `player`: score mean and median, moves, tiles
    (`evaluation.solo`, the run's own evaluation), and the seconds."""
    tick = time.perf_counter()
    row = evaluation.solo(player, agent.variables, jax.random.key(seed), num_games)
    row["seconds"] = round(time.perf_counter() - tick, 1)
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", required=True, help="a train.py run folder of a "
                        "one-player game (2048)")
    parser.add_argument("--games", type=int, default=32)
    parser.add_argument("--simulations", type=int, nargs="+", default=[32])
    parser.add_argument("--ways", nargs="+", choices=list(WAYS), default=list(WAYS))
    parser.add_argument("--seed", type=int, default=7, help="the games' key")
    parser.add_argument("--name", default="search_parts")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error(f"--games must be >= 1, got {args.games}")
    if min(args.simulations) < 1:
        parser.error(f"--simulations must be >= 1, got {args.simulations}")
    agent = Agent.load(args.run_dir)
    if getattr(agent.game, "num_players", 2) != 1:
        parser.error(f"--run-dir: {args.run_dir} trains {agent.config.game!r}, a two-player "
                     f"game; this benchmark plays one-player games (2048)")
    # One evaluation plays every way (`solo` takes the player); its own
    # agents, required for a learned model, are never played here.
    unused = agent.player()
    evaluation = Evaluation(agent.config.evaluation, agent.game, agent.model, agent=unused,
                            final_agent=unused)
    rows: List[Dict[str, Any]] = []
    for budget in args.simulations:
        for way in args.ways:
            player = masked_player(agent, budget, *WAYS[way])
            rows.append(dict(way=way, simulations=budget,
                             **play(agent, evaluation, player, args.games, args.seed)))
            print(rows[-1], flush=True)
    sessions = checkpoint_lib.read_metrics(os.path.join(args.run_dir, "sessions.jsonl"))
    settings = dict(harness.provenance(seed=args.seed), run_dir=args.run_dir,
                    iteration=agent.iteration, algorithm=agent.config.algorithm,
                    run_sessions=sessions, games=args.games, simulations=args.simulations)
    harness.report(args.name, f"{agent.config.game} agent of {args.run_dir} "
                   f"({agent.config.algorithm}, iteration {agent.iteration}), greedy search "
                   f"with parts of the network masked, {args.games} games",
                   ["way", "simulations", "score_mean", "score_median", "moves_mean",
                    "tile_512_rate", "tile_1024_rate", "tile_2048_rate", "seconds"], rows, settings)


if __name__ == "__main__":
    main()
