"""The plug-in interface: how a feature joins the search loop without a branch in it.

A plug-in is a frozen, hashable value (so it is part of a search's
compilation key, like a rule) whose hooks the phases call at fixed points.
Every hook has a default that changes nothing, so a plug-in overrides only
the points it cares about; the phases call each hook of each plug-in in a
static tuple and never ask which plug-in they hold. With no plug-in (the
plain search) none is called.

The hooks (B rows; a node argument is [B], or [B, P] for P paths per step):

- `searches(tree) -> [B] bool`: which rows search at all this simulation
  (a row left out does nothing: no descent, no node, no visit);
- `open_slots(tree, stats) -> [B, K] bool`: which child slots of the node
  a descent may enter (the legal ones that are also open here);
- `revisit_count(tree, node, count) -> count`: the visits a simulation that
  created nothing adds when it re-evaluates `node`;
- `backup_state(tree) -> state`: what the plug-in carries through a backup
  (a pytree of its arrays, read from the tree);
- `back_up_node(tree, state, node, on_path) -> state`: the backup reaches
  `node` (where `on_path`);
- `after_backup(tree, state) -> tree`: the backup's end: the carried arrays
  written back.

`mcts_jax.solver.Solver` (the MCTS-solver) is the first built-in plug-in.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional, Sequence

import chex
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class SearchPlugin:
    """A feature of the search, as hooks the phases call (module docstring).
    Subclass it as a frozen dataclass and override the hooks you need."""

    def searches(self, tree: Any) -> Optional[chex.Array]:
        """[B] bool: the rows that search this simulation (None: every row)."""
        return None

    def open_slots(self, tree: Any, stats: Any) -> Optional[chex.Array]:
        """[B, K] bool: the slots of the node `stats` describes that a descent
        may enter, beside being legal (None: every legal slot)."""
        return None

    def revisit_count(self, tree: Any, node: chex.Array, count: chex.Array) -> chex.Array:
        """The visits (like `node`) that re-evaluating `node` adds."""
        return count

    def backup_state(self, tree: Any) -> Any:
        """What this plug-in carries through one backup (None: nothing)."""
        return None

    def back_up_node(self, tree: Any, state: Any, node: chex.Array,
                     on_path: chex.Array) -> Any:
        """The carried state after the backup reached `node` where `on_path`."""
        return state

    def after_backup(self, tree: Any, state: Any) -> Any:
        """The tree once the backup is over, given the carried state."""
        return tree


Plugins = Sequence[SearchPlugin]


def rows_searching(plugins: Plugins, tree: Any, batch_size: int) -> chex.Array:
    """[B] bool: the rows every plug-in lets search."""
    rows = [plugin.searches(tree) for plugin in plugins]
    rows = [row for row in rows if row is not None]
    if not rows:
        return jnp.ones((batch_size,), jnp.bool_)
    return functools.reduce(jnp.logical_and, rows)


def open_slots(plugins: Plugins, tree: Any, stats: Any) -> Optional[chex.Array]:
    """[B, K] bool: the slots every plug-in opens (None: no plug-in closes any)."""
    masks = [plugin.open_slots(tree, stats) for plugin in plugins]
    masks = [mask for mask in masks if mask is not None]
    return functools.reduce(jnp.logical_and, masks) if masks else None
