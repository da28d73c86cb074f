"""Monte Carlo graph search: one node per position (`SearchOptions(transpositions=True)`).

In board games many move orders reach the same position. A tree search
creates, evaluates and visits that position once per order; a graph search
keeps one node for it and lets every order share what was learned there.
With `transpositions=True` the search is a graph, as KataGo's Monte Carlo
graph search defines it:

- **Positions.** Every node stores a 64-bit key of its position (two uint32
  words, `position_keys [B, N, 2]`), computed from its embedding by
  `SearchOptions.position_key` (default: `hash_embedding`, a hash of every
  leaf of the embedding). A fixed-capacity hash table per row
  (`transposition_table [B, T]`, T the power of two >= 2N) maps keys to
  nodes, probed at `TABLE_PROBES` slots. A new edge whose
  position is in the table (and whose reward and discount are the node's)
  points to that node instead of creating one; a table whose probes are all
  taken creates the node without entering it (no sharing, still correct).
- **Edge visits apart from node visits.** `edge_visits [B, N, K]` count the
  simulations through each edge. A node's visits are `1 + sum of its edge
  visits`, and its value is recomputed from its children at every backup:
  `value_sums[n] = raw_values[n] + sum_c edge_visits[n, c] * (reward_c +
  discount_c * value_sums[c] / node_visits[c])`, so a node's value uses
  all that is known below each child, however the child was reached. A
  node is recomputed when a simulation passes through it: one whose child
  learned more through another parent keeps its older value until then.
  The rules read edge visits (`ChildrenStats.visits`) and the child's value.
- **No wasted descents.** A descent that takes an edge whose child has
  more visits than the edge stops at that child: its value already holds
  more than one more visit would add (the simulation counts the edge and
  recomputes the path).
- **Paths, not parents.** A node has many parents, so each descent records
  its path (`Path`), and the backup walks that path up. `parents` keeps the
  first parent (for drawing, replaying and re-rooting).
- **Repetitions.** An edge that would link to a node on its own path (a
  position repeating itself: chess, Go) instead creates a terminal node
  worth `SearchOptions.repetition_value` (a draw by default), never proven;
  a descent that meets a node already on its path through an edge made
  elsewhere stops there. No descent loops.

With `transpositions=False` (the default) none of this exists and the
search is the same program as a tree search.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import plugin
from mcts_jax import tree as tree_lib
from mcts_jax.plugin import Plugins

# Table slots probed per lookup or insertion (double hashing: a key's
# probes step through the table by an odd stride of its own, so keys that
# share a first slot part ways at once). At most half full, a table fails
# to place a key with probability below 2^-16.
TABLE_PROBES = 16


def table_size(max_nodes: int) -> int:
    """T, the slots of a row's transposition table: the power of two >= 2N
    (the table stays at most half full)."""
    return 1 << max(2 * max_nodes - 1, 1).bit_length()


# ---- position keys ----------------------------------------------------------------------------

def _mix32(x: chex.Array) -> chex.Array:
    """MurmurHash3's 32-bit finaliser: every input bit changes about half of
    the output bits (uint32 in, uint32 out)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * jnp.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def _as_words(leaf: chex.Array, batch: int) -> chex.Array:
    """[M, ...] -> [M, W] uint32: every entry as one 32-bit word (floats by
    their bits, with -0.0 read as 0.0)."""
    leaf = jnp.asarray(leaf)
    if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
        leaf = jax.random.key_data(leaf)
    if jnp.issubdtype(leaf.dtype, jnp.floating):
        leaf = jax.lax.bitcast_convert_type(leaf.astype(jnp.float32) + 0.0, jnp.uint32)
    elif leaf.dtype == jnp.bool_ or jnp.issubdtype(leaf.dtype, jnp.unsignedinteger):
        leaf = leaf.astype(jnp.uint32)
    else:
        leaf = jax.lax.bitcast_convert_type(leaf.astype(jnp.int32), jnp.uint32)
    return leaf.reshape(batch, -1)


