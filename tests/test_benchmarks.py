"""The benchmark suite's runner at a tiny size, and the random game trees
with exact minimax values used by its search-quality sweep."""

import hashlib
import itertools
import json
import math
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from problems.game_trees import GameTree, random_root_codes

# `benchmarks` is a top-level folder, not an installed package: importable when
# pytest runs from the repository root as `python -m pytest`; this makes a plain
# `pytest` work too.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# ---- the runner --------------------------------------------------------------
def test_tiny_suite_run(tmp_path):
    """One tiny run of every section (one test, so that pytest-xdist never runs
    the suite twice), then its JSON, markdown and plots are checked."""
    from benchmarks import run
    results_dir = str(tmp_path / "results")
    out = run.main(["--tiny", "--results-dir", results_dir, "--no-readme"])
    tiny_run = (results_dir, out)
    check_writes_every_section_with_the_device(tiny_run)
    check_figures_are_positive_and_finite(tiny_run)
    check_markdown_lists_the_figures(tiny_run)
    check_plots_are_images(tiny_run)


def _finite_positive(value):
    return isinstance(value, float) and math.isfinite(value) and value > 0


def check_writes_every_section_with_the_device(tiny_run):
    from benchmarks import harness
    results_dir, out = tiny_run
    tag = out["tag"]
    assert tag == "tiny-" + harness.device_slug()
    expected = {"batch-synthetic", "simulations", "quality", "memory", "features", "baselines",
                "stochastic"}
    assert set(out["sections"]) == expected
    for section in expected:
        with open(os.path.join(results_dir, f"{section}-{tag}.json")) as f:
            data = json.load(f)
        machine = data["machine"]
        assert machine["device"] == jax.devices()[0].device_kind
        settings = data["settings"]
        assert len(settings["commit"]) == 40 and isinstance(settings["dirty"], bool)
        assert settings["command"] and settings["seed"] == 0  # the process command line
        assert "mcts_jax/tree_search.py" in data["dependencies"]
        assert machine["versions"]["jax"] == jax.__version__
        assert machine["versions"]["mcts_jax"] != "not installed"
        assert data["rows"], section


def check_figures_are_positive_and_finite(tiny_run):
    _, out = tiny_run
    sections = out["sections"]
    throughput = sections["batch-synthetic"]["rows"] + sections["simulations"]["rows"]
    assert {r["runner"] for r in throughput} == {"ours_alphazero", "mctx_muzero"}
    for row in throughput:
        for column in ("sims_per_s", "us_per_sim", "compile_s", "median_s"):
            assert _finite_positive(row[column]), (column, row)
        assert math.isclose(row["sims_per_s"], row["B"] * row["simulations"] / row["median_s"])
        assert len(row["seconds"]) == row["rounds"] == 2
        assert row["sims_per_s_min"] <= row["sims_per_s"] <= row["sims_per_s_max"]
        if row["runner"] == "ours_alphazero":
            assert row["ratio_min"] <= row["ratio"] <= row["ratio_max"]
    quality = sections["quality"]["rows"]
    assert {r["runner"] for r in quality} == {"random", "ours_alphazero", "mctx_muzero"}
    for row in quality:
        assert 0.0 <= row["optimal_fraction"] <= 1.0
        # a fraction of `roots` searches (the random row: of roots x actions)
        count = row["optimal_fraction"] * row["roots"] * (3 if row["runner"] == "random" else 1)
        assert abs(count - round(count)) < 1e-6
    for row in sections["memory"]["rows"]:
        assert _finite_positive(float(row["bytes_per_node"]))
        assert row["embedding_bytes_per_node"] <= row["bytes_per_node"]
    for row in sections["features"]["rows"]:
        for column in ("plain_sims_per_s", "solver_sims_per_s", "get_subtree_ms"):
            assert _finite_positive(row[column]), (column, row)
    baselines = {r["baseline"]: r for r in sections["baselines"]["rows"]}
    assert _finite_positive(baselines["plain Python UCT (tutorial style)"]["sims_per_s"])
    assert _finite_positive(baselines["mcts_jax uct_policy + pgx playouts"]["sims_per_s"])
    spiel = baselines["OpenSpiel C++ MCTSBot"]["sims_per_s"]
    assert _finite_positive(spiel)  # open_spiel is in the dev extra


