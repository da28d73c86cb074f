"""Policies as values: a root setup, selection rules, a final action, options.

    UCTPolicy        no root setup          UCB1 everywhere       most visited / sampled
    AlphaZeroPolicy  Dirichlet root noise   PUCT everywhere       most visited / sampled
    GumbelPolicy     Gumbel noise           halving at the root,  Gumbel's choice
                     (tree.extra_data)      deterministic below
    RulePolicy       none                   the user's rules      most visited / sampled

A policy is a frozen, hashable `Policy` value; calling it,
`policy(params, rng_key, root, recurrent_fn, num_simulations,
invalid_actions=..., tree=..., temperature=...)`, runs one compiled search
(the policy and its resolved `SearchOptions` are the static part of the
compilation key), so equal policies share their compiled programs wherever
they go: `search(policy=...)`, `sharding`, the arena, self-play, training.
A new policy subclasses `Policy` and overrides `root_setup`, `rules` and
`choose` (or `body`, for its own use of the key).

The functions `uct_policy`, `alphazero_policy` and `gumbel_policy` are the
same values built from keyword arguments and called at once. They are
batched already: call them on [B, ...] inputs, do not `vmap` them. mctx's
signatures are in `mctx_policies.py`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, ClassVar, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import base
from mcts_jax import phases
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax import validation
from mcts_jax.options import SearchOptions, Static
from mcts_jax.qtransforms import (accept_qtransform, qtransform_by_parent_and_siblings,
                                  qtransform_completed_by_mix_value, qtransform_raw)
from mcts_jax.tree_search import make_rules, run_body, search_body


def root_priors_with_noise(rng_key: chex.PRNGKey, prior_logits: chex.Array, legal: chex.Array,
                           dirichlet_fraction: float, dirichlet_alpha: float) -> chex.Array:
    """Masked root priors [B, A] mixed with Dirichlet noise over the legal actions:
    `(1 - fraction) * P + fraction * Dir(alpha)`."""
    priors = tree_lib.masked_priors(prior_logits.astype(jnp.float32), legal)
    if dirichlet_fraction == 0.0:
        return priors
    gammas = jax.random.gamma(rng_key, dirichlet_alpha, priors.shape)
    gammas = jnp.where(legal, gammas, 0.0)
    noise = gammas / jnp.maximum(jnp.sum(gammas, axis=-1, keepdims=True),
                                 jnp.finfo(jnp.float32).tiny)
    return (1.0 - dirichlet_fraction) * priors + dirichlet_fraction * noise


def choose_action(rng_key: chex.PRNGKey, tree: tree_lib.Tree, final_action: str,
                  temperature: chex.Array, solver: bool = False) -> chex.Array:
    """The action [B] to play from each root.

    "most_visited": most root visits, ties broken by higher Q, then lowest id.
    "highest_value": highest Q among visited root actions.
    "sampled": `pi(a) ~ N(a) ** (1 / temperature)`; temperature 0 is
    "most_visited".
    With the solver, a proven win is always played; a proven root plays a
    move that realises its exact value; otherwise proven losses are excluded
    while any other legal move remains.
    """
    root = jnp.zeros((tree.batch_size,), jnp.int32)
    stats = tree_lib.children_stats(tree, root)

    def in_actions(per_slot, fill):
        return tree_lib.slots_to_actions(tree, root, per_slot, fill)

    visits = in_actions(stats.visits, 0)
    qvalues = in_actions(stats.qvalues, 0.0)
    allowed = in_actions(stats.legal, False)
    if solver and tree.value_range is not None:
        proven_loss = in_actions(stats.solved & (stats.solved_qvalues <= -phases.PROVEN_WIN),
                                 False)
        not_losing = allowed & ~proven_loss
        allowed = jnp.where(jnp.any(not_losing, axis=-1, keepdims=True), not_losing, allowed)
    # Q min-max scaled over the row -> a tie-break term in [0, 0.5): never
    # outweighs one visit, orders equal visit counts by Q on any value scale.
    low = jnp.min(qvalues, axis=-1, keepdims=True)
    spread = jnp.max(qvalues, axis=-1, keepdims=True) - low
    tie_break = 0.5 * (1.0 - 1e-3) * (qvalues - low) / jnp.where(spread > 0, spread, 1.0)
    most_visited = jnp.argmax(jnp.where(allowed, visits + tie_break, -jnp.inf), axis=-1)
    if final_action == "most_visited":
        action = most_visited
    elif final_action == "highest_value":
        action = jnp.argmax(jnp.where(allowed & (visits > 0), qvalues, -jnp.inf), axis=-1)
    else:
        safe_temperature = jnp.maximum(temperature, 1e-6)
        logits = jnp.where(allowed & (visits > 0),
                           jnp.log(jnp.maximum(visits, 1)) / safe_temperature, -jnp.inf)
        sampled = jax.random.categorical(rng_key, logits, axis=-1)
        action = jnp.where(temperature > 0, sampled, most_visited)
    # Nothing allowed was visited (the solver excluded every visited move):
    # fall back to the most visited allowed move, which may be unvisited.
    action = jnp.where(jnp.any(allowed & (visits > 0), axis=-1), action, most_visited)
    if solver:
        action = play_proven(tree, stats, action)
    return action.astype(jnp.int32)


def play_proven(tree: tree_lib.Tree, stats: tree_lib.ChildrenStats,
                action: chex.Array) -> chex.Array:
    """Overrides `action` [B] with a proven move where the solver has one:
    a proven win, or, at a proven root, a move realising its exact value."""
    root = jnp.zeros((tree.batch_size,), jnp.int32)
    proven = tree_lib.slots_to_actions(tree, root, stats.solved, False)
    proven_q = tree_lib.slots_to_actions(tree, root, stats.solved_qvalues, 0.0)
    visits = tree_lib.slots_to_actions(tree, root, stats.visits, 0)
    best_proven = jnp.argmax(jnp.where(proven, proven_q + 1e-6 * visits, -jnp.inf), axis=-1)
    has_win = jnp.any(proven & (proven_q >= phases.PROVEN_WIN), axis=-1)
    if tree.value_range is None:  # unbounded: no value is a known win
        has_win = jnp.zeros_like(has_win)
    return jnp.where(has_win | tree.solved[:, tree_lib.ROOT_INDEX], best_proven, action)


# ---- Gumbel: root noise in extra_data, halving at the root --------------------------------

def gumbel_action(tree: tree_lib.Tree, qtransform: Callable,
                  solver: bool) -> tuple[chex.Array, chex.Array]:
    """Gumbel MuZero's choice and policy target, from a tree whose
    `extra_data` is `GumbelExtraData`.

    Returns:
      action [B]: among the root actions visited most in this search (the
        last survivors of sequential halving), the best
        `g + log P + qtransform(Q)`.
      action_weights [B, A]: the improved policy
        `softmax(log P + qtransform(Q))` over the legal actions.
    """
    root = jnp.zeros((tree.batch_size,), jnp.int32)
    stats = tree_lib.children_stats(tree, root)
    completed = selection.call_qtransform(qtransform, tree, root, stats, "gumbel_action")
    logits = selection.prior_logits(stats)
    gumbel = tree_lib.at_slots(tree, stats.actions, tree.extra_data.root_gumbel)
    visits_this_search = stats.visits - tree_lib.at_slots(tree, stats.actions,
                                                          tree.extra_data.root_visits_before)
    most = jnp.max(jnp.where(stats.legal, visits_this_search, -1), axis=-1)
    survivors = stats.legal & (visits_this_search == most[:, None])
    slot = jnp.argmax(jnp.where(survivors, gumbel + logits + completed, -jnp.inf), axis=-1)
    action = stats.actions[tree_lib.batch_rows(tree.batch_size), slot]
    if solver:
        action = play_proven(tree, stats, action)
    improved = jax.nn.softmax(jnp.where(stats.legal, logits + completed, -jnp.inf), axis=-1)
    return action.astype(jnp.int32), tree_lib.slots_to_actions(tree, root, improved, 0.0)


# ---- the policy value ------------------------------------------------------------------

def static_number(name: str, value: Any, **bounds) -> Any:
    """A policy constant: checked and made a Python float when concrete; a
    traced value (inside the caller's jit) is kept as it is."""
    if isinstance(value, jax.core.Tracer):
        return value
    return validation.check_number(name, value, **bounds)


def as_static(fn: Any) -> Any:
    """A function field of a policy, compared by value (`options.Static`)."""
    return fn if fn is None or isinstance(fn, Static) else Static(fn)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Policy:
    """A search policy as a value: root setup, selection rules, final action
    and `SearchOptions`. Frozen and hashable; equal policies compile once.

    Subclasses set their constants as fields (checked in `__post_init__`)
    and override `rules` (required), `root_setup` and `choose`; the default
    `body` splits the key as `search_key, action_key = split(rng_key)` and
    gives `root_setup` `fold_in(rng_key, 1)`.

    Attributes:
      options: the search options (`SearchOptions`; None: the class's
        `default_options()`, mctx's semantics for the MuZero family); the
        call's `num_simulations`, root and continued tree complete them.
      temperature: default temperature of the final action (the call's
        `temperature=` overrides it).
      takes_chance_nodes: class constant; True when `recurrent_fn` is the
        pair `(decision_recurrent_fn, chance_recurrent_fn)`.
    """

    options: Optional[SearchOptions] = None
    temperature: Any = 1.0
    takes_chance_nodes: ClassVar[bool] = False

    def __post_init__(self):
        if self.options is None:
            object.__setattr__(self, "options", type(self).default_options())
        if not isinstance(self.options, SearchOptions):
            raise TypeError(f"options must be a mcts_jax.SearchOptions, got "
                            f"{type(self.options).__name__}")

    # ---- building ---------------------------------------------------------------------------

    @classmethod
    def make(cls, _caller: Optional[str] = None, **keywords) -> "Policy":
        """The policy from keyword arguments: its own fields, `options=` (a
        `SearchOptions`), and any field of `SearchOptions` (applied on top).
        An unknown keyword raises TypeError naming it."""
        own = {field.name for field in dataclasses.fields(cls)}
        settings = {name: value for name, value in keywords.items() if name in own}
        option_values = {name: value for name, value in keywords.items() if name not in own}
        unknown = sorted(set(option_values) - set(SearchOptions.names()))
        if unknown:
            raise TypeError(f"{_caller or cls.__name__} got unknown keyword argument(s) "
                            f"{unknown}; its settings are {sorted(own - {'options'})} and the "
                            f"search options {list(SearchOptions.names())}")
        settings["options"] = SearchOptions.from_keywords(
            settings.get("options", cls.default_options()), **option_values)
        return cls(**settings)

    @classmethod
    def default_options(cls) -> SearchOptions:
        """The options a policy of this class starts from."""
        return SearchOptions()

    def replace(self, **changes) -> "Policy":
        """A copy with `changes` (its own fields and search options)."""
        kept = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)
                if field.init}
        return type(self).make(**{**kept, **changes})

    # ---- calling ----------------------------------------------------------------------------

    def __call__(self, params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                 recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                 invalid_actions: Optional[chex.Array] = None,
                 tree: Optional[tree_lib.Tree] = None,
                 temperature: Any = None, **overrides) -> base.PolicyOutput:
        """One batched search of B roots; returns `PolicyOutput(action [B],
        action_weights [B, A], search_tree)`. `root`: `RootFnOutput`
        (prior_logits [B, A], value [B], embedding [B, ...]);
        `invalid_actions` [B, A] bool (True = illegal) at the root; `tree`: a
        `Tree` to continue (subtree reuse); `overrides`: fields or search
        options for this call only (`self.replace(**overrides)`)."""
        if overrides:
            return self.replace(**overrides)(params, rng_key, root, recurrent_fn,
                                             num_simulations, invalid_actions=invalid_actions,
                                             tree=tree, temperature=temperature)
        options = self.options.resolve(root, invalid_actions, num_simulations, tree)
        return self.run(params, rng_key, root, recurrent_fn, invalid_actions, tree, options,
                        temperature)

    def run(self, params, rng_key, root, recurrent_fn, invalid_actions, tree,
            options: SearchOptions, temperature: Any = None) -> base.PolicyOutput:
        """`body` compiled (`tree_search.run_body`), with resolved options."""
        temperature = self.temperature if temperature is None else temperature
        self.check_call(options, temperature)
        return run_body(policy_body, params, rng_key, root, recurrent_fn, invalid_actions,
                        temperature, tree, None, options, self, options.checks)

    def check_call(self, options: SearchOptions, temperature: Any) -> None:
        """Checks of one call (the temperature, options this policy refuses)."""
        validation.check_final_action(getattr(self, "final_action", "sampled"), temperature,
                                      values=options.checks == "host")

    # ---- what a policy is made of (traced) --------------------------------------------------

    def body(self, params, rng_key, root, invalid_actions, temperature, tree, *,
             recurrent_fn, options: SearchOptions) -> base.PolicyOutput:
        """The whole policy, traceable: root setup, search, final action."""
        search_key, action_key = jax.random.split(rng_key)
        root, extra_data = self.root_setup(jax.random.fold_in(rng_key, 1), root,
                                           invalid_actions, tree, options)
        tree = search_body(params, search_key, root, invalid_actions, tree, extra_data,
                           recurrent_fn=recurrent_fn, rules=self.rules(options), options=options)
        action, action_weights = self.choose(action_key, tree, temperature, options)
        return base.PolicyOutput(action=action, action_weights=action_weights,
                                 search_tree=tree)

    def root_setup(self, rng_key, root: base.RootFnOutput, invalid_actions, tree,
                   options: SearchOptions) -> Tuple[base.RootFnOutput, Any]:
        """(root with its priors as searched, extra_data stored in the tree
        for the rules, leading [B] or None). Default: unchanged, None."""
        del rng_key, invalid_actions, tree, options
        return root, None

    def rules(self, options: SearchOptions) -> selection.Rules:
        """The selection rules, `Rules(at_root, below_root)`."""
        raise NotImplementedError(f"{type(self).__name__} must define rules(options)")

    def choose(self, rng_key, tree: tree_lib.Tree, temperature,
               options: SearchOptions) -> Tuple[chex.Array, chex.Array]:
        """(action [B], action_weights [B, A]); default: `choose_action` with
        `self.final_action` and the root visit distribution."""
        action = choose_action(rng_key, tree, getattr(self, "final_action", "most_visited"),
                               temperature, options.solver)
        return action, tree.summary().visit_probs


