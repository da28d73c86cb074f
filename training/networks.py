"""Policy-value networks in flax NNX, and their functional form for search and training.

Two architectures:
  - `ResNet`: the AlphaZero residual tower. A 3x3 convolution stem, `num_blocks`
    residual blocks (conv-BN-ReLU-conv-BN + skip, ReLU), a policy head
    (1x1 conv, 2 channels, BN, ReLU, linear to A logits) and a value head
    (1x1 conv, 1 channel, BN, ReLU, linear to `value_hidden`, ReLU, linear,
    tanh, times `value_scale`).
  - `MLP`: flattens the observation; `num_layers` dense ReLU layers of
    `hidden` units (LayerNorm after each), then the same two heads as linear
    layers. For tiny games (tic-tac-toe).

Both take pgx observations [B, H, W, C] (bool or float; from the point of view
of the player to move) and return (logits [B, A], value [B]); the value is
for the player to move, on the game's reward scale: the value head's
output (tanh, in [-1, 1]; or `value_head="linear"`, unbounded) times
`value_scale` (1 for the board games, whose results are +-1; 3 for
backgammon's gammons; 2048's points, with no bound, take a linear head in
units of 1000 points).

Search and training use a pure functional form, `Model`:

    model = networks.make_model(config, game)        # cached: same args, same object
    variables = model.init(key)                      # {"params": ..., "batch_stats": ...}
    logits, value = model.predict(variables, obs)    # inference (running BN statistics)
    logits, value, batch_stats = model.apply_train(variables, obs)   # BN batch statistics
    evaluator = model.evaluator                      # mcts_jax.evaluators.Network, stable

`variables` are nested dicts of arrays (flax's "pure dicts"), so optax,
orbax and jit see plain pytrees. `model.evaluator` is one object per model,
so every search on it shares one compiled `recurrent_fn`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, Tuple

import jax
import jax.numpy as jnp
from flax import nnx

from mcts_jax import evaluators

Variables = Dict[str, Any]
VALUE_HEADS = ("tanh", "linear")


# A Gaussian policy head's log standard deviations are clipped to this range
# (before a squash into the action bounds): e^-5 = 0.007 to e^1 = 2.7, so a
# proposal neither collapses to a point nor spreads far past the bounds.
LOG_STD_RANGE = (-5.0, 1.0)


def gaussian_parameters(raw: jax.Array) -> jax.Array:
    """A policy head's outputs [..., 2 d] as a Gaussian's parameters (the
    means, then the log standard deviations clipped to `LOG_STD_RANGE`):
    the continuous-action networks' head (training/control)."""
    mean, log_std = jnp.split(raw.astype(jnp.float32), 2, axis=-1)
    return jnp.concatenate([mean, jnp.clip(log_std, *LOG_STD_RANGE)], axis=-1)


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Architecture of a policy-value network (hashable).

    kind: "resnet" or "mlp".
    channels, num_blocks: width and depth of the residual tower (resnet).
    hidden, num_layers: width and depth of the MLP trunk (mlp).
    value_hidden: units of the value head's hidden layer.
    value_head: "tanh" (values in [-value_scale, value_scale]) or "linear"
      (unbounded, for returns with no bound such as 2048's points).
    value_scale: the unit of the value head: its output times this is the
      value on the game's reward scale (the learner divides its error by it).
    """

    kind: str = "resnet"
    channels: int = 64
    num_blocks: int = 6
    hidden: int = 128
    num_layers: int = 3
    value_hidden: int = 64
    value_head: str = "tanh"
    value_scale: float = 1.0

    def __post_init__(self):
        if self.kind not in ("resnet", "mlp"):
            raise ValueError(f"network kind must be 'resnet' or 'mlp', got {self.kind!r}")
        if self.value_head not in VALUE_HEADS:
            raise ValueError(f"network value_head must be one of {VALUE_HEADS}, got "
                             f"{self.value_head!r}")
        if not isinstance(self.value_scale, (int, float)) or not self.value_scale > 0:
            raise ValueError(f"network value_scale must be a positive number, got "
                             f"{self.value_scale!r}")
        for name in ("channels", "num_blocks", "hidden", "num_layers", "value_hidden"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < (0 if name == "num_blocks" else 1):
                raise ValueError(f"network {name} must be a positive int, got {value!r}")

    def value_from_head(self, head: jax.Array) -> jax.Array:
        """The value head's last linear output [B, 1] -> values [B] on the
        game's reward scale."""
        squashed = jnp.tanh(head) if self.value_head == "tanh" else head
        return self.value_scale * squashed[:, 0]


class ResidualBlock(nnx.Module):
    """conv-BN-ReLU-conv-BN, plus the input, ReLU. [B, H, W, C] -> same."""

    def __init__(self, channels: int, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(channels, channels, (3, 3), use_bias=False, rngs=rngs)
        self.bn1 = nnx.BatchNorm(channels, rngs=rngs)
        self.conv2 = nnx.Conv(channels, channels, (3, 3), use_bias=False, rngs=rngs)
        self.bn2 = nnx.BatchNorm(channels, rngs=rngs)

    def __call__(self, x, train: bool):
        y = nnx.relu(self.bn1(self.conv1(x), use_running_average=not train))
        y = self.bn2(self.conv2(y), use_running_average=not train)
        return nnx.relu(x + y)


class ResNet(nnx.Module):
    """AlphaZero residual tower with policy and value heads.

    observation [B, H, W, C] -> (logits [B, A], value [B] for the player to
    move, see `NetworkConfig.value_head`).
    """

    def __init__(self, observation_shape: Tuple[int, ...], num_actions: int,
                 config: NetworkConfig, rngs: nnx.Rngs):
        height, width, in_channels = observation_shape
        channels = config.channels
        self.stem = nnx.Conv(in_channels, channels, (3, 3), use_bias=False, rngs=rngs)
        self.stem_bn = nnx.BatchNorm(channels, rngs=rngs)
        self.blocks = nnx.List([ResidualBlock(channels, rngs) for _ in range(config.num_blocks)])
        self.policy_conv = nnx.Conv(channels, 2, (1, 1), use_bias=False, rngs=rngs)
        self.policy_bn = nnx.BatchNorm(2, rngs=rngs)
        self.policy_out = nnx.Linear(2 * height * width, num_actions, rngs=rngs)
        self.value_conv = nnx.Conv(channels, 1, (1, 1), use_bias=False, rngs=rngs)
        self.value_bn = nnx.BatchNorm(1, rngs=rngs)
        self.value_hidden = nnx.Linear(height * width, config.value_hidden, rngs=rngs)
        self.value_out = nnx.Linear(config.value_hidden, 1, rngs=rngs)
        self.config = config

    def __call__(self, observation, train: bool = False):
        x = observation.astype(jnp.float32)
        x = nnx.relu(self.stem_bn(self.stem(x), use_running_average=not train))
        for block in self.blocks:
            x = block(x, train)
        batch = x.shape[0]
        p = nnx.relu(self.policy_bn(self.policy_conv(x), use_running_average=not train))
        logits = self.policy_out(p.reshape(batch, -1))
        v = nnx.relu(self.value_bn(self.value_conv(x), use_running_average=not train))
        v = nnx.relu(self.value_hidden(v.reshape(batch, -1)))
        return logits, self.config.value_from_head(self.value_out(v))


class MLP(nnx.Module):
    """Dense trunk with LayerNorm for tiny games.

    observation [B, ...] -> (logits [B, A], value [B] for the player to
    move, see `NetworkConfig.value_head`).
    """

    def __init__(self, observation_shape: Tuple[int, ...], num_actions: int,
                 config: NetworkConfig, rngs: nnx.Rngs):
        size = 1
        for d in observation_shape:
            size *= d
        widths = [size] + [config.hidden] * config.num_layers
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(widths, widths[1:])])
        self.norms = nnx.List([nnx.LayerNorm(b, rngs=rngs) for b in widths[1:]])
        self.policy_out = nnx.Linear(config.hidden, num_actions, rngs=rngs)
        self.value_hidden = nnx.Linear(config.hidden, config.value_hidden, rngs=rngs)
        self.value_out = nnx.Linear(config.value_hidden, 1, rngs=rngs)
        self.config = config

    def __call__(self, observation, train: bool = False):
        del train
        x = observation.astype(jnp.float32).reshape(observation.shape[0], -1)
        for layer, norm in zip(self.layers, self.norms):
            x = nnx.relu(norm(layer(x)))
        logits = self.policy_out(x)
        return logits, self.config.value_from_head(self.value_out(nnx.relu(self.value_hidden(x))))