def check_markdown_lists_the_figures(tiny_run):
    from benchmarks import report
    results_dir, out = tiny_run
    tag = out["tag"]
    with open(os.path.join(results_dir, f"report-{tag}.md")) as f:
        text = f.read()
    assert jax.devices()[0].device_kind in text
    sections = out["sections"]
    commit = sections["quality"]["settings"]["commit"]
    assert "Produced by" in text and f"commit {commit[:10]}" in text
    for row in sections["batch-synthetic"]["rows"] + sections["simulations"]["rows"]:
        assert report._fmt(row["sims_per_s"]) in text, row
    for row in sections["quality"]["rows"]:
        if row["runner"] != "random":
            assert report._fmt(row["optimal_fraction"]) in text, row
    for row in sections["memory"]["rows"] + sections["baselines"]["rows"]:
        figure = row.get("bytes_per_node", row.get("sims_per_s"))
        assert report._fmt(figure) in text, row
    (stochastic,) = sections["stochastic"]["rows"]
    assert (stochastic["problem"], stochastic["B"]) == ("synthetic", 2)
    assert f"| {report._fmt(stochastic['ours_sims_per_s'])} | " \
           f"{report._fmt(stochastic['mctx_sims_per_s'])} | " \
           f"{report._fmt(stochastic['ours/mctx'])} (" in text
    ours = sections["batch-synthetic"]["rows"][0]
    assert ours["runner"] == "ours_alphazero" and ours["ratio_vs"] == "mctx_muzero"
    assert "alphazero/muzero" in text and (f"{report._fmt(ours['ratio'])} "
                                           f"({report._fmt(ours['ratio_min'])}-") in text
    for name in report.PLOTS:
        assert f"plots/{tag}-{name}.png" in text


def check_plots_are_images(tiny_run):
    from matplotlib import image
    from benchmarks import report
    results_dir, out = tiny_run
    pngs = [p for p in out["files"] if p.endswith(".png")]
    assert sorted(os.path.basename(p) for p in pngs) == sorted(
        f"{out['tag']}-{name}.png" for name in report.PLOTS)
    for path in pngs:
        with open(path, "rb") as f:
            assert f.read(8) == PNG_SIGNATURE
        pixels = image.imread(path)
        assert pixels.ndim == 3 and pixels.shape[0] >= 200 and pixels.shape[1] >= 400
        assert pixels[..., :3].std() > 0.05  # not a blank canvas


def test_interleaved_rounds_alternate_the_sides_and_pair_the_rounds():
    from benchmarks import harness
    calls = []
    sides = {name: (lambda name=name: calls.append(name)) for name in ("ours", "peer")}
    result = harness.interleaved_rounds(sides, 3, pairs=[("ours", "peer")],
                                        work={"ours": 4, "peer": 1})
    # compile and warm-up of each side, then ours/peer in reversed order every other round
    assert calls == ["ours", "ours", "peer", "peer"] + ["ours", "peer", "peer", "ours",
                                                        "ours", "peer"]
    seconds = {name: side["seconds"] for name, side in result["sides"].items()}
    ratio = result["ratios"]["ours/peer"]
    assert ratio["values"] == pytest.approx([4 * p / o for o, p in zip(seconds["ours"],
                                                                         seconds["peer"])])
    assert ratio["min"] <= ratio["median"] <= ratio["max"]
    calls.clear()
    harness.interleaved_rounds(sides, 2, sequential=True)
    assert calls[4:] == ["ours", "ours", "peer", "peer"]


