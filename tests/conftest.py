import gc
import os
import sys

import jax
import pytest

sys.path.insert(0, os.path.dirname(__file__))

# The suite's time is mostly XLA compiling. Without LLVM's optimisation passes
# a CPU program compiles about a quarter faster; it computes the same thing, a
# little slower, which these small tests do not notice. Subprocesses (train.py,
# notebook kernels, the multi-device checks) inherit the flag. XLA reads
# XLA_FLAGS when the first backend starts, after this runs.
_FAST_COMPILE = "--xla_backend_optimization_level=0"
if "--xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FAST_COMPILE}".strip()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "soak: long repeated-search checks (compile count, memory); run in CI at a "
        "small size")


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop every compiled XLA program when a test module ends.

    Each CPU executable keeps its own memory mappings for the life of the
    process. A pytest-xdist worker runs many modules, and without this the
    worker's mapping count passes the kernel limit (vm.max_map_count, 65530 by
    default) and the process dies with a segmentation fault inside XLA
    compilation. Modules share compiled functions within themselves, so
    clearing between modules costs little.
    """
    yield
    jax.clear_caches()
    gc.collect()