def build_module(config: NetworkConfig, observation_shape: Tuple[int, ...], num_actions: int,
                 seed: Any = 0) -> nnx.Module:
    """A fresh NNX module for `config`, initialised from `seed` (an int or a key)."""
    cls = ResNet if config.kind == "resnet" else MLP
    return cls(tuple(observation_shape), num_actions, config, nnx.Rngs(seed))


@dataclasses.dataclass(frozen=True, eq=False)
class Model:
    """The functional form of one network architecture for one game.

    Compared by identity (it is a static argument of compiled functions);
    build it with `make_model`, which caches one per (config, shape).
    """

    config: NetworkConfig
    observation_shape: Tuple[int, ...]
    num_actions: int
    graphdef: Any
    abstract_params: Any       # nnx.State shapes, to rebuild a module from pure dicts
    abstract_batch_stats: Any

    def init(self, rng_key: jax.Array) -> Variables:
        """Fresh variables {"params", "batch_stats"} (nested dicts of arrays)."""
        module = build_module(self.config, self.observation_shape, self.num_actions,
                              seed=rng_key)
        _, params, batch_stats = nnx.split(module, nnx.Param, nnx.BatchStat)
        return {"params": nnx.to_pure_dict(params),
                "batch_stats": nnx.to_pure_dict(batch_stats)}

    def _module(self, variables: Variables) -> nnx.Module:
        params = jax.tree.map(lambda x: x, self.abstract_params)
        nnx.replace_by_pure_dict(params, variables["params"])
        batch_stats = jax.tree.map(lambda x: x, self.abstract_batch_stats)
        nnx.replace_by_pure_dict(batch_stats, variables["batch_stats"])
        return nnx.merge(self.graphdef, params, batch_stats)

    def predict(self, variables: Variables, observation: jax.Array):
        """Inference: (logits [B, A], value [B]) for observation [B, H, W, C];
        value for the player to move. BatchNorm uses running statistics."""
        return self._module(variables)(observation, train=False)

    def apply_train(self, variables: Variables, observation: jax.Array):
        """Training mode: (logits [B, A], value [B], new batch_stats), with
        BatchNorm on the batch's statistics (running averages updated)."""
        module = self._module(variables)
        logits, value = module(observation, train=True)
        _, _, batch_stats = nnx.split(module, nnx.Param, nnx.BatchStat)
        return logits, value, nnx.to_pure_dict(batch_stats)

    @functools.cached_property
    def evaluator(self) -> evaluators.Network:
        """The leaf evaluator for `envs` games: one object per model, so the
        search on it compiles once."""
        return evaluators.Network(self.predict)

    def num_parameters(self, variables: Variables) -> int:
        return int(sum(x.size for x in jax.tree.leaves(variables["params"])))


