"""envs.connect_four_solver: the mapping of pgx Connect Four to bitbully, checked
against pgx on whole games and against bitbully's own board; solver values
against a brute-force negamax and known cases; the committed position
benchmark; the solver player in the arena; the solver metrics of a tiny
training run."""

import json
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import connect_four_solver as solver
from training import arena

try:
    import bitbully
except ImportError:  # the solver is optional (the `eval` and `dev` extras)
    bitbully = None

GAME = envs.make("connect_four")
needs_solver = pytest.mark.skipif(bitbully is None, reason="bitbully is not installed")


# ---- an independent brute force ---------------------------------------------------

def _lines_win(columns, column):
    """Whether the top disc of `column` (lists of discs per column, bottom
    first) makes four in a row."""
    row = len(columns[column]) - 1
    player = columns[column][row]

    def at(c, r):
        return 0 <= c < 7 and 0 <= r < len(columns[c]) and columns[c][r] == player

    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        run = 1
        for sign in (1, -1):
            c, r = column + sign * dc, row + sign * dr
            while at(c, r):
                run, c, r = run + 1, c + sign * dc, r + sign * dr
        if run >= 4:
            return True
    return False


def _negamax(columns, plies, alpha=-1, beta=1):
    """Exact value (+1 / 0 / -1) for the player to move; `columns` holds the
    discs (1 first mover, 2 second) of each column, bottom first."""
    if plies == 42:
        return 0
    player = 1 + plies % 2
    best = -1
    for column in (3, 2, 4, 1, 5, 0, 6):
        if len(columns[column]) == 6:
            continue
        columns[column].append(player)
        value = 1 if _lines_win(columns, column) else -_negamax(columns, plies + 1, -beta, -alpha)
        columns[column].pop()
        best = max(best, value)
        alpha = max(alpha, value)
        if alpha >= beta:
            break
    return best


def _brute_force(moves):
    """(value, optimal columns) after `moves`, by full negamax of every child."""
    columns = [[] for _ in range(7)]
    for ply, column in enumerate(moves):
        columns[column].append(1 + ply % 2)
    child_values = {}
    for column in range(7):
        if len(columns[column]) < 6:
            columns[column].append(1 + len(moves) % 2)
            child_values[column] = (1 if _lines_win(columns, column)
                                    else -_negamax(columns, len(moves) + 1))
            columns[column].pop()
    value = max(child_values.values())
    return value, sorted(c for c, v in child_values.items() if v == value)


def _random_game(rng, stop=42):
    """Columns of a uniformly random game, to its end or `stop` plies."""
    board = bitbully.Board()
    moves = []
    while len(moves) < stop and not board.is_game_over():
        move = rng.choice(board.legal_moves())
        board.play(move)
        moves.append(move)
    return moves


# ---- the mapping against pgx and bitbully -------------------------------------------------

