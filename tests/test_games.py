"""The pgx adapters and the leaf evaluators, checked against independent
references: exact expectations of random play and exact minimax on
tic-tac-toe, python-chess for the chess mates (tests/chess_positions.py)."""

import functools

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import mcts_jax
from chess_positions import MATE_IN_ONE, MATE_IN_TWO
from envs import chess_tools
from mcts_jax import evaluators

TTT = envs.make("tic_tac_toe")
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def play(game, moves_per_row):
    """Batched states after the given move lists (pgx's first mover moves first)."""
    states = game.init(jax.random.key(0), len(moves_per_row))
    for step in range(max(len(m) for m in moves_per_row)):
        actions = jnp.asarray([m[step] if step < len(m) else 0 for m in moves_per_row])
        stepped = game.step(states, actions)
        active = jnp.asarray([step < len(m) for m in moves_per_row])
        states = jax.tree.map(lambda new, old: jnp.where(
            active.reshape((-1,) + (1,) * (new.ndim - 1)), new, old), stepped, states)
    return states


def board_after(moves):
    board = [0] * 9
    for i, move in enumerate(moves):
        board[move] = 1 if i % 2 == 0 else 2
    return tuple(board)


def winner(board):
    for a, b, c in LINES:
        if board[a] and board[a] == board[b] == board[c]:
            return board[a]
    return 0


@functools.lru_cache(maxsize=None)
def random_play_value(board, player):
    """Exact expected result of uniformly random play, for `player` to move."""
    moves = [i for i in range(9) if board[i] == 0]
    total = 0.0
    for move in moves:
        child = board[:move] + (player,) + board[move + 1:]
        if winner(child):
            total += 1.0
        elif all(child):
            total += 0.0
        else:
            total -= random_play_value(child, 3 - player)
    return total / len(moves)


@functools.lru_cache(maxsize=None)
def minimax_value(board, player):
    best = -2.0
    for move in (i for i in range(9) if board[i] == 0):
        child = board[:move] + (player,) + board[move + 1:]
        value = 1.0 if winner(child) else 0.0 if all(child) else -minimax_value(child, 3 - player)
        best = max(best, value)
    return best


POSITIONS = [[0, 4], [4, 0, 8], [0, 1, 4], [4, 2, 6, 0], [0, 4, 8, 2, 6], [1, 4, 7, 3]]


def test_random_playouts_estimate_the_exact_random_play_value():
    states = play(TTT, POSITIONS)
    value = jax.jit(lambda key, s: evaluators.RandomPlayouts(num_playouts=4000)(
        None, key, TTT, s)[1])(jax.random.key(1), states)
    for moves, estimate in zip(POSITIONS, np.asarray(value)):
        board = board_after(moves)
        exact = random_play_value(board, 1 if len(moves) % 2 == 0 else 2)
        assert estimate == pytest.approx(exact, abs=0.05), moves


def test_minimax_to_the_end_is_exact_and_its_player_is_optimal():
    late = [m for m in POSITIONS if len(m) >= 4] + [[0, 4, 8, 2], [4, 0, 2, 6, 3]]
    states = play(TTT, late)
    depth = 9 - min(len(m) for m in late)
    minimax = evaluators.Minimax(depth=depth)
    _, value = jax.jit(lambda s: minimax(None, jax.random.key(0), TTT, s))(states)
    actions = jax.jit(lambda s: minimax.best_action(jax.random.key(0), TTT, s))(states)
    for moves, got, action in zip(late, np.asarray(value), np.asarray(actions)):
        board = board_after(moves)
        player = 1 if len(moves) % 2 == 0 else 2
        assert got == pytest.approx(minimax_value(board, player)), moves
        child = board[:action] + (player,) + board[action + 1:]
        assert board[action] == 0
        child_value = 1.0 if winner(child) else 0.0 if all(child) else \
            -minimax_value(child, 3 - player)
        assert child_value == minimax_value(board, player), moves


def test_recurrent_fn_matches_the_simulator_and_stores_lean_states():
    evaluator = evaluators.RandomPlayouts()
    states = play(TTT, [[0, 1, 3, 2], [4, 0]])  # X to move wins at 6 / X to move
    root, invalid = TTT.root(None, jax.random.key(0), states, evaluator)
    np.testing.assert_array_equal(invalid, ~states.legal_action_mask)
    output, lean = TTT.recurrent_fn(evaluator)(None, jax.random.key(1), jnp.array([6, 8]),
                                                root.embedding)
    direct = TTT.step(states, jnp.array([6, 8]))
    np.testing.assert_array_equal(output.reward, [1.0, 0.0])
    np.testing.assert_array_equal(output.discount, [0.0, -1.0])
    assert float(output.value[0]) == 0.0  # terminal
    np.testing.assert_array_equal(output.invalid_actions[1], ~direct.legal_action_mask[1])
    np.testing.assert_array_equal(lean._x.board, direct._x.board)
    assert lean.observation.size == 0


