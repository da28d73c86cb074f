"""envs.chess_tools against python-chess: FEN, UCI moves, legal moves, mates,
material. python-chess is the independent reference throughout."""

import os
import sys

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

from chess_positions import MATE_IN_ONE, MATE_IN_TWO
from envs import chess_tools as ct

START = chess.STARTING_FEN

# Canonical FENs (pgx writes castling as KQkq order and keeps any en passant
# square): castling rights, en passant on the edge files, promotions pending,
# a side in check, black to move, large move counters.
ROUND_TRIP_FENS = [
    START,
    "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "rnbqkb1r/pp1p1ppp/5n2/2pPp3/8/8/PPP1PPPP/RNBQKBNR w KQkq e6 0 4",
    "rnbqkbnr/1ppppppp/8/8/pP6/8/P1PPPPPP/RNBQKBNR b KQkq b3 0 3",
    "rnbqkbnr/ppppppp1/8/8/6Pp/8/PPPPPP1P/RNBQKBNR b KQkq g3 0 3",
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8",
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b KQkq - 5 8",
    "r3k2r/8/8/8/3pP3/8/8/R3K2R b Kq e3 0 30",
    "r3k2r/8/8/8/8/8/8/R3K2R w Kk - 12 40",
    "8/P6k/8/8/8/8/6Kp/8 w - - 0 60",
    "8/P6k/8/8/8/8/6Kp/8 b - - 0 60",
    "1r2k3/2P5/8/8/8/8/5p2/4K1R1 w - - 3 50",
    "4k3/8/8/8/8/8/1p6/R3K3 b Q - 0 41",
    "r3k3/8/8/8/8/8/8/4K3 b q - 99 120",
]

PIECE_VALUE = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5,
               chess.QUEEN: 9, chess.KING: 0}


@pytest.fixture(scope="module")
def env():
    return pgx.make("chess")


@pytest.fixture(scope="module")
def step(env):
    jitted = jax.jit(env.step)
    return lambda state, action: jitted(state, jnp.int32(action))


def random_positions(n=50, seed=0, max_plies=80):
    """FENs of n positions from random games of 0..max_plies plies."""
    rng = np.random.default_rng(seed)
    fens = []
    for _ in range(n):
        board = chess.Board()
        for _ in range(int(rng.integers(0, max_plies + 1))):
            moves = sorted(board.legal_moves, key=lambda m: m.uci())
            if not moves:
                break
            board.push(moves[int(rng.integers(len(moves)))])
        fens.append(board.fen())
    return fens


RANDOM_FENS = random_positions()


def chess_legal(fen):
    return {m.uci() for m in chess.Board(fen).legal_moves}


def mating_moves(board):
    found = []
    for move in list(board.legal_moves):
        board.push(move)
        if board.is_checkmate():
            found.append(move.uci())
        board.pop()
    return found


# ---- encoding ------------------------------------------------------------

def test_target_table_matches_pgx():
    from pgx._src.games.chess import FROM_PLANE  # pgx's own (private) table

    np.testing.assert_array_equal(ct.TARGETS, np.asarray(FROM_PLANE))


def test_start_position_equals_pgx_init(env):
    state = ct.from_fen(START)
    init = next(s for s in (env.init(jax.random.key(k)) for k in range(16))
                if int(s._player_order[0]) == 0)
    same = jax.tree.map(lambda a, b: bool(np.array_equal(a, b)), state, init)
    # pgx's hard-coded INIT_ZOBRIST_HASH no longer equals the hash pgx
    # computes for the start position; ours is the computed one.
    from pgx._src.games.chess import GameState, _zobrist_hash

    assert same.replace(_x=same._x._replace(hash_history=True)) == jax.tree.map(lambda _: True, same)
    np.testing.assert_array_equal(state._x.hash_history[0], _zobrist_hash(GameState()))
    assert not np.asarray(state._x.hash_history[1:]).any()


# ---- FEN -----------------------------------------------------------------

@pytest.mark.parametrize("fen", ROUND_TRIP_FENS)
def test_fen_round_trip(fen):
    board = chess.Board(fen)
    assert board.is_valid(), fen
    state = ct.from_fen(fen)
    assert ct.to_fen(state) == fen
    assert int(state.current_player) == (0 if board.turn == chess.WHITE else 1)
    assert int(state._x.halfmove_count) == board.halfmove_clock
    assert int(state._x.fullmove_count) == board.fullmove_number
    assert not bool(state.terminated)
    assert ct.legal_uci_moves(state) == chess_legal(fen)


def test_four_field_fen_gets_default_counters():
    assert ct.to_fen(ct.from_fen("4k3/8/8/8/8/8/8/4K2R w K -")) == "4k3/8/8/8/8/8/8/4K2R w K - 0 1"


