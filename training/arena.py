"""Batched matches between players, and Elo ratings from their results.

A player is a hashable callable `player(params, rng_key, game, states [n]) ->
actions [n] int32` on full pgx states (frozen dataclasses, so equal players
share compiled code): `RandomPlayer`, `PolicyPlayer` (the raw network),
`SearchPlayer` (uct / alphazero / gumbel search with any evaluator), or e.g.
`envs.perfect_play.PerfectPlayer`.

    result = arena.play_match(game, SearchPlayer(model.evaluator, "gumbel", 64), variables,
                              RandomPlayer(), None, key, num_games=200)
    result.wins, result.draws, result.losses      # for the first player (A)

`play_match` plays `num_games` games at once, half with A moving first
(rows [0, n)) and half with B first (rows [n, 2n)). The deterministic pgx
games alternate turns strictly (a player with no move passes with an
explicit pass action), so on each ply one half of the rows is A's to move and
the other half B's: each player is called once per ply on n rows. The match
checks that assumption on every ply and raises if it fails. A game whose
`alternating_turns` is False (backgammon: one checker per action, so a turn
is 1 to 4 actions) is played by `current_player` instead: both players are
called on all 2n rows each ply and each row takes the move of the player
whose turn it is (twice the search work per ply).

`play_solo` plays a one-player game (2048) to its end: the score (the sum
of the rewards) of each game.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np

import mcts_jax
from mcts_jax import selection, sharding
from training import policies
from training import search as search_lib

# The match loop's cap for a game that does not give its `longest_game`.
DEFAULT_MAX_PLIES = 1024


@dataclasses.dataclass(frozen=True)
class RandomPlayer:
    """Uniformly random legal moves."""

    def __call__(self, params, rng_key, game, states):
        del params
        legal = game.legal_actions(states)
        return jax.random.categorical(rng_key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class PolicyPlayer:
    """The raw policy of an evaluator (no search): its legal argmax, or a
    sample from its legal softmax when `greedy` is False."""

    evaluator: Any
    greedy: bool = True

    def __call__(self, params, rng_key, game, states):
        eval_key, sample_key = jax.random.split(rng_key)
        logits, _ = self.evaluator(params, eval_key, game, states)
        logits = jnp.where(game.legal_actions(states), logits, -jnp.inf)
        if self.greedy:
            return jnp.argmax(logits, axis=-1).astype(jnp.int32)
        return jax.random.categorical(sample_key, logits).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class SearchPlayer:
    """A search with `evaluator` at the leaves, on the game's own rules
    (`training.search.GameSimulator`).

    policy: a policy value (`mcts_jax.AlphaZeroPolicy()`, `mcts_jax.rule_policy(
    my_rule)`, the user's own `mcts_jax.Policy`; a policy function with the
    policies' signature also works), or a name of `training.policies.POLICIES`
    ("uct", "alphazero", "gumbel", "stochastic" for the stochastic games,
    ...), turned into a value by `policy_from_name`: `greedy` plays the most
    visited move with no root noise (Gumbel: `gumbel_scale` 0); otherwise
    the move is sampled at temperature 1 with root noise. `max_nodes` and
    `options` (a `mcts_jax.SearchOptions` record, every field of which
    applies, as given; or a tuple of (name, value) pairs, hashable: policy
    fields or search options) are applied on top of the policy
    (`Policy.replace`).
    A policy that takes chance nodes plays the stochastic games
    (`envs.make_chance_game`), any other the deterministic ones
    (`training.search.check_fit`).
    """

    evaluator: Any
    policy: Union[str, Callable] = "alphazero"
    num_simulations: int = 64
    greedy: bool = True
    max_nodes: Optional[int] = None
    max_num_considered_actions: int = selection.MAX_NUM_CONSIDERED_ACTIONS
    uct_c: float = selection.UCT_C
    options: Union[Tuple[Tuple[str, Any], ...], mcts_jax.SearchOptions] = ()

    def policy_for(self, game) -> Callable:
        """The policy this player searches `game` with (names resolved, the
        player's options applied)."""
        policy = self.policy
        if isinstance(policy, str):
            policy = policies.policy_from_name(
                policy, num_actions=game.num_actions, root_noise=not self.greedy,
                sample_action=not self.greedy, uct_c=self.uct_c,
                max_num_considered_actions=self.max_num_considered_actions)
        if isinstance(self.options, mcts_jax.SearchOptions):
            changes = {name: getattr(self.options, name) for name in mcts_jax.SearchOptions.names()}
        else:
            changes = dict(self.options)
        if self.max_nodes is not None:
            changes["max_nodes"] = self.max_nodes
        if policy is mcts_jax.stochastic_muzero_policy:  # takes (decision_fn, chance_fn)
            raise TypeError(
                "SearchPlayer's policy mcts_jax.stochastic_muzero_policy is a function with "
                "its own signature (decision_recurrent_fn, chance_recurrent_fn); pass the "
                "value mcts_jax.StochasticMuZeroPolicy() or the name 'stochastic'")
        policy = sharding.as_policy(policy, changes)
        label = (f"{self.policy!r} ({type(policy).__name__})" if isinstance(self.policy, str)
                 else getattr(self.policy, "__name__", type(self.policy).__name__))
        search_lib.check_fit(policy, self.simulator(game), "SearchPlayer", label)
        return policy

    def simulator(self, game) -> search_lib.GameSimulator:
        """What the search steps: `game`'s rules, `evaluator` at the leaves."""
        return search_lib.GameSimulator(game, self.evaluator)

    def search(self, params, rng_key, game, states) -> mcts_jax.PolicyOutput:
        """The search of full pgx states [B] (non-terminal)."""
        root_key, search_key = jax.random.split(rng_key)
        return search_lib.run(self.policy_for(game), self.simulator(game), params, search_key,
                              states, self.num_simulations, root_key=root_key)

    def __call__(self, params, rng_key, game, states):
        return self.search(params, rng_key, game, states).action


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """Results of a match for player A (each game 1 win, 0 draw, -1 loss).

    wins / draws / losses: totals over all games; first / second: (wins,
    draws, losses) of A when moving first / second; unfinished: games cut at
    the ply cap (counted as draws); seconds: wall time.
    """

    wins: int
    draws: int
    losses: int
    first: Tuple[int, int, int]
    second: Tuple[int, int, int]
    unfinished: int
    seconds: float

    @property
    def num_games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """A's mean score in [0, 1] (win 1, draw 1/2)."""
        return (self.wins + 0.5 * self.draws) / max(1, self.num_games)

    def as_dict(self, prefix: str = "") -> Dict[str, Any]:
        return {f"{prefix}wins": self.wins, f"{prefix}draws": self.draws,
                f"{prefix}losses": self.losses, f"{prefix}score": round(self.score, 4)}


def _half(tree, start, size):
    return jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, size, axis=0), tree)


