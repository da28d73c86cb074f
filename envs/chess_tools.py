"""Chess conveniences for pgx chess: FEN in and out, UCI moves, a material
heuristic and SVG boards.

    state = from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    legal_uci_moves(state)                 # {'a1a8', 'g1f2', ...}
    action = uci_to_action(state, "a1a8")  # pgx action id in [0, 4672)
    action_to_uci(state, action)           # 'a1a8'
    material(batch_from_fens([...]))       # [B] float32 in (-1, 1)

How pgx stores a chess position (pgx 2.6, `pgx._src.games.chess`), which
every function here relies on:

* Squares are numbered file-major: index = 8 * file + rank, with files a..h
  = 0..7 and ranks 1..8 = 0..7, so a1 = 0, a2 = 1, ..., b1 = 8, h8 = 63.
* The board is always stored from the point of view of the player to move:
  that player's pieces are positive (1 pawn, 2 knight, 3 bishop, 4 rook,
  5 queen, 6 king), the opponent's negative. When black is to move the board
  is also mirrored top to bottom (rank r is stored as rank 7 - r; files are
  not mirrored), so black's pawns always move "up". En passant squares and
  castling rights ([mine, theirs] x [queen side, king side]) are stored in
  the same relative frame.
* An action is `73 * from_square + plane`, from_square in that relative
  frame. Planes 0..8 are underpromotions (plane // 3: 0 rook, 1 bishop,
  2 knight; plane % 3: 0 straight ahead, 1 capture towards the h-file,
  2 capture towards the a-file). Planes 9..64 are queen-like moves, 8 lines
  of 7 distances; planes 65..72 are knight moves. Promotion to a queen is the
  plain queen-like move of the pawn (no separate plane); castling is the
  king's two-square move (e1g1, e1c1, or e8g8, e8c8 for black).

`from_fen` gives white the pgx player id 0 and black 1 (pgx's `init` picks
the order at random; here it is fixed so that `current_player` tells the
colour).
"""

from __future__ import annotations

import re
from typing import Iterable, Set

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pgx.chess
from pgx._src.games.chess import (  # pgx internals; pinned by pgx>=2.6,<3
    Game,
    GameState,
    _legal_action_mask,
    _zobrist_hash,
)

NUM_ACTIONS = 64 * 73
FILES = "abcdefgh"
PIECES = "pnbrqk"  # pgx piece codes 1..6
UNDERPROMOTIONS = "rbn"  # plane // 3 for planes 0..8
# Material values indexed by |pgx piece code|: empty, P, N, B, R, Q, K.
PIECE_VALUES = (0.0, 1.0, 3.0, 3.0, 5.0, 9.0, 0.0)
# material() returns tanh(balance / MATERIAL_SCALE).
MATERIAL_SCALE = 10.0

_GAME = Game()
_ENV = pgx.make("chess")


# ---- the action encoding -------------------------------------------------

def _plane_moves() -> list:
    """(rank delta, file delta) for planes 9..72, in the mover's frame.

    The queen-like planes run along four lines (up, sideways, diagonal,
    anti-diagonal); along each line the signed distance goes -7..-1, 1..7.
    """
    moves = []
    for line in ((1, 0), (0, 1), (1, 1), (-1, 1)):
        for s in (*range(-7, 0), *range(1, 8)):
            moves.append((s * line[0], s * line[1]))
    moves += [(-1, -2), (1, -2), (-2, -1), (2, -1), (-1, 2), (1, 2), (-2, 1), (2, 1)]
    return moves


_PLANE_DELTAS = _plane_moves()
_DELTA_TO_PLANE = {delta: 9 + i for i, delta in enumerate(_PLANE_DELTAS)}
_UNDERPROMOTION_FILE_DELTA = (0, 1, -1)  # plane % 3


