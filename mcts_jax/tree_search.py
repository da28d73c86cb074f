"""`mcts_jax.search`: the composable search every policy is built on.

    tree = mcts_jax.search(params, rng_key, root, recurrent_fn, num_simulations,
                           root_rule=functools.partial(mcts_jax.puct_scores, pb_c_init=1.5),
                           interior_rule=None,          # None: root_rule everywhere
                           invalid_actions=..., max_nodes=..., ...tree options)

`search` builds the root of each row (or continues a given tree), then runs
the simulations (`phases.run_simulations`: select, expand, back up) with the
two rules, and returns the `Tree`. A policy is `search` plus its own root setup
(noise in the root priors, Gumbel noise in `extra_data`) and its own final
action; see `policies.py`. A rule is any function
`(tree, node [B], stats: ChildrenStats) -> scores [B, K]` (selection.py), so a
new selection rule or Q transform is a function in the user's notebook.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import chex
import jax
import jax.numpy as jnp
from jax.experimental import checkify

from mcts_jax import base, parallel
from mcts_jax import phases
from mcts_jax import reuse
from mcts_jax import tree as tree_lib
from mcts_jax import validation
from mcts_jax.mctx_selection import MctxSearchData, MctxSelectionRule
from mcts_jax.mctx_tree import MctxTree, mctx_view, our_tree
from mcts_jax.options import SearchOptions, Static, holds_tracer, mctx_options_from
from mcts_jax.recompiles import check_recompiles
from mcts_jax.qtransforms import check_tree_function
from mcts_jax.selection import Rules

_RULE_EXAMPLE = "functools.partial(mcts_jax.puct_scores, pb_c_init=1.25)"


def with_result_checks(recurrent_fn: base.RecurrentFn) -> base.RecurrentFn:
    """recurrent_fn with trace-time checks of what it returns (pure Python:
    the compiled search is the same). Its output may be any object with
    mctx's fields (`base.as_recurrent_output`)."""
    def checked(params, rng_key, action, embedding):
        result = recurrent_fn(params, rng_key, action, embedding)
        if isinstance(result, tuple) and len(result) == 2:  # any output with mctx's fields
            result = (base.as_recurrent_output(result[0]), result[1])
        validation.check_recurrent_result(result, embedding)
        return result

    return checked


def start_tree(rng_key: chex.PRNGKey, root: base.RootFnOutput, invalid_actions,
               options: SearchOptions, tree: Optional[tree_lib.Tree],
               extra_data: Any = None) -> tree_lib.Tree:
    """The tree a search starts from: a fresh root per row, or, where `tree`
    has a non-empty row, that row continued.

    Root priors are `softmax(root.prior_logits)` over the legal actions (a
    policy puts its root noise into the logits). A continued root keeps its
    visits, values, child slots and subtree, but takes these fresh priors
    (so exploration noise drawn for this move applies), and with replayed
    embeddings also `root.embedding`. `rng_key` breaks prior ties when a
    compact root has more legal actions than slots.
    """
    batch_size, num_actions = root.prior_logits.shape
    legal = (jnp.ones((batch_size, num_actions), jnp.bool_) if invalid_actions is None
             else ~invalid_actions)
    priors = tree_lib.masked_priors(root.prior_logits.astype(jnp.float32), legal)
    root_value = tree_lib.to_internal_scale(root.value.astype(jnp.float32), options.value_range)
    fresh = tree_lib.init_tree(root_value, priors, legal, root.embedding, options.max_nodes,
                               options.value_range, max_children=options.max_children,
                               slot_key=phases.slot_key(rng_key),
                               replay_embeddings=options.replay_embeddings,
                               root_logits=root.prior_logits if options.keep_prior_logits
                               else None)
    fresh = fresh.replace(extra_data=extra_data,
                          num_chance_outcomes=options.num_chance_outcomes)
    if tree is None:
        return fresh
    root_index = jnp.zeros((batch_size,), jnp.int32)
    slot_priors = jnp.where(tree.children[:, tree_lib.ROOT_INDEX] == tree_lib.ILLEGAL, 0.0,
                            tree_lib.at_slots(tree, tree_lib.slot_actions(tree, root_index), priors))
    slot_priors = jnp.where(
        tree.pruned[:, tree_lib.ROOT_INDEX, None],
        slot_priors / jnp.maximum(jnp.sum(slot_priors, axis=-1, keepdims=True),
                                  jnp.finfo(jnp.float32).tiny),
        slot_priors)
    continued = tree.replace(priors=tree.priors.at[:, tree_lib.ROOT_INDEX].set(slot_priors),
                             extra_data=extra_data)
    if fresh.prior_logits is None:
        continued = continued.replace(prior_logits=None)
    elif tree.prior_logits is None:
        raise ValueError("tree= holds no prior logits but this search keeps them "
                         "(keep_prior_logits=True, the mctx-signature functions' default): "
                         "continue a tree from a search that kept them, or pass "
                         "keep_prior_logits=False")
    else:
        root_slots = tree_lib.gather_nodes(tree.children_actions, root_index) \
            if tree.children_actions is not None else None
        continued = continued.replace(prior_logits=tree.prior_logits.at[
            :, tree_lib.ROOT_INDEX].set(tree_lib.slot_values(
                root_slots, root.prior_logits.astype(jnp.float32))))
    if tree.replay_embeddings:
        continued = continued.replace(embeddings=fresh.embeddings)
    return reuse.select_rows(tree.num_nodes > 0, continued, fresh)


