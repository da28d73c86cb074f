"""Deprecated names of the modules that moved out of the search core.

The application (training, matches, the agent, the networks) lives in the
top-level package `training` since the packages were layered (the core
`mcts_jax` imports nothing above it). Old imports keep working for now:

    mcts_jax.training, mcts_jax.training.<sub>  ->  training, training.<sub>
    mcts_jax.arena / .agent / .networks         ->  training.arena / .agent / .networks

`import mcts_jax.agent` (or `from mcts_jax.training import loop`) gives the
very module object `training.agent` (`training.loop`) and warns
`DeprecationWarning("mcts_jax.agent moved to training.agent; import it from
there")`; so does the attribute `mcts_jax.agent` (`mcts_jax.__getattr__`).
The new modules are found by name (`importlib.import_module`) when an old
name is used, so the core has no import of the application.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import warnings
from typing import Optional

# old module name -> new one; submodules of a moved package follow it.
MOVED = {
    "mcts_jax.training": "training",
    "mcts_jax.arena": "training.arena",
    "mcts_jax.agent": "training.agent",
    "mcts_jax.networks": "training.networks",
}


def new_name(old: str) -> Optional[str]:
    """The module's new name, or None when `old` did not move."""
    if old in MOVED:
        return MOVED[old]
    for package, target in MOVED.items():
        if old.startswith(package + "."):
            return target + old[len(package):]
    return None


def warn(old: str, new: str) -> None:
    """The DeprecationWarning of `old`, pointing at the code that used it
    (past this module's and the import system's frames)."""
    # warnings.warn skips the import system's frames itself; count ours
    # (this module, and the package's __getattr__).
    ours = (__file__, os.path.join(os.path.dirname(__file__), "__init__.py"))
    frame, stacklevel = sys._getframe(1), 2
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename in ours:
            stacklevel += 1
        elif not filename.startswith("<frozen importlib"):
            break
        frame = frame.f_back
    warnings.warn(f"{old} moved to {new}; import it from there", DeprecationWarning,
                  stacklevel=stacklevel)


def load(old: str):
    """The module `old` now is (imported by its new name), with the warning."""
    new = new_name(old)
    warn(old, new)
    return importlib.import_module(new)


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the module of its new name (the same object)."""

    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        warn(spec.name, self.new)
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the alias's spec on the module; give it back its own.
        module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds the old names (first on sys.meta_path, so that a moved package's
    submodules are never loaded a second time under the old name)."""

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


FINDER = _AliasFinder()


def install() -> None:
    """Puts the finder first on sys.meta_path (once)."""
    if not any(isinstance(finder, _AliasFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, FINDER)


__all__ = ["MOVED", "install", "load", "new_name"]
