"""Environment for the Python subprocesses that tests start."""

import os

# tests/conftest.py starts this process's XLA backend with extra flags (no LLVM
# optimisation: test programs are small and compiling dominates) and records
# them here; the process's own XLA_FLAGS keep the caller's value.
BACKEND_XLA_FLAGS_VARIABLE = "MCTS_JAX_TESTS_BACKEND_XLA_FLAGS"


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
