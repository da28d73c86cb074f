"""Our mctx-style examples (examples/mctx_style_*.py) print the same figures
with mctx and with mcts_jax in its place.

Each example's `main(mctx)` takes the library module, so both runs happen in
this process: the actions and visit counts must be equal, every value within
1e-5, and the printed text the same.
"""

import contextlib
import importlib.util
import io
import math
import os

import pytest

import mcts_jax

mctx = pytest.importorskip("mctx")  # a dev dependency: only a guard, installed in CI

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def load_example(name: str):
    path = os.path.join(EXAMPLES, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_with(example, library, **kwargs):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        figures = example.main(library, **kwargs)
    return figures, printed.getvalue()


def assert_same_figures(ours, theirs, where="figures"):
    """Equal structure; ints, strings and booleans equal; floats within 1e-5."""
    assert type(ours) is type(theirs), (where, ours, theirs)
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs), where
        for key in theirs:
            assert_same_figures(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), (where, ours, theirs)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_figures(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float):
        assert math.isclose(ours, theirs, rel_tol=0, abs_tol=1e-5), (where, ours, theirs)
    else:
        assert ours == theirs, (where, ours, theirs)


def test_policy_improvement_example_gives_mctx_figures():
    example = load_example("mctx_style_policy_improvement")
    settings = dict(batch_size=8, num_actions=4, num_simulations=8)
    theirs, their_text = run_with(example, mctx, **settings)
    ours, our_text = run_with(example, mcts_jax, **settings)
    assert_same_figures(ours, theirs)
    assert our_text == their_text
    assert len(theirs["muzero_policy"]["actions"]) == 8
    assert sum(theirs["muzero_policy"]["root_visits"][0]) == 8
    for name in ("muzero_policy", "gumbel_muzero_policy"):
        assert f"{name} root visits of hunt 0" in their_text


def test_tree_walk_example_walks_mctx_tree():
    example = load_example("mctx_style_tree_walk")
    settings = dict(num_simulations=10, max_depth=3)
    theirs, their_text = run_with(example, mctx, **settings)
    ours, our_text = run_with(example, mcts_jax, **settings)
    assert_same_figures(ours, theirs)
    assert our_text == their_text
    walk = theirs["walk"]
    assert walk[0]["node"] == 0 and walk[0]["visits"] == 11
    assert len(walk) > 5 and all(len(r["path"]) <= 3 for r in walk)
