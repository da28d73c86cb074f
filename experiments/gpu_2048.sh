#!/usr/bin/env bash
# 2048 on an accelerator (issue 34): train.py runs of the given algorithms
# with GPU-sized batches (1,024 games in flight, minibatches of 1,024, 64
# updates an iteration, a checkpoint every 10 iterations), each SECONDS of
# training, one after the other on the same device; each run's final mean
# is over 100 games at 64 simulations.
#
#   bash experiments/gpu_2048.sh 400 /tmp/gpu_runs stochastic_muzero alphazero
#
# Then, on any machine with the run folders:
#   python -m benchmarks.training_run RUN_ROOT/ALGORITHM --name NAME-DEVICE
set -eu
SECONDS_EACH=${1:?training seconds per run}
RUN_ROOT=${2:?folder for the run folders}
shift 2
[ $# -gt 0 ] || { echo "name at least one --algorithm (stochastic_muzero, alphazero, ...)" >&2; exit 2; }
mkdir -p "$RUN_ROOT"
for ALGORITHM in "$@"; do
  echo "== $ALGORITHM $(date +%T)"
  python train.py --game 2048 --algorithm "$ALGORITHM" --num-games 1024 \
    --train-batch-size 1024 --updates-per-iteration 64 --replay-size 524288 \
    --min-replay 16384 --iterations 4000 --warmup-fraction 0.002 \
    --end-learning-rate-fraction 1.0 --eval-every 25 --eval-games 64 \
    --final-games 100 --checkpoint-every 10 --max-training-s "$SECONDS_EACH" \
    --no-progress --seed 0 --run-dir "$RUN_ROOT/$ALGORITHM"
done
