"""Training pieces: the replay buffer against a plain-Python model of it,
self-play targets against independently replayed games, the learner, the
configuration and command line. Every game's tiny in-process run is in
test_game_conformance.py."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import tictactoe_minimax as minimax
from training import networks, presets
from training import config as config_lib
from training import learner as learner_lib
from training import policies, replay, self_play

GAME = envs.make("tic_tac_toe")
TINY_NET = networks.NetworkConfig(kind="mlp", hidden=16, num_layers=1, value_hidden=8)


# ---- replay buffer -----------------------------------------------------------------

@pytest.mark.parametrize("weight,discount", [(0.0, 1.0), (0.3, 1.0), (0.0, 0.9), (0.3, 0.8)])
def test_replay_buffer_matches_python_model(weight, discount):
    """weight: the search value's share of the value target. Rewards come on
    every move (as 2048's do), so a target is the sum of the rewards from
    its move to the end of its game, for its player, each discounted by
    `discount` per move after the sample's own."""
    slots, rows, steps = 5, 3, 23
    rng = np.random.default_rng(0)
    buffer = replay.init(slots, rows, (2,), jnp.float32, 4)
    model = {}  # (slot, row) -> [status, value so far, player, obs0]
    pending = {r: [] for r in range(rows)}
    for t in range(steps):
        obs = rng.normal(size=(rows, 2)).astype(np.float32)
        player = rng.integers(0, 2, rows)
        record = rng.random(rows) < 0.8
        done = rng.random(rows) < 0.3
        rewards = rng.choice([-1.0, 0.0, 1.0], size=(rows, 1)) * np.array([[1.0, -1.0]])
        search_value = rng.uniform(-1, 1, rows).astype(np.float32)
        buffer = replay.add(buffer, jnp.asarray(obs), jnp.full((rows, 4), 0.25),
                            jnp.asarray(player), jnp.asarray(record), jnp.asarray(search_value),
                            weight)
        buffer = replay.credit_rewards(buffer, jnp.asarray(rewards, jnp.float32),
                                       jnp.asarray(done), weight, discount)
        slot = t % slots
        for r in range(rows):
            pending[r] = [s for s in pending[r] if s != slot]  # overwritten
            model[(slot, r)] = [replay.PENDING if record[r] else replay.EMPTY,
                                weight * search_value[r] if record[r] else 0.0, player[r],
                                obs[r, 0], t]
            if record[r]:
                pending[r].append(slot)
            for s in pending[r]:
                age = t - model[(s, r)][4]
                model[(s, r)][1] += (1 - weight) * discount ** age * rewards[r, model[(s, r)][2]]
            if done[r]:
                for s in pending[r]:
                    model[(s, r)][0] = replay.READY
                pending[r] = []
        status = np.asarray(buffer.status)
        value = np.asarray(buffer.value)
        for (s, r), (st, v, p, o, _) in model.items():
            assert status[s, r] == st, (t, s, r)
            if st != replay.EMPTY:
                assert value[s, r] == pytest.approx(v, abs=1e-5)
            assert np.asarray(buffer.observation)[s, r, 0] == o
    assert int(replay.num_ready(buffer)) == sum(m[0] == replay.READY for m in model.values())
    obs, policy, value = replay.sample(buffer, jax.random.key(0), 256)
    ready_obs = {float(m[3]): m[1] for m in model.values() if m[0] == replay.READY}
    for o, v in zip(np.asarray(obs)[:, 0], np.asarray(value)):
        # only ready samples are drawn
        assert float(o) in ready_obs and ready_obs[float(o)] == pytest.approx(v, abs=1e-6)


# ---- self-play --------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_setup():
    model = networks.make_model(TINY_NET, GAME)
    variables = model.init(jax.random.key(0))
    return model, variables


def test_random_openings_open_the_given_share_of_games(tiny_setup):
    """k ~ U[0, K] random plies for a `random_opening_fraction` share of the
    games, none for the others (4096 games: the shares within 3%)."""
    model, _ = tiny_setup
    policy = policies.policy_from_name("alphazero", num_actions=9, max_nodes=9)
    for fraction in (1.0, 0.5, 0.0):
        player = self_play.SelfPlay(game=GAME, model=model, policy=policy, num_simulations=8,
                                    num_games=4096, random_opening_plies=4,
                                    random_opening_fraction=fraction)
        plies = np.asarray(player.draw_openings(jax.random.key(3)))
        assert plies.min() >= 0 and plies.max() <= 4
        assert abs(np.mean(plies == 0) - (1 - fraction + fraction / 5)) < 0.03
        assert abs(np.mean(plies == 4) - fraction / 5) < 0.03


def test_interleaved_openings_search_every_second_ply(tiny_setup):
    """An interleaved opening of k plies plays plies k-1, k-3, ... at random
    and the others with the search: with the same key, each row's move equals
    the fully random opening's move or the unopened game's searched move, by
    the rule (rows at plies 0-5 whose next ply is their opening's last one,
    the one before it, or past the opening)."""
    model, variables = tiny_setup
    policy = policies.policy_from_name("alphazero", num_actions=9, max_nodes=9)
    rows = 16

    def player(plies=4, interleaved=0.0):
        return self_play.SelfPlay(game=GAME, model=model, policy=policy, num_simulations=8,
                                  num_games=rows, random_opening_plies=plies,
                                  random_opening_interleaved=interleaved)

    interleaved = player(interleaved=1.0)
    state = interleaved.init(jax.random.key(5))
    assert bool(np.all(state.interleaved_opening))
    assert player().init(jax.random.key(5)).interleaved_opening is None
    ply = np.arange(rows) % 6
    opening = ply + np.repeat([1, 2, 0], 6)[:rows]  # the last opening ply, the one before, past
    state = state.replace(ply=jnp.asarray(ply, jnp.int32),
                          opening=jnp.asarray(opening, jnp.int32))
    k = np.asarray(state.opening)
    random_ply = (ply < k) & ((k - 1 - ply) % 2 == 0)
    searched_ply = (ply < k) & ((k - ply) % 2 == 0)
    assert random_ply.any() and searched_ply.any() and (ply >= k).any()
    np.testing.assert_array_equal(np.asarray(interleaved.random_plies(state)), random_ply)

    def moves(p, s):
        buffer = replay.init(4, rows, (3, 3, 2), jnp.bool_, 9)
        _, _, info = p.step(variables, jax.random.key(9), jax.tree.map(jnp.copy, s), buffer)
        return np.asarray(info.action), np.asarray(info.recorded)

    actions, recorded = moves(interleaved, state)
    random_actions, _ = moves(player(), state.replace(interleaved_opening=None))
    searched_actions, _ = moves(player(plies=0), state.replace(
        opening=jnp.zeros((rows,), jnp.int32), interleaved_opening=None))
    np.testing.assert_array_equal(actions, np.where(random_ply, random_actions,
                                                    searched_actions))
    np.testing.assert_array_equal(recorded, ply >= k)
    assert (random_actions != searched_actions)[random_ply | searched_ply].any()


@pytest.mark.parametrize("cap", [False, True], ids=["every_move_full", "playout_cap"])
def test_self_play_targets_match_independently_replayed_games(tiny_setup, cap):
    """Every recorded sample's policy and value target against the game
    replayed by minimax. With playout cap randomisation only the full-search
    steps record (a fast step leaves its whole slot empty), and value targets
    mix the result with the search value the pending sample held:
    target = 0.5 z + 0.5 v."""
    model, variables = tiny_setup
    rows, steps = 8, 30
    weight = 0.5 if cap else 0.0
    policy = policies.policy_from_name("alphazero", num_actions=9, max_nodes=9)
    player = self_play.SelfPlay(game=GAME, model=model, policy=policy, num_simulations=8,
                                num_games=rows, temperature_moves=3,
                                random_opening_plies=2, search_value_weight=weight,
                                fast_simulations=2 if cap else 0, full_search_fraction=0.5)
    state = player.init(jax.random.key(1))
    buffer = replay.init(64, rows, (3, 3, 2), jnp.bool_, 9)
    history = {r: [] for r in range(rows)}  # current game's (slot, board, recorded)
    search_values = {}  # (slot, row) -> the search value a pending sample holds
    expected = {}  # (slot, row) -> value target
    unfinished = set()
    full_steps = 0
    for t in range(steps):
        boards = minimax.board_from_pgx(state.states)
        obs = np.asarray(state.states.observation)
        opening_done = np.asarray(state.ply >= state.opening)
        state, buffer, info = player.step(variables, jax.random.key(100 + t), state, buffer)
        actions, done = np.asarray(info.action), np.asarray(info.done)
        status = np.asarray(buffer.status)[t]
        full = bool(info.full_search)
        assert full or cap
        full_steps += full
        recorded = opening_done & full
        np.testing.assert_array_equal(np.asarray(info.recorded), recorded)
        step_values = np.asarray(info.search_value)
        assert np.all(np.abs(step_values) <= 1.0)
        np.testing.assert_array_equal(np.asarray(buffer.observation)[t], obs)
        policy = np.asarray(buffer.policy)[t]
        value = np.asarray(buffer.value)[t]
        for r in range(rows):
            board = boards[r]
            assert actions[r] in minimax.legal_moves(board)
            history[r].append((t, board, recorded[r]))
            assert status[r] == (replay.EMPTY if not recorded[r] else
                                 replay.READY if done[r] else replay.PENDING)
            if recorded[r]:
                assert abs(policy[r].sum() - 1) < 1e-5
                assert set(np.flatnonzero(policy[r] > 0)) <= set(minimax.legal_moves(board))
                search_values[(t, r)] = step_values[r]
                if status[r] == replay.PENDING:  # holds w x the search value until the end
                    assert value[r] == pytest.approx(weight * search_values[(t, r)])
            after = minimax.play(board, actions[r])
            assert done[r] == minimax.is_terminal(after)
            if done[r]:
                win = minimax.winner(after)
                for slot, b, rec in history[r]:
                    if rec:
                        mover = minimax.to_move(b)
                        z = 0.0 if not win else (1.0 if win == mover else -1.0)
                        expected[(slot, r)] = (1 - weight) * z + weight * search_values[(slot, r)]
                history[r] = []
        assert int(info.games) == done.sum()
    for r in range(rows):
        unfinished.update((slot, r) for slot, _, rec in history[r] if rec)
    status, value = np.asarray(buffer.status), np.asarray(buffer.value)
    assert len(expected) > (10 if cap else 20)
    for (slot, r), v in expected.items():
        assert status[slot, r] == replay.READY, (slot, r)
        assert value[slot, r] == pytest.approx(v, abs=1e-6), (slot, r)
    for slot, r in unfinished:
        assert status[slot, r] == replay.PENDING
    assert int(replay.num_ready(buffer)) == len(expected)
    if cap:
        assert 5 <= full_steps <= 25  # about half the steps searched fully
        assert any(abs(v) > 1e-3 for v in search_values.values())  # the mix is not 0.5 z


def test_learner_fits_a_fixed_buffer(tiny_setup):
    model, variables = tiny_setup
    rows = 16
    buffer = replay.init(4, rows, (3, 3, 2), jnp.bool_, 9)
    states = GAME.init(jax.random.key(2), rows)
    rng = np.random.default_rng(1)
    for _ in range(4):
        target = jax.nn.softmax(jnp.asarray(rng.normal(size=(rows, 9)) * 3, jnp.float32))
        buffer = replay.add(buffer, states.observation, target, states.current_player)
        states = GAME.step(states, jnp.argmax(jnp.where(states.legal_action_mask,
                                                        target, -1), -1))
    buffer = replay.credit_rewards(buffer, jnp.asarray(rng.choice([-1.0, 1.0], (rows, 2)),
                                                       jnp.float32), jnp.ones(rows, bool))
    optimizer = learner_lib.make_optimizer(1e-2, 200, 0.05, 0.1, 0.0, 10.0)
    learner = learner_lib.Learner(model=model, optimizer=optimizer, batch_size=64)
    state = learner.init(jax.tree.map(jnp.copy, variables))
    losses = []
    for i in range(150):
        state, metrics = learner.update(state, jax.random.key(i), buffer)
        losses.append(float(metrics["loss"]))
    assert int(state.updates) == 150
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:10]), (losses[:10], losses[-10:])


