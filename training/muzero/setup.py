"""The MuZero family as an algorithm value: what `training.build` asks of it.

    muzero       MuZero: PUCT (`mcts_jax.MuZeroPolicy`, Dirichlet noise) over the
                 learned dynamics; moves of the first --temperature-moves plies
                 sampled from the visits.
    gumbel_muzero  Gumbel MuZero: Gumbel top-k and sequential halving at the root
                 (`mcts_jax.GumbelPolicy` with mctx's options); the policy target
                 is its improved policy; for few simulations.
    stochastic_muzero  Stochastic MuZero: afterstates and learned chance codes
                 (`mcts_jax.StochasticMuZeroPolicy`).

`MuZeroFamily(records)` has the methods in which a learned-model run differs
from AlphaZero's (`training.build.AlphaZero`): its model, its self-play
(searching the model, trajectories for replay), its learner (unrolled,
reanalyse), its agent (a greedy search of the model), its checkpoint
identity and its periodic model error. The game plays the moves and gives
the root's legal moves; the search never steps it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict

import numpy as np

from training import evaluation as evaluation_lib
from training import policies
from training.config import Records, game_spec, self_play_policy, stochastic_policy_name
from training.muzero import networks, search
from training.muzero.learner import LearnedModelLearner
from training.muzero.self_play import LearnedModelSelfPlay
from training.muzero.support import Support


@dataclasses.dataclass(frozen=True)
class MuZeroFamily:
    """A learned-model run (--algorithm muzero, gumbel_muzero,
    stochastic_muzero): the search steps a learned model (representation,
    dynamics, prediction; afterstates and chance codes for Stochastic
    MuZero), never the game.

    records: the run's settings by concern (`TrainConfig.records`); what
    sets the three apart is `records.run.algorithm` (an
    `config.AlgorithmKind`: its title, policy, chance codes, sampled
    openings), asked here and never compared by name."""

    records: Records

    @property
    def kind(self):
        return self.records.run.algorithm

    @property
    def title(self) -> str:
        return self.kind.title

    @property
    def search_label(self) -> str:
        """How the agent searches, for reports."""
        return f"{self.kind.name}, learned model"

    @property
    def one_player(self) -> bool:
        return getattr(game_spec(self.records.game.game), "num_players", 2) == 1

    @property
    def search_discount(self) -> float:
        """-1 for two-player games (the perspective flips), --discount for one-player."""
        return float(self.records.game.discount) if self.one_player else -1.0

    @property
    def policy_name(self) -> str:
        """MuZero's PUCT, Gumbel MuZero's, and for Stochastic MuZero
        `--policy` with chance nodes (alphazero: PUCT as mctx's; gumbel:
        `mcts_jax.StochasticGumbelPolicy`)."""
        return self.kind.policy or stochastic_policy_name(self.records.search.policy)

    def model_config(self) -> networks.ModelConfig:
        """The learned model's settings: the network record's trunk, the
        learned-model record's latent, support and chance codes."""
        network, learned = self.records.network, self.records.learned_model
        support = Support(bound=float(learned.support_bound), num_bins=learned.support_bins,
                          transform=learned.support_transform)
        return networks.ModelConfig(
            kind=network.kind, latent_size=learned.latent_size, hidden=network.hidden,
            num_layers=network.num_layers, channels=network.channels,
            num_blocks=network.num_blocks, value_support=support, reward_support=support,
            num_chance_codes=learned.chance_codes if self.kind.chance_codes else 0)

    def make_model(self, game) -> networks.LearnedModel:
        """The learned model of the run's settings for `game`."""
        return networks.make_model(self.model_config(), game)

    def policy(self, num_actions: int, greedy: bool = False, **changes):
        """The search policy value of the run's algorithm (the search record):
        with root noise in self-play; `greedy`: no noise, the most visited
        move (evaluation)."""
        search = self.records.search
        if self.one_player:  # unbounded values: min-max normalised Q
            changes.setdefault("value_range", None)
        return policies.policy_from_name(
            self.policy_name, num_actions=num_actions, root_noise=not greedy,
            sample_action=False, max_num_considered_actions=search.max_num_considered_actions,
            dirichlet_fraction=search.dirichlet_fraction,
            dirichlet_alpha=search.dirichlet_alpha, **changes)

    def self_play(self, game, model, policy: Any = None, **games) -> LearnedModelSelfPlay:
        """Self-play searching the model; `games`: the settings every
        algorithm's self-play shares (`training.build.self_play_settings`)."""
        search = self.records.search
        if policy is not None:  # a user's policy value
            policy = self_play_policy(search, game, policy)
        else:
            changes = dict(max_nodes=search.max_nodes)
            if search.simulations_per_step > 1:
                changes["simulations_per_step"] = search.simulations_per_step
            policy = self.policy(game.num_actions, **changes)
        sampled = self.records.self_play.temperature_moves if self.kind.sampled_opening else 0
        return LearnedModelSelfPlay(game=game, model=model, policy=policy,
                                    temperature_moves=sampled, discount=self.search_discount,
                                    **games)

    def learner(self, model, player: LearnedModelSelfPlay, **common) -> LearnedModelLearner:
        """The unrolled learner (the learned-model record); reanalyse
        searches as self-play does (with room for `reanalyse_simulations`).
        `common`: the settings every algorithm's learner shares (the
        optimizer record's, `training.build`)."""
        learned = self.records.learned_model
        play_policy = player.policy
        reanalyse_simulations = (learned.reanalyse_simulations
                                 or self.records.search.num_simulations)
        if reanalyse_simulations >= play_policy.options.max_nodes:
            play_policy = play_policy.replace(max_nodes=reanalyse_simulations + 1)
        return LearnedModelLearner(
            model=model, num_unroll=learned.num_unroll_steps,
            value_targets=self.value_targets(), td_steps=learned.td_steps,
            discount=float(self.records.game.discount), search_discount=self.search_discount,
            commitment_weight=learned.commitment_weight,
            consistency_weight=learned.consistency_weight,
            code_usage_weight=learned.code_usage_weight,
            reanalyse_fraction=learned.reanalyse_fraction, reanalyse_policy=play_policy,
            reanalyse_simulations=reanalyse_simulations, **common)

    def value_targets(self) -> str:
        chosen = self.records.learned_model.value_targets
        if chosen != "auto":
            return chosen
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

    # The run's evaluation suite: matches and scores on the game.
    evaluation_suite = evaluation_lib.Evaluation

    def identity(self) -> Dict[str, Any]:
        """What a checkpoint of the run must match."""
        return dict(game=self.records.game.game, algorithm=self.kind.name,
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
