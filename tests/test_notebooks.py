"""Every notebook under notebooks/ runs top to bottom without an error.

The default `python -m pytest -n auto` collects this file, so CI executes each
notebook (in a fresh kernel, working directory notebooks/) and fails on the
first cell that raises. The committed notebooks keep their outputs so that
they read on a code host; to refresh them after an edit:

    python tests/test_notebooks.py                       # every notebook, in place
    python tests/test_notebooks.py 01_quickstart.ipynb   # one

Under pytest a notebook runs at a smaller size (SMALLER below: fewer training
iterations, simulations and games, each change a literal edit of one cell's
text that must match exactly), because the test checks that every cell runs
and most of a full run is search and training time, not new code. The
committed outputs, which readers see, come from the notebooks as written.
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


# Per notebook: (text in the notebook, its replacement under pytest, how many
# times the text occurs). The counts are checked, so an edit of a notebook that
# drops one of these texts fails the test instead of running at the full size.
SMALLER = {
    "02_classic_mcts.ipynb": [
        ("BATCH = 256", "BATCH = 64", 1),
        ("STEP, MAX_SIMS = 16, 256", "STEP, MAX_SIMS = 16, 64", 1),
        ("gumbel_budgets = [16, 32, 64, 256]", "gumbel_budgets = [16, 32, 64]", 1),
    ],
    "03_chess_analysis.ipynb": [
        ('"proof", 1000,', '"proof", 64,', 2),
        ('"material", 300,', '"material", 32,', 2),
        ("for ply in range(4):", "for ply in range(2):", 1),
        ("recurrent_fn(evaluator), 1000,", "recurrent_fn(evaluator), 64,", 1),
    ],
    "04_training.ipynb": [
        ("iterations=24, eval_every=8, elo_every=8, eval_games=100,",
         "iterations=2, eval_every=2, elo_every=2, eval_games=8,", 1),
        ("final_games=100)", "final_games=8)", 1),
        ("jax.random.key(7), num_games=100)", "jax.random.key(7), num_games=8)", 1),
    ],
    "06_learned_model.ipynb": [
        ("iterations=24, eval_every=4,", "iterations=2, eval_every=2,", 1),
        ("jax.random.key(0), num_games=40)", "jax.random.key(0), num_games=8)", 1),
    ],
}


def made_smaller(notebook, name: str):
    """The notebook with SMALLER[name]'s edits applied to its code cells."""
    cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for old, new, count in SMALLER.get(name, []):
        found = sum(cell.source.count(old) for cell in cells)
        assert found == count, f"{name}: {old!r} occurs {found} times, SMALLER expects {count}"
        for cell in cells:
            cell.source = cell.source.replace(old, new)
    return notebook


def execute(name: str, compiled_like_the_tests: bool = False, smaller: bool = False):
    """Runs notebooks/<name> in a fresh python3 kernel; returns the executed notebook.
    Raises nbclient.exceptions.CellExecutionError on the first failing cell.

    smaller: run it with SMALLER's edits (the test does; the outputs committed
    for readers come from the notebook as written).

    compiled_like_the_tests: the kernel compiles with the test process's XLA
    flags (no LLVM optimisation, tests/conftest.py). Under pytest a notebook
    is checked for running, and most of its time is compiling (04_training
    took 171 s instead of 203 s, one run each on the 2-core VM); the outputs
    committed for readers come from `main`, at the default level."""
    path = os.path.join(NOTEBOOK_DIR, name)
    notebook = nbformat.read(path, as_version=4)
    if smaller:
        notebook = made_smaller(notebook, name)
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


@pytest.mark.parametrize("name", sorted(SMALLER))
def test_smaller_edits_match_their_notebooks(name):
    """Each edit of SMALLER finds its text as often as it expects (a cheap check
    before the notebooks run)."""
    assert name in NOTEBOOKS
    made_smaller(nbformat.read(os.path.join(NOTEBOOK_DIR, name), as_version=4), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # restored afterwards
    execute(name, compiled_like_the_tests=True, smaller=True)


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
