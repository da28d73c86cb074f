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


def _ratio_text(row):
    """A results row's ratio as the README quotes it: 1.09x (0.87-1.86)."""
    return f"{row['ratio']:.2f}x ({row['ratio_min']:.2f}-{row['ratio_max']:.2f})"


def test_speed_list_quotes_where_gumbel_is_not_ahead():
    """Beside the B = 256 factors, the speed list quotes the batch sizes where
    gumbel_policy with a network is at parity with mctx's (B = 1 and 16),
    exactly as the results file it links holds them."""
    import json
    path = "benchmarks/results/batch-tic_tac_toe_net-quick-cpu.json"
    assert f"({path})" in readme()
    with open(os.path.join(ROOT, path)) as f:
        rows = json.load(f)["rows"]
    gumbel = {row["B"]: row for row in rows
              if row["runner"] == "ours_gumbel" and row.get("ratio_vs") == "mctx_gumbel"}
    text = " ".join(readme().split())
    for batch_size in (1, 16):
        row = gumbel[batch_size]
        assert row["ratio"] < 1.2, (batch_size, row["ratio"])   # not ahead
        assert f"**{_ratio_text(row)}**" in text, (batch_size, _ratio_text(row))


def test_training_command_says_what_it_trains():
    """`python train.py` with no flag trains with the Gumbel policy (the
    tic-tac-toe default), and the README says so instead of "AlphaZero"."""
    import mcts_jax
    from training import config as config_lib
    config = config_lib.resolve({})
    assert config.game == "tic_tac_toe"
    policy = config_lib.self_play_policy(config.records.search,
                                         config_lib.make_game(config.records.game))
    assert isinstance(policy, mcts_jax.GumbelPolicy), type(policy).__name__
    text = " ".join(readme().split())
    assert "train an AlphaZero agent" not in text
    assert "train a Gumbel AlphaZero agent (the default self-play search" in text
