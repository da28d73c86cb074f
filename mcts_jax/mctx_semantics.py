"""mctx's tree semantics, for the searches that keep them (the mctx-signature
functions, `MuZeroPolicy`): two options of `SearchOptions`, one plug-in.

- `stop_at_terminal=False`: an edge whose discount is 0 does not end the
  game: its node is searched below like any other (mctx trusts the learned
  model's discount only as a factor). Ours (`True`): such a node is
  terminal, worth 0, never expanded.
- `node_per_simulation=True`: simulation i writes node slot i + 1, so a
  simulation that creates no node still uses up a slot (mctx's numbering:
  `num_nodes` is `num_simulations + 1`). Ours: nodes numbered as created.

`tree_search.search_plugins` adds `MctxSemantics` when either is asked for.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from mcts_jax.plugin import SearchPlugin


@dataclasses.dataclass(frozen=True)
class MctxSemantics(SearchPlugin):
    """mctx's semantics as a plug-in (module docstring).

    Attributes:
      searches_past_terminals: `not stop_at_terminal`: no new node is terminal.
      node_per_simulation: every expansion uses up one node slot per row.
    """

    searches_past_terminals: bool = False
    node_per_simulation: bool = False

    def is_terminal(self, tree, record, discount, terminal):
        return jnp.zeros(discount.shape, jnp.bool_) if self.searches_past_terminals else terminal

    def nodes_used(self, tree, record, used):
        return (jnp.minimum(tree.num_nodes + 1, tree.max_nodes) if self.node_per_simulation
                else used)
