#!/usr/bin/env bash
# targets.sh: every training-speed target in one run, each measured side by
# side with its peer: bench/train_step.sh (GPT-2 124M steps against PyTorch
# eager: ms/step, tokens/s, MFU against OpenBLAS's sgemm, peak RSS, raf-opt
# and JIT times) then bench/adamw.sh (the AdamW update against
# torch.optim.AdamW and a STREAM triad). Their output in full, then the
# "target:" lines gathered as a summary. See bench/README.md.
#   bash bench/targets.sh [BUILD_DIR]
#   environment: THREADS (default 2); train_step.sh's SIZES and STEPS;
#   ROUNDS for both, or TRAIN_ROUNDS / ADAMW_ROUNDS for one (defaults 2, 3);
#   TRAIN_VARIANTS / ADAMW_VARIANTS (each script's VARIANTS).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
export THREADS=${THREADS:-2}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# What was measured: the build's source tree, its commit when it is a git
# checkout, and whether tracked files differ from the commit.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
rev=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo "not a git checkout")
if git -C "$src" rev-parse 2>/dev/null &&
   git -C "$src" status --porcelain --untracked-files=no | grep -q .; then
  rev="$rev, tracked files modified"
fi
echo "bench/targets.sh: build $build from $src ($rev);" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
variants() { # VALUE: VARIANTS for the next script, unset when empty
  if [ -n "$1" ]; then export VARIANTS=$1; else unset VARIANTS; fi
}
variants "${TRAIN_VARIANTS:-}"
ROUNDS=${TRAIN_ROUNDS:-${ROUNDS:-2}} bash bench/train_step.sh "$build" \
  "${SIZES:-4x64 8x256 4x128x384 4x128x512}" ${STEPS:+"$STEPS"} | tee -a "$out"
echo
variants "${ADAMW_VARIANTS:-}"
ROUNDS=${ADAMW_ROUNDS:-${ROUNDS:-3}} bash bench/adamw.sh "$build" | tee -a "$out"
echo
echo "== targets"
grep '^target:' "$out" | sed 's/^target: //'
