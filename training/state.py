"""`TrainState`: everything a training run needs to continue exactly.

It is the single source of truth of a run between phases, and what a
checkpoint saves. The learner's live state (network variables, optimiser
state, update count) is held once, in `learner`; the phases of
`training/loop.py` take a TrainState and return the next one.

On disk (see `training/checkpoint.py`) a checkpoint keeps two items:
`variables` (the network alone, what `Agent.load` reads) and `state` (every
other array, by name). `saved_items` and `from_saved_items` are the one
place that maps a TrainState to those items and back.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

import chex
import jax
import jax.numpy as jnp

from training import replay
from training.learner import Learner, LearnerState
from training.self_play import SelfPlay, SelfPlayState


@chex.dataclass(frozen=True)
class TrainState:
    """The state of a training run.

    Attributes:
      learner: the network variables {"params", "batch_stats"}, the optax
        state of the params and the update count (`LearnerState`).
      self_play: the B games in progress, their search trees and pending
        samples (`SelfPlayState`, leading axis B).
      buffer: the replay ring [T, B, ...] (`replay.ReplayBuffer`).
      key: the run's PRNG key; each iteration splits it into the next key
        and the keys of its phases.
      games: [] int32, self-play games finished so far.
      moves: [] int32, self-play moves made so far (summed over the B games).
    """

    learner: LearnerState
    self_play: SelfPlayState
    buffer: replay.ReplayBuffer
    key: chex.PRNGKey
    games: chex.Array
    moves: chex.Array

    @property
    def variables(self):
        """The network's current variables."""
        return self.learner.variables

    def saved_items(self) -> Tuple[Any, Dict[str, Any]]:
        """(variables, arrays): the two items of a checkpoint. `arrays` keeps
        the names of the checkpoint layout (opt_state, updates, buffer,
        self_play, key, games, moves), so checkpoints of earlier versions
        restore."""
        arrays = dict(opt_state=self.learner.opt_state, updates=self.learner.updates,
                      buffer=self.buffer, self_play=self.self_play, key=self.key,
                      games=self.games, moves=self.moves)
        return self.learner.variables, arrays

    @classmethod
    def from_saved_items(cls, variables, arrays: Dict[str, Any]) -> "TrainState":
        """The TrainState of checkpoint items (the inverse of `saved_items`)."""
        learner = LearnerState(variables=variables, opt_state=arrays["opt_state"],
                               updates=arrays["updates"])
        return cls(learner=learner, self_play=arrays["self_play"], buffer=arrays["buffer"],
                   key=arrays["key"], games=arrays["games"], moves=arrays["moves"])


def initial_state(seed: int, model, player: SelfPlay, learner: Learner,
                  replay_slots: int) -> TrainState:
    """The state of a fresh run, on the default device (see `loop.place`):
    new network variables, an empty replay ring of `replay_slots` x B
    samples and B fresh games, all drawn from `jax.random.key(seed)`."""
    key = jax.random.key(seed)
    key, init_key, play_key = jax.random.split(key, 3)
    variables = model.init(init_key)
    buffer = player.new_buffer(replay_slots)
    return TrainState(learner=learner.init(variables), self_play=player.init(play_key),
                      buffer=buffer, key=key, games=jnp.zeros((), jnp.int32),
                      moves=jnp.zeros((), jnp.int32))