def policy_body(params, rng_key, root, invalid_actions, temperature, tree, extra_data, *,
                recurrent_fn, options: SearchOptions, settings: Policy) -> base.PolicyOutput:
    """A policy's body in the shape `tree_search.run_body` compiles (the
    policy value is the static `settings`)."""
    del extra_data
    return settings.body(params, rng_key, root, invalid_actions, temperature, tree,
                         recurrent_fn=recurrent_fn, options=options)


def check_final_action_name(final_action: Any) -> str:
    validation.check_final_action(final_action, 1.0)
    return final_action


@dataclasses.dataclass(frozen=True, kw_only=True)
class RulePolicy(Policy):
    """A policy made of selection rules (see `rule_policy`): no root setup,
    `rules.at_root` at the root, `rules.below_root` below, then
    `final_action` ("most_visited", "highest_value" or "sampled")."""

    selection_rules: Optional[selection.Rules] = None
    final_action: str = "most_visited"

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.selection_rules, selection.Rules):
            raise TypeError(f"RulePolicy needs selection_rules=mcts_jax.Rules(at_root, "
                            f"below_root), got {type(self.selection_rules).__name__}")
        check_final_action_name(self.final_action)

    def rules(self, options: SearchOptions) -> selection.Rules:
        return self.selection_rules


