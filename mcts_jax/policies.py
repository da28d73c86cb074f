"""The public policies: build the root, run the search, choose the action.

Each policy validates its arguments in Python, then runs one compiled function
(`jax.jit` with the callbacks and configuration static), so a second call with
the same shapes, the same `recurrent_fn` object and the same options never
recompiles. The policies can also be called inside the user's own `jit`.
They are batched already: call them on [B, ...] inputs, do not `vmap` them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from mcts_jax import base
from mcts_jax import reuse
from mcts_jax import search
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax import validation


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Static (hashable) options of one search; part of the compilation key."""

    rule: str  # "uct" or "puct"
    num_simulations: int
    max_nodes: int
    max_depth: Optional[int]
    final_action: str
    value_range: Tuple[float, float]
    uct_c: float = 1.4
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    q_transform: str = "parent_and_siblings"
    dirichlet_fraction: float = 0.0
    dirichlet_alpha: float = 0.3
    solver: bool = False
    expand_all: bool = False
    max_children: Optional[int] = None
    replay_embeddings: bool = False
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    value_scale: float = 0.1
    maxvisit_init: float = 50.0

    def rules(self) -> selection.Rules:
        if self.rule == "uct":
            return selection.make_uct(self.uct_c)
        return selection.make_puct(self.pb_c_init, self.pb_c_base, self.q_transform)

    def completed_q(self, tree, node, stats):
        return selection.completed_qvalues(tree, node, stats, value_scale=self.value_scale,
                                           maxvisit_init=self.maxvisit_init)


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
    if solver:
        proven_loss = in_actions(stats.solved & (stats.solved_qvalues <= -search.PROVEN_WIN),
                                 False)
        not_losing = allowed & ~proven_loss
        allowed = jnp.where(jnp.any(not_losing, axis=-1, keepdims=True), not_losing, allowed)
    # Q in [-1, 1] -> tie-break term in [0, 0.5): never outweighs one visit.
    tie_break = 0.25 * (jnp.clip(qvalues, -1.0, 1.0) + 1.0) * (1.0 - 1e-3)
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
    has_win = jnp.any(proven & (proven_q >= search.PROVEN_WIN), axis=-1)
    return jnp.where(has_win | tree.solved[:, tree_lib.ROOT_INDEX], best_proven, action)


def gumbel_action(tree: tree_lib.Tree, gumbel: chex.Array, baseline_visits: chex.Array,
                  config: SearchConfig) -> tuple[chex.Array, chex.Array]:
    """Gumbel MuZero's choice and policy target.

    Returns:
      action [B]: among the root actions visited most in this search (the
        last survivors of sequential halving), the best
        `g + log P + sigma(completed Q)`.
      action_weights [B, A]: the improved policy
        `softmax(log P + sigma(completed Q))` over the legal actions.
    """
    root = jnp.zeros((tree.batch_size,), jnp.int32)
    stats = tree_lib.children_stats(tree, root)
    completed = config.completed_q(tree, root, stats)
    logits = selection.prior_logits(stats)
    visits_this_search = stats.visits - baseline_visits
    most = jnp.max(jnp.where(stats.legal, visits_this_search, -1), axis=-1)
    survivors = stats.legal & (visits_this_search == most[:, None])
    slot = jnp.argmax(jnp.where(survivors, gumbel + logits + completed, -jnp.inf), axis=-1)
    action = tree_lib.slot_actions(tree, root)[tree_lib.batch_rows(tree.batch_size), slot]
    if config.solver:
        action = play_proven(tree, stats, action)
    improved = jax.nn.softmax(jnp.where(stats.legal, logits + completed, -jnp.inf), axis=-1)
    return action.astype(jnp.int32), tree_lib.slots_to_actions(tree, root, improved, 0.0)


