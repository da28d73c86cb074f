"""The game registry: everything mcts_jax knows about each pgx game, in one entry.

    spec = envs.spec("shogi")           # a GameSpec
    game = envs.make("shogi")           # the PgxGame built from it
    envs.GAMES                          # the registered names, in table order

A `GameSpec` holds, for one pgx two-player perfect-information board game:
the pgx env id; an upper bound on the legal moves of any position (the slot
count of a compact search tree); the longest game in plies (the match loop's
cap); the board symmetries used for data augmentation (a builder of
`envs.symmetry` tables, each checked in tests by playing symmetric games
through pgx); the static evaluation at a minimax horizon; how a state is kept
lean in the search tree (`LeanLayout`); and a short description of the
observation planes and action ids: what the game is. How it is trained (the
default network, the training defaults and presets) is the application's,
`training/presets.py`, keyed by the game's name.

Adding a game is one entry in `_SPECS` (and, to train it with settings of
its own, one in `training.presets`). A pgx id with no entry still works if
it fits the contract (two players, deterministic steps, rewards in [-1, 1]):
`spec(name)` then derives generic defaults from the env (`generic_spec`).
Other pgx ids and unknown names raise ValueError listing the known games.

Where the bounds come from (pgx 2.6 sources, `pgx/*.py`, `pgx/_src/games/*.py`):

| game | most legal moves | longest game (plies) |
|---|---|---|
| tic_tac_toe | 9 squares | 9 squares |
| connect_four | 7 columns | 42 cells |
| othello | 60: a move needs an empty square (60 at most), pass only when nothing else is legal | 120: at most 60 placements, never two passes in a row but the last two |
| go_NxN | N*N + 1: every point and the pass | 2*N*N: pgx ends the game at step 2*N*N (`max_termination_steps`) |
| chess | 218, the known maximum for a legal chess position | 512: pgx's `MAX_TERMINATION_STEPS` |
| gardner_chess | 152: a king has at most 8 moves and each of the other 9 pieces at most 16 (a queen in the centre of 5x5; a promoting pawn has 3 targets x 4 pieces = 12) | 256: pgx's `MAX_TERMINATION_STEPS` |
| animal_shogi | 74: a lion has at most 8 moves, each of the other 6 pieces at most 6 (a hen), drops: 3 kinds x 10 free squares | 256: pgx's `MAX_TERMINATION_STEPS` |
| shogi | 593, the known maximum for a legal shogi position | 512: pgx's `MAX_TERMINATION_STEPS` |
| hex | 121: the empty cells, plus the swap on the second ply (when one cell is taken) | 122: 121 placements and one swap; a full board always has a winner |

A test plays random games of every game and checks the legal-move bound.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import pgx

from envs import symmetry


@dataclasses.dataclass(frozen=True)
class LeanLayout:
    """How a pgx state is stored per search node (`PgxGame.lean_state`).

    Fields are named by their path in the state, e.g. "_x.board". Always
    dropped: `observation` and `legal_action_mask` (pgx recomputes both on
    every step; the tree marks illegal children).

    narrow: (path, dtype name) pairs: integer arrays stored in a narrower
      dtype; every value the game can put there must fit.
    windows: (path, rows) pairs: history arrays whose newest entries are the
      first rows; only the first `rows` are kept, `full_state` puts zeros in
      the others (they must never change a step's result or observation).
    masks: paths of boolean legal masks kept inside the state that the step
      recomputes before reading; dropped, restored all True.
    """

    narrow: Tuple[Tuple[str, str], ...] = ()
    windows: Tuple[Tuple[str, int], ...] = ()
    masks: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, eq=False)
class GameSpec:
    """One registry entry (compared by identity).

    name: our name, the key of `envs.make`. env_id: the pgx id.
    max_legal_moves: upper bound on the legal moves of any position.
    longest_game: upper bound on a game's length in plies.
    symmetries: () -> tables of `envs.symmetry` (observation [S, H*W], action
      [S, A] gathers, identity first), or None.
    heuristic: states [B] -> [B] float32 in (-1, 1) for the player to move, at
      a minimax horizon; None: 0.
    lean: the lean-state layout.
    position: lean states [M] -> the pytree a graph search's position key
      hashes (`PgxGame.position_key`): the position, not the way it was
      reached; default `whole_state_but(("_step_count",))`.
    observation, actions: what the observation planes and action ids mean.
    registered: False for a spec derived generically from an env.
    """

    name: str
    env_id: str
    max_legal_moves: int
    longest_game: int
    observation: str
    actions: str
    symmetries: Optional[Callable[[], Dict[str, np.ndarray]]] = None
    heuristic: Optional[Callable[[pgx.State], jax.Array]] = None
    lean: LeanLayout = LeanLayout()
    position: Optional[Callable[[pgx.State], object]] = None
    registered: bool = True

    def position_of(self, states: pgx.State) -> object:
        """What decides the future of lean `states` [M] (`position`)."""
        return (whole_state_but(("_step_count",)) if self.position is None
                else self.position)(states)

    def make_env(self) -> pgx.Env:
        return pgx.make(self.env_id)

    def symmetry_tables(self) -> Optional[Dict[str, np.ndarray]]:
        """The symmetry tables (built once per spec), or None."""
        return None if self.symmetries is None else built_tables(self.symmetries)

    def num_symmetries(self) -> int:
        tables = self.symmetry_tables()
        return 1 if tables is None else int(tables["observation"].shape[0])


@functools.lru_cache(maxsize=None)
def built_tables(builder):
    """`builder()`, built once per builder (`GameSpec.symmetries`, and the
    stochastic games' `ChanceSpec.symmetries`)."""
    return builder()


# ---- heuristics ---------------------------------------------------------------------

def _chess_material(states):
    from envs import chess_tools
    return chess_tools.material(states)


def _gardner_material(states):
    # The board is kept from the mover's side (theirs negative) with chess's
    # piece codes, so chess's material function applies to it unchanged.
    from envs import chess_tools
    return chess_tools.board_material(states._board)


# ---- positions (a graph search's keys) ----------------------------------------------

def whole_state_but(left_out: Tuple[str, ...]) -> Callable[[pgx.State], object]:
    """A `GameSpec.position`: every leaf of the lean state but those whose
    path (as `LeanLayout` names them, e.g. "_x.board_history") is left out."""
    def position(states):
        return [leaf for path, leaf in jax.tree_util.tree_leaves_with_path(states)
                if jax.tree_util.keystr(path)[1:] not in left_out]
    return position


def _repetitions(history: jax.Array, current: jax.Array) -> jax.Array:
    """[M] int32: how often the position hashed `current` [M, 2] occurs in
    `history` [M, H, 2] (including itself)."""
    return jnp.sum(jnp.all(history == current[:, None, :], axis=-1), axis=-1, dtype=jnp.int32)


def _chess_position(states):
    # The board, the side to move, castling and en passant rights, and how
    # often this position has occurred (a third time draws). The counters
    # (50-move rule, ply) are left out, as engines leave them out of their
    # transposition keys: the graph shares positions reached by different
    # move orders; a repetition inside one search path is the search's own
    # (`SearchOptions.repetition_value`).
    x = states._x
    return (x.board, x.color, x.castling_rights, x.en_passant,
            _repetitions(x.hash_history, x.hash_history[:, 0]))


def _gardner_position(states):
    # As chess (Gardner chess has no castling and no en passant).
    return (states._board, states._turn,
            _repetitions(states._hash_history, states._hash_history[:, 0]))


def _animal_shogi_position(states):
    # Board, hands, side to move and how often this position has occurred.
    return (states._board, states._hand, states._turn,
            _repetitions(states._hash_history, states._zobrist_hash))


# ---- the entries --------------------------------------------------------------------

def _go(size: int) -> GameSpec:
    points = size * size
    return GameSpec(
        name=f"go_{size}x{size}", env_id=f"go_{size}x{size}",
        max_legal_moves=points + 1, longest_game=2 * points,
        symmetries=functools.partial(symmetry.dihedral, size, 1),
        # Chain ids are +-(smallest point of the chain + 1); the history
        # holds -1 / 0 / 1 stones and 2 before the game's start.
        lean=LeanLayout(narrow=(("_x.board", "int8" if points < 128 else "int16"),
                                ("_x.board_history", "int8"))),
        # The stones, ko, passes and counts; not the board history (the
        # observation's) or the superko hashes: a position repeating one on
        # its search path is the search's repetition.
        position=whole_state_but(("_step_count", "_x.board_history", "_x.hash_history")),
        observation=(
            f"[{size}, {size}, 17] bool. Planes 2k and 2k+1 (k = 0..7) are the stones "
            "of the player to move and of the opponent k plies ago (k = 0: now; "
            "before the first move, empty). Plane 16 is all 1 when White is to move, "
            "all 0 for Black."),
        actions=(
            f"{points + 1} ids: `row * {size} + column` places a stone on that point, "
            f"{points} passes (always legal). Two passes in a row end the game "
            "(area scoring, komi 7.5); a move repeating an earlier position loses "
            f"(positional superko); the game ends after {2 * points} plies."),
    )


_SPECS: Tuple[GameSpec, ...] = (
    GameSpec(
        name="tic_tac_toe", env_id="tic_tac_toe", max_legal_moves=9, longest_game=9,
        symmetries=functools.partial(symmetry.dihedral, 3, 0),
        lean=LeanLayout(narrow=(("_x.board", "int8"),)),          # -1 empty, 0 / 1
        observation="[3, 3, 2] bool: plane 0 the marks of the player to move, plane 1 "
                    "the opponent's.",
        actions="9 ids: `row * 3 + column`, the square to mark.",
    ),
    GameSpec(
        name="connect_four", env_id="connect_four", max_legal_moves=7, longest_game=42,
        symmetries=functools.partial(symmetry.mirror_columns, 6, 7),
        lean=LeanLayout(narrow=(("_x.board", "int8"),)),          # -1 empty, 0 / 1
        observation="[6, 7, 2] bool: plane 0 the discs of the player to move, plane 1 the "
                    "opponent's; row 0 is the top row.",
        actions="7 ids: the column to drop a disc into (legal while it has room).",
    ),
    GameSpec(
        name="othello", env_id="othello", max_legal_moves=60, longest_game=120,
        symmetries=functools.partial(symmetry.dihedral, 8, 1),
        lean=LeanLayout(narrow=(("_x.board", "int8"),)),          # -1 / 0 / 1
        observation="[8, 8, 2] bool: plane 0 the discs of the player to move, plane 1 the "
                    "opponent's.",
        actions="65 ids: `row * 8 + column` places a disc there; 64 passes (legal only "
                "when no placement is). The game ends when the board is full or neither "
                "side can place.",
    ),
    _go(9),
    _go(19),
    GameSpec(
        name="chess", env_id="chess", max_legal_moves=218, longest_game=512,
        heuristic=_chess_material,
        position=_chess_position,
        # A position can repeat only one seen since the last capture or pawn
        # move, no more than 99 half-moves back (the game ends at 100), and the
        # observation counts the repetitions of the newest 8 positions: the
        # newest 8 + 100 hashes decide every result and observation.
        lean=LeanLayout(narrow=(("_x.board", "int8"), ("_x.board_history", "int8")),  # -6..6
                        windows=(("_x.hash_history", 108),),
                        masks=("_x.legal_action_mask",)),
        observation=(
            "[8, 8, 119] float32, from the side of the player to move (its pieces "
            "move up the board). For each of the newest 8 positions (k = 0..7), 14 "
            "planes: 6 for the mover's pawns, knights, bishops, rooks, queens, king, "
            "6 for the opponent's, then 'seen once before' and 'seen twice or more'. "
            "Then 7 constant planes: the mover's colour, the ply count / 512, the "
            "four castling rights (mover's then opponent's, queen side then king "
            "side) and the half-moves since a capture or pawn move / 100."),
        actions=(
            "4672 ids: `73 * from_square + plane`, squares numbered file-major "
            "(a1 = 0, a2 = 1, ..., h8 = 63) from the mover's side. Planes 0..8 are "
            "under-promotions (to rook, bishop, knight x straight, capture either "
            "way), 9..64 queen-like moves (8 directions x 7 distances; a pawn reaching "
            "the last rank this way becomes a queen), 65..72 knight jumps. Castling "
            "is the king's two-square move (`envs.chess_tools` converts to UCI)."),
    ),
    GameSpec(
        name="gardner_chess", env_id="gardner_chess", max_legal_moves=152, longest_game=256,
        heuristic=_gardner_material,
        position=_gardner_position,
        # As chess: repetitions and the repetition planes depend on the newest
        # 8 + 100 position hashes only (no castling or en passant here).
        lean=LeanLayout(narrow=(("_board", "int8"), ("_board_history", "int8")),  # -6..6
                        windows=(("_hash_history", 108),)),
        observation=(
            "[5, 5, 115] float32, from the side of the player to move. For each of "
            "the newest 8 positions, 14 planes as in chess (6 own piece kinds, 6 "
            "opposing, seen once before, seen twice or more); then the mover's "
            "colour, the ply count / 256 and the half-moves since a capture or pawn "
            "move / 100. Gardner's 5x5 minichess: no castling, no double pawn step."),
        actions=(
            "1225 ids: `49 * from_square + plane`, squares numbered file-major (a1 = "
            "0, a2 = 1, ..., e5 = 24) from the mover's side. Planes 0..8 are "
            "under-promotions (rook, bishop, knight x straight, capture either way), "
            "9..40 queen-like moves (8 directions x 4 distances; a pawn reaching the "
            "last rank this way becomes a queen), 41..48 knight jumps."),
    ),
    GameSpec(
        name="animal_shogi", env_id="animal_shogi", max_legal_moves=74, longest_game=256,
        position=_animal_shogi_position,
        # No window: with drops almost every move can be undone, so any earlier
        # position may repeat. Pieces are -1 (empty) .. 9.
        lean=LeanLayout(narrow=(("_board", "int8"), ("_board_history", "int8"))),
        observation=(
            "[4, 3, 194] float32 (4 rows, 3 columns), from the side of the player to "
            "move. For each of the newest 8 positions, 24 planes: 5 for the mover's "
            "chick, elephant, giraffe, lion, hen, 5 for the opponent's, 12 for the "
            "pieces in hand (chick, elephant, giraffe of the mover then of the "
            "opponent, each as 'at least 1' and 'at least 2'), then 'not seen "
            "before' and 'seen once before'. Then the mover's colour and the ply "
            "count / 256."),
        actions=(
            "132 ids over the 12 squares (`column * 4 + row`, from the mover's side): "
            "`direction * 12 + from_square` (direction 0..7) moves a piece one step, "
            "`96 + kind * 12 + to_square` drops a chick (kind 0), elephant (1) or "
            "giraffe (2) from the hand. A lion reaching the far row wins, a third "
            "repetition draws, and the game is a draw after 256 plies."),
    ),
    GameSpec(
        name="shogi", env_id="shogi", max_legal_moves=593, longest_game=512,
        # Pieces are -1 (empty) .. 27; the step recomputes its inner legal mask.
        lean=LeanLayout(narrow=(("_x.board", "int8"),), masks=("_x.legal_action_mask",)),
        observation=(
            "[9, 9, 119] bool, from the side of the player to move. For the mover: 14 "
            "planes of its piece kinds (pawn, lance, knight, silver, bishop, rook, "
            "gold, king, then the six promoted kinds), 14 planes of the squares each "
            "kind attacks, 3 planes 'attacked by at least 1 / 2 / 3 pieces'; the same "
            "31 for the opponent; the hand as count thresholds (pawn 8, lance, "
            "knight, silver, gold 4 each, bishop and rook 2 each), mover's then "
            "opponent's (56 planes); a last plane set when the mover is in check."),
        actions=(
            "2187 ids: `direction * 81 + to_square`, the destination square and the "
            "direction the piece comes from (dlshogi's encoding): directions 0..9 "
            "are up, up-left, up-right, left, right, down, down-left, down-right and "
            "the two knight jumps, 10..19 the same moves with promotion, 20..26 drop "
            "a pawn, lance, knight, silver, bishop, rook or gold. No repetition "
            "rule; a draw after 512 plies."),
    ),
    GameSpec(
        name="hex", env_id="hex", max_legal_moves=121, longest_game=122,
        symmetries=functools.partial(symmetry.rotation_180, 11, 1),
        # Cells hold +-(chain id + 1), chain ids < 121.
        lean=LeanLayout(narrow=(("_x.board", "int8"),)),
        observation=(
            "[11, 11, 4] bool: the stones of the player to move, the opponent's, a "
            "plane of the mover's colour (1 for the second player) and a plane set "
            "on the second ply, when the swap is legal."),
        actions=(
            "122 ids: `row * 11 + column` places a stone, 121 is the swap (second "
            "ply only: the first stone is replaced by one of the second player's, "
            "mirrored across the long diagonal). The first player joins the top and "
            "bottom rows, the second the left and right columns; no draws."),
    ),
)

_BY_NAME: Dict[str, GameSpec] = {spec.name: spec for spec in _SPECS}
GAMES: Tuple[str, ...] = tuple(spec.name for spec in _SPECS)

# pgx ids with two players that do not fit the search contract anyway, and why
# (pgx's env does not say so itself). The stochastic games have their own
# adapter (envs/chance_games.py, `envs.make_chance_game`); `STOCHASTIC` says
# why `make` refuses them.
NOT_FITTING = {
    "kuhn_poker": "imperfect information (hidden cards) and rewards up to 2",
    "leduc_holdem": "imperfect information (hidden cards) and rewards in chips",
}
STOCHASTIC = {
    "2048": "a 2 or 4 tile appears after each move, and 1 player",
    "backgammon": "dice, and rewards up to 3",
}
GENERIC_LONGEST_GAME = 1024


def _unknown(name: str, why: str) -> ValueError:
    return ValueError(f"{why}; known games: {', '.join(GAMES)}")


def spec(name: str) -> GameSpec:
    """The GameSpec of `name`: its registry entry, or generic defaults for a
    pgx id that fits the contract. Raises ValueError naming the game and
    listing the known ones otherwise."""
    if not isinstance(name, str):
        raise _unknown(name, f"game must be a name (str), got {name!r}")
    if name in _BY_NAME:
        return _BY_NAME[name]
    return _generic_spec_checked(name)


@functools.lru_cache(maxsize=None)
def _generic_spec_checked(name: str) -> GameSpec:
    if name not in pgx.available_envs():
        raise _unknown(name, f"unknown game {name!r}")
    if name in STOCHASTIC:
        raise _unknown(name, f"game {name!r} is stochastic ({STOCHASTIC[name]}): build it with "
                             f"envs.make_chance_game({name!r})")
    if name in NOT_FITTING:
        raise _unknown(name, f"game {name!r} does not fit the two-player perfect-information "
                             f"contract: {NOT_FITTING[name]}")
    env = pgx.make(name)
    check_contract(name, env)
    return generic_spec(name, env)


def check_contract(name: str, env: pgx.Env, num_games: int = 8, plies: int = 64) -> None:
    """Raises ValueError naming `name` unless `env` has two players, steps
    independently of the key and gives rewards in [-1, 1] (checked on
    `num_games` random games of up to `plies` plies)."""
    if env.num_players != 2:
        raise _unknown(name, f"game {name!r} does not fit the two-player contract: "
                             f"{env.num_players} player(s)")

    @jax.jit
    def play(key):
        def body(carry, key):
            states, worst, differs = carry
            action_key, key_a, key_b = jax.random.split(key, 3)
            action = jax.random.categorical(
                action_key, jnp.where(states.legal_action_mask, 0.0, -jnp.inf))
            step = jax.vmap(env.step)
            next_a = step(states, action, jax.random.split(key_a, num_games))
            next_b = step(states, action, jax.random.split(key_b, num_games))
            differs = differs | jnp.any(jnp.stack([jnp.any(a != b) for a, b in zip(
                jax.tree.leaves(next_a), jax.tree.leaves(next_b))]))
            return (next_a, jnp.maximum(worst, jnp.max(jnp.abs(next_a.rewards))), differs), None

        init_key, loop_key = jax.random.split(key)
        states = jax.vmap(env.init)(jax.random.split(init_key, num_games))
        (_, worst, differs), _ = jax.lax.scan(
            body, (states, jnp.float32(0), jnp.bool_(False)), jax.random.split(loop_key, plies))
        return worst, differs

    worst, differs = play(jax.random.key(0))
    if bool(differs):
        raise _unknown(name, f"game {name!r} does not fit the contract: its steps depend on "
                             f"the random key (stochastic)")
    if float(worst) > 1.0:
        raise _unknown(name, f"game {name!r} does not fit the contract: rewards up to "
                             f"{float(worst)}, outside [-1, 1]")


def generic_spec(name: str, env: Optional[pgx.Env] = None) -> GameSpec:
    """A spec with generic defaults derived from the pgx env `name` (no
    contract check; `spec` checks first): the action count as the legal-move
    bound, `GENERIC_LONGEST_GAME` plies, no symmetries, no heuristic and a
    lean state without the observation and legal mask (its training
    defaults: `training.presets.generic`)."""
    env = pgx.make(name) if env is None else env
    return GameSpec(
        name=name, env_id=name, max_legal_moves=int(env.num_actions),
        longest_game=GENERIC_LONGEST_GAME,
        observation=f"{tuple(env.observation_shape)}: see pgx's documentation of {name!r}.",
        actions=f"{env.num_actions} ids: see pgx's documentation of {name!r}.",
        registered=False)


def symmetry_tables(name: str) -> Optional[Dict[str, np.ndarray]]:
    """The `envs.symmetry` permutation tables of game `name` (from its entry:
    `spec(name).symmetry_tables()`), or None when it has none declared
    (chess: castling and pawn direction break them)."""
    return spec(name).symmetry_tables()


def num_symmetries(name: str) -> int:
    """How many symmetries game `name` has (1: only the identity)."""
    return spec(name).num_symmetries()


__all__ = ["GAMES", "GENERIC_LONGEST_GAME", "GameSpec", "LeanLayout", "NOT_FITTING", "STOCHASTIC",
           "check_contract", "generic_spec", "num_symmetries", "spec", "symmetry_tables",
           "whole_state_but"]