# ---- configuration and command line --------------------------------------------------

def test_one_player_games_are_made_with_the_config_discount():
    """`--discount` reaches the true game of a one-player run (its search
    and, through `SelfPlay.credit`, its value targets); a two-player game
    keeps its -1 between players and ignores it."""
    game = config_lib.make_game(config_lib.resolve({"game": "2048", "discount": 0.95}).records.game)
    assert game.discount == 0.95 and game is envs.make("2048", discount=0.95)
    preset_discount = presets.for_game("2048").defaults["discount"]
    assert preset_discount < 1.0  # 2048's AlphaZero discounts its returns
    assert config_lib.make_game(config_lib.resolve({"game": "2048"}).records.game).discount == preset_discount
    board = config_lib.make_game(
        config_lib.resolve({"game": "tic_tac_toe", "discount": 0.95}).records.game)
    assert board is GAME and board.discount == 1.0
    with pytest.raises(ValueError, match=r"discount must be in \(0, 1\]"):
        config_lib.resolve({"game": "2048", "discount": 0.0})


def test_config_resolution_and_validation():
    config = config_lib.resolve({})
    assert config.game == "tic_tac_toe" and config.network == "mlp"
    c4 = config_lib.resolve({"game": "connect_four", "preset": "cpu", "iterations": 7})
    assert c4.iterations == 7 and c4.channels == presets.for_game("connect_four").presets["cpu"][
        "channels"]
    go = config_lib.resolve({"game": "go_19x19"})  # the game's network, then its defaults
    assert (go.network, go.channels, go.blocks) == ("resnet", 128, 6) and go.num_games == 256
    with pytest.raises(ValueError, match="known games: tic_tac_toe, connect_four"):
        config_lib.resolve({"game": "checkers"})
    with pytest.raises(ValueError, match="unknown --preset 'huge' for tic_tac_toe; known: "
                                         "default, gpu, tiny"):
        config_lib.resolve({"preset": "huge"})
    with pytest.raises(ValueError, match="--eval-games"):
        config_lib.resolve({"eval_games": 3})
    with pytest.raises(ValueError, match=r"--fast-simulations must be 0 or below "
                                         r"--num-simulations \(32\), got 32"):
        config_lib.resolve({"fast_simulations": 32, "num_simulations": 32})
    with pytest.raises(ValueError, match="--full-search-fraction must be > 0"):
        config_lib.resolve({"fast_simulations": 8, "full_search_fraction": 0.0})
    with pytest.raises(ValueError, match=r"--random-opening-interleaved needs "
                                         r"--random-opening-plies > 0"):
        config_lib.resolve({"random_opening_interleaved": 0.5, "random_opening_plies": 0})
    with pytest.raises(ValueError, match=r"--random-opening-interleaved must be in \[0, 1\]"):
        config_lib.resolve({"random_opening_interleaved": 2.0, "random_opening_plies": 4})
    with pytest.raises(ValueError, match=r"--search-value-weight must be in \[0, 1\]"):
        config_lib.resolve({"search_value_weight": 1.5})
    with pytest.raises(ValueError, match="--hidden"):
        config_lib.resume_config(config, {"hidden": config.hidden * 2})
    resumed = config_lib.resume_config(config, {"eval_every": 3})
    assert resumed.eval_every == 3 and resumed.hidden == config.hidden