def _placed_like_params(carried, *params):
    """`carried` (the arrays a match loop passes from ply to ply) replicated
    (`sharding.replicate`) on the mesh of the first parameter array placed on
    one (a training run's network), else as it is. A step's outputs live on
    its inputs' mesh, so without this the first ply's program, given arrays
    on no mesh, would be compiled again for the second ply's."""
    for leaf in jax.tree.leaves(params):
        if isinstance(getattr(leaf, "sharding", None), jax.sharding.NamedSharding):
            return sharding.replicate(carried, leaf.sharding.mesh)
    return carried


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _match_step(game, player_a, player_b, opening_moves, params_a, params_b, rng_key, states,
                ply, a_id, score_a, violations):
    """One ply of every game. A moves in rows [0, n) on even plies, [n, 2n) on odd."""
    size = states.current_player.shape[0] // 2
    key_a, key_b, key_open, key_step = jax.random.split(rng_key, 4)
    even = ply % 2 == 0
    start_a = jnp.where(even, 0, size)
    actions_a = player_a(params_a, key_a, game, _half(states, start_a, size))
    actions_b = player_b(params_b, key_b, game, _half(states, size - start_a, size))
    actions = jnp.where(even, jnp.concatenate([actions_a, actions_b]),
                        jnp.concatenate([actions_b, actions_a]))
    if opening_moves:
        legal = game.legal_actions(states)
        random_moves = jax.random.categorical(key_open, jnp.where(legal, 0.0, -jnp.inf))
        actions = jnp.where(ply < opening_moves, random_moves.astype(jnp.int32), actions)
    rows = jnp.arange(2 * size)
    a_moves = (rows < size) == even
    mover = jnp.where(a_moves, a_id, 1 - a_id)
    live = ~game.is_terminal(states)
    violations = violations + jnp.sum(live & (game.current_player(states) != mover))
    states = game.step(states, actions.astype(jnp.int32), key_step)
    # pgx rewards only the move that ends the game (zero after it).
    score_a = score_a + game.reward_for(states, a_id)
    return states, score_a, violations, actions, a_moves


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _match_step_by_turn(game, player_a, player_b, opening_moves, params_a, params_b, rng_key,
                        states, ply, a_id, score_a, violations):
    """One action of every game, for games whose turns do not alternate:
    both players choose on every row, each row takes its player to move's."""
    key_a, key_b, key_open, key_step = jax.random.split(rng_key, 4)
    actions_a = player_a(params_a, key_a, game, states)
    actions_b = player_b(params_b, key_b, game, states)
    a_moves = game.current_player(states) == a_id
    actions = jnp.where(a_moves, actions_a, actions_b)
    if opening_moves:
        legal = game.legal_actions(states)
        random_moves = jax.random.categorical(key_open, jnp.where(legal, 0.0, -jnp.inf))
        actions = jnp.where(ply < opening_moves, random_moves.astype(jnp.int32), actions)
    states = game.step(states, actions.astype(jnp.int32), key_step)
    score_a = score_a + game.reward_for(states, a_id)
    return states, score_a, violations, actions, a_moves