def hash_embedding(embedding: Any) -> chex.Array:
    """A 64-bit key of each state of a batch: [M, 2] uint32 for an embedding
    whose leaves lead with [M].

    Each entry of each leaf is mixed with its position and summed (a
    Zobrist-style hash, two independent 32-bit lanes), so two states get
    equal keys exactly when every entry is equal, but for a collision
    probability of about 2^-64 per pair. The default
    `SearchOptions.position_key`: right for a deterministic simulator whose
    embedding is its state; a learned model's continuous embeddings almost
    never repeat (no harm, little sharing).
    """
    leaves = jax.tree.leaves(embedding)
    if not leaves:
        raise ValueError("hash_embedding needs an embedding with at least one array leaf")
    batch = jnp.shape(leaves[0])[0]
    words = jnp.concatenate([_as_words(leaf, batch) for leaf in leaves], axis=1)
    position = jnp.arange(words.shape[1], dtype=jnp.uint32)[None, :]
    lanes = []
    for seed in (0x9E3779B9, 0x7F4A7C15):
        salt = _mix32(position * jnp.uint32(0x9E3779B9) + jnp.uint32(seed))
        lanes.append(jnp.sum(_mix32(words ^ salt) * jnp.uint32(2) + salt, axis=1,
                             dtype=jnp.uint32))
    return jnp.stack(lanes, axis=1)


def key_of_position(options: Any) -> Callable:
    """The position key function of a graph search with `options`
    (`SearchOptions.position_key`, or `hash_embedding`)."""
    return hash_embedding if options.position_key is None else options.position_key


def position_keys_of(position_key, embedding: Any, batch: int) -> chex.Array:
    """`position_key(embedding)` checked: [M, 2] uint32."""
    keys = position_key(embedding)
    if jnp.shape(keys) != (batch, 2) or jnp.asarray(keys).dtype != jnp.uint32:
        raise ValueError(f"position_key must return [M, 2] uint32 keys (M = {batch} states), "
                         f"got {jnp.shape(keys)} {getattr(keys, 'dtype', type(keys))}; "
                         f"mcts_jax.hash_embedding makes such keys from any pytree")
    return jnp.asarray(keys)


def _home_slot(keys: chex.Array, table_slots: int) -> chex.Array:
    """The first table slot probed for `keys` [..., 2]."""
    return (keys[..., 0] ^ _mix32(keys[..., 1])) & jnp.uint32(table_slots - 1)


def _probe_slots(keys: chex.Array, table_slots: int) -> chex.Array:
    """[..., TABLE_PROBES] int32: the table slots probed for `keys` [..., 2],
    the home slot and then steps of an odd stride drawn from the key."""
    stride = _mix32(keys[..., 0] + jnp.uint32(0x632BE5AB)) | jnp.uint32(1)
    steps = jnp.arange(TABLE_PROBES, dtype=jnp.uint32)
    slots = _home_slot(keys, table_slots)[..., None] + stride[..., None] * steps
    return (slots & jnp.uint32(table_slots - 1)).astype(jnp.int32)


@chex.dataclass(frozen=True)
class GraphRecord:
    """A graph search's own arrays (`GraphSearch`'s plug-in record, in
    `tree.plugin_records`; the tree reads them as `tree.edge_visits`,
    `tree.position_keys` and `tree.transposition_table`).

    Attributes:
      edge_visits: [B, N, K] int32, simulations through each edge.
      position_keys: [B, N, 2] uint32, the 64-bit key of each node's position.
      transposition_table: [B, T] int32, each row's hash table from keys to
        nodes (`tree_lib.FREE_SLOT`: a free slot), T the power of two >= 2N.
    """

    edge_visits: chex.Array
    position_keys: chex.Array
    transposition_table: chex.Array
    is_graph_record = True  # how the tree finds it (`Tree.graph_record`)

    def emptied(self) -> "GraphRecord":
        """The record of an emptied tree (`tree.empty_like`): no edge
        visits, no keys, every table slot free."""
        return self.replace(edge_visits=jnp.zeros_like(self.edge_visits),
                            position_keys=jnp.zeros_like(self.position_keys),
                            transposition_table=jnp.full_like(self.transposition_table,
                                                              tree_lib.FREE_SLOT))

    def rerooted(self, emptied: "GraphRecord", move, keep: chex.Array,
                 new_index: chex.Array) -> "GraphRecord":
        """The record after reuse re-roots the tree (`reuse.get_subtree`):
        the kept nodes' edge visits and keys moved to their new slots
        (`move(array, default)`), and the table keeping the kept nodes
        (`keep` [B, N]) under their new numbers (`new_index` [B, N]), every
        other slot free."""
        table = self.transposition_table
        entry = jnp.maximum(table, 0)
        kept_entry = (table >= 0) & jnp.take_along_axis(keep, entry, axis=1)
        return self.replace(
            edge_visits=move(self.edge_visits, emptied.edge_visits),
            position_keys=move(self.position_keys, emptied.position_keys),
            transposition_table=jnp.where(kept_entry,
                                          jnp.take_along_axis(new_index, entry, axis=1),
                                          tree_lib.FREE_SLOT))


