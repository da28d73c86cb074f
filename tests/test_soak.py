"""Steady state: 1000 consecutive searches with subtree reuse and auto-reset
neither recompile after warm-up nor grow resident memory.

Each step: a PUCT search continuing the kept tree (`tree=`), `get_subtree`
on the chosen moves, `reset_tree` on rows whose "game" ended (every 7 + b
moves for row b, or a terminal/unexpanded child), and the next roots. The
compilation count comes from JAX's own compile events
(`jax.monitoring`, '/jax/compilation_cache/...' and backend compiles), the
resident memory from /proc/self/status (VmRSS).

Margin: after warm-up (the first WARMUP steps) the number of compilations
must not change at all, and VmRSS may rise by at most RSS_MARGIN_MB (room for
allocator noise and Python's caches; a leak of one tree per step would be
~100 KB x 1000 = 100 MB).
"""

import gc
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mcts_jax
from mcts_jax import reuse, tree_search
from problems.synthetic import HashedProblem, random_root_codes

SEARCHES = int(os.environ.get("MCTS_JAX_SOAK_SEARCHES", 1000))
WARMUP = 20
RSS_MARGIN_MB = 50
B, A, SIMS, MAX_NODES = 4, 6, 8, 64
PROBLEM = HashedProblem(num_actions=A, illegal_eighths=1, terminal_sixteenths=1)

COMPILES = []


def _on_compile(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES.append(event)


def _on_cache_hit(event, **kwargs):  # a program read from the persistent compilation cache
    if event == "/jax/compilation_cache/cache_hits":
        COMPILES.append(event)


jax.monitoring.register_event_duration_secs_listener(_on_compile)
jax.monitoring.register_event_listener(_on_cache_hit)


def resident_mb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@pytest.mark.soak
def test_repeated_searches_with_reuse_are_steady():
    fresh = jnp.asarray(random_root_codes(1, B), jnp.uint32)
    codes = fresh
    tree = None
    period = jnp.arange(B) + 7
    reuse_counts = []
    start = time.perf_counter()
    for step in range(SEARCHES):
        root, illegal = PROBLEM.root(codes)
        out = mcts_jax.alphazero_policy(None, jax.random.key(step), root, PROBLEM.recurrent_fn,
                                        SIMS, invalid_actions=illegal, max_nodes=MAX_NODES,
                                        tree=tree)
        tree = mcts_jax.get_subtree(out.search_tree, out.action)
        next_codes = PROBLEM.jax_step_code(codes, out.action)
        game_over = ((step + 1) % period == 0) | (tree.num_nodes == 0)
        tree = mcts_jax.reset_tree(tree, game_over)
        codes = jnp.where(game_over, jax.random.bits(jax.random.key(10**6 + step), (B,),
                                                     jnp.uint32), next_codes)
        reuse_counts.append(int(tree.num_nodes.sum()))
        if step == WARMUP - 1:
            gc.collect()
            compiles_after_warmup = len(COMPILES)
            cache_sizes = (tree_search._compiled._cache_size(),
                           reuse._get_subtree._cache_size())
            rss_after_warmup = resident_mb()
    jax.block_until_ready(tree)
    gc.collect()
    elapsed = time.perf_counter() - start
    rss_end = resident_mb()
    print(f"\n{SEARCHES} searches in {elapsed:.1f} s; compilations: {compiles_after_warmup} "
          f"during warm-up, {len(COMPILES) - compiles_after_warmup} after; VmRSS "
          f"{rss_after_warmup:.1f} MB after warm-up, {rss_end:.1f} MB at the end")
    assert len(COMPILES) == compiles_after_warmup, "recompiled after warm-up"
    assert (tree_search._compiled._cache_size(), reuse._get_subtree._cache_size()) == cache_sizes
    assert rss_end - rss_after_warmup < RSS_MARGIN_MB
    # The kept trees were really reused (not reset every step).
    assert np.mean(reuse_counts) > B
