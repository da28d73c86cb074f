"""Q transforms: the value term of a selection rule, as plain functions.

A Q transform maps a node's children to one number per child slot:

    qtransform(tree, node [B] int32, stats: ChildrenStats) -> [B, K] float32

with the same inputs as a selection rule (`stats` are the node's
`ChildrenStats`). Pass one to a rule with `functools.partial`, its constants
bound, e.g. `functools.partial(mcts_jax.qtransform_by_min_max, min_value=-1.,
max_value=1.)`. The three mctx transforms keep mctx's names, keyword
arguments, defaults and semantics; `qtransform_raw` is ours. Q-values are
read on the user's value scale and from the point of view of the player to
move at `node`.

mctx's form works too. Ours called as `qtransform(tree, node_index)` on an
mctx-style tree (`MctxTree`, unbatched as mctx's selection functions get it,
or batched with `node_index` [B]) answer [A] (or [B, A]), as mctx's. And a
transform written mctx's way, `(tree, node_index) -> [A]`, may be given
wherever ours are taken (`accept_qtransform` wraps it in
`MctxFormQTransform`): it is then called on `mctx_view(tree)` row by row,
which costs O(N A) per selection step against O(K) for ours.
"""

from __future__ import annotations

import inspect

import chex
import jax.numpy as jnp

from mcts_jax import tree as tree_lib


def _user_q(tree: tree_lib.Tree, stats: tree_lib.ChildrenStats) -> chex.Array:
    """Children's Q [B, K] on the user's scale; 0 where not expanded (as mctx)."""
    return jnp.where(stats.index >= 0, tree_lib.to_user_scale(stats.qvalues, tree.value_range),
                     0.0)


def qtransform_by_min_max(tree: tree_lib.Tree, node: chex.Array,
                          stats: tree_lib.ChildrenStats, *, min_value: float,
                          max_value: float) -> chex.Array:
    """`(Q - min_value) / (max_value - min_value)` for visited children, 0 for
    the unvisited ones. `min_value` / `max_value`: the lowest and highest Q
    possible (user's scale). [B, K]."""
    del node
    qvalues = _user_q(tree, stats)
    value_score = jnp.where(stats.visits > 0, qvalues, min_value)
    return (value_score - min_value) / (max_value - min_value)


def qtransform_by_parent_and_siblings(tree: tree_lib.Tree, node: chex.Array,
                                      stats: tree_lib.ChildrenStats, *,
                                      epsilon: float = 1e-8) -> chex.Array:
    """Q min-max normalised to [0, 1] over the node's own mean value and its
    visited children's Q; unvisited children get 0 (the minimum). `epsilon`:
    the smallest denominator. [B, K]. mctx's default for MuZero."""
    del node
    qvalues = _user_q(tree, stats)
    node_value = tree_lib.to_user_scale(stats.node_value, tree.value_range)[:, None]
    visited = stats.visits > 0
    safe_qvalues = jnp.where(visited, qvalues, node_value)
    min_value = jnp.minimum(node_value, jnp.min(safe_qvalues, axis=-1, keepdims=True))
    max_value = jnp.maximum(node_value, jnp.max(safe_qvalues, axis=-1, keepdims=True))
    completed_by_min = jnp.where(visited, qvalues, min_value)
    return (completed_by_min - min_value) / jnp.maximum(max_value - min_value, epsilon)


def mixed_value(tree: tree_lib.Tree, stats: tree_lib.ChildrenStats) -> chex.Array:
    """The mixed value [B] of Gumbel MuZero (Appendix D): the node's raw value
    blended with the prior-weighted mean Q of its visited children,
    `(v + N * sum_visited(P Q) / sum_visited(P)) / (N + 1)`."""
    qvalues = _user_q(tree, stats)
    visited = stats.visits > 0
    raw_value = tree_lib.to_user_scale(stats.raw_value, tree.value_range)
    total_visits = jnp.sum(stats.visits, axis=-1).astype(jnp.float32)
    priors = jnp.maximum(jnp.finfo(jnp.float32).tiny, stats.priors)
    visited_mass = jnp.sum(jnp.where(visited, priors, 0.0), axis=-1)
    # One division per row (mctx divides every term; equal up to rounding,
    # and 10% of a Gumbel search's time on a free simulator).
    weighted_q = (jnp.sum(jnp.where(visited, priors * qvalues, 0.0), axis=-1)
                  / jnp.where(visited_mass > 0, visited_mass, 1.0))
    return (raw_value + total_visits * weighted_q) / (total_visits + 1.0)


