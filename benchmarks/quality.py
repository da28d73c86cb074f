"""Search quality at a fixed budget on random game trees with known minimax.

For each `GameTree(depth, branching)` and budget, R random roots are
searched in one batched call by every runner, knowing only the rewards
seen (uniform priors, value 0); the figure is the fraction of roots whose
chosen action is minimax-optimal (exact, by brute force): the most visited
root child for UCT, AlphaZero and mctx MuZero (ties to the lowest id), the
sequential halving winner for Gumbel. `random`: a uniformly random move's.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import sweeps
from problems.game_trees import GameTree, random_root_codes


@functools.lru_cache(maxsize=None)
def chooser(tree: GameTree, runner: str, num_simulations: int) -> Callable:
    """A jitted fn(key, root) -> chosen root action [R] int32."""
    search = sweeps.policy_fn(runner, tree.recurrent_fn, num_simulations)

    def choose(key, root):
        out = search(None, key, root, None)
        if runner.endswith("gumbel"):
            return out.action
        visits = (out.search_tree.summary().visit_counts if runner.startswith("ours_")
                  else out.action_weights)
        return jnp.argmax(visits, axis=-1)
    return jax.jit(choose)


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
        for runner in sweeps.available_runners(runners):
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
