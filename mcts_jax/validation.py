"""Checks on the arguments of the public entry points.

Shape, dtype and option checks are static: they run in Python on every call
(also at trace time inside a user's `jit`) and cost microseconds. Value checks
(NaN or infinite logits or values, an all-illegal root row, ...) depend on the
policies' `checks` argument (see `CHECK_MODES` and docs/validation.md):

- "host" (default): when the arrays are concrete (a policy called outside the
  user's own `jit`) they are copied to the host and checked before the
  compiled search runs; this waits for the root arrays. Inside a user's `jit`
  the values are traced and these checks are skipped.
- "off": no value checks at all (production runs); shape checks remain.
- "checkify": the checks are compiled into the search with
  `jax.experimental.checkify`, including non-finite values, rewards,
  discounts and prior logits that `recurrent_fn` returns during the search.
  Outside a `jit` a failed check raises `checkify.JaxRuntimeError` (a
  ValueError); inside the user's `jit`, wrap the user's function with
  `checkify.checkify` and call `err.throw()`.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import base

FINAL_ACTIONS = ("most_visited", "highest_value", "sampled")
VALUE_RANGES = ((-1.0, 1.0), (0.0, 1.0))
CHECK_MODES = ("host", "off", "checkify")


def is_concrete(x: Any) -> bool:
    return not isinstance(x, jax.core.Tracer)


def check_mode(checks: Any) -> str:
    """Validates the `checks` argument of the policies and `get_subtree`."""
    if not isinstance(checks, str) or checks not in CHECK_MODES:
        raise ValueError(f"checks must be one of {CHECK_MODES}, got {checks!r}")
    return checks


def check_number(name: str, value: Any, low: float = -np.inf, high: float = np.inf,
                 low_inclusive: bool = True) -> float:
    """A Python (or numpy) real scalar option, finite and in range; returns it
    as a float. Options of this kind are static (part of the compile key)."""
    static_scalar = (isinstance(value, (int, float, np.integer, np.floating))
                     or (is_concrete(value) and hasattr(value, "dtype") and jnp.shape(value) == ()
                         and jnp.issubdtype(value.dtype, jnp.number)))
    if isinstance(value, (bool, np.bool_)) or not static_scalar:
        raise TypeError(f"{name} must be a Python float (a static option), got {value!r}")
    value = float(value)
    too_low = value < low if low_inclusive else value <= low
    if not np.isfinite(value) or too_low or value > high:
        bound = "[" if low_inclusive else "("
        raise ValueError(f"{name} must be finite and in {bound}{low}, {high}], got {value!r}")
    return value


def check_count(name: str, value: Any, low: int = 0) -> int:
    """A Python (or numpy) int option >= `low`; returns it as an int. Options
    of this kind are static (part of the compile key)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be a Python int (a static option), got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return bool(value)


# A part of a call that `check_call` is not asked to check.
NOT_CHECKED = object()