def start_tree(noise_key: chex.PRNGKey, root: base.RootFnOutput, invalid_actions,
               config: SearchConfig, tree: Optional[tree_lib.Tree]) -> tree_lib.Tree:
    """The tree a search starts from: a fresh root per row, or, where `tree`
    has a non-empty row, that row continued.

    A continued root keeps its visits, values, child slots and subtree, but
    its priors are replaced by `root.prior_logits` with fresh Dirichlet
    noise: noise drawn once per move, as in a fresh search, so exploration at
    the root does not fade with inherited visits. With replayed embeddings,
    a continued root also takes `root.embedding` as its state.
    """
    batch_size, num_actions = root.prior_logits.shape
    legal = (jnp.ones((batch_size, num_actions), jnp.bool_) if invalid_actions is None
             else ~invalid_actions)
    priors = root_priors_with_noise(noise_key, root.prior_logits, legal,
                                    config.dirichlet_fraction, config.dirichlet_alpha)
    root_value = tree_lib.to_internal_scale(root.value.astype(jnp.float32), config.value_range)
    fresh = tree_lib.init_tree(root_value, priors, legal, root.embedding, config.max_nodes,
                               config.value_range, max_children=config.max_children,
                               slot_key=search.slot_key(noise_key),
                               replay_embeddings=config.replay_embeddings)
    if tree is None:
        return fresh
    root_index = jnp.zeros((batch_size,), jnp.int32)
    slot_actions = jnp.minimum(tree_lib.slot_actions(tree, root_index), num_actions - 1)
    slot_priors = jnp.where(tree.children[:, tree_lib.ROOT_INDEX] == tree_lib.ILLEGAL, 0.0,
                            jnp.take_along_axis(priors, slot_actions, axis=1))
    slot_priors = jnp.where(
        tree.pruned[:, tree_lib.ROOT_INDEX, None],
        slot_priors / jnp.maximum(jnp.sum(slot_priors, axis=-1, keepdims=True),
                                  jnp.finfo(jnp.float32).tiny),
        slot_priors)
    continued = tree.replace(priors=tree.priors.at[:, tree_lib.ROOT_INDEX].set(slot_priors))
    if tree.replay_embeddings:
        continued = continued.replace(embeddings=fresh.embeddings)
    return reuse.select_rows(tree.num_nodes > 0, continued, fresh)


def _with_result_checks(recurrent_fn: base.RecurrentFn) -> base.RecurrentFn:
    """recurrent_fn with trace-time checks of what it returns (pure Python:
    the compiled search is the same)."""
    def checked(params, rng_key, action, embedding):
        result = recurrent_fn(params, rng_key, action, embedding)
        validation.check_recurrent_result(result, embedding)
        return result

    return checked


def _policy_body(params, rng_key, root: base.RootFnOutput, invalid_actions, temperature,
                 tree: Optional[tree_lib.Tree], *, recurrent_fn: base.RecurrentFn,
                 config: SearchConfig) -> base.PolicyOutput:
    recurrent_fn = _with_result_checks(recurrent_fn)
    noise_key, search_key, action_key = jax.random.split(rng_key, 3)
    tree = start_tree(noise_key, root, invalid_actions, config, tree)
    run = functools.partial(search.run_simulations, params, search_key, recurrent_fn=recurrent_fn,
                            num_simulations=config.num_simulations, max_depth=config.max_depth,
                            solver=config.solver, expand_all_children=config.expand_all)
    if config.rule != "gumbel":
        rules = config.rules()
        tree = run(tree=tree, rules_for=lambda _: rules)
        action = choose_action(action_key, tree, config.final_action, temperature, config.solver)
        return base.PolicyOutput(action=action, action_weights=tree.summary().visit_probs,
                                 search_tree=tree)

    root_index = jnp.zeros((tree.batch_size,), jnp.int32)
    root_stats = tree_lib.children_stats(tree, root_index)
    # Drawn in action space from split(rng_key)[1], as mctx.gumbel_muzero_policy
    # draws it, so that equal keys give both libraries equal noise.
    gumbel_key = jax.random.split(rng_key)[1]
    gumbel = config.gumbel_scale * jax.random.gumbel(gumbel_key, root.prior_logits.shape)
    gumbel = jnp.where(root_stats.legal, jnp.take_along_axis(
        gumbel, jnp.minimum(tree_lib.slot_actions(tree, root_index), tree.num_actions - 1),
        axis=1), 0.0)
    num_considered = jnp.minimum(config.max_num_considered_actions,
                                 jnp.sum(root_stats.legal, axis=-1)).astype(jnp.int32)
    table = selection.halving_table(config.max_num_considered_actions, config.num_simulations)

    def rules_for(simulation_index):
        return selection.make_gumbel(simulation_index, table, num_considered, gumbel,
                                     root_stats.visits, value_scale=config.value_scale,
                                     maxvisit_init=config.maxvisit_init)

    tree = run(tree=tree, rules_for=rules_for)
    action, action_weights = gumbel_action(tree, gumbel, root_stats.visits, config)
    return base.PolicyOutput(action=action, action_weights=action_weights, search_tree=tree)


