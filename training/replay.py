"""The device replay buffer of self-play samples.

Samples are kept in a ring of T time slots by B game rows, `[T, B, ...]`:
self-play writes one slot per move (one sample per game row), so a write is a
single `dynamic_update_slice`. A sample is *pending* until its game ends;
meanwhile every reward its row receives is credited to it (for the player who
was to move at that sample), and when the game ends it becomes *ready* with
its value target complete: the sum of the rewards from its move to the end
of the game, for its player (discounted by the game's one-move discount in
a one-player game that has one, `envs.make(name, discount=)`). For the
board games, which reward only the last move, that is the final result;
for 2048 it is the points still to come; for backgammon the +-1 to +-3 of
the game. Only ready samples are drawn for
training. A game longer than T moves loses its oldest samples (overwritten
before they are ready), nothing else. Values and targets are on the game's
reward scale (the learner divides by the network's `value_scale`).

Value targets mix the game's returns with the search: `(1 -
search_value_weight) * z + search_value_weight * v` (z the rewards from the
sample's move to the end, v the root value of the search that made the
sample, both for the player to move at the sample; weight 0, the default, is
AlphaZero's target z alone). A search value is a lower-variance but biased
estimate, the returns an unbiased but noisy one; mixing them helps most when
games are few.

On a device mesh (`mcts_jax.sharding`) the ring is split along its game-row
axis B: each device holds the samples of its own B / D games, and self-play
writes them with no communication. `sample` draws the same indices as on one
device and hands each device its share of the minibatch (see there).
"""

from __future__ import annotations

from typing import Optional, Tuple

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
    value: [T, B] float32, for `player`, on the game's reward scale: while
      PENDING the part of the target known so far (the weighted search
      value plus the weighted rewards credited since), once READY the value
      target (see `credit_rewards`).
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
        search_value: chex.Array | None = None,
        search_value_weight: float = 0.0) -> ReplayBuffer:
    """Writes one pending sample per row (observation [B, ...], policy [B, A],
    player [B]) into the slot at the cursor and advances it. Rows where
    record [B] is False leave their slot empty (never drawn). search_value
    [B] float32: the search's root value for `player` (None: 0); the sample
    starts its value target with `search_value_weight` (w, a Python float in
    [0, 1]) times it."""
    if search_value is None or not search_value_weight:
        start = jnp.zeros(player.shape, jnp.float32)
    else:
        start = search_value_weight * search_value.astype(jnp.float32)
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
        value=put(buffer.value, start),
        status=put(buffer.status, status),
        cursor=(buffer.cursor + 1) % num_slots,
    )


def credit_rewards(buffer: ReplayBuffer, rewards: chex.Array, done: chex.Array,
                   search_value_weight: float = 0.0, discount: float = 1.0) -> ReplayBuffer:
    """One move of every row was played: its rewards go to the row's pending
    samples, and rows whose game ended make theirs ready.

    rewards: [B, num_players] float32, pgx's `state.rewards` after the move
      (each player's reward for it); every pending sample of row b adds
      `(1 - w) * discount ** age * rewards[b, its player]` (w =
      search_value_weight, the Python float given to `add`; age, the moves
      played since the sample's own, 0 for the move just made: every move
      writes one slot, so it is the slot's distance behind the cursor).
    done: [B] bool, the row's game ended with this move (or was cut: the
      targets keep the rewards credited so far).
    discount: a Python float in (0, 1]; below 1 (one-player games) the
      target is the discounted return, matching a search whose one-move
      discount is the same (`envs.make(name, discount=)`).
    """
    credit = jnp.take_along_axis(
        jnp.broadcast_to(rewards[None], buffer.player.shape + rewards.shape[-1:]),
        buffer.player[..., None], axis=-1)[..., 0].astype(jnp.float32)
    if discount != 1.0:
        num_slots = buffer.status.shape[0]
        age = (buffer.cursor - 1 - jnp.arange(num_slots)) % num_slots
        credit = credit * (discount ** age.astype(jnp.float32))[:, None]
    pending = buffer.status == PENDING
    value = jnp.where(pending, buffer.value + (1.0 - search_value_weight) * credit,
                      buffer.value)
    resolve = pending & done[None, :]
    return buffer.replace(value=value,
                          status=jnp.where(resolve, READY, buffer.status).astype(jnp.int8))


def num_ready(buffer: ReplayBuffer) -> chex.Array:
    """[] int32 samples that can be drawn."""
    return jnp.sum(buffer.status == READY, dtype=jnp.int32)


def sample(buffer: ReplayBuffer, rng_key: chex.PRNGKey, batch_size: int,
           mesh: Optional[Mesh] = None,
           fields: Tuple[str, ...] = ("observation", "policy", "value")):
    """`batch_size` ready samples, uniformly with replacement.

    Returns (observation [n, ...], policy [n, A], value [n]); the value is for
    the player to move in the observation. Requires num_ready > 0. `fields`:
    the buffer's arrays to return, in that order (a buffer with more arrays,
    such as sampled search's actions, names them).

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
    arrays = tuple(getattr(buffer, name) for name in fields)
    if mesh is None:
        flat = lambda x: x.reshape((-1,) + x.shape[2:])[index]  # noqa: E731
        return tuple(flat(x) for x in arrays)
    return gather_rows(arrays, index, mesh)


def gather_rows(arrays, index, mesh: Mesh):
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
