"""The device replay of self-play trajectories, and the unroll windows drawn from it.

Self-play writes one time slot per move for all B game rows, so each row of
the ring [T, B] is a run of consecutive moves: a game, then the next game
of that row. Beside the AlphaZero samples (`training.replay.ReplayBuffer`:
observation, search policy, player, outcome value, status) a slot keeps the
move played, its reward, the legal moves, the search's root value, whether
the move was searched with the full budget, whether the game ended with it,
and the write count of the slot, which tells whether slot t + k is the
k-th move after slot t.

A window starts at a slot and covers W = K + 1 (+ n for n-step values)
consecutive moves of its game: step k is *alive* while the game goes on,
and past the game's end it is absorbing (reward 0, value 0, no policy
target, a random action), as in MuZero.

Value targets (`value_targets`):
  "outcome" (two-player games): the final result for the player to move
    (the AlphaZero sample's value, ready when the game has ended); in a
    one-player game, the return to the game's end, discounted like the search;
  "n_step" (one-player games): sum_{i<n} gamma^i r_{t+i} + gamma^n v_{t+n},
    cut at the game's end, where v is the search's root value at t + n
    (or the latest network's value, with reanalyse).
Rewards are for the player who moved (pgx's reward to that player).

On a device mesh the ring is split along B like the AlphaZero buffer, and a
window is gathered as W flat indices through `replay`'s sharded gather.
"""

from __future__ import annotations

from typing import Optional

import chex
import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from mcts_jax import sharding
from training import replay


@chex.dataclass(frozen=True)
class TrajectoryBuffer:
    """Self-play moves, ring of T slots x B game rows.

    samples: the AlphaZero samples (observation [T, B, ...], policy [T, B, A],
      player [T, B], value [T, B]: the outcome for the player once READY,
      status [T, B], cursor []).
    action: [T, B] int32, the move played.
    reward: [T, B] float32, its reward, for the player who moved.
    legal: [T, B, A] bool, the legal moves of the position.
    search_value: [T, B] float32, the search's root value (player to move).
    searched: [T, B] bool, the policy target is a full search's.
    game_over: [T, B] bool, the game ended (or was cut) with this move.
    written_at: [T] int32, the write count when the slot was written (-1: never).
    writes: [] int32, slots written so far.
    sampled_actions: [T, B, K, *action_shape], sampled search's K root
      actions, over which `policy` [T, B, K] is the target (None: the
      policy is over the game's A actions). With them `action` is the
      played action itself, [T, B, *action_shape] (a vector for continuous
      control).
    """

    samples: replay.ReplayBuffer
    action: chex.Array
    reward: chex.Array
    legal: chex.Array
    search_value: chex.Array
    searched: chex.Array
    game_over: chex.Array
    written_at: chex.Array
    writes: chex.Array
    sampled_actions: Optional[chex.Array] = None

    @property
    def num_slots(self) -> int:
        return self.action.shape[0]


@chex.dataclass(frozen=True)
class Window:
    """W consecutive moves from n start slots (leading [n, W]).

    observation [n, W, ...], legal [n, W, A], policy [n, W, A], action,
    reward, search_value, outcome (the outcome value) [n, W]; searched
    [n, W] bool; alive [n, W] bool: the step is a position of the start's
    game (step 0 always); ended [n, W] bool: the step is past that game's
    end (absorbing). sampled_actions [n, W, K, ...]: the buffer's, or None.
    """

    observation: chex.Array
    legal: chex.Array
    policy: chex.Array
    action: chex.Array
    reward: chex.Array
    search_value: chex.Array
    outcome: chex.Array
    searched: chex.Array
    alive: chex.Array
    ended: chex.Array
    sampled_actions: Optional[chex.Array] = None