@needs_solver
def test_mapping_agrees_with_pgx_and_bitbully_on_whole_random_games():
    batch = 24
    rng = np.random.default_rng(0)
    states = GAME.init(jax.random.key(0), batch)
    step = jax.jit(GAME.step)
    boards = [bitbully.Board() for _ in range(batch)]
    moves = [[] for _ in range(batch)]
    done = np.zeros(batch, bool)
    solve_jit = jax.jit(lambda s: solver.solve_states_jax(GAME.lean_state(s)))
    wins = draws = 0
    for ply in range(42):
        legal = np.asarray(states.legal_action_mask)
        for row in range(batch):
            if done[row]:
                continue
            grid = solver.grid_from_pgx_board(np.asarray(states._x.board[row]))
            np.testing.assert_array_equal(grid, np.array(boards[row].to_array()))
            np.testing.assert_array_equal(grid, solver.grid_from_moves(moves[row]))
            np.testing.assert_array_equal(solver.pgx_board_from_grid(grid),
                                          np.asarray(states._x.board[row]))
            assert sorted(np.flatnonzero(legal[row]).tolist()) == sorted(boards[row].legal_moves())
            assert int(states._x.color[row]) == boards[row].current_player() - 1 == ply % 2
        if ply % 7 == 3:  # the solver through pgx states, on the host and inside jit
            values, optimal = solver.solve_states(states)
            jit_values, jit_optimal = solve_jit(states)
            np.testing.assert_array_equal(values, np.asarray(jit_values))
            np.testing.assert_array_equal(optimal, np.asarray(jit_optimal))
            for row in np.flatnonzero(~done)[:6]:
                assert values[row] == solver.solve(moves[row])
                assert np.flatnonzero(optimal[row]).tolist() == solver.optimal_moves(moves[row])
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
        mover = np.asarray(states.current_player)
        states = step(states, jnp.asarray(actions, jnp.int32))
        for row in range(batch):
            if done[row]:
                continue
            boards[row].play(int(actions[row]))
            moves[row].append(int(actions[row]))
            terminal = bool(states.terminated[row])
            assert terminal == boards[row].is_game_over() == solver.is_terminal(
                solver.grid_from_moves(moves[row]))
            reward = float(states.rewards[row, mover[row]])
            if boards[row].has_win():
                wins += 1
                assert reward == 1.0 and boards[row].winner() == 1 + ply % 2
                assert solver.winner(solver.grid_from_moves(moves[row])) == 1 + ply % 2
                assert solver.solve(moves[row]) == -1 and solver.optimal_moves(moves[row]) == []
            elif terminal:
                draws += 1
                assert reward == 0.0 and solver.solve(moves[row]) == 0
            else:
                assert reward == 0.0
            done[row] = terminal
        if done.all():
            break
    assert done.all() and wins + draws == batch and wins > 0


def test_move_lists_are_checked():
    with pytest.raises(ValueError, match="full"):
        solver.grid_from_moves("3333333")
    with pytest.raises(ValueError, match="range"):
        solver.grid_from_moves([7])
    with pytest.raises(ValueError, match="already won"):
        solver.grid_from_moves("01010101")


# ---- solver values -----------------------------------------------------------------------

@needs_solver
def test_known_values():
    assert solver.solve("") == 1 and solver.optimal_moves("") == [3]  # the centre wins
    scores = solver.move_scores("")
    assert scores[3] > 0 and scores[2] == scores[4] == 0 and scores[0] < 0  # 2, 4 draw
    assert solver.solve("3") == -1 and solver.optimal_moves("3") == list(range(7))
    assert solver.solve("001122") == 1 and solver.optimal_moves("001122") == [3]  # win at once
    assert solver.solve("0011223") == -1 and solver.optimal_moves("0011223") == []  # game over
    # Mirror images have the same value and mirrored optimal moves.
    assert solver.optimal_moves("2") == sorted(6 - c for c in solver.optimal_moves("4"))


@needs_solver
def test_values_agree_with_brute_force_near_the_end():
    rng = random.Random(1)
    checked = 0
    while checked < 40:
        moves = _random_game(rng, stop=rng.randint(33, 36))
        if len(moves) < 33 or solver.is_terminal(solver.grid_from_moves(moves)):
            continue
        value, optimal = _brute_force(moves)
        assert solver.solve(moves) == value, moves
        assert solver.optimal_moves(moves) == optimal, moves
        checked += 1


# ---- the position benchmark -----------------------------------------------------------

