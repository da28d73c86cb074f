"""How each game is trained: its default network, training defaults and presets.

    entry = presets.for_game("connect_four")   # a GamePresets
    entry.network                              # the default NetworkConfig
    entry.defaults                             # TrainConfig fields for this game
    entry.presets["cpu"]                       # TrainConfig fields of a preset

What a game *is* (rules, encoding, bounds, symmetries, lean layout) is the
registry's (`envs.registry`, `envs.chance_games`); how we *train* on it is
here, keyed by the game's name. `training.config.resolve` applies, in order:
`TrainConfig` defaults, the entry's network (`network_settings`), its
`defaults`, then `presets[preset]`. Every game has a "tiny" preset (a smoke
test of the whole pipeline at the smallest shapes). A pgx id with no entry
(a game the registry derives generically, `envs.registry.generic_spec`) gets
`generic(observation_shape)`: a ResNet for [H, W, C] observations, an MLP
otherwise, no defaults of its own and a tiny preset.

docs/presets.md is generated from this table (`python -m training.presets >
docs/presets.md`; a test checks it is current).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, Mapping, Sequence

from training import networks
from training.networks import NetworkConfig


@dataclasses.dataclass(frozen=True)
class GamePresets:
    """How one game is trained.

    network: the default network (when none is given).
    defaults: TrainConfig fields on top of its defaults for this game.
    presets: {preset name: TrainConfig fields}; every game has "tiny".
    algorithms: {--algorithm: TrainConfig fields}, applied after `defaults`
      and before the preset (a learned model's supports, say).
    """

    network: NetworkConfig
    defaults: Mapping[str, Any]
    presets: Mapping[str, Mapping[str, Any]]
    algorithms: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    def network_settings(self) -> Dict[str, Any]:
        """The default network as TrainConfig fields."""
        return network_settings(self.network)


def network_settings(net: NetworkConfig) -> Dict[str, Any]:
    """A NetworkConfig as TrainConfig fields."""
    return dict(network=net.kind, channels=net.channels, blocks=net.num_blocks,
                hidden=net.hidden, layers=net.num_layers, value_hidden=net.value_hidden,
                value_head=net.value_head, value_scale=net.value_scale)


# ---- shared settings -----------------------------------------------------------------

# A smoke test of the whole pipeline (self-play, learner, evaluation, Elo,
# final match, checkpoints) at the smallest shapes, for any game.
_TINY_RESNET = dict(network="resnet", channels=8, blocks=1, value_hidden=8)
_TINY = dict(iterations=2, num_simulations=4, num_games=4, moves_per_iteration=4, replay_size=64,
             min_replay=4, train_batch_size=8, updates_per_iteration=2, eval_every=2,
             elo_every=2, eval_games=2, eval_simulations=2, uct_simulations=2, uct_playouts=1,
             final_games=2, final_simulations=2, elo_opponents=1, max_num_considered_actions=4,
             max_game_length=8)

# The tiny presets of the first five games, as they were in training/config.py.
# Connect Four's tiny preset plays whole games: 2 x 24 plies cover its 42, so
# every game has ended and been learned from by the second iteration's updates
# (4 plies an iteration finished no game: 0 updates, an untrained agent).
_C4_TINY = dict(iterations=2, network="resnet", channels=8, blocks=1, value_hidden=8,
                num_simulations=8, num_games=8, moves_per_iteration=24, replay_size=256,
                min_replay=8, train_batch_size=16, updates_per_iteration=2,
                eval_every=2, elo_every=1, eval_games=4, eval_simulations=4,
                final_games=4, final_simulations=4, elo_opponents=1,
                solver_positions=16, solver_games=4, final_solver_positions=16)
_BOARD_TINY = dict(_C4_TINY, iterations=3, moves_per_iteration=4, max_game_length=6,
                   eval_every=3, elo_every=3)

_LARGE_BOARD = dict(iterations=400, num_simulations=64, num_games=512, moves_per_iteration=64,
                    replay_size=524288, min_replay=32768, train_batch_size=1024,
                    updates_per_iteration=64, eval_simulations=64)


# Chess (as it was in training/config.py) and the other chess-like games.
_CHESS_LIKE = dict(iterations=400, num_simulations=64, num_games=512, moves_per_iteration=64,
                   replay_size=262144, min_replay=32768, train_batch_size=1024,
                   updates_per_iteration=64, eval_simulations=64, max_num_considered_actions=16)
_TINY_BOARD_GAME = dict(_TINY, **_TINY_RESNET)


def _resnet(channels: int, blocks: int, value_hidden: int) -> NetworkConfig:
    return NetworkConfig(kind="resnet", channels=channels, num_blocks=blocks,
                         value_hidden=value_hidden)


def _go(size: int) -> GamePresets:
    return GamePresets(
        network=_resnet(128, 6, 128),
        defaults=(dict(_LARGE_BOARD, uct_playouts=1) if size == 9 else
                  dict(_LARGE_BOARD, num_games=256, moves_per_iteration=128)),
        presets={"tiny": _BOARD_TINY if size == 9 else
                 _TINY_BOARD_GAME})


# ---- the entries ---------------------------------------------------------------------

_PRESETS: Dict[str, GamePresets] = {
    "tic_tac_toe": GamePresets(
        # MuZero reaches perfect play later than AlphaZero (it learns the rules
        # too): twice the iterations, evaluated less often. Its perfect play
        # was measured without board symmetries (learned models had none
        # then); augmentation is not measured on it, so it stays off here.
        algorithms={name: dict(iterations=120, eval_every=10, elo_every=10, augment=False)
                    for name in ("muzero", "gumbel_muzero", "stochastic_muzero")},
        network=NetworkConfig(kind="mlp", hidden=128, num_layers=3, value_hidden=64),
        # Tic-tac-toe is the default job: perfect play in a few minutes on a laptop CPU.
        defaults=dict(iterations=60, policy="gumbel", num_simulations=32, num_games=256,
                      random_opening_plies=6,
                      moves_per_iteration=18, replay_size=32768, min_replay=2048,
                      train_batch_size=256, updates_per_iteration=48,
                      learning_rate=2e-3, checkpoint_every=1, eval_every=3,
                      elo_every=3, eval_games=200, eval_simulations=64,
                      final_games=200, final_simulations=64),
        presets={"tiny": dict(iterations=3, num_simulations=8, num_games=16, moves_per_iteration=4,
                              replay_size=512, min_replay=16, train_batch_size=32,
                              updates_per_iteration=2, hidden=16, layers=1, value_hidden=8,
                              eval_every=2, elo_every=1, eval_games=8, eval_simulations=8,
                              final_games=8, final_simulations=8, elo_opponents=2),
                 # One GPU (issue 53): how soon perfect play comes with 4x the
                 # games in flight and 4x the minibatch at the default's replay
                 # ratio (each recorded sample drawn about 2.7 times). An
                 # evaluation every 2 iterations against perfect play (200
                 # games at the final's settings); no Elo; a checkpoint every
                 # 20.
                 "gpu": dict(num_games=1024, replay_size=131072, min_replay=8192,
                             train_batch_size=1024, updates_per_iteration=48,
                             checkpoint_every=20, eval_every=2, elo_every=0)}),
    "connect_four": GamePresets(
        network=_resnet(64, 5, 64),
        defaults=dict(iterations=200, num_simulations=64, num_games=512,
                      moves_per_iteration=42, replay_size=262144, min_replay=16384,
                      train_batch_size=512, updates_per_iteration=64,
                      eval_simulations=64, eval_every=10),
        presets={
            # About 55 minutes on a 2-core CPU (docs/training.md has its curve
            # against the perfect solver). Self-play games open with U[0, 8]
            # random plies: 92.7% and 92.3% search accuracy on two seeds
            # against 86% from the empty board (connect_four_recipe openings,
            # openings_hour).
            "cpu": dict(iterations=660, network="resnet", channels=32, blocks=3,
                        random_opening_plies=8,
                        value_hidden=32, policy="gumbel", num_simulations=32,
                        fast_simulations=8, full_search_fraction=0.25,
                        search_value_weight=0.5, overlap_phases=True, num_games=128,
                        moves_per_iteration=32, replay_size=262144, min_replay=4096,
                        train_batch_size=256, updates_per_iteration=48, learning_rate=2e-3,
                        eval_every=110, elo_every=220, elo_opponents=2, eval_games=40,
                        eval_simulations=200, uct_simulations=32, solver_positions=500,
                        solver_games=40, final_games=200, final_simulations=200,
                        checkpoint_every=5),
            # One GPU (issue 53): the cpu preset's recipe (Gumbel self-play with
            # playout cap randomisation, U[0, 8] random openings, the 0.5 z +
            # 0.5 v value target, 32 simulations: 64 and 128 did no better at
            # equal time on the CPU) with 8x its games in flight, the game's
            # default 64x5 network, minibatches of 1024 at the cpu preset's
            # replay ratio (each recorded sample drawn about 12 times), and
            # 200 iterations: about 6 minutes on one H100 if an iteration
            # takes 1.5-2 s (480 batched searches' network calls of self-play,
            # at the ~1.3 ms a simulation step of 1024 searches that 2048's
            # H100 runs took, and 96 updates; counted, not yet timed). No Elo;
            # an evaluation every 100 iterations at the final's 200
            # simulations; a checkpoint every 25. benchmarks/gpu_training.sh
            # runs it at a given budget.
            "gpu": dict(iterations=200, network="resnet", channels=64, blocks=5,
                        value_hidden=64, policy="gumbel", num_simulations=32,
                        fast_simulations=8, full_search_fraction=0.25,
                        search_value_weight=0.5, random_opening_plies=8, num_games=1024,
                        moves_per_iteration=32, replay_size=524288, min_replay=8192,
                        train_batch_size=1024, updates_per_iteration=96, learning_rate=2e-3,
                        eval_every=100, elo_every=0, eval_games=40, eval_simulations=200,
                        uct_simulations=200, solver_positions=1000, solver_games=40,
                        final_games=200, final_simulations=200, checkpoint_every=25),
            "tiny": _C4_TINY,
        }),
    "othello": GamePresets(
        network=_resnet(128, 6, 128),
        defaults=dict(iterations=300, num_simulations=64, num_games=512,
                      moves_per_iteration=64, replay_size=524288, min_replay=32768,
                      train_batch_size=1024, updates_per_iteration=64,
                      eval_simulations=64),
        presets={"tiny": _BOARD_TINY}),
    "go_9x9": _go(9),
    "go_19x19": _go(19),
    "chess": GamePresets(
        network=_resnet(128, 6, 128),
        defaults=_CHESS_LIKE,
        presets={"tiny": dict(iterations=3, network="resnet", channels=8, blocks=1,
                              value_hidden=8, num_simulations=4, num_games=4,
                              moves_per_iteration=4, replay_size=64, min_replay=4,
                              train_batch_size=8, updates_per_iteration=2, eval_every=3,
                              elo_every=3, eval_games=2, eval_simulations=2,
                              uct_simulations=2, final_games=2, final_simulations=2,
                              elo_opponents=1, max_game_length=6)}),
    "gardner_chess": GamePresets(
        network=_resnet(64, 5, 64),
        defaults=dict(_CHESS_LIKE, iterations=300),
        presets={"tiny": _TINY_BOARD_GAME}),
    "animal_shogi": GamePresets(
        network=_resnet(64, 4, 64),
        defaults=dict(iterations=200, num_simulations=64, num_games=512,
                      moves_per_iteration=32, replay_size=262144, min_replay=16384,
                      train_batch_size=512, updates_per_iteration=64,
                      eval_simulations=64),
        presets={"tiny": _TINY_BOARD_GAME}),
    "shogi": GamePresets(
        network=_resnet(128, 6, 128),
        defaults=_CHESS_LIKE,
        presets={"tiny": _TINY_BOARD_GAME}),
    "hex": GamePresets(
        network=_resnet(128, 6, 128),
        defaults=dict(iterations=300, num_simulations=64, num_games=512,
                      moves_per_iteration=64, replay_size=524288, min_replay=32768,
                      train_batch_size=1024, updates_per_iteration=64,
                      eval_simulations=64),
        presets={"tiny": _TINY_BOARD_GAME}),
    # The stochastic games (envs/chance_games.py).
    "2048": GamePresets(
        # The learned models: rewards and values of up to ~10^5 points on
        # MuZero's h-scaled support of 601 points (h(10^5) ~ 316). Without the
        # usage and consistency losses Stochastic MuZero's codebook collapsed
        # to one code in the first iterations (its chance loss fell to about
        # 0: the model had made 2048 deterministic); see docs/learned_models.md.
        algorithms=dict(
            {name: dict(support_bound=300.0, support_bins=601, support_transform=True,
                        discount=0.997)
             for name in ("muzero", "gumbel_muzero")},
            # One unrolled step, not five: an update is 4.5x cheaper and
            # 10-minute runs ended at 4,277 against 2,740 (discount 0.99 in
            # both; docs/learned_models.md, "2048: what limits the agents").
            # Self-play searches 16 simulations, not 32: more iterations in the
            # same time, and 35-minute runs side by side ended at 5,164
            # against 3,887 (seed 9; docs/learned_models.md).
            stochastic_muzero=dict(support_bound=300.0, support_bins=601,
                                   support_transform=True, consistency_weight=1.0,
                                   code_usage_weight=1.0, num_unroll_steps=1,
                                   discount=0.99, num_simulations=16)),
        # A network's value is the points still to come, with no bound (a
        # game reaching the 2048 tile scores about 20,000): a linear value
        # head in units of 1,000 points (the game's `value_scale`).
        network=NetworkConfig(kind="mlp", hidden=256, num_layers=3, value_hidden=64,
                              value_head="linear", value_scale=1000.0),
        defaults=dict(iterations=100, policy="alphazero", num_simulations=32,
                      num_games=128, moves_per_iteration=32, temperature_moves=0,
                      dirichlet_fraction=0.1, replay_size=65536, min_replay=4096,
                      train_batch_size=256, updates_per_iteration=32, elo_every=0,
                      eval_every=10, eval_games=16, eval_simulations=32,
                      final_games=32, final_simulations=64, augment=False,
                      # AlphaZero's value target: the points still to come,
                      # discounted by 0.99 a move, in the search alike. Two
                      # 30-minute runs side by side ended at 5,581 against
                      # 3,436 undiscounted (docs/learned_models.md, "2048:
                      # what limits the agents").
                      discount=0.99),
        # tiny: a smoke test; games cut at 8 moves so that samples are ready
        # and updates run in the first iterations.
        presets={"tiny": dict(iterations=2, num_simulations=4, num_games=8,
                              moves_per_iteration=8, replay_size=256, min_replay=8,
                              train_batch_size=16, updates_per_iteration=2, hidden=16, layers=1,
                              value_hidden=8, eval_every=2, eval_games=2, eval_simulations=4,
                              final_games=2, final_simulations=4, max_game_length=8)}),
    "backgammon": GamePresets(
        network=NetworkConfig(kind="mlp", hidden=128, num_layers=3, value_hidden=64,
                              value_scale=3.0),
        # Random playouts run 90-700 plies: the UCT opponent cuts them at 32
        # and scores the pip-count race there (`--uct-playout-length`).
        defaults=dict(iterations=100, policy="alphazero", num_simulations=32,
                      num_games=128, moves_per_iteration=32, temperature_moves=0,
                      replay_size=65536, min_replay=4096, train_batch_size=256,
                      updates_per_iteration=32, eval_every=10, eval_games=32,
                      eval_simulations=32, uct_playout_length=32, elo_every=10,
                      final_games=100, final_simulations=32, augment=False),
        presets={"tiny": dict(iterations=2, num_simulations=4, num_games=8,
                              moves_per_iteration=8, replay_size=256, min_replay=8,
                              train_batch_size=16, updates_per_iteration=2, hidden=16, layers=1,
                              value_hidden=8, eval_every=2, eval_games=2, eval_simulations=4,
                              uct_simulations=4, uct_playout_length=4, elo_every=1,
                              elo_opponents=1, final_games=2, final_simulations=4,
                              max_game_length=8)}),
    # The control tasks (envs/control.py, gymnax): Sampled AlphaZero (and,
    # with --algorithm sampled_muzero, Sampled MuZero). PUCT self-play
    # samples every step's action from its visits (temperature_moves = the
    # episode's 200 steps); Gumbel's own noise explores.
    # Pendulum-v1's episodes are 200 steps from random starts, rewards in
    # [-16.3, 0]: a value is a discounted return down to about -1,600, a
    # linear head in units of 100. A sample waits for its episode's end, so
    # the replay ring holds at least 200 slots per game row.
    "pendulum": GamePresets(
        network=NetworkConfig(kind="mlp", hidden=64, num_layers=2, value_hidden=64,
                              value_head="linear", value_scale=100.0),
        defaults=dict(algorithm="sampled_alphazero", policy="gumbel", iterations=200,
                      num_simulations=32, num_samples=20, num_games=64,
                      moves_per_iteration=50, temperature_moves=200, replay_size=64 * 400,
                      min_replay=4096, train_batch_size=256, updates_per_iteration=50,
                      learning_rate=1e-3, discount=0.99, eval_every=20, eval_games=16,
                      eval_simulations=32, elo_every=0, final_games=100,
                      final_simulations=32, augment=False),
        # Sampled MuZero: values down to about -1,600 and rewards in [-16.3, 0]
        # on MuZero's h-scaled support (h(1,630) ~ 42), 91 points 1 apart.
        # 400 iterations: the learned model needs more steps than the true
        # one (a 200-iteration run ended at -207, Sampled AlphaZero's at -136).
        algorithms=dict(sampled_muzero=dict(iterations=400, support_bound=45.0, support_bins=91,
                                            support_transform=True, latent_size=64,
                                            num_unroll_steps=5, td_steps=10)),
        # tiny: two iterations of 100 steps finish the first episodes (200
        # steps), so the second iteration updates.
        presets={"tiny": dict(iterations=2, num_simulations=4, num_samples=3, num_games=2,
                              moves_per_iteration=100, replay_size=400, min_replay=8,
                              train_batch_size=8, updates_per_iteration=2, hidden=8, layers=1,
                              value_hidden=8, eval_every=2, eval_games=2, eval_simulations=2,
                              final_games=2, final_simulations=2)}),
}
GAMES = tuple(_PRESETS)


def generic(observation_shape: Sequence[int]) -> GamePresets:
    """The entry of a game with none of its own (from its observation
    shape): a ResNet for [H, W, C] observations and an MLP otherwise, no
    training defaults of its own, and a tiny preset."""
    if len(observation_shape) == 3:
        network = _resnet(64, 4, 64)
        tiny_network = _TINY_RESNET
    else:
        network = NetworkConfig(kind="mlp", hidden=128, num_layers=3, value_hidden=64)
        tiny_network = dict(network="mlp", hidden=16, layers=1, value_hidden=8)
    return GamePresets(network=network, defaults={},
                       presets={"tiny": dict(_TINY, **tiny_network)})


@functools.lru_cache(maxsize=None)
def for_game(name: str) -> GamePresets:
    """The entry of game `name`: its own, or `generic` for a pgx id that
    the registry accepts with generic defaults. Raises the registry's
    ValueError (naming the game, listing the known ones) otherwise."""
    if isinstance(name, str) and name in _PRESETS:
        return _PRESETS[name]
    import envs  # the registry checks the name (and builds the env) only here
    return generic(tuple(envs.spec(name).make_env().observation_shape))


def default_network(name: str) -> NetworkConfig:
    """The network of game `name` when none is given."""
    return for_game(name).network


def default_model(game) -> networks.Model:
    """`networks.make_model` of the game's default network (`default_network`)."""
    name = getattr(game, "name", None)
    try:
        config = default_network(name)
    except ValueError as error:
        raise ValueError(f"default_model: the game {game!r} has no default network ({error}); "
                         f"pass a NetworkConfig to networks.make_model") from None
    return networks.make_model(config, game)


def _network_name(net: NetworkConfig) -> str:
    if net.kind == "mlp":
        return f"MLP {net.num_layers}x{net.hidden}"
    return f"ResNet {net.num_blocks}x{net.channels}"


def markdown() -> str:
    """docs/presets.md, generated from this table (`python -m training.presets`)."""
    lines = [
        "# How each game is trained",
        "",
        "Generated from `training/presets.py` by `python -m training.presets > docs/presets.md`",
        "(a test checks it is current). What each game is (its rules, bounds,",
        "symmetries, lean layout) is in [games.md](games.md); how `train.py` trains",
        "it is here: the default network (`--game NAME` without network flags),",
        "and the presets (`--preset NAME`) on top of the game's training",
        "defaults. [training.md](training.md) explains the settings.",
        "",
        "| game | default network | presets | settings of its own per --algorithm |",
        "|---|---|---|---|",
    ]
    for name in GAMES:
        entry = _PRESETS[name]
        presets = ", ".join(f"`{preset}`" for preset in sorted(entry.presets))
        algorithms = "; ".join(
            f"`{algorithm}`: " + ", ".join(f"{k}={v}" for k, v in settings.items())
            for algorithm, settings in entry.algorithms.items()) or "-"
        lines.append(f"| `{name}` | {_network_name(entry.network)} | {presets} | {algorithms} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(), end="")


__all__ = ["GAMES", "GamePresets", "default_network", "for_game", "generic", "markdown",
           "network_settings"]
