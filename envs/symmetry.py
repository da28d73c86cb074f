"""Board symmetries of the pgx games, as permutation tables (data augmentation).

A symmetry maps a position to an equivalent one: the game value is the same
and the move on square s becomes the move on square g(s). For a batch of
training samples, each with its own symmetry index:

    tables = envs.spec("tic_tac_toe").symmetry_tables()   # None: none
    obs, policy = symmetry.apply(tables, index, obs, policy)

(`envs.registry.symmetry_tables(name)` is the same lookup by name.) Each
game's registry entry (envs/registry.py) names its builder below (this
module imports nothing from the registry):
`dihedral` (tic-tac-toe, Othello, Go), `mirror_columns` (Connect Four),
`rotation_180` (Hex), `dihedral_slides` (2048). Layout assumed (checked in tests by playing symmetric
games through pgx and comparing observations, legal masks and results):
observations are [H, W, C] with square (r, c) at row r, column c, and the
board actions are `r * W + c` (a trailing pass or swap action maps to itself),
or the column `c` (Connect Four), or a direction every tile slides (2048).

Tables: `observation[S, H * W]` and `action[S, A]` int32, so that the
transformed arrays are `new[i] = old[table[i]]` (a gather). Symmetry 0 is the
identity.
"""

from __future__ import annotations

from typing import Dict

import jax
import jax.numpy as jnp
import numpy as np


def _dihedral_perms(size: int) -> np.ndarray:
    """[8, size * size] gathers for the 8 rotations / reflections of a square."""
    index = np.arange(size * size).reshape(size, size)
    perms = []
    for flip in (False, True):
        board = index.T if flip else index
        for turns in range(4):
            perms.append(np.rot90(board, turns).reshape(-1))
    return np.stack(perms).astype(np.int32)


def dihedral(size: int, extra_actions: int = 0) -> Dict[str, np.ndarray]:
    """The 8 rotations / reflections of a size x size board whose actions are
    its squares row-major, then `extra_actions` actions (pass) that map to
    themselves (tic-tac-toe, Othello, Go)."""
    perms = _dihedral_perms(size)
    extra = np.broadcast_to(np.arange(size * size, size * size + extra_actions, dtype=np.int32),
                            (8, extra_actions))
    return dict(observation=perms, action=np.concatenate([perms, extra], axis=1))


# The moves of 2048 as the (row, column) step every tile takes (pgx's ids:
# slide left, up, right, down).
SLIDES = ((0, -1), (-1, 0), (0, 1), (1, 0))


def dihedral_slides(size: int, directions=SLIDES) -> Dict[str, np.ndarray]:
    """The 8 rotations / reflections of a size x size board whose actions
    slide every tile one way (`directions`, (row, column) steps): a
    symmetry moves the board's cells and turns each slide into another
    (2048: a quarter turn makes "left" "down")."""
    if size < 3:
        raise ValueError(f"size must be at least 3, got {size}")
    perms = _dihedral_perms(size)
    directions = [tuple(d) for d in directions]
    actions = []
    for perm in perms:
        new_cell = np.argsort(perm)            # the old cell j is now at new_cell[j]

        def moved(step):
            start = 1 * size + 1               # (1, 1): one step away stays on the board
            end = (1 + step[0]) * size + (1 + step[1])
            (r0, c0), (r1, c1) = divmod(int(new_cell[start]), size), divmod(int(new_cell[end]),
                                                                             size)
            return (r1 - r0, c1 - c0)

        image = [moved(step) for step in directions]     # old action a -> direction image[a]
        # The gather: new action b is the old action whose image is b's direction.
        actions.append([image.index(step) for step in directions])
    return dict(observation=perms, action=np.asarray(actions, np.int32))


def mirror_columns(rows: int, columns: int) -> Dict[str, np.ndarray]:
    """Identity and the left-right mirror of a board whose actions are its
    columns (Connect Four)."""
    index = np.arange(rows * columns).reshape(rows, columns)
    observation = np.stack([index.reshape(-1), index[:, ::-1].reshape(-1)]).astype(np.int32)
    action = np.stack([np.arange(columns), np.arange(columns)[::-1]]).astype(np.int32)
    return dict(observation=observation, action=action)


def rotation_180(size: int, extra_actions: int = 0) -> Dict[str, np.ndarray]:
    """Identity and the half turn of a size x size board whose actions are
    its squares row-major, then `extra_actions` that map to themselves (Hex,
    whose swap move commutes with the half turn)."""
    cells = np.arange(size * size, dtype=np.int32)
    observation = np.stack([cells, cells[::-1]])
    extra = np.broadcast_to(np.arange(size * size, size * size + extra_actions, dtype=np.int32),
                            (2, extra_actions))
    return dict(observation=observation, action=np.concatenate([observation, extra], axis=1))


def apply(sym_tables: Dict[str, np.ndarray], index: jax.Array, observation: jax.Array,
          policy: jax.Array):
    """Transforms each sample by its own symmetry.

    Args:
      sym_tables: the game's tables (`envs.spec(name).symmetry_tables()`).
      index: [N] int, the symmetry of each sample (0 = identity).
      observation: [N, H, W, C]. policy: [N, A] (any per-action array).
    Returns:
      (observation [N, H, W, C], policy [N, A]) transformed.
    """
    n, height, width, channels = observation.shape
    obs_perm = jnp.asarray(sym_tables["observation"])[index]        # [N, H*W]
    act_perm = jnp.asarray(sym_tables["action"])[index]             # [N, A]
    flat = observation.reshape(n, height * width, channels)
    flat = jnp.take_along_axis(flat, obs_perm[:, :, None], axis=1)
    return flat.reshape(observation.shape), jnp.take_along_axis(policy, act_perm, axis=1)


def map_actions(sym_tables: Dict[str, np.ndarray], index: jax.Array,
                actions: jax.Array) -> jax.Array:
    """The ids under each sample's symmetry of the actions it played.

    Args:
      sym_tables: the game's tables. index: [N] int, each sample's symmetry.
      actions: [N, ...] int, action ids of the original positions.
    Returns:
      [N, ...] int32: the same moves in the transformed positions (the
      inverse of the action gather: `apply`'s policy has the old action's
      probability at the new id).
    """
    inverse = jnp.argsort(jnp.asarray(sym_tables["action"]), axis=1).astype(jnp.int32)[index]
    flat = actions.reshape(actions.shape[0], -1).astype(jnp.int32)
    return jnp.take_along_axis(inverse, flat, axis=1).reshape(actions.shape)

