"""The MuZero family as an algorithm value: what `training.build` asks of it.

    muzero       MuZero: PUCT (`mcts_jax.MuZeroPolicy`, Dirichlet noise) over the
                 learned dynamics; moves of the first --temperature-moves plies
                 sampled from the visits.
    gumbel_muzero  Gumbel MuZero: Gumbel top-k and sequential halving at the root
                 (`mcts_jax.GumbelPolicy` with mctx's options); the policy target
                 is its improved policy; for few simulations.
    stochastic_muzero  Stochastic MuZero: afterstates and learned chance codes
                 (`mcts_jax.StochasticMuZeroPolicy`).

`MuZeroFamily(config)` has the methods in which a learned-model run differs
from AlphaZero's (`training.build.AlphaZero`): its model, its self-play
(searching the model, trajectories for replay), its learner (unrolled,
reanalyse), its agent (a greedy search of the model), its checkpoint
identity and its periodic model error. The game plays the moves and gives
the root's legal moves; the search never steps it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict

import numpy as np

from training import policies
from training.config import TrainConfig, game_spec, self_play_policy, stochastic_policy_name
from training.muzero import networks, search
from training.muzero.learner import LearnedModelLearner
from training.muzero.self_play import LearnedModelSelfPlay
from training.muzero.support import Support

POLICY_NAMES = {"muzero": "muzero", "gumbel_muzero": "gumbel_muzero"}
TITLES = dict(muzero="MuZero", gumbel_muzero="Gumbel MuZero",
              stochastic_muzero="Stochastic MuZero")


@dataclasses.dataclass(frozen=True)
class MuZeroFamily:
    """A learned-model run (--algorithm muzero, gumbel_muzero,
    stochastic_muzero): the search steps a learned model (representation,
    dynamics, prediction; afterstates and chance codes for Stochastic
    MuZero), never the game."""

    config: TrainConfig
    learned_model: ClassVar[bool] = True

    @property
    def title(self) -> str:
        return TITLES[self.config.algorithm]

    @property
    def search_label(self) -> str:
        """How the agent searches, for reports."""
        return f"{self.config.algorithm}, learned model"

    @property
    def one_player(self) -> bool:
        return getattr(game_spec(self.config.game), "num_players", 2) == 1

    @property
    def search_discount(self) -> float:
        """-1 for two-player games (the perspective flips), --discount for one-player."""
        return float(self.config.discount) if self.one_player else -1.0

    @property
    def policy_name(self) -> str:
        """MuZero's PUCT, Gumbel MuZero's, and for Stochastic MuZero
        `--policy` with chance nodes (alphazero: PUCT as mctx's; gumbel:
        `mcts_jax.StochasticGumbelPolicy`)."""
        if self.config.algorithm == "stochastic_muzero":
            return stochastic_policy_name(self.config.policy)
        return POLICY_NAMES[self.config.algorithm]

    def model_config(self) -> networks.ModelConfig:
        config = self.config
        support = Support(bound=float(config.support_bound), num_bins=config.support_bins,
                          transform=config.support_transform)
        return networks.ModelConfig(
            kind=config.network, latent_size=config.latent_size, hidden=config.hidden,
            num_layers=config.layers, channels=config.channels, num_blocks=config.blocks,
            value_support=support, reward_support=support,
            num_chance_codes=(config.chance_codes if config.algorithm == "stochastic_muzero"
                              else 0))

    def make_model(self, game) -> networks.LearnedModel:
        """The learned model of the run's settings for `game`."""
        return networks.make_model(self.model_config(), game)

    def policy(self, num_actions: int, greedy: bool = False, **changes):
        """The search policy value of the run's algorithm: with root noise in
        self-play; `greedy`: no noise, the most visited move (evaluation)."""
        config = self.config
        if self.one_player:  # unbounded values: min-max normalised Q
            changes.setdefault("value_range", None)
        return policies.policy_from_name(
            self.policy_name, num_actions=num_actions, root_noise=not greedy,
            sample_action=False, max_num_considered_actions=config.max_num_considered_actions,
            dirichlet_fraction=config.dirichlet_fraction,
            dirichlet_alpha=config.dirichlet_alpha, **changes)

    def self_play(self, game, model, policy: Any = None, **games) -> LearnedModelSelfPlay:
        """Self-play searching the model; `games`: the settings every
        algorithm's self-play shares (`training.build`)."""
        config = self.config
        if policy is not None:  # a user's policy value
            policy = self_play_policy(config, game.num_actions, policy)
        else:
            changes = dict(max_nodes=config.search_max_nodes)
            if config.simulations_per_step > 1:
                changes["simulations_per_step"] = config.simulations_per_step
            policy = self.policy(game.num_actions, **changes)
        return LearnedModelSelfPlay(
            game=game, model=model, policy=policy,
            temperature_moves=config.temperature_moves if config.algorithm == "muzero" else 0,
            discount=self.search_discount, **games)

    def learner(self, model, player: LearnedModelSelfPlay, **common) -> LearnedModelLearner:
        """The unrolled learner; reanalyse searches as self-play does (with
        room for `reanalyse_simulations`). `common`: the settings every
        algorithm's learner shares (`training.build`)."""
        config = self.config
        play_policy = player.policy
        reanalyse_simulations = config.reanalyse_simulations or config.num_simulations
        if reanalyse_simulations >= play_policy.options.max_nodes:
            play_policy = play_policy.replace(max_nodes=reanalyse_simulations + 1)
        return LearnedModelLearner(
            model=model, num_unroll=config.num_unroll_steps,
            value_targets=self.value_targets(), td_steps=config.td_steps,
            discount=float(config.discount), search_discount=self.search_discount,
            commitment_weight=config.commitment_weight,
            consistency_weight=config.consistency_weight,
            code_usage_weight=config.code_usage_weight,
            reanalyse_fraction=config.reanalyse_fraction, reanalyse_policy=play_policy,
            reanalyse_simulations=reanalyse_simulations, **common)

    def value_targets(self) -> str:
        if self.config.value_targets != "auto":
            return self.config.value_targets
        return "n_step" if self.one_player else "outcome"

    def agent(self, game, model, num_simulations: int, greedy: bool = True,
              simulations_per_step: int = 1) -> search.LearnedModelPlayer:
        """The arena player: the learned model's greedy search."""
        if num_simulations == 0 or not greedy or simulations_per_step != 1:
            raise ValueError("a learned-model agent plays its greedy search "
                             "(num_simulations >= 1, greedy=True, simulations_per_step=1)")
        return search.LearnedModelPlayer(
            simulator=search.LearnedSimulator(model, self.search_discount),
            policy=self.policy(game.num_actions, greedy), num_simulations=num_simulations)

    def identity(self) -> Dict[str, Any]:
        """What a checkpoint of the run must match."""
        return dict(game=self.config.game, algorithm=self.config.algorithm,
                    model=repr(self.model_config()))

    def evaluate(self, learner: LearnedModelLearner, variables, buffer, key) -> Dict[str, Any]:
        """The learned model's drift from the real game along replayed moves,
        per unrolled step (`LearnedModelLearner.model_error`); nothing before
        the replay holds a usable window."""
        if int(learner.num_ready(buffer)) == 0:
            return {}
        rewards, values = learner.model_error(variables, key, buffer)
        return dict(model_reward_error=[round(float(x), 4) for x in np.asarray(rewards)],
                    model_value_error=[round(float(x), 4) for x in np.asarray(values)])
