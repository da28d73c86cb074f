"""mctx's policies with mctx's signatures: `muzero_policy`, `gumbel_muzero_policy`
and `stochastic_muzero_policy`, each one of our policy values called at once
(`MuZeroPolicy`, `GumbelPolicy`, `StochasticMuZeroPolicy`) and its tree
answered as `MctxTree`.

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

from typing import Any, Callable, Optional

import chex
import jax
import jax.numpy as jnp

from mcts_jax import base
from mcts_jax import selection
from mcts_jax import tree as tree_lib
from mcts_jax.mctx_compat.qtransforms import (our_qtransform, qtransform_by_parent_and_siblings,
                                              qtransform_completed_by_mix_value)
from mcts_jax.mctx_compat.tree import MctxTree, mctx_view, our_tree
from mcts_jax.muzero_policies import (MuZeroPolicy, StochasticMuZeroPolicy, mask_root_logits,
                                      muzero_options)
from mcts_jax.options import SearchOptions
from mcts_jax.policies import DIRICHLET_ALPHA, DIRICHLET_FRACTION, GumbelPolicy


def mctx_options_from(**keywords) -> SearchOptions:
    """The one translation of the mctx-signature keywords (mctx's
    `max_depth` and `loop_fn`, and any of our `SearchOptions` fields) to the
    record: mctx's semantics by default (`muzero_options`: discount 0 only a
    factor; `stop_at_terminal=True` for ours), the prior logits kept as
    given (`keep_prior_logits`: mctx's `children_prior_logits`), and mctx's
    node numbering unless asked otherwise (`node_per_simulation` None or
    absent) or several paths run per step (where it has no meaning)."""
    node_per_simulation = keywords.pop("node_per_simulation", None)
    if node_per_simulation is None:
        node_per_simulation = keywords.get("simulations_per_step", 1) == 1
    keywords.setdefault("keep_prior_logits", True)
    return SearchOptions.from_keywords(muzero_options(), node_per_simulation=node_per_simulation,
                                       **keywords)


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


def muzero_policy(params: base.Params, rng_key: chex.PRNGKey, root: base.RootFnOutput,
                  recurrent_fn: base.RecurrentFn, num_simulations: int,
                  invalid_actions: Optional[chex.Array] = None,
                  max_depth: Optional[int] = None,
                  loop_fn: Callable = jax.lax.fori_loop, *,
                  qtransform: Callable = qtransform_by_parent_and_siblings,
                  dirichlet_fraction: chex.Numeric = DIRICHLET_FRACTION,
                  dirichlet_alpha: chex.Numeric = DIRICHLET_ALPHA,
                  pb_c_init: chex.Numeric = selection.PB_C_INIT,
                  pb_c_base: chex.Numeric = selection.PB_C_BASE,
                  temperature: chex.Numeric = 1.0,
                  tree: Optional[tree_lib.Tree | MctxTree] = None,
                  **options) -> base.PolicyOutput:
    """mctx.muzero_policy: PUCT search with Dirichlet root noise, the action
    sampled from the visit counts at `temperature` (`MuZeroPolicy` called
    at once).

    The signature, defaults and random numbers are mctx 0.0.71's (see the
    module docstring); `action_weights` are the root visit probabilities.
    `qtransform` is one of ours (`mcts_jax.qtransform_by_parent_and_siblings`,
    `qtransform_by_min_max`, ...), the user's `(tree, node, stats) -> [B, K]`,
    or one written mctx's way, `(tree, node_index) -> [A]`. The extra
    keyword arguments are our tree options (see `uct_policy`);
    `stop_at_terminal=True` gives our terminal semantics.
    `node_per_simulation` None: mctx's node numbering with one simulation
    per step, ours with `simulations_per_step` > 1 (several paths per step
    have no mctx counterpart).
    """
    policy = MuZeroPolicy(
        pb_c_init=pb_c_init, pb_c_base=pb_c_base, dirichlet_fraction=dirichlet_fraction,
        dirichlet_alpha=dirichlet_alpha, qtransform=our_qtransform(qtransform),
        temperature=temperature,
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
                         max_num_considered_actions: int = selection.MAX_NUM_CONSIDERED_ACTIONS,
                         gumbel_scale: chex.Numeric = 1.,
                         tree: Optional[tree_lib.Tree | MctxTree] = None,
                         **options) -> base.PolicyOutput:
    """mctx.gumbel_muzero_policy: Gumbel MuZero with mctx's signature,
    defaults, random numbers and semantics (see the module docstring).

    `search_tree.extra_data.root_gumbel` [B, A] holds the Gumbel noise, as in
    mctx. This is `GumbelPolicy` with mctx's order among tied root actions
    (`random_ties=False`: by id), `stop_at_terminal=False` and
    `node_per_simulation=True` (None: True with one simulation per step);
    the extra keyword arguments are our tree options.
    """
    policy = GumbelPolicy(
        max_num_considered_actions=max_num_considered_actions, gumbel_scale=gumbel_scale,
        qtransform=our_qtransform(qtransform), random_ties=False,
        options=mctx_options_from(max_depth=max_depth, loop_fn=loop_fn, **options))
    mask = as_bool_mask(invalid_actions)
    masked_root = root.replace(prior_logits=mask_root_logits(root.prior_logits, mask))
    output = policy(params, rng_key, masked_root, recurrent_fn, num_simulations,
                    invalid_actions=mask, tree=our_tree(tree))
    return as_mctx_output(output, root, invalid_actions)


def stochastic_muzero_policy(params: base.Params, rng_key: chex.PRNGKey,
                             root: base.RootFnOutput,
                             decision_recurrent_fn: base.DecisionRecurrentFn,
                             chance_recurrent_fn: base.ChanceRecurrentFn,
                             num_simulations: int,
                             invalid_actions: Optional[chex.Array] = None,
                             max_depth: Optional[int] = None,
                             loop_fn: Callable = jax.lax.fori_loop, *,
                             qtransform: Callable = qtransform_by_parent_and_siblings,
                             dirichlet_fraction: chex.Numeric = DIRICHLET_FRACTION,
                             dirichlet_alpha: chex.Numeric = DIRICHLET_ALPHA,
                             pb_c_init: chex.Numeric = selection.PB_C_INIT,
                             pb_c_base: chex.Numeric = selection.PB_C_BASE,
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
        dirichlet_alpha=dirichlet_alpha, qtransform=our_qtransform(qtransform),
        temperature=temperature, mask_root_logits=invalid_actions is not None,
        options=mctx_options_from(max_depth=max_depth, loop_fn=loop_fn, **options))
    output = policy(params, rng_key, root, (decision_recurrent_fn, chance_recurrent_fn),
                    num_simulations, invalid_actions=as_bool_mask(invalid_actions),
                    tree=our_tree(tree))
    return as_mctx_output(output, root, invalid_actions)
