"""mctx compatibility: mctx's signatures and tree, as a layer on top of our core.

Code written for mctx 0.0.71 runs with `import mcts_jax as mctx`: the package
exports these names (mctx's), and nothing in the core imports this
subpackage (an import-linter contract checks it). What is here:

- policies.py: `muzero_policy`, `gumbel_muzero_policy`,
  `stochastic_muzero_policy` with mctx's signatures, defaults, random
  numbers and semantics, each one of our policy values called at once;
- tree.py: `MctxTree`, mctx's `Tree` field for field, computed from ours
  (`mctx_view`), and `MctxSearchSummary`;
- selection.py: mctx's selection functions (`muzero_action_selection`,
  `gumbel_muzero_root_action_selection`,
  `gumbel_muzero_interior_action_selection`) and `MctxSelectionRule`,
  which runs any such function as our rule;
- search.py: mctx's `search` with selection functions (and ours with rules:
  `mcts_jax.search` takes both);
- qtransforms.py: mctx's form of the Q transforms, `(tree, node_index) ->
  [A]`, beside ours, and `our_qtransform` for one written mctx's way.

docs/mctx_migration.md says what is the same as mctx and what differs.
"""

from mcts_jax.mctx_compat.policies import (gumbel_muzero_policy, muzero_policy,
                                           stochastic_muzero_policy)
from mcts_jax.mctx_compat.qtransforms import (MctxFormQTransform, our_qtransform,
                                              qtransform_by_min_max,
                                              qtransform_by_parent_and_siblings,
                                              qtransform_completed_by_mix_value, qtransform_raw)
from mcts_jax.mctx_compat.search import mctx_search, search
from mcts_jax.mctx_compat.selection import (gumbel_muzero_interior_action_selection,
                                            gumbel_muzero_root_action_selection,
                                            muzero_action_selection)
from mcts_jax.mctx_compat.tree import MctxSearchSummary, MctxTree, mctx_view, our_tree

__all__ = [
    "muzero_policy", "gumbel_muzero_policy", "stochastic_muzero_policy",
    "MctxTree", "MctxSearchSummary", "mctx_view", "our_tree",
    "muzero_action_selection", "gumbel_muzero_root_action_selection",
    "gumbel_muzero_interior_action_selection", "search", "mctx_search",
    "qtransform_by_min_max", "qtransform_by_parent_and_siblings",
    "qtransform_completed_by_mix_value", "qtransform_raw", "our_qtransform",
    "MctxFormQTransform",
]