@pytest.mark.parametrize("bad", [
    "", "8/8/8/8/8/8/8/8 w - - 0 1",                       # no kings
    "4k3/8/8/8/8/8/8/4K3 x - - 0 1",                       # side to move
    "4k3/8/8/8/8/8/8/4K4 w - - 0 1",                       # 9 squares
    "4k3/8/8/8/8/8/4K3 w - - 0 1",                         # 7 ranks
    "4k3/8/8/8/8/8/8/4K3 w - e4 0 1",                      # en passant rank
    "4k3/8/8/8/8/8/8/4K3 w - - x 1",                       # counter
    "4k3/8/8/8/8/8/8/4X3 w - - 0 1",                       # piece letter
])
def test_from_fen_rejects_malformed(bad):
    with pytest.raises(ValueError):
        ct.from_fen(bad)


def test_batch_from_fens():
    fens = ROUND_TRIP_FENS[:4]
    batch = ct.batch_from_fens(fens)
    assert batch.current_player.shape == (4,)
    assert batch.legal_action_mask.shape == (4, ct.NUM_ACTIONS)
    for i, fen in enumerate(fens):
        one = jax.tree.map(lambda x: x[i], batch)
        assert ct.to_fen(one) == fen
        np.testing.assert_array_equal(one.observation, ct.from_fen(fen).observation)
    with pytest.raises(ValueError):
        ct.to_fen(batch)


def test_terminal_fen_follows_pgx_conventions():
    state = ct.from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    mated = ct.from_fen("R5k1/5ppp/8/8/8/8/8/6K1 b - - 1 1")
    assert not bool(state.terminated) and bool(mated.terminated)
    assert mated.rewards.tolist() == [1.0, -1.0]          # white (player 0) won
    assert bool(mated.legal_action_mask.all())
    assert ct.legal_uci_moves(mated) == set()
    with pytest.raises(ValueError, match="over"):
        ct.uci_to_action(mated, "g8h8")


# ---- legal moves and UCI ---------------------------------------------------

def test_random_positions_cover_both_sides():
    turns = [chess.Board(f).turn for f in RANDOM_FENS]
    assert 10 <= turns.count(chess.BLACK) <= 40


@pytest.mark.parametrize("chunk", range(5))
def test_legal_moves_match_python_chess(chunk):
    for fen in RANDOM_FENS[chunk::5]:
        state = ct.from_fen(fen)
        expected = chess_legal(fen)
        if chess.Board(fen).is_insufficient_material():
            expected = set()  # pgx ends the game there
        assert ct.legal_uci_moves(state) == expected, fen


@pytest.mark.parametrize("chunk", range(5))
def test_uci_round_trip(chunk):
    for fen in RANDOM_FENS[chunk::5] + ROUND_TRIP_FENS[chunk::5]:
        state = ct.from_fen(fen)
        if bool(state.terminated):
            continue
        mask = np.asarray(state.legal_action_mask)
        actions = set()
        for uci in chess_legal(fen):
            action = ct.uci_to_action(state, uci)
            assert mask[action], (fen, uci)
            assert ct.action_to_uci(state, action) == uci
            actions.add(action)
        assert actions == set(np.flatnonzero(mask).tolist()), fen


def test_every_move_steps_like_python_chess(step):
    """Each legal move of the special positions, stepped in pgx, reaches the
    position python-chess reaches (board, side, castling, e.p., counters)."""
    for fen in ROUND_TRIP_FENS:
        state = ct.from_fen(fen)
        board = chess.Board(fen)
        for move in board.legal_moves:
            board.push(move)
            after = step(state, ct.uci_to_action(state, move.uci()))
            if not bool(after.terminated):
                assert ct.to_fen(after) == board.fen(en_passant="fen"), (fen, move.uci())
            board.pop()


def test_random_game_steps_like_python_chess(step):
    rng = np.random.default_rng(1)
    board = chess.Board()
    state = ct.from_fen(START)
    for _ in range(120):
        if board.is_game_over() or bool(state.terminated):
            break
        assert ct.legal_uci_moves(state) == {m.uci() for m in board.legal_moves}
        move = sorted(m.uci() for m in board.legal_moves)[int(rng.integers(board.legal_moves.count()))]
        board.push_uci(move)
        state = step(state, ct.uci_to_action(state, move))
        if not bool(state.terminated):
            assert ct.to_fen(state) == board.fen(en_passant="fen")
    assert board.ply() >= 40


@pytest.mark.parametrize("fen,uci", [
    (START, "e2e5"), (START, "e7e5"), (START, "e1g1"), (START, "a1a1"),
    (START, "e2e4q"),                                     # promotion letter on a non-promotion
    ("8/P6k/8/8/8/8/6Kp/8 w - - 0 60", "a7a8"),           # promotion without its letter
    ("8/P6k/8/8/8/8/6Kp/8 w - - 0 60", "a7b8q"),          # promotion capture onto nothing
    ("8/P6k/8/8/8/8/6Kp/8 b - - 0 60", "a7a8q"),          # the opponent's pawn
])
def test_uci_to_action_rejects_illegal(fen, uci):
    with pytest.raises(ValueError, match="illegal"):
        ct.uci_to_action(ct.from_fen(fen), uci)


