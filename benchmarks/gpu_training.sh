#!/usr/bin/env bash
# Connect Four and tic-tac-toe trained on one GPU within a short lease (issue 53).
#
#   bash benchmarks/gpu_training.sh [--tiny] [--c4-seconds S] [--ttt-seconds S] [--out DIR]
#                                   [--c4-eval-every N] [--budget-s T] [--run-root DIR]
#                                   [--no-wheels]
#
# In order, from the repository root:
#  1. wheels: if .whl/ holds wheels (a device machine with its own jax, where
#     the project is not installed), they go to /tmp/site, put on PYTHONPATH
#     beside the repository root (--no-wheels or WHEELS_DIR=none: skip, use
#     what is installed, as on the CPU where the test runs);
#  2. the machine: nvidia-smi -L, python, the versions of jax, jaxlib, flax,
#     pgx, mctx, orbax-checkpoint, bitbully, and jax.devices();
#  3. Connect Four: train.py --preset gpu for --c4-seconds of training
#     (default 75; in-training evaluation every --c4-eval-every iterations,
#     default 0: none, the preset's is 100; no Elo), then its final
#     evaluation: search at 200 simulations and the raw network on the 1000
#     random-play positions judged by the perfect solver (bitbully), 200
#     games each against random play, UCT and the solver (100 moving first);
#  4. tic-tac-toe: train.py --preset gpu for --ttt-seconds (default 55),
#     evaluated against perfect play every 2 iterations and at its last (200
#     games, half as each side, 64 simulations); the seconds until an
#     evaluation first loses no game are its results file's `milestones`.
#     No end-of-run matches (--final-games 0): they would replay the last
#     evaluation's 200 games;
#  5. each run folder as a results file (python -m benchmarks.training_run):
#     <out>/<game>_<preset>_preset-<device>.json (default out:
#     benchmarks/results/), with self-play games and simulations per second
#     and updates per second in its `timing`. Set MCTS_JAX_COMMIT (the full
#     commit id of the tree sent; MCTS_JAX_DIRTY=1 if it had uncommitted
#     changes) when the machine's .git may be stale: the file names that
#     commit (harness.provenance) and its note says so;
#  6. when $OUT is set, one tarball $OUT/gpu_training.tar.gz (rewritten after
#     each stage, so a run cut short still returns what it finished): the
#     results files, each run's config.json, metrics.jsonl, sessions.jsonl,
#     final.json and plots (no checkpoints), the log, the seconds of each
#     stage and the summary table, which is printed last.
#
# --budget-s T: the whole script must end within T seconds; tic-tac-toe's
# budget is cut (or the run skipped) to fit what Connect Four left.
# --tiny: the same steps on a CPU in a couple of minutes (the tiny presets,
# a few iterations, few positions and games; both games side by side), for
# tests/test_gpu_training.py.
#
# One command of at most 300 s on one H100 (issue 53's first measurement;
# counted, not timed: ~15 s wheels and start, Connect Four's S plus ~50 s of
# it compiling and ~90 s of final evaluation, tic-tac-toe's S plus ~25 s):
#   MCTS_JAX_COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_training.sh \
#       --c4-seconds 75 --ttt-seconds 55 --budget-s 290
set -euo pipefail

CALLER=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
PY=${PYTHON:-python3}
ARGS="$*"

TINY=0
C4_S=""
TTT_S=""
OUT_DIR=""
C4_EVAL_EVERY=0
BUDGET=0
RUN_ROOT=""
WHEELS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tiny) TINY=1; shift ;;
    --c4-seconds) C4_S=${2:?}; shift 2 ;;
    --ttt-seconds) TTT_S=${2:?}; shift 2 ;;
    --out) OUT_DIR=${2:?}; shift 2 ;;
    --c4-eval-every) C4_EVAL_EVERY=${2:?}; shift 2 ;;
    --budget-s) BUDGET=${2:?}; shift 2 ;;
    --run-root) RUN_ROOT=${2:?}; shift 2 ;;
    --no-wheels) WHEELS=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_training.sh: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$CALLER/$1" ;; esac; }