@dataclasses.dataclass(frozen=True, kw_only=True)
class UCTPolicy(Policy):
    """Classic UCT: UCB1 `Q + uct_c * sqrt(ln N / n)` everywhere, unvisited
    legal children first (lowest action id first), priors stored but not
    scored; values from `recurrent_fn` (e.g. random playouts)."""

    uct_c: float = 1.4
    final_action: str = "most_visited"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "uct_c", validation.check_number("uct_c", self.uct_c, low=0.0))
        check_final_action_name(self.final_action)

    def rules(self, options: SearchOptions) -> selection.Rules:
        return selection.everywhere(Static(functools.partial(selection.uct_scores,
                                                             uct_c=self.uct_c)))


def legal_mask(prior_logits: chex.Array, invalid_actions: Optional[chex.Array]) -> chex.Array:
    """[B, A] bool, True = legal (every action when `invalid_actions` is None)."""
    return (jnp.ones(prior_logits.shape, jnp.bool_) if invalid_actions is None
            else ~invalid_actions)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AlphaZeroPolicy(Policy):
    """AlphaZero: Dirichlet noise in the legal root priors, PUCT
    `Q + c(N) * P * sqrt(N) / (1 + n)` with `c(N) = pb_c_init + log((N +
    pb_c_base + 1) / pb_c_base)` everywhere, Q through `qtransform`, then
    `final_action` (default: sampled from the visit counts at temperature 1,
    as `mctx.muzero_policy`).

    `forced_playouts` k > 0: KataGo's forced playouts at the root (every
    legal child gets about `sqrt(k P N)` visits first; KataGo uses k = 2)
    with policy target pruning: `action_weights` are the root visits with
    the forced ones taken back (`selection.prune_forced_visits`), the
    target to train on; the action is still chosen from the full visits.
    0 (default): plain PUCT."""

    pb_c_init: Any = 1.25
    pb_c_base: Any = 19652.0
    dirichlet_fraction: Any = 0.25
    dirichlet_alpha: Any = 0.3
    qtransform: Callable = qtransform_by_parent_and_siblings
    final_action: str = "sampled"
    forced_playouts: Any = 0.0

    def __post_init__(self):
        super().__post_init__()
        check_puct_fields(self)
        check_final_action_name(self.final_action)
        # A Python number (it picks the root rule when the search is traced).
        object.__setattr__(self, "forced_playouts",
                           validation.check_number("forced_playouts", self.forced_playouts,
                                                   low=0.0))

    def rules(self, options: SearchOptions) -> selection.Rules:
        puct = puct_rule(self.pb_c_init, self.pb_c_base, self.qtransform)
        if self.forced_playouts == 0.0:
            return selection.everywhere(puct)
        return selection.Rules(
            at_root=Static(functools.partial(selection.forced_playout_scores,
                                             forced_playouts=self.forced_playouts, rule=puct)),
            below_root=puct)

    def choose(self, rng_key, tree: tree_lib.Tree, temperature,
               options: SearchOptions) -> Tuple[chex.Array, chex.Array]:
        """(action [B] from the root visits, action_weights [B, A]: the visit
        distribution, pruned of forced playouts when `forced_playouts` > 0)."""
        action, weights = super().choose(rng_key, tree, temperature, options)
        if self.forced_playouts == 0.0:
            return action, weights
        root = jnp.zeros((tree.batch_size,), jnp.int32)
        pruned = selection.prune_forced_visits(
            tree, root, tree_lib.children_stats(tree, root),
            forced_playouts=self.forced_playouts, pb_c_init=self.pb_c_init,
            pb_c_base=self.pb_c_base, qtransform=self.qtransform)
        pruned = tree_lib.slots_to_actions(tree, root, pruned, 0.0)
        return action, pruned / jnp.maximum(jnp.sum(pruned, axis=-1, keepdims=True), 1.0)

    def body(self, params, rng_key, root, invalid_actions, temperature, tree, *,
             recurrent_fn, options: SearchOptions) -> base.PolicyOutput:
        """Keys: `noise_key, search_key, action_key = split(rng_key, 3)`."""
        noise_key, search_key, action_key = jax.random.split(rng_key, 3)
        if self.dirichlet_fraction != 0.0:  # 0: the root is searched as given
            priors = root_priors_with_noise(noise_key, root.prior_logits,
                                            legal_mask(root.prior_logits, invalid_actions),
                                            self.dirichlet_fraction, self.dirichlet_alpha)
            root = root.replace(prior_logits=tree_lib.log_probabilities(priors))
        tree = search_body(params, search_key, root, invalid_actions, tree, None,
                           recurrent_fn=recurrent_fn, rules=self.rules(options), options=options)
        action, action_weights = self.choose(action_key, tree, temperature, options)
        return base.PolicyOutput(action=action, action_weights=action_weights,
                                 search_tree=tree)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GumbelPolicy(Policy):
    """Gumbel MuZero: Gumbel noise `g` for every legal root action;
    sequential halving spends the budget on the `max_num_considered_actions`
    best by `g + log P`, halving them by `g + log P + sigma(completed Q)`;
    below the root the child whose visit share lags most behind
    `softmax(log P + sigma(completed Q))` (deterministic). `action_weights`
    is that improved policy at the root (the training target).
    `sigma(completed Q)` is `qtransform` (None:
    `qtransform_completed_by_mix_value(value_scale=, maxvisit_init=)`).
    `gumbel_scale` plays the role of a temperature (0: deterministic).
    `search_tree.extra_data` is `GumbelExtraData(root_gumbel [B, A], ...)`."""

    max_num_considered_actions: int = 16
    gumbel_scale: Any = 1.0
    value_scale: float = 0.1
    maxvisit_init: float = 50.0
    qtransform: Optional[Callable] = None

    def __post_init__(self):
        super().__post_init__()
        set_field = functools.partial(object.__setattr__, self)
        set_field("max_num_considered_actions", check_considered(
            self.max_num_considered_actions))
        set_field("gumbel_scale", static_number("gumbel_scale", self.gumbel_scale, low=0.0))
        set_field("value_scale", validation.check_number("value_scale", self.value_scale,
                                                         low=0.0))
        set_field("maxvisit_init", validation.check_number("maxvisit_init", self.maxvisit_init,
                                                           low=0.0))
        if self.qtransform is not None:
            set_field("qtransform", as_static(resolve_qtransform(self.qtransform, None, None)))
        if self.options.expand_all:
            raise ValueError("GumbelPolicy cannot use expand_all=True: sequential halving "
                             "counts one root visit per simulation")

    @property
    def completed_qtransform(self) -> Static:
        """sigma(completed Q): `qtransform`, or the mixed-value default."""
        if self.qtransform is not None:
            return self.qtransform
        return Static(functools.partial(qtransform_completed_by_mix_value,
                                        value_scale=self.value_scale,
                                        maxvisit_init=self.maxvisit_init))

    def check_call(self, options: SearchOptions, temperature: Any) -> None:
        del options, temperature  # gumbel_scale is the temperature; no final_action

    def rules(self, options: SearchOptions) -> selection.Rules:
        return selection.Rules(
            at_root=functools.partial(
                selection.gumbel_root_scores, num_simulations=options.num_simulations,
                max_num_considered_actions=self.max_num_considered_actions,
                qtransform=self.completed_qtransform),
            below_root=functools.partial(selection.gumbel_interior_scores,
                                         qtransform=self.completed_qtransform))

    def body(self, params, rng_key, root, invalid_actions, temperature, tree, *,
             recurrent_fn, options: SearchOptions) -> base.PolicyOutput:
        """Keys as mctx splits them: `search_key, gumbel_key = split(rng_key)`."""
        del temperature
        search_key, gumbel_key = jax.random.split(rng_key)
        extra = gumbel_extra_data(gumbel_key, root, tree, self.gumbel_scale)
        tree = search_body(params, search_key, root, invalid_actions, tree, extra,
                           recurrent_fn=recurrent_fn, rules=self.rules(options), options=options)
        action, action_weights = gumbel_action(tree, self.completed_qtransform,
                                               options.solver)
        return base.PolicyOutput(action=action, action_weights=action_weights,
                                 search_tree=tree)


