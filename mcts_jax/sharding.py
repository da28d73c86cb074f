"""Many searches over many devices and hosts: one 1-D "data" mesh, JAX's SPMD.

A batch of B independent searches is split along its first axis over the D
devices of a `jax.sharding.Mesh` with a single axis named "data" (B / D rows
per device); parameters and PRNG keys are replicated. The search is the
ordinary compiled policy under `jax.jit`; XLA partitions it (GSPMD), so there
is no scheduler and no host round trip inside a search or a self-play move. For example::

    mesh = mcts_jax.sharding.make_mesh()                    # every device
    out = mcts_jax.sharding.search(mesh, mcts_jax.GumbelPolicy(), params, key, root,
                                   recurrent_fn, 64, invalid_actions=invalid)
    out.action.sharding                                      # split over "data"

Determinism: every random number of a search is drawn inside the compiled
program from the replicated key, in the global [B, ...] shape, and JAX's
partitionable threefry (`jax_threefry_partitionable`, on by default) gives
each element the same bits however the array is split. So the same key gives
the same search, bit for bit, on 1 device or on D (tested for the three
policies, subtree reuse and the compact layout). Training is equal within
float tolerance: gradients and batch statistics are sums over the minibatch,
which XLA adds up in another order across devices.

Several processes (hosts): call `initialize` first, before any other JAX
call, in every process; then `make_mesh()` spans every device of every
process and the same program runs in each (SPMD). Host-side inputs (numpy
arrays, or arrays on one local device) given to `put`, `shard_batch`,
`replicate` and `search` are taken as the *global* value, which every process
must pass identically (e.g. built from the same seed); each process copies
out the rows its own devices hold. See docs/multi_device.md.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from mcts_jax import validation
from mcts_jax.hashable import HashableFunction

DATA_AXIS = "data"

# Environment variables read by `initialize` (flags take precedence). JAX
# itself also reads JAX_COORDINATOR_ADDRESS and JAX_LOCAL_DEVICE_IDS.
ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"
ENV_LOCAL_DEVICES = "JAX_LOCAL_DEVICE_IDS"
ENV_AUTO = "MCTS_JAX_DISTRIBUTED"


# ---- several processes ---------------------------------------------------------------

def _env_int(name: str) -> Optional[int]:
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got {text!r}") from None


def initialize(coordinator_address: Optional[str] = None, num_processes: Optional[int] = None,
               process_id: Optional[int] = None,
               local_device_ids: Optional[Sequence[int]] = None, *,
               auto: bool = False) -> bool:
    """Joins this process to a multi-process JAX job (`jax.distributed.initialize`).

    Call it in every process, before any other JAX call. Each argument left
    None is read from the environment: JAX_COORDINATOR_ADDRESS ("host:port"
    of process 0), JAX_NUM_PROCESSES, JAX_PROCESS_ID, JAX_LOCAL_DEVICE_IDS
    ("0,1"). With none of them set, nothing happens (a single-process run)
    unless `auto` (or MCTS_JAX_DISTRIBUTED=1), which lets JAX detect the
    cluster itself: a Cloud TPU VM pod slice, SLURM, Open MPI or Kubernetes.

    Returns True when this process is part of a multi-process job (also when
    it already was). Raises ValueError naming what is missing when only some
    of coordinator / number of processes / process id are given.
    """
    if jax.distributed.is_initialized():
        return True
    coordinator_address = coordinator_address or os.environ.get(ENV_COORDINATOR) or None
    num_processes = num_processes if num_processes is not None else _env_int(ENV_NUM_PROCESSES)
    process_id = process_id if process_id is not None else _env_int(ENV_PROCESS_ID)
    if local_device_ids is None and os.environ.get(ENV_LOCAL_DEVICES, "").strip():
        local_device_ids = [int(i) for i in os.environ[ENV_LOCAL_DEVICES].split(",")]
    auto = auto or os.environ.get(ENV_AUTO, "").strip().lower() in ("1", "true", "yes", "auto")
    given = dict(coordinator_address=coordinator_address, num_processes=num_processes,
                 process_id=process_id)
    if not auto and all(v is None for v in given.values()):
        return False
    if not auto:
        missing = [name for name, v in given.items() if v is None]
        if missing:
            raise ValueError(
                f"multi-process launch needs coordinator_address, num_processes and process_id "
                f"(flags --coordinator-address / --num-processes / --process-id or "
                f"{ENV_COORDINATOR} / {ENV_NUM_PROCESSES} / {ENV_PROCESS_ID}); missing: "
                f"{', '.join(missing)}. On a Cloud TPU pod slice use auto detection instead "
                f"(--distributed or {ENV_AUTO}=1)")
        if num_processes < 1 or not 0 <= process_id < num_processes:
            raise ValueError(f"process_id must be in [0, num_processes) = [0, {num_processes}), "
                             f"got {process_id}")
    jax.distributed.initialize(coordinator_address=coordinator_address,
                               num_processes=num_processes, process_id=process_id,
                               local_device_ids=local_device_ids)
    return True


def is_primary() -> bool:
    """True in process 0, the one that writes logs and files in a multi-process job."""
    return jax.process_index() == 0


# ---- the mesh ----------------------------------------------------------------------

def make_mesh(devices: Union[None, int, Sequence[jax.Device]] = None) -> Mesh:
    """A 1-D mesh with axis "data".

    Args:
      devices: None or 0: every device of every process (`jax.devices()`);
        an int D: D devices, the first D / P local devices of each of the P
        processes (D must be a multiple of P); or a sequence of devices.

    Raises:
      ValueError: naming `devices` when there are not that many.
    """
    if devices is None or (isinstance(devices, (int, np.integer)) and not isinstance(
            devices, bool) and int(devices) == 0):
        chosen = list(jax.devices())
    elif isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        count, processes = int(devices), jax.process_count()
        if count < 0:
            raise ValueError(f"devices must be >= 0 (0: every device), got {count}")
        if count > jax.device_count():
            raise ValueError(f"devices={count}, but only {jax.device_count()} "
                             f"{jax.default_backend()} device(s) are available over "
                             f"{processes} process(es): {jax.devices()}")
        if count % processes:
            raise ValueError(f"devices={count} must be a multiple of the {processes} processes "
                             f"(each process contributes the same number of its devices)")
        per_process = count // processes
        chosen = [d for p in range(processes)
                  for d in sorted((d for d in jax.devices() if d.process_index == p),
                                  key=lambda d: d.id)[:per_process]]
    else:
        chosen = list(devices)
        if not chosen or not all(isinstance(d, jax.Device) for d in chosen):
            raise TypeError(f"devices must be None, an int or a non-empty sequence of "
                            f"jax.Device, got {devices!r}")
    if len(chosen) == jax.device_count():
        # Let JAX order every device for the interconnect (TPU rings).
        return jax.make_mesh((len(chosen),), (DATA_AXIS,),
                             axis_types=(jax.sharding.AxisType.Auto,), devices=chosen)
    return Mesh(np.array(chosen, dtype=object), (DATA_AXIS,))


def num_devices(mesh: Mesh) -> int:
    """D, the size of the mesh's "data" axis."""
    return int(mesh.shape[DATA_AXIS])


