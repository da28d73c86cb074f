"""Chance nodes: search where the environment, not a player, takes some steps.

Dice, card draws and 2048's random tiles are searched as what they are. A
move is split in two (mctx's Stochastic MuZero contract, base.py):

    decision_recurrent_fn(params, key, action [B], state)
        -> (DecisionRecurrentFnOutput(chance_logits [B, C], afterstate_value [B]),
            afterstate)
    chance_recurrent_fn(params, key, outcome [B], afterstate)
        -> (ChanceRecurrentFnOutput(action_logits [B, A], value [B], reward [B],
                                    discount [B], invalid_actions [B, A] | None),
            state)

The tree. A stochastic tree is an ordinary `Tree` whose edge ids run over the
A decisions, then the C chance outcomes (`tree.num_actions` = A + C,
`tree.num_chance_outcomes` = C). Node kinds alternate: the root and every node
reached by an outcome are decision nodes (a state, its children afterstates
reached by ids < A); every node reached by a decision is a chance node (an
afterstate, its children the outcomes A + c, its child `priors` the outcome
probabilities). The kind is read off the edge into the node
(`is_chance_node`), so nothing extra is stored per node and the layout, the
compact slots, subtree reuse, replayed embeddings and sharding all work
unchanged. A decision edge has reward 0 and discount 1 (the afterstate is seen
by the player who chose); the outcome edge carries the reward of the whole
move and the discount (-1 when the player to move changes, 1 when not, 0 at
the end).

The phases, where they differ:
- selection at a chance node follows the outcome distribution: the outcome
  whose visits lag its probability most, `argmax p / (n + 1)` (mctx's rule);
  decision nodes use the policy's rule (PUCT here);
- expansion calls the decision function for rows whose leaf is a decision
  node and the chance function for the others, in one `recurrent_fn` call of
  the search (`StochasticRecurrentFn`; when every row is of one kind, only
  that function runs);
- backup is the usual one: a chance node's value is the mean of the returns
  through it, which estimates the expectation over outcomes because the
  selection keeps each outcome's share of visits at its probability;
- the MCTS-solver proves a chance node when every possible outcome is proven
  (its exact value is then the expectation `sum_c p_c q_c`; `phases.prove`).

Embeddings: the tree stores one embedding per node. When the afterstate has
the state's structure, shapes and dtypes (pgx games: a board before the
random tile), a node stores one of them (`StochasticEmbedding.state` holds
the afterstate at chance nodes); otherwise it stores both, as mctx does.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import base
from mcts_jax import plugin
from mcts_jax import reuse
from mcts_jax import tree as tree_lib
from mcts_jax import validation
from mcts_jax.hashable import HashableFunction


@chex.dataclass(frozen=True)
class StochasticEmbedding:
    """What a stochastic tree stores at each node (leaves [B, ...]).

    Attributes:
      state: the user's state embedding at a decision node; at a chance node
        the afterstate embedding when the two share one layout.
      afterstate: the afterstate embedding at a chance node when the layouts
        differ (then `state` holds a stale placeholder there); None when shared.
      is_decision: [B] bool, the node is a decision node.
    """

    state: Any
    afterstate: Any
    is_decision: chex.Array


def is_chance_node(tree: tree_lib.Tree, node: chex.Array) -> chex.Array:
    """[B] (or like `node`) bool: `node` is a chance node (an afterstate),
    i.e. the edge into it is a decision. Always False in a tree without
    chance outcomes and at the root."""
    if tree.num_chance_outcomes == 0:
        return jnp.zeros(node.shape, jnp.bool_)
    action = tree_lib.gather_nodes(tree.actions_from_parent, node)
    return (action >= 0) & (action < tree.num_decisions)


def chance_scores(stats: tree_lib.ChildrenStats) -> chex.Array:
    """mctx's chance-node rule [B, K]: `p / (n + 1)` for each possible
    outcome (p its probability, n its visits), -inf elsewhere; the argmax
    is the outcome whose share of visits lags its probability most."""
    scores = stats.priors / (stats.visits.astype(jnp.float32) + 1.0)
    return jnp.where(stats.legal, scores, -jnp.inf)


@dataclasses.dataclass(frozen=True)
class ChanceNodes(plugin.SearchPlugin):
    """Chance nodes as a plug-in of the search loop: at a chance node the
    descent follows the outcome rule (`chance_scores`), whatever the
    policy's rules score; a decision node keeps the rules' scores
    (`scores_at`). `tree_search.search_plugins` adds it to every search of
    a stochastic tree (`num_chance_outcomes` > 0), so every rule, a user's
    too, searches chance nodes with no wrapper."""

    def scores_at(self, tree, record, node, stats, scores):
        at_chance = is_chance_node(tree, node)[:, None]
        return jnp.where(at_chance, chance_scores(stats), scores)


@dataclasses.dataclass(frozen=True)
class ChanceAware:
    """A selection rule for stochastic trees: `decision_rule` at decision
    nodes, `chance_scores` at chance nodes. Equal wrappers of equal rules
    are equal (one compilation). The built-in policies no longer wrap
    their rules in it (the plug-in `ChanceNodes` does this for every
    rule); kept for code that does."""

    decision_rule: Callable

    @property
    def wrapped_rule(self) -> Callable:
        """The rule whose scores this one takes at decision nodes (its chance
        scores are ours: -inf on closed slots, never NaN), for
        `selection.screens_its_own_slots`."""
        return self.decision_rule

    def __call__(self, tree: tree_lib.Tree, node: chex.Array,
                 stats: tree_lib.ChildrenStats) -> chex.Array:
        return ChanceNodes().scores_at(tree, None, node, stats,
                                       self.decision_rule(tree, node, stats))


def _layout(tree_of_arrays) -> Any:
    return jax.tree.map(lambda x: (tuple(x.shape[1:]), jnp.result_type(x)), tree_of_arrays)


def _same_layout(a, b) -> bool:
    return (jax.tree.structure(a) == jax.tree.structure(b)
            and jax.tree.leaves(_layout(a)) == jax.tree.leaves(_layout(b)))


@dataclasses.dataclass(frozen=True)
class StochasticRecurrentFn:
    """The search's `recurrent_fn` over a stochastic tree: edge id `i < A`
    applies decision `i` to a decision node's state, `i = A + c` applies
    outcome `c` to a chance node's afterstate. Rows are routed by their
    embedding's `is_decision`; both functions get the same key (as mctx).

    Outputs, per row: at a decision node, the afterstate (reward 0, discount
    1, value `afterstate_value`, priors the outcome probabilities on ids
    A..A+C-1, every decision id invalid); at a chance node, the next state
    (the chance function's reward, discount, value, action priors on ids
    0..A-1 with its invalid actions, every outcome id invalid).
    """

    decision_fn: HashableFunction
    chance_fn: HashableFunction
    num_decisions: int
    num_outcomes: int
    shared_layout: bool

    def __call__(self, params, rng_key, edge, embedding: StochasticEmbedding):
        num_decisions, num_outcomes = self.num_decisions, self.num_outcomes
        edge = edge.astype(jnp.int32)
        action = jnp.clip(edge, 0, num_decisions - 1)
        outcome = jnp.clip(edge - num_decisions, 0, num_outcomes - 1)
        at_decision = embedding.is_decision
        afterstate_in = embedding.state if self.shared_layout else embedding.afterstate
        batch_size = at_decision.shape[0]
        none_a = jnp.ones((batch_size, num_decisions), jnp.bool_)
        none_c = jnp.ones((batch_size, num_outcomes), jnp.bool_)

        def decide():
            output, afterstate = self.decision_fn(params, rng_key, action, embedding.state)
            output = base.as_decision_output(output)
            check_decision_output(output, batch_size, num_outcomes)
            logits = output.chance_logits.astype(jnp.float32)
            impossible = ~(logits > jnp.finfo(jnp.float32).min)  # -inf, the lowest float, NaN
            value = output.afterstate_value.astype(jnp.float32)
            result = base.RecurrentFnOutput(
                reward=jnp.zeros_like(value), discount=jnp.ones_like(value),
                prior_logits=jnp.concatenate(
                    [jnp.full((batch_size, num_decisions), -jnp.inf), logits], axis=-1),
                value=value, invalid_actions=jnp.concatenate([none_a, impossible], axis=-1))
            return result, self._stored(afterstate, embedding, afterstate_is_new=True)

        def apply_chance():
            output, state = self.chance_fn(params, rng_key, outcome, afterstate_in)
            output = base.as_chance_output(output)
            check_chance_output(output, batch_size, num_decisions)
            invalid = (jnp.zeros((batch_size, num_decisions), jnp.bool_)
                       if output.invalid_actions is None else output.invalid_actions)
            result = base.RecurrentFnOutput(
                reward=output.reward.astype(jnp.float32),
                discount=output.discount.astype(jnp.float32),
                prior_logits=jnp.concatenate(
                    [output.action_logits.astype(jnp.float32),
                     jnp.full((batch_size, num_outcomes), -jnp.inf)], axis=-1),
                value=output.value.astype(jnp.float32),
                invalid_actions=jnp.concatenate([invalid, none_c], axis=-1))
            return result, self._stored(state, embedding, afterstate_is_new=False)

        def mixed():
            from_decision, from_chance = decide(), apply_chance()
            return jax.tree.map(
                lambda d, c: jnp.where(at_decision.reshape((-1,) + (1,) * (d.ndim - 1)), d, c),
                from_decision, from_chance)

        all_decision, all_chance = jnp.all(at_decision), jnp.all(~at_decision)
        return jax.lax.cond(
            all_decision, decide,
            lambda: jax.lax.cond(all_chance, apply_chance, mixed))

    def _stored(self, new, embedding: StochasticEmbedding, afterstate_is_new: bool):
        """The embedding stored at the new node (an afterstate when
        `afterstate_is_new`, else a state)."""
        is_decision = jnp.full_like(embedding.is_decision, not afterstate_is_new)
        if self.shared_layout:
            return StochasticEmbedding(state=new, afterstate=None, is_decision=is_decision)
        if afterstate_is_new:
            return StochasticEmbedding(state=embedding.state, afterstate=new,
                                       is_decision=is_decision)
        return StochasticEmbedding(state=new, afterstate=embedding.afterstate,
                                   is_decision=is_decision)


def check_decision_output(output: Any, batch_size: int, num_outcomes: int) -> None:
    """Trace-time checks of what decision_recurrent_fn returned."""
    if not isinstance(output, base.DecisionRecurrentFnOutput):
        raise TypeError(f"decision_recurrent_fn must return (DecisionRecurrentFnOutput, "
                        f"afterstate embedding), got {type(output).__name__} first")
    if jnp.shape(output.chance_logits) != (batch_size, num_outcomes):
        raise ValueError(f"decision_recurrent_fn returned chance_logits of shape "
                         f"{jnp.shape(output.chance_logits)}; expected [B, C] = "
                         f"{(batch_size, num_outcomes)} (C fixed by its first call)")
    if jnp.shape(output.afterstate_value) != (batch_size,):
        raise ValueError(f"decision_recurrent_fn returned afterstate_value of shape "
                         f"{jnp.shape(output.afterstate_value)}; expected [B] = ({batch_size},)")


def check_chance_output(output: Any, batch_size: int, num_decisions: int) -> None:
    """Trace-time checks of what chance_recurrent_fn returned."""
    if not isinstance(output, base.ChanceRecurrentFnOutput):
        raise TypeError(f"chance_recurrent_fn must return (ChanceRecurrentFnOutput, state "
                        f"embedding), got {type(output).__name__} first")
    expected = dict(action_logits=(batch_size, num_decisions), value=(batch_size,),
                    reward=(batch_size,), discount=(batch_size,))
    if output.invalid_actions is not None:
        expected["invalid_actions"] = (batch_size, num_decisions)
    for name, shape in expected.items():
        if jnp.shape(getattr(output, name)) != shape:
            raise ValueError(f"chance_recurrent_fn returned {name} of shape "
                             f"{jnp.shape(getattr(output, name))}; expected {shape}")


def stochastic_root(params, rng_key, root: base.RootFnOutput,
                    invalid_actions: Optional[chex.Array],
                    decision_recurrent_fn: Callable, chance_recurrent_fn: Callable
                    ) -> Tuple[base.RootFnOutput, chex.Array, StochasticRecurrentFn]:
    """The root, root mask and recurrent_fn of a stochastic search.

    root: the user's `RootFnOutput` (prior_logits [B, A], a state embedding).
    Returns the root over A + C edge ids (outcome ids -inf and invalid), the
    mask [B, A + C] and the `StochasticRecurrentFn`. C and the afterstate's
    layout come from the abstract shapes of one decision (nothing runs).
    """
    if not callable(decision_recurrent_fn):
        raise TypeError(f"decision_recurrent_fn must be callable, got "
                        f"{type(decision_recurrent_fn).__name__}")
    if not callable(chance_recurrent_fn):
        raise TypeError(f"chance_recurrent_fn must be callable (a stochastic search needs "
                        f"both functions), got {type(chance_recurrent_fn).__name__}")
    batch_size, num_decisions = jnp.shape(root.prior_logits)
    dummy_action = jnp.zeros((batch_size,), jnp.int32)
    output, afterstate = jax.eval_shape(decision_recurrent_fn, params, rng_key, dummy_action,
                                        root.embedding)
    output = base.as_decision_output(output)
    if not isinstance(output, base.DecisionRecurrentFnOutput):
        raise TypeError(f"decision_recurrent_fn must return (DecisionRecurrentFnOutput, "
                        f"afterstate embedding), got {type(output).__name__} first")
    logits_shape = tuple(output.chance_logits.shape)
    if len(logits_shape) != 2 or logits_shape[0] != batch_size or logits_shape[1] < 1:
        raise ValueError(f"decision_recurrent_fn returned chance_logits of shape "
                         f"{logits_shape}; expected [B, C] with B = {batch_size}, C >= 1")
    num_outcomes = logits_shape[1]
    shared = _same_layout(root.embedding, afterstate)
    recurrent_fn = StochasticRecurrentFn(
        decision_fn=HashableFunction(decision_recurrent_fn),
        chance_fn=HashableFunction(chance_recurrent_fn),
        num_decisions=int(num_decisions), num_outcomes=int(num_outcomes), shared_layout=shared)
    placeholder = None if shared else jax.tree.map(
        lambda leaf: jnp.zeros(leaf.shape, leaf.dtype), afterstate)
    embedding = StochasticEmbedding(state=root.embedding, afterstate=placeholder,
                                    is_decision=jnp.ones((batch_size,), jnp.bool_))
    stochastic = root.replace(
        prior_logits=jnp.concatenate(
            [root.prior_logits, jnp.full((batch_size, num_outcomes), -jnp.inf,
                                         jnp.result_type(root.prior_logits))], axis=-1),
        embedding=embedding)
    legal_decisions = (jnp.zeros((batch_size, num_decisions), jnp.bool_)
                       if invalid_actions is None else invalid_actions)
    mask = jnp.concatenate([legal_decisions, jnp.ones((batch_size, num_outcomes), jnp.bool_)],
                           axis=-1)
    return stochastic, mask, recurrent_fn


def check_chance_probabilities(decision_recurrent_fn, params, rng_key, root: base.RootFnOutput,
                               invalid_actions: Optional[chex.Array]) -> None:
    """Host check (concrete inputs only): one decision per root row (its
    most likely legal action) must give chance logits that are not NaN and
    not all impossible. Catches a broken decision function before a search
    silently treats its afterstates as dead ends."""
    if not (validation.is_concrete(root.prior_logits)
            and all(validation.is_concrete(x) for x in jax.tree.leaves(root.embedding))):
        return
    logits = np.asarray(root.prior_logits, np.float32)
    if invalid_actions is not None:
        logits = np.where(np.asarray(invalid_actions), -np.inf, logits)
    action = jnp.asarray(np.argmax(logits, axis=-1).astype(np.int32))
    output, _ = _probe(decision_recurrent_fn)(params, rng_key, action, root.embedding)
    chance = np.asarray(output.chance_logits, np.float32)
    if np.isnan(chance).any():
        rows = np.unique(np.argwhere(np.isnan(chance))[:, 0])[:10].tolist()
        raise ValueError(f"decision_recurrent_fn returned NaN chance_logits (rows {rows})")
    none_possible = ~(chance > np.finfo(np.float32).min).any(axis=-1)
    if none_possible.any():
        raise ValueError(f"decision_recurrent_fn returned chance_logits that are all -inf "
                         f"(no possible outcome) in rows "
                         f"{np.flatnonzero(none_possible)[:10].tolist()}")


_PROBES: dict = {}


def _probe(fn: Callable) -> Callable:
    """A jitted copy of `fn`, one per function (so repeated checks compile once)."""
    key = HashableFunction(fn)
    if key not in _PROBES:
        _PROBES[key] = jax.jit(fn)
    return _PROBES[key]


def stochastic_subtree(tree: tree_lib.Tree, action: chex.Array, outcome: chex.Array
                       ) -> tree_lib.Tree:
    """Subtree reuse in a stochastic tree: the subtree below decision
    `action` [B] (ids in [0, A)) and then the chance outcome `outcome` [B]
    (ids in [0, C)) that happened, re-rooted at that decision node. Rows
    where the outcome was never expanded come back empty (the next search
    starts them afresh).

    Checks: shapes and dtypes always; with concrete ids (outside `jit`), ids
    out of range, and an outcome that the tree's chance node gives
    probability 0 (it cannot have happened), raise ValueError. `tree` may be
    the `MctxTree` of `stochastic_muzero_policy`: its source tree (ours) is
    re-rooted, and ours is returned."""
    tree = tree_lib.source_of(tree)
    validation.check_is_tree("tree", tree)
    if tree.num_chance_outcomes == 0:
        raise ValueError("stochastic_subtree needs a stochastic tree (num_chance_outcomes > "
                         "0); use get_subtree")
    batch_size, num_decisions = tree.batch_size, tree.num_decisions
    num_outcomes = tree.num_chance_outcomes
    action, outcome = jnp.asarray(action), jnp.asarray(outcome)
    validation.check_ids("action", action, batch_size, "decision id", "A", num_decisions)
    validation.check_ids("outcome", outcome, batch_size, "chance outcome id", "C",
                         num_outcomes)
    afterstate = reuse.get_subtree(tree, action.astype(jnp.int32))
    outcome_id = num_decisions + outcome.astype(jnp.int32)  # [B], edge ids A + c
    if validation.is_concrete(outcome_id) and validation.is_concrete(afterstate.priors):
        root = tree_lib.root_nodes(batch_size)
        at_outcome = (np.asarray(tree_lib.slot_actions(afterstate, root))
                      == np.asarray(outcome_id)[:, None])  # [B, K]
        probability = np.where(at_outcome, np.asarray(afterstate.priors[:, 0]), 0.0).sum(-1)
        # A compact chance node that dropped outcomes (`pruned`) cannot tell.
        unknown = np.asarray(afterstate.pruned[:, 0]) & ~at_outcome.any(-1)
        impossible = (np.asarray(afterstate.num_nodes) > 0) & (probability <= 0) & ~unknown
        rows = np.flatnonzero(impossible)[:10]
        if rows.size:
            raise ValueError(
                f"outcome {np.asarray(outcome)[rows].tolist()} in rows {rows.tolist()} has "
                f"probability 0 at the chance node of action "
                f"{np.asarray(action)[rows].tolist()} (the tree's stored outcome prior): "
                f"an impossible outcome; pass the outcome that happened")
    return reuse.get_subtree(afterstate, outcome_id)
