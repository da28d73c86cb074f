"""What a reader opens: the library functions a plain search runs, and the core's feature branches.

Two counts of how readable the search core is, reproducible at any commit:

- **The reader's path.** The functions of the library that run while one
  plain `alphazero_policy` call (dense tree, one path per step, no solver,
  no graph) is traced and run, counted with `sys.setprofile` (every Python
  function entered, once each, validation included), and the files they
  live in. mctx's `muzero_policy` is counted the same way beside it when
  mctx is installed. The functions of feature modules that ran are listed
  apart (a plain search should run none).
- **The tree's fields.** How many fields `Tree` has, and how many are None
  unless a feature is on (declared `Optional`); the size of `__all__`.
- **Feature branches.** Every Python branch of the core (`if`, `elif`, a
  conditional expression, `while`) whose test reads a feature option or a
  feature's state (graph, solver, compact layout, chance nodes, P paths,
  replayed embeddings, mctx semantics, expand_all, checks, value_range, a
  user rule's NaN), per module; and the total of branches.

    python -m devtools.reader_path                      # this tree's library
    python -m devtools.reader_path --library /tmp/old   # a checkout of another commit
    python -m devtools.reader_path --functions          # also list each function

It prints; it writes no results file (the counts are a property of the code,
reproduced by running the command at that code).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import os
import re
import sys
from typing import Dict, List, Tuple

# The words whose presence in a branch's test makes it a feature branch, by
# feature. Matched as whole identifiers (attribute names and variables).
FEATURE_WORDS: Dict[str, Tuple[str, ...]] = {
    "graph": ("transpositions", "is_graph", "path", "key_of_position", "position_keys",
              "edge_visits", "edge_paths", "graph"),
    "solver": ("solver", "solved", "solved_values"),
    "compact": ("max_children", "children_actions", "compact", "pruned", "root_slots"),
    "chance": ("num_chance_outcomes", "chance", "is_chance", "decision_fn", "chance_fn",
               "at_chance"),
    "P paths": ("simulations_per_step", "steering", "in_flight", "paths"),
    "replay": ("replay_embeddings", "max_path_length"),
    "mctx semantics": ("stop_at_terminal", "keep_prior_logits", "prior_logits",
                       "node_per_simulation", "mctx"),
    "expand_all": ("expand_all",),
    "checks": ("checks", "checkify"),
    "value_range": ("value_range",),
    "rule NaN": ("rule_failed", "screens", "rules_screen_their_slots",
                 "rule_screens_its_slots"),
}

# Modules of the core that are features, not the plain search.
FEATURE_MODULE_NAMES = ("graph", "compact", "replay_embeddings", "stochastic", "parallel",
                        "reuse", "mctx_compat", "features", "sharding", "visualize", "memory",
                        "kept_prior_logits", "mctx_semantics", "expand_all", "solver",
                        "rule_screen", "sampled")


# Code objects Python makes for comprehensions: part of the function they are written in.
COMPREHENSIONS = ("<genexpr>", "<listcomp>", "<dictcomp>", "<setcomp>")


def library_dir(library: str = None) -> str:
    if library:
        sys.path.insert(0, os.path.realpath(library))
    module = importlib.import_module("mcts_jax")
    return os.path.dirname(os.path.abspath(module.__file__)) + os.sep


def functions_run(package_dir: str, call) -> List[Tuple[str, str]]:
    """("file relative to package_dir", "qualified function name") of every
    Python function in `package_dir` entered while `call()` runs, in first-call order."""
    seen: Dict[Tuple[str, str], None] = {}

    def profile(frame, event, arg):
        if event != "call":
            return
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename.startswith(package_dir) and frame.f_code.co_name not in COMPREHENSIONS:
            name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
            seen.setdefault((os.path.relpath(filename, package_dir), name), None)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return list(seen)


def plain_alphazero_call(mcts_jax):
    """One plain `alphazero_policy` call on a small problem of our own
    (B = 4, A = 9, 8 simulations; every leaf value and prior from a hash)."""
    import jax
    import jax.numpy as jnp

    batch, actions = 4, 9

    def recurrent_fn(params, rng_key, action, embedding):
        code = embedding * 31 + action + 1
        output = mcts_jax.RecurrentFnOutput(
            reward=jnp.zeros(batch), discount=-jnp.ones(batch),
            prior_logits=jnp.sin(code[:, None] * jnp.arange(1.0, actions + 1.0)),
            value=jnp.cos(code.astype(jnp.float32)))
        return output, code

    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((batch, actions)),
                                 value=jnp.zeros(batch), embedding=jnp.arange(batch))

    def call():
        out = mcts_jax.alphazero_policy(None, jax.random.key(0), root, recurrent_fn, 8)
        jax.block_until_ready(out.action)
    return call, (root, recurrent_fn)


def mctx_call(mctx, root, recurrent_fn):
    import jax

    their_root = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                   embedding=root.embedding)

    def their_recurrent_fn(params, rng_key, action, embedding):
        out, embedding = recurrent_fn(params, rng_key, action, embedding)
        return mctx.RecurrentFnOutput(reward=out.reward, discount=out.discount,
                                      prior_logits=out.prior_logits,
                                      value=out.value), embedding

    def call():
        out = mctx.muzero_policy(None, jax.random.key(0), their_root, their_recurrent_fn, 8)
        jax.block_until_ready(out.action)
    return call


def feature_of(test: ast.AST) -> List[str]:
    """The features whose words the branch test `test` reads."""
    names = set()
    for node in ast.walk(test):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.update(re.findall(r"[A-Za-z_]+", node.value))
    return [feature for feature, words in FEATURE_WORDS.items() if names & set(words)]


def branches(path: str) -> List[Tuple[int, List[str]]]:
    """(line, features read) of every branch in the Python file `path`."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            found.append((node.lineno, feature_of(node.test)))
    return sorted(found)


