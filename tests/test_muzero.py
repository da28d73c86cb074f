"""The learned-model trainers (training/muzero): supports, trajectory windows and
their targets against a plain-Python reference, the search that never steps
the game, tiny train.py runs of Gumbel MuZero and Stochastic MuZero, and a
MuZero run killed twice with SIGKILL equal bit for bit to one never killed."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mcts_jax
from envs import symmetry
from training import checkpoint as checkpoint_lib
from training import config as config_lib
from training import loop
from training.agent import Agent
from training.muzero import learner as learner_lib
from training.muzero import support as support_lib
from training.muzero import trajectories
from test_checkpoint import timeless_metrics


# ---- supports ----------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.floats(-1e5, 1e5, allow_nan=False, width=32))
def test_scaling_is_inverted(x):
    back = float(support_lib.unscale(support_lib.scale(jnp.float32(x))))
    assert abs(back - x) <= 1e-3 * max(1.0, abs(x)) + 1e-3


@pytest.mark.parametrize("support", [support_lib.Support(1.0, 21, False),
                                     support_lib.Support(300.0, 601, True)],
                         ids=["bounded", "h_scaled"])
def test_two_hot_mean_is_the_value_and_scalar_inverts_it(support):
    x = jnp.array([-1.0, -0.37, 0.0, 0.05, 0.999, 1.0] + ([7.0, 123.4, 20000.0]
                                                             if support.transform else []))
    probs = support.two_hot(x)
    np.testing.assert_allclose(np.sum(probs, -1), 1.0, rtol=1e-6)
    assert np.all(np.asarray(probs) >= 0) and np.all(np.sum(np.asarray(probs) > 0, -1) <= 2)
    y = support_lib.scale(x) if support.transform else x
    np.testing.assert_allclose(np.sum(probs * support.points, -1), y, rtol=1e-5, atol=1e-5)
    back = support.scalar(jnp.log(jnp.maximum(probs, 1e-30)))
    np.testing.assert_allclose(back, x, rtol=1e-3, atol=1e-4)


def test_values_beyond_the_bound_are_clipped_and_bad_supports_refused():
    support = support_lib.Support(1.0, 5, False)
    np.testing.assert_allclose(support.two_hot(jnp.array([3.0, -9.0])),
                               [[0, 0, 0, 0, 1], [1, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match="num_bins"):
        support_lib.Support(1.0, 4)
    with pytest.raises(ValueError, match="bound"):
        support_lib.Support(0.0, 5)


def test_gradient_scaling_keeps_the_value_and_scales_the_gradient():
    grad = jax.grad(lambda x: jnp.sum(learner_lib.scale_gradient(x, 0.5) ** 2))(
        jnp.array([3.0]))
    np.testing.assert_allclose(grad, [3.0])  # d/dx x^2 = 6, halved
    np.testing.assert_allclose(learner_lib.scale_gradient(jnp.array([3.0]), 0.5), [3.0])


# ---- trajectory windows against a Python reference ---------------------------------------

T, B, A, GAMMA = 7, 3, 4, 0.9


def _fill(num_moves, seed, discount=1.0):
    """Writes `num_moves` moves of B rows into a ring of T slots; returns the
    buffer and, per row, the Python record of every move [(id, game, reward,
    over, search value)] in write order (ids are the observations)."""
    rng = np.random.default_rng(seed)
    buffer = trajectories.init(T, B, (1,), jnp.float32, A)
    history = [[] for _ in range(B)]
    game = [0] * B
    for move in range(num_moves):
        ids = np.array([1000 * move + row for row in range(B)], np.float32)
        policy = rng.dirichlet(np.ones(A), size=B).astype(np.float32)
        action = rng.integers(0, A, size=B)
        value = rng.normal(size=B).astype(np.float32)
        buffer = trajectories.add(buffer, jnp.asarray(ids[:, None]), jnp.ones((B, A), bool),
                                  jnp.asarray(policy), jnp.zeros(B, jnp.int32),
                                  jnp.asarray(action), jnp.asarray(value), jnp.ones(B, bool))
        reward = rng.integers(0, 5, size=B).astype(np.float32)
        over = rng.random(B) < 0.15
        buffer = trajectories.credit(buffer, jnp.asarray(reward[:, None]), jnp.asarray(over),
                                     discount=discount)
        for row in range(B):
            history[row].append((ids[row], game[row], reward[row], bool(over[row]),
                                 value[row], int(action[row])))
            game[row] += int(over[row])
    return buffer, history


def _reference(history, start_id, width):
    """(alive, ended, rewards, values, actions) of the window from `start_id`."""
    row = int(start_id) % 1000
    moves = history[row]
    first = [m[0] for m in moves].index(start_id)
    alive, ended, rewards, values, actions = [], [], [], [], []
    over_before, in_game = False, True
    for k in range(width):
        if k > 0:
            over_before = over_before or (in_game and moves[first + k - 1][3])
            in_game = in_game and not moves[first + k - 1][3] and first + k < len(moves)
        alive.append(in_game)
        ended.append(over_before)
        here = moves[first + k] if in_game else None
        rewards.append(here[2] if here else 0.0)
        values.append(here[4] if here else 0.0)
        actions.append(here[5] if here else -1)
    return np.array(alive), np.array(ended), np.array(rewards), np.array(values), actions


@pytest.mark.parametrize("num_moves", [5, 12])  # before and after the ring wraps
def test_windows_and_n_step_targets_match_a_python_reference(num_moves):
    buffer, history = _fill(num_moves, seed=num_moves)
    unroll, td = 2, 3
    width = unroll + 1 + td
    window = jax.jit(trajectories.sample, static_argnums=(2, 3, 4))(
        buffer, jax.random.key(1), 256, width, "n_step")
    starts = np.asarray(window.observation[:, 0, 0])
    written = {m[0]: i for row in history for i, m in enumerate(row)}
    for start in np.unique(starts):  # every start had `width` moves written after it
        assert written[start] + width <= num_moves or any(
            m[3] for m in history[int(start) % 1000][written[start]:written[start] + width - 1])
    targets = trajectories.value_targets(window, unroll, "n_step", td, GAMMA)
    seen = set()
    for n, start in enumerate(starts):
        alive, ended, rewards, values, actions = _reference(history, start, width)
        np.testing.assert_array_equal(np.asarray(window.alive[n]), alive, err_msg=str(start))
        np.testing.assert_array_equal(np.asarray(window.ended[n]), ended, err_msg=str(start))
        np.testing.assert_array_equal(np.asarray(window.action[n])[alive],
                                      np.array(actions)[alive])
        for k in range(unroll + 1):
            want = sum(GAMMA ** i * rewards[k + i] for i in range(td)) \
                + GAMMA ** td * values[k + td]
            np.testing.assert_allclose(float(targets[n, k]), want, rtol=1e-5, atol=1e-5)
        seen.add(bool(ended.any()))
    if num_moves > T:  # windows through a game's end and windows inside one
        assert seen == {True, False}


@pytest.mark.parametrize("discount", [1.0, GAMMA])  # two-player; one-player (2048)
def test_outcome_targets_need_a_finished_game_and_are_zero_past_it(discount):
    buffer, history = _fill(12, seed=3, discount=discount)
    usable = np.asarray(trajectories.usable(buffer, 3, "outcome"))
    status = np.asarray(buffer.samples.status)
    np.testing.assert_array_equal(usable, status == 2)
    window = trajectories.sample(buffer, jax.random.key(0), 128, 3, "outcome")
    targets = np.asarray(trajectories.value_targets(window, 2, "outcome", 0, 1.0))
    alive = np.asarray(window.alive)
    np.testing.assert_array_equal(targets[~alive], 0.0)
    # Rewards of 0..4 all credited to player 0: the outcome is the rewards to
    # the game's end, each discounted by its distance from the window's start.
    for n in range(8):
        start = float(window.observation[n, 0, 0])
        moves = history[int(start) % 1000]
        first = [m[0] for m in moves].index(start)
        total = 0.0
        for age, m in enumerate(moves[first:]):
            total += discount ** age * m[2]
            if m[3]:
                break
        np.testing.assert_allclose(targets[n, 0], total, rtol=1e-6)


@pytest.mark.parametrize("game", ["2048", "connect_four"])
def test_augmentation_maps_a_whole_window_through_one_symmetry(game):
    """`augment` (on with --augment where the game has symmetries): every
    window goes through one symmetry, the same at its K + 1 steps, and the
    played actions move where the policies move them (a policy target that
    is the played move stays the played move)."""
    config = config_lib.resolve(dict(game=game, preset="tiny", algorithm="muzero", augment=True,
                                     num_unroll_steps=3))
    _, _, _, learner = loop.build(config)
    assert learner.symmetries == game
    tables = config_lib.make_game(config.records.game).symmetry_tables()
    count, num_actions = tables["action"].shape
    n, steps = 64, 4
    shape = config_lib.make_game(config.records.game).observation_shape
    observation = jax.random.normal(jax.random.key(0), (n, steps) + shape)
    actions = jax.random.randint(jax.random.key(1), (n, steps - 1), 0, num_actions)
    policy = jax.nn.one_hot(jnp.concatenate([actions, actions[:, :1]], axis=1), num_actions)
    value = jax.random.normal(jax.random.key(2), (n, steps))
    targets = learner_lib.Targets(observation=observation, policy=policy,
                                  has_policy=jnp.ones((n, steps), bool), value=value,
                                  actions=actions, reward=value[:, :-1],
                                  alive=jnp.ones((n, steps), bool))
    out = learner.augment(jax.random.key(3), targets)
    np.testing.assert_array_equal(jnp.argmax(out.policy[:, :-1], -1), out.actions)
    np.testing.assert_array_equal(out.value, value)
    np.testing.assert_array_equal(out.reward, targets.reward)
    used = set()
    for row in range(n):
        images = [np.asarray(symmetry.apply(tables, jnp.full((steps,), s), observation[row],
                                            policy[row])[0]) for s in range(count)]
        matches = [s for s in range(count) if np.array_equal(images[s], out.observation[row])]
        assert len(matches) == 1, (row, matches)  # all K + 1 steps through one symmetry
        used.add(matches[0])
    assert len(used) == count  # every symmetry drawn over 64 windows


# ---- tiny runs -------------------------------------------------------------------------------

def test_checkpoint_of_another_algorithm_is_refused(tmp_path):
    alphazero = config_lib.resolve(dict(preset="tiny"))
    muzero = config_lib.resolve(dict(preset="tiny", algorithm="muzero"))
    assert loop.checkpoint_identity(alphazero) != loop.checkpoint_identity(muzero)
    assert loop.checkpoint_identity(muzero)["algorithm"] == "muzero"


@pytest.mark.parametrize("game,algorithm", [("2048", "stochastic_muzero"),
                                            ("connect_four", "gumbel_muzero")])
def test_tiny_runs_of_the_other_algorithms(tmp_path, game, algorithm):
    """Whole tiny runs, with board-symmetry augmentation; Stochastic MuZero
    searches with Gumbel's root and target (`--policy gumbel`; its PUCT
    search runs in tests/test_search_parts.py)."""
    explicit = dict(game=game, preset="tiny", algorithm=algorithm, iterations=2, policy="gumbel",
                    eval_every=2, elo_every=0, final_games=2, min_replay=8,
                    num_unroll_steps=2, td_steps=3, chance_codes=4, max_game_length=6,
                    solver_positions=0, solver_games=0, final_solver_positions=0,
                    consistency_weight=1.0, augment=True,
                    code_usage_weight=1.0 if algorithm == "stochastic_muzero" else 0.0)
    quiet = lambda *_: None  # noqa: E731
    config, run_dir = loop.open_run(str(tmp_path / "run"), explicit, log=quiet)
    summary = loop.train(config, run_dir, progress=False, log=quiet)
    _, _, player, learner = loop.build(config)
    assert learner.symmetries == game
    if algorithm == "stochastic_muzero":
        assert isinstance(player.policy, mcts_jax.StochasticGumbelPolicy)
    last = timeless_metrics(run_dir)[-1]
    assert last["updates"] > 0 and np.isfinite(last["loss"])
    assert 0 <= last["consistency_loss"] <= 2.0  # 1 - cosine
    if algorithm == "stochastic_muzero":
        assert last["chance_loss"] > 0 and np.isfinite(last["commitment_loss"])
        assert 0 <= last["code_usage_loss"] <= 2 * np.log(4)  # weights 1 + 1/K
        assert "final_score_mean" in summary
    else:
        assert "final_vs_random_score" in summary


@pytest.mark.parametrize("changes,message", [
    (dict(game="backgammon", algorithm="muzero"), "alternate"),
    (dict(algorithm="muzero", support_bins=4), "support-bins"),
    (dict(game="2048", algorithm="stochastic_muzero", reuse_tree=True), "reuse-tree"),
])
def test_bad_learned_model_settings_name_the_flag(changes, message):
    with pytest.raises(ValueError, match=message):
        config_lib.resolve(dict(preset="tiny", **changes))


def test_the_search_never_steps_the_game(monkeypatch):
    """Self-play's search with the learned model runs with the game's step,
    recurrent_fn and root disabled: only the observation and the root's legal
    moves are read from the game."""
    config = config_lib.resolve(dict(preset="tiny", algorithm="muzero", num_games=4))
    game, model, player, _ = loop.build(config)
    states = game.init(jax.random.key(0), 4)
    variables = model.init(jax.random.key(1))

    def refuse(*_, **__):
        raise AssertionError("the learned-model search called the game")

    for name in ("step", "recurrent_fn", "root"):
        monkeypatch.setattr(type(game), name, refuse)
    out = jax.jit(player.search)(variables, jax.random.key(2), states)
    assert out.action.shape == (4,)
    assert np.asarray(states.legal_action_mask)[np.arange(4), np.asarray(out.action)].all()


def test_muzero_killed_mid_checkpoint_and_mid_iteration_loses_nothing(tmp_path):
    """train.py --algorithm muzero (tiny, a checkpoint every iteration) killed
    with SIGKILL while a checkpoint is being written and again at a random
    moment of training, restarted each time, ends equal bit for bit to a run
    never killed (metrics, replay included through them, and variables).
    The kill harness is test_checkpoint's (there, three kills of AlphaZero)."""
    import random
    from test_checkpoint import ITERATIONS, _iterations, _kill_at, _train

    cache = str(tmp_path / "compile_cache")
    flags = ("--algorithm", "muzero", "--reanalyse-fraction", "0.25")
    straight_dir = str(tmp_path / "straight")
    straight = _train(straight_dir, cache, *flags)
    output = straight.communicate(timeout=400)[0]
    assert straight.returncode == 0, output
    elapsed = [r["elapsed_s"] for r in checkpoint_lib.read_metrics(
        os.path.join(straight_dir, "metrics.jsonl"))]
    window_s = float(np.median(np.diff(elapsed)))
    rng = random.Random(34)
    run_dir = str(tmp_path / "run")
    process = _train(run_dir, cache, *flags)
    kills = []
    for moment in ("writing", "running"):
        at_kill = _kill_at(process, run_dir, moment, rng, window_s, deadline=400.0)
        assert at_kill is not None, "the run finished before the kill"
        kills.append(at_kill)
        process = _train(run_dir, cache, *flags)
    rest = process.communicate(timeout=400)[0]
    assert process.returncode == 0, rest
    assert kills[0]["writing"], kills  # the first kill landed while a checkpoint was written
    assert _iterations(run_dir) == list(range(1, ITERATIONS + 1))
    assert timeless_metrics(run_dir) == timeless_metrics(straight_dir)
    records = timeless_metrics(straight_dir)
    assert records[-1]["updates"] > 0 and np.isfinite(records[-1]["loss"])
    assert records[-1]["reward_loss"] > 0 and "elo" in records[-1]  # its agent played
    a, b = Agent.load(straight_dir), Agent.load(run_dir)
    assert a.iteration == b.iteration == ITERATIONS
    for x, y in zip(jax.tree.leaves(a.variables), jax.tree.leaves(b.variables)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    # The trained agent plays with its learned model: legal moves only.
    states = a.game.init(jax.random.key(4), 3)
    states = a.game.step(states, jnp.array([4, 0, 8], jnp.int32), jax.random.key(5))
    actions = np.asarray(a.act(jax.random.key(6), states, num_simulations=4))
    assert np.asarray(a.game.legal_actions(states))[np.arange(3), actions].all()
    with pytest.raises(ValueError, match="greedy search"):
        a.act(jax.random.key(6), states, num_simulations=0)