def gumbel_extra_data(gumbel_key, root: base.RootFnOutput, tree: Optional[tree_lib.Tree],
                      gumbel_scale) -> selection.GumbelExtraData:
    """The root's Gumbel noise [B, A] and, for a continued tree, its root
    visits before this search (sequential halving counts only this
    search's)."""
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_key, root.prior_logits.shape,
                                              root.prior_logits.dtype)
    visits_before = jnp.zeros(root.prior_logits.shape, jnp.int32)
    if tree is not None:
        root_index = jnp.zeros((tree.batch_size,), jnp.int32)
        earlier = tree_lib.slots_to_actions(
            tree, root_index, tree_lib.children_stats(tree, root_index).visits, 0)
        visits_before = jnp.where((tree.num_nodes > 0)[:, None], earlier, 0)
    return selection.GumbelExtraData(root_gumbel=gumbel, root_visits_before=visits_before)


def check_puct_fields(policy: Policy) -> None:
    """Checks, in place, the fields a PUCT policy value holds (`pb_c_init`,
    `pb_c_base`, `dirichlet_fraction`, `dirichlet_alpha`, `qtransform`):
    numbers made Python floats (errors name the field), the Q transform made
    comparable by value. For `__post_init__` of frozen policy dataclasses."""
    set_field = functools.partial(object.__setattr__, policy)
    set_field("pb_c_init", static_number("pb_c_init", policy.pb_c_init, low=0.0))
    set_field("pb_c_base", static_number("pb_c_base", policy.pb_c_base, low=0.0,
                                         low_inclusive=False))
    set_field("dirichlet_fraction", static_number(
        "dirichlet_fraction", policy.dirichlet_fraction, low=0.0, high=1.0))
    set_field("dirichlet_alpha", static_number("dirichlet_alpha", policy.dirichlet_alpha,
                                               low=0.0, low_inclusive=False))
    set_field("qtransform", as_static(resolve_qtransform(policy.qtransform, None,
                                                         qtransform_by_parent_and_siblings)))


