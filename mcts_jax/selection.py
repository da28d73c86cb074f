"""Selection rules: the score of each child slot of a node, for a batch of rows.

A rule is a function `(tree, node [B], depth [B], stats) -> scores [B, K]`, where
`stats` are the node's `ChildrenStats` (gathered once by the search); the search
descends into the argmax (lowest slot wins ties). Illegal slots score -inf and
are never chosen; a node whose slots are all -inf is a dead end and is
re-evaluated instead of descended. Every rule reads only the K children of the
given node, so one selection step costs O(B K).

Q-values are from the point of view of the player to move at `node` and are put
on the user's value scale (`tree.value_range`) before exploration terms are
added, so `uct_c` means the same thing for rewards in [-1, 1] and in [0, 1]
relative to their own range.
"""

from __future__ import annotations

import functools
from typing import Callable

import chex
import jax.numpy as jnp

from mcts_jax import tree as tree_lib

ScoreFn = Callable[[tree_lib.Tree, chex.Array, chex.Array, tree_lib.ChildrenStats], chex.Array]

Q_TRANSFORMS = ("parent_and_siblings", "raw")


def uct_scores(tree: tree_lib.Tree, node: chex.Array, depth: chex.Array,
               stats: tree_lib.ChildrenStats, *, uct_c: float) -> chex.Array:
    """UCB1: `Q + uct_c * sqrt(ln N / n)`; unvisited legal children score +inf.

    N is the visit count of `node` (its expansion plus every pass through it),
    n the child's. Priors play no part.
    """
    del depth
    parent_visits = tree_lib.gather_nodes(tree.node_visits, node).astype(jnp.float32)
    log_parent = jnp.log(jnp.maximum(parent_visits, 1.0))[:, None]
    visits = stats.visits.astype(jnp.float32)
    exploration = uct_c * jnp.sqrt(log_parent / jnp.maximum(visits, 1.0))
    scores = tree_lib.to_user_scale(stats.qvalues, tree.value_range) + exploration
    scores = jnp.where(stats.visits == 0, jnp.inf, scores)
    return jnp.where(stats.legal, scores, -jnp.inf)


def normalized_qvalues(tree: tree_lib.Tree, node: chex.Array,
                       stats: tree_lib.ChildrenStats, q_transform: str) -> chex.Array:
    """Q-values used by PUCT, [B, K].

    "parent_and_siblings" (the default, as mctx's
    `qtransform_by_parent_and_siblings`): visited children's Q min-max
    normalised to [0, 1] over the node's own mean value and its visited
    children's Q; unvisited children get 0 (the minimum).
    "raw": Q on the user's value scale; an unvisited child gets the node's mean
    value (first-play urgency equal to the parent's value).
    """
    node_value = (tree_lib.gather_nodes(tree.value_sums, node)
                  / jnp.maximum(tree_lib.gather_nodes(tree.node_visits, node), 1))[:, None]
    visited = stats.visits > 0
    if q_transform == "raw":
        return tree_lib.to_user_scale(jnp.where(visited, stats.qvalues, node_value),
                                      tree.value_range)
    if q_transform != "parent_and_siblings":
        raise ValueError(f"q_transform must be one of {Q_TRANSFORMS}, got {q_transform!r}")
    filled = jnp.where(visited, stats.qvalues, node_value)
    low = jnp.minimum(node_value, jnp.min(filled, axis=-1, keepdims=True))
    high = jnp.maximum(node_value, jnp.max(filled, axis=-1, keepdims=True))
    completed = jnp.where(visited, stats.qvalues, low)
    return (completed - low) / jnp.maximum(high - low, 1e-8)


def puct_scores(tree: tree_lib.Tree, node: chex.Array, depth: chex.Array,
                stats: tree_lib.ChildrenStats, *, pb_c_init: float, pb_c_base: float,
                q_transform: str) -> chex.Array:
    """AlphaZero PUCT: `Q + c(N) * P * sqrt(N) / (1 + n)`.

    `c(N) = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)`, N the visit
    count of `node`, n the child's, P its prior, Q from `normalized_qvalues`.
    """
    del depth
    parent_visits = tree_lib.gather_nodes(tree.node_visits, node).astype(jnp.float32)[:, None]
    pb_c = pb_c_init + jnp.log((parent_visits + pb_c_base + 1.0) / pb_c_base)
    exploration = (pb_c * jnp.sqrt(parent_visits) * stats.priors
                   / (stats.visits.astype(jnp.float32) + 1.0))
    scores = normalized_qvalues(tree, node, stats, q_transform) + exploration
    return jnp.where(stats.legal, scores, -jnp.inf)


def make_uct(uct_c: float) -> ScoreFn:
    return functools.partial(uct_scores, uct_c=uct_c)


def make_puct(pb_c_init: float, pb_c_base: float, q_transform: str) -> ScoreFn:
    return functools.partial(puct_scores, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                             q_transform=q_transform)