def start_record(tree: tree_lib.Tree, root_keys: chex.Array) -> GraphRecord:
    """The record of a fresh tree (the root only, `tree_lib.init_tree`):
    edge visits 0, the root's key `root_keys` [B, 2] stored and entered in
    an otherwise empty table."""
    batch_size, max_nodes = tree.batch_size, tree.max_nodes
    rows = tree_lib.batch_rows(batch_size)
    table = jnp.full((batch_size, table_size(max_nodes)), tree_lib.FREE_SLOT, jnp.int32)
    return GraphRecord(
        edge_visits=jnp.zeros(tree.children.shape, jnp.int32),
        position_keys=jnp.zeros((batch_size, max_nodes, 2), jnp.uint32).at[
            :, tree_lib.ROOT_INDEX].set(root_keys),
        transposition_table=table.at[
            rows, _home_slot(root_keys, table.shape[1]).astype(jnp.int32)].set(
                tree_lib.ROOT_INDEX))


def with_graph(tree: tree_lib.Tree, **arrays) -> tree_lib.Tree:
    """`tree` with the named arrays of its graph record replaced."""
    records = tuple(record.replace(**arrays) if isinstance(record, GraphRecord) else record
                    for record in tree.plugin_records)
    return tree.replace(plugin_records=records)


# ---- finding and entering positions -------------------------------------------------------

class Lookup(NamedTuple):
    """A probe of each row's table for one key, all [B]: the node holding the
    key (where `found`), and a free slot to enter it (where `has_room`)."""

    found: chex.Array
    node: chex.Array
    has_room: chex.Array
    free_slot: chex.Array


def lookup(tree: tree_lib.Tree, keys: chex.Array, reward: chex.Array,
           discount: chex.Array) -> Lookup:
    """Probes `TABLE_PROBES` slots of each row's table for `keys` [B, 2]. A
    node matches when its key, and the reward and discount of the edge into
    it, equal those given ([B], internal scale): an edge is shared only
    where it carries the same transition values (the root, which no edge
    enters, matches on its key alone)."""
    table = tree.transposition_table
    rows = tree_lib.batch_rows(tree.batch_size)[:, None]
    probes = _probe_slots(keys, table.shape[1])                              # [B, P]
    nodes = table[rows, probes]
    safe = jnp.maximum(nodes, 0)
    # The root has no edge into it: its position matches on the key alone
    # (an edge back to it always closes a cycle, see `on_path`).
    same_edge = ((tree.rewards[rows, safe] == reward[:, None])
                 & (tree.discounts[rows, safe] == discount[:, None])) | (nodes == 0)
    match = ((nodes >= 0)
             & jnp.all(tree.position_keys[rows, safe] == keys[:, None, :], axis=-1)
             & same_edge)
    free = nodes < 0
    first_match = jnp.argmax(match, axis=-1)
    first_free = jnp.argmax(free, axis=-1)
    rows = rows[:, 0]
    return Lookup(found=jnp.any(match, axis=-1), node=nodes[rows, first_match],
                  has_room=jnp.any(free, axis=-1), free_slot=probes[rows, first_free])


class Linked(NamedTuple):
    """Where each of E new edges per row leads, all [B, E]: `target`, the
    node it points to (new or found; >= N where nothing could be written),
    `created` (a new node is written at `target`), `repetition` (that new
    node repeats a position of its own path) and the rows' `table`."""

    target: chex.Array
    created: chex.Array
    repetition: chex.Array
    table: chex.Array


