"""The options every search shares: one frozen, hashable record.

`SearchOptions` holds every option of a search once: its name, its default,
its meaning (`SearchOptions.describe()` prints the table) and its check,
run when the record is built, with an error that names the field. `search`,
every policy value, `sharding`, the arena, self-play and training take the
record (or its fields as keyword arguments, turned into the record in one
place: `SearchOptions.from_keywords`). The record is hashable, so it is
part of the compilation key of a jitted search.

A search call completes its policy's record (`tree_search.resolve_options`):
the simulations, the capacity and layout that depend on the root and on a
continued tree, and the depth limit. The phases read that resolved record.
Selection rules and Q transforms are not options: they belong to a policy
(`policies.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Tuple

import jax
import numpy as np

from mcts_jax.plugin import check_plugins
from mcts_jax import tree as tree_lib
from mcts_jax import validation

STEERINGS = ("unobserved", "virtual_loss")


def option(default: Any, meaning: str, check: Optional[Callable] = None) -> Any:
    """A field of `SearchOptions`: its default, what it means, and its check
    `check(name, value) -> value` (the value as the record keeps it, or a
    clear error naming the field). The default is valid by construction, so
    a field left at its default is not checked."""
    return dataclasses.field(default=default, metadata={"meaning": meaning, "check": check})


def _optional_count(low: int) -> Callable:
    def check(name: str, value: Any) -> Optional[int]:
        if value is None:
            return None
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be None or a Python int, got {value!r}")
        if value < low:
            raise ValueError(f"{name} must be None or an int >= {low}, got {value!r}")
        return int(value)
    return check


def _count(low: int) -> Callable:
    return lambda name, value: validation.check_count(name, value, low=low)


def _steering(name: str, value: Any) -> str:
    if value not in STEERINGS:
        raise ValueError(f"{name} must be 'unobserved' or 'virtual_loss', got {value!r}")
    return value


def _depth(name: str, value: Any) -> Optional[int]:
    if value is not None and (isinstance(value, (bool, np.bool_))
                              or not isinstance(value, (int, np.integer)) or value < 1):
        raise ValueError(f"{name} must be None or an int >= 1, got {value!r}")
    return None if value is None else int(value)


def _loop(name: str, value: Any) -> Callable:
    if not callable(value):
        raise TypeError(f"{name} must be callable like jax.lax.fori_loop, got "
                        f"{type(value).__name__}")
    return value


def _position_key(name: str, value: Any) -> Optional[Callable]:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be None or callable like mcts_jax.hash_embedding, got "
                        f"{type(value).__name__}")
    return value


def _optional_number(name: str, value: Any) -> Optional[float]:
    return None if value is None else validation.check_number(name, value)


_flag = validation.check_flag


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """Every option of a search, each checked when the record is built.

    Build it with keywords (`SearchOptions(max_children=32, solver=True)`),
    change it with `replace`; `describe()` lists the fields with their
    defaults and meanings. `num_simulations` and `num_chance_outcomes` are
    filled in for one search by `tree_search.resolve_options` (a policy
    call gives the first, the stochastic policy the second).
    """

    max_nodes: Optional[int] = option(
        None, "tree capacity N per search; None: num_simulations + 1 (x K with expand_all); "
              "a full tree re-evaluates leaves, nothing is written past it", _optional_count(1))
    max_depth: Optional[int] = option(
        None, "deepest node depth that can be created (root = 0); None: unlimited (a "
              "resolved record holds N then: no path is longer)", _depth)
    max_children: Optional[int] = option(
        None, "K child slots per node (compact layout: the K highest-prior legal actions); "
              "None: dense, one slot per action", _optional_count(1))
    plugins: Tuple[Any, ...] = option(
        (), "your own search plug-ins (mcts_jax.SearchPlugin values, frozen dataclasses): "
            "hooks the phases call, run after the built-in ones (docs/plugins.md)",
        check_plugins)
    solver: bool = option(
        False, "MCTS-solver: proven wins, losses and draws propagate; proven subtrees are "
               "never searched again", _flag)
    expand_all: bool = option(
        False, "a leaf's first expansion creates and evaluates every legal child "
               "(Tiny-MCTS style)", _flag)
    replay_embeddings: bool = option(
        False, "store only the root's embedding; a leaf's state is recomputed by replaying "
               "its path (deterministic transitions only)", _flag)
    value_range: Optional[Tuple[float, float]] = option(
        (-1.0, 1.0), "scale of rewards and values: (-1, 1); (0, 1), each reward and value "
                     "mapped by itself, x -> 2x - 1 (a [-1, 1] game rescaled result by result: "
                     "no reward is 0.5); or None for unbounded returns and rewards that add up "
                     "to a score (Q min-max normalised for selection)",
        lambda name, value: validation.check_value_range(value))
    stop_at_terminal: bool = option(
        True, "an edge whose recurrent_fn discount is 0 ends the game: its node is terminal "
              "(value 0, never expanded nor evaluated below; a simulation that reaches it "
              "again backs up its reward and creates no node). False: mctx's semantics, "
              "discount 0 is only a factor and the node is searched below like any other",
        _flag)
    node_per_simulation: bool = option(
        False, "mctx's node numbering: simulation i writes node slot i + 1 (left empty "
               "when the simulation creates no node, so num_nodes is num_simulations + 1). "
               "False: nodes are numbered in the order they are created, with no gaps",
        _flag)
    keep_prior_logits: bool = option(
        False, "also store each node's prior logits as given (Tree.prior_logits [B, N, K], "
               "4 bytes per child slot); Tree.priors always holds the probabilities. "
               "mctx's view of a tree reads them as children_prior_logits", _flag)
    loop_fn: Callable = option(
        jax.lax.fori_loop, "the simulation loop, loop_fn(lower, upper, body, init): "
                           "jax.lax.fori_loop, or e.g. a Python loop to debug a search",
        _loop)
    simulations_per_step: int = option(
        1, "P paths per tree per step, their B x P leaves evaluated in one recurrent_fn "
           "call; num_simulations stays the total", _count(1))
    steering: str = option(
        "unobserved", "with simulations_per_step P > 1, how the paths of one step that are "
                      "still in flight steer the later ones away: 'unobserved' (WU-UCT: the "
                      "visit counts a rule reads include them, Q-values do not change) or "
                      "'virtual_loss' (each in-flight visit also counts as a loss for the "
                      "player choosing the edge); the tree's statistics never keep them",
        _steering)
    transpositions: bool = option(
        False, "graph search: one node per position (found by position_key), edge visits "
               "apart from node visits, values recomputed from children (graph.py)", _flag)
    position_key: Optional[Callable] = option(
        None, "with transpositions, embedding [M, ...] -> [M, 2] uint32 keys of the "
              "positions; None: mcts_jax.hash_embedding (every leaf of the embedding)",
        _position_key)
    repetition_value: Optional[float] = option(
        None, "with transpositions, the value of a position that repeats one already on "
              "its own path (a cycle: chess, Go): that edge gets a terminal node worth this "
              "value, for the player to move there, on the value_range scale, never proven; "
              "None: a draw (the middle of value_range)", _optional_number)
    checks: str = option(
        "host", "value checks (non-finite logits or values, an all-illegal root row, ...): "
                "'host' (the root arrays are copied to the host and checked when they are "
                "concrete, i.e. outside the caller's jit; skipped inside it), 'off' (shape "
                "checks only), or 'checkify' (compiled into the search with "
                "jax.experimental.checkify, recurrent_fn's outputs too)",
        lambda name, value: validation.check_mode(value))
    num_simulations: Optional[int] = option(
        None, "simulations of one search (set from the call, tree_search.resolve_options)",
        _optional_count(1))
    num_chance_outcomes: int = option(
        0, "C of a stochastic tree, whose edge ids are A decisions then C outcomes (set by "
           "the stochastic policy)", _count(0))

    def __post_init__(self):
        for field in dataclasses.fields(self):  # each field by its own check
            value = getattr(self, field.name)
            if value is not field.default:
                object.__setattr__(self, field.name, field.metadata["check"](field.name, value))
        # The combinations no single field's check sees.
        if not self.transpositions:
            for name in ("position_key", "repetition_value"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name} is read only by a graph search: pass "
                                     f"transpositions=True with it, or leave it None")
        else:
            if self.num_chance_outcomes:
                raise ValueError("transpositions=True does not support chance nodes "
                                 "(stochastic policies): an afterstate's outcomes would need "
                                 "keys of their own")
            if self.node_per_simulation:
                raise ValueError("transpositions=True cannot be combined with "
                                 "node_per_simulation=True (a simulation that reaches a known "
                                 "position creates no node)")
            if self.repetition_value is not None and self.value_range is not None:
                low, high = self.value_range
                if not low <= self.repetition_value <= high:
                    raise ValueError(f"repetition_value={self.repetition_value} is outside "
                                     f"value_range={self.value_range}")
        if self.solver and not self.stop_at_terminal:
            raise ValueError("solver=True needs stop_at_terminal=True: proofs start at "
                             "terminal nodes")
        if self.node_per_simulation and self.expand_all:
            raise ValueError("node_per_simulation=True cannot be combined with expand_all=True "
                             "(one simulation creates many nodes)")
        if self.simulations_per_step > 1 and self.node_per_simulation:
            raise ValueError("simulations_per_step > 1 cannot be combined with "
                             "node_per_simulation=True (mctx's numbering writes one node per "
                             "simulation; pass node_per_simulation=False)")
        if self.simulations_per_step > 1 and self.expand_all:
            raise ValueError("simulations_per_step > 1 cannot be combined with expand_all=True "
                             "(each path of a step expands one edge)")

    # ---- building and reading the record ---------------------------------------------------

    @classmethod
    def names(cls) -> Tuple[str, ...]:
        """The fields a user sets (the two a search call fills excluded)."""
        return tuple(field.name for field in dataclasses.fields(cls)
                     if field.name not in ("num_simulations", "num_chance_outcomes"))

    @classmethod
    def describe(cls) -> str:
        """A markdown table of the options: name, default, meaning."""
        rows = ["| option | default | meaning |", "|---|---|---|"]
        for field in dataclasses.fields(cls):
            default = getattr(field.default, "__name__", None) or repr(field.default)
            rows.append(f"| `{field.name}` | `{default}` | {field.metadata['meaning']} |")
        return "\n".join(rows)

    @classmethod
    def from_keywords(cls, base: Optional["SearchOptions"] = None, **keywords) -> "SearchOptions":
        """`base` (default: the defaults) with the given fields replaced; an
        unknown keyword raises TypeError naming it and the known ones."""
        base = cls() if base is None else base
        if not keywords:
            return base
        unknown = sorted(set(keywords) - set(cls.names()))
        if unknown:
            raise TypeError(f"unknown search option(s) {unknown}; the options are "
                            f"{list(cls.names())} (see SearchOptions.describe())")
        return dataclasses.replace(base, **keywords)

    def replace(self, **changes) -> "SearchOptions":
        """A copy with `changes` (checked again)."""
        return dataclasses.replace(self, **changes)

    def repetition_value_internal(self) -> float:
        """`repetition_value` on the internal [-1, 1] scale (a draw: 0)."""
        if self.repetition_value is None:
            return 0.0
        return float(tree_lib.to_internal_scale(np.float32(self.repetition_value),
                                                self.value_range))

    @property
    def max_path_length(self) -> int:
        """The longest root-to-leaf path a replay may walk; resolved records."""
        return min(self.max_depth, self.max_nodes)
