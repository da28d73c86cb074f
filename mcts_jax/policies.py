"""The public policies: a root setup, `search`, and a final action.

    uct_policy        no root setup          UCB1 everywhere       most visited / sampled
    alphazero_policy  Dirichlet root noise   PUCT everywhere       most visited / sampled
    gumbel_policy     Gumbel noise           halving at the root,  Gumbel's choice
                      (tree.extra_data)      deterministic below

Each policy validates its arguments in Python, then runs one compiled function
(`jax.jit` with the callbacks, the options record and the policy's settings
static), so a second call with the same shapes, the same `recurrent_fn`
object and equal options never recompiles. The policies can also be called
inside the user's own `jit`. They are batched already: call them on
[B, ...] inputs, do not `vmap` them. mctx's own signatures are in
`mctx_policies.py`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import base
from mcts_jax import phases
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax import validation
from mcts_jax.options import SearchOptions, Static, make_options
from mcts_jax.qtransforms import (check_tree_function, qtransform_by_parent_and_siblings,
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
    completed = qtransform(tree, root, stats)
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


# ---- the policies' settings and bodies ----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class RulesSettings:
    rules: selection.Rules  # of Static functions
    final_action: str


@dataclasses.dataclass(frozen=True)
class AlphaZeroSettings:
    rule: Static
    dirichlet_fraction: float
    dirichlet_alpha: float
    final_action: str


@dataclasses.dataclass(frozen=True)
class GumbelSettings:
    max_num_considered_actions: int
    gumbel_scale: float
    qtransform: Static


def search_then_choose(params, search_key, action_key, root, invalid_actions, temperature,
                       tree, extra_data, recurrent_fn, options: SearchOptions,
                       rules: selection.Rules, final_action: str) -> base.PolicyOutput:
    """The search, then `choose_action`; `action_weights` are the root visit
    distribution (UCT, PUCT and rule policies)."""
    tree = search_body(params, search_key, root, invalid_actions, tree, extra_data,
                       recurrent_fn=recurrent_fn, rules=rules, options=options)
    action = choose_action(action_key, tree, final_action, temperature, options.solver)
    return base.PolicyOutput(action=action, action_weights=tree.summary().visit_probs,
                             search_tree=tree)


def rules_body(params, rng_key, root, invalid_actions, temperature, tree, extra_data, *,
               recurrent_fn, options: SearchOptions,
               settings: RulesSettings) -> base.PolicyOutput:
    """The search with the given rules (UCT, or a user's), then the final action."""
    search_key, action_key = jax.random.split(rng_key)
    return search_then_choose(params, search_key, action_key, root, invalid_actions,
                              temperature, tree, extra_data, recurrent_fn, options,
                              settings.rules, settings.final_action)


def alphazero_body(params, rng_key, root, invalid_actions, temperature, tree, extra_data, *,
                   recurrent_fn, options: SearchOptions,
                   settings: AlphaZeroSettings) -> base.PolicyOutput:
    """AlphaZero: Dirichlet noise over the legal root actions, the search,
    then the final action."""
    noise_key, search_key, action_key = jax.random.split(rng_key, 3)
    if settings.dirichlet_fraction != 0.0:  # 0: the root is searched as given
        legal = (jnp.ones(root.prior_logits.shape, jnp.bool_) if invalid_actions is None
                 else ~invalid_actions)
        priors = root_priors_with_noise(noise_key, root.prior_logits, legal,
                                        settings.dirichlet_fraction, settings.dirichlet_alpha)
        root = root.replace(prior_logits=tree_lib.log_probabilities(priors))
    return search_then_choose(params, search_key, action_key, root, invalid_actions,
                              temperature, tree, extra_data, recurrent_fn, options,
                              selection.everywhere(settings.rule), settings.final_action)


def gumbel_body(params, rng_key, root, invalid_actions, temperature, tree, extra_data, *,
                recurrent_fn, options: SearchOptions,
                settings: GumbelSettings) -> base.PolicyOutput:
    """Gumbel MuZero: Gumbel noise into `extra_data`, halving at the root,
    the deterministic rule below, Gumbel's choice. Keys as mctx splits them."""
    del temperature, extra_data
    search_key, gumbel_key = jax.random.split(rng_key)
    gumbel = settings.gumbel_scale * jax.random.gumbel(gumbel_key, root.prior_logits.shape,
                                                       root.prior_logits.dtype)
    visits_before = jnp.zeros(root.prior_logits.shape, jnp.int32)
    if tree is not None:
        root_index = jnp.zeros((tree.batch_size,), jnp.int32)
        earlier = tree_lib.slots_to_actions(
            tree, root_index, tree_lib.children_stats(tree, root_index).visits, 0)
        visits_before = jnp.where((tree.num_nodes > 0)[:, None], earlier, 0)
    extra = selection.GumbelExtraData(root_gumbel=gumbel, root_visits_before=visits_before)
    rules = selection.Rules(
        at_root=functools.partial(selection.gumbel_root_scores, num_simulations=options.num_simulations,
                                  max_num_considered_actions=settings.max_num_considered_actions,
                                  qtransform=settings.qtransform),
        below_root=functools.partial(selection.gumbel_interior_scores,
                                     qtransform=settings.qtransform))
    tree = search_body(params, search_key, root, invalid_actions, tree, extra,
                       recurrent_fn=recurrent_fn, rules=rules, options=options)
    action, action_weights = gumbel_action(tree, settings.qtransform, options.solver)
    return base.PolicyOutput(action=action, action_weights=action_weights, search_tree=tree)


def run_policy(body: Callable, params, rng_key, root, recurrent_fn, invalid_actions,
               temperature, tree, options: SearchOptions, settings, checks: str
               ) -> base.PolicyOutput:
    """Runs a policy body compiled (see `tree_search.run_body`)."""
    return run_body(body, params, rng_key, root, recurrent_fn, invalid_actions, temperature,
                    tree, None, options, settings, checks)


def static_number(name: str, value: Any, **bounds) -> Any:
    """A policy constant: checked and made a Python float when concrete; a
    traced value (inside the caller's jit) is kept as it is."""
    if isinstance(value, jax.core.Tracer):
        return value
    return validation.check_number(name, value, **bounds)


def puct_rule(pb_c_init, pb_c_base, qtransform: Callable, tie_break: float = 0.0) -> Static:
    """`selection.puct_scores` with its constants checked and bound."""
    return Static(functools.partial(
        selection.puct_scores, qtransform=qtransform, tie_break=tie_break,
        pb_c_init=static_number("pb_c_init", pb_c_init, low=0.0),
        pb_c_base=static_number("pb_c_base", pb_c_base, low=0.0, low_inclusive=False)))


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
    check_tree_function(qtransform, "qtransform",
                        "functools.partial(mcts_jax.qtransform_by_min_max, min_value=-1.0, "
                        "max_value=1.0)")
    return qtransform


def check_considered(max_num_considered_actions: Any) -> int:
    if isinstance(max_num_considered_actions, bool) or not isinstance(
            max_num_considered_actions, (int, np.integer)) or max_num_considered_actions < 1:
        raise ValueError(f"max_num_considered_actions must be an int >= 1, got "
                         f"{max_num_considered_actions!r}")
    return int(max_num_considered_actions)


# ---- the public policies -----------------------------------------------------------------

def uct_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
               recurrent_fn: base.RecurrentFn, num_simulations: int, *,
               invalid_actions: Optional[chex.Array] = None,
               max_depth: Optional[int] = None,
               max_nodes: Optional[int] = None,
               uct_c: float = 1.4,
               final_action: str = "most_visited",
               temperature: float = 1.0,
               value_range: Tuple[float, float] = (-1.0, 1.0),
               tree: Optional[tree_lib.Tree] = None,
               solver: bool = False,
               expand_all: bool = False,
               max_children: Optional[int] = None,
               replay_embeddings: bool = False,
               simulations_per_step: int = 1,
               steering: str = "unobserved",
               checks: str = "host") -> base.PolicyOutput:
    """Classic UCT: UCB1 selection, values from `recurrent_fn` (e.g. playouts).

    Selection scores each legal child with `Q + uct_c * sqrt(ln N / n)`, Q on
    the user's `value_range` from the point of view of the player choosing;
    unvisited legal children come first (lowest action id first), so every
    legal child is tried once before any is tried twice. Priors are stored but
    not used for scoring.

    Args:
      params: passed to `recurrent_fn` unchanged.
      rng_key: PRNG key; the same key gives the same tree, bit for bit.
      root: `RootFnOutput` with prior_logits [B, A], value [B], embedding.
      recurrent_fn: `(params, key, action [B], embedding) -> (RecurrentFnOutput,
        embedding)`, called once per simulation for the whole batch.
      num_simulations: simulations per search (Python int >= 1).
      invalid_actions: [B, A] bool, True = illegal at the root. Below the root,
        legality comes from `RecurrentFnOutput.invalid_actions`.
      max_depth: deepest node depth that can be created (root = 0); a node at
        that depth is re-evaluated with its stored value when reached again.
        None: unlimited.
      max_nodes: tree capacity N per search, >= num_simulations + 1 (default).
      uct_c: exploration constant.
      final_action: "most_visited", "highest_value" or "sampled".
      temperature: for "sampled", `pi(a) ~ N(a) ** (1 / temperature)`; 0 is
        greedy. Ignored by the other choices.
      value_range: (-1, 1) or (0, 1), the scale of every reward and value that
        `root` and `recurrent_fn` give. (0, 1) maps each of them with
        `x -> 2 x - 1` (so a neutral reward is 0.5 and a draw is worth 0.5);
        summaries answer in the same scale. None: unbounded returns (a
        game score such as 2048's), used as they are; Q is then min-max
        normalised over the node and its visited children before the
        exploration term, and the solver proves only from fully proven
        children.
      tree: a `Tree` to continue (from `get_subtree`, `reset_tree`, or an
        earlier search): non-empty rows keep their statistics and gain
        `num_simulations` more; empty rows start from `root`. Its capacity is
        `max_nodes`; once full, simulations re-evaluate leaves instead of
        expanding (nothing is ever written past it).
      solver: MCTS-solver. Terminal results propagate as proven values: a
        node is proven when a child is proven to give its mover the best
        possible value (a win), or when all legal children are proven (then
        its value is their best). Proven children are never entered again; a
        proven win is always played, proven losses are avoided while another
        move remains; `summary()` reports `proven` / `proven_qvalues`.
      expand_all: when a leaf is first expanded, create all its legal children
        at once, evaluate each (one recurrent_fn call on B x A transitions, so
        recurrent_fn must accept any batch size) and back up their summed
        values, one visit each. Default capacity becomes
        `num_simulations * K + 1` (K = max_children, or A).
      max_children: K, the compact layout: each node keeps K child slots
        holding its legal actions (the K highest priors when more are legal,
        ties broken at random, the kept priors renormalised) with their
        action ids, instead of one slot per action id. With K >= the most
        legal moves a position can have (chess: 218) nothing is dropped and
        the search is the same as the dense one, visit for visit. Summaries
        and `action_weights` stay in action space [B, A]. None: dense.
      replay_embeddings: store only the root's embedding; a leaf's state is
        recomputed at expansion by replaying the actions from the root with
        recurrent_fn's state transition (its priors and values are unused,
        and XLA drops that work). Saves the per-node embedding memory at the
        cost of `depth` extra transitions per simulation; needs transitions
        that depend only on (embedding, action), not on the key. Bound the
        path with `max_depth` for large `max_nodes` (the replay buffer is
        [B, min(max_depth, max_nodes)] int32).
      simulations_per_step: P, simulations per step in every tree (parallel
        leaves, for one position or a few): each step descends P paths,
        later ones steered away from earlier ones by virtual visits,
        evaluates the B x P leaves in one recurrent_fn call (which must
        accept any batch size) and backs up all P; `num_simulations` stays
        the total. Two paths reaching one unexpanded edge create one node and
        share its evaluation. 1 (default): one simulation per step. See
        `mcts_jax/parallel.py`.
      steering: with P > 1, "unobserved" (WU-UCT: in-flight paths count as
        visits, Q-values unchanged) or "virtual_loss" (each also counts as a
        loss for the player choosing).
      checks: value checks (shape, dtype and option checks always run, at
        trace time, for free). "host" (default): concrete root arrays are
        copied to the host and checked for NaN / +inf logits, non-finite
        values and all-illegal rows before the search (skipped inside the
        caller's `jit`). "off": none (production runs: no host copy, no
        wait for the root arrays). "checkify": the root checks, plus
        non-finite rewards, discounts, values and prior logits returned by
        recurrent_fn during the search, compiled in with
        `jax.experimental.checkify`; outside `jit` a failure raises
        `checkify.JaxRuntimeError`, inside the caller's `jit` wrap the caller
        with `checkify.checkify`. The search itself is the same in every
        mode, bit for bit. See docs/validation.md.

    Returns:
      `PolicyOutput(action [B], action_weights [B, A] = root visit
      distribution, search_tree)`.
    """
    options = make_options(root, invalid_actions, num_simulations, tree=tree,
                           max_depth=max_depth, max_nodes=max_nodes, solver=solver,
                           expand_all=expand_all, max_children=max_children,
                           replay_embeddings=replay_embeddings, value_range=value_range,
                           simulations_per_step=simulations_per_step, steering=steering,
                           checks=checks)
    validation.check_final_action(final_action, temperature, values=checks == "host")
    rule = Static(functools.partial(selection.uct_scores,
                                    uct_c=validation.check_number("uct_c", uct_c, low=0.0)))
    return run_policy(rules_body, params, rng_key, root, recurrent_fn, invalid_actions,
                      temperature, tree, options,
                      RulesSettings(rules=selection.everywhere(rule), final_action=final_action),
                      checks)


