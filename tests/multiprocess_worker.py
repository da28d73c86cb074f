"""One process of tests/test_multiprocess.py: joins a 2-process JAX job on
localhost (4 fake CPU devices each, 8 in the mesh), runs one sharded search
and one training step, and writes what it saw to a JSON file.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 \
        python tests/multiprocess_worker.py PROCESS_ID PORT OUT.json

The coordinator address, process count and id go through the environment
variables that `mcts_jax.sharding.initialize` documents.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys


def digest(tree) -> str:
    import jax
    import numpy as np

    from training import checkpoint as checkpoint_lib

    h = hashlib.sha256()
    for path, x in jax.tree_util.tree_leaves_with_path(checkpoint_lib.pack_keys(tree)):
        x = np.ascontiguousarray(np.asarray(x))
        h.update(f"{jax.tree_util.keystr(path)}:{x.dtype}:{x.shape}".encode())
        h.update(x.tobytes())
    return h.hexdigest()


def main(process_id: int, port: int, out_path: str) -> int:
    os.environ.update(JAX_COORDINATOR_ADDRESS=f"localhost:{port}", JAX_NUM_PROCESSES="2",
                      JAX_PROCESS_ID=str(process_id))
    from mcts_jax import sharding
    assert sharding.initialize() is True

    import jax
    import numpy as np

    import mcts_jax
    from problems import synthetic
    from training import config as config_lib
    from training import loop, replay

    result = dict(process_index=jax.process_index(), process_count=jax.process_count(),
                  local_devices=jax.local_device_count(), devices=jax.device_count())
    mesh = sharding.make_mesh()

    # ---- one sharded search: 16 roots, 2 per device, over both processes --------------
    problem = synthetic.HashedProblem(num_actions=5, illegal_eighths=2, terminal_sixteenths=2)
    root, invalid = problem.root(synthetic.random_root_codes(11, 16))  # same in every process
    key = jax.random.key(5)
    split = sharding.search(mesh, mcts_jax.GumbelPolicy(), None, key, root, problem.recurrent_fn, 8,
                            invalid_actions=invalid)
    result["search_fully_addressable"] = bool(split.action.is_fully_addressable)
    gathered = sharding.to_host(split)
    local = mcts_jax.gumbel_policy(None, key, root, problem.recurrent_fn, 8,
                                   invalid_actions=invalid)  # this process's first device
    result["search_equals_one_device"] = all(
        np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(jax.tree.leaves(gathered), jax.tree.leaves(local)))
    result["search_digest"] = digest(gathered)

    # ---- one training step: a self-play game to its end, then one update -------------
    config = config_lib.resolve(dict(
        game="tic_tac_toe", network="mlp", hidden=16, layers=1, value_hidden=8, num_simulations=4,
        num_games=16, replay_size=256, min_replay=8, train_batch_size=16, iterations=1,
        updates_per_iteration=1, random_opening_plies=0, eval_every=0, elo_every=0,
        final_games=0))
    mesh = loop.make_mesh(config)
    game, model, player, learner = loop.build(config, mesh)
    state = loop.place(mesh, loop.initial_state(config, model, player, learner))
    variables, play_state, buffer = state.variables, state.self_play, state.buffer
    keys = jax.random.split(jax.random.key(3), 10)
    for move in range(9):  # every tic-tac-toe game ends within 9 plies
        play_state, buffer, _ = player.step(variables, keys[move], play_state, buffer)
    learner_state, metrics = learner.update(state.learner, keys[9], buffer)
    result["ready_samples"] = int(replay.num_ready(buffer))
    result["loss"] = float(metrics["loss"])
    result["buffer_digest"] = digest(sharding.to_host(buffer))
    result["variables_digest"] = digest(sharding.to_host(learner_state.variables))
    result["variables_sharding_replicated"] = all(
        x.sharding.is_fully_replicated and len(x.sharding.device_set) == 8
        for x in jax.tree.leaves(learner_state.variables))
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