def check_call(root: base.RootFnOutput, invalid_actions: Optional[Any], values: bool = True, *,
               temperature: Any = NOT_CHECKED, rng_key: Any = NOT_CHECKED) -> Tuple[int, int]:
    """A search call's arrays, checked in one pass; returns (B, A).

    The root output and root mask: shapes and dtypes, and with `values`
    their concrete values on the host (NaN, +inf, all-illegal rows). The
    call's `temperature`: a scalar >= 0 (a concrete array's value with
    `values`, a Python number's always). `rng_key`: a typed key array
    (`jax.random.key`) or a raw uint32 [2] key (`jax.random.PRNGKey`),
    unbatched. A part not given is not checked (`check_root`: the root
    alone). A call wrong in several parts is told of the first: the root,
    then the temperature, then the key."""
    if not isinstance(root, base.RootFnOutput):
        raise TypeError(f"root must be a mcts_jax.RootFnOutput, got {type(root).__name__}")
    logits_shape = jnp.shape(root.prior_logits)
    if len(logits_shape) != 2:
        raise ValueError(f"root.prior_logits must have shape [B, A], got {logits_shape}")
    batch_size, num_actions = logits_shape
    if num_actions < 1 or batch_size < 1:
        raise ValueError(f"root.prior_logits must have B >= 1 and A >= 1, got {logits_shape}")
    if not jnp.issubdtype(jnp.result_type(root.prior_logits), jnp.floating):
        raise TypeError(f"root.prior_logits must be floating point, got "
                        f"{jnp.result_type(root.prior_logits)}")
    if jnp.shape(root.value) != (batch_size,):
        raise ValueError(f"root.value must have shape [B] = ({batch_size},), got "
                         f"{jnp.shape(root.value)}")
    if not jnp.issubdtype(jnp.result_type(root.value), jnp.floating):
        raise TypeError(f"root.value must be floating point, got {jnp.result_type(root.value)}")
    for path, leaf in jax.tree_util.tree_leaves_with_path(root.embedding):
        leaf_shape = jnp.shape(leaf)
        if not leaf_shape or leaf_shape[0] != batch_size:
            raise ValueError(
                f"root.embedding{jax.tree_util.keystr(path)} has shape {leaf_shape}; every "
                f"embedding leaf needs the batch axis first, B = {batch_size}")
    if invalid_actions is not None:
        if jnp.shape(invalid_actions) != (batch_size, num_actions):
            raise ValueError(f"invalid_actions must have shape [B, A] = "
                             f"{(batch_size, num_actions)}, got {jnp.shape(invalid_actions)}")
        if jnp.result_type(invalid_actions) != jnp.bool_:
            raise TypeError(f"invalid_actions must be bool (True = illegal), got "
                            f"{jnp.result_type(invalid_actions)}")
    if values and is_concrete(root.prior_logits):
        logits = np.asarray(root.prior_logits)
        bad = np.isnan(logits) | np.isposinf(logits)  # -inf is a valid "never" logit
        if bad.any():
            raise ValueError(f"root.prior_logits has NaN or +inf entries in rows "
                             f"{np.unique(np.argwhere(bad)[:, 0])[:10].tolist()}")
    if values and is_concrete(root.value):
        bad = ~np.isfinite(np.asarray(root.value))
        if bad.any():
            raise ValueError(f"root.value has NaN or infinite entries in rows "
                             f"{np.flatnonzero(bad)[:10].tolist()}")
    if values and invalid_actions is not None and is_concrete(invalid_actions):
        all_illegal = np.asarray(invalid_actions).all(axis=-1)
        if all_illegal.any():
            raise ValueError(
                f"invalid_actions marks every action illegal in root rows "
                f"{np.flatnonzero(all_illegal)[:10].tolist()}; a search needs a legal move")
    if temperature is not NOT_CHECKED:
        try:
            temperature_dtype = jnp.result_type(temperature)
        except TypeError:
            temperature_dtype = None
        if temperature_dtype is None or temperature_dtype == jnp.bool_ or \
                not jnp.issubdtype(temperature_dtype, jnp.number) or \
                jnp.shape(temperature) != ():
            raise ValueError(f"temperature must be a finite scalar >= 0, got {temperature!r}")
        if is_concrete(temperature) and (values or isinstance(temperature, (int, float))):
            t = np.asarray(temperature)
            if not np.isfinite(t) or t < 0:
                raise ValueError(f"temperature must be a finite scalar >= 0, got "
                                 f"{temperature!r}")
    if rng_key is not NOT_CHECKED:
        key_dtype = jnp.result_type(rng_key) if hasattr(rng_key, "dtype") else None
        typed_key = key_dtype is not None and jax.dtypes.issubdtype(key_dtype,
                                                                    jax.dtypes.prng_key)
        if typed_key and jnp.shape(rng_key) != ():
            raise ValueError(f"rng_key must be a single key (shape ()), got a key array of "
                             f"shape {jnp.shape(rng_key)}; the search is batched already")
        if not typed_key and not (key_dtype == jnp.uint32 and jnp.shape(rng_key) == (2,)):
            raise TypeError(f"rng_key must be a PRNG key (jax.random.key(seed)), got "
                            f"{type(rng_key).__name__} "
                            f"{jnp.shape(rng_key) if key_dtype is not None else ''}"
                            f"{key_dtype if key_dtype is not None else ''}")
    return batch_size, num_actions