@dataclasses.dataclass(frozen=True)
class RulePolicy:
    """A policy made of selection rules (see `rule_policy`); hashable, so equal
    instances share their compiled programs wherever a policy is a static
    argument (sharding, arena, self-play)."""

    rules: selection.Rules
    final_action: str = "most_visited"

    def __call__(self, params, rng_key, root, recurrent_fn, num_simulations, *,
                 invalid_actions=None, final_action=None, temperature=1.0, checks="host",
                 **tree_options) -> base.PolicyOutput:
        final_action = self.final_action if final_action is None else final_action
        options = make_options(root, invalid_actions, num_simulations, checks=checks,
                               **tree_options)
        validation.check_final_action(final_action, temperature, values=checks == "host")
        settings = RulesSettings(rules=self.rules, final_action=final_action)
        return run_policy(rules_body, params, rng_key, root, recurrent_fn, invalid_actions,
                          temperature, tree_options.get("tree"), options, settings, checks)


def rule_policy(root_rule: Callable, interior_rule: Optional[Callable] = None, *,
                final_action: str = "most_visited") -> RulePolicy:
    """A policy made of selection rules: `search` with `root_rule` (and
    `interior_rule` below the root; None: the same rule), then the final
    action (`final_action` as in `uct_policy`).

    Returns `policy(params, rng_key, root, recurrent_fn, num_simulations, *,
    invalid_actions=None, final_action=None, temperature=1.0, checks="host",
    **tree_options) -> PolicyOutput` (final_action None: the one given here;
    tree_options: `search`'s, but `extra_data`) with `action_weights` the root
    visit distribution: it runs wherever a built-in policy runs
    (`sharding.search`, `arena.SearchPlayer`, self-play). Equal rules give
    equal policies (one compilation).

        ucb1_tuned = mcts_jax.rule_policy(my_rule)
        out = ucb1_tuned(params, key, root, recurrent_fn, 64, invalid_actions=invalid)
    """
    validation.check_final_action(final_action, 1.0)
    return RulePolicy(rules=make_rules(root_rule, interior_rule), final_action=final_action)


