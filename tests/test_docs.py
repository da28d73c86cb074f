"""The task pages stay true: their code blocks run, and the API reference builds.

The blocks are read by pytest-codeblocks (`pytest_codeblocks.extract_from_file`),
so a page runs the same way under `python -m pytest --codeblocks -p no:xdist docs/PAGE.md`:
every ```python block runs on its own (`<!--pytest-codeblocks:cont-->` joins
it to the one before), a block after `<!--pytest.mark.skip-->` is not run
(long training, several hosts), and every ```bash block must be skipped.
Each page runs at least one block.
"""

import inspect
import os
import re
import subprocess
import sys

import pytest

pytest_codeblocks = pytest.importorskip("pytest_codeblocks")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The task pages, linked from the README's "Tasks" list.
TASK_PAGES = [
    "docs/search_your_env.md",
    "docs/train_alphazero.md",
    "docs/train_muzero.md",
    "docs/chess_analysis.md",
    "docs/uci.md",
    "docs/gtp.md",
    "docs/multi_device.md",
    "docs/custom_search.md",
    "docs/mctx_migration.md",
    "docs/memory.md",
    "docs/stochastic.md",
    "docs/graph_search.md",
    "docs/plugins.md",
    "docs/anytime.md",
    "docs/sampled.md",
]


def blocks_of(page):
    return pytest_codeblocks.extract_from_file(os.path.join(ROOT, page))


def skipped(block):
    return any(mark.startswith("pytest.mark.skip") for mark in block.marks)


def executed(page):
    return [b for b in blocks_of(page) if b.syntax == "python" and not skipped(b)]


def test_readme_links_every_task_page():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    for page in TASK_PAGES:
        assert f"({page})" in readme, page


@pytest.mark.parametrize("page", TASK_PAGES)
def test_page_runs_a_block_and_skips_its_commands(page):
    assert executed(page), f"{page}: no executed python block"
    for block in blocks_of(page):
        if block.syntax in ("bash", "sh"):
            assert skipped(block), f"{page}:{block.lineno}: a command block must be skipped"


@pytest.mark.parametrize("page,index", [(p, i) for p in TASK_PAGES
                                        for i in range(len(executed(p)))])
def test_block_runs(page, index):
    block = executed(page)[index]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(compile(block.code, f"{page}:{block.lineno}", "exec"), {"__name__": "__docs__"})
    finally:
        os.chdir(cwd)


@pytest.fixture(scope="module")
def api_reference_text(tmp_path_factory):
    """The reference (docs/conf.py, docs/api/) built as plain text, with
    warnings as errors: a name that no longer imports or a broken reference
    fails here. Returns the text of docs/api/index.md as built."""
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    build = tmp_path_factory.mktemp("api_reference")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "text",
         "docs", str(build)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    with open(build / "api" / "index.txt") as f:
        return f.read()


def test_api_reference_builds(api_reference_text):
    assert "SearchOptions" in api_reference_text


def test_api_reference_gives_every_search_option_its_meaning(api_reference_text):
    """Each SearchOptions field is listed with its meaning, read from its one
    declaration in mcts_jax/options.py (docs/conf.py, `add_field_meanings`)."""
    import dataclasses
    import mcts_jax

    def plain(text):  # as built: wrapped, smart quotes, emphasis marks
        for fancy, simple in (("\u2018", "'"), ("\u2019", "'"), ("\u201c", '"'),
                              ("\u201d", '"'), ("*", ""), ("\"", "")):
            text = text.replace(fancy, simple)
        return "".join(text.split())

    entry = api_reference_text[api_reference_text.index("class mcts_jax.SearchOptions"):]
    entry = plain(entry[:entry.index("\nclass ")])
    for field in dataclasses.fields(mcts_jax.SearchOptions):
        assert plain(f"{field.name} ({field.type}") in entry or f"{field.name}(" in entry
        assert plain(field.metadata["meaning"]) in entry, field.name


def test_api_reference_shows_the_policy_hooks_and_both_searches(api_reference_text):
    """The four hooks of `mcts_jax.Policy` have entries of their own, and the
    entry `mcts_jax.search` sends its reader to (`mcts_jax.policy.search`,
    the rules search's arguments) exists."""
    text = api_reference_text
    for hook in ("split_key", "root_setup", "rules", "choose"):
        assert re.search(rf"\n {{3,}}{hook}\(", text), hook
    assert "mcts_jax.policy.search(params" in text
    import mcts_jax
    assert "mcts_jax.policy.search" in mcts_jax.search.__doc__


def test_chess_analysis_plays_the_best_move():
    """docs/chess_analysis.md's search plays its best move: temperature 0
    (the most visited move; the policies' default, 1, samples it)."""
    import ast
    tree = ast.parse(executed("docs/chess_analysis.md")[0].code)
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", "") == "alphazero_policy"]
    assert len(calls) == 1
    temperature = {k.arg: k.value for k in calls[0].keywords}.get("temperature")
    assert temperature is not None and ast.literal_eval(temperature) == 0


def public_names():
    import mcts_jax
    return list(mcts_jax.__all__)


def test_api_reference_lists_every_public_name():
    with open(os.path.join(ROOT, "docs", "api", "index.md")) as f:
        reference = f.read()
    listed = set(re.findall(r"\.\. (?:auto\w+|py:data):: mcts_jax\.(\w+)", reference))
    import mcts_jax
    modules = {name for name in public_names()
               if inspect.ismodule(getattr(mcts_jax, name))}
    listed |= {name for name in modules if f".. automodule:: mcts_jax.{name}" in reference}
    missing = [name for name in public_names() if name not in listed]
    assert not missing, f"docs/api/index.md lacks {missing}"


def documented_args(doc):
    """The argument names of a Google-style `Args:` section."""
    match = re.search(r"\n\s*Args:\n(.*?)(\n\s*\n\s*[A-Z][a-z]+:\n|\Z)", "\n" + doc, re.S)
    if not match:
        return []
    lines = [line for line in match.group(1).split("\n") if line.strip()]
    indent = min(len(line) - len(line.lstrip()) for line in lines)
    return [re.match(r"\s*\**(\w+)", line).group(1) for line in lines
            if len(line) - len(line.lstrip()) == indent]


def test_documented_arguments_exist():
    """A renamed argument cannot leave its `Args:` entry behind."""
    import mcts_jax
    stale = {}
    for name in public_names():
        obj = getattr(mcts_jax, name)
        if inspect.ismodule(obj) or inspect.isclass(obj) or not callable(obj):
            continue
        parameters = inspect.signature(obj).parameters
        if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
            continue
        unknown = [arg for arg in documented_args(inspect.getdoc(obj) or "")
                   if arg not in parameters]
        if unknown:
            stale[name] = unknown
    assert not stale, f"documented arguments that the functions do not take: {stale}"
