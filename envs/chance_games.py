"""pgx's stochastic games, split into decisions and chance events.

    game = envs.make_chance_game("2048")            # or "backgammon"
    states = game.init(key, batch_size=8)
    afterstates = game.afterstate(states, actions)  # the deterministic part
    probs = game.chance_probabilities(afterstates)  # [B, C], exact
    states = game.apply_outcome(afterstates, outcomes)
    decision_fn = game.decision_recurrent_fn(evaluators.RandomPlayouts())
    chance_fn = game.chance_recurrent_fn(evaluators.RandomPlayouts())

A move of a stochastic game is a decision (the player's action) followed by
a chance event. `afterstate` applies the decision and `apply_outcome` the
chance outcome; composed, they give the state pgx's `env.step` gives for the
key that draws that outcome (tests/test_chance_games.py checks the support
and the frequencies against `env.step`). They are built on pgx's own step
helpers (`pgx.play2048._slide_and_merge`, `pgx.backgammon._update_by_action`,
`_change_turn`, ...); ours are only the seam between the two halves and
2048's board rotations, as cell permutations (pgx switches on `rot90`). The
wrapper of pgx's `Env.step` is mirrored around them: a terminal state steps
to itself with zero rewards, an illegal action ends the game with pgx's
penalty (`Env._step_with_illegal_action`), a terminal state's legal mask is
all True, and the observation is recomputed.

The two games (C = `num_chance_outcomes`):

- 2048 (1 player, 4 actions: slide left, up, right, down). Afterstate: the
  board after the slide and merges, `rewards` = [the merged tiles' sum].
  Chance: a tile appears on an empty cell, outcome `2 * cell + k` (C = 32,
  cell = row * 4 + column, k = 0 a 2 with probability 0.9, k = 1 a 4 with
  0.1, each divided by the number of empty cells). A legal slide always
  frees a cell, so a legal move always has a chance event.
- backgammon (2 players, 156 actions `6 * source + die`, one checker moved
  per action, so a turn is 1 to 4 actions). Afterstate: the board after the
  checker move (and the win, if it bore off the last checker). Chance: the
  dice of the next turn, rolled only when the turn passes (all dice used,
  or a no-op when nothing else is legal): outcomes 0..20 are the 21 distinct
  rolls (low die, high die) in lexicographic order, 1/36 for a double,
  2/36 otherwise, and outcome 21 is "no roll" (C = 22).

Why a dedicated "no roll" outcome (not a point mass on a roll with a flag):
in pgx's backgammon every die is its own action, so most decisions do not
end the turn; with outcome 21 the chance node of such a decision is an
ordinary chance node with one possible child (probability 1), every
outcome index means one thing (a roll never doubles as "nothing
happened"), and a learned chance model (Stochastic MuZero's codes) can
give it its own code. The search needs no special case: the only child
with nonzero probability is the only one ever selected. Afterstates with
no chance event in 2048 (only after an illegal action or a terminal
state, which a search never expands) put a point mass on outcome 0.
`Afterstate.chance` says whether a chance event is pending;
`apply_outcome` ignores the outcome when it is not. An outcome out of
range or of probability 0 is refused (ValueError) when the inputs are
concrete; inside `jit` it gives an unspecified state (never a crash or NaN).

Backgammon's dice are kept in the order (low, high) where pgx keeps the
order it rolled; the two orders are the same position (legal moves,
observation and every later step agree), and the tests compare states with
the dice sorted.

Rewards and values: a reward is for the player who chose the action and
covers the whole transition (both games decide it in the deterministic
part: the merges of 2048, the win of backgammon). 2048's rewards are
points (the value of a position is the sum of the points still to come,
hundreds to thousands; pgx has no discount). Backgammon's are +-1, +-2
(gammon: the loser bore off no checker) or +-3 (backgammon: and still has
one in the winner's home board or on the bar), for the winner and the
loser; pgx's illegal-action penalty is -3. `spec.value_scale` gives the
scale. Discounts: -1 when the player to move changes, +1 when the same
player moves again (2048 always, backgammon within a turn), 0 at terminal.

Afterstate value (`decision_recurrent_fn`): the evaluator is not asked to
value an afterstate as if it were a state (a backgammon afterstate has no
dice to move with; a network never saw one). Instead one outcome is
sampled from `chance_probabilities`, applied, and the afterstate value is
`reward + discount * value(next state)` for the mover: an unbiased
one-sample estimate of the afterstate's expected value, on the same scale
as the chance edges backed up into it. It is exact for `Uniform` (value 0:
the transition's reward) and, with `RandomPlayouts`, a playout from a
sampled outcome. It costs one more evaluator call per decision.

Embeddings: as `PgxGame` (whose lean/full machinery `ChanceGame` inherits),
the observation and legal mask are dropped; integer fields are stored as
int8 (every value fits: 2048's tile exponents are at most 17, backgammon's
board -15..15, dice -1..5, counts 0..4, players 0/1), restored to pgx's
dtypes before any pgx arithmetic. `_step_count` stays int32 (neither game
has a ply limit). An afterstate embedding is the lean state plus the
`chance` flag: `lean_bytes()` and `lean_afterstate_bytes()` (2048: 27 and
28 bytes against 578 for a full state; backgammon: 51 and 52 against 454).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Dict, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pgx
from pgx import backgammon as pgx_backgammon
from pgx import play2048 as pgx_2048

from mcts_jax import base
from mcts_jax import validation
from envs import symmetry
from envs.pgx_game import Evaluator, PgxGame
from envs.registry import GAMES, LeanLayout, built_tables


@chex.dataclass(frozen=True)
class Afterstate:
    """A decision taken, its chance event not yet drawn.

    Attributes:
      state: pgx state [B] after the deterministic part of the move:
        `current_player` is the player who chose the action, `rewards` [B,
        num_players] the rewards of the whole transition, `terminated` set
        if the decision ended the game. Its legal mask and observation are
        stale (`apply_outcome` recomputes both).
      chance: [B] bool, a chance event follows (2048: a tile appears;
        backgammon: the turn passes and the dice are rolled).
    """

    state: Any
    chance: chex.Array


@dataclasses.dataclass(frozen=True, eq=False)
class ChanceSpec:
    """One stochastic game's entry (the parallel of `envs.registry.GameSpec`).

    name, env_id: our name and the pgx id. num_players: 1 or 2.
    num_chance_outcomes: C. no_chance_outcome: the outcome that carries the
      point mass of an afterstate with no chance event.
    max_legal_moves: upper bound on the legal actions of any state.
    longest_game: a ply cap for matches and playouts (neither game has a
      limit in pgx; see `CHANCE_SPECS`' comments).
    value_scale: the size of a value: backgammon 3, the largest |reward|;
      2048 1000, a random game's score (points have no bound).
    lean: the lean-state layout (as `GameSpec.lean`).
    (How the game is trained, its network and presets, is
    `training.presets`'s; a network's `value_scale` is the unit of its value
    head, see `training.networks`.)
    alternating_turns: False: a player may move several times in a row
      (backgammon: one checker per action), so matches go by
      `current_player` (`training.arena`).
    deterministic_part: (state, action) -> (state, chance) for one state,
      not terminal, step count already advanced.
    outcome_probabilities: afterstate -> [C] probabilities for one afterstate.
    chance_part: (afterstate, outcome) -> state for one afterstate: the next
      state before pgx's wrapper (terminal mask, observation).
    symmetries: () -> tables of `envs.symmetry`, or None (as
      `GameSpec.symmetries`; 2048: the board's 8, which also turn the
      slides; the chance outcomes are not mapped, a learned model's codes
      need no map).
    """

    name: str
    env_id: str
    num_players: int
    num_chance_outcomes: int
    no_chance_outcome: int
    max_legal_moves: int
    longest_game: int
    value_scale: float
    lean: LeanLayout
    deterministic_part: Callable
    outcome_probabilities: Callable
    chance_part: Callable
    alternating_turns: bool = False
    actions: str = ""
    outcomes: str = ""
    heuristic: Optional[Callable] = None
    symmetries: Optional[Callable[[], Dict[str, np.ndarray]]] = None

    def make_env(self) -> pgx.Env:
        return pgx.make(self.env_id)

    def symmetry_tables(self) -> Optional[Dict[str, np.ndarray]]:
        """The symmetry tables (built once per spec), or None."""
        return None if self.symmetries is None else built_tables(self.symmetries)


# ---- 2048 ----------------------------------------------------------------------------

# pgx slides left after rotating the board by `action` quarter turns; as cell
# permutations: rotated = board[_ROTATE[action]], board = rotated[_UNROTATE[action]].
_ROTATE = np.stack([np.rot90(np.arange(16).reshape(4, 4), k).ravel() for k in range(4)])
_UNROTATE = np.argsort(_ROTATE, axis=1)
_TILE_PROBABILITIES = np.float32([0.9, 0.1])  # a 2 (exponent 1), a 4 (exponent 2)


def _slide(state, action):
    rows = state._board[jnp.asarray(_ROTATE)[action]].reshape(4, 4)
    rows, merged = jax.vmap(pgx_2048._slide_and_merge)(rows)
    board = rows.ravel()[jnp.asarray(_UNROTATE)[action]]
    return state.replace(_board=board, rewards=jnp.float32([merged.sum()])), jnp.bool_(True)


def _tile_probabilities(after):
    empty = after.state._board == 0
    cell = empty / jnp.maximum(empty.sum(), 1)
    return (cell[:, None] * _TILE_PROBABILITIES).ravel()


def _place_tile(after, outcome):
    board = jnp.where(after.chance, after.state._board.at[outcome // 2].set(1 + outcome % 2),
                      after.state._board)
    mask = pgx_2048._legal_action_mask(board.reshape(4, 4))
    terminated = jnp.where(after.chance, ~mask.any(), after.state.terminated)
    return after.state.replace(_board=board, legal_action_mask=mask, terminated=terminated)


# ---- backgammon ------------------------------------------------------------------------

# The 21 distinct rolls as (low, high) dice 0..5 (pgx's die d is d + 1 pips).
_ROLLS = np.array([(low, high) for low in range(6) for high in range(low, 6)], np.int32)
_ROLL_PROBABILITIES = np.where(_ROLLS[:, 0] == _ROLLS[:, 1], 1 / 36, 2 / 36).astype(np.float32)
NO_ROLL = len(_ROLLS)  # 21


def _move_checker(state, action):
    moved = pgx_backgammon._update_by_action(state, action)
    won = pgx_backgammon._is_all_off(moved._board)
    after = jax.lax.cond(won, lambda: pgx_backgammon._winning_step(moved), lambda: moved)
    # As pgx's `_no_winning_step`: the turn passes when the dice are used up
    # or on a no-op (ids 0..5, legal only when nothing else is).
    return after, ~won & (pgx_backgammon._is_turn_end(moved) | (action // 6 == 0))


def _roll_probabilities(after):
    return jnp.concatenate([_ROLL_PROBABILITIES, jnp.zeros(1, jnp.float32)])


def _roll(after, outcome):
    dice = jnp.asarray(_ROLLS)[jnp.clip(outcome, 0, NO_ROLL - 1)]
    # pgx's turn change with its own (random) dice replaced by the outcome's.
    turned = pgx_backgammon._change_turn(after.state, jax.random.key(0)).replace(
        _dice=dice, _playable_dice=pgx_backgammon._set_playable_dice(dice))
    state = jax.lax.cond(after.chance, lambda: turned, lambda: after.state)
    # The legal mask of the dice still to play: for a new turn it is pgx's
    # mask of the two dice (the same set); within a turn, the one pgx's
    # `_update_by_action` computed (recomputed: a lean afterstate has none).
    mask = pgx_backgammon._legal_action_mask(state._board, state._playable_dice)
    return state.replace(legal_action_mask=mask)


def _pip_race(states):
    """[B] float32 in (-1, 1) for the player to move: the pip-count race,
    tanh((opponent's pips - mover's pips) / 40). pgx keeps the board from
    the mover's side: points 0..23 (the mover's checkers positive, moving
    up to its home 18..23; the opponent's negative, moving down), 24 the
    mover's bar, 25 the opponent's (negative). A checker needs 24 - point
    pips to bear off for the mover, point + 1 for the opponent, 25 from a
    bar."""
    board = states._board.astype(jnp.float32)
    points = jnp.arange(24, dtype=jnp.float32)
    mover = (jnp.maximum(board[:, :24], 0) * (24 - points)).sum(-1) + 25 * jnp.abs(board[:, 24])
    opponent = (jnp.maximum(-board[:, :24], 0) * (points + 1)).sum(-1) + 25 * jnp.abs(board[:, 25])
    return jnp.tanh((opponent - mover) / 40.0)


# ---- the table ---------------------------------------------------------------------------

_INT8 = "int8"
CHANCE_SPECS = (
    ChanceSpec(
        name="2048", env_id="2048", num_players=1, num_chance_outcomes=32, no_chance_outcome=0,
        max_legal_moves=4,
        # pgx has no limit: a game ends when no slide is legal. Each move adds
        # 2 or 4 to the tile sum, which 16 cells keep under about 2^18, so no
        # game passes ~131,000 moves; random play ends after 50-250 moves
        # (score ~1,000), a 2048 tile takes about 1,000. This is a cap.
        longest_game=8192,
        value_scale=1000.0,  # a random game's score; rewards are points
        lean=LeanLayout(narrow=(("_board", _INT8), ("current_player", _INT8))),
        deterministic_part=_slide, outcome_probabilities=_tile_probabilities,
        chance_part=_place_tile, symmetries=functools.partial(symmetry.dihedral_slides, 4),
        actions="4 ids: slide left, up, right, down (legal when the slide moves a tile).",
        outcomes="32 ids: `2 * cell + k`, a 2 (k = 0, p 0.9) or a 4 (k = 1, p 0.1) on an "
                 "empty cell (row * 4 + column), uniform over the empty cells."),
    ChanceSpec(
        name="backgammon", env_id="backgammon", num_players=2,
        num_chance_outcomes=NO_ROLL + 1, no_chance_outcome=NO_ROLL,
        # A legal action is (source, die): at most 2 distinct dice, and with a
        # checker on the bar only the bar moves, otherwise at most 15 occupied
        # points; a no-op (6 ids) is legal only when nothing else is.
        max_legal_moves=30,
        # pgx has no limit and hits can repeat positions forever; random play
        # ends after 90-700 plies (one checker move each). This is a cap.
        longest_game=2048,
        value_scale=3.0,
        lean=LeanLayout(narrow=tuple((field, _INT8) for field in (
            "_board", "_dice", "_playable_dice", "_played_dice_num", "_turn",
            "current_player"))),
        deterministic_part=_move_checker, outcome_probabilities=_roll_probabilities,
        chance_part=_roll, heuristic=_pip_race,
        actions="156 ids: `6 * source + die`, source 0 a no-op, 1 the bar, 2..25 the points "
                "from the mover's side; die 0..5 (1 to 6 pips).",
        outcomes="22 ids: the 21 rolls (low, high) in lexicographic order (a double 1/36, "
                 "others 2/36), 21 no roll (the turn goes on)."),
)
_BY_NAME = {chance_spec.name: chance_spec for chance_spec in CHANCE_SPECS}
CHANCE_GAMES: Tuple[str, ...] = tuple(_BY_NAME)


def chance_spec(name: str) -> ChanceSpec:
    """The ChanceSpec of `name`; ValueError naming it and listing the known
    stochastic games otherwise."""
    if isinstance(name, str) and name in _BY_NAME:
        return _BY_NAME[name]
    if name in GAMES:
        why = f"game {name!r} is deterministic: build it with envs.make({name!r})"
    else:
        why = f"unknown stochastic game {name!r}"
    raise ValueError(f"{why}; known stochastic games: {', '.join(CHANCE_GAMES)}")


# ---- the game --------------------------------------------------------------------------

def _where(condition, if_true, if_false):
    return jax.tree.map(lambda a, b: jnp.where(condition, a, b), if_true, if_false)


@dataclasses.dataclass(frozen=True, eq=False)
class ChanceGame(PgxGame):
    """One stochastic pgx game, batched over [B]. Compare by identity.

    Build it with `envs.make_chance_game(name)`. It is a `PgxGame` (init,
    the true `step`, `current_player`, `legal_actions`, `is_terminal`,
    `reward_for`, `root`, lean/full states, `lean_bytes`), with the
    decision / chance split on top. Its inherited `recurrent_fn` steps with
    a sampled outcome (an open-loop search); `decision_recurrent_fn` and
    `chance_recurrent_fn` give the search the chance nodes.

    Attributes:
      name, env: our name and the pgx env.
      spec: its `ChanceSpec`.
    """

    @property
    def num_chance_outcomes(self) -> int:
        """C, the number of chance outcome ids."""
        return self.spec.num_chance_outcomes

    @property
    def num_players(self) -> int:
        return self.spec.num_players

    @property
    def alternating_turns(self) -> bool:
        """False: a player may act several times in a row (backgammon)."""
        return self.spec.alternating_turns

    # ---- the split ------------------------------------------------------------
    def afterstate(self, states: pgx.State, actions: chex.Array) -> Afterstate:
        """The deterministic part of a move: full states [B], actions [B] ->
        afterstates [B] (the mover still `current_player`)."""
        return jax.vmap(self._afterstate_one)(states, actions)

    def chance_probabilities(self, afterstates: Afterstate) -> chex.Array:
        """[B, C] float32 exact outcome probabilities (rows sum to 1; a point
        mass on `spec.no_chance_outcome` where no chance event is pending)."""
        no_chance = jax.nn.one_hot(self.spec.no_chance_outcome, self.num_chance_outcomes)
        probs = jax.vmap(self.spec.outcome_probabilities)(afterstates)
        return jnp.where(afterstates.chance[:, None], probs, no_chance)

    def apply_outcome(self, afterstates: Afterstate, outcomes: chex.Array) -> pgx.State:
        """Full afterstates [B] (or `full_afterstate`'s), outcomes [B] int32 ->
        the next full states [B], as pgx's `env.step` would give them.

        Checks: `outcomes` must be [B] integer (always); with concrete inputs
        (outside `jit`), ids outside [0, C) and outcomes of probability 0 at
        their afterstate (`chance_probabilities`) raise ValueError. Inside
        `jit` such an outcome gives an unspecified state."""
        batch_size, num_outcomes = afterstates.chance.shape[0], self.num_chance_outcomes
        outcomes = jnp.asarray(outcomes)
        validation.check_ids("outcomes", outcomes, batch_size,
                             f"{self.name}'s chance outcome id", "C", num_outcomes,
                             per="afterstate")
        if validation.is_concrete(outcomes):
            values = np.asarray(outcomes)
            if all(validation.is_concrete(leaf) for leaf in jax.tree.leaves(afterstates)):
                probs = np.asarray(self.chance_probabilities(afterstates))  # [B, C]
                rows = np.flatnonzero(probs[np.arange(batch_size), values] <= 0)[:10]
                if rows.size:
                    raise ValueError(
                        f"outcomes {values[rows].tolist()} in rows {rows.tolist()} have "
                        f"probability 0 at their afterstates of {self.name} (impossible; "
                        f"chance_probabilities gives the possible ones, and outcome "
                        f"{self.spec.no_chance_outcome} where no chance event is pending)")
        return jax.vmap(self._apply_outcome_one)(afterstates, outcomes)

    def _afterstate_one(self, state, action):
        done = state.terminated | state.truncated
        illegal = ~state.legal_action_mask[action]
        stepped, chance = self.spec.deterministic_part(
            state.replace(_step_count=state._step_count + 1), action)
        after = _where(done, state.replace(rewards=jnp.zeros_like(state.rewards)), stepped)
        after = jax.lax.cond(illegal, lambda: self.env._step_with_illegal_action(
            after, state.current_player), lambda: after)
        return Afterstate(state=after, chance=chance & ~done & ~illegal)

    def _apply_outcome_one(self, after, outcome):
        state = self.spec.chance_part(after, outcome)
        state = state.replace(legal_action_mask=state.legal_action_mask | state.terminated)
        return state.replace(observation=self.env.observe(state))

    # ---- lean afterstates --------------------------------------------------------
    def lean_afterstate(self, afterstates: Afterstate) -> Afterstate:
        """The afterstate embedding stored per chance node [B]."""
        return Afterstate(state=self.lean_state(afterstates.state), chance=afterstates.chance)

    def full_afterstate(self, lean: Afterstate) -> Afterstate:
        """An afterstate `apply_outcome` accepts, from a lean one."""
        return Afterstate(state=self.full_state(lean.state), chance=lean.chance)

    def lean_afterstate_bytes(self) -> int:
        """Bytes of one lean afterstate (a chance node's embedding)."""
        lean = jax.eval_shape(lambda key: self.lean_afterstate(self.afterstate(
            self.init(key, 1), jnp.zeros(1, jnp.int32))), jax.random.key(0))
        return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(lean))

    # ---- the search contract ----------------------------------------------------
    def transition(self, params: Any, rng_key: chex.PRNGKey, afterstates: Afterstate,
                   outcomes: chex.Array, evaluator: Evaluator
                   ) -> Tuple[base.ChanceRecurrentFnOutput, pgx.State]:
        """Applies outcomes [B] to full afterstates [B] and evaluates the new
        states: (ChanceRecurrentFnOutput, next full states [B]). Reward for the
        mover (`afterstates.state.current_player`), discount from
        `search_discount`, value 0 at terminal."""
        mover = self.current_player(afterstates.state)
        states = self.apply_outcome(afterstates, outcomes)
        terminal = self.is_terminal(states)
        logits, value = evaluator(params, rng_key, self, states)
        output = base.ChanceRecurrentFnOutput(
            action_logits=logits,
            value=jnp.where(terminal, 0.0, value),
            reward=self.reward_for(states, mover),
            discount=self.search_discount(states, mover),
            invalid_actions=~self.legal_actions(states),
        )
        return output, states

    def decision_recurrent_fn(self, evaluator: Evaluator) -> base.DecisionRecurrentFn:
        """decision_recurrent_fn(params, key, actions [B], lean states) ->
        (DecisionRecurrentFnOutput, lean afterstates). chance_logits: log of
        `chance_probabilities` (-inf for impossible outcomes); afterstate
        value for the mover: reward + discount * value of one sampled next
        state (see the module docstring). The same evaluator gives the same
        function object."""
        return _recurrent_fns_for(self, evaluator)[0]

    def chance_recurrent_fn(self, evaluator: Evaluator) -> base.ChanceRecurrentFn:
        """chance_recurrent_fn(params, key, outcomes [B], lean afterstates) ->
        (ChanceRecurrentFnOutput, lean states), see `transition`. The same
        evaluator gives the same function object."""
        return _recurrent_fns_for(self, evaluator)[1]


_STOCHASTIC_FNS: dict = {}


def _recurrent_fns_for(game: ChanceGame, evaluator: Evaluator):
    key = (id(game), evaluator)
    if key in _STOCHASTIC_FNS:
        return _STOCHASTIC_FNS[key][1:]

    def decision_recurrent_fn(params, rng_key, action, embedding):
        sample_key, eval_key = jax.random.split(rng_key)
        after = game.afterstate(game.full_state(embedding), action)
        probs = game.chance_probabilities(after)
        logits = jnp.where(probs > 0, jnp.log(probs), -jnp.inf)
        sampled = jax.random.categorical(sample_key, logits).astype(jnp.int32)
        output, _ = game.transition(params, eval_key, after, sampled, evaluator)
        value = output.reward + output.discount * output.value
        return (base.DecisionRecurrentFnOutput(chance_logits=logits, afterstate_value=value),
                game.lean_afterstate(after))

    def chance_recurrent_fn(params, rng_key, outcome, embedding):
        output, states = game.transition(params, rng_key, game.full_afterstate(embedding),
                                         outcome, evaluator)
        return output, game.lean_state(states)

    # Keep `game` alive with its id.
    _STOCHASTIC_FNS[key] = (game, decision_recurrent_fn, chance_recurrent_fn)
    return decision_recurrent_fn, chance_recurrent_fn


@functools.lru_cache(maxsize=None)
def make_chance_game(name: str) -> ChanceGame:
    """The stochastic game called `name` ("2048" or "backgammon"). The same
    name returns the same object. ValueError naming `name` and listing the
    known ones otherwise."""
    game_spec = chance_spec(name)
    return ChanceGame(name=game_spec.name, env=game_spec.make_env(), spec=game_spec)


__all__ = ["Afterstate", "CHANCE_GAMES", "CHANCE_SPECS", "ChanceGame", "ChanceSpec", "NO_ROLL",
           "chance_spec", "make_chance_game"]
