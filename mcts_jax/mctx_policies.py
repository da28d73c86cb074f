"""mctx's policies with mctx's signatures: `muzero_policy`, `gumbel_muzero_policy`
and `stochastic_muzero_policy`.

Code written for mctx 0.0.71 runs with `import mcts_jax as mctx`: these take
the same positional and keyword arguments with the same defaults
(`invalid_actions`, `max_depth`, `loop_fn`, `qtransform`, ...), draw the same
random numbers from the same key (Dirichlet noise over every action, PUCT's
1e-7 tie-breaking noise, Gumbel noise, the final sample) and follow mctx's
semantics, so equal inputs give equal trees (equal up to float rounding:
our node values are sums divided by visits, mctx's a running mean, which
XLA's default optimisation compiles with a fused multiply-add; with discrete
values, such as pgx games with random playouts, an ulp-sized residue can
flip a descent through `qtransform_by_parent_and_siblings`'s 1e-8 epsilon
or mctx's 1e-7 tie-break when it is below half an ulp;
tests/test_mctx_playouts.py pins both):

- discount 0 is only a factor: nodes below it are searched like any other
  (`stop_at_terminal=False`);
- node i + 1 is written by simulation i (`node_per_simulation=True`), so the
  tree's node indices are mctx's;
- the search tree answers mctx's attributes (`node_visits`, `node_values`,
  `children_index`, `qvalues(...)`, `extra_data.root_gumbel`, ...).

`invalid_actions` may be bool or, as mctx documents it, a 0/1 mask.
Our own options are accepted too (`max_nodes`, `max_children`, `tree`,
`value_range`, `checks`, and the two semantics switches above).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Optional, Tuple

import chex
import jax
import jax.numpy as jnp

from mcts_jax import base
from mcts_jax import selection
from mcts_jax import stochastic
from mcts_jax import tree as tree_lib
from mcts_jax import validation
from mcts_jax.mctx_tree import MctxTree, mctx_view, our_tree
from mcts_jax.options import SearchOptions, Static, mctx_options, mctx_options_from
from mcts_jax.policies import GumbelPolicy, Policy, check_puct_fields, play_proven, puct_rule
from mcts_jax.qtransforms import (qtransform_by_parent_and_siblings,
                                  qtransform_completed_by_mix_value)
from mcts_jax.mctx_selection import MCTX_TIE_BREAK
from mcts_jax.tree_search import search_body


def mctx_root_logits(rng_key: chex.PRNGKey, prior_logits: chex.Array,
                     invalid_actions: Optional[chex.Array], dirichlet_fraction,
                     dirichlet_alpha) -> chex.Array:
    """mctx's root priors [B, A]: Dirichlet noise drawn over every action and
    mixed into `softmax(prior_logits)`, back to logits, invalid actions set
    to the lowest float."""
    batch_size, num_actions = prior_logits.shape
    probs = jax.nn.softmax(prior_logits)
    noise = jax.random.dirichlet(rng_key, alpha=jnp.full([num_actions], dirichlet_alpha),
                                 shape=(batch_size,))
    noisy = (1 - dirichlet_fraction) * probs + dirichlet_fraction * noise
    return mask_root_logits(tree_lib.log_probabilities(noisy), invalid_actions)


def mask_root_logits(logits: chex.Array, invalid_actions: Optional[chex.Array]) -> chex.Array:
    """mctx's masked root logits [B, A]: shifted so that the largest is 0,
    invalid actions the lowest float; unchanged without a mask."""
    if invalid_actions is None:
        return logits
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(invalid_actions, jnp.finfo(logits.dtype).min, logits)


def as_bool_mask(invalid_actions: Optional[chex.Array]) -> Optional[chex.Array]:
    """mctx documents `invalid_actions` as a mask with ones at invalid
    actions; a numeric 0/1 mask becomes the bool mask our policies take."""
    if invalid_actions is None or not hasattr(invalid_actions, "dtype") or \
            invalid_actions.dtype == jnp.bool_:
        return invalid_actions
    return jnp.asarray(invalid_actions) != 0


def as_mctx_output(output: base.PolicyOutput, root: base.RootFnOutput,
                   invalid_actions: Optional[chex.Array]) -> base.PolicyOutput:
    """The output with mctx's tree: `mctx_view` of ours, its root mask the
    one the caller gave (mctx: zeros of the root logits' dtype when None),
    Gumbel's extra data mctx's (`root_gumbel` alone)."""
    if invalid_actions is None:
        invalid_actions = jnp.zeros_like(root.prior_logits)
    view = mctx_view(output.search_tree, root_invalid_actions=invalid_actions)
    if isinstance(view.extra_data, selection.GumbelExtraData):  # mctx's: the noise alone
        view = view.replace(extra_data=selection.GumbelExtraData(
            root_gumbel=view.extra_data.root_gumbel))
    return output.replace(search_tree=view)


def mctx_visit_probs(tree: tree_lib.Tree) -> chex.Array:
    """mctx's `summary().visit_probs` [B, A]: uniform where a root has no visits."""
    visit_counts = tree.summary().visit_counts.astype(jnp.float32)
    total = jnp.sum(visit_counts, axis=-1, keepdims=True)
    return jnp.where(total > 0, visit_counts / jnp.maximum(total, 1), 1 / tree.num_actions)


def sample_from_visits(rng_key: chex.PRNGKey, tree: tree_lib.Tree,
                       temperature) -> Tuple[chex.Array, chex.Array]:
    """mctx's final action: (action [B] sampled from the root visit
    probabilities at `temperature`, those probabilities [B, A]); a
    stochastic tree's over its A decisions (`summary()`)."""
    action_weights = mctx_visit_probs(tree)
    logits = tree_lib.log_probabilities(action_weights)
    logits = (logits - jnp.max(logits, axis=-1, keepdims=True)) / jnp.maximum(
        jnp.finfo(jnp.float32).tiny, temperature)
    return jax.random.categorical(rng_key, logits).astype(jnp.int32), action_weights


@dataclasses.dataclass(frozen=True, kw_only=True)
class MuZeroPolicy(Policy):
    """mctx's MuZero policy as a value: Dirichlet noise drawn over every
    action, PUCT with mctx's 1e-7 tie-breaking noise, the action sampled
    from the visit counts at `temperature`; keys split as mctx splits them.
    Its default options are mctx's semantics (`mctx_options()`)."""

    pb_c_init: Any = 1.25
    pb_c_base: Any = 19652
    dirichlet_fraction: Any = 0.25
    dirichlet_alpha: Any = 0.3
    qtransform: Callable = qtransform_by_parent_and_siblings

    def __post_init__(self):
        super().__post_init__()
        check_puct_fields(self)

    @classmethod
    def default_options(cls) -> SearchOptions:
        return mctx_options()

    def rules(self, options) -> selection.Rules:
        return selection.everywhere(puct_rule(self.pb_c_init, self.pb_c_base, self.qtransform,
                                              tie_break=MCTX_TIE_BREAK))

    def body(self, params, rng_key, root, invalid_actions, temperature, tree, *,
             recurrent_fn, options: SearchOptions) -> base.PolicyOutput:
        """Keys, noise, search and sampled action as mctx."""
        rng_key, dirichlet_key, search_key = jax.random.split(rng_key, 3)
        root = root.replace(prior_logits=mctx_root_logits(
            dirichlet_key, root.prior_logits, invalid_actions, self.dirichlet_fraction,
            self.dirichlet_alpha))
        tree = search_body(params, search_key, root, invalid_actions, tree, None,
                           recurrent_fn=recurrent_fn, rules=self.rules(options), options=options)
        action, action_weights = sample_from_visits(rng_key, tree, temperature)
        return base.PolicyOutput(action=action, action_weights=action_weights,
                                 search_tree=tree)


def muzero_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                  recurrent_fn: base.RecurrentFn, num_simulations: int,
                  invalid_actions: Optional[chex.Array] = None,
                  max_depth: Optional[int] = None,
                  loop_fn: Callable = jax.lax.fori_loop, *,
                  qtransform: Callable = qtransform_by_parent_and_siblings,
                  dirichlet_fraction: chex.Numeric = 0.25,
                  dirichlet_alpha: chex.Numeric = 0.3,
                  pb_c_init: chex.Numeric = 1.25,
                  pb_c_base: chex.Numeric = 19652,
                  temperature: chex.Numeric = 1.0,
                  tree: Optional[tree_lib.Tree | MctxTree] = None,
                  **options) -> base.PolicyOutput:
    """mctx.muzero_policy: PUCT search with Dirichlet root noise, the action
    sampled from the visit counts at `temperature`.

    The signature, defaults and random numbers are mctx 0.0.71's (see the
    module docstring); `action_weights` are the root visit probabilities.
    `qtransform` is one of ours (`mcts_jax.qtransform_by_parent_and_siblings`,
    `qtransform_by_min_max`, ...) or the user's, `(tree, node, stats) ->
    [B, K]`. The extra keyword arguments are our tree options (see
    `uct_policy`); `stop_at_terminal=True` gives our terminal semantics.
    `node_per_simulation` None: mctx's node numbering with one simulation
    per step, ours with `simulations_per_step` > 1 (several paths per step
    have no mctx counterpart).
    """
    policy = MuZeroPolicy(
        pb_c_init=pb_c_init, pb_c_base=pb_c_base, dirichlet_fraction=dirichlet_fraction,
        dirichlet_alpha=dirichlet_alpha, qtransform=qtransform, temperature=temperature,
        options=mctx_options_from(max_depth=max_depth, loop_fn=loop_fn, **options))
    output = policy(params, rng_key, root, recurrent_fn, num_simulations,
                    invalid_actions=as_bool_mask(invalid_actions), tree=our_tree(tree))
    return as_mctx_output(output, root, invalid_actions)