def test_command_line_rejects_unknown_game(capsys):
    with pytest.raises(SystemExit):
        config_lib.parse(["--game", "checkers"])
    assert "known games: tic_tac_toe" in capsys.readouterr().err
    args, explicit = config_lib.parse(["--game", "chess", "--preset", "tiny", "--no-augment"])
    assert explicit == {"game": "chess", "preset": "tiny", "augment": False}


def test_every_setting_carries_its_help_and_check():
    """Validation and --help come from each field's `setting`: every field is
    documented, and a value breaking a field's check is rejected naming the
    flag (one bad value per kind of check)."""
    fields = dataclasses.fields(config_lib.TrainConfig)
    assert all(len(f.metadata["help"]) > 10 for f in fields)
    help_text = config_lib.build_parser().format_help()
    assert all(config_lib.flag_name(f.name) in help_text for f in fields)
    assert set(config_lib.shape_fields()) >= {"num_simulations", "num_games", "hidden"}
    bad = {"positive": 0, "non_negative": -1, "even": 3, "fraction": 1.5,
           "positive_real": 0.0, "non_negative_real": -0.1, "discount": 0.0}
    base = config_lib.resolve({})
    for f in fields:
        check = f.metadata["check"]
        if check is not None:
            with pytest.raises(ValueError, match=config_lib.flag_name(f.name)):
                config_lib.validate(dataclasses.replace(base, **{f.name: bad[check]}))
        if f.metadata["choices"]:
            with pytest.raises(ValueError, match=config_lib.flag_name(f.name)):
                config_lib.validate(dataclasses.replace(base, **{f.name: "nonsense"}))
    with pytest.raises(ValueError, match="--num-games must be of type int"):
        config_lib.validate(dataclasses.replace(base, num_games=2.5))
    with pytest.raises(ValueError, match="--max-nodes"):
        config_lib.resolve({"num_simulations": 16, "max_nodes": 8})


