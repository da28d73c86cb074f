"""Every notebook under notebooks/ runs top to bottom without an error.

The default `python -m pytest -n auto` collects this file, so CI executes each
notebook (in a fresh kernel, working directory notebooks/) and fails on the
first cell that raises. The committed notebooks keep their outputs so that
they read on a code host; to refresh them after an edit:

    python tests/test_notebooks.py                       # every notebook, in place
    python tests/test_notebooks.py 01_quickstart.ipynb   # one
"""

from __future__ import annotations

import glob
import os
import sys
import time

import pytest
from subprocess_env import compiled_like_this_process, pythonpath_with_repo

nbformat = pytest.importorskip("nbformat") if __name__ != "__main__" else __import__("nbformat")
nbclient = pytest.importorskip("nbclient") if __name__ != "__main__" else __import__("nbclient")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK_DIR = os.path.join(ROOT, "notebooks")
NOTEBOOKS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(NOTEBOOK_DIR, "*.ipynb")))
# Per cell; a notebook is meant to take a few minutes on a 2-core CPU.
CELL_TIMEOUT_S = 900


def execute(name: str, compiled_like_the_tests: bool = False):
    """Runs notebooks/<name> in a fresh python3 kernel; returns the executed notebook.
    Raises nbclient.exceptions.CellExecutionError on the first failing cell.

    compiled_like_the_tests: the kernel compiles with the test process's XLA
    flags (no LLVM optimisation, tests/conftest.py). Under pytest a notebook
    is checked for running, and most of its time is compiling (04_training
    took 171 s instead of 203 s, one run each on the 2-core VM); the outputs
    committed for readers come from `main`, at the default level."""
    path = os.path.join(NOTEBOOK_DIR, name)
    notebook = nbformat.read(path, as_version=4)
    # The kernel inherits this environment: make the repository importable even
    # without `pip install -e .` (the kernel starts in notebooks/).
    os.environ["PYTHONPATH"] = pythonpath_with_repo()
    if compiled_like_the_tests:
        os.environ["XLA_FLAGS"] = compiled_like_this_process()["XLA_FLAGS"]
    client = nbclient.NotebookClient(notebook, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": NOTEBOOK_DIR}})
    client.execute()
    return notebook


def test_there_are_notebooks():
    assert {"01_quickstart.ipynb", "02_classic_mcts.ipynb", "03_chess_analysis.ipynb",
            "04_training.ipynb"} <= set(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_outputs_are_committed(name):
    """Every code cell of the committed notebook was executed and kept its outputs."""
    notebook = nbformat.read(os.path.join(NOTEBOOK_DIR, name), as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, f"{name} has no code"
    unexecuted = [i for i, cell in enumerate(code) if cell.get("execution_count") is None]
    assert not unexecuted, (f"{name}: code cells {unexecuted} have no stored output; run "
                            f"`python tests/test_notebooks.py {name}`")
    errors = [i for i, cell in enumerate(code)
              if any(out.get("output_type") == "error" for out in cell.get("outputs", []))]
    assert not errors, f"{name}: code cells {errors} stored an error"


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # restored afterwards
    execute(name, compiled_like_the_tests=True)


def main(names) -> int:
    for name in names or NOTEBOOKS:
        name = os.path.basename(name)
        start = time.perf_counter()
        notebook = execute(name)
        nbformat.write(notebook, os.path.join(NOTEBOOK_DIR, name))
        print(f"{name}: executed in {time.perf_counter() - start:.0f} s, outputs written")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_each_notebook_opens_with_what_the_reader_will_have(name):
    """The first cell is a title and, right under it, one sentence saying what
    the reader will have at the end."""
    notebook = nbformat.read(os.path.join(NOTEBOOK_DIR, name), as_version=4)
    lines = [line for line in notebook.cells[0].source.splitlines() if line.strip()]
    assert notebook.cells[0].cell_type == "markdown" and lines[0].startswith("# ")
    assert lines[1].startswith("By the end you will have"), lines[1]
