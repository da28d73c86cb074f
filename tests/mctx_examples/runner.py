"""Runs mctx's two examples with mctx and with `import mcts_jax as mctx`, in
one process, and prints what each printed and drew as one JSON object.

Usage: python tests/mctx_examples/runner.py   (tests/test_mctx_examples.py)
pygraphviz is replaced by a recorder of the nodes and edges the
visualisation adds (the drawing itself is graphviz's business, not ours).
"""

import contextlib
import io
import json
import os
import sys
import types

from absl import flags

HERE = os.path.dirname(os.path.abspath(__file__))
ARGV = {
    "policy_improvement_demo": ["--num_runs=2"],
    "visualization_demo": ["--output_file=/dev/null"],
}


class RecordingGraph:
    """Stands in for `pygraphviz.AGraph`: records what is added."""

    drawn = []

    def __init__(self, directed=True):
        self.nodes, self.edges = [], []

    def add_node(self, node, label="", color=""):
        self.nodes.append([int(node), str(label), str(color)])

    def add_edge(self, parent, child, label=""):
        self.edges.append([int(parent), int(child), str(label)])

    def draw(self, path, prog=None):
        RecordingGraph.drawn.append({"nodes": self.nodes, "edges": self.edges})


def run(name: str, library: str) -> dict:
    path = os.path.join(HERE, f"{name}.py")
    with open(path) as f:
        source = f.read()
    if library == "mcts_jax":
        assert source.count("import mctx\n") == 1, "the example's import line changed"
        source = source.replace("import mctx\n", "import mcts_jax as mctx\n")
    sys.modules["pygraphviz"] = types.SimpleNamespace(AGraph=RecordingGraph)
    before = set(flags.FLAGS)
    module = types.ModuleType(name)
    exec(compile(source, path, "exec"), module.__dict__)
    flags.FLAGS.unparse_flags()
    flags.FLAGS([name] + ARGV[name])
    RecordingGraph.drawn = []
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        module.main([])
    for flag in set(flags.FLAGS) - before:
        delattr(flags.FLAGS, flag)
    return {"printed": printed.getvalue(), "graphs": RecordingGraph.drawn}


if __name__ == "__main__":
    results = {f"{name}/{library}": run(name, library)
               for name in ARGV for library in ("mctx", "mcts_jax")}
    print(json.dumps(results))
