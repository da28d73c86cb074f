"""The compact layout (`SearchOptions(max_children=K)`): K < A child slots per node.

A dense tree gives every node A child slots, slot k for action k. With a
large action space and few legal moves per position (chess: 4,672 ids, about
30 legal) that is mostly empty memory, so a compact tree gives each node K
slots that hold its legal actions in increasing id order, each slot's action
id kept in the plug-in's record (`SlotActions`, read as
`tree.children_actions` [B, N, K]; A in an unused slot). A node
with more than K legal actions keeps the K of highest prior (ties at the cut
broken at random) and renormalises their priors; it is marked `pruned`, so
the solver never proves it from "all children proven". With K >= the legal
actions of every node the search is the dense one, slot for action.

`CompactLayout` is the plug-in of the search loop: the slots of a new node
(`node_slots`, at the root and at each expansion), their action ids in its
record (`root_record`, `new_nodes`) and the action id of a chosen slot
(`slot_action`). `tree_search.search_plugins` adds it when `max_children`
is set. The tree's readers (`tree.slot_actions`, `tree.slots_to_actions`,
`tree.at_slots`) find the record through `tree.children_actions`, which is
None in the dense layout.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import plugin
from mcts_jax import tree as tree_lib


def compact_slots(priors: chex.Array, legal: chex.Array, max_children: int,
                  rng_key: chex.PRNGKey, index_dtype,
                  logits: Optional[chex.Array] = None) -> tree_lib.ChildSlots:
    """K = `max_children` child slots from priors and a legal mask in action
    space, S + [A] -> S + [K]: the legal actions fill the slots in
    increasing id order. When more than K are legal, the K with the highest
    priors are kept (ties at the cut broken at random with `rng_key`) and
    the kept priors are renormalised; with K >= the number of legal actions
    nothing is dropped and the priors are exactly the dense ones. `logits`
    (S + [A], optional): the prior logits as given, read at the slots."""
    lead_shape, num_actions = priors.shape[:-1], priors.shape[-1]
    num_slots = max_children
    flat_priors = priors.reshape(-1, num_actions)
    flat_legal = legal.reshape(-1, num_actions)
    num_legal = jnp.sum(flat_legal, axis=-1, dtype=jnp.int32)
    pruned = num_legal > num_slots

    def keep_top_k(_):
        """The K legal actions with the highest priors; random among ties at the cut."""
        values = jnp.where(flat_legal, flat_priors, -1.0)
        cut = jax.lax.top_k(values, num_slots)[0][:, -1:]
        above = values > cut
        at_cut = flat_legal & (values == cut)
        needed = num_slots - jnp.sum(above, axis=-1, keepdims=True, dtype=jnp.int32)
        noise = jnp.where(at_cut, jax.random.uniform(rng_key, values.shape), -1.0)
        noise_sorted = jax.lax.top_k(noise, num_slots)[0]
        noise_cut = jnp.take_along_axis(noise_sorted, jnp.maximum(needed - 1, 0), axis=-1)
        keep = above | (at_cut & (needed > 0) & (noise >= noise_cut))
        return jnp.where(pruned[:, None], keep, flat_legal)

    if num_slots >= num_actions:
        keep = flat_legal
    else:
        keep = jax.lax.cond(jnp.any(pruned), keep_top_k, lambda _: flat_legal, None)
    # Slot j holds the (j+1)-th kept action: the first id whose running count
    # of kept actions reaches j + 1 (a binary search per slot; on CPU this is
    # 2x faster than scattering every id to its position).
    kept_so_far = jax.lax.associative_scan(jnp.add, keep.astype(jnp.int32), axis=-1)
    targets = jnp.arange(1, num_slots + 1, dtype=jnp.int32)
    first_reaching = jax.vmap(
        lambda counts: jnp.searchsorted(counts, targets, side="left", method="scan"))(
            kept_so_far)
    used = targets[None, :] <= kept_so_far[:, -1:]
    actions = jnp.where(used, first_reaching, num_actions).astype(jnp.int32)
    slot_priors = jnp.where(
        used, jnp.take_along_axis(flat_priors, jnp.minimum(actions, num_actions - 1), axis=-1),
        0.0)
    kept_mass = jnp.sum(slot_priors, axis=-1, keepdims=True)
    slot_priors = jnp.where(pruned[:, None],
                            slot_priors / jnp.maximum(kept_mass, jnp.finfo(jnp.float32).tiny),
                            slot_priors)
    full_shape = lead_shape + (num_slots,)
    slot_actions = actions.astype(tree_lib.child_action_dtype(num_actions)).reshape(full_shape)
    return tree_lib.ChildSlots(
        actions=slot_actions,
        priors=slot_priors.reshape(full_shape),
        codes=jnp.where(used, tree_lib.UNEXPANDED, tree_lib.ILLEGAL).astype(
            index_dtype).reshape(full_shape),
        pruned=pruned.reshape(lead_shape),
        logits=None if logits is None else tree_lib.slot_values(
            slot_actions, logits.astype(jnp.float32)),
    )


@functools.partial(jax.tree_util.register_dataclass, data_fields=["children_actions"],
                   meta_fields=["num_actions"])
@dataclasses.dataclass(frozen=True)
class SlotActions:
    """The compact layout's record: which action each child slot holds.

    Attributes:
      children_actions: [B, N, K] int16 (int32 when A >= 32767), each node's
        legal actions in increasing id order, then `num_actions` (no action)
        in the unused slots and in free node slots.
      num_actions: static int A.
    """

    children_actions: chex.Array
    num_actions: int
    is_slot_actions_record = True  # how the tree finds it (`Tree.children_actions`)

    def emptied(self) -> "SlotActions":
        """The record of an emptied tree (`tree.empty_like`): no action in any slot."""
        return dataclasses.replace(self, children_actions=jnp.full_like(
            self.children_actions, self.num_actions))


@dataclasses.dataclass(frozen=True)
class CompactLayout(plugin.SearchPlugin):
    """The compact layout as a plug-in of the search loop (module docstring).

    Attributes:
      max_children: K, the child slots per node (1 <= K <= A).
    """

    max_children: int

    def node_slots(self, priors, legal, logits, rng_key, index_dtype):
        """The K slots of new nodes (`compact_slots`)."""
        return compact_slots(priors, legal, self.max_children, rng_key, index_dtype, logits)

    def init_record(self, tree):
        """No slot holds an action yet (the root's come in `root_record`)."""
        return SlotActions(children_actions=jnp.full(
            tree.children.shape, tree.num_actions, tree_lib.child_action_dtype(tree.num_actions)),
            num_actions=tree.num_actions)

    def root_record(self, tree, record, entry):
        """The root's slot ids; `entry` is the root's `ChildSlots` (the
        plug-in that lays out the slots gets them as its root entry)."""
        return dataclasses.replace(record, children_actions=record.children_actions.at[
            :, tree_lib.ROOT_INDEX].set(entry.actions))

    def new_nodes(self, tree, record, write_at, new):
        """The new nodes' slot ids (`new.slots.actions`) at `write_at`."""
        rows = tree_lib.batch_rows(tree.batch_size).reshape((-1,) + (1,) * (write_at.ndim - 1))
        return dataclasses.replace(record, children_actions=record.children_actions.at[
            rows, write_at].set(new.slots.actions, mode="drop"))

    def slot_action(self, tree, record, parent, slot):
        """The action id the slot holds (an unused slot reads A - 1, a
        placeholder never written: `tree.edge_actions`)."""
        return tree_lib.edge_actions(tree, parent, slot)
