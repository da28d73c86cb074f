"""The search tree: fixed-capacity arrays, one row per independent search.

`B` searches, `N = max_nodes` node slots each, `K` child slots per node
(`K = A` in the dense layout). Node 0 is the root. Node slots are filled in
order: `num_nodes[b]` is the next free slot of row `b`.

Values are stored on an internal [-1, 1] scale, always from the point of view of
the player to move at the node. `value_range` says how the user's rewards and
values map onto it (see `to_internal_scale`); `summary()` answers in the
user's scale.

Edge statistics live on the child node (its visits, value sum, and the reward
and discount of the edge into it), never duplicated per edge. A child slot holds
the child's node index, `UNEXPANDED` (legal, not yet expanded) or `ILLEGAL`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional, Tuple

import chex
import jax
import jax.numpy as jnp

from mcts_jax.base import SearchSummary

ROOT_INDEX = 0
NO_PARENT = -1
UNEXPANDED = -1
ILLEGAL = -2
FREE_SLOT = -1  # a free slot of a graph's transposition table


def to_internal_scale(x: chex.Array, value_range: Optional[Tuple[float, float]]) -> chex.Array:
    """Maps a reward or value from `value_range` onto [-1, 1] (midpoint -> 0).

    Each reward is mapped by itself, as each value is: `value_range=(0, 1)`
    is a [-1, 1] game rescaled result by result (a move with no reward gives
    the midpoint, 0.5). Rewards that add up to a return are not mapped
    affinely by this; such returns use `value_range=None`.

    `value_range` None: unbounded returns (a single-player game's score, say
    2048's hundreds to thousands of points) are stored as they are. Nothing
    in the search then assumes a bound: PUCT and Gumbel read Q through their
    min-max normalising transforms, UCT normalises Q over the node and its
    visited children (`selection.uct_scores`), and the solver proves values
    only from fully proven children (no "best possible value" shortcut)."""
    if value_range is None:
        return x
    low, high = value_range
    if (low, high) == (-1.0, 1.0):
        return x
    return (x - low) * (2.0 / (high - low)) - 1.0


def to_user_scale(x: chex.Array, value_range: Optional[Tuple[float, float]]) -> chex.Array:
    """Inverse of `to_internal_scale`: [-1, 1] back to `value_range`."""
    if value_range is None:
        return x
    low, high = value_range
    if (low, high) == (-1.0, 1.0):
        return x
    return (x + 1.0) * ((high - low) / 2.0) + low


@dataclasses.dataclass(frozen=True)
class ArraySpec:
    """How one tree array is laid out, filled and moved; declared once, on
    the `Tree` field (`tree_array(...)`), and read by `init_tree`,
    `empty_like`, `phases.write_new_nodes` and `reuse.get_subtree`.

    Attributes:
      dtype: a dtype, or "node_index" (int16 while N fits, else int32).
      empty: what a free node slot holds.
      per_edge: [B, N, K] (one entry per child slot) instead of [B, N].
      node_index: holds node indices (renumbered when a subtree is re-rooted).
      at_new_root: what a re-rooted subtree's root holds (None: its own value).
      trailing: trailing dimensions of a per-node array ([B, N] + trailing).
    """

    dtype: Any
    empty: Any
    per_edge: bool = False
    node_index: bool = False
    at_new_root: Any = None
    trailing: Tuple[int, ...] = ()


def tree_array(dtype, empty, **layout) -> Any:
    """A `Tree` field holding a per-node or per-edge array (see `ArraySpec`)."""
    return dataclasses.field(metadata=dict(tree_array=ArraySpec(dtype, empty, **layout)))


@dataclasses.dataclass(frozen=True)
class Tree:
    """A batch of B search trees with N node slots and K child slots per node.

    The per-node arrays have shape [B, N], the per-edge arrays shape
    [B, N, K] (one entry per child slot); the other fields follow them.

    Attributes:
      node_visits: [B, N] int32, visits of the node; 1 when expanded plus 1
        for every simulation that passed through it. So a node's visits equal
        one plus the sum of its children's visits. 0 for a free slot.
      value_sums: [B, N] float32, sum of the values backed up through the
        node, from the point of view of the player to move at the node
        (internal scale).
      raw_values: [B, N] float32, the evaluator's value when the node was
        expanded (0 for a terminal node), same point of view.
      parents: [B, N] int32, parent node index; NO_PARENT (-1) for the root.
      actions_from_parent: [B, N] int32, the action id of the edge into the
        node.
      rewards: [B, N] float32, reward of the edge into the node, for the
        player who moved (internal scale).
      discounts: [B, N] float32, discount of the edge into the node (-1
        two-player, 0 terminal).
      is_terminal: [B, N] bool, the edge into the node ended the game
        (discount 0).
      solved: [B, N] bool, the node's exact (minimax) value is known: terminal
        nodes, and with the MCTS-solver, nodes proven from their children.
      solved_values: [B, N] float32, that exact value for the player to move
        at the node (internal scale); 0 where not solved.
      pruned: [B, N] bool, the node has more legal actions than child slots,
        so some got no slot (compact layout only; the solver then never
        proves the node from "all children proven").
      children: [B, N, K] int16 (int32 when N > 32767), the child's node
        index, UNEXPANDED or ILLEGAL.
      priors: [B, N, K] float32, prior probability of the slot's action (0 if
        illegal).
      plugin_records: tuple, one entry per plug-in of the search that made
        the tree (`SearchOptions.plugins`, plugin.py): the plug-in's own
        arrays, a pytree with leaves [B, N, ...] (None: it keeps none), or
        a record that says how it empties and re-roots (`emptied`,
        `rerooted`: plugin.py), which may hold other arrays too; () for a
        search without plug-ins. A graph search's arrays are its
        plug-in's record (`graph.GraphRecord`), read through the
        properties `edge_visits`, `position_keys` and `transposition_table`
        (None unless the search is a graph); so are the compact layout's
        slot ids (`children_actions`) and the kept prior logits
        (`prior_logits`).
      embeddings: pytree with leaves [B, N, ...], the state stored per node;
        with `replay_embeddings`, leaves [B, 1, ...]: the root's state only
        (other nodes' states are recomputed by replaying the actions from the
        root).
      num_nodes: [B] int32, node slots in use (the next free slot). Often
        fewer than N = num_simulations + 1: a simulation creates a node only
        when it expands a new edge, and one that ends on a terminal node
        already in the tree (it backs up that node's reward again:
        `SearchOptions.stop_at_terminal`), on a position already in the
        graph (`transpositions`) or in a full tree creates none. With
        `SearchOptions.node_per_simulation` (mctx's numbering) simulation i
        writes slot i + 1, left free when it creates nothing, and num_nodes
        is num_simulations + 1.
      extra_data: any pytree with leading [B] the search was given (as in
        mctx; Gumbel policies store `GumbelExtraData(root_gumbel [B, A])`),
        or None.
      num_actions: static int A, the size of the action space.
      value_range: static (low, high), the user's reward and value scale, or
        None for unbounded returns (stored as they are).
      replay_embeddings: static bool, embeddings are replayed, not stored.
      num_chance_outcomes: static int C, 0 unless the tree is stochastic
        (stochastic.py). A stochastic tree's edge ids run over the A
        decisions and then the C chance outcomes (`num_actions` is A + C):
        a decision node's children are afterstates (reached by ids < A) and
        an afterstate's children are the outcomes (ids A + c), their
        `priors` the outcome probabilities. The root is a decision node;
        `summary()` answers over the A decisions.
    """

    node_visits: chex.Array = tree_array(jnp.int32, 0)
    value_sums: chex.Array = tree_array(jnp.float32, 0.0)
    raw_values: chex.Array = tree_array(jnp.float32, 0.0)
    parents: chex.Array = tree_array(jnp.int32, NO_PARENT, node_index=True,
                                     at_new_root=NO_PARENT)
    actions_from_parent: chex.Array = tree_array(jnp.int32, -1, at_new_root=-1)
    rewards: chex.Array = tree_array(jnp.float32, 0.0, at_new_root=0.0)
    discounts: chex.Array = tree_array(jnp.float32, 0.0, at_new_root=0.0)
    is_terminal: chex.Array = tree_array(jnp.bool_, False)
    solved: chex.Array = tree_array(jnp.bool_, False)
    solved_values: chex.Array = tree_array(jnp.float32, 0.0)
    pruned: chex.Array = tree_array(jnp.bool_, False)
    children: chex.Array = tree_array("node_index", UNEXPANDED, per_edge=True,
                                      node_index=True)
    priors: chex.Array = tree_array(jnp.float32, 0.0, per_edge=True)
    plugin_records: Any = ()
    embeddings: Any = dataclasses.field(default=None)
    num_nodes: chex.Array = dataclasses.field(default=None)
    extra_data: Any = None
    num_actions: int = dataclasses.field(metadata=dict(static=True), default=0)
    value_range: Tuple[float, float] = dataclasses.field(
        metadata=dict(static=True), default=(-1.0, 1.0))
    replay_embeddings: bool = dataclasses.field(metadata=dict(static=True), default=False)
    num_chance_outcomes: int = dataclasses.field(metadata=dict(static=True), default=0)

    replace = dataclasses.replace

    @property
    def graph_record(self) -> Any:
        """The graph search's record among `plugin_records` (graph.py's
        `GraphRecord`: it says so with `is_graph_record`), or None."""
        return next((record for record in self.plugin_records
                     if getattr(record, "is_graph_record", False)), None)

    @property
    def is_graph(self) -> bool:
        """The search is a graph (`SearchOptions.transpositions`)."""
        return self.graph_record is not None

    @property
    def edge_visits(self) -> Optional[chex.Array]:
        """[B, N, K] int32, simulations through each edge; None unless the
        search is a graph (`SearchOptions.transpositions`, graph.py). In a
        graph a node can have several parents: `parents` and
        `actions_from_parent` name the first, a node's visits are 1 + the
        sum of its edge visits and its value sum is recomputed from its
        children at each backup."""
        record = self.graph_record
        return None if record is None else record.edge_visits

    @property
    def position_keys(self) -> Optional[chex.Array]:
        """[B, N, 2] uint32, the 64-bit key of each node's position; None
        unless the search is a graph."""
        record = self.graph_record
        return None if record is None else record.position_keys

    @property
    def transposition_table(self) -> Optional[chex.Array]:
        """[B, T] int32, each row's hash table from keys to nodes
        (`FREE_SLOT`: none), T the power of two >= 2N; None unless the
        search is a graph."""
        record = self.graph_record
        return None if record is None else record.transposition_table

    @property
    def children_actions(self) -> Optional[chex.Array]:
        """[B, N, K] the action id of each child slot, or None in the dense
        layout (slot k is action k). Compact layout (`K = max_children`,
        compact.py, which keeps it in its record `SlotActions`): int16
        (int32 when A >= 32767), the node's legal actions in increasing id
        order, then `A` (no action) in the unused slots."""
        return next((record.children_actions for record in self.plugin_records
                     if getattr(record, "is_slot_actions_record", False)), None)

    @property
    def prior_logits(self) -> Optional[chex.Array]:
        """[B, N, K] float32, the prior logits each node was given, as given
        (the recurrent_fn's, the root's after the policy's noise), read at
        its slots (0 in a node not yet expanded); None unless the search
        kept them (`SearchOptions.keep_prior_logits`: kept_prior_logits.py,
        whose record `KeptPriorLogits` holds them)."""
        return next((record.prior_logits for record in self.plugin_records
                     if getattr(record, "is_prior_logits_record", False)), None)

    @property
    def num_decisions(self) -> int:
        """The actions of a decision: A, less the chance outcomes' ids in a
        stochastic tree (where `num_actions` counts both)."""
        return self.num_actions - self.num_chance_outcomes

    @property
    def batch_size(self) -> int:
        """B, the number of independent searches."""
        return self.node_visits.shape[0]

    @property
    def max_nodes(self) -> int:
        """N, the node capacity of each search."""
        return self.node_visits.shape[1]

    @property
    def num_slots(self) -> int:
        """K, child slots per node (A in the dense layout)."""
        return self.children.shape[2]

    @property
    def max_children(self) -> Optional[int]:
        """K in the compact layout, None in the dense one."""
        return None if self.children_actions is None else self.num_slots

    def summary(self) -> SearchSummary:
        """Root statistics in action space [B, A] (see `SearchSummary`): every
        value and Q-value is from the point of view of the player to move at
        the root, in the tree's `value_range`. A stochastic root answers
        over its A decisions only."""
        stats, to_actions = root_actions_view(self)
        decisions = self.num_decisions
        visit_counts = to_actions(stats.visits, 0)[:, :decisions]
        qvalues = to_actions(jnp.where(stats.visits > 0,
                                       to_user_scale(stats.qvalues, self.value_range), 0.0),
                             0.0)[:, :decisions]
        total = jnp.sum(visit_counts, axis=-1, keepdims=True)
        visit_probs = visit_counts / jnp.maximum(total, 1)  # as `policy.choose_action`'s
        mean_value = self.value_sums[:, ROOT_INDEX] / jnp.maximum(
            self.node_visits[:, ROOT_INDEX], 1)
        proven_qvalues = jnp.where(stats.solved,
                                   to_user_scale(stats.solved_qvalues, self.value_range), 0.0)
        root_solved = self.solved[:, ROOT_INDEX]
        # A proven root's value is its exact value, not the mean of the
        # simulations that ran before (and around) the proof.
        value = jnp.where(root_solved, self.solved_values[:, ROOT_INDEX], mean_value)
        return SearchSummary(
            visit_counts=visit_counts,
            visit_probs=visit_probs.astype(jnp.float32),
            qvalues=qvalues,
            value=to_user_scale(value, self.value_range),
            proven=to_actions(stats.solved, False)[:, :decisions],
            proven_qvalues=to_actions(proven_qvalues, 0.0)[:, :decisions],
            root_proven=root_solved,
            root_proven_value=jnp.where(
                root_solved,
                to_user_scale(self.solved_values[:, ROOT_INDEX], self.value_range), 0.0),
        )


jax.tree_util.register_dataclass(Tree)


def source_of(tree: Any) -> Any:
    """The `Tree` behind a view of one (an object that carries it as
    `source_tree`, as `mcts_jax.mctx_compat.MctxTree` does); anything else as
    it is. Lets reuse, chance nodes and drawing take a view unchanged."""
    source = getattr(tree, "source_tree", None)
    if source is None and hasattr(tree, "source_tree"):
        raise ValueError(f"this {type(tree).__name__} carries no source tree (it was built "
                         "without one): it can be read, not continued or redrawn")
    return tree if source is None else source


# (name, spec) of every per-node and per-edge array of `Tree`, in order.
TREE_ARRAYS: Tuple[Tuple[str, ArraySpec], ...] = tuple(
    (field.name, field.metadata["tree_array"]) for field in dataclasses.fields(Tree)
    if "tree_array" in field.metadata)


def legal_mask(prior_logits: chex.Array, invalid_actions: Optional[chex.Array]) -> chex.Array:
    """[B, A] bool, True = legal (every action when `invalid_actions` is None)."""
    return (jnp.ones(prior_logits.shape, jnp.bool_) if invalid_actions is None
            else ~invalid_actions)


def batch_rows(batch_size: int) -> chex.Array:
    """[B] int32 row indices, used with a [B] node index to gather per row."""
    return jnp.arange(batch_size, dtype=jnp.int32)


def root_nodes(batch_size: int) -> chex.Array:
    """[B] int32, the root's node index (`ROOT_INDEX`) of each row: the
    `node` argument that gathers or scores the roots."""
    return jnp.full((batch_size,), ROOT_INDEX, jnp.int32)


def gather_nodes(array: chex.Array, node: chex.Array) -> chex.Array:
    """array[b, node[b], ...] for each row b: [B, N, ...] -> [B, ...]; with
    several nodes per row (`node` [B, P]), [B, P, ...]."""
    rows = batch_rows(array.shape[0]).reshape((-1,) + (1,) * (node.ndim - 1))
    return array[rows, node]


def gather_embeddings(tree: Tree, node: chex.Array) -> Any:
    """The embedding stored at `node` [B] (or [B, P]) of each row, leaves
    [B, ...] (or [B, P, ...])."""
    return jax.tree.map(functools.partial(gather_nodes, node=node), tree.embeddings)


@chex.dataclass(frozen=True)
class ChildrenStats:
    """What a selection rule reads about one node per row.

    It holds the node's K child slots ([B, K]) and the node itself ([B]). Public: a rule
    `rule(tree, node [B], stats) -> scores [B, K]` gets one of these.

    Values are on the tree's internal [-1, 1] scale (identical to the user's
    for the default `value_range=(-1, 1)`; `tree_lib.to_user_scale` maps them
    back), and every Q-value is from the point of view of the player to move
    at the node (the parent of the slots).

    Attributes:
      index: [B, K] child node index, UNEXPANDED or ILLEGAL.
      legal: [B, K] bool, the slot holds a legal action.
      actions: [B, K] int32 action id of the slot (`A` in an unused compact
        slot).
      visits: [B, K] int32 child visits (in a graph, the edge's), 0 if
        unexpanded.
      qvalues: [B, K] float32 reward + discount * mean child value, from the
        point of view of the parent's mover; 0 if unexpanded.
      priors: [B, K] float32 prior probability of each slot (0 where
        illegal).
      solved: [B, K] bool, the child's exact value is known.
      solved_qvalues: [B, K] float32 reward + discount * exact child value,
        parent's point of view; 0 where not solved.
      node_visits: [B] int32 visits of the node (1 + its children's visits).
      node_value: [B] float32 mean backed-up value of the node, for its mover.
      raw_value: [B] float32 the evaluator's value of the node, for its mover.
      depth: [B] int32 depth of the node (root = 0); 0 outside a descent.
      rng_key: [B] PRNG keys of this selection step (split per row and per
        step as mctx splits them), for rules that break ties at random;
        None outside a descent.
    """

    index: chex.Array
    legal: chex.Array
    actions: chex.Array
    visits: chex.Array
    qvalues: chex.Array
    priors: chex.Array
    solved: chex.Array
    solved_qvalues: chex.Array
    node_visits: chex.Array
    node_value: chex.Array
    raw_value: chex.Array
    depth: chex.Array
    rng_key: Optional[chex.Array] = None


def children_stats(tree: Tree, node: chex.Array, depth: Optional[chex.Array] = None,
                   rng_key: Optional[chex.Array] = None) -> ChildrenStats:
    """Gathers the statistics of `node` [B] and its children. Costs O(B K);
    what a rule does not read is never computed (XLA drops it)."""
    index = gather_nodes(tree.children, node)
    expanded = index >= 0
    safe_index = jnp.maximum(index, 0)

    take = functools.partial(jnp.take_along_axis, indices=safe_index, axis=1)

    child_visits = jnp.where(expanded, take(tree.node_visits), 0)
    mean_value = take(tree.value_sums) / jnp.maximum(child_visits, 1)
    # A graph's edges count their own visits; a tree's are the child's (a
    # tree with no plug-in record holds no graph).
    graph = tree.graph_record if tree.plugin_records else None
    visits = (child_visits if graph is None
              else jnp.where(expanded, gather_nodes(graph.edge_visits, node), 0))
    rewards, discounts = take(tree.rewards), take(tree.discounts)
    qvalues = jnp.where(expanded, rewards + discounts * mean_value, 0.0)
    solved = expanded & take(tree.solved)
    node_visits = gather_nodes(tree.node_visits, node)
    return ChildrenStats(
        index=index.astype(jnp.int32),
        legal=index != ILLEGAL,
        actions=slot_actions(tree, node),
        visits=visits,
        qvalues=qvalues,
        priors=gather_nodes(tree.priors, node),
        solved=solved,
        solved_qvalues=jnp.where(solved, rewards + discounts * take(tree.solved_values), 0.0),
        node_visits=node_visits,
        node_value=gather_nodes(tree.value_sums, node) / jnp.maximum(node_visits, 1),
        raw_value=gather_nodes(tree.raw_values, node),
        depth=jnp.zeros_like(node) if depth is None else depth,
        rng_key=rng_key,
    )


def slot_actions(tree: Tree, node: chex.Array) -> chex.Array:
    """[B, K] int32 action id of each child slot of `node` [B]."""
    if tree.children_actions is None:
        return jnp.broadcast_to(jnp.arange(tree.num_slots, dtype=jnp.int32),
                                (tree.batch_size, tree.num_slots))
    return gather_nodes(tree.children_actions, node).astype(jnp.int32)


def edge_actions(tree: Tree, node: chex.Array, slot: chex.Array) -> chex.Array:
    """int32 action id of child slot `slot` of `node` (both of leading shape
    [B] or [B, P]), in [0, A): an unused compact slot (it holds A) reads as
    A - 1, a placeholder that is never written."""
    if tree.children_actions is None:
        action = slot.astype(jnp.int32)
    else:
        rows = batch_rows(tree.batch_size).reshape((-1,) + (1,) * (node.ndim - 1))
        action = tree.children_actions[rows, node, slot].astype(jnp.int32)
    return jnp.minimum(action, tree.num_actions - 1)


def slots_to_actions(tree: Tree, node: chex.Array, per_slot: chex.Array, fill) -> chex.Array:
    """Scatters per-slot values [B, K] of `node` into action space [B, A]."""
    if tree.children_actions is None:
        return per_slot
    actions = slot_actions(tree, node)
    out = jnp.full((tree.batch_size, tree.num_actions), fill, per_slot.dtype)
    rows = batch_rows(tree.batch_size)[:, None]
    return out.at[rows, actions].set(per_slot, mode="drop")


def root_actions_view(tree: Tree):
    """(the roots' `ChildrenStats` [B, K], to_actions: per-slot [B, K] ->
    [B, A] with a fill value for the actions without a slot): what the
    summary and a final choice read. The roots' priors are read as a slice
    of their row (the same values as the gather): XLA follows a slice to
    where the row was written (`tree_search.run_policy`), not a gather."""
    root = root_nodes(tree.batch_size)
    stats = children_stats(tree, root).replace(priors=tree.priors[:, ROOT_INDEX])
    return stats, functools.partial(slots_to_actions, tree, root)


def log_probabilities(probs: chex.Array) -> chex.Array:
    """log(p) with the smallest positive float as the floor (about -87 in
    float32), so that `softmax` gives p back and 0 stays (almost) 0."""
    return jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))


def at_slots(tree: "Tree", slot_action_ids: chex.Array, per_action: chex.Array) -> chex.Array:
    """[B, A] per-action values read at each slot's action id [B, K] -> [B, K]
    in `tree`'s layout (`slot_values`: the values themselves in the dense
    layout; an unused compact slot, id A, reads 0)."""
    return slot_values(None if tree.children_actions is None else slot_action_ids, per_action)


def slot_values(slot_action_ids: Optional[chex.Array], per_action: chex.Array) -> chex.Array:
    """Per-action values [..., A] read at each child slot [..., K]: the
    values themselves in the dense layout (`slot_action_ids` None); an unused
    compact slot (id A) reads 0."""
    if slot_action_ids is None:
        return per_action
    num_actions = per_action.shape[-1]
    ids = slot_action_ids.astype(jnp.int32)
    values = jnp.take_along_axis(per_action, jnp.minimum(ids, num_actions - 1), axis=-1)
    return jnp.where(ids < num_actions, values, jnp.zeros((), per_action.dtype))


def masked_priors(prior_logits: chex.Array, legal: chex.Array) -> chex.Array:
    """Softmax of logits over the legal entries; 0 where illegal. [.., K]."""
    logits = jnp.where(legal, prior_logits, -jnp.inf)
    logits = logits - jnp.max(jnp.where(legal, logits, jnp.finfo(logits.dtype).min),
                              axis=-1, keepdims=True)
    weights = jnp.where(legal, jnp.exp(logits), 0.0)
    return weights / jnp.maximum(jnp.sum(weights, axis=-1, keepdims=True),
                                 jnp.finfo(weights.dtype).tiny)


def child_index_dtype(max_nodes: int):
    """int16 child indices while they fit (halves the largest array and the
    bytes every selection step reads), else int32."""
    return jnp.int16 if max_nodes <= jnp.iinfo(jnp.int16).max else jnp.int32


def child_action_dtype(num_actions: int):
    """int16 slot action ids while A and the filler A fit, else int32."""
    return jnp.int16 if num_actions < jnp.iinfo(jnp.int16).max else jnp.int32


@chex.dataclass(frozen=True)
class ChildSlots:
    """The K child slots of new nodes, leading shape S ([B] or [B, K]).

    Attributes:
      actions: S + [K] action id per slot, `A` in an unused slot; None in
        the dense layout (slot k is action k).
      priors: S + [K] float32 prior probability per slot, 0 where unused or
        illegal; they sum to 1 over the slots.
      codes: S + [K] UNEXPANDED (a legal action) or ILLEGAL, child-index dtype.
      pruned: S bool, some legal action got no slot.
      logits: S + [K] float32, the prior logits as given, read at each
        slot's action (0 in an unused slot), or None when none were given.
    """

    actions: Optional[chex.Array]
    priors: chex.Array
    codes: chex.Array
    pruned: chex.Array
    logits: Optional[chex.Array] = None


def dense_slots(priors: chex.Array, legal: chex.Array, index_dtype,
                logits: Optional[chex.Array] = None) -> ChildSlots:
    """The dense layout's child slots from priors and a legal mask in action
    space, S + [A]: slot k is action k (compact.py has the other layout)."""
    return ChildSlots(actions=None, priors=priors,
                      codes=jnp.where(legal, UNEXPANDED, ILLEGAL).astype(index_dtype),
                      pruned=jnp.zeros(priors.shape[:-1], jnp.bool_),
                      logits=None if logits is None else logits.astype(jnp.float32))


def empty_like(tree: Tree) -> Tree:
    """A tree of the same shapes and layout with every row empty (num_nodes 0)."""
    def fill(array, value):
        return jnp.full(array.shape, value, array.dtype)

    arrays = {name: fill(getattr(tree, name), spec.empty)
              for name, spec in TREE_ARRAYS}
    # A plug-in's free node slot holds 0, unless its record says how it
    # empties (`emptied()`: a graph's table is all free slots).
    records = tuple(record.emptied() if hasattr(record, "emptied")
                    else jax.tree.map(jnp.zeros_like, record)
                    for record in tree.plugin_records)
    return tree.replace(embeddings=jax.tree.map(jnp.zeros_like, tree.embeddings),
                        plugin_records=records, num_nodes=fill(tree.num_nodes, 0), **arrays)


def init_tree(
    root_value: chex.Array,
    root_slots: ChildSlots,
    root_embedding: Any,
    num_actions: int,
    max_nodes: int,
    value_range: Tuple[float, float],
    replay_embeddings: bool = False,
) -> Tree:
    """A fresh batch of trees holding only the root, visited once.

    Args:
      root_value: [B] value of the root for its mover, internal scale.
      root_slots: the root's child slots, `ChildSlots` [B, K]
        (`dense_slots`, or the compact layout's: compact.py, whose
        `actions` its plug-in's record keeps), made from
        its priors as searched (masked and noised); their codes' dtype is
        the tree's child-index dtype (`child_index_dtype(max_nodes)`).
      root_embedding: pytree with leaves [B, ...].
      num_actions: A, the size of the action space.
      max_nodes: N, the capacity of each tree.
      value_range: the user's value scale (static).
      replay_embeddings: store the root's embedding only.
    """
    batch_size, num_slots = root_slots.priors.shape
    index_dtype = root_slots.codes.dtype
    root_value = root_value.astype(jnp.float32)
    # What the root holds where it differs from an empty slot. What a
    # plug-in keeps of the root's slots (the compact layout's slot ids
    # `root_slots.actions`, the kept prior logits `root_slots.logits`) is in
    # its record, written by `tree_search.start_tree`.
    root_entries = dict(node_visits=1, value_sums=root_value, raw_values=root_value,
                        pruned=root_slots.pruned, children=root_slots.codes,
                        priors=root_slots.priors)
    arrays = {}
    for name, spec in TREE_ARRAYS:
        shape = (batch_size, max_nodes) + ((num_slots,) if spec.per_edge else spec.trailing)
        dtype = index_dtype if spec.dtype == "node_index" else spec.dtype
        array = jnp.full(shape, spec.empty, dtype)
        if name in root_entries:
            array = array.at[:, ROOT_INDEX].set(jnp.asarray(root_entries[name]).astype(dtype))
        arrays[name] = array

    stored_nodes = 1 if replay_embeddings else max_nodes

    def embedding_storage(leaf):
        leaf = jnp.asarray(leaf)
        storage = jnp.zeros((batch_size, stored_nodes) + leaf.shape[1:], leaf.dtype)
        return storage.at[:, ROOT_INDEX].set(leaf)

    return Tree(
        **arrays,
        embeddings=jax.tree.map(embedding_storage, root_embedding),
        num_nodes=jnp.ones((batch_size,), jnp.int32),
        num_actions=num_actions,
        value_range=value_range,
        replay_embeddings=replay_embeddings,
    )