def init(num_slots: int, batch_size: int, observation_shape, observation_dtype,
         num_actions: int, sampled_action_shape: Optional[tuple] = None,
         action_dtype=jnp.int32) -> TrajectoryBuffer:
    """An empty ring of `num_slots` x `batch_size` moves. With
    `sampled_action_shape` (a sampled search's actions: () for ids, (d,)
    for vectors; `num_actions` is then K, its samples per node) the ring
    keeps each move's K sampled root actions and the played action itself."""
    shape = (num_slots, batch_size)
    sampled = None
    action_shape = ()
    if sampled_action_shape is not None:
        action_shape = tuple(sampled_action_shape)
        sampled = jnp.zeros(shape + (num_actions,) + action_shape, action_dtype)
    return TrajectoryBuffer(
        samples=replay.init(num_slots, batch_size, observation_shape, observation_dtype,
                            num_actions),
        action=jnp.zeros(shape + action_shape, action_dtype),
        reward=jnp.zeros(shape, jnp.float32), sampled_actions=sampled,
        legal=jnp.zeros(shape + (num_actions,), jnp.bool_),
        search_value=jnp.zeros(shape, jnp.float32), searched=jnp.zeros(shape, jnp.bool_),
        game_over=jnp.zeros(shape, jnp.bool_),
        written_at=jnp.full((num_slots,), -1, jnp.int32), writes=jnp.zeros((), jnp.int32))


def add(buffer: TrajectoryBuffer, observation, legal, policy, player, action, search_value,
        searched, sampled_actions=None) -> TrajectoryBuffer:
    """Writes one move of every row at the cursor (observation [B, ...], legal
    [B, A], policy [B, A], player [B], action [B], search_value [B], searched
    [B] bool; a sampled search's: sampled_actions [B, K, ...], action [B,
    ...]). Its reward and end come with `credit`."""
    cursor = buffer.samples.cursor

    def put(array, row):
        return jax.lax.dynamic_update_index_in_dim(array, row.astype(array.dtype), cursor, 0)

    if sampled_actions is not None:
        buffer = buffer.replace(sampled_actions=put(buffer.sampled_actions, sampled_actions))
    return buffer.replace(
        samples=replay.add(buffer.samples, observation, policy, player),
        action=put(buffer.action, action), legal=put(buffer.legal, legal),
        search_value=put(buffer.search_value, search_value),
        searched=put(buffer.searched, searched),
        written_at=buffer.written_at.at[cursor].set(buffer.writes),
        writes=buffer.writes + 1)


def credit(buffer: TrajectoryBuffer, rewards, done, discount: float = 1.0) -> TrajectoryBuffer:
    """The move just written was played: rewards [B, num_players] (pgx's
    `state.rewards` after it) and done [B] (the game ended or was cut).
    discount: a Python float in (0, 1], one move's discount of the "outcome"
    value (the discounted return to the game's end; 1 for two-player games)."""
    slot = (buffer.samples.cursor - 1) % buffer.num_slots
    player = jax.lax.dynamic_index_in_dim(buffer.samples.player, slot, 0, keepdims=False)
    reward = jnp.take_along_axis(rewards, player[:, None], axis=-1)[:, 0].astype(jnp.float32)
    return buffer.replace(
        samples=replay.credit_rewards(buffer.samples, rewards, done, discount=discount),
        reward=jax.lax.dynamic_update_index_in_dim(buffer.reward, reward, slot, 0),
        game_over=jax.lax.dynamic_update_index_in_dim(buffer.game_over, done, slot, 0))


def usable(buffer: TrajectoryBuffer, window: int, value_targets: str) -> chex.Array:
    """[T, B] bool: the slots a window of `window` moves can start from.
    "outcome": the game has ended (its result is known); "n_step": also a
    slot whose next window - 1 moves have been written."""
    status = buffer.samples.status
    if value_targets == "outcome":
        return status == replay.READY
    written_long_ago = buffer.writes - buffer.written_at >= window
    return (status == replay.READY) | ((status == replay.PENDING) & written_long_ago[:, None])


def num_usable(buffer: TrajectoryBuffer, window: int, value_targets: str) -> chex.Array:
    return jnp.sum(usable(buffer, window, value_targets), dtype=jnp.int32)