def link_edges(tree: tree_lib.Tree, keys: chex.Array, reward: chex.Array,
               discount: chex.Array, creates: chex.Array,
               on_path: Optional[Callable] = None) -> Linked:
    """Decides, edge after edge, where each of E new edges per row leads
    (keys [B, E, 2]; reward, discount, creates [B, E]): to the node already
    holding its position, or to a new node in the row's next free slot,
    entered in the table. `on_path(node [B], e) -> [B] bool` says whether a
    found node lies on the path of edge e: such an edge closes a cycle and
    gets a new (repetition) node instead. Edges are taken in order, so a
    later edge finds the position of an earlier one of the same step.
    With E > 1 the keys, rewards and discounts of the new nodes are written
    to `tree` here (for those later lookups); the rest, and all of a single
    edge's node, is `phases.expand`'s."""
    batch_size, num_edges = creates.shape
    rows = tree_lib.batch_rows(batch_size)
    max_nodes = tree.max_nodes

    def one_edge(e, carry):
        tree, next_free, target, created, repetition = carry
        key_e = keys[:, e]
        found = lookup(tree, key_e, reward[:, e], discount[:, e])
        cycle = (found.found & on_path(found.node, e) if on_path is not None
                 else jnp.zeros_like(found.found))
        link = creates[:, e] & found.found & ~cycle
        create = creates[:, e] & ~link & (next_free < max_nodes)
        new_node = jnp.where(create, next_free, max_nodes)
        enter = create & found.has_room & ~cycle
        tree = with_graph(tree, transposition_table=tree.transposition_table.at[
            rows, jnp.where(enter, found.free_slot, tree.transposition_table.shape[1])
        ].set(new_node, mode="drop"))
        if num_edges > 1:  # what the later edges' lookups read of this new node
            tree = with_graph(
                tree.replace(
                    rewards=tree.rewards.at[rows, new_node].set(reward[:, e], mode="drop"),
                    discounts=tree.discounts.at[rows, new_node].set(discount[:, e],
                                                                    mode="drop")),
                position_keys=tree.position_keys.at[rows, new_node].set(key_e, mode="drop"))
        target = target.at[:, e].set(jnp.where(link, found.node, new_node))
        return (tree, next_free + create.astype(jnp.int32), target,
                created.at[:, e].set(create), repetition.at[:, e].set(create & cycle))

    init = (tree, tree.num_nodes, jnp.full((batch_size, num_edges), max_nodes, jnp.int32),
            jnp.zeros((batch_size, num_edges), jnp.bool_),
            jnp.zeros((batch_size, num_edges), jnp.bool_))
    if num_edges == 1:
        tree, _, target, created, repetition = one_edge(0, init)
    else:
        tree, _, target, created, repetition = jax.lax.fori_loop(0, num_edges, one_edge, init)
    return Linked(target=target, created=created, repetition=repetition,
                  table=tree.transposition_table)


# ---- the path of a descent --------------------------------------------------------------------

class Path(NamedTuple):
    """The path of each descent of a step, leading shape S ([B] or [B, P]):
    `entries` S + [L], at each depth the node reached and the child slot
    of its parent that led there, packed as `node * K + slot` (the root at
    depth 0: 0), valid up to the path's depth; `marks` [B, N] int32, the
    stamp of the last descent that entered each node, and `stamp` (S,
    int32) this descent's, so that "is this node on my path" costs O(1).
    The buffers live through the whole search (written, never cleared: a
    descent reads only what it wrote)."""

    entries: chex.Array
    marks: chex.Array
    stamp: chex.Array


def empty_path(lead_shape, max_depth: int, max_nodes: int) -> Path:
    """Path buffers for descents of leading shape `lead_shape` ([B] or
    [B, P]); L = `max_depth` + 2 (the root and a node the step adds)."""
    return Path(entries=jnp.zeros(tuple(lead_shape) + (max_depth + 2,), jnp.int32),
                marks=jnp.zeros((lead_shape[0], max_nodes), jnp.int32),
                stamp=jnp.zeros(tuple(lead_shape), jnp.int32))


def path_step(path: Path, depth: chex.Array, num_slots: int):
    """(node, the slot of its parent that led to it) at `depth` of each path."""
    entry = jnp.take_along_axis(path.entries, depth[..., None], axis=-1)[..., 0]
    return entry // num_slots, entry % num_slots


