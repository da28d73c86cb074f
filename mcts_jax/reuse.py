"""Subtree reuse: keep the part of a tree below the move that was played.

    out = mcts_jax.alphazero_policy(params, key, root, recurrent_fn, 64, max_nodes=256)
    tree = mcts_jax.get_subtree(out.search_tree, out.action)     # re-root every row
    tree = mcts_jax.reset_tree(tree, game_over)                  # auto-reset rows
    out = mcts_jax.alphazero_policy(params, key, next_root, recurrent_fn, 64, tree=tree)

A row whose tree is empty (`num_nodes == 0`) starts fresh from the policy's
`root` argument; every other row continues its kept tree. These functions
touch every node once (O(N log N) per row): they run once per move, outside
the simulation loop.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from mcts_jax import graph
from mcts_jax import tree as tree_lib
from mcts_jax import validation


def select_rows(mask: chex.Array, if_true: tree_lib.Tree,
                if_false: tree_lib.Tree) -> tree_lib.Tree:
    """Row b from `if_true` where mask[b], else from `if_false` (same shapes).
    Use it to put a tree kept from an earlier game's first move back into the
    rows whose game restarted from the initial position."""
    validation.check_is_tree("if_true", if_true)
    validation.check_is_tree("if_false", if_false)
    shapes = jax.tree.map(lambda x: (x.shape, x.dtype), if_true)
    if jax.tree.structure(if_true) != jax.tree.structure(if_false) or \
            shapes != jax.tree.map(lambda x: (x.shape, x.dtype), if_false):
        raise ValueError("if_true and if_false must be trees of the same configuration "
                         "(B, max_nodes, layout, value_range and embedding shapes)")
    validation.check_row_mask("mask", mask, if_true.batch_size)
    mask = jnp.asarray(mask).astype(jnp.bool_)

    def pick(a, b):
        return jnp.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)

    return jax.tree.map(pick, if_true, if_false)


def reset_tree(tree: tree_lib.Tree, mask: chex.Array) -> tree_lib.Tree:
    """Empties the rows where mask [B] is True; the next search starts them
    fresh from its `root` argument. An `MctxTree` (the mctx-signature
    functions' tree) gives its source tree, ours."""
    tree = tree_lib.source_of(tree)
    validation.check_is_tree("tree", tree)
    validation.check_row_mask("mask", mask, tree.batch_size)
    mask = jnp.asarray(mask).astype(jnp.bool_)
    return select_rows(mask, tree_lib.empty_like(tree), tree)


def get_subtree(tree: tree_lib.Tree, action: chex.Array, *,
                checks: str = "host") -> tree_lib.Tree:
    """Re-roots each row on the child reached by `action` [B].

    The kept nodes (the child and its descendants) move to the front of the
    arrays in their old order, with every statistic, prior, slot action,
    proven flag and embedding; parent and child indices are renumbered; the
    rest is freed. A row whose child was never expanded, or is terminal, or
    whose `action` is not a child slot of its root, comes back empty.

    A graph (`transpositions=True`) keeps every node reachable from the
    child, the child first (`graph.reachable`); each kept node's parent
    becomes one of its kept parents, and its transposition table is kept.

    `checks`: "host" (default) raises on action ids outside [0, A) when
    `action` is concrete (one device-to-host copy of [B] ids); "off" skips
    that check (an out-of-range id then gives an empty row); "checkify"
    compiles it in as a `jax.experimental.checkify` check (also under the
    caller's `jit` when wrapped with `checkify.checkify`).

    `tree` may be the `MctxTree` an mctx-signature function returned: its
    source tree (ours) is re-rooted, and ours is returned (pass it back as
    `tree=`).
    """
    tree = tree_lib.source_of(tree)
    validation.check_is_tree("tree", tree)
    action = jnp.asarray(action)
    if action.shape != (tree.batch_size,):
        raise ValueError(f"action must have shape [B] = ({tree.batch_size},), "
                         f"got {action.shape}")
    if not jnp.issubdtype(action.dtype, jnp.integer):
        raise TypeError(f"action must be an integer array, got {action.dtype}")
    checks = validation.check_mode(checks)
    if checks == "checkify":
        error, subtree = _get_subtree_checkified(tree, action.astype(jnp.int32))
        validation.raise_or_stage(error)
        return subtree
    if checks == "host" and not isinstance(action, jax.core.Tracer):
        out_of_range = (action < 0) | (action >= tree.num_actions)
        if bool(jnp.any(out_of_range)):
            raise ValueError(f"action has ids outside [0, A) = [0, {tree.num_actions}) in "
                             f"rows {jnp.flatnonzero(out_of_range)[:10].tolist()}")
    return _get_subtree(tree, action.astype(jnp.int32))


@jax.jit
def _get_subtree_checkified(tree: tree_lib.Tree, action: chex.Array):
    def checked(tree, action):
        from jax.experimental import checkify

        bad = (action < 0) | (action >= tree.num_actions)
        checkify.check(~jnp.any(bad), f"action has ids outside [0, A) = [0, {tree.num_actions})"
                       " (first in row {row})", row=jnp.argmax(bad).astype(jnp.int32))
        return _get_subtree(tree, action)

    from jax.experimental import checkify
    return checkify.checkify(checked, errors=checkify.user_checks)(tree, action)


@jax.jit
def _get_subtree(tree: tree_lib.Tree, action: chex.Array) -> tree_lib.Tree:
    batch_size, max_nodes = tree.batch_size, tree.max_nodes
    rows = tree_lib.batch_rows(batch_size)
    root = tree_lib.root_nodes(batch_size)
    slot_actions = tree_lib.slot_actions(tree, root)
    slot = jnp.argmax(slot_actions == action[:, None], axis=-1)
    has_slot = jnp.any(slot_actions == action[:, None], axis=-1)
    child = jnp.where(has_slot, tree.children[rows, 0, slot].astype(jnp.int32),
                      tree_lib.UNEXPANDED)
    safe_child = jnp.maximum(child, 0)
    keep_row = (child > 0) & ~tree.is_terminal[rows, safe_child]

    node_ids = jnp.arange(max_nodes, dtype=jnp.int32)[None, :]
    is_new_root = node_ids == child[:, None]
    if tree.is_graph:
        keep, via_parent, via_slot = graph.reachable(tree, safe_child, keep_row)
        keep = keep & (node_ids < tree.num_nodes[:, None])
        # The new root first, then the others in their old order.
        new_index = jnp.where(is_new_root, 0, jnp.cumsum(keep & ~is_new_root, axis=1,
                                                          dtype=jnp.int32))
        tree = tree.replace(
            parents=jnp.where(keep, via_parent, tree.parents),
            actions_from_parent=jnp.where(
                keep, tree_lib.edge_actions(tree, jnp.maximum(via_parent, 0), via_slot),
                tree.actions_from_parent))
    else:
        # Pointer jumping: every node's ancestor chain ends at the child (a
        # fixed point) or at the root; log2(N) rounds of up = up[up] reach the end.
        used = node_ids < tree.num_nodes[:, None]
        up = jnp.where(tree.parents >= 0, tree.parents, 0)
        up = jnp.where(node_ids == child[:, None], node_ids, up)
        for _ in range(max(1, (max_nodes - 1).bit_length())):
            up = jnp.take_along_axis(up, up, axis=1)
        keep = used & (up == child[:, None]) & keep_row[:, None]
        new_index = jnp.cumsum(keep, axis=1, dtype=jnp.int32) - 1
    move_to = jnp.where(keep, new_index, max_nodes)  # dropped when not kept

    empty = tree_lib.empty_like(tree)

    def move(array, default):
        return default.at[rows[:, None], move_to].set(array, mode="drop")

    def renumber(index_array):
        """Old node indices -> new ones; negative codes stay. [B, N] or [B, N, K]."""
        safe = jnp.maximum(index_array.astype(jnp.int32), 0).reshape(batch_size, -1)
        renumbered = jnp.take_along_axis(new_index, safe, axis=1).reshape(index_array.shape)
        return jnp.where(index_array >= 0, renumbered, index_array).astype(index_array.dtype)

    moved = {}
    for name, spec in tree_lib.TREE_ARRAYS:  # every array, as the tree declares it
        array = getattr(tree, name)
        if spec.node_index:
            array = renumber(array)
        if spec.at_new_root is not None:
            array = jnp.where(is_new_root, spec.at_new_root, array)
        moved[name] = move(array, getattr(empty, name))
    moved = empty.replace(
        # Replayed embeddings keep the old root's state until the next search
        # stores its `root.embedding` there.
        embeddings=tree.embeddings if tree.replay_embeddings
        else jax.tree.map(move, tree.embeddings, empty.embeddings),
        # A plug-in's arrays are per node ([B, N, ...]): moved like the tree's,
        # unless its record says how it re-roots (`rerooted`: a graph's
        # table keeps the kept nodes, renumbered).
        plugin_records=tuple(
            record.rerooted(kept_as, move, keep, new_index) if hasattr(record, "rerooted")
            else jax.tree.map(move, record, kept_as)
            for record, kept_as in zip(tree.plugin_records, empty.plugin_records)),
        num_nodes=jnp.sum(keep, axis=1, dtype=jnp.int32),
        **moved)
    return moved
