"""Training configuration: one flat dataclass, defaults per game, presets, the CLI.

Resolution order (later wins): `TrainConfig` defaults, the game's registry
entry (`envs.spec(game)`: its default network, `train_defaults`, then
`presets[preset]`), flags given on the command line. Resuming a run
folder starts from its saved `config.json` instead, and only flags given on the
command line change it; flags that fix array shapes (`SHAPE_FIELDS`) must
match the saved run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any, Dict, List, Optional, Sequence

import envs
from mcts_jax import networks


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run (hashable; saved as config.json)."""

    game: str = "tic_tac_toe"
    preset: str = "default"
    seed: int = 0
    iterations: int = 100
    # network (None: the game's default in networks.DEFAULT_NETWORKS)
    network: str = "resnet"
    channels: int = 64
    blocks: int = 6
    hidden: int = 128
    layers: int = 3
    value_hidden: int = 64
    # self-play
    policy: str = "gumbel"               # "gumbel" or "alphazero"
    simulations: int = 32
    num_games: int = 256                 # B games played at once
    moves_per_iteration: int = 32        # self-play moves (per game row) per iteration
    max_nodes: int = 0                   # 0: simulations + 1 (x 4 with tree reuse)
    reuse_tree: bool = False
    temperature_moves: int = 10          # alphazero: sample N^(1/T=1) for this many plies
    dirichlet_fraction: float = 0.25     # alphazero root noise
    dirichlet_alpha: float = 0.3
    considered_actions: int = 16         # gumbel: max_num_considered_actions
    random_opening_plies: int = 0        # games open with U[0, this] random, unrecorded plies
    # replay and learner
    replay_size: int = 65536             # samples (rounded to a multiple of num_games)
    min_replay: int = 4096               # ready samples before the first update
    train_batch_size: int = 256
    updates_per_iteration: int = 32
    learning_rate: float = 1e-3
    warmup_fraction: float = 0.05
    end_learning_rate_fraction: float = 0.05
    weight_decay: float = 1e-4
    clip_norm: float = 1.0
    value_weight: float = 1.0
    augment: bool = True
    # checkpoints
    checkpoint_every: int = 1
    keep_checkpoints: int = 3
    # evaluation
    eval_every: int = 10
    eval_games: int = 64                 # per opponent, half as each side
    eval_simulations: int = 32           # agent's search in evaluation matches
    uct_simulations: int = 0             # 0: same as eval_simulations
    uct_playouts: int = 1
    elo_every: int = 10                  # snapshot + matches against earlier snapshots
    elo_opponents: int = 4
    elo_opening_moves: int = 2           # random plies opening each Elo game
    final_games: int = 200               # end-of-run match against the strongest reference
    final_simulations: int = 64
    # Connect Four against the perfect solver (bitbully, optional: the `eval` extra;
    # envs.connect_four_solver): accuracy on the first positions of the benchmark
    # file, and games against the solver (half with the agent moving first)
    solver_positions: int = 300          # per periodic evaluation (0: none)
    solver_games: int = 40               # per periodic evaluation (0: none)
    final_solver_positions: int = 1000   # at the end (the benchmark holds 1000); the
                                         # final games against the solver: final_games
    max_game_length: int = 0             # plies before a game is a draw, in self-play and
                                         # evaluation (0: the game's own rules)
    # devices (mcts_jax.sharding): self-play games, replay buffer and minibatches
    # split over a 1-D "data" mesh of this many devices; 0: every device of
    # every process. num_games and train_batch_size must be multiples of it.
    devices: int = 0
    search_mode: str = "exact"           # "exact": self-play equal to one device, bit for bit;
                                         # "local": each device searches its games alone
                                         # (no communication; other random numbers)

    # ---- derived -----------------------------------------------------------
    def network_config(self) -> networks.NetworkConfig:
        return networks.NetworkConfig(kind=self.network, channels=self.channels,
                                      num_blocks=self.blocks, hidden=self.hidden,
                                      num_layers=self.layers, value_hidden=self.value_hidden)

    @property
    def replay_slots(self) -> int:
        """T, time slots of the [T, B] replay ring."""
        return max(1, -(-self.replay_size // self.num_games))

    @property
    def search_max_nodes(self) -> int:
        if self.max_nodes:
            return self.max_nodes
        return (self.simulations + 1) * (4 if self.reuse_tree else 1)

    @property
    def total_updates(self) -> int:
        return self.iterations * self.updates_per_iteration

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"config.json has unknown settings: {', '.join(unknown)}")
        return cls(**data)


# Settings that fix array shapes (network, replay ring, self-play batch,
# search tree): a run folder cannot be resumed with other values.
SHAPE_FIELDS = ("game", "network", "channels", "blocks", "hidden", "layers", "value_hidden",
                "num_games", "replay_size", "reuse_tree", "max_nodes", "simulations", "policy")

_CHOICES = {"network": ("resnet", "mlp"), "policy": ("gumbel", "alphazero"),
            "search_mode": ("exact", "local")}
_HELP = {
    "game": "game to train", "preset": "named flag set for the game (see PRESETS)",
    "iterations": "training iterations (self-play + updates + maybe eval each)",
    "policy": "search used in self-play", "simulations": "simulations per self-play move",
    "num_games": "self-play games played at once (B)",
    "moves_per_iteration": "self-play moves per game row per iteration",
    "reuse_tree": "keep the chosen child's subtree for the next move",
    "replay_size": "replay buffer capacity in samples",
    "augment": "random board symmetry per training sample, where the game has one",
    "checkpoint_every": "iterations between checkpoints",
    "eval_every": "iterations between evaluations (0: only at the end)",
    "elo_every": "iterations between snapshots for Elo matches (0: none)",
    "devices": "devices of the 1-D data mesh that self-play and training are split over "
               "(0: every device of every process); --num-games and --train-batch-size "
               "must be multiples of it",
    "solver_positions": "connect_four: benchmark positions judged by the perfect solver per "
                        "periodic evaluation (needs bitbully; 0: none)",
    "solver_games": "connect_four: games against the perfect solver per periodic evaluation, "
                    "half with the agent moving first (needs bitbully; 0: none)",
    "final_solver_positions": "connect_four: benchmark positions judged at the end of the run",
    "search_mode": "self-play search over several devices: exact (the one-device search, bit "
                   "for bit; small collectives every simulation) or local (each device alone, "
                   "no communication, its own random numbers)",
}


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="train.py",
        description="AlphaZero training with mcts_jax on pgx games. With no arguments: "
                    "tic-tac-toe to perfect play on a CPU.")
    parser.add_argument("--run-dir", default=None,
                        help="run folder (default runs/<game> or runs/<game>_<preset>)")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete an existing run folder and start fresh")
    parser.add_argument("--no-resume", action="store_true",
                        help="refuse to continue an existing run folder (error instead)")
    parser.add_argument("--resume", action="store_true",
                        help="require an existing run folder to continue (default: continue "
                             "if one exists, else start)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    launch = parser.add_argument_group(
        "multi-process launch (several hosts; see docs/multi_device.md). One process per "
        "host, each started with the same flags; unset flags are read from "
        "JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID")
    launch.add_argument("--coordinator-address", default=None,
                        help="host:port of process 0, reachable from every process")
    launch.add_argument("--num-processes", type=int, default=None,
                        help="number of processes in the job")
    launch.add_argument("--process-id", type=int, default=None,
                        help="this process's index in [0, num-processes)")
    launch.add_argument("--distributed", action="store_true",
                        help="join a multi-process job detected by JAX itself (Cloud TPU VM "
                             "pod slice, SLURM, Open MPI); same as MCTS_JAX_DISTRIBUTED=1")
    for field in dataclasses.fields(TrainConfig):
        kwargs: Dict[str, Any] = dict(default=None, help=_HELP.get(field.name))
        if field.type in ("bool", bool):
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = {"int": int, "float": float, "str": str}[str(field.type)]
        if field.name in _CHOICES:
            kwargs["choices"] = _CHOICES[field.name]
        parser.add_argument(flag_name(field.name), dest=field.name, **kwargs)
    return parser


