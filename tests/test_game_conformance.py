"""Every registered game passes one conformance suite (as pgx's api_test does
for pgx's games), and the registry answers for unknown and unfitting names.

Per game, checked against pgx's own `env.step` and `env.init`:
  - lean states step like full ones through random games: stepping the full
    state rebuilt from a lean embedding gives the same next state (every kept
    field, the observation, legal mask, rewards, termination) as stepping the
    full pgx state, and the number of legal moves never exceeds the
    registry's bound;
  - a search with random playouts runs from SEARCH_BATCH initial states and
    picks legal moves (in the compact layout with K = the legal-move bound where
    that is smaller than A);
  - `--preset tiny` (without its evaluation matches) trains in process (`loop.open_run` + `loop.train`) and
    writes its metrics; the checkpoint it leaves restores the network that
    its Elo snapshot holds, and saving and restoring the state again gives
    equal arrays.
"""

import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

import envs
import mcts_jax
from envs import games_page, registry
from mcts_jax import evaluators
from training import networks, presets
from training import checkpoint as checkpoint_lib
from training import config as config_lib
from training import loop

OBSERVED = ("observation", "legal_action_mask", "rewards", "terminated", "truncated",
            "current_player")
# The ten pgx two-player perfect-information board games must all be
# registered; the suite runs on every registered game, so a new registry
# entry is tested with no edit here.
PGX_BOARD_GAMES = ("tic_tac_toe", "connect_four", "othello", "go_9x9", "go_19x19", "chess",
                   "gardner_chess", "animal_shogi", "shogi", "hex")
ALL_GAMES = envs.GAMES
# Ply caps of the lean/full walk where whole random games are slow to step
# on a CPU (the other games are played to the end).
WALK_PLIES = {"go_19x19": 24, "shogi": 24, "chess": 300}
# The tiny runs here leave out the evaluation matches and the Connect Four
# solver (generic arena code, run on tic-tac-toe and Connect Four by
# test_checkpoint.py, test_agent.py and test_connect_four_solver.py): they
# would compile several more searches per game.
NO_MATCHES = dict(eval_games=0, final_games=0, solver_positions=0, solver_games=0,
                  final_solver_positions=0)
TIMES = {}  # per game and check: seconds (printed with -s)
# Rows of the random-playout search. The check (legal moves, 4 visits a row,
# none on an illegal move) is per row and the rows start from pgx's initial
# states, so more rows add run time, not cases: at 64 rows shogi's search ran
# 5 s after its 16 s of compiling, at 8 rows 0.5 s.
SEARCH_BATCH = 8


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    """Each test compiles its own game's programs, shared with no other test:
    drop them (a worker keeping all ten games' programs runs out of memory
    mappings, see conftest.py)."""
    yield
    jax.clear_caches()


def _timed(name, what):
    class Timer:
        def __enter__(self):
            self.start = time.perf_counter()

        def __exit__(self, *_):
            TIMES[(name, what)] = time.perf_counter() - self.start
            print(f"{name} {what}: {TIMES[(name, what)]:.1f}s")
    return Timer()


def test_registry_lists_the_ten_pgx_board_games():
    assert set(PGX_BOARD_GAMES) <= set(envs.GAMES)
    for name in ALL_GAMES:
        spec = envs.spec(name)
        game = envs.make(name)
        assert spec.name == name and game.env.num_players == 2
        assert 1 <= spec.max_legal_moves <= game.num_actions  # abstract: pgx's is eager
        assert "tiny" in presets.for_game(name).presets and spec.observation and spec.actions
        config = config_lib.resolve(dict(game=name, preset="tiny"))
        assert config.network_config() is not None
        default_network = presets.default_network(name)
        assert config_lib.resolve(dict(game=name)).network_config() == default_network
        assert envs.make(name) is game and game.spec is spec
        assert presets.default_model(game).config == default_network


def test_longest_games_are_pgx_own_limits():
    """The bounds that come from pgx's sources, read from pgx itself."""
    from pgx import animal_shogi, gardner_chess
    from pgx._src.games import chess, shogi
    assert envs.spec("chess").longest_game == chess.MAX_TERMINATION_STEPS
    assert envs.spec("shogi").longest_game == shogi.MAX_TERMINATION_STEPS
    assert envs.spec("gardner_chess").longest_game == gardner_chess.MAX_TERMINATION_STEPS
    assert envs.spec("animal_shogi").longest_game == animal_shogi.MAX_TERMINATION_STEPS
    for size in (9, 19):
        go = pgx.make(f"go_{size}x{size}")
        assert envs.spec(f"go_{size}x{size}").longest_game == go._game.max_termination_steps


@pytest.mark.parametrize("name", ["tictactoe", "checkers", "go"])
def test_unknown_names_list_the_known_games(name):
    with pytest.raises(ValueError, match=f"unknown game '{name}'; known games: tic_tac_toe, "
                                         f"connect_four.*hex"):
        envs.make(name)
    with pytest.raises(ValueError, match=f"unknown game '{name}'; known games: tic_tac_toe"):
        config_lib.resolve(dict(game=name))


