"""The MuZero family: policies for a learned model, and for chance nodes.

    MuZeroPolicy            Dirichlet noise over every action   PUCT + 1e-7 tie noise   sampled
    StochasticMuZeroPolicy  the same over the A decisions        PUCT / chance rule      sampled
    StochasticGumbelPolicy  Gumbel noise over the A decisions    halving / Gumbel /      Gumbel's
                                                                 chance rule             choice

MuZeroPolicy is mctx's `muzero_policy` as a value: the same keys, noise,
tie-breaking and sampled move (so `mcts_jax.mctx_compat.muzero_policy`, the
mctx signature, is this policy called at once), and mctx's semantics by
default: discount 0 is only a factor (a learned model's terminal states
are not trusted, `stop_at_terminal=False`) and simulation i writes node
i + 1 (`node_per_simulation`). The stochastic policies take the pair
`(decision_recurrent_fn, chance_recurrent_fn)` (stochastic.py). Each is a
`Policy` written through its hooks alone (policy.py).
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
from mcts_jax import tree_search
from mcts_jax import validation
from mcts_jax.options import SearchOptions
from mcts_jax.policies import (DIRICHLET_ALPHA, DIRICHLET_FRACTION, PARENT_AND_SIBLINGS,
                               GumbelPolicy, PUCT_CHECKS, puct_rule)
from mcts_jax.policy import Policy, play_proven, root_actions_view


def muzero_root_logits(rng_key: chex.PRNGKey, prior_logits: chex.Array,
                       invalid_actions: Optional[chex.Array], dirichlet_fraction,
                       dirichlet_alpha) -> chex.Array:
    """MuZero's root logits [B, A], as mctx draws them: Dirichlet noise drawn
    over every action and mixed into `softmax(prior_logits)`, back to
    logits, then `mask_root_logits`."""
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


def visit_probabilities(tree: tree_lib.Tree) -> chex.Array:
    """The root visit probabilities [B, A] (mctx's `summary().visit_probs`):
    uniform where a root has no visits."""
    visit_counts = tree.summary().visit_counts.astype(jnp.float32)
    total = jnp.sum(visit_counts, axis=-1, keepdims=True)
    return jnp.where(total > 0, visit_counts / jnp.maximum(total, 1), 1 / tree.num_actions)


def sample_from_visits(rng_key: chex.PRNGKey, tree: tree_lib.Tree,
                       temperature) -> Tuple[chex.Array, chex.Array]:
    """mctx's final action: (action [B] sampled from the root visit
    probabilities at `temperature`, those probabilities [B, A]); a
    stochastic tree's over its A decisions (`summary()`)."""
    action_weights = visit_probabilities(tree)
    logits = tree_lib.log_probabilities(action_weights)
    logits = (logits - jnp.max(logits, axis=-1, keepdims=True)) / jnp.maximum(
        jnp.finfo(jnp.float32).tiny, temperature)
    return jax.random.categorical(rng_key, logits).astype(jnp.int32), action_weights


def muzero_options(**keywords) -> SearchOptions:
    """MuZero's (and mctx's) semantics as options: discount 0 only a factor,
    node i + 1 written by simulation i."""
    return SearchOptions(stop_at_terminal=False, node_per_simulation=True, **keywords)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MuZeroPolicy(Policy):
    """MuZero with a learned model, mctx's `muzero_policy` as a value:
    Dirichlet noise drawn over every action, PUCT with a 1e-7 tie-breaking
    noise, the action sampled from the visit counts at `temperature`; keys
    split as mctx splits them (`rng_key, dirichlet_key, search_key =
    split(rng_key, 3)`, the move drawn with the first). Default options:
    `muzero_options()`."""

    pb_c_init: Any = selection.PB_C_INIT
    pb_c_base: Any = selection.PB_C_BASE
    dirichlet_fraction: Any = DIRICHLET_FRACTION
    dirichlet_alpha: Any = DIRICHLET_ALPHA
    qtransform: Callable = PARENT_AND_SIBLINGS
    temperature: Any = 1.0
    field_checks: ClassVar[dict] = PUCT_CHECKS

    @classmethod
    def default_options(cls) -> SearchOptions:
        return muzero_options()

    def split_key(self, rng_key):
        choice_key, dirichlet_key, search_key = jax.random.split(rng_key, 3)
        return dirichlet_key, search_key, choice_key

    def root_setup(self, rng_key, root, invalid_actions, tree, options):
        """Dirichlet noise over every action, invalid ones masked
        (`muzero_root_logits`)."""
        return root.replace(prior_logits=muzero_root_logits(
            rng_key, root.prior_logits, invalid_actions, self.dirichlet_fraction,
            self.dirichlet_alpha)), None

    def rules(self, options) -> selection.Rules:
        return selection.everywhere(puct_rule(self.pb_c_init, self.pb_c_base, self.qtransform,
                                              tie_break=selection.MUZERO_TIE_BREAK))

    def choose(self, rng_key, tree, temperature, options):
        """The move sampled from the root visits at `temperature`
        (`sample_from_visits`), with the visit probabilities."""
        return sample_from_visits(rng_key, tree, temperature)