def test_results_are_refused_without_provenance(tmp_path, monkeypatch):
    from benchmarks import harness
    monkeypatch.setattr(harness, "RESULTS_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="provenance"):
        harness.save("nothing", [dict(a=1)], dict(repeats=3))
    with pytest.raises(ValueError, match="provenance"):
        harness.report("nothing", "title", ["a"], [dict(a=1)], dict(repeats=3))
    path = harness.save("something", [dict(a=1)], dict(harness.provenance(seed=7), repeats=3))
    with open(path) as f:
        saved = json.load(f)
    assert saved["settings"]["seed"] == 7 and saved["settings"]["commit"]
    assert "benchmarks" not in " ".join(saved["dependencies"])
    assert "mcts_jax/tree.py" in saved["dependencies"]
    assert set(saved["dependency_sha256"]) == set(saved["dependencies"])
    with open(os.path.join(harness.REPOSITORY, "mcts_jax", "tree.py"), "rb") as f:
        assert saved["dependency_sha256"]["mcts_jax/tree.py"] == \
            hashlib.sha256(f.read()).hexdigest()
    # A name given with the backend's suffix by hand is not suffixed twice.
    backend = harness.machine_info()["backend"]
    assert harness.save(f"something-{backend}", [dict(a=2)],
                        dict(harness.provenance(seed=7), repeats=3)) == path
    with open(path) as f:
        assert json.load(f)["rows"] == [dict(a=2)]


def test_openspiel_baseline_in_the_same_rounds():
    """The OpenSpiel C++ MCTSBot side on a tiny cell (open_spiel is in the
    dev extra, so this runs in CI): its speed and our ratio to it per round."""
    from benchmarks.baselines import compare
    rows = {(r["baseline"], r["B"]): r for r in compare.measure(32, [2], rounds=2)}
    spiel = rows[(compare.OPENSPIEL, 1)]
    assert _finite_positive(spiel["sims_per_s"]) and len(spiel["seconds"]) == 2
    assert "ratio_vs_openspiel" not in spiel
    for key in ((compare.PYTHON, 1), (compare.OURS, 1), (compare.OURS, 2)):
        row = rows[key]
        assert row["ratio_vs_openspiel_min"] <= row["ratio_vs_openspiel"] <= \
            row["ratio_vs_openspiel_max"]


def test_tree_steps_counts_the_same_edges_on_both_sides():
    """Ours and mctx make identical trees here, so both walk the same edges;
    a simulation walks at least the edge to its new leaf."""
    from experiments import tree_steps
    rows = {row["side"]: row for row in tree_steps.measure(2, 4, [8], rounds=1, log=str)}
    assert set(rows) == {"ours", "mctx"}
    assert rows["ours"]["edges_walked"] == rows["mctx"]["edges_walked"] >= 2 * 8
    assert rows["ours"]["mean_depth"] == rows["ours"]["edges_walked"] / 16
    for row in rows.values():
        assert row["ns_per_edge_min"] <= row["ns_per_edge"] <= row["ns_per_edge_max"]
    assert _finite_positive(rows["ours"]["ratio"])


def test_stochastic_search_2048_row_steps_pgx_on_both_sides():
    """The 2048 problem: both sides search the same fresh boards (the root's
    illegal slides masked for both), and the row's ratio lies in its range."""
    from benchmarks import stochastic_search
    root, invalid, _ = stochastic_search.game_2048_problem(3)
    assert root.embedding.current_player.shape == (3,) and invalid.shape == (3, 4)
    assert bool(jnp.all(jnp.any(~invalid, axis=-1)))
    (row,) = stochastic_search.measure("2048", [3], [4], 2, tree=None, log=str)
    assert (row["problem"], row["B"], row["simulations"], row["rounds"]) == ("2048", 3, 4, 2)
    assert row["ours_sims_per_s"] > 0 and row["mctx_sims_per_s"] > 0
    assert row["ratio_min"] <= row["ours/mctx"] <= row["ratio_max"]


def test_memory_runs_fit_describes_the_measured_points():
    from experiments import memory_runs as memory
    runs = [dict(B=b, simulations=s, peak_rss_GiB=1.0 + b / 1024) for b in (1024, 4096)
            for s in (32, 800)] + [dict(B=5120, simulations=32, error="killed")]
    fits = {fit["simulations"]: fit for fit in memory.fit_rows(runs)}
    assert set(fits) == {32, 800} and fits[32]["batch_sizes"] == [1024, 4096]
    assert fits[800]["intercept_GiB"] == pytest.approx(1.0)
    assert fits[800]["MiB_per_search"] == pytest.approx(1.0)
    assert memory.parse_run("5120x32") == (5120, 32)


def test_checkpoint_write_times_both_sides_of_a_random_state(tmp_path):
    from experiments import checkpoint_write
    variables, arrays = checkpoint_write.random_state(checkpoint_write.CASES["tic_tac_toe_default"])
    buffers = [x for x in jax.tree.leaves(arrays) if np.size(x) > 1000]
    assert buffers and all(np.any(np.asarray(x) != 0) for x in buffers)  # filled, not zeros
    row = checkpoint_write.measure("tic_tac_toe_default", 1, str(tmp_path))
    assert set(checkpoint_write.COLUMNS) <= set(row)
    assert row["state_mb"] > 0 and len(row["in_turn_rounds_s"]) == len(row["blocking_rounds_s"]) == 1
    assert 0 < row["background_blocking_s"] <= row["background_written_s"]
    assert not os.path.exists(tmp_path / "tic_tac_toe_default")  # its checkpoints removed


def test_anytime_savings_quick_keeps_every_move_and_spends_at_most_n():
    """The --quick path of experiments/anytime_savings.py at tiny shapes (Connect
    Four, where random playouts decide rows early): the VisitGap search plays
    the full search's move on every row, at the batch and one row per call,
    and spends no more than N."""
    from experiments import anytime_savings
    rows = anytime_savings.main(["--quick", "--problems", "connect_four", "--simulations",
                                 "24", "--rounds", "1", "--limit", "connect_four=12",
                                 "--sample", "2", "--no-save"])
    assert [(row["N"], row["B"]) for row in rows] == [(24, 12), (24, 1)]
    for row in rows:
        assert row["same_move_pct"] == 100.0
        assert 0 < row["sims_median"] <= 24 and 0 < row["sims_mean"] <= 24
        assert row["saved_pct"] == round(100 * (1 - row["sims_mean"] / 24), 1)
        assert sum(row["spent_histogram"]) == row["positions"]
        assert set(row["timing"]["sides"]) == {"full", "stopped"}
    batch = rows[0]
    assert batch["accuracy_full"] == batch["accuracy_stopped"]  # equal moves, equal judge
    assert 0.0 <= batch["accuracy_full"] <= 1.0
    assert any(row["saved_pct"] > 0 for row in rows)  # the rule does stop rows
    with pytest.raises(SystemExit, match="--limit: expected PROBLEM=COUNT"):
        anytime_savings.main(["--quick", "--limit", "go=3", "--no-save"])


def test_readme_block_is_replaced_not_duplicated(tmp_path):
    from benchmarks import run
    readme = tmp_path / "README.md"
    readme.write_text(f"# Results\n\nintro\n{run.NEW_BLOCKS_ANCHOR}\n\nolder\n")
    run.update_readme(str(readme), "quick-cpu", "first")
    run.update_readme(str(readme), "full-gpu", "other")
    run.update_readme(str(readme), "quick-cpu", "second")
    text = readme.read_text()
    assert text.startswith("# Results\n\nintro\n")
    assert "first" not in text and text.count("second") == 1 and text.count("other") == 1
    # new blocks newest first, right under the anchor, above older text
    assert text.index("other") < text.index("second") < text.index("older")


# ---- random game trees with exact minimax ------------------------------------
def brute_force_values(tree: GameTree, code: int):
    """Root move values by plain recursion over the Python hash functions:
    value of a move = its increment minus the opponent's best continuation."""
    def best(code, moves_left):
        if moves_left == 0:
            return 0
        return max(move_value(code, a, moves_left) for a in range(tree.branching))

    def move_value(code, action, moves_left):
        return (GameTree.increment(code, action)
                - best(GameTree.child_code(code, action), moves_left - 1))

    return [move_value(code, a, tree.depth) for a in range(tree.branching)]


@pytest.mark.parametrize("depth,branching", [(1, 5), (2, 3), (3, 4), (5, 2)])
def test_game_tree_minimax_matches_brute_force(depth, branching):
    tree = GameTree(depth, branching)
    codes = random_root_codes(depth * 10 + branching, 6)
    values = tree.root_action_values(codes)
    assert values.shape == (6, branching)
    for row, code in zip(values, codes):
        assert row.tolist() == brute_force_values(tree, int(code))
    optimal = tree.optimal_actions(codes)
    assert optimal.any(axis=1).all()
    np.testing.assert_array_equal(optimal, values == values.max(axis=1, keepdims=True))


def test_game_tree_minimax_by_enumerating_whole_games():
    """Independent of the recursion: every complete game's final score for the
    root player, then min/max over the opponent's/root player's choices."""
    tree = GameTree(4, 3)
    code = int(random_root_codes(7, 1)[0])
    final = {}
    for moves in itertools.product(range(3), repeat=4):
        position, score = code, 0
        for ply, action in enumerate(moves):
            sign = 1 if ply % 2 == 0 else -1
            score += sign * GameTree.increment(position, action)
            position = GameTree.child_code(position, action)
        final[moves] = score
    # root player picks a and c (max), the opponent b and d (min)
    expected = [min(max(min(final[(a, b, c, d)] for d in range(3)) for c in range(3))
                    for b in range(3)) for a in range(3)]
    assert tree.root_action_values([code])[0].tolist() == expected


def test_game_tree_recurrent_fn_follows_the_python_game():
    """Along random move sequences (past the end too), the JAX recurrent_fn's
    rewards, discounts and codes are the Python game's, and the rewards summed
    for the root player are its final score difference / reward_scale."""
    tree = GameTree(3, 4)
    codes = random_root_codes(3, 5)
    root = tree.root(codes)
    step = jax.jit(tree.recurrent_fn)
    rng = np.random.default_rng(0)
    embedding, position = root.embedding, [int(c) for c in codes]
    returns, expected_scores = np.zeros(5), np.zeros(5)
    for ply in range(tree.depth + 2):
        actions = rng.integers(0, tree.branching, size=5)
        out, embedding = step(None, jax.random.key(0), jnp.asarray(actions, jnp.int32),
                              embedding)
        for i, action in enumerate(actions):
            if ply < tree.depth:
                increment = GameTree.increment(position[i], int(action))
                assert float(out.reward[i]) == pytest.approx(increment / tree.reward_scale)
                expected_scores[i] += (1 if ply % 2 == 0 else -1) * increment
                position[i] = GameTree.child_code(position[i], int(action))
                assert float(out.discount[i]) == (-1.0 if ply + 1 < tree.depth else 0.0)
            else:
                assert float(out.reward[i]) == 0.0 and float(out.discount[i]) == 0.0
            assert int(embedding["code"][i]) == position[i]
        returns += (1 if ply % 2 == 0 else -1) * np.asarray(out.reward)
    np.testing.assert_allclose(returns * tree.reward_scale, expected_scores, atol=1e-3)
    assert out.prior_logits.shape == (5, 4) and not np.asarray(out.value).any()


@pytest.mark.parametrize("kwargs,name", [
    (dict(depth=0, branching=4), "depth"),
    (dict(depth=3, branching=1), "branching"),
    (dict(depth=2.0, branching=4), "depth"),
    (dict(depth=8, branching=16), "branching ** depth"),
])
def test_game_tree_bad_sizes_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name.replace("*", r"\*")):
        GameTree(**kwargs)


