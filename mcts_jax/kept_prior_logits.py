"""Kept prior logits (`SearchOptions(keep_prior_logits=True)`): every node's
prior logits as it was given them, mctx's `children_prior_logits`.

A tree stores each child slot's prior probability (`Tree.priors`, masked
and normalised), which is all the search reads. mctx's tree keeps the
logits themselves, as the network gave them (the root's after the policy's
noise), and the mctx-signature functions (`mcts_jax.mctx_compat`) keep them
too so that their trees read as mctx's, array for array. The plug-in
`KeepPriorLogits` holds them in its record, `KeptPriorLogits` (read as
`tree.prior_logits`, None in a search that keeps none):

- a fresh tree's root row: the root's logits at its slots (its root entry,
  the root's `ChildSlots`, `root_record`);
- each new node's row: its logits at its slots (`new_nodes`);
- a continued tree's root row: this search's root logits at the slots the
  root keeps (`continued_record`), as the root's priors are.

A search that keeps no logits continues a tree that kept them without them
(as `tree.prior_logits` None); a search that keeps them refuses a tree that
kept none (its other nodes' logits are not known).

`tree_search.search_plugins` adds it for `keep_prior_logits=True`.
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp

from mcts_jax import tree as tree_lib
from mcts_jax.plugin import SearchPlugin


@functools.partial(jax.tree_util.register_dataclass, data_fields=["prior_logits"],
                   meta_fields=[])
@dataclasses.dataclass(frozen=True)
class KeptPriorLogits:
    """The record of `KeepPriorLogits`.

    Attributes:
      prior_logits: [B, N, K] float32, each node's prior logits as given,
        read at its slots' actions (0 in an unused compact slot and in a
        node not yet expanded).
    """

    prior_logits: chex.Array
    is_prior_logits_record = True  # how the tree finds it (`Tree.prior_logits`)
    # Nothing in a search reads them: a search that keeps none continues a
    # tree that kept them without them (`tree_search.continued_records`).
    dropped_by_a_search_without_it = True
    # What `continued_records` tells a search that keeps them and continues a
    # tree that kept none.
    hint_when_not_kept = ("this search keeps the prior logits (keep_prior_logits=True, "
                          "the default of the mctx-signature functions) and the tree kept "
                          "none: continue it with keep_prior_logits=False, or keep them "
                          "from the tree's first search")


@dataclasses.dataclass(frozen=True)
class KeepPriorLogits(SearchPlugin):
    """Keeps every node's prior logits as given (module docstring)."""

    def init_record(self, tree):
        """No node's logits yet (the root's come in `root_record`)."""
        return KeptPriorLogits(prior_logits=jnp.zeros(tree.children.shape, jnp.float32))

    def root_record(self, tree, record, entry):
        """The root's logits at its slots; `entry` is the root's `ChildSlots`."""
        return KeptPriorLogits(prior_logits=record.prior_logits.at[:, tree_lib.ROOT_INDEX].set(
            entry.logits))

    def new_nodes(self, tree, record, write_at, new):
        """The new nodes' logits at their slots (`new.slots.logits`) at `write_at`."""
        rows = tree_lib.batch_rows(tree.batch_size).reshape((-1,) + (1,) * (write_at.ndim - 1))
        return KeptPriorLogits(prior_logits=record.prior_logits.at[rows, write_at].set(
            new.slots.logits, mode="drop"))

    def backup_state(self, tree, record):
        """Nothing: a backup does not change the logits, so its loop does not
        carry them (and XLA drops them where nothing reads them)."""
        return None

    def after_backup(self, tree, state):
        """The record as it was before the backup."""
        return tree, KeptPriorLogits(prior_logits=tree.prior_logits)

    def continued_record(self, tree, record, root):
        """A continued root takes this search's root logits (`root`:
        `RootFnOutput`, after the policy's root setup) at the slots it keeps."""
        root_slots = tree_lib.slot_actions(tree, tree_lib.root_nodes(tree.batch_size))
        return KeptPriorLogits(prior_logits=record.prior_logits.at[:, tree_lib.ROOT_INDEX].set(
            tree_lib.at_slots(tree, root_slots, root.prior_logits.astype(jnp.float32))))
