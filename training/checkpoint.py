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

With `background=True` (what the training loop uses with one process) `save`
returns once the arrays are copied to host memory, and the checksums and files
are written by a background thread while training goes on; one checkpoint is
in flight at a time, and the next `save`, `wait`, `latest`, `steps` and
`close` wait for it and raise its error, if any. A kill while it is being
written leaves the previous checkpoint as the newest complete one.

Metrics: `metrics.jsonl`, one JSON object per finished iteration, written
(and fsynced) before that iteration's checkpoint. On resume from checkpoint c
the file is cut back to iterations <= c (and any torn last line dropped), so
every iteration appears exactly once.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

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


class CheckpointError(ValueError):
    """A checkpoint that cannot be resumed: corrupt, incomplete, or written by
    another game, network or training configuration. The message names the
    checkpoint folder and what is wrong."""


class DamagedCheckpointError(CheckpointError):
    """A checkpoint whose files are unreadable, incomplete or fail their
    checksum (e.g. a file truncated by a full disk or a copy cut short)."""


def _digest(leaves: Dict[str, np.ndarray]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of `leaves` (sorted by
    name): what a complete checkpoint must reproduce when read back."""
    digest = hashlib.sha256()
    for name in sorted(leaves):
        array = np.ascontiguousarray(leaves[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.reshape(-1).view(np.uint8).data)  # its bytes, uncopied
    return digest.hexdigest()


def _shapes(tree) -> Dict[str, List]:
    return {jax.tree_util.keystr(path): [list(np.shape(x)), str(np.dtype(x.dtype))]
            for path, x in jax.tree_util.tree_leaves_with_path(tree)}


def _describe_differences(saved: Dict[str, Any], wanted: Dict[str, Any], limit: int = 4) -> str:
    lines = []
    for name in sorted(set(saved) | set(wanted)):
        if saved.get(name) != wanted.get(name):
            lines.append(f"{name}: checkpoint {saved.get(name, 'absent')}, "
                         f"this run {wanted.get(name, 'absent')}")
    more = f" (and {len(lines) - limit} more)" if len(lines) > limit else ""
    return "; ".join(lines[:limit]) + more


class Checkpointer:
    """Orbax checkpoints of a run, under `<run_dir>/checkpoints`.

    identity: what every checkpoint of this run must match to be restored
      (the game and the network architecture, see `loop.checkpoint_identity`);
      stored in each checkpoint's meta and compared before any array is read.
    Each checkpoint also stores the sha256 of its arrays, so a truncated or
    damaged file is detected on restore (`DamagedCheckpointError`) rather
    than restored as wrong numbers; `restore_latest` then falls back to the
    previous checkpoint (keep >= 2 for there to be one).

    background: `save` leaves the writing to a background thread (see the
    module docstring); False: `save` returns when the checkpoint is complete
    on disk. Only for single-process runs: with several processes orbax's
    writes are collective, and stay on the calling thread.
    """

    def __init__(self, directory: str, keep: int = 3, identity: Optional[Dict[str, Any]] = None,
                 background: bool = False):
        if background and jax.process_count() > 1:
            raise ValueError(f"background=True: {jax.process_count()} processes write a "
                             f"checkpoint together; write it on the calling thread "
                             f"(background=False)")
        self.directory = os.path.abspath(directory)
        self.identity = None if identity is None else json.loads(json.dumps(identity))
        options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                               enable_async_checkpointing=False)
        self.manager = ocp.CheckpointManager(self.directory, options=options)
        self._writer = (concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="checkpoint") if background else None)
        self._in_flight: Optional[concurrent.futures.Future] = None

    def wait(self) -> None:
        """Returns when no checkpoint is being written; raises the error of
        the one that was, if it failed (that checkpoint is not on disk)."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            in_flight.result()

    def latest(self) -> Optional[int]:
        """The last checkpoint's iteration (complete on disk as orbax sees it;
        its contents are verified on restore), or None."""
        self.wait()
        self.manager.reload()
        return self.manager.latest_step()

    def steps(self) -> List[int]:
        """Iterations of the checkpoints on disk, oldest first."""
        self.wait()
        self.manager.reload()
        return sorted(int(step) for step in self.manager.all_steps())

    def save(self, iteration: int, variables, state, meta: Dict[str, Any]) -> None:
        """Writes checkpoint `iteration`: returns when it is complete on disk,
        or, with `background`, as soon as every array is copied to host memory
        (the caller may then donate or overwrite its arrays)."""
        self.wait()
        state = pack_keys(state)
        # In the background the write outlives this call: it needs its own
        # copy. In turn the arrays are only read before `save` returns.
        to_host = ((lambda x: np.array(x, copy=True)) if self._writer is not None
                   else np.asarray)
        # Zero-size leaves (e.g. the lean placeholders of search embeddings)
        # are not stored: orbax refuses them, and they hold nothing.
        leaves = {f"leaf_{i:05d}": to_host(x)
                  for i, x in enumerate(jax.tree.leaves(state)) if np.size(x) > 0}
        variables = jax.tree.map(to_host, variables)
        meta = dict(meta, iteration=int(iteration), state_paths=_key_paths(state),
                    state_shapes=_shapes(state), variables_shapes=_shapes(variables))
        if self.identity is not None:
            meta["identity"] = self.identity
        if self._writer is None:
            self._write(int(iteration), variables, leaves, meta)
        else:
            self._in_flight = self._writer.submit(self._write, int(iteration), variables,
                                                  leaves, meta)

    def _write(self, iteration: int, variables, leaves: Dict[str, np.ndarray],
               meta: Dict[str, Any]) -> None:
        """The checksums and the files of one checkpoint (host arrays only)."""
        meta = dict(meta, state_sha256=_digest(leaves), variables_sha256=_digest(_flat(variables)))
        self.manager.save(iteration, args=ocp.args.Composite(
            variables=ocp.args.StandardSave(variables),
            state=ocp.args.StandardSave(leaves),
            meta=ocp.args.JsonSave(meta)), force=True)
        self.manager.wait_until_finished()

    def _where(self, iteration: int) -> str:
        return f"checkpoint {iteration} in {self.directory}"

    def _unreadable(self, iteration: int, what: str, error: Optional[Exception] = None):
        """The DamagedCheckpointError for `what` of checkpoint `iteration`:
        unreadable (orbax's `error`) or, with no error, failing its checksum."""
        if error is None:
            return DamagedCheckpointError(f"{self._where(iteration)}: {what}: checksum mismatch "
                                          f"(a damaged or truncated file)")
        return DamagedCheckpointError(f"{self._where(iteration)}: {what}: unreadable (damaged or "
                                      f"incomplete): {type(error).__name__}: {error}")

    def read_meta(self, iteration: int) -> Dict[str, Any]:
        """The meta of checkpoint `iteration`; CheckpointError when it cannot
        be read or was written by another game or network than `identity`."""
        self.wait()
        try:
            meta = self.manager.restore(int(iteration), args=ocp.args.Composite(
                meta=ocp.args.JsonRestore())).meta
        except Exception as error:  # orbax raises many kinds for a damaged folder
            raise DamagedCheckpointError(
                f"{self._where(iteration)} is unreadable (damaged or incomplete): "
                f"{type(error).__name__}: {error}") from error
        if not isinstance(meta, dict) or "variables_sha256" not in meta:
            raise DamagedCheckpointError(
                f"{self._where(iteration)} has no valid meta item (damaged, or written by an "
                f"older version of mcts_jax)")
        saved = meta.get("identity")
        if self.identity is not None and saved is not None and saved != self.identity:
            if saved.get("game") != self.identity.get("game"):
                raise CheckpointError(
                    f"{self._where(iteration)} was written by a run of game "
                    f"{saved.get('game')!r}; this run trains {self.identity.get('game')!r}. "
                    f"Use another --run-dir (or --overwrite to start again)")
            differences = _describe_differences(saved.get("network", {}),
                                                self.identity.get("network", {}))
            raise CheckpointError(
                f"{self._where(iteration)} holds another network: {differences}. Use the run's "
                f"own network settings, or another --run-dir")
        return meta

    def _check_variables_shapes(self, iteration: int, meta, variables_like) -> None:
        wanted = _shapes(variables_like)
        if meta["variables_shapes"] != wanted:
            raise CheckpointError(
                f"{self._where(iteration)} holds a network of other shapes than "
                f"`variables_like`: {_describe_differences(meta['variables_shapes'], wanted)}")

    def _restore_variables(self, iteration: int, meta, variables_like):
        try:
            restored = self.manager.restore(int(iteration), args=ocp.args.Composite(
                variables=ocp.args.StandardRestore(
                    jax.tree.map(_abstract, variables_like))))
        except Exception as error:
            raise self._unreadable(iteration, "the network variables", error) from error
        variables = jax.tree.map(np.asarray, restored.variables)
        if _digest(_flat(variables)) != meta["variables_sha256"]:
            raise self._unreadable(iteration, "the network variables")
        return jax.tree.map(jnp.asarray, variables)

    def restore(self, iteration: int, variables_like, state_like) -> Tuple[Any, Any, Dict]:
        """(variables, state, meta) of checkpoint `iteration`, in the structures
        of `variables_like` and `state_like` (typed keys are re-wrapped).
        Raises CheckpointError naming what is wrong when the checkpoint is
        damaged or does not fit this run."""
        meta = self.read_meta(iteration)
        packed_like = pack_keys(state_like)
        if meta["state_paths"] != _key_paths(packed_like) or \
                meta["state_shapes"] != _shapes(packed_like):
            raise CheckpointError(
                f"{self._where(iteration)} holds a different training state (another "
                f"configuration or version): "
                f"{_describe_differences(meta['state_shapes'], _shapes(packed_like))}")
        self._check_variables_shapes(iteration, meta, variables_like)
        variables = self._restore_variables(iteration, meta, variables_like)
        like_leaves = jax.tree.leaves(packed_like)
        abstract = {f"leaf_{i:05d}": _abstract(x)
                    for i, x in enumerate(like_leaves) if np.size(x) > 0}
        try:
            restored = self.manager.restore(int(iteration), args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract)))
        except Exception as error:
            raise self._unreadable(iteration, "the training state", error) from error
        stored = {name: np.asarray(x) for name, x in restored.state.items()}
        if _digest(stored) != meta["state_sha256"]:
            raise self._unreadable(iteration, "the training state")
        leaves = [stored[f"leaf_{i:05d}"] if np.size(like) > 0
                  else np.zeros(np.shape(like), like.dtype)
                  for i, like in enumerate(like_leaves)]
        state_leaves = jax.tree.leaves(state_like)
        leaves = [jax.random.wrap_key_data(x, impl=jax.random.key_impl(like))
                  if jnp.issubdtype(like.dtype, jax.dtypes.prng_key) else jnp.asarray(x)
                  for x, like in zip(leaves, state_leaves)]
        state = jax.tree.unflatten(jax.tree.structure(state_like), leaves)
        return variables, state, meta

    def restore_latest(self, variables_like, state_like,
                       log: Callable[[str], None] = print) -> Tuple[int, Any, Any, Dict]:
        """(iteration, variables, state, meta) of the newest checkpoint that is
        complete and intact, newest first; a damaged one is reported through
        `log` and the one before it is used. With no checkpoint at all:
        (0, variables_like, state_like, {}). A checkpoint of another game or
        network raises at once (falling back would silently train something
        else); so does a folder whose checkpoints are all damaged."""
        steps = self.steps()
        failures = []
        for iteration in reversed(steps):
            try:
                variables, state, meta = self.restore(iteration, variables_like, state_like)
            except DamagedCheckpointError as error:
                failures.append(str(error))
                log(f"warning: {error}; falling back to the checkpoint before it")
                continue
            return iteration, variables, state, meta
        if failures:
            raise DamagedCheckpointError(
                f"no intact checkpoint in {self.directory} (all {len(steps)} are damaged; move "
                f"the folder away to start again): " + " | ".join(failures))
        return 0, variables_like, state_like, {}

    def restore_variables(self, variables_like, iteration: Optional[int] = None):
        """(variables, iteration): only the network variables, of checkpoint
        `iteration` or (None) of the newest intact one (a damaged newest one
        is skipped with a warning)."""
        steps = [iteration] if iteration is not None else list(reversed(self.steps()))
        if not steps:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        for position, step in enumerate(steps):
            try:
                meta = self.read_meta(step)
                self._check_variables_shapes(step, meta, variables_like)
                return self._restore_variables(step, meta, variables_like), int(step)
            except DamagedCheckpointError as error:
                if position == len(steps) - 1:
                    raise
                warnings.warn(f"{error}; using the checkpoint before it", stacklevel=2)
        raise AssertionError("unreachable")

    def close(self):
        """Waits for the checkpoint being written (raising its error, if it
        failed), then releases orbax's manager."""
        try:
            self.wait()
        finally:
            if self._writer is not None:
                self._writer.shutdown(wait=True)
            self.manager.close()


def _abstract(x) -> jax.ShapeDtypeStruct:
    """What orbax restores a leaf as (numpy scalars included)."""
    return jax.ShapeDtypeStruct(np.shape(x), x.dtype)


def _flat(tree) -> Dict[str, np.ndarray]:
    return {jax.tree_util.keystr(path): np.asarray(x)
            for path, x in jax.tree_util.tree_leaves_with_path(tree)}


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
            path, jax.tree.map(_abstract, variables_like))
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
