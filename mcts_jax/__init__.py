"""mcts_jax: batched Monte Carlo Tree Search in JAX with fixed-size array trees."""

from mcts_jax import memory, visualize
from mcts_jax.base import (PolicyOutput, RecurrentFn, RecurrentFnOutput, RootFnOutput,
                           SearchSummary)
from mcts_jax.policies import alphazero_policy, gumbel_policy, uct_policy
from mcts_jax.reuse import get_subtree, reset_tree, select_rows
from mcts_jax.tree import ILLEGAL, UNEXPANDED, Tree
from mcts_jax import sharding

__version__ = "0.1.0"

__all__ = [
    "PolicyOutput", "RecurrentFn", "RecurrentFnOutput", "RootFnOutput", "SearchSummary",
    "Tree", "UNEXPANDED", "ILLEGAL", "alphazero_policy", "gumbel_policy", "uct_policy", "get_subtree",
    "reset_tree", "select_rows",
]