def start_descent(path: Path, stamp: chex.Array) -> Path:
    """The buffers of a new descent from the root (buffers [B, L]) with its
    `stamp` (> every earlier one): the root at depth 0, marked."""
    rows = tree_lib.batch_rows(path.entries.shape[0])
    stamp = jnp.broadcast_to(jnp.asarray(stamp, jnp.int32), path.stamp.shape)
    return Path(entries=path.entries.at[:, 0].set(tree_lib.ROOT_INDEX),
                marks=path.marks.at[rows, tree_lib.ROOT_INDEX].set(stamp), stamp=stamp)


def on_path(path: Path, node: chex.Array) -> chex.Array:
    """bool like `node` ([B], for one descent's buffers): `node` is on the
    descent's path (the root always; another node when it was entered
    under this descent's stamp). With P paths a step, a node shared with a
    later path of the step carries that path's stamp: a cycle there goes
    unseen until the depth limit."""
    rows = tree_lib.batch_rows(node.shape[0])
    return (node == tree_lib.ROOT_INDEX) | (
        (node >= 0) & (path.marks[rows, jnp.maximum(node, 0)] == path.stamp))


def record_step(path: Path, depth: chex.Array, slot: chex.Array, child: chex.Array,
                moves: chex.Array, marks: chex.Array, num_slots: int) -> Path:
    """The path (buffers [B, L]) with `child`, reached through `slot`, at
    depth `depth + 1` where the descent `moves` into it (`append_node`), and
    marked where `marks` (all [B]). The caller leaves a child already on the
    path (`on_path`) out of `marks`: it is marked already, and the write then
    depends on the read, so XLA writes the marks in place instead of
    copying [B, N] at every step."""
    rows = tree_lib.batch_rows(depth.shape[0])
    path = append_node(path, depth, child, slot, moves, num_slots)
    return path._replace(marks=path.marks.at[
        rows, jnp.where(marks, child, path.marks.shape[1])].set(path.stamp, mode="drop"))


def append_node(path: Path, depth: chex.Array, node: chex.Array, slot: chex.Array,
                where: chex.Array, num_slots: int) -> Path:
    """The path with `node`, reached through `slot`, put at depth `depth + 1`
    where `where` (the node a step's new edge points to); `depth`, `node`,
    `slot`, `where` of the paths' leading shape ([B] or [B, P])."""
    length = path.entries.shape[-1]
    flat = path.entries.reshape(-1, length)
    lanes = jnp.arange(flat.shape[0], dtype=jnp.int32)
    at = jnp.where(where, depth + 1, length).reshape(-1)
    flat = flat.at[lanes, at].set((node * num_slots + slot).reshape(-1), mode="drop")
    return path._replace(entries=flat.reshape(path.entries.shape))


# ---- the backup of a graph ----------------------------------------------------------------------

def recomputed(tree: tree_lib.Tree, node_visits, value_sums, edge_visits,
               node: chex.Array):
    """(visits, value sum) of `node` ([B], or [B, P] paths) recomputed from
    its children as the statistics `node_visits`, `value_sums`, `edge_visits`
    stand: `1 + sum of its edge visits` and `raw value + sum of edge visits x
    the edge's Q`, Q read as every rule reads it (`tree_lib.children_stats`;
    a terminal or unexpanded node keeps its raw value)."""
    now = with_graph(tree.replace(node_visits=node_visits, value_sums=value_sums),
                     edge_visits=edge_visits)

    def one(node):
        stats = tree_lib.children_stats(now, node)
        visits = 1 + jnp.sum(stats.visits, axis=-1, dtype=jnp.int32)
        return visits, stats.raw_value + jnp.sum(stats.visits * stats.qvalues, axis=-1)

    return one(node) if node.ndim == 1 else jax.vmap(one, in_axes=1, out_axes=1)(node)


def stops_at_child(child: chex.Array, edge_visits: chex.Array,
                   node_visits: chex.Array) -> chex.Array:
    """[B] bool: the edge (its `edge_visits` [B]) leads to a node `child`
    [B] that has more visits than the edge (its value already holds more
    than this descent would add)."""
    rows = tree_lib.batch_rows(child.shape[0])
    return (child >= 0) & (edge_visits < node_visits[rows, jnp.maximum(child, 0)])


# ---- expanding and backing up a graph (the phases call these) ----------------------------

