"""The MCTS-solver as a plug-in (`SearchOptions(solver=True)`).

Exact values propagate up the tree: a node is proven when one child is
proven to give its mover the best value there is (a win, on a bounded
scale) or when every legal child is proven; its exact value is then the
best child's (at a chance node: every outcome proven, the expectation).
A terminal node is proven when it is made (`phases.write_new_nodes`).
The search never enters a proven child again, and a row whose root is
proven stops searching (its simulations are no-ops).

The plug-in's arrays are the tree's `solved` [B, N] bool and
`solved_values` [B, N] float32 (exact value for the player to move at the
node); its hooks (plugin.py): `searches` (the root is not proven),
`open_slots` (children not proven), `revisit_count` (a proven node is not
re-evaluated) and the backup's `back_up_node` (`prove` each node on the
path, carrying the two arrays).
"""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp

from mcts_jax import stochastic
from mcts_jax import tree as tree_lib
from mcts_jax.plugin import SearchPlugin

# A proven Q-value at least this high is the best any move can achieve
# (returns lie in [-1, 1]), so one such child proves its parent.
PROVEN_WIN = 1.0 - 1e-6


def prove(tree: tree_lib.Tree, node: chex.Array, solved: chex.Array,
          solved_values: chex.Array) -> tuple[chex.Array, chex.Array]:
    """MCTS-solver rule for `node` [B] given the current solved arrays [B, N]:
    proven if some child is proven to give the mover the best possible value,
    or if every legal child is proven (and none was pruned); its value is
    then the best child's. A chance node (stochastic trees) is proven when
    every possible outcome is proven, its value their expectation
    (expectimax). Returns (proven [B], exact value [B])."""
    stats = tree_lib.children_stats(
        tree.replace(solved=solved, solved_values=solved_values), node)
    best = jnp.max(jnp.where(stats.solved, stats.solved_qvalues, -jnp.inf), axis=-1)
    all_solved = jnp.any(stats.legal, axis=-1) & jnp.all(~stats.legal | stats.solved, axis=-1)
    # A pruned node has legal moves outside its slots: "all proven" says nothing.
    all_solved = all_solved & ~tree_lib.gather_nodes(tree.pruned, node)
    proven = all_solved
    if tree.value_range is not None:  # bounded: a child worth the most proves its parent
        proven = proven | (best >= PROVEN_WIN)
    if tree.num_chance_outcomes == 0:
        return proven, best
    at_chance = stochastic.is_chance_node(tree, node)
    expectation = jnp.sum(jnp.where(stats.solved, stats.priors * stats.solved_qvalues, 0.0),
                          axis=-1)
    return (jnp.where(at_chance, all_solved, proven),
            jnp.where(at_chance, expectation, best))


def newly_proven(tree: tree_lib.Tree, node: chex.Array, on_path: chex.Array,
                 solved: chex.Array, solved_values: chex.Array):
    """(solved, solved_values) [B, N] with each `node` ([B], or [B, P] paths)
    on the backup's path (`on_path`) marked proven where `prove` proves it
    now, with its exact value."""
    rows = tree_lib.batch_rows(tree.batch_size).reshape((-1,) + (1,) * (node.ndim - 1))
    check_proofs = prove
    if node.ndim == 2:  # P paths per row: prove each path's node
        check_proofs = jax.vmap(prove, in_axes=(None, 1, None, None), out_axes=1)
    proven, exact = check_proofs(tree, node, solved, solved_values)
    prove_at = jnp.where(on_path & proven & ~solved[rows, node], node, tree.max_nodes)
    return (solved.at[rows, prove_at].set(True, mode="drop"),
            solved_values.at[rows, prove_at].set(exact, mode="drop"))


@dataclasses.dataclass(frozen=True)
class Solver(SearchPlugin):
    """The MCTS-solver's hooks (module docstring). Its arrays are still the
    tree's `solved` and `solved_values` (its record is None)."""

    def searches(self, tree, record):
        return ~tree.solved[:, tree_lib.ROOT_INDEX]

    def open_slots(self, tree, record, stats):
        return ~stats.solved

    def revisit_count(self, tree, record, node, count):
        return jnp.where(tree_lib.gather_nodes(tree.solved, node), 0, count)

    def backup_state(self, tree, record):
        return tree.solved, tree.solved_values

    def back_up_node(self, tree, state, node, on_path):
        return newly_proven(tree, node, on_path, *state)

    def after_backup(self, tree, state):
        solved, solved_values = state
        return tree.replace(solved=solved, solved_values=solved_values), None


SOLVER = Solver()