def explicit_settings(args: argparse.Namespace) -> Dict[str, Any]:
    """The TrainConfig fields given on the command line."""
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def resolve(explicit: Dict[str, Any]) -> TrainConfig:
    """A fresh run's config: defaults, the game's, the preset's, then `explicit`."""
    game = explicit.get("game", TrainConfig.game)
    if game not in envs.GAMES:
        raise ValueError(f"unknown game {game!r}; known games: {', '.join(envs.GAMES)}")
    spec = envs.spec(game)
    preset = explicit.get("preset", "default")
    if preset != "default" and preset not in spec.presets:
        known = ", ".join(["default"] + sorted(spec.presets))
        raise ValueError(f"unknown --preset {preset!r} for {game}; known: {known}")
    settings: Dict[str, Any] = dict(game=game)
    settings.update(spec.network_settings())
    settings.update(spec.train_defaults)
    settings.update(spec.presets.get(preset, {}))
    settings.update(explicit)
    config = TrainConfig(**settings)
    validate(config)
    return config


def resume_config(saved: TrainConfig, explicit: Dict[str, Any]) -> TrainConfig:
    """The config of a resumed run: the saved one with `explicit` flags on top.
    Raises ValueError naming the flag when a shape-fixing setting differs."""
    for name in SHAPE_FIELDS + ("preset",):
        if name in explicit and explicit[name] != getattr(saved, name):
            raise ValueError(
                f"cannot resume: the run folder was made with {flag_name(name)}="
                f"{getattr(saved, name)!r}, not {explicit[name]!r} (use another --run-dir, "
                f"or --overwrite to start over)")
    config = dataclasses.replace(saved, **explicit)
    validate(config)
    return config