def link_new_nodes(tree: tree_lib.Tree, new: Any, keys: chex.Array, creates: chex.Array,
                   edge_paths: Optional[Path], repetition_value: float):
    """A graph search's expansion (`GraphSearch.link`): where each edge
    (`creates` [B, E]) leads (`link_edges`), and the new nodes as written
    (`phases.NewNodes`), a repetition node made terminal, unproven and worth
    `repetition_value` (internal scale). Returns (tree with the table, new
    nodes, the node each edge points to [B, E], created [B, E])."""
    edge_on_path = None
    if edge_paths is not None:
        def edge_on_path(node, e):
            stamp = edge_paths.stamp[:, jnp.minimum(e, edge_paths.stamp.shape[1] - 1)]
            return on_path(edge_paths._replace(stamp=stamp), node)

    linked = link_edges(tree, keys, new.reward, new.discount, creates, edge_on_path)
    repetition = linked.repetition
    new = new.replace(
        terminal=new.terminal | repetition,
        value=jnp.where(repetition, repetition_value, new.value),
        slots=new.slots.replace(
            codes=jnp.where(repetition[..., None], tree_lib.ILLEGAL, new.slots.codes).astype(
                new.slots.codes.dtype),
            priors=jnp.where(repetition[..., None], 0.0, new.slots.priors)),
        solved=new.terminal & ~repetition)
    return (with_graph(tree, transposition_table=linked.table), new, linked.target,
            linked.created)


class GraphBackupCarry(NamedTuple):
    """The carry of `backup_graph`'s loop: the statistics being written
    ([B, N], edge visits [B, N, K]), what each plug-in carries (a tuple in
    plug-in order), the depth on each path of the node being updated (-1
    once past the root), the slot through which the path left that node
    (read one depth below)."""

    node_visits: chex.Array
    value_sums: chex.Array
    edge_visits: chex.Array
    plugin_states: tuple
    depth: chex.Array
    slot_below: chex.Array


def backup_graph(tree: tree_lib.Tree, update: Any, path: Path, last: chex.Array,
                 plugins: Plugins) -> tree_lib.Tree:
    """A graph search's backup (`GraphSearch.backup`; `update` a
    `plugin.Backup`): walks each path (`path`, leading shape like
    `update.count`) from its last node (at depth `last`) up to the root.
    Every edge on the way gains
    `update.count` visits, and every node on the way is recomputed from its
    children (`recomputed`: visits 1 + its edge visits, value its raw
    value plus its edges' visits times their children's Q), then shown to
    each plug-in (`back_up_node`). Paths of one step ([B, P]) that share an
    edge add up; a path that adds no visit does not walk."""
    max_nodes = tree.max_nodes
    count = update.count
    rows = tree_lib.batch_rows(tree.batch_size).reshape((-1,) + (1,) * (count.ndim - 1))

    def body(state: GraphBackupCarry) -> GraphBackupCarry:
        on_path = state.depth >= 0
        node, slot_above = path_step(path, jnp.maximum(state.depth, 0), tree.num_slots)
        below = on_path & (state.depth < last)  # the edge to the next node of the path
        edge_visits = state.edge_visits.at[
            rows, jnp.where(below, node, max_nodes), state.slot_below].add(count, mode="drop")
        visits, value = recomputed(tree, state.node_visits, state.value_sums,
                                         edge_visits, node)
        # The writes depend on the reads (a recomputed value is never NaN), so
        # XLA updates the carried arrays in place instead of copying them.
        write_at = jnp.where(on_path & ~jnp.isnan(value), node, max_nodes)
        plugin_states = plugin.each(plugins, "back_up_node", tree, node, on_path,
                                    per_plugin=(state.plugin_states,), with_record=False)
        return GraphBackupCarry(
            node_visits=state.node_visits.at[rows, write_at].set(visits, mode="drop"),
            value_sums=state.value_sums.at[rows, write_at].set(value, mode="drop"),
            edge_visits=edge_visits, plugin_states=plugin_states,
            depth=jnp.where(on_path, state.depth - 1, -1), slot_below=slot_above)

    walks = update.count > 0
    state = GraphBackupCarry(node_visits=tree.node_visits, value_sums=tree.value_sums,
                             edge_visits=tree.edge_visits,
                             plugin_states=plugin.each(plugins, "backup_state", tree),
                             depth=jnp.where(walks, last, -1), slot_below=jnp.zeros_like(last))
    state = jax.lax.while_loop(lambda state: jnp.any(state.depth >= 0), body, state)
    tree = with_graph(tree.replace(node_visits=state.node_visits, value_sums=state.value_sums),
                      edge_visits=state.edge_visits)
    return plugin.after_backup(plugins, tree, state.plugin_states)


