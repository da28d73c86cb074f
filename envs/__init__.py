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

import functools

from envs.chance_games import CHANCE_GAMES, ChanceGame, make_chance_game
from envs.pgx_game import Evaluator, PgxGame
from envs.registry import GAMES, GameSpec, LeanLayout, spec


@functools.lru_cache(maxsize=None)
def make(name: str) -> PgxGame:
    """The game called `name`: one of `GAMES`, one of `CHANCE_GAMES` (a
    `ChanceGame`, for stochastic search: `make_chance_game`), or another pgx
    id that fits the contract (generic defaults, `registry.generic_spec`).
    The same name returns the same object, so searches on it share compiled
    code. Raises ValueError naming the game and listing the known ones
    otherwise."""
    if name in CHANCE_GAMES:
        return make_chance_game(name)
    game_spec = spec(name)
    return PgxGame(name=game_spec.name, env=game_spec.make_env(), spec=game_spec)


__all__ = ["CHANCE_GAMES", "GAMES", "ChanceGame", "Evaluator", "GameSpec", "LeanLayout",
           "PgxGame", "make", "make_chance_game", "spec"]
