#!/usr/bin/env bash
# The search benchmarks of a GPU lease in one command (benchmarks/gpu_search.py):
# installs the wheels carried in .whl/ (the device machine has jax, flax,
# optax, chex but not pgx, mctx, orbax-checkpoint, ...), prints the device and
# the versions, runs every part inside BUDGET_S seconds, rebuilds the report,
# and packs the results into $OUT/gpu_search_results.tar.gz when $OUT is set.
#
#   bash benchmarks/gpu_search.sh 400                  # on the device machine
#   bash benchmarks/gpu_search.sh 120 --tiny           # the same on a CPU
#   MCTS_JAX_COMMIT=<sha> bash benchmarks/gpu_search.sh 400   # names the tree sent
#
# Extra arguments go to `python -m benchmarks.gpu_search` (e.g. --parts ...).
set -uo pipefail
cd "$(dirname "$0")/.."
BUDGET_S=${1:-400}
shift || true
WHEELS_DIR=${WHEELS_DIR:-.whl}  # a machine that has the packages: WHEELS_DIR=none
if [ -d "$WHEELS_DIR" ] && ls "$WHEELS_DIR"/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$WHEELS_DIR"/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
(nvidia-smi -L 2>/dev/null || echo "nvidia-smi: none") | head -4
python3 - <<'PY' || exit 1
import sys
from importlib import metadata
import jax
names = ("jax", "jaxlib", "flax", "optax", "chex", "pgx", "mctx", "orbax-checkpoint", "numpy")
def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "missing"
print("python", sys.version.split()[0], "|", ", ".join(f"{n} {version(n)}" for n in names))
print("devices", jax.devices())
PY
RESULTS_DIR=${RESULTS_DIR:-benchmarks/results}
mkdir -p "$RESULTS_DIR"
python3 -m benchmarks.gpu_search --budget-s "$BUDGET_S" --results-dir "$RESULTS_DIR" "$@" \
  2>&1 | tee "$RESULTS_DIR/gpu_search.log"
status=${PIPESTATUS[0]}
if [ -n "${OUT:-}" ]; then
  (cd "$RESULTS_DIR" && tar czf "$OUT/gpu_search_results.tar.gz" gpu_search* plots/gpu_search*)
fi
exit "$status"
