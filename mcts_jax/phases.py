"""The search loop: each simulation selects, expands and backs up, for B rows.

The three phases live here, one function each, and `simulate` runs them once:

- `select_leaf`: from the root, follow the selection rule down to an
  unexpanded edge, a terminal node, a node at `max_depth`, or a dead end.
- `expand`: one batched `recurrent_fn` call evaluates the edges the step
  reached and writes their new nodes into each row's next free slots. One
  edge per row (a simulation), every legal child of the leaf (a plug-in's
  `edges_of_leaf`: expand-all) and P paths per row (`parallel.py`) are the
  same routine with E = 1, K or P edges.
- `backup`: add the visits and values to every node on the path to the
  root, converting values through each edge with `reward + discount *
  value`.

This module reads no feature option and imports no feature module (an
import-linter contract). Features plug in through the hooks of `plugin.py`
(`plugins`, a static tuple, built by `tree_search.search_plugins`): the
phases call each hook at its point and never ask which plug-in they hold.
With no plug-in (a plain search) no hook runs and the phases never enter
plugin.py (each asks `plugin.replacing` only when there are plug-ins). Graph search
(graph.py), expand-all (expand_all.py), replayed embeddings
(replay_embeddings.py), mctx's semantics (mctx_semantics.py), several
paths per step (parallel.py), the MCTS-solver (solver.py) and the screen
of a user's rule (rule_screen.py) are such plug-ins.

`simulate` is the one driver: a step descends once per row (`select_leaf`),
or as a plug-in says (`SearchPlugin.select_leaves`: parallel.py's
`ParallelPaths` descends P paths per row, each seeing the step's earlier
ones), and the expansion and backup take whatever leading shape the
descents have ([B], or [B, P]).

Performance: the loops carry only per-row scalars ([B] node index, depth,
value) plus, in `backup`, the arrays it updates by scatter. Their predicates
are scalars (`jnp.any` over the batch), and no step reads or writes all N
nodes, so one simulation costs O(depth x K) per row however large the tree is.
The search is batched by construction; do not `vmap` it (a vmapped while-loop
rewrites every carried array on every iteration).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import base
from mcts_jax import plugin
from mcts_jax import tree as tree_lib
from mcts_jax import validation
from mcts_jax.options import SearchOptions
from mcts_jax.plugin import Backup, LeafChoice, Plugins
from mcts_jax.selection import Rules, check_slot_values


class Descent(NamedTuple):
    """The carry of `select_leaf`'s loop, per row [B]: where the descent is,
    the slot it chose last, its depth, whether it goes on, whether it ends at
    an unexpanded edge, the row's key, and what each plug-in carries down
    (`SearchPlugin.start_descent`)."""

    node: chex.Array
    slot: chex.Array
    depth: chex.Array
    active: chex.Array
    expand: chex.Array
    keys: chex.Array
    descents: tuple = ()


def descend_one_step(tree: tree_lib.Tree, state: Descent, score_fn, name: str,
                     max_depth: int, plugins: Plugins) -> Descent:
    """One step of `select_leaf` for the active rows; inactive rows keep
    their state. `name` names the rule in shape errors. The argmax is over
    the open slots (legal, and open for every plug-in): a rule of ours
    scores closed slots -inf and never NaN; a plug-in may screen the scores
    instead (`SearchPlugin.screen_scores`: rule_screen.py reads a user's
    rule's NaN)."""
    rows = tree_lib.batch_rows(tree.batch_size)
    node, depth, active = state.node, state.depth, state.active
    # Each row's key [B] split in two, as mctx's descent splits it per step:
    # the row's next key, and this step's key (`stats.rng_key`).
    pairs = jax.vmap(jax.random.split)(state.keys)
    keys, step_keys = pairs[:, 0], pairs[:, 1]
    records = tree.plugin_records  # one per plug-in
    stats = tree_lib.children_stats(tree, node, depth, step_keys)
    for each, record, descent in zip(plugins, records, state.descents):
        stats = each.stats_in_descent(tree, record, descent, node, stats)
    for each, record in zip(plugins, records):
        stats = each.stats_seen(tree, record, node, stats)
    scores = score_fn(tree, node, stats)
    check_slot_values(scores, name, score_fn, tree.batch_size, tree.num_slots)
    for each, record in zip(plugins, records):  # e.g. chance nodes' outcome rule
        scores = each.scores_at(tree, record, node, stats, scores)
    opened = None  # the slots every plug-in opens (None: no plug-in closes any)
    for each, record in zip(plugins, records):
        mask = each.open_slots(tree, record, stats)
        if mask is not None:
            opened = mask if opened is None else jnp.logical_and(opened, mask)
    descents = state.descents
    screen = plugin.replacing(plugins, "screen_scores") if plugins else None
    if screen is not None:
        index, each = screen
        descent, scores = each.screen_scores(tree, records[index], descents[index], score_fn,
                                             scores, stats, opened, active)
        descents = descents[:index] + (descent,) + descents[index + 1:]
    elif opened is not None:
        scores = jnp.where(opened, scores, -jnp.inf)
    slot = jnp.argmax(scores, axis=-1).astype(jnp.int32)
    has_legal_child = jnp.max(scores, axis=-1) > -jnp.inf
    child = stats.index[rows, slot]
    can_descend = active & has_legal_child & (child >= 0)
    next_depth = depth + 1
    next_node = jnp.where(can_descend, child, node)
    stops_below = tree.is_terminal[rows, next_node] | (next_depth >= max_depth)
    after = []
    for each, record, descent in zip(plugins, records, descents):
        descent, stops_below = each.descend(tree, record, descent, depth, slot, child,
                                            stats.visits[rows, slot], can_descend, stops_below)
        after.append(descent)
    descents = tuple(after)
    # A full tree expands nothing (a plug-in may say otherwise: a graph links).
    has_room = tree.num_nodes < tree.max_nodes
    for each, record in zip(plugins, records):
        has_room = each.has_room(tree, record, has_room)
    expand = active & has_legal_child & (child == tree_lib.UNEXPANDED) & has_room
    return Descent(
        node=next_node,
        slot=jnp.where(active, slot, state.slot),
        depth=jnp.where(can_descend, next_depth, depth),
        active=can_descend & ~stops_below,
        expand=state.expand | expand,
        keys=keys,
        descents=descents,
    )


def select_leaf(tree: tree_lib.Tree, rules: Rules, max_depth: int,
                plugins: Plugins, row_keys: chex.Array, searching: chex.Array,
                states: tuple = (), path: Optional[int] = None,
                stamp: Any = 0) -> LeafChoice:
    """Descends every row from the root; O(depth x K) per row. The first step
    (at the root) scores with `rules.at_root`, every later one with
    `rules.below_root`. `searching` [B] says which rows search
    (`plugin.rows_searching`: the solver's proven roots do not, nor rows a
    stop rule stopped); the plug-ins say which
    slots are open (the solver's proven children are not). `row_keys` [B]
    seed the per-step keys a rule may read
    (`stats.rng_key`); a rule that ignores them costs nothing (XLA drops the
    key arithmetic). `states` (one per plug-in, `SearchPlugin.search_state`) go down with
    the descent (`start_descent`, `descend`, `end_descent`; `path`: None,
    or the index p of the step's path; `stamp`: this descent's number) and
    come back in the LeafChoice (a graph search records its path there and
    stops at a child with more visits than its edge or one already on the
    path, graph.py)."""
    batch_size = tree.batch_size
    state = Descent(
        node=tree_lib.root_nodes(batch_size),
        slot=jnp.zeros((batch_size,), jnp.int32),
        depth=jnp.zeros((batch_size,), jnp.int32),
        active=searching,
        expand=jnp.zeros((batch_size,), jnp.bool_),
        keys=row_keys,
        descents=tuple(each.start_descent(tree, record, own, path, stamp)
                       for each, record, own in zip(plugins, tree.plugin_records, states)),
    )
    step = functools.partial(descend_one_step, tree, max_depth=max_depth, plugins=plugins)
    one_rule = rules.at_root is rules.below_root
    if not one_rule:
        # The root step outside the loop, so the loop body holds one rule
        # (when both are one function the loop serves the root too: a
        # smaller program to compile).
        state = step(state, rules.at_root, "root_rule")
    # One rule everywhere is the rule the caller gave as root_rule.
    loop_name = "root_rule" if one_rule else "interior_rule"
    state = jax.lax.while_loop(lambda state: jnp.any(state.active),
                               lambda state: step(state, rules.below_root, loop_name), state)
    return LeafChoice(node=state.node, slot=state.slot, expand=state.expand, runs=searching,
                      states=tuple(each.end_descent(tree, record, own, descent, path, state.depth)
                                   for each, record, own, descent
                                   in zip(plugins, tree.plugin_records, states, state.descents)))


@chex.dataclass(frozen=True)
class NewNodes:
    """New nodes computed from a recurrent_fn output, leading shape S ([B] or
    [B, K]), internal value scale."""

    reward: chex.Array
    discount: chex.Array
    value: chex.Array
    terminal: chex.Array
    slots: tree_lib.ChildSlots  # S + [K], with their prior logits (`slots.logits`)
    solved: chex.Array  # the terminal nodes (a graph's repetitions are not)
    entry: Any = None  # a plug-in's own per-node arrays (`SearchPlugin.evaluated`), in new_nodes


def node_slots(plugins: Plugins, priors: chex.Array, legal: chex.Array,
               prior_logits: chex.Array, slot_key: chex.PRNGKey,
               index_dtype) -> tree_lib.ChildSlots:
    """The child slots S + [K] of new nodes (the root's, and each
    expansion's) from their priors, legal mask and prior logits S + [A]:
    slot k for action k (`tree.dense_slots`), unless a plug-in lays them
    out (`SearchPlugin.node_slots`: the compact layout, compact.py, where
    `slot_key` breaks prior ties among more than K legal actions)."""
    layout = plugin.replacing(plugins, "node_slots") if plugins else None
    if layout is None:
        return tree_lib.dense_slots(priors, legal, index_dtype, prior_logits)
    return layout[1].node_slots(priors, legal, prior_logits, slot_key, index_dtype)


def new_nodes_from_output(output: base.RecurrentFnOutput, tree: tree_lib.Tree,
                          slot_key: chex.PRNGKey, plugins: Plugins = ()) -> NewNodes:
    """Converts a recurrent_fn output to the tree's scale and layout: slot k
    for action k, unless a plug-in lays the slots out (`node_slots`: the
    compact layout, where `slot_key` breaks prior ties among more than K
    legal moves).
    A transition with discount 0 makes a terminal node (value 0, no legal
    children), unless a plug-in says otherwise (`SearchPlugin.is_terminal`:
    with mctx's semantics discount 0 is only a factor and the node is
    searched like any other). The slots carry the prior logits as given
    (`slots.logits`), which a plug-in may keep (kept_prior_logits.py)."""
    discount = output.discount.astype(jnp.float32)
    terminal = discount == 0
    for each, record in zip(plugins, tree.plugin_records):
        terminal = each.is_terminal(tree, record, discount, terminal)
    value = jnp.where(terminal, 0.0,
                      tree_lib.to_internal_scale(output.value.astype(jnp.float32),
                                                 tree.value_range))
    if output.invalid_actions is None:
        legal = jnp.ones(output.prior_logits.shape, jnp.bool_)
    else:
        legal = ~output.invalid_actions.astype(jnp.bool_)
    legal = legal & ~terminal[..., None]
    priors = tree_lib.masked_priors(output.prior_logits.astype(jnp.float32), legal)
    slots = node_slots(plugins, priors, legal, output.prior_logits, slot_key,
                       tree.children.dtype)
    return NewNodes(
        reward=tree_lib.to_internal_scale(output.reward.astype(jnp.float32), tree.value_range),
        discount=discount,
        value=value,
        terminal=terminal,
        slots=slots,
        solved=terminal,
    )


def write_new_nodes(tree: tree_lib.Tree, write_at: chex.Array, parent: chex.Array,
                    action: chex.Array, new: NewNodes, embedding,
                    visits: int) -> tree_lib.Tree:
    """Writes nodes at `write_at` (leading shape S, an index >= N is dropped).
    A node is written with `visits` visits and value sum `visits * value`."""
    rows = tree_lib.batch_rows(tree.batch_size).reshape((-1,) + (1,) * (write_at.ndim - 1))

    # One value per tree array (tree.TREE_ARRAYS): a new array must say
    # here what a new node holds, or this raises.
    values = dict(
        node_visits=visits,
        value_sums=visits * new.value,
        raw_values=new.value,
        parents=parent,
        actions_from_parent=action,
        rewards=new.reward,
        discounts=new.discount,
        is_terminal=new.terminal,
        solved=new.solved,
        solved_values=0.0,
        pruned=new.slots.pruned,
        children=new.slots.codes,
        priors=new.slots.priors,
    )
    names = [name for name, _ in tree_lib.TREE_ARRAYS]
    if sorted(values) != sorted(names):
        raise NotImplementedError(f"write_new_nodes writes {sorted(values)} but the tree "
                                  f"declares {sorted(names)}")
    written = {name: getattr(tree, name).at[rows, write_at].set(values[name], mode="drop")
               for name in names}
    # A storage narrower than the tree is not written (replay_embeddings.py
    # keeps the root's embedding only).
    embeddings = jax.tree.map(
        lambda array, value: (array if array.shape[1] < tree.max_nodes
                              else array.at[rows, write_at].set(value, mode="drop")),
        tree.embeddings, embedding)
    return tree.replace(embeddings=embeddings, **written)


# Salts of the keys derived from a step's recurrent_fn key (so that
# recurrent_fn still gets that key): `SLOT_KEY` breaks prior ties when a
# compact node keeps K of more legal actions, `PLUGIN_KEY` seeds the
# plug-ins' `evaluated` hooks (`jax.random.fold_in(key, SALT)`).
SLOT_KEY = 0x51075
PLUGIN_KEY = 0x9106


def leaf_embeddings(params: base.Params, rng_key: chex.PRNGKey, tree: tree_lib.Tree,
                    recurrent_fn: base.RecurrentFn, node: chex.Array, plugins: Plugins = ()):
    """The embeddings at `node` [B] (or [B, P]) that recurrent_fn steps from:
    read from the tree, or those a plug-in gives instead
    (`SearchPlugin.leaf_embeddings`: replay_embeddings.py recomputes them).

    The tree's are read so that XLA cannot fuse the reads into
    recurrent_fn's computation: on CPU, XLA otherwise duplicates the small
    reads into the fusions that write the new node, where they may run after
    the in-place write; it then copies every [B, N, ...] embedding array
    twice per simulation, a cost that grows with N (measured: 27 us instead
    of 1 us per step at N = 200k). Reading inside a conditional (both
    branches the same read) materialises the result first. Other platforms
    read directly.
    """
    replacer = plugin.replacing(plugins, "leaf_embeddings") if plugins else None
    if replacer is not None:
        index, each = replacer
        return each.leaf_embeddings(tree, tree.plugin_records[index], params, rng_key,
                                    recurrent_fn, node)
    read = functools.partial(tree_lib.gather_embeddings, tree)

    def isolated(node):
        return jax.lax.cond(node.ravel()[0] >= 0, read, read, node)

    return jax.lax.platform_dependent(node, cpu=isolated, default=read)


def expand(params: base.Params, rng_key: chex.PRNGKey, tree: tree_lib.Tree,
           recurrent_fn: base.RecurrentFn, parent: chex.Array, slot: chex.Array,
           creates: chex.Array, parent_embedding: Any, options: SearchOptions,
           new_visits: int = 0, plugins: Plugins = (),
           states: tuple = ()) -> tuple[tree_lib.Tree, NewNodes, chex.Array, chex.Array]:
    """The one expansion routine: evaluates E edges per row in one
    recurrent_fn call and writes the new nodes.

    The edges are child slot `slot` of node `parent` (both [B, E]), the
    state they leave `parent_embedding` (leaves [B, E, ...]); recurrent_fn
    gets them as one flat batch of B x E transitions (so with E > 1 it must
    accept any batch size). Where `creates` [B, E] (and the row has room),
    a node is written in the row's next free slot, in edge order, with
    `new_visits` visits and value sum `new_visits * value`, and the parent's
    slot points to it. E is 1 for one simulation per step, K for
    `expand_all` (every slot of the leaf), P for P paths per step
    (`parallel.py`, where only the first path of each distinct edge creates).
    A plug-in may count the used slots otherwise (`SearchPlugin.nodes_used`:
    mctx's numbering uses up a slot per simulation, written or not; E = 1).

    A plug-in may say where new edges lead instead (`SearchPlugin.link`,
    with its state from `states`: a graph search points an edge whose
    position the row holds already to that node, graph.py). The plug-ins'
    records take the new nodes (`SearchPlugin.new_nodes`).

    Returns (tree, the new nodes of every edge (NewNodes [B, E], created or
    not), new_index [B, E] int32: the node each edge points to now (>= N
    where it points nowhere: not created, no room), reached [B, E] bool: the
    edge leads to a node now (one written there, or one a plug-in linked)).
    """
    max_nodes = tree.max_nodes
    edge_shape = parent.shape
    size = math.prod(edge_shape)
    records = tree.plugin_records  # one per plug-in
    layout = plugin.replacing(plugins, "slot_action") if plugins else None  # compact.py
    if layout is None:
        action = slot.astype(jnp.int32)  # its action id: slot k is action k
    else:
        action = layout[1].slot_action(tree, records[layout[0]], parent, slot)
    edge_action = action  # what recurrent_fn gets (a plug-in may say: a sampled node's action)
    for each, record in zip(plugins, records):
        edge_action = each.edge_action(tree, record, parent, slot, edge_action)
    flat = lambda x: x.reshape((size,) + x.shape[len(edge_shape):])  # noqa: E731
    flat_embedding = jax.tree.map(flat, parent_embedding)
    # What recurrent_fn returned, checked at trace time (free): its shapes
    # once a plug-in has made it the tree's (`evaluated`: sampled.py draws
    # the node's actions), else at once.
    evaluates = bool(plugins) and plugin.overridden(plugins, "evaluated")
    shapes = (size, tree.num_actions)
    output, embedding = validation.recurrent_result(
        recurrent_fn(params, rng_key, flat(edge_action), flat_embedding), flat_embedding,
        None if evaluates else shapes)
    entries = None
    if evaluates:
        output, entries = plugin.evaluated(plugins, jax.random.fold_in(rng_key, PLUGIN_KEY),
                                            output)
        # The plug-in's output, checked as recurrent_fn's is (dtypes again, and shapes).
        validation.recurrent_result((output, embedding), embedding, shapes)
    by_edge = lambda x: x.reshape(edge_shape + x.shape[1:])  # noqa: E731
    output, embedding, entries = jax.tree.map(by_edge, (output, embedding, entries))
    new = new_nodes_from_output(output, tree, jax.random.fold_in(rng_key, SLOT_KEY),
                                plugins)

    linker = plugin.replacing(plugins, "link") if plugins else None
    if linker is None:  # the next free node slots, in edge order
        new_index = tree.num_nodes[:, None] + jnp.cumsum(creates, axis=1, dtype=jnp.int32) - 1
        created = creates & (new_index < max_nodes)
    else:
        index, each = linker
        tree, new, new_index, created, new_visits = each.link(
            tree, records[index], states[index], parent, slot, creates, new, embedding)
        records = tree.plugin_records
    write_at = jnp.where(created, new_index, max_nodes)
    tree = write_new_nodes(tree, write_at, parent, action, new, embedding, visits=new_visits)
    # Each plug-in's own arrays for the new nodes (an `evaluated` entry as `new.entry`).
    entries = entries or (None,) * len(plugins)
    tree = tree.replace(plugin_records=tuple(
        each.new_nodes(tree, record, write_at, new if entry is None else new.replace(entry=entry))
        for each, record, entry in zip(plugins, records, entries)))
    rows = tree_lib.batch_rows(tree.batch_size)[:, None]
    # Where the parent's slot points now: a created node, or one a plug-in linked.
    reached = creates & (new_index < max_nodes)
    used = tree.num_nodes + jnp.sum(created, axis=1, dtype=jnp.int32)
    for each, record in zip(plugins, tree.plugin_records):
        used = each.nodes_used(tree, record, used)
    tree = tree.replace(
        children=tree.children.at[rows, jnp.where(reached, parent, max_nodes), slot].set(
            new_index.astype(tree.children.dtype), mode="drop"),
        num_nodes=used)
    return tree, new, new_index, reached


def backup_of_edges(tree: tree_lib.Tree, leaf: LeafChoice, new: NewNodes,
                    new_index: chex.Array, reached: chex.Array, plugins: Plugins) -> Backup:
    """What a simulation backs up after `expand` (`reached` [B, E]: the edge
    leads to a node now): the new node's value from it; a row that reached
    nothing re-evaluates its leaf (`again`). The plug-ins see the path's
    last step (`SearchPlugin.backs_up`); one may say what is backed up
    instead (`SearchPlugin.backup_of_edges`, handed `again`: expand_all.py,
    the sum of the new children's returns from the leaf; parallel.py, the P
    paths of a step). A descent that did not run (`leaf.runs`) adds
    nothing."""
    # A row that created nothing re-evaluates its leaf with its stored
    # value, with the visits the plug-ins count (`revisit_count`: the
    # solver's proven nodes none); a descent outside `leaf.runs` adds nothing.
    count = leaf.runs.astype(leaf.node.dtype)
    for each, record in zip(plugins, tree.plugin_records):
        count = each.revisit_count(tree, record, leaf.node, count)
    again = Backup(start=leaf.node, count=count,
                   value=count * tree_lib.gather_nodes(tree.raw_values, leaf.node))
    replacer = plugin.replacing(plugins, "backup_of_edges") if plugins else None
    if replacer is not None:
        index, each = replacer
        return each.backup_of_edges(tree, tree.plugin_records[index], leaf, new, new_index,
                                    reached, again, plugins)
    made = reached[:, 0]
    states = tuple(each.backs_up(tree, record, state, leaf.slot, new_index[:, 0], made)
                   for each, record, state in zip(plugins, tree.plugin_records, leaf.states))
    return Backup(start=jnp.where(made, new_index[:, 0], again.start),
                  count=jnp.where(made, 1, again.count),
                  value=jnp.where(made, new.value[:, 0], again.value), states=states)


class BackupCarry(NamedTuple):
    """The carry of `backup`'s loop: the statistics being written [B, N],
    what each plug-in carries (`SearchPlugin.backup_state`, a tuple in
    plug-in order), per row [B] (or [B, P] paths) the node being updated
    (NO_PARENT once past the root), the visits added and the value crossing
    into it."""

    node_visits: chex.Array
    value_sums: chex.Array
    plugin_states: tuple
    node: chex.Array
    count: chex.Array
    value: chex.Array


def backup(tree: tree_lib.Tree, update: Backup, plugins: Plugins) -> tree_lib.Tree:
    """Adds `update.count` visits and the value sum to every node from
    `update.start` up to the root. The value sum crosses each edge as
    `count * reward + discount * value` (a two-player value changes sign).
    Each plug-in sees every node on the path (`SearchPlugin.back_up_node`:
    the solver proves it where it can).

    `update` holds one path per row ([B]) or P paths per row ([B, P], several
    simulations per step: paths sharing nodes add up); a path that adds no
    visit does not walk.

    A plug-in may walk instead (`SearchPlugin.backup`: a graph search walks
    the paths it recorded, graph.py)."""
    walker = plugin.replacing(plugins, "backup") if plugins else None
    if walker is not None:
        index, each = walker
        return each.backup(tree, tree.plugin_records[index], update.states[index], update,
                           plugins)
    batch_size, max_nodes = tree.batch_size, tree.max_nodes
    rows = tree_lib.batch_rows(batch_size).reshape((-1,) + (1,) * (update.start.ndim - 1))

    def body(state: BackupCarry) -> BackupCarry:
        node, count, value = state.node, state.count, state.value
        on_path = node >= 0
        write_at = jnp.where(on_path, node, max_nodes)
        safe_node = jnp.maximum(node, 0)
        plugin_states = tuple(each.back_up_node(tree, plugin_state, safe_node, on_path)
                              for each, plugin_state in zip(plugins, state.plugin_states))
        return BackupCarry(
            node_visits=state.node_visits.at[rows, write_at].add(count, mode="drop"),
            value_sums=state.value_sums.at[rows, write_at].add(value, mode="drop"),
            plugin_states=plugin_states,
            node=jnp.where(on_path, tree.parents[rows, safe_node], tree_lib.NO_PARENT),
            count=count,
            value=count * tree.rewards[rows, safe_node] + tree.discounts[rows, safe_node] * value)

    state = BackupCarry(node_visits=tree.node_visits, value_sums=tree.value_sums,
                        plugin_states=tuple(each.backup_state(tree, record) for each, record
                                            in zip(plugins, tree.plugin_records)),
                        node=jnp.where(update.count > 0, update.start, tree_lib.NO_PARENT),
                        count=update.count, value=update.value)
    state = jax.lax.while_loop(lambda state: jnp.any(state.node >= 0), body, state)
    tree = tree.replace(node_visits=state.node_visits, value_sums=state.value_sums)
    records = []  # each plug-in closes its backup (default: its carried state is its record)
    for each, plugin_state in zip(plugins, state.plugin_states):
        tree, record = each.after_backup(tree, plugin_state)
        records.append(record)
    return tree.replace(plugin_records=tuple(records))


def simulate(simulation_index: int, carry: tuple, *, params: base.Params,
             recurrent_fn: base.RecurrentFn, rules: Rules, options: SearchOptions,
             plugins: Plugins = ()) -> tuple:
    """One simulation step on every row: select a leaf, expand, back up.
    The body of the search loop (`run_simulations`); `carry` is (key, tree,
    what each plug-in carries between simulations
    (`SearchPlugin.search_state`, a tuple), and `budget_rows`
    (`run_simulations`: None, or what `count_step` says of the rows that
    search)). A row the plug-ins take out (`plugin.rows_searching`) does
    nothing. The step descends once per row (with P paths per step, P
    times: a plug-in's `select_leaves`) and expands and backs up whatever leading
    shape the descents have.

    Keys are split as mctx splits them: `key, select_key, expand_key =
    split(key, 3)`; recurrent_fn gets `expand_key`, and the descent gives
    row b the key `split(select_key, B)[b]`, split again at every step
    (`stats.rng_key`). So equal keys give the two libraries equal random
    numbers, and the recurrent_fn keys do not depend on the batch size.
    """
    key, tree, states, budget_rows = carry
    # The rows that search this step: every row, unless a plug-in may stop
    # rows (`run_simulations`: then the answer at the end of the last step).
    searching = (jnp.ones((tree.batch_size,), jnp.bool_) if budget_rows is None
                 else budget_rows[1])
    key, select_key, expand_key = jax.random.split(key, 3)
    records = tree.plugin_records  # one per plug-in
    # Select: one descent per row (row b's key `split(select_key, B)[b]`,
    # stamp `step + 1`), a simulation spent in each row that searches; or
    # the descents a plug-in runs instead (`SearchPlugin.select_leaves`:
    # parallel.py's P paths per row).
    replacer = plugin.replacing(plugins, "select_leaves") if plugins else None
    if replacer is None:
        leaf = select_leaf(tree, rules, options.max_depth, plugins,
                           jax.random.split(select_key, tree.batch_size), searching,
                           states=states, stamp=simulation_index + 1)
        spent = searching.astype(jnp.int32)
    else:
        index, each = replacer
        leaf, spent = each.select_leaves(tree, records[index], rules, options.max_depth,
                                         plugins, select_key, searching, states,
                                         simulation_index)
    embedding = leaf_embeddings(params, expand_key, tree, recurrent_fn, leaf.node, plugins)
    # The edges the step evaluates, [B, E]: the leaf's chosen slot (E = 1),
    # its new node written with no visit (the backup adds it); or those a
    # plug-in says (`SearchPlugin.edges_of_leaf`: expand_all.py evaluates
    # every slot of the leaf).
    replacer = plugin.replacing(plugins, "edges_of_leaf") if plugins else None
    if replacer is None:
        parent, slot, creates = leaf.node[:, None], leaf.slot[:, None], leaf.expand[:, None]
        embedding = jax.tree.map(functools.partial(jnp.expand_dims, axis=1), embedding)
        new_visits = 0
    else:
        index, each = replacer
        parent, slot, creates, embedding, new_visits = each.edges_of_leaf(
            tree, records[index], leaf, embedding, plugins)
    tree, new, new_index, reached = expand(params, expand_key, tree, recurrent_fn, parent, slot,
                                           creates, embedding, options, new_visits=new_visits,
                                           plugins=plugins, states=leaf.states)
    update = backup_of_edges(tree, leaf, new, new_index, reached, plugins)
    tree = backup(tree, update, plugins)
    if budget_rows is not None:
        budget_rows = count_step(plugins, tree, budget_rows, spent, options.num_simulations)
    return key, tree, update.states, budget_rows


def count_step(plugins: Plugins, tree: tree_lib.Tree, budget_rows, spent_now: chex.Array,
               total: int):
    """`budget_rows` (spent [B] int32, searching [B] bool) after a step that
    spent `spent_now` [B] simulations per row: the plug-ins are asked once
    per step which rows search the next one, and the loop's condition
    (`run_simulations`) reads the same answer."""
    spent = budget_rows[0] + spent_now
    return spent, plugin.rows_searching(plugins, tree, tree.batch_size, spent, total)


def run_simulations(body, carry: tuple, num_steps: int, options: SearchOptions,
                    plugins: Plugins) -> tuple:
    """The search loop: `body(step, carry + (budget_rows,))` for steps 0 ..
    num_steps - 1 (`simulate`), by `options.loop_fn`; returns the last carry, `budget_rows`
    dropped. When a plug-in may stop rows (`plugin.may_stop_rows`: the
    solver, a stop rule) `budget_rows` is (spent [B] int32: the simulations
    each row has run, searching [B] bool: the rows that search the next
    step; `count_step`), else None. With such a plug-in and the default
    `loop_fn` the loop ends as soon as no row searches: a batch decided
    early costs less time, and its trees are those of the whole loop (a
    stopped row does nothing in a simulation)."""
    if len(carry[1].plugin_records) != len(plugins):  # the phases zip the two
        raise ValueError(f"the tree holds {len(carry[1].plugin_records)} plug-in records for "
                         f"{len(plugins)} plug-ins: start the search from "
                         f"tree_search.start_tree with the same plug-ins")
    if not (plugins and plugin.may_stop_rows(plugins)):
        return options.loop_fn(0, num_steps, body, carry + (None,))[:-1]
    tree = carry[1]
    spent = jnp.zeros((tree.batch_size,), jnp.int32)
    carry = carry + ((spent, plugin.rows_searching(plugins, tree, tree.batch_size, spent,
                                                   options.num_simulations)),)
    if options.loop_fn is not jax.lax.fori_loop:
        return options.loop_fn(0, num_steps, body, carry)[:-1]
    _, carry = jax.lax.while_loop(
        lambda state: (state[0] < num_steps) & jnp.any(state[1][-1][1]),
        lambda state: (state[0] + 1, body(state[0], state[1])),
        (jnp.zeros((), jnp.int32), carry))
    return carry[:-1]
