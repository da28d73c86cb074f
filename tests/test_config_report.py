"""training.config_report: the count of the config's reads, and the records
that modules are given instead of the whole TrainConfig."""

import ast
import dataclasses
import os

import pytest

from training import config as config_lib
from training import policies
from training import config_report

FIELDS = frozenset(f.name for f in dataclasses.fields(config_lib.TrainConfig))

SOURCE = '''
def play(config: TrainConfig, run):
    a = config.num_games + run.config.seed
    b = other.num_games + config.not_a_setting
    def inner():
        return config.num_games
    return a, b

top = config.game
'''


def test_reads_and_receivers_of_a_snippet():
    # `other.num_games` and `config.not_a_setting` are no reads of a setting.
    assert config_report.config_reads(SOURCE, FIELDS) == [
        ("play", "num_games"), ("play", "seed"), ("play.inner", "num_games"),
        ("<module>", "game")]
    assert config_report.config_receivers(SOURCE) == [("play", "TrainConfig")]


def test_the_evaluation_is_given_its_record_alone():
    found = config_report.report()
    entry = found["training/evaluation.py"]
    assert [a for _, a in entry["receivers"]] == ["EvaluationConfig"]
    record = {f.name for f in dataclasses.fields(config_lib.EvaluationConfig)}
    assert {field for _, field in entry["reads"]} <= record
    # The record's values are the run's.
    config = config_lib.resolve(dict(game="connect_four", preset="tiny", eval_games=6))
    assert config.evaluation.eval_games == 6
    assert all(getattr(config.evaluation, name) == getattr(config, name) for name in record)


def test_record_reads_of_a_snippet():
    source = '''
def build(config, algorithm):
    search = config.records.search
    return search.max_nodes, algorithm.records.game, records.run, config.search
'''
    # `config.search` is no record read (no such attribute: the records are
    # `config.records.<concern>`).
    assert config_report.record_reads(source) == [("build", "search"), ("build", "game"),
                                                  ("build", "run")]


# TrainConfig fields by record, and the fields a record derives.
DERIVED = {"max_nodes": "search", "chance_nodes": "search", "slots": "replay",
           "total_updates": "optimizer", "algorithm": "run"}


def test_every_setting_is_in_one_record_with_its_value():
    """Each flat field is a field of exactly one record (max_game_length of
    two: the game's and the evaluation's), with the config's value; the
    derived fields are computed from the flat ones."""
    config = config_lib.resolve(dict(game="connect_four", preset="tiny", num_simulations=10,
                                     max_nodes=0, reuse_tree=True, replay_size=1000,
                                     num_games=64, iterations=7, updates_per_iteration=3,
                                     dirichlet_fraction=0.125, max_game_length=30,
                                     algorithm="gumbel_muzero"))
    records = config.records
    where = {}
    for concern in dataclasses.fields(records):
        record = getattr(records, concern.name)
        for f in dataclasses.fields(record):
            name = (config_lib.NETWORK_FIELDS[f.name] if concern.name == "network"
                    else f.name)
            derived = DERIVED.get(f.name) == concern.name
            if name in FIELDS:  # max_nodes and algorithm: resolved from their flag
                where.setdefault(name, []).append(concern.name)
            if not derived:
                assert getattr(record, f.name) == getattr(config, name), (concern.name, f.name)
    assert sorted(where) == sorted(FIELDS)
    assert {name: places for name, places in where.items() if len(places) > 1} == {
        "max_game_length": ["game", "evaluation"]}
    assert config.max_nodes == 0  # its record holds the capacity it stands for:
    assert records.search.max_nodes == (10 + 1) * 4  # --reuse-tree: room for a kept subtree
    assert records.replay.slots == 16 and records.optimizer.total_updates == 21
    assert records.search.chance_nodes is False
    assert records.run.algorithm is config_lib.ALGORITHM_KINDS["gumbel_muzero"]
    assert config_lib.resolve(dict(game="2048", preset="tiny")).records.search.chance_nodes


def test_the_records_are_built_once_per_config():
    config = config_lib.resolve(dict(game="tic_tac_toe", preset="tiny"))
    assert config.records is config.records
    changed = dataclasses.replace(config, num_simulations=config.num_simulations + 5)
    assert changed.records.search.num_simulations == config.num_simulations + 5
    assert changed.records.search.max_nodes == config.records.search.max_nodes + 5
    # The records are no field: config.json stays the flat settings.
    assert set(config.to_json()) == FIELDS
    assert config_lib.TrainConfig.from_json(config.to_json()).records == config.records


def test_the_build_step_and_the_algorithms_read_records_only():
    """training/build.py, the MuZero family's setup and the agent read no
    flat setting: each part is given its own record's values (the loop
    reads flat settings only to name the run in its messages)."""
    found = config_report.report()
    for path in ("training/build.py", "training/muzero/setup.py", "training/agent.py"):
        assert found[path]["reads"] == [], path
        assert found[path]["records"], path
    assert {function for function, _ in found["training/loop.py"]["reads"]} <= {
        "open_run", "start_run"}
    setup = {concern for _, concern in found["training/muzero/setup.py"]["records"]}
    assert "optimizer" not in setup and "evaluation" not in setup


def _algorithm_name_tests(source: str):
    """The comparisons of an `.algorithm` attribute with a string in `source`."""
    tests = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            sides = [node.left] + list(node.comparators)
            if (any(isinstance(s, ast.Attribute) and s.attr == "algorithm" for s in sides)
                    and any(isinstance(s, ast.Constant) and isinstance(s.value, str)
                            for s in sides)):
                tests.append(node.lineno)
    return tests


def test_the_algorithm_is_chosen_once():
    """No module of training/ compares the config's algorithm name: the name
    is looked up once (`ALGORITHM_KINDS`, `records.run.algorithm`) and the
    places that differ ask the kind or the algorithm value."""
    assert _algorithm_name_tests("x = config.algorithm == 'muzero'\n") == [1]
    for kind in config_lib.ALGORITHM_KINDS.values():  # a named policy exists
        assert kind.policy == "" or kind.policy in policies.POLICIES, kind
    found = {}
    for path in config_report.python_files():
        if path.startswith("training" + os.sep):
            with open(os.path.join(config_report.ROOT, path)) as f:
                lines = _algorithm_name_tests(f.read())
            if lines:
                found[path] = lines
    assert found == {}
    with pytest.raises(ValueError, match="--algorithm must be one of"):
        config_lib.algorithm_kind("alpha_zero")