@functools.lru_cache(maxsize=None)
def _make_model(config: NetworkConfig, observation_shape: Tuple[int, ...],
                num_actions: int) -> Model:
    abstract = nnx.eval_shape(lambda: build_module(config, observation_shape, num_actions))
    graphdef, params, batch_stats = nnx.split(abstract, nnx.Param, nnx.BatchStat)
    return Model(config=config, observation_shape=tuple(observation_shape),
                 num_actions=num_actions, graphdef=graphdef, abstract_params=params,
                 abstract_batch_stats=batch_stats)


def make_model(config: NetworkConfig, game) -> Model:
    """The `Model` of `config` for an `envs` game (a game's default network:
    `training.presets.default_model(game)`). The same arguments give the
    same object."""
    if not isinstance(config, NetworkConfig):
        raise TypeError(f"make_model: config must be a NetworkConfig, got "
                        f"{type(config).__name__} (a game's default network: "
                        f"training.presets.default_model(game))")
    return make_model_of_shapes(config, game.observation_shape, game.num_actions)


def make_model_of_shapes(config: NetworkConfig, observation_shape: Tuple[int, ...],
                         num_outputs: int) -> Model:
    """The `Model` of `config` for observations of `observation_shape` and
    a policy head of `num_outputs` (a game's actions, or a distribution's
    parameters: training/control). The same arguments give the same object."""
    if not isinstance(config, NetworkConfig):
        raise TypeError(f"make_model_of_shapes: config must be a NetworkConfig, got "
                        f"{type(config).__name__}")
    return _make_model(config, tuple(observation_shape), int(num_outputs))
