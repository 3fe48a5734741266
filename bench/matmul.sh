#!/usr/bin/env bash
# matmul.sh: raf's cost over OpenBLAS for f32 matmul. For each shape
# MxKxN, a one-statement module runs through raf-run's cblas dialect for
# STEPS steps, and bench/matmul_openblas.c calls cblas_sgemm directly as
# many times, with the same library and thread count. The two alternate
# ROUNDS times (a shared machine's load drifts); each side's time is the
# median over all its rounds' steps, less each round's warm-up steps. The ratio raf / OpenBLAS is
# the executor's per-call overhead (result allocation, dispatch, kernel
# call): target under 1.05. Shapes are GPT-2 small's projections
# (256 tokens: qkv 768->2304, mlp 768->3072 and 3072->768) and a square one.
# On a loaded machine with few cores the multi-threaded times of both
# sides swing by 10-20% from run to run; THREADS=1 gives a stable ratio.
#   bash bench/matmul.sh [BUILD_DIR] [STEPS] [THREADS]
#   environment: SHAPES, space-separated MxKxN (default the four above;
#   "2048x768x2304 2048x768x3072 2048x3072x768 2048x768x50257" are GPT-2's
#   at 8x256 tokens, the last its LM head)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
steps=${2:-30}
threads=${3:-$(nproc)}
warmup=5
rounds=3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The baseline links the library raf's runtime was configured with.
include=$(sed -n 's/^RAF_CBLAS_INCLUDE:PATH=//p' "$build/CMakeCache.txt")
lib=$(sed -n 's/^RAF_OPENBLAS:FILEPATH=//p' "$build/CMakeCache.txt")
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$include" \
  bench/matmul_openblas.c "$lib" -o "$tmp/matmul_openblas"

median() { # LOG...: the median "ms" over the logs' steps after the warm-up
  /usr/bin/python3 - "$warmup" "$@" <<'PY'
import json, statistics, sys
ms = []
for path in sys.argv[2:]:
    ms += [json.loads(line)["ms"] for line in open(path)][int(sys.argv[1]):]
print(f"{statistics.median(ms):.4f}")
PY
}

echo "f32 matmul, $threads threads, median of $rounds x $((steps - warmup))" \
  "steps (each round after $warmup warm-up)"
printf "%-16s %10s %12s %8s %10s\n" "MxKxN" "raf ms" "openblas ms" "ratio" \
  "GFLOP/s"
for shape in ${SHAPES:-256x768x2304 256x768x3072 256x3072x768 1024x1024x1024}; do
  IFS=x read -r m k n <<< "$shape"
  cat > "$tmp/mm.raf" <<EOF
func @mm(%a: f32[$m,$k], %b: f32[$k,$n]) -> f32[$m,$n] {
  %r = matmul(%a, %b)
  return %r
}
EOF
  "$build/raf-opt" --dialects=cblas,cpu-ref "$tmp/mm.raf" |
    grep -q 'dialect = "cblas"' || { echo "matmul not bound to cblas"; exit 1; }
  /usr/bin/python3 - "$tmp" "$m" "$k" "$n" <<'PY'
import sys
import numpy as np
tmp, m, k, n = sys.argv[1], *map(int, sys.argv[2:])
rng = np.random.default_rng(0)
np.save(f"{tmp}/a.npy", rng.uniform(-1, 1, (m, k)).astype(np.float32))
np.save(f"{tmp}/b.npy", rng.uniform(-1, 1, (k, n)).astype(np.float32))
PY
  for ((r = 0; r < rounds; r++)); do
    "$build/raf-run" "$tmp/mm.raf" --dialects=cblas,cpu-ref \
      --threads="$threads" --steps="$steps" --log="$tmp/raf.$r.jsonl" \
      --input=a=@"$tmp/a.npy" --input=b=@"$tmp/b.npy" > /dev/null
    "$tmp/matmul_openblas" "$m" "$k" "$n" "$steps" "$threads" \
      "$tmp/blas.$r.jsonl"
  done
  raf_ms=$(median "$tmp"/raf.*.jsonl)
  blas_ms=$(median "$tmp"/blas.*.jsonl)
  awk -v s="$shape" -v r="$raf_ms" -v b="$blas_ms" -v m="$m" -v k="$k" \
    -v n="$n" 'BEGIN { printf "%-16s %10.3f %12.3f %8.3f %10.1f\n", s, r, b,
                       r / b, 2 * m * k * n / (r * 1e6) }'
done