# ---- several simulations per step: judges and the simulator floor ------------
def test_mate_in_two_file_is_what_the_script_builds():
    """benchmarks/data/mate_in_two.json: every position re-verified by
    python-chess (a mate in two, no mate in one, all mating first moves)."""
    pytest.importorskip("chess")
    from experiments import mate_in_two_positions as m2
    with open(m2.DEFAULT_OUT) as f:
        stored = json.load(f)["positions"]
    built, rejected = m2.build()
    assert stored == built and not rejected and len(built) >= 40


def test_mate_in_two_moves_are_legal_pgx_actions():
    from experiments import parallel_leaves
    states, mating = parallel_leaves.mate_in_two_positions()
    assert mating.shape[0] == states.current_player.shape[0]
    assert mating.any(axis=1).all()
    assert not (mating & ~np.asarray(states.legal_action_mask)).any()


def test_floor_replays_every_recurrent_fn_call_of_the_search():
    from experiments import parallel_leaves
    actions, embeddings = parallel_leaves.recorded_leaves("tic_tac_toe", 2, 10, 4)
    assert actions.shape == (3, 8)  # ceil(10 / 4) calls of B x P transitions
    assert jax.tree.leaves(embeddings)[0].shape[:2] == (3, 8)
    run = parallel_leaves.floor_runner("tic_tac_toe", 2, 10, 4)
    run()


