"""envs.symmetry: tables are permutations, match pgx's board layout, and map
optimal tic-tac-toe moves to optimal moves (independent solver)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pgx import play2048 as pgx_2048

import envs
import tictactoe_minimax as minimax
from envs import perfect_play, registry, symmetry


SYMMETRIC = [name for name in envs.GAMES if envs.spec(name).symmetries is not None]
# Plies of the symmetric games played below (whole games where cheap).
PLIES = {"tic_tac_toe": 9, "connect_four": 42, "othello": 64, "go_9x9": 40, "go_19x19": 16,
         "hex": 40}


def test_games_with_symmetries():
    assert SYMMETRIC == ["tic_tac_toe", "connect_four", "othello", "go_9x9", "go_19x19", "hex"]
    assert registry.symmetry_tables("chess") is None and registry.num_symmetries("shogi") == 1
    assert registry.num_symmetries("go_19x19") == 8 and registry.num_symmetries("hex") == 2


@pytest.mark.parametrize("name", SYMMETRIC)
def test_tables_are_permutations_with_identity_first(name):
    tables = registry.symmetry_tables(name)
    game = envs.make(name)
    height, width, _ = game.observation_shape
    assert tables["observation"].shape[1] == height * width
    assert tables["action"].shape == (tables["observation"].shape[0], game.num_actions)
    for kind in ("observation", "action"):
        table = tables[kind]
        np.testing.assert_array_equal(table[0], np.arange(table.shape[1]))
        for row in table:
            assert sorted(row.tolist()) == list(range(table.shape[1]))


@pytest.mark.parametrize("name", SYMMETRIC)
def test_symmetric_games_through_pgx_stay_symmetric(name):
    """Every symmetry that fixes the initial position (all of them but
    Othello's quarter turns and axis mirrors, whose start is not symmetric):
    playing the image of each move from the start gives, ply after ply, the
    image of pgx's observation and legal mask, and the same rewards and
    termination. Hex rows often play the swap on the second ply."""
    game = envs.make(name)
    tables = registry.symmetry_tables(name)
    count, rows = tables["observation"].shape[0], 4
    inverse = np.argsort(tables["action"], axis=1)   # action a -> its image
    start = game.init(jax.random.key(0), rows)
    index = jnp.repeat(jnp.arange(count), rows)
    image_of_start, _ = symmetry.apply(tables, index, jnp.tile(start.observation, (count, 1, 1, 1)),
                                       jnp.tile(start.legal_action_mask, (count, 1)))
    fixed = np.asarray(jnp.all(image_of_start == jnp.tile(start.observation, (count, 1, 1, 1)),
                               axis=(1, 2, 3))).reshape(count, rows).all(axis=1)
    assert fixed[0] and fixed.sum() >= 2
    keep = np.repeat(fixed, rows)
    step = jax.jit(game.step)

    originals = jax.tree.map(lambda x: jnp.tile(x, (count,) + (1,) * (x.ndim - 1)), start)
    images = originals
    key = jax.random.key(1)
    for ply in range(PLIES[name]):
        key, action_key = jax.random.split(key)
        logits = jnp.where(originals.legal_action_mask, 0.0, -jnp.inf)
        if name == "hex":  # the swap, half the time, on the second ply
            logits = logits.at[:, -1].add(jnp.where(ply == 1, 4.0, 0.0))
        action = np.asarray(jax.random.categorical(action_key, logits))
        action = np.concatenate([action[:rows]] * count)  # every copy plays the same game
        originals = step(originals, jnp.asarray(action))
        images = step(images, jnp.asarray(inverse[np.asarray(index), action]))
        want_obs, want_legal = symmetry.apply(tables, index, originals.observation,
                                              originals.legal_action_mask)
        for got, want, what in ((images.observation, want_obs, "observation"),
                                (images.legal_action_mask, want_legal, "legal mask"),
                                (images.rewards, originals.rewards, "rewards"),
                                (images.terminated, originals.terminated, "terminated")):
            np.testing.assert_array_equal(np.asarray(got)[keep], np.asarray(want)[keep],
                                          err_msg=f"{name} ply {ply}: {what}")
        if np.asarray(originals.terminated).all():
            break


def test_2048_symmetries_turn_slides_and_tiles_alike():
    """2048's 8 symmetries, played through pgx's observation and our
    afterstate / chance split: from the image of a start board, the image
    of each slide, then the image of the tile that appeared (a cell maps by
    the board's permutation) gives, move after move, the image of pgx's
    observation and legal mask, and the same merge points and ends."""
    game = envs.make_chance_game("2048")
    tables = envs.chance_games.chance_spec("2048").symmetry_tables()
    assert tables["observation"].shape == (8, 16) and tables["action"].shape == (8, 4)
    for kind in ("observation", "action"):
        np.testing.assert_array_equal(tables[kind][0], np.arange(tables[kind].shape[1]))
        assert all(sorted(row.tolist()) == list(range(tables[kind].shape[1]))
                   for row in tables[kind])
    count, rows = 8, 6
    index = jnp.repeat(jnp.arange(count), rows)
    perm = np.asarray(tables["observation"])[np.asarray(index)]       # [N, 16] gathers
    new_cell = np.argsort(perm, axis=1)                                # old cell -> new cell
    inverse = np.argsort(tables["action"], axis=1)                     # old action -> image
    start = game.init(jax.random.key(0), rows)
    originals = jax.tree.map(lambda x: jnp.tile(x, (count,) + (1,) * (x.ndim - 1)), start)
    board = jnp.take_along_axis(originals._board, jnp.asarray(perm), axis=1)
    images = originals.replace(_board=board, legal_action_mask=jax.vmap(
        lambda b: pgx_2048._legal_action_mask(b.reshape(4, 4)))(board))
    images = images.replace(observation=jax.vmap(game.env.observe)(images))
    afterstate, apply_outcome = jax.jit(game.afterstate), jax.jit(game.apply_outcome)
    probabilities = jax.jit(game.chance_probabilities)
    key = jax.random.key(1)
    for move in range(60):
        want_obs, want_legal = symmetry.apply(tables, index, originals.observation,
                                              originals.legal_action_mask)
        np.testing.assert_array_equal(images.observation, want_obs, err_msg=f"move {move}")
        np.testing.assert_array_equal(images.legal_action_mask, want_legal)
        np.testing.assert_array_equal(images.rewards, originals.rewards)
        np.testing.assert_array_equal(images.terminated, originals.terminated)
        key, action_key, tile_key = jax.random.split(key, 3)
        logits = jnp.where(originals.legal_action_mask[:rows], 0.0, -jnp.inf)
        action = np.tile(np.asarray(jax.random.categorical(action_key, logits)), count)
        after = afterstate(originals, jnp.asarray(action))
        image_after = afterstate(images, jnp.asarray(inverse[np.asarray(index), action]))
        np.testing.assert_array_equal(
            image_after.state._board,
            np.take_along_axis(np.asarray(after.state._board), perm, axis=1))
        np.testing.assert_array_equal(image_after.state.rewards, after.state.rewards)
        outcome = np.tile(np.asarray(jax.random.categorical(
            tile_key, jnp.log(probabilities(after)[:rows]))), count)
        cell, tile = outcome // 2, outcome % 2
        image_outcome = 2 * new_cell[np.arange(count * rows), cell] + tile
        originals = apply_outcome(after, jnp.asarray(outcome))
        images = apply_outcome(image_after, jnp.asarray(image_outcome))
    assert not np.asarray(originals.terminated).all()  # boards past the opening


def test_map_actions_inverts_the_action_gather():
    """`map_actions` gives the id at which `apply` puts each old action's
    entry, for every game's tables."""
    for tables in (registry.symmetry_tables("tic_tac_toe"), registry.symmetry_tables("hex"),
                   envs.chance_games.chance_spec("2048").symmetry_tables()):
        count, num_actions = tables["action"].shape
        index = jnp.repeat(jnp.arange(count), num_actions)
        old = jnp.tile(jnp.arange(num_actions), count)
        one_hot = jax.nn.one_hot(old, num_actions)
        cells = tables["observation"].shape[1]
        _, moved = symmetry.apply(tables, index, jnp.zeros((count * num_actions, cells, 1, 1)),
                                  one_hot)
        np.testing.assert_array_equal(symmetry.map_actions(tables, index, old[:, None])[:, 0],
                                      jnp.argmax(moved, axis=1))


def test_tic_tac_toe_symmetries_preserve_optimal_moves():
    positions = perfect_play.reachable_positions()
    tables = registry.symmetry_tables("tic_tac_toe")
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
