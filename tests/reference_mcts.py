"""A plain-Python reference MCTS (objects and dicts, float64) following the
documented rules of mcts_jax, run on `problems.synthetic.HashedProblem`; the
tests check exact visit counts and values of the JAX search against it."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional

import numpy as np

from problems.synthetic import HashedProblem, random_root_codes  # noqa: F401  (re-export)


@dataclasses.dataclass
class RefNode:
    code: int
    depth: int
    raw_value: float
    reward: float
    discount: float
    terminal: bool
    priors: List[float]
    legal: List[bool]
    visits: int = 0
    value_sum: float = 0.0
    children: Dict[int, "RefNode"] = dataclasses.field(default_factory=dict)
    parent: Optional["RefNode"] = None

    def q(self, action):
        child = self.children[action]
        return child.reward + child.discount * child.value_sum / child.visits


def _softmax_masked(logits, legal):
    best = max(l for l, ok in zip(logits, legal) if ok) if any(legal) else 0.0
    weights = [np.exp(l - best) if ok else 0.0 for l, ok in zip(logits, legal)]
    total = sum(weights)
    return [w / total if total > 0 else 0.0 for w in weights]


def reference_search(problem: HashedProblem, root_code: int, num_simulations: int, *,
                     rule: str, uct_c: float = 1.4, pb_c_init: float = 1.25,
                     pb_c_base: float = 19652.0, max_depth: Optional[int] = None,
                     max_nodes: Optional[int] = None) -> RefNode:
    value, logits, illegal = problem.root_python(root_code)
    legal = [not x for x in illegal]
    root = RefNode(root_code, 0, value, 0.0, 0.0, False, _softmax_masked(logits, legal), legal,
                   visits=1, value_sum=value)
    capacity = max_nodes or num_simulations + 1
    depth_limit = max_depth or capacity
    num_nodes = 1

    def scores(node):
        out = []
        for a in range(problem.num_actions):
            if not node.legal[a]:
                out.append(-np.inf)
                continue
            child = node.children.get(a)
            if rule == "uct":
                if child is None:
                    out.append(np.inf)
                else:
                    out.append(node.q(a) + uct_c * np.sqrt(np.log(node.visits) / child.visits))
            else:
                node_value = node.value_sum / node.visits
                visited = {b: node.q(b) for b in node.children}
                low = min([node_value] + list(visited.values()))
                high = max([node_value] + list(visited.values()))
                q = (visited[a] - low) / max(high - low, 1e-8) if a in visited else 0.0
                n = child.visits if child else 0
                pb_c = pb_c_init + np.log((node.visits + pb_c_base + 1.0) / pb_c_base)
                out.append(q + pb_c * np.sqrt(node.visits) * node.priors[a] / (1 + n))
        return out

    for _ in range(num_simulations):
        node = root
        while True:
            s = scores(node)
            if max(s) == -np.inf:
                leaf = node
                break
            action = int(np.argmax(s))
            if action not in node.children:
                if num_nodes >= capacity:
                    leaf = node
                    break
                code = problem.step_code(node.code, action)
                terminal = problem.terminal(code)
                child_illegal = problem.illegal(code) if problem.illegal_eighths else \
                    [False] * problem.num_actions
                child_legal = [not (x or terminal) for x in child_illegal]
                leaf = RefNode(code, node.depth + 1, 0.0 if terminal else problem.value(code),
                               problem.reward(code), 0.0 if terminal else problem.discount,
                               terminal, _softmax_masked(problem.logits(code), child_legal),
                               child_legal, parent=node)
                node.children[action] = leaf
                num_nodes += 1
                break
            node = node.children[action]
            if node.terminal or node.depth >= depth_limit:
                leaf = node
                break
        value = leaf.raw_value
        node = leaf
        while node is not None:
            node.visits += 1
            node.value_sum += value
            value = node.reward + node.discount * value
            node = node.parent
    return root


def tree_to_reference_shape(tree, row: int):
    """Reads row `row` of a mcts_jax Tree into nested dicts keyed by action paths:
    {path tuple: (visits, value_sum)}."""
    children = np.asarray(tree.children[row])
    visits = np.asarray(tree.node_visits[row])
    sums = np.asarray(tree.value_sums[row])
    out = {}

    def walk(node, path):
        out[path] = (int(visits[node]), float(sums[node]))
        for action, child in enumerate(children[node]):
            if child >= 0:
                walk(int(child), path + (action,))

    walk(0, ())
    return out


def reference_to_shape(root: RefNode):
    out = {}

    def walk(node, path):
        out[path] = (node.visits, node.value_sum)
        for action, child in node.children.items():
            walk(child, path + (action,))

    walk(root, ())
    return out

