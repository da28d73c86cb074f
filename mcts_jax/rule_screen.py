"""A user's selection rule, screened: the loop never descends into a closed
slot nor takes a NaN for a score.

Our rules with our Q transforms (`selection.screens_its_own_slots`) score
closed slots -inf and never return NaN, so the loop takes the argmax of
their scores as they are. A user's rule may do neither: `RuleScreen`, a
plug-in that `tree_search.run_policy` adds when a search's rules are not
both ours, reads the scores of such a rule through `usable_scores` (closed
and NaN slots -inf; a row whose open slots all failed follows the highest
prior among the NaN ones) and carries, per row, whether the rule scored NaN
on an open slot (`checks="host"` warns, `checks="checkify"` raises).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import chex
import jax.numpy as jnp

from mcts_jax import tree as tree_lib
from mcts_jax.plugin import SearchPlugin
from mcts_jax.selection import screens_its_own_slots


def usable_scores(scores: chex.Array, stats: tree_lib.ChildrenStats,
                  opened: Optional[chex.Array]) -> tuple[chex.Array, chex.Array]:
    """(the scores [B, K] the descent takes the argmax of, from a rule's;
    [B] bool, the rule scored NaN on an open slot of the row).

    Open slots are the legal ones (and where `opened` [B, K] is given,
    the plug-ins' open slots: `plugin.open_slots`). A closed
    slot scores -inf whatever the rule gave it, and so does an open slot
    the rule scored NaN. When every open slot of a row then scores -inf and
    some scored NaN (the rule failed there), those NaN slots score their
    priors instead, so the descent goes on into the one with the highest
    prior; a row whose open slots all scored -inf stays a dead end (-inf
    everywhere). +inf is kept (a rule's "choose this"). For a rule that
    scores closed slots -inf and never gives NaN (every built-in one) the
    result is its scores, bit for bit. A NaN is reported
    (`Policy.__call__` warns, checks="checkify" raises).
    """
    open_slots = stats.legal if opened is None else stats.legal & opened
    failed = open_slots & jnp.isnan(scores)
    scores = jnp.where(open_slots & ~failed, scores, -jnp.inf)
    stuck = jnp.max(scores, axis=-1, keepdims=True) == -jnp.inf
    fallback = jnp.where(failed, jnp.nan_to_num(stats.priors, nan=0.0), -jnp.inf)
    return jnp.where(stuck, fallback.astype(scores.dtype), scores), jnp.any(failed, axis=-1)


@dataclasses.dataclass(frozen=True)
class RuleScreen(SearchPlugin):
    """The screen of a user's rule as a plug-in (module docstring). What it
    carries, through every descent and simulation: [B] bool, the row's rule
    scored NaN on an open slot (`rule_failed`)."""

    def search_state(self, tree, record, lead_shape):
        return jnp.zeros((tree.batch_size,), jnp.bool_)

    def screen_scores(self, tree, record, failed, rule, scores, stats, opened, active):
        """(failed [B], the scores the descent takes the argmax of)."""
        if screens_its_own_slots(rule):  # ours (the other rule is the user's)
            return failed, scores if opened is None else jnp.where(opened, scores, -jnp.inf)
        scores, failed_here = usable_scores(scores, stats, opened)
        return failed | (active & failed_here), scores
