"""The options every search shares, in one small static record.

`SearchOptions` holds what shapes the tree and the loop (capacity, depth,
layout, solver, value scale, terminal semantics); it is hashable, so it is
part of the compilation key of a jitted search. Selection rules and Q
transforms are not options: they are functions, passed to `search` (their
constants bound with `functools.partial`). `make_options` validates the
keyword arguments of `search` and the policies and fills the defaults that
depend on the root and on a continued tree.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional, Tuple

import jax

from mcts_jax import tree as tree_lib
from mcts_jax import validation


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """Static options of one search (hashable; part of the compilation key).

    Attributes:
      num_simulations: simulations per search (>= 1).
      max_nodes: N, node capacity of each tree.
      max_depth: deepest node depth that can be created (root = 0); None:
        unlimited.
      solver: MCTS-solver (proven values propagate; needs `stop_at_terminal`).
      expand_all: a leaf's first expansion creates every legal child.
      max_children: K for the compact layout, None for the dense one.
      replay_embeddings: store the root's embedding only; replay paths.
      value_range: the user's reward and value scale, (-1, 1) or (0, 1); None:
        unbounded (scores, used as they are; see `tree.to_internal_scale`).
      stop_at_terminal: a transition with discount 0 ends the game: the node
        is terminal, never expanded, its value 0 (True, ours). False is
        mctx's semantics: discount 0 is only a factor and the node is
        searched below like any other.
      node_per_simulation: simulation i writes node i + 1 (of a fresh tree),
        as mctx numbers its nodes; a simulation that creates nothing leaves
        its slot unused. False: nodes fill the free slots in order.
      loop_fn: the simulation loop, `loop_fn(lower, upper, body, init)`
        (mctx's argument; `jax.lax.fori_loop` by default; with P > 1 it
        runs the steps).
      simulations_per_step: P, paths descended in every tree per step and
        evaluated in one recurrent_fn call of batch B * P (parallel.py);
        1: one simulation per step, today's search bit for bit.
      steering: how a step's in-flight paths steer the later ones (P > 1):
        "unobserved" (WU-UCT) or "virtual_loss" (see parallel.py).
      num_chance_outcomes: C of a stochastic tree (stochastic.py), whose edge
        ids are the A decisions then the C outcomes; 0: no chance nodes.
    """

    num_simulations: int
    max_nodes: int
    max_depth: Optional[int] = None
    solver: bool = False
    expand_all: bool = False
    max_children: Optional[int] = None
    replay_embeddings: bool = False
    value_range: Tuple[float, float] = (-1.0, 1.0)
    stop_at_terminal: bool = True
    node_per_simulation: bool = False
    loop_fn: Callable = jax.lax.fori_loop
    simulations_per_step: int = 1
    steering: str = "unobserved"
    num_chance_outcomes: int = 0

    @property
    def depth_limit(self) -> int:
        """max_depth, or N when unlimited (no path is longer)."""
        return self.max_nodes if self.max_depth is None else self.max_depth

    @property
    def max_path_length(self) -> int:
        """The longest root-to-leaf path a replay may walk."""
        return min(self.depth_limit, self.max_nodes)


def make_options(root, invalid_actions, num_simulations, *, tree=None, max_depth=None,
                 max_nodes=None, solver=False, expand_all=False, max_children=None,
                 replay_embeddings=False, value_range=(-1.0, 1.0), stop_at_terminal=True,
                 node_per_simulation=False, loop_fn=jax.lax.fori_loop,
                 simulations_per_step=1, steering="unobserved", num_chance_outcomes=0,
                 checks="host") -> SearchOptions:
    """Validates the tree options of a search (clear errors naming each
    argument) and returns the record. A continued `tree` supplies the
    capacity and layout that are not given."""
    checks = validation.check_mode(checks)
    batch_size, num_actions = validation.check_root(root, invalid_actions,
                                                    values=checks == "host")
    if tree is not None and not isinstance(tree, tree_lib.Tree):
        raise TypeError(f"tree must be a mcts_jax.Tree or None, got {type(tree).__name__}")
    solver = validation.check_flag("solver", solver)
    expand_all = validation.check_flag("expand_all", expand_all)
    stop_at_terminal = validation.check_flag("stop_at_terminal", stop_at_terminal)
    node_per_simulation = validation.check_flag("node_per_simulation", node_per_simulation)
    if solver and not stop_at_terminal:
        raise ValueError("solver=True needs stop_at_terminal=True: proofs start at terminal "
                         "nodes")
    if node_per_simulation and expand_all:
        raise ValueError("node_per_simulation=True cannot be combined with expand_all=True "
                         "(one simulation creates many nodes)")
    simulations_per_step = validation.check_count("simulations_per_step",
                                                  simulations_per_step, low=1)
    if steering not in ("unobserved", "virtual_loss"):
        raise ValueError(f"steering must be 'unobserved' or 'virtual_loss', got {steering!r}")
    if simulations_per_step > 1 and node_per_simulation:
        raise ValueError("simulations_per_step > 1 cannot be combined with "
                         "node_per_simulation=True (mctx's numbering writes one node per "
                         "simulation; pass node_per_simulation=False)")
    if simulations_per_step > 1 and expand_all:
        raise ValueError("simulations_per_step > 1 cannot be combined with expand_all=True "
                         "(each path of a step expands one edge)")
    if not callable(loop_fn):
        raise TypeError(f"loop_fn must be callable like jax.lax.fori_loop, got "
                        f"{type(loop_fn).__name__}")
    if tree is not None and max_nodes is None:
        max_nodes = tree.max_nodes
    if tree is not None and max_children is None:
        max_children = tree.max_children
    if tree is not None and not replay_embeddings:
        replay_embeddings = tree.replay_embeddings
    max_children = validation.check_layout(max_children, replay_embeddings, num_actions)
    if max_nodes is None and expand_all:
        max_nodes = num_simulations * (max_children or num_actions) + 1
    max_nodes = validation.check_search_args(num_simulations, max_nodes, max_depth,
                                             value_range, continuing=tree is not None)
    value_range = None if value_range is None else tuple(float(v) for v in value_range)
    if tree is not None:
        validation.check_tree(tree, root, batch_size, num_actions, max_nodes, value_range,
                              max_children, bool(replay_embeddings))
        if tree.num_chance_outcomes != num_chance_outcomes:
            raise ValueError(f"tree has {tree.num_chance_outcomes} chance outcomes but the "
                             f"search has {num_chance_outcomes}; continue a stochastic tree "
                             f"with the stochastic policy that built it")
    return SearchOptions(num_simulations=int(num_simulations), max_nodes=max_nodes,
                         max_depth=None if max_depth is None else int(max_depth),
                         solver=bool(solver), expand_all=bool(expand_all),
                         max_children=max_children, replay_embeddings=bool(replay_embeddings),
                         value_range=value_range, stop_at_terminal=bool(stop_at_terminal),
                         node_per_simulation=bool(node_per_simulation), loop_fn=loop_fn,
                         simulations_per_step=min(simulations_per_step, int(num_simulations)),
                         steering=steering, num_chance_outcomes=int(num_chance_outcomes))


# ---- functions as static arguments --------------------------------------------------------

class _Unhashable(Exception):
    """A bound argument that cannot be compared by value."""


def _value_key(value: Any) -> Any:
    """A hashable key equal for equal partials of one function with hashable
    bound arguments; raises `_Unhashable` otherwise."""
    if isinstance(value, functools.partial):
        return ("partial", _value_key(value.func),
                tuple(_value_key(arg) for arg in value.args),
                tuple(sorted((name, _value_key(arg)) for name, arg in value.keywords.items())))
    try:
        hash(value)
    except TypeError:
        raise _Unhashable from None
    return value


def _static_key(fn: Any) -> Any:
    """`_value_key(fn)`, or, when something bound is unhashable (an array, a
    list), the identity of `fn` itself: the `Static` holding it keeps it alive,
    so that identity is never reused while a compiled function is cached
    under it. (A bound value mutated in place afterwards is not seen: bind
    values, not containers you change.)"""
    try:
        return _value_key(fn)
    except _Unhashable:
        return ("object", id(fn))


def holds_tracer(value: Any) -> bool:
    """True when `value` binds a JAX tracer of the caller's trace: a tracer
    itself, or one bound in a `Static`, a `functools.partial`, a tuple or list
    (e.g. `Rules`) or a dataclass's fields (a policy's settings), e.g. a rule
    partial built inside the caller's jit with traced constants."""
    if isinstance(value, jax.core.Tracer):
        return True
    if isinstance(value, Static):
        return holds_tracer(value.fn)
    if isinstance(value, functools.partial):
        return (holds_tracer(value.func) or any(holds_tracer(arg) for arg in value.args)
                or any(holds_tracer(arg) for arg in value.keywords.values()))
    if isinstance(value, (list, tuple)):
        return any(holds_tracer(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(holds_tracer(getattr(value, field.name))
                   for field in dataclasses.fields(value))
    return False


class Static:
    """Wraps a function (a rule, a Q transform) for use as a static argument of
    `jax.jit`: two wrappers are equal when their functions are equal partials
    of the same function with equal hashable bound arguments (Python numbers,
    strings, functions), otherwise when they wrap the very same object."""

    __slots__ = ("fn", "_key")

    def __init__(self, fn: Callable):
        self.fn = fn
        self._key = _static_key(fn)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __eq__(self, other) -> bool:
        return isinstance(other, Static) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Static({self.fn!r})"
