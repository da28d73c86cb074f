"""mctx's view of a search tree: `MctxTree`, mctx's `Tree` field for field.

Our `Tree` keeps each edge's statistics once, on the child node, and a
stochastic tree's edges in one id space of A decisions and C outcomes.
mctx's `Tree` keeps [B, N, A] arrays per edge. The mctx-signature functions
(`muzero_policy`, `gumbel_muzero_policy`, `stochastic_muzero_policy`, and
`search` called with mctx's keywords) answer with `mctx_view(tree)`, whose
arrays have mctx's names, shapes, dtypes, sentinels and values:

- `node_visits` [B, N] int32, `raw_values`, `node_values` [B, N] float32
  (0 in a free slot), `parents`, `action_from_parent` [B, N] int32 (-1 for
  the root and free slots);
- `children_index` [B, N, A] int32 (-1, `UNVISITED`, where not expanded),
  `children_prior_logits` (the logits each node was given, as given; 0 in a
  node not yet expanded), `children_visits`, `children_rewards`,
  `children_discounts`, `children_values` (0 where not expanded);
- `root_invalid_actions` [B, A] as the caller gave it (mctx: zeros of the
  prior logits' dtype when None), `embeddings`, `extra_data`;
- `qvalues(indices)` and `summary()` with mctx's semantics.

A stochastic tree is cut to its A decisions, as mctx cuts its own: an
afterstate's row holds its decision slots (unvisited, logits -inf). A
graph (`transpositions=True`) is shown as mctx shows a tree: several
`children_index` entries may hold one node, `children_visits` are the
edges' own visits, `parents` and `action_from_parent` the first parent's.

Values are on the user's scale (our `value_range`). The view also carries
the tree it was computed from (`source_tree`, not an mctx field), so that
`get_subtree`, `tree=` and the visualiser take it.

`row_stats` reads one node of a view as our `ChildrenStats`, so that our
rules and Q transforms run on mctx-style (unbatched) trees.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional, Tuple

import chex
import jax
import jax.numpy as jnp

from mcts_jax import tree as tree_lib
from mcts_jax.tree import ILLEGAL, ROOT_INDEX, UNEXPANDED


@chex.dataclass(frozen=True)
class MctxSearchSummary:
    """mctx's `SearchSummary`: root statistics [B, A] (float32 visit counts,
    visit probabilities uniform where a root has no visits), the root value
    [B] and the root's Q-values [B, A] (0 where unvisited)."""

    visit_counts: chex.Array
    visit_probs: chex.Array
    value: chex.Array
    qvalues: chex.Array


@chex.dataclass(frozen=True)
class MctxTree:
    """mctx's `Tree`, computed from ours (module docstring). B searches, N
    node slots, A actions (a stochastic tree's decisions)."""

    node_visits: chex.Array  # [B, N] int32
    raw_values: chex.Array  # [B, N] float32
    node_values: chex.Array  # [B, N] float32
    parents: chex.Array  # [B, N] int32
    action_from_parent: chex.Array  # [B, N] int32
    children_index: chex.Array  # [B, N, A] int32
    children_prior_logits: chex.Array  # [B, N, A] float32
    children_visits: chex.Array  # [B, N, A] int32
    children_rewards: chex.Array  # [B, N, A] float32
    children_discounts: chex.Array  # [B, N, A] float32
    children_values: chex.Array  # [B, N, A] float32
    embeddings: Any  # [B, N, ...] (our layout: [B, 1, ...] with replayed embeddings)
    root_invalid_actions: chex.Array  # [B, A]
    extra_data: Any  # [B, ...]
    source_tree: Optional[tree_lib.Tree] = None  # ours; not an mctx field

    ROOT_INDEX: ClassVar[int] = tree_lib.ROOT_INDEX
    NO_PARENT: ClassVar[int] = tree_lib.NO_PARENT
    UNVISITED: ClassVar[int] = tree_lib.UNEXPANDED

    @property
    def num_actions(self) -> int:
        """A."""
        return self.children_index.shape[-1]

    @property
    def num_simulations(self) -> int:
        """N - 1."""
        return self.node_visits.shape[-1] - 1

    def qvalues(self, indices) -> chex.Array:
        """`children_rewards + children_discounts * children_values` at
        `indices`: per row for an array of indices ([B] -> [B, A]); a scalar
        indexes the leading axis as mctx does (a node of an unbatched tree)."""
        if jnp.shape(indices):
            return jax.vmap(_edge_qvalues)(self.children_rewards, self.children_discounts,
                                           self.children_values, indices)
        return _edge_qvalues(self.children_rewards, self.children_discounts,
                             self.children_values, indices)

    def summary(self) -> MctxSearchSummary:
        """mctx's root summary (see `MctxSearchSummary`)."""
        value = self.node_values[:, self.ROOT_INDEX]
        root = jnp.full(value.shape, self.ROOT_INDEX)
        visit_counts = self.children_visits[:, self.ROOT_INDEX].astype(value.dtype)
        total = jnp.sum(visit_counts, axis=-1, keepdims=True)
        visit_probs = jnp.where(total > 0, visit_counts / jnp.maximum(total, 1),
                                1 / self.num_actions)
        return MctxSearchSummary(visit_counts=visit_counts, visit_probs=visit_probs,
                                 value=value, qvalues=self.qvalues(root))


