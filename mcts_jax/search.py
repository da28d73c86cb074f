"""The search loop: each simulation selects, expands and backs up, for B rows.

The three phases live here, one function each:

- `select_leaf`: from the root, follow the selection rule down to an
  unexpanded edge, a terminal node, a node at `max_depth`, or a dead end.
- `expand`: one batched `recurrent_fn` call; rows that reached an unexpanded
  edge write the new node into their next free slot.
- `backup`: add the leaf value to every node on the path to the root, flipping
  it through each edge's `reward + discount * value`.

Performance: the loops carry only per-row scalars ([B] node index, depth,
value) plus, in `backup`, the two arrays it updates by scatter. Their
predicates are scalars (`jnp.any` over the batch), and no step reads or writes
all N nodes, so one simulation costs O(depth x K) per row however large the
tree is. The search is batched by construction; do not `vmap` it (a vmapped
while-loop rewrites every carried array on every iteration).
"""

from __future__ import annotations

from typing import Any, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import base
from mcts_jax import tree as tree_lib
from mcts_jax.selection import ScoreFn


@chex.dataclass(frozen=True)
class LeafChoice:
    """Where a simulation's descent stopped, per row, all [B].

    Attributes:
      node: the last node reached. When `expand` is True it is the parent of
        the new node; otherwise it is the leaf whose value is backed up again
        (terminal, at max_depth, a dead end, or a parent in a full tree).
      slot: the child slot of `node` to expand (meaningful when `expand`).
      expand: bool, a new node is created below `node` at `slot`.
    """

    node: chex.Array
    slot: chex.Array
    expand: chex.Array


def select_leaf(tree: tree_lib.Tree, score_fn: ScoreFn, max_depth: int) -> LeafChoice:
    """Descends every row from the root; O(depth x K) per row."""
    batch_size = tree.batch_size
    rows = tree_lib.batch_rows(batch_size)
    root = jnp.full((batch_size,), tree_lib.ROOT_INDEX, jnp.int32)
    has_room = tree.num_nodes < tree.max_nodes

    def cond(state):
        return jnp.any(state["active"])

    def body(state):
        node, depth, active = state["node"], state["depth"], state["active"]
        scores = score_fn(tree, node, depth)
        slot = jnp.argmax(scores, axis=-1).astype(jnp.int32)
        has_legal_child = jnp.max(scores, axis=-1) > -jnp.inf
        child = tree.children[rows, node, slot].astype(jnp.int32)
        can_descend = active & has_legal_child & (child >= 0)
        next_depth = depth + 1
        next_node = jnp.where(can_descend, child, node)
        stops_below = tree.is_terminal[rows, next_node] | (next_depth >= max_depth)
        expand = active & has_legal_child & (child == tree_lib.UNEXPANDED) & has_room
        return dict(
            node=next_node,
            slot=jnp.where(active, slot, state["slot"]),
            depth=jnp.where(can_descend, next_depth, depth),
            active=can_descend & ~stops_below,
            expand=state["expand"] | expand,
        )

    state = dict(
        node=root,
        slot=jnp.zeros((batch_size,), jnp.int32),
        depth=jnp.zeros((batch_size,), jnp.int32),
        active=jnp.ones((batch_size,), jnp.bool_),
        expand=jnp.zeros((batch_size,), jnp.bool_),
    )
    state = jax.lax.while_loop(cond, body, state)
    return LeafChoice(node=state["node"], slot=state["slot"], expand=state["expand"])


def check_recurrent_output(output: base.RecurrentFnOutput, batch_size: int,
                           num_actions: int) -> None:
    """Static shape checks on what recurrent_fn returned (trace time, free)."""
    expected = dict(reward=(batch_size,), discount=(batch_size,),
                    prior_logits=(batch_size, num_actions), value=(batch_size,))
    if output.invalid_actions is not None:
        expected["invalid_actions"] = (batch_size, num_actions)
    for name, shape in expected.items():
        got = tuple(jnp.shape(getattr(output, name)))
        if got != shape:
            raise ValueError(
                f"recurrent_fn returned {name} of shape {got}; expected {shape} "
                f"(B={batch_size} searches, A={num_actions} actions, as in the root)")