def test_network_evaluator_feeds_observations_and_uses_the_outputs():
    seen = {}

    def apply_fn(params, observation):
        seen["shape"] = observation.shape
        logits = jnp.broadcast_to(params, (observation.shape[0], 9))
        return logits, jnp.full((observation.shape[0], 1), 0.25)

    states = play(TTT, [[0], [4]])
    network = evaluators.Network(apply_fn)
    logits = jnp.arange(9.0)
    root, invalid = TTT.root(logits, jax.random.key(0), states, network)
    assert seen["shape"] == (2,) + TTT.observation_shape
    np.testing.assert_allclose(root.value, 0.25)
    out = mcts_jax.alphazero_policy(logits, jax.random.key(0), root,
                                    TTT.recurrent_fn(network), 8, invalid_actions=invalid,
                                    dirichlet_fraction=0.0)
    expected = jax.nn.softmax(jnp.where(invalid, -jnp.inf, logits))
    np.testing.assert_allclose(out.search_tree.priors[:, 0], expected, rtol=1e-5)


def mating_moves(fen):
    board = chess.Board(fen)
    mates = set()
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            mates.add(move.uci())
        board.pop()
    return mates


@pytest.fixture(scope="module")
def mate_positions():
    assert len(MATE_IN_ONE) >= 20
    return chess_tools.batch_from_fens(MATE_IN_ONE)


def assert_all_mate(actions):
    for fen, action in zip(MATE_IN_ONE, np.asarray(actions)):
        move = chess_tools.action_to_uci(chess_tools.from_fen(fen), int(action))
        assert move in mating_moves(fen), (fen, move)


LAYOUTS = dict(argnames="layout", argvalues=[
    dict(max_children=None), dict(max_children=218), dict(max_children=218, replay_embeddings=True)],
    ids=["dense", "compact", "compact_replay"])


@pytest.mark.parametrize(**LAYOUTS)
def test_puct_with_uniform_priors_plays_mate_in_one(mate_positions, layout):
    game = envs.make("chess")
    evaluator = evaluators.Uniform()
    root, invalid = game.root(None, jax.random.key(0), mate_positions, evaluator)
    out = mcts_jax.alphazero_policy(None, jax.random.key(1), root,
                                    game.recurrent_fn(evaluator), 200,
                                    invalid_actions=invalid, dirichlet_fraction=0.0,
                                    final_action="most_visited", **layout)
    assert_all_mate(out.action)


def test_minimax_depth_one_plays_mate_in_one(mate_positions):
    game = envs.make("chess")
    actions = jax.jit(lambda s: evaluators.Minimax(depth=1).best_action(
        jax.random.key(0), game, s))(mate_positions)
    assert_all_mate(actions)


@pytest.mark.parametrize(**LAYOUTS)
@pytest.mark.parametrize("fens,num_simulations", [(MATE_IN_ONE, 200), (MATE_IN_TWO, 1000)],
                         ids=["mate_in_one", "mate_in_two"])
def test_solver_proves_chess_mates(fens, num_simulations, layout):
    game = envs.make("chess")
    evaluator = evaluators.Uniform()
    states = chess_tools.batch_from_fens(fens)
    root, invalid = game.root(None, jax.random.key(0), states, evaluator)
    out = mcts_jax.alphazero_policy(None, jax.random.key(1), root,
                                    game.recurrent_fn(evaluator), num_simulations,
                                    invalid_actions=invalid, dirichlet_fraction=0.0,
                                    solver=True, **layout)
    summary = out.search_tree.summary()
    assert np.asarray(summary.root_proven).all()
    np.testing.assert_array_equal(summary.root_proven_value, 1.0)
    for fen, action in zip(fens, np.asarray(out.action)):
        board = chess.Board(fen)
        board.push_uci(chess_tools.action_to_uci(chess_tools.from_fen(fen), int(action)))
        if fens is MATE_IN_ONE:
            assert board.is_checkmate(), fen
        else:  # every defence allows a mate at once
            assert not board.is_game_over()
            for defence in list(board.legal_moves):
                board.push(defence)
                assert any(_mates(board, move) for move in list(board.legal_moves)), fen
                board.pop()


def _mates(board, move):
    board.push(move)
    mate = board.is_checkmate()
    board.pop()
    return mate


def test_gardner_heuristic_is_material_for_the_player_to_move():
    """Gardner minichess boards (pgx's start with pieces taken off; the board
    is stored from the mover's side, its pieces positive): a missing queen is
    9 points, tanh(9 / 10) for the side that still has it."""
    from pgx.gardner_chess import INIT_BOARD  # a1, a2, ... file-major; queens at d1 / d5
    game = envs.make("gardner_chess")
    assert int(INIT_BOARD[15]) == 5 and int(INIT_BOARD[19]) == -5 and int(INIT_BOARD[16]) == 1
    boards = jnp.stack([INIT_BOARD, INIT_BOARD.at[19].set(0), INIT_BOARD.at[15].set(0),
                        INIT_BOARD.at[16].set(0)])
    states = game.init(jax.random.key(0), 4).replace(_board=boards)
    expected = [0.0, np.tanh(0.9), -np.tanh(0.9), -np.tanh(0.1)]
    np.testing.assert_allclose(np.asarray(game.heuristic(states)), expected, rtol=1e-6)
    shogi = envs.make("shogi")
    assert np.asarray(shogi.heuristic(shogi.init(jax.random.key(0), 2))).tolist() == [0.0, 0.0]
