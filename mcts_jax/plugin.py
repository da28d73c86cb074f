"""The plug-in interface: how a feature joins the search loop without a branch in it.

A plug-in is a frozen, hashable value (part of a search's compilation key,
like a rule) whose hooks the phases call at fixed points. Every hook has a
default that changes nothing, so a plug-in overrides only the points it
cares about; the phases call each hook of each plug-in of a static tuple
and never ask which plug-in they hold. With no plug-in (the plain search)
none is called. Pass your own with `SearchOptions(plugins=(MyPlugin(),))`
(or `plugins=` to any policy): it then runs in `search`, every policy,
sharding, the arena and self-play with no library edit.

A plug-in may keep arrays of its own, its *record*: a pytree whose leaves
are per-node arrays [B, N, ...], made by `init_record` when a search starts
(the root's entry written there) and kept in `tree.plugin_records` (one
entry per plug-in of the search, in order). Reuse re-roots it with the
tree; a free node slot holds 0 until `new_nodes` writes it. Every hook
gets the plug-in's own record (None when it keeps none). A record that
holds more than per-node arrays says how it empties and re-roots, as
methods of its own: `emptied() -> record` (`tree.empty_like`; default:
every leaf zeros) and `rerooted(emptied, move, keep, new_index) ->
record` (`reuse.get_subtree`: `move(array, default)` moves a per-node
array's kept nodes to their new slots, `keep` [B, N] says which old nodes
stay, `new_index` [B, N] their new numbers; default: every leaf moved);
graph.py's `GraphRecord` renumbers its transposition table there.

The hooks (B rows; `node` is [B], or [B, P] with P paths per step):

- `init_record(tree) -> record`: its arrays for a fresh tree (root only);
- `searches(tree, record) -> [B] bool`: which rows search at all (a row
  left out does nothing this simulation: no descent, no node, no visit);
- `stops(tree, record, budget) -> [B] bool`: the rows that have learned
  enough (`Budget`: this call's simulations spent and left per row); a
  stopped row does nothing more in this call, and the loop ends once every
  row has stopped (stopping.py has the built-in stop rules);
- `check(policy, options)`: once per call, before anything is traced: raise
  a clear error where the plug-in does not apply (e.g. a stop rule that
  assumes a final choice the policy does not make); `options` is the
  call's resolved record, the compile key (its `checks` is "host"; the
  call's mode is `policy.options.checks`);
- `open_slots(tree, record, stats) -> [B, K] bool`: which child slots of
  the node a descent may enter, beside being legal;
- `stats_seen(tree, record, node, stats) -> stats`: the statistics of
  `node` [B] that the rules score during a descent (e.g. its own Q);
- `new_nodes(tree, record, write_at, new) -> record`: nodes are written at
  `write_at` (an index >= N is dropped) with `new` (`phases.NewNodes`:
  reward, discount, value, terminal, leading shape like `write_at`);
- `revisit_count(tree, record, node, count) -> count`: the visits a
  simulation that created nothing adds when it re-evaluates `node`;
- `backup_state(tree, record) -> state`: what it carries through a backup;
- `back_up_node(tree, state, node, on_path) -> state`: the backup reaches
  `node` where `on_path` (leaf first, root last; `tree` is the tree as
  expanded, before this backup's visits);
- `after_backup(tree, state) -> (tree, record)`: the backup is over;
- `evaluated(rng_key, output) -> (output, entry)`: a network output (the
  `RootFnOutput` before the policy's root setup, or a `RecurrentFnOutput`
  at expansion, leading shape S) as the tree takes it, and the per-node
  arrays S + [...] the plug-in keeps for those nodes (sampled.py draws a
  node's actions here); the root's entry reaches `root_record(tree, record,
  entry) -> record`, an expansion's reaches `new_nodes` as `new.entry`
  (a plug-in that keeps no `evaluated` entry gets the root's `ChildSlots`
  as its root entry: compact.py keeps their action ids,
  kept_prior_logits.py their logits);
- `continued_record(tree, record, root) -> record`: a continued tree's
  record once this search's root is known (kept_prior_logits.py: the
  root's new logits);
- `edge_action(tree, record, parent, slot, action) -> action`: what
  recurrent_fn gets for child slot `slot` of `parent` (default: the action
  id the tree holds, `action`);
- `slots_per_node(num_actions) -> int`: the child slots per node when the
  root's `prior_logits` are [B, num_actions] (default: num_actions).

What a descent carries, where it stops, how a new edge finds its node and
what a backup walks (graph.py's `GraphSearch` is the built-in example):

- `search_state(tree, record, lead_shape) -> state`: what the plug-in
  carries from one simulation to the next, for descents of leading shape
  `lead_shape` ((B,): one path per step; (B, P): P paths per step);
- `start_descent(tree, record, state, path, stamp) -> descent`: a descent
  leaves the root (`path`: None, or the index p of the step's path;
  `stamp`: [] int32, greater than every earlier descent's);
- `descend(tree, record, descent, depth, slot, child, edge_visits, moves,
  stops) -> (descent, stops)`: the descent at `depth` chose `slot`, whose
  child is `child` (< 0: none yet) through an edge visited `edge_visits`
  times, and goes down into it where `moves`; `stops` [B]: the rows that
  stop at that child (the plug-in may add rows);
- `end_descent(tree, record, state, descent, path, depth) -> state`: the
  descent ended at `depth`;
- `has_room(tree, record, room) -> room`: the rows [B] whose descent may
  end at an unexpanded edge (default: those with a free node slot);
- `link(tree, record, state, parent, slot, creates, new, embedding) ->
  (tree, new, index, created, visits)`: where each new edge (`parent`,
  `slot`, `creates`, `new`, all [B, E]) leads instead of the next free
  node slots; at most one plug-in of a search links;
- `backs_up(tree, record, state, slot, target, reaches) -> state`: the
  simulation's path goes on through `slot` to node `target` where
  `reaches` (its last step, after `expand`);
- `backup(tree, record, state, update, plugins) -> tree`: the backup walk
  itself, instead of the walk up the parent pointers; at most one plug-in
  of a search walks;
- `select_leaves(tree, record, rules, max_depth, plugins, select_key,
  searching, states, step) -> (LeafChoice, spent)`: the descents of a
  simulation step instead of one per row (parallel.py's `ParallelPaths`
  runs P, each seeing the step's earlier paths through
  `stats_in_descent(tree, record, descent, node, stats) -> stats`, which
  the phases call before every `stats_seen`); at most one.

- `scores_at(tree, record, node, stats, scores) -> scores`: the scores
  [B, K] a descent reads at `node` [B], given the rules' `scores`
  (stochastic.py's `ChanceNodes`: the outcome rule at chance nodes); each
  plug-in in turn, before any screen.
- `screen_scores(tree, record, descent, rule, scores, stats, opened,
  active) -> (descent, scores)`: the scores a descent takes the argmax of
  (rule_screen.py reads a user's rule's NaN); at most one.

What a step evaluates and what a new node is:

- `edges_of_leaf(tree, record, leaf, embedding, plugins)` and
  `backup_of_edges(tree, record, leaf, new, new_index, reached, again,
  plugins) -> phases.Backup`: the edges a simulation evaluates below its
  leaf and what it backs up then, instead of one edge and the new node's
  value (expand_all.py creates every child at once; parallel.py evaluates
  the P leaves of a step); at most one plug-in replaces each;

- `leaf_embeddings(tree, record, params, rng_key, recurrent_fn, node) ->
  embedding`: the states recurrent_fn steps from, instead of those the
  tree stores (replay_embeddings.py recomputes them); at most one;
- `node_slots(priors, legal, logits, rng_key, index_dtype) -> ChildSlots`:
  the child slots of new nodes (the root's, and each expansion's) from
  their priors, legal mask and prior logits in action space, S + [A],
  instead of slot k for action k (`tree.dense_slots`); compact.py's
  `CompactLayout` keeps K of them; at most one;
- `slot_action(tree, record, parent, slot) -> action`: the action id
  [leading shape of `parent`] int32 that child slot `slot` of `parent`
  stands for, kept as the new node's `actions_from_parent` and handed to
  every `edge_action`, instead of the slot itself (slot k is action k);
  the plug-in that lays out the slots says what they hold (compact.py
  reads the parent's slot ids); at most one;
- `is_terminal(tree, record, discount, terminal) -> terminal`: which new
  nodes are terminal (default: discount 0; mctx's semantics: none);
- `nodes_used(tree, record, used) -> used`: each row's used node slots
  after an expansion (mctx's numbering: one per simulation).

`mcts_jax.solver.Solver` (the MCTS-solver) is the first built-in plug-in;
docs/plugins.md writes a max backup as a user's plug-in.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional, Sequence

import chex
import jax
import jax.numpy as jnp


@chex.dataclass(frozen=True)
class Budget:
    """A search call's simulations, per row: what a stop rule weighs.

    Attributes:
      spent: [B] int32, simulations this call has run on the row (a
        continued tree's earlier visits are not counted).
      total: [] int32, the simulations of this call (`num_simulations`).
    """

    spent: chex.Array
    total: chex.Array

    @property
    def left(self) -> chex.Array:
        """[B] int32: the simulations this call may still run on the row."""
        return self.total - self.spent


@chex.dataclass(frozen=True)
class LeafChoice:
    """Where a simulation's descent stopped, per row, all [B].

    Attributes:
      node: the last node reached. When `expand` is True it is the parent of
        the new node; otherwise it is the leaf whose value is backed up again
        (terminal, at max_depth, a dead end, or a parent in a full tree).
      slot: the child slot of `node` to expand (meaningful when `expand`).
      expand: bool, new node(s) are created below `node`.
      runs: bool, the descent ran (its row searches; with P paths per step,
        and the path is one of this step's): a descent that did not adds
        nothing (`phases.backup_of_edges`).
      states: what each plug-in carries after this descent
        (`SearchPlugin.end_descent`; a graph search: the path, graph.py).
    """

    node: chex.Array
    slot: chex.Array
    expand: chex.Array
    runs: chex.Array
    states: tuple = ()


@chex.dataclass(frozen=True)
class Backup:
    """What a simulation adds to the path from `start` to the root, all [B]
    (or [B, P] paths).

    Attributes:
      start: the first node to update.
      count: visits added to every node on the path (1, or the number of
        children created by `expand_all`, or 0 for a no-op).
      value: the sum of the `count` values, for the player to move at `start`.
      states: what each plug-in carries once the simulation's path is
        complete (`SearchPlugin.backs_up`; a graph search walks its
        recorded paths instead of the parent pointers, graph.py).
    """

    start: chex.Array
    count: chex.Array
    value: chex.Array
    states: tuple = ()


@dataclasses.dataclass(frozen=True)
class SearchPlugin:
    """A feature of the search, as hooks the phases call (module docstring).
    Subclass it as a frozen dataclass and override the hooks you need."""

    def init_record(self, tree: Any) -> Any:
        """This plug-in's arrays for a fresh tree (None: it keeps none)."""
        return None

    def searches(self, tree: Any, record: Any) -> Optional[chex.Array]:
        """[B] bool: the rows that search this simulation (None: every row)."""
        return None

    def stops(self, tree: Any, record: Any, budget: Budget) -> Optional[chex.Array]:
        """[B] bool: the rows that stop spending simulations (None: none)."""
        return None

    def check(self, policy: Any, options: Any) -> None:
        """Raises where this plug-in does not apply to `policy` with `options`
        (called once per search call, outside the trace; `options` is the
        resolved record, whose `checks` is "host": the call's mode is
        `policy.options.checks`)."""

    def open_slots(self, tree: Any, record: Any, stats: Any) -> Optional[chex.Array]:
        """[B, K] bool: the slots of the node `stats` describes that a descent
        may enter, beside being legal (None: every legal slot)."""
        return None

    def stats_seen(self, tree: Any, record: Any, node: chex.Array, stats: Any) -> Any:
        """The statistics of `node` [B] that the descent's rules score."""
        return stats

    def stats_in_descent(self, tree: Any, record: Any, descent: Any, node: chex.Array,
                         stats: Any) -> Any:
        """The statistics of `node` [B] as a descent that carries `descent`
        sees them (default: unchanged; several paths per step count the
        step's earlier paths here). Called before every `stats_seen`."""
        return stats

    def new_nodes(self, tree: Any, record: Any, write_at: chex.Array, new: Any) -> Any:
        """The record once nodes are written at `write_at` with `new`."""
        return record

    def revisit_count(self, tree: Any, record: Any, node: chex.Array,
                      count: chex.Array) -> chex.Array:
        """The visits (like `node`) that re-evaluating `node` adds."""
        return count

    def backup_state(self, tree: Any, record: Any) -> Any:
        """What this plug-in carries through one backup (default: its record)."""
        return record

    def back_up_node(self, tree: Any, state: Any, node: chex.Array,
                     on_path: chex.Array) -> Any:
        """The carried state after the backup reached `node` where `on_path`."""
        return state

    def after_backup(self, tree: Any, state: Any) -> tuple:
        """(the tree, this plug-in's record) once the backup is over
        (default: the carried state is the record)."""
        return tree, state

    def evaluated(self, rng_key: Any, output: Any) -> tuple:
        """(the network output as the tree takes it, this plug-in's per-node
        entry for those nodes or None); default: unchanged, None."""
        return output, None

    def root_record(self, tree: Any, record: Any, entry: Any) -> Any:
        """The record of a fresh tree once the root's entry is known: its
        `evaluated` entry, or the root's `ChildSlots` for a plug-in that
        keeps none."""
        return record

    def continued_record(self, tree: Any, record: Any, root: Any) -> Any:
        """The record of a continued tree (`tree=`, its rows that hold a
        root) once this search's root (`RootFnOutput`, after the policy's
        root setup) is known; default: unchanged."""
        return record

    def slots_per_node(self, num_actions: int) -> int:
        """The child slots per node of the tree searched from a root whose
        `prior_logits` are [B, num_actions] (default: num_actions)."""
        return num_actions

    def slot_action(self, tree: Any, record: Any, parent: chex.Array,
                    slot: chex.Array) -> chex.Array:
        """The action id (int32, shaped like `parent`) child slot `slot` of
        `parent` stands for. Only called for a plug-in that overrides it
        (default: the slot itself, slot k is action k)."""
        raise NotImplementedError

    def node_slots(self, priors: chex.Array, legal: chex.Array, logits: chex.Array,
                   rng_key: Any, index_dtype: Any) -> Any:
        """`tree.ChildSlots` S + [K] of new nodes from priors, legal mask and
        prior logits S + [A]. Only called for a plug-in that overrides it
        (default: the dense layout, `tree.dense_slots`)."""
        raise NotImplementedError

    def edge_action(self, tree: Any, record: Any, parent: chex.Array, slot: chex.Array,
                    action: chex.Array) -> chex.Array:
        """What recurrent_fn gets for child slot `slot` of `parent` (default:
        `action`, the action id the tree holds for that slot)."""
        return action

    def search_state(self, tree: Any, record: Any, lead_shape: tuple) -> Any:
        """What this plug-in carries from one simulation to the next (None: nothing)."""
        return None

    def start_descent(self, tree: Any, record: Any, state: Any, path: Optional[int],
                      stamp: chex.Array) -> Any:
        """What one descent carries as it leaves the root (default: `state`)."""
        return state

    def descend(self, tree: Any, record: Any, descent: Any, depth: chex.Array,
                slot: chex.Array, child: chex.Array, edge_visits: chex.Array,
                moves: chex.Array, stops: chex.Array) -> tuple:
        """(descent, stops [B]) after one step down (default: unchanged)."""
        return descent, stops

    def end_descent(self, tree: Any, record: Any, state: Any, descent: Any,
                    path: Optional[int], depth: chex.Array) -> Any:
        """The carried state once the descent ended at `depth` (default: `descent`)."""
        return descent

    def has_room(self, tree: Any, record: Any, room: chex.Array) -> chex.Array:
        """[B] bool: the rows whose descent may end at an unexpanded edge."""
        return room

    def link(self, tree: Any, record: Any, state: Any, parent: chex.Array, slot: chex.Array,
             creates: chex.Array, new: Any, embedding: Any) -> tuple:
        """(tree, new, index [B, E], created [B, E], visits): where each new
        edge leads. Only called for a plug-in that overrides it."""
        raise NotImplementedError

    def backs_up(self, tree: Any, record: Any, state: Any, slot: chex.Array,
                 target: chex.Array, reaches: chex.Array) -> Any:
        """The carried state once the simulation's path goes on to `target`
        where `reaches` (default: unchanged)."""
        return state

    def leaf_embeddings(self, tree: Any, record: Any, params: Any, rng_key: Any,
                        recurrent_fn: Any, node: chex.Array) -> Any:
        """The embeddings at `node` that recurrent_fn steps from. Only called
        for a plug-in that overrides it (default: read from the tree)."""
        raise NotImplementedError

    def scores_at(self, tree: Any, record: Any, node: chex.Array, stats: Any,
                  scores: chex.Array) -> chex.Array:
        """The scores [B, K] a descent reads at `node` [B], given the rules'
        `scores` (default: those)."""
        return scores

    def screen_scores(self, tree: Any, record: Any, descent: Any, rule: Any,
                      scores: chex.Array, stats: Any, opened: Optional[chex.Array],
                      active: chex.Array) -> tuple:
        """(descent, scores [B, K]): the scores of `rule` the descent takes the
        argmax of (`opened` [B, K]: the slots the plug-ins open, None: every
        legal one; `active` [B]: the rows descending). Only called for a
        plug-in that overrides it (default: the rule's scores, -inf where
        not opened)."""
        raise NotImplementedError

    def edges_of_leaf(self, tree: Any, record: Any, leaf: Any, embedding: Any,
                      plugins: Any) -> tuple:
        """(parent, slot, creates [B, E], embedding [B, E, ...], new_visits):
        the edges a simulation evaluates below its leaf. Only called for a
        plug-in that overrides it (default: the slot the descent chose)."""
        raise NotImplementedError

    def backup_of_edges(self, tree: Any, record: Any, leaf: Any, new: Any,
                        new_index: chex.Array, reached: chex.Array, again: Any,
                        plugins: Any) -> Any:
        """The `Backup` of a simulation after `expand` (`again`: the
        leaf re-evaluated; its `states`: what each plug-in carries on). Only
        called for a plug-in that overrides it (default: the new node's
        value from it)."""
        raise NotImplementedError

    def is_terminal(self, tree: Any, record: Any, discount: chex.Array,
                    terminal: chex.Array) -> chex.Array:
        """Which new nodes (like `discount`) are terminal (default: `terminal`,
        those whose edge's discount is 0)."""
        return terminal

    def nodes_used(self, tree: Any, record: Any, used: chex.Array) -> chex.Array:
        """[B]: each row's used node slots after an expansion (`used`: the
        slots before it plus the nodes written; `tree`: before it)."""
        return used

    def backup(self, tree: Any, record: Any, state: Any, update: Any, plugins: Any) -> Any:
        """The tree after the backup walk. Only called for a plug-in that
        overrides it."""
        raise NotImplementedError

    def select_leaves(self, tree: Any, record: Any, rules: Any, max_depth: int, plugins: Any,
                      select_key: Any, searching: chex.Array, states: tuple,
                      step: chex.Array) -> tuple:
        """(LeafChoice, spent [B] int32): the descents of simulation step
        `step` (`select_key`: its key; `searching` [B]: the rows that
        search; `states`: what each plug-in carries) and the simulations
        they spend per row. Only called for a plug-in that overrides it
        (default: one descent per row, `phases.select_leaf`; several paths
        per step run P, parallel.py)."""
        raise NotImplementedError


Plugins = Sequence[SearchPlugin]


def check_plugins(name: str, plugins: Any) -> tuple:
    """`plugins` as a tuple of SearchPlugin values, or a clear error naming `name`."""
    if isinstance(plugins, SearchPlugin):
        plugins = (plugins,)
    if not isinstance(plugins, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of mcts_jax.SearchPlugin values, got "
                        f"{type(plugins).__name__}")
    for index, each in enumerate(plugins):
        if not isinstance(each, SearchPlugin):
            raise TypeError(f"{name}[{index}] must be a mcts_jax.SearchPlugin (a frozen "
                            f"dataclass subclassing it), got {type(each).__name__}")
        try:
            hash(each)
        except TypeError as error:
            raise TypeError(f"{name}[{index}] ({type(each).__name__}) must be hashable: "
                            f"make it a frozen dataclass ({error})") from None
    return tuple(plugins)


def records_of(plugins: Plugins, tree: Any) -> tuple:
    """Each plug-in's record in `tree` (None for all when the tree holds none)."""
    records = tree.plugin_records
    return tuple(records) if records else (None,) * len(plugins)




def overridden(plugins: Plugins, hook: str) -> tuple:
    """The plug-ins (with their position) whose class overrides `hook`."""
    return tuple((index, each) for index, each in enumerate(plugins)
                 if getattr(type(each), hook) is not getattr(SearchPlugin, hook))


def evaluated(plugins: Plugins, rng_key: Any, output: Any) -> tuple:
    """(output as every plug-in that converts outputs makes it, one entry per
    plug-in, None where it keeps none). Each plug-in gets its own key."""
    entries = [None] * len(plugins)
    for index, each in overridden(plugins, "evaluated"):
        output, entries[index] = each.evaluated(jax.random.fold_in(rng_key, index), output)
    return output, tuple(entries)


def root_records(plugins: Plugins, tree: Any, entries: tuple) -> Any:
    """`tree` with each plug-in's record given the root's entry."""
    if not overridden(plugins, "root_record"):
        return tree
    records = tuple(each.root_record(tree, record, entry) for each, record, entry
                    in zip(plugins, records_of(plugins, tree), entries))
    return tree.replace(plugin_records=records)




def rows_searching(plugins: Plugins, tree: Any, batch_size: int,
                   spent: Optional[chex.Array] = None, total: int = 0) -> chex.Array:
    """[B] bool: the rows every plug-in lets search; where the loop counts
    the simulations each row has `spent` ([B], of `total`), also only
    those with simulations left that no plug-in stops (`stops`)."""
    records = records_of(plugins, tree)
    rows = [each.searches(tree, record) for each, record in zip(plugins, records)]
    if spent is not None:
        budget = Budget(spent=spent, total=jnp.asarray(total, jnp.int32))
        rows.append(budget.spent < budget.total)
        rows += [None if stop is None else ~stop
                 for stop in (each.stops(tree, record, budget)
                              for each, record in zip(plugins, records))]
    rows = [row for row in rows if row is not None]
    if not rows:
        return jnp.ones((batch_size,), jnp.bool_)
    return functools.reduce(jnp.logical_and, rows)


def may_stop_rows(plugins: Plugins) -> bool:
    """Whether a plug-in may take rows out of the search (it overrides
    `searches` or `stops`): the loop then counts each row's simulations
    (`Budget`) and ends when no row searches."""
    return bool(overridden(plugins, "searches") or overridden(plugins, "stops"))


def open_slots(plugins: Plugins, tree: Any, stats: Any) -> Optional[chex.Array]:
    """[B, K] bool: the slots every plug-in opens (None: no plug-in closes any)."""
    masks = [each.open_slots(tree, record, stats)
             for each, record in zip(plugins, records_of(plugins, tree))]
    masks = [mask for mask in masks if mask is not None]
    return functools.reduce(jnp.logical_and, masks) if masks else None


def after_backup(plugins: Plugins, tree: Any, states: tuple) -> Any:
    """The tree once every plug-in has closed its backup, with their records."""
    if not plugins:
        return tree
    records = []
    for each, state in zip(plugins, states):
        tree, record = each.after_backup(tree, state)
        records.append(record)
    return tree.replace(plugin_records=tuple(records))


def replacing(plugins: Plugins, hook: str) -> Optional[tuple]:
    """(position, plug-in) of the one plug-in that replaces the step `hook`
    of a phase (`link`, `backup`, `leaf_embeddings`, `edges_of_leaf`,
    `backup_of_edges`, `screen_scores`, `select_leaves`, `node_slots`,
    `slot_action`), or None when none
    does (the phase's own code runs)."""
    found = overridden(plugins, hook)
    if len(found) > 1:
        raise ValueError(f"plug-ins {[type(each).__name__ for _, each in found]} all "
                         f"override {hook}: at most one plug-in of a search may")
    return found[0] if found else None


def each(plugins: Plugins, hook: str, tree: Any, *args, per_plugin: tuple = (),
         with_record: bool = True) -> tuple:
    """Every plug-in's `hook`, in order: a tuple of their results, one per
    plug-in (() with no plug-in). Plug-in i is called as `hook(tree, its
    record, per_plugin[0][i], per_plugin[1][i], ..., *args)` (`with_record`
    False: no record, as `back_up_node` takes none). For a plug-in that
    relays hooks to the others (graph.py's backup walk, parallel.py's
    backup); the phases write each hook call as a plain loop over
    `zip(plugins, tree.plugin_records)`, so a reader of the plain search
    sees the call without opening this module."""
    records = records_of(plugins, tree) if with_record else (None,) * len(plugins)
    return tuple(getattr(each_plugin, hook)(tree, *((record,) if with_record else ()),
                                            *(own[index] for own in per_plugin), *args)
                 for index, (each_plugin, record) in enumerate(zip(plugins, records)))


def thread(plugins: Plugins, hook: str, tree: Any, *args, per_plugin: tuple = ()) -> Any:
    """The last of `args` as every plug-in's `hook` in turn passes it on:
    plug-in i is called as `hook(tree, its record, per_plugin[0][i], ...,
    *args[:-1], value)` with the value plug-in i - 1 returned (with no
    plug-in: `args[-1]` as it is). For a plug-in that relays a hook to the
    others (expand_all.py's `has_room`)."""
    *fixed, value = args
    for index, (each_plugin, record) in enumerate(zip(plugins, records_of(plugins, tree))):
        value = getattr(each_plugin, hook)(tree, record, *(own[index] for own in per_plugin),
                                           *fixed, value)
    return value
