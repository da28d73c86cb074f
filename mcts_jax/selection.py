"""Selection rules: the score of each child slot of a node, for a batch of rows.

The rule contract (public): a rule is a function

    rule(tree, node [B] int32, stats: ChildrenStats) -> scores [B, K] float

where `stats` are the node's `ChildrenStats` (its K child slots and the node
itself, gathered once by the search); the search descends into the argmax
(lowest slot wins ties). Constants are bound with `functools.partial`, e.g.
`functools.partial(puct_scores, pb_c_init=1.5)`. A search uses a `Rules`
pair: one rule at the root and one below it (the same for UCT and PUCT;
Gumbel's sequential halving at the root, its deterministic rule below), so no
step computes a rule it does not use. Every rule reads only the K children of
the given node, so one selection step costs O(B K).

What the descent makes of a user's rule's scores (rule_screen.usable_scores, one place):
illegal slots (`stats.legal` False) are never chosen, whatever a rule scores
them (the built-in rules score them -inf anyway); -inf is never chosen; +inf
is a legitimate "choose this" (the lowest such slot); NaN is treated as -inf.
A node whose legal slots all score -inf is a dead end, re-evaluated instead
of descended; one whose legal slots all score NaN or -inf, some NaN (the
rule went wrong there), is still descended: into the NaN slot with the
highest prior (the lowest on ties). A rule's output is checked when the
search is traced: float [B, K] (integers and bools are refused, not cast),
else a TypeError or ValueError naming the rule; so is a Q transform's
inside the rules here (`call_qtransform`).

Q-values are from the point of view of the player to move at `node` and are put
on the user's value scale (`tree.value_range`) before exploration terms are
added, so `uct_c` means the same thing for rewards in [-1, 1] and in [0, 1]
relative to their own range.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple, Optional, Tuple

import chex
import jax
import jax.numpy as jnp

from mcts_jax import tree as tree_lib
from mcts_jax.hashable import HashableFunction, describe_function
from mcts_jax.qtransforms import (OUR_QTRANSFORMS, qtransform_by_parent_and_siblings,
                                  qtransform_completed_by_mix_value, qtransform_raw)

ScoreFn = Callable[[tree_lib.Tree, chex.Array, tree_lib.ChildrenStats], chex.Array]

# The rules' constants, each defined here once: UCB1's exploration constant,
# and PUCT's c(N) = PB_C_INIT + log((N + PB_C_BASE + 1) / PB_C_BASE)
# (AlphaZero's values, mctx's defaults). MuZeroPolicy's PUCT adds
# MUZERO_TIE_BREAK * U[0, 1) to every score, as mctx's does.
UCT_C = 1.4
PB_C_INIT = 1.25
PB_C_BASE = 19652.0
# Gumbel MuZero: root actions sequential halving considers at most (mctx's default).
MAX_NUM_CONSIDERED_ACTIONS = 16
MUZERO_TIE_BREAK = 1e-7


def check_slot_values(values, name: str, fn: Callable, batch_size: int, num_slots: int,
                      what: str = "scores") -> None:
    """Trace-time check (free) of what a rule or Q transform returned: a
    float array [B, K]. `name` says which argument it was ("root_rule",
    "qtransform of puct_scores"), `fn` the function (named in the message).
    Integer and bool arrays are refused, not cast: a rule's scores need
    -inf, and a bool is usually a mask meant for `jnp.where`."""
    if (hasattr(values, "shape") and hasattr(values, "dtype")
            and tuple(values.shape) == (batch_size, num_slots)
            and jnp.issubdtype(values.dtype, jnp.floating)):
        return
    expected = f"expected float [B, K] = [{batch_size}, {num_slots}]"
    told = f"{name} is {describe_function(fn)}"
    if not (hasattr(values, "shape") and hasattr(values, "dtype")):
        raise TypeError(f"{name} returned {type(values).__name__}, not an array; {told}: "
                        f"{expected}, one per child slot of each row's node")
    shape, dtype = tuple(values.shape), values.dtype
    got = f"got shape {shape}, dtype {dtype}"
    if shape != (batch_size, num_slots):
        raise ValueError(f"{name} returned {what} of shape {shape}; expected (B, K) = "
                         f"{(batch_size, num_slots)}, one per child slot of each row's node "
                         f"(B rows, K child slots). {told}: {got}; {expected}.")
    if not jnp.issubdtype(dtype, jnp.floating):
        hint = ("a bool array is a mask, not a score: return "
                "jnp.where(mask, scores, -jnp.inf)" if dtype == jnp.bool_ else
                "integers are not cast: return them .astype(jnp.float32)")
        raise TypeError(f"{name} returned {what} of dtype {dtype}; expected a float dtype "
                        f"(-inf: never descend). {told}: {got}; {expected}; {hint}.")


def call_qtransform(qtransform: Callable, tree: tree_lib.Tree, node: chex.Array,
                    stats: tree_lib.ChildrenStats, rule: str) -> chex.Array:
    """`qtransform(tree, node, stats)`, checked at trace time to be float
    [B, K] (`check_slot_values`; a wrong shape is never broadcast). `rule`
    names the rule that calls it, for the message."""
    values = qtransform(tree, node, stats)
    check_slot_values(values, f"the qtransform of {rule}", qtransform, node.shape[0],
                      stats.index.shape[-1], what="values")
    return values


class Rules(NamedTuple):
    """The selection rule of one simulation: `at_root` scores the root's
    children (the first step of every descent), `below_root` every deeper node."""

    at_root: ScoreFn
    below_root: ScoreFn


def everywhere(rule: ScoreFn) -> Rules:
    """The same rule at the root and below it."""
    return Rules(at_root=rule, below_root=rule)


def uct_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats, *,
               uct_c: float = UCT_C) -> chex.Array:
    """UCB1: `Q + uct_c * sqrt(ln N / n)`; unvisited legal children score +inf.

    N is the visit count of `node` (its expansion plus every pass through it),
    n the child's, Q on the user's value scale. Priors play no part. With
    unbounded returns (`value_range=None`), Q is first min-max normalised to
    [0, 1] over the node's mean value and its visited children's Q
    (`qtransform_by_parent_and_siblings`), so `uct_c` keeps its meaning.
    """
    log_parent = jnp.log(jnp.maximum(stats.node_visits.astype(jnp.float32), 1.0))[:, None]
    visits = stats.visits.astype(jnp.float32)
    exploration = uct_c * jnp.sqrt(log_parent / jnp.maximum(visits, 1.0))
    if tree.value_range is None:
        qvalues = qtransform_by_parent_and_siblings(tree, node, stats)
    else:
        qvalues = tree_lib.to_user_scale(stats.qvalues, tree.value_range)
    scores = qvalues + exploration
    scores = jnp.where(stats.visits == 0, jnp.inf, scores)
    return jnp.where(stats.legal, scores, -jnp.inf)


def tie_break_noise(tree: tree_lib.Tree, stats: tree_lib.ChildrenStats) -> chex.Array:
    """Uniform [0, 1) noise [B, K] from each row's step key, drawn in action
    space [A] and read at each slot's action (as mctx draws it, so a compact
    tree gets the dense tree's noise)."""
    noise = jax.vmap(lambda key: jax.random.uniform(key, (tree.num_actions,)))(stats.rng_key)
    return tree_lib.at_slots(tree, stats.actions, noise)


