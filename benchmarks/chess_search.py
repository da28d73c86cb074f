"""Search throughput on chess-sized problems, ours (compact and dense) against mctx.

Two recurrent functions, both with A = 4672 action ids:
- "synthetic": a hashed game tree costing almost nothing, with about 36 legal
  moves per position (1/128 of the ids), so the figures measure the tree;
- "pgx_chess": the real pgx chess simulator with uniform priors and value 0
  (our lean states; mctx stores the full pgx state, as its users do).

Both libraries get identical roots and keys and run in this process one after
the other; ratios are quoted within one run.

    python -m benchmarks.chess_search                   # B=64, 128 simulations
    python -m benchmarks.chess_search --batch-sizes 16 64 --simulations 32 128
"""

from __future__ import annotations

import argparse
import functools

import jax
import jax.numpy as jnp

import envs
import mcts_jax
from benchmarks import harness
from mcts_jax import evaluators

NUM_ACTIONS = 4672
MAX_CHILDREN = 218
COLUMNS = ["problem", "B", "simulations", "ours_compact", "ours_dense", "mctx_muzero",
           "compact/mctx", "compact/dense", "ours_compact_compile_s", "mctx_muzero_compile_s"]


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


def mctx_chess_recurrent_fn(mctx, game):
    """pgx chess for mctx: full pgx states as embeddings, illegal moves masked
    in the logits (mctx has no invalid_actions below the root)."""
    def recurrent_fn(params, rng_key, action, states):
        del params, rng_key
        mover = states.current_player
        states = game.step(states, action)
        terminal = game.is_terminal(states)
        logits = jnp.where(states.legal_action_mask, 0.0, jnp.finfo(jnp.float32).min)
        return mctx.RecurrentFnOutput(
            reward=game.reward_for(states, mover),
            discount=jnp.where(terminal, 0.0, -1.0),
            prior_logits=logits, value=jnp.zeros_like(mover, jnp.float32)), states
    return recurrent_fn


def make_runners(problem, batch_size, num_simulations):
    key = jax.random.key(0)
    if problem == "synthetic":
        code = jnp.arange(batch_size, dtype=jnp.uint32) * jnp.uint32(2654435761)
        logits, illegal, value = synthetic_outputs(code)
        root = mcts_jax.RootFnOutput(prior_logits=logits, value=value, embedding=code)
        recurrent_fn, full_embedding = synthetic_recurrent_fn, code
    else:
        game = envs.make("chess")
        evaluator = evaluators.Uniform()
        states = game.init(jax.random.key(1), batch_size)
        root, illegal = game.root(None, key, states, evaluator)
        recurrent_fn, full_embedding = game.recurrent_fn(evaluator), states

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
    their_fn = (harness.mctx_recurrent_fn(synthetic_recurrent_fn, mctx) if problem == "synthetic"
                else mctx_chess_recurrent_fn(mctx, envs.make("chess")))
    their_root = mctx.RootFnOutput(
        prior_logits=jnp.where(illegal, jnp.finfo(jnp.float32).min, root.prior_logits),
        value=root.value, embedding=full_embedding)

    @jax.jit
    def mctx_muzero(key, root, illegal):
        return mctx.muzero_policy(None, key, root, their_fn, num_simulations,
                                  invalid_actions=illegal,
                                  dirichlet_fraction=0.0).action_weights

    runners["mctx_muzero"] = functools.partial(mctx_muzero, key, their_root, illegal)
    return runners


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=["synthetic", "pgx_chess"],
                        choices=["synthetic", "pgx_chess"])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64])
    parser.add_argument("--simulations", type=int, nargs="+", default=[128])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-dense", action="store_true", help="skip our dense layout")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)

    rows = []
    for problem in args.problems:
        for batch_size in args.batch_sizes:
            for num_simulations in args.simulations:
                row = dict(problem=problem, B=batch_size, simulations=num_simulations)
                for name, fn in make_runners(problem, batch_size, num_simulations).items():
                    if name == "ours_dense" and args.no_dense:
                        continue
                    timing = harness.time_call(fn, args.repeats)
                    row[name] = batch_size * num_simulations / timing["median_s"]
                    row[f"{name}_compile_s"] = timing["compile_s"]
                for name, (a, b) in {"compact/mctx": ("ours_compact", "mctx_muzero"),
                                     "compact/dense": ("ours_compact", "ours_dense")}.items():
                    if a in row and b in row:
                        row[name] = row[a] / row[b]
                rows.append(row)
                print(harness.markdown_table(COLUMNS, [row]).splitlines()[-1], flush=True)
    harness.report("chess_search", "Chess-sized search (A=4672): simulations per second "
                   "(B x simulations / median wall time of one search call)", COLUMNS, rows,
                   vars(args), not args.no_save)
    return rows


if __name__ == "__main__":
    main()
