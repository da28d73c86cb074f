"""envs.perfect_play (the library's tic-tac-toe solver) against the independent
solver of tests/tictactoe_minimax.py, and its lookups on real pgx states."""

import random

import jax
import jax.numpy as jnp
import numpy as np

import envs
import tictactoe_minimax as minimax
from envs import perfect_play
from training import arena

GAME = envs.make("tic_tac_toe")


def test_values_and_optimal_moves_agree_with_independent_solver():
    positions = perfect_play.reachable_positions()
    boards = [tuple(int(v) for v in b) for b in positions["boards"]]
    assert len(boards) == len(minimax.all_reachable_positions()) == 4520
    assert sorted(boards) == sorted(minimax.all_reachable_positions())
    for board, value, optimal, legal in zip(boards, positions["value"], positions["optimal"],
                                            positions["legal"]):
        assert int(value) == minimax.value(board), board
        assert sorted(np.flatnonzero(optimal).tolist()) == minimax.optimal_moves(board), board
        assert sorted(np.flatnonzero(legal).tolist()) == minimax.legal_moves(board), board


def _random_states(seed, batch=64, plies=None):
    """pgx states after random legal moves (some finished), and the boards."""
    key = jax.random.key(seed)
    states = GAME.init(key, batch)
    rng = np.random.default_rng(seed)
    stop = rng.integers(0, 9, batch) if plies is None else np.full(batch, plies)
    step = jax.jit(GAME.step)
    for ply in range(9):
        legal = np.asarray(states.legal_action_mask)
        moves = np.array([rng.choice(np.flatnonzero(row)) for row in legal])
        advanced = step(states, jnp.asarray(moves, jnp.int32))
        keep = (stop <= ply) | np.asarray(states.terminated)
        states = jax.tree.map(lambda a, b: jnp.where(
            jnp.asarray(keep).reshape((-1,) + (1,) * (a.ndim - 1)), a, b), states, advanced)
    return states


def test_lookups_and_observations_on_pgx_states():
    states = _random_states(0, batch=128)
    boards = minimax.board_from_pgx(states)
    values = np.asarray(perfect_play.value(states))
    optimal = np.asarray(perfect_play.optimal_moves(states))
    positions = perfect_play.reachable_positions()
    index = {tuple(int(v) for v in b): i for i, b in enumerate(positions["boards"])}
    for row, board in enumerate(boards):
        if minimax.is_terminal(board):
            assert not optimal[row].any()
            continue
        assert values[row] == minimax.value(board)
        assert sorted(np.flatnonzero(optimal[row]).tolist()) == minimax.optimal_moves(board)
        # The observation built by the solver is pgx's own.
        np.testing.assert_array_equal(positions["observations"][index[board]],
                                      np.asarray(states.observation[row]))


def test_perfect_player_never_loses_and_draws_itself():
    result = arena.play_match(GAME, perfect_play.PerfectPlayer(), None, arena.RandomPlayer(),
                              None, jax.random.key(3), 64)
    assert result.losses == 0 and result.wins > 32
    result = arena.play_match(GAME, perfect_play.PerfectPlayer(), None,
                              perfect_play.PerfectPlayer(), None, jax.random.key(4), 32)
    assert (result.wins, result.draws, result.losses) == (0, 32, 0)


def test_policy_optimality_counts_argmax_moves():
    positions = perfect_play.reachable_positions()
    rng = random.Random(0)
    perfect_logits = positions["optimal"].astype(np.float32)
    assert perfect_play.policy_optimality(perfect_logits, positions) == 1.0
    # A policy that prefers a non-optimal legal move wherever there is one.
    bad = np.where(positions["legal"] & ~positions["optimal"], 1.0, 0.0)
    has_bad = bad.any(axis=1)
    expected = 1.0 - has_bad.mean()
    assert abs(perfect_play.policy_optimality(bad, positions) - expected) < 1e-9
    assert rng is not None


def test_reachable_states_are_the_reachable_positions_as_pgx_states():
    states = perfect_play.reachable_states()
    positions = perfect_play.reachable_positions()
    assert states.current_player.shape == (perfect_play.num_reachable_positions(),)
    assert not np.asarray(states.terminated).any()
    np.testing.assert_array_equal(minimax.board_from_pgx(states), positions["boards"])
    np.testing.assert_array_equal(np.asarray(states.legal_action_mask), positions["legal"])
    np.testing.assert_array_equal(np.asarray(states.observation), positions["observations"])
    np.testing.assert_array_equal(np.asarray(perfect_play.optimal_moves(states)),
                                  positions["optimal"])
    # They are real pgx states: stepping one finishes or continues the game.
    after = GAME.step(states, jnp.argmax(states.legal_action_mask, axis=1).astype(jnp.int32))
    assert np.asarray(after.terminated).any() and not np.asarray(after.terminated).all()
