"""Draw one search of a batch as a tree: visits, values and priors.

    out = mcts_jax.uct_policy(...)
    mcts_jax.visualize.render_tree(out.search_tree, batch_index=0, max_depth=2)

`render_tree` returns a `TreeImage`, which a notebook shows inline (SVG from
graphviz when the `graphviz` Python package and its `dot` program are
installed, else a PNG drawn with matplotlib). `tree_nodes` gives the same
data as plain Python records, and `to_dot` the graphviz source text without
needing graphviz.

What is drawn, for the row `batch_index` of the batch:

* A node box: its node index, `N` its visits, and `V` its mean backed-up
  value from the point of view of the player to move AT THAT NODE (user
  scale, `tree.value_range`). A proven node (terminal, or proven by the
  solver) shows its exact value and a thick border; the fill colour is `V`
  (red low, blue high, white 0).
* An edge parent -> child: the action label, `n` the child's visits, `Q`
  = reward + discount * child mean value, from the point of view of the
  player to move at the PARENT (what the parent's mover compares), and `P`
  the prior of the slot.

Only expanded children are drawn; at each node the `top_k` first of its proven
wins, then its most visited children, are kept, down to `max_depth` edges below
the root (root = depth 0).
Everything is read on the host once; nothing here runs inside `jit`.
"""

from __future__ import annotations

import base64
import dataclasses
import inspect
import io
import shutil
from typing import Any, Callable, List, Optional, Sequence, Union

import jax
import numpy as np

from mcts_jax import tree as tree_lib

# action_label(node, action) -> str: node is the parent's node index in the row.
ActionLabel = Union[None, Sequence[str], Callable[..., str]]


@dataclasses.dataclass(frozen=True)
class NodeRecord:
    """One drawn node of one search (plain Python values).

    Attributes:
      node: node index in the tree row (0 = root).
      parent: parent's node index; -1 for the root.
      depth: edges from the root.
      action: action id of the edge into the node; -1 for the root.
      label: the action's display label ("" for the root).
      visits: the node's visit count N.
      value: mean backed-up value for the player to move at the node (user scale).
      raw_value: the evaluator's value at expansion, same point of view.
      qvalue: reward + discount * value, for the player to move at the parent
        (user scale); 0 for the root.
      prior: prior probability of the edge into the node; 1 for the root.
      terminal: the edge into the node ended the game.
      proven: the node's exact value is known (terminal or solver-proven).
      proven_value: that exact value for the player to move at the node
        (user scale); 0 if not proven.
      hidden_children: expanded children not drawn (beyond `top_k` or
        `max_depth`).
    """

    node: int
    parent: int
    depth: int
    action: int
    label: str
    visits: int
    value: float
    raw_value: float
    qvalue: float
    prior: float
    terminal: bool
    proven: bool
    proven_value: float
    hidden_children: int


def _row(tree: tree_lib.Tree, batch_index: int) -> dict:
    """The arrays of one row as numpy (host) arrays."""
    if not 0 <= batch_index < tree.batch_size:
        raise ValueError(f"batch_index must be in [0, {tree.batch_size}), got {batch_index}")
    names = ("node_visits", "value_sums", "raw_values", "parents", "actions_from_parent",
             "rewards", "discounts", "is_terminal", "solved", "solved_values", "children",
             "priors")
    row = {name: np.asarray(jax.device_get(getattr(tree, name)[batch_index]))
           for name in names}
    if tree.children_actions is None:
        row["slot_actions"] = np.broadcast_to(np.arange(tree.num_slots), row["children"].shape)
    else:
        row["slot_actions"] = np.asarray(jax.device_get(tree.children_actions[batch_index]))
    row["num_nodes"] = int(tree.num_nodes[batch_index])
    return row


def _labeller(action_label: ActionLabel) -> Callable[[int, int], str]:
    if action_label is None:
        return lambda node, action: str(action)
    if not callable(action_label):
        names = list(action_label)
        return lambda node, action: str(names[action])
    try:
        num_params = len(inspect.signature(action_label).parameters)
    except (TypeError, ValueError):
        num_params = 2
    if num_params == 1:
        return lambda node, action: str(action_label(action))
    return lambda node, action: str(action_label(node, action))


