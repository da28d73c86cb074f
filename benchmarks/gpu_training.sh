#!/usr/bin/env bash
# Connect Four and tic-tac-toe trained on one GPU within a short lease (issue 53).
#
#   bash benchmarks/gpu_training.sh [--tiny] [--c4-seconds S] [--ttt-seconds S] [--out DIR]
#                                   [--c4-eval-every N] [--budget-s T] [--run-root DIR]
#                                   [--no-wheels]
#
# From the repository root, one after the other:
#  1. the lease's wheels (--no-wheels or WHEELS_DIR=none: the installed
#     packages) and the machine (devtools/gpu_lease.sh);
#  2. Connect Four: train.py --preset gpu for --c4-seconds of training
#     (default 75; an evaluation every --c4-eval-every iterations, default 0:
#     none; no Elo), then its final evaluation: search at 200 simulations and
#     the raw network on the 1000 random-play positions the perfect solver
#     (bitbully) labels, 200 games each against random play, UCT and the solver;
#  3. tic-tac-toe: train.py --preset gpu for --ttt-seconds (default 55),
#     judged against perfect play every 2 iterations and at its last; the
#     seconds until an evaluation first loses no game are its `milestones`;
#     no end-of-run matches (--final-games 0: they would replay the last
#     evaluation). --budget-s T: the script ends within T seconds, tic-tac-toe's
#     seconds cut (or the run skipped) to fit what Connect Four left;
#  4. each run as a results file (python -m benchmarks.training_run):
#     <out>/<game>_<preset>_preset-<device>.json (default out:
#     benchmarks/results/); MCTS_JAX_COMMIT (MCTS_JAX_DIRTY=1: uncommitted
#     changes) names the commit of the tree sent when the machine's .git may be stale;
#  5. the summary table, printed last. With $OUT set, $OUT/gpu_training.tar.gz
#     is rewritten after each stage: the results files, each run's config.json,
#     metrics.jsonl, sessions.jsonl, final.json and plots (no checkpoints),
#     the log, the seconds of each stage and the summary.
# --tiny: the same steps on a CPU in a few minutes (the tiny presets, a few
# iterations), for tests/test_gpu_training.py.
#
# On one H100 in at most 300 s (counted, not timed: ~15 s start, Connect Four's
# S plus ~50 s compiling and ~90 s judging, tic-tac-toe's S plus ~25 s):
#   MCTS_JAX_COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_training.sh \
#       --c4-seconds 75 --ttt-seconds 55 --budget-s 290
set -euo pipefail

CALLER=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source devtools/gpu_lease.sh
PY=${PYTHON:-python3}
ARGS="$*"
TINY=0 C4_S="" TTT_S="" OUT_DIR="" C4_EVAL_EVERY=0 BUDGET=0 RUN_ROOT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tiny) TINY=1; shift ;;
    --c4-seconds) C4_S=${2:?}; shift 2 ;;
    --ttt-seconds) TTT_S=${2:?}; shift 2 ;;
    --out) OUT_DIR=${2:?}; shift 2 ;;
    --c4-eval-every) C4_EVAL_EVERY=${2:?}; shift 2 ;;
    --budget-s) BUDGET=${2:?}; shift 2 ;;
    --run-root) RUN_ROOT=${2:?}; shift 2 ;;
    --no-wheels) export WHEELS_DIR=none; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_training.sh: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$CALLER/$1" ;; esac; }
if [ "$TINY" = 1 ]; then
  PRESET=tiny C4_S=${C4_S:-600} TTT_S=${TTT_S:-600}  # its --iterations end the runs
else
  PRESET=gpu C4_S=${C4_S:-75} TTT_S=${TTT_S:-55}
fi
OUT_DIR=$(absolute "${OUT_DIR:-$PWD/benchmarks/results}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_training.XXXXXX")
RUN_ROOT=$(absolute "${RUN_ROOT:-$WORK/runs}")
PACKED=$WORK/gpu_training  # what the tarball holds
RESULT_FILES=()
FAILED=""
mkdir -p "$OUT_DIR" "$RUN_ROOT" "$PACKED/runs" "$PACKED/results"
exec > >(tee -a "$PACKED/log.txt") 2>&1

