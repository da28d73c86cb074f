"""Replayed embeddings (`SearchOptions(replay_embeddings=True)`): a tree that
stores only its root's state.

A simulator's state can be large (a chess or Go board with its history):
storing one per node costs N times its size. With `replay_embeddings` the
tree keeps the root's embedding alone, and the search recomputes the state
of a leaf by stepping the root's state down the leaf's path with
recurrent_fn's transition: the plug-in `ReplayEmbeddings` gives the loop
those states (`SearchPlugin.leaf_embeddings`) instead of the stored ones
(`tree_search.search_plugins` adds it for `replay_embeddings=True`; the
tree's own embedding storage is one node wide, and the loop writes no
storage narrower than the tree). Each expansion then costs depth
simulator steps instead of one read: memory for time. Replay needs a
recurrent_fn whose next embedding depends only on (embedding, action).
"""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp

from mcts_jax import tree as tree_lib
from mcts_jax.plugin import SearchPlugin


def replay_path_embeddings(tree: tree_lib.Tree, node: chex.Array, step_fn,
                      max_path_length: int):
    """The states at `node` [B] (or [B, P] paths) of a tree that stores only
    its root's state: walks up to the root collecting the actions of each
    path (at most `max_path_length`), then steps the root state down it with
    `step_fn(action [B * P], embedding) -> embedding` (one batch of every
    path). Costs depth simulator steps per call; paths that arrive early keep
    their state. Leaves come back shaped like `node` + the state's shape."""
    shape = node.shape
    node = node.reshape(-1)
    lanes = jnp.arange(node.shape[0], dtype=jnp.int32)
    rows = jnp.repeat(tree_lib.batch_rows(tree.batch_size), node.shape[0] // tree.batch_size)

    def walk_up(state):
        node, depth, path = state
        on_path = node > tree_lib.ROOT_INDEX
        path = path.at[lanes, jnp.where(on_path, depth, max_path_length)].set(
            tree.actions_from_parent[rows, node], mode="drop")
        return (jnp.where(on_path, tree.parents[rows, node], tree_lib.ROOT_INDEX),
                depth + on_path.astype(jnp.int32), path)

    _, depth, path = jax.lax.while_loop(
        lambda state: jnp.any(state[0] > tree_lib.ROOT_INDEX), walk_up,
        (node, jnp.zeros_like(node), jnp.zeros((node.shape[0], max_path_length), jnp.int32)))

    def step_down(state):
        step, embedding = state
        action = path[lanes, jnp.clip(depth - 1 - step, 0, max_path_length - 1)]
        stepped = step_fn(action, embedding)
        moves = step < depth
        embedding = jax.tree.map(
            lambda new, old: jnp.where(moves.reshape((-1,) + (1,) * (new.ndim - 1)), new, old),
            stepped, embedding)
        return step + 1, embedding

    root_embedding = jax.tree.map(lambda leaf: leaf[rows, tree_lib.ROOT_INDEX], tree.embeddings)
    _, embedding = jax.lax.while_loop(lambda state: state[0] < jnp.max(depth), step_down,
                                      (jnp.int32(0), root_embedding))
    return jax.tree.map(lambda leaf: leaf.reshape(shape + leaf.shape[1:]), embedding)


@dataclasses.dataclass(frozen=True)
class ReplayEmbeddings(SearchPlugin):
    """Replayed embeddings as a plug-in of the search loop: the states at
    the leaves are recomputed from the root's (`replay_path_embeddings`)
    with recurrent_fn's state transition (its other outputs are unused, so
    XLA drops the evaluator there).

    Attributes:
      max_path_length: the longest root-to-leaf path a replay walks (the
        resolved options' `max_path_length`).
    """

    max_path_length: int

    def leaf_embeddings(self, tree, record, params, rng_key, recurrent_fn, node):
        def step_fn(action, embedding):
            return recurrent_fn(params, rng_key, action, embedding)[1]

        return replay_path_embeddings(tree, node, step_fn, self.max_path_length)
