"""mcts_jax: batched Monte Carlo Tree Search in JAX with fixed-size array trees."""

from mcts_jax import memory, visualize
from mcts_jax.base import (ChanceRecurrentFn, ChanceRecurrentFnOutput, DecisionRecurrentFn,
                           DecisionRecurrentFnOutput, InteriorActionSelectionFn, LoopFn,
                           PolicyOutput, RecurrentFn, RecurrentFnOutput, RecurrentState,
                           RootActionSelectionFn, RootFnOutput, SearchSummary)
from mcts_jax.mctx_selection import (gumbel_muzero_interior_action_selection,
                                     gumbel_muzero_root_action_selection,
                                     muzero_action_selection)
from mcts_jax.mctx_tree import MctxSearchSummary, MctxTree, mctx_view
from mcts_jax.mctx_policies import (MuZeroPolicy, StochasticGumbelPolicy, StochasticMuZeroPolicy,
                                    gumbel_muzero_policy, muzero_policy,
                                    stochastic_muzero_policy)
from mcts_jax.options import SearchOptions
from mcts_jax.recompiles import RecompileWarning
from mcts_jax.policies import (AlphaZeroPolicy, GumbelPolicy, Policy, RulePolicy, UCTPolicy,
                               alphazero_policy, gumbel_policy, rule_policy, uct_policy)
from mcts_jax.qtransforms import (mixed_value, qtransform_by_min_max,
                                  qtransform_by_parent_and_siblings,
                                  qtransform_completed_by_mix_value, qtransform_raw)
from mcts_jax.reuse import get_subtree, reset_tree, select_rows
from mcts_jax.stochastic import StochasticEmbedding, is_chance_node, stochastic_subtree
from mcts_jax.selection import (GumbelExtraData, Rules, gumbel_interior_scores,
                                gumbel_root_scores, halving_scores, prior_logits, puct_scores,
                                tie_break_noise, uct_scores)
from mcts_jax.tree import ILLEGAL, UNEXPANDED, ChildrenStats, Tree, children_stats
from mcts_jax.tree_search import search
from mcts_jax import sharding
from mcts_jax import moved as _moved

# The application moved to the top-level package `training` (mcts_jax/moved.py):
# the old module names still import, with a DeprecationWarning.
_moved.install()


def __getattr__(name):
    if f"{__name__}.{name}" in _moved.MOVED:
        module = _moved.load(f"{__name__}.{name}")
        globals()[name] = module  # warned once, as `import mcts_jax.<name>` does
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# mctx's name for the Gumbel extra data (its `root_gumbel` field is the same).
GumbelMuZeroExtraData = GumbelExtraData

__version__ = "0.1.0"

__all__ = [
    # the callback contract and outputs
    "PolicyOutput", "RecurrentFn", "RecurrentFnOutput", "RootFnOutput", "SearchSummary",
    "DecisionRecurrentFn", "DecisionRecurrentFnOutput", "ChanceRecurrentFn",
    "ChanceRecurrentFnOutput",
    "Tree", "ChildrenStats", "children_stats", "UNEXPANDED", "ILLEGAL",
    # mctx's names: its tree, selection functions and types
    "MctxTree", "MctxSearchSummary", "mctx_view", "muzero_action_selection",
    "gumbel_muzero_root_action_selection", "gumbel_muzero_interior_action_selection",
    "RootActionSelectionFn", "InteriorActionSelectionFn", "LoopFn", "RecurrentState",
    # the composable search, its rules and Q transforms
    "search", "SearchOptions", "RecompileWarning", "Rules", "uct_scores", "puct_scores",
    "tie_break_noise",
    "gumbel_root_scores", "gumbel_interior_scores", "halving_scores", "prior_logits",
    "GumbelExtraData", "GumbelMuZeroExtraData", "qtransform_by_min_max", "qtransform_by_parent_and_siblings",
    "qtransform_completed_by_mix_value", "qtransform_raw", "mixed_value",
    # policies (ours, then mctx's signatures)
    "Policy", "UCTPolicy", "AlphaZeroPolicy", "GumbelPolicy", "RulePolicy", "MuZeroPolicy",
    "StochasticGumbelPolicy", "StochasticMuZeroPolicy",
    "uct_policy", "alphazero_policy", "gumbel_policy", "rule_policy", "muzero_policy",
    "gumbel_muzero_policy", "stochastic_muzero_policy",
    # chance nodes
    "StochasticEmbedding", "is_chance_node", "stochastic_subtree",
    # subtree reuse
    "get_subtree", "reset_tree", "select_rows",
]
