"""The built-in policies for a known simulator: UCT, AlphaZero, Gumbel.

    UCTPolicy        no root setup          UCB1 everywhere       most visited / sampled
    AlphaZeroPolicy  Dirichlet root noise   PUCT everywhere       most visited / sampled
    GumbelPolicy     Gumbel noise           halving at the root,  Gumbel's choice
                     (tree.extra_data)      deterministic below

Each is a `Policy` value (policy.py) written through its hooks alone
(`split_key`, `root_setup`, `rules`, `choose`). The functions
`uct_policy`, `alphazero_policy` and `gumbel_policy` are the same values
built from keyword arguments and called at once. They are batched already:
call them on [B, ...] inputs, do not `vmap` them. The MuZero family is in
muzero_policies.py; mctx's signatures in `mcts_jax.mctx_compat`.
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
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax.tree import legal_mask  # noqa: F401 (its home until issue 61)
from mcts_jax import validation
from mcts_jax.hashable import HashableFunction, compile_parts
from mcts_jax.options import SearchOptions
from mcts_jax.policy import (Policy, choose_action, play_proven,
                             root_actions_view, with_priors_where_unsearched)
from mcts_jax.qtransforms import (check_tree_function, qtransform_by_parent_and_siblings,
                                  qtransform_completed_by_mix_value)
from mcts_jax.tree_search import static_function

# AlphaZero's root noise: (1 - fraction) P + fraction Dir(alpha), defined here once.
DIRICHLET_FRACTION = 0.25
DIRICHLET_ALPHA = 0.3


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


# ---- checking a policy's constants ----------------------------------------------------------

def static_number(name: str, value: Any, **bounds) -> Any:
    """A policy constant: checked and made a Python float when concrete; a
    traced value (inside the caller's jit) is kept as it is."""
    if isinstance(value, jax.core.Tracer):
        return value
    return validation.check_number(name, value, **bounds)


_QTRANSFORM_EXAMPLE = ("functools.partial(mcts_jax.qtransform_by_min_max, min_value=-1.0, "
                       "max_value=1.0)")


def checked_qtransform(qtransform: Optional[Callable], default: Optional[Callable]) -> Any:
    """`qtransform` (None: `default`) checked as `(tree, node, stats) -> [B, K]`
    and made a compile key (`tree_search.static_function`: a plain function as
    it is, a partial compared by value)."""
    qtransform = default if qtransform is None else qtransform
    if qtransform is not None and not isinstance(qtransform, HashableFunction):
        check_tree_function(qtransform, "qtransform", _QTRANSFORM_EXAMPLE)
    return static_function(qtransform)


def number_at_least(low: float, low_inclusive: bool = True, high: float = np.inf):
    """A policy constant's check (`Policy.field_checks`): `static_number` in range."""
    return lambda name, value: static_number(name, value, low=low, high=high,
                                             low_inclusive=low_inclusive)


def final_action_check(name: str, value: Any) -> str:
    """A policy's `final_action` (`Policy.field_checks`): one of FINAL_ACTIONS."""
    return validation.check_final_action(value)


# The checks of the fields a PUCT policy value holds: numbers made Python
# floats (errors name the field), the Q transform made comparable by value.
PUCT_CHECKS = dict(
    pb_c_init=number_at_least(0.0),
    pb_c_base=number_at_least(0.0, low_inclusive=False),
    dirichlet_fraction=number_at_least(0.0, high=1.0),
    dirichlet_alpha=number_at_least(0.0, low_inclusive=False),
    qtransform=lambda name, value: checked_qtransform(value, qtransform_by_parent_and_siblings),
)

# The default Q transform of the PUCT policies: a plain function, its own
# compile key (`tree_search.static_function`).
PARENT_AND_SIBLINGS = qtransform_by_parent_and_siblings


def puct_rule(pb_c_init, pb_c_base, qtransform: Callable,
              tie_break: float = 0.0) -> Callable:
    """`selection.puct_scores` with its constants bound (checked already by
    `PUCT_CHECKS` when the policy value was built). A plain partial, its Q
    transform unwrapped: rules are made inside the search's trace, where
    nothing compares them (only the policy value, the compile key, holds
    functions compared as keys, `tree_search.static_function`)."""
    if isinstance(qtransform, HashableFunction):
        qtransform = qtransform.fn
    return functools.partial(selection.puct_scores, qtransform=qtransform, tie_break=tie_break,
                             pb_c_init=pb_c_init, pb_c_base=pb_c_base)


def check_considered(max_num_considered_actions: Any) -> int:
    if isinstance(max_num_considered_actions, bool) or not isinstance(
            max_num_considered_actions, (int, np.integer)) or max_num_considered_actions < 1:
        raise ValueError(f"max_num_considered_actions must be an int >= 1, got "
                         f"{max_num_considered_actions!r}")
    return int(max_num_considered_actions)


# ---- UCT and AlphaZero --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class UCTPolicy(Policy):
    """Classic UCT: UCB1 `Q + uct_c * sqrt(ln N / n)` everywhere, unvisited
    legal children first (lowest action id first), priors stored but not
    scored; values from `recurrent_fn` (e.g. random playouts). The move:
    `final_action` ("most_visited", "highest_value", or "sampled" at
    `temperature`)."""

    uct_c: float = selection.UCT_C
    final_action: str = "most_visited"
    temperature: Any = 1.0
    field_checks: ClassVar[dict] = dict(uct_c=number_at_least(0.0),
                                        final_action=final_action_check)

    def rules(self, options: SearchOptions) -> selection.Rules:
        return selection.everywhere(functools.partial(selection.uct_scores, uct_c=self.uct_c))


@dataclasses.dataclass(frozen=True, kw_only=True)
class AlphaZeroPolicy(Policy):
    """AlphaZero: Dirichlet noise in the legal root priors, PUCT
    `Q + c(N) * P * sqrt(N) / (1 + n)` with `c(N) = pb_c_init + log((N +
    pb_c_base + 1) / pb_c_base)` everywhere, Q through `qtransform`, then
    `final_action` (default: sampled from the visit counts at
    `temperature` 1, as `mctx.muzero_policy`).

    `forced_playouts` k > 0: KataGo's forced playouts at the root (every
    legal child gets about `sqrt(k P N)` visits first; KataGo uses k = 2)
    with policy target pruning: `action_weights` are the root visits with
    the forced ones taken back (`selection.prune_forced_visits`), the
    target to train on; the action is still chosen from the full visits.
    0 (default): plain PUCT. Keys: `noise_key, search_key, action_key =
    split(rng_key, 3)`."""

    pb_c_init: Any = selection.PB_C_INIT
    pb_c_base: Any = selection.PB_C_BASE
    dirichlet_fraction: Any = DIRICHLET_FRACTION
    dirichlet_alpha: Any = DIRICHLET_ALPHA
    qtransform: Callable = PARENT_AND_SIBLINGS
    final_action: str = "sampled"
    temperature: Any = 1.0
    forced_playouts: Any = 0.0
    # forced_playouts: a Python number (it picks the root rule when the search is traced).
    field_checks: ClassVar[dict] = dict(
        PUCT_CHECKS, final_action=final_action_check,
        forced_playouts=lambda name, value: validation.check_number(name, value, low=0.0))

    def split_key(self, rng_key):
        return tuple(jax.random.split(rng_key, 3))

    def root_setup(self, rng_key, root, invalid_actions, tree, options):
        """Dirichlet noise mixed into the legal root priors (none when
        `dirichlet_fraction` is 0: the root is searched as given)."""
        if self.dirichlet_fraction == 0.0:
            return root, None
        priors = root_priors_with_noise(rng_key, root.prior_logits,
                                        tree_lib.legal_mask(root.prior_logits, invalid_actions),
                                        self.dirichlet_fraction, self.dirichlet_alpha)
        return root.replace(prior_logits=tree_lib.log_probabilities(priors)), None

    def rules(self, options: SearchOptions) -> selection.Rules:
        puct = puct_rule(self.pb_c_init, self.pb_c_base, self.qtransform)
        if self.forced_playouts == 0.0:
            return selection.Rules(at_root=puct, below_root=puct)
        return selection.Rules(
            at_root=functools.partial(selection.forced_playout_scores,
                                      forced_playouts=self.forced_playouts, rule=puct),
            below_root=puct)

    def choose(self, rng_key, tree: tree_lib.Tree, temperature,
               options: SearchOptions) -> Tuple[chex.Array, chex.Array]:
        """(action [B] from the root visits, action_weights [B, A]: the visit
        distribution, pruned of forced playouts when `forced_playouts` > 0)."""
        action, weights = choose_action(rng_key, tree, self.final_action, temperature,
                                        options.solver)
        if self.forced_playouts == 0.0:
            return action, weights
        stats, in_actions = root_actions_view(tree)
        root = tree_lib.root_nodes(tree.batch_size)
        pruned = in_actions(selection.prune_forced_visits(
            tree, root, stats, forced_playouts=self.forced_playouts, pb_c_init=self.pb_c_init,
            pb_c_base=self.pb_c_base, qtransform=self.qtransform), 0.0)
        return action, with_priors_where_unsearched(
            tree, pruned / jnp.maximum(jnp.sum(pruned, axis=-1, keepdims=True), 1.0))


# ---- Gumbel MuZero --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class GumbelPolicy(Policy):
    """Gumbel MuZero: Gumbel noise `g` for every legal root action;
    sequential halving spends the budget on the `max_num_considered_actions`
    best by `g + log P`, halving them by `g + log P + sigma(completed Q)`;
    below the root the child whose visit share lags most behind
    `softmax(log P + sigma(completed Q))` (deterministic). `action_weights`
    is that improved policy at the root (the training target).
    `search_tree.extra_data` is `GumbelExtraData(root_gumbel [B, A], ...)`.
    Keys: `search_key, gumbel_key = split(rng_key)`, as mctx splits them.

    Attributes:
      options: the search options (`SearchOptions`; `expand_all` is refused:
        sequential halving counts one root visit per simulation).
      max_num_considered_actions: `m`, the root actions sequential halving
        considers (at most the legal ones); default 16.
      gumbel_scale: scale of the Gumbel noise; it plays the role of a
        temperature (1: self-play, 0: deterministic, for evaluation). There
        is no `temperature`.
      value_scale: sigma's scale in the default Q transform
        (`qtransform_completed_by_mix_value`); 0.1.
      maxvisit_init: sigma's visit offset in the default Q transform; 50.
      qtransform: sigma, a Q transform `(tree, node, stats) -> [B, K]`;
        None: `qtransform_completed_by_mix_value(value_scale=,
        maxvisit_init=)`. Given, it replaces both (setting them too is
        refused: bind them in the transform).
      random_ties: root actions tied for the best score (equal priors with
        `gumbel_scale=0`) are taken in an order drawn once per search, not
        by id; False: by id, as mctx.
    """

    max_num_considered_actions: int = selection.MAX_NUM_CONSIDERED_ACTIONS
    gumbel_scale: Any = 1.0
    value_scale: float = 0.1
    maxvisit_init: float = 50.0
    qtransform: Optional[Callable] = None
    random_ties: bool = True

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
        set_field("random_ties", validation.check_flag("random_ties", self.random_ties))
        set_field("qtransform", checked_qtransform(self.qtransform, None))
        if self.qtransform is not None:
            ignored = [name for name in ("value_scale", "maxvisit_init")
                       if getattr(self, name) != GumbelPolicy.__dataclass_fields__[name].default]
            if ignored:
                raise ValueError(f"GumbelPolicy: {ignored} set sigma only when qtransform is "
                                 f"None; with a qtransform they would do nothing: bind them in "
                                 f"it (functools.partial(mcts_jax.qtransform_completed_by_mix_"
                                 f"value, value_scale=...))")
        if self.options.expand_all:
            raise ValueError("GumbelPolicy cannot use expand_all=True: sequential halving "
                             "counts one root visit per simulation")

    @property
    def completed_qtransform(self) -> Callable:
        """sigma(completed Q): `qtransform`, or the mixed-value default."""
        if self.qtransform is not None:
            return self.qtransform
        return HashableFunction(functools.partial(qtransform_completed_by_mix_value,
                                                  value_scale=self.value_scale,
                                                  maxvisit_init=self.maxvisit_init))

    def split_key(self, rng_key):
        search_key, gumbel_key = jax.random.split(rng_key)
        return gumbel_key, search_key, jax.random.fold_in(gumbel_key, 1)

    def root_setup(self, rng_key, root, invalid_actions, tree, options):
        """The root as given; Gumbel noise (and, for a continued tree, the
        root's earlier visits) in `extra_data` for the root rule."""
        return root, gumbel_extra_data(rng_key, root, tree, self.gumbel_scale,
                                       self.random_ties)

    def rules(self, options: SearchOptions) -> selection.Rules:
        return selection.Rules(
            at_root=functools.partial(
                selection.gumbel_root_scores, num_simulations=options.num_simulations,
                max_num_considered_actions=self.max_num_considered_actions,
                qtransform=self.completed_qtransform, random_ties=self.random_ties),
            below_root=functools.partial(selection.gumbel_interior_scores,
                                         qtransform=self.completed_qtransform))

    def choose(self, rng_key, tree, temperature, options):
        """Gumbel's move and the improved policy (`gumbel_action`)."""
        del temperature
        del rng_key  # ties follow the search's tie order (`GumbelExtraData.tie_noise`)
        return gumbel_action(tree, self.completed_qtransform, options.solver)


def gumbel_extra_data(gumbel_key, root: base.RootFnOutput, tree: Optional[tree_lib.Tree],
                      gumbel_scale, random_ties: bool = False) -> selection.GumbelExtraData:
    """The root's Gumbel noise [B, A], for a continued tree its root visits
    before this search (sequential halving counts only this search's), and
    with `random_ties` the order in which tied root actions are taken
    (U[0, 1) [B, A], drawn once here rather than at every step)."""
    gumbel = gumbel_scale * jax.random.gumbel(gumbel_key, root.prior_logits.shape,
                                              root.prior_logits.dtype)
    visits_before = jnp.zeros(root.prior_logits.shape, jnp.int32)
    if tree is not None:
        root_index = tree_lib.root_nodes(tree.batch_size)
        earlier = tree_lib.slots_to_actions(
            tree, root_index, tree_lib.children_stats(tree, root_index).visits, 0)
        visits_before = jnp.where((tree.num_nodes > 0)[:, None], earlier, 0)
    tie_noise = (jax.random.uniform(jax.random.fold_in(gumbel_key, 2), root.prior_logits.shape)
                 if random_ties else None)
    return selection.GumbelExtraData(root_gumbel=gumbel, root_visits_before=visits_before,
                                     tie_noise=tie_noise)


def gumbel_action(tree: tree_lib.Tree, qtransform: Callable,
                  solver: bool) -> tuple[chex.Array, chex.Array]:
    """Gumbel MuZero's choice and policy target, from a tree whose
    `extra_data` is `GumbelExtraData`.

    Returns:
      action [B]: among the root actions visited most in this search (the
        last survivors of sequential halving), the best
        `g + log P + qtransform(Q)`; ties in the search's tie order
        (`GumbelExtraData.tie_noise`; None: the lowest slot).
      action_weights [B, A]: the improved policy
        `softmax(log P + qtransform(Q))` over the legal actions.
    """
    stats, in_actions = root_actions_view(tree)
    root = tree_lib.root_nodes(tree.batch_size)
    completed = selection.call_qtransform(qtransform, tree, root, stats, "gumbel_action")
    logits = selection.prior_logits(stats)
    gumbel = tree_lib.at_slots(tree, stats.actions, tree.extra_data.root_gumbel)
    visits_this_search = stats.visits - tree_lib.at_slots(tree, stats.actions,
                                                          tree.extra_data.root_visits_before)
    most = jnp.max(jnp.where(stats.legal, visits_this_search, -1), axis=-1)
    survivors = stats.legal & (visits_this_search == most[:, None])
    scores = jnp.where(survivors, gumbel + logits + completed, -jnp.inf)
    if tree.extra_data.tie_noise is not None:
        scores = selection.among_best_in_order(
            scores, tree_lib.at_slots(tree, stats.actions, tree.extra_data.tie_noise))
    slot = jnp.argmax(scores, axis=-1)
    action = stats.actions[tree_lib.batch_rows(tree.batch_size), slot]
    if solver:
        action = play_proven(tree, stats, action, in_actions)
    improved = jax.nn.softmax(jnp.where(stats.legal, logits + completed, -jnp.inf), axis=-1)
    return action.astype(jnp.int32), in_actions(improved, 0.0)


# ---- the policies called at once (keyword arguments -> the value) ---------------------------

# The values the functions below run when given no setting: built and
# checked once, and their compile key walked once (`hashable.compile_parts`).
UCT_DEFAULT = UCTPolicy()
ALPHAZERO_DEFAULT = AlphaZeroPolicy()
GUMBEL_DEFAULT = GumbelPolicy()
for _default in (UCT_DEFAULT, ALPHAZERO_DEFAULT, GUMBEL_DEFAULT):
    compile_parts(_default)
del _default


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
    policy = UCTPolicy.make("uct_policy", **settings) if settings else UCT_DEFAULT
    return policy(
        params, rng_key, root, recurrent_fn, num_simulations, invalid_actions=invalid_actions,
        tree=tree, temperature=temperature)


def alphazero_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                     recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                     invalid_actions: Optional[chex.Array] = None,
                     tree: Optional[tree_lib.Tree] = None,
                     temperature: Any = None, **settings) -> base.PolicyOutput:
    """`AlphaZeroPolicy(**settings)` called at once: PUCT with Dirichlet
    root noise (`dirichlet_fraction=0` for evaluation). Settings:
    `pb_c_init=1.25`, `pb_c_base=19652`, `dirichlet_fraction=0.25`,
    `dirichlet_alpha=0.3`, `qtransform` (a function `(tree, node, stats)
    -> [B, K]`), `final_action="sampled"`, `forced_playouts=0`, and any
    `SearchOptions` field. The defaults match `mctx.muzero_policy`. Other
    arguments as in `uct_policy`."""
    policy = AlphaZeroPolicy.make("alphazero_policy", **settings) if settings else ALPHAZERO_DEFAULT
    return policy(
        params, rng_key, root, recurrent_fn, num_simulations, invalid_actions=invalid_actions,
        tree=tree, temperature=temperature)


def gumbel_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                  recurrent_fn: base.RecurrentFn, num_simulations: int, *,
                  invalid_actions: Optional[chex.Array] = None,
                  tree: Optional[tree_lib.Tree] = None,
                  **settings) -> base.PolicyOutput:
    """`GumbelPolicy(**settings)` called at once: Gumbel MuZero, policy
    improvement that works with very few simulations. Settings:
    `max_num_considered_actions=16`, `gumbel_scale=1.0` (its temperature;
    there is no `temperature`), `value_scale=0.1`, `maxvisit_init=50.0`,
    `qtransform`, `random_ties=True`, and any `SearchOptions` field. The
    defaults match `mctx.gumbel_muzero_policy`; with `tree=`, sequential
    halving counts only this search's visits. Other arguments as in
    `uct_policy`."""
    policy = GumbelPolicy.make("gumbel_policy", **settings) if settings else GUMBEL_DEFAULT
    return policy(
        params, rng_key, root, recurrent_fn, num_simulations, invalid_actions=invalid_actions,
        tree=tree)
