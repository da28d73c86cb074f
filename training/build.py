"""From a TrainConfig to the objects a run runs: the one build step.

    parts = build(config)                  # or build(config, mesh, policy)
    parts.game, parts.model, parts.self_play, parts.learner    # what the loop steps
    parts.agent, parts.final_agent         # the arena players its evaluation plays
    parts.algorithm                        # AlphaZero(config) or MuZeroFamily(config)

`build` reads top to bottom, as PureJaxRL's `make_train(config)` does: the
algorithm, the game, the model, self-play, the learner, the agents. The
algorithm is the one choice a config makes between two ways of training,
taken here once (`algorithm_for`):

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
read here.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar, Dict, Optional, Union

import jax

from training import arena, networks
from training import config as config_lib
from training import learner as learner_lib
from training import self_play as self_play_lib
from training.config import TrainConfig
from training.muzero.setup import MuZeroFamily


@dataclasses.dataclass(frozen=True)
class AlphaZero:
    """An AlphaZero run (--algorithm alphazero): the search steps the real
    game, the network's priors and values at its leaves; the replay holds
    positions with the search's policy targets and the games' results."""

    config: TrainConfig
    title: ClassVar[str] = "AlphaZero"
    learned_model: ClassVar[bool] = False

    @property
    def search_label(self) -> str:
        """How the agent searches, for reports: the policy's name."""
        return config_lib.search_policy_name(self.config)

    def make_model(self, game) -> networks.Model:
        return networks.make_model(self.config.network_config(), game)

    def self_play(self, game, model, policy: Any = None, **games) -> self_play_lib.SelfPlay:
        """Self-play on the real game with `--policy` by name, or `policy` (a
        user's policy value); `games`: the settings both algorithms share."""
        config = self.config
        # The opening plies whose move is sampled from the visit counts:
        # AlphaZero's and a user's policy's; none for Gumbel (its own noise
        # explores).
        sampled = (config.temperature_moves if policy is not None or config.policy == "alphazero"
                   else 0)
        return self_play_lib.SelfPlay(
            game=game, model=model,
            policy=config_lib.self_play_policy(config, game.num_actions, policy),
            temperature_moves=sampled, search_value_weight=config.search_value_weight, **games)

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
        options = ((("simulations_per_step", simulations_per_step),)
                   if simulations_per_step != 1 else ())
        return arena.SearchPlayer(model.evaluator, config_lib.search_policy_name(self.config),
                                  num_simulations, greedy=greedy,
                                  max_num_considered_actions=self.config.max_num_considered_actions,
                                  options=options)

    def identity(self) -> Dict[str, Any]:
        """What a checkpoint must match: the game and the network's
        architecture. The value head's settings are named only when they are
        not the default (tanh, scale 1), so runs saved before they existed
        still match."""
        network = dataclasses.asdict(self.config.network_config())
        default = networks.NetworkConfig()
        for name in ("value_head", "value_scale"):
            if network[name] == getattr(default, name):
                del network[name]
        return dict(game=self.config.game, network=network)

    def evaluate(self, learner, variables, buffer, key) -> Dict[str, Any]:
        """No figures of its own beyond the evaluation suite's."""
        del learner, variables, buffer, key
        return {}


Algorithm = Union[AlphaZero, MuZeroFamily]


def algorithm_for(config: TrainConfig) -> Algorithm:
    """The run's algorithm: AlphaZero on the real game, or the MuZero
    family with a learned model (the only place the choice is made)."""
    if config.algorithm == "alphazero":
        return AlphaZero(config)
    return MuZeroFamily(config)


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
    game = config_lib.make_game(config)
    model = algorithm.make_model(game)
    self_play = algorithm.self_play(
        game, model, policy,
        num_simulations=config.num_simulations, num_games=config.num_games,
        reuse_tree=config.reuse_tree, random_opening_plies=config.random_opening_plies,
        random_opening_fraction=config.random_opening_fraction,
        random_opening_interleaved=config.random_opening_interleaved,
        max_game_length=config.max_game_length, mesh=mesh, search_mode=config.search_mode,
        fast_simulations=config.fast_simulations,
        full_search_fraction=config.full_search_fraction)
    optimizer = learner_lib.make_optimizer(
        config.learning_rate, config.total_updates, config.warmup_fraction,
        config.end_learning_rate_fraction, config.weight_decay, config.clip_norm)
    # A random board symmetry per training sample (--augment), where the game has any.
    augmented = config.augment and game.symmetry_tables() is not None
    learner = algorithm.learner(model, self_play, optimizer=optimizer,
                                batch_size=config.train_batch_size,
                                value_weight=config.value_weight,
                                symmetries=config.game if augmented else None, mesh=mesh)
    return Parts(algorithm=algorithm, game=game, model=model, self_play=self_play,
                 learner=learner,
                 agent=algorithm.agent(game, model, config.eval_simulations),
                 final_agent=algorithm.agent(game, model, config.final_simulations))
