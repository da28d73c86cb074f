"""pgx games adapted to the mcts_jax search contract.

    game = envs.make("tic_tac_toe")
    states = game.init(jax.random.key(0), batch_size=8)
    root, invalid = game.root(None, key, states, evaluators.RandomPlayouts())
    recurrent_fn = game.recurrent_fn(evaluators.RandomPlayouts())

Every game is one entry of the registry (`envs/registry.py`, docs/games.md):
`GAMES` lists them, `spec(name)` gives an entry.

pgx's stochastic games (`CHANCE_GAMES`: 2048, backgammon) are split into
decisions and chance events for stochastic search (envs/chance_games.py):

    game = envs.make_chance_game("backgammon")
    decision_fn = game.decision_recurrent_fn(evaluators.RandomPlayouts())
    chance_fn = game.chance_recurrent_fn(evaluators.RandomPlayouts())
"""

from __future__ import annotations

import dataclasses
import functools

from envs.chance_games import CHANCE_GAMES, ChanceGame, make_chance_game
from envs.pgx_game import Evaluator, PgxGame
from envs.registry import GAMES, GameSpec, LeanLayout, spec


def make(name: str, discount: float = 1.0) -> PgxGame:
    """The game called `name`: one of `GAMES`, one of `CHANCE_GAMES` (a
    `ChanceGame`, for stochastic search: `make_chance_game`), or another pgx
    id that fits the contract (generic defaults, `registry.generic_spec`).
    The same arguments return the same object, so searches on it share
    compiled code. Raises ValueError naming the game and listing the known
    ones otherwise.

    discount: the search's discount of one move (`PgxGame.discount`), in
    (0, 1]; below 1 only for a one-player game (2048), where a leaf's value
    is then a discounted return. ValueError otherwise."""
    if isinstance(discount, bool) or not isinstance(discount, (int, float)) \
            or not 0.0 < discount <= 1.0:
        raise ValueError(f"envs.make({name!r}): discount must be a number in (0, 1], got "
                         f"{discount!r}")
    return _make(name, float(discount))


@functools.lru_cache(maxsize=None)
def _make(name: str, discount: float) -> PgxGame:
    if discount != 1.0:
        game = _make(name, 1.0)
        if game.num_players != 1:
            raise ValueError(f"envs.make({name!r}): discount {discount} is for one-player games; "
                             f"{name} has {game.num_players} players (its search discount is "
                             f"-1 between players)")
        return dataclasses.replace(game, discount=discount)
    if name in CHANCE_GAMES:
        return make_chance_game(name)
    game_spec = spec(name)
    return PgxGame(name=game_spec.name, env=game_spec.make_env(), spec=game_spec)


__all__ = ["CHANCE_GAMES", "GAMES", "ChanceGame", "Evaluator", "GameSpec", "LeanLayout",
           "PgxGame", "make", "make_chance_game", "spec"]