def tree_nodes(tree: tree_lib.Tree, batch_index: int = 0, *, max_depth: int = 2,
               top_k: Optional[int] = 5, min_visits: int = 1,
               action_label: ActionLabel = None) -> List[NodeRecord]:
    """The nodes `render_tree` draws, depth first from the root; at each node its
    proven wins (for the player to move there) first, then by decreasing visits.

    Args:
      tree: a `Tree` (dense or compact layout), e.g. `out.search_tree`.
      batch_index: which search of the batch.
      max_depth: deepest depth drawn (root = 0).
      top_k: at most this many children per node (the most visited); None: all.
      min_visits: children with fewer visits are not drawn.
      action_label: how an action is written: None (its id), a sequence
        indexed by action id, `f(action)`, or `f(node, action)` with the
        parent's node index (e.g. a chess move in UCI needs the position).
    """
    tree = tree_lib.source_of(tree)  # an MctxTree: the tree it was computed from
    if max_depth < 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}")
    row = _row(tree, batch_index)
    if row["num_nodes"] == 0:
        return []
    label = _labeller(action_label)
    to_user = lambda x: float(tree_lib.to_user_scale(np.float32(x), tree.value_range))
    visits = row["node_visits"]

    def record(node, parent, depth, prior, hidden):
        n = int(visits[node])
        mean = float(row["value_sums"][node]) / max(n, 1)
        q = float(row["rewards"][node]) + float(row["discounts"][node]) * mean
        action = int(row["actions_from_parent"][node]) if parent >= 0 else -1
        return NodeRecord(
            node=node, parent=parent, depth=depth, action=action,
            label="" if parent < 0 else label(parent, action),
            visits=n, value=to_user(mean), raw_value=to_user(row["raw_values"][node]),
            qvalue=to_user(q) if parent >= 0 else 0.0,
            prior=float(prior), terminal=bool(row["is_terminal"][node]),
            proven=bool(row["solved"][node]),
            proven_value=to_user(row["solved_values"][node]) if row["solved"][node] else 0.0,
            hidden_children=hidden)

    def kept_children(node):
        index = row["children"][node].astype(np.int64)
        slots = np.flatnonzero(index >= 0)
        slots = slots[visits[index[slots]] >= min_visits]
        kids = index[slots]
        # Proven wins for the node's mover first (a proof is few visits), then most visited.
        proven_win = row["solved"][kids] & (
            row["rewards"][kids] + row["discounts"][kids] * row["solved_values"][kids]
            >= 1.0 - 1e-6)
        order = slots[np.lexsort((-visits[kids], ~proven_win))]
        num_expanded = int(np.sum(index >= 0))
        return order, num_expanded

    records: List[NodeRecord] = []
    stack = [(0, -1, 0, 1.0)]
    while stack:
        node, parent, depth, prior = stack.pop()
        order, num_expanded = kept_children(node)
        if depth >= max_depth:
            order = order[:0]
        elif top_k is not None:
            order = order[:top_k]
        records.append(record(node, parent, depth, prior, num_expanded - len(order)))
        children = row["children"][node]
        for slot in order[::-1]:  # pushed in reverse: popped most visited first
            stack.append((int(children[slot]), node, depth + 1, row["priors"][node, slot]))
    return records


def _fmt(x: float) -> str:
    return f"{x:+.2f}"


def _node_text(r: NodeRecord) -> str:
    lines = [f"#{r.node}  N={r.visits}", f"V={_fmt(r.value)}"]
    if r.terminal:  # its value is 0 by convention; the result is the edge's reward (Q)
        lines.append("terminal")
    elif r.proven:
        lines.append(f"proven {_fmt(r.proven_value)}")
    if r.hidden_children:
        lines.append(f"(+{r.hidden_children} more)")
    return "\n".join(lines)


def _edge_text(r: NodeRecord) -> str:
    return f"{r.label}\nn={r.visits} Q={_fmt(r.qvalue)}\nP={r.prior:.2f}"


def _colour(value: float, value_range) -> str:
    """Hex fill colour for a value: red (low) .. white (mid) .. blue (high)."""
    low, high = value_range
    t = float(np.clip((value - low) / (high - low), 0.0, 1.0)) * 2.0 - 1.0
    if t < 0:  # towards red
        rgb = (1.0, 1.0 + 0.55 * t, 1.0 + 0.55 * t)
    else:      # towards blue
        rgb = (1.0 - 0.55 * t, 1.0 - 0.35 * t, 1.0)
    return "#" + "".join(f"{int(round(255 * c)):02x}" for c in rgb)