def gumbel_muzero_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                         recurrent_fn: base.RecurrentFn, num_simulations: int,
                         invalid_actions: Optional[chex.Array] = None,
                         max_depth: Optional[int] = None,
                         loop_fn: Callable = jax.lax.fori_loop, *,
                         qtransform: Callable = qtransform_completed_by_mix_value,
                         max_num_considered_actions: int = 16,
                         gumbel_scale: chex.Numeric = 1.,
                         tree: Optional[tree_lib.Tree | MctxTree] = None,
                         **options) -> base.PolicyOutput:
    """mctx.gumbel_muzero_policy: Gumbel MuZero with mctx's signature,
    defaults, random numbers and semantics (see the module docstring).

    `search_tree.extra_data.root_gumbel` [B, A] holds the Gumbel noise, as in
    mctx. This is `gumbel_policy` with `stop_at_terminal=False` and
    `node_per_simulation=True` (None: True with one simulation per step);
    the extra keyword arguments are our tree options.
    """
    policy = GumbelPolicy(
        max_num_considered_actions=max_num_considered_actions, gumbel_scale=gumbel_scale,
        qtransform=qtransform,
        options=mctx_options_from(max_depth=max_depth, loop_fn=loop_fn, **options))
    mask = as_bool_mask(invalid_actions)
    masked_root = root.replace(prior_logits=mask_root_logits(root.prior_logits, mask))
    output = policy(params, rng_key, masked_root, recurrent_fn, num_simulations,
                    invalid_actions=mask, tree=our_tree(tree))
    return as_mctx_output(output, root, invalid_actions)