def _target_table() -> np.ndarray:
    """[64, 73] target square of each (from square, plane), -1 if off board."""
    table = -np.ones((64, 73), np.int32)
    for sq in range(64):
        file, rank = divmod(sq, 8)
        for plane in range(73):
            if plane < 9:
                if rank != 6:
                    continue
                dr, df = 1, _UNDERPROMOTION_FILE_DELTA[plane % 3]
            else:
                dr, df = _PLANE_DELTAS[plane - 9]
            r, f = rank + dr, file + df
            if 0 <= r < 8 and 0 <= f < 8:
                table[sq, plane] = 8 * f + r
    return table


TARGETS = _target_table()
_UCI = re.compile(r"^([a-h])([1-8])([a-h])([1-8])([qrbn]?)$")


def _is_single(state: pgx.State) -> None:
    if not isinstance(state, pgx.chess.State):
        raise TypeError(f"expected a pgx chess State, got {type(state).__name__}")
    if np.ndim(state.current_player) != 0:
        raise ValueError("expected one (unbatched) state; index a batch first, "
                         "e.g. jax.tree.map(lambda x: x[i], states)")


def _square_name(sq: int, color: int) -> str:
    """pgx square (mover's frame) -> 'e4' (absolute)."""
    file, rank = divmod(int(sq), 8)
    if color == 1:
        rank = 7 - rank
    return f"{FILES[file]}{rank + 1}"


def _square_index(name: str, color: int) -> int:
    """'e4' (absolute) -> pgx square in the mover's frame."""
    file, rank = FILES.index(name[0]), int(name[1]) - 1
    if color == 1:
        rank = 7 - rank
    return 8 * file + rank


def action_to_uci(state: pgx.State, action: int) -> str:
    """The UCI string (e.g. 'e2e4', 'e1g1', 'e7e8q', 'a2a1n') of the pgx
    action `action` in the unbatched state `state`.

    Raises ValueError if the action is out of range, is not legal in the
    state, or the game is over.
    """
    _is_single(state)
    action = int(action)
    if not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"action {action} out of range [0, {NUM_ACTIONS})")
    if bool(state.terminated) or bool(state.truncated):
        raise ValueError("the game is over: no move is legal")
    if not bool(state.legal_action_mask[action]):
        raise ValueError(f"action {action} is not legal in {to_fen(state)}")
    return _action_to_uci(int(state._x.color), np.asarray(state._x.board), action)