def expand(params: base.Params, rng_key: chex.PRNGKey, tree: tree_lib.Tree,
           recurrent_fn: base.RecurrentFn, leaf: LeafChoice) -> tuple[tree_lib.Tree, chex.Array]:
    """Calls recurrent_fn once for the batch and writes the new nodes.

    Rows with `leaf.expand` False still take part in the call (the batch is
    the unit of work) but write nothing.

    Returns:
      The updated tree and the [B] node index to back up from: the new node
      where a row expanded, else `leaf.node`.
    """
    batch_size, max_nodes = tree.batch_size, tree.max_nodes
    rows = tree_lib.batch_rows(batch_size)
    action = tree_lib.slot_actions(tree, leaf.node)[rows, leaf.slot]
    parent_embedding = tree_lib.gather_embeddings(tree, leaf.node)
    output, embedding = recurrent_fn(params, rng_key, action, parent_embedding)
    check_recurrent_output(output, batch_size, tree.num_actions)

    new_node = tree.num_nodes
    write_at = jnp.where(leaf.expand, new_node, max_nodes)  # out of range: dropped
    discount = output.discount.astype(jnp.float32)
    terminal = discount == 0
    value = jnp.where(terminal, 0.0,
                      tree_lib.to_internal_scale(output.value.astype(jnp.float32),
                                                 tree.value_range))
    reward = tree_lib.to_internal_scale(output.reward.astype(jnp.float32), tree.value_range)
    if output.invalid_actions is None:
        legal = jnp.ones((batch_size, tree.num_actions), jnp.bool_)
    else:
        legal = ~output.invalid_actions.astype(jnp.bool_)
    legal = legal & ~terminal[:, None]
    priors = tree_lib.masked_priors(output.prior_logits.astype(jnp.float32), legal)
    slots = jnp.where(legal, tree_lib.UNEXPANDED, tree_lib.ILLEGAL).astype(tree.children.dtype)

    def write(array, values):
        return array.at[rows, write_at].set(values, mode="drop")

    parent_write_at = jnp.where(leaf.expand, leaf.node, max_nodes)
    tree = tree.replace(
        node_visits=write(tree.node_visits, 0),
        value_sums=write(tree.value_sums, 0.0),
        raw_values=write(tree.raw_values, value),
        parents=write(tree.parents, leaf.node),
        actions_from_parent=write(tree.actions_from_parent, action),
        rewards=write(tree.rewards, reward),
        discounts=write(tree.discounts, discount),
        is_terminal=write(tree.is_terminal, terminal),
        children=write(tree.children, slots).at[rows, parent_write_at, leaf.slot].set(
            new_node.astype(tree.children.dtype), mode="drop"),
        priors=write(tree.priors, priors),
        embeddings=jax.tree.map(write, tree.embeddings, embedding),
        num_nodes=tree.num_nodes + leaf.expand.astype(jnp.int32),
    )
    return tree, jnp.where(leaf.expand, new_node, leaf.node)


def backup(tree: tree_lib.Tree, leaf_node: chex.Array) -> tree_lib.Tree:
    """Adds one visit and the leaf's value to every node from `leaf_node` [B]
    up to the root, converting the value through each edge with
    `reward + discount * value` (so a two-player value changes sign)."""
    batch_size, max_nodes = tree.batch_size, tree.max_nodes
    rows = tree_lib.batch_rows(batch_size)

    def cond(state):
        return jnp.any(state[2] >= 0)

    def body(state):
        node_visits, value_sums, node, value = state
        on_path = node >= 0
        write_at = jnp.where(on_path, node, max_nodes)
        node_visits = node_visits.at[rows, write_at].add(1, mode="drop")
        value_sums = value_sums.at[rows, write_at].add(value, mode="drop")
        safe_node = jnp.maximum(node, 0)
        value = tree.rewards[rows, safe_node] + tree.discounts[rows, safe_node] * value
        node = jnp.where(on_path, tree.parents[rows, safe_node], tree_lib.NO_PARENT)
        return node_visits, value_sums, node, value

    leaf_value = tree.raw_values[rows, leaf_node]
    node_visits, value_sums, _, _ = jax.lax.while_loop(
        cond, body, (tree.node_visits, tree.value_sums, leaf_node, leaf_value))
    return tree.replace(node_visits=node_visits, value_sums=value_sums)


def run_simulations(params: base.Params, rng_key: chex.PRNGKey, tree: tree_lib.Tree,
                    recurrent_fn: base.RecurrentFn, score_fn: ScoreFn,
                    num_simulations: int, max_depth: Optional[int]) -> tree_lib.Tree:
    """Runs `num_simulations` simulations on every row of `tree`.

    Simulation i uses `fold_in(rng_key, i)` for its recurrent_fn call, so the
    result depends only on the key, never on the batch size or the device.
    """
    depth_limit = tree.max_nodes if max_depth is None else max_depth

    def simulate(simulation_index, tree):
        key = jax.random.fold_in(rng_key, simulation_index)
        leaf = select_leaf(tree, score_fn, depth_limit)
        tree, leaf_node = expand(params, key, tree, recurrent_fn, leaf)
        return backup(tree, leaf_node)

    return jax.lax.fori_loop(0, num_simulations, simulate, tree)