class TakesChanceNodes:
    """A policy mixin: `recurrent_fn` is the pair `(decision_recurrent_fn,
    chance_recurrent_fn)`, called through `search_with_chance_nodes`."""

    takes_chance_nodes: ClassVar[bool] = True

    def __call__(self, params, rng_key, root, recurrent_fn, num_simulations, *,
                 invalid_actions=None, tree=None, temperature=None,
                 **overrides) -> base.PolicyOutput:
        if overrides:
            return self.replace(**overrides)(params, rng_key, root, recurrent_fn,
                                             num_simulations, invalid_actions=invalid_actions,
                                             tree=tree, temperature=temperature)
        return search_with_chance_nodes(self, params, rng_key, root, recurrent_fn,
                                        num_simulations, invalid_actions, tree, temperature)


@dataclasses.dataclass(frozen=True, kw_only=True)
class StochasticMuZeroPolicy(TakesChanceNodes, MuZeroPolicy):
    """mctx's Stochastic MuZero as a value (see `stochastic_muzero_policy`):
    its `recurrent_fn` is the pair `(decision_recurrent_fn,
    chance_recurrent_fn)`; PUCT at decision nodes, at chance nodes the
    outcome whose visits lag its probability most, Dirichlet noise over the
    A decisions, the action sampled from the root's decision visits."""

    def rules(self, options) -> selection.Rules:
        return selection.everywhere(Static(stochastic.ChanceAware(super().rules(options).at_root)))

    def body(self, params, rng_key, root, invalid_actions, temperature, tree, *,
             recurrent_fn, options: SearchOptions) -> base.PolicyOutput:
        """Dirichlet noise over the A decisions (the outcome ids stay
        impossible at the root), the search, the sampled action; keys as mctx."""
        num_decisions = root.prior_logits.shape[-1] - options.num_chance_outcomes
        rng_key, dirichlet_key, search_key = jax.random.split(rng_key, 3)
        decision_logits = mctx_root_logits(
            dirichlet_key, root.prior_logits[:, :num_decisions],
            invalid_actions[:, :num_decisions] if recurrent_fn.fn.root_mask_given else None,
            self.dirichlet_fraction, self.dirichlet_alpha)
        root = root.replace(prior_logits=jnp.concatenate(
            [decision_logits, root.prior_logits[:, num_decisions:]], axis=-1))
        tree = search_body(params, search_key, root, invalid_actions, tree, None,
                           recurrent_fn=recurrent_fn, rules=self.rules(options), options=options)
        action, action_weights = sample_from_visits(rng_key, tree, temperature)
        if options.solver:  # a proven root plays a move realising its exact value
            root_index = jnp.zeros((tree.batch_size,), jnp.int32)
            action = play_proven(tree, tree_lib.children_stats(tree, root_index), action)
        return base.PolicyOutput(action=action, action_weights=action_weights,
                                 search_tree=tree)


