"""Training configuration: one flat dataclass, its records by concern, defaults per
game, presets, the CLI.

`TrainConfig` is flat: the command line sets it field by field and a run
folder's config.json saves it so (a run folder written before the records
loads as it is). `config.records` regroups the fields by concern, once per
config, and each part of a run is given its own record:

    records.game           GameConfig          make_game
    records.search         SearchConfig        self_play_policy, the algorithm's agent
    records.network        networks.NetworkConfig   networks.make_model
    records.learned_model  LearnedModelConfig  training.muzero.setup (the MuZero family)
    records.self_play      SelfPlayConfig      SelfPlay / LearnedModelSelfPlay
    records.replay         ReplayConfig        the replay ring and the loop's first update
    records.optimizer      OptimizerConfig     learner.make_optimizer, the learners
    records.evaluation     EvaluationConfig    training.evaluation, the evaluation schedule
    records.run            RunConfig           the loop: iterations, seed, checkpoints,
                                               devices; the algorithm (`AlgorithmKind`)

Resolution order (later wins): `TrainConfig` defaults, the game's entry in
`training.presets` (`presets.for_game(game)`: its default network, its
`defaults`, its `algorithms[--algorithm]`, then `presets[preset]`), flags
given on the command line.
Resuming a run folder starts from its saved `config.json` instead, and only
flags given on the command line change it; flags that fix array shapes
(`shape_fields()`) must match the saved run. Each field's help text, check
and shape flag live beside it (`setting`); `validate` and `build_parser`
read them.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import typing
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import envs
from envs import control
from mcts_jax import policies as core_policies
from mcts_jax import selection
from training import networks, policies, presets


def setting(default: Any, help: str, check: Optional[str] = None,
            choices: Optional[Tuple[str, ...]] = None, shape: bool = False) -> Any:
    """A TrainConfig field with its documentation and validation beside it.

    help: the --help text. check: one of `CHECKS` ("positive", "non_negative",
    "even", "fraction", "positive_real", "non_negative_real"). choices: the
    allowed strings. shape: the setting fixes array shapes (network, replay
    ring, self-play batch, tree), so a run folder cannot be resumed with
    another value.
    """
    if check is not None and check not in CHECKS:
        raise ValueError(f"unknown check {check!r}; known: {', '.join(CHECKS)}")
    return dataclasses.field(default=default, metadata=dict(
        help=help, check=check, choices=choices, shape=shape))


@dataclasses.dataclass(frozen=True)
class AlgorithmKind:
    """What sets one --algorithm apart, looked up once from its name
    (`ALGORITHM_KINDS`; `records.run.algorithm`): the places that differ by
    algorithm ask these attributes, or the algorithm value built from them
    (`training.build.algorithm_for`), and never compare the name.

    name: the --algorithm name. title: for reports.
    learned_model: the search steps a learned model (the MuZero family),
      not the game.
    chance_codes: the model learns chance codes (Stochastic MuZero).
    sampled_opening: self-play samples the first --temperature-moves plies
      from the visit counts (MuZero's PUCT; AlphaZero decides by --policy).
    policy: the search policy's name ("": --policy's, with chance nodes for
      Stochastic MuZero).
    sampled: the search samples K actions per node from a continuous (or
      huge) action space (`mcts_jax.sampled`): a control task's runs
      (training/control).
    """

    name: str
    title: str
    learned_model: bool
    chance_codes: bool = False
    sampled_opening: bool = False
    policy: str = ""
    sampled: bool = False


ALGORITHM_KINDS: Dict[str, AlgorithmKind] = {kind.name: kind for kind in (
    AlgorithmKind("alphazero", "AlphaZero", learned_model=False),
    AlgorithmKind("muzero", "MuZero", learned_model=True, sampled_opening=True,
                  policy="muzero"),
    AlgorithmKind("gumbel_muzero", "Gumbel MuZero", learned_model=True, policy="gumbel_muzero"),
    AlgorithmKind("sampled_alphazero", "Sampled AlphaZero", learned_model=False, sampled=True),
    AlgorithmKind("sampled_muzero", "Sampled MuZero", learned_model=True, sampled=True),
    AlgorithmKind("stochastic_muzero", "Stochastic MuZero", learned_model=True,
                  chance_codes=True),
)}
ALGORITHMS = tuple(ALGORITHM_KINDS)

# check name -> (predicate, what the value must be)
CHECKS: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "positive": (lambda v: v >= 1, "must be >= 1"),
    "non_negative": (lambda v: v >= 0, "must be >= 0"),
    "even": (lambda v: v >= 0 and v % 2 == 0,
             "must be even and >= 0 (half the games as each side)"),
    "fraction": (lambda v: 0.0 <= v <= 1.0, "must be in [0, 1]"),
    "discount": (lambda v: 0.0 < v <= 1.0, "must be in (0, 1]"),
    "positive_real": (lambda v: v > 0, "must be positive"),
    "non_negative_real": (lambda v: v >= 0, "must be >= 0"),
}


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run (hashable; saved as config.json).

    Each field carries its --help text, its check and whether it fixes array
    shapes (`setting`); `validate` and the command line read them from here.
    Field names follow the library's keyword arguments (`num_simulations`,
    `max_num_considered_actions`, ...). The fields stay flat (flags,
    `TrainConfig(field=...)`, config.json); `records` groups them by concern
    for the parts of a run (`Records`).
    """

    game: str = setting("tic_tac_toe", "game to train (see envs.GAMES and docs/games.md)",
                        shape=True)
    preset: str = setting("default", "named flag set of the game (`tiny`: a smoke test; "
                          "`cpu`: a short CPU run where the game has one)")
    seed: int = setting(0, "seed of every random number of the run", "non_negative")
    iterations: int = setting(100, "training iterations (self-play, updates, maybe evaluation "
                              "each)", "positive")
    max_training_s: float = setting(0.0, "stop after the first iteration that ends past this "
                                    "many seconds of training (all sessions; the final "
                                    "evaluation follows; 0: run every iteration). For "
                                    "comparisons at equal wall time", "non_negative_real")
    # ---- network (defaults: the game's registry entry) ----
    network: str = setting("resnet", "network family", choices=("resnet", "mlp"), shape=True)
    channels: int = setting(64, "resnet: channels of each convolution", "positive", shape=True)
    blocks: int = setting(6, "resnet: residual blocks", "non_negative", shape=True)
    hidden: int = setting(128, "mlp: width of each hidden layer", "positive", shape=True)
    layers: int = setting(3, "mlp: hidden layers", "positive", shape=True)
    value_hidden: int = setting(64, "width of the value head's hidden layer", "positive",
                                shape=True)
    value_head: str = setting("tanh", "the value head's output: tanh (values within "
                              "+-value_scale) or linear (unbounded: 2048's points)",
                              choices=("tanh", "linear"), shape=True)
    value_scale: float = setting(1.0, "the value head's unit on the game's reward scale (1 "
                                 "for +-1 results; backgammon 3; 2048 1000 points)",
                                 "positive_real", shape=True)
    # ---- algorithm ----
    algorithm: str = setting("alphazero", "what is trained: alphazero (the search steps the "
                             "real game) or a learned model that the search steps instead "
                             "(muzero, gumbel_muzero, stochastic_muzero; see "
                             "docs/learned_models.md); for a control task (pendulum), "
                             "sampled_alphazero or sampled_muzero (docs/sampled.md)",
                             choices=ALGORITHMS, shape=True)
    # ---- self-play ----
    policy: str = setting("gumbel", "search used in self-play", choices=("gumbel", "alphazero"),
                          shape=True)
    num_simulations: int = setting(32, "simulations per self-play move", "positive", shape=True)
    num_games: int = setting(256, "self-play games played at once (B)", "positive", shape=True)
    simulations_per_step: int = setting(1, "self-play search: paths descended per tree per "
                                        "step, evaluated together (for few games; see "
                                        "mcts_jax/parallel.py)", "positive")
    moves_per_iteration: int = setting(32, "self-play moves of every game per iteration",
                                       "positive")
    max_nodes: int = setting(0, "tree capacity per search (0: num_simulations + 1, x 4 with "
                             "--reuse-tree)", "non_negative", shape=True)
    reuse_tree: bool = setting(False, "keep the chosen child's subtree for the next move",
                               shape=True)
    transpositions: bool = setting(False, "self-play search is a graph: one node per position, "
                                   "transpositions shared (the game's position keys; "
                                   "alphazero on deterministic games; see docs/graph_search.md)",
                                   shape=True)
    temperature_moves: int = setting(10, "alphazero: plies whose move is sampled from the "
                                     "visit counts (temperature 1); greedy after",
                                     "non_negative")
    dirichlet_fraction: float = setting(core_policies.DIRICHLET_FRACTION, "alphazero: weight "
                                        "of the root's Dirichlet noise", "fraction")
    dirichlet_alpha: float = setting(core_policies.DIRICHLET_ALPHA, "alphazero: concentration "
                                     "of the root's Dirichlet noise", "positive_real")
    forced_playouts: float = setting(0.0, "alphazero: KataGo's forced playouts k at the "
                                     "self-play root (sqrt(k P N) visits per child) with "
                                     "policy target pruning (0: off; KataGo uses 2)",
                                     "non_negative_real")
    max_num_considered_actions: int = setting(selection.MAX_NUM_CONSIDERED_ACTIONS, "gumbel: "
                                              "actions sampled at the root for "
                                              "sequential halving", "positive")
    num_samples: int = setting(20, "sampled algorithms: actions sampled at each node from the "
                               "network's Gaussian (K; the tree's slots per node)", "positive",
                               shape=True)
    proposal_temperature: float = setting(1.0, "sampled algorithms: temperature of the "
                                          "proposal the K actions are drawn from (1: the "
                                          "network's policy itself)", "positive_real")
    sampled_prior: str = setting("corrected", "sampled algorithms: the K samples' prior, "
                                 "corrected (Hubert et al. 2021: beta-hat / beta times pi) or "
                                 "uniform (1/K each, for the ablation)",
                                 choices=("corrected", "uniform"))
    random_opening_plies: int = setting(0, "games open with U[0, this] random plies that are "
                                        "not recorded", "non_negative")
    random_opening_fraction: float = setting(1.0, "share of games opened with "
                                             "--random-opening-plies random plies (drawn per "
                                             "game; the others start from the initial "
                                             "position)", "fraction")
    random_opening_interleaved: float = setting(0.0, "share of the opened games whose "
                                                "opening interleaves searched plies: only the "
                                                "last opening ply and every second one before "
                                                "it are random, so the first recorded player "
                                                "searched its own opening moves against random "
                                                "replies", "fraction")
    fast_simulations: int = setting(0, "playout cap randomisation: simulations of the fast "
                                    "searches, whose moves are played but not recorded (0: "
                                    "every move searched with --num-simulations)",
                                    "non_negative")
    full_search_fraction: float = setting(0.25, "with --fast-simulations: share of the moves "
                                          "searched with --num-simulations and recorded",
                                          "fraction")
    search_value_weight: float = setting(0.0, "value target: (1 - w) x the game's result + w x "
                                         "the search's root value (0: the result alone)",
                                         "fraction")
    max_game_length: int = setting(0, "plies before a game counts as a draw, in self-play and "
                                   "evaluation (0: the game's own rules)", "non_negative")
    # ---- replay and learner ----
    replay_size: int = setting(65536, "replay buffer capacity in samples (rounded up to a "
                               "multiple of --num-games)", "positive", shape=True)
    min_replay: int = setting(4096, "ready samples before the first update", "non_negative")
    train_batch_size: int = setting(256, "samples per update", "positive")
    updates_per_iteration: int = setting(32, "updates per iteration", "positive")
    overlap_phases: bool = setting(False, "run each iteration's self-play and updates at the "
                                   "same time (two threads: 1.4x the iterations per second "
                                   "measured on a 2-core CPU; self-play uses the network from "
                                   "before the iteration's updates, the updates the buffer "
                                   "from before its games)")
    learning_rate: float = setting(1e-3, "peak learning rate (warmup, then cosine decay)",
                                   "positive_real")
    warmup_fraction: float = setting(0.05, "share of all updates spent warming up", "fraction")
    end_learning_rate_fraction: float = setting(0.05, "final learning rate as a share of the "
                                                "peak", "fraction")
    weight_decay: float = setting(1e-4, "AdamW weight decay", "non_negative_real")
    clip_norm: float = setting(1.0, "gradient global-norm clip", "non_negative_real")
    value_weight: float = setting(1.0, "weight of the value loss beside the policy loss",
                                  "non_negative_real")
    augment: bool = setting(True, "a random board symmetry per training sample, where the game "
                            "has symmetries")
    # ---- learned models (--algorithm muzero, gumbel_muzero, stochastic_muzero) ----
    latent_size: int = setting(64, "learned model: width of the latent state", "positive",
                               shape=True)
    num_unroll_steps: int = setting(5, "learned model: moves unrolled per training sample (K)",
                                    "positive")
    value_targets: str = setting("auto", "learned model: value targets, outcome (the game's "
                                 "result), n_step (td-steps rewards plus the search value "
                                 "there) or auto (outcome for two players, n_step for one)",
                                 choices=("auto", "outcome", "n_step"))
    td_steps: int = setting(10, "learned model: n of the n-step value targets", "positive")
    discount: float = setting(0.997, "one-player games: discount of one move in the search "
                              "and the value targets (AlphaZero: the replay's returns; learned "
                              "model: the n-step targets); two-player games ignore it",
                              "discount")
    support_bound: float = setting(1.0, "learned model: values and rewards are categorical over "
                                   "[-bound, bound] (in h-space with --support-transform)",
                                   "positive_real", shape=True)
    support_bins: int = setting(21, "learned model: points of the value and reward support "
                                "(odd)", "positive", shape=True)
    support_transform: bool = setting(False, "learned model: squash values and rewards by "
                                      "MuZero's invertible h(x) before the support (unbounded "
                                      "returns)", shape=True)
    chance_codes: int = setting(32, "stochastic_muzero: chance codes of the learned encoder",
                                "positive", shape=True)
    commitment_weight: float = setting(1.0, "stochastic_muzero: weight of the encoder's "
                                       "commitment loss", "non_negative_real")
    code_usage_weight: float = setting(0.0, "stochastic_muzero: weight of the codebook-usage "
                                       "loss (log C minus the entropy of a minibatch's mean "
                                       "code distribution; against one code taking every "
                                       "outcome)", "non_negative_real")
    consistency_weight: float = setting(0.0, "learned model: weight of the temporal "
                                        "consistency loss (EfficientZero: each predicted "
                                        "latent against the representation of the real next "
                                        "observation; 0: none)", "non_negative_real")
    reanalyse_fraction: float = setting(0.0, "learned model: share of each minibatch whose "
                                        "policy (and n-step bootstrap) targets are recomputed "
                                        "with the latest network", "fraction")
    reanalyse_simulations: int = setting(0, "learned model: simulations of a reanalyse search "
                                         "(0: --num-simulations)", "non_negative")
    # ---- checkpoints ----
    checkpoint_every: int = setting(1, "iterations between checkpoints", "positive")
    keep_checkpoints: int = setting(3, "checkpoints kept on disk", "positive")
    # ---- evaluation ----
    eval_every: int = setting(10, "iterations between evaluations (0: only at the end)",
                              "non_negative")
    eval_games: int = setting(64, "games per opponent in an evaluation, half as each side",
                              "even")
    eval_simulations: int = setting(32, "the agent's simulations in evaluation matches",
                                    "positive")
    uct_simulations: int = setting(0, "the UCT opponent's simulations (0: --eval-simulations)",
                                   "non_negative")
    uct_playouts: int = setting(1, "random playouts per leaf of the UCT opponent", "positive")
    uct_playout_length: int = setting(0, "the UCT opponent's playouts are cut after this many "
                                      "plies and scored by the game's heuristic there "
                                      "(backgammon: the pip-count race; 0: played to the end, "
                                      "at most --max-game-length or 512)", "non_negative")
    elo_every: int = setting(10, "iterations between snapshots for Elo matches (0: none)",
                             "non_negative")
    elo_opponents: int = setting(4, "earlier snapshots each new snapshot plays",
                                 "non_negative")
    elo_opening_moves: int = setting(2, "random plies opening each Elo game", "non_negative")
    final_games: int = setting(200, "games of the end-of-run match against each reference "
                               "opponent", "even")
    final_simulations: int = setting(64, "the agent's simulations in the end-of-run "
                                     "evaluation", "positive")
    solver_positions: int = setting(300, "connect_four: benchmark positions judged by the "
                                    "perfect solver per evaluation (needs bitbully; 0: none)",
                                    "non_negative")
    solver_games: int = setting(40, "connect_four: games against the perfect solver per "
                                "evaluation, half with the agent moving first (needs "
                                "bitbully; 0: none)", "even")
    final_solver_positions: int = setting(1000, "connect_four: benchmark positions judged at "
                                          "the end (the file holds 1000); the final games "
                                          "against the solver are --final-games",
                                          "non_negative")
    # ---- devices (mcts_jax.sharding) ----
    devices: int = setting(0, "devices of the 1-D data mesh that self-play and training are "
                           "split over (0: every device of every process); --num-games and "
                           "--train-batch-size must be multiples of it", "non_negative")
    search_mode: str = setting("exact", "self-play search over several devices: exact (the "
                               "one-device search, bit for bit; small collectives every "
                               "simulation) or local (each device alone, no communication, "
                               "its own random numbers)", choices=("exact", "local"))

    # ---- the records: the settings by concern --------------------------------
    @functools.cached_property
    def records(self) -> "Records":
        """The settings by concern (`Records`), built once per config, on
        first use (`validate` reads them, so `resolve` and `resume_config`
        build them). Each part of a run is given its own record. A record's
        field is the TrainConfig field of its name, but for the derived ones
        computed here (and the network's, `NETWORK_FIELDS`)."""
        derived = dict(
            max_nodes=self.max_nodes or (self.num_simulations + 1) * (4 if self.reuse_tree else 1),
            chance_nodes=is_stochastic(self.game),
            slots=max(1, -(-self.replay_size // self.num_games)),
            total_updates=self.iterations * self.updates_per_iteration,
            algorithm=algorithm_kind(self.algorithm))
        made = {concern: record(**{
            f.name: derived[f.name] if f.name in derived else getattr(self, f.name)
            for f in dataclasses.fields(record)})
            for concern, record in typing.get_type_hints(Records).items() if concern != "network"}
        return Records(network=self.network_config(), **made)

    def network_config(self) -> networks.NetworkConfig:
        """The network record (`records.network`)."""
        return networks.NetworkConfig(**{name: getattr(self, field)
                                         for name, field in NETWORK_FIELDS.items()})

    @property
    def evaluation(self) -> "EvaluationConfig":
        """The evaluation record (`records.evaluation`)."""
        return self.records.evaluation

    @property
    def search_max_nodes(self) -> int:
        """The self-play tree's capacity (`records.search.max_nodes`)."""
        return self.records.search.max_nodes

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "TrainConfig":
        """The config saved in a run folder."""
        check_known(data, "config.json")
        return cls(**data)


# ---- the records -------------------------------------------------------------
# TrainConfig stays flat: the command line sets it and config.json saves it,
# field by field. `TrainConfig.records` regroups its fields by concern, once
# per config; a record's field has its TrainConfig field's name and meaning
# (its --help), except the few derived ones, marked "derived". Every
# TrainConfig field is in exactly one record (max_game_length in two: the
# game's rule, which the evaluation's matches play by too).


def algorithm_kind(name: str) -> AlgorithmKind:
    """The `AlgorithmKind` of an --algorithm name; ValueError naming the flag."""
    if name not in ALGORITHM_KINDS:
        raise ValueError(f"--algorithm must be one of {ALGORITHMS}, got {name!r}")
    return ALGORITHM_KINDS[name]


@dataclasses.dataclass(frozen=True)
class GameConfig:
    """The game record: what `make_game` reads, and the games' length limit
    that self-play plays by (3 fields).

    game: its name. max_game_length: plies before a game counts as a draw
    (0: the rules'). discount: a one-player game's one-move discount.
    """

    game: str
    max_game_length: int
    discount: float


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """The search record: how self-play searches (`self_play_policy`,
    `search_policy_name`; 15 fields).

    policy, num_simulations, simulations_per_step, reuse_tree,
    transpositions, dirichlet_fraction, dirichlet_alpha, forced_playouts,
    max_num_considered_actions, search_mode, num_samples,
    proposal_temperature, sampled_prior: the flags'.
    max_nodes (derived): the tree's capacity, --max-nodes or, for 0,
      num_simulations + 1 (x 4 with --reuse-tree).
    chance_nodes (derived): the game has chance nodes (backgammon, 2048):
      the search with true rules is the stochastic one.
    """

    policy: str
    num_simulations: int
    simulations_per_step: int
    max_nodes: int
    reuse_tree: bool
    transpositions: bool
    dirichlet_fraction: float
    dirichlet_alpha: float
    forced_playouts: float
    max_num_considered_actions: int
    search_mode: str
    chance_nodes: bool
    num_samples: int
    proposal_temperature: float
    sampled_prior: str


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """The self-play record: the games self-play plays (`SelfPlay`'s
    settings beside its search; 9 fields).

    num_games (B), moves_per_iteration, temperature_moves, the random
    openings (random_opening_plies, random_opening_fraction,
    random_opening_interleaved), playout cap randomisation
    (fast_simulations, full_search_fraction) and search_value_weight (the
    value targets' share of the root's value): the flags'.
    """

    num_games: int
    moves_per_iteration: int
    temperature_moves: int
    random_opening_plies: int
    random_opening_fraction: float
    random_opening_interleaved: float
    fast_simulations: int
    full_search_fraction: float
    search_value_weight: float


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """The replay record: the ring of samples (3 fields).

    replay_size, min_replay: the flags'. slots (derived): T of the [T, B]
    ring, replay_size / num_games rounded up.
    """

    replay_size: int
    min_replay: int
    slots: int


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """The optimizer record: what the learner is given (the optimiser's
    schedule, `learner.make_optimizer`, and its minibatches; 10 fields).

    learning_rate, warmup_fraction, end_learning_rate_fraction, weight_decay,
    clip_norm, train_batch_size, updates_per_iteration, value_weight,
    augment: the flags'. total_updates (derived): iterations x
    updates_per_iteration, the schedule's length.
    """

    learning_rate: float
    warmup_fraction: float
    end_learning_rate_fraction: float
    weight_decay: float
    clip_norm: float
    train_batch_size: int
    updates_per_iteration: int
    value_weight: float
    augment: bool
    total_updates: int


@dataclasses.dataclass(frozen=True)
class LearnedModelConfig:
    """The learned-model record: the MuZero family's model, targets and
    losses (`training.muzero.setup`; 13 fields, the flags' marked "learned
    model" or "stochastic_muzero" in --help)."""

    latent_size: int
    num_unroll_steps: int
    value_targets: str
    td_steps: int
    support_bound: float
    support_bins: int
    support_transform: bool
    chance_codes: int
    commitment_weight: float
    code_usage_weight: float
    consistency_weight: float
    reanalyse_fraction: float
    reanalyse_simulations: int


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """The run record: what the loop itself reads (9 fields).

    algorithm: the `AlgorithmKind` of --algorithm (chosen here, once).
    preset, seed, iterations, max_training_s, overlap_phases,
    checkpoint_every, keep_checkpoints, devices: the flags'.
    """

    algorithm: AlgorithmKind
    preset: str
    seed: int
    iterations: int
    max_training_s: float
    overlap_phases: bool
    checkpoint_every: int
    keep_checkpoints: int
    devices: int


@dataclasses.dataclass(frozen=True)
class EvaluationConfig:
    """The evaluation record: what `training.evaluation` and the loop's
    evaluation schedule read (15 fields).

    eval_every / elo_every: iterations between evaluations / Elo snapshots.
    eval_games, eval_simulations: the periodic matches (games per opponent,
      the agent's simulations); final_games, final_simulations: the
      end-of-run ones.
    uct_simulations (0: eval_simulations), uct_playouts, uct_playout_length:
      the UCT opponent.
    elo_opponents, elo_opening_moves: the Elo matches between snapshots.
    solver_positions, solver_games, final_solver_positions: Connect Four
      against the perfect solver.
    max_game_length: plies before a game counts as a draw (0: the rules').
    """

    eval_every: int
    eval_games: int
    eval_simulations: int
    uct_simulations: int
    uct_playouts: int
    uct_playout_length: int
    elo_every: int
    elo_opponents: int
    elo_opening_moves: int
    final_games: int
    final_simulations: int
    solver_positions: int
    solver_games: int
    final_solver_positions: int
    max_game_length: int


@dataclasses.dataclass(frozen=True)
class Records:
    """A TrainConfig's settings by concern (`TrainConfig.records`): game,
    search, network (`networks.NetworkConfig`), learned_model, self_play,
    replay, optimizer, evaluation, run."""

    game: GameConfig
    search: SearchConfig
    network: networks.NetworkConfig
    learned_model: LearnedModelConfig
    self_play: SelfPlayConfig
    replay: ReplayConfig
    optimizer: OptimizerConfig
    evaluation: EvaluationConfig
    run: RunConfig


# The TrainConfig field each NetworkConfig field comes from (its names are
# the library's: num_blocks, num_layers, kind).
NETWORK_FIELDS = dict(kind="network", channels="channels", num_blocks="blocks",
                      hidden="hidden", num_layers="layers", value_hidden="value_hidden",
                      value_head="value_head", value_scale="value_scale")


def check_known(settings: Dict[str, Any], source: str) -> None:
    """Raises ValueError naming `source` for the names of `settings` that
    are no TrainConfig field (an old name: docs/migration.md says its
    replacement)."""
    names = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(settings) - names)
    if unknown:
        raise ValueError(f"{source} has unknown settings: {', '.join(unknown)} (renamed "
                         f"settings: see docs/migration.md)")


def shape_fields() -> Tuple[str, ...]:
    """Settings that fix array shapes: a run folder cannot be resumed with
    other values."""
    return tuple(f.name for f in dataclasses.fields(TrainConfig) if f.metadata["shape"])


def flag_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def build_parser() -> argparse.ArgumentParser:
    # No abbreviations: a prefix would silently stand for whichever flag it
    # shortens (the removed --simulations for --simulations-per-step, say).
    parser = argparse.ArgumentParser(
        prog="train.py", allow_abbrev=False,
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
    settings = parser.add_argument_group(
        "training settings (TrainConfig fields; defaults: the game's registry entry and "
        "--preset)")
    for field in dataclasses.fields(TrainConfig):
        meta = field.metadata
        kwargs: Dict[str, Any] = dict(default=None, help=meta["help"], dest=field.name)
        if field.type in ("bool", bool):
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = {"int": int, "float": float, "str": str}[str(field.type)]
        if meta["choices"]:
            kwargs["choices"] = meta["choices"]
        settings.add_argument(flag_name(field.name), **kwargs)
    return parser


TRAINABLE_GAMES: Tuple[str, ...] = (tuple(envs.GAMES) + tuple(envs.CHANCE_GAMES)
                                     + tuple(control.CONTROL_TASKS))


def unknown_game(game: str) -> str:
    """The message for a game train.py cannot train."""
    return f"unknown game {game!r}; known games: {', '.join(TRAINABLE_GAMES)}"


def game_spec(game: str):
    """The registry entry of a trainable game: `envs.spec` for the
    deterministic games, `envs.chance_games.chance_spec` for the stochastic
    ones (2048, backgammon)."""
    if game in envs.CHANCE_GAMES:
        return envs.chance_games.chance_spec(game)
    return envs.spec(game)


def is_stochastic(game: str) -> bool:
    return game in envs.CHANCE_GAMES


def is_control(game: str) -> bool:
    """A continuous-control task (`envs.control.CONTROL_TASKS`)."""
    return game in control.CONTROL_TASKS


def self_play_policy(search: SearchConfig, game, policy: Any = None):
    """The policy value self-play searches with, from the search record
    alone (`game`: the `envs` game, its number of actions and position keys).

    policy None: `--policy` by name (`training.policies`, with chance nodes
      for the stochastic games: `search_policy_name`), root noise on, the
      most visited move (or Gumbel's choice), with the run's capacity and
      paths per step.
    policy a `mcts_jax.Policy` value (a user's own, say): used as it is,
      except that a policy which leaves `max_nodes` unset gets the run's
      capacity (`search.max_nodes`, room for a reused subtree).
    """
    if not isinstance(search, SearchConfig):
        raise TypeError(f"self_play_policy: search must be a SearchConfig (a TrainConfig's "
                        f"records.search), got {type(search).__name__}")
    if policy is not None:
        if isinstance(policy, str) or not hasattr(policy, "options"):
            raise TypeError(f"policy must be a policy value (mcts_jax.Policy), got "
                            f"{policy!r}; a name goes in the config: policy="
                            f"{sorted(policies.POLICIES)}")
        if policy.options.max_nodes is None:
            policy = policy.replace(max_nodes=search.max_nodes)
        return policy
    changes = dict(max_nodes=search.max_nodes)
    if search.simulations_per_step > 1:
        changes["simulations_per_step"] = search.simulations_per_step
    if search.transpositions:
        changes.update(transpositions=True, position_key=game.position_key)
    return policies.policy_from_name(
        search_policy_name(search), num_actions=game.num_actions, root_noise=True,
        sample_action=False, max_num_considered_actions=search.max_num_considered_actions,
        dirichlet_fraction=search.dirichlet_fraction, dirichlet_alpha=search.dirichlet_alpha,
        forced_playouts=search.forced_playouts, **changes)


def resolve(explicit: Dict[str, Any]) -> TrainConfig:
    """A fresh run's config: defaults, the game's, the preset's, then `explicit`
    (TrainConfig field names)."""
    check_known(explicit, "the settings")
    game = explicit.get("game", TrainConfig.game)
    if game not in TRAINABLE_GAMES:
        raise ValueError(unknown_game(game))
    entry = presets.for_game(game)
    preset = explicit.get("preset", "default")
    if preset != "default" and preset not in entry.presets:
        known = ", ".join(["default"] + sorted(entry.presets))
        raise ValueError(f"unknown --preset {preset!r} for {game}; known: {known}")
    settings: Dict[str, Any] = dict(game=game)
    settings.update(entry.network_settings())
    settings.update(entry.defaults)
    settings.update(entry.algorithms.get(explicit.get("algorithm", TrainConfig.algorithm), {}))
    settings.update(entry.presets.get(preset, {}))
    settings.update(explicit)
    config = TrainConfig(**settings)
    validate(config)
    return config


def resume_config(saved: TrainConfig, explicit: Dict[str, Any]) -> TrainConfig:
    """The config of a resumed run: the saved one with `explicit` flags on top.
    Raises ValueError naming the flag when a shape-fixing setting differs."""
    check_known(explicit, "the settings")
    for name in shape_fields() + ("preset",):
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
    """Raises ValueError naming the flag of the first bad setting: each
    field's own check and choices (`setting`), then the settings that depend
    on each other."""
    if config.game not in TRAINABLE_GAMES:
        raise ValueError(unknown_game(config.game))
    for field in dataclasses.fields(TrainConfig):
        value, meta = getattr(config, field.name), field.metadata
        expected = {"int": int, "float": (int, float), "str": str, "bool": bool}[str(field.type)]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise ValueError(f"{flag_name(field.name)} must be of type {field.type}, "
                             f"got {value!r}")
        if meta["choices"] and value not in meta["choices"]:
            raise ValueError(f"{flag_name(field.name)} must be one of {meta['choices']}, "
                             f"got {value!r}")
        if meta["check"]:
            holds, requirement = CHECKS[meta["check"]]
            if not holds(value):
                raise ValueError(f"{flag_name(field.name)} {requirement}, got {value}")
    if config.fast_simulations >= config.num_simulations:
        raise ValueError(f"--fast-simulations must be 0 or below --num-simulations "
                         f"({config.num_simulations}), got {config.fast_simulations}")
    if config.fast_simulations and config.full_search_fraction == 0:
        raise ValueError("--full-search-fraction must be > 0 with --fast-simulations (no "
                         "move would be recorded)")
    if config.random_opening_interleaved and not config.random_opening_plies:
        raise ValueError(f"--random-opening-interleaved needs --random-opening-plies > 0 (the "
                         f"opening it interleaves), got --random-opening-interleaved "
                         f"{config.random_opening_interleaved} with no opening plies")
    if config.max_nodes and config.max_nodes < config.num_simulations + 1:
        raise ValueError(f"--max-nodes must be 0 or >= --num-simulations + 1, got "
                         f"{config.max_nodes}")
    algorithm = config.records.run.algorithm
    if config.forced_playouts and (config.policy != "alphazero" or algorithm.learned_model
                                   or is_stochastic(config.game)):
        raise ValueError(f"--forced-playouts is for --policy alphazero self-play with the "
                         f"true rules (PUCT at the root; Gumbel's halving has its own "
                         f"target), got --policy {config.policy} --algorithm "
                         f"{config.algorithm} on {config.game}")
    if config.transpositions and (algorithm.learned_model or is_stochastic(config.game)):
        raise ValueError(f"--transpositions needs --algorithm alphazero on a deterministic game "
                         f"(positions are the game's states, keyed by its rules; a learned "
                         f"model's states and chance nodes have no such keys), got "
                         f"--algorithm {config.algorithm} on {config.game}")
    if algorithm.sampled or is_control(config.game):
        _validate_control(config)
    elif algorithm.learned_model:
        _validate_learned_model(config)
    elif is_stochastic(config.game):
        _validate_stochastic(config)


def make_game(game: GameConfig):
    """The run's game from the game record (`envs.make`): a one-player game
    with the record's discount, so that the true game's search and the
    replay's value targets discount alike; a two-player game as it is."""
    if not isinstance(game, GameConfig):
        raise TypeError(f"make_game: game must be a GameConfig (a TrainConfig's "
                        f"records.game), got {type(game).__name__}")
    if is_control(game.game):
        return control.ControlTask.named(game.game, game.discount)
    made = envs.make(game.game)
    if made.num_players == 1:
        return envs.make(game.game, discount=game.discount)
    return made


def search_policy_name(search: SearchConfig) -> str:
    """The policy name an AlphaZero run searches its game with: `--policy`,
    with chance nodes for the stochastic games ("stochastic": PUCT,
    "stochastic_gumbel": Gumbel)."""
    if search.chance_nodes:
        return stochastic_policy_name(search.policy)
    return search.policy


def stochastic_policy_name(policy: str) -> str:
    """`--policy` with chance nodes: "stochastic" (PUCT, mctx's Stochastic
    MuZero search) for alphazero, "stochastic_gumbel" for gumbel."""
    return "stochastic_gumbel" if policy == "gumbel" else "stochastic"


def _validate_learned_model(config: TrainConfig) -> None:
    """What a learned-model run cannot do."""
    spec = game_spec(config.game)
    if getattr(spec, "num_players", 2) == 2 and not getattr(spec, "alternating_turns", True):
        raise ValueError(f"--algorithm {config.algorithm} needs a game whose players alternate "
                         f"(or a one-player game); {config.game} lets a player move several "
                         f"times in a row, which the learned model's search cannot tell")
    if getattr(spec, "num_players", 2) not in (1, 2):
        raise ValueError(f"--algorithm {config.algorithm} trains one- and two-player games")
    _check_support(config)
    if config.reuse_tree and is_stochastic(config.game):
        raise ValueError(f"--reuse-tree is not supported for {config.game}: pgx's step does not "
                         f"say which chance outcome happened")
    if config.records.run.algorithm.chance_codes and config.chance_codes < 2:
        raise ValueError(f"--chance-codes must be >= 2, got {config.chance_codes}")
    if getattr(spec, "num_players", 2) == 1 and config.elo_every:
        raise ValueError(f"--elo-every must be 0 for {config.game}: a one-player game has no "
                         f"matches to rate (its evaluation is the score)")


def _validate_stochastic(config: TrainConfig) -> None:
    """What a stochastic game's run cannot do (see docs/training.md)."""
    game = config.game
    if config.reuse_tree:
        raise ValueError(f"--reuse-tree is not supported for {game}: pgx's step does not say "
                         f"which chance outcome happened, so the subtree to keep is unknown "
                         f"(use --no-reuse-tree)")
    if game_spec(game).num_players == 1 and config.elo_every:
        raise ValueError(f"--elo-every must be 0 for {game}: a one-player game has no "
                         f"matches to rate (its evaluation is the score)")


# What a control run does not use: each setting must keep this value. Its
# network is an MLP with a linear value head (returns down to about -1,600).
CONTROL_FIXED = dict(reuse_tree=False, transpositions=False, forced_playouts=0.0,
                     fast_simulations=0, random_opening_plies=0, max_game_length=0,
                     elo_every=0, simulations_per_step=1, network="mlp", value_head="linear")


def _check_support(config: TrainConfig) -> None:
    if config.support_bins % 2 == 0 or config.support_bins < 3:
        raise ValueError(f"--support-bins must be odd and >= 3, got {config.support_bins}")


def _validate_control(config: TrainConfig) -> None:
    """A control task trains with --algorithm sampled_alphazero or
    sampled_muzero alone, and those train the control tasks alone; the
    board-game settings they have no use for keep their values
    (`CONTROL_FIXED`); Sampled MuZero reanalyses nothing, bootstraps its
    value targets and takes no search-value share."""
    algorithm = config.records.run.algorithm
    if is_control(config.game) != algorithm.sampled:
        raise ValueError(f"--algorithm sampled_alphazero and sampled_muzero are for the "
                         f"control tasks ({', '.join(control.CONTROL_TASKS)}), and they train "
                         f"with these alone: got --algorithm {config.algorithm} on "
                         f"{config.game}")
    if algorithm.learned_model and config.reanalyse_fraction:
        raise ValueError(f"--reanalyse-fraction must be 0 for --algorithm {config.algorithm} "
                         f"(reanalysing sampled searches is not built), got "
                         f"{config.reanalyse_fraction}")
    if algorithm.learned_model:
        _check_support(config)
    if algorithm.learned_model and config.search_value_weight:
        raise ValueError(f"--search-value-weight must be 0 for --algorithm {config.algorithm} "
                         f"(its n-step targets bootstrap from the search's values already), "
                         f"got {config.search_value_weight}")
    if algorithm.learned_model and config.value_targets == "outcome":
        raise ValueError(f"--value-targets must be n_step or auto for --algorithm "
                         f"{config.algorithm} (the learner bootstraps from the search's "
                         f"values), got outcome")
    for name, value in CONTROL_FIXED.items():
        if getattr(config, name) != value:
            raise ValueError(f"{flag_name(name)} must be {value!r} for {config.game}: a control "
                             f"run plays whole episodes from random starts with one search "
                             f"per step (no reuse, openings, length limit, playout caps or "
                             f"opponents) and an MLP with a linear value head, got "
                             f"{getattr(config, name)!r}")


def describe(config: TrainConfig) -> str:
    """A printable block of every setting."""
    width = max(len(f.name) for f in dataclasses.fields(TrainConfig))
    return "\n".join(f"  {f.name:<{width}} {getattr(config, f.name)}"
                     for f in dataclasses.fields(TrainConfig))


def load_json(path: str) -> TrainConfig:
    with open(path) as f:
        return TrainConfig.from_json(json.load(f))


def parse(argv: Optional[Sequence[str]] = None):
    """(argparse namespace, the TrainConfig fields given on the command
    line) from the command line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.game is not None and args.game not in TRAINABLE_GAMES:
        parser.error(unknown_game(args.game))
    explicit = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)}
    return args, {name: value for name, value in explicit.items() if value is not None}
