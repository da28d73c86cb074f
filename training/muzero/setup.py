"""A learned-model run's parts, from its `TrainConfig` (what `training.loop.build` returns
for --algorithm muzero, gumbel_muzero and stochastic_muzero).

    muzero       MuZero: PUCT (`mcts_jax.MuZeroPolicy`, Dirichlet noise) over the
                 learned dynamics; moves of the first --temperature-moves plies
                 sampled from the visits.
    gumbel_muzero  Gumbel MuZero: Gumbel top-k and sequential halving at the root
                 (`mcts_jax.GumbelPolicy` with mctx's options); the policy target
                 is its improved policy; for few simulations.
    stochastic_muzero  Stochastic MuZero: afterstates and learned chance codes
                 (`mcts_jax.StochasticMuZeroPolicy`).

The game plays the moves and gives the root's legal moves; the search never
steps it.
"""

from __future__ import annotations

from typing import Any

from training import learner as learner_lib
from training import policies
from training.config import (TrainConfig, augmented_game, game_spec, make_game,
                             self_play_policy, stochastic_policy_name)
from training.muzero import networks, search
from training.muzero.learner import LearnedModelLearner
from training.muzero.self_play import LearnedModelSelfPlay
from training.muzero.support import Support

POLICY_NAMES = {"muzero": "muzero", "gumbel_muzero": "gumbel_muzero"}


def policy_name(config: TrainConfig) -> str:
    """The search policy of the run's algorithm: MuZero's PUCT, Gumbel
    MuZero's, and for Stochastic MuZero `--policy` with chance nodes
    (alphazero: PUCT as mctx's; gumbel: `mcts_jax.StochasticGumbelPolicy`)."""
    if config.algorithm == "stochastic_muzero":
        return stochastic_policy_name(config.policy)
    return POLICY_NAMES[config.algorithm]


def model_config(config: TrainConfig) -> networks.ModelConfig:
    support = Support(bound=float(config.support_bound), num_bins=config.support_bins,
                      transform=config.support_transform)
    return networks.ModelConfig(
        kind=config.network, latent_size=config.latent_size, hidden=config.hidden,
        num_layers=config.layers, channels=config.channels, num_blocks=config.blocks,
        value_support=support, reward_support=support,
        num_chance_codes=config.chance_codes if config.algorithm == "stochastic_muzero" else 0)


def one_player(config: TrainConfig) -> bool:
    return getattr(game_spec(config.game), "num_players", 2) == 1


def search_discount(config: TrainConfig) -> float:
    """-1 for two-player games (the perspective flips), --discount for one-player."""
    return float(config.discount) if one_player(config) else -1.0


def value_targets(config: TrainConfig) -> str:
    if config.value_targets != "auto":
        return config.value_targets
    return "n_step" if one_player(config) else "outcome"


def policy(config: TrainConfig, num_actions: int, greedy: bool = False, **changes):
    """The search policy value of the run's algorithm: with root noise in
    self-play; `greedy`: no noise, the most visited move (evaluation)."""
    extra = dict(changes)
    if one_player(config):  # unbounded values: min-max normalised Q
        extra.setdefault("value_range", None)
    return policies.policy_from_name(
        policy_name(config), num_actions=num_actions, root_noise=not greedy,
        sample_action=False, max_num_considered_actions=config.max_num_considered_actions,
        dirichlet_fraction=config.dirichlet_fraction, dirichlet_alpha=config.dirichlet_alpha,
        **extra)


def make_model(config: TrainConfig, game) -> networks.LearnedModel:
    """The learned model of a run's settings for `game`."""
    return networks.make_model(model_config(config), game)


def build(config: TrainConfig, mesh=None, user_policy: Any = None):
    """(game, model, self-play, learner) of a learned-model run."""
    game = make_game(config)
    model = make_model(config, game)
    changes = dict(max_nodes=config.search_max_nodes)
    if config.simulations_per_step > 1:
        changes["simulations_per_step"] = config.simulations_per_step
    play_policy = (self_play_policy(config, game.num_actions, user_policy)
                   if user_policy is not None else policy(config, game.num_actions, **changes))
    discount = search_discount(config)
    reanalyse_simulations = config.reanalyse_simulations or config.num_simulations
    player = LearnedModelSelfPlay(
        game=game, model=model, policy=play_policy, num_simulations=config.num_simulations,
        num_games=config.num_games, reuse_tree=config.reuse_tree,
        temperature_moves=config.temperature_moves if config.algorithm == "muzero" else 0,
        random_opening_plies=config.random_opening_plies,
        random_opening_fraction=config.random_opening_fraction,
        random_opening_interleaved=config.random_opening_interleaved,
        max_game_length=config.max_game_length, mesh=mesh, search_mode=config.search_mode,
        fast_simulations=config.fast_simulations,
        full_search_fraction=config.full_search_fraction, discount=discount)
    optimizer = learner_lib.make_optimizer(
        config.learning_rate, config.total_updates, config.warmup_fraction,
        config.end_learning_rate_fraction, config.weight_decay, config.clip_norm)
    learner = LearnedModelLearner(
        model=model, optimizer=optimizer, batch_size=config.train_batch_size,
        num_unroll=config.num_unroll_steps, value_targets=value_targets(config),
        td_steps=config.td_steps, discount=float(config.discount), search_discount=discount,
        value_weight=config.value_weight, commitment_weight=config.commitment_weight,
        consistency_weight=config.consistency_weight,
        code_usage_weight=config.code_usage_weight,
        reanalyse_fraction=config.reanalyse_fraction,
        reanalyse_policy=play_policy if reanalyse_simulations < play_policy.options.max_nodes
        else play_policy.replace(max_nodes=reanalyse_simulations + 1),
        reanalyse_simulations=reanalyse_simulations,
        symmetries=augmented_game(config), mesh=mesh)
    return game, model, player, learner


def agent(config: TrainConfig, model: networks.LearnedModel, num_simulations: int,
          num_actions: int, greedy: bool = True) -> search.LearnedModelPlayer:
    """The arena player of a learned model: its search, no noise when greedy."""
    return search.LearnedModelPlayer(model=model, policy=policy(config, num_actions, greedy),
                                     num_simulations=num_simulations,
                                     discount=search_discount(config))


def identity(config: TrainConfig) -> dict:
    """What a checkpoint of a learned-model run must match."""
    return dict(algorithm=config.algorithm,
                model=repr(model_config(config)))