def to_dot(tree: tree_lib.Tree, batch_index: int = 0, *, max_depth: int = 2,
           top_k: Optional[int] = 5, min_visits: int = 1, action_label: ActionLabel = None,
           title: Optional[str] = None) -> str:
    """The graphviz DOT source of the drawing (needs no graphviz install).
    Arguments as in `tree_nodes`."""
    tree = tree_lib.source_of(tree)  # an MctxTree: the tree it was computed from
    records = tree_nodes(tree, batch_index, max_depth=max_depth, top_k=top_k,
                         min_visits=min_visits, action_label=action_label)
    lines = ["digraph mcts {", '  node [shape=box, style="rounded,filled", fontname="Helvetica", '
             'fontsize=10];', '  edge [fontname="Helvetica", fontsize=9];']
    if title:
        lines.append(f'  labelloc="t"; label="{_escape(title)}";')
    for r in records:
        pen = 3 if r.proven else 1
        lines.append(f'  n{r.node} [label="{_escape(_node_text(r))}", '
                     f'fillcolor="{_colour(r.value, tree.value_range)}", penwidth={pen}];')
    for r in records[1:]:
        width = 1.0 + 3.0 * r.visits / max(records[0].visits, 1)
        lines.append(f'  n{r.parent} -> n{r.node} [label="{_escape(_edge_text(r))}", '
                     f'penwidth={width:.2f}];')
    lines.append("}")
    return "\n".join(lines)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def graphviz_available() -> bool:
    """True when the `graphviz` Python package and its `dot` program are installed."""
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


@dataclasses.dataclass
class TreeImage:
    """A rendered tree. Shown inline by Jupyter (SVG or PNG).

    Attributes:
      nodes: the drawn nodes, a list of `NodeRecord`.
      backend: "graphviz" or "matplotlib".
      source: the DOT source text (both backends).
      figure: the matplotlib Figure (matplotlib backend), else None.
      svg: the SVG text (graphviz backend), else None.
    """

    nodes: List[NodeRecord]
    backend: str
    source: str
    figure: Any = None
    svg: Optional[str] = None

    def __repr__(self) -> str:
        return (f"TreeImage(backend={self.backend!r}, {len(self.nodes)} nodes; "
                f"show it in a notebook, or .save('tree.png'))")

    def _repr_svg_(self):
        return self.svg

    def _repr_png_(self):
        if self.figure is None:
            return None
        return self.png()

    def png(self, dpi: int = 80) -> bytes:
        """PNG bytes (matplotlib backend)."""
        if self.figure is None:
            raise ValueError("png() needs the matplotlib backend")
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
        return buffer.getvalue()

    def save(self, path: str) -> None:
        """Writes the image: .svg or .png (matplotlib also .pdf), .dot for the source."""
        if path.endswith(".dot"):
            with open(path, "w") as f:
                f.write(self.source)
        elif self.svg is not None:
            if not path.endswith(".svg"):
                raise ValueError("the graphviz backend saves .svg or .dot")
            with open(path, "w") as f:
                f.write(self.svg)
        else:
            self.figure.savefig(path, bbox_inches="tight")


def render_tree(tree: tree_lib.Tree, batch_index: int = 0, *, max_depth: int = 2,
                top_k: Optional[int] = 5, min_visits: int = 1,
                action_label: ActionLabel = None, title: Optional[str] = None,
                backend: str = "auto", figsize=None) -> TreeImage:
    """Draws search `batch_index` of `tree`, `max_depth` levels deep.

    Args:
      tree: a `Tree` (dense or compact), e.g. `out.search_tree`.
      batch_index: which search of the batch [0, B).
      max_depth, top_k, min_visits, action_label: as in `tree_nodes`.
      title: a caption above the drawing.
      backend: "auto" (graphviz when installed, else matplotlib),
        "graphviz" or "matplotlib".
      figsize: matplotlib figure size in inches (default: from the tree's width).

    Returns:
      A `TreeImage`; the last expression of a notebook cell shows it inline.
    """
    tree = tree_lib.source_of(tree)  # an MctxTree: the tree it was computed from
    if backend not in ("auto", "graphviz", "matplotlib"):
        raise ValueError(f"backend must be 'auto', 'graphviz' or 'matplotlib', got {backend!r}")
    records = tree_nodes(tree, batch_index, max_depth=max_depth, top_k=top_k,
                         min_visits=min_visits, action_label=action_label)
    source = to_dot(tree, batch_index, max_depth=max_depth, top_k=top_k, min_visits=min_visits,
                    action_label=action_label, title=title)
    if backend == "graphviz" or (backend == "auto" and graphviz_available()):
        import graphviz
        svg = graphviz.Source(source).pipe(format="svg").decode("utf-8")
        return TreeImage(nodes=records, backend="graphviz", source=source, svg=svg)
    figure = _matplotlib_figure(records, tree.value_range, title, figsize)
    return TreeImage(nodes=records, backend="matplotlib", source=source, figure=figure)