def search_body(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                invalid_actions: Optional[chex.Array], tree: Optional[tree_lib.Tree],
                extra_data: Any, *, recurrent_fn: base.RecurrentFn, rules: Rules,
                options: SearchOptions) -> tree_lib.Tree:
    """The search itself, traceable (no validation, no jit of its own): what
    `search` runs and what every policy calls inside its compiled function.
    `rng_key` is consumed as mctx's search consumes it (see
    `phases.run_simulations`)."""
    tree = start_tree(jax.random.fold_in(rng_key, 0x7007), root, invalid_actions, options,
                      tree, extra_data)
    run = (parallel.run_parallel_simulations if options.simulations_per_step > 1
           else phases.run_simulations)  # P paths per step, or one simulation per step
    return run(params, rng_key, tree, with_result_checks(recurrent_fn), rules, options)


def search_as_body(params, rng_key, root, invalid_actions, temperature, tree, extra_data, *,
                   recurrent_fn, options, settings: Rules) -> tree_lib.Tree:
    """`search_body` in the shape of a policy body (`run_body`), the rules as
    its settings."""
    del temperature
    return search_body(params, rng_key, root, invalid_actions, tree, extra_data,
                       recurrent_fn=recurrent_fn, rules=settings, options=options)


def _run_static(params, rng_key, root, invalid_actions, temperature, tree, extra_data, *,
                body, recurrent_fn, options, settings):
    return body(params, rng_key, root, invalid_actions, temperature, tree, extra_data,
                recurrent_fn=recurrent_fn, options=options, settings=settings)


_STATICS = ("body", "recurrent_fn", "options", "settings")
# The compiled searches and policies (checks "host" and "off"): one compilation
# per body, shapes, recurrent_fn, options and settings (rules, constants).
_compiled = jax.jit(_run_static, static_argnames=_STATICS)


@functools.partial(jax.jit, static_argnames=_STATICS)
def _checkified(params, rng_key, root, invalid_actions, temperature, tree, extra_data, *,
                body, recurrent_fn, options, settings):
    """checks="checkify": the same computation with the value checks compiled
    in; returns (checkify error, result)."""
    def checked(params, rng_key, root, invalid_actions, temperature, tree, extra_data):
        validation.checkify_root(root, invalid_actions, temperature)
        out = body(params, rng_key, root, invalid_actions, temperature, tree, extra_data,
                   recurrent_fn=recurrent_fn, options=options, settings=settings)
        validation.checkify_tree(out if isinstance(out, tree_lib.Tree) else out.search_tree)
        return out

    return checkify.checkify(checked, errors=checkify.user_checks)(
        params, rng_key, root, invalid_actions, temperature, tree, extra_data)