# The root alone (its name before `check_call` checked the whole call).
check_root = check_call


def check_search_args(num_simulations: Any, max_nodes: Optional[int],
                      max_children: Any, replay_embeddings: Any, num_actions: int,
                      continuing: bool = False, graph: bool = False,
                      expand_all: bool = False) -> Tuple[int, Optional[int]]:
    """Checks a call's `num_simulations` and tree layout; returns (the
    capacity N, K: `max_children`, None for the dense layout).

    `max_nodes` (checked already by `SearchOptions`, or a continued tree's;
    None: the default, num_simulations + 1, or with `expand_all` a node per
    child of every simulation's leaf) must hold a fresh tree: a node per
    simulation and the root. A graph (`graph`), whose simulations often
    reach known positions, may be sized to the positions it can meet (a
    full graph re-evaluates its leaves). `max_children` is None or in [1,
    A = `num_actions`]; `replay_embeddings` a bool."""
    if not isinstance(replay_embeddings, (bool, np.bool_)):
        raise TypeError(f"replay_embeddings must be a bool, got {replay_embeddings!r}")
    if max_children is not None:
        if isinstance(max_children, bool) or not isinstance(max_children, (int, np.integer)):
            raise TypeError(f"max_children must be None or a Python int, got "
                            f"{max_children!r}")
        if not 1 <= max_children <= num_actions:
            raise ValueError(f"max_children must be in [1, A] = [1, {num_actions}], got "
                             f"{max_children}")
        max_children = int(max_children)
    if isinstance(num_simulations, bool) or not isinstance(num_simulations, (int, np.integer)):
        raise TypeError(f"num_simulations must be a Python int, got {num_simulations!r}")
    if num_simulations < 1:
        raise ValueError(f"num_simulations must be >= 1, got {num_simulations}")
    if max_nodes is None:
        max_nodes = num_simulations * ((max_children or num_actions) if expand_all else 1) + 1
    if max_nodes < num_simulations + 1 and not continuing and not graph:
        raise ValueError(f"max_nodes={max_nodes} is too small: a fresh search of "
                         f"num_simulations={num_simulations} needs num_simulations + 1 = "
                         f"{num_simulations + 1} node slots")
    return int(max_nodes), max_children


def check_value_range(value_range: Any) -> Optional[Tuple[float, float]]:
    """One of VALUE_RANGES as a tuple of floats, or None (unbounded returns
    such as game scores, used as they are)."""
    if value_range is None:
        return None
    try:
        as_floats = tuple(float(v) for v in value_range)
    except (TypeError, ValueError):
        as_floats = None
    if as_floats not in VALUE_RANGES:
        raise ValueError(f"value_range must be one of {VALUE_RANGES} or None (unbounded "
                         f"returns such as game scores), got {value_range!r}")
    return as_floats


def check_final_action(final_action: Any) -> str:
    """`final_action`, one of FINAL_ACTIONS (a policy's constant, checked
    when the policy value is built)."""
    if not isinstance(final_action, str) or final_action not in FINAL_ACTIONS:
        raise ValueError(f"final_action must be one of {FINAL_ACTIONS}, got {final_action!r}")
    return final_action


