"""devtools/test_durations.py reads pytest's report of its slowest tests."""

from devtools import test_durations

REPORT = """\
........................................................................ [ 50%]
.................................................................        [100%]
============================= slowest 4 durations ==============================
30.50s call     tests/test_b.py::test_slow[x-1]
12.25s setup    tests/test_a.py::test_fixture_heavy
2.00s call     tests/test_a.py::test_fixture_heavy
0.75s teardown tests/test_b.py::test_slow[x-1]
======================= 137 passed, 2 warnings in 61.32s (0:01:01) ========================
"""


def test_the_slowest_phases_and_the_summary_are_read():
    slowest, summary = test_durations.parse(REPORT)
    assert [phase["seconds"] for phase in slowest] == [30.5, 12.25, 2.0, 0.75]
    assert [phase["phase"] for phase in slowest] == ["call", "setup", "call", "teardown"]
    assert slowest[0]["test"] == "tests/test_b.py::test_slow[x-1]"
    assert summary == "137 passed, 2 warnings in 61.32s (0:01:01)"


def test_seconds_are_summed_per_file_longest_first():
    slowest, _ = test_durations.parse(REPORT)
    assert test_durations.seconds_by_file(slowest) == [
        dict(file="tests/test_b.py", seconds=31.2), dict(file="tests/test_a.py", seconds=14.2)]


def test_a_report_without_durations_gives_nothing():
    assert test_durations.parse("1 failed in 0.10s\n") == ([], "1 failed in 0.10s")
