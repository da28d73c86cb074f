"""mcts_jax.visualize: the drawn records agree with the tree, both layouts draw."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from mcts_jax import visualize
from problems.synthetic import HashedProblem, random_root_codes


def search(max_children=None, batch_size=3, simulations=48):
    problem = HashedProblem(num_actions=6)
    root, _ = problem.root(random_root_codes(0, batch_size))
    return mcts_jax.alphazero_policy(None, jax.random.key(0), root, problem.recurrent_fn,
                                     simulations, dirichlet_fraction=0.0,
                                     max_children=max_children)


@pytest.mark.parametrize("max_children", [None, 4])
def test_records_match_the_tree(max_children):
    out = search(max_children)
    tree, summary = out.search_tree, out.search_tree.summary()
    for row in range(tree.batch_size):
        records = visualize.tree_nodes(tree, row, max_depth=1, top_k=None)
        root, children = records[0], records[1:]
        assert root.node == 0 and root.parent == -1 and root.depth == 0
        assert root.visits == int(tree.node_visits[row, 0])
        assert root.value == pytest.approx(float(summary.value[row]), abs=1e-5)
        # Every visited root action is drawn, with its visits, Q and prior.
        visited = np.flatnonzero(np.asarray(summary.visit_counts[row]))
        assert sorted(r.action for r in children) == sorted(visited.tolist())
        for r in children:
            assert r.visits == int(summary.visit_counts[row, r.action])
            assert r.qvalue == pytest.approx(float(summary.qvalues[row, r.action]), abs=1e-5)
            assert r.depth == 1 and r.parent == 0
            assert 0.0 < r.prior <= 1.0
        # Children come most visited first.
        visits = [r.visits for r in children]
        assert visits == sorted(visits, reverse=True)
        assert root.visits == 1 + sum(visits)


def test_depth_and_top_k_limit_the_drawing():
    tree = search().search_tree
    records = visualize.tree_nodes(tree, 0, max_depth=2, top_k=2)
    assert max(r.depth for r in records) <= 2
    for r in records:
        drawn = sum(1 for c in records if c.parent == r.node)
        assert drawn <= 2
    only_root = visualize.tree_nodes(tree, 0, max_depth=0)
    assert len(only_root) == 1 and only_root[0].hidden_children > 0


def test_labels_and_dot_source():
    tree = search().search_tree
    names = [f"m{a}" for a in range(6)]
    records = visualize.tree_nodes(tree, 1, action_label=names)
    assert all(r.label == f"m{r.action}" for r in records[1:])
    two_args = visualize.tree_nodes(tree, 1, action_label=lambda node, a: f"{node}:{a}")
    assert all(r.label == f"{r.parent}:{r.action}" for r in two_args[1:])
    source = visualize.to_dot(tree, 1, title="row 1")
    assert source.startswith("digraph") and source.count("->") == len(records) - 1


def test_render_matplotlib_png(tmp_path):
    image = visualize.render_tree(search(max_children=4).search_tree, 2, max_depth=2,
                                  backend="matplotlib", title="search 2")
    assert image.backend == "matplotlib"
    png = image._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    image.save(str(tmp_path / "tree.png"))
    image.save(str(tmp_path / "tree.dot"))
    assert (tmp_path / "tree.png").stat().st_size > 1000
    assert (tmp_path / "tree.dot").read_text() == image.source


def test_render_auto_works_without_graphviz():
    image = visualize.render_tree(search().search_tree, 0)
    assert image.backend == ("graphviz" if visualize.graphviz_available() else "matplotlib")
    assert image._repr_svg_() is not None or image._repr_png_() is not None


def test_value_range_zero_one_is_reported_in_user_scale():
    problem = HashedProblem(num_actions=4)
    root, _ = problem.root(random_root_codes(1, 2))

    def recurrent_fn(params, key, action, embedding):
        out, embedding = problem.recurrent_fn(params, key, action, embedding)
        return out.replace(reward=(out.reward + 1) / 2, value=(out.value + 1) / 2), embedding

    root = root.replace(value=(root.value + 1) / 2)
    out = mcts_jax.alphazero_policy(None, jax.random.key(0), root, recurrent_fn, 16,
                                    value_range=(0.0, 1.0), dirichlet_fraction=0.0)
    summary = out.search_tree.summary()
    records = visualize.tree_nodes(out.search_tree, 0, max_depth=1, top_k=None)
    assert records[0].value == pytest.approx(float(summary.value[0]), abs=1e-5)
    for r in records[1:]:
        assert r.qvalue == pytest.approx(float(summary.qvalues[0, r.action]), abs=1e-5)


def test_bad_arguments():
    tree = search().search_tree
    with pytest.raises(ValueError):
        visualize.tree_nodes(tree, 5)
    with pytest.raises(ValueError):
        visualize.render_tree(tree, 0, backend="svg")
    embedding = visualize.node_embedding(tree, 0, 1)
    assert all(leaf.shape[0] == 1 for leaf in jax.tree.leaves(embedding))
    assert jnp.asarray(tree.num_nodes).shape == (3,)


@pytest.mark.parametrize("max_depth,top_k", [(2, 5), (3, 3), (1, None)])
def test_a_drawn_tree_keeps_every_label_legible(max_depth, top_k):
    """No two text boxes (node boxes, edge labels) of the drawing overlap, at
    the size it is drawn: a wide, deep tree gets a larger figure. The check
    itself finds the overlap of a drawing squeezed into a small figure."""
    out = search(batch_size=1, simulations=200)
    image = visualize.render_tree(out.search_tree, 0, max_depth=max_depth, top_k=top_k,
                                  backend="matplotlib")
    assert len(image.nodes) > 4
    assert visualize.overlapping_labels(image.figure) == []
    squeezed = visualize.render_tree(out.search_tree, 0, max_depth=max_depth, top_k=top_k,
                                     backend="matplotlib", figsize=(3.0, 2.0))
    assert visualize.overlapping_labels(squeezed.figure) != []