@pytest.mark.parametrize("uci", ["", "e2", "e2e4e5", "i2i4", "e0e1", "e7e8k", "E2E4", 42])
def test_uci_to_action_rejects_malformed(uci):
    with pytest.raises(ValueError):
        ct.uci_to_action(ct.from_fen(START), uci)


def test_action_to_uci_rejects_illegal():
    state = ct.from_fen(START)
    illegal = int(np.flatnonzero(~np.asarray(state.legal_action_mask))[0])
    for action in (illegal, -1, ct.NUM_ACTIONS):
        with pytest.raises(ValueError):
            ct.action_to_uci(state, action)


# ---- mates -------------------------------------------------------------------

def test_mate_in_one_suite_is_valid():
    assert len(MATE_IN_ONE) >= 20 and len(set(MATE_IN_ONE)) == len(MATE_IN_ONE)
    sides = set()
    for fen in MATE_IN_ONE:
        board = chess.Board(fen)
        assert board.is_valid(), fen
        assert not board.is_game_over(), fen
        assert mating_moves(board), fen
        sides.add(board.turn)
    assert sides == {chess.WHITE, chess.BLACK}


@pytest.mark.parametrize("fen", MATE_IN_ONE)
def test_pgx_sees_exactly_the_mates(fen, step):
    """A move wins in pgx (+1 for the mover, -1 for the other) iff
    python-chess says it checkmates."""
    board = chess.Board(fen)
    mates = set(mating_moves(board))
    state = ct.from_fen(fen)
    mover = int(state.current_player)
    for uci in chess_legal(fen):
        after = step(state, ct.uci_to_action(state, uci))
        won = bool(after.terminated) and float(after.rewards[mover]) == 1.0
        assert won == (uci in mates), (fen, uci)
        if won:
            assert float(after.rewards[1 - mover]) == -1.0


def test_mate_in_two_suite_is_valid():
    """Each position is legal, not over, has no mate in one and a first move
    that forces mate (the check that also builds benchmarks/data/mate_in_two.json)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from experiments.mate_in_two_positions import mating_moves as mate_in_two_moves

    assert len(MATE_IN_TWO) >= 5
    for fen in MATE_IN_TWO:
        assert mate_in_two_moves(fen), fen


# ---- material --------------------------------------------------------------

@pytest.mark.parametrize("fen,balance", [
    ("3qk3/8/8/8/8/8/8/3QK3 w - - 0 1", 0),
    ("4k3/8/8/8/8/8/8/3QK3 w - - 0 1", 9),     # white up a queen, white to move
    ("4k3/8/8/8/8/8/8/3QK3 b - - 0 1", -9),    # ... black to move
    ("3qk3/8/8/8/8/8/8/4K3 w - - 0 1", -9),    # black up a queen, white to move
    ("3qk3/8/8/8/8/8/8/4K3 b - - 0 1", 9),     # ... black to move
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/1NBQKBNR b Kkq - 0 1", 5),
    ("4k3/pppp4/8/8/8/8/8/4KB2 w - - 0 1", -1),
])
def test_material_sign_and_scale(fen, balance):
    state = ct.from_fen(fen)
    assert float(ct.material_balance(state)) == balance
    np.testing.assert_allclose(float(ct.material(state)), np.tanh(balance / 10.0), rtol=1e-6)


def test_material_batched_jitted_matches_python_chess():
    fens = RANDOM_FENS[:16]
    values = jax.jit(ct.material)(ct.batch_from_fens(fens))
    assert values.shape == (16,) and values.dtype == jnp.float32
    expected = []
    for fen in fens:
        board = chess.Board(fen)
        expected.append(sum(PIECE_VALUE[p.piece_type] * (1 if p.color == board.turn else -1)
                            for p in board.piece_map().values()))
    np.testing.assert_allclose(values, np.tanh(np.array(expected) / ct.MATERIAL_SCALE), rtol=1e-6)
    assert np.all(np.abs(values) < 1)


# ---- SVG -----------------------------------------------------------------

def test_board_svg():
    fens = ["6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "6k1/5ppp/8/8/8/8/8/R5K1 b - - 0 1", START]
    svgs = [ct.board_svg(ct.from_fen(f)) for f in fens]
    for svg, fen in zip(svgs, fens):
        assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
        assert svg.count("<image") == len(chess.Board(fen).piece_map())  # one image per piece
    assert svgs[0] != svgs[2]
    assert svgs[0] == svgs[1]  # drawn from white's side whoever is to move
    assert ct.board_svg(ct.batch_from_fens(fens)).count("<image") == sum(s.count("<image") for s in svgs)