def alphazero_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                     recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                     invalid_actions: Optional[chex.Array] = None,
                     max_depth: Optional[int] = None,
                     max_nodes: Optional[int] = None,
                     pb_c_init: float = 1.25,
                     pb_c_base: float = 19652.0,
                     dirichlet_fraction: float = 0.25,
                     dirichlet_alpha: float = 0.3,
                     qtransform: Optional[Callable] = None,
                     q_transform: Optional[str] = None,
                     final_action: str = "sampled",
                     temperature: float = 1.0,
                     value_range: Tuple[float, float] = (-1.0, 1.0),
                     tree: Optional[tree_lib.Tree] = None,
                     solver: bool = False,
                     expand_all: bool = False,
                     max_children: Optional[int] = None,
                     replay_embeddings: bool = False,
                     simulations_per_step: int = 1,
                     steering: str = "unobserved",
                     checks: str = "host") -> base.PolicyOutput:
    """AlphaZero PUCT search with priors and values from `recurrent_fn`.

    Selection maximises `Q + c(N) * P * sqrt(N) / (1 + n)` with
    `c(N) = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)`. Root priors are
    mixed with Dirichlet noise over the legal actions,
    `(1 - dirichlet_fraction) * P + dirichlet_fraction * Dir(dirichlet_alpha)`;
    set `dirichlet_fraction=0` for evaluation. `qtransform` is the Q
    transform, a function (mctx's `qtransform_by_parent_and_siblings` by
    default, or `qtransform_by_min_max`, `qtransform_raw`, the user's own,
    constants bound with `functools.partial`); the older `q_transform`
    strings "parent_and_siblings" and "raw" name the first and the last. The
    defaults match `mctx.muzero_policy`, including sampling the action at
    temperature 1 (`mcts_jax.muzero_policy` is the same search with mctx's
    signature, root noise and tie-breaking).

    The remaining arguments are as in `uct_policy`.
    """
    qtransform = resolve_qtransform(qtransform, q_transform, qtransform_by_parent_and_siblings)
    options = make_options(root, invalid_actions, num_simulations, tree=tree,
                           max_depth=max_depth, max_nodes=max_nodes, solver=solver,
                           expand_all=expand_all, max_children=max_children,
                           replay_embeddings=replay_embeddings, value_range=value_range,
                           simulations_per_step=simulations_per_step, steering=steering,
                           checks=checks)
    validation.check_final_action(final_action, temperature, values=checks == "host")
    settings = AlphaZeroSettings(
        rule=puct_rule(pb_c_init, pb_c_base, qtransform), final_action=final_action,
        dirichlet_fraction=validation.check_number("dirichlet_fraction", dirichlet_fraction,
                                                   low=0.0, high=1.0),
        dirichlet_alpha=validation.check_number("dirichlet_alpha", dirichlet_alpha, low=0.0,
                                                low_inclusive=False))
    return run_policy(alphazero_body, params, rng_key, root, recurrent_fn, invalid_actions,
                      temperature, tree, options, settings, checks)


