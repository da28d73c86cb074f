"""UCT with one random playout per leaf on tic-tac-toe, from the empty board:
the plain-Python tutorial UCT, OpenSpiel's C++ MCTSBot (when installed) and
our `uct_policy` with pgx playouts, timed in the same interleaved rounds.

What each side computes: `simulations` UCT simulations per search (c = 1.4
for the baselines, our uct_policy's default constant for ours), one uniformly
random playout to the end of the game per new leaf; the baselines store
Python objects / C++ nodes, one search at a time; ours stores the lean pgx
state per node, B searches per jitted call.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence

import jax

import envs
import mcts_jax
from benchmarks import harness
from benchmarks.baselines import openspiel_mcts, python_uct
from mcts_jax import evaluators

PYTHON = "plain Python UCT (tutorial style)"
OPENSPIEL = "OpenSpiel C++ MCTSBot"
OURS = "mcts_jax uct_policy + pgx playouts"


def measure(num_simulations: int, batch_sizes: Sequence[int], rounds: int,
            seed: int = 0) -> List[Dict[str, Any]]:
    """Rows {baseline, B, simulations, sims_per_s (median over rounds),
    sims_per_s_min, sims_per_s_max, compile_s, ratio_vs_openspiel (this row's
    simulations/s over OpenSpiel's within each round: median, _min, _max)}.
    Ours runs at B = 1 and at every size of `batch_sizes`."""
    sides = {PYTHON: python_uct.search_fn(num_simulations, seed)}
    labels = {PYTHON: (PYTHON, 1)}  # side -> (baseline, B)
    spiel = openspiel_mcts.search_fn(num_simulations, seed)
    if spiel is not None:
        sides[OPENSPIEL], labels[OPENSPIEL] = spiel, (OPENSPIEL, 1)
    game = envs.make("tic_tac_toe")
    evaluator = evaluators.RandomPlayouts(num_playouts=1)
    recurrent_fn = game.recurrent_fn(evaluator)
    search = jax.jit(lambda k, r, i: mcts_jax.uct_policy(None, k, r, recurrent_fn,
                                                         num_simulations,
                                                         invalid_actions=i).action)
    sizes = [1] + [b for b in batch_sizes if b != 1]
    for batch_size in sizes:
        states = game.init(jax.random.key(seed), batch_size)
        root, invalid = game.root(None, jax.random.key(seed + 1), states, evaluator)
        name = f"{OURS}, B={batch_size}"
        sides[name] = (lambda r=root, i=invalid: search(jax.random.key(seed + 2), r, i))
        labels[name] = (OURS, batch_size)
    work = {name: batch_size * num_simulations for name, (_, batch_size) in labels.items()}
    pairs = [(name, OPENSPIEL) for name in sides if name != OPENSPIEL] if spiel else []
    result = harness.interleaved_rounds(sides, rounds, pairs, work)
    rows = []
    for name, side in result["sides"].items():
        label, batch_size = labels[name]
        rows.append(dict(baseline=label, B=batch_size, simulations=num_simulations,
                         **harness.throughput_fields(side, work[name]), rounds=rounds,
                         **harness.ratio_fields(result["ratios"].get(f"{name}/{OPENSPIEL}"),
                                                "ratio_vs_openspiel")))
    if spiel is None:
        rows.insert(1, dict(baseline=OPENSPIEL, B=1, simulations=num_simulations,
                            sims_per_s="not installed"))
    return rows