# ---- equal-time training comparisons --------------------------------------------

@pytest.mark.parametrize("module", ["connect_four_recipe", "learned_models"])
def test_equal_time_sides_differ_from_their_section_only_where_they_say(module):
    """Every side's train.py command line resolves (through train.py's own
    parser) to the section's shared settings plus exactly the side's change
    (and what its algorithm's preset sets), with the budget and the seed on
    the line."""
    import dataclasses
    import importlib
    from experiments import equal_time
    from training import config as config_lib
    from training import presets
    sections = importlib.import_module(f"experiments.{module}").SECTIONS
    for common, sides in sections.values():
        shared = config_lib.resolve(common)
        for side, settings in sides:
            line = equal_time.command("/tmp/unused", dict(common, **settings), 3, 90.0)
            _, explicit = config_lib.parse(line[2:])
            config = config_lib.resolve(explicit)
            assert (config.seed, config.max_training_s) == (3, 90.0), side
            assert config == dataclasses.replace(config_lib.resolve(dict(common, **settings)),
                                                 seed=3, max_training_s=90.0), side
            changed = {name for name in config_lib.TrainConfig.__dataclass_fields__
                       if getattr(config, name) != getattr(shared, name)}
            said = {name for name, value in settings.items() if getattr(shared, name) != value}
            by_algorithm = set(presets.for_game(common["game"]).algorithms.get(
                settings.get("algorithm"), {}))
            assert said <= changed - {"seed", "max_training_s"} <= said | by_algorithm, side


