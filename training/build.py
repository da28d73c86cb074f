"""From a TrainConfig to the objects a run runs: the one build step.

    parts = build(config)                  # or build(config, mesh, policy)
    parts.game, parts.model, parts.self_play, parts.learner    # what the loop steps
    parts.agent, parts.final_agent         # the arena players its evaluation plays
    parts.algorithm                        # AlphaZero(records) or MuZeroFamily(records)

`build` reads top to bottom, as PureJaxRL's `make_train(config)` does: the
algorithm, the game, the model, self-play, the learner, the agents. It reads
the config's records (`TrainConfig.records`), never its flat fields, and
gives each part its own record: `make_game` the game record, the network
the network record, self-play the self-play and search records, the
learner the optimizer record (the MuZero family's learner the
learned-model record too), the agents the evaluation's simulations. The
algorithm is the one choice a config makes between two ways of training,
taken here once (`algorithm_for`, from `records.run.algorithm`):

    AlphaZero      the search steps the real game (`envs`), a policy-value
                   network at its leaves; a replay of positions
    MuZeroFamily   (training/muzero/setup.py) the search steps a learned model;
                   a replay of trajectories, unrolled updates

Both are values with the same few methods: `make_model(game)`,
`self_play(game, model, policy, **games)`, `learner(model, self_play,
**common)`, `agent(game, model, num_simulations, ...)`, `identity()` (what a
checkpoint must match) and `evaluate(...)` (their own periodic figures); the
loop (`training.loop`) and the agent (`training.agent`) ask the value and
never test the config's algorithm name. What both algorithms share (the
game, the optimiser, the self-play batch and openings, the device mesh) is
read here (`self_play_settings`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, Optional, Union

import jax

from training import arena, networks
from training import evaluation as evaluation_lib
from training import config as config_lib
from training import learner as learner_lib
from training import self_play as self_play_lib
from training.config import TrainConfig
from training.control.setup import SampledAlphaZero, SampledMuZero
from training.muzero.setup import MuZeroFamily


@dataclasses.dataclass(frozen=True)
class AlphaZero:
    """An AlphaZero run (--algorithm alphazero): the search steps the real
    game, the network's priors and values at its leaves; the replay holds
    positions with the search's policy targets and the games' results.

    records: the run's settings by concern (`TrainConfig.records`); each
    part it builds is given its own record's values."""

    records: config_lib.Records

    @property
    def title(self) -> str:
        return self.records.run.algorithm.title

    @property
    def search_label(self) -> str:
        """How the agent searches, for reports: the policy's name."""
        return config_lib.search_policy_name(self.records.search)

    def make_model(self, game) -> networks.Model:
        return networks.make_model(self.records.network, game)

    def self_play(self, game, model, policy: Any = None, **games) -> self_play_lib.SelfPlay:
        """Self-play on the real game with `--policy` by name, or `policy` (a
        user's policy value); `games`: the settings both algorithms share
        (`self_play_settings`)."""
        search, settings = self.records.search, self.records.self_play
        # The opening plies whose move is sampled from the visit counts:
        # AlphaZero's and a user's policy's; none for Gumbel (its own noise
        # explores).
        sampled = (settings.temperature_moves if policy is not None
                   or search.policy == "alphazero" else 0)
        return self_play_lib.SelfPlay(
            game=game, model=model, policy=config_lib.self_play_policy(search, game, policy),
            temperature_moves=sampled, search_value_weight=settings.search_value_weight,
            **games)

    def learner(self, model, player: self_play_lib.SelfPlay, **common) -> learner_lib.Learner:
        del player
        return learner_lib.Learner(model=model, **common)

    def agent(self, game, model, num_simulations: int, greedy: bool = True,
              simulations_per_step: int = 1):
        """The arena player: the network searched with the run's policy
        (`search_policy_name`: with chance nodes for a stochastic game);
        `num_simulations` 0: the raw policy network."""
        if num_simulations == 0:
            return arena.PolicyPlayer(model.evaluator, greedy=greedy)
        search = self.records.search
        options = ((("simulations_per_step", simulations_per_step),)
                   if simulations_per_step != 1 else ())
        return arena.SearchPlayer(model.evaluator, config_lib.search_policy_name(search),
                                  num_simulations, greedy=greedy,
                                  max_num_considered_actions=search.max_num_considered_actions,
                                  options=options)

    # The run's evaluation suite: matches and scores on the game.
    evaluation_suite = evaluation_lib.Evaluation

    def identity(self) -> Dict[str, Any]:
        """What a checkpoint must match: the game and the network's
        architecture. The value head's settings are named only when they are
        not the default (tanh, scale 1), so runs saved before they existed
        still match."""
        network = dataclasses.asdict(self.records.network)
        default = networks.NetworkConfig()
        for name in ("value_head", "value_scale"):
            if network[name] == getattr(default, name):
                del network[name]
        return dict(game=self.records.game.game, network=network)

    def evaluate(self, learner, variables, buffer, key) -> Dict[str, Any]:
        """No figures of its own beyond the evaluation suite's."""
        del learner, variables, buffer, key
        return {}


