"""Functions as static arguments of `jax.jit`: compared by value, not identity.

A policy holds functions (selection rules, Q transforms) and the search is
compiled once per policy value, so two equal policies must hash equal even
when their rules are separate `functools.partial` objects. `HashableFunction`
wraps a function so that equal partials of one function with equal hashable
bound arguments compare equal; `holds_tracer` tells when a value binds a
tracer of the caller's trace (a rule built inside the caller's `jit`), which
cannot be a static argument at all.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax


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
    list), the identity of `fn` itself: the `HashableFunction` holding it keeps it alive,
    so that identity is never reused while a compiled function is cached
    under it. (A bound value mutated in place afterwards is not seen: bind
    values, not containers you change.)"""
    try:
        return _value_key(fn)
    except _Unhashable:
        return ("object", id(fn))


def holds_tracer(value: Any) -> bool:
    """True when `value` binds a JAX tracer of the caller's trace: a tracer
    itself, or one bound in a `HashableFunction`, a `functools.partial`, a tuple or list
    (e.g. `Rules`) or a dataclass's fields (a policy's settings), e.g. a rule
    partial built inside the caller's jit with traced constants."""
    if isinstance(value, jax.core.Tracer):
        return True
    if isinstance(value, HashableFunction):
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


class HashableFunction:
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
        return isinstance(other, HashableFunction) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"HashableFunction({self.fn!r})"
