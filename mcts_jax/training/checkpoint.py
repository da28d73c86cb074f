"""Checkpoints (orbax) and the metrics file, kept in step with each other.

A checkpoint is one orbax step folder `checkpoints/<iteration>/` with three
items:
  variables: the network's {"params", "batch_stats"} (what `Agent.load` reads);
  state: everything else needed to continue exactly: optimiser state,
    update count, replay buffer, games in progress, RNG key. Stored as a flat
    dict of its leaves (`leaf_00000`, ...) and restored into the structure
    of a freshly built state, whose key paths must match the saved ones;
  meta: JSON (iteration, wall time so far, leaf paths).
orbax writes a step into a temporary folder and renames it when complete, so
a run killed mid-save never leaves a half checkpoint that would be restored.

Metrics: `metrics.jsonl`, one JSON object per finished iteration, written
(and fsynced) before that iteration's checkpoint. On resume from checkpoint c
the file is cut back to iterations <= c (and any torn last line dropped), so
every iteration appears exactly once.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp


def _key_paths(tree) -> List[str]:
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(tree)]


def pack_keys(tree):
    """Typed PRNG keys -> their uint32 data (orbax stores plain arrays)."""
    return jax.tree.map(lambda x: jax.random.key_data(x)
                        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x, tree)


class Checkpointer:
    """Orbax checkpoints of a run, under `<run_dir>/checkpoints`."""

    def __init__(self, directory: str, keep: int = 3):
        self.directory = os.path.abspath(directory)
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                               enable_async_checkpointing=False)
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def latest(self) -> Optional[int]:
        """The last complete checkpoint's iteration, or None."""
        self.manager.reload()
        return self.manager.latest_step()

    def save(self, iteration: int, variables, state, meta: Dict[str, Any]) -> None:
        """Writes checkpoint `iteration` (blocks until it is complete on disk)."""
        state = pack_keys(state)
        # Zero-size leaves (e.g. the lean placeholders of search embeddings)
        # are not stored: orbax refuses them, and they hold nothing.
        leaves = {f"leaf_{i:05d}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(state))
                  if np.size(x) > 0}
        meta = dict(meta, iteration=int(iteration), state_paths=_key_paths(state))
        self.manager.save(int(iteration), args=ocp.args.Composite(
            variables=ocp.args.StandardSave(jax.tree.map(np.asarray, variables)),
            state=ocp.args.StandardSave(leaves),
            meta=ocp.args.JsonSave(meta)), force=True)
        self.manager.wait_until_finished()

    def restore(self, iteration: int, variables_like, state_like) -> Tuple[Any, Any, Dict]:
        """(variables, state, meta) of checkpoint `iteration`, in the structures
        of `variables_like` and `state_like` (typed keys are re-wrapped)."""
        packed_like = pack_keys(state_like)
        paths = _key_paths(packed_like)
        meta = self.manager.restore(int(iteration), args=ocp.args.Composite(
            meta=ocp.args.JsonRestore())).meta
        if meta["state_paths"] != paths:
            raise ValueError(f"checkpoint {iteration} in {self.directory} holds a different "
                             f"training state (saved by another version or configuration)")
        like_leaves = jax.tree.leaves(packed_like)
        abstract = {f"leaf_{i:05d}": ocp.utils.to_shape_dtype_struct(x)
                    for i, x in enumerate(like_leaves) if np.size(x) > 0}
        restored = self.manager.restore(int(iteration), args=ocp.args.Composite(
            variables=ocp.args.StandardRestore(
                jax.tree.map(ocp.utils.to_shape_dtype_struct, variables_like)),
            state=ocp.args.StandardRestore(abstract)))
        leaves = [restored.state[f"leaf_{i:05d}"] if np.size(like) > 0
                  else np.zeros(np.shape(like), like.dtype)
                  for i, like in enumerate(like_leaves)]
        state_leaves = jax.tree.leaves(state_like)
        leaves = [jax.random.wrap_key_data(x, impl=jax.random.key_impl(like))
                  if jnp.issubdtype(like.dtype, jax.dtypes.prng_key) else jnp.asarray(x)
                  for x, like in zip(leaves, state_leaves)]
        state = jax.tree.unflatten(jax.tree.structure(state_like), leaves)
        variables = jax.tree.map(jnp.asarray, restored.variables)
        return variables, state, meta

    def restore_variables(self, variables_like, iteration: Optional[int] = None):
        """Only the network variables (latest checkpoint by default)."""
        iteration = self.latest() if iteration is None else iteration
        if iteration is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        restored = self.manager.restore(int(iteration), args=ocp.args.Composite(
            variables=ocp.args.StandardRestore(
                jax.tree.map(ocp.utils.to_shape_dtype_struct, variables_like))))
        return jax.tree.map(jnp.asarray, restored.variables), iteration

    def close(self):
        self.manager.close()


# ---- snapshots for Elo --------------------------------------------------------

def save_snapshot(directory: str, iteration: int, variables) -> None:
    """Network variables of `iteration` under `<directory>/<iteration>` (atomic)."""
    path = os.path.abspath(os.path.join(directory, f"{iteration:06d}"))
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(path, jax.tree.map(np.asarray, variables), force=True)


def load_snapshot(directory: str, iteration: int, variables_like):
    path = os.path.abspath(os.path.join(directory, f"{iteration:06d}"))
    with ocp.StandardCheckpointer() as checkpointer:
        restored = checkpointer.restore(
            path, jax.tree.map(ocp.utils.to_shape_dtype_struct, variables_like))
    return jax.tree.map(jnp.asarray, restored)


def list_snapshots(directory: str) -> List[int]:
    if not os.path.isdir(directory):
        return []
    return sorted(int(name) for name in os.listdir(directory) if name.isdigit())


# ---- metrics file ---------------------------------------------------------------

def read_metrics(path: str) -> List[Dict[str, Any]]:
    """The records of a metrics.jsonl file (a torn last line is skipped)."""
    if not os.path.exists(path):
        return []
    records = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def truncate_metrics(path: str, last_iteration: int) -> List[Dict[str, Any]]:
    """Rewrites `path` (atomically) with the records of iterations <=
    last_iteration only; returns them."""
    records = [r for r in read_metrics(path) if r.get("iteration", 0) <= last_iteration]
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    return records


def append_metrics(path: str, record: Dict[str, Any]) -> None:
    """Appends one record as a line and fsyncs it."""
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())