def make_rules(root_rule: Callable, interior_rule: Optional[Callable]) -> Rules:
    """Validated `Rules` (each wrapped so equal partials compile once)."""
    check_tree_function(root_rule, "root_rule", _RULE_EXAMPLE)
    if interior_rule is None or interior_rule is root_rule:
        wrapped = Static(root_rule)
        return Rules(at_root=wrapped, below_root=wrapped)
    check_tree_function(interior_rule, "interior_rule", _RULE_EXAMPLE)
    return Rules(at_root=Static(root_rule), below_root=Static(interior_rule))


def run_body(body: Callable, params, rng_key, root, recurrent_fn, invalid_actions,
             temperature, tree, extra_data, options: SearchOptions, settings,
             checks: str) -> Any:
    """Runs `body(params, rng_key, root, invalid_actions, temperature, tree,
    extra_data, recurrent_fn=, options=, settings=)` (a policy's, or
    `search_as_body`) as one compiled function, the functions and records
    static. A nested jit inside the caller's trace; traced inline instead
    when the settings bind a tracer of the caller's trace (a rule partial
    built inside the caller's jit). checks="checkify" compiles the value
    checks in and raises (or stages) their error. A rule or Q transform in
    `settings` that equals one seen before but for object identity (a
    lambda made on every call) warns once (`recompiles.check_recompiles`)."""
    validation.check_rng_key(rng_key)
    if not callable(recurrent_fn):
        raise TypeError(f"recurrent_fn must be callable, got {type(recurrent_fn).__name__}")
    checks = validation.check_mode(checks)
    dynamic = (params, rng_key, root, invalid_actions, jnp.asarray(temperature, jnp.float32),
               tree, extra_data)
    # `checks` is not part of the compiled search (the same program in every mode).
    statics = dict(body=body, recurrent_fn=Static(recurrent_fn),
                   options=options.replace(checks="host"), settings=settings)
    if holds_tracer(settings):
        if checks == "checkify":
            raise ValueError("checks='checkify' needs rules and Q transforms whose bound "
                             "arguments are not traced values; bind them outside jit or "
                             "use checks='host'")
        return _run_static(*dynamic, **statics)
    check_recompiles(settings)  # a rule made anew on every call: warned once
    if checks != "checkify":
        return _compiled(*dynamic, **statics)
    error, result = _checkified(*dynamic, **statics)
    validation.raise_or_stage(error)
    return result


