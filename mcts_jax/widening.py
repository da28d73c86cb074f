"""Progressive widening: a node's open children grow with its visits.

A node visited n times lets the descent enter only its

    k(n) = ceil(coefficient * n ** exponent)

legal child slots of highest prior (ties: the lower slot first); the
others stay closed until the node has been visited enough (Coulom 2007,
Chaslot et al. 2008's "progressive unpruning"; the widening of Sampled
MuZero's K). Where a node has fewer legal slots than k(n), all of them are
open. It is a plug-in (plugin.py) with one hook, `open_slots`:

    AlphaZeroPolicy.make(plugins=(SampledActions(dist, 32), ProgressiveWidening()))

With `sampled.SampledActions` at temperature 1 every slot has the same
corrected prior, so the open slots are the first k(n) samples: a node's
sample count grows with its visits, each sample an independent draw from
the proposal. At another temperature (or on a dense tree, where slots are
action ids) the k(n) slots of highest prior open first.

`root=False` leaves the root's slots all open (widening below it only).
Gumbel policies need it: their root already spends the budget on the m
considered actions of sequential halving, and a closed considered action
would break its schedule, so `root=True` with a Gumbel policy is refused.
"""

from __future__ import annotations

import dataclasses
import math

import chex
import jax.numpy as jnp

from mcts_jax.plugin import SearchPlugin


def open_children(node_visits: chex.Array, coefficient: float, exponent: float) -> chex.Array:
    """k(n) [B] int32: the children a node visited `node_visits` [B] times may
    enter, at least 1."""
    visits = jnp.maximum(node_visits, 1).astype(jnp.float32)
    return jnp.maximum(jnp.ceil(coefficient * visits ** exponent), 1.0).astype(jnp.int32)


def prior_rank(priors: chex.Array, legal: chex.Array) -> chex.Array:
    """[B, K] int32: each slot's place among its node's slots, legal slots by
    prior, highest first (0), ties by slot; illegal slots after every legal one."""
    key = jnp.where(legal, priors.astype(jnp.float32), -jnp.inf)
    # Counted, not sorted (a sort is slow on CPU): the slots j ahead of slot i
    # have a higher key, or the same key and a lower slot.
    mine, other = key[:, :, None], key[:, None, :]
    lower = jnp.arange(key.shape[-1])[None, :] < jnp.arange(key.shape[-1])[:, None]
    ahead = (other > mine) | ((other == mine) & lower[None])
    return jnp.sum(ahead, axis=-1, dtype=jnp.int32)


@dataclasses.dataclass(frozen=True)
class ProgressiveWidening(SearchPlugin):
    """Opens a node's ceil(coefficient x visits ** exponent) slots of highest
    prior (module docstring); `root=False`: the root's slots all open.

    Attributes:
      coefficient: C > 0, the children open at one visit (rounded up).
      exponent: alpha in (0, 1]; 0.5 opens sqrt(n) children, 1 a new child
        every visit (no widening once C >= 1).
      root: widen the root too (refused with Gumbel policies).
    """

    coefficient: float = 1.0
    exponent: float = 0.5
    root: bool = True

    def __post_init__(self):
        if isinstance(self.coefficient, bool) or not (
                isinstance(self.coefficient, (int, float)) and self.coefficient > 0
                and math.isfinite(self.coefficient)):
            raise ValueError(f"ProgressiveWidening coefficient must be a finite number > 0, "
                             f"got {self.coefficient!r}")
        if isinstance(self.exponent, bool) or not (
                isinstance(self.exponent, (int, float)) and 0 < self.exponent <= 1):
            raise ValueError(f"ProgressiveWidening exponent must be a number in (0, 1], got "
                             f"{self.exponent!r}")
        if not isinstance(self.root, bool):
            raise TypeError(f"ProgressiveWidening root must be a bool, got {self.root!r}")

    def check(self, policy, options):
        if self.root and hasattr(policy, "max_num_considered_actions"):
            raise ValueError(
                f"plugins: ProgressiveWidening(root=True) with {type(policy).__name__}: the "
                f"root's sequential halving already chooses which actions it visits; use "
                f"ProgressiveWidening(root=False) to widen below the root")

    def open_slots(self, tree, record, stats):
        allowed = open_children(stats.node_visits, self.coefficient, self.exponent)
        opened = prior_rank(stats.priors, stats.legal) < allowed[:, None]
        if not self.root:
            opened = opened | (stats.depth == 0)[:, None]
        return opened
