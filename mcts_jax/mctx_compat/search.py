"""mctx's `search`: simulations selected by mctx's selection functions.

    tree = mcts_jax.search(params, rng_key, root=root, recurrent_fn=recurrent_fn,
                           root_action_selection_fn=..., interior_action_selection_fn=...,
                           num_simulations=64, max_depth=None, invalid_actions=None,
                           extra_data=None, loop_fn=jax.lax.fori_loop)   # -> MctxTree

`search` here takes either signature: with mctx's selection functions it
runs mctx's search (`mctx_search`) and answers `MctxTree`; with our rules
(`root_rule=`, `interior_rule=`) it is our `search` (`mcts_jax.policy.search`)
and answers our `Tree`. `mcts_jax.search` is this function, so code written
for either library runs unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import base
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax import tree_search
from mcts_jax.hashable import HashableFunction
from mcts_jax.mctx_compat.policies import mctx_options_from
from mcts_jax.mctx_compat.selection import MctxSearchData, MctxSelectionRule
from mcts_jax.mctx_compat.tree import MctxTree, mctx_view, our_tree
from mcts_jax.options import SearchOptions
from mcts_jax.policy import RulePolicy
from mcts_jax.policy import search as search_with_rules


@dataclasses.dataclass(frozen=True, kw_only=True)
class _MctxSearchPolicy(RulePolicy):
    """mctx's search as a policy: the key goes to the search as given."""

    def split_key(self, rng_key):
        return rng_key, rng_key, rng_key


def mctx_search(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                recurrent_fn: base.RecurrentFn, num_simulations: int,
                root_action_selection_fn: Callable, interior_action_selection_fn: Callable, *,
                invalid_actions: Optional[chex.Array] = None, extra_data: Any = None,
                tree: Any = None, options: Optional[SearchOptions] = None,
                **option_keywords) -> MctxTree:
    """mctx's `search`: simulations selected by mctx-style functions
    (`MctxSelectionRule`: each gets the unbatched `MctxTree` of its row),
    mctx's semantics (`mctx_options_from`), the root mask `invalid_actions`
    (ones or True = invalid; None: zeros of the root logits' dtype) handed
    to them as `tree.root_invalid_actions` and never enforced by the search
    itself, as in mctx. Returns `mctx_view` of the tree, `extra_data` as
    given."""
    for name, fn in (("root_action_selection_fn", root_action_selection_fn),
                     ("interior_action_selection_fn", interior_action_selection_fn)):
        if not callable(fn):
            raise TypeError(f"{name} must be a function (rng_key, tree, node_index"
                            f"{'' if name.startswith('root') else ', depth'}) -> action, as "
                            f"mcts_jax.muzero_action_selection; got {type(fn).__name__}")
    root_mask = (jnp.zeros_like(root.prior_logits) if invalid_actions is None
                 else jnp.asarray(invalid_actions))
    if jnp.shape(root_mask) != jnp.shape(root.prior_logits):
        raise ValueError(f"invalid_actions must have the root logits' shape [B, A] = "
                         f"{tuple(jnp.shape(root.prior_logits))}, got {jnp.shape(root_mask)}")
    rules = selection.Rules(
        at_root=HashableFunction(MctxSelectionRule(root_action_selection_fn, at_root=True)),
        below_root=HashableFunction(MctxSelectionRule(interior_action_selection_fn,
                                                      at_root=False)))
    base_options = mctx_options_from() if options is None else options
    policy = _MctxSearchPolicy(selection_rules=rules, options=SearchOptions.from_keywords(
        base_options, **option_keywords))
    search_data = MctxSearchData(user_data=extra_data, root_invalid=root_mask)
    searched = tree_search.run_compiled(policy, params, rng_key, root, recurrent_fn, None,
                                        our_tree(tree), num_simulations, 0.0,
                                        extra_data=search_data).search_tree
    return mctx_view(searched, root_invalid_actions=root_mask).replace(extra_data=extra_data)


def search(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput = None,
           recurrent_fn: base.RecurrentFn = None, num_simulations: int = None, *,
           root_action_selection_fn: Optional[Callable] = None,
           interior_action_selection_fn: Optional[Callable] = None,
           max_depth: Optional[int] = None,
           loop_fn: Optional[Callable] = None,
           root_rule: Optional[Callable] = None,
           interior_rule: Optional[Callable] = None,
           invalid_actions: Optional[chex.Array] = None,
           extra_data: Any = None,
           tree: Optional[tree_lib.Tree] = None,
           **options) -> Any:
    """`search` with either signature (module docstring).

    With `root_action_selection_fn` and `interior_action_selection_fn`
    (mctx's): mctx's search with mctx's semantics (`invalid_actions` only a
    mask the selection functions read, discount 0 only a factor, node i + 1
    written by simulation i); returns `MctxTree`. With `root_rule` (and
    `interior_rule`): our search with those rules, returning our `Tree`;
    see `mcts_jax.policy.search` for its arguments. `max_depth` and
    `loop_fn` are search options in both; `options` any other.
    """
    if root is None or recurrent_fn is None or num_simulations is None:
        raise TypeError("search needs root, recurrent_fn and num_simulations")
    if max_depth is not None:
        options["max_depth"] = max_depth
    if loop_fn is not None:
        options["loop_fn"] = loop_fn
    if root_action_selection_fn is not None or interior_action_selection_fn is not None:
        if root_rule is not None or interior_rule is not None:
            raise ValueError("search takes mctx's selection functions or our rules, not both")
        return mctx_search(params, rng_key, root, recurrent_fn, num_simulations,
                           root_action_selection_fn, interior_action_selection_fn,
                           invalid_actions=invalid_actions, extra_data=extra_data, tree=tree,
                           **options)
    if root_rule is None:
        raise TypeError("search needs root_rule (a function (tree, node, stats) -> [B, K]) or "
                        "mctx's root_action_selection_fn and interior_action_selection_fn "
                        "(for a policy's tree: policy(...).search_tree)")
    return search_with_rules(params, rng_key, root, recurrent_fn, num_simulations,
                             root_rule=root_rule, interior_rule=interior_rule,
                             invalid_actions=invalid_actions, tree=tree,
                             extra_data=extra_data, **options)
