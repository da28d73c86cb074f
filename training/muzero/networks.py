"""The learned model of the MuZero family, in flax NNX, and its functional form.

MuZero's three functions, on a latent state s [B, D] (each row scaled to
[0, 1] by its min and max, as in MuZero):

    representation  observation [B, ...]      -> s_0 [B, D]
    dynamics        s_k [B, D], action [B]    -> s_k+1 [B, D], reward logits [B, R]
    prediction      s_k [B, D]                -> policy logits [B, A], value logits [B, V]

Stochastic MuZero (Antonoglou et al. 2022) splits a step at the afterstate:

    afterstate dynamics    s_k, action       -> afterstate as_k [B, D]
    afterstate prediction  as_k              -> chance logits [B, C], Q logits [B, V]
    dynamics               as_k, code [B]    -> s_k+1, reward logits
    encoder                observation       -> code logits [B, C] (the code of the outcome
                                                that led to it; see `quantise`)

The value of s_k is for the player to move there; a reward is for the
player who made the move; the afterstate's Q is for the player who chose
the action (as `mcts_jax.DecisionRecurrentFnOutput`). Values and rewards
are categorical over `support.Support`s. The representation is an MLP over
the flattened observation or a residual tower of convolutions ("resnet",
for [H, W, C] boards) flattened to D; the other functions are MLPs with
LayerNorm. There is no BatchNorm, so `variables["batch_stats"]` is empty
(kept for the checkpoint layout the AlphaZero networks use).

    model = make_model(ModelConfig(...), game)
    variables = model.init(key)                          # {"params": ..., "batch_stats": {}}
    latent, logits, value_logits = model.initial(variables, observation)
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, Tuple

import jax
import jax.numpy as jnp
from flax import nnx

from training.muzero.support import Support
from training.networks import gaussian_parameters

Variables = Dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Architecture of a learned model (hashable).

    kind: representation network, "mlp" or "resnet" (convolutions, [H, W, C]).
    latent_size: D, the width of the latent state.
    hidden, num_layers: the MLPs (representation "mlp", dynamics,
      prediction, afterstate functions, encoder).
    channels, num_blocks: the residual tower of a "resnet" representation.
    value_support, reward_support: the categorical supports.
    num_chance_codes: C, the chance encoder's codebook (0: plain MuZero,
      no afterstates).
    """

    kind: str = "mlp"
    latent_size: int = 64
    hidden: int = 128
    num_layers: int = 2
    channels: int = 32
    num_blocks: int = 2
    value_support: Support = Support()
    reward_support: Support = Support()
    num_chance_codes: int = 0

    def __post_init__(self):
        if self.kind not in ("mlp", "resnet"):
            raise ValueError(f"model kind must be 'mlp' or 'resnet', got {self.kind!r}")
        for name in ("latent_size", "hidden", "num_layers", "channels"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"model {name} must be a positive int, got {value!r}")
        if not isinstance(self.num_chance_codes, int) or self.num_chance_codes < 0 \
                or self.num_chance_codes == 1:
            raise ValueError(f"model num_chance_codes must be 0 (no chance) or >= 2, got "
                             f"{self.num_chance_codes!r}")

    @property
    def stochastic(self) -> bool:
        return self.num_chance_codes > 0


def scale_latent(latent: jax.Array) -> jax.Array:
    """Each row of [B, D] min-max scaled to [0, 1] (MuZero's hidden state scaling)."""
    low = jnp.min(latent, axis=-1, keepdims=True)
    high = jnp.max(latent, axis=-1, keepdims=True)
    return (latent - low) / jnp.maximum(high - low, 1e-5)


class Trunk(nnx.Module):
    """`num_layers` x (Linear, LayerNorm, ReLU), then a Linear to `out`."""

    def __init__(self, size_in: int, hidden: int, num_layers: int, out: int, rngs: nnx.Rngs):
        widths = [size_in] + [hidden] * num_layers
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(widths, widths[1:])])
        self.norms = nnx.List([nnx.LayerNorm(b, rngs=rngs) for b in widths[1:]])
        self.out = nnx.Linear(widths[-1], out, rngs=rngs)

    def __call__(self, x):
        for layer, norm in zip(self.layers, self.norms):
            x = nnx.relu(norm(layer(x)))
        return self.out(x)


