"""Anytime search: a search for a time or a simulation budget, in chunks.

One compiled search of `chunk_simulations` runs again and again on the same
tree (`tree=`), and the best answer is there after every chunk::

    for progress in anytime.search_in_chunks(policy, params, key, root, recurrent_fn,
                                             chunk_simulations=64, max_simulations=4096):
        print(progress.simulations, progress.output.action)       # [B] best so far

    final = anytime.search_for(policy, params, key, root, recurrent_fn, seconds=5.0,
                               chunk_simulations=256, max_nodes=50_001,
                               on_chunk=lambda p: print(anytime.best_line(p.output.search_tree)[0]))

It compiles once: the first chunk continues an empty tree of the right
shapes (`empty_tree`), so every chunk is the same program (a search with
`tree=None` and one with a `Tree` are two programs). Between chunks the
host looks at the clock; the loop also ends when every row is decided
(`stop_when_decided`: the most visited root action cannot be overtaken in
the simulations that remain, or the estimate of them a deadline gives) or
when a chunk spent nothing (every row stopped: a proven root, a stop rule).

Continuing a search with `tree=` (any policy call; this module's loop is
one use), the rules:

- Same roots: row b of `tree` must have been searched from row b of
  `root` (the library checks shapes, capacity and layout, not positions).
  A row with no nodes (`num_nodes == 0`, e.g. `empty_tree`) starts afresh.
- The root's priors are this call's (`root.prior_logits`, with this call's
  root noise); visits, values, children and the solver's proofs are kept
  and added to.
- Capacity is the tree's (`max_nodes`): a continued search cannot grow it.
  Once a row is full its simulations still run: a descent that reaches an
  edge with no room re-evaluates its leaf (visits and values refine, no
  node is added). `Progress.full` says so.
- Stop rules (stopping.py) count this call's simulations; Gumbel's
  sequential halving runs anew over each call's budget, on the visits the
  call adds (`GumbelExtraData.root_visits_before`).
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, Iterator, NamedTuple, Optional

import chex
import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import base, stopping
from mcts_jax import tree as tree_lib


class Progress(NamedTuple):
    """Where an anytime search stands after a chunk.

    Attributes:
      output: the last chunk's `PolicyOutput` (action [B]: the best move so
        far; action_weights [B, A]; search_tree: the whole tree so far).
      simulations: simulations run per row so far (chunks x chunk size; a
        row a stop rule or proof stopped ran fewer).
      chunks: chunks run.
      seconds: wall time since the call began (the first chunk's
        compilation included).
      full: [B] bool, the row's tree has no free node left.
      decided: [B] bool, the most visited root action cannot change in the
        simulations that remain (False when the policy's move is not its
        most visited action).
    """

    output: base.PolicyOutput
    simulations: int
    chunks: int
    seconds: float
    full: np.ndarray
    decided: np.ndarray


def empty_tree(policy: Any, params: base.Params, root: base.RootFnOutput,
               recurrent_fn: base.RecurrentFn, num_simulations: int, *,
               invalid_actions: Optional[chex.Array] = None, **overrides) -> tree_lib.Tree:
    """A tree of the shapes a `policy` search of `root` would return, every
    row empty: pass it as `tree=` to the first search so that the first and
    every later call are one compiled program. `overrides` as in a policy
    call (e.g. `max_nodes=`). Traces the search once, compiles nothing."""
    def shapes():
        return policy(params, jax.random.key(0), root, recurrent_fn, num_simulations,
                      invalid_actions=invalid_actions, **overrides).search_tree

    return tree_lib.empty_like(jax.eval_shape(shapes))


def search_in_chunks(policy: Any, params: base.Params, rng_key: chex.PRNGKey,
                     root: base.RootFnOutput, recurrent_fn: base.RecurrentFn, *,
                     chunk_simulations: int, max_simulations: Optional[int] = None,
                     max_nodes: Optional[int] = None,
                     invalid_actions: Optional[chex.Array] = None,
                     tree: Optional[tree_lib.Tree] = None, temperature: Any = None,
                     stop_when_decided: bool = True,
                     remaining: Optional[Callable[[float], Optional[int]]] = None,
                     **overrides) -> Iterator[Progress]:
    """Searches `root` [B] in chunks of `chunk_simulations` on one tree,
    yielding a `Progress` after each chunk, until `max_simulations` are run
    (None: until the caller stops iterating), every row is decided
    (`stop_when_decided`, visit-count policies without the solver), or a
    chunk spent nothing.

    `policy`, `params`, `root`, `recurrent_fn`, `invalid_actions`,
    `temperature` and `overrides` are as in a policy call; chunk i's key is
    `fold_in(rng_key, i)`.

    Args:
      chunk_simulations: simulations per compiled call (the host sees the
        clock and the answer between calls).
      max_simulations: the budget per row, run in whole chunks (a last
        chunk of another size would compile anew, so the budget is rounded
        up to a multiple of `chunk_simulations`); None: unbounded (then
        give `max_nodes`).
      max_nodes: tree capacity (default: the continued tree's, else the
        rounded budget + 1).
      tree: a tree to continue (its capacity is kept); None: `empty_tree`.
      stop_when_decided: end once every row's most visited root action
        leads by more than the simulations that remain.
      remaining: for a deadline, `remaining(simulations_per_second)` -> an
        estimate of the simulations still to come (`search_for` gives it).
    """
    if not isinstance(chunk_simulations, int) or chunk_simulations < 1:
        raise ValueError(f"chunk_simulations must be an int >= 1, got {chunk_simulations!r}")
    if max_simulations is not None and (not isinstance(max_simulations, int)
                                        or max_simulations < 1):
        raise ValueError(f"max_simulations must be an int >= 1 or None, got "
                         f"{max_simulations!r}")
    if tree is None:
        if max_nodes is None and max_simulations is None:
            raise ValueError("max_nodes: give the tree's capacity (or max_simulations, "
                             "whose default capacity is max_simulations + 1) for an "
                             "unbounded anytime search")
        if max_nodes is None:  # room for every chunk's nodes
            max_nodes = -(-max_simulations // chunk_simulations) * chunk_simulations + 1
        tree = empty_tree(policy, params, root, recurrent_fn, chunk_simulations,
                          invalid_actions=invalid_actions, max_nodes=max_nodes, **overrides)
    elif max_nodes is not None and max_nodes != tree.max_nodes:
        raise ValueError(f"max_nodes={max_nodes} differs from the continued tree's capacity "
                         f"{tree.max_nodes}: a continued search keeps its tree's capacity")
    judges_gap = stop_when_decided and stopping.visit_gap_refusal(
        policy, getattr(policy, "options", None)) is None
    start, done, chunk, last_seconds = time.perf_counter(), 0, 0, 0.0
    root_visits = np.asarray(tree.node_visits[:, tree_lib.ROOT_INDEX])
    while max_simulations is None or done < max_simulations:
        output = policy(params, jax.random.fold_in(rng_key, chunk), root, recurrent_fn,
                        chunk_simulations, invalid_actions=invalid_actions, tree=tree,
                        temperature=temperature, **overrides)
        tree = output.search_tree
        done, chunk = done + chunk_simulations, chunk + 1
        seconds = time.perf_counter() - start
        visits = np.asarray(jax.device_get(tree.node_visits[:, tree_lib.ROOT_INDEX]))
        spent_nothing = bool(np.all(visits == root_visits))
        root_visits = visits
        left = None
        if max_simulations is not None:
            left = max(max_simulations - done, 0)
        if remaining is not None and chunk > 1:  # the first chunk's time is compilation
            estimate = remaining(chunk_simulations / max(seconds - last_seconds, 1e-9))
            left = estimate if left is None else min(left, estimate)
        decided = np.zeros(visits.shape, bool)
        if judges_gap and left is not None:
            decided = np.asarray(_decided(tree, jnp.full(visits.shape, left, jnp.int32)))
        full = np.asarray(tree.num_nodes) >= tree.max_nodes
        last_seconds = seconds
        yield Progress(output=output, simulations=done, chunks=chunk, seconds=seconds,
                       full=full, decided=decided)
        if spent_nothing or bool(np.all(decided)):
            return


_decided = jax.jit(stopping.most_visited_cannot_change)


def search_for(policy: Any, params: base.Params, rng_key: chex.PRNGKey,
               root: base.RootFnOutput, recurrent_fn: base.RecurrentFn, *,
               seconds: float, chunk_simulations: int,
               max_simulations: Optional[int] = None, max_nodes: Optional[int] = None,
               on_chunk: Optional[Callable[[Progress], Any]] = None,
               **kwargs) -> Progress:
    """Searches `root` until `seconds` of wall time have passed (checked
    between chunks, so it may overrun by one chunk), `max_simulations` are
    run, or every row is decided; returns the last `Progress`. `on_chunk`
    sees every Progress (print the best line as it improves). Other
    arguments as `search_in_chunks`; the first chunk's compilation counts
    towards `seconds` (run a short search first to compile outside it)."""
    if not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"seconds must be a number > 0, got {seconds!r}")
    start = time.perf_counter()

    def remaining(rate: float) -> int:
        return int(rate * max(seconds - (time.perf_counter() - start), 0.0)) + 1

    last = None
    for last in search_in_chunks(policy, params, rng_key, root, recurrent_fn,
                                 chunk_simulations=chunk_simulations,
                                 max_simulations=max_simulations, max_nodes=max_nodes,
                                 remaining=remaining, **kwargs):
        if on_chunk is not None:
            on_chunk(last)
        if time.perf_counter() - start >= seconds:
            break
    return last


def best_line(tree: tree_lib.Tree, length: int = 12,
              first_actions: Optional[Any] = None) -> np.ndarray:
    """Each row's principal variation: from the root down, the child that is
    a proven win for the player to move there (solver), else the most
    visited one (ties: the lower slot); -1 past the line's end (a node with
    no visited child).

    Returns [B, length] int32; with `first_actions` [B, M] int (root actions,
    e.g. an engine's MultiPV moves) [B, M, length]: line m of row b begins
    with `first_actions[b, m]` and goes on below that move (all -1 where the
    root has no visited child for it)."""
    if first_actions is None:
        return np.asarray(_best_line(tree, length)).astype(np.int32)
    first = np.asarray(first_actions)
    if first.ndim != 2 or first.shape[0] != tree.batch_size or first.dtype.kind not in "iu":
        raise ValueError(f"first_actions must be [B, M] = [{tree.batch_size}, M] int root "
                         f"actions, got {first.dtype} {first.shape}")
    return np.asarray(_lines_below(tree, jnp.asarray(first, jnp.int32), length)).astype(np.int32)


def _best_child(stats: tree_lib.ChildrenStats, rows: chex.Array):
    """([B] slot, [B] visited): the proven win, else the most visited child."""
    visits = jnp.where(stats.legal & (stats.index >= 0), stats.visits, 0)
    won = stats.solved & (stats.solved_qvalues > 0)
    slot = jnp.argmax(jnp.where(won, jnp.iinfo(jnp.int32).max, visits), axis=-1)
    return slot, visits[rows, slot] > 0


def _line_from(tree: tree_lib.Tree, node: chex.Array, alive: chex.Array,
               length: int) -> chex.Array:
    """[B, length]: the principal variation from `node` [B] where `alive`."""
    rows = tree_lib.batch_rows(tree.batch_size)
    line = [jnp.zeros((tree.batch_size, 0), jnp.int32)]
    for _ in range(length):
        stats = tree_lib.children_stats(tree, node)
        slot, visited = _best_child(stats, rows)
        alive = alive & visited
        line.append(jnp.where(alive, stats.actions[rows, slot], -1).astype(jnp.int32)[:, None])
        node = jnp.where(alive, stats.index[rows, slot].astype(jnp.int32), 0)
    return jnp.concatenate(line, axis=1)


@functools.partial(jax.jit, static_argnums=1)
def _best_line(tree: tree_lib.Tree, length: int) -> chex.Array:
    root = tree_lib.root_nodes(tree.batch_size)
    return _line_from(tree, root, jnp.ones((tree.batch_size,), jnp.bool_), length)


@functools.partial(jax.jit, static_argnums=2)
def _lines_below(tree: tree_lib.Tree, first_actions: chex.Array, length: int) -> chex.Array:
    rows = tree_lib.batch_rows(tree.batch_size)
    root = tree_lib.children_stats(tree, tree_lib.root_nodes(tree.batch_size))

    def line_of(action):  # [B] -> [B, length]
        match = (root.actions == action[:, None]) & root.legal & (root.index >= 0)
        slot = jnp.argmax(match, axis=-1)
        alive = match[rows, slot] & (root.visits[rows, slot] > 0)
        child = jnp.where(alive, root.index[rows, slot].astype(jnp.int32), 0)
        below = _line_from(tree, child, alive, length - 1)
        return jnp.concatenate([jnp.where(alive, action, -1)[:, None], below], axis=1)

    return jax.vmap(line_of, in_axes=1, out_axes=1)(first_actions)
