"""A plain-Python reference Monte Carlo graph search (dicts, float64),
written from the rules that mcts_jax/graph.py documents, on `DagGame`:

- one node per position; a new edge to a known position points to its node;
- edges count their own visits; a node's visits are 1 + its edges' visits
  and its value sum is recomputed from its children after every simulation:
  `raw + sum_edges visits * (reward + discount * child value sum / child visits)`;
- a descent takes the argmax of UCB1 over edges (`Q + c sqrt(ln N / n)`,
  n the edge's visits, an unvisited legal edge +inf, the lowest action
  among ties) and stops at a new edge, a terminal child, or a child with
  more visits than the edge it came through;
- the backup adds one visit to every edge of the path and recomputes the
  nodes of the path from the deepest up.
The tests compare visit counts, edge visits and values node for node.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import numpy as np

from dag_game import DagGame


@dataclasses.dataclass
class RefNode:
    mask: int
    raw_value: float
    reward: float
    discount: float
    terminal: bool
    legal: List[bool]
    visits: int = 1
    value_sum: float = 0.0
    edges: Dict[int, list] = dataclasses.field(default_factory=dict)  # action -> [node, visits]

    def q(self, action: int) -> float:
        child = self.edges[action][0]
        return child.reward + child.discount * child.value_sum / child.visits

    def recompute(self) -> None:
        self.visits = 1 + sum(visits for _, visits in self.edges.values())
        self.value_sum = self.raw_value + sum(visits * self.q(action)
                                              for action, (_, visits) in self.edges.items())


def reference_graph_search(game: DagGame, root_mask: int, num_simulations: int, *,
                           uct_c: float = 1.4, max_nodes: Optional[int] = None
                           ) -> Dict[int, RefNode]:
    """UCT graph search from `root_mask`; returns its nodes by position."""
    def make(mask: int) -> RefNode:
        terminal = game.terminal(mask)
        raw = 0.0 if terminal else game.value(mask)
        return RefNode(mask, raw, game.reward(mask), 0.0 if terminal else -1.0, terminal,
                       game.legal(mask), value_sum=raw)

    root = make(root_mask)
    root.reward, root.discount = 0.0, 0.0
    nodes = {root_mask: root}
    capacity = max_nodes or num_simulations + 1

    def scores(node: RefNode) -> List[float]:
        out = []
        for action in range(game.num_actions):
            if not node.legal[action]:
                out.append(-np.inf)
            elif action not in node.edges or node.edges[action][1] == 0:
                out.append(np.inf)
            else:
                visits = node.edges[action][1]
                out.append(node.q(action) + uct_c * np.sqrt(np.log(node.visits) / visits))
        return out

    for _ in range(num_simulations):
        node, path, actions = root, [root], []
        while True:
            s = scores(node)
            if max(s) == -np.inf:
                break
            action = int(np.argmax(s))
            if action not in node.edges:
                child_mask = node.mask | 1 << action
                if child_mask not in nodes:
                    if len(nodes) >= capacity:  # full: a known position can still be linked
                        break
                    nodes[child_mask] = make(child_mask)
                node.edges[action] = [nodes[child_mask], 0]
                path.append(nodes[child_mask])
                actions.append(action)
                break
            child, edge_visits = node.edges[action]
            path.append(child)
            actions.append(action)
            if child.terminal or edge_visits < child.visits:
                break
            node = child
        for depth in range(len(path) - 1, -1, -1):
            if depth < len(path) - 1:
                path[depth].edges[actions[depth]][1] += 1
            path[depth].recompute()
    return nodes
