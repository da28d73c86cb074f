"""Search quality at a fixed budget on random game trees with known minimax.

For each `mcts_jax.game_trees.GameTree(depth, branching)` and budget, R
random roots are searched once each (one batched call) by every runner, and
the figure is the fraction of roots whose chosen action is minimax-optimal
(exact, by brute force). The search knows only the rewards it has seen
(uniform priors, value 0), so this measures how well each algorithm spends
its simulations. Chosen action: the most visited root child for ours UCT,
ours AlphaZero and mctx MuZero (ties to the lowest id), the sequential
halving winner for the Gumbel policies. `random` is the fraction a uniformly
random legal move would get.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

import mcts_jax
from benchmarks import harness
from benchmarks.sweeps import available_runners
from mcts_jax.game_trees import GameTree, random_root_codes


@functools.lru_cache(maxsize=None)
def chooser(tree: GameTree, runner: str, num_simulations: int) -> Callable:
    """A jitted fn(key, root) -> chosen root action [R] int32."""
    if runner.startswith("ours_"):
        def search(key, root):
            if runner == "ours_gumbel":
                return mcts_jax.gumbel_policy(None, key, root, tree.recurrent_fn,
                                              num_simulations).action
            policy = (mcts_jax.uct_policy if runner == "ours_uct" else functools.partial(
                mcts_jax.alphazero_policy, dirichlet_fraction=0.0))
            out = policy(None, key, root, tree.recurrent_fn, num_simulations)
            return jnp.argmax(out.search_tree.summary().visit_counts, axis=-1)
        return jax.jit(search)
    import mctx
    their_fn = harness.mctx_recurrent_fn(tree.recurrent_fn, mctx)

    def their_search(key, root):
        their_root = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                       embedding=root.embedding)
        if runner == "mctx_gumbel":
            return mctx.gumbel_muzero_policy(None, key, their_root, their_fn,
                                             num_simulations).action
        out = mctx.muzero_policy(None, key, their_root, their_fn, num_simulations,
                                 dirichlet_fraction=0.0)
        return jnp.argmax(out.action_weights, axis=-1)
    return jax.jit(their_search)


def measure(trees: Sequence[Tuple[int, int]], simulations: Sequence[int],
            runners: Sequence[str], num_roots: int, seed: int = 0,
            log: Callable[[str], None] = print) -> List[Dict[str, Any]]:
    """Rows {depth, branching, runner, simulations, optimal_fraction, roots}."""
    rows = []
    for depth, branching in trees:
        tree = GameTree(depth, branching)
        codes = random_root_codes(seed + 1000 * depth + branching, num_roots)
        optimal = tree.optimal_actions(codes)  # [R, A] bool
        rows.append(dict(depth=depth, branching=branching, runner="random", simulations=0,
                         optimal_fraction=float(optimal.mean()), roots=num_roots))
        root = tree.root(codes)
        for runner in available_runners(runners):
            for num_simulations in simulations:
                action = np.asarray(chooser(tree, runner, num_simulations)(
                    jax.random.key(seed), root))
                fraction = float(optimal[np.arange(num_roots), action].mean())
                rows.append(dict(depth=depth, branching=branching, runner=runner,
                                 simulations=num_simulations, optimal_fraction=fraction,
                                 roots=num_roots))
                log(f"tree d={depth} b={branching} {runner:15s} sims={num_simulations:<5d} "
                    f"optimal {fraction:.3f}")
    return rows