def describe(mesh: Mesh) -> str:
    """e.g. '8 cpu devices on 1 process (data axis: 8)'."""
    devices = mesh.devices.reshape(-1)
    processes = len({d.process_index for d in devices})
    return (f"{devices.size} {devices[0].platform} device{'s' * (devices.size != 1)} on "
            f"{processes} process{'es' * (processes != 1)} (mesh axis '{DATA_AXIS}': "
            f"{num_devices(mesh)})")


def data_sharding(mesh: Mesh, axis: int = 0) -> NamedSharding:
    """Arrays split along `axis` over the "data" axis (other axes whole)."""
    return NamedSharding(mesh, PartitionSpec(*([None] * axis), DATA_AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    """A full copy of the array on every device of the mesh."""
    return NamedSharding(mesh, PartitionSpec())


def batch_shardings(tree: Any, mesh: Mesh, axis: int = 0) -> Any:
    """Per-leaf shardings of a pytree whose leaves share a batch axis `axis`.

    Leaves are split along `axis`; leaves with fewer than axis + 1
    dimensions (counters, cursors) are replicated. Leaves may be arrays or
    `jax.ShapeDtypeStruct` values.
    """
    split, whole = data_sharding(mesh, axis), replicated(mesh)
    return jax.tree.map(lambda x: split if np.ndim(x) > axis else whole, tree)


def check_divisible(name: str, size: int, mesh_or_devices: Union[Mesh, int],
                    hint: str = "") -> None:
    """Raises ValueError when a batch of `size` cannot be split evenly over the
    mesh's devices, naming the argument, the size and the device count."""
    count = (num_devices(mesh_or_devices) if isinstance(mesh_or_devices, Mesh)
             else int(mesh_or_devices))
    if size % count:
        lower, upper = size - size % count, size + count - size % count
        suggestion = f"{lower} or {upper}" if lower else f"{upper}"
        raise ValueError(
            f"{name} = {size} is not divisible by the {count} devices of the '{DATA_AXIS}' "
            f"mesh axis: each device takes an equal share of the batch. Use a multiple of "
            f"{count} (e.g. {suggestion}){hint}")


# ---- placing arrays ----------------------------------------------------------------

def _is_key(x) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _place(x, sharding: NamedSharding):
    if x is None:
        return None
    if _is_key(x):
        placed = _place(jax.random.key_data(x), sharding)
        return jax.random.wrap_key_data(placed, impl=jax.random.key_impl(x))
    if isinstance(x, jax.Array) and x.committed and x.sharding == sharding:
        return x  # (an equivalent but different sharding is put anyway: the compiled
                  # steps see one sharding type, so a second call does not recompile)
    if jax.process_count() == 1:
        return jax.device_put(x, sharding)
    if isinstance(x, jax.Array) and not x.is_fully_addressable:  # a global array: reshard
        return jax.jit(lambda a: a, out_shardings=sharding)(x)
    host = np.asarray(x)  # the global value, the same in every process
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def put(tree: Any, shardings: Any) -> Any:
    """Places every leaf of `tree` with its sharding (`shardings`: one
    NamedSharding for all leaves, or a matching tree of them). Leaves already
    placed so are returned as they are; typed PRNG keys are supported; with
    several processes host values are the global arrays (see the module
    docstring)."""
    if isinstance(shardings, NamedSharding):
        return jax.tree.map(lambda x: _place(x, shardings), tree)
    return jax.tree.map(_place, tree, shardings)


def replicate(tree: Any, mesh: Mesh) -> Any:
    """A full copy of every leaf on every device of `mesh` (network parameters, keys)."""
    return put(tree, replicated(mesh))


def shard_batch(tree: Any, mesh: Mesh, axis: int = 0, name: str = "batch") -> Any:
    """Splits every leaf of `tree` along `axis` over the mesh (leaves with
    fewer dimensions are replicated). Raises ValueError naming `name` and the
    leaf when the batch size is not a multiple of the device count."""
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        if np.ndim(leaf) > axis:
            check_divisible(f"{name}{jax.tree_util.keystr(path)} (axis {axis})",
                            np.shape(leaf)[axis], mesh)
    return put(tree, batch_shardings(tree, mesh, axis))


def constrain(tree: Any, shardings: Any, mesh: Optional[Mesh]) -> Any:
    """Inside `jit`: `with_sharding_constraint` of `tree` to `shardings`
    (as in `put`); the identity when `mesh` is None (no mesh: one device)."""
    if mesh is None or tree is None:
        return tree
    if isinstance(shardings, NamedSharding):
        shardings = jax.tree.map(lambda _: shardings, tree)
    return jax.lax.with_sharding_constraint(tree, shardings)


def constrain_batch(tree: Any, mesh: Optional[Mesh], axis: int = 0) -> Any:
    """Inside `jit`: keep `tree` split along `axis` (see `batch_shardings`)."""
    if mesh is None:
        return tree
    return constrain(tree, batch_shardings(tree, mesh, axis), mesh)


def constrain_replicated(tree: Any, mesh: Optional[Mesh]) -> Any:
    """Inside `jit`: keep `tree` replicated on every device of `mesh`."""
    if mesh is None:
        return tree
    return constrain(tree, replicated(mesh), mesh)


# ---- getting arrays back -------------------------------------------------------------

def local_copy(tree: Any) -> Any:
    """A copy of each replicated leaf on this process's first device (for
    work that needs no mesh: evaluation matches, snapshots, the Agent).
    Raises ValueError for a leaf that is split over devices."""
    device = jax.local_devices()[0]

    def one(x):
        if not isinstance(x, jax.Array) or len(x.sharding.device_set) == 1:
            return x
        if not x.sharding.is_fully_replicated:
            raise ValueError(f"local_copy needs replicated arrays; got one of shape {x.shape} "
                             f"split as {x.sharding}")
        shards = {s.device: s.data for s in x.addressable_shards}
        return jax.device_put(shards.get(device, x.addressable_shards[0].data), device)

    return jax.tree.map(one, tree)


def to_host(tree: Any) -> Any:
    """Every leaf as a numpy array of its global value, in every process
    (arrays split over several processes are gathered with
    `multihost_utils.process_allgather`; a collective: call it in every
    process). Typed PRNG keys stay keys (their data gathered, then wrapped
    again on this process's first device)."""
    from jax.experimental import multihost_utils

    def one(x):
        if x is None:
            return None
        if _is_key(x):
            data = jax.device_put(one(jax.random.key_data(x)), jax.local_devices()[0])
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            return np.asarray(multihost_utils.process_allgather(x, tiled=True))
        return np.asarray(x)

    return jax.tree.map(one, tree)


# ---- sharded searches ------------------------------------------------------------------

def as_policy(policy: Any, options: dict) -> Callable:
    """The policy a sharded search runs: a policy value (`mcts_jax.Policy`,
    with `options` applied by `replace`), or a policy function with the
    policies' signature, called with `options` as keyword arguments."""
    if isinstance(policy, str):
        raise TypeError(f"policy must be a policy value such as mcts_jax.GumbelPolicy() or "
                        f"mcts_jax.rule_policy(my_rule), got the name {policy!r} (names are "
                        f"resolved at the command line: training.policies.policy_from_name)")
    if not callable(policy):
        raise TypeError(f"policy must be a policy value (mcts_jax.Policy) or a policy "
                        f"function, got {type(policy).__name__}")
    if hasattr(policy, "replace") and hasattr(policy, "options"):
        return policy.replace(**options) if options else policy
    return functools.partial(policy, **options) if options else policy


SEARCH_MODES = ("exact", "local")


def device_key(rng_key: jax.Array) -> jax.Array:
    """Inside `shard_map` over "data": the key of this device's rows in the
    "local" search mode, `fold_in(rng_key, position on the data axis)`."""
    return jax.random.fold_in(rng_key, jax.lax.axis_index(DATA_AXIS))


def run_policy(policy: Callable, mesh: Optional[Mesh], mode: str, params, rng_key, root,
               recurrent_fn: Callable, num_simulations: int, invalid_actions=None, tree=None,
               **options):
    """Inside `jit`: `policy(...)` on a batch split over `mesh` (None: one device).

    mode "exact": the policy on the global batch, partitioned by XLA; equal
      bit for bit to the one-device search (random numbers drawn in the
      global shapes), at the price of small per-simulation collectives
      (per-row index vectors) between devices.
    mode "local": `shard_map`: each device searches its own B / D rows with
      `device_key(rng_key)`, with no communication at all; the same
      algorithm, with other random numbers than the one-device search (equal
      to it on D = 1, and row block d equals the one-device search of those
      rows with key fold_in(rng_key, d)).
    """
    if mode not in SEARCH_MODES:
        raise ValueError(f"mode must be one of {SEARCH_MODES}, got {mode!r}")
    if mesh is None or mode == "exact" or num_devices(mesh) == 1:
        out = policy(params, rng_key, root, recurrent_fn, num_simulations,
                     invalid_actions=invalid_actions, tree=tree, **options)
        return constrain_batch(out, mesh)

    def per_device(params, rng_key, root, invalid_actions, tree):
        return policy(params, device_key(rng_key), root, recurrent_fn, num_simulations,
                      invalid_actions=invalid_actions, tree=tree, **options)

    rows, whole = PartitionSpec(DATA_AXIS), PartitionSpec()
    return jax.shard_map(per_device, mesh=mesh, in_specs=(whole, whole, rows, rows, rows),
                         out_specs=rows, check_vma=False)(
        params, rng_key, root, invalid_actions, tree)


@functools.partial(jax.jit, static_argnames=("mesh", "mode", "policy", "recurrent_fn",
                                             "num_simulations"))
def _sharded_search(params, rng_key, root, invalid_actions, tree, *, mesh, mode, policy,
                    recurrent_fn, num_simulations):
    return run_policy(policy.fn, mesh, mode, params, rng_key, root, recurrent_fn,
                      num_simulations, invalid_actions, tree)


def search(mesh: Mesh, policy: Union[str, Callable], params: Any, rng_key: jax.Array,
           root: Any, recurrent_fn: Callable, num_simulations: int, *,
           invalid_actions: Optional[jax.Array] = None, tree: Optional[Any] = None,
           checks: str = "host", mode: str = "exact", **options) -> Any:
    """One batched search of B roots split over the mesh's D devices.

    Compiled once per shapes, mesh, policy, recurrent_fn object and options.

    Args:
      policy: a policy value (`mcts_jax.GumbelPolicy()`,
        `mcts_jax.rule_policy(my_rule)`, the user's own `mcts_jax.Policy`), or
        a policy function with the policies' signature
        (`mcts_jax.gumbel_policy`). A stochastic policy
        (`StochasticMuZeroPolicy`) takes
        `recurrent_fn = (decision_fn, chance_fn)`.
      params: replicated on every device.
      rng_key: replicated on every device.
      root: `RootFnOutput` with leaves [B, ...], split along B.
      invalid_actions: [B, A], split along B.
      tree: a `Tree` of B rows to continue (e.g. from
        `mcts_jax.get_subtree`), split along B.
      checks: "host" checks the root's values on the host first (arrays of
        this process only); "off" skips that. Shape checks always run.
      mode: "exact" (default): bit for bit the one-device search; "local":
        each device searches its rows alone, no communication (see
        `run_policy`).
      **options: the policy's settings or search options to change
        (max_nodes, max_children, dirichlet_fraction, ...), static as in the
        policy.

    Returns:
      The policy's `PolicyOutput` (action [B], action_weights [B, A],
      search_tree), every array split along B over the mesh. In mode
      "exact", equal, bit for bit, to the same search on one device with the
      same key.

    Raises:
      ValueError: naming `root.prior_logits` when B is not a multiple of D.
    """
    policy_fn = as_policy(policy, options)
    if mode not in SEARCH_MODES:
        raise ValueError(f"mode must be one of {SEARCH_MODES}, got {mode!r}")
    checks = validation.check_mode(checks)
    if checks == "checkify":
        raise ValueError("checks='checkify' is not supported by sharding.search; use 'host' or "
                         "'off' (or call the policy with checkify on one device)")
    batch_size, _ = validation.check_root(root, invalid_actions, values=False)
    check_divisible("root.prior_logits.shape[0] (the batch B of searches)", batch_size, mesh)
    if checks == "host" and all(not isinstance(x, jax.Array) or x.is_fully_addressable
                                for x in jax.tree.leaves((root, invalid_actions))):
        validation.check_root(root, invalid_actions, values=True)
    root, invalid_actions, tree = shard_batch((root, invalid_actions, tree), mesh,
                                              name="search input")
    params, rng_key = replicate((params, rng_key), mesh)
    return _sharded_search(params, rng_key, root, invalid_actions, tree, mesh=mesh,
                           mode=mode, policy=HashableFunction(policy_fn), recurrent_fn=recurrent_fn,
                           num_simulations=num_simulations)



def rowwise(fn: Callable, mesh: Optional[Mesh]) -> Callable:
    """`fn` run on each device's own rows (`jax.shard_map` over "data"): every
    argument and result is split along its first axis, and `fn` sees B / D
    rows. Only for functions whose rows are independent and that draw no
    random numbers (then the result equals `fn` on all B rows, bit for bit,
    with no communication at all): `get_subtree`, `reset_tree`,
    `select_rows`. The identity wrapper when `mesh` is None."""
    if mesh is None:
        return fn
    spec = PartitionSpec(DATA_AXIS)
    return jax.shard_map(fn, mesh=mesh, in_specs=spec, out_specs=spec)


def _subtree_rows(tree, action):
    from mcts_jax import reuse

    return reuse.get_subtree(tree, action, checks="off")


@functools.partial(jax.jit, static_argnames=("mesh",))
def _sharded_subtree(tree, action, *, mesh):
    return rowwise(_subtree_rows, mesh)(tree, action)


def get_subtree(mesh: Mesh, tree: Any, action: jax.Array) -> Any:
    """`mcts_jax.get_subtree` (subtree reuse) of a tree split over `mesh`:
    each device re-roots its own rows, nothing moves between devices, and the
    result stays split. action: [B] int, in [0, A)."""
    validation.check_is_tree("tree", tree)
    check_divisible("tree.batch_size", tree.batch_size, mesh)
    if np.shape(action) != (tree.batch_size,):
        raise ValueError(f"action must have shape [B] = ({tree.batch_size},), "
                         f"got {np.shape(action)}")
    tree, action = shard_batch((tree, action), mesh, name="get_subtree input")
    return _sharded_subtree(tree, jnp.asarray(action).astype(jnp.int32), mesh=mesh)
