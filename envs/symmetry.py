"""Board symmetries of the pgx games, as permutation tables (data augmentation).

A symmetry maps a position to an equivalent one: the game value is the same
and the move on square s becomes the move on square g(s). For a batch of
training samples, each with its own symmetry index:

    tables = symmetry.tables("tic_tac_toe")              # None if the game has none
    obs, policy = symmetry.apply(tables, index, obs, policy)

Layout assumed (checked in tests against pgx's legal masks): observations are
[H, W, C] with square (r, c) at row r, column c, and the board actions are
`r * W + c` (tic-tac-toe, Othello, Go; a trailing pass action maps to itself),
or the column `c` (Connect Four).

Tables: `observation[S, H * W]` and `action[S, A]` int32, so that the
transformed arrays are `new[i] = old[table[i]]` (a gather). Symmetry 0 is the
identity.
"""

from __future__ import annotations

import functools
from typing import Dict, Optional

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


@functools.lru_cache(maxsize=None)
def tables(name: str) -> Optional[Dict[str, np.ndarray]]:
    """Permutation tables of game `name`, or None when it has no symmetry
    used here (chess: castling and pawn direction break them)."""
    if name == "tic_tac_toe":
        perms = _dihedral_perms(3)
        return dict(observation=perms, action=perms)
    if name in ("othello", "go_9x9"):
        size = 8 if name == "othello" else 9
        perms = _dihedral_perms(size)
        passes = np.full((8, 1), size * size, np.int32)
        return dict(observation=perms, action=np.concatenate([perms, passes], axis=1))
    if name == "connect_four":
        index = np.arange(6 * 7).reshape(6, 7)
        observation = np.stack([index.reshape(-1), index[:, ::-1].reshape(-1)]).astype(np.int32)
        action = np.stack([np.arange(7), np.arange(7)[::-1]]).astype(np.int32)
        return dict(observation=observation, action=action)
    return None


def apply(sym_tables: Dict[str, np.ndarray], index: jax.Array, observation: jax.Array,
          policy: jax.Array):
    """Transforms each sample by its own symmetry.

    Args:
      sym_tables: from `tables`.
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


def num_symmetries(name: str) -> int:
    t = tables(name)
    return 1 if t is None else int(t["observation"].shape[0])
