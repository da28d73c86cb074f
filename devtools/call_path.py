"""How many library frames lie between a public policy call and the user's recurrent_fn.

Inside the user's `recurrent_fn` (while the search is traced), the Python
stack holds every function between the public call and the user's code. This
counts the frames whose file is in the library's `mcts_jax/` folder and
prints them, per public policy (and mctx's `muzero_policy` when mctx is
installed, for comparison). Any checkout can be measured:

    python -m devtools.call_path                       # this tree's library
    python -m devtools.call_path --library /tmp/old    # a checkout of another commit

It prints; it writes no results file (the count is a property of the code,
reproduced by running the command at that code; tests/test_policy_hooks.py
holds the library to at most 7).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys


def frames_to_recurrent_fn(package_dir: str, call_policy) -> list:
    """The `package_dir` frames on the stack when recurrent_fn first runs,
    outermost first, as "file.py:function"."""
    seen = []

    def wrap(recurrent_fn):
        def user_recurrent_fn(params, rng_key, action, embedding):
            if not seen:
                seen.append([f"{os.path.relpath(frame.filename, package_dir)}:{frame.function}"
                             for frame in inspect.stack()[1:]
                             if os.path.abspath(frame.filename).startswith(package_dir)][::-1])
            return recurrent_fn(params, rng_key, action, embedding)
        return user_recurrent_fn

    call_policy(wrap)
    return seen[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--library", default=None,
                        help="a checkout whose mcts_jax to measure (default: this tree's)")
    args = parser.parse_args(argv)
    if args.library:
        sys.path.insert(0, os.path.realpath(args.library))
    mcts_jax = importlib.import_module("mcts_jax")
    import jax
    from mcts_jax.synthetic import HashedProblem, random_root_codes

    package = os.path.dirname(os.path.abspath(mcts_jax.__file__)) + os.sep
    problem = HashedProblem(num_actions=9)
    root, _ = problem.root(random_root_codes(0, 4))
    rows = []
    for name in ("uct_policy", "alphazero_policy", "gumbel_policy", "muzero_policy",
                 "gumbel_muzero_policy"):
        policy = getattr(mcts_jax, name)
        frames = frames_to_recurrent_fn(package, lambda wrap, policy=policy: policy(
            None, jax.random.key(0), root, wrap(problem.recurrent_fn), 4))
        rows.append((f"mcts_jax.{name}", frames))
    try:
        import mctx
    except ImportError:
        mctx = None
    if mctx is not None:
        mctx_package = os.path.dirname(os.path.abspath(mctx.__file__)) + os.sep
        their_root = mctx.RootFnOutput(prior_logits=root.prior_logits, value=root.value,
                                       embedding=root.embedding)

        def their_call(wrap):
            def recurrent_fn(params, rng_key, action, embedding):
                out, embedding = problem.recurrent_fn(params, rng_key, action, embedding)
                return mctx.RecurrentFnOutput(reward=out.reward, discount=out.discount,
                                              prior_logits=out.prior_logits,
                                              value=out.value), embedding
            mctx.muzero_policy(None, jax.random.key(0), their_root, wrap(recurrent_fn), 4)

        rows.append(("mctx.muzero_policy", frames_to_recurrent_fn(mctx_package, their_call)))
    print(f"library: {package}")
    print("| call | library frames | path |")
    print("|---|---|---|")
    for name, frames in rows:
        print(f"| {name} | {len(frames)} | {' > '.join(frames)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