def sample(buffer: TrajectoryBuffer, rng_key, batch_size: int, window: int,
           value_targets: str, mesh: Optional[Mesh] = None) -> Window:
    """`batch_size` windows of `window` moves, their starts drawn uniformly
    with replacement from the usable slots (requires one). With `mesh`, the
    result is split along n over it, equal to the one-device draw."""
    ok = usable(buffer, window, value_targets).reshape(-1)
    start = jax.random.choice(rng_key, ok.shape[0], (batch_size,), p=ok / jnp.maximum(
        jnp.sum(ok), 1))
    num_slots, num_rows = buffer.action.shape[:2]
    slot0, row = start // num_rows, start % num_rows
    steps = jnp.arange(window)
    slots = (slot0[:, None] + steps) % num_slots                       # [n, W]
    flat = (slots * num_rows + row[:, None]).reshape(-1)               # [n W]
    per_slot = (buffer.samples.observation, buffer.legal, buffer.samples.policy, buffer.action,
                buffer.reward, buffer.search_value, buffer.samples.value, buffer.searched,
                buffer.game_over)
    if buffer.sampled_actions is not None:
        per_slot += (buffer.sampled_actions,)
    if mesh is None:
        gathered = tuple(x.reshape((-1,) + x.shape[2:])[flat] for x in per_slot)
    else:
        gathered = replay.gather_rows(per_slot, flat, mesh)
    (observation, legal, policy, action, reward, search_value, outcome, searched,
     game_over, *sampled) = (x.reshape((batch_size, window) + x.shape[1:]) for x in gathered)
    consecutive = buffer.written_at[slots] == buffer.written_at[slot0][:, None] + steps
    consecutive = sharding.constrain_batch(consecutive, mesh)
    alive, ended = _alive_and_ended(consecutive, game_over)
    return Window(observation=observation, legal=legal, policy=policy, action=action,
                  reward=reward, search_value=search_value, outcome=outcome, searched=searched,
                  alive=alive, ended=ended, sampled_actions=sampled[0] if sampled else None)


def _alive_and_ended(consecutive, game_over):
    """alive [n, W]: step k is a position of the start's game; ended [n, W]:
    step k is past its end. From consecutive [n, W] (slot t + k was written
    k moves after slot t) and game_over [n, W]."""
    def scan(carry, column):
        alive, ended = carry
        consecutive_k, over_before = column
        new_ended = ended | (alive & over_before)
        new_alive = alive & ~over_before & consecutive_k
        return (new_alive, new_ended), (new_alive, new_ended)

    first = jnp.ones(consecutive.shape[:1], jnp.bool_), jnp.zeros(consecutive.shape[:1], jnp.bool_)
    _, (alive, ended) = jax.lax.scan(scan, first, (consecutive[:, 1:].T, game_over[:, :-1].T))
    return (jnp.concatenate([first[0][:, None], alive.T], axis=1),
            jnp.concatenate([first[1][:, None], ended.T], axis=1))


def value_targets(window: Window, num_unroll: int, mode: str, td_steps: int,
                  discount: float, bootstrap: Optional[chex.Array] = None) -> chex.Array:
    """[n, K + 1] value targets of steps 0..K for the player to move there
    (0 past the game's end). bootstrap: [n, W] values to bootstrap n-step
    targets from (None: the search's root values)."""
    steps = num_unroll + 1
    if mode == "outcome":
        return jnp.where(window.alive[:, :steps], window.outcome[:, :steps], 0.0)
    bootstrap = window.search_value if bootstrap is None else bootstrap
    rewards = jnp.where(window.alive, window.reward, 0.0)
    powers = discount ** jnp.arange(td_steps, dtype=jnp.float32)
    targets = []
    for k in range(steps):
        value = jnp.sum(rewards[:, k:k + td_steps] * powers, axis=1)
        tail = jnp.where(window.alive[:, k + td_steps], bootstrap[:, k + td_steps], 0.0)
        targets.append(value + discount ** td_steps * tail)
    return jnp.stack(targets, axis=1)