def test_removed_setting_names_are_refused(tmp_path, capsys):
    """--simulations and --considered-actions had their release: the
    command line refuses them (no abbreviation stands in: --simulations is
    not --simulations-per-step), and so do `resolve` and a saved
    config.json, naming docs/migration.md."""
    for flag in ("--simulations", "--considered-actions", "--num-sim"):
        with pytest.raises(SystemExit):
            config_lib.parse([flag, "12"])
        assert f"unrecognized arguments: {flag}" in capsys.readouterr().err
    _, explicit = config_lib.parse(["--num-simulations", "12",
                                    "--max-num-considered-actions", "4"])
    assert explicit == {"num_simulations": 12, "max_num_considered_actions": 4}
    with pytest.raises(ValueError, match="unknown settings: simulations .*docs/migration.md"):
        config_lib.resolve({"simulations": 12})
    saved = config_lib.resolve({}).to_json()
    saved["simulations"] = saved.pop("num_simulations")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="config.json has unknown settings: simulations"):
        config_lib.load_json(str(path))




# ---- the one build step ------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["alphazero", "muzero", "stochastic_muzero"])
def test_the_build_step_chooses_the_algorithm_once(algorithm):
    """`build` turns a config into a run's parts; the algorithm is a value
    chosen there (AlphaZero, or the MuZero family for a learned model), and
    the agent of a run folder (`Agent.player`) is its agent: the same arena
    player the evaluation plays."""
    from training import build
    from training.agent import Agent
    game = "2048" if algorithm == "stochastic_muzero" else "tic_tac_toe"
    config = config_lib.resolve(dict(game=game, preset="tiny", algorithm=algorithm))
    parts = build.build(config)
    expected = build.AlphaZero if algorithm == "alphazero" else build.MuZeroFamily
    assert type(parts.algorithm) is expected and parts.algorithm.records == config.records
    assert build.build(config) is parts  # cached: compiled steps are shared
    assert parts.self_play.policy.takes_chance_nodes == (game == "2048")
    agent = Agent(config=config, game=parts.game, model=parts.model, variables=None,
                  iteration=0)
    assert agent.player(config.eval_simulations) == parts.agent
    assert agent.player() == parts.final_agent
    identity = parts.algorithm.identity()
    assert identity["game"] == game and ("algorithm" in identity) == (algorithm != "alphazero")