def check_tree(tree: Any, root: base.RootFnOutput, batch_size: int, num_actions: int,
               max_nodes: int, value_range: Tuple[float, float],
               max_children: Optional[int] = None, replay_embeddings: bool = False,
               transpositions: bool = False) -> None:
    """A tree passed to `tree=` must come from a search of the same shape
    and kind (a graph continues a graph, a tree a tree)."""
    from mcts_jax.tree import Tree  # local: tree imports nothing from here

    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a mcts_jax.Tree, got {type(tree).__name__}")
    if tree.batch_size != batch_size:
        raise ValueError(f"tree has B={tree.batch_size} rows but root has B={batch_size}")
    if tree.num_actions != num_actions:
        raise ValueError(f"tree has A={tree.num_actions} actions but root.prior_logits has "
                         f"A={num_actions}")
    if tree.max_nodes != max_nodes:
        raise ValueError(f"tree has max_nodes={tree.max_nodes} but max_nodes={max_nodes} was "
                         f"asked for; a continued tree keeps its capacity")
    as_tuple = lambda r: None if r is None else tuple(r)  # noqa: E731
    if as_tuple(tree.value_range) != as_tuple(value_range):
        raise ValueError(f"tree was built with value_range={tree.value_range}, not "
                         f"{value_range}")
    if tree.max_children != max_children:
        raise ValueError(f"tree has max_children={tree.max_children} but max_children="
                         f"{max_children} was asked for; a continued tree keeps its layout")
    if tree.replay_embeddings != replay_embeddings:
        raise ValueError(f"tree has replay_embeddings={tree.replay_embeddings} but "
                         f"replay_embeddings={replay_embeddings} was asked for")
    if tree.is_graph != transpositions:
        raise ValueError(f"tree comes from a {'graph' if tree.is_graph else 'tree'} search but "
                         f"transpositions={transpositions} was asked for; a continued tree "
                         f"keeps its kind")
    expected = jax.tree.map(lambda x: (tuple(jnp.shape(x)[1:]), jnp.result_type(x)),
                            root.embedding)
    stored = jax.tree.map(lambda x: (tuple(x.shape[2:]), x.dtype), tree.embeddings)
    if jax.tree.structure(expected) != jax.tree.structure(stored) or \
            jax.tree.leaves(expected) != jax.tree.leaves(stored):
        raise ValueError("tree.embeddings do not match root.embedding (structure, per-row "
                         "shapes or dtypes): the tree comes from another problem")


def check_tree_kind(tree: Any, num_chance_outcomes: int) -> None:
    """A tree passed to `tree=` must be of the search's kind: a stochastic
    search (C = `num_chance_outcomes` > 0) continues a tree of a stochastic
    search with the same C, a deterministic search (C = 0) a tree without
    chance nodes. Static (reads `tree.num_chance_outcomes`); None passes."""
    from mcts_jax.tree import Tree  # local: tree imports nothing from here

    if tree is None:
        return
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a mcts_jax.Tree or None, got {type(tree).__name__}")
    have = tree.num_chance_outcomes
    if have == num_chance_outcomes:
        return
    if have == 0:
        raise ValueError(
            f"tree has no chance nodes (num_chance_outcomes 0: it comes from a deterministic "
            f"search such as muzero_policy or alphazero_policy), but this stochastic search has "
            f"C = {num_chance_outcomes} chance outcomes; a stochastic search needs a tree from "
            f"a stochastic search (stochastic_muzero_policy), or tree=None to start afresh")
    if num_chance_outcomes == 0:
        raise ValueError(
            f"tree has chance nodes (num_chance_outcomes {have}: it comes from a stochastic "
            f"search such as stochastic_muzero_policy), but this search is deterministic; "
            f"continue it with the stochastic policy that built it, or pass tree=None")
    raise ValueError(f"tree has {have} chance outcomes but this stochastic search has "
                     f"C = {num_chance_outcomes}; continue a stochastic tree with the "
                     f"stochastic policy (and game) that built it")


# ---- value checks compiled into the search (checks="checkify") ------------

def _first_row(bad_rows: jax.Array) -> jax.Array:
    return jnp.argmax(bad_rows).astype(jnp.int32)


