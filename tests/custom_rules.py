"""Selection rules and a Q transform written as a user writes them in a
notebook: from the public contract alone (`mcts_jax.ChildrenStats` fields,
`mcts_jax.search`), with no library edit.

- `rebuilt_puct`: AlphaZero's PUCT with mctx's parent-and-siblings Q
  normalisation, re-derived from the stats (test: it reproduces
  `alphazero_policy`'s visit counts exactly).
- `depth_scaled_ucb`: a rule the library does not have: UCB1 whose
  exploration constant shrinks with depth (`c / (1 + depth)`), with the
  prior as a tie-breaking bonus for unvisited children.
- `qtransform_clipped`: a Q transform the library does not have: Q clipped
  to [-0.5, 0.5], then mapped to [0, 1].
- `FlattenedRootPolicy`: a whole policy value of the user's own (a
  `mcts_jax.Policy` subclass): its own root setup and its own rule.
"""

import dataclasses
import functools

import jax.numpy as jnp

import mcts_jax


def rebuilt_puct(tree, node, stats, *, c_init=1.25, c_base=19652.0):
    parent_visits = stats.node_visits.astype(jnp.float32)[:, None]
    c = c_init + jnp.log((parent_visits + c_base + 1.0) / c_base)
    visited = stats.visits > 0
    node_value = stats.node_value[:, None]
    completed = jnp.where(visited, stats.qvalues, node_value)
    low = jnp.minimum(node_value, jnp.min(completed, axis=-1, keepdims=True))
    high = jnp.maximum(node_value, jnp.max(completed, axis=-1, keepdims=True))
    q = jnp.where(visited, stats.qvalues, low)
    q = (q - low) / jnp.maximum(high - low, 1e-8)
    bonus = jnp.sqrt(parent_visits) * c * stats.priors / (stats.visits.astype(jnp.float32) + 1.0)
    return jnp.where(stats.legal, q + bonus, -jnp.inf)


def depth_scaled_ucb(tree, node, stats, *, c=1.4):
    parent_visits = jnp.maximum(stats.node_visits.astype(jnp.float32), 1.0)[:, None]
    visits = jnp.maximum(stats.visits.astype(jnp.float32), 1.0)
    scale = c / (1.0 + stats.depth.astype(jnp.float32))[:, None]
    scores = stats.qvalues + scale * jnp.sqrt(jnp.log(parent_visits) / visits)
    scores = jnp.where(stats.visits == 0, 1e6 + stats.priors, scores)
    return jnp.where(stats.legal, scores, -jnp.inf)


def qtransform_clipped(tree, node, stats, *, bound=0.5):
    q = jnp.clip(stats.qvalues, -bound, bound)
    return jnp.where(stats.visits > 0, (q + bound) / (2 * bound), 0.0)


# A policy made of the rule, usable wherever a built-in policy is.
depth_scaled_policy = mcts_jax.rule_policy(depth_scaled_ucb)


# A whole policy of the user's own: a root setup and a rule, as a value.
@dataclasses.dataclass(frozen=True, kw_only=True)
class FlattenedRootPolicy(mcts_jax.Policy):
    """The user's policy: root priors flattened by `root_temperature`
    (`softmax(logits / t)`, t > 1 spreads the search at the root, a root
    setup the library does not have), `depth_scaled_ucb` everywhere, the
    most visited move."""

    root_temperature: float = 2.0
    c: float = 1.4
    final_action: str = "most_visited"

    def root_setup(self, rng_key, root, invalid_actions, tree, options):
        del rng_key, invalid_actions, tree, options
        return root.replace(prior_logits=root.prior_logits / self.root_temperature), None

    def rules(self, options):
        rule = functools.partial(depth_scaled_ucb, c=self.c)
        return mcts_jax.Rules(at_root=rule, below_root=rule)
