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

Virtual visits (`steering`): while a path is in flight its nodes count it
(the paths of one step only: a node's count is kept with the step that
counted it, in one int32, so nothing is taken back after a step).
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

`ParallelPaths` is all of it, a plug-in of the one simulation step
(`phases.simulate`): its `select_leaves` runs the P descents, its
`stats_in_descent` steers them, and `edges_of_leaf` and `backup_of_edges`
evaluate and back up the P leaves. `tree_search.search_plugins` adds it for
P > 1; P = 1 is the plain step.
"""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp

from mcts_jax import phases, plugin
from mcts_jax import tree as tree_lib


@chex.dataclass(frozen=True)
class InFlight:
    """What the paths of a step carry (`ParallelPaths`'s state), per row.

    Attributes:
      visits: [B, N] int32, each node's virtual visits with the step that
        counted them, `step << bits | count` (`ParallelPaths.count_bits`;
        -1: none yet): a node's virtual visits this step are `count` where
        the node's step is the current one, else 0.
      step: [] int32, the current step.
      pending_node, pending_slot: [B, P] int32 where each earlier path of
        the step expands (valid where `pending`).
      pending: [B, P] bool, the path ended at an unexpanded edge.
      enabled: [B, P] bool, the path runs this step (the last step may run
        fewer).
      node: [B] int32, where the descent is (a descent's own).
    """

    visits: chex.Array
    step: chex.Array
    pending_node: chex.Array
    pending_slot: chex.Array
    pending: chex.Array
    enabled: chex.Array
    node: chex.Array

    def in_flight_at(self, rows: chex.Array, node: chex.Array, bits: int) -> chex.Array:
        """The virtual visits of `node` (like `rows`) this step."""
        tagged = self.visits[rows, node]
        return jnp.where((tagged >> bits) == self.step, tagged & ((1 << bits) - 1), 0)

    def add_visit(self, rows: chex.Array, node: chex.Array, where: chex.Array,
                  bits: int) -> "InFlight":
        """One more virtual visit at `node` [B] where `where` [B]."""
        tagged = self.visits[rows, node]
        counted = jnp.where((tagged >> bits) == self.step, tagged + 1, (self.step << bits) + 1)
        write_at = jnp.where(where, node, self.visits.shape[1])
        return self.replace(visits=self.visits.at[rows, write_at].set(counted, mode="drop"))


@dataclasses.dataclass(frozen=True)
class ParallelPaths(plugin.SearchPlugin):
    """P simulations per step (module docstring), a plug-in of the step.

    Attributes:
      paths: P (static).
      steering: one of `options.STEERINGS` (static).
      num_simulations: the simulations of the search (the last step runs
        those left).
    """

    paths: int
    steering: str
    num_simulations: int

    @classmethod
    def of(cls, options) -> "ParallelPaths":
        """The plug-in of a search with resolved `options`; a clear error
        where its steps cannot be told apart in an int32 (`InFlight`)."""
        paths = cls(paths=options.simulations_per_step, steering=options.steering,
                    num_simulations=options.num_simulations)
        steps = -(-options.num_simulations // options.simulations_per_step)
        if steps >= 2 ** (31 - paths.count_bits):
            raise ValueError(f"num_simulations={options.num_simulations} with "
                             f"simulations_per_step={options.simulations_per_step} makes "
                             f"{steps} steps; at most {2 ** (31 - paths.count_bits) - 1} fit: "
                             f"split the search into calls that continue the tree (tree=)")
        return paths

    @property
    def count_bits(self) -> int:
        """The low bits of `InFlight.visits` that count a node's paths of a
        step (at most P); the step is kept above them."""
        return self.paths.bit_length()

    def search_state(self, tree, record, lead_shape) -> InFlight:
        """No virtual visit yet (allocated once per search)."""
        batch_size, max_nodes = tree.batch_size, tree.max_nodes
        per_path = jnp.zeros((batch_size, self.paths), jnp.int32)
        return InFlight(visits=jnp.full((batch_size, max_nodes), -1, jnp.int32),
                        step=jnp.zeros((), jnp.int32), pending_node=per_path,
                        pending_slot=per_path, pending=per_path > 0, enabled=per_path > 0,
                        node=per_path[:, 0])

    def select_leaves(self, tree, record, rules, max_depth, plugins, select_key, searching,
                      states, step):
        """P descents in every row, path p steered by paths < p (path p of
        step s: key `split(select_key, (P, B))[p]`, stamp `s P + p + 1`).
        Returns (LeafChoice [B, P], the simulations spent per row)."""
        batch_size, num_per_step = tree.batch_size, self.paths
        mine = next(index for index, each in enumerate(plugins) if each is self)
        num_paths = jnp.minimum(num_per_step, self.num_simulations - step * num_per_step)
        path_keys = jax.random.split(select_key, (num_per_step, batch_size))
        empty = jnp.zeros((batch_size, num_per_step), jnp.int32)
        enabled = jnp.broadcast_to(jnp.arange(num_per_step) < num_paths,
                                   (batch_size, num_per_step))

        def one_path(p, carry):
            nodes, slots, expands, states = carry
            own = states[mine].replace(pending_node=nodes, pending_slot=slots, pending=expands)
            states = states[:mine] + (own,) + states[mine + 1:]
            leaf = phases.select_leaf(tree, rules, max_depth, plugins, path_keys[p],
                                      searching & enabled[:, p], states=states, path=p,
                                      stamp=step * num_per_step + 1 + p)
            return (nodes.at[:, p].set(leaf.node), slots.at[:, p].set(leaf.slot),
                    expands.at[:, p].set(leaf.expand), leaf.states)

        step_state = states[mine].replace(enabled=enabled, step=jnp.asarray(step, jnp.int32))
        states = states[:mine] + (step_state,) + states[mine + 1:]
        nodes, slots, expands, states = jax.lax.fori_loop(
            0, num_per_step, one_path,
            (empty, empty, jnp.zeros((batch_size, num_per_step), jnp.bool_), states))
        leaf = phases.LeafChoice(node=nodes, slot=slots, expand=expands,
                                 runs=enabled & searching[:, None], states=states)
        return leaf, jnp.where(searching, num_paths, 0).astype(jnp.int32)

    def start_descent(self, tree, record, state: InFlight, path, stamp) -> InFlight:
        """Path `path` leaves the root."""
        return state.replace(node=tree_lib.root_nodes(tree.batch_size))

    def stats_in_descent(self, tree, record, descent: InFlight, node, stats):
        """`stats` of `node` [B] with the step's earlier paths counted (see
        the module docstring)."""
        rows = tree_lib.batch_rows(node.shape[0])
        expanded = stats.index >= 0
        children = jnp.maximum(stats.index, 0)
        visits_in_flight = jnp.where(
            expanded, descent.in_flight_at(rows[:, None], children, self.count_bits), 0)
        slots = jnp.arange(stats.index.shape[-1], dtype=jnp.int32)
        pending_here = (descent.pending & (descent.pending_node == node[:, None]))[:, :, None] & (
            descent.pending_slot[:, :, None] == slots[None, None, :])  # [B, P, K]
        visits_in_flight = visits_in_flight + jnp.sum(pending_here, axis=1, dtype=jnp.int32)
        real = stats.visits
        total = real + visits_in_flight
        if self.steering == "unobserved":
            qvalues = jnp.where(real > 0, stats.qvalues,
                                jnp.where(visits_in_flight > 0, stats.node_value[:, None],
                                          stats.qvalues))
        else:  # virtual_loss: each in-flight visit a loss (-1, internal scale) for the mover
            qvalues = jnp.where(total > 0, (stats.qvalues * real - visits_in_flight)
                                / jnp.maximum(total, 1), stats.qvalues)
        return stats.replace(visits=total, qvalues=qvalues,
                             node_visits=stats.node_visits + descent.in_flight_at(rows, node,
                                                                                  self.count_bits))

    def descend(self, tree, record, descent: InFlight, depth, slot, child, edge_visits, moves,
                stops):
        """The node this path leaves counts it from now on."""
        rows = tree_lib.batch_rows(tree.batch_size)
        descent = descent.add_visit(rows, descent.node, moves, self.count_bits)
        return descent.replace(node=jnp.where(moves, child, descent.node)), stops

    def end_descent(self, tree, record, state, descent: InFlight, path, depth) -> InFlight:
        """The path's last node counts it too (a pending child is counted apart)."""
        rows = tree_lib.batch_rows(tree.batch_size)
        return descent.add_visit(rows, descent.node, descent.enabled[:, path], self.count_bits)

    def edges_of_leaf(self, tree, record, leaf, embedding, plugins):
        """The P leaves' edges; only the first path of each distinct edge creates."""
        creates = leaf.expand & (first_path_per_edge(leaf) == jnp.arange(self.paths)[None, :])
        return leaf.node, leaf.slot, creates, embedding, 0

    def backup_of_edges(self, tree, record, leaf, new, new_index, reached, again, plugins):
        """Each expanding path backs up the node its edge's first path
        reached (created, or one a plug-in linked: a graph's known
        position); the others re-evaluate their leaf (`again`)."""
        first = first_path_per_edge(leaf)
        first_index = jnp.take_along_axis(new_index, first, axis=1)
        takes_new = leaf.expand & jnp.take_along_axis(reached, first, axis=1)
        return plugin.Backup(
            start=jnp.where(takes_new, first_index, again.start),
            count=jnp.where(takes_new, 1, again.count),
            value=jnp.where(takes_new, jnp.take_along_axis(new.value, first, axis=1),
                            again.value),
            states=plugin.each(plugins, "backs_up", tree, leaf.slot, first_index, takes_new,
                               per_plugin=(leaf.states,)))


def first_path_per_edge(leaf: plugin.LeafChoice) -> chex.Array:
    """[B, P] int32: for each expanding path, the first path of its row that
    expands the same edge (itself when it is the first)."""
    same_edge = (leaf.expand[:, :, None] & leaf.expand[:, None, :]
                 & (leaf.node[:, :, None] == leaf.node[:, None, :])
                 & (leaf.slot[:, :, None] == leaf.slot[:, None, :]))  # [B, P, P]
    return jnp.argmax(same_edge, axis=-1).astype(jnp.int32)
