"""Expand-all (`SearchOptions(expand_all=True)`, the "Tiny-MCTS" style): a
leaf's first expansion creates and evaluates every legal child at once.

A simulation that reaches an unexpanded leaf evaluates all K child slots of
it in the one recurrent_fn call (a batch of B x K transitions), writes a
node for each unexpanded slot with one visit of its own, and backs up from
the leaf the sum of the new children's returns (`reward + discount *
value`), one visit per child. A row without room for all of them creates
none and re-evaluates its leaf (a graph search creates what it has room
for and links the rest). `tree_search.search_plugins` adds `ExpandAll`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from mcts_jax import plugin
from mcts_jax import tree as tree_lib


@dataclasses.dataclass(frozen=True)
class ExpandAll(plugin.SearchPlugin):
    """Expand-all as a plug-in of the search loop (module docstring): the
    edges a simulation evaluates and what it backs up then."""

    def edges_of_leaf(self, tree, record, leaf, embedding, plugins):
        """Every slot of the leaf (E = K), created where unexpanded when the
        row has room for all of them (`plugin.has_room` may say otherwise),
        each new node written with one visit."""
        batch_size, num_slots = tree.batch_size, tree.num_slots
        unexpanded = tree_lib.gather_nodes(tree.children, leaf.node) == tree_lib.UNEXPANDED
        room = plugin.thread(plugins, "has_room", tree, tree.num_nodes + jnp.sum(
            unexpanded, axis=-1, dtype=jnp.int32) <= tree.max_nodes)
        parent = jnp.broadcast_to(leaf.node[:, None], (batch_size, num_slots))
        slot = jnp.broadcast_to(jnp.arange(num_slots, dtype=jnp.int32), (batch_size, num_slots))
        repeated = jax.tree.map(  # [B, K, ...]: the leaf's embedding once per slot
            lambda x: jnp.broadcast_to(x[:, None], (batch_size, num_slots) + x.shape[1:]),
            embedding)
        return parent, slot, (leaf.expand & room)[:, None] & unexpanded, repeated, 1

    def backup_of_edges(self, tree, record, leaf, new, new_index, reached, again, plugins):
        """From the leaf: the sum of the reached children's returns, one visit
        per child; a row that reached none re-evaluates its leaf (`again`).
        The path ends at the leaf: the plug-ins' states go on as the descent
        left them."""
        expanded = jnp.any(reached, axis=-1)
        returns = jnp.sum(jnp.where(reached, new.reward + new.discount * new.value, 0.0),
                          axis=-1)
        return plugin.Backup(
            start=leaf.node,
            count=jnp.where(expanded, jnp.sum(reached, axis=-1, dtype=jnp.int32), again.count),
            value=jnp.where(expanded, returns, again.value), states=leaf.states)
