"""N agents moving together: a joint-action planning problem with an exact optimum.

mctx issue #108 searched joint actions of N agents x 5 moves (5^N ids) and
found poor plans. This problem has that shape and an optimum we can compute
for any N, so a search's plan is judged exactly:

- N agents on a ring of `cells` cells, each starting on its own cell of the
  instance; for `horizon` steps every agent moves by one of the
  `MOVES` = (-2, -1, 0, +1, +2) cells (M = 5 moves, one joint id
  sum_i move_i * 5^i, as `mcts_jax.sampled.Factored(N, 5)` numbers them);
- after step t's move (t = 0 .. horizon - 1) the team earns
  sum_i cell_reward[i, t, p_i] + sum_{i < N-1} pair_reward[i, t, (p_{i+1} - p_i) mod cells]:
  each agent's own cell, and each neighbouring pair's distance (the
  interaction: no agent's best move can be chosen alone);
- the episode ends after `horizon` steps; no discount.

The rewards are Gaussian tables per instance, scaled so that one step's
rewards have a standard deviation of about 1 / horizon.

The optimum: the problem is deterministic, so the best closed-loop return
is the best open-loop plan's. An agent's positions depend only on its own
H moves (its *trajectory*, one of 5^H), and the return is a chain over the
agents: sum_i own_i(traj_i) + sum_i pair_i(traj_i, traj_{i+1}). Dynamic
programming along the chain finds the best plan exactly in N x 5^H x 5^H
steps (`optimum`); `brute_force_optimum` enumerates every plan for small
cases (the tests check one against the other). `random_return` is the exact
expected return of uniformly random moves.

The search contract (`root`, `recurrent_fn`): the embedding is
{"instance": [B] int32, "step": [B] int32, "positions": [B, N] int32}; the
action a joint id [B] int32; value 0 at every node (the search sees only
rewards). The prior is a greedy heuristic standing in for a network: agent
i's logit for a move is `prior_scale` x the standardised reward of the cell
it reaches at the next step (it knows nothing of the pairs or of later
steps; `prior_scale=0`: uniform). `prior_logits` are either the factored
parameters [B, N * 5] (for `sampled.SampledActions(Factored(N, 5), K)`) or,
with `dense=True`, one logit per joint id [B, 5^N] (the agents' logits
summed: the same distribution).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Dict

import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax.base import RecurrentFnOutput, RootFnOutput
from mcts_jax.sampled import Factored

MOVES = (-2, -1, 0, 1, 2)
NUM_MOVES = len(MOVES)


@dataclasses.dataclass(frozen=True, eq=False)
class JointActions:
    """`instances` random problems of `num_agents` agents (module docstring).

    Attributes:
      num_agents: N >= 1.
      instances: how many problems (rows of a batch pick them by index).
      cells: the ring's length (>= N: every agent starts on its own cell).
      horizon: H >= 1 steps.
      seed: the tables' seed.
      prior_scale: the greedy prior's inverse temperature (0: uniform).
      start: [I, N] int32 starting cells.
      cell_reward: [I, N, H, cells] float32.
      pair_reward: [I, max(N - 1, 1), H, cells] float32 (by distance).
    """

    num_agents: int
    instances: int = 16
    cells: int = 8
    horizon: int = 3
    seed: int = 0
    prior_scale: float = 1.0
    start: np.ndarray = dataclasses.field(init=False, repr=False)
    cell_reward: np.ndarray = dataclasses.field(init=False, repr=False)
    pair_reward: np.ndarray = dataclasses.field(init=False, repr=False)

    def __post_init__(self):
        for name in ("num_agents", "instances", "cells", "horizon"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"JointActions {name} must be an int >= 1, got {value!r}")
        if isinstance(self.prior_scale, bool) or not (
                isinstance(self.prior_scale, (int, float)) and np.isfinite(self.prior_scale)):
            raise ValueError(f"JointActions prior_scale must be a finite number, got "
                             f"{self.prior_scale!r}")
        if self.cells < self.num_agents:
            raise ValueError(f"JointActions cells ({self.cells}) must be >= num_agents "
                             f"({self.num_agents}): every agent starts on its own cell")
        rng = np.random.default_rng(self.seed)
        n, h = self.num_agents, self.horizon
        start = np.stack([rng.permutation(self.cells)[:n] for _ in range(self.instances)])
        scale = self.reward_scale
        cell = rng.normal(size=(self.instances, n, h, self.cells)) * scale
        pair = rng.normal(size=(self.instances, max(n - 1, 1), h, self.cells)) * scale
        if n == 1:
            pair[:] = 0.0
        object.__setattr__(self, "start", start.astype(np.int32))
        object.__setattr__(self, "cell_reward", cell.astype(np.float32))
        object.__setattr__(self, "pair_reward", pair.astype(np.float32))

    @property
    def num_joint_actions(self) -> int:
        return NUM_MOVES ** self.num_agents

    @property
    def joint_moves(self) -> Factored:
        """The joint ids' numbering (`Factored(N, 5)`: `moves`, `joint_id`),
        the one sampled search draws from."""
        return Factored(self.num_agents, NUM_MOVES)

    @property
    def reward_scale(self) -> float:
        """The tables' standard deviation, 1 / (H sqrt(2N))."""
        return 1.0 / (self.horizon * np.sqrt(2.0 * self.num_agents))

    # ---- exact values (numpy) ------------------------------------------------------------
    def trajectories(self) -> np.ndarray:
        """[5^H, H] int: every agent trajectory as move indices, step 0 first."""
        return np.array(list(itertools.product(range(NUM_MOVES), repeat=self.horizon)),
                        np.int64)

    def _positions(self, instance: int) -> np.ndarray:
        """[N, 5^H, H]: each agent's cell after each step of each trajectory."""
        offsets = np.cumsum(np.asarray(MOVES)[self.trajectories()], axis=-1)  # [T, H]
        return (self.start[instance][:, None, None] + offsets[None]) % self.cells

    def _chain_terms(self, instance: int):
        """(own [N, T], pair [N - 1, T, T]): a trajectory's own rewards and a
        neighbouring pair's, summed over the steps (T = 5^H)."""
        positions = self._positions(instance)
        steps = np.arange(self.horizon)
        own = np.stack([self.cell_reward[instance, i][steps, positions[i]].sum(-1)
                        for i in range(self.num_agents)])
        pairs = []
        for i in range(self.num_agents - 1):
            distance = (positions[i + 1][None, :, :] - positions[i][:, None, :]) % self.cells
            pairs.append(self.pair_reward[instance, i][steps, distance].sum(-1))
        return own.astype(np.float64), np.asarray(pairs, np.float64)

    def optimum(self) -> np.ndarray:
        """[I] float64: the best return of each instance (chain dynamic programming)."""
        best = []
        for instance in range(self.instances):
            own, pair = self._chain_terms(instance)
            value = own[0]
            for i in range(1, self.num_agents):
                value = own[i] + np.max(value[:, None] + pair[i - 1], axis=0)
            best.append(np.max(value))
        return np.asarray(best)

    def random_return(self) -> np.ndarray:
        """[I] float64: the expected return of uniformly random moves."""
        means = []
        for instance in range(self.instances):
            own, pair = self._chain_terms(instance)
            means.append(own.mean(axis=1).sum() + sum(p.mean() for p in pair))
        return np.asarray(means)

    def plan_return(self, instance: int, joint_plan) -> float:
        """The return of playing joint ids `joint_plan` (H of them) from the
        instance's start, in plain Python."""
        positions = [int(p) for p in self.start[instance]]
        total = 0.0
        for step, joint in enumerate(joint_plan):
            moves = [(int(joint) // NUM_MOVES ** i) % NUM_MOVES for i in range(self.num_agents)]
            positions = [(p + MOVES[m]) % self.cells for p, m in zip(positions, moves)]
            total += sum(float(self.cell_reward[instance, i, step, p])
                         for i, p in enumerate(positions))
            total += sum(float(self.pair_reward[instance, i, step,
                                                (positions[i + 1] - positions[i]) % self.cells])
                         for i in range(self.num_agents - 1))
        return total

    def brute_force_optimum(self, instance: int) -> float:
        """The best return over every joint plan (5^(N H) of them; small cases)."""
        plans = itertools.product(range(self.num_joint_actions), repeat=self.horizon)
        return max(self.plan_return(instance, plan) for plan in plans)

    # ---- the search contract (JAX) ---------------------------------------------------------
    def root(self, instance: jax.Array, dense: bool = False) -> RootFnOutput:
        """The start of `instance` [B] int32 (module docstring)."""
        instance = jnp.asarray(instance, jnp.int32)
        batch = instance.shape[0]
        embedding = {"instance": instance, "step": jnp.zeros((batch,), jnp.int32),
                     "positions": jnp.asarray(self.start)[instance]}
        return RootFnOutput(prior_logits=self.prior_logits(embedding, dense),
                            value=jnp.zeros((batch,), jnp.float32), embedding=embedding)

    def prior_logits(self, embedding: Dict[str, jax.Array], dense: bool) -> jax.Array:
        """The greedy prior (module docstring) at `embedding`: [B, N * 5], or
        [B, 5^N] with `dense`."""
        step = jnp.minimum(embedding["step"], self.horizon - 1)
        reached = (embedding["positions"][:, :, None]
                   + jnp.asarray(MOVES, jnp.int32)) % self.cells          # [B, N, 5]
        agents = jnp.arange(self.num_agents)[None, :, None]
        reward = jnp.asarray(self.cell_reward)[embedding["instance"][:, None, None], agents,
                                               step[:, None, None], reached]
        logits = (self.prior_scale / self.reward_scale) * reward           # [B, N, 5]
        if not dense:
            return logits.reshape(logits.shape[0], -1)
        moves = self.joint_moves.moves(jnp.arange(self.num_joint_actions))  # [5^N, N]
        return jnp.sum(logits[:, jnp.arange(self.num_agents), moves], axis=-1)

    def step(self, embedding: Dict[str, jax.Array], joint: jax.Array):
        """(reward [B], the next embedding) of joint ids `joint` [B]."""
        moves = self.joint_moves.moves(joint.astype(jnp.int32))            # [B, N]
        positions = (embedding["positions"] + jnp.asarray(MOVES, jnp.int32)[moves]) % self.cells
        instance, step = embedding["instance"], jnp.minimum(embedding["step"],
                                                             self.horizon - 1)
        agents = jnp.arange(self.num_agents)
        own = jnp.asarray(self.cell_reward)[instance[:, None], agents, step[:, None], positions]
        reward = jnp.sum(own, axis=-1)
        if self.num_agents > 1:
            distance = (positions[:, 1:] - positions[:, :-1]) % self.cells
            pair = jnp.asarray(self.pair_reward)[instance[:, None], agents[:-1], step[:, None],
                                                 distance]
            reward = reward + jnp.sum(pair, axis=-1)
        return reward, {"instance": instance, "step": embedding["step"] + 1,
                        "positions": positions}

    @functools.cached_property
    def _recurrent_fns(self):
        def make(dense):
            def recurrent_fn(params, rng_key, action, embedding):
                del params, rng_key
                reward, next_embedding = self.step(embedding, action)
                batch = reward.shape[0]
                ends = next_embedding["step"] >= self.horizon
                output = RecurrentFnOutput(
                    reward=reward, discount=jnp.where(ends, 0.0, 1.0).astype(jnp.float32),
                    prior_logits=self.prior_logits(next_embedding, dense),
                    value=jnp.zeros((batch,), jnp.float32))
                return output, next_embedding
            return recurrent_fn
        return {False: make(False), True: make(True)}

    def recurrent_fn(self, dense: bool = False):
        """The search's recurrent_fn (one function per problem and layout, so
        searches share their compilation)."""
        return self._recurrent_fns[bool(dense)]
