"""envs.symmetry: tables are permutations, match pgx's board layout, and map
optimal tic-tac-toe moves to optimal moves (independent solver)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
import tictactoe_minimax as minimax
from envs import perfect_play, symmetry


@pytest.mark.parametrize("name", ["tic_tac_toe", "connect_four", "othello", "go_9x9"])
def test_tables_are_permutations_with_identity_first(name):
    tables = symmetry.tables(name)
    for kind in ("observation", "action"):
        table = tables[kind]
        np.testing.assert_array_equal(table[0], np.arange(table.shape[1]))
        for row in table:
            assert sorted(row.tolist()) == list(range(table.shape[1]))
    assert symmetry.tables("chess") is None


@pytest.mark.parametrize("name", ["tic_tac_toe", "connect_four", "othello", "go_9x9"])
def test_action_layout_matches_observation(name):
    """A legal board move is on an empty square (the column's top square for
    Connect Four), so actions index the observation's squares row-major."""
    game = envs.make(name)
    key = jax.random.key(1)
    states = game.init(key, 32)
    step = jax.jit(game.step)
    plies = {"tic_tac_toe": 4, "connect_four": 12, "othello": 12, "go_9x9": 30}[name]
    for _ in range(plies):
        key, k = jax.random.split(key)
        legal = game.legal_actions(states)
        action = jax.random.categorical(k, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)
        states = step(states, action, k)
    obs = np.asarray(states.observation)
    stones = obs[..., :2].any(-1)  # [B, H, W]: planes 0/1 are the two sides' stones
    legal = np.asarray(game.legal_actions(states))
    live = ~np.asarray(game.is_terminal(states))
    if name == "connect_four":
        np.testing.assert_array_equal(legal[live], ~stones[live][:, 0, :])
        return
    board = legal[:, : stones.shape[1] * stones.shape[2]]
    assert not (board[live] & stones.reshape(len(obs), -1)[live]).any()
    assert board[live].any()


def test_tic_tac_toe_symmetries_preserve_optimal_moves():
    positions = perfect_play.reachable_positions()
    tables = symmetry.tables("tic_tac_toe")
    index = {tuple(int(v) for v in b): i for i, b in enumerate(positions["boards"])}
    for s in range(8):
        obs, optimal = symmetry.apply(tables, jnp.full((len(index),), s),
                                      jnp.asarray(positions["observations"]),
                                      jnp.asarray(positions["optimal"]))
        obs, optimal = np.asarray(obs), np.asarray(optimal)
        for row in range(0, len(index), 7):
            mover = obs[row][..., 0].reshape(-1)
            other = obs[row][..., 1].reshape(-1)
            x_to_move = mover.sum() == other.sum()
            board = tuple(int(v) for v in np.where(mover, 1 if x_to_move else 2,
                                                   np.where(other, 2 if x_to_move else 1, 0)))
            assert board in index  # the image is a reachable position
            assert sorted(np.flatnonzero(optimal[row]).tolist()) == \
                minimax.optimal_moves(board), (s, board)