def puct_rule(pb_c_init, pb_c_base, qtransform: Callable, tie_break: float = 0.0) -> Static:
    """`selection.puct_scores` with its constants bound (checked already by
    `check_puct_fields` when the policy value was built)."""
    return Static(functools.partial(selection.puct_scores, qtransform=qtransform,
                                    tie_break=tie_break, pb_c_init=pb_c_init,
                                    pb_c_base=pb_c_base))


Q_TRANSFORM_NAMES = {"parent_and_siblings": qtransform_by_parent_and_siblings,
                     "raw": qtransform_raw}


def resolve_qtransform(qtransform: Optional[Callable], q_transform: Optional[str],
                       default: Callable) -> Callable:
    """`qtransform=` (a function) or the older `q_transform=` name."""
    if q_transform is not None:
        if qtransform is not None:
            raise ValueError("give qtransform (a function) or q_transform (a name), not both")
        if not isinstance(q_transform, str) or q_transform not in Q_TRANSFORM_NAMES:
            raise ValueError(f"q_transform must be one of {tuple(Q_TRANSFORM_NAMES)}, got "
                             f"{q_transform!r}; or pass qtransform=<function>")
        return Q_TRANSFORM_NAMES[q_transform]
    qtransform = default if qtransform is None else qtransform
    if isinstance(qtransform, Static):
        return qtransform
    return accept_qtransform(qtransform, "qtransform",
                             "functools.partial(mcts_jax.qtransform_by_min_max, "
                             "min_value=-1.0, max_value=1.0)")


