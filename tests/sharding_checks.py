"""The 8-device checks of tests/test_sharding.py, run in one subprocess.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/sharding_checks.py OUT.json

The pytest process keeps its own device count (other tests share it), so
this script does every check that needs 8 (fake CPU) devices and writes
{"passed": [names], "failed": {name: message}, "seconds": {name: s}} to OUT.json.
Each check compares the sharded computation with an independent one-device
computation in this same process.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback

import jax
import jax.numpy as jnp
import numpy as np

import custom_rules
import mcts_jax
from mcts_jax import sharding
from problems import synthetic
from problems.chance_trees import ChanceTree
from training import checkpoint as checkpoint_lib
from training import config as config_lib
from training import loop
from training.state import TrainState

BATCH = 64
SIMULATIONS = 12
PROBLEM = synthetic.HashedProblem(num_actions=6, illegal_eighths=2, terminal_sixteenths=2)


def leaves_equal(a, b) -> list:
    """Key paths of the leaves of `a` and `b` whose values differ (bits)."""
    diffs = []
    flat_b = dict(jax.tree_util.tree_leaves_with_path(b))
    for path, x in jax.tree_util.tree_leaves_with_path(a):
        y = flat_b[path]
        if not np.array_equal(np.asarray(x), np.asarray(y)):
            diffs.append(jax.tree_util.keystr(path))
    assert len(flat_b) == len(jax.tree.leaves(a)), "different structures"
    return diffs


def assert_split(tree, devices: int, rows: int):
    """Every [rows, ...] leaf of `tree` lives on `devices` devices, rows / devices each."""
    for path, x in jax.tree_util.tree_leaves_with_path(tree):
        assert len(x.sharding.device_set) == devices, (jax.tree_util.keystr(path), x.sharding)
        shapes = {s.data.shape[0] for s in x.addressable_shards}
        assert shapes == {rows // devices}, (jax.tree_util.keystr(path), shapes)


# ---- searches ------------------------------------------------------------------------

def check_search(mesh, policy, **options):
    """Sharded search of B = 64 equals the one-device search bit for bit; with
    subtree reuse, the re-rooted trees and the continued search too."""
    reuse = options.pop("reuse", False)
    root, invalid = PROBLEM.root(synthetic.random_root_codes(3, BATCH))
    key = jax.random.key(7)
    function = sharding.as_policy(policy, {})
    single = function(None, key, root, PROBLEM.recurrent_fn, SIMULATIONS,
                      invalid_actions=invalid, **options)
    split = sharding.search(mesh, policy, None, key, root, PROBLEM.recurrent_fn, SIMULATIONS,
                            invalid_actions=invalid, **options)
    assert split.action.sharding.spec == jax.sharding.PartitionSpec(sharding.DATA_AXIS)
    assert_split(split, 8, BATCH)
    different = leaves_equal(single, split)
    assert not different, f"{policy}: sharded search differs in {different}"
    assert np.asarray(single.search_tree.node_visits).sum() > 0  # a real search
    if not reuse:
        return
    # subtree reuse: re-root, continue with another key, compare again
    single_tree = mcts_jax.get_subtree(single.search_tree, single.action)
    split_tree = sharding.get_subtree(mesh, split.search_tree, split.action)
    assert_split(split_tree, 8, BATCH)
    assert not leaves_equal(single_tree, split_tree), "get_subtree differs"
    next_root = jax.tree.map(lambda x: x, root)  # the same roots: continue on the subtree rows
    key2 = jax.random.key(8)
    single2 = function(None, key2, next_root, PROBLEM.recurrent_fn, SIMULATIONS,
                       invalid_actions=invalid, tree=single_tree, **options)
    split2 = sharding.search(mesh, policy, None, key2, next_root, PROBLEM.recurrent_fn,
                             SIMULATIONS, invalid_actions=invalid, tree=split_tree, **options)
    different = leaves_equal(single2, split2)
    assert not different, f"{policy}: continued sharded search differs in {different}"
    kept = np.asarray(single_tree.node_visits)[:, 0]
    assert (kept > 0).any(), "the subtrees kept no visits: reuse not exercised"


def check_graph(mesh):
    """A graph search (transpositions) of B = 64 sharded equals the
    one-device search bit for bit, re-rooted and continued too."""
    from dag_game import DagGame

    game = DagGame(num_actions=8, length=5)
    masks = np.random.default_rng(4).integers(0, 8, size=BATCH)
    root, illegal = game.root(masks)
    policy = mcts_jax.UCTPolicy.make(transpositions=True, solver=True)
    function = sharding.as_policy(policy, {})
    key = jax.random.key(9)
    single = function(None, key, root, game.recurrent_fn, 24, invalid_actions=illegal)
    split = sharding.search(mesh, policy, None, key, root, game.recurrent_fn, 24,
                            invalid_actions=illegal)
    assert_split(split, 8, BATCH)
    different = leaves_equal(single, split)
    assert not different, f"graph: sharded search differs in {different}"
    assert np.asarray(single.search_tree.num_nodes).max() < 25  # positions were shared
    single_tree = mcts_jax.get_subtree(single.search_tree, single.action)
    split_tree = sharding.get_subtree(mesh, split.search_tree, split.action)
    assert not leaves_equal(single_tree, split_tree), "graph get_subtree differs"
    next_root, next_illegal = game.root(masks | (1 << np.asarray(single.action)))
    single2 = function(None, key, next_root, game.recurrent_fn, 24, invalid_actions=next_illegal,
                       tree=single_tree)
    split2 = sharding.search(mesh, policy, None, key, next_root, game.recurrent_fn, 24,
                             invalid_actions=next_illegal, tree=split_tree)
    different = leaves_equal(single2, split2)
    assert not different, f"graph: continued sharded search differs in {different}"


def check_stochastic(mesh):
    """Chance nodes: the sharded stochastic search equals the one-device one
    bit for bit, and so do the subtree below the realised outcome and the
    search continued on it."""
    game = ChanceTree(depth=3, branching=3, outcomes=4)
    root = game.root(synthetic.random_root_codes(4, BATCH))
    functions = (game.decision_recurrent_fn, game.chance_recurrent_fn)
    key = jax.random.key(3)
    options = dict(max_children=5, dirichlet_fraction=0.25)
    policy = mcts_jax.StochasticMuZeroPolicy()
    single = policy(None, key, root, functions, SIMULATIONS, **options)
    split = sharding.search(mesh, policy, None, key, root, functions, SIMULATIONS,
                            **options)
    assert_split(split, 8, BATCH)
    different = leaves_equal(single, split)
    assert not different, f"stochastic: sharded search differs in {different}"
    outcome = jnp.zeros((BATCH,), jnp.int32)
    single_tree = mcts_jax.stochastic_subtree(single.search_tree, single.action, outcome)
    split_tree = sharding.rowwise(mcts_jax.stochastic_subtree, mesh)(
        split.search_tree, split.action, outcome)
    assert not leaves_equal(single_tree, split_tree), "stochastic_subtree differs"
    single2 = policy(None, key, root, functions, SIMULATIONS, tree=single_tree, **options)
    split2 = sharding.search(mesh, policy, None, key, root, functions,
                             SIMULATIONS, tree=split_tree, **options)
    different = leaves_equal(single2, split2)
    assert not different, f"stochastic: continued sharded search differs in {different}"


def check_local_mode(mesh):
    """mode="local": device d's rows are the one-device search of those rows
    with key fold_in(key, d) (no communication, per-device randomness)."""
    root, invalid = PROBLEM.root(synthetic.random_root_codes(4, BATCH))
    key = jax.random.key(9)
    split = sharding.search(mesh, mcts_jax.GumbelPolicy(), None, key, root, PROBLEM.recurrent_fn, SIMULATIONS,
                            invalid_actions=invalid, mode="local")
    assert_split(split, 8, BATCH)
    rows = BATCH // 8
    gathered = jax.tree.map(np.asarray, split)
    for device in range(8):
        part = slice(device * rows, (device + 1) * rows)
        alone = mcts_jax.gumbel_policy(None, jax.random.fold_in(key, device),
                                       jax.tree.map(lambda x: x[part], root),
                                       PROBLEM.recurrent_fn, SIMULATIONS,
                                       invalid_actions=invalid[part])
        different = leaves_equal(alone, jax.tree.map(lambda x: x[part], gathered))
        assert not different, f"device {device}: local search differs in {different}"


def check_errors(mesh):
    """Clear errors naming the argument and the counts."""
    root, invalid = PROBLEM.root(synthetic.random_root_codes(3, 60))
    try:
        sharding.search(mesh, mcts_jax.UCTPolicy(), None, jax.random.key(0), root, PROBLEM.recurrent_fn, 4,
                        invalid_actions=invalid)
    except ValueError as error:
        message = str(error)
        for part in ("root.prior_logits", "60", "8 devices", "56 or 64"):
            assert part in message, (part, message)
    else:
        raise AssertionError("B = 60 on 8 devices did not raise")
    for devices, needle in ((9, "only 8"), (-1, ">= 0")):
        try:
            sharding.make_mesh(devices)
        except ValueError as error:
            assert "devices" in str(error) and needle in str(error), str(error)
        else:
            raise AssertionError(f"make_mesh({devices}) did not raise")
    config = config_lib.resolve(dict(TRAIN, num_games=12, devices=8))
    try:
        loop.make_mesh(config)
    except ValueError as error:
        assert "--num-games = 12" in str(error) and "8 devices" in str(error), str(error)
    else:
        raise AssertionError("--num-games 12 on 8 devices did not raise")
    try:
        sharding.search(mesh, "mcts", None, jax.random.key(0), root, PROBLEM.recurrent_fn, 4)
    except TypeError as error:
        assert "policy value" in str(error) and "'mcts'" in str(error), str(error)
    else:
        raise AssertionError("a policy name did not raise")


# ---- training --------------------------------------------------------------------------

TRAIN = dict(game="tic_tac_toe", preset="tiny", iterations=2, network="mlp", hidden=16,
             layers=1, value_hidden=8, num_simulations=4, num_games=16, moves_per_iteration=9,
             replay_size=256, min_replay=8, train_batch_size=32, updates_per_iteration=2,
             random_opening_plies=2, eval_every=0, elo_every=0, final_games=0,
             checkpoint_every=1, keep_checkpoints=3)


def read_checkpoint(run_dir: str, config, iteration: int):
    """(variables, state) of a checkpoint, as numpy, via the loop's own restore."""
    game, model, player, learner = loop.build(config, None)
    like_variables, like_state = loop.initial_state(config, model, player, learner).saved_items()
    checkpoints = checkpoint_lib.Checkpointer(os.path.join(run_dir, "checkpoints"),
                                              identity=loop.checkpoint_identity(config))
    variables, state, _ = checkpoints.restore(iteration, like_variables, like_state)
    checkpoints.close()
    return variables, state


