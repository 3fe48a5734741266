#!/usr/bin/env bash
# ptx_speed.sh [BUILD]: the speed of the PTX interpreter behind the fake
# CUDA driver (test/cuda/ptx/), in PTX instructions per second on one
# core, on the kernels of real training steps: the MLP of examples/mlp and
# a 2-layer GPT-2 (4 heads, 64 wide, 4x32 tokens) on --device=cuda, each
# for STEPS steps (default 3), ROUNDS times (default 3).
#
# The fake driver writes a line per launch to RAF_FAKE_CUDA_STATS: the
# instructions the launch executed and the nanoseconds it took. The
# figure is their sums' ratio, so raf-run's own work (compiling, copies)
# is left out. Prints, per model, the median over rounds of the total rate
# and the five kernels that took longest with their rates. Target (the
# CI issue): at least 50 million instructions per second.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
steps=${STEPS:-3}
rounds=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
$py - "$tmp" <<'PY'
import sys, numpy as np
d = sys.argv[1]; r = np.random.RandomState(0)
np.save(d + '/x.npy', r.randn(100, 784).astype(np.float32))
np.save(d + '/labels.npy', r.randint(0, 10, 100))
np.save(d + '/tx.npy', r.randint(0, 128, (4, 32)))
np.save(d + '/ty.npy', r.randint(0, 128, (4, 32)))
PY
"$build/raf-opt" -p 'autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse' \
  examples/mlp/mlp.raf -o "$tmp/mlp.raf"
$py examples/gpt2/gen_gpt2.py --layers 2 --heads 4 --embd 64 --vocab 128 \
  --seq 32 --batch 4 "$tmp/gpt2.raf" >&2
"$build/raf-opt" -p 'autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse' \
  "$tmp/gpt2.raf" -o "$tmp/gpt2-step.raf"

run() { # run NAME ARGS...: one round, its stats in $tmp/NAME.stats
  local name=$1; shift
  rm -f "$tmp/$name.stats"
  env LD_LIBRARY_PATH="$build/fake-cuda" RAF_FAKE_CUDA_STATS="$tmp/$name.stats" \
    "$build/raf-run" --device=cuda --steps="$steps" --seed=3 --print=none "$@" >&2
  awk '{i += $3; t += $5} END {printf "%.1f\n", i / t * 1e3}' "$tmp/$name.stats" \
    >> "$tmp/$name.rates"
}
for ((r = 0; r < rounds; r++)); do
  run mlp "$tmp/mlp.raf" --function=mlp_train_step \
    --input=x=@"$tmp/x.npy" --input=labels=@"$tmp/labels.npy"
  run gpt2 "$tmp/gpt2-step.raf" --input=x=@"$tmp/tx.npy" --input=y=@"$tmp/ty.npy"
done
for name in mlp gpt2; do
  median=$(sort -n "$tmp/$name.rates" | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
  total=$(awk '{i += $3; t += $5} END {printf "%d instructions in %.2f s", i, t / 1e9}' "$tmp/$name.stats")
  echo "$name: $median M instructions/s (median of $rounds rounds; last round: $total)"
  awk '{i[$2] += $3; t[$2] += $5} END {for (k in i) printf "%.0f %s %.1f\n", t[k] / 1e6, k, i[k] / t[k] * 1e3}' \
    "$tmp/$name.stats" | sort -rn | head -5 |
    awk '{printf "  %-36s %8d ms %8.1f M instructions/s\n", $2, $1, $3}'
done