def _action_to_uci(color: int, board: np.ndarray, action: int) -> str:
    sq, plane = divmod(int(action), 73)
    to = int(TARGETS[sq, plane])
    suffix = ""
    if plane < 9:
        suffix = UNDERPROMOTIONS[plane // 3]
    elif board[sq] == 1 and to % 8 == 7:  # the mover's pawn reaching the last rank
        suffix = "q"
    return _square_name(sq, color) + _square_name(to, color) + suffix


def uci_to_action(state: pgx.State, uci: str) -> int:
    """The pgx action id of the UCI move `uci` (e.g. 'e2e4', 'e7e8q') in the
    unbatched state `state`. A promotion needs its piece letter, as in UCI.

    Raises ValueError for a malformed string or a move that is not legal.
    """
    _is_single(state)
    if not isinstance(uci, str):
        raise ValueError(f"expected a UCI string, got {uci!r}")
    m = _UCI.match(uci.strip())
    if m is None:
        raise ValueError(f"malformed UCI move {uci!r}; expected e.g. 'e2e4' or 'e7e8q'")
    if bool(state.terminated) or bool(state.truncated):
        raise ValueError(f"illegal move {uci!r}: the game is over")
    color = int(state._x.color)
    src = _square_index(m.group(1) + m.group(2), color)
    dst = _square_index(m.group(3) + m.group(4), color)
    promo = m.group(5)
    (f0, r0), (f1, r1) = divmod(src, 8), divmod(dst, 8)
    dr, df = r1 - r0, f1 - f0
    board = np.asarray(state._x.board)
    is_promotion = board[src] == 1 and r1 == 7  # the mover's pawn to the last rank
    if not promo:
        if is_promotion:
            raise ValueError(f"illegal move {uci!r} in {to_fen(state)}: a promotion "
                             f"needs its piece letter, e.g. {uci.strip()}q")
        plane = _DELTA_TO_PLANE.get((dr, df))
    elif not is_promotion:
        plane = None
    elif promo == "q":
        plane = _DELTA_TO_PLANE.get((dr, df))
    elif dr == 1 and df in _UNDERPROMOTION_FILE_DELTA:
        plane = 3 * UNDERPROMOTIONS.index(promo) + _UNDERPROMOTION_FILE_DELTA.index(df)
    else:
        plane = None
    action = None if plane is None else 73 * src + plane
    if action is None or not bool(state.legal_action_mask[action]):
        raise ValueError(f"illegal move {uci!r} in {to_fen(state)}")
    return action


def legal_uci_moves(state: pgx.State) -> Set[str]:
    """The legal moves of the unbatched state as UCI strings; empty once the
    game is over (pgx then marks every action legal)."""
    _is_single(state)
    if bool(state.terminated) or bool(state.truncated):
        return set()
    state = jax.device_get(state)
    color, board = int(state._x.color), np.asarray(state._x.board)
    return {_action_to_uci(color, board, a) for a in np.flatnonzero(state.legal_action_mask)}


# ---- FEN -----------------------------------------------------------------

def _parse_fen(fen: str):
    fields = fen.split()
    if len(fields) == 4:
        fields += ["0", "1"]
    if len(fields) != 6:
        raise ValueError(f"FEN needs 6 (or 4) fields, got {len(fields)}: {fen!r}")
    placement, turn, castling, ep, halfmove, fullmove = fields
    ranks = placement.split("/")
    if len(ranks) != 8:
        raise ValueError(f"FEN board needs 8 ranks: {fen!r}")
    board = np.zeros((8, 8), np.int32)  # [file, rank], white positive
    for i, row in enumerate(ranks):
        rank, file = 7 - i, 0
        for c in row:
            if c.isdigit():
                file += int(c)
            elif c.lower() in PIECES:
                if file >= 8:
                    break
                code = PIECES.index(c.lower()) + 1
                board[file, rank] = code if c.isupper() else -code
                file += 1
            else:
                raise ValueError(f"bad piece {c!r} in FEN {fen!r}")
        if file != 8:
            raise ValueError(f"FEN rank {row!r} does not cover 8 squares: {fen!r}")
    if (board == 6).sum() != 1 or (board == -6).sum() != 1:
        raise ValueError(f"FEN needs exactly one king per side: {fen!r}")
    if turn not in ("w", "b"):
        raise ValueError(f"FEN side to move must be 'w' or 'b': {fen!r}")
    if castling != "-" and (set(castling) - set("KQkq") or len(set(castling)) != len(castling)):
        raise ValueError(f"bad castling field {castling!r} in FEN {fen!r}")
    if ep != "-" and not re.fullmatch(r"[a-h][36]", ep):
        raise ValueError(f"bad en passant field {ep!r} in FEN {fen!r}")
    try:
        halfmove, fullmove = int(halfmove), int(fullmove)
    except ValueError:
        raise ValueError(f"bad move counters in FEN {fen!r}") from None
    if halfmove < 0 or fullmove < 1:
        raise ValueError(f"bad move counters in FEN {fen!r}")

    color = 0 if turn == "w" else 1
    rights = np.array([["Q" in castling, "K" in castling],
                       ["q" in castling, "k" in castling]])  # [white, black]
    ep_sq = -1 if ep == "-" else 8 * FILES.index(ep[0]) + int(ep[1]) - 1
    if color == 1:  # the mover's frame: mirror the ranks, black positive
        board = -board[:, ::-1]
        rights = rights[::-1]
        if ep_sq >= 0:
            ep_sq = 8 * (ep_sq // 8) + 7 - ep_sq % 8
    return (board.reshape(64), np.int32(color), rights.copy(), np.int32(ep_sq),
            np.int32(halfmove), np.int32(fullmove))


@jax.jit
def _state_from_fields(board, color, rights, en_passant, halfmove, fullmove):
    x = GameState(color=color, board=board, castling_rights=rights, en_passant=en_passant,
                  halfmove_count=halfmove, fullmove_count=fullmove)
    # A fresh history: this position only (as pgx's init has for the start).
    x = x._replace(
        hash_history=jnp.zeros_like(x.hash_history).at[0].set(_zobrist_hash(x)),
        board_history=jnp.zeros_like(x.board_history).at[0].set(board))
    mask = _legal_action_mask(x)
    x = x._replace(legal_action_mask=mask)
    terminated = _GAME.is_terminal(x)
    order = jnp.int32([0, 1])
    state = pgx.chess.State(
        current_player=order[color],
        rewards=_GAME.rewards(x)[order],
        terminated=terminated,
        legal_action_mask=jnp.where(terminated, True, mask),  # pgx's terminal convention
        _player_order=order,
        _x=x,
    )
    return state.replace(observation=_ENV.observe(state))


def from_fen(fen: str) -> pgx.chess.State:
    """An unbatched pgx chess state for the FEN `fen` (4 or 6 fields).

    White is pgx player 0 and black player 1. Castling rights, en passant
    square and both move counters are kept. The history is this position
    only (no earlier repetitions), and pgx's 512-step cap counts from here.
    A position that is already over comes back `terminated`, with the
    rewards and all-True legal mask that pgx's `step` would give it.
    Raises ValueError for a malformed FEN (legality is not checked further).
    """
    return _state_from_fields(*_parse_fen(fen))


def batch_from_fens(fens: Iterable[str]) -> pgx.chess.State:
    """A batched state [B] from B FEN strings."""
    states = [from_fen(f) for f in fens]
    if not states:
        raise ValueError("batch_from_fens needs at least one FEN")
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def to_fen(state: pgx.State) -> str:
    """The FEN of an unbatched pgx chess state (pgx.experimental.chess)."""
    from pgx.experimental.chess import to_fen as pgx_to_fen

    _is_single(state)
    return pgx_to_fen(jax.device_get(state))


# ---- heuristics and display ------------------------------------------------

def material_balance(states: pgx.State) -> jax.Array:
    """Material of the player to move minus the opponent's (P=1, N=B=3, R=5,
    Q=9), float32, shape [...] = the batch shape of `states`. Jittable."""
    return _board_balance(states._x.board)


def _board_balance(board: jax.Array) -> jax.Array:
    values = jnp.asarray(PIECE_VALUES, jnp.float32)[jnp.abs(board)]
    return jnp.sum(jnp.sign(board).astype(jnp.float32) * values, axis=-1)


def board_material(board: jax.Array) -> jax.Array:
    """`material` of boards [..., squares] in pgx's chess piece codes, the
    mover's pieces positive (pgx chess and Gardner minichess): [...] float32."""
    return jnp.tanh(_board_balance(board) / MATERIAL_SCALE)


def material(states: pgx.State) -> jax.Array:
    """A value heuristic in (-1, 1) for the player to move: tanh(balance / 10),
    with `material_balance`. One pawn up is ~0.10, a minor piece ~0.29, a rook
    ~0.46, a queen ~0.72; 20 points or more saturate near 1. Jittable, for a
    state or a batch [B] (returns [] or [B] float32). Ignores checkmate and
    other results: combine with the terminal reward where the game is over.
    """
    return board_material(states._x.board)


def board_svg(state: pgx.State, *, color_theme=None, scale=None) -> str:
    """An SVG drawing of the board (pgx's renderer, white at the bottom); a
    batch is drawn as a grid. In a notebook: IPython.display.SVG(board_svg(s)).
    """
    return state.to_svg(color_theme=color_theme, scale=scale)


__all__ = [
    "MATERIAL_SCALE", "NUM_ACTIONS", "PIECE_VALUES", "TARGETS",
    "action_to_uci", "batch_from_fens", "board_material", "board_svg", "from_fen", "legal_uci_moves",
    "material", "material_balance", "to_fen", "uci_to_action",
]
