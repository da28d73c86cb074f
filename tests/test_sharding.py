"""Sharded searches and data-parallel training on 8 (fake CPU) devices.

The checks run in ONE subprocess (tests/sharding_checks.py) started with
XLA_FLAGS=--xla_force_host_platform_device_count=8, because this pytest
process must keep its own device count; each check compares the 8-device
result with the one-device computation in that same subprocess:
  - sharded searches of B = 64 (UCT, AlphaZero, Gumbel with the compact
    layout and subtree reuse, a graph search with reuse) equal the
    one-device searches bit for bit;
  - a training iteration on 8 devices equals the one-device iteration within
    float tolerance, for AlphaZero and for MuZero (learned model, trajectory
    replay, reanalyse); its checkpoint restores on 1 and 4 devices, and continues
    on 1 device to the same result as the one-device run;
  - the communication-free "local" search mode: each device's rows equal the
    one-device search of those rows with that device's key;
  - clear errors when B or --num-games is not a multiple of the device count.
"""

import json
import os
import subprocess
import sys

import pytest
from subprocess_env import (DEFAULT_FUSION_EMITTERS, compiled_like_this_process,
                            pythonpath_with_repo)

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = ["errors", "search_uct", "search_alphazero", "search_gumbel_compact_reuse",
            "search_custom_rule_reuse", "search_custom_qtransform_compact",
            "search_parallel_paths_reuse", "search_stochastic_compact_reuse",
            "search_graph_reuse", "search_sampled_reuse",
            "search_local_mode", "search_user_policy_reuse", "training",
            "training_learned_model"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("sharding") / "results.json"
    env = compiled_like_this_process(
        "--xla_force_host_platform_device_count=8", DEFAULT_FUSION_EMITTERS, JAX_PLATFORMS="cpu",
        PYTHONPATH=pythonpath_with_repo())
    env.pop("SHARDING_CHECKS", None)
    run = subprocess.run([sys.executable, os.path.join(HERE, "sharding_checks.py"), str(out)],
                         env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.parametrize("name", EXPECTED)
def test_eight_devices(results, name):
    assert name in results["passed"] or name in results["failed"], f"{name} did not run"
    assert name not in results["failed"], f"{name} failed:\n{results['failed'][name]}"
