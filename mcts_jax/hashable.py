"""Functions as static arguments of `jax.jit`: compared by value, and the
rules that compile the search again on every call.

A policy holds functions (selection rules, Q transforms) and the search is
compiled once per policy value, so two equal policies must hash equal even
when their rules are separate `functools.partial` objects. `HashableFunction`
wraps a function so that equal partials of one function with equal hashable
bound arguments compare equal (a plain function needs no wrapper: it is its
own key); `static_parts` (`holds_tracer`)
tells when a value binds a tracer of the caller's trace (a rule built
inside the caller's `jit`), which cannot be a static argument at all, and
finds the functions `check_recompiles` compares, in one walk, which
`compile_parts` keeps on the policy value for its later calls.

A rule made anew on every call (a lambda, a closure defined inside a loop)
or one that binds an array is a new value each time, so every call
compiles again. `check_recompiles` notices a rule that equals one seen
before in everything but object identity and warns once
(`RecompileWarning`), naming the cause and the fix. `describe_function`
names a rule or Q transform in error messages. (`mcts_jax.recompiles`, the
old home of these last names, is this module under a second name.)
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import types
import warnings
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import jax

from mcts_jax.options import SearchOptions


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


def holds_tracer(value: Any) -> bool:
    """True when `value` binds a JAX tracer of the caller's trace (`static_parts`)."""
    return static_parts(value)


class HashableFunction:
    """Wraps a function (a rule, a Q transform) for use as a static argument of
    `jax.jit`: two wrappers are equal when their functions are equal partials
    of the same function with equal hashable bound arguments (Python numbers,
    strings, functions), otherwise when they wrap the very same object."""

    __slots__ = ("fn", "_key")

    def __init__(self, fn: Callable):
        self.fn = fn
        # Its key: `_value_key(fn)`, or, when something bound is unhashable
        # (an array, a list), the identity of `fn` itself: this wrapper keeps
        # it alive, so that identity is never reused while a compiled function
        # is cached under it. (A bound value mutated in place afterwards is
        # not seen: bind values, not containers you change.)
        try:
            self._key = _value_key(fn)
        except _Unhashable:
            self._key = ("object", id(fn))

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __eq__(self, other) -> bool:
        return isinstance(other, HashableFunction) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"HashableFunction({self.fn!r})"


# ---- rules that compile again on every call ----------------------------------------------



def _describe_value(value: Any) -> str:
    """A bound argument, short: functions by name, arrays by shape and dtype."""
    if callable(value) and not isinstance(value, type):
        return describe_function(value)
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"<{type(value).__name__} shape {tuple(value.shape)} {value.dtype}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_function(fn: Any) -> str:
    """The name of a rule or Q transform for a message: its `__qualname__`
    (a lambda reads `outer.<locals>.<lambda>`), a partial as
    `functools.partial(name, constants)`, a callable dataclass as
    `Type(fields)`; through `HashableFunction`."""
    if isinstance(fn, HashableFunction):
        return describe_function(fn.fn)
    if isinstance(fn, functools.partial):
        parts = [describe_function(fn.func)] + [_describe_value(arg) for arg in fn.args]
        parts += [f"{name}={_describe_value(arg)}" for name, arg in fn.keywords.items()]
        return f"functools.partial({', '.join(parts)})"
    name = getattr(fn, "__qualname__", None) if isinstance(fn, (types.FunctionType, type)) \
        else None
    if name is None and callable(fn) and hasattr(fn, "__name__"):  # builtins, methods
        name = getattr(fn, "__qualname__", None) or fn.__name__
    if name is not None and isinstance(fn, types.FunctionType) and "<" in name:
        code = fn.__code__  # a lambda or a local function: say where it is defined
        return f"{name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    if name is not None:
        return name
    if dataclasses.is_dataclass(fn):
        fields = ", ".join(f"{field.name}={_describe_value(getattr(fn, field.name))}"
                           for field in dataclasses.fields(fn))
        return f"{type(fn).__name__}({fields})"
    return _describe_value(fn)


