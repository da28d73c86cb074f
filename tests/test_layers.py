"""The packages point only down: mcts_jax (the search core) < envs (the
games) < training (the application) < benchmarks, checked by import-linter
(contracts in pyproject.toml); the application's old names under `mcts_jax`
still import, warn and are the very same modules (mcts_jax/moved.py); and
docs/presets.md is generated from training/presets.py."""

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
OLD_TO_NEW = {
    "mcts_jax.training": "training",
    "mcts_jax.training.loop": "training.loop",
    "mcts_jax.training.config": "training.config",
    "mcts_jax.arena": "training.arena",
    "mcts_jax.agent": "training.agent",
    "mcts_jax.networks": "training.networks",
}


def test_lint_imports_keeps_every_contract():
    """`lint-imports` (a dev dependency) from the repository root: a
    back-pointing import fails here with import-linter's message."""
    result = subprocess.run(["lint-imports"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _forget(old):
    """Drops the alias from sys.modules and from its parent, so that the
    next import goes through the finder again."""
    for name in [name for name in sys.modules if name == old or name.startswith(old + ".")]:
        del sys.modules[name]
    parent, _, child = old.rpartition(".")
    if parent in sys.modules and child in vars(sys.modules[parent]):
        delattr(sys.modules[parent], child)


@pytest.mark.parametrize("old,new", OLD_TO_NEW.items())
def test_old_module_names_import_warn_and_are_the_new_modules(old, new):
    _forget(old)
    with pytest.warns(DeprecationWarning, match=f"^{old} moved to {new}; import it from there$"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # the new module, untouched


@pytest.mark.parametrize("name", ["training", "arena", "agent", "networks"])
def test_old_attributes_of_the_package_warn_and_are_the_new_modules(name):
    _forget(f"mcts_jax.{name}")
    new = "training" if name == "training" else f"training.{name}"
    with pytest.warns(DeprecationWarning, match=f"^mcts_jax.{name} moved to {new}; "):
        module = getattr(mcts_jax, name)
    assert module is importlib.import_module(new)


def test_from_imports_of_old_names():
    _forget("mcts_jax.arena")
    _forget("mcts_jax.training")
    with pytest.warns(DeprecationWarning, match="mcts_jax.arena moved to training.arena"):
        from mcts_jax import arena
    with pytest.warns(DeprecationWarning, match="mcts_jax.training moved to training"):
        from mcts_jax.training import loop
    with pytest.warns(DeprecationWarning, match="mcts_jax.agent moved to training.agent"):
        from mcts_jax.agent import Agent
    assert arena is training.arena and loop is training.loop and Agent is training.agent.Agent


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
