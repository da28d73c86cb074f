"""Checks on the arguments of the public entry points.

Shape and dtype checks are static and free. Value checks (NaN, an all-illegal
root) run only when the arrays are concrete, i.e. when a policy is called
outside the user's own `jit`; they copy the root arrays to the host once per
call. Inside a user's `jit` the values are traced and these value checks are
skipped.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from mcts_jax import base

FINAL_ACTIONS = ("most_visited", "highest_value", "sampled")
VALUE_RANGES = ((-1.0, 1.0), (0.0, 1.0))


def is_concrete(x: Any) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _shape(x) -> Tuple[int, ...]:
    return tuple(jnp.shape(x))


def check_root(root: base.RootFnOutput, invalid_actions: Optional[Any]) -> Tuple[int, int]:
    """Validates the root output and root mask; returns (B, A)."""
    if not isinstance(root, base.RootFnOutput):
        raise TypeError(f"root must be a mcts_jax.RootFnOutput, got {type(root).__name__}")
    logits_shape = _shape(root.prior_logits)
    if len(logits_shape) != 2:
        raise ValueError(f"root.prior_logits must have shape [B, A], got {logits_shape}")
    batch_size, num_actions = logits_shape
    if num_actions < 1 or batch_size < 1:
        raise ValueError(f"root.prior_logits must have B >= 1 and A >= 1, got {logits_shape}")
    if not jnp.issubdtype(jnp.result_type(root.prior_logits), jnp.floating):
        raise TypeError(f"root.prior_logits must be floating point, got "
                        f"{jnp.result_type(root.prior_logits)}")
    if _shape(root.value) != (batch_size,):
        raise ValueError(f"root.value must have shape [B] = ({batch_size},), got "
                         f"{_shape(root.value)}")
    if not jnp.issubdtype(jnp.result_type(root.value), jnp.floating):
        raise TypeError(f"root.value must be floating point, got {jnp.result_type(root.value)}")
    for path, leaf in jax.tree_util.tree_leaves_with_path(root.embedding):
        leaf_shape = _shape(leaf)
        if not leaf_shape or leaf_shape[0] != batch_size:
            raise ValueError(
                f"root.embedding{jax.tree_util.keystr(path)} has shape {leaf_shape}; every "
                f"embedding leaf needs the batch axis first, B = {batch_size}")
    if invalid_actions is not None:
        if _shape(invalid_actions) != (batch_size, num_actions):
            raise ValueError(f"invalid_actions must have shape [B, A] = "
                             f"{(batch_size, num_actions)}, got {_shape(invalid_actions)}")
        if jnp.result_type(invalid_actions) != jnp.bool_:
            raise TypeError(f"invalid_actions must be bool (True = illegal), got "
                            f"{jnp.result_type(invalid_actions)}")
    if is_concrete(root.prior_logits):
        logits = np.asarray(root.prior_logits)
        bad = np.isnan(logits) | np.isposinf(logits)  # -inf is a valid "never" logit
        if bad.any():
            raise ValueError(f"root.prior_logits has NaN or +inf entries in rows "
                             f"{np.unique(np.argwhere(bad)[:, 0])[:10].tolist()}")
    if is_concrete(root.value):
        bad = ~np.isfinite(np.asarray(root.value))
        if bad.any():
            raise ValueError(f"root.value has NaN or infinite entries in rows "
                             f"{np.flatnonzero(bad)[:10].tolist()}")
    if invalid_actions is not None and is_concrete(invalid_actions):
        all_illegal = np.asarray(invalid_actions).all(axis=-1)
        if all_illegal.any():
            raise ValueError(
                f"invalid_actions marks every action illegal in root rows "
                f"{np.flatnonzero(all_illegal)[:10].tolist()}; a search needs a legal move")
    return batch_size, num_actions


def check_search_args(num_simulations: Any, max_nodes: Optional[Any], max_depth: Optional[Any],
                      final_action: str, temperature: Any,
                      value_range: Tuple[float, float], continuing: bool = False) -> int:
    """Validates the common keyword arguments; returns the capacity N."""
    if isinstance(num_simulations, bool) or not isinstance(num_simulations, (int, np.integer)):
        raise TypeError(f"num_simulations must be a Python int, got {num_simulations!r}")
    if num_simulations < 1:
        raise ValueError(f"num_simulations must be >= 1, got {num_simulations}")
    if max_nodes is None:
        max_nodes = num_simulations + 1
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, (int, np.integer)):
        raise TypeError(f"max_nodes must be a Python int, got {max_nodes!r}")
    if max_nodes < num_simulations + 1 and not continuing:
        raise ValueError(f"max_nodes={max_nodes} is too small: a fresh search of "
                         f"num_simulations={num_simulations} needs num_simulations + 1 = "
                         f"{num_simulations + 1} node slots")
    if max_depth is not None:
        if isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)) \
                or max_depth < 1:
            raise ValueError(f"max_depth must be None or an int >= 1, got {max_depth!r}")
    if final_action not in FINAL_ACTIONS:
        raise ValueError(f"final_action must be one of {FINAL_ACTIONS}, got {final_action!r}")
    if is_concrete(temperature):
        t = np.asarray(temperature)
        if t.shape != () or not np.isfinite(t) or t < 0:
            raise ValueError(f"temperature must be a finite scalar >= 0, got {temperature!r}")
    if tuple(float(v) for v in value_range) not in VALUE_RANGES:
        raise ValueError(f"value_range must be one of {VALUE_RANGES}, got {value_range!r}")
    return int(max_nodes)


def check_layout(max_children: Any, replay_embeddings: Any, num_actions: int) -> Optional[int]:
    """Validates the tree layout options; returns K (None = dense)."""
    if not isinstance(replay_embeddings, (bool, np.bool_)):
        raise TypeError(f"replay_embeddings must be a bool, got {replay_embeddings!r}")
    if max_children is None:
        return None
    if isinstance(max_children, bool) or not isinstance(max_children, (int, np.integer)):
        raise TypeError(f"max_children must be None or a Python int, got {max_children!r}")
    if not 1 <= max_children <= num_actions:
        raise ValueError(f"max_children must be in [1, A] = [1, {num_actions}], got "
                         f"{max_children}")
    return int(max_children)


def check_tree(tree: Any, root: base.RootFnOutput, batch_size: int, num_actions: int,
               max_nodes: int, value_range: Tuple[float, float],
               max_children: Optional[int] = None, replay_embeddings: bool = False) -> None:
    """A tree passed to `tree=` must come from a search of the same shape."""
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
    if tuple(tree.value_range) != tuple(value_range):
        raise ValueError(f"tree was built with value_range={tree.value_range}, not "
                         f"{value_range}")
    if tree.max_children != max_children:
        raise ValueError(f"tree has max_children={tree.max_children} but max_children="
                         f"{max_children} was asked for; a continued tree keeps its layout")
    if tree.replay_embeddings != replay_embeddings:
        raise ValueError(f"tree has replay_embeddings={tree.replay_embeddings} but "
                         f"replay_embeddings={replay_embeddings} was asked for")
    expected = jax.tree.map(lambda x: (tuple(jnp.shape(x)[1:]), jnp.result_type(x)),
                            root.embedding)
    stored = jax.tree.map(lambda x: (tuple(x.shape[2:]), x.dtype), tree.embeddings)
    if jax.tree.structure(expected) != jax.tree.structure(stored) or \
            jax.tree.leaves(expected) != jax.tree.leaves(stored):
        raise ValueError("tree.embeddings do not match root.embedding (structure, per-row "
                         "shapes or dtypes): the tree comes from another problem")