def test_a_policy_that_does_not_fit_is_refused_by_the_one_check():
    """`training.search.check_fit` is the one check that a policy fits what
    it searches: self-play on a deterministic game, a learned model without
    chance codes and a stochastic game each refuse the wrong kind."""
    import mcts_jax
    from training import build
    from training.muzero.self_play import LearnedModelSelfPlay
    model = networks.make_model(TINY_NET, GAME)
    with pytest.raises(ValueError, match="SelfPlay's policy StochasticMuZeroPolicy does not "
                                         "fit the game 'tic_tac_toe': 'tic_tac_toe' is a "
                                         "deterministic game"):
        self_play.SelfPlay(game=GAME, model=model, policy=mcts_jax.StochasticMuZeroPolicy(),
                           num_simulations=4, num_games=2)
    config = config_lib.resolve(dict(preset="tiny", algorithm="muzero"))
    learned = build.algorithm_for(config).make_model(GAME)
    with pytest.raises(ValueError, match="LearnedModelSelfPlay's policy StochasticMuZeroPolicy "
                                         "does not fit the learned model: the model has no "
                                         "chance codes"):
        LearnedModelSelfPlay(game=GAME, model=learned, num_simulations=4, num_games=2,
                             policy=mcts_jax.StochasticMuZeroPolicy())
    chance_game = envs.make("2048")
    with pytest.raises(ValueError, match="does not fit the game '2048': '2048' is a "
                                         "stochastic game"):
        self_play.SelfPlay(game=chance_game, model=networks.make_model(TINY_NET, chance_game),
                           policy=mcts_jax.AlphaZeroPolicy(), num_simulations=4, num_games=2)