def _edge_qvalues(rewards, discounts, values, index):
    return rewards[index] + discounts[index] * values[index]


def mctx_view(tree: tree_lib.Tree, root_invalid_actions: Optional[chex.Array] = None,
              keep_source: bool = True) -> MctxTree:
    """mctx's `Tree` for our `tree` (module docstring). Each [B, N, A] array
    costs O(B N A): for reading a finished tree, not inside a search.

    Args:
      tree: our `Tree` (any layout; a stochastic tree is cut to its A
        decisions).
      root_invalid_actions: [B, A] the mask the caller gave, kept as given;
        None: our tree's root mask (bool, True = illegal).
      keep_source: carry `tree` as `source_tree` (for reuse).
    """
    num_actions = tree.num_decisions

    def cut(per_action):  # [..., A + C] -> [..., A]
        return per_action[..., :num_actions]

    if root_invalid_actions is None:
        root_invalid_actions = cut(root_invalid(tree))
    values = node_values(tree)
    return MctxTree(
        node_visits=tree.node_visits,
        raw_values=jnp.where(tree.node_visits > 0,
                             tree_lib.to_user_scale(tree.raw_values, tree.value_range), 0.0),
        node_values=values,
        parents=tree.parents,
        action_from_parent=tree.actions_from_parent,
        children_index=cut(children_index(tree)),
        children_prior_logits=cut(children_prior_logits(tree)),
        children_visits=cut(children_visits(tree)),
        children_rewards=cut(child_field(
            tree, tree_lib.to_user_scale(tree.rewards, tree.value_range), 0.0)),
        children_discounts=cut(child_field(tree, tree.discounts, 0.0)),
        children_values=cut(child_field(tree, values, 0.0)),
        embeddings=tree.embeddings,
        root_invalid_actions=root_invalid_actions,
        extra_data=tree.extra_data,
        source_tree=tree if keep_source else None,
    )


# ---- our tree's arrays in mctx's form (O(B N A) each) ------------------------------------

def node_values(tree: tree_lib.Tree) -> chex.Array:
    """[B, N] mean backed-up value of each node, for its mover (0 if free)."""
    mean = tree.value_sums / jnp.maximum(tree.node_visits, 1)
    return jnp.where(tree.node_visits > 0, tree_lib.to_user_scale(mean, tree.value_range), 0.0)


def in_action_space(tree: tree_lib.Tree, per_slot: chex.Array, fill) -> chex.Array:
    """[B, N, K] per-slot values -> [B, N, A]; `fill` where no slot holds the action."""
    if tree.children_actions is None:
        return per_slot
    batch, nodes = tree.batch_size, tree.max_nodes
    out = jnp.full((batch, nodes, tree.num_actions + 1), fill, per_slot.dtype)
    rows = jnp.arange(batch)[:, None, None]
    cols = jnp.arange(nodes)[None, :, None]
    out = out.at[rows, cols, tree.children_actions.astype(jnp.int32)].set(per_slot)
    return out[..., :tree.num_actions]


def child_field(tree: tree_lib.Tree, per_node: chex.Array, fill) -> chex.Array:
    """[B, N, A]: `per_node` [B, N] of each node's child, `fill` if unexpanded."""
    index = tree.children.astype(jnp.int32)
    safe = jnp.maximum(index, 0).reshape(tree.batch_size, -1)
    values = jnp.take_along_axis(per_node, safe, axis=1).reshape(index.shape)
    return in_action_space(tree, jnp.where(index >= 0, values, fill), fill)


def children_visits(tree: tree_lib.Tree) -> chex.Array:
    """[B, N, A] int32 visits of each edge: the child's visits in a tree, the
    edge's own in a graph (where a child shared by several parents has more
    visits than each edge into it); 0 where not expanded."""
    if tree.edge_visits is None:
        return child_field(tree, tree.node_visits, 0)
    expanded = tree.children >= 0
    return in_action_space(tree, jnp.where(expanded, tree.edge_visits, 0), 0)