if [ "$TINY" = 1 ]; then
  PRESET=tiny  # its --iterations end the runs, not the seconds
  C4_S=${C4_S:-600}
  TTT_S=${TTT_S:-600}
else
  PRESET=gpu
  C4_S=${C4_S:-75}
  TTT_S=${TTT_S:-55}
fi
OUT_DIR=$(absolute "${OUT_DIR:-$ROOT/benchmarks/results}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_training.XXXXXX")
RUN_ROOT=$(absolute "${RUN_ROOT:-$WORK/runs}")
LOG=$WORK/gpu_training.log
STAGES=$WORK/stages.txt
SUMMARY=$WORK/summary.md
RESULT_FILES=()
FAILED=""
mkdir -p "$OUT_DIR" "$RUN_ROOT"
: > "$STAGES"
exec > >(tee -a "$LOG") 2>&1

START=$(date +%s)
STAGE_START=$START
now() { echo $(( $(date +%s) - START )); }
stage_done() {  # name: seconds since the previous stage ended
  local t
  t=$(date +%s)
  echo "$1 $(( t - STAGE_START ))" >> "$STAGES"
  echo "== $1 done in $(( t - STAGE_START )) s (total $(( t - START )) s)"
  STAGE_START=$t
}

pack() {  # everything so far into $OUT/gpu_training.tar.gz (when $OUT is set)
  [ -n "${OUT:-}" ] || return 0
  local staging=$WORK/gpu_training run name f
  rm -rf "$staging"
  mkdir -p "$staging/runs" "$staging/results" "$OUT"
  for run in "$RUN_ROOT"/*/; do
    [ -d "$run" ] || continue
    name=$(basename "$run")
    mkdir -p "$staging/runs/$name"
    for f in config.json metrics.jsonl sessions.jsonl final.json; do
      if [ -f "$run/$f" ]; then cp "$run/$f" "$staging/runs/$name/"; fi
    done
    if [ -d "$run/plots" ]; then cp -r "$run/plots" "$staging/runs/$name/"; fi
  done
  for f in "${RESULT_FILES[@]}"; do
    if [ -f "$f" ]; then cp "$f" "$staging/results/"; fi
  done
  cp "$LOG" "$staging/log.txt"
  cp "$STAGES" "$staging/stages.txt"
  if [ -f "$SUMMARY" ]; then cp "$SUMMARY" "$staging/summary.md"; fi
  tar -czf "$OUT/gpu_training.tar.gz" -C "$WORK" gpu_training
}
trap 'status=$?; pack || true; exit $status' EXIT
trap 'echo "gpu_training.sh: terminated at $(now) s"; exit 143' TERM INT

echo "== gpu_training.sh $ARGS ($(date -u +%FT%TZ)); runs in $RUN_ROOT, results in $OUT_DIR"

# ---- 1. wheels ----------------------------------------------------------------------
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
if [ "$WHEELS" = 1 ] && [ "${WHEELS_DIR:-.whl}" = .whl ] && compgen -G ".whl/*.whl" > /dev/null; then
  if python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD; then
    echo "wheels of .whl/ installed in /tmp/site"
  else
    echo "warning: the wheels of .whl/ did not install; using the installed packages"
  fi
fi
stage_done wheels

# ---- 2. the machine -----------------------------------------------------------------
if command -v nvidia-smi > /dev/null; then nvidia-smi -L || true; else echo "nvidia-smi: none"; fi
$PY - > "$WORK/device.txt" <<'EOF'
import sys
from importlib import metadata
print("python", sys.version.split()[0], sys.executable, file=sys.stderr)
for name in ("jax", "jaxlib", "flax", "pgx", "mctx", "orbax-checkpoint", "bitbully",
             "bitbully-databases"):
    try:
        version = metadata.version(name)
    except metadata.PackageNotFoundError:
        version = "not installed"
    print(f"{name} {version}", file=sys.stderr)
import jax
print("jax.devices()", jax.devices(), file=sys.stderr)
from benchmarks import harness
info = harness.machine_info()
print(harness.device_slug(info))
print(info["device"])
EOF
{ read -r SLUG; read -r DEVICE; } < "$WORK/device.txt"
echo "device: $DEVICE (file tag $SLUG)"
stage_done versions

# ---- 3, 4. the runs -----------------------------------------------------------------
C4_RUN=$RUN_ROOT/connect_four_$PRESET
TTT_RUN=$RUN_ROOT/tic_tac_toe_$PRESET
C4_ARGS=(--game connect_four --preset "$PRESET" --max-training-s "$C4_S" --run-dir "$C4_RUN"
         --no-progress --seed 0 --overwrite --eval-every "$C4_EVAL_EVERY" --elo-every 0)
TTT_ARGS=(--game tic_tac_toe --preset "$PRESET" --run-dir "$TTT_RUN" --no-progress --seed 0
          --overwrite --elo-every 0 --final-games 0)
if [ "$TINY" = 1 ]; then
  # Games long enough to finish and updates in several iterations.
  C4_ARGS+=(--iterations 4 --moves-per-iteration 16)
  TTT_ARGS+=(--iterations 4 --moves-per-iteration 9 --eval-every 2)
fi

C4_JUDGED="Judged at the end (final): the search at final_simulations and the raw network on final_solver_positions random-play positions labelled by the perfect solver (bitbully), final_games games each against random play, UCT and the solver, half moving first."
TTT_JUDGED="Judged by its evaluations (curve: every eval_every iterations and at its last, eval_games games against perfect play, half as each side); no end-of-run matches (--final-games 0); milestones.first_perfect_play: the first evaluation that lost no game."
connect_four() {
  echo "== connect_four: $PY train.py ${C4_ARGS[*]}"
  $PY train.py "${C4_ARGS[@]}"
}
tic_tac_toe() {
  echo "== tic_tac_toe: $PY train.py ${TTT_ARGS[*]} --max-training-s $TTT_S"
  $PY train.py "${TTT_ARGS[@]}" --max-training-s "$TTT_S"
}
results() {  # game run_dir seconds judged: the run as a results file
  local game=$1 run=$2 seconds=$3 judged=$4 name="$1_${PRESET}_preset-$SLUG"
  local note="Trained on one $DEVICE (the results file's machine) by benchmarks/gpu_training.sh $ARGS (issue 53): train.py --game $game --preset $PRESET, $seconds s of training asked (final.training_s: how many were done, compilation included), seed 0, no Elo. $judged"
  $PY -m benchmarks.training_run "$run" --name "$name" --results-dir "$OUT_DIR" --note "$note" \
    || return 1
  RESULT_FILES+=("$OUT_DIR/$name.json")
}

if [ "$TINY" = 1 ]; then
  # A CPU test: both runs side by side (two cores compile at once).
  connect_four > "$WORK/connect_four.log" 2>&1 &
  C4_PID=$!
  tic_tac_toe > "$WORK/tic_tac_toe.log" 2>&1 &
  TTT_PID=$!
  C4_STATUS=0; TTT_STATUS=0
  wait "$C4_PID" || C4_STATUS=$?
  wait "$TTT_PID" || TTT_STATUS=$?
  cat "$WORK/connect_four.log" "$WORK/tic_tac_toe.log"
  [ "$C4_STATUS" = 0 ] && [ "$TTT_STATUS" = 0 ] || { echo "a tiny run failed"; exit 1; }
  stage_done "connect_four+tic_tac_toe_train"
  results connect_four "$C4_RUN" "$C4_S" "$C4_JUDGED"
  results tic_tac_toe "$TTT_RUN" "$TTT_S" "$TTT_JUDGED"
  stage_done results
else
  # A run that fails does not stop the other one; the script's status says so.
  if connect_four; then
    stage_done connect_four_train
    results connect_four "$C4_RUN" "$C4_S" "$C4_JUDGED" || FAILED="$FAILED connect_four_results"
    stage_done connect_four_results
  else
    FAILED="$FAILED connect_four"
    stage_done connect_four_failed
  fi
  pack
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
  if [ "$TTT_S" != 0 ]; then
    if tic_tac_toe; then
      stage_done tic_tac_toe_train
      results tic_tac_toe "$TTT_RUN" "$TTT_S" "$TTT_JUDGED" || FAILED="$FAILED tic_tac_toe_results"
      stage_done tic_tac_toe_results
    else
      FAILED="$FAILED tic_tac_toe"
      stage_done tic_tac_toe_failed
    fi
  fi
fi

# ---- 6. the summary -------------------------------------------------------------------
$PY - "$STAGES" "${RESULT_FILES[@]}" > "$SUMMARY" <<'EOF'
import json
import sys


def cell(value, percent=False):
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if percent else str(value)


rows = []
for path in sys.argv[2:]:
    with open(path) as f:
        record = json.load(f)
    final = record.get("final") or {}
    timing, config = record.get("timing") or {}, record["settings"]["config"]
    if config["game"] == "connect_four":
        judge = "-"
        if "final_vs_solver_first_wins" in final:
            judge = "{}-{}-{} first vs solver".format(
                *(final[f"final_vs_solver_first_{k}"] for k in ("wins", "draws", "losses")))
    else:  # the last evaluation (no end-of-run matches)
        judged = [row for row in record["curve"] if "vs_perfect_losses" in row]
        judge = "-"
        if judged:
            judge = "{}-{}-{} vs perfect (it. {})".format(
                *(judged[-1][f"vs_perfect_{k}"] for k in ("wins", "draws", "losses")),
                judged[-1]["iteration"])
    first = (record.get("milestones") or {}).get("first_perfect_play")
    perfect = "-" if config["game"] != "tic_tac_toe" else (
        "never" if first is None else f"{first['elapsed_s']} (it. {first['iteration']})")
    rows.append([config["game"], config["preset"], record["machine"]["device"],
                 f"{final.get('training_s')} ({final.get('iterations')} it.)",
                 cell(final.get("total_games")),
                 cell(final.get("final_solver_search_accuracy"), True)
                 + (f" @{final['final_simulations']}" if "final_solver_search_accuracy" in final
                    else ""),
                 cell(final.get("final_solver_policy_accuracy"), True), judge,
                 cell(timing.get("median_games_per_s")),
                 cell(timing.get("median_simulations_per_s")),
                 cell(timing.get("median_updates_per_s")), perfect,
                 cell(final.get("final_eval_s"))])
head = ["game", "preset", "device", "training s", "games", "search acc. @sims",
        "raw acc.", "W-D-L", "games/s", "sims/s", "updates/s", "s to perfect play",
        "final eval s"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for row in rows:
    print("| " + " | ".join(row) + " |")
with open(sys.argv[1]) as f:
    stages = ", ".join(f"{name} {seconds} s" for name, seconds in
                       (line.split() for line in f if line.strip()))
print(f"\nstages: {stages}")
print("games/s, sims/s: self-play phase medians; updates/s: update phase median "
      "(results files' timing)")
EOF
stage_done summary
pack
trap - EXIT
echo
if [ -n "${OUT:-}" ]; then echo "packed: $OUT/gpu_training.tar.gz"; fi
echo "results: ${RESULT_FILES[*]}"
if [ -n "$FAILED" ]; then echo "FAILED:$FAILED (the log above says why)"; fi
echo "== summary ($(now) s in all)"
cat "$SUMMARY"
[ -z "$FAILED" ]
