"""Sampled AlphaZero and Sampled MuZero on a control task: K sampled actions per node.

    --algorithm sampled_alphazero   the search steps the task's true dynamics
    --algorithm sampled_muzero      the search steps a learned model

The algorithm values `training.build` builds for a control task (`--game
pendulum`), with the methods the loop asks of every algorithm
(`make_model`, `self_play`, `learner`, `agent`, `evaluation`, `identity`,
`evaluate`). Its search is the run's policy (`--policy gumbel`: Gumbel
MuZero's sequential halving among the K samples; `alphazero`: PUCT over
their corrected priors with root noise, the move sampled from the visits
in self-play) with a `mcts_jax.sampled.SampledActions` plug-in: K =
`--num-samples` actions drawn at each node from the network's Gaussian at
`--proposal-temperature`, their prior `--sampled-prior` (the paper's
correction, or Stoix's uniform one for the ablation). Values are unbounded
returns, so Q is min-max normalised within each tree (`value_range=None`).

Sampled MuZero (Hubert et al. 2021) learns the model as MuZero does
(`training.muzero`: representation, dynamics of the action vector,
prediction of the Gaussian and the value; K-step unrolls, n-step value
targets, categorical supports) and trains its policy on each unrolled
step's sampled actions (`LearnedModelLearner` with `distribution`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict

import mcts_jax
from mcts_jax import sampled
from training import config as config_lib
from training.control import evaluation as evaluation_lib
from training.control.learner import SampledLearner
from training.control.model import ControlModel, LearnedDynamics, TrueDynamics
from training.control.self_play import ControlSelfPlay, LearnedControlSelfPlay
from training.muzero import networks as learned_networks
from training.muzero.learner import LearnedModelLearner
from training.muzero.setup import MuZeroFamily


@dataclasses.dataclass(frozen=True)
class SampledAlphaZero:
    """A control run: sampled search over the true dynamics (module
    docstring). records: the run's settings by concern."""

    records: config_lib.Records

    def simulator(self, task, model) -> TrueDynamics:
        """What the search steps: the task itself, the network at the leaves."""
        return TrueDynamics(task, model)

    @property
    def title(self) -> str:
        return self.records.run.algorithm.title

    @property
    def search_label(self) -> str:
        search = self.records.search
        return f"sampled {search.policy}, K={search.num_samples}"

    def make_model(self, task) -> ControlModel:
        return ControlModel.make(self.records.network, task)

    def policy(self, task, greedy: bool):
        """The search policy value: self-play's (`greedy` False: root noise,
        the run's tree capacity) or the agent's (`greedy` True: no noise, a
        tree sized to each call's simulations). Either plays the most
        visited sample (Gumbel: its halving's choice); self-play samples
        the first --temperature-moves steps' actions itself."""
        search = self.records.search
        plugin = sampled.SampledActions(task.distribution(), search.num_samples,
                                        temperature=search.proposal_temperature,
                                        prior=search.sampled_prior)
        options = dict(plugins=(plugin,), max_nodes=None if greedy else search.max_nodes,
                       value_range=None)
        if search.policy == "gumbel":
            return mcts_jax.GumbelPolicy.make(
                max_num_considered_actions=min(search.max_num_considered_actions,
                                               search.num_samples),
                gumbel_scale=0.0 if greedy else 1.0, **options)
        return mcts_jax.AlphaZeroPolicy.make(
            dirichlet_fraction=0.0 if greedy else search.dirichlet_fraction,
            dirichlet_alpha=search.dirichlet_alpha, temperature=0.0, **options)

    def sampled_steps(self) -> int:
        """The steps of each episode whose action self-play samples from the
        search's weights: --temperature-moves with PUCT, none with Gumbel
        (its own noise explores), as for the board games."""
        if self.records.search.policy == "gumbel":
            return 0
        return self.records.self_play.temperature_moves

    # Self-play writes samples with their discounted returns.
    self_play_class = ControlSelfPlay

    def self_play(self, task, model, policy: Any = None, **games) -> ControlSelfPlay:
        """Self-play of B episodes; `games`: the settings both board-game
        algorithms share (`build.self_play_settings`), of which a control
        run uses the simulations, B and the device mesh (config validation
        refuses the others' non-default values)."""
        return self.self_play_class(
            simulator=self.simulator(task, model),
            policy=self.policy(task, False) if policy is None else policy,
            num_simulations=games["num_simulations"], num_games=games["num_games"],
            search_value_weight=self.records.self_play.search_value_weight,
            mesh=games.get("mesh"), temperature_moves=self.sampled_steps())

    def learner(self, model, player: ControlSelfPlay, **common) -> SampledLearner:
        common.pop("symmetries", None)  # a control task has none
        return SampledLearner(model=model, distribution=player.sampling.distribution, **common)

    def agent(self, task, model, num_simulations: int, greedy: bool = True,
              simulations_per_step: int = 1) -> evaluation_lib.ControlAgent:
        """The evaluation's agent: the greedy search at `num_simulations` (0:
        the raw policy, the Gaussian's squashed mean)."""
        del greedy, simulations_per_step
        return evaluation_lib.ControlAgent(self.simulator(task, model), self.policy(task, True),
                                           num_simulations)

    # The run's evaluation suite: episodes' returns (no opponents).
    evaluation_suite = evaluation_lib.ControlEvaluation

    def identity(self) -> Dict[str, Any]:
        """What a checkpoint must match: the task and the network."""
        return dict(game=self.records.game.game,
                    network=dataclasses.asdict(self.records.network))

    def evaluate(self, learner, variables, buffer, key) -> Dict[str, Any]:
        """No figures beyond the evaluation suite's."""
        del learner, variables, buffer, key
        return {}


@dataclasses.dataclass(frozen=True)
class SampledMuZero(SampledAlphaZero):
    """A control run whose search steps a learned model (module docstring):
    the same search, self-play loop and evaluation as Sampled AlphaZero,
    MuZero's model and unrolled learner (`--latent-size`, `--num-unroll-steps`,
    `--td-steps`, the supports)."""

    def model_config(self) -> learned_networks.ModelConfig:
        return MuZeroFamily(self.records).model_config()

    def make_model(self, task) -> learned_networks.LearnedModel:
        return learned_networks.make_continuous_model(self.model_config(), task)

    def simulator(self, task, model) -> LearnedDynamics:
        return LearnedDynamics(task, model)

    # Self-play writes trajectories for the unrolled learner.
    self_play_class = LearnedControlSelfPlay

    def learner(self, model, player: LearnedControlSelfPlay, **common) -> LearnedModelLearner:
        """MuZero's unrolled learner on n-step targets, the policy on the
        sampled actions (no reanalyse: config validation refuses it)."""
        common.pop("symmetries", None)
        learned = self.records.learned_model
        discount = float(self.records.game.discount)
        return LearnedModelLearner(
            model=model, num_unroll=learned.num_unroll_steps, value_targets="n_step",
            td_steps=learned.td_steps, discount=discount, search_discount=discount,
            consistency_weight=learned.consistency_weight,
            distribution=player.sampling.distribution, **common)

    def identity(self) -> Dict[str, Any]:
        return dict(game=self.records.game.game, algorithm=self.records.run.algorithm.name,
                    model=repr(self.model_config()))

    def evaluate(self, learner, variables, buffer, key) -> Dict[str, Any]:
        """The learned model's drift from the task along replayed steps."""
        return MuZeroFamily(self.records).evaluate(learner, variables, buffer, key)
