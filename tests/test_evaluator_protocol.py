"""The leaf evaluators read a game only through `evaluators.Game`, the core's
own protocol: they run on a game written here in plain JAX (no `envs`, no
pgx), and their values match exact depth-limited negamax computed in Python."""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mcts_jax import evaluators

TAKE = 3  # a move takes 1..TAKE stones; whoever takes the last stone wins


@chex.dataclass(frozen=True)
class NimStates:
    pile: chex.Array  # [B] int32 stones left
    player: chex.Array  # [B] int32, 0 or 1, to move
    winner: chex.Array  # [B] int32, -1 while the game goes on
    just_ended: chex.Array  # [B] bool, the move into this state took the last stone


@dataclasses.dataclass(frozen=True)
class Nim:
    """Single-pile Nim, batched: action a takes a + 1 stones."""

    num_actions: int = TAKE

    def start(self, piles) -> NimStates:
        piles = jnp.asarray(piles, jnp.int32)
        return NimStates(pile=piles, player=jnp.zeros_like(piles),
                         winner=jnp.full_like(piles, -1), just_ended=piles < 0)

    def step(self, states, actions, rng_key):
        """One move; a finished game stays as it is and pays nothing (as pgx's)."""
        del rng_key
        over = states.winner >= 0
        pile = jnp.maximum(states.pile - (actions.astype(jnp.int32) + 1), 0)
        ended = (pile == 0) & ~over
        return NimStates(pile=jnp.where(over, states.pile, pile),
                         player=jnp.where(over, states.player, 1 - states.player),
                         winner=jnp.where(ended, states.player, states.winner),
                         just_ended=ended)

    def legal_actions(self, states):
        return (jnp.arange(TAKE)[None, :] < states.pile[:, None]) & (states.winner[:, None] < 0)

    def current_player(self, states):
        return states.player

    def is_terminal(self, states):
        return states.winner >= 0

    def reward_for(self, states, player):
        return jnp.where(states.just_ended, jnp.where(states.winner == player, 1.0, -1.0), 0.0)

    def heuristic(self, states):
        return jnp.zeros(states.pile.shape, jnp.float32)


def negamax(pile: int, depth: int) -> float:
    """Exact depth-limited negamax value of a pile for its mover (0 at the horizon)."""
    if depth == 0:
        return 0.0
    return max(1.0 if take == pile else -negamax(pile - take, depth - 1)
               for take in range(1, min(TAKE, pile) + 1))


def test_the_envs_games_and_a_plain_jax_game_implement_the_protocol():
    import envs

    assert isinstance(Nim(), evaluators.Game)
    assert isinstance(envs.make("tic_tac_toe"), evaluators.Game)
    assert not isinstance(object(), evaluators.Game)


@pytest.mark.parametrize("depth", [1, 2, 3, 5])
def test_minimax_on_a_game_outside_envs_matches_exact_negamax(depth):
    piles = np.arange(1, 9)
    game = Nim()
    evaluator = evaluators.Minimax(depth=depth, prior_temperature=0.5)
    logits, value = jax.jit(functools.partial(evaluator, None), static_argnums=1)(
        jax.random.key(0), game, game.start(piles))
    expected = [negamax(int(p), depth) for p in piles]
    np.testing.assert_allclose(np.asarray(value), expected)
    # Priors: softmax(q / 0.5) over the legal moves; q of taking t stones.
    for row, pile in enumerate(piles):
        q = [1.0 if t == pile else -negamax(int(pile) - t, depth - 1)
             for t in range(1, min(TAKE, int(pile)) + 1)]
        np.testing.assert_allclose(np.asarray(logits[row, :len(q)]), np.asarray(q) / 0.5,
                                   rtol=1e-6)


def test_random_playouts_on_a_game_outside_envs():
    game = Nim()
    states = game.start([1, 2, 4, 5])
    _, value = evaluators.RandomPlayouts(num_playouts=4000)(None, jax.random.key(1), game,
                                                           states)
    # Uniform random play from a pile: P(mover takes the last stone), by recursion.
    win = {0: 0.0}
    for pile in range(1, 6):
        moves = range(1, min(TAKE, pile) + 1)
        win[pile] = sum(1.0 if t == pile else 1.0 - win[pile - t] for t in moves) / len(moves)
    expected = [2 * win[p] - 1 for p in (1, 2, 4, 5)]
    np.testing.assert_allclose(np.asarray(value), expected, atol=0.05)
    logits, zero = evaluators.Uniform()(None, None, game, states)
    assert logits.shape == (4, TAKE) and np.all(np.asarray(zero) == 0.0)
