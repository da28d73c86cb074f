"""The README stays true: its Python blocks run, .ci/run runs its test command,
its links lead somewhere, and it stays a first-visit page."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme():
    with open(os.path.join(ROOT, "README.md")) as f:
        return f.read()


def test_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", readme(), re.S)
    assert blocks, "the README should show the API"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_ci_runs_the_readme_commands():
    bash_blocks = re.findall(r"```bash\n(.*?)```", readme(), re.S)
    test_command = next(b for b in bash_blocks if "pytest" in b).strip()
    install, run = [part.strip() for part in test_command.split("&&")]
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = f.read()
    assert install.replace("pip install", "") in ci
    assert run.replace("python ", "") in ci


def test_links_resolve():
    for link in re.findall(r"\]\(([^)#\s]+)", readme()):
        if not link.startswith("http"):
            assert os.path.exists(os.path.join(ROOT, link)), link


def test_short_enough_for_a_first_visit():
    assert len(readme().splitlines()) <= 200
