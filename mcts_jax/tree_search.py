"""One search, from a policy's call to its output: the whole program that compiles.

`run_policy` is a policy's search, traced, read top to bottom:

    keys      setup_key, search_key, choice_key = policy.split_key(rng_key)
    root      root, extra_data = policy.root_setup(setup_key, root, ...)
    tree      tree = start_tree(...)                       # fresh or continued
    search    phases.run_simulations(phases.simulate, ...)  # select, expand, back up
    choice    action, action_weights = policy.choose(choice_key, tree, ...)

`run_compiled` is the one place a search call is built (its options
resolved and the call checked in one pass, `resolve_options`),
compiled and cached: once per policy value, recurrent_fn, options and
shapes (the first three are static arguments of `jax.jit`, a plain
recurrent_fn by identity, the rest by value). Every policy call goes through it
(`Policy.__call__`), and so do `mcts_jax.search` (rules), sharding, the arena,
self-play and training, which all call policies.
"""

from __future__ import annotations

import copy
import functools
import types
import warnings
from typing import Any, Optional

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from mcts_jax import base, parallel, plugin
from mcts_jax import compact
from mcts_jax import expand_all
from mcts_jax import graph
from mcts_jax import kept_prior_logits
from mcts_jax import mctx_semantics
from mcts_jax import phases
from mcts_jax import replay_embeddings
from mcts_jax import reuse
from mcts_jax import rule_screen
from mcts_jax import solver
from mcts_jax import stochastic
from mcts_jax import tree as tree_lib
from mcts_jax import validation
from mcts_jax.hashable import (HashableFunction, caller_stacklevel, check_recompiles,
                               compile_parts)
from mcts_jax.options import SearchOptions
from mcts_jax.selection import screens_its_own_slots


def start_tree(rng_key: chex.PRNGKey, root: base.RootFnOutput, invalid_actions,
               options: SearchOptions, tree: Optional[tree_lib.Tree],
               extra_data: Any = None, root_entries: Optional[tuple] = None,
               plugins: Optional[tuple] = None) -> tree_lib.Tree:
    """The tree a search starts from: a fresh root per row, or, where `tree`
    has a non-empty row, that row continued.

    Root priors are `softmax(root.prior_logits)` over the legal actions (a
    policy puts its root noise into the logits). A continued root keeps its
    visits, values, child slots and subtree, but takes these fresh priors
    (so exploration noise drawn for this move applies), and with replayed
    embeddings also `root.embedding`. `rng_key` breaks prior ties when a
    compact root has more legal actions than slots. `plugins`: the
    search's plug-ins (None: `search_plugins(options)`), whose records the
    fresh tree holds.
    """
    plugins = search_plugins(options) if plugins is None else plugins
    batch_size = root.prior_logits.shape[0]
    legal = tree_lib.legal_mask(root.prior_logits, invalid_actions)
    priors = tree_lib.masked_priors(root.prior_logits.astype(jnp.float32), legal)
    root_value = tree_lib.to_internal_scale(root.value.astype(jnp.float32), options.value_range)
    index_dtype = tree_lib.child_index_dtype(options.max_nodes)
    slots = phases.node_slots(plugins, priors, legal, root.prior_logits,
                              jax.random.fold_in(rng_key, phases.SLOT_KEY), index_dtype)
    fresh = tree_lib.init_tree(root_value, slots, root.embedding, root.prior_logits.shape[-1],
                               options.max_nodes, options.value_range,
                               replay_embeddings=options.replay_embeddings)
    fresh = fresh.replace(extra_data=extra_data,
                          num_chance_outcomes=options.num_chance_outcomes)
    fresh = fresh.replace(plugin_records=tuple(each.init_record(fresh) for each in plugins))
    if plugins:  # each plug-in's root entry: its `evaluated` one, else the root's slots
        root_entries = root_entries or (None,) * len(plugins)
        layout = plugin.replacing(plugins, "node_slots")
        if layout is not None and root_entries[layout[0]] is not None:
            raise ValueError(f"{type(layout[1]).__name__} both lays out the slots and keeps "
                             "an `evaluated` entry: one plug-in may do one of the two")
        fresh = plugin.root_records(plugins, fresh, tuple(
            slots if entry is None else entry for entry in root_entries))
    if tree is None:
        return fresh
    tree = tree.replace(plugin_records=continued_records(tree.plugin_records,
                                                        fresh.plugin_records))
    # Each plug-in's record takes this search's root (the kept logits its new logits).
    tree = tree.replace(plugin_records=tuple(each.continued_record(tree, record, root) for
                                             each, record in zip(plugins, tree.plugin_records)))
    root_index = tree_lib.root_nodes(batch_size)
    slot_priors = jnp.where(tree.children[:, tree_lib.ROOT_INDEX] == tree_lib.ILLEGAL, 0.0,
                            tree_lib.at_slots(tree, tree_lib.slot_actions(tree, root_index), priors))
    slot_priors = jnp.where(
        tree.pruned[:, tree_lib.ROOT_INDEX, None],
        slot_priors / jnp.maximum(jnp.sum(slot_priors, axis=-1, keepdims=True),
                                  jnp.finfo(jnp.float32).tiny),
        slot_priors)
    continued = tree.replace(priors=tree.priors.at[:, tree_lib.ROOT_INDEX].set(slot_priors),
                             extra_data=extra_data)
    if tree.replay_embeddings:
        continued = continued.replace(embeddings=fresh.embeddings)
    return reuse.select_rows(tree.num_nodes > 0, continued, fresh)