@dataclasses.dataclass(frozen=True, kw_only=True)
class StochasticGumbelPolicy(TakesChanceNodes, GumbelPolicy):
    """Gumbel MuZero on a stochastic game (ours; mctx has no such policy):
    `recurrent_fn` is the pair `(decision_recurrent_fn, chance_recurrent_fn)`
    as for `StochasticMuZeroPolicy`. At the root (a decision node) Gumbel
    noise and sequential halving over the considered decisions; at decision
    nodes below it Gumbel's deterministic rule (the child whose visit share
    lags the improved policy most); at chance nodes mctx's rule (the
    outcome whose visits lag its probability most). The move is Gumbel's
    (`g + log P + sigma(completed Q)`, no temperature) and `action_weights`
    [B, A] the improved policy over the A decisions: the training target
    that needs few simulations."""

    def rules(self, options) -> selection.Rules:
        gumbel = super().rules(options)
        return selection.Rules(at_root=gumbel.at_root,
                               below_root=Static(stochastic.ChanceAware(gumbel.below_root)))

    def body(self, params, rng_key, root, invalid_actions, temperature, tree, *,
             recurrent_fn, options: SearchOptions) -> base.PolicyOutput:
        """Gumbel's body over the A + C edge ids; the weights cut to the A
        decisions (the outcome ids are illegal at the root, weight 0)."""
        output = super().body(params, rng_key, root, invalid_actions, temperature, tree,
                              recurrent_fn=recurrent_fn, options=options)
        num_decisions = root.prior_logits.shape[-1] - options.num_chance_outcomes
        return output.replace(action_weights=output.action_weights[:, :num_decisions])


def search_with_chance_nodes(policy: Policy, params, rng_key, root: base.RootFnOutput,
                             recurrent_fn, num_simulations: int, invalid_actions, tree,
                             temperature) -> base.PolicyOutput:
    """A policy that takes chance nodes, called: the pair of functions
    checked and combined into one (`stochastic.stochastic_root`: the root's
    priors over A + C edge ids, the outcome ids illegal there), the options
    resolved with C outcomes, then the policy's compiled body."""
    if not (isinstance(recurrent_fn, tuple) and len(recurrent_fn) == 2):
        raise TypeError(f"{type(policy).__name__} takes recurrent_fn = (decision_recurrent_fn, "
                        f"chance_recurrent_fn), got {type(recurrent_fn).__name__}")
    decision_fn, chance_fn = recurrent_fn
    checks = policy.options.checks
    validation.check_root(root, invalid_actions, values=checks == "host")
    stochastic_root, mask, combined_fn = stochastic.stochastic_root(
        params, rng_key, root, invalid_actions, decision_fn, chance_fn)
    validation.check_tree_kind(tree, combined_fn.num_outcomes)  # before the probe compiles
    if checks == "host":
        stochastic.check_chance_probabilities(decision_fn, params, rng_key, root,
                                              invalid_actions)
    options = policy.options.resolve(stochastic_root, mask, num_simulations, tree,
                                     num_chance_outcomes=combined_fn.num_outcomes)
    return policy.run(params, rng_key, stochastic_root, combined_fn, mask, tree, options,
                      temperature)


