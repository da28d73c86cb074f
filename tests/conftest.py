import gc
import os
import sys

import jax
import pytest

sys.path.insert(0, os.path.dirname(__file__))


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
