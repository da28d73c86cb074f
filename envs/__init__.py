"""pgx games adapted to the mcts_jax search contract.

    game = envs.make("tic_tac_toe")
    states = game.init(jax.random.key(0), batch_size=8)
    root, invalid = game.root(None, key, states, evaluators.RandomPlayouts())
    recurrent_fn = game.recurrent_fn(evaluators.RandomPlayouts())

Every game is one entry of the registry (`envs/registry.py`, docs/games.md):
`GAMES` lists them, `spec(name)` gives an entry.
"""

from __future__ import annotations

import functools

from envs.pgx_game import Evaluator, PgxGame
from envs.registry import GAMES, GameSpec, LeanLayout, spec


@functools.lru_cache(maxsize=None)
def make(name: str) -> PgxGame:
    """The game called `name`: one of `GAMES`, or another pgx id that fits
    the contract (generic defaults, `registry.generic_spec`). The same name
    returns the same object, so searches on it share compiled code. Raises
    ValueError naming the game and listing the known ones otherwise."""
    game_spec = spec(name)
    return PgxGame(name=game_spec.name, env=game_spec.make_env(), spec=game_spec)


__all__ = ["GAMES", "Evaluator", "GameSpec", "LeanLayout", "PgxGame", "make", "spec"]