def continued_records(kept: tuple, fresh: tuple) -> tuple:
    """The plug-in records a continued tree searches with: `fresh`'s, the
    records that hold arrays taken from the tree's (`kept`, in order). Plug-ins
    that keep no arrays may differ between the searches (a tree searched
    without the solver continues with it), and a record that only keeps a
    by-product (`dropped_by_a_search_without_it`: the kept prior logits) is
    dropped by a search that does not keep it; other records that hold
    arrays must be the same ones, else a clear error (with the hint of a
    record the tree lacks, `hint_when_not_kept`: the kept prior logits')."""
    wanted = [record for record in fresh if jax.tree.leaves(record)]
    holding = [record for record in kept if jax.tree.leaves(record) and not (
        getattr(record, "dropped_by_a_search_without_it", False)
        and type(record) not in [type(each) for each in wanted])]
    held_structures = [jax.tree.structure(each) for each in holding]
    if held_structures != [jax.tree.structure(each) for each in wanted]:
        # A record may say what to do when the tree lacks it (`hint_when_not_kept`),
        # told where the records would match without it.
        held = [type(each) for each in holding]
        lacking = [record for record in wanted
                   if type(record) not in held and hasattr(record, "hint_when_not_kept")]
        rest = [record for record in wanted if all(record is not each for each in lacking)]
        matches_without = held_structures == [jax.tree.structure(each) for each in rest]
        hints = "".join(f"; {record.hint_when_not_kept}" for record in lacking
                        if matches_without)
        raise ValueError(
            f"tree= was searched with other plug-ins than this search (tree= holds the "
            f"records {[type(each).__name__ for each in holding]}, this search keeps "
            f"{[type(each).__name__ for each in wanted]}, or their arrays differ): "
            f"continue a tree with the same SearchOptions.plugins and feature options{hints}")
    taken = iter(holding)
    return tuple(next(taken) if jax.tree.leaves(record) else record for record in fresh)


def search_plugins(options: SearchOptions) -> tuple:
    """The plug-ins (plugin.py) of a search with resolved `options`, in the
    order the phases call them: the MCTS-solver (`solver=True`), the user's
    (`options.plugins`), then the built-in ones that draw no random
    number, turned on by their options: graph search
    (`transpositions=True`, whose record holds the graph's arrays),
    expand-all, replayed embeddings, mctx's
    semantics (`stop_at_terminal=False` or `node_per_simulation=True`),
    the kept prior logits (`keep_prior_logits=True`), several paths per
    step (`simulations_per_step` > 1), chance nodes
    (a stochastic tree, `num_chance_outcomes` > 0) and the compact layout
    (`max_children`, compact.py).
    Those last come after the user's so that a user's plug-in keeps its
    position (its record in `tree.plugin_records`, its key in `evaluated`)
    whatever else is on."""
    structural = (
        (graph.GraphSearch.of(options),) if options.transpositions else (),
        (expand_all.ExpandAll(),) if options.expand_all else (),
        (replay_embeddings.ReplayEmbeddings(options.max_path_length),)
        if options.replay_embeddings else (),
        (mctx_semantics.MctxSemantics(searches_past_terminals=not options.stop_at_terminal,
                                      node_per_simulation=options.node_per_simulation),)
        if not options.stop_at_terminal or options.node_per_simulation else (),
        (kept_prior_logits.KeepPriorLogits(),) if options.keep_prior_logits else (),
        (parallel.ParallelPaths.of(options),) if options.simulations_per_step > 1 else (),
        (stochastic.ChanceNodes(),) if options.num_chance_outcomes > 0 else (),
        (compact.CompactLayout(options.max_children),) if options.max_children is not None
        else ())
    return ((solver.SOLVER,) if options.solver else ()) + options.plugins + sum(structural, ())