# The compiled search (checks "host" and "off"): one compilation per shapes,
# recurrent_fn object and SearchConfig.
_run_policy = jax.jit(_policy_body, static_argnames=("recurrent_fn", "config"))


@functools.partial(jax.jit, static_argnames=("recurrent_fn", "config"))
def _run_policy_checkified(params, rng_key, root: base.RootFnOutput, invalid_actions,
                           temperature, tree: Optional[tree_lib.Tree], *,
                           recurrent_fn: base.RecurrentFn, config: SearchConfig):
    """checks="checkify": the same search with the value checks compiled in;
    returns (checkify error, PolicyOutput)."""
    def checked(params, rng_key, root, invalid_actions, temperature, tree):
        validation.checkify_root(root, invalid_actions, temperature)
        out = _policy_body(params, rng_key, root, invalid_actions, temperature, tree,
                           recurrent_fn=recurrent_fn, config=config)
        validation.checkify_tree(out.search_tree)
        return out

    return checkify.checkify(checked, errors=checkify.user_checks)(
        params, rng_key, root, invalid_actions, temperature, tree)


def _policy(params, rng_key, root, recurrent_fn, num_simulations, invalid_actions, max_depth,
            max_nodes, temperature, final_action, value_range, tree, solver, expand_all,
            max_children, replay_embeddings, checks, **rule_options):
    checks = validation.check_mode(checks)
    validation.check_rng_key(rng_key)
    batch_size, num_actions = validation.check_root(root, invalid_actions,
                                                    values=checks == "host")
    if not callable(recurrent_fn):
        raise TypeError(f"recurrent_fn must be callable, got {type(recurrent_fn).__name__}")
    if tree is not None and not isinstance(tree, tree_lib.Tree):
        raise TypeError(f"tree must be a mcts_jax.Tree or None, got {type(tree).__name__}")
    solver = validation.check_flag("solver", solver)
    expand_all = validation.check_flag("expand_all", expand_all)
    if tree is not None and max_nodes is None:
        max_nodes = tree.max_nodes
    if tree is not None and max_children is None:
        max_children = tree.max_children
    if tree is not None and not replay_embeddings:
        replay_embeddings = tree.replay_embeddings
    max_children = validation.check_layout(max_children, replay_embeddings, num_actions)
    if max_nodes is None and expand_all:
        max_nodes = num_simulations * (max_children or num_actions) + 1
    max_nodes = validation.check_search_args(num_simulations, max_nodes, max_depth,
                                             final_action, temperature, value_range,
                                             continuing=tree is not None,
                                             values=checks == "host")
    value_range = tuple(float(v) for v in value_range)
    if tree is not None:
        validation.check_tree(tree, root, batch_size, num_actions, max_nodes, value_range,
                              max_children, bool(replay_embeddings))
    config = SearchConfig(num_simulations=int(num_simulations), max_nodes=max_nodes,
                          max_depth=None if max_depth is None else int(max_depth),
                          final_action=final_action, value_range=value_range,
                          solver=bool(solver), expand_all=bool(expand_all),
                          max_children=max_children,
                          replay_embeddings=bool(replay_embeddings), **rule_options)
    temperature = jnp.asarray(temperature, jnp.float32)
    if checks != "checkify":
        return _run_policy(params, rng_key, root, invalid_actions, temperature, tree,
                           recurrent_fn=recurrent_fn, config=config)
    error, out = _run_policy_checkified(params, rng_key, root, invalid_actions, temperature,
                                        tree, recurrent_fn=recurrent_fn, config=config)
    validation.raise_or_stage(error)
    return out


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
        summaries answer in the same scale.
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
    return _policy(params, rng_key, root, recurrent_fn, num_simulations, invalid_actions,
                   max_depth, max_nodes, temperature, final_action, value_range, tree, solver,
                   expand_all, max_children, replay_embeddings, checks, rule="uct",
                   uct_c=validation.check_number("uct_c", uct_c, low=0.0))