class RecompileWarning(UserWarning):
    """A selection rule or Q transform compiles the search again on every
    call (a new function object each call, or a bound value compared by
    identity), so the compiled search is never reused. Warned once per
    function (its code object)."""


_UNHASHABLE = "<unhashable>"
_MAX_SEEN = 4096
# hash(form) -> hash(comparison key) of the last rule of that form; see check_recompiles.
_last_key_by_form: Dict[int, int] = {}
_warned_codes: set = set()


def _form(value: Any, unhashable: list, depth: int = 0) -> Any:
    """What `_value_key` compares, with every function object replaced by its
    code, defaults and closure values (recursively), and every unhashable
    bound value by a marker (noted in `unhashable`): two rules that differ
    only by object identity have equal forms."""
    if depth > 8:
        return "<deep>"
    if isinstance(value, HashableFunction):
        return ("static", _form(value.fn, unhashable, depth + 1))
    if isinstance(value, functools.partial):
        return ("partial", _form(value.func, unhashable, depth + 1),
                tuple(_form(arg, unhashable, depth + 1) for arg in value.args),
                tuple(sorted((name, _form(arg, unhashable, depth + 1))
                             for name, arg in value.keywords.items())))
    if isinstance(value, types.FunctionType):
        cells = []
        for cell in value.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                contents = "<empty>"
            cells.append(_form(contents, unhashable, depth + 1))
        defaults = tuple(_form(arg, unhashable, depth + 1) for arg in value.__defaults__ or ())
        keyword_defaults = tuple(sorted((name, _form(arg, unhashable, depth + 1))
                                        for name, arg in (value.__kwdefaults__ or {}).items()))
        return ("function", value.__code__, tuple(cells), defaults, keyword_defaults)
    if (dataclasses.is_dataclass(value) and not isinstance(value, type)
            and not isinstance(value, SearchOptions)):
        return ("dataclass", type(value),
                tuple(_form(getattr(value, field.name), unhashable, depth + 1)
                      for field in dataclasses.fields(value)))
    try:
        hash(value)
    except Exception:  # noqa: BLE001 - anything that cannot be a key compares by identity
        unhashable.append(value)
        return (_UNHASHABLE, type(value).__qualname__)
    return value


def _code_of(fn: Any) -> Any:
    """The code object a rule is made of (through partials, `HashableFunction`,
    one-field callable dataclasses); None when there is none."""
    for _ in range(8):
        if isinstance(fn, HashableFunction):
            fn = fn.fn
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.FunctionType):
            return fn.__code__
        elif dataclasses.is_dataclass(fn) and not isinstance(fn, type):
            inner = [getattr(fn, field.name) for field in dataclasses.fields(fn)
                     if callable(getattr(fn, field.name))]
            if not inner:
                return type(fn)
            fn = inner[0]
        else:
            return None
    return None


def static_parts(value: Any, functions: Optional[list] = None, depth: int = 0) -> bool:
    """One walk of a search's static settings (a policy value's fields,
    `Rules`, `functools.partial`s, tuples and lists): True when they bind a
    JAX tracer of the caller's trace (a tracer itself, or one bound in a
    `HashableFunction`, a partial, a tuple or list, a dataclass's fields: a
    rule partial built inside the caller's jit with traced constants), which
    cannot be a static argument at all.

    `functions`, when given, receives the functions the settings hold, what
    `check_recompiles` compares: the `HashableFunction`s and bare functions
    or partials (not descending into a function, each is one unit of
    comparison, nor into `SearchOptions`, nor deeper than four levels), but
    not those defined at a module's top level (one object for the life of
    the program: it never compiles again)."""
    if isinstance(value, jax.core.Tracer):
        return True
    if isinstance(value, (HashableFunction, functools.partial, types.FunctionType)):
        fn = value.fn if isinstance(value, HashableFunction) else value
        if functions is not None and depth <= 4 and not (
                isinstance(fn, types.FunctionType) and fn.__closure__ is None
                and "<" not in fn.__qualname__):
            functions.append(value)
        if isinstance(value, HashableFunction):
            return static_parts(fn)
        if isinstance(fn, functools.partial):
            return any(static_parts(part) for part in (fn.func, *fn.args, *fn.keywords.values()))
        return False
    if isinstance(value, (list, tuple)):
        return any([static_parts(item, functions, depth + 1) for item in value])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = None if isinstance(value, SearchOptions) else functions
        return any([static_parts(getattr(value, field.name), inner, depth + 1)
                    for field in dataclasses.fields(value)])
    return False


