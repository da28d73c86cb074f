"""The callback contract shared with mctx: what the user's functions return.

Shapes use `B` for the batch of independent searches and `A` for the number of
action ids. Every value is from the point of view of the player to move at the
node it describes; a reward is for the player who made the transition; a
two-player zero-sum game flips perspective with `discount = -1` and a terminal
transition has `discount = 0`.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, Tuple

import chex

Params = Any
Embedding = Any  # a pytree whose leaves have a leading batch axis [B, ...]
RecurrentState = Any  # mctx's name for an embedding


@chex.dataclass(frozen=True)
class RootFnOutput:
    """The state the search starts from.

    Attributes:
      prior_logits: [B, A] float, the policy prior at the root (logits).
      value: [B] float, value estimate of the root for the player to move there.
      embedding: pytree with leaves [B, ...], what `recurrent_fn` steps from.
    """

    prior_logits: chex.Array
    value: chex.Array
    embedding: Embedding


@chex.dataclass(frozen=True)
class RecurrentFnOutput:
    """The result of one step of the model, for a batch of transitions.

    Attributes:
      reward: [B] float, reward of the transition for the player who made it.
      discount: [B] float, -1 when the player to move changes (two-player
        zero-sum), 1 when it does not, 0 when the new state is terminal.
      prior_logits: [B, A] float, policy prior at the new state (logits).
      value: [B] float, value of the new state for the player to move there.
        Ignored for terminal states (their value is 0 by definition).
      invalid_actions: optional [B, A] bool, True where an action is illegal in
        the new state. None means every action is legal.
    """

    reward: chex.Array
    discount: chex.Array
    prior_logits: chex.Array
    value: chex.Array
    invalid_actions: Optional[chex.Array] = None


class RootActionSelectionFn(Protocol):
    """mctx's root selection function, on one unbatched mctx tree
    (`mcts_jax.mctx_compat.selection`): `fn(rng_key, tree, node_index) ->
    action`, an int32 scalar."""

    def __call__(self, rng_key: chex.PRNGKey, tree: Any, node_index: chex.Array) -> chex.Array:
        ...


class InteriorActionSelectionFn(Protocol):
    """mctx's selection function below the root, on one unbatched mctx tree:
    `fn(rng_key, tree, node_index, depth) -> action`, an int32 scalar."""

    def __call__(self, rng_key: chex.PRNGKey, tree: Any, node_index: chex.Array,
                 depth: chex.Array) -> chex.Array:
        ...


class LoopFn(Protocol):
    """The simulation loop, `loop_fn(lower, upper, body_fun, init_val) ->
    final value`, as `jax.lax.fori_loop` (mctx's `loop_fn` argument,
    `SearchOptions.loop_fn`)."""

    def __call__(self, lower: int, upper: int, body_fun: Callable[[Any, Any], Any],
                 init_val: Any) -> Any:
        ...


class RecurrentFn(Protocol):
    """The user's model step: `recurrent_fn(params, rng_key, action [B] int32,
    embedding [B, ...]) -> (RecurrentFnOutput, next embedding [B, ...])`,
    called once per simulation for the whole batch (with several paths per
    step or `expand_all`, on a batch of B x P or B x K transitions)."""

    def __call__(self, params: Params, rng_key: chex.PRNGKey, action: chex.Array,
                 embedding: Embedding) -> Tuple[RecurrentFnOutput, Embedding]:
        ...


@chex.dataclass(frozen=True)
class DecisionRecurrentFnOutput:
    """A decision (an action) taken at a state: the afterstate it leads to.

    Stochastic search (mctx's Stochastic MuZero contract). The edge from a
    state to its afterstate has reward 0 and discount 1: the afterstate is
    seen by the player who just chose the action.

    Attributes:
      chance_logits: [B, C] float, logits of the C chance outcomes that can
        follow the afterstate (their softmax is the outcome distribution); an
        impossible outcome has logit -inf (or the lowest float).
      afterstate_value: [B] float, value of the afterstate for the player who
        chose the action (the player to move at the decision node).
    """

    chance_logits: chex.Array
    afterstate_value: chex.Array


@chex.dataclass(frozen=True)
class ChanceRecurrentFnOutput:
    """A chance outcome applied to an afterstate: the next state.

    Attributes:
      action_logits: [B, A] float, policy prior at the new state (logits).
      value: [B] float, value of the new state for the player to move there.
      reward: [B] float, reward of the whole transition (decision and
        outcome) for the player who chose the action.
      discount: [B] float, -1 when the player to move changes, 1 when it does
        not (single-player games, or a player moving again), 0 when the new
        state is terminal.
      invalid_actions: optional [B, A] bool, True where an action is illegal
        in the new state (our addition to mctx's type; None: all legal).
    """

    action_logits: chex.Array
    value: chex.Array
    reward: chex.Array
    discount: chex.Array
    invalid_actions: Optional[chex.Array] = None


class DecisionRecurrentFn(Protocol):
    """A stochastic game's decision step: `decision_recurrent_fn(params,
    rng_key, action [B] int32, state_embedding) ->
    (DecisionRecurrentFnOutput, afterstate_embedding)`."""

    def __call__(self, params: Params, rng_key: chex.PRNGKey, action: chex.Array,
                 embedding: Embedding) -> Tuple["DecisionRecurrentFnOutput", Embedding]:
        ...


class ChanceRecurrentFn(Protocol):
    """A stochastic game's chance step: `chance_recurrent_fn(params, rng_key,
    chance_outcome [B] int32, afterstate_embedding) ->
    (ChanceRecurrentFnOutput, state_embedding)`."""

    def __call__(self, params: Params, rng_key: chex.PRNGKey, outcome: chex.Array,
                 embedding: Embedding) -> Tuple["ChanceRecurrentFnOutput", Embedding]:
        ...


@chex.dataclass(frozen=True)
class PolicyOutput:
    """What a policy returns.

    Attributes:
      action: [B] int32, the action chosen at each root.
      action_weights: [B, A] float, the policy target: the root visit
        distribution for UCT and PUCT (for Gumbel, the improved policy).
      search_tree: the `Tree` the search built, for `summary()` or reuse.
    """

    action: chex.Array
    action_weights: chex.Array
    search_tree: Any


@chex.dataclass(frozen=True)
class SearchSummary:
    """Root statistics in action space.

    Attributes:
      visit_counts: [B, A] int32, visits of each root action (0 if unexpanded).
      visit_probs: [B, A] float, visit_counts normalised over the row.
      qvalues: [B, A] float, reward + discount * value of each child, from the
        root mover's point of view; 0 for unvisited actions.
      value: [B] float, the root's value for its mover: its exact value where
        the root is proven (`root_proven`, the MCTS-solver), else the mean
        backed-up value of its simulations.
      proven: [B, A] bool, the child's exact value is known (terminal, or
        proven by the MCTS-solver).
      proven_qvalues: [B, A] float, that exact value as a Q-value for the root
        mover (1 a proven win, -1 a proven loss, 0 a proven draw in
        [-1, 1]); 0 where not proven.
      root_proven: [B] bool, the root's exact value is known.
      root_proven_value: [B] float, that value for the root mover; 0 if not.
    """

    visit_counts: chex.Array
    visit_probs: chex.Array
    qvalues: chex.Array
    value: chex.Array
    proven: chex.Array
    proven_qvalues: chex.Array
    root_proven: chex.Array
    root_proven_value: chex.Array


def _with_fields(output: Any, cls, required: Tuple[str, ...], optional: Tuple[str, ...] = ()):
    """`output` as `cls` when it has `required` fields (any class: mctx's own
    outputs, a namedtuple, ...); otherwise unchanged, for the caller's check
    to report."""
    if isinstance(output, cls) or not all(hasattr(output, name) for name in required):
        return output
    fields = {name: getattr(output, name) for name in required}
    fields.update({name: getattr(output, name, None) for name in optional})
    return cls(**fields)


def as_recurrent_output(output: Any) -> Any:
    """A recurrent_fn's first result as `RecurrentFnOutput`: any object
    with mctx's fields (`reward`, `discount`, `prior_logits`, `value`; and
    our optional `invalid_actions`) is taken."""
    return _with_fields(output, RecurrentFnOutput, ("reward", "discount", "prior_logits", "value"),
                        ("invalid_actions",))


def as_decision_output(output: Any) -> Any:
    """A decision_recurrent_fn's first result as `DecisionRecurrentFnOutput`
    (any object with `chance_logits` and `afterstate_value`)."""
    return _with_fields(output, DecisionRecurrentFnOutput, ("chance_logits", "afterstate_value"))


def as_chance_output(output: Any) -> Any:
    """A chance_recurrent_fn's first result as `ChanceRecurrentFnOutput`
    (any object with `action_logits`, `value`, `reward`, `discount`)."""
    return _with_fields(output, ChanceRecurrentFnOutput,
                        ("action_logits", "value", "reward", "discount"), ("invalid_actions",))
