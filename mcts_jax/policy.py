"""A policy is a value: root setup, search, final choice.

    class MyPolicy(mcts_jax.AlphaZeroPolicy):            # any built-in, or Policy
        def root_setup(self, rng_key, root, invalid_actions, tree, options):
            root, extra_data = super().root_setup(rng_key, root, invalid_actions, tree, options)
            return root.replace(prior_logits=root.prior_logits / 2.0), extra_data

    out = MyPolicy()(params, rng_key, root, recurrent_fn, 64, invalid_actions=invalid)

A `Policy` is a frozen, hashable dataclass. Calling it runs one compiled
search (`tree_search.run_policy`), made of the policy's four hooks:

- `split_key(rng_key) -> (setup_key, search_key, choice_key)`;
- `root_setup(setup_key, root, invalid_actions, tree, options) -> (root,
  extra_data)`: the root as searched (noise in its logits) and what the
  rules read from `tree.extra_data` (Gumbel's noise);
- `rules(options) -> Rules`: the selection rule at the root and below it;
- `choose(choice_key, tree, temperature, options) -> (action [B],
  action_weights [B, A])`: the move and the training target.

Every built-in policy (policies.py, muzero_policies.py) is written through
these hooks and nothing else, so a subclass that overrides any of them is
called. The policy value and its resolved `SearchOptions` are the static
part of the compilation key: equal policies share their compiled programs
wherever they go (`search`, `sharding`, the arena, self-play, training).

`RulePolicy` and `search` run the user's own selection rules.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Optional, Tuple

import chex
import jax
import jax.numpy as jnp

from mcts_jax import base
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax import tree_search
from mcts_jax import validation
from mcts_jax.hashable import HashableFunction
from mcts_jax.options import SearchOptions
from mcts_jax.qtransforms import check_tree_function
from mcts_jax.solver import PROVEN_WIN

FINAL_ACTIONS = validation.FINAL_ACTIONS
# The default search options, made (and checked) once: a frozen value.
DEFAULT_OPTIONS = SearchOptions()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Policy:
    """A search policy as a value: the four hooks (module docstring) and the
    search options. Frozen and hashable; equal policies compile once.

    Subclasses set their constants as fields, checked in `__post_init__`
    by `field_checks`, and override the hooks; `rules` is the one every
    policy must define.

    Attributes:
      options: the search options (`SearchOptions`; None: the class's
        `default_options()`); the call's `num_simulations`, root and
        continued tree complete them.
      takes_chance_nodes: class constant; True when `recurrent_fn` is the
        pair `(decision_recurrent_fn, chance_recurrent_fn)`.
      field_checks: class constant, `{field: check(name, value) -> value}`:
        the checks of the policy's constants (the value as the policy keeps
        it, or a clear error naming the field), run on every field set away
        from its class default. A subclass that adds checks keeps its
        parent's: `field_checks = dict(Parent.field_checks, my_field=...)`.
    """

    options: Optional[SearchOptions] = None
    takes_chance_nodes: ClassVar[bool] = False
    field_checks: ClassVar[dict] = {}

    def __post_init__(self):
        if self.options is None:
            object.__setattr__(self, "options", type(self).default_options())
        if not isinstance(self.options, SearchOptions):
            raise TypeError(f"options must be a mcts_jax.SearchOptions, got "
                            f"{type(self.options).__name__}")
        # The constants' checks: a field set away from its class default is
        # checked and kept as its check returns it (a default is valid by
        # construction: not checked).
        defaults = {field.name: field.default for field in dataclasses.fields(self)}
        for name, check in self.field_checks.items():
            value = getattr(self, name)
            if value is not defaults[name]:
                object.__setattr__(self, name, check(name, value))

    # ---- building ---------------------------------------------------------------------------

    @classmethod
    def make(cls, _caller: Optional[str] = None, **keywords) -> "Policy":
        """The policy from keyword arguments: its own fields, `options=` (a
        `SearchOptions`), and any field of `SearchOptions` (applied on top).
        An unknown keyword raises TypeError naming it."""
        own = {field.name for field in dataclasses.fields(cls)}
        settings = {name: value for name, value in keywords.items() if name in own}
        option_values = {name: value for name, value in keywords.items() if name not in own}
        unknown = sorted(set(option_values) - set(SearchOptions.names())) if option_values else []
        if unknown:
            hint = ""
            if "q_transform" in unknown:
                hint = (" (q_transform, a name, was removed: pass the function, e.g. "
                        "qtransform=mcts_jax.qtransform_raw)")
            if "temperature" in unknown and "gumbel_scale" in own:
                hint = (" (Gumbel plays the search's own choice: gumbel_scale is its "
                        "temperature, 0 for deterministic play)")
            raise TypeError(f"{_caller or cls.__name__} got unknown keyword argument(s) "
                            f"{unknown}; its settings are {sorted(own - {'options'})} and the "
                            f"search options {list(SearchOptions.names())}{hint}")
        options = settings.get("options", cls.default_options())
        settings["options"] = (SearchOptions.from_keywords(options, **option_values)
                               if option_values else options)
        return cls(**settings)

    @classmethod
    def default_options(cls) -> SearchOptions:
        """The options a policy of this class starts from (default:
        `SearchOptions()`)."""
        return DEFAULT_OPTIONS

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
        action_weights [B, A], search_tree)`.

        Args:
          params: passed to `recurrent_fn` unchanged.
          rng_key: PRNG key; the same key gives the same tree, bit for bit.
          root: `RootFnOutput` (prior_logits [B, A], value [B] for the player
            to move, embedding [B, ...]).
          recurrent_fn: `(params, key, action [B], embedding) ->
            (RecurrentFnOutput, embedding)`, called once per simulation for
            the whole batch.
          num_simulations: simulations per search (Python int >= 1).
          invalid_actions: [B, A] bool, True = illegal at the root; below
            it, `RecurrentFnOutput.invalid_actions`.
          tree: a `Tree` to continue (subtree reuse).
          temperature: this call's temperature of a sampled move (policies
            with a `temperature` field; None: the field's).
          overrides: fields or search options for this call only
            (`self.replace(**overrides)`).
        """
        if overrides:
            return self.replace(**overrides)(params, rng_key, root, recurrent_fn,
                                             num_simulations, invalid_actions=invalid_actions,
                                             tree=tree, temperature=temperature)
        return tree_search.run_compiled(self, params, rng_key, root, recurrent_fn,
                                        invalid_actions, tree, num_simulations, temperature)

    # ---- the hooks (traced) -----------------------------------------------------------------

    def split_key(self, rng_key: chex.PRNGKey) -> Tuple[chex.PRNGKey, chex.PRNGKey,
                                                         chex.PRNGKey]:
        """(setup_key, search_key, choice_key). Default: `search_key,
        choice_key = split(rng_key)`, the setup key `fold_in(rng_key, 1)`."""
        search_key, choice_key = jax.random.split(rng_key)
        return jax.random.fold_in(rng_key, 1), search_key, choice_key

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
        `self.final_action` (most visited without one): the move and the
        root visit distribution."""
        return choose_action(rng_key, tree, getattr(self, "final_action", "most_visited"),
                             temperature, options.solver)


# ---- the final action from the root's statistics ---------------------------------------------

# The roots' statistics and their map to action space: one function, in tree.py
# (the summary reads it too); its name stays importable from here.
root_actions_view = tree_lib.root_actions_view


def with_priors_where_unsearched(tree: tree_lib.Tree, weights: chex.Array) -> chex.Array:
    """`weights` [B, A] (a distribution over the root's actions from its
    visits), with the root's prior probabilities [B, A] (as searched: masked,
    with any root noise) in the rows whose root has no child visits: rows a
    stop rule ended before their first simulation (`stopping`), whose
    answer is that of a search of 0 simulations. `weights` may cover the
    first actions only (a stochastic root's decisions, `Tree.summary()`):
    the priors are cut to its width (the outcome ids after them are illegal
    at the root, prior 0)."""
    stats, in_actions = root_actions_view(tree)
    unsearched = jnp.all(stats.visits == 0, axis=-1, keepdims=True)
    # 0 on illegal slots (`ChildrenStats`)
    priors = in_actions(stats.priors, 0.0)[:, :weights.shape[-1]]
    priors = priors / jnp.maximum(jnp.sum(priors, axis=-1, keepdims=True), 1e-30)
    return jnp.where(unsearched, priors.astype(weights.dtype), weights)


def choose_action(rng_key: chex.PRNGKey, tree: tree_lib.Tree, final_action: str,
                  temperature: chex.Array, solver: bool = False) -> Tuple[chex.Array,
                                                                          chex.Array]:
    """(the action [B] to play from each root, the root visit distribution
    [B, A]: `Tree.summary().visit_probs`, with the priors in a row that
    searched nothing, `with_priors_where_unsearched`).

    "most_visited": most root visits, ties broken by higher Q, then lowest id.
    "highest_value": highest Q among visited root actions.
    "sampled": `pi(a) ~ N(a) ** (1 / temperature)`; temperature 0 is
    "most_visited".
    A root with no child visits (a stop rule ended its row before the first
    simulation) plays its legal action of highest prior, as a search of 0
    simulations would.
    With the solver, a proven win is always played; a proven root plays a
    move that realises its exact value; otherwise proven losses are excluded
    while any other legal move remains.
    """
    stats, in_actions = root_actions_view(tree)
    visits = in_actions(stats.visits, 0)
    qvalues = in_actions(stats.qvalues, 0.0)
    allowed = in_actions(stats.legal, False)
    if solver and tree.value_range is not None:
        proven_loss = in_actions(stats.solved & (stats.solved_qvalues <= -PROVEN_WIN),
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
    elif final_action != "sampled":  # a subclass's own field, unchecked
        validation.check_final_action(final_action)  # raises naming the choices
        raise NotImplementedError(f"choose_action has no rule for final_action="
                                  f"{final_action!r}")
    else:
        safe_temperature = jnp.maximum(temperature, 1e-6)
        logits = jnp.where(allowed & (visits > 0),
                           jnp.log(jnp.maximum(visits, 1)) / safe_temperature, -jnp.inf)
        sampled = jax.random.categorical(rng_key, logits, axis=-1)
        action = jnp.where(temperature > 0, sampled, most_visited)
    # Nothing allowed was visited (the solver excluded every visited move):
    # fall back to the most visited allowed move, which may be unvisited.
    action = jnp.where(jnp.any(allowed & (visits > 0), axis=-1), action, most_visited)
    prior_best = jnp.argmax(jnp.where(allowed, in_actions(stats.priors, 0.0), -jnp.inf), axis=-1)
    action = jnp.where(jnp.all(visits == 0, axis=-1), prior_best, action)
    if solver:
        action = play_proven(tree, stats, action, in_actions)
    # The visit distribution over a decision's actions (a stochastic root's A
    # decisions: its outcome ids, after them, are never visited from it);
    # `Tree.summary().visit_probs` is the same arithmetic.
    visit_counts = visits[:, :tree.num_decisions]
    visit_probs = visit_counts / jnp.maximum(jnp.sum(visit_counts, axis=-1, keepdims=True), 1)
    return action.astype(jnp.int32), with_priors_where_unsearched(
        tree, visit_probs.astype(jnp.float32))


def play_proven(tree: tree_lib.Tree, stats: tree_lib.ChildrenStats, action: chex.Array,
                to_actions: Callable) -> chex.Array:
    """Overrides `action` [B] with a proven move where the solver has one:
    a proven win, or, at a proven root, a move realising its exact value.
    `stats` and `to_actions` are the roots' view (`root_actions_view`)."""
    proven = to_actions(stats.solved, False)
    proven_q = to_actions(stats.solved_qvalues, 0.0)
    visits = to_actions(stats.visits, 0)
    best_proven = jnp.argmax(jnp.where(proven, proven_q + 1e-6 * visits, -jnp.inf), axis=-1)
    has_win = jnp.any(proven & (proven_q >= PROVEN_WIN), axis=-1)
    if tree.value_range is None:  # unbounded: no value is a known win
        has_win = jnp.zeros_like(has_win)
    return jnp.where(has_win | tree.solved[:, tree_lib.ROOT_INDEX], best_proven, action)


# ---- the user's rules ----------------------------------------------------------------------

_RULE_EXAMPLE = "functools.partial(mcts_jax.puct_scores, pb_c_init=1.25)"


def make_rules(root_rule: Callable, interior_rule: Optional[Callable]) -> selection.Rules:
    """Validated `Rules` (each wrapped so equal partials compile once)."""
    check_tree_function(root_rule, "root_rule", _RULE_EXAMPLE)
    if interior_rule is None or interior_rule is root_rule:
        wrapped = HashableFunction(root_rule)
        return selection.Rules(at_root=wrapped, below_root=wrapped)
    check_tree_function(interior_rule, "interior_rule", _RULE_EXAMPLE)
    return selection.Rules(at_root=HashableFunction(root_rule),
                           below_root=HashableFunction(interior_rule))


@dataclasses.dataclass(frozen=True, kw_only=True)
class RulePolicy(Policy):
    """A policy made of selection rules (see `rule_policy`): no root setup,
    `rules.at_root` at the root, `rules.below_root` below, then
    `final_action` ("most_visited", "highest_value" or "sampled") at
    `temperature` (for "sampled")."""

    selection_rules: Optional[selection.Rules] = None
    final_action: str = "most_visited"
    temperature: Any = 1.0

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.selection_rules, selection.Rules):
            raise TypeError(f"RulePolicy needs selection_rules=mcts_jax.Rules(at_root, "
                            f"below_root), got {type(self.selection_rules).__name__}")
        validation.check_final_action(self.final_action)

    def rules(self, options: SearchOptions) -> selection.Rules:
        return self.selection_rules


