"""mctx's own unit tests, from its installed wheel, pass with mcts_jax as mctx.

tests/mctx_wheel.py runs each `mctx/_src/tests/*_test.py` of the installed
mctx in a fresh process with `sys.modules["mctx"]` set to mcts_jax. Tests that
call mctx's private modules (`mctx._src.policies._apply_temperature`, ...)
cannot be swapped; the runner finds them from the source and does not run
them. Here: every test that can be swapped passes, the ones that cannot are
exactly those that use a private name (listed below for the pinned mctx
0.0.71, each with the name), and nothing is left out.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from subprocess_env import compiled_like_this_process

pytest.importorskip("mctx")  # a dev dependency: only a guard, it is installed in CI
pytest.importorskip("absl")

import mctx_wheel  # noqa: E402  (tests/ is on sys.path: conftest.py)

RUNNER = os.path.join(os.path.dirname(__file__), "mctx_wheel.py")
PINNED = "0.0.71"  # pyproject.toml: mctx==0.0.71

# Every test of mctx 0.0.71's wheel: the private name each non-swappable one
# uses, None for those that use mctx's public API only.
_TEMPERATURE = "mctx._src.policies._apply_temperature"
_MASK = "mctx._src.policies._mask_invalid_actions"
_MIXED_VALUE = "mctx._src.qtransforms._compute_mixed_value"
_SEQ_HALVING = "mctx._src.seq_halving.get_sequence_of_considered_visits"
EXPECTED = {
    "mctx_test.MctxTest.test_import": None,
    **{f"policies_test.PoliciesTest.test_{name}": private for name, private in [
        ("apply_temperature_one", _TEMPERATURE),
        ("apply_temperature_two", _TEMPERATURE),
        ("apply_temperature_zero", _TEMPERATURE),
        ("apply_temperature_zero_on_large_logits", _TEMPERATURE),
        ("mask_invalid_actions", _MASK),
        ("mask_all_invalid_actions", _MASK),
        ("muzero_policy", None),
        ("gumbel_muzero_policy", None),
        ("gumbel_muzero_policy_without_invalid_actions", None),
        ("stochastic_muzero_policy", None),
    ]},
    "qtransforms_test.QtransformsTest.test_mix_value": _MIXED_VALUE,
    "qtransforms_test.QtransformsTest.test_mix_value_with_zero_visits": _MIXED_VALUE,
    **{f"seq_halving_test.SeqHalvingTest.test_considered_{name}": _SEQ_HALVING
       for name in ("min_sims", "extra_sims", "less_sims", "less_sims2", "not_power_of_2",
                    "action0", "action1")},
    **{f"tree_test.TreeTest.test_tree_{name}": None
       for name in ("muzero_norescale", "muzero_qtransform", "gumbel_muzero_norescale",
                    "gumbel_muzero_reward")},
}


def run_the_wheel_tests(tmp_path) -> dict:
    out = tmp_path / "results.json"
    env = compiled_like_this_process(JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, RUNNER, "--json", str(out)], capture_output=True,
                          text=True, env=env, timeout=1200)
    assert out.exists(), f"the runner wrote no results (exit {done.returncode}):\n" \
                         f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    summary = json.loads(out.read_text())
    summary["returncode"], summary["printed"] = done.returncode, done.stdout
    return summary


# One test, not one per check: under pytest-xdist, tests sharing a module
# fixture may land on different workers, and each would run the wheel again.
def test_mctx_wheel_tests_pass_with_mcts_jax(tmp_path):
    wheel = run_the_wheel_tests(tmp_path)
    printed = wheel["printed"]

    # every test that can be swapped passes
    failed = [t for t in wheel["tests"] if t["status"] not in ("passed", "not swappable")]
    assert not failed, "\n\n".join(
        f"{t['id']}: {t['status']}\n{t.get('traceback', '')}" for t in failed) + "\n\n" + printed
    assert wheel["returncode"] == 0, printed

    # the tests not swapped are exactly those that use a private name, each
    # reported with that name
    assert wheel["mctx_version"] == PINNED, (
        f"mctx {wheel['mctx_version']} is installed; EXPECTED lists mctx {PINNED}'s tests")
    assert sorted(t["id"] for t in wheel["tests"]) == sorted(EXPECTED), printed
    not_swappable = {t["id"]: t["reason"] for t in wheel["tests"]
                     if t["status"] == "not swappable"}
    assert set(not_swappable) == {i for i, name in EXPECTED.items() if name}, printed
    for test_id, reason in not_swappable.items():
        assert EXPECTED[test_id] in reason, (test_id, reason)

    # the counts add up, nothing skipped
    total = len(EXPECTED)
    assert (wheel["total"], wheel["passed"], wheel["not swappable"], wheel["failed"],
            wheel["skipped"]) == (total, sum(v is None for v in EXPECTED.values()),
                                  sum(v is not None for v in EXPECTED.values()), 0, 0), printed
    assert wheel["passed"] + wheel["not swappable"] == wheel["total"]
    assert f"passed {wheel['passed']}, failed 0, not swappable {wheel['not swappable']}" \
        in printed


def test_the_analysis_follows_helpers_fixtures_and_module_code():
    """The runner's static analysis on a made-up test module: private names
    reached through a module function, a method, a fixture, an alias, a
    `from ... import name`, or module-level code."""
    source = textwrap.dedent('''
        import mctx
        from mctx._src import policies as p
        from mctx._src.qtransforms import _mix
        import numpy as np

        def helper():
            return deeper()

        def deeper():
            return p._hidden(1)

        class Base:
            def setUp(self):
                self.x = 1

        class T(Base):
            def _check(self):
                return _mix(2)

            def test_public(self):
                return mctx.muzero_policy, np.zeros(1)

            def test_alias(self):
                return p.thing

            def test_helper(self):
                return helper()

            def test_method(self):
                return self._check()

            def test_attribute(self):
                return mctx._src

        class WithFixture:
            def setUp(self):
                self.f = helper

            def test_public_but_fixture(self):
                pass
    ''')
    uses = mctx_wheel.analyse(source)
    assert uses.private_modules == ["mctx._src", "mctx._src.qtransforms"]
    assert uses.private_from_names == {"mctx._src": ["policies"], "mctx._src.qtransforms": ["_mix"]}
    assert uses.reasons("T.test_public") == []
    assert uses.reasons("T.test_alias") == ["mctx._src.policies.thing"]
    assert uses.reasons("T.test_helper") == ["mctx._src.policies._hidden via helper > deeper"]
    assert uses.reasons("T.test_method") == ["mctx._src.qtransforms._mix via T._check"]
    assert uses.reasons("T.test_attribute") == ["mctx._src"]
    assert uses.reasons("WithFixture.test_public_but_fixture") == [
        "mctx._src.policies._hidden via WithFixture.setUp > helper > deeper"]
    assert uses.load_time == []
    assert mctx_wheel.analyse(source + "\nTABLE = p.CONSTANT\n").load_time == [
        "mctx._src.policies.CONSTANT"]