def run_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
               invalid_actions: Optional[chex.Array], temperature: chex.Array,
               tree: Optional[tree_lib.Tree], extra_data: Any, *, policy: Any,
               recurrent_fn: Any, options: SearchOptions):
    """A policy's whole search, traceable (the module docstring's five lines).

    `policy` is a `Policy` value (its hooks `split_key`, `root_setup`,
    `rules` and `choose`), `options` resolved for this call, `recurrent_fn`
    the user's function (a callable other than a plain function wrapped
    for hashing, `HashableFunction`). `extra_data`, when not None,
    replaces what `root_setup` stores in the tree (`search(extra_data=...)`).
    Returns (PolicyOutput, rule_failed: [B] bool where a user's rule scored
    NaN on an open slot, or None for built-in rules).
    """
    if isinstance(recurrent_fn, HashableFunction):
        recurrent_fn = recurrent_fn.fn
    setup_key, search_key, choice_key = policy.split_key(rng_key)
    rules = policy.rules(options)
    # A user's rule is screened (rule_screen.py): the last plug-in, which
    # carries where it scored NaN.
    ours = screens_its_own_slots(rules.at_root) and screens_its_own_slots(rules.below_root)
    screen = () if ours else (rule_screen.RuleScreen(),)
    plugins = search_plugins(options) + screen
    root_entries = None
    if plugins and plugin.overridden(plugins, "evaluated"):  # sampled.py: the root's actions
        root, root_entries = plugin.evaluated(
            plugins, jax.random.fold_in(search_key, phases.PLUGIN_KEY), root)
    root, setup_data = policy.root_setup(setup_key, root, invalid_actions, tree, options)
    tree = start_tree(jax.random.fold_in(search_key, 0x7007), root, invalid_actions, options,
                      tree, setup_data if extra_data is None else extra_data, root_entries,
                      plugins)
    simulate = functools.partial(phases.simulate, params=params, recurrent_fn=recurrent_fn,
                                 rules=rules, options=options, plugins=plugins)
    paths = options.simulations_per_step  # P paths per step (parallel.py), each a simulation
    descents = (tree.batch_size,) + ((paths,) if paths > 1 else ())
    states = tuple(each.search_state(tree, record, descents)
                   for each, record in zip(plugins, tree.plugin_records))
    # The roots' priors (as searched: masked, with the root's noise) are
    # written before the first simulation and never again (the root is node
    # 0, `tree_lib.ROOT_INDEX`). The choice reads them as they are here
    # (through `tree_lib.root_actions_view`'s slice): the same values, and where
    # nothing else reads the tree's priors after the search (UCT's rules
    # never read them; a caller keeps only the action), XLA then leaves the
    # [B, N, K] priors out of the loop.
    root_priors = tree.priors[:, :1]
    _, tree, states = phases.run_simulations(
        simulate, (search_key, tree, states), -(-options.num_simulations // paths), options,
        plugins)
    rule_failed = states[-1] if screen else None
    chosen_from = tree.replace(priors=jnp.concatenate([root_priors, tree.priors[:, 1:]], axis=1))
    action, action_weights = policy.choose(choice_key, chosen_from, temperature, options)
    output = base.PolicyOutput(action=action, action_weights=action_weights, search_tree=tree)
    return output, rule_failed


def static_function(fn: Any) -> Any:
    """A function as a compile key: a plain Python function is its own key
    (compared by identity, as a wrapper of it would compare it), also when
    given in a `HashableFunction` (so the two forms are one key); a partial
    or callable object is wrapped (`HashableFunction`: equal partials
    compare equal); None and other wrappers stay as they are. The rule of
    this module's cache for `recurrent_fn` (`run_compiled`) and for a
    policy's `qtransform` field (`policies.checked_qtransform`)."""
    if isinstance(fn, HashableFunction) and isinstance(fn.fn, types.FunctionType):
        return fn.fn
    if fn is None or isinstance(fn, (HashableFunction, types.FunctionType)):
        return fn
    return HashableFunction(fn)


_STATIC = ("policy", "recurrent_fn", "options")
_compiled = jax.jit(run_policy, static_argnames=_STATIC)


@functools.partial(jax.jit, static_argnames=_STATIC)
def _compiled_with_checks(params, rng_key, root, invalid_actions, temperature, tree, extra_data,
                          *, policy, recurrent_fn, options):
    """checks="checkify": `run_policy` with the value checks compiled in;
    returns (checkify error, (output, rule_failed))."""
    def checked(params, rng_key, root, invalid_actions, temperature, tree, extra_data):
        validation.checkify_root(root, invalid_actions, temperature)
        output, rule_failed = run_policy(params, rng_key, root, invalid_actions, temperature,
                                         tree, extra_data, policy=policy,
                                         recurrent_fn=recurrent_fn, options=options)
        validation.checkify_tree(output.search_tree)
        if rule_failed is not None:
            checkify.check(~jnp.any(rule_failed), RULE_NAN_MESSAGE + " (first in row {row})",
                           row=jnp.argmax(rule_failed).astype(jnp.int32))
        return output, rule_failed

    return checkify.checkify(checked, errors=checkify.user_checks)(
        params, rng_key, root, invalid_actions, temperature, tree, extra_data)


RULE_NAN_MESSAGE = ("a selection rule scored NaN on a legal child slot during the search; the "
                    "search read those slots as -inf (or, where every open slot was NaN or "
                    "-inf, followed the highest prior among the NaN ones)")


class RuleNaNWarning(UserWarning):
    """A user's selection rule returned NaN on a legal slot (checks="host")."""


def resolve_options(options: SearchOptions, root: base.RootFnOutput, invalid_actions,
                    num_simulations: int, tree: Optional[tree_lib.Tree] = None,
                    num_chance_outcomes: int = 0, *,
                    temperature: Any = validation.NOT_CHECKED,
                    rng_key: Any = validation.NOT_CHECKED) -> SearchOptions:
    """The record of one search call of `root` ([B, A] priors) with
    `num_simulations`, from the policy's `options`, checked in one pass:
    the call's arrays (the root and root mask, values too with
    checks="host", and the `temperature` and `rng_key` when given:
    `validation.check_call`), the count and a continued `tree`, whose
    capacity and layout fill the options not given; the capacity's default
    filled in, and the depth limit (`max_depth` None: N, no path is
    longer). The record is the compile key of the call's search, so its
    `checks` is "host" whatever the call's mode (one program in every
    mode): the mode is `options.checks`."""
    batch_size, num_actions = validation.check_call(
        root, invalid_actions, values=options.checks == "host", temperature=temperature,
        rng_key=rng_key)
    for each in options.plugins:  # e.g. sampled nodes: K slots, whatever the root's [B, P]
        num_actions = each.slots_per_node(num_actions)
    max_nodes, max_children = options.max_nodes, options.max_children
    replay_embeddings = options.replay_embeddings
    if tree is not None:
        validation.check_tree_kind(tree, num_chance_outcomes)  # a Tree of this kind
        max_nodes = tree.max_nodes if max_nodes is None else max_nodes
        max_children = tree.max_children if max_children is None else max_children
        replay_embeddings = replay_embeddings or tree.replay_embeddings
    max_nodes, max_children = validation.check_search_args(
        num_simulations, max_nodes, max_children, replay_embeddings, num_actions,
        continuing=tree is not None, graph=options.transpositions,
        expand_all=options.expand_all)
    if tree is not None:
        validation.check_tree(tree, root, batch_size, num_actions, max_nodes,
                              options.value_range, max_children, bool(replay_embeddings),
                              options.transpositions)
    # Every value is checked by now: the resolved record is made without
    # checking again. It is the compile key, so it says checks="host"
    # whatever the call's mode (the same program in every mode; the mode
    # is the policy's `options.checks`, read by the caller).
    resolved = copy.copy(options)
    for name, value in dict(
            num_simulations=int(num_simulations), max_nodes=max_nodes,
            max_children=max_children, replay_embeddings=bool(replay_embeddings),
            simulations_per_step=min(options.simulations_per_step, int(num_simulations)),
            num_chance_outcomes=int(num_chance_outcomes),
            max_depth=max_nodes if options.max_depth is None else options.max_depth,
            checks="host").items():
        object.__setattr__(resolved, name, value)
    return resolved


def run_compiled(policy: Any, params: base.Params, rng_key: chex.PRNGKey,
                 root: base.RootFnOutput, recurrent_fn: base.RecurrentFn,
                 invalid_actions: Optional[chex.Array], tree: Optional[tree_lib.Tree],
                 num_simulations: int, temperature: Any, extra_data: Any = None,
                 num_chance_outcomes: int = 0) -> base.PolicyOutput:
    """One search call, built, checked and run: the one place a search is
    made (every policy call, `mcts_jax.search`, mctx's `search`) and the one
    cache of compiled searches (`run_policy` compiled).

    The policy's options are resolved for this call, which is checked in
    one pass (`resolve_options`: the root, the temperature, the key,
    `num_simulations`, a continued `tree`, C = `num_chance_outcomes`
    outcome ids), and each plug-in asked whether it applies. `temperature`
    is the call's (None: the policy's `temperature` field; a policy without
    one refuses any and plays at 0).

    A nested jit inside the caller's trace; traced inline instead when the
    policy binds a tracer of the caller's trace (a rule partial built inside
    the caller's jit). checks="checkify" compiles the value checks in and
    raises (or stages) their error. A rule or Q transform that equals one
    seen before but for object identity (a lambda made on every call) warns
    once (`hashable.check_recompiles`). With checks="host", a user's rule
    that scored NaN on a legal slot is reported by a `RuleNaNWarning` when
    the output is concrete (outside the caller's jit).
    """
    # The call's temperature: its own, else the policy's field; a policy
    # without one (its move is the search's own choice) plays at 0.
    if "temperature" not in policy.__dataclass_fields__:
        if temperature is not None:
            raise TypeError(f"{type(policy).__name__} takes no temperature: its move is the "
                            f"search's own choice" + (" (gumbel_scale plays that role)"
                                                      if hasattr(policy, "gumbel_scale") else ""))
        temperature = 0.0
    elif temperature is None:
        temperature = policy.temperature
    checks = policy.options.checks
    # The resolved record is the compile key, with checks="host" whatever
    # the call's mode (`checks` is not part of the compiled search).
    options = resolve_options(policy.options, root, invalid_actions, num_simulations, tree,
                              num_chance_outcomes, temperature=temperature, rng_key=rng_key)
    for each in search_plugins(options):
        each.check(policy, options)  # a plug-in that does not apply says so here
    if not callable(recurrent_fn):
        raise TypeError(f"recurrent_fn must be callable, got {type(recurrent_fn).__name__}")
    dynamic = (params, rng_key, root, invalid_actions, jnp.asarray(temperature, jnp.float32),
               tree, extra_data)
    statics = dict(policy=policy, recurrent_fn=static_function(recurrent_fn), options=options)
    # Whether the policy value binds a tracer of the caller's trace, and its
    # functions for check_recompiles: walked once per value (`compile_parts`).
    binds_tracer, rule_functions = (getattr(policy, "_compile_parts", None)
                                    or compile_parts(policy))
    if binds_tracer:
        if checks == "checkify":
            raise ValueError("checks='checkify' needs rules and Q transforms whose bound "
                             "arguments are not traced values; bind them outside jit or "
                             "use checks='host'")
        output, rule_failed = run_policy(*dynamic, **statics)
    else:
        if rule_functions:  # a rule made anew on every call: warned once
            check_recompiles(policy, rule_functions)
        if checks == "checkify":
            error, (output, rule_failed) = _compiled_with_checks(*dynamic, **statics)
            validation.raise_or_stage(error)
        else:
            output, rule_failed = _compiled(*dynamic, **statics)
    if checks == "host" and rule_failed is not None and validation.is_concrete(rule_failed):
        failed_rows = np.flatnonzero(np.asarray(rule_failed))
        if failed_rows.size:
            warnings.warn(f"{RULE_NAN_MESSAGE}: rows {failed_rows[:8].tolist()}"
                          f"{' ...' if failed_rows.size > 8 else ''} of "
                          f"{type(policy).__name__}. Fix the rule, or run with "
                          f"checks='checkify' to stop at the first such search.",
                          RuleNaNWarning, stacklevel=caller_stacklevel())
    return output