class TakesChanceNodes:
    """A policy mixin: `recurrent_fn` is the pair `(decision_recurrent_fn,
    chance_recurrent_fn)`, combined into one function over A decisions and
    C outcomes (`stochastic.stochastic_root`) before the search."""

    takes_chance_nodes: ClassVar[bool] = True

    def __call__(self, params, rng_key, root, recurrent_fn, num_simulations, *,
                 invalid_actions=None, tree=None, temperature=None,
                 **overrides) -> base.PolicyOutput:
        """As `Policy.__call__`, with `recurrent_fn = (decision_recurrent_fn,
        chance_recurrent_fn)`: the pair checked and combined, the options
        resolved with C outcomes, then the compiled search."""
        if overrides:
            return self.replace(**overrides)(params, rng_key, root, recurrent_fn,
                                             num_simulations, invalid_actions=invalid_actions,
                                             tree=tree, temperature=temperature)
        if not (isinstance(recurrent_fn, tuple) and len(recurrent_fn) == 2):
            raise TypeError(f"{type(self).__name__} takes recurrent_fn = "
                            f"(decision_recurrent_fn, chance_recurrent_fn), got "
                            f"{type(recurrent_fn).__name__}")
        decision_fn, chance_fn = recurrent_fn
        checks = self.options.checks
        validation.check_call(root, invalid_actions, values=checks == "host", rng_key=rng_key)
        stochastic_root, mask, combined_fn = stochastic.stochastic_root(
            params, rng_key, root, invalid_actions, decision_fn, chance_fn)
        validation.check_tree_kind(tree, combined_fn.num_outcomes)  # before the probe compiles
        if checks == "host":
            stochastic.check_chance_probabilities(decision_fn, params, rng_key, root,
                                                  invalid_actions)
        return tree_search.run_compiled(self, params, rng_key, stochastic_root, combined_fn,
                                        mask, tree, num_simulations, temperature,
                                        num_chance_outcomes=combined_fn.num_outcomes)


@dataclasses.dataclass(frozen=True, kw_only=True)
class StochasticMuZeroPolicy(TakesChanceNodes, MuZeroPolicy):
    """Stochastic MuZero, mctx's `stochastic_muzero_policy` as a value: its
    `recurrent_fn` is the pair `(decision_recurrent_fn,
    chance_recurrent_fn)`; PUCT at decision nodes, at chance nodes the
    outcome whose visits lag its probability most, Dirichlet noise over the
    A decisions, the action sampled from the root's decision visits (with
    the solver, a proven root plays a move realising its exact value).
    `mask_root_logits`: the noisy root logits are shifted and masked by the
    root mask (`mask_root_logits`), as mctx does when the caller gives a
    mask (the priors are the same either way; only kept logits differ)."""

    mask_root_logits: bool = True

    def root_setup(self, rng_key, root, invalid_actions, tree, options):
        """Dirichlet noise over the A decisions; the outcome ids stay
        impossible at the root."""
        num_decisions = root.prior_logits.shape[-1] - options.num_chance_outcomes
        decision_logits = muzero_root_logits(
            rng_key, root.prior_logits[:, :num_decisions],
            invalid_actions[:, :num_decisions] if self.mask_root_logits else None,
            self.dirichlet_fraction, self.dirichlet_alpha)
        return root.replace(prior_logits=jnp.concatenate(
            [decision_logits, root.prior_logits[:, num_decisions:]], axis=-1)), None

    def choose(self, rng_key, tree, temperature, options):
        action, action_weights = sample_from_visits(rng_key, tree, temperature)
        if options.solver:  # a proven root plays a move realising its exact value
            stats, to_actions = root_actions_view(tree)
            action = play_proven(tree, stats, action, to_actions)
        return action, action_weights


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

    def choose(self, rng_key, tree, temperature, options):
        """Gumbel's choice, the weights cut to the A decisions (the outcome
        ids are illegal at the root, weight 0)."""
        action, action_weights = super().choose(rng_key, tree, temperature, options)
        return action, action_weights[:, :tree.num_decisions]