@pytest.mark.parametrize("name,why", [("minatar-breakout", "1 player"),
                                      ("sparrow_mahjong", "3 player"),
                                      ("kuhn_poker", "imperfect information")])
def test_pgx_ids_that_do_not_fit_are_refused(name, why):
    try:
        pgx.make(name)
    except (ImportError, ModuleNotFoundError):  # minatar needs its own package
        pass
    with pytest.raises(ValueError, match=f"'{name}'.*{why}.*known games: tic_tac_toe"):
        envs.make(name)


@pytest.mark.parametrize("name", ["2048", "backgammon"])
def test_stochastic_games_come_split_for_chance_nodes(name):
    """envs.make gives pgx's stochastic games as ChanceGames (afterstates
    and outcomes); the registry entry and training refuse them by name."""
    game = envs.make(name)
    assert isinstance(game, envs.ChanceGame) and game is envs.make_chance_game(name)
    assert game.num_chance_outcomes == {"2048": 32, "backgammon": 22}[name]
    with pytest.raises(ValueError, match=f"'{name}'.*stochastic.*make_chance_game"):
        envs.spec(name)


def test_the_contract_check_catches_stochastic_steps_and_large_rewards():
    """`check_contract` on its own, for pgx ids that are also refused by name."""
    with pytest.raises(ValueError, match="'backgammon'.*stochastic"):
        registry.check_contract("backgammon", pgx.make("backgammon"))
    with pytest.raises(ValueError, match="'leduc_holdem'.*rewards up to"):
        registry.check_contract("leduc_holdem", pgx.make("leduc_holdem"), plies=16)
    registry.check_contract("connect_four", pgx.make("connect_four"))


def test_an_unregistered_fitting_game_gets_generic_defaults():
    """Simulated with connect_four built as if it had no registry entry."""
    spec = registry.generic_spec("connect_four")
    assert not spec.registered and spec.max_legal_moves == 7
    assert spec.longest_game == registry.GENERIC_LONGEST_GAME and spec.symmetry_tables() is None
    trained = presets.generic(spec.make_env().observation_shape)
    assert trained.network.kind == "resnet"  # [6, 7, 2] observations
    assert trained.presets["tiny"]["num_games"] <= 8
    game = envs.PgxGame(name="connect_four", env=spec.make_env(), spec=spec)
    states = game.init(jax.random.key(0), 4)
    lean = game.lean_state(states)
    assert lean.observation.size == 0 and lean.legal_action_mask.size == 0
    assert lean._x.board.dtype == jnp.int32  # nothing narrowed without an entry
    evaluator = evaluators.RandomPlayouts(max_length=8)
    root, invalid = game.root(None, jax.random.key(1), states, evaluator)
    out = mcts_jax.uct_policy(None, jax.random.key(2), root, game.recurrent_fn(evaluator), 4,
                              invalid_actions=invalid)
    assert np.asarray(jnp.take_along_axis(states.legal_action_mask, out.action[:, None],
                                          1)).all()
    assert np.asarray(game.heuristic(states)).tolist() == [0.0] * 4
    assert presets.generic(pgx.make("tic_tac_toe").observation_shape).network.kind == "resnet"
    # pgx gives [3, 3, 2] observations


# ---- the per-game conformance suite --------------------------------------------------

@pytest.mark.parametrize("name", ALL_GAMES)
def test_lean_and_full_states_step_alike_within_the_legal_move_bound(name):
    game = envs.make(name)
    env = game.env
    step_env = jax.vmap(env.step)

    @jax.jit
    def step_both(key, full, lean):
        """One random ply from `full` (pgx) and from `lean` rebuilt: (pgx's
        next state, its lean embedding, [F] bool: each compared field alike,
        most legal moves of a live row)."""
        action = jax.random.categorical(
            key, jnp.where(full.legal_action_mask, 0.0, -jnp.inf)).astype(jnp.int32)
        truth = step_env(full, action)
        rebuilt = step_env(game.full_state(lean), action)
        pairs = [(getattr(truth, f), getattr(rebuilt, f)) for f in OBSERVED]
        pairs += list(zip(jax.tree.leaves(game.lean_state(truth)),
                          jax.tree.leaves(game.lean_state(rebuilt))))
        alike = jnp.stack([jnp.array_equal(a, b) for a, b in pairs])
        live = ~(truth.terminated | truth.truncated)
        most = jnp.max(jnp.where(live, jnp.sum(truth.legal_action_mask, axis=1), 0))
        return truth, game.lean_state(truth), alike, most

    names = list(OBSERVED) + [jax.tree_util.keystr(path) for path, _ in
                              jax.tree_util.tree_leaves_with_path(
                                  game.lean_state(game.init(jax.random.key(0), 1)))]
    with _timed(name, "lean/full walk"):
        full = game.init(jax.random.key(0), 6)
        lean = game.lean_state(full)
        key = jax.random.key(1)
        most_seen = 0
        for ply in range(WALK_PLIES.get(name, game.longest_game)):
            key, step_key = jax.random.split(key)
            full, lean, alike, most = step_both(step_key, full, lean)
            alike = np.asarray(alike)
            assert alike.all(), (ply, [n for n, ok in zip(names, alike) if not ok])
            most_seen = max(most_seen, int(most))
            if np.asarray(full.terminated | full.truncated).all():
                break
    assert 0 < most_seen <= game.max_legal_moves
    assert lean.observation.size == 0 and lean.legal_action_mask.size == 0
    assert game.lean_bytes() < game.full_bytes()
    if WALK_PLIES.get(name, game.longest_game) >= game.longest_game:
        assert np.asarray(full.terminated).all()  # pgx ends every game within the bound