def stochastic_muzero_policy(params: base.Params, rng_key: chex.PRNGKey,
                             root: base.RootFnOutput,
                             decision_recurrent_fn: base.DecisionRecurrentFn,
                             chance_recurrent_fn: base.ChanceRecurrentFn,
                             num_simulations: int,
                             invalid_actions: Optional[chex.Array] = None,
                             max_depth: Optional[int] = None,
                             loop_fn: Callable = jax.lax.fori_loop, *,
                             qtransform: Callable = qtransform_by_parent_and_siblings,
                             dirichlet_fraction: chex.Numeric = 0.25,
                             dirichlet_alpha: chex.Numeric = 0.3,
                             pb_c_init: chex.Numeric = 1.25,
                             pb_c_base: chex.Numeric = 19652,
                             temperature: chex.Numeric = 1.0,
                             tree: Optional[tree_lib.Tree | MctxTree] = None,
                             **options) -> base.PolicyOutput:
    """mctx.stochastic_muzero_policy: search with chance nodes (stochastic.py).

    `decision_recurrent_fn(params, key, action [B], state) ->
    (DecisionRecurrentFnOutput(chance_logits [B, C], afterstate_value [B]),
    afterstate)` and `chance_recurrent_fn(params, key, outcome [B],
    afterstate) -> (ChanceRecurrentFnOutput(action_logits [B, A], value,
    reward, discount[, invalid_actions]), state)`. The signature, defaults,
    random numbers and semantics are mctx 0.0.71's (see the module
    docstring): PUCT with `qtransform` at decision nodes, at chance nodes the
    outcome whose visits lag its probability most, the action sampled from
    the root's visit counts at `temperature`; `action_weights` [B, A].

    The search tree has A + C edge ids (decisions, then outcomes) and
    `num_chance_outcomes` = C; `summary()` answers over the A decisions.
    Unlike mctx's (cut to the A decisions), its mctx-named per-edge arrays
    (`children_visits`, `children_values`, ...) are [B, N, A + C]; their
    first A columns are mctx's. To
    reuse it after a move, `mcts_jax.get_subtree(tree, action)` then
    `get_subtree(tree, A + outcome)` with the outcome that happened (or
    `stochastic_subtree`).

    Our options: `invalid_actions` below the root come from
    `ChanceRecurrentFnOutput.invalid_actions`; `max_nodes`, `max_children`
    (compact layout: K must hold the legal decisions and the possible
    outcomes, else the least likely are dropped), `tree`, `value_range`
    (None for unbounded returns such as 2048's scores), `solver` (needs
    `stop_at_terminal=True`; chance nodes are proven by expectimax, and a
    proven root plays a move realising its exact value),
    `replay_embeddings`, `simulations_per_step`, `steering` and `checks` as
    in `uct_policy`. With checks="host" and concrete inputs, one decision per
    root is probed so that chance logits that are NaN or all impossible are
    reported before the search.
    """
    policy = StochasticMuZeroPolicy(
        pb_c_init=pb_c_init, pb_c_base=pb_c_base, dirichlet_fraction=dirichlet_fraction,
        dirichlet_alpha=dirichlet_alpha, qtransform=qtransform, temperature=temperature,
        options=mctx_options_from(max_depth=max_depth, loop_fn=loop_fn, **options))
    output = policy(params, rng_key, root, (decision_recurrent_fn, chance_recurrent_fn),
                    num_simulations, invalid_actions=as_bool_mask(invalid_actions),
                    tree=our_tree(tree))
    return as_mctx_output(output, root, invalid_actions)
