"""Stochastic search (chance nodes): ours against mctx on identical inputs.

Both libraries run `stochastic_muzero_policy` with the same root, decision
and chance functions, key and settings (mctx's defaults), storing the same
embeddings, timed in interleaved rounds. Problems: `synthetic` (`TREE`:
hashed priors, values, outcome probabilities and rewards, so the figures
measure the search itself) and `2048` (pgx stepped in the loop: the slide
as decision, the tile as chance outcome, lean states on both sides,
uniform priors and value 0, fresh boards as roots). The suite's
`stochastic` section:

    python -m benchmarks --full --only stochastic   # B = 1 ... 1024 (synthetic: 64, 256 sims)
"""

from __future__ import annotations

from typing import Any, Dict, List

import jax

import mcts_jax
from benchmarks import harness
from problems.chance_trees import ChanceTree
from problems.synthetic import random_root_codes

PROBLEM_TITLES = {
    "synthetic": "synthetic chance tree (free functions)",
    "2048": "2048, pgx stepped in the loop, uniform evaluator",
}
# The synthetic problem's chance tree (the suite's too).
TREE = ChanceTree(depth=12, branching=4, outcomes=6, informed=True)


def synthetic_problem(batch_size: int, tree: ChanceTree):
    """(root, invalid_actions None, (decision_fn, chance_fn)) of `tree`."""
    root = tree.root(random_root_codes(batch_size, batch_size))
    return root, None, (tree.decision_recurrent_fn, tree.chance_recurrent_fn)


def game_2048_problem(batch_size: int, seed: int = 0):
    """(root, invalid_actions [B, 4], (decision_fn, chance_fn)): fresh 2048
    boards, pgx stepped in the loop, uniform priors and value 0."""
    import envs
    from mcts_jax import evaluators
    game = envs.make_chance_game("2048")
    evaluator = evaluators.Uniform()
    key = jax.random.key(seed)
    states = game.init(jax.random.fold_in(key, 0), batch_size)
    root, invalid = game.root(None, jax.random.fold_in(key, 1), states, evaluator)
    return root, invalid, (game.decision_recurrent_fn(evaluator),
                           game.chance_recurrent_fn(evaluator))


def runners(num_simulations: int, root, invalid_actions, functions):
    """{"ours": call, "mctx": call} (mctx where installed): one search each,
    a fresh key every call."""
    counter = iter(range(10 ** 9))
    searches = {"ours": lambda key: mcts_jax.stochastic_muzero_policy(
        None, key, root, *functions, num_simulations, invalid_actions=invalid_actions,
        checks="off").action}
    try:
        import mctx
        searches["mctx"] = lambda key: mctx.stochastic_muzero_policy(
            None, key, harness.mctx_root(mctx, root), *functions, num_simulations,
            invalid_actions=invalid_actions).action
    except ImportError:
        pass
    return {name: (lambda fn=jax.jit(fn): fn(jax.random.key(next(counter))))
            for name, fn in searches.items()}


def measure(problem: str, batch_sizes, simulations, rounds: int, tree: ChanceTree = TREE,
            log=print) -> List[Dict[str, Any]]:
    """One row per (simulations, B) of `problem` ("synthetic" or "2048"):
    ours and mctx in the same interleaved rounds (`harness.interleaved_rounds`)."""
    rows = []
    for num_simulations in simulations:
        for batch_size in batch_sizes:
            inputs = (synthetic_problem(batch_size, tree) if problem == "synthetic"
                      else game_2048_problem(batch_size))
            result = harness.interleaved_rounds(runners(num_simulations, *inputs), rounds,
                                                [("ours", "mctx")])
            work = batch_size * num_simulations
            row = dict(problem=problem, B=batch_size, simulations=num_simulations, rounds=rounds,
                       **{f"{name}_sims_per_s": round(work / side["median_s"])
                          for name, side in result["sides"].items()})
            ratio = result["ratios"].get("ours/mctx")
            if ratio is not None:
                row.update({"ours/mctx": round(ratio["median"], 2),
                            "ratio_min": round(ratio["min"], 2),
                            "ratio_max": round(ratio["max"], 2)})
            rows.append(row)
            log(row)
    return rows

