"""How much memory a search's tree takes, by array, before running it.

For example::

    report = mcts_jax.memory.tree_memory(embedding, num_actions=4672, batch_size=1024,
                                         max_nodes=801, max_children=218)
    print(report.table())          # bytes per node of every array, and the total
    report.total_bytes             # the whole tree of B searches

For a pgx game, `envs.make("chess").tree_memory(...)` fills in the embedding.
The figures are exact: they come from the shapes and dtypes of the arrays
`init_tree` allocates (`jax.eval_shape`, nothing is allocated). They count the
tree, which is what grows with `max_nodes`; a search also needs transient
buffers of O(B x A) per simulation (the recurrent_fn call, the new node's
priors), with `replay_embeddings` a [B, path length] action buffer, and in
a graph search (`transpositions`) its path buffers, [B, 3 N] int32 at most.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp

from mcts_jax import compact, graph
from mcts_jax import tree as tree_lib


@dataclasses.dataclass(frozen=True)
class MemoryReport:
    """Bytes of a batch of trees, by array.

    Attributes:
      batch_size: B, the number of searches.
      max_nodes: N, node slots per search.
      num_actions: A.
      max_children: K in the compact layout, None for dense (K = A).
      replay_embeddings: only the root's embedding is stored.
      transpositions: a graph search's arrays are counted (edge visits,
        position keys, the transposition table).
      array_bytes: bytes of each array of the whole batch, keyed by field
        name ("embeddings/<path>" for embedding leaves).
    """

    batch_size: int
    max_nodes: int
    num_actions: int
    max_children: Optional[int]
    replay_embeddings: bool
    array_bytes: Dict[str, int]
    transpositions: bool = False

    @property
    def total_bytes(self) -> int:
        return sum(self.array_bytes.values())

    @property
    def bytes_per_node(self) -> float:
        """Total bytes divided by the B x N node slots."""
        return self.total_bytes / (self.batch_size * self.max_nodes)

    @property
    def embedding_bytes_per_node(self) -> float:
        return sum(v for k, v in self.array_bytes.items() if k.startswith("embeddings")) / (
            self.batch_size * self.max_nodes)

    def table(self) -> str:
        """A markdown table: bytes per node of each array, then the totals."""
        nodes = self.batch_size * self.max_nodes
        layout = "dense" if self.max_children is None else f"compact K={self.max_children}"
        if self.replay_embeddings:
            layout += ", replayed embeddings"
        if self.transpositions:
            layout += ", graph (transpositions)"
        lines = [f"B={self.batch_size}, N={self.max_nodes}, A={self.num_actions}, {layout}", "",
                 "| array | bytes per node |", "|---|---:|"]
        for name, size in sorted(self.array_bytes.items(), key=lambda item: -item[1]):
            lines.append(f"| {name} | {size / nodes:,.1f} |")
        lines.append(f"| **total** | **{self.bytes_per_node:,.1f}** |")
        lines.append(f"\nwhole batch: {self.total_bytes / 2**30:.3f} GiB")
        return "\n".join(lines)


def tree_memory(embedding: Any, num_actions: int, batch_size: int, max_nodes: int,
                max_children: Optional[int] = None,
                replay_embeddings: bool = False, transpositions: bool = False) -> MemoryReport:
    """The memory of the trees a policy would build, without building them.

    Args:
      embedding: the embedding of ONE search (no batch axis): a pytree of
        arrays or `jax.ShapeDtypeStruct`s, as `RootFnOutput.embedding[b]`.
      num_actions: A.
      batch_size: B.
      max_nodes: N, the capacity (`num_simulations + 1` by default).
      max_children: K for the compact layout, None for dense.
      replay_embeddings: as the policies' option.
      transpositions: as the policies' option (a graph search).
    """
    for name, value in (("num_actions", num_actions), ("batch_size", batch_size),
                        ("max_nodes", max_nodes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if max_children is not None and not 1 <= max_children <= num_actions:
        raise ValueError(f"max_children must be None or in [1, {num_actions}], "
                         f"got {max_children!r}")

    def batched(leaf):
        return jax.ShapeDtypeStruct((batch_size,) + tuple(jnp.shape(leaf)),
                                    jnp.result_type(leaf))

    root_embedding = jax.tree.map(batched, embedding)

    def build(root_embedding):
        priors = jnp.zeros((batch_size, num_actions))
        legal = jnp.ones((batch_size, num_actions), jnp.bool_)
        index_dtype = tree_lib.child_index_dtype(max_nodes)
        slots = (tree_lib.dense_slots(priors, legal, index_dtype) if max_children is None
                 else compact.compact_slots(priors, legal, max_children, jax.random.key(0),
                                            index_dtype))
        tree = tree_lib.init_tree(jnp.zeros((batch_size,)), slots, root_embedding,
                                  num_actions, max_nodes, (-1.0, 1.0),
                                  replay_embeddings=replay_embeddings)
        # The plug-ins' records, in the search's order (graph first, the compact layout last).
        records = ((graph.start_record(tree, jnp.zeros((batch_size, 2), jnp.uint32)),)
                   if transpositions else ())
        if max_children is not None:
            records += (compact.CompactLayout(max_children).init_record(tree),)
        return tree.replace(plugin_records=records)

    shapes = jax.eval_shape(build, root_embedding)
    array_bytes = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(shapes):
        # The plug-ins' arrays (a graph's, the compact layout's) by their own names.
        name = re.sub(r"^plugin_records\[\d+\]\.", "", jax.tree_util.keystr(path).lstrip("."))
        array_bytes[name.replace(".", "/").replace("embeddings/", "embeddings/", 1)] = (
            leaf.size * leaf.dtype.itemsize)
    return MemoryReport(batch_size=batch_size, max_nodes=max_nodes, num_actions=num_actions,
                        max_children=max_children, replay_embeddings=replay_embeddings,
                        array_bytes=array_bytes, transpositions=transpositions)
