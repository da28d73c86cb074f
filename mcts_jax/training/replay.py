"""The device replay buffer of self-play samples.

Samples are kept in a ring of T time slots by B game rows, `[T, B, ...]`:
self-play writes one slot per move (one sample per game row), so a write is a
single `dynamic_update_slice`. A sample is *pending* until its game ends; then
every pending sample of that row gets its value target, the final result for
the player who was to move at that sample, and becomes *ready*. Only ready
samples are drawn for training. A game longer than T moves loses its oldest
samples (overwritten before they are ready), nothing else.

Value targets mix the game's result with the search: a pending sample keeps
the root value of the search that made it, and when its game ends its
target becomes `(1 - search_value_weight) * z + search_value_weight * v`
(z the final result, v that search value, both for the player to move at
the sample; weight 0, the default, is AlphaZero's target z alone). A search
value is a lower-variance but biased estimate, the final result an unbiased
but noisy one; mixing them helps most when games are few.

On a device mesh (`mcts_jax.sharding`) the ring is split along its game-row
axis B: each device holds the samples of its own B / D games, and self-play
writes them with no communication. `sample` draws the same indices as on one
device and hands each device its share of the minibatch (see there).
"""

from __future__ import annotations

from typing import Optional

import chex
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec

from mcts_jax import sharding

EMPTY, PENDING, READY = 0, 1, 2


@chex.dataclass(frozen=True)
class ReplayBuffer:
    """Self-play samples, ring of T slots x B game rows.

    observation: [T, B, *obs_shape], pgx observation (player to move's view).
    policy: [T, B, A] float32, the search's policy target (sums to 1).
    player: [T, B] int32, pgx id of the player to move at the sample.
    value: [T, B] float32, for `player`: while PENDING the search's root
      value (or 0), once READY the value target (the final result +1 / 0 /
      -1, mixed with that search value, see `finish_games`).
    status: [T, B] int8, EMPTY, PENDING (game not over) or READY.
    cursor: [] int32, the next slot to write.
    """

    observation: chex.Array
    policy: chex.Array
    player: chex.Array
    value: chex.Array
    status: chex.Array
    cursor: chex.Array

    @property
    def capacity(self) -> int:
        return self.status.shape[0] * self.status.shape[1]


def init(num_slots: int, batch_size: int, observation_shape, observation_dtype,
         num_actions: int) -> ReplayBuffer:
    """An empty buffer of `num_slots` x `batch_size` samples."""
    shape = (num_slots, batch_size)
    return ReplayBuffer(
        observation=jnp.zeros(shape + tuple(observation_shape), observation_dtype),
        policy=jnp.zeros(shape + (num_actions,), jnp.float32),
        player=jnp.zeros(shape, jnp.int32),
        value=jnp.zeros(shape, jnp.float32),
        status=jnp.zeros(shape, jnp.int8),
        cursor=jnp.zeros((), jnp.int32),
    )


def add(buffer: ReplayBuffer, observation: chex.Array, policy: chex.Array,
        player: chex.Array, record: chex.Array | None = None,
        search_value: chex.Array | None = None) -> ReplayBuffer:
    """Writes one pending sample per row (observation [B, ...], policy [B, A],
    player [B]) into the slot at the cursor and advances it. Rows where
    record [B] is False leave their slot empty (never drawn). search_value
    [B] float32: the search's root value for `player`, kept for
    `finish_games` (None: 0)."""
    if search_value is None:
        search_value = jnp.zeros(player.shape, jnp.float32)
    status = jnp.full(player.shape, PENDING, jnp.int8)
    if record is not None:
        status = jnp.where(record, status, EMPTY).astype(jnp.int8)
    def put(array, row):
        return jax.lax.dynamic_update_index_in_dim(array, row.astype(array.dtype),
                                                   buffer.cursor, axis=0)

    num_slots = buffer.status.shape[0]
    return buffer.replace(
        observation=put(buffer.observation, observation),
        policy=put(buffer.policy, policy),
        player=put(buffer.player, player),
        value=put(buffer.value, search_value),
        status=put(buffer.status, status),
        cursor=(buffer.cursor + 1) % num_slots,
    )