@needs_solver
def test_benchmark_file_loads_and_is_labelled_correctly():
    assert os.path.getsize(solver.POSITIONS_PATH) < 1_000_000
    positions = solver.load_positions()
    meta = positions["meta"]
    count = len(positions["moves"])
    assert count == meta["count"] == 1000 and meta["seed"] == 0
    assert sorted(set(positions["stage"])) == ["late", "middle", "opening"]
    assert sorted(set(positions["source"])) == ["noisy", "random"]
    assert len(set(positions["moves"])) == count
    for stage, low, high in solver.STAGES:
        plies = positions["ply"][np.asarray(positions["stage"]) == stage]
        assert plies.min() >= low and plies.max() <= high and len(plies) >= 300
    optimal, legal = positions["optimal"], positions["legal"]
    assert not (optimal & ~legal).any() and optimal.any(1).all()
    assert ((legal & ~optimal).any(1)).all()  # every position has a losing move
    # Spot checks: bitbully itself (fresh, no cache of ours), the benchmark's
    # own fields, and the pgx-state path.
    fresh = bitbully.BitBully()
    with open(solver.POSITIONS_PATH) as f:
        rows = json.load(f)["positions"]
    spots = list(range(0, count, count // 25))
    for i in spots:
        scores = fresh.score_all_moves(bitbully.Board(positions["moves"][i]))
        value = max(np.sign(s) for s in scores.values())
        assert positions["value"][i] == value
        assert sorted(c for c, s in scores.items() if np.sign(s) == value) == \
            np.flatnonzero(optimal[i]).tolist()
        assert rows[i]["scores"] == [scores.get(c) for c in range(7)]
    states = solver.states_from_moves([positions["moves"][i] for i in spots])
    values, state_optimal = solver.solve_states(states)
    np.testing.assert_array_equal(values, positions["value"][spots])
    np.testing.assert_array_equal(state_optimal, optimal[spots])
    np.testing.assert_array_equal(np.asarray(states.legal_action_mask), legal[spots])
    assert not np.asarray(states.terminated).any()


@needs_solver
def test_random_play_file_is_the_issue_definition_and_labelled_correctly():
    """train.py's set: random games cut at plies 4-30, not over, at least one
    move losing the value; labels from bitbully (fresh) on a spread of rows;
    difficulty from the number of optimal moves."""
    from experiments import connect_four_positions as generator
    positions = solver.load_positions(solver.RANDOM_PLAY_PATH)
    meta, count = positions["meta"], len(positions["moves"])
    assert count == meta["count"] == 1000 and meta["set"] == "random_play"
    assert len(set(positions["moves"])) == count
    low, high = generator.RANDOM_PLAY_PLIES
    assert positions["ply"].min() == low and positions["ply"].max() == high
    assert set(positions["source"]) == {"random"}
    optimal, legal = positions["optimal"], positions["legal"]
    assert not (optimal & ~legal).any() and optimal.any(1).all()
    assert ((legal & ~optimal).any(1)).all()
    counts = optimal.sum(1)
    expected = np.where(counts == 1, "hard", np.where(counts <= 3, "medium", "easy"))
    np.testing.assert_array_equal(np.asarray(positions["difficulty"]), expected)
    cells = {f"{s}/{d}": int(np.sum((np.asarray(positions["stage"]) == s)
                                    & (np.asarray(positions["difficulty"]) == d)))
             for s, _, _ in solver.STAGES for d, _, _ in solver.DIFFICULTIES}
    assert cells == meta["difficulty_counts"]
    fresh = bitbully.BitBully()
    for i in range(0, count, count // 20):
        scores = fresh.score_all_moves(bitbully.Board(positions["moves"][i]))
        value = max(np.sign(s) for s in scores.values())
        assert positions["value"][i] == value
        assert sorted(c for c, s in scores.items() if np.sign(s) == value) == \
            np.flatnonzero(optimal[i]).tolist()
    states = solver.states_from_moves(positions["moves"][:50])
    assert not np.asarray(states.terminated).any()


def test_difficulty_of_counts_the_optimal_moves():
    assert [solver.difficulty_of(n) for n in range(1, 7)] == [
        "hard", "medium", "medium", "easy", "easy", "easy"]
    for bad in (0, 7):
        with pytest.raises(ValueError, match="optimal moves"):
            solver.difficulty_of(bad)


def test_move_accuracy_overall_by_stage_and_by_difficulty():
    positions = solver.load_positions(limit=60)
    best = np.argmax(positions["optimal"], axis=1)
    worst = np.argmax(positions["legal"] & ~positions["optimal"], axis=1)
    groups = ["all", "opening", "middle", "late", "hard", "medium", "easy"]
    perfect = solver.move_accuracy(best, positions)
    assert sorted(perfect) == sorted(groups) and set(perfect.values()) == {1.0}
    assert set(solver.move_accuracy(worst, positions).values()) == {0.0}
    opening = np.asarray(positions["stage"]) == "opening"
    mixed = solver.move_accuracy(np.where(opening, best, worst), positions)
    assert mixed["opening"] == 1.0 and mixed["late"] == 0.0
    assert mixed["all"] == pytest.approx(opening.mean())
    hard = np.asarray(positions["difficulty"]) == "hard"
    by_difficulty = solver.move_accuracy(np.where(hard, best, worst), positions, cells=True)
    assert by_difficulty["hard"] == 1.0 and by_difficulty["easy"] == 0.0
    assert by_difficulty["medium"] == 0.0
    stages, difficulties = np.asarray(positions["stage"]), np.asarray(positions["difficulty"])
    assert by_difficulty["middle"] == pytest.approx(np.mean(hard[stages == "middle"]))
    expected = {f"{s}_{d}": float(np.mean(hard[(stages == s) & (difficulties == d)]))
                for s, _, _ in solver.STAGES for d, _, _ in solver.DIFFICULTIES
                if ((stages == s) & (difficulties == d)).any()}
    assert {k: v for k, v in by_difficulty.items() if "_" in k} == expected
    assert set(expected.values()) == {0.0, 1.0}
    logits = np.where(positions["optimal"], 1.0, 0.0) + np.where(positions["legal"], 0.0, 5.0)
    np.testing.assert_array_equal(solver.legal_argmax(logits, positions["legal"]), best)


# ---- the solver as a player ------------------------------------------------------------

@needs_solver
def test_solver_player_always_wins_moving_first():
    result = arena.play_match(GAME, solver.SolverPlayer(), None, solver.SolverPlayer(), None,
                              jax.random.key(0), 4)
    assert result.first == (2, 0, 0) and result.second == (0, 0, 2)
    result = arena.play_match(GAME, solver.SolverPlayer(), None, arena.RandomPlayer(), None,
                              jax.random.key(1), 8)
    assert result.first == (4, 0, 0) and result.losses == 0


# ---- training: the solver metrics ---------------------------------------------------------

@needs_solver
def test_tiny_training_run_writes_the_solver_metrics(tmp_path, monkeypatch):
    from training import loop, reporting
    lines = []
    # No Elo and no final matches (the periodic evaluation plays the solver
    # through the same code as the final one), to keep the test short.
    explicit = dict(game="connect_four", preset="tiny", elo_every=0, final_games=0)
    config, run_dir = loop.open_run(str(tmp_path / "run"), explicit, log=lines.append)
    summary = loop.train(config, run_dir, progress=False, log=lines.append)
    records = [json.loads(line) for line in open(os.path.join(run_dir, "metrics.jsonl"))]
    evaluated = records[-1]
    # The preset the docs offer first trains: whole games end and are learned
    # from (4 plies an iteration once finished none: 0 updates), and the
    # console says the run is a smoke test.
    assert sum(r["games"] for r in records) == summary["total_games"] > 0
    assert evaluated["updates"] == summary["total_updates"] > 0
    assert any("--preset tiny is a smoke test" in line for line in lines)
    assert evaluated["solver_positions"] == config.solver_positions == 16
    # The run's set is the random-play one: its first 16 positions.
    positions = solver.load_positions(solver.RANDOM_PLAY_PATH, limit=16)
    groups = {"opening", "middle", "late", "hard", "medium", "easy"} & (
        set(positions["stage"]) | set(positions["difficulty"]))
    cells = {f"{s}_{d}" for s, d in zip(positions["stage"], positions["difficulty"])}
    for name in ("policy", "search"):
        for suffix in [""] + [f"_{g}" for g in groups]:
            assert 0.0 <= evaluated[f"solver_{name}_accuracy{suffix}"] <= 1.0
            assert 0.0 <= summary[f"final_solver_{name}_accuracy{suffix}"] <= 1.0
        for cell in cells:
            assert f"solver_{name}_accuracy_{cell}" not in evaluated
            assert 0.0 <= summary[f"final_solver_{name}_accuracy_{cell}"] <= 1.0
    # Accuracy by hand: the raw network's legal argmax on the same positions.
    from training.agent import Agent
    agent = Agent.load(run_dir)
    logits, _ = agent.policy_value(solver.states_from_moves(positions["moves"]))
    chosen = solver.legal_argmax(logits, positions["legal"])
    assert summary["final_solver_policy_accuracy"] == round(
        solver.move_accuracy(chosen, positions)["all"], 4)
    games = [evaluated[f"vs_solver_first_{k}"] for k in ("wins", "draws", "losses")]
    assert sum(games) == config.solver_games // 2
    assert evaluated["vs_solver_first_score"] == (games[0] + 0.5 * games[1]) / sum(games)
    assert evaluated["vs_solver_as_second"] == [0, 0, config.solver_games // 2]
    for record in (evaluated, {k[len("final_"):]: v for k, v in summary.items()}):
        assert record["first_move_value"] == FIRST_MOVE_VALUES[record["first_move"]]
    final = json.load(open(os.path.join(run_dir, "final.json")))
    assert final["final_solver_positions"] == 16
    assert any("move accuracy on 16 solver-labelled positions" in line for line in lines)
    assert os.path.getsize(os.path.join(run_dir, "plots", "win_rates.png")) > 1000
    assert os.path.getsize(os.path.join(run_dir, "plots", "solver.png")) > 1000
    summary = dict(summary, final_vs_solver_first_wins=3, final_vs_solver_first_draws=1,
                   final_vs_solver_first_losses=0)
    described = reporting.describe_summary(config.records.evaluation, summary, "gumbel")
    assert any("moving first vs the perfect solver (bitbully): 3 wins, 1 draws, 0 losses in 4 "
               "games" in line for line in described)
    assert any(f"first move from the empty board: column {summary['final_first_move']}" in line
               for line in described)
    # The agent benchmark on this run: the run's own policy (agent.act) and
    # another search of the same network, read back from its results file.
    from benchmarks import harness
    from experiments import connect_four_agent
    monkeypatch.setattr(harness, "RESULTS_DIR", str(tmp_path / "results"))
    connect_four_agent.main(["--run-dir", run_dir, "--simulations", "4", "--uct-simulations",
                             "--positions", "16", "--policies", config.policy, "alphazero+solver",
                             "--first-player-games", "2"])
    saved = json.load(open(next((tmp_path / "results").glob("connect_four_agent-*.json"))))
    by_player = {row["player"]: row for row in saved["rows"]}
    own = agent.act(jax.random.key(4), solver.states_from_moves(positions["moves"]), 4)
    assert by_player[f"search ({config.policy})"]["all"] == round(
        solver.move_accuracy(np.asarray(own), positions)["all"], 4)
    assert 0.0 <= by_player["search (alphazero+solver)"]["all"] <= 1.0
    assert saved["settings"]["policies"] == [config.policy, "alphazero+solver"]
    assert [row["player"] for row in saved["first_player"]] == [
        f"search ({config.policy})", "search (alphazero+solver)"]
    for row in saved["first_player"]:
        assert row["wins"] + row["draws"] + row["losses"] == sum(
            row["first_mistake"].values()) == 2
    with pytest.raises(SystemExit):
        connect_four_agent.main(["--run-dir", run_dir, "--policies", "minimax"])
    # The run as a results file: the session's commit and command, the curve.
    from benchmarks import training_run
    record = training_run.results(run_dir)
    assert [s["from_iteration"] for s in record["sessions"]] == [0]
    assert len(record["sessions"][0]["commit"]) == 40
    assert record["settings"]["config"]["game"] == "connect_four"
    assert [row["iteration"] for row in record["curve"]] == [
        r["iteration"] for r in records if "solver_search_accuracy" in r]
    assert record["curve"][-1]["solver_search_accuracy"] == evaluated["solver_search_accuracy"]
    assert record["final"]["final_solver_positions"] == 16
    # A run killed before its final evaluation: an error, or its curve alone.
    os.rename(os.path.join(run_dir, "final.json"), os.path.join(run_dir, "final.moved"))
    with pytest.raises(FileNotFoundError, match="--unfinished"):
        training_run.results(run_dir)
    unfinished = training_run.results(run_dir, unfinished=True)
    assert unfinished["final"] is None and unfinished["curve"] == record["curve"]
    assert unfinished["sessions"] == record["sessions"]


def test_missing_solver_gives_a_notice_and_no_metrics(monkeypatch):
    from training import build
    from training import config as config_lib
    from training import evaluation
    monkeypatch.setattr(solver, "available", lambda: False)
    config = config_lib.resolve(dict(game="connect_four", preset="tiny"))
    lines = []
    parts = build.build(config)
    suite = evaluation.Evaluation(config.evaluation, GAME, parts.model, agent=parts.agent,
                                  final_agent=parts.final_agent, log=lines.append)
    assert suite.benchmark is None
    assert len(lines) == 1 and "bitbully is not installed" in lines[0]
    assert suite.solver_match(suite.agent, None, jax.random.key(0), 4) == {}
    assert suite.solver_accuracy(None, jax.random.key(0), suite.agent, 16) == {}
    assert suite.first_move(suite.agent, None, jax.random.key(0)) == {}


# The first player's value after each opening column (Allis 1988: only the
# centre wins, its neighbours draw, the others lose).
FIRST_MOVE_VALUES = {0: -1, 1: -1, 2: 0, 3: 1, 4: 0, 5: -1, 6: -1}


@needs_solver
def test_first_move_is_judged_by_the_solver():
    from training import build
    from training import config as config_lib
    from training import evaluation
    config = config_lib.resolve(dict(game="connect_four", preset="tiny"))
    parts = build.build(config)
    suite = evaluation.Evaluation(config.evaluation, GAME, parts.model, agent=parts.agent,
                                  final_agent=parts.final_agent, log=lambda line: None)
    seen = []

    def fixed(column):
        def agent(params, rng_key, game, states):
            seen.append((np.asarray(states.legal_action_mask).tolist(),
                         float(np.abs(np.asarray(states.observation)).sum())))
            return jnp.full(states.current_player.shape, column, jnp.int32)
        return agent

    for column, value in FIRST_MOVE_VALUES.items():
        assert suite.first_move(fixed(column), None, jax.random.key(0), "final_") == dict(
            final_first_move=column, final_first_move_value=value)
    assert seen == [([[True] * 7], 0.0)] * 7  # one position, the empty board


@needs_solver
def test_first_player_lines_find_the_first_losing_move():
    from experiments.connect_four_agent import first_player_lines
    perfect = first_player_lines(GAME, solver.SolverPlayer(), None, jax.random.key(0), 4)
    assert perfect == dict(wins=4, draws=0, losses=0, first_mistake={"none": 4})
    # A random first player: every game that is not won has a first mistake,
    # at an even ply (its own moves); the games without one are the wins.
    random_lines = first_player_lines(GAME, arena.RandomPlayer(), None, jax.random.key(1), 16)
    assert random_lines["wins"] + random_lines["draws"] + random_lines["losses"] == 16
    assert random_lines["first_mistake"].get("none", 0) <= random_lines["wins"]
    assert random_lines["losses"] >= 8
    plies = [int(p) for p in random_lines["first_mistake"] if p != "none"]
    assert plies and all(p % 2 == 0 for p in plies)
    # Opening off-centre gives up the win at once (only column 3 wins).
    off_centre = arena.RandomPlayer()

    def opens_at_zero(params, rng_key, game, states):
        first = jnp.all(states._x.board < 0, axis=-1)  # pgx: -1 on an empty cell
        return jnp.where(first, 0, off_centre(params, rng_key, game, states)).astype(jnp.int32)

    assert first_player_lines(GAME, opens_at_zero, None, jax.random.key(2),
                              4)["first_mistake"] == {"0": 4}