def _layout(records: List[NodeRecord]) -> dict:
    """(x, y) per node: leaves side by side in drawing order, parents centred."""
    children = {r.node: [] for r in records}
    for r in records[1:]:
        children[r.parent].append(r.node)
    depth = {r.node: r.depth for r in records}
    position, next_leaf = {}, [0.0]

    def place(node):
        kids = children[node]
        if not kids:
            x = next_leaf[0]
            next_leaf[0] += 1.0
        else:
            xs = [place(k) for k in kids]
            x = (xs[0] + xs[-1]) / 2.0
        position[node] = (x, -float(depth[node]))
        return x

    if records:
        place(records[0].node)
    return position


def _matplotlib_figure(records: List[NodeRecord], value_range, title, figsize):
    """The drawing with matplotlib. Without a given `figsize` the figure is
    sized so that no two labels overlap: drawn, measured
    (`overlapping_labels`), and widened (or heightened) until none do."""
    position = _layout(records)
    width = max((x for x, _ in position.values()), default=0.0) + 1.0
    levels = 1 + max((r.depth for r in records), default=0)
    if figsize is not None:
        return _draw(records, position, levels, value_range, title, figsize)
    size = [max(4.0, 1.9 * width), max(2.0, 2.0 * levels)]
    for _ in range(8):
        figure = _draw(records, position, levels, value_range, title, tuple(size))
        overlaps = overlapping_labels(figure)
        if not overlaps:
            break
        side_by_side = any(abs(a.y0 - b.y0) < 0.5 * max(a.height, b.height)
                           for a, b in overlaps)
        size[0 if side_by_side else 1] *= 1.35
    return figure


def _draw(records, position, levels, value_range, title, figsize):
    from matplotlib.figure import Figure  # no pyplot state: shown once, by TreeImage

    figure = Figure(figsize=figsize)
    ax = figure.add_subplot(1, 1, 1)
    ax.set_axis_off()
    root_visits = max(records[0].visits, 1) if records else 1
    for r in records[1:]:
        (x0, y0), (x1, y1) = position[r.parent], position[r.node]
        ax.plot([x0, x1], [y0, y1], color="0.45", zorder=1,
                linewidth=0.6 + 3.0 * r.visits / root_visits)
        ax.text(0.35 * x0 + 0.65 * x1, 0.35 * y0 + 0.65 * y1, _edge_text(r), fontsize=7,
                ha="center",
                va="center", zorder=2,
                bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none",
                          alpha=0.85))
    for r in records:
        x, y = position[r.node]
        ax.text(x, y, _node_text(r), fontsize=8, ha="center", va="center", zorder=3,
                bbox=dict(boxstyle="round,pad=0.35", facecolor=_colour(r.value, value_range),
                          edgecolor="black", linewidth=2.5 if r.proven else 0.8))
    xs = [x for x, _ in position.values()] or [0.0]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(-(levels - 1) - 0.5, 0.5)
    if title:
        ax.set_title(title, fontsize=10)
    return figure


def overlapping_labels(figure) -> list:
    """The pairs of text boxes (node and edge labels, as drawn with their
    padding, in display units) of a matplotlib drawing that overlap: [] for
    a legible drawing."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = []
    for ax in figure.axes:
        for text in ax.texts:
            patch = text.get_bbox_patch()
            boxes.append(patch.get_window_extent(renderer) if patch is not None
                         else text.get_window_extent(renderer))
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]


def node_embedding(tree: tree_lib.Tree, batch_index: int, node: int) -> Any:
    """The stored embedding of `node` in row `batch_index`, leaves with a
    leading axis of 1 (a batch of one), e.g. to label moves from a node's
    position. Not available with `replay_embeddings` (except the root)."""
    tree = tree_lib.source_of(tree)  # an MctxTree: the tree it was computed from
    if tree.replay_embeddings and node != tree_lib.ROOT_INDEX:
        raise ValueError("the tree replays embeddings: only the root's is stored")
    return jax.tree.map(lambda leaf: leaf[batch_index, node][None], tree.embeddings)


__all__ = ["NodeRecord", "TreeImage", "graphviz_available", "node_embedding", "render_tree",
           "to_dot", "tree_nodes"]