def check_considered(max_num_considered_actions: Any) -> int:
    if isinstance(max_num_considered_actions, bool) or not isinstance(
            max_num_considered_actions, (int, np.integer)) or max_num_considered_actions < 1:
        raise ValueError(f"max_num_considered_actions must be an int >= 1, got "
                         f"{max_num_considered_actions!r}")
    return int(max_num_considered_actions)


# ---- the policies called at once (keyword arguments -> the value) ---------------------------

def uct_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
               recurrent_fn: base.RecurrentFn, num_simulations: int, *,
               invalid_actions: Optional[chex.Array] = None,
               tree: Optional[tree_lib.Tree] = None,
               temperature: Any = None, **settings) -> base.PolicyOutput:
    """`UCTPolicy(**settings)` called at once: classic UCT, values from
    `recurrent_fn` (e.g. playouts).

    Args:
      params: passed to `recurrent_fn` unchanged.
      rng_key: PRNG key; the same key gives the same tree, bit for bit.
      root: `RootFnOutput` with prior_logits [B, A], value [B] (for the
        player to move), embedding [B, ...].
      recurrent_fn: `(params, key, action [B], embedding) -> (RecurrentFnOutput,
        embedding)`, called once per simulation for the whole batch.
      num_simulations: simulations per search (Python int >= 1).
      invalid_actions: [B, A] bool, True = illegal at the root; below it,
        `RecurrentFnOutput.invalid_actions`.
      tree: a `Tree` to continue (from `get_subtree`, `reset_tree` or an
        earlier search): non-empty rows keep their statistics.
      temperature: for final_action "sampled", `pi(a) ~ N(a) ** (1 /
        temperature)`; 0 is greedy. None: the policy's (1.0).
      settings: `UCTPolicy`'s fields (`uct_c=1.4`, `final_action=
        "most_visited"`) and any `SearchOptions` field (`max_nodes`,
        `max_children`, `solver`, ...; `SearchOptions.describe()`), or
        `options=SearchOptions(...)`.

    Returns:
      `PolicyOutput(action [B], action_weights [B, A] = root visit
      distribution, search_tree)`.
    """
    return UCTPolicy.make("uct_policy", **settings)(
        params, rng_key, root, recurrent_fn, num_simulations, invalid_actions=invalid_actions,
        tree=tree, temperature=temperature)


