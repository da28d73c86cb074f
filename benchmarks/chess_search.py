"""Search throughput on chess-sized problems, ours (compact and dense) against mctx.

Two recurrent functions with A = 4672 action ids: "synthetic", a hashed tree
costing almost nothing with about 36 legal moves a position (every side
stores the same uint32 code per node), and "pgx_chess", the pgx simulator
with uniform priors and value 0. Sides (`SIDES`: what each stores), all
alphazero_policy / mctx.muzero_policy without root noise on identical roots
and keys, in the same interleaved rounds: ours compact (K = 218) and dense,
mctx with our very embedding (through `harness.mctx_recurrent_fn`) and, on
pgx_chess, mctx with the full pgx state its users store. Reported as
separate factors (`FACTORS`: library, layout, embedding) and their
products, each the median and range of the per-round ratios.

The suite's `chess_search` section, in its full mode only (B = 64, 128
simulations; mctx compiles the synthetic tree for minutes on a CPU):

    python -m benchmarks --full --only chess_search
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable, Dict, List, Sequence

import jax
import jax.numpy as jnp

import envs
import mcts_jax
from benchmarks import harness, memory
from mcts_jax import evaluators

NUM_ACTIONS = 4672
MAX_CHILDREN = 218
SIDES = {  # what each side computes and stores per node
    "ours_compact": "alphazero_policy, compact tree (K=218 slots), our embedding",
    "ours_dense": "alphazero_policy, dense tree (A=4672 slots), our embedding",
    "mctx_lean": "mctx.muzero_policy, dense tree, our embedding (pgx: our lean state)",
    "mctx_full": "mctx.muzero_policy, dense tree, the full pgx state",
}
FACTORS = (  # (name, ours, peer): ours / peer simulations per second, per round
    ("library: ours dense / mctx (same layout and embedding)", "ours_dense", "mctx_lean"),
    ("layout: ours compact / ours dense", "ours_compact", "ours_dense"),
    ("embedding: mctx lean / mctx full pgx state", "mctx_lean", "mctx_full"),
    ("library x layout: ours compact / mctx (same embedding)", "ours_compact", "mctx_lean"),
    ("all three: ours compact / mctx with full pgx states", "ours_compact", "mctx_full"),
)
COLUMNS = ["problem", "B", "simulations", "side", "sims_per_s", "sims_per_s_min",
           "sims_per_s_max", "compile_s", "stores"]
FACTOR_COLUMNS = ["problem", "B", "simulations", "factor", "ratio"]


def synthetic_outputs(code):
    """(logits [B, A], illegal [B, A], value [B]) of hashed states [B] uint32."""
    actions = jnp.arange(NUM_ACTIONS, dtype=jnp.uint32)
    mixed = (code[:, None] + actions * jnp.uint32(0x85EBCA6B)) * jnp.uint32(0xC2B2AE35)
    mixed = mixed ^ (mixed >> 15)
    logits = ((mixed >> 8) & 255).astype(jnp.float32) / 64.0 - 2.0
    illegal = ((mixed >> 17) & 127) != 0  # about 36 legal moves of 4672
    illegal = illegal & ~(jnp.arange(NUM_ACTIONS) == (code[:, None] % NUM_ACTIONS))
    value = ((code >> 8) & 511).astype(jnp.float32) / 256.0 - 1.0
    return logits, illegal, value


def synthetic_recurrent_fn(params, rng_key, action, code):
    del params, rng_key
    code = (code ^ (action.astype(jnp.uint32) + jnp.uint32(1))) * jnp.uint32(0x9E3779B1)
    code = code + jnp.uint32(0x7F4A7C15)
    logits, illegal, value = synthetic_outputs(code)
    return mcts_jax.RecurrentFnOutput(
        reward=jnp.zeros_like(value), discount=-jnp.ones_like(value), prior_logits=logits,
        value=value, invalid_actions=illegal), code


def make_runners(problem, batch_size, num_simulations, seed=0):
    """{side: a call running one batched search} for SIDES (mctx ones when
    installed; mctx_full for pgx_chess only)."""
    key = jax.random.key(seed)
    if problem == "synthetic":
        code = (jnp.arange(batch_size, dtype=jnp.uint32) + jnp.uint32(seed)) \
            * jnp.uint32(2654435761)
        logits, illegal, value = synthetic_outputs(code)
        root = mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=code)
        recurrent_fn = synthetic_recurrent_fn
    else:
        game = envs.make("chess")
        evaluator = evaluators.Uniform()
        states = game.init(jax.random.key(seed + 1), batch_size)
        root, illegal = game.root(None, key, states, evaluator)
        recurrent_fn = game.recurrent_fn(evaluator)

    def ours(max_children):
        @jax.jit
        def run(key, root, illegal):
            return mcts_jax.alphazero_policy(
                None, key, root, recurrent_fn, num_simulations, invalid_actions=illegal,
                dirichlet_fraction=0.0, max_children=max_children).action_weights
        return lambda: run(key, root, illegal)

    runners = {"ours_compact": ours(MAX_CHILDREN), "ours_dense": ours(None)}
    try:
        import mctx
    except ImportError:
        return runners
    root_logits = jnp.where(illegal, jnp.finfo(jnp.float32).min, root.prior_logits)

    def theirs(their_fn, embedding):
        their_root = mctx.RootFnOutput(prior_logits=root_logits, value=root.value,
                                       embedding=embedding)

        @jax.jit
        def run(key, root, illegal):
            return mctx.muzero_policy(None, key, root, their_fn, num_simulations,
                                      invalid_actions=illegal,
                                      dirichlet_fraction=0.0).action_weights
        return functools.partial(run, key, their_root, illegal)

    runners["mctx_lean"] = theirs(harness.mctx_recurrent_fn(recurrent_fn, mctx), root.embedding)
    if problem == "pgx_chess":
        runners["mctx_full"] = theirs(memory.mctx_pgx_recurrent_fn(mctx, game), states)
    return runners


def measure(problems: Sequence[str], batch_sizes: Sequence[int], simulations: Sequence[int],
            rounds: int, seed: int = 0,
            log: Callable[[str], None] = print) -> List[Dict[str, Any]]:
    """Per cell (problem, B, simulations): one row per side (COLUMNS), then
    one row per factor of FACTORS (FACTOR_COLUMNS: ours / peer simulations
    per second, the median `ratio` and range `ratio_min`, `ratio_max` of the
    per-round `ratios`), every side of
    the cell in the same interleaved rounds."""
    rows = []
    for problem, batch_size, num_simulations in itertools.product(problems, batch_sizes,
                                                                  simulations):
        runners = make_runners(problem, batch_size, num_simulations, seed)
        result = harness.interleaved_rounds(runners, rounds, [(a, b) for _, a, b in FACTORS])
        cell = dict(problem=problem, B=batch_size, simulations=num_simulations)
        work = batch_size * num_simulations
        for name, side in result["sides"].items():
            rows.append(dict(cell, side=name, **harness.throughput_fields(side, work),
                             rounds=rounds, stores=SIDES[name]))
            log(harness.markdown_table(COLUMNS, rows[-1:]).splitlines()[-1])
        for factor, a, b in FACTORS:
            ratio = result["ratios"].get(f"{a}/{b}")
            if ratio is not None:
                rows.append(dict(cell, factor=factor, **harness.ratio_fields(ratio),
                                 ratios=ratio["values"]))
                log(f"{problem} B={batch_size} S={num_simulations} {factor}: "
                    f"{harness.ratio_text(ratio)}")
    return rows