Algorithm = Union[AlphaZero, MuZeroFamily, SampledAlphaZero, SampledMuZero]


def algorithm_for(config: TrainConfig) -> Algorithm:
    """The run's algorithm value, AlphaZero on the real game or the MuZero
    family with a learned model, holding the config's records: the one
    place that asks which (`records.run.algorithm`, looked up once from
    --algorithm; everything else asks the value's methods)."""
    records = config.records
    kind = records.run.algorithm
    if kind.sampled:
        return (SampledMuZero if kind.learned_model else SampledAlphaZero)(records)
    return (MuZeroFamily if kind.learned_model else AlphaZero)(records)


def self_play_settings(records: config_lib.Records, mesh: Optional[jax.sharding.Mesh]):
    """The self-play settings both algorithms share: the self-play record's,
    the search record's simulations, reuse and device mode, and the game's
    length limit."""
    search, games = records.search, records.self_play
    return dict(num_simulations=search.num_simulations, num_games=games.num_games,
                reuse_tree=search.reuse_tree, random_opening_plies=games.random_opening_plies,
                random_opening_fraction=games.random_opening_fraction,
                random_opening_interleaved=games.random_opening_interleaved,
                max_game_length=records.game.max_game_length, mesh=mesh,
                search_mode=search.search_mode, fast_simulations=games.fast_simulations,
                full_search_fraction=games.full_search_fraction)


@dataclasses.dataclass(frozen=True, eq=False)
class Parts:
    """What a run is made of (built once per config, mesh and policy).

    algorithm: `AlphaZero` or `MuZeroFamily`; game: the `envs` game; model:
    the network or the learned model; self_play: the `SelfPlay` that plays
    B games a step; learner: the updates; agent / final_agent: the arena
    players of the periodic and the end-of-run evaluation.
    """

    algorithm: Algorithm
    game: Any
    model: Any
    self_play: self_play_lib.SelfPlay
    learner: Any
    agent: Any
    final_agent: Any


@functools.lru_cache(maxsize=8)
def build(config: TrainConfig, mesh: Optional[jax.sharding.Mesh] = None,
          policy: Any = None) -> Parts:
    """The parts of a run, split over `mesh` (None: one device). `policy`:
    a policy value (`mcts_jax.Policy`, a user's own) that self-play searches
    with in place of the config's named one. Cached: the same config, mesh
    and policy give the same objects, so a second run in one process (a
    resumed run, a notebook, a test) reuses the compiled steps."""
    algorithm = algorithm_for(config)
    records = algorithm.records
    game = config_lib.make_game(records.game)
    model = algorithm.make_model(game)
    self_play = algorithm.self_play(game, model, policy, **self_play_settings(records, mesh))
    optimizer = records.optimizer
    # A random board symmetry per training sample (--augment), where the game has any.
    augmented = optimizer.augment and game.symmetry_tables() is not None
    learner = algorithm.learner(
        model, self_play,
        optimizer=learner_lib.make_optimizer(
            optimizer.learning_rate, optimizer.total_updates, optimizer.warmup_fraction,
            optimizer.end_learning_rate_fraction, optimizer.weight_decay, optimizer.clip_norm),
        batch_size=optimizer.train_batch_size, value_weight=optimizer.value_weight,
        symmetries=records.game.game if augmented else None, mesh=mesh)
    evaluation = records.evaluation
    return Parts(algorithm=algorithm, game=game, model=model, self_play=self_play,
                 learner=learner,
                 agent=algorithm.agent(game, model, evaluation.eval_simulations),
                 final_agent=algorithm.agent(game, model, evaluation.final_simulations))
