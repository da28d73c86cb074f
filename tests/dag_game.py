"""A game whose moves commute, for graph search tests: many move orders reach
one position, so a graph has far fewer nodes than a tree.

A state is the set of the A actions taken so far (a bitmask); each action
can be taken once and the game ends after `length` moves. The player to
move alternates (discount -1; 0 into a terminal state). Values, prior
logits and terminal rewards are read off a 32-bit hash of the set, on grids
(multiples of 1/256, 1/64, 1/2) that float32 holds exactly, so the
plain-Python side (`reference_graph.py`) and the batched JAX
`recurrent_fn` see the same numbers.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Dict, List

import jax.numpy as jnp
import numpy as np

import mcts_jax

MASK32 = 0xFFFFFFFF


def mix_python(x: int) -> int:
    """MurmurHash3's finaliser of (x * golden + constant), on Python ints."""
    x = (x * 0x9E3779B1 + 0x7F4A7C15) & MASK32
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & MASK32
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & MASK32
    return x ^ (x >> 16)


def mix_jax(x):
    x = x.astype(jnp.uint32) * jnp.uint32(0x9E3779B1) + jnp.uint32(0x7F4A7C15)
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


@dataclasses.dataclass(frozen=True)
class DagGame:
    num_actions: int = 6
    length: int = 4

    # ---- plain Python ------------------------------------------------------------------
    def value(self, mask: int) -> float:
        return ((mix_python(mask) >> 8) & 511) / 256.0 - 1.0

    def logits(self, mask: int) -> List[float]:
        return [((mix_python(mask * 31 + a + 7) >> 8) & 255) / 64.0 - 2.0
                for a in range(self.num_actions)]

    def terminal(self, mask: int) -> bool:
        return bin(mask).count("1") >= self.length

    def reward(self, mask: int) -> float:
        """Reward of the move into `mask`, for its mover (non-zero only at the end)."""
        return (((mix_python(mask) >> 4) & 3) - 1) / 2.0 if self.terminal(mask) else 0.0

    def legal(self, mask: int) -> List[bool]:
        return [not self.terminal(mask) and not (mask >> a) & 1 for a in range(self.num_actions)]

    def positions(self) -> List[int]:
        """Every reachable position (sets of at most `length` actions)."""
        return [sum(1 << a for a in subset) for k in range(self.length + 1)
                for subset in itertools.combinations(range(self.num_actions), k)]

    def minimax(self) -> Dict[int, float]:
        """Exact value of every position for its player to move (negamax)."""
        values: Dict[int, float] = {}
        for mask in sorted(self.positions(), key=lambda m: -bin(m).count("1")):
            if self.terminal(mask):
                values[mask] = 0.0
                continue
            values[mask] = max(self.reward(mask | 1 << a) - values[mask | 1 << a]
                               for a in range(self.num_actions) if self.legal(mask)[a])
        return values

    # ---- JAX ---------------------------------------------------------------------------
    def _popcount(self, mask):
        return sum((mask >> a) & 1 for a in range(self.num_actions))

    def root(self, masks):
        """(RootFnOutput, invalid_actions [B, A]) of the positions `masks` [B]."""
        masks = jnp.asarray(masks, jnp.int32)
        logits, value, illegal = self._evaluate(masks)
        return mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=masks), illegal

    def _evaluate(self, masks):
        actions = jnp.arange(self.num_actions, dtype=jnp.int32)
        slot_codes = mix_jax(masks[:, None] * 31 + actions[None, :] + 7)
        logits = ((slot_codes >> 8) & 255).astype(jnp.float32) / 64.0 - 2.0
        value = ((mix_jax(masks) >> 8) & 511).astype(jnp.float32) / 256.0 - 1.0
        terminal = self._popcount(masks) >= self.length
        illegal = ((masks[:, None] >> actions[None, :]) & 1).astype(bool) | terminal[:, None]
        return logits, value, illegal

    def recurrent_fn(self, params, rng_key, action, masks):
        del params, rng_key
        masks = masks | (1 << action.astype(jnp.int32))
        logits, value, illegal = self._evaluate(masks)
        terminal = self._popcount(masks) >= self.length
        reward = ((((mix_jax(masks) >> 4) & 3).astype(jnp.float32) - 1.0) / 2.0)
        output = mcts_jax.RecurrentFnOutput(
            reward=jnp.where(terminal, reward, 0.0), discount=jnp.where(terminal, 0.0, -1.0),
            prior_logits=logits, value=jnp.where(terminal, 0.0, value),
            invalid_actions=illegal)
        return output, masks


def masks_of(tree, row: int) -> np.ndarray:
    """The position (bitmask) of each node of row `row` of a search of a
    `DagGame`, read off the embeddings."""
    return np.asarray(tree.embeddings[row])
