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
`rotation_180` (Hex). Layout assumed (checked in tests by playing symmetric
games through pgx and comparing observations, legal masks and results):
observations are [H, W, C] with square (r, c) at row r, column c, and the
board actions are `r * W + c` (a trailing pass or swap action maps to itself),
or the column `c` (Connect Four).

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