def gumbel_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                  recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                  invalid_actions: Optional[chex.Array] = None,
                  max_depth: Optional[int] = None,
                  max_nodes: Optional[int] = None,
                  max_num_considered_actions: int = 16,
                  gumbel_scale: float = 1.0,
                  value_scale: float = 0.1,
                  maxvisit_init: float = 50.0,
                  qtransform: Optional[Callable] = None,
                  value_range: Tuple[float, float] = (-1.0, 1.0),
                  tree: Optional[tree_lib.Tree] = None,
                  solver: bool = False,
                  max_children: Optional[int] = None,
                  replay_embeddings: bool = False,
                  checks: str = "host",
                  stop_at_terminal: bool = True,
                  node_per_simulation: bool = False,
                  loop_fn: Callable = jax.lax.fori_loop,
                  simulations_per_step: int = 1,
                  steering: str = "unobserved") -> base.PolicyOutput:
    """Gumbel MuZero: policy improvement that works with very few simulations.

    At the root, Gumbel noise `g` is drawn for every legal action; sequential
    halving spends the budget on the `max_num_considered_actions` best by
    `g + log P` and halves them, by `g + log P + sigma(completed Q)`, until
    the survivor is the action. `sigma(completed Q)` is `qtransform` (default
    `qtransform_completed_by_mix_value(value_scale, maxvisit_init)`: unvisited
    children get the node's mixed value, min-max rescaled, times
    `(maxvisit_init + max visits) * value_scale`; give `qtransform=` to change
    any of its options, e.g. `functools.partial(
    mcts_jax.qtransform_completed_by_mix_value, use_mixed_value=False)`). Below the root the child
    whose visit share lags most behind `softmax(log P + sigma(completed Q))`
    is chosen (deterministic). `action_weights` is that improved policy at the
    root: the training target. The defaults match `mctx.gumbel_muzero_policy`
    (`mcts_jax.gumbel_muzero_policy` is this search with mctx's signature).
    `search_tree.extra_data` is `selection.GumbelExtraData(root_gumbel [B, A], ...)`.

    `gumbel_scale` plays the role of a temperature (0: deterministic); the
    `final_action` and `temperature` options of the other policies do not
    apply. With `tree=`, sequential halving counts only this search's visits.
    The other arguments are as in `uct_policy`.
    """
    default = functools.partial(
        qtransform_completed_by_mix_value,
        value_scale=validation.check_number("value_scale", value_scale, low=0.0),
        maxvisit_init=validation.check_number("maxvisit_init", maxvisit_init, low=0.0))
    qtransform = resolve_qtransform(qtransform, None, default)
    options = make_options(root, invalid_actions, num_simulations, tree=tree,
                           max_depth=max_depth, max_nodes=max_nodes, solver=solver,
                           max_children=max_children, replay_embeddings=replay_embeddings,
                           value_range=value_range, stop_at_terminal=stop_at_terminal,
                           node_per_simulation=node_per_simulation, loop_fn=loop_fn,
                           simulations_per_step=simulations_per_step, steering=steering,
                           checks=checks)
    settings = GumbelSettings(
        max_num_considered_actions=check_considered(max_num_considered_actions),
        gumbel_scale=static_number("gumbel_scale", gumbel_scale, low=0.0),
        qtransform=Static(qtransform))
    return run_policy(gumbel_body, params, rng_key, root, recurrent_fn, invalid_actions,
                      0.0, tree, options, settings, checks)