def search(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
           recurrent_fn: base.RecurrentFn, num_simulations: int, *,
           root_rule: Optional[Callable] = None,
           interior_rule: Optional[Callable] = None,
           policy: Any = None,
           invalid_actions: Optional[chex.Array] = None,
           tree: Optional[tree_lib.Tree] = None,
           extra_data: Any = None,
           options: Optional[SearchOptions] = None,
           root_action_selection_fn: Optional[Callable] = None,
           interior_action_selection_fn: Optional[Callable] = None,
           **option_keywords) -> tree_lib.Tree:
    """Runs `num_simulations` simulations of MCTS on each of B roots; returns the `Tree`.

    Each simulation descends from the root by the argmax of the rules' scores,
    expands the edge it reaches with one batched `recurrent_fn` call, and backs
    up the new value (selection.py, phases.py).

    Args:
      params, rng_key, root, recurrent_fn, num_simulations: as in the policies
        (`RootFnOutput` prior_logits [B, A], value [B], embedding [B, ...];
        `recurrent_fn(params, key, action [B], embedding) -> (RecurrentFnOutput,
        embedding)`). `root.prior_logits` give the root priors as they are
        (add any exploration noise to them first).
      root_rule: the selection rule at the root,
        `rule(tree, node [B] int32, stats: ChildrenStats) -> scores [B, K]`;
        argmax descends, -inf never does. Constants bound with
        `functools.partial`: `mcts_jax.puct_scores`, `uct_scores`,
        `gumbel_root_scores`, or the user's own.
      interior_rule: the rule below the root; None: `root_rule` everywhere.
      policy: instead of rules, a policy value (`mcts_jax.AlphaZeroPolicy()`,
        `rule_policy(...)`, the user's own `Policy`): its root setup, rules
        and options run, and its search tree is returned.
      invalid_actions: [B, A] bool, True = illegal at the root.
      tree: a `Tree` to continue (subtree reuse).
      extra_data: any pytree with leading [B], stored as `tree.extra_data`
        for rules to read (Gumbel's root noise lives there); rules only.
      options: a `SearchOptions` (default: the defaults, or the policy's);
        `option_keywords`: any of its fields, applied on top.
      root_action_selection_fn, interior_action_selection_fn: mctx's
        signature instead of rules: `search(params, rng_key, root=,
        recurrent_fn=, root_action_selection_fn=, interior_action_selection_fn=,
        num_simulations=, max_depth=None, invalid_actions=None,
        extra_data=None, loop_fn=...)` runs mctx's search with mctx's
        semantics (`invalid_actions` only a mask the selection functions
        read, discount 0 only a factor, node i + 1 written by simulation i)
        and returns mctx's tree, `MctxTree` (see `mctx_search`).

    Compiled once per shapes, recurrent_fn, rules and options (rules that are
    equal `functools.partial`s of one function, with hashable bound
    arguments such as Python numbers, count as equal); inside the caller's
    `jit` it is a nested jit. Do not `vmap` it: it is batched.
    """
    if root_action_selection_fn is not None or interior_action_selection_fn is not None:
        if root_rule is not None or interior_rule is not None or policy is not None:
            raise ValueError("search takes mctx's selection functions or our rules or a "
                             "policy, not several")
        return mctx_search(params, rng_key, root, recurrent_fn, num_simulations,
                           root_action_selection_fn, interior_action_selection_fn,
                           invalid_actions=invalid_actions, extra_data=extra_data, tree=tree,
                           options=options, **option_keywords)
    if policy is not None:
        if root_rule is not None or interior_rule is not None or extra_data is not None:
            raise ValueError("search takes a policy or rules (root_rule, interior_rule, "
                             "extra_data), not both")
        if options is not None:
            policy = policy.replace(options=options)
        return policy(params, rng_key, root, recurrent_fn, num_simulations,
                      invalid_actions=invalid_actions, tree=tree,
                      **option_keywords).search_tree
    if root_rule is None:
        raise TypeError("search needs root_rule (a function (tree, node, stats) -> [B, K]) "
                        "or policy (a policy value)")
    rules = make_rules(root_rule, interior_rule)
    options = SearchOptions.from_keywords(options, **option_keywords).resolve(
        root, invalid_actions, num_simulations, tree)
    return run_body(search_as_body, params, rng_key, root, recurrent_fn, invalid_actions, 0.0,
                    tree, extra_data, options, rules, options.checks)


def mctx_search(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                recurrent_fn: base.RecurrentFn, num_simulations: int,
                root_action_selection_fn: Callable, interior_action_selection_fn: Callable, *,
                invalid_actions: Optional[chex.Array] = None, extra_data: Any = None,
                tree: Any = None, options: Optional[SearchOptions] = None,
                **option_keywords) -> MctxTree:
    """mctx's `search`: simulations selected by mctx-style functions
    (`mctx_selection.MctxSelectionRule`: each gets the unbatched
    `MctxTree` of its row), mctx's semantics (`options.mctx_options_from`),
    the root mask `invalid_actions` (ones or True = invalid; None: zeros of
    the root logits' dtype) handed to them as `tree.root_invalid_actions`
    and never enforced by the search itself, as in mctx. Returns
    `mctx_view` of the tree, `extra_data` as given."""
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
    rules = Rules(at_root=Static(MctxSelectionRule(root_action_selection_fn, at_root=True)),
                  below_root=Static(MctxSelectionRule(interior_action_selection_fn,
                                                      at_root=False)))
    base_options = mctx_options_from() if options is None else options
    options = SearchOptions.from_keywords(base_options, **option_keywords).resolve(
        root, None, num_simulations, our_tree(tree))
    search_data = MctxSearchData(user_data=extra_data, root_invalid=root_mask)
    searched = run_body(search_as_body, params, rng_key, root, recurrent_fn, None, 0.0,
                        our_tree(tree), search_data, options, rules, options.checks)
    return mctx_view(searched, root_invalid_actions=root_mask).replace(extra_data=extra_data)
