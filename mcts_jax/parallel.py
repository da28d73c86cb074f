"""Several simulations per step in every tree: `simulations_per_step=P`.

Our speed comes from the batch: B trees advance together, one recurrent_fn
call per step. With one tree (analysing one position, B = 1) a step is too
small to use the machine. With P > 1 every step of the search

1. descends P paths in every tree, one after the other, each seeing the
   earlier paths of the step as *virtual visits* (below) so that later
   paths are steered away from them;
2. evaluates the B x P leaves in one `recurrent_fn` call (batch B * P);
3. creates the new nodes and backs up all P paths at once (visits of paths
   that share nodes add up), taking the virtual visits back.

`num_simulations` stays the total: the last step runs the paths that are
left (`num_simulations - (steps - 1) * P`).

Virtual visits (`steering`): while a path is in flight its nodes count it.
- "unobserved" (default; WU-UCT's unobserved samples, Liu et al. 2020): the
  visit counts a rule reads include the in-flight paths, the Q-values do not
  change (they are the mean of what came back). An edge with only in-flight
  visits (a pending expansion) reads Q = the node's mean value.
- "virtual_loss" (Leela, KataGo): each in-flight visit also counts as a
  loss for the player choosing the edge (Q moves towards the lowest value).
Both act only on the `ChildrenStats` a rule reads, so every rule (UCT,
PUCT, Gumbel, a user's own) is steered with no edit, and the tree's own
statistics never hold a virtual visit.

Collisions: two paths of one step that end at the same unexpanded edge
create one node (the first path's); the later path backs up that node's
evaluation as its own (the new node starts with two visits and twice its
value). Paths that end at a terminal node, at the depth limit or in a full
tree back up the stored value of their last node, as with P = 1. Capacity
(`max_nodes`) is respected: a path that would create a node past it
re-evaluates its last node instead.

P = 1 runs `phases.simulate` (one path per step) instead.
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp

from mcts_jax import base, phases, plugin
from mcts_jax import tree as tree_lib
from mcts_jax.options import SearchOptions
from mcts_jax.plugin import Plugins
from mcts_jax.selection import Rules


@dataclasses.dataclass(frozen=True)
class Steering(phases.OnePathPerStep):
    """The descent strategy of path p of a step: it sees the step's earlier
    paths (p' < p). What it counts in flight is the virtual visits [B, N]
    int32: earlier paths through each node, this path's added as it goes
    down.

    Attributes:
      pending_node, pending_slot: [B, P] int32 where each earlier path
        expands (valid where `pending`).
      pending: [B, P] bool, the path ended at an unexpanded edge.
      enabled: [B] bool, this path runs (the last step may run fewer).
      rule: one of `options.STEERINGS` (static).
    """

    pending_node: chex.Array
    pending_slot: chex.Array
    pending: chex.Array
    enabled: chex.Array
    rule: str

    def starts(self, active: chex.Array) -> chex.Array:
        return active & self.enabled

    def stats_seen(self, stats: tree_lib.ChildrenStats, node: chex.Array,
                   in_flight: chex.Array) -> tree_lib.ChildrenStats:
        """`stats` of `node` [B] with the in-flight paths counted (see the
        module docstring); `in_flight` [B, N] the current virtual visits."""
        rows = tree_lib.batch_rows(node.shape[0])
        expanded = stats.index >= 0
        visits_in_flight = jnp.where(expanded,
                                     in_flight[rows[:, None], jnp.maximum(stats.index, 0)], 0)
        slots = jnp.arange(stats.index.shape[-1], dtype=jnp.int32)
        pending_here = (self.pending & (self.pending_node == node[:, None]))[:, :, None] & (
            self.pending_slot[:, :, None] == slots[None, None, :])  # [B, P, K]
        visits_in_flight = visits_in_flight + jnp.sum(pending_here, axis=1, dtype=jnp.int32)
        real = stats.visits
        total = real + visits_in_flight
        if self.rule == "unobserved":
            qvalues = jnp.where(real > 0, stats.qvalues,
                                jnp.where(visits_in_flight > 0, stats.node_value[:, None],
                                          stats.qvalues))
        else:  # virtual_loss: each in-flight visit a loss (-1, internal scale) for the mover
            qvalues = jnp.where(total > 0, (stats.qvalues * real - visits_in_flight)
                                / jnp.maximum(total, 1), stats.qvalues)
        return stats.replace(visits=total, qvalues=qvalues,
                             node_visits=stats.node_visits + in_flight[rows, node])

    def leaves_node(self, in_flight, rows, node, leaving):
        """The node this path leaves counts it from now on."""
        return add_visits(in_flight, rows, node, leaving, 1)

    def ends_at(self, in_flight, rows, node):
        """The path's last node counts it too (a pending child is counted apart)."""
        return add_visits(in_flight, rows, node, self.enabled, 1)


@dataclasses.dataclass(frozen=True)
class TakeBack(phases.OnePathPerStep):
    """The backup strategy of a step's P paths: every path that ran walks up
    (a no-op path too) and takes its virtual visit back from each node it
    updates. In flight: the virtual visits [B, N], all zero after the backup.

    Attributes:
      enabled: [B, P] bool, the path ran.
    """

    enabled: chex.Array

    def walks_up(self, update: phases.Backup) -> chex.Array:
        return (update.count > 0) | self.enabled

    def backs_up_node(self, in_flight, rows, node, on_path):
        return add_visits(in_flight, rows, node, on_path, -1)


def add_visits(visits: chex.Array, rows: chex.Array, node: chex.Array, where: chex.Array,
               amount: int) -> chex.Array:
    """`visits` [B, N] with `amount` added at `node` (like `rows`) where `where`."""
    return visits.at[rows, jnp.where(where, node, visits.shape[1])].add(amount, mode="drop")


def select_paths(tree: tree_lib.Tree, rules: Rules, options: SearchOptions,
                 select_key: chex.PRNGKey, num_paths: chex.Array,
                 visits: chex.Array, searching: chex.Array, states: tuple = (),
                 first_stamp=0, plugins: Plugins = ()):
    """P descents in every row, path p steered by paths < p. `num_paths` []:
    how many of the P run this step; `searching` [B]: the rows that search
    (`phases.rows_at_step`). `states`: what each plug-in carries, for
    descents of leading shape [B, P] (path p is descent number
    `first_stamp + p`). Returns (LeafChoice [B, P] (its states: the
    plug-ins' after every path), enabled [B, P], virtual visits [B, N])."""
    batch_size, num_per_step = tree.batch_size, options.simulations_per_step
    path_keys = jax.random.split(select_key, (num_per_step, batch_size))
    empty = jnp.zeros((batch_size, num_per_step), jnp.int32)
    enabled = jnp.broadcast_to(jnp.arange(num_per_step) < num_paths,
                               (batch_size, num_per_step))

    def one_path(p, carry):
        nodes, slots, expands, visits, states = carry
        steering = Steering(pending_node=nodes, pending_slot=slots, pending=expands,
                            enabled=enabled[:, p], rule=options.steering)
        leaf = phases.select_leaf(tree, rules, options.depth_limit, plugins,
                                  path_keys[p], searching, steering, visits, states=states,
                                  path=p, stamp=first_stamp + p)
        return (nodes.at[:, p].set(leaf.node), slots.at[:, p].set(leaf.slot),
                expands.at[:, p].set(leaf.expand), leaf.in_flight, leaf.states)

    nodes, slots, expands, visits, states = jax.lax.fori_loop(
        0, num_per_step, one_path,
        (empty, empty, jnp.zeros((batch_size, num_per_step), jnp.bool_), visits, states))
    return (phases.LeafChoice(node=nodes, slot=slots, expand=expands, states=states),
            enabled, visits)


def first_path_per_edge(leaf: phases.LeafChoice) -> chex.Array:
    """[B, P] int32: for each expanding path, the first path of its row that
    expands the same edge (itself when it is the first)."""
    same_edge = (leaf.expand[:, :, None] & leaf.expand[:, None, :]
                 & (leaf.node[:, :, None] == leaf.node[:, None, :])
                 & (leaf.slot[:, :, None] == leaf.slot[:, None, :]))  # [B, P, P]
    return jnp.argmax(same_edge, axis=-1).astype(jnp.int32)


def simulate_paths(step_index: int, carry: tuple, *, params: base.Params,
                   recurrent_fn: base.RecurrentFn, rules: Rules,
                   options: SearchOptions, plugins: Plugins = ()) -> tuple:
    """One step of P paths in every row (the loop body of `run_paths`):
    select them, evaluate the B x P leaves in one recurrent_fn call
    (`phases.expand` with E = P), create one node per distinct unexpanded
    edge (capacity permitting; in a graph, one per distinct position) and
    back up every path, taking the virtual visits back. `carry`: (key,
    tree, virtual visits [B, N], what each plug-in
    carries ([B, P] descents), `budget_rows` as in `phases.simulate`).
    Keys: `key, select_key, expand_key = split(key, 3)`."""
    key, tree, visits, states, budget_rows = carry
    num_per_step = options.simulations_per_step
    searching = phases.rows_at_step(plugins, tree, budget_rows)
    key, select_key, expand_key = jax.random.split(key, 3)
    num_paths = jnp.minimum(num_per_step, options.num_simulations - step_index * num_per_step)
    leaf, enabled, visits = select_paths(tree, rules, options, select_key, num_paths, visits,
                                         searching, states, step_index * num_per_step + 1,
                                         plugins)
    embedding = phases.leaf_embeddings(params, expand_key, tree, recurrent_fn, leaf.node,
                                       plugins)
    first = first_path_per_edge(leaf)
    creates = leaf.expand & (first == jnp.arange(num_per_step)[None, :])
    tree, new, new_index, reached = phases.expand(params, expand_key, tree, recurrent_fn,
                                                  leaf.node, leaf.slot, creates, embedding,
                                                  options, plugins=plugins, states=leaf.states)
    # Each expanding path backs up the node its edge's first path reached
    # (created, or one a plug-in linked: a graph's known position).
    first_index = jnp.take_along_axis(new_index, first, axis=1)
    takes_new = leaf.expand & jnp.take_along_axis(reached, first, axis=1)
    again = phases.revisit(tree, leaf.node, plugins, runs=enabled & searching[:, None])
    update = phases.Backup(
        start=jnp.where(takes_new, first_index, again.start),
        count=jnp.where(takes_new, 1, again.count),
        value=jnp.where(takes_new, jnp.take_along_axis(new.value, first, axis=1), again.value),
        states=plugin.each(plugins, "backs_up", tree, leaf.slot, first_index, takes_new,
                           per_plugin=(leaf.states,)))
    # The backup takes a virtual visit back from every node it updates; a
    # node the step added to a path holds none yet: give it the one to take.
    rows = tree_lib.batch_rows(tree.batch_size)[:, None]
    visits = add_visits(visits, rows, update.start, takes_new, 1)
    tree, visits = phases.backup(tree, update, plugins, TakeBack(enabled=enabled),
                                 visits)
    budget_rows = phases.count_step(plugins, tree, budget_rows,
                                    jnp.where(searching, num_paths, 0).astype(jnp.int32),
                                    options.num_simulations)
    return key, tree, visits, update.states, budget_rows


def run_paths(params: base.Params, rng_key: chex.PRNGKey, tree: tree_lib.Tree,
              recurrent_fn: base.RecurrentFn, rules: Rules, options: SearchOptions,
              plugins: Plugins = ()):
    """`options.num_simulations` simulations on every row of `tree`, P =
    `options.simulations_per_step` per step (see the module docstring).
    Returns (tree, what each plug-in carries at the end)."""
    num_steps = -(-options.num_simulations // options.simulations_per_step)
    # Virtual visits: zero between steps; allocated once per search.
    no_visits = jnp.zeros((tree.batch_size, tree.max_nodes), jnp.int32)
    states = plugin.each(plugins, "search_state", tree, (tree.batch_size,
                                                  options.simulations_per_step))
    step = functools.partial(simulate_paths, params=params, recurrent_fn=recurrent_fn,
                             rules=rules, options=options, plugins=plugins)
    _, tree, _, states = phases.run_simulations(
        step, (rng_key, tree, no_visits, states), num_steps, options, plugins)
    return tree, states