def children_index(tree: tree_lib.Tree) -> chex.Array:
    """[B, N, A] int32 child node index; -1 (mctx's UNVISITED) if not expanded
    or illegal."""
    index = tree.children.astype(jnp.int32)
    return in_action_space(tree, jnp.where(index >= 0, index, UNEXPANDED), UNEXPANDED)


def children_prior_logits(tree: tree_lib.Tree) -> chex.Array:
    """[B, N, A] prior logits of each action. Where the search kept them
    (`prior_logits`), the logits each node was given (0 in a node not yet
    expanded, as mctx); else the log prior probabilities (normalised
    logits: `softmax` gives the priors the search used),
    `log_probabilities`' floor (about -87) where the prior is 0."""
    lowest = jnp.finfo(jnp.float32).min
    if tree.prior_logits is not None:
        return in_action_space(tree, tree.prior_logits, lowest)
    logits = tree_lib.log_probabilities(tree.priors)
    return in_action_space(tree, logits, tree_lib.log_probabilities(jnp.float32(0.0)))


def root_invalid(tree: tree_lib.Tree) -> chex.Array:
    """[B, A] bool, True where a root action is illegal (or got no compact slot)."""
    root = tree_lib.root_nodes(tree.batch_size)
    legal = tree_lib.gather_nodes(tree.children, root) != ILLEGAL
    return ~tree_lib.slots_to_actions(tree, root, legal, False)


def our_tree(tree: Any) -> Any:
    """Our `Tree` behind an `MctxTree` (its `source_tree`); anything else as
    it is. An `MctxTree` without a source cannot be continued."""
    return tree_lib.source_of(tree)


@dataclasses.dataclass(frozen=True)
class ViewFacts:
    """What our rules and Q transforms read of a tree besides `ChildrenStats`,
    for a node of an `MctxTree`: A, the value scale (the view's values are
    already the user's), the dense layout and `extra_data`."""

    num_actions: int
    extra_data: Any = None
    value_range: Optional[Tuple[float, float]] = None
    children_actions: Optional[chex.Array] = None


def row_stats(tree: MctxTree, node_index: chex.Array, rng_key: Optional[chex.PRNGKey] = None,
              depth: Optional[chex.Array] = None
              ) -> Tuple[ViewFacts, chex.Array, tree_lib.ChildrenStats]:
    """One node per row of an mctx-style tree as our `ChildrenStats`.

    `tree` is unbatched (as mctx's selection functions and Q transforms get
    it; `node_index` a scalar) or batched (`node_index` [B]). Returns
    (facts, node [B], stats [B, A]) with B = 1 for an unbatched tree. Every
    action is legal, except at the root those `root_invalid_actions` marks
    (mctx's selection functions mask the root alone); priors are
    `softmax(children_prior_logits)`, as mctx reads them.
    """
    unbatched = jnp.ndim(tree.node_visits) == 1
    if unbatched:
        tree = jax.tree.map(lambda x: x[None], tree)
        node_index = jnp.reshape(node_index, (1,))
        rng_key = None if rng_key is None else rng_key[None]
        depth = None if depth is None else jnp.reshape(depth, (1,))
    node = jnp.asarray(node_index, jnp.int32)
    rows = jnp.arange(node.shape[0])
    batch_size, num_actions = node.shape[0], tree.children_index.shape[-1]

    def at_node(per_edge):
        return per_edge[rows, node]

    visits = at_node(tree.children_visits)
    root_invalid = jnp.asarray(tree.root_invalid_actions) != 0
    legal = ~(root_invalid & (node == tree_lib.ROOT_INDEX)[:, None])
    qvalues = at_node(tree.children_rewards) + at_node(tree.children_discounts) * at_node(
        tree.children_values)
    stats = tree_lib.ChildrenStats(
        index=at_node(tree.children_index),
        legal=legal,
        actions=jnp.broadcast_to(jnp.arange(num_actions, dtype=jnp.int32),
                                 (batch_size, num_actions)),
        visits=visits,
        qvalues=qvalues,
        priors=jax.nn.softmax(at_node(tree.children_prior_logits), axis=-1),
        solved=jnp.zeros((batch_size, num_actions), jnp.bool_),
        solved_qvalues=jnp.zeros((batch_size, num_actions), jnp.float32),
        node_visits=tree.node_visits[rows, node],
        node_value=tree.node_values[rows, node],
        raw_value=tree.raw_values[rows, node],
        depth=jnp.zeros_like(node) if depth is None else jnp.asarray(depth, jnp.int32),
        rng_key=rng_key,
    )
    return ViewFacts(num_actions=num_actions, extra_data=tree.extra_data), node, stats


def unbatched_result(tree: MctxTree, batched: chex.Array) -> chex.Array:
    """[1, ...] -> [...] when `tree` is unbatched (see `row_stats`)."""
    return batched[0] if jnp.ndim(tree.node_visits) == 1 else batched