def alphazero_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                     recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                     invalid_actions: Optional[chex.Array] = None,
                     max_depth: Optional[int] = None,
                     max_nodes: Optional[int] = None,
                     pb_c_init: float = 1.25,
                     pb_c_base: float = 19652.0,
                     dirichlet_fraction: float = 0.25,
                     dirichlet_alpha: float = 0.3,
                     q_transform: str = "parent_and_siblings",
                     final_action: str = "sampled",
                     temperature: float = 1.0,
                     value_range: Tuple[float, float] = (-1.0, 1.0),
                     tree: Optional[tree_lib.Tree] = None,
                     solver: bool = False,
                     expand_all: bool = False,
                     max_children: Optional[int] = None,
                     replay_embeddings: bool = False,
                     checks: str = "host") -> base.PolicyOutput:
    """AlphaZero PUCT search with priors and values from `recurrent_fn`.

    Selection maximises `Q + c(N) * P * sqrt(N) / (1 + n)` with
    `c(N) = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)`. Root priors are
    mixed with Dirichlet noise over the legal actions,
    `(1 - dirichlet_fraction) * P + dirichlet_fraction * Dir(dirichlet_alpha)`;
    set `dirichlet_fraction=0` for evaluation. `q_transform` is
    "parent_and_siblings" (min-max normalised as in mctx's muzero_policy) or
    "raw" (see `selection.normalized_qvalues`). The defaults match
    `mctx.muzero_policy`, including sampling the action at temperature 1.

    The remaining arguments are as in `uct_policy`.
    """
    if not isinstance(q_transform, str) or q_transform not in selection.Q_TRANSFORMS:
        raise ValueError(f"q_transform must be one of {selection.Q_TRANSFORMS}, "
                         f"got {q_transform!r}")
    return _policy(params, rng_key, root, recurrent_fn, num_simulations, invalid_actions,
                   max_depth, max_nodes, temperature, final_action, value_range, tree, solver,
                   expand_all, max_children, replay_embeddings, checks, rule="puct",
                   pb_c_init=validation.check_number("pb_c_init", pb_c_init, low=0.0),
                   pb_c_base=validation.check_number("pb_c_base", pb_c_base, low=0.0,
                                                     low_inclusive=False),
                   q_transform=q_transform,
                   dirichlet_fraction=validation.check_number(
                       "dirichlet_fraction", dirichlet_fraction, low=0.0, high=1.0),
                   dirichlet_alpha=validation.check_number(
                       "dirichlet_alpha", dirichlet_alpha, low=0.0, low_inclusive=False))


def gumbel_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                  recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                  invalid_actions: Optional[chex.Array] = None,
                  max_depth: Optional[int] = None,
                  max_nodes: Optional[int] = None,
                  max_num_considered_actions: int = 16,
                  gumbel_scale: float = 1.0,
                  value_scale: float = 0.1,
                  maxvisit_init: float = 50.0,
                  value_range: Tuple[float, float] = (-1.0, 1.0),
                  tree: Optional[tree_lib.Tree] = None,
                  solver: bool = False,
                  max_children: Optional[int] = None,
                  replay_embeddings: bool = False,
                  checks: str = "host") -> base.PolicyOutput:
    """Gumbel MuZero: policy improvement that works with very few simulations.

    At the root, Gumbel noise `g` is drawn for every legal action; sequential
    halving spends the budget on the `max_num_considered_actions` best by
    `g + log P` and halves them, by `g + log P + sigma(completed Q)`, until
    the survivor is the action. `sigma(completed Q)` fills unvisited children
    with the node's mixed value, min-max rescales and multiplies by
    `(maxvisit_init + max visits) * value_scale`. Below the root the child
    whose visit share lags most behind `softmax(log P + sigma(completed Q))`
    is chosen (deterministic). `action_weights` is that improved policy at the
    root: the training target. The defaults match `mctx.gumbel_muzero_policy`.

    `gumbel_scale` plays the role of a temperature (0: deterministic); the
    `final_action` and `temperature` options of the other policies do not
    apply. With `tree=`, sequential halving counts only this search's visits.
    The other arguments are as in `uct_policy`.
    """
    if isinstance(max_num_considered_actions, bool) or not isinstance(
            max_num_considered_actions, (int, np.integer)) or max_num_considered_actions < 1:
        raise ValueError(f"max_num_considered_actions must be an int >= 1, got "
                         f"{max_num_considered_actions!r}")
    return _policy(params, rng_key, root, recurrent_fn, num_simulations, invalid_actions,
                   max_depth, max_nodes, 0.0, "most_visited", value_range, tree, solver,
                   False, max_children, replay_embeddings, checks, rule="gumbel",
                   max_num_considered_actions=int(max_num_considered_actions),
                   gumbel_scale=validation.check_number("gumbel_scale", gumbel_scale, low=0.0),
                   value_scale=validation.check_number("value_scale", value_scale, low=0.0),
                   maxvisit_init=validation.check_number("maxvisit_init", maxvisit_init,
                                                         low=0.0))