def puct_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats, *,
                pb_c_init: float = PB_C_INIT, pb_c_base: float = PB_C_BASE,
                qtransform: Callable = qtransform_by_parent_and_siblings,
                tie_break: float = 0.0) -> chex.Array:
    """AlphaZero PUCT: `qtransform(Q) + c(N) * P * sqrt(N) / (1 + n)`.

    `c(N) = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)`, N the visit
    count of `node`, n the child's, P its prior. `tie_break > 0` adds
    `tie_break * U[0, 1)` noise from `stats.rng_key` (mctx adds 1e-7);
    0: ties go to the lowest slot. `qtransform` must return float [B, K]
    (checked when traced, `call_qtransform`); a NaN it gives makes that
    slot's score NaN, which the descent never chooses (module docstring).
    """
    exploration = (puct_push(stats, pb_c_init, pb_c_base)
                   / (stats.visits.astype(jnp.float32) + 1.0))
    scores = call_qtransform(qtransform, tree, node, stats, "puct_scores") + exploration
    if tie_break:
        scores = scores + tie_break * tie_break_noise(tree, stats)
    return jnp.where(stats.legal, scores, -jnp.inf)


def puct_push(stats: tree_lib.ChildrenStats, pb_c_init: float, pb_c_base: float) -> chex.Array:
    """PUCT's exploration term times (1 + n): `sqrt(N) * c(N) * P` [B, K],
    `c(N) = pb_c_init + log((N + pb_c_base + 1) / pb_c_base)`, N the node's
    visits, P each child's prior."""
    parent_visits = stats.node_visits.astype(jnp.float32)[:, None]
    pb_c = pb_c_init + jnp.log((parent_visits + pb_c_base + 1.0) / pb_c_base)
    return jnp.sqrt(parent_visits) * pb_c * stats.priors