def core_modules(package_dir: str) -> List[str]:
    return sorted(os.path.relpath(os.path.join(folder, name), package_dir)
                  for folder, _, names in os.walk(package_dir) for name in names
                  if name.endswith(".py") and "__pycache__" not in folder)


def code_lines(path: str) -> int:
    """Lines that are neither blank, comments nor docstrings."""
    with open(path) as handle:
        source = handle.read()
    docstring_lines = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                docstring_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(1 for number, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#")
               and number not in docstring_lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library", default=None,
                        help="a checkout whose mcts_jax to measure (default: this tree's)")
    parser.add_argument("--functions", action="store_true", help="list every function run")
    args = parser.parse_args(argv)
    package = library_dir(args.library)
    mcts_jax = importlib.import_module("mcts_jax")
    call, (root, recurrent_fn) = plain_alphazero_call(mcts_jax)
    ours = functions_run(package, call)
    files = sorted({file for file, _ in ours})
    print(f"library: {package}")
    print(f"plain alphazero_policy (dense, P = 1, no solver, no graph): "
          f"{len(ours)} functions in {len(files)} files")
    feature_run = [f"{file}:{name}" for file, name in ours
                   if os.path.splitext(os.path.basename(file))[0] in FEATURE_MODULE_NAMES
                   or file.split(os.sep)[0] in FEATURE_MODULE_NAMES]
    print(f"  functions of feature modules run: {len(feature_run)}"
          + (f" ({', '.join(feature_run)})" if feature_run else ""))
    per_file = {file: sum(1 for f, _ in ours if f == file) for file in files}
    print("  per file: " + ", ".join(f"{file} {count}" for file, count in per_file.items()))
    if args.functions:
        for file, name in ours:
            print(f"    {file}:{name}")
    try:
        import mctx
    except ImportError:
        mctx = None
    if mctx is not None:
        mctx_package = os.path.dirname(os.path.abspath(mctx.__file__)) + os.sep
        theirs = functions_run(mctx_package, mctx_call(mctx, root, recurrent_fn))
        their_files = sorted({file for file, _ in theirs})
        print(f"mctx {getattr(mctx, '__version__', '?')} muzero_policy: {len(theirs)} functions "
              f"in {len(their_files)} files")
        if args.functions:
            for file, name in theirs:
                print(f"    {file}:{name}")

    tree_fields = dataclasses.fields(mcts_jax.Tree)
    optional = [field.name for field in tree_fields if "Optional" in str(field.type)]
    print(f"Tree: {len(tree_fields)} fields, {len(optional)} of them None unless a feature "
          f"is on ({', '.join(optional) or 'none'}); mcts_jax.__all__: {len(mcts_jax.__all__)} names")

    print("\nbranches of the core (if / elif / conditional expression / while), by module:")
    print(f"  {'module':34s} {'code lines':>10s} {'branches':>8s} {'feature':>8s}  features read")
    totals = [0, 0, 0]
    by_feature: Dict[str, int] = {}
    for module in core_modules(package):
        found = branches(os.path.join(package, module))
        feature = [features for _, features in found if features]
        for features in feature:
            for name in features:
                by_feature[name] = by_feature.get(name, 0) + 1
        lines = code_lines(os.path.join(package, module))
        totals[0] += lines
        totals[1] += len(found)
        totals[2] += len(feature)
        named = sorted({name for features in feature for name in features})
        print(f"  {module:34s} {lines:10d} {len(found):8d} {len(feature):8d}  {', '.join(named)}")
    print(f"  {'total':34s} {totals[0]:10d} {totals[1]:8d} {totals[2]:8d}")
    print("  feature branches by feature (a branch may read several): "
          + ", ".join(f"{name} {count}" for name, count in
                      sorted(by_feature.items(), key=lambda item: -item[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
