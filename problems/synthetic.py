"""Synthetic game trees defined by hashing: cheap, deterministic, any size.

A state is a 32-bit hash of the action path from the root. Its value, prior
logits, legal actions, reward and terminality are read off hash bits, on grids
(multiples of 1/256 and 1/64) that float32 holds exactly, so a plain-Python
computation (the methods without a `jax_` prefix) sees the very same numbers as
the batched JAX `recurrent_fn`. Used by the tests (against a reference search),
by the benchmarks (a recurrent_fn that costs almost nothing) and for search
quality studies.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import List

import jax.numpy as jnp
import numpy as np

from mcts_jax.base import RecurrentFnOutput, RootFnOutput

MASK32 = 0xFFFFFFFF
STEP_MUL = 2654435761
STEP_ADD = 0x9E3779B9
SLOT_MUL = 0x85EBCA6B
SLOT_MIX = 0xC2B2AE35


def check_sizes(problem, lows) -> None:
    """Raises ValueError naming the problem's class and the field when one
    of its fields is not an int >= its lower bound (lows: (name, low) pairs;
    bools are refused)."""
    for name, low in lows:
        value = getattr(problem, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ValueError(f"{type(problem).__name__} {name} must be an int >= {low}, "
                             f"got {value!r}")


@dataclasses.dataclass(frozen=True)
class HashedProblem:
    """A random two-player game tree defined by hashing.

    illegal_eighths: an action is illegal when 3 hash bits of (state, action)
      are below this (0 = all legal, 8 = all illegal).
    terminal_sixteenths: a state is terminal when 4 hash bits are below this.
    """

    num_actions: int
    illegal_eighths: int = 0
    terminal_sixteenths: int = 0
    discount: float = -1.0

    # ---- Python side -------------------------------------------------------
    def step_code(self, code: int, action: int) -> int:
        return (((code ^ (action + 1)) * STEP_MUL) + STEP_ADD) & MASK32

    def slot_hash(self, code: int, action: int) -> int:
        return (((code + action * SLOT_MUL) & MASK32) * SLOT_MIX) & MASK32

    def value(self, code: int) -> float:
        return ((code >> 8) & 511) / 256.0 - 1.0

    def logits(self, code: int) -> List[float]:
        return [((self.slot_hash(code, a) >> 8) & 255) / 64.0 - 2.0
                for a in range(self.num_actions)]

    def illegal(self, code: int) -> List[bool]:
        return [((self.slot_hash(code, a) >> 20) & 7) < self.illegal_eighths
                for a in range(self.num_actions)]

    def terminal(self, code: int) -> bool:
        return ((code >> 24) & 15) < self.terminal_sixteenths

    def reward(self, code: int) -> float:
        """Reward of the edge into `code` (non-zero only when terminal)."""
        if not self.terminal(code):
            return 0.0
        return float(((code >> 4) & 3) - 1) / 2.0  # in {-0.5, 0, 0.5, 1}

    # ---- JAX side ----------------------------------------------------------
    def jax_step_code(self, code, action):
        mixed = (code ^ (action.astype(jnp.uint32) + jnp.uint32(1))) * jnp.uint32(STEP_MUL)
        return mixed + jnp.uint32(STEP_ADD)

    def jax_slot_hash(self, code):
        actions = jnp.arange(self.num_actions, dtype=jnp.uint32)
        return (code[:, None] + actions * jnp.uint32(SLOT_MUL)) * jnp.uint32(SLOT_MIX)

    def jax_outputs(self, code, params=None):
        """params: None, or a dict overriding illegal_eighths / terminal_sixteenths
        with traced scalars (one compiled search serves many problems)."""
        params = params or {}
        illegal_eighths = params.get("illegal_eighths", self.illegal_eighths)
        terminal_sixteenths = params.get("terminal_sixteenths", self.terminal_sixteenths)
        slot = self.jax_slot_hash(code)
        logits = ((slot >> 8) & 255).astype(jnp.float32) / 64.0 - 2.0
        illegal = ((slot >> 20) & 7).astype(jnp.int32) < illegal_eighths
        value = ((code >> 8) & 511).astype(jnp.float32) / 256.0 - 1.0
        terminal = ((code >> 24) & 15).astype(jnp.int32) < terminal_sixteenths
        reward = jnp.where(terminal, (((code >> 4) & 3).astype(jnp.float32) - 1.0) / 2.0, 0.0)
        return logits, illegal, value, terminal, reward

    @property
    def recurrent_fn(self):
        """The search's recurrent_fn(params, rng_key, action [B], code [B]).

        Equal problems give the same function object, so a policy compiled for
        one is reused for every equal problem (a bound method would not be:
        Python compares bound methods by the identity of their object)."""
        return stable_recurrent_fn(self)

    def _recurrent_step(self, params, rng_key, action, code):
        del rng_key
        new_code = self.jax_step_code(code, action)
        logits, illegal, value, terminal, reward = self.jax_outputs(new_code, params)
        discount = jnp.where(terminal, 0.0, self.discount).astype(jnp.float32)
        output = RecurrentFnOutput(
            reward=reward, discount=discount, prior_logits=logits, value=value,
            invalid_actions=illegal if (self.illegal_eighths or params) else None)
        return output, new_code

    def root(self, root_codes, params=None):
        code = jnp.asarray(root_codes, jnp.uint32)
        logits, illegal, value, _, _ = self.jax_outputs(code, params)
        # A root row must have a legal action: un-mask the first one if needed.
        all_illegal = jnp.all(illegal, axis=-1, keepdims=True)
        illegal = illegal & ~(all_illegal & (jnp.arange(self.num_actions) == 0))
        return RootFnOutput(prior_logits=logits, value=value, embedding=code), illegal

    def root_python(self, code: int):
        illegal = self.illegal(code)
        if all(illegal):
            illegal[0] = False
        return self.value(code), self.logits(code), illegal


@functools.lru_cache(maxsize=None)
def stable_recurrent_fn(problem):
    """One recurrent_fn object per distinct (frozen, hashable) problem that has a
    `_recurrent_step(params, rng_key, action, embedding)` method. Policies
    compile once per recurrent_fn object, so equal problems share a compilation."""
    def recurrent_fn(params, rng_key, action, embedding):
        return problem._recurrent_step(params, rng_key, action, embedding)
    return recurrent_fn


def random_root_codes(seed: int, batch_size: int) -> np.ndarray:
    """[B] root states (uint32 values held in uint64) for a HashedProblem."""
    return np.random.default_rng(seed).integers(0, 2**32, size=batch_size, dtype=np.uint64)