def play_match(game, player_a, params_a, player_b, params_b, rng_key, num_games: int,
               opening_moves: int = 0, max_plies: Optional[int] = None,
               on_ply: Optional[Callable[..., None]] = None) -> MatchResult:
    """`num_games` (even) games of A against B, half with each moving first
    (A first in rows [0, n), B first in rows [n, 2n)).

    opening_moves: the first plies of every game are uniformly random (for
    both sides), to vary the games of deterministic players.
    max_plies: cap on game length (default: the game's `longest_game`, from
    its registry entry, else `DEFAULT_MAX_PLIES`); games still running are
    counted as draws.
    on_ply: called on the host after every ply as `on_ply(ply, states,
      actions, a_moved)`: the states [2n] before the ply, the moves [2n]
      int32 played, a_moved [2n] bool, the rows where A made the move (to
      judge a player's moves, say; rows already finished are in `states`
      as terminal).
    A one-player game (2048) is refused (ValueError): use `play_solo`.
    """
    num_players = getattr(game, "num_players", 2)  # pgx games of envs.make: two players
    if num_players != 2:
        raise ValueError(f"play_match needs a two-player game, but "
                         f"{getattr(game, 'name', game)!r} has {num_players} player(s) (its "
                         f"unfinished games would count as wins); play a one-player game "
                         f"with arena.play_solo")
    if num_games < 2 or num_games % 2:
        raise ValueError(f"num_games must be even and >= 2, got {num_games}")
    started = time.perf_counter()
    size = num_games // 2
    init_key, rng_key = jax.random.split(rng_key)
    states = game.init(init_key, num_games)
    first_id = states.current_player
    a_id = jnp.concatenate([first_id[:size], 1 - first_id[size:]]).astype(jnp.int32)
    score_a = jnp.zeros((num_games,), jnp.float32)
    violations = jnp.zeros((), jnp.int32)
    states, a_id, score_a, violations = _placed_like_params(
        (states, a_id, score_a, violations), params_a, params_b)
    max_plies = max_plies or getattr(game, "longest_game", DEFAULT_MAX_PLIES)
    alternating = getattr(game, "alternating_turns", True)
    match_step = _match_step if alternating else _match_step_by_turn
    for ply in range(max_plies):
        rng_key, step_key = jax.random.split(rng_key)
        before = states
        states, score_a, violations, actions, a_moved = match_step(
            game, player_a, player_b, int(opening_moves), params_a, params_b, step_key, states,
            jnp.int32(ply), a_id, score_a, violations)
        if on_ply is not None:
            on_ply(ply, before, actions, a_moved)
        if bool(jnp.all(game.is_terminal(states))):
            break
    if int(violations):
        raise RuntimeError(f"{game.name}: turns did not alternate ({int(violations)} "
                           f"row-plies); play_match assumes strict alternation")
    score = np.asarray(score_a)
    unfinished = int(np.sum(~np.asarray(game.is_terminal(states))))

    def tally(part):
        return (int(np.sum(part > 0)), int(np.sum(part == 0)), int(np.sum(part < 0)))

    first, second = tally(score[:size]), tally(score[size:])
    wins, draws, losses = (a + b for a, b in zip(first, second))
    return MatchResult(wins=wins, draws=draws, losses=losses, first=first, second=second,
                       unfinished=unfinished, seconds=time.perf_counter() - started)


@dataclasses.dataclass(frozen=True)
class SoloResult:
    """Games of a one-player game: scores [n] float (the sum of each game's
    rewards), final_states (pgx states [n], to read e.g. 2048's best tile),
    moves [n] int, unfinished (games cut at the ply cap, scored so far),
    seconds."""

    scores: np.ndarray
    final_states: Any
    moves: np.ndarray
    unfinished: int
    seconds: float

    @property
    def mean_score(self) -> float:
        return float(np.mean(self.scores))