# ---- the plug-in ----------------------------------------------------------------------------

class GraphWalk(NamedTuple):
    """What a graph search carries from one simulation to the next, leading
    shape S ([B] one path per step, [B, P] P paths): the descents' `path`
    buffers and the `depth` [S] of each path's last node."""

    path: Path
    depth: chex.Array


@dataclasses.dataclass(frozen=True)
class GraphSearch(plugin.SearchPlugin):
    """Monte Carlo graph search as a plug-in of the search loop (the module
    docstring says what it does); `SearchOptions(transpositions=True)` turns
    it on (`tree_search.search_plugins` builds it from the resolved options).
    Its arrays are its record (`GraphRecord`: `position_keys`,
    `transposition_table`, `edge_visits`, which the tree reads as
    properties of the same names); its hooks: a descent records its
    path and stops at a child that knows more or repeats the path, a full
    graph may still link, a new edge finds its position's node, the path's
    last step is recorded, and the backup walks the recorded paths.

    Attributes:
      max_depth: the resolved options' `max_depth` (N when unlimited; path buffers hold
        max_depth + 2 nodes).
      max_nodes: the capacity N.
      key_of_position: `embedding [M, ...] -> [M, 2] uint32`.
      repetition_value: a repetition's value on the internal scale.
      expand_all: every child of a leaf is created at once (each child
        reached is one visit of its edge; the path ends at the leaf).
    """

    max_depth: int
    max_nodes: int
    key_of_position: Callable
    repetition_value: float = 0.0
    expand_all: bool = False

    @classmethod
    def of(cls, options: Any) -> "GraphSearch":
        """The plug-in of a search with resolved `options`."""
        return cls(max_depth=options.max_depth, max_nodes=options.max_nodes,
                   key_of_position=key_of_position(options),
                   repetition_value=options.repetition_value_internal(),
                   expand_all=options.expand_all)

    def init_record(self, tree) -> GraphRecord:
        """The fresh tree's record: its root's position key entered (from
        the root's stored embedding, node 0 of every row)."""
        root_embedding = jax.tree.map(lambda leaf: leaf[:, tree_lib.ROOT_INDEX], tree.embeddings)
        return start_record(tree, position_keys_of(self.key_of_position, root_embedding,
                                                   tree.batch_size))

    def after_backup(self, tree, state) -> tuple:
        """The record as the backup walk left it in the tree (what the walk
        carried for this plug-in is the record from before it)."""
        return tree, tree.graph_record

    def search_state(self, tree, record, lead_shape) -> GraphWalk:
        return GraphWalk(path=empty_path(lead_shape, self.max_depth, self.max_nodes),
                         depth=jnp.zeros(lead_shape, jnp.int32))

    def start_descent(self, tree, record, state: GraphWalk, path, stamp) -> Path:
        """Path `path`'s buffers (all of them with one path per step) started at the root."""
        buffers = state.path
        if path is not None:  # path p's own buffers, the shared marks
            buffers = Path(entries=buffers.entries[:, path], marks=buffers.marks,
                           stamp=buffers.stamp[:, path])
        return start_descent(buffers, stamp)

    def descend(self, tree, record, descent: Path, depth, slot, child, edge_visits, moves,
                stops):
        """Stop at a child that knows more than its edge, or that repeats the path."""
        repeats = on_path(descent, child)
        knows_more = stops_at_child(child, edge_visits, tree.node_visits)
        descent = record_step(descent, depth, slot, child, moves, moves & ~repeats,
                              tree.num_slots)
        return descent, stops | (knows_more | repeats)

    def end_descent(self, tree, record, state: GraphWalk, descent: Path, path,
                    depth) -> GraphWalk:
        if path is None:
            return GraphWalk(path=descent, depth=depth)
        return GraphWalk(
            path=Path(entries=state.path.entries.at[:, path].set(descent.entries),
                      marks=descent.marks,
                      stamp=state.path.stamp.at[:, path].set(descent.stamp)),
            depth=state.depth.at[:, path].set(depth))

    def has_room(self, tree, record, room):
        """A full graph may still link to a known position."""
        return jnp.ones_like(room)

    def link(self, tree, record, state: GraphWalk, parent, slot, creates, new, embedding):
        """Each new edge points to its position's node where the row holds
        it (`link_new_nodes`); a new node is written with one visit (its own
        value) and its position key; with `expand_all` each edge reached
        counts one visit."""
        edge_shape = creates.shape
        size = edge_shape[0] * edge_shape[1]
        flat = jax.tree.map(lambda x: x.reshape((size,) + x.shape[2:]), embedding)
        keys = position_keys_of(self.key_of_position, flat, size).reshape(edge_shape + (2,))
        paths = state.path
        if paths.stamp.ndim == 1:  # one path per step: its stamp for each of the E edges
            paths = paths._replace(stamp=paths.stamp[:, None])
        tree, new, index, created = link_new_nodes(tree, new, keys, creates, paths,
                                                   self.repetition_value)
        rows = tree_lib.batch_rows(tree.batch_size)[:, None]
        max_nodes = tree.max_nodes
        tree = with_graph(tree, position_keys=tree.position_keys.at[
            rows, jnp.where(created, index, max_nodes)].set(keys, mode="drop"))
        if self.expand_all:  # each child reached is one visit of its edge
            points = creates & (index < max_nodes)
            tree = with_graph(tree, edge_visits=tree.edge_visits.at[
                rows, jnp.where(points, parent, max_nodes), slot].add(1, mode="drop"))
        return tree, new, index, created, 1

    def backs_up(self, tree, record, state: GraphWalk, slot, target, reaches) -> GraphWalk:
        """The path goes on to the node the edge leads to (created or found;
        with expand_all the path ends at the leaf: `link` counted each
        child's edge)."""
        return GraphWalk(
            path=append_node(state.path, state.depth, target, slot, reaches, tree.num_slots),
            depth=jnp.where(reaches, state.depth + 1, state.depth))

    def backup(self, tree, record, state: GraphWalk, update, plugins):
        return backup_graph(tree, update, state.path, state.depth, plugins)


