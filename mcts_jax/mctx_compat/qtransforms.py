"""mctx's form of the Q transforms: `qtransform(tree, node_index) -> [A]`.

Our Q transforms take `(tree, node [B], stats) -> [B, K]` (qtransforms.py).
mctx's take one unbatched mctx tree and a node index and answer one value
per action. The four here (mctx's three names, and `qtransform_raw`) answer
both forms: called with `stats` they are ours, called as
`qtransform(tree, node_index)` on an `MctxTree` (unbatched, as mctx's
selection functions get it, or batched with `node_index` [B]) they answer
[A] (or [B, A]), as mctx's. They declare ours as `__wrapped__`, so a policy
given one runs exactly the rule it would run with ours.

`our_qtransform(fn)` turns a transform written mctx's way into ours
(`MctxFormQTransform`): it is then called on `mctx_view(tree)` row by row,
which costs O(N A) per selection step against O(K) for ours.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Callable

import chex
import jax
import jax.numpy as jnp

from mcts_jax import qtransforms
from mcts_jax import tree as tree_lib
from mcts_jax.mctx_compat import tree as mctx_tree


def _both_forms(ours: Callable) -> Callable:
    """`ours` answering mctx's form too (module docstring)."""
    @functools.wraps(ours)
    def transform(tree, node, stats=None, **constants):
        if stats is not None:
            return ours(tree, node, stats, **constants)
        facts, rows_node, rows_stats = mctx_tree.row_stats(tree, node)
        return mctx_tree.unbatched_result(tree, ours(facts, rows_node, rows_stats, **constants))
    return transform


qtransform_by_min_max = _both_forms(qtransforms.qtransform_by_min_max)
qtransform_by_parent_and_siblings = _both_forms(qtransforms.qtransform_by_parent_and_siblings)
qtransform_completed_by_mix_value = _both_forms(qtransforms.qtransform_completed_by_mix_value)
qtransform_raw = _both_forms(qtransforms.qtransform_raw)


@dataclasses.dataclass(frozen=True)
class MctxFormQTransform:
    """A Q transform written mctx's way, `fn(tree, node_index) -> [A]` on an
    unbatched mctx-style tree, used as ours, `(tree, node [B], stats) ->
    [B, K]`: each row gets `mctx_view(tree)` (the mctx arrays it reads are
    computed, O(N A) per call) and its node; the [B, A] answer is read at
    each child slot. Equal when `fn` is equal (compiled once)."""

    fn: Callable

    def __call__(self, tree: tree_lib.Tree, node: chex.Array,
                 stats: tree_lib.ChildrenStats) -> chex.Array:
        view = mctx_tree.mctx_view(tree, keep_source=False)
        values = jax.vmap(self.fn)(view, node)
        expected = (tree.batch_size, view.num_actions)
        if jnp.shape(values) != expected or not jnp.issubdtype(jnp.result_type(values),
                                                               jnp.floating):
            raise ValueError(
                f"qtransform {_name(self.fn)} (mctx's form, (tree, node_index) -> [A]) "
                f"returned shape {jnp.shape(values)[1:]} and dtype {jnp.result_type(values)} "
                f"for one node; expected float [A] = [{view.num_actions}]")
        values = values.astype(jnp.float32)
        if tree.num_chance_outcomes:  # a stochastic tree's decision nodes: A of A + C ids
            values = jnp.pad(values, ((0, 0), (0, tree.num_chance_outcomes)))
        return tree_lib.at_slots(tree, stats.actions, values)


def _name(fn) -> str:
    base = getattr(fn, "func", fn)
    return getattr(base, "__qualname__", None) or repr(fn)


def our_qtransform(fn: Callable, name: str = "qtransform") -> Callable:
    """`fn` as one of our Q transforms: ours (`(tree, node, stats) -> [B, K]`,
    including the four here) as it is; mctx's form (`(tree, node_index) ->
    [A]`) wrapped in `MctxFormQTransform`; anything else a TypeError naming
    `name`."""
    if isinstance(fn, MctxFormQTransform):
        return fn
    example = ("functools.partial(mcts_jax.qtransform_by_min_max, min_value=-1.0, "
               "max_value=1.0)")
    try:
        qtransforms.check_tree_function(fn, name, example)
        return fn
    except TypeError as ours_error:
        try:
            inspect.signature(fn).bind(None, None)
        except (TypeError, ValueError):
            if not callable(fn):
                raise ours_error from None
            raise TypeError(f"{name} cannot be called as {name}(tree, node, stats) (ours) "
                            f"nor as {name}(tree, node_index) (mctx's form): {ours_error}"
                            ) from None
        return MctxFormQTransform(fn)