def alphazero_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                     recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                     invalid_actions: Optional[chex.Array] = None,
                     tree: Optional[tree_lib.Tree] = None,
                     temperature: Any = None, q_transform: Optional[str] = None,
                     **settings) -> base.PolicyOutput:
    """`AlphaZeroPolicy(**settings)` called at once: PUCT with Dirichlet
    root noise (`dirichlet_fraction=0` for evaluation). Settings:
    `pb_c_init=1.25`, `pb_c_base=19652`, `dirichlet_fraction=0.25`,
    `dirichlet_alpha=0.3`, `qtransform` (a function; the older
    `q_transform` names "parent_and_siblings" and "raw" still work),
    `final_action="sampled"`, and any `SearchOptions` field. The defaults
    match `mctx.muzero_policy`. Other arguments as in `uct_policy`."""
    if q_transform is not None:
        settings["qtransform"] = resolve_qtransform(settings.get("qtransform"), q_transform,
                                                    qtransform_by_parent_and_siblings)
    return AlphaZeroPolicy.make("alphazero_policy", **settings)(
        params, rng_key, root, recurrent_fn, num_simulations, invalid_actions=invalid_actions,
        tree=tree, temperature=temperature)


def gumbel_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                  recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                  invalid_actions: Optional[chex.Array] = None,
                  tree: Optional[tree_lib.Tree] = None,
                  **settings) -> base.PolicyOutput:
    """`GumbelPolicy(**settings)` called at once: Gumbel MuZero, policy
    improvement that works with very few simulations. Settings:
    `max_num_considered_actions=16`, `gumbel_scale=1.0`, `value_scale=0.1`,
    `maxvisit_init=50.0`, `qtransform`, and any `SearchOptions` field. The
    defaults match `mctx.gumbel_muzero_policy`; with `tree=`, sequential
    halving counts only this search's visits. Other arguments as in
    `uct_policy`."""
    return GumbelPolicy.make("gumbel_policy", **settings)(
        params, rng_key, root, recurrent_fn, num_simulations, invalid_actions=invalid_actions,
        tree=tree)


def rule_policy(root_rule: Callable, interior_rule: Optional[Callable] = None, *,
                final_action: str = "most_visited", **settings) -> RulePolicy:
    """A policy value made of selection rules: `search` with `root_rule`
    (and `interior_rule` below the root; None: the same rule), then the
    final action. `settings`: `temperature` and any `SearchOptions` field.
    It runs wherever a built-in policy runs (`search(policy=...)`,
    `sharding.search`, `arena.SearchPlayer`, self-play); equal rules give
    equal policies (one compilation).

        ucb1_tuned = mcts_jax.rule_policy(my_rule)
        out = ucb1_tuned(params, key, root, recurrent_fn, 64, invalid_actions=invalid)
    """
    return RulePolicy.make("rule_policy", selection_rules=make_rules(root_rule, interior_rule),
                                    final_action=final_action, **settings)
