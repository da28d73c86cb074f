"""Selection rules: the score of each child slot of a node, for a batch of rows.

A rule is a function `(tree, node [B], stats) -> scores [B, K]`, where `stats`
are the node's `ChildrenStats` (gathered once by the search); the search
descends into the argmax (lowest slot wins ties). A search uses a `Rules` pair:
one rule at the root and one below it (the same for UCT and PUCT; Gumbel's
sequential halving at the root, its deterministic rule below), so no step
computes a rule it does not use. Illegal slots score -inf and
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
import math
from typing import Callable, NamedTuple, Tuple

import chex
import jax
import jax.numpy as jnp

from mcts_jax import tree as tree_lib

ScoreFn = Callable[[tree_lib.Tree, chex.Array, tree_lib.ChildrenStats], chex.Array]


class Rules(NamedTuple):
    """The selection rule of one simulation: `at_root` scores the root's
    children (the first step of every descent), `below_root` every deeper node."""

    at_root: ScoreFn
    below_root: ScoreFn


def everywhere(rule: ScoreFn) -> Rules:
    """The same rule at the root and below it."""
    return Rules(at_root=rule, below_root=rule)

Q_TRANSFORMS = ("parent_and_siblings", "raw")


def uct_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats, *,
               uct_c: float) -> chex.Array:
    """UCB1: `Q + uct_c * sqrt(ln N / n)`; unvisited legal children score +inf.

    N is the visit count of `node` (its expansion plus every pass through it),
    n the child's. Priors play no part.
    """
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


def puct_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats, *,
                pb_c_init: float, pb_c_base: float, q_transform: str) -> chex.Array:
    """AlphaZero PUCT: `Q + c(N) * P * sqrt(N) / (1 + n)`.

    `c(N) = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)`, N the visit
    count of `node`, n the child's, P its prior, Q from `normalized_qvalues`.
    """
    parent_visits = tree_lib.gather_nodes(tree.node_visits, node).astype(jnp.float32)[:, None]
    pb_c = pb_c_init + jnp.log((parent_visits + pb_c_base + 1.0) / pb_c_base)
    exploration = (pb_c * jnp.sqrt(parent_visits) * stats.priors
                   / (stats.visits.astype(jnp.float32) + 1.0))
    scores = normalized_qvalues(tree, node, stats, q_transform) + exploration
    return jnp.where(stats.legal, scores, -jnp.inf)


def make_uct(uct_c: float) -> Rules:
    return everywhere(functools.partial(uct_scores, uct_c=uct_c))


def make_puct(pb_c_init: float, pb_c_base: float, q_transform: str) -> Rules:
    return everywhere(functools.partial(puct_scores, pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                                        q_transform=q_transform))


# ---------------------------------------------------------------------------
# Gumbel MuZero (Danihelka et al., 2022): sequential halving at the root,
# completed Q-values, and a deterministic rule below the root.
# ---------------------------------------------------------------------------


def halving_schedule(num_considered: int, num_simulations: int) -> Tuple[int, ...]:
    """The visit count an action must have to be chosen at each simulation of
    sequential halving with `num_considered` actions.

    The budget is split into about log2(num_considered) phases; in each phase
    every surviving action is visited equally often, then half of them (the
    worse half by score) drop out, down to two. With one action (or none)
    every simulation goes to it.
    """
    if num_considered <= 1:
        return tuple(range(num_simulations))
    phases = math.ceil(math.log2(num_considered))
    schedule, visits, alive = [], [0] * num_considered, num_considered
    while len(schedule) < num_simulations:
        rounds = max(1, num_simulations // (phases * alive))
        for _ in range(rounds):
            schedule.extend(visits[:alive])
            visits[:alive] = [v + 1 for v in visits[:alive]]
        alive = max(2, alive // 2)
    return tuple(schedule[:num_simulations])


def halving_table(max_considered: int, num_simulations: int) -> jnp.ndarray:
    """[max_considered + 1, num_simulations] int32: row m is the schedule for
    m considered actions."""
    return jnp.asarray([halving_schedule(m, num_simulations)
                        for m in range(max_considered + 1)], jnp.int32)


def completed_qvalues(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats, *,
                      value_scale: float, maxvisit_init: float) -> chex.Array:
    """sigma(completed Q) [B, K] of the Gumbel MuZero paper.

    Unvisited children get the node's mixed value (its raw value blended with
    the prior-weighted mean Q of the visited children); all Q are min-max
    rescaled over the legal children to [0, 1], then multiplied by
    `(maxvisit_init + max child visits) * value_scale`. Illegal slots get 0.
    """
    visited = stats.visits > 0
    priors = jnp.maximum(stats.priors, jnp.finfo(jnp.float32).tiny)
    visited_mass = jnp.sum(jnp.where(visited, priors, 0.0), axis=-1, keepdims=True)
    weighted_q = jnp.sum(jnp.where(visited, priors * stats.qvalues, 0.0), axis=-1,
                         keepdims=True) / jnp.maximum(visited_mass, jnp.finfo(jnp.float32).tiny)
    total_visits = jnp.sum(stats.visits, axis=-1, keepdims=True).astype(jnp.float32)
    raw_value = tree_lib.gather_nodes(tree.raw_values, node)[:, None]
    mixed_value = (raw_value + total_visits * weighted_q) / (total_visits + 1.0)
    completed = jnp.where(visited, stats.qvalues, mixed_value)
    low = jnp.min(jnp.where(stats.legal, completed, jnp.inf), axis=-1, keepdims=True)
    high = jnp.max(jnp.where(stats.legal, completed, -jnp.inf), axis=-1, keepdims=True)
    rescaled = (completed - low) / jnp.maximum(high - low, 1e-8)
    max_visits = jnp.max(stats.visits, axis=-1, keepdims=True).astype(jnp.float32)
    return jnp.where(stats.legal, (maxvisit_init + max_visits) * value_scale * rescaled, 0.0)


def prior_logits(stats: tree_lib.ChildrenStats) -> chex.Array:
    """log P [B, K] over legal slots, a very low finite value elsewhere."""
    return jnp.where(stats.legal & (stats.priors > 0),
                     jnp.log(jnp.maximum(stats.priors, jnp.finfo(jnp.float32).tiny)), -1e9)


def gumbel_interior_scores(tree: tree_lib.Tree, node: chex.Array,
                           stats: tree_lib.ChildrenStats, *, value_scale: float,
                           maxvisit_init: float) -> chex.Array:
    """Deterministic selection below the root: the child whose visit share
    lags most behind the improved policy `softmax(log P + sigma(completed Q))`."""
    improved = jax.nn.softmax(prior_logits(stats) + completed_qvalues(
        tree, node, stats, value_scale=value_scale, maxvisit_init=maxvisit_init), axis=-1)
    visits = stats.visits.astype(jnp.float32)
    share = visits / (1.0 + jnp.sum(visits, axis=-1, keepdims=True))
    return jnp.where(stats.legal, improved - share, -jnp.inf)


def gumbel_root_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats,
                       *, gumbel: chex.Array, root_visits_before: chex.Array,
                       target_visits: chex.Array, value_scale: float,
                       maxvisit_init: float) -> chex.Array:
    """Sequential halving at the root (`node` is every row's root): among the
    actions whose visits in this search (`stats.visits - root_visits_before`)
    equal `target_visits` [B], the best `g + log P + sigma(completed Q)`."""
    score = gumbel + prior_logits(stats) + completed_qvalues(
        tree, node, stats, value_scale=value_scale, maxvisit_init=maxvisit_init)
    visits_this_search = stats.visits - root_visits_before
    eligible = stats.legal & (visits_this_search == target_visits[:, None])
    return jnp.where(eligible, jnp.maximum(score, -1e9), -jnp.inf)


def make_gumbel(simulation_index: chex.Array, table: chex.Array, num_considered: chex.Array,
                gumbel: chex.Array, root_visits_before: chex.Array, *, value_scale: float,
                maxvisit_init: float) -> Rules:
    """The Gumbel MuZero rules for one simulation.

    Args:
      simulation_index: traced int, which simulation of this search.
      table: `halving_table(max_considered, num_simulations)`.
      num_considered: [B] int32, min(max_num_considered_actions, legal actions).
      gumbel: [B, K] Gumbel noise of the root slots (0 where illegal).
      root_visits_before: [B, K] root child visits before this search (a
        reused tree): sequential halving counts only the visits of this search.
    """
    at_root = functools.partial(
        gumbel_root_scores, gumbel=gumbel, root_visits_before=root_visits_before,
        target_visits=table[num_considered, simulation_index], value_scale=value_scale,
        maxvisit_init=maxvisit_init)
    below_root = functools.partial(gumbel_interior_scores, value_scale=value_scale,
                                   maxvisit_init=maxvisit_init)
    return Rules(at_root=at_root, below_root=below_root)
