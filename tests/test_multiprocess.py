"""Two processes joined with jax.distributed on localhost (CPU), 4 fake
devices each, one 8-device mesh: a sharded search and a training step
(self-play moves + one update) agree between the processes, and the search
equals the one-device search run inside each process. The work is in
tests/multiprocess_worker.py."""

import json
import os
import socket
import subprocess
import sys

from subprocess_env import (DEFAULT_FUSION_EMITTERS, compiled_like_this_process,
                            pythonpath_with_repo)

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_two_processes_agree(tmp_path):
    port = free_port()
    env = compiled_like_this_process(
        "--xla_force_host_platform_device_count=4", DEFAULT_FUSION_EMITTERS, JAX_PLATFORMS="cpu",
        PYTHONPATH=pythonpath_with_repo())
    for name in ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID",
                 "MCTS_JAX_DISTRIBUTED"):
        env.pop(name, None)
    outs = [tmp_path / f"process{i}.json" for i in range(2)]
    workers = [subprocess.Popen([sys.executable, os.path.join(HERE, "multiprocess_worker.py"),
                                 str(i), str(port), str(outs[i])], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for i in range(2)]
    logs = []
    try:
        for worker in workers:
            logs.append(worker.communicate(timeout=600)[0])
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    for worker, log in zip(workers, logs):
        assert worker.returncode == 0, log[-4000:]
    first, second = (json.load(open(out)) for out in outs)
    assert [first["process_index"], second["process_index"]] == [0, 1]
    for result in (first, second):
        assert result["process_count"] == 2 and result["local_devices"] == 4
        assert result["devices"] == 8
        assert result["search_fully_addressable"] is False  # really split over both
        assert result["search_equals_one_device"] is True
        assert result["variables_sharding_replicated"] is True
        assert result["ready_samples"] > 0 and result["loss"] > 0
    for name in ("search_digest", "buffer_digest", "variables_digest", "loss"):
        assert first[name] == second[name], name