def checkify_root(root: base.RootFnOutput, invalid_actions: Optional[jax.Array],
                  temperature: jax.Array) -> None:
    """The host value checks of `check_call` (the root's and the
    temperature's), as `checkify.check`s (traced)."""
    from jax.experimental import checkify

    logits = jnp.asarray(root.prior_logits)
    bad = jnp.any(jnp.isnan(logits) | jnp.isposinf(logits), axis=-1)
    checkify.check(~jnp.any(bad), "root.prior_logits has NaN or +inf entries (first in row "
                   "{row})", row=_first_row(bad))
    bad = ~jnp.isfinite(jnp.asarray(root.value))
    checkify.check(~jnp.any(bad), "root.value has NaN or infinite entries (first in row "
                   "{row})", row=_first_row(bad))
    if invalid_actions is not None:
        bad = jnp.all(invalid_actions, axis=-1)
        checkify.check(~jnp.any(bad), "invalid_actions marks every action illegal in root row "
                       "{row}; a search needs a legal move", row=_first_row(bad))
    checkify.check(jnp.isfinite(temperature) & (temperature >= 0),
                   "temperature must be a finite scalar >= 0, got {t}", t=temperature)


def checkify_tree(tree: Any) -> None:
    """After a search: every value that entered the tree (from `root` or from
    `recurrent_fn`) is finite. One pass over the B x N x K arrays, once per
    search (not per simulation). A non-finite value of a terminal transition
    is ignored by the search (a terminal node's value is 0) and not reported."""
    from jax.experimental import checkify

    used = jnp.arange(tree.max_nodes)[None, :] < tree.num_nodes[:, None]
    fields = (("reward", tree.rewards), ("discount", tree.discounts),
              ("value", tree.raw_values))
    for name, array in fields:
        bad = used & ~jnp.isfinite(array)
        checkify.check(~jnp.any(bad), f"recurrent_fn returned a NaN or infinite {name} during "
                       "the search (row {row}, node {node})", row=_first_row(jnp.any(bad, 1)),
                       node=jnp.argmax(jnp.any(bad, 0)).astype(jnp.int32))
    bad = used & jnp.any(~jnp.isfinite(tree.priors), axis=-1)
    checkify.check(~jnp.any(bad), "recurrent_fn returned prior_logits with NaN or +inf "
                   "entries (or -inf on every legal action) during the search (row {row}, "
                   "node {node})", row=_first_row(jnp.any(bad, 1)),
                   node=jnp.argmax(jnp.any(bad, 0)).astype(jnp.int32))


def raise_or_stage(error: Any) -> None:
    """A checkify error returned by a compiled search: raised now when it is
    concrete (a call outside `jit`), else handed to the enclosing
    `checkify.checkify` of the user's function."""
    from jax.experimental import checkify

    if all(is_concrete(leaf) for leaf in jax.tree.leaves(error)):
        error.throw()
        return
    # Without an enclosing checkify.checkify, JAX refuses to stage this with
    # "Cannot abstractly evaluate a checkify.check which was not functionalized".
    checkify.check_error(error)


