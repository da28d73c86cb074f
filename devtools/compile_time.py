"""How long a plain search takes to compile: ours against mctx's, or against an earlier commit.

Users in notebooks pay the compilation on every new setting, so the plain
search should compile no slower than mctx's. Each measurement is a fresh
Python process (nothing cached: no persistent compilation cache, no earlier
trace) that builds the same search on the same synthetic problem (B rows, A
actions, a recurrent_fn of a few elementwise operations, so the search's
own program dominates) and times, for one call of the policy, the trace and
lowering (`jax.jit(...).lower`) and XLA's compilation (`.compile()`)
apart. The sides are measured interleaved, round by round, the order
alternating, and the report gives each side's median (range) and the median
(range) of the per-round ratio.

    python -m devtools.compile_time                         # this tree against mctx
    python -m devtools.compile_time --before 8acb5d8        # ... and an earlier commit
    python -m devtools.compile_time --rounds 7 --batch-size 64 --simulations 32

Results: devtools/results/compile_time-<device>.json (commit, command).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile

from benchmarks import harness

# One measurement, run by a fresh interpreter: prints {"lower_s", "compile_s"}.
CHILD = r"""
import json, os, sys, time
side, library, batch, actions, simulations = sys.argv[1:6]
batch, actions, simulations = int(batch), int(actions), int(simulations)
if library:
    sys.path.insert(0, library)
import jax, jax.numpy as jnp

def recurrent_outputs(embedding, action):
    code = embedding * 31 + action + 1
    logits = jnp.sin(code[:, None] * jnp.arange(1.0, actions + 1.0))
    return code, logits, jnp.cos(code.astype(jnp.float32))

embedding = jnp.arange(batch)
if side == "mctx":
    import mctx as lib
else:
    import mcts_jax as lib
    assert os.path.realpath(lib.__file__).startswith(os.path.realpath(library or os.getcwd()))

def recurrent_fn(params, rng_key, action, embedding):
    code, logits, value = recurrent_outputs(embedding, action)
    return lib.RecurrentFnOutput(reward=jnp.zeros(batch), discount=-jnp.ones(batch),
                                 prior_logits=logits, value=value), code

def search(rng_key, prior_logits, value, embedding):
    root = lib.RootFnOutput(prior_logits=prior_logits, value=value, embedding=embedding)
    policy = lib.muzero_policy if side == "mctx" else lib.alphazero_policy
    return policy(None, rng_key, root, recurrent_fn, simulations).action

args = (jax.random.key(0), jnp.zeros((batch, actions)), jnp.zeros(batch), embedding)
start = time.perf_counter()
lowered = jax.jit(search).lower(*args)
lowered_at = time.perf_counter()
lowered.compile()
done = time.perf_counter()
print(json.dumps(dict(lower_s=lowered_at - start, compile_s=done - lowered_at)))
"""


def measure(side: str, library: str, batch: int, actions: int, simulations: int) -> dict:
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    output = subprocess.run([sys.executable, "-c", CHILD, side, library, str(batch),
                             str(actions), str(simulations)],
                            check=True, capture_output=True, text=True, env=env,
                            cwd=library or os.getcwd())
    return json.loads(output.stdout.strip().splitlines()[-1])


def extract(revision: str, folder: str) -> str:
    """`mcts_jax/` of `revision` in `folder`; returns the folder."""
    archive = os.path.join(folder, "before.tar")
    subprocess.run(["git", "archive", "-o", archive, revision, "mcts_jax"], check=True,
                   cwd=harness.REPOSITORY)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=None, help="also an earlier commit's mcts_jax")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--actions", type=int, default=7)
    parser.add_argument("--simulations", type=int, default=32)
    parser.add_argument("--no-mctx", action="store_true")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--name", default="compile_time")
    args = parser.parse_args(argv)
    sides = {"ours": harness.REPOSITORY}
    with tempfile.TemporaryDirectory() as folder:
        if args.before:
            sides["before"] = extract(args.before, folder)
        if not args.no_mctx:
            sides["mctx"] = ""
        times = {side: [] for side in sides}
        for round_index in range(args.rounds):
            order = list(sides) if round_index % 2 == 0 else list(sides)[::-1]
            for side in order:
                kind = "mctx" if side == "mctx" else "ours"
                times[side].append(measure(kind, sides[side], args.batch_size, args.actions,
                                           args.simulations))
            print(f"round {round_index + 1}: " + ", ".join(
                f"{side} {times[side][-1]['lower_s']:.2f} + {times[side][-1]['compile_s']:.2f} s"
                for side in sides), flush=True)
    rows = []
    for side in sides:
        row = dict(side=side)
        for part in ("lower_s", "compile_s"):
            row[part] = harness.spread([t[part] for t in times[side]])
        row["total_s"] = harness.spread([t["lower_s"] + t["compile_s"] for t in times[side]])
        if side != "ours":
            ratios = [(a["lower_s"] + a["compile_s"]) / (b["lower_s"] + b["compile_s"])
                      for a, b in zip(times["ours"], times[side])]
            row["ours_over_this"] = harness.spread(ratios)
        rows.append(row)
    print(f"\nB = {args.batch_size}, A = {args.actions}, {args.simulations} simulations, "
          f"{args.rounds} rounds (fresh process each), median (range):")
    for row in rows:
        ratio = row.get("ours_over_this")
        print(f"  {row['side']:7s} trace+lower {row['lower_s']['median']:.2f} s, XLA compile "
              f"{row['compile_s']['median']:.2f} s, total {row['total_s']['median']:.2f} s "
              f"({row['total_s']['min']:.2f}-{row['total_s']['max']:.2f})"
              + (f"; ours / {row['side']} {ratio['median']:.3f} "
                 f"({ratio['min']:.3f}-{ratio['max']:.3f})" if ratio else ""))
    if not args.no_save:
        settings = dict(harness.provenance(), batch_size=args.batch_size, actions=args.actions,
                        simulations=args.simulations, rounds=args.rounds, before=args.before)
        path = harness.save(args.name, rows, settings)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