def forced_visits(stats: tree_lib.ChildrenStats, forced_playouts: float) -> chex.Array:
    """KataGo's forced playouts (Wu, 2019): `sqrt(k * P * N)` visits [B, K]
    float that each child is owed, P its prior, N the node's children's
    visits, k = `forced_playouts`; 0 where illegal."""
    total = jnp.sum(stats.visits, axis=-1, keepdims=True).astype(jnp.float32)
    owed = jnp.sqrt(forced_playouts * stats.priors * total)
    return jnp.where(stats.legal, owed, 0.0)


def forced_playout_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats,
                          *, forced_playouts: float, rule: ScoreFn) -> chex.Array:
    """A root rule: while a legal child has fewer visits than it is owed
    (`forced_visits`), the best of those children by `rule`; else `rule`'s
    scores. Every legal child with a prior gets about `sqrt(k P N)` visits
    (noise-boosted moves are tried); `prune_forced_visits` takes them out of
    the policy target again."""
    scores = rule(tree, node, stats)
    owed = stats.legal & (stats.visits.astype(jnp.float32) < forced_visits(stats,
                                                                           forced_playouts))
    return jnp.where(jnp.any(owed, axis=-1, keepdims=True),
                     jnp.where(owed, scores, -jnp.inf), scores)


def prune_forced_visits(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats,
                        *, forced_playouts: float, pb_c_init: float, pb_c_base: float,
                        qtransform: Callable) -> chex.Array:
    """KataGo's policy target pruning: child visits [B, K] float with the
    forced playouts taken back where PUCT would not have spent them.

    The most visited child keeps its visits. Every other child loses up to
    its `forced_visits`, as long as its PUCT score (`puct_scores`' terms,
    the node's N) with the fewer visits stays at most the most visited
    child's; a child left with one visit or none gets 0.
    """
    visits = stats.visits.astype(jnp.float32)
    push = puct_push(stats, pb_c_init, pb_c_base)  # exploration = push / (1 + n)
    qvalues = call_qtransform(qtransform, tree, node, stats, "prune_forced_visits")
    best = jnp.argmax(jnp.where(stats.legal, visits, -1.0), axis=-1)[:, None]
    best_score = jnp.take_along_axis(qvalues + push / (visits + 1.0), best, axis=-1)
    # q + push / (1 + n') <= best_score  <=>  n' >= push / (best_score - q) - 1.
    gap = best_score - qvalues
    fewest = jnp.where(gap > 0, jnp.ceil(push / jnp.maximum(gap, 1e-12) - 1.0), visits)
    pruned = jnp.maximum(visits - jnp.floor(forced_visits(stats, forced_playouts)),
                         jnp.maximum(fewest, 0.0))
    pruned = jnp.minimum(pruned, visits)
    pruned = jnp.where(pruned <= 1.0, 0.0, pruned)
    is_best = jnp.arange(visits.shape[-1])[None, :] == best
    return jnp.where(is_best, visits, jnp.where(stats.legal, pruned, 0.0))


# ---------------------------------------------------------------------------
# Gumbel MuZero (Danihelka et al., 2022): sequential halving at the root,
# completed Q-values, and a deterministic rule below the root.
# ---------------------------------------------------------------------------


