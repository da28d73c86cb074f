# What a script run on a lent GPU machine does around its measurement; the
# GPU scripts of benchmarks/ source this file from the repository root:
#
#   lease_wheels     installs the wheels of $WHEELS_DIR (default .whl, filled
#                    here by devtools/gpu_wheels.sh; "none": skip) into
#                    /tmp/site and puts it on PYTHONPATH before the repository
#                    root; returns 1 if pip fails
#   lease_machine    prints the GPUs, python's and the packages' versions and
#                    jax.devices(); sets LEASE_DEVICE (its name) and
#                    LEASE_DEVICE_TAG (`harness.device_slug`: "cpu", e.g.
#                    "nvidia-h100-80gb-hbm3")
#   lease_pack TARBALL DIR PATTERN...
#                    packs DIR's files matching the patterns into $OUT/TARBALL
#                    when $OUT is set (what the lease brings back)

lease_wheels() {
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
  local wheels=${WHEELS_DIR:-.whl}
  compgen -G "$wheels/*.whl" > /dev/null || return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$wheels"/*.whl || return 1
  export PYTHONPATH=/tmp/site:$PWD
  echo "wheels of $wheels/ installed in /tmp/site"
}

lease_machine() {
  (nvidia-smi -L 2>/dev/null || echo "nvidia-smi: none") | head -4
  local tags
  tags=$(mktemp)
  "${PYTHON:-python3}" - "$tags" <<'PY' || return 1
import sys
from importlib import metadata

import jax

from benchmarks import harness


def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"


names = ("jax", "jaxlib", "flax", "optax", "chex", "pgx", "mctx", "orbax-checkpoint",
         "bitbully", "bitbully-databases", "numpy")
print("python", sys.version.split()[0], "|", ", ".join(f"{n} {version(n)}" for n in names))
print("devices", jax.devices())
info = harness.machine_info()
print(f"device: {info['device']} (file tag {harness.device_slug(info)})")
with open(sys.argv[1], "w") as f:
    f.write(f"{harness.device_slug(info)}\n{info['device']}\n")
PY
  { read -r LEASE_DEVICE_TAG; read -r LEASE_DEVICE; } < "$tags"
  rm -f "$tags"
}

lease_pack() {
  [ -n "${OUT:-}" ] || return 0
  local tarball=$1 dir=$2 out
  shift 2
  mkdir -p "$OUT"
  out=$(cd "$OUT" && pwd)
  # the patterns are matched inside DIR, hence unquoted
  (cd "$dir" && tar -czf "$out/$tarball" $@)
}
