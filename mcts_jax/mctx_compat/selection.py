"""mctx's selection functions, and mctx-style ones used as our rules.

mctx selects with functions of one unbatched tree:

    root_action_selection_fn(rng_key, tree, node_index) -> action
    interior_action_selection_fn(rng_key, tree, node_index, depth) -> action

(`mcts_jax.RootActionSelectionFn`, `InteriorActionSelectionFn`). The three
mctx ships are here with mctx's names, signatures and semantics, on an
`MctxTree` (or on mctx's own `Tree`: they read only its mctx fields); each
reads the node as our `ChildrenStats` (`mctx_tree.row_stats`) and runs our
rule, so there is one PUCT and one sequential halving in the library.

`MctxSelectionRule` turns any such function into one of our rules, for
`mcts_jax.search` called with mctx's keywords (search.py): each selection step hands
every row `mctx_view(tree)` and that row's node, key and depth, and scores
the chosen action 0 and every other -inf. Computing the view costs O(N A)
per step (our rules: O(K)), the price of running mctx-style code unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import chex
import jax
import jax.numpy as jnp

from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax.mctx_compat import tree as mctx_tree
from mcts_jax.mctx_compat.qtransforms import (qtransform_by_parent_and_siblings,
                                              qtransform_completed_by_mix_value)


def _fixed(values: chex.Array) -> Callable:
    """A Q transform that answers `values` [1, A] (already computed)."""
    return lambda tree, node, stats: values


def _masked_argmax(scores: chex.Array, invalid: chex.Array) -> chex.Array:
    return jnp.argmax(jnp.where(invalid, -jnp.inf, scores), axis=-1).astype(jnp.int32)


def muzero_action_selection(rng_key: chex.PRNGKey, tree: mctx_tree.MctxTree,
                            node_index: chex.Numeric, depth: chex.Numeric, *,
                            pb_c_init: float = selection.PB_C_INIT,
                            pb_c_base: float = selection.PB_C_BASE,
                            qtransform: Callable = qtransform_by_parent_and_siblings
                            ) -> chex.Array:
    """mctx's MuZero PUCT selection at `node_index` of an unbatched tree:
    `qtransform(tree, node_index) + c(N) P sqrt(N) / (1 + n)` plus `1e-7 *
    U[0, 1)` noise from `rng_key`; at depth 0 the root's invalid actions are
    never chosen. Returns the action, int32 scalar."""
    facts, node, stats = mctx_tree.row_stats(tree, node_index, rng_key=rng_key)
    value_score = jnp.reshape(qtransform(tree, node_index), (1, -1))
    scores = selection.puct_scores(facts, node, stats.replace(legal=jnp.ones_like(stats.legal)),
                                   pb_c_init=pb_c_init, pb_c_base=pb_c_base,
                                   qtransform=_fixed(value_score), tie_break=selection.MUZERO_TIE_BREAK)
    invalid = (jnp.asarray(tree.root_invalid_actions) != 0) & (depth == 0)
    return _masked_argmax(scores[0], invalid)


def gumbel_muzero_root_action_selection(
        rng_key: chex.PRNGKey, tree: mctx_tree.MctxTree, node_index: chex.Numeric, *,
        num_simulations: chex.Numeric, max_num_considered_actions: chex.Numeric,
        qtransform: Callable = qtransform_completed_by_mix_value) -> chex.Array:
    """mctx's Gumbel MuZero root selection (sequential halving over the
    `max_num_considered_actions` best of `g + logits`, g =
    `tree.extra_data.root_gumbel`) at `node_index` of an unbatched tree.
    Returns the action, int32 scalar."""
    del rng_key
    facts, node, stats = mctx_tree.row_stats(tree, node_index)
    completed = jnp.reshape(qtransform(tree, node_index), (1, -1))
    num_valid = jnp.sum(stats.legal, axis=-1)
    scores = selection.halving_scores(
        facts, node, stats,
        gumbel=jnp.reshape(tree.extra_data.root_gumbel, (1, -1)),
        root_visits_before=jnp.zeros_like(stats.visits),
        num_considered=jnp.minimum(max_num_considered_actions, num_valid).astype(jnp.int32),
        table=selection.halving_table(max_num_considered_actions, num_simulations),
        qtransform=_fixed(completed))
    return _masked_argmax(scores[0], ~stats.legal[0])


def gumbel_muzero_interior_action_selection(
        rng_key: chex.PRNGKey, tree: mctx_tree.MctxTree, node_index: chex.Numeric,
        depth: chex.Numeric, *,
        qtransform: Callable = qtransform_completed_by_mix_value) -> chex.Array:
    """mctx's Gumbel MuZero selection below the root: the action whose visit
    share lags most behind `softmax(logits + qtransform(tree, node_index))`.
    Returns the action, int32 scalar."""
    del rng_key, depth
    facts, node, stats = mctx_tree.row_stats(tree, node_index)
    completed = jnp.reshape(qtransform(tree, node_index), (1, -1))
    scores = selection.gumbel_interior_scores(
        facts, node, stats.replace(legal=jnp.ones_like(stats.legal)),
        qtransform=_fixed(completed))
    return jnp.argmax(scores[0]).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class MctxSelectionRule:
    """An mctx selection function as our rule `(tree, node [B], stats) ->
    [B, K]` (module docstring). `at_root`: `fn(rng_key, tree, node_index)`
    (mctx's root form), else `fn(rng_key, tree, node_index, depth)`. Equal
    when `fn` is equal (compiled once)."""

    fn: Callable
    at_root: bool

    def __call__(self, tree: tree_lib.Tree, node: chex.Array,
                 stats: tree_lib.ChildrenStats) -> chex.Array:
        view = mctx_tree.mctx_view(tree, root_invalid_actions=tree.extra_data.root_invalid,
                                   keep_source=False).replace(
                                       extra_data=tree.extra_data.user_data)
        if self.at_root:
            action = jax.vmap(self.fn)(stats.rng_key, view, node)
        else:
            action = jax.vmap(self.fn)(stats.rng_key, view, node, stats.depth)
        if jnp.shape(action) != (tree.batch_size,) or not jnp.issubdtype(
                jnp.result_type(action), jnp.integer):
            kind = "root_action_selection_fn" if self.at_root else "interior_action_selection_fn"
            raise ValueError(f"{kind} {getattr(self.fn, '__qualname__', repr(self.fn))} returned "
                             f"shape {jnp.shape(action)[1:]} and dtype {jnp.result_type(action)} "
                             f"for one node; expected an integer action, shape ()")
        return jnp.where(stats.actions == action[:, None].astype(jnp.int32), 0.0, -jnp.inf)


@chex.dataclass(frozen=True)
class MctxSearchData:
    """`tree.extra_data` of a search run with mctx's keywords: the caller's
    `extra_data` and root mask, handed to the selection functions in the
    view (`MctxSelectionRule`)."""

    user_data: chex.ArrayTree
    root_invalid: chex.Array