def halving_schedule(num_considered: int, num_simulations: int) -> Tuple[int, ...]:
    """The visit count an action must have to be chosen at each simulation of
    sequential halving with `num_considered` actions.

    The budget is split into about log2(num_considered) phases; in each phase
    every surviving action is visited equally often, then half of them (the
    worse half by score) drop out, down to two. With one action (or none)
    every simulation goes to it.
    """
    if num_considered <= 1:
        return tuple(range(num_simulations))
    phases = math.ceil(math.log2(num_considered))
    schedule, visits, alive = [], [0] * num_considered, num_considered
    while len(schedule) < num_simulations:
        rounds = max(1, num_simulations // (phases * alive))
        for _ in range(rounds):
            schedule.extend(visits[:alive])
            visits[:alive] = [v + 1 for v in visits[:alive]]
        alive = max(2, alive // 2)
    return tuple(schedule[:num_simulations])


def halving_table(max_considered: int, num_simulations: int) -> jnp.ndarray:
    """[max_considered + 1, num_simulations] int32: row m is the schedule for
    m considered actions."""
    return jnp.asarray([halving_schedule(m, num_simulations)
                        for m in range(max_considered + 1)], jnp.int32)


def prior_logits(stats: tree_lib.ChildrenStats) -> chex.Array:
    """log P [B, K] over legal slots, a very low finite value elsewhere."""
    return jnp.where(stats.legal & (stats.priors > 0),
                     jnp.log(jnp.maximum(stats.priors, jnp.finfo(jnp.float32).tiny)), -1e9)


def gumbel_interior_scores(tree: tree_lib.Tree, node: chex.Array,
                           stats: tree_lib.ChildrenStats, *,
                           qtransform: Callable = qtransform_completed_by_mix_value
                           ) -> chex.Array:
    """Deterministic selection below the root: the child whose visit share
    lags most behind the improved policy `softmax(log P + qtransform(Q))`.
    `qtransform` must return float [B, K] (checked when traced)."""
    improved = jax.nn.softmax(
        prior_logits(stats) + call_qtransform(qtransform, tree, node, stats,
                                              "gumbel_interior_scores"), axis=-1)
    visits = stats.visits.astype(jnp.float32)
    share = visits / (1.0 + jnp.sum(visits, axis=-1, keepdims=True))
    return jnp.where(stats.legal, improved - share, -jnp.inf)


def halving_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats,
                   *, gumbel: chex.Array, root_visits_before: chex.Array,
                   num_considered: chex.Array, table: chex.Array,
                   qtransform: Callable = qtransform_completed_by_mix_value,
                   random_ties: bool = False,
                   tie_noise: Optional[chex.Array] = None) -> chex.Array:
    """Sequential halving at the root (`node` is every row's root).

    The simulation index of this search is the number of root visits it
    added (`sum(stats.visits - root_visits_before)`, as mctx counts it);
    `table[num_considered, index]` (`halving_table`) is the visit count an
    action must have had in this search to be eligible; among the eligible,
    the best `g + log P + qtransform(Q)`. The keyword arguments below are
    bound with functools.partial.

    Args:
      gumbel: [B, K] Gumbel noise of the root slots (0 where illegal).
      root_visits_before: [B, K] root child visits before this search (a
        reused tree).
      num_considered: [B] int32, min(max_num_considered_actions, legal actions).
      table: `halving_table(max_num_considered_actions, num_simulations)`.
      random_ties: eligible slots tied for the best score are chosen among at
        random: the scores returned are then the tie order on the tied
        slots and -inf elsewhere. False: the lowest slot wins ties, as
        mctx's argmax does (with `gumbel_scale=0` and equal priors that
        considers the first actions by id).
      tie_noise: [B, K] the tie order of the root slots, U[0, 1) drawn once
        per search (`GumbelExtraData.tie_noise`); None: drawn afresh at
        every step from `stats.rng_key`.
    """
    visits_this_search = stats.visits - root_visits_before
    simulation_index = jnp.minimum(jnp.sum(visits_this_search, axis=-1), table.shape[1] - 1)
    target_visits = table[num_considered, simulation_index]
    score = gumbel + prior_logits(stats) + call_qtransform(qtransform, tree, node, stats,
                                                           "halving_scores")
    eligible = stats.legal & (visits_this_search == target_visits[:, None])
    scores = jnp.where(eligible, jnp.maximum(score, -1e9), -jnp.inf)
    if not random_ties:
        return scores
    if tie_noise is None:
        tie_noise = uniform_per_row(stats.rng_key, scores.shape[-1])
    return among_best_in_order(scores, tie_noise)


def uniform_per_row(rng_keys: chex.Array, size: int) -> chex.Array:
    """[B, size] U[0, 1) noise, one key per row ([B])."""
    return jax.vmap(lambda key: jax.random.uniform(key, (size,)))(rng_keys)


def among_best_in_order(scores: chex.Array, tie_noise: chex.Array) -> chex.Array:
    """Scores [B, K] whose argmax is, among the slots tied for the best of
    `scores`, the one with the highest `tie_noise` [B, K] (U[0, 1) noise:
    uniformly at random): the noise on those slots, -inf on the others (a
    row with no finite score keeps -inf everywhere)."""
    best = jnp.max(scores, axis=-1, keepdims=True)
    tied = (scores == best) & (best > -jnp.inf)
    return jnp.where(tied, tie_noise, -jnp.inf)


@chex.dataclass(frozen=True)
class GumbelExtraData:
    """`tree.extra_data` of a Gumbel search.

    Attributes:
      root_gumbel: [B, A] float32, the Gumbel noise of each root action
        (times `gumbel_scale`), as mctx's `GumbelMuZeroExtraData`.
      root_visits_before: [B, A] int32, root visits of each action before
        this search (a continued tree); sequential halving counts only the
        visits of this search. Optional (None: none), so that mctx's
        `GumbelMuZeroExtraData(root_gumbel=...)` builds one.
      tie_noise: [B, A] float32 U[0, 1), drawn once per search: the order
        in which root actions tied for the best score are taken
        (`random_ties`); None: drawn at every step instead.
    """

    root_gumbel: chex.Array
    root_visits_before: Optional[chex.Array] = None
    tie_noise: Optional[chex.Array] = None


def gumbel_root_scores(tree: tree_lib.Tree, node: chex.Array, stats: tree_lib.ChildrenStats,
                       *, num_simulations: int,
                       max_num_considered_actions: int = MAX_NUM_CONSIDERED_ACTIONS,
                       qtransform: Callable = qtransform_completed_by_mix_value,
                       random_ties: bool = False) -> chex.Array:
    """Gumbel MuZero's root rule: sequential halving over the
    `max_num_considered_actions` best of `g + log P`, reading the noise and
    the earlier visits from `tree.extra_data` (`GumbelExtraData`), as mctx's
    root rule reads `tree.extra_data.root_gumbel`. See `halving_scores`."""
    extra = tree.extra_data
    num_considered = jnp.minimum(max_num_considered_actions,
                                 jnp.sum(stats.legal, axis=-1)).astype(jnp.int32)
    return halving_scores(
        tree, node, stats,
        gumbel=jnp.where(stats.legal, tree_lib.at_slots(tree, stats.actions, extra.root_gumbel),
                         0.0),
        root_visits_before=(jnp.zeros_like(stats.visits) if extra.root_visits_before is None
                            else tree_lib.at_slots(tree, stats.actions,
                                                   extra.root_visits_before)),
        num_considered=num_considered,
        table=halving_table(max_num_considered_actions, num_simulations),
        qtransform=qtransform, random_ties=random_ties,
        tie_noise=(None if extra.tie_noise is None
                   else tree_lib.at_slots(tree, stats.actions, extra.tie_noise)))


# Our rules: with our Q transforms (or none), they score every closed slot
# (illegal) -inf and never NaN, so the descent can read them as they are.
OUR_RULES = frozenset({uct_scores, puct_scores, gumbel_interior_scores, halving_scores,
                       gumbel_root_scores})


def screens_its_own_slots(rule: Callable) -> bool:
    """True for one of `OUR_RULES` (a bare function, or a `functools.partial`
    of one, through `HashableFunction` wrappers) whose Q transform, if it binds
    one, is one of ours (`qtransforms.OUR_QTRANSFORMS`, or a function that
    declares one of them as its `__wrapped__`, as the mctx-form versions in
    `mctx_compat` do). Any other rule's scores are screened by the descent
    (`rule_screen.usable_scores`). Wrappers are seen through:
    `HashableFunction`s, and a rule wrapper that scores only with its
    `wrapped_rule` beside scores of its own that screen their slots
    (`stochastic.ChanceAware`: ours at chance nodes)."""
    while isinstance(rule, HashableFunction) or hasattr(rule, "wrapped_rule"):
        rule = rule.fn if isinstance(rule, HashableFunction) else rule.wrapped_rule
    if isinstance(rule, functools.partial):
        qtransform = rule.keywords.get("qtransform", qtransform_raw)
        while isinstance(qtransform, HashableFunction):
            qtransform = qtransform.fn
        if isinstance(qtransform, functools.partial):
            qtransform = qtransform.func
        qtransform = getattr(qtransform, "__wrapped__", qtransform)
        if qtransform not in OUR_QTRANSFORMS:
            return False
        rule = rule.func
    return rule in OUR_RULES