START=$(date +%s)
STAGE_START=$START
now() { echo $(( $(date +%s) - START )); }
stage_done() {  # name: seconds since the previous stage ended
  local t
  t=$(date +%s)
  echo "$1 $(( t - STAGE_START ))" >> "$PACKED/stages.txt"
  echo "== $1 done in $(( t - STAGE_START )) s (total $(( t - START )) s)"
  STAGE_START=$t
}
pack() {  # the run folders' small files and the results files, then the tarball
  local run f
  for run in "$RUN_ROOT"/*/; do
    [ -d "$run" ] || continue
    mkdir -p "$PACKED/runs/$(basename "$run")"
    for f in config.json metrics.jsonl sessions.jsonl final.json plots; do
      if [ -e "$run/$f" ]; then cp -r "$run/$f" "$PACKED/runs/$(basename "$run")/"; fi
    done
  done
  for f in "${RESULT_FILES[@]}"; do cp "$f" "$PACKED/results/"; done
  lease_pack gpu_training.tar.gz "$WORK" gpu_training
}
trap 'status=$?; pack || true; exit $status' EXIT
trap 'echo "gpu_training.sh: terminated at $(now) s"; exit 143' TERM INT

echo "== gpu_training.sh $ARGS ($(date -u +%FT%TZ)); runs in $RUN_ROOT, results in $OUT_DIR"
lease_wheels || echo "warning: the wheels did not install; using the installed packages"
stage_done wheels
lease_machine
stage_done versions

C4_JUDGED="Judged at the end (final): the search at final_simulations and the raw network on final_solver_positions random-play positions labelled by the perfect solver (bitbully), final_games games each against random play, UCT and the solver, half moving first."
TTT_JUDGED="Judged by its evaluations (curve: every eval_every iterations and at its last, eval_games games against perfect play, half as each side); no end-of-run matches (--final-games 0); milestones.first_perfect_play: the first evaluation that lost no game."
C4_ARGS=(--eval-every "$C4_EVAL_EVERY")
TTT_ARGS=(--final-games 0)
if [ "$TINY" = 1 ]; then  # games long enough to finish, updates in several iterations
  C4_ARGS+=(--iterations 4 --moves-per-iteration 16)
  TTT_ARGS+=(--iterations 4 --moves-per-iteration 9 --eval-every 2)
fi
train() {  # game seconds judged train.py-options...: the run, then its results file
  local game=$1 seconds=$2 judged=$3 run=$RUN_ROOT/$1_$PRESET
  local name=${game}_${PRESET}_preset-$LEASE_DEVICE_TAG
  shift 3
  local command=($PY train.py --game "$game" --preset "$PRESET" --run-dir "$run" --no-progress
                 --seed 0 --overwrite --elo-every 0 "$@" --max-training-s "$seconds")
  echo "== $game: ${command[*]}"
  if "${command[@]}"; then
    stage_done "${game}_train"
    if $PY -m benchmarks.training_run "$run" --name "$name" --results-dir "$OUT_DIR" --note \
        "Trained on one $LEASE_DEVICE (the results file's machine) by benchmarks/gpu_training.sh $ARGS (issue 53): train.py --game $game --preset $PRESET, $seconds s of training asked (final.training_s: how many were done, compilation included), seed 0, no Elo. $judged"; then
      RESULT_FILES+=("$OUT_DIR/$name.json")
    else
      FAILED="$FAILED ${game}_results"
    fi
    stage_done "${game}_results"
  else
    FAILED="$FAILED $game"
    stage_done "${game}_failed"
  fi
  pack
}

# A run that fails does not stop the other one; the script's status says so.
train connect_four "$C4_S" "$C4_JUDGED" "${C4_ARGS[@]}"
if [ "$BUDGET" != 0 ]; then
  # what tic-tac-toe costs beyond its training seconds: start-up, the last
  # iteration past them, plots, its results file, the summary and packing
  # (about 25 s, counted, not timed)
  LEFT=$(( BUDGET - $(now) - 25 ))
  if [ "$LEFT" -lt 15 ]; then
    echo "== tic_tac_toe skipped: $(now) s used of --budget-s $BUDGET"
    TTT_S=0
  elif [ "$LEFT" -lt "${TTT_S%.*}" ]; then
    echo "== tic_tac_toe: $TTT_S s cut to $LEFT s to end within --budget-s $BUDGET"
    TTT_S=$LEFT
  fi
fi
if [ "$TTT_S" != 0 ]; then train tic_tac_toe "$TTT_S" "$TTT_JUDGED" "${TTT_ARGS[@]}"; fi

$PY -c 'import sys; from benchmarks import training_run; print(training_run.summary(*sys.argv[1:]))' \
  "$PACKED/stages.txt" "${RESULT_FILES[@]}" > "$PACKED/summary.md"
stage_done summary
pack
trap - EXIT
echo
if [ -n "${OUT:-}" ]; then echo "packed: $OUT/gpu_training.tar.gz"; fi
echo "results: ${RESULT_FILES[*]}"
if [ -n "$FAILED" ]; then echo "FAILED:$FAILED (the log above says why)"; fi
echo "== summary ($(now) s in all)"
cat "$PACKED/summary.md"
[ -z "$FAILED" ]