# ---- re-rooting a graph ----------------------------------------------------------------------

def reachable(tree: tree_lib.Tree, start: chex.Array, rows_kept: chex.Array):
    """The nodes reachable from `start` [B] (rows where `rows_kept` [B]),
    found round by round along the children (as many rounds as the deepest
    node is far from `start`, each O(N K) per row: once per move, never in
    a search). Returns (kept [B, N] bool, parent [B, N] int32: for each kept
    node but `start`, a kept parent one round nearer to `start` (so the
    chain of parents reaches `start`), slot [B, N] int32: the parent's slot
    that leads to it)."""
    batch_size, max_nodes, num_slots = tree.children.shape
    node_ids = jnp.arange(max_nodes, dtype=jnp.int32)[None, :]
    kept = (node_ids == start[:, None]) & rows_kept[:, None]
    children = tree.children.astype(jnp.int32)
    # Edge (n, k) as one code n * K + k, so that one scatter picks a parent
    # and its slot together.
    codes = (node_ids[:, :, None] * num_slots
             + jnp.arange(num_slots, dtype=jnp.int32)[None, None, :])
    rows = tree_lib.batch_rows(batch_size)[:, None, None]

    def one_round(state):
        kept, via, _ = state
        leads = kept[:, :, None] & (children >= 0)
        target = jnp.where(leads, children, max_nodes)
        reached = jnp.zeros_like(kept).at[rows, target].set(True, mode="drop")
        new = reached & ~kept
        offered = jnp.full(kept.shape, -1, jnp.int32).at[rows, target].max(codes, mode="drop")
        return kept | new, jnp.where(new, offered, via), jnp.any(new)

    # The initial carry derives from `kept` (as the loop's output does), so
    # that the loop also runs inside a shard_map over rows.
    no_parent = jnp.where(kept, -1, -1).astype(jnp.int32)
    kept, via, _ = jax.lax.while_loop(lambda state: state[2], one_round,
                                      (kept, no_parent, jnp.any(kept)))
    return kept, jnp.where(via >= 0, via // num_slots, -1), jnp.maximum(via, 0) % num_slots
