"""Random game trees with chance nodes whose exact expectimax values are known.

The stochastic counterpart of `game_trees.GameTree`, for testing and studying
stochastic search (`stochastic_muzero_policy`). `ChanceTree(depth, branching,
outcomes, two_player)`: a game of `depth` moves; each move is a decision
among `branching` actions, followed by a chance event with up to `outcomes`
outcomes. Everything is read off 32-bit hashes of the path:

- the afterstate of action a at state s has code `mix(s, a)`;
- outcome o of afterstate t has logit `((h >> 28) & 7) / 2` with
  h = hash(mix(t, 1000 + o)), and is impossible (logit -inf) when
  `(h >> 24) & 3 == 0` (outcome 0 is always possible); the outcome
  probabilities are the softmax of the logits;
- the next state's code is `mix(t, 1000 + o)`, and the move's reward, for the
  player who chose the action, is an integer increment in [-512, 511] read
  off its hash, divided by `512 * depth` (so every return is in [-1, 1]);
- discount -1 after each move in a two-player tree (the other player decides
  next), 1 in a single-player one, 0 after the last move.

Exact values (`root_action_values`) by brute force in float64 numpy over the
`(branching * outcomes) ** depth` paths: a decision is worth the expectation
over its outcomes of reward + discount * value of the next state, a state
the best of its decisions (expectimax; negamax-style for two players).

The search sees: state and afterstate embeddings `{"code": uint32 [B],
"depth": int32 [B]}` (one layout; `distinct_afterstate=True` adds an
"action" leaf to the afterstate, to exercise trees that store both), value
0, uniform action priors, afterstate value 0 (`informed=True`: priors and
values hashed from the codes, see `guesses`). Steps past the end (mctx
expands below terminals) give reward 0, discount 0 and the same state.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Tuple

import jax.numpy as jnp
import numpy as np

from mcts_jax.base import (ChanceRecurrentFnOutput, DecisionRecurrentFnOutput, RootFnOutput)
from problems.synthetic import STEP_ADD, STEP_MUL, check_sizes

FINAL_MUL_1 = 0x85EBCA6B
FINAL_MUL_2 = 0xC2B2AE35
INCREMENT_SCALE = 512
OUTCOME_OFFSET = 1000
MAX_PATHS_PER_ROOT = 2 ** 20


def _mix(code, x, xp):
    return ((code ^ (x + xp.uint32(1))) * xp.uint32(STEP_MUL)) + xp.uint32(STEP_ADD)


def _finalise(h, xp):
    h = (h ^ (h >> xp.uint32(16))) * xp.uint32(FINAL_MUL_1)
    h = (h ^ (h >> xp.uint32(13))) * xp.uint32(FINAL_MUL_2)
    return h ^ (h >> xp.uint32(16))


@dataclasses.dataclass(frozen=True)
class ChanceTree:
    """A random game with chance events after every decision (see the module docstring).

    depth: moves per game (>= 1). branching: actions per decision (>= 2).
    outcomes: C, chance outcomes per afterstate (>= 1; some impossible).
    two_player: the players alternate (discount -1) or one player (1).
    distinct_afterstate: the afterstate embedding gets an extra leaf.
    informed: action priors and state / afterstate values hashed from the
      codes (not uniform and 0), like a network's guesses: fewer ties, for
      comparing libraries on identical inputs. The exact values are the same.
    """

    depth: int
    branching: int
    outcomes: int
    two_player: bool = True
    distinct_afterstate: bool = False
    informed: bool = False

    def __post_init__(self):
        check_sizes(self, (("depth", 1), ("branching", 2), ("outcomes", 1)))

    @property
    def num_actions(self) -> int:
        return self.branching

    @property
    def reward_scale(self) -> float:
        return float(INCREMENT_SCALE * self.depth)

    @property
    def discount(self) -> float:
        return -1.0 if self.two_player else 1.0

    # ---- the hashes, numpy or jax ------------------------------------------
    def _outcomes(self, afterstate, xp):
        """afterstate codes [...] -> (next codes, logits, rewards) [..., C]."""
        outcome = xp.arange(self.outcomes, dtype=xp.uint32) + xp.uint32(OUTCOME_OFFSET)
        next_code = _mix(afterstate[..., None], outcome, xp)
        h = _finalise(next_code, xp)
        logits = ((h >> xp.uint32(28)) & xp.uint32(7)).astype(xp.float32) / 2.0
        impossible = (((h >> xp.uint32(24)) & xp.uint32(3)) == 0) & (
            xp.arange(self.outcomes) > 0)
        increment = ((h >> xp.uint32(22)) & xp.uint32(1023)).astype(xp.int32) - INCREMENT_SCALE
        return next_code, xp.where(impossible, -xp.inf, logits), increment

    # ---- exact values ------------------------------------------------------
    def root_action_values(self, root_codes) -> np.ndarray:
        """[R, branching] float64: the exact expectimax value of each root
        action for the player to move at the root (the search's scale)."""
        if (self.branching * self.outcomes) ** self.depth > MAX_PATHS_PER_ROOT:
            raise ValueError(f"exact values need (branching * outcomes) ** depth <= "
                             f"{MAX_PATHS_PER_ROOT}, got ({self.branching} * {self.outcomes}) "
                             f"** {self.depth}")
        codes = np.asarray(root_codes, dtype=np.uint64).astype(np.uint32).reshape(-1)
        with np.errstate(over="ignore"):
            return self._action_values(codes[:, None], 0).reshape(len(codes), self.branching)

    def root_value(self, root_codes) -> np.ndarray:
        """[R] exact expectimax value of each root for its mover."""
        return self.root_action_values(root_codes).max(axis=-1)

    def _action_values(self, codes: np.ndarray, level: int) -> np.ndarray:
        """codes [R, n] states at `level` -> [R, n * branching] action values."""
        actions = np.arange(self.branching, dtype=np.uint32)
        afterstates = _mix(codes[..., None], actions, np).reshape(codes.shape[0], -1)
        next_codes, logits, increments = self._outcomes(afterstates, np)
        logits = logits.astype(np.float64)
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs = probs / probs.sum(axis=-1, keepdims=True)
        returns = increments.astype(np.float64) / self.reward_scale
        if level + 1 < self.depth:
            below = self._action_values(next_codes.reshape(codes.shape[0], -1), level + 1)
            best = below.reshape(next_codes.shape + (self.branching,)).max(axis=-1)
            returns = returns + self.discount * best
        return np.sum(probs * returns, axis=-1)

    def optimal_actions(self, root_codes, tolerance: float = 1e-9) -> np.ndarray:
        """[R, branching] bool: the root actions of maximal expected value."""
        values = self.root_action_values(root_codes)
        return values >= values.max(axis=-1, keepdims=True) - tolerance

    # ---- the search contract ----------------------------------------------
    def guesses(self, code):
        """(action logits [B, branching], value [B]) at codes [B]: uniform and
        0, or with `informed` hashed from the code (values in [-0.5, 0.5])."""
        batch = code.shape[0]
        if not self.informed:
            return (jnp.zeros((batch, self.branching), jnp.float32),
                    jnp.zeros((batch,), jnp.float32))
        h = _finalise(code ^ jnp.uint32(0xABCDEF), jnp)
        shifts = jnp.arange(self.branching, dtype=jnp.uint32) * 3 % 29
        logits = ((h[:, None] >> shifts) & jnp.uint32(7)).astype(jnp.float32) / 3.0
        value = ((h >> 20) & jnp.uint32(255)).astype(jnp.float32) / 255.0 - 0.5
        return logits, value

    def root(self, root_codes) -> RootFnOutput:
        """RootFnOutput for roots [R] (`guesses` for priors, value 0)."""
        code = jnp.asarray(np.asarray(root_codes, dtype=np.uint64).astype(np.uint32))
        batch = code.shape[0]
        logits, _ = self.guesses(code)
        return RootFnOutput(prior_logits=logits, value=jnp.zeros((batch,), jnp.float32),
                            embedding={"code": code, "depth": jnp.zeros((batch,), jnp.int32)})

    @property
    def decision_recurrent_fn(self):
        """decision_recurrent_fn(params, key, action [B], state); equal trees
        give the same function object (one compilation)."""
        return _functions(self)[0]

    @property
    def chance_recurrent_fn(self):
        """chance_recurrent_fn(params, key, outcome [B], afterstate)."""
        return _functions(self)[1]

    def _decide(self, params, rng_key, action, state):
        del params, rng_key
        code, depth = state["code"], state["depth"]
        playing = depth < self.depth
        afterstate = {"code": jnp.where(playing, _mix(code, action.astype(jnp.uint32), jnp),
                                        code),
                      "depth": depth}
        if self.distinct_afterstate:
            afterstate["action"] = action.astype(jnp.int32)
        _, logits, _ = self._outcomes(afterstate["code"], jnp)
        _, value = self.guesses(afterstate["code"] ^ jnp.uint32(77))
        output = DecisionRecurrentFnOutput(chance_logits=logits, afterstate_value=value)
        return output, afterstate

    def _chance(self, params, rng_key, outcome, afterstate):
        del params, rng_key
        code, depth = afterstate["code"], afterstate["depth"]
        playing = depth < self.depth
        next_codes, _, increments = self._outcomes(code, jnp)
        rows = jnp.arange(code.shape[0])
        increment = increments[rows, outcome]
        reward = jnp.where(playing, increment.astype(jnp.float32) / self.reward_scale, 0.0)
        discount = jnp.where(playing & (depth + 1 < self.depth), self.discount, 0.0)
        state = {"code": jnp.where(playing, next_codes[rows, outcome], code),
                 "depth": jnp.where(playing, depth + 1, depth)}
        logits, value = self.guesses(state["code"])
        output = ChanceRecurrentFnOutput(action_logits=logits, value=value, reward=reward,
                                         discount=discount.astype(jnp.float32))
        return output, state


@functools.lru_cache(maxsize=None)
def _functions(tree: ChanceTree) -> Tuple:
    def decision_recurrent_fn(params, rng_key, action, state):
        return tree._decide(params, rng_key, action, state)

    def chance_recurrent_fn(params, rng_key, outcome, afterstate):
        return tree._chance(params, rng_key, outcome, afterstate)

    return decision_recurrent_fn, chance_recurrent_fn


__all__ = ["ChanceTree"]
