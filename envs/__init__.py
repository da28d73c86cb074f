"""pgx games adapted to the mcts_jax search contract.

    game = envs.make("tic_tac_toe")
    states = game.init(jax.random.key(0), batch_size=8)
    root, invalid = game.root(None, key, states, evaluators.RandomPlayouts())
    recurrent_fn = game.recurrent_fn(evaluators.RandomPlayouts())
"""

from __future__ import annotations

import functools

import pgx

from envs.pgx_game import Evaluator, PgxGame

GAMES = ("tic_tac_toe", "connect_four", "othello", "go_9x9", "chess")


@functools.lru_cache(maxsize=None)
def make(name: str) -> PgxGame:
    """The game called `name`, one of `GAMES`. The same name returns the same
    object, so searches on it share compiled code."""
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; known games: {', '.join(GAMES)}")
    return PgxGame(name=name, env=pgx.make(name))


__all__ = ["GAMES", "Evaluator", "PgxGame", "make"]
