#!/usr/bin/env bash
# The wheels a GPU lease carries, fetched here before the lease starts.
#
#   bash devtools/gpu_wheels.sh            # fills .whl/ (git-ignored) and prints the run commands
#   bash devtools/gpu_wheels.sh --list     # only prints NAME==VERSION, one a line
#
# The device machine (python 3.12, x86-64, no package registry) has jax, jaxlib,
# flax, optax and chex of its own but not pgx, mctx or bitbully, and an
# orbax-checkpoint of another version. This script downloads, with pip, the
# same versions as the ones installed here (`pip install -e ".[dev]"`), each
# without its dependencies, so the device's own jax stays in place:
#   pgx and svgwrite (pgx's one dependency the machine lacks), mctx (the peer),
#   orbax-checkpoint (checkpoints in the version our tests use), bitbully and
#   bitbully-databases (the Connect Four solver that judges issue 53's agent).
# .whl/ is emptied first: two versions of one package stop the whole install.
# About 20 MB; the working tree that travels must stay under 64 MiB.
#
# On the device (run tool, carry [".whl"]), both GPU scripts install .whl/ themselves
# (lease_wheels of devtools/gpu_lease.sh):
#   MCTS_JAX_COMMIT=<sha> bash benchmarks/gpu_search.sh 400
#   MCTS_JAX_COMMIT=<sha> bash benchmarks/gpu_training.sh --c4-seconds 75 --ttt-seconds 55 --budget-s 290
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PACKAGES=(pgx svgwrite mctx orbax-checkpoint bitbully bitbully-databases)

pins() {  # NAME==VERSION of each package as installed here
  python3 - "${PACKAGES[@]}" <<'EOF'
import sys
from importlib import metadata
missing = []
for name in sys.argv[1:]:
    try:
        print(f"{name}=={metadata.version(name)}")
    except metadata.PackageNotFoundError:
        missing.append(name)
if missing:
    sys.exit("gpu_wheels.sh: not installed here: " + ", ".join(missing)
             + ' (run: python3 -m pip install -e ".[dev]")')
EOF
}

case "${1:-}" in
  --list) pins; exit 0 ;;
  "") ;;
  -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu_wheels.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
esac

PINS=$(pins)
rm -rf .whl
mkdir -p .whl
for pin in $PINS; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 -d .whl "$pin" 2>&1 | grep -v "is ignored: it is neither" || true
done
count=$(ls .whl/*.whl | wc -l)
if [ "$count" -ne "${#PACKAGES[@]}" ]; then
  echo "gpu_wheels.sh: expected ${#PACKAGES[@]} wheels, got $count:" >&2
  ls .whl >&2
  exit 1
fi
ls -1 .whl
echo "$(du -sh .whl | cut -f1) in .whl/; with the tracked tree: $(( ($(git ls-files -z | xargs -0 cat | wc -c) + $(cat .whl/*.whl | wc -c)) / 1048576 )) MiB of 64"
echo "on the device (carry [\".whl\"]), for example:"
echo "  MCTS_JAX_COMMIT=$(git rev-parse HEAD) bash benchmarks/gpu_search.sh 400"
