"""training.config_report: the count of the config's reads, and the records
that modules are given instead of the whole TrainConfig."""

import dataclasses

from training import config as config_lib
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