def test_equal_time_curve_keeps_the_evaluated_iterations(tmp_path):
    from experiments import equal_time
    records = [dict(iteration=1, elapsed_s=5.0, loss=1.0),
               dict(iteration=2, elapsed_s=9.5, solver_search_accuracy=0.8,
                    vs_solver_first_wins=3, loss=0.9),
               dict(iteration=3, elapsed_s=14.0, score_mean=812.5)]
    with open(tmp_path / "metrics.jsonl", "w") as f:
        f.write("\n".join(json.dumps(r) for r in records) + "\n")
    assert equal_time.curve(str(tmp_path)) == [
        dict(iteration=2, elapsed_s=9.5, solver_search_accuracy=0.8, vs_solver_first_wins=3),
        dict(iteration=3, elapsed_s=14.0, score_mean=812.5)]


def test_a_command_writes_its_results_into_its_own_folder(monkeypatch):
    """`python -m experiments.x` writes experiments/results/, `python -m
    devtools.x` devtools/results/, the suite and anything else (a test, a
    session) benchmarks/results/ (harness.RESULTS_DIR)."""
    import types
    from benchmarks import harness

    def results_dir_when_run_as(module):
        spec = None if module is None else types.SimpleNamespace(name=module)
        monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace(__spec__=spec))
        return harness._results_dir_of_command()

    for folder in ("benchmarks", "experiments", "devtools"):
        assert results_dir_when_run_as(f"{folder}.some_script") == os.path.join(
            harness.REPOSITORY, folder, "results")
    for other in ("pytest", "training.loop", None):
        assert results_dir_when_run_as(other) == os.path.join(harness.REPOSITORY, "benchmarks",
                                                              "results")


def test_equal_time_side_by_side_gives_each_side_its_own_cores(monkeypatch):
    from experiments import equal_time
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 0, 2, 1})
    assert equal_time.core_shares(2) == [[0, 1], [2, 3]]
    assert equal_time.core_shares(3) == [[0], [1], [2]]
    with pytest.raises(ValueError, match="5 sides need as many cores"):
        equal_time.core_shares(5)


def test_equal_time_wait_all_sees_each_run_end():
    import subprocess
    import time
    from experiments import equal_time
    tick = time.perf_counter()
    started = [([], tick, subprocess.Popen(["sleep", seconds])) for seconds in ("2.5", "0.1")]
    slow, fast = equal_time.wait_all(started)
    assert fast - tick < 1.6 and slow - tick >= 2.5 and slow > fast