def recurrent_result(result: Any, embedding: Any,
                     shapes: Optional[Tuple[int, int]] = None) -> Tuple[base.RecurrentFnOutput,
                                                                        Any]:
    """What recurrent_fn returned, checked at trace time (free): a pair
    (RecurrentFnOutput, embedding) whose embedding has the structure, per-row
    shapes and dtypes of the embedding it was given, its fields floating
    (`invalid_actions` bool) and, with `shapes` = (B, A), [B] and [B, A]
    (`prior_logits`, `invalid_actions`). The output may be any object with
    mctx's fields (`base.as_recurrent_output`)."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TypeError(f"recurrent_fn must return a pair (RecurrentFnOutput, embedding), got "
                        f"{type(result).__name__}")
    output, new_embedding = result
    if not isinstance(output, base.RecurrentFnOutput):
        output = base.as_recurrent_output(output)
    if not isinstance(output, base.RecurrentFnOutput):
        raise TypeError(f"recurrent_fn must return a mcts_jax.RecurrentFnOutput (or any "
                        f"object with mctx's fields reward, discount, prior_logits, value) "
                        f"first, got {type(output).__name__}")
    for name in ("reward", "discount", "prior_logits", "value"):
        if not jnp.issubdtype(jnp.result_type(getattr(output, name)), jnp.floating):
            raise TypeError(f"recurrent_fn returned {name} of dtype "
                            f"{jnp.result_type(getattr(output, name))}; it must be floating")
    if output.invalid_actions is not None and \
            jnp.result_type(output.invalid_actions) != jnp.bool_:
        raise TypeError(f"recurrent_fn returned invalid_actions of dtype "
                        f"{jnp.result_type(output.invalid_actions)}; it must be bool")
    given, returned = jax.tree.leaves(embedding), jax.tree.leaves(new_embedding)
    if jax.tree.structure(embedding) != jax.tree.structure(new_embedding) or [
            (jnp.shape(x), jnp.result_type(x)) for x in given] != [
            (jnp.shape(x), jnp.result_type(x)) for x in returned]:
        returned = jax.tree.map(lambda x: (tuple(jnp.shape(x)), jnp.result_type(x)),
                                new_embedding)
        given = jax.tree.map(lambda x: (tuple(jnp.shape(x)), jnp.result_type(x)), embedding)
        raise ValueError(f"recurrent_fn returned an embedding whose structure, shapes "
                         f"or dtypes {returned} differ from the embedding it was given "
                         f"{given}")
    if shapes is not None:
        batch_size, num_actions = shapes
        expected = dict(reward=(batch_size,), discount=(batch_size,),
                        prior_logits=(batch_size, num_actions), value=(batch_size,))
        if output.invalid_actions is not None:
            expected["invalid_actions"] = (batch_size, num_actions)
        for name, shape in expected.items():
            got = tuple(jnp.shape(getattr(output, name)))
            if got != shape:
                raise ValueError(
                    f"recurrent_fn returned {name} of shape {got}; expected {shape} "
                    f"(B={batch_size} searches, A={num_actions} actions, as in the root)")
    return output, new_embedding


def check_is_tree(name: str, tree: Any) -> None:
    from mcts_jax.tree import Tree  # local: tree imports nothing from here

    if not isinstance(tree, Tree):
        raise TypeError(f"{name} must be a mcts_jax.Tree, got {type(tree).__name__}")


def check_row_mask(name: str, mask: Any, batch_size: int) -> None:
    """A [B] bool (or integer 0/1) row mask."""
    if jnp.shape(mask) != (batch_size,):
        raise ValueError(f"{name} must have shape [B] = ({batch_size},), got {jnp.shape(mask)}")
    dtype = jnp.result_type(mask)
    if dtype != jnp.bool_ and not jnp.issubdtype(dtype, jnp.integer):
        raise TypeError(f"{name} must be a bool array, got {dtype}")


def check_ids(name: str, ids: Any, batch_size: int, meaning: str, symbol: str, bound: int,
              per: str = "row") -> None:
    """`ids` [B] integer, and (when concrete) in [0, bound); errors name
    `name`, what the ids mean and their range [0, `symbol`) = [0, `bound`)
    (one id per `per`)."""
    ids_range = f"[0, {symbol}) = [0, {bound})"
    if ids.shape != (batch_size,):
        raise ValueError(f"{name} must have shape [B] = ({batch_size},), one {meaning} in "
                         f"{ids_range} per {per}, got shape {ids.shape}")
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise TypeError(f"{name} must be an integer array of {meaning}s in {ids_range}, got "
                        f"dtype {ids.dtype}")
    if is_concrete(ids):
        values = np.asarray(ids)
        rows = np.flatnonzero((values < 0) | (values >= bound))[:10]
        if rows.size:
            raise ValueError(f"{name} must be {meaning}s in {ids_range}, got "
                             f"{values[rows].tolist()} in rows {rows.tolist()}")
