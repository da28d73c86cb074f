"""Random two-player game trees whose exact minimax values are known.

For search-quality studies: does a search with a fixed budget choose a
minimax-optimal root move? `GameTree(depth, branching)` is an incremental
random game (a "P-game"): every position at depth < `depth` has `branching`
legal moves; each move carries an integer score increment in [-512, 511] for
the player who makes it, read off a 32-bit hash of the position reached; the
game ends after `depth` moves, and a player's final result is the sum of
their own increments minus the sum of their opponent's. Subtrees share their
path's score, so positions are correlated as in real games, and the exact
value of every root move follows from brute force over the
`branching ** depth` leaves (`root_action_values`, vectorised numpy, exact
integer arithmetic).

The search sees the game through the mcts_jax / mctx contract:
- embedding: {"code": uint32 [B] (hash of the move path), "depth": int32 [B]};
- reward: the move's increment / (512 * depth), for the player who moved, so
  every return lies in [-1, 1]; discount -1 (the other player moves next),
  0 into a leaf (terminal);
- value 0 and uniform priors: the search knows only the rewards it has seen.
  A transition from a terminal position (which mcts_jax never asks for, and
  mctx does) gives reward 0, discount 0 and leaves the state unchanged.

A position's code is the hash of its move path, so the Python methods
(`child_code`, `increment`) and the JAX `recurrent_fn` compute the very same
numbers.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Tuple

import jax.numpy as jnp
import numpy as np

from mcts_jax.base import RecurrentFnOutput, RootFnOutput
from problems import synthetic
from problems.synthetic import MASK32, STEP_ADD, STEP_MUL, random_root_codes

FINAL_MUL_1 = 0x85EBCA6B
FINAL_MUL_2 = 0xC2B2AE35
INCREMENT_SCALE = 512          # increments are integers in [-512, 511]
MAX_LEAVES_PER_ROOT = 2 ** 24  # brute force limit of root_action_values (memory)


@dataclasses.dataclass(frozen=True)
class GameTree:
    """A uniform random game tree of `depth` moves and `branching` moves per position.

    depth: moves per game (>= 1); leaves are at this depth.
    branching: legal moves at every non-terminal position (>= 2); the action
      ids are 0 .. branching - 1 and all are legal.
    """

    depth: int
    branching: int

    def __post_init__(self):
        synthetic.check_sizes(self, (("depth", 1), ("branching", 2)))
        if self.branching ** self.depth > MAX_LEAVES_PER_ROOT:
            raise ValueError(f"GameTree branching ** depth must be <= {MAX_LEAVES_PER_ROOT} "
                             f"for exact minimax, got {self.branching} ** {self.depth}")

    @property
    def num_actions(self) -> int:
        return self.branching

    @property
    def reward_scale(self) -> float:
        """Rewards are increments / reward_scale; any return is within [-1, 1]."""
        return float(INCREMENT_SCALE * self.depth)

    # ---- Python side (one position at a time) --------------------------------
    @staticmethod
    def child_code(code: int, action: int) -> int:
        """The code of the position reached by `action` from position `code`."""
        return (((code ^ (action + 1)) * STEP_MUL) + STEP_ADD) & MASK32

    @staticmethod
    def increment(code: int, action: int) -> int:
        """Score increment in [-512, 511] of `action` at `code`, for its mover."""
        h = GameTree.child_code(code, action)
        h = ((h ^ (h >> 16)) * FINAL_MUL_1) & MASK32
        h = ((h ^ (h >> 13)) * FINAL_MUL_2) & MASK32
        h ^= h >> 16
        return (h >> 22) - INCREMENT_SCALE

    # ---- exact values (numpy, vectorised over positions) ----------------------
    def _children(self, codes: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """codes [..., P] uint32 -> (child codes, increments) [..., P * branching]."""
        actions = np.arange(self.branching, dtype=np.uint32)
        child = ((codes[..., None] ^ (actions + np.uint32(1))) * np.uint32(STEP_MUL)
                 + np.uint32(STEP_ADD))
        h = (child ^ (child >> np.uint32(16))) * np.uint32(FINAL_MUL_1)
        h = (h ^ (h >> np.uint32(13))) * np.uint32(FINAL_MUL_2)
        h = h ^ (h >> np.uint32(16))
        increments = (h >> np.uint32(22)).astype(np.int32) - INCREMENT_SCALE
        shape = codes.shape[:-1] + (codes.shape[-1] * self.branching,)
        return child.reshape(shape), increments.reshape(shape)

    def root_action_values(self, root_codes) -> np.ndarray:
        """Exact negamax value of every root move, in increment units.

        root_codes: [R] root positions (uint32 values). Returns [R, branching]
        int64: the final result, for the player to move at the root, of playing
        that move and then perfect play by both sides (divide by `reward_scale`
        for the search's scale).
        """
        codes = np.asarray(root_codes, dtype=np.uint64).astype(np.uint32).reshape(-1)
        chunk = max(1, (2 ** 22) // self.branching ** self.depth)
        values = [self._root_action_values(codes[i:i + chunk])
                  for i in range(0, len(codes), chunk)]
        return np.concatenate(values, axis=0) if values else np.zeros((0, self.branching),
                                                                       np.int64)

    def _root_action_values(self, codes: np.ndarray) -> np.ndarray:
        levels = []  # increments of the moves at each depth, [R, branching ** (d + 1)]
        frontier = codes[:, None]
        for _ in range(self.depth):
            frontier, increments = self._children(frontier)
            levels.append(increments.astype(np.int64))
        # Negamax from the leaves up: value(move) = increment - value(position reached),
        # value(position) = max over its moves (0 at a leaf).
        below = np.zeros_like(levels[-1])
        for d in range(self.depth - 1, -1, -1):
            move_values = levels[d] - below
            if d == 0:
                return move_values
            below = move_values.reshape(len(codes), -1, self.branching).max(axis=-1)
        raise AssertionError("unreachable")

    def optimal_actions(self, root_codes) -> np.ndarray:
        """[R, branching] bool: True for the minimax-optimal root moves."""
        values = self.root_action_values(root_codes)
        return values == values.max(axis=-1, keepdims=True)

    # ---- JAX side (the search contract) ------------------------------------
    def root(self, root_codes) -> RootFnOutput:
        """RootFnOutput for root positions [R]: uniform priors, value 0."""
        code = jnp.asarray(np.asarray(root_codes, dtype=np.uint64).astype(np.uint32))
        batch = code.shape[0]
        return RootFnOutput(prior_logits=jnp.zeros((batch, self.branching), jnp.float32),
                            value=jnp.zeros((batch,), jnp.float32),
                            embedding={"code": code, "depth": jnp.zeros((batch,), jnp.int32)})

    @property
    def recurrent_fn(self):
        """recurrent_fn(params, rng_key, action [B], embedding) for the search; equal
        trees give the same function object, so they share one compilation."""
        return synthetic.stable_recurrent_fn(self)

    def _recurrent_step(self, params, rng_key, action, embedding: Dict[str, jnp.ndarray]):
        """One move for a batch of positions [B]; see the module docstring."""
        del params, rng_key
        code, depth = embedding["code"], embedding["depth"]
        child = (code ^ (action.astype(jnp.uint32) + jnp.uint32(1))) * jnp.uint32(STEP_MUL)
        child = child + jnp.uint32(STEP_ADD)
        h = (child ^ (child >> 16)) * jnp.uint32(FINAL_MUL_1)
        h = (h ^ (h >> 13)) * jnp.uint32(FINAL_MUL_2)
        h = h ^ (h >> 16)
        increment = (h >> 22).astype(jnp.int32) - INCREMENT_SCALE
        playing = depth < self.depth
        reward = jnp.where(playing, increment.astype(jnp.float32) / self.reward_scale, 0.0)
        discount = jnp.where(playing & (depth + 1 < self.depth), -1.0, 0.0)
        batch = code.shape[0]
        output = RecurrentFnOutput(
            reward=reward, discount=discount.astype(jnp.float32),
            prior_logits=jnp.zeros((batch, self.branching), jnp.float32),
            value=jnp.zeros((batch,), jnp.float32))
        new_embedding = {"code": jnp.where(playing, child, code),
                         "depth": jnp.where(playing, depth + 1, depth)}
        return output, new_embedding

__all__ = ["GameTree", "random_root_codes"]