def test_graph_self_play_keeps_one_node_per_position(tiny_setup):
    """`--transpositions`: self-play searches a graph keyed by the game's
    positions, also across moves with `--reuse-tree` (the kept graph holds
    each position once); learned models are refused."""
    model, variables = tiny_setup
    config = config_lib.resolve({"transpositions": True, "reuse_tree": True,
                                 "num_simulations": 24})
    policy = config_lib.self_play_policy(config.records.search, GAME)
    assert policy.options.transpositions and policy.options.position_key == GAME.position_key
    with pytest.raises(ValueError, match="--transpositions needs --algorithm alphazero"):
        config_lib.resolve({"transpositions": True, "algorithm": "muzero"})
    player = self_play.SelfPlay(game=GAME, model=model, policy=policy, num_simulations=24,
                                num_games=8, reuse_tree=True)
    state = player.init(jax.random.key(1))
    buffer = replay.init(4, 8, (3, 3, 2), jnp.bool_, 9)
    for move in range(3):
        state, buffer, _ = player.step(variables, jax.random.key(10 + move), state, buffer)
        tree = jax.device_get(state.tree)
        assert tree.is_graph
        for row in range(8):
            n = int(tree.num_nodes[row])
            keys = np.asarray(tree.position_keys[row, :n])
            assert len({tuple(k) for k in keys}) == n
            np.testing.assert_array_equal(np.asarray(tree.node_visits[row, :n]),
                                          1 + np.asarray(tree.edge_visits[row, :n]).sum(-1))
    assert int(np.asarray(state.ply).max()) >= 3