@functools.partial(jax.jit, static_argnums=(0, 1))
def _solo_step(game, player, params, rng_key, states, score, moves):
    act_key, step_key = jax.random.split(rng_key)
    playing = ~game.is_terminal(states)
    states = game.step(states, player(params, act_key, game, states), step_key)
    score = score + jnp.where(playing, game.reward_for(states, jnp.zeros_like(moves)), 0.0)
    return states, score, moves + playing


def play_solo(game, player, params, rng_key, num_games: int,
              max_plies: Optional[int] = None) -> SoloResult:
    """`num_games` games of a one-player game (2048) played by `player` at
    once, each to its end or `max_plies` moves (default: the game's
    `longest_game`). A two-player game is refused (ValueError): use
    `play_match`."""
    num_players = getattr(game, "num_players", 2)  # pgx games of envs.make: two players
    if num_players != 1:
        raise ValueError(f"play_solo needs a one-player game (2048), but "
                         f"{getattr(game, 'name', game)!r} has {num_players} players; play "
                         f"a match between two players with arena.play_match")
    if num_games < 1:
        raise ValueError(f"num_games must be >= 1, got {num_games}")
    started = time.perf_counter()
    init_key, rng_key = jax.random.split(rng_key)
    states = game.init(init_key, num_games)
    score = jnp.zeros((num_games,), jnp.float32)
    moves = jnp.zeros((num_games,), jnp.int32)
    states, score, moves = _placed_like_params((states, score, moves), params)
    max_plies = max_plies or getattr(game, "longest_game", DEFAULT_MAX_PLIES)
    for ply in range(max_plies):
        states, score, moves = _solo_step(game, player, params,
                                          jax.random.fold_in(rng_key, ply), states, score, moves)
        if ply % 16 == 15 and bool(jnp.all(game.is_terminal(states))):
            break
    unfinished = int(np.sum(~np.asarray(game.is_terminal(states))))
    return SoloResult(scores=np.asarray(score), final_states=states, moves=np.asarray(moves),
                      unfinished=unfinished, seconds=time.perf_counter() - started)


# ---- Elo --------------------------------------------------------------------

ELO_SCALE = 400.0 / math.log(10.0)


def expected_score(rating_a: float, rating_b: float) -> float:
    """Elo's expected score of A against B."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def fit_elo(results: Sequence[Tuple[Hashable, Hashable, float, float]],
            anchor: Hashable, prior_games: float = 1.0,
            iterations: int = 2000) -> Dict[Hashable, float]:
    """Elo ratings by maximum likelihood (Bradley-Terry, a draw counts half).

    results: (player_i, player_j, score_i, games): player i scored `score_i`
      points (win 1, draw 1/2) in `games` games against player j.
    anchor: the player rated 0.
    prior_games: each player also gets this many virtual drawn games against
      the anchor (a weak prior that keeps perfect scores finite).
    Returns {player: rating}.
    """
    players: List[Hashable] = [anchor]
    for i, j, _, _ in results:
        for p in (i, j):
            if p not in players:
                players.append(p)
    index = {p: k for k, p in enumerate(players)}
    rows = [(index[i], index[j], float(s), float(n)) for i, j, s, n in results if n > 0]
    rows += [(k, 0, 0.5 * prior_games, prior_games) for k in range(1, len(players))]
    if not rows:
        return {anchor: 0.0}
    i_idx = np.array([r[0] for r in rows])
    j_idx = np.array([r[1] for r in rows])
    scores = np.array([r[2] for r in rows])
    games = np.array([r[3] for r in rows])
    theta = np.zeros(len(players))  # natural-log scale
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(theta[j_idx] - theta[i_idx]))
        residual = scores - games * p
        grad = np.zeros_like(theta)
        np.add.at(grad, i_idx, residual)
        np.add.at(grad, j_idx, -residual)
        curvature = np.zeros_like(theta)
        np.add.at(curvature, i_idx, games * p * (1 - p))
        np.add.at(curvature, j_idx, games * p * (1 - p))
        step = grad / np.maximum(curvature, 1e-9)
        step[0] = 0.0
        theta += np.clip(step, -1.0, 1.0)
        if np.max(np.abs(step)) < 1e-9:
            break
    return {p: float(ELO_SCALE * (theta[k] - theta[0])) for p, k in index.items()}