def finish_games(buffer: ReplayBuffer, done: chex.Array, rewards: chex.Array,
                 search_value_weight: float = 0.0) -> ReplayBuffer:
    """Rows with done [B] True ended: their pending samples get the value
    target `(1 - w) * rewards[b, player] + w * search value` (rewards [B, 2],
    the final results per player id, pgx's `state.rewards` after the last
    move; w = search_value_weight, a Python float in [0, 1]) and become
    ready."""
    final = jnp.take_along_axis(jnp.broadcast_to(rewards[None], buffer.player.shape + (2,)),
                                buffer.player[..., None], axis=-1)[..., 0]
    if search_value_weight:
        final = (1.0 - search_value_weight) * final + search_value_weight * buffer.value
    resolve = (buffer.status == PENDING) & done[None, :]
    return buffer.replace(value=jnp.where(resolve, final, buffer.value),
                          status=jnp.where(resolve, READY, buffer.status).astype(jnp.int8))


def num_ready(buffer: ReplayBuffer) -> chex.Array:
    """[] int32 samples that can be drawn."""
    return jnp.sum(buffer.status == READY, dtype=jnp.int32)


def sample(buffer: ReplayBuffer, rng_key: chex.PRNGKey, batch_size: int,
           mesh: Optional[Mesh] = None):
    """`batch_size` ready samples, uniformly with replacement.

    Returns (observation [n, ...], policy [n, A], value [n]); the value is for
    the player to move in the observation. Requires num_ready > 0.

    mesh: None (one device), or the mesh the buffer is split over (along B).
    The drawn indices are the same either way (drawn from the replicated
    key); each device then gathers the chosen samples it holds, and a
    reduce-scatter hands device d rows [d n / D, (d + 1) n / D) of the
    minibatch, so the result is split along n over the mesh and equals the
    one-device minibatch exactly. n must be a multiple of D.
    """
    ready = (buffer.status == READY).reshape(-1)
    probabilities = ready / jnp.maximum(jnp.sum(ready), 1)
    index = jax.random.choice(rng_key, ready.shape[0], (batch_size,), p=probabilities)
    arrays = (buffer.observation, buffer.policy, buffer.value)
    if mesh is None:
        flat = lambda x: x.reshape((-1,) + x.shape[2:])[index]  # noqa: E731
        return tuple(flat(x) for x in arrays)
    return _gather_sharded(arrays, index, mesh)


def _gather_sharded(arrays, index, mesh: Mesh):
    """Rows `index` [n] (flat t * B + b) of `arrays` [T, B, ...] split along
    B over `mesh`: each device picks the rows it holds (zeros elsewhere) and
    `psum_scatter` sums them (x + 0 = x: exact) into n / D rows per device."""
    num_rows = arrays[0].shape[1]
    sharding.check_divisible("the training batch size (--train-batch-size)", index.shape[0],
                             mesh)

    def local(index, *local_arrays):
        rows_here = local_arrays[0].shape[1]
        first = jax.lax.axis_index(sharding.DATA_AXIS) * rows_here
        slot, row = index // num_rows, index % num_rows - first
        mine = (row >= 0) & (row < rows_here)
        row = jnp.clip(row, 0, rows_here - 1)
        out = []
        for x in local_arrays:
            picked = x[slot, row]
            summable = picked.dtype if jnp.issubdtype(picked.dtype, jnp.number) else jnp.int32
            picked = jnp.where(mine.reshape((-1,) + (1,) * (picked.ndim - 1)),
                               picked.astype(summable), 0)
            total = jax.lax.psum_scatter(picked, sharding.DATA_AXIS, scatter_dimension=0,
                                         tiled=True)
            out.append(total.astype(x.dtype))
        return tuple(out)

    split_rows = PartitionSpec(None, sharding.DATA_AXIS)
    return jax.shard_map(local, mesh=mesh,
                         in_specs=(PartitionSpec(),) + (split_rows,) * len(arrays),
                         out_specs=(PartitionSpec(sharding.DATA_AXIS),) * len(arrays))(
        index, *arrays)