@pytest.mark.parametrize("name", ALL_GAMES)
def test_search_with_random_playouts_picks_legal_moves(name):
    game = envs.make(name)
    evaluator = evaluators.RandomPlayouts(max_length=4)
    layout = ({} if game.max_legal_moves >= game.num_actions
              else dict(max_children=game.max_legal_moves))
    with _timed(name, "search"):
        states = game.init(jax.random.key(3), SEARCH_BATCH)
        root, invalid = game.root(None, jax.random.key(4), states, evaluator)
        out = mcts_jax.uct_policy(None, jax.random.key(5), root, game.recurrent_fn(evaluator),
                                  4, invalid_actions=invalid, **layout)
    action = np.asarray(out.action)
    legal = np.asarray(states.legal_action_mask)
    assert legal[np.arange(SEARCH_BATCH), action].all()
    visits = np.asarray(out.search_tree.summary().visit_counts)
    assert (visits.sum(axis=1) == 4).all() and not (visits * ~legal).any()


@pytest.mark.parametrize("name", ALL_GAMES)
def test_tiny_preset_trains_and_its_checkpoint_round_trips(name, tmp_path_factory):
    with _timed(name, "tiny run"):
        config, run_dir = loop.open_run(str(tmp_path_factory.mktemp(f"tiny_{name}")),
                                        dict(game=name, preset="tiny", **NO_MATCHES),
                                        log=lambda *_: None)
        summary = loop.train(config, run_dir, progress=False, log=lambda *_: None)
    assert config.game == name and config.preset == "tiny"
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    assert [r["iteration"] for r in records] == list(range(1, config.iterations + 1))
    assert all(r["simulations_per_s"] > 0 and np.isfinite(r["loss"]) for r in records
               if "loss" in r)
    assert summary["total_games"] == sum(r["games"] for r in records)
    # A tiny run trains: its games end (cut or played out) and are learned from.
    assert summary["total_games"] > 0 and summary["total_updates"] == records[-1]["updates"] > 0
    saved = json.load(open(os.path.join(run_dir, "config.json")))
    assert saved["channels"] == config.channels and saved["hidden"] == config.hidden
    for plot in ("loss.png", "elo.png", "win_rates.png"):
        assert os.path.getsize(os.path.join(run_dir, "plots", plot)) > 1000
    with pytest.raises(ValueError, match="--hidden"):
        loop.open_run(run_dir, dict(game=name, preset="tiny", hidden=config.hidden * 2,
                                    **NO_MATCHES), log=lambda *_: None)
    with pytest.raises(ValueError, match="--game"):
        loop.open_run(run_dir, dict(game="hex" if name != "hex" else "chess", preset="tiny"),
                      log=lambda *_: None)

    # The checkpoint of the last iteration holds the network of the Elo
    # snapshot taken at that iteration (two independent writers).
    game, model, player, learner = loop.build(config)
    variables, state = loop.initial_state(config, model, player, learner).saved_items()
    saver = checkpoint_lib.Checkpointer(os.path.join(run_dir, "checkpoints"),
                                        identity=loop.checkpoint_identity(config))
    iteration, restored_variables, restored_state, _ = saver.restore_latest(
        variables, state, log=lambda *_: None)
    saver.close()
    assert iteration == config.iterations
    assert int(restored_state["games"]) == summary["total_games"]
    snapshots = checkpoint_lib.list_snapshots(os.path.join(run_dir, "snapshots"))
    assert snapshots and snapshots[-1] == config.iterations
    snapshot = checkpoint_lib.load_snapshot(os.path.join(run_dir, "snapshots"),
                                            config.iterations, variables)
    for a, b in zip(jax.tree.leaves(snapshot), jax.tree.leaves(restored_variables)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    # Saving the restored state and reading it back gives equal arrays.
    again = checkpoint_lib.Checkpointer(str(tmp_path_factory.mktemp(f"again_{name}")))
    again.save(1, restored_variables, restored_state, {})
    _, variables_2, state_2, _ = again.restore_latest(variables, state, log=lambda *_: None)
    again.close()
    for a, b in zip(jax.tree.leaves(checkpoint_lib.pack_keys((restored_variables,
                                                                restored_state))),
                    jax.tree.leaves(checkpoint_lib.pack_keys((variables_2, state_2)))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_games_page_is_generated_from_the_registry():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                        "games.md")
    assert open(path).read() == games_page.markdown(), (
        "run: python -m envs.games_page > docs/games.md")
