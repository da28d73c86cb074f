"""mctx's own examples run on mcts_jax with only `import mctx` changed.

tests/mctx_examples/ holds mctx's `policy_improvement_demo.py` and
`visualization_demo.py` unmodified; the runner executes each with mctx and
with `import mcts_jax as mctx` in one subprocess (absl flags are global) and
records what they print and the graph the visualisation builds from the tree
(`tree.node_values`, `children_index`, `qvalues(...)`, ...).
"""

import json
import os
import subprocess
import sys

import pytest
from subprocess_env import compiled_like_this_process, pythonpath_with_repo

pytest.importorskip("mctx")
pytest.importorskip("absl")

RUNNER = os.path.join(os.path.dirname(__file__), "mctx_examples", "runner.py")


@pytest.fixture(scope="module")
def results():
    env = compiled_like_this_process(PYTHONPATH=pythonpath_with_repo())
    done = subprocess.run([sys.executable, RUNNER], capture_output=True, text=True, env=env,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_policy_improvement_demo_prints_the_same_figures(results):
    theirs = results["policy_improvement_demo/mctx"]["printed"]
    ours = results["policy_improvement_demo/mcts_jax"]["printed"]
    assert theirs.count("improvement") == 4, theirs  # two runs, two lines each
    assert ours == theirs


def test_visualization_demo_prints_and_draws_the_same_tree(results):
    theirs = results["visualization_demo/mctx"]
    ours = results["visualization_demo/mcts_jax"]
    assert "Selected action Q-value" in theirs["printed"]
    assert ours["printed"] == theirs["printed"]
    (their_graph,), (our_graph,) = theirs["graphs"], ours["graphs"]
    # 32 simulations: the root and one node per simulation, every label equal
    # (node index, reward, discount, value, visits; edge action, Q, prior).
    assert len(their_graph["nodes"]) == 33 and len(their_graph["edges"]) == 32
    assert our_graph == their_graph