def _compare_training(a, b, what: str):
    """Integer leaves (games, plies, buffer status, counters) equal; floats within tolerance."""
    flat_b = dict(jax.tree_util.tree_leaves_with_path(checkpoint_lib.pack_keys(b)))
    for path, x in jax.tree_util.tree_leaves_with_path(checkpoint_lib.pack_keys(a)):
        x, y = np.asarray(x), np.asarray(flat_b[path])
        name = jax.tree_util.keystr(path)
        if np.issubdtype(x.dtype, np.floating):
            np.testing.assert_allclose(x, y, rtol=2e-4, atol=2e-5, err_msg=f"{what}: {name}")
        else:
            np.testing.assert_array_equal(x, y, err_msg=f"{what}: {name}")


def check_training(workdir: str):
    """One training iteration (self-play + updates) on 8 devices equals the
    one-device iteration within float tolerance; the 8-device checkpoint
    restores onto 1 and 4 devices (values equal, shardings as asked), and a
    run continued on 1 device from it matches the 1-device run."""
    quiet = lambda *_: None  # noqa: E731
    runs = {}
    for devices in (8, 1):
        config, run_dir = loop.open_run(os.path.join(workdir, f"d{devices}"),
                                        dict(TRAIN, devices=devices), log=quiet)
        loop.train(config, run_dir, progress=False, log=quiet)
        runs[devices] = (config, run_dir)
    config8, dir8 = runs[8]
    config1, dir1 = runs[1]
    for iteration in (1, 2):
        v8, s8 = read_checkpoint(dir8, config8, iteration)
        v1, s1 = read_checkpoint(dir1, config1, iteration)
        assert int(s8["updates"]) == 2 * iteration and int(s8["buffer"].cursor) > 0
        assert int(np.sum(np.asarray(s8["buffer"].status) == 2)) > 0  # ready samples
        _compare_training((v8, s8), (v1, s1), f"iteration {iteration}")
    metrics8 = checkpoint_lib.read_metrics(os.path.join(dir8, "metrics.jsonl"))
    assert metrics8[0]["updates"] == 2 and "loss" in metrics8[0], metrics8[0]

    # restore the 8-device checkpoint on 4 and on 1 devices
    v8, s8 = read_checkpoint(dir8, config8, 1)
    for devices in (4, 1):
        mesh = sharding.make_mesh(devices)
        placed = loop.place(mesh, TrainState.from_saved_items(v8, s8))
        placed_v, placed_s = placed.saved_items()
        _compare_training((placed_v, placed_s), (v8, s8), f"restored on {devices}")
        assert_split(placed.self_play.ply, devices, TRAIN["num_games"])
        observation = placed.buffer.observation
        assert {s.data.shape[1] for s in observation.addressable_shards} == \
            {TRAIN["num_games"] // devices}
        assert len(observation.sharding.device_set) == devices
        for leaf in jax.tree.leaves(placed_v):
            assert leaf.sharding.is_fully_replicated and \
                len(leaf.sharding.device_set) == devices
    # continue the 8-device run on 1 device from its iteration-1 checkpoint
    resumed_dir = os.path.join(workdir, "d8_on_1")
    os.makedirs(os.path.join(resumed_dir, "checkpoints"))
    import shutil
    shutil.copytree(os.path.join(dir8, "checkpoints", "1"),
                    os.path.join(resumed_dir, "checkpoints", "1"))
    shutil.copy(os.path.join(dir8, "config.json"), resumed_dir)
    config, run_dir = loop.open_run(resumed_dir, dict(devices=1), log=quiet)
    assert config == config1, config_lib.changed_settings(config1, config)
    loop.train(config, run_dir, progress=False, log=quiet)
    _compare_training(read_checkpoint(run_dir, config, 2), read_checkpoint(dir1, config1, 2),
                      "8-device checkpoint continued on 1 device")


def check_training_learned_model(workdir: str):
    """A MuZero run (learned model, trajectory replay, reanalyse) on 8 devices
    equals the one-device run, iteration by iteration, within float
    tolerance; integer leaves (replay status, cursors, counters) exactly."""
    quiet = lambda *_: None  # noqa: E731
    runs = {}
    for devices in (8, 1):
        config, run_dir = loop.open_run(
            os.path.join(workdir, f"muzero_d{devices}"),
            dict(TRAIN, algorithm="muzero", devices=devices, num_unroll_steps=3,
                 reanalyse_fraction=0.25), log=quiet)
        loop.train(config, run_dir, progress=False, log=quiet)
        runs[devices] = (config, run_dir)
    for iteration in (1, 2):
        v8, s8 = read_checkpoint(runs[8][1], runs[8][0], iteration)
        v1, s1 = read_checkpoint(runs[1][1], runs[1][0], iteration)
        assert int(s8["updates"]) == 2 * iteration
        assert int(np.sum(np.asarray(s8["buffer"].samples.status) == 2)) > 0
        _compare_training((v8, s8), (v1, s1), f"muzero iteration {iteration}")


def check_sampled(mesh):
    """Sampled search (continuous actions, `sampled.SampledActions`, widened
    by `widening.ProgressiveWidening`): the
    sharded search and its continuation on the re-rooted subtrees equal the
    one-device ones; each row's repeated bandit (no terminal: the tree
    grows deep, so the subtrees keep visits) has its own optimum."""
    from mcts_jax import sampled, widening

    targets = jnp.linspace(-0.8, 0.8, BATCH)

    def recurrent_fn(params, rng_key, action, embedding):  # embedding: the row's target
        n = action.shape[0]
        return mcts_jax.RecurrentFnOutput(
            reward=-jnp.sum((action - embedding[:, None]) ** 2, axis=-1), discount=jnp.ones(n),
            prior_logits=jnp.zeros((n, 2)), value=jnp.zeros(n)), embedding

    root = mcts_jax.RootFnOutput(prior_logits=jnp.zeros((BATCH, 2)), value=jnp.zeros(BATCH),
                                 embedding=targets)
    # With progressive widening (widening.py): its open slots read the row's
    # own node statistics, so splitting rows changes nothing.
    policy = mcts_jax.AlphaZeroPolicy.make(plugins=(sampled.SampledActions(
        sampled.DiagonalGaussian(1, low=-1.0, high=1.0), num_samples=6),
        widening.ProgressiveWidening(1.0, 0.5)))
    function = sharding.as_policy(policy, {})
    tree = split_tree = None
    for key in (jax.random.key(9), jax.random.key(10)):
        single = function(None, key, root, recurrent_fn, SIMULATIONS, tree=tree)
        split = sharding.search(mesh, policy, None, key, root, recurrent_fn, SIMULATIONS,
                                tree=split_tree)
        assert_split(split, 8, BATCH)
        different = leaves_equal(single, split)
        assert not different, f"sampled search differs in {different}"
        tree = mcts_jax.get_subtree(single.search_tree, single.action)
        split_tree = sharding.get_subtree(mesh, split.search_tree, split.action)
    assert (np.asarray(tree.node_visits)[:, 0] > 0).any(), "reuse not exercised"


def main(out_path: str) -> int:
    assert jax.device_count() == 8, jax.devices()
    mesh = sharding.make_mesh(8)
    assert sharding.num_devices(mesh) == 8
    checks = [
        ("errors", lambda: check_errors(mesh)),
        ("search_uct", lambda: check_search(mesh, mcts_jax.UCTPolicy())),
        ("search_alphazero", lambda: check_search(mesh, mcts_jax.AlphaZeroPolicy())),
        ("search_gumbel_compact_reuse",
         lambda: check_search(mesh, mcts_jax.GumbelPolicy(), max_children=4, reuse=True)),
        ("search_local_mode", lambda: check_local_mode(mesh)),
        # A user's rule and Q transform (tests/custom_rules.py), no library edit.
        ("search_custom_rule_reuse",
         lambda: check_search(mesh, custom_rules.depth_scaled_policy, reuse=True)),
        ("search_custom_qtransform_compact",
         lambda: check_search(mesh, mcts_jax.AlphaZeroPolicy(), max_children=4,
                              qtransform=custom_rules.qtransform_clipped)),
        # Several paths per step: B x P leaves per call, split along B.
        ("search_parallel_paths_reuse",
         lambda: check_search(mesh, mcts_jax.UCTPolicy(), simulations_per_step=4, reuse=True)),
        ("search_stochastic_compact_reuse", lambda: check_stochastic(mesh)),
        ("search_graph_reuse", lambda: check_graph(mesh)),
        ("search_sampled_reuse", lambda: check_sampled(mesh)),
        ("search_user_policy_reuse",
         lambda: check_search(mesh, custom_rules.FlattenedRootPolicy.make(max_nodes=64),
                              reuse=True)),
        ("training", lambda: check_training(tempfile.mkdtemp(prefix="sharding_checks_"))),
        ("training_learned_model",
         lambda: check_training_learned_model(tempfile.mkdtemp(prefix="sharding_checks_"))),
    ]
    only = os.environ.get("SHARDING_CHECKS")
    result = dict(passed=[], failed={}, seconds={})
    for name, check in checks:
        if only and name not in only.split(","):
            continue
        start = time.perf_counter()
        try:
            check()
            result["passed"].append(name)
        except Exception:  # reported to the test, which fails naming the check
            result["failed"][name] = traceback.format_exc()
        result["seconds"][name] = round(time.perf_counter() - start, 1)
        print(name, "ok" if name in result["passed"] else "FAILED", result["seconds"][name],
              flush=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
