#!/usr/bin/env bash
# The search benchmarks of a GPU lease in one command (benchmarks/gpu_search.py):
# the lease's wheels and machine (devtools/gpu_lease.sh), every part inside
# BUDGET_S seconds, the report, and $OUT/gpu_search_results.tar.gz when $OUT is set.
#
#   bash benchmarks/gpu_search.sh 400                  # on the device machine
#   bash benchmarks/gpu_search.sh 120 --tiny           # the same on a CPU
#   MCTS_JAX_COMMIT=<sha> bash benchmarks/gpu_search.sh 400   # names the tree sent
#
# Extra arguments go to `python -m benchmarks.gpu_search` (e.g. --parts ...);
# RESULTS_DIR (default benchmarks/results) is where its files go.
set -uo pipefail
cd "$(dirname "$0")/.."
source devtools/gpu_lease.sh
BUDGET_S=${1:-400}
shift || true
lease_wheels && lease_machine || exit 1
RESULTS_DIR=${RESULTS_DIR:-benchmarks/results}
mkdir -p "$RESULTS_DIR"
python3 -m benchmarks.gpu_search --budget-s "$BUDGET_S" --results-dir "$RESULTS_DIR" "$@" \
  2>&1 | tee "$RESULTS_DIR/gpu_search.log"
status=${PIPESTATUS[0]}
lease_pack gpu_search_results.tar.gz "$RESULTS_DIR" 'gpu_search*' 'plots/gpu_search*'
exit "$status"