def changed_settings(old: TrainConfig, new: TrainConfig) -> List[str]:
    return [f"{flag_name(f.name)}: {getattr(old, f.name)!r} -> {getattr(new, f.name)!r}"
            for f in dataclasses.fields(TrainConfig) if getattr(old, f.name) != getattr(new, f.name)]


def validate(config: TrainConfig) -> None:
    """Raises ValueError naming the flag of the first bad setting."""
    if config.game not in envs.GAMES:
        raise ValueError(f"unknown game {config.game!r}; known games: {', '.join(envs.GAMES)}")
    for name, choices in _CHOICES.items():
        if getattr(config, name) not in choices:
            raise ValueError(f"{flag_name(name)} must be one of {choices}, "
                             f"got {getattr(config, name)!r}")
    positive = ("iterations", "simulations", "num_games", "moves_per_iteration", "replay_size",
                "train_batch_size", "updates_per_iteration", "checkpoint_every",
                "keep_checkpoints", "eval_simulations", "final_simulations", "considered_actions",
                "uct_playouts", "channels", "hidden", "layers", "value_hidden")
    for name in positive:
        if getattr(config, name) < 1:
            raise ValueError(f"{flag_name(name)} must be >= 1, got {getattr(config, name)}")
    non_negative = ("blocks", "min_replay", "temperature_moves", "eval_every", "elo_every",
                    "elo_opponents", "elo_opening_moves", "max_nodes", "uct_simulations",
                    "max_game_length", "eval_games", "final_games", "seed",
                    "random_opening_plies", "devices", "solver_positions", "solver_games",
                    "final_solver_positions")
    for name in non_negative:
        if getattr(config, name) < 0:
            raise ValueError(f"{flag_name(name)} must be >= 0, got {getattr(config, name)}")
    for name in ("eval_games", "final_games", "solver_games"):
        if getattr(config, name) % 2:
            raise ValueError(f"{flag_name(name)} must be even (half the games as each side), "
                             f"got {getattr(config, name)}")
    if config.max_nodes and config.max_nodes < config.simulations + 1:
        raise ValueError(f"--max-nodes must be 0 or >= --simulations + 1, got {config.max_nodes}")
    for name in ("learning_rate", "weight_decay", "clip_norm", "value_weight",
                 "dirichlet_alpha"):
        if getattr(config, name) < 0 or (name in ("learning_rate", "dirichlet_alpha")
                                         and getattr(config, name) == 0):
            raise ValueError(f"{flag_name(name)} must be positive, got {getattr(config, name)}")
    for name in ("warmup_fraction", "end_learning_rate_fraction", "dirichlet_fraction"):
        if not 0.0 <= getattr(config, name) <= 1.0:
            raise ValueError(f"{flag_name(name)} must be in [0, 1], got {getattr(config, name)}")


def describe(config: TrainConfig) -> str:
    """A printable block of every setting."""
    width = max(len(f.name) for f in dataclasses.fields(TrainConfig))
    return "\n".join(f"  {f.name:<{width}} {getattr(config, f.name)}"
                     for f in dataclasses.fields(TrainConfig))


def load_json(path: str) -> TrainConfig:
    with open(path) as f:
        return TrainConfig.from_json(json.load(f))


def parse(argv: Optional[Sequence[str]] = None):
    """(argparse namespace, explicit TrainConfig settings) from the command line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.game is not None and args.game not in envs.GAMES:
        parser.error(f"unknown game {args.game!r}; known games: {', '.join(envs.GAMES)}")
    return args, explicit_settings(args)
