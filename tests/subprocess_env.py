"""Environment for the Python subprocesses that tests start."""

import os

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# tests/conftest.py starts this process's XLA backend with extra flags (no LLVM
# optimisation, the older fusion emitters: test programs are small and
# compiling dominates) and records
# them here; the process's own XLA_FLAGS keep the caller's value.
BACKEND_XLA_FLAGS_VARIABLE = "MCTS_JAX_TESTS_BACKEND_XLA_FLAGS"

# XLA's default CPU fusion emitters, for a subprocess whose checks compare a
# sharded program's result with the one-device program's bit for bit (the
# 8-device and two-process checks): the older emitters that tests/conftest.py
# gives the suite (faster to compile) round those two programs differently
# (the two-process search differed from the one-device search). Given after
# this process's flags, it wins (XLA reads its flags in order).
DEFAULT_FUSION_EMITTERS = "--xla_cpu_use_fusion_emitters=true"


def compiled_like_this_process(*extra_xla_flags: str, **variables: str) -> dict:
    """A copy of os.environ whose XLA_FLAGS are this pytest process's backend
    flags plus `extra_xla_flags`, with `variables` set.

    Subprocesses that compile many small programs (the 8-device and two-process
    checks, train.py on a tiny config) then compile as fast as this process,
    and a result compared bit for bit with this process's comes from code
    compiled alike (the optimisation level changes float rounding).
    """
    flags = os.environ.get(BACKEND_XLA_FLAGS_VARIABLE, os.environ.get("XLA_FLAGS", ""))
    env = dict(os.environ, **variables)
    env["XLA_FLAGS"] = " ".join([flags, *extra_xla_flags]).strip()
    return env


def pythonpath_with_repo() -> str:
    """PYTHONPATH for a subprocess that imports the repository's top-level
    packages (mcts_jax, envs) without `pip install -e .`: the repository root,
    then the caller's non-empty entries (the root once, however often called)."""
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([REPO_ROOT] + [p for p in paths if p != REPO_ROOT])
