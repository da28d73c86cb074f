"""The packages point only down: mcts_jax (the search core) < envs (the
games) < training (the application) < benchmarks (the suite) < experiments
| devtools (independent of each other), checked by import-linter
(contracts in pyproject.toml); the mctx compatibility layer sits on top of
the core; the application's old names under `mcts_jax` are gone; every
public name is documented; and docs/presets.md is generated from
training/presets.py."""

import importlib
import os
import subprocess
import sys

import pytest

import mcts_jax
import training
import training.agent
import training.arena
import training.config
import training.loop
import training.networks
import training.presets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def test_lint_imports_keeps_every_contract():
    """`lint-imports` (a dev dependency) from the repository root: a
    back-pointing import fails here with import-linter's message."""
    result = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("old", ["mcts_jax.training", "mcts_jax.arena", "mcts_jax.agent",
                                 "mcts_jax.networks"])
def test_the_moved_application_names_are_gone(old):
    """The application left the core two stages ago; its old names had their
    release (docs/migration.md says what replaces them)."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)
    with pytest.raises(AttributeError):
        getattr(mcts_jax, old.split(".")[1])


def test_every_public_name_is_documented():
    """`mcts_jax.__all__` is the public surface; each name has its docstring
    (a function or class of ours, a module, or a constant named in the
    package docstring's groups)."""
    constants = {"UNEXPANDED", "ILLEGAL"}
    for name in mcts_jax.__all__:
        value = getattr(mcts_jax, name)
        if name in constants:
            assert isinstance(value, int)
            continue
        assert (getattr(value, "__doc__", None) or "").strip(), name


def test_the_core_never_imports_the_mctx_layer():
    """mctx compatibility is a layer on top: no core module's source imports
    mcts_jax.mctx_compat (the package's __init__ re-exports it; import-linter
    checks the same as a contract)."""
    import ast
    core = os.path.join(ROOT, "mcts_jax")
    for name in os.listdir(core):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        with open(os.path.join(core, name)) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for module in modules:
                assert "mctx_compat" not in module, f"mcts_jax/{name} imports {module}"


def test_other_names_still_raise():
    with pytest.raises(AttributeError):
        mcts_jax.not_a_module
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mcts_jax.not_a_module")


def test_the_evaluator_type_is_the_cores():
    import envs
    from mcts_jax import evaluators
    assert envs.Evaluator is evaluators.Evaluator


def test_presets_doc_is_current():
    with open(os.path.join(ROOT, "docs", "presets.md")) as f:
        assert f.read() == training.presets.markdown(), \
            "run: python -m training.presets > docs/presets.md"
