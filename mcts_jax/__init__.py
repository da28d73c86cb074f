"""mcts_jax: batched Monte Carlo Tree Search in JAX with fixed-size array trees.

The public surface, by group (`__all__`); every name has its docstring:

- the callback contract and outputs (base.py), the tree (tree.py);
- policies: values (`AlphaZeroPolicy`, ...) and the same called at once
  (`alphazero_policy`, ...), policy.py, policies.py, muzero_policies.py;
- the composable search: `search` with the user's rules, the rules and
  Q transforms they are built from (selection.py, qtransforms.py), the
  options record (options.py), the plug-ins' interface (plugin.py);
- graph search: `hash_embedding` for `SearchOptions(transpositions=True)` (graph.py);
- subtree reuse (reuse.py) and chance nodes (stochastic.py);
- tools: `memory`, `visualize`, `sharding`, `evaluators`;
- mctx compatibility (mctx_compat/): mctx's signatures and tree, so that
  `import mcts_jax as mctx` runs mctx code.
"""

from mcts_jax import anytime, evaluators, memory, sampled, sharding, stopping, visualize, widening
from mcts_jax.graph import hash_embedding
from mcts_jax.base import (ChanceRecurrentFn, ChanceRecurrentFnOutput, DecisionRecurrentFn,
                           DecisionRecurrentFnOutput, InteriorActionSelectionFn, LoopFn,
                           PolicyOutput, RecurrentFn, RecurrentFnOutput, RecurrentState,
                           RootActionSelectionFn, RootFnOutput, SearchSummary)
from mcts_jax.mctx_compat import (MctxSearchSummary, MctxTree, gumbel_muzero_interior_action_selection,
                                  gumbel_muzero_policy, gumbel_muzero_root_action_selection,
                                  mctx_view, muzero_action_selection, muzero_policy,
                                  our_qtransform, qtransform_by_min_max,
                                  qtransform_by_parent_and_siblings,
                                  qtransform_completed_by_mix_value, qtransform_raw, search,
                                  stochastic_muzero_policy)
from mcts_jax.muzero_policies import (MuZeroPolicy, StochasticGumbelPolicy,
                                      StochasticMuZeroPolicy, muzero_options)
from mcts_jax.options import SearchOptions
from mcts_jax.plugin import SearchPlugin
from mcts_jax.policies import (AlphaZeroPolicy, GumbelPolicy, UCTPolicy, alphazero_policy,
                               gumbel_policy, uct_policy)
from mcts_jax.policy import Policy, RulePolicy, rule_policy
from mcts_jax.qtransforms import mixed_value
from mcts_jax.hashable import RecompileWarning
from mcts_jax.reuse import get_subtree, reset_tree, select_rows
from mcts_jax.selection import (GumbelExtraData, Rules, gumbel_interior_scores,
                                gumbel_root_scores, halving_scores, prior_logits, puct_scores,
                                tie_break_noise, uct_scores)
from mcts_jax.stochastic import StochasticEmbedding, is_chance_node, stochastic_subtree
from mcts_jax.tree import ILLEGAL, UNEXPANDED, ChildrenStats, Tree, children_stats
from mcts_jax.tree_search import RuleNaNWarning

# mctx's name for the Gumbel extra data (its `root_gumbel` field is the same).
GumbelMuZeroExtraData = GumbelExtraData

__version__ = "0.1.0"

__all__ = [
    # the callback contract and outputs
    "RootFnOutput", "RecurrentFnOutput", "RecurrentFn", "PolicyOutput", "SearchSummary",
    "DecisionRecurrentFnOutput", "DecisionRecurrentFn", "ChanceRecurrentFnOutput",
    "ChanceRecurrentFn",
    # the tree
    "Tree", "ChildrenStats", "children_stats", "UNEXPANDED", "ILLEGAL",
    # policies: values, then the same called at once
    "Policy", "UCTPolicy", "AlphaZeroPolicy", "GumbelPolicy", "RulePolicy", "MuZeroPolicy",
    "StochasticMuZeroPolicy", "StochasticGumbelPolicy",
    "uct_policy", "alphazero_policy", "gumbel_policy", "rule_policy", "muzero_options",
    # the composable search: options, rules, Q transforms, warnings
    "search", "SearchOptions", "SearchPlugin", "Rules", "uct_scores", "puct_scores", "tie_break_noise",
    "gumbel_root_scores", "gumbel_interior_scores", "halving_scores", "prior_logits",
    "GumbelExtraData", "qtransform_by_min_max", "qtransform_by_parent_and_siblings",
    "qtransform_completed_by_mix_value", "qtransform_raw", "mixed_value", "RecompileWarning",
    "RuleNaNWarning",
    # graph search (transpositions)
    "hash_embedding",
    # subtree reuse and chance nodes
    "get_subtree", "reset_tree", "select_rows", "StochasticEmbedding", "is_chance_node",
    "stochastic_subtree",
    # tools (modules)
    "memory", "visualize", "sharding", "evaluators",
    # mctx compatibility (mctx_compat/): mctx's signatures, tree and selection functions
    "muzero_policy", "gumbel_muzero_policy", "stochastic_muzero_policy", "MctxTree",
    "MctxSearchSummary", "mctx_view", "muzero_action_selection",
    "gumbel_muzero_root_action_selection", "gumbel_muzero_interior_action_selection",
    "GumbelMuZeroExtraData", "RootActionSelectionFn", "InteriorActionSelectionFn", "LoopFn",
    "RecurrentState", "our_qtransform",
]