def rule_policy(root_rule: Callable, interior_rule: Optional[Callable] = None, *,
                final_action: str = "most_visited", **settings) -> RulePolicy:
    """A policy value made of selection rules: `root_rule` at the root (and
    `interior_rule` below it; None: the same rule), then the final action.
    `settings`: `temperature` and any `SearchOptions` field. It runs
    wherever a built-in policy runs (`sharding.search`,
    `arena.SearchPlayer`, self-play); equal rules give equal policies (one
    compilation).

        ucb1_tuned = mcts_jax.rule_policy(my_rule)
        out = ucb1_tuned(params, key, root, recurrent_fn, 64, invalid_actions=invalid)
    """
    return RulePolicy.make("rule_policy", selection_rules=make_rules(root_rule, interior_rule),
                           final_action=final_action, **settings)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _RulesOfSearch(RulePolicy):
    """`search`'s policy: the key goes to the search as it is given."""

    def split_key(self, rng_key):
        return rng_key, rng_key, rng_key


def search(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
           recurrent_fn: base.RecurrentFn, num_simulations: int, *,
           root_rule: Callable, interior_rule: Optional[Callable] = None,
           invalid_actions: Optional[chex.Array] = None,
           tree: Optional[tree_lib.Tree] = None, extra_data: Any = None,
           **options) -> tree_lib.Tree:
    """Runs `num_simulations` simulations of MCTS on each of B roots with the
    given selection rules; returns the `Tree`.

    Each simulation descends from the root by the argmax of the rules'
    scores, expands the edge it reaches with one batched `recurrent_fn`
    call, and backs up the new value (phases.py).

    Args:
      params, rng_key, root, recurrent_fn, num_simulations, invalid_actions, tree: as
        for a policy (`Policy.__call__`). `root.prior_logits` give the root
        priors as they are (add any exploration noise first).
      root_rule: the selection rule at the root,
        `rule(tree, node [B] int32, stats: ChildrenStats) -> scores [B, K]`;
        argmax descends, -inf never does. Constants bound with
        `functools.partial`: `mcts_jax.puct_scores`, `uct_scores`,
        `gumbel_root_scores`, or the user's own.
      interior_rule: the rule below the root; None: `root_rule` everywhere.
      extra_data: any pytree with leading [B], stored as `tree.extra_data`
        for rules to read (Gumbel's root noise lives there).
      options: `options=SearchOptions(...)` and/or any of its fields.

    Compiled once per shapes, recurrent_fn, rules and options (rules that are
    equal `functools.partial`s of one function, with hashable bound
    arguments such as Python numbers, count as equal); inside the caller's
    `jit` it is a nested jit. Do not `vmap` it: it is batched. A policy's
    tree is `policy(...).search_tree`.
    """
    policy = _RulesOfSearch.make("search", selection_rules=make_rules(root_rule, interior_rule),
                                 **options)
    return tree_search.run_compiled(policy, params, rng_key, root, recurrent_fn,
                                    invalid_actions, tree, num_simulations, 0.0,
                                    extra_data=extra_data).search_tree
