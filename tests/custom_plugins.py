"""A search plug-in written as a user would write it in a notebook (tests only).

`MaxBackup`: a node's value is the best Q among its expanded children (for
the node's mover), or its own evaluation while it has none; the rules score
children by that value instead of the mean of the values backed up. It keeps
one array of its own, `best` [B, N], and works with one or P paths per step.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

import mcts_jax


def _rows_like(node):
    """Row indices broadcastable against `node` ([B] or [B, P])."""
    return jnp.arange(node.shape[0]).reshape((-1,) + (1,) * (node.ndim - 1))


def _best_q(tree, best, node):
    """(Q [..., K] of each child slot of `node` from `best`, expanded [..., K])."""
    rows = _rows_like(node)
    children = tree.children[rows, node].astype(jnp.int32)
    safe = jnp.maximum(children, 0)
    rows = rows[..., None]
    q = tree.rewards[rows, safe] + tree.discounts[rows, safe] * best[rows, safe]
    return q, children >= 0


@dataclasses.dataclass(frozen=True)
class MaxBackup(mcts_jax.SearchPlugin):
    """Max backup: V(node) = max over expanded children of r + d * V(child)."""

    def init_record(self, tree):
        return tree.raw_values  # the root's evaluation at index 0, free slots 0

    def new_nodes(self, tree, best, write_at, new):
        return best.at[_rows_like(write_at), write_at].set(new.value, mode="drop")

    def back_up_node(self, tree, best, node, on_path):
        q, expanded = _best_q(tree, best, node)
        has_child = jnp.any(expanded, axis=-1)
        value = jnp.where(has_child, jnp.max(jnp.where(expanded, q, -jnp.inf), axis=-1),
                          best[_rows_like(node), node])
        write_at = jnp.where(on_path, node, tree.max_nodes)
        return best.at[_rows_like(node), write_at].set(value, mode="drop")

    def stats_seen(self, tree, best, node, stats):
        q, expanded = _best_q(tree, best, node)
        return stats.replace(qvalues=jnp.where(expanded, q, 0.0))