def compile_parts(policy: Any) -> Tuple[bool, tuple]:
    """(whether `policy` binds a tracer of the caller's trace, the functions
    `check_recompiles` compares): one walk of the value (`static_parts`),
    kept on it as `_compile_parts` for the calls that follow
    (`tree_search.run_compiled` reads it). A policy's fields are frozen; a
    mutable object held in one and changed after the first call is not
    walked again (bind values, not containers you change)."""
    functions: list = []
    parts = (static_parts(policy, functions), tuple(functions))
    try:
        object.__setattr__(policy, "_compile_parts", parts)
    except (AttributeError, TypeError):  # a value without a __dict__: walked on every call
        pass
    return parts


def caller_stacklevel() -> int:
    """The `warnings.warn` stacklevel of the first frame outside mcts_jax
    (its subpackages included): the user's call."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def check_recompiles(settings: Any, functions: Optional[Sequence] = None) -> None:
    """Warns (`RecompileWarning`, once per code object) when a rule or Q
    transform in `settings` compiles the search again although it is the
    same rule as one seen before: equal in everything (its code, its bound
    constants, the values its closure holds) but the identity of a function
    object or of an unhashable bound value (an array), which the compiled
    search is keyed by. Costs a few hashes per call. `functions`: those of
    `settings` found already (`static_parts`)."""
    if functions is None:
        functions = []
        static_parts(settings, functions)
    for fn in functions:
        code = _code_of(fn)
        if code is None or code in _warned_codes:
            continue
        unhashable: list = []
        try:
            form = hash(_form(fn, unhashable))
            raw_key = (fn if isinstance(fn, HashableFunction) else HashableFunction(fn))._key
            key = hash(raw_key)
        except Exception:  # noqa: BLE001 - a key that cannot be hashed: nothing to compare
            continue
        last = _last_key_by_form.get(form)
        if len(_last_key_by_form) >= _MAX_SEEN:
            _last_key_by_form.clear()
        _last_key_by_form[form] = key
        if last is None or last == key:
            continue
        _warned_codes.add(code)
        name = describe_function(fn)
        if isinstance(raw_key, tuple) and raw_key[:1] == ("object",):  # by identity
            kinds = sorted({type(value).__name__ for value in unhashable}) or ["unhashable"]
            cause = (f"it binds a value that cannot be hashed ({', '.join(kinds)}), so it is "
                     f"compared by identity and every new such value is a new rule")
            fix = ("bind hashable constants (Python numbers, strings, tuples) with "
                   "functools.partial, and pass arrays through the params or "
                   "search(extra_data=...), which rules read as tree.extra_data")
        else:
            cause = ("it is a new function object on every call (a lambda, or a closure "
                     "defined inside a function or a loop, is a new object each time that "
                     "line runs), and functions compare by identity")
            fix = ("define the function once, at module level, and bind its constants with "
                   "functools.partial with hashable arguments, e.g. "
                   "functools.partial(my_rule, c=1.5): equal partials compile once")
        warnings.warn(
            f"the selection rule or Q transform {name} compiles the search again on every "
            f"call: {cause}; the compiled search is not reused. Fix: {fix}. "
            f"(Warned once for this function.)",
            RecompileWarning, stacklevel=caller_stacklevel())
