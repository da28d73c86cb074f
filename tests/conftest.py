import gc
import os
import shutil
import sys
import tempfile

# One persistent compilation cache for the whole run, set before jax is
# imported: the pytest-xdist workers and the subprocesses (train.py runs, the
# 8-device and two-process checks) inherit it, so a program that a second
# process compiles again (a module's tests split over both workers, a resumed
# train.py run) is read from disk. It starts empty and is removed at the end,
# so no run reads another's programs; a caller's own JAX_COMPILATION_CACHE_DIR
# is used as it is. JAX's cache key holds the backend's optimisation level, so
# the level-0 programs below are never served to a notebook kernel or to a
# caller's later run at the default level.
_COMPILATION_CACHE_OWNER = "MCTS_JAX_TESTS_COMPILATION_CACHE_OWNER"
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="mcts_jax_tests_xla_")
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ[_COMPILATION_CACHE_OWNER] = str(os.getpid())

import jax  # noqa: E402
import pytest  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))

# The suite's time is mostly XLA compiling. Without LLVM's optimisation passes
# a CPU program compiles about a quarter faster and runs somewhat slower, a good
# trade for these small tests. XLA's older loop-fusion emitters
# (--xla_cpu_use_fusion_emitters=false) halve the backend's compile time again
# at level 0 (tests/test_mctx_trees.py + test_compact.py in one process: 318 s
# of CPU against 150 s; the tiny chess run's backend compiling 18.6 s against
# 8.9 s) while a compiled search runs up to about 3x slower, which only the
# few long-running tests feel (test_tictactoe_play.py: 74 s against 107 s).
# jax and jaxlib are pinned to 0.10.x, where the flag exists (an unknown
# XLA flag aborts the process). The flags are given to this process's backend
# (XLA reads XLA_FLAGS when the backend starts) and then os.environ gets the
# caller's XLA_FLAGS back: notebook kernels, which run long search loops,
# compile normally, while the test subprocesses that compile many small
# programs ask for this process's flags (subprocess_env.compiled_like_this_process).
from subprocess_env import BACKEND_XLA_FLAGS_VARIABLE  # noqa: E402

_CALLER_XLA_FLAGS = os.environ.get("XLA_FLAGS")
if "--xla_backend_optimization_level" not in (_CALLER_XLA_FLAGS or ""):
    os.environ["XLA_FLAGS"] = (f"{_CALLER_XLA_FLAGS or ''} --xla_backend_optimization_level=0 "
                               f"--xla_cpu_use_fusion_emitters=false").strip()
    os.environ[BACKEND_XLA_FLAGS_VARIABLE] = os.environ["XLA_FLAGS"]
    jax.devices()  # starts the CPU backend with the flag
    if _CALLER_XLA_FLAGS is None:
        del os.environ["XLA_FLAGS"]
    else:
        os.environ["XLA_FLAGS"] = _CALLER_XLA_FLAGS


def pytest_unconfigure(config):
    if os.environ.get(_COMPILATION_CACHE_OWNER) == str(os.getpid()):
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


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


# The modules holding the longest tests (notebook runs, train.py subprocesses,
# the 8-device and two-process checks) run first. With pytest-xdist the other
# worker meanwhile takes the many short tests, so the workers finish together
# instead of one waiting on a long test collected last.
_LONG_MODULES = ("test_notebooks.py", "test_checkpoint.py", "test_sharding.py",
                 "test_multiprocess.py")


def pytest_collection_modifyitems(config, items):
    def rank(item):
        name = os.path.basename(str(item.path))
        return _LONG_MODULES.index(name) if name in _LONG_MODULES else len(_LONG_MODULES)
    items.sort(key=rank)  # stable: the order within each module is kept