class ConvTower(nnx.Module):
    """[B, H, W, C] -> [B, D]: a 3x3 stem, residual blocks (conv, LayerNorm,
    ReLU, conv, LayerNorm, skip, ReLU), flattened, a Linear to D."""

    def __init__(self, observation_shape, channels: int, num_blocks: int, out: int,
                 rngs: nnx.Rngs):
        height, width, in_channels = observation_shape
        self.stem = nnx.Conv(in_channels, channels, (3, 3), rngs=rngs)
        self.convs = nnx.List([nnx.Conv(channels, channels, (3, 3), rngs=rngs)
                               for _ in range(2 * num_blocks)])
        self.norms = nnx.List([nnx.LayerNorm(channels, rngs=rngs) for _ in range(2 * num_blocks)])
        self.out = nnx.Linear(height * width * channels, out, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.stem(x))
        for block in range(len(self.convs) // 2):
            y = nnx.relu(self.norms[2 * block](self.convs[2 * block](x)))
            y = self.norms[2 * block + 1](self.convs[2 * block + 1](y))
            x = nnx.relu(x + y)
        return self.out(x.reshape(x.shape[0], -1))


class LearnedModelNet(nnx.Module):
    """Every function of the learned model (see the module docstring)."""

    def __init__(self, observation_shape: Tuple[int, ...], num_actions: int,
                 config: ModelConfig, rngs: nnx.Rngs, action_size: int = 0):
        latent, hidden, layers = config.latent_size, config.hidden, config.num_layers
        values, rewards = config.value_support.num_bins, config.reward_support.num_bins
        if config.kind == "resnet":
            if len(observation_shape) != 3:
                raise ValueError(f"a 'resnet' representation needs [H, W, C] observations, "
                                 f"got shape {tuple(observation_shape)}")
            self.representation = ConvTower(observation_shape, config.channels,
                                            config.num_blocks, latent, rngs)
        else:
            size = 1
            for d in observation_shape:
                size *= d
            self.representation = Trunk(size, hidden, layers, latent, rngs)
        self.num_actions = num_actions
        self.action_size = action_size
        codes = config.num_chance_codes
        self.dynamics_trunk = Trunk(latent + (codes or action_size or num_actions), hidden,
                                    layers, latent + rewards, rngs)
        self.prediction_trunk = Trunk(latent, hidden, layers, num_actions + values, rngs)
        if codes:
            self.afterstate_trunk = Trunk(latent + num_actions, hidden, layers, latent, rngs)
            self.afterstate_prediction_trunk = Trunk(latent, hidden, layers, codes + values, rngs)
            size = 1
            for d in observation_shape:
                size *= d
            self.encoder = Trunk(size, hidden, layers, codes, rngs)
        self.config = config

    def represent(self, observation):
        x = observation.astype(jnp.float32)
        if self.config.kind == "mlp":
            x = x.reshape(x.shape[0], -1)
        return scale_latent(self.representation(x))

    def predict(self, latent):
        out = self.prediction_trunk(latent)
        policy = out[:, :self.num_actions]
        if self.action_size:  # continuous actions: a Gaussian's parameters
            policy = gaussian_parameters(policy)
        return policy, out[:, self.num_actions:]

    def dynamics(self, latent, action_or_code):
        """(next latent, reward logits) from a latent (an afterstate for
        Stochastic MuZero) and an action id (a chance code: one-hot [B, C]
        or an id), or a continuous action [B, action_size]."""
        width = self.config.num_chance_codes or self.num_actions
        if action_or_code.ndim == 1:
            action_or_code = jax.nn.one_hot(action_or_code, width)
        out = self.dynamics_trunk(jnp.concatenate([latent, action_or_code], axis=-1))
        size = self.config.latent_size
        return scale_latent(out[:, :size]), out[:, size:]

    def afterstate(self, latent, action):
        onehot = jax.nn.one_hot(action, self.num_actions)
        return scale_latent(self.afterstate_trunk(jnp.concatenate([latent, onehot], axis=-1)))

    def afterstate_predict(self, afterstate):
        out = self.afterstate_prediction_trunk(afterstate)
        codes = self.config.num_chance_codes
        return out[:, :codes], out[:, codes:]

    def encode(self, observation):
        return self.encoder(observation.astype(jnp.float32).reshape(observation.shape[0], -1))


def quantise(code_logits: jax.Array) -> jax.Array:
    """The encoder's code: one-hot [B, C] of its argmax, with the gradient
    of its softmax (straight-through; the codebook is the C one-hot
    vectors, as in Stochastic MuZero)."""
    soft = jax.nn.softmax(code_logits, axis=-1)
    hard = jax.nn.one_hot(jnp.argmax(code_logits, axis=-1), code_logits.shape[-1])
    return soft + jax.lax.stop_gradient(hard - soft)


@dataclasses.dataclass(frozen=True, eq=False)
class LearnedModel:
    """The functional form of one learned model for one game (compared by
    identity: a static argument of compiled functions; `make_model` caches
    one per config and shape).

    Every method takes the variables {"params", "batch_stats"} first."""

    config: ModelConfig
    observation_shape: Tuple[int, ...]
    num_actions: int            # policy outputs: a game's actions, or a Gaussian's 2 d
    graphdef: Any
    abstract_params: Any
    action_size: int = 0        # 0: action ids; d: continuous actions [B, d]

    def init(self, rng_key: jax.Array) -> Variables:
        module = LearnedModelNet(self.observation_shape, self.num_actions, self.config,
                                 nnx.Rngs(rng_key), self.action_size)
        return {"params": nnx.to_pure_dict(nnx.state(module, nnx.Param)), "batch_stats": {}}

    def module(self, variables: Variables) -> LearnedModelNet:
        params = jax.tree.map(lambda x: x, self.abstract_params)
        nnx.replace_by_pure_dict(params, variables["params"])
        return nnx.merge(self.graphdef, params)

    def initial(self, variables, observation):
        """(latent s_0 [B, D], policy logits [B, A], value logits [B, V]) of
        observations [B, ...] (the player to move's view)."""
        net = self.module(variables)
        latent = net.represent(observation)
        return (latent,) + net.predict(latent)

    def predict(self, variables, observation):
        """The raw network, as `training.networks.Model.predict`: (policy
        logits [B, A], value [B] for the player to move, a scalar)."""
        _, logits, value_logits = self.initial(variables, observation)
        return logits, self.config.value_support.scalar(value_logits)

    def num_parameters(self, variables: Variables) -> int:
        return int(sum(x.size for x in jax.tree.leaves(variables["params"])))


@functools.lru_cache(maxsize=None)
def _make_model(config: ModelConfig, observation_shape: Tuple[int, ...],
                num_actions: int, action_size: int = 0) -> LearnedModel:
    abstract = nnx.eval_shape(lambda: LearnedModelNet(observation_shape, num_actions, config,
                                                      nnx.Rngs(0), action_size))
    graphdef, params = nnx.split(abstract, nnx.Param)
    return LearnedModel(config=config, observation_shape=tuple(observation_shape),
                        num_actions=num_actions, graphdef=graphdef, abstract_params=params,
                        action_size=action_size)


def make_model(config: ModelConfig, game) -> LearnedModel:
    """The `LearnedModel` of `config` for an `envs` game (the same arguments
    give the same object)."""
    if not isinstance(config, ModelConfig):
        raise TypeError(f"make_model: config must be a ModelConfig, got "
                        f"{type(config).__name__}")
    return _make_model(config, tuple(game.observation_shape), int(game.num_actions), 0)


def make_continuous_model(config: ModelConfig, task) -> LearnedModel:
    """The `LearnedModel` of `config` for a control task
    (`envs.control.ControlTask`): its dynamics take action vectors [B, d],
    its prediction gives the task's proposal parameters (a Gaussian's 2 d,
    `training.networks.gaussian_parameters`) as the policy. The same
    arguments give the same object."""
    if config.num_chance_codes:
        raise ValueError("a continuous-action learned model has no chance codes")
    distribution = task.distribution()
    return _make_model(config, tuple(task.observation_shape), distribution.num_params,
                       int(task.action_dim))