def qtransform_completed_by_mix_value(tree: tree_lib.Tree, node: chex.Array,
                                      stats: tree_lib.ChildrenStats, *,
                                      value_scale: float = 0.1,
                                      maxvisit_init: float = 50.0,
                                      rescale_values: bool = True,
                                      use_mixed_value: bool = True,
                                      epsilon: float = 1e-8) -> chex.Array:
    """sigma(completed Q) of Gumbel MuZero, [B, K].

    Unvisited children's Q is completed with the node's mixed value
    (`use_mixed_value`) or its raw value; with `rescale_values` the completed
    Q-values are min-max rescaled to [0, 1] over every action (an action
    without a visit, illegal or without a compact slot, counts with the
    completing value, as in mctx's dense tree; `epsilon` the smallest
    denominator); then multiplied by `(maxvisit_init + max child visits) *
    value_scale`.
    """
    del node
    qvalues = _user_q(tree, stats)
    visited = stats.visits > 0
    if use_mixed_value:
        value = mixed_value(tree, stats)
    else:
        value = tree_lib.to_user_scale(stats.raw_value, tree.value_range)
    value = value[:, None]
    completed = jnp.where(visited, qvalues, value)
    if rescale_values:
        # Some action is unvisited (always true in the dense layout unless
        # every action was visited): the completing value is in the range.
        has_unvisited = (jnp.sum(visited, axis=-1, keepdims=True) < tree.num_actions)
        low = jnp.min(completed, axis=-1, keepdims=True)
        high = jnp.max(completed, axis=-1, keepdims=True)
        low = jnp.where(has_unvisited, jnp.minimum(low, value), low)
        high = jnp.where(has_unvisited, jnp.maximum(high, value), high)
        completed = (completed - low) / jnp.maximum(high - low, epsilon)
    max_visits = jnp.max(stats.visits, axis=-1, keepdims=True).astype(jnp.float32)
    return (maxvisit_init + max_visits) * value_scale * completed


def qtransform_raw(tree: tree_lib.Tree, node: chex.Array,
                   stats: tree_lib.ChildrenStats) -> chex.Array:
    """Q on the user's scale, unnormalised; an unvisited child gets the node's
    mean value (first-play urgency equal to the parent's value). [B, K]."""
    del node
    node_value = tree_lib.to_user_scale(stats.node_value, tree.value_range)
    return jnp.where(stats.visits > 0, _user_q(tree, stats), node_value[:, None])


def check_tree_function(fn, name: str, example: str) -> None:
    """A clear error, naming `name`, for a rule or Q transform that is not a
    function of `(tree, node, stats)`: not callable, or whose bound keyword
    arguments leave a required one missing or name an unknown one."""
    if not callable(fn):
        raise TypeError(f"{name} must be a function (tree, node [B], stats) -> [B, K], such "
                        f"as {example}, got {type(fn).__name__}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as error:  # builtins without a signature, bad partials
        if "argument" in str(error):
            raise TypeError(f"{name} has wrong arguments: {error}") from None
        return
    try:
        signature.bind(None, None, None)
    except TypeError as error:
        try:
            signature.bind(None, None)
            hint = (" It takes (tree, node_index), mctx's form of a Q transform: "
                    "mcts_jax.mctx_compat.our_qtransform(fn) turns it into ours.")
        except TypeError:
            hint = ""
        raise TypeError(f"{name} cannot be called as {name}(tree, node, stats): {error} "
                        f"(bind its constants with functools.partial, e.g. {example}).{hint}"
                        ) from None


# Ours: finite for finite inputs, one value per slot.
OUR_QTRANSFORMS = frozenset({qtransform_by_min_max, qtransform_by_parent_and_siblings,
                             qtransform_completed_by_mix_value, qtransform_raw})
