#!/usr/bin/env bash
# matmul_bf16.sh: what the onednn dialect gains on the matrix products of
# GPT-2 124M's training step after amp: onednn's bf16 matmul against
# cblas's f32 sgemm (what the f32 step runs) and cblas's bf16 (widened to
# f32 for sgemm, rounded once; what the amp step ran before onednn), side by
# side in one run. Each shape is a one-statement module per dtype, its
# operands initialised by raf-run (`init`), run for STEPS steps through
# raf-run with the dialects forced (--dialects); the three alternate ROUNDS
# times, the order reversed every other round (a shared machine's load
# drifts), and each figure is the median step time over all rounds, less
# each round's WARMUP steps. Ratios are f32 cblas / bf16 onednn and bf16
# cblas / bf16 onednn (above 1: onednn is faster).
#
# Shapes are MxKxN with an optional :ta or :tb (transpose_a, transpose_b),
# as the step multiplies them at B*T = 512 and 2048 rows: the forward
# projections (768->2304 qkv, 768->768 attention output, 768->3072 and
# 3072->768 MLP), an input gradient (dy w^T: tb), a weight gradient (x^T dy:
# ta), and the LM head (x wte^T [.,50257]: tb; its input gradient
# dlogits wte: K = 50257; its weight gradient dlogits^T x: ta, M = 50257).
#   bash bench/matmul_bf16.sh [BUILD_DIR] [STEPS] [THREADS]
#   environment: SHAPES (space-separated), ROUNDS (default 2),
#   WARMUP (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
steps=${2:-8}
threads=${3:-$(nproc)}
rounds=${ROUNDS:-2}
warmup=${WARMUP:-2}
default_shapes=""
for r in 512 2048; do
  default_shapes="$default_shapes ${r}x768x2304 ${r}x768x768 ${r}x768x3072
    ${r}x3072x768 ${r}x3072x768:tb 768x${r}x3072:ta ${r}x768x50257:tb
    ${r}x50257x768 50257x${r}x768:ta"
done
shapes=${SHAPES:-$default_shapes}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if grep -q "RAF_HAVE_ONEDNN:INTERNAL=ON" "$build/CMakeCache.txt"; then :; else
  echo "matmul_bf16.sh: $build was built without oneDNN (libdnnl-dev)" >&2
  exit 1
fi

median() { # LOG...: the median "ms" over the logs' steps after the warm-up
  /usr/bin/python3 - "$warmup" "$@" <<'PY'
import json, statistics, sys
ms = []
for path in sys.argv[2:]:
    ms += [json.loads(line)["ms"] for line in open(path)][int(sys.argv[1]):]
print(f"{statistics.median(ms):.4f}")
PY
}

# module DTYPE M K N FLAGS: the one-statement module of a shape.
module() {
  local dt=$1 m=$2 k=$3 n=$4 flags=$5 a b attrs=""
  a="$m,$k"; b="$k,$n"
  case $flags in
    ta) a="$k,$m"; attrs=" {transpose_a}" ;;
    tb) b="$n,$k"; attrs=" {transpose_b}" ;;
  esac
  cat <<EOF
func @mm(%a: $dt[$a] {init = "normal(0, 1)"}, %b: $dt[$b] {init = "normal(0, 1)"}) -> $dt[$m,$n] {
  %r = matmul(%a, %b)$attrs
  return %r
}
EOF
}

variants="f32-cblas bf16-cblas bf16-onednn"
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); $threads threads;" \
  "median of $rounds x $((steps - warmup)) steps"
printf "%-18s %10s %10s %10s %9s %9s %9s\n" "MxKxN" "f32 cblas" \
  "bf16 cblas" "bf16 onednn" "f32/onednn" "bf16c/onednn" "GFLOP/s"
for shape in $shapes; do
  flags=${shape#*:}; [ "$flags" = "$shape" ] && flags=""
  IFS=x read -r m k n <<< "${shape%%:*}"
  for v in $variants; do
    module "${v%%-*}" "$m" "$k" "$n" "$flags" > "$tmp/$v.raf"
  done
  for ((r = 0; r < rounds; r++)); do
    order=$variants
    [ $((r % 2)) -eq 1 ] && order=$(echo "$variants" | tr ' ' '\n' | tac)
    for v in $order; do
      d=${v#*-}
      "$build/raf-run" "$tmp/$v.raf" --dialects="$d,cpu-ref" \
        --threads="$threads" --steps="$steps" --log="$tmp/$v.$r.jsonl" \
        > /dev/null
    done
  done
  f32=$(median "$tmp"/f32-cblas.*.jsonl)
  b16=$(median "$tmp"/bf16-cblas.*.jsonl)
  dnn=$(median "$tmp"/bf16-onednn.*.jsonl)
  awk -v s="$shape" -v a="$f32" -v b="$b16" -v c="$dnn" -v m="$m" -v k="$k" \
    -v n="$n" 'BEGIN { printf "%-18s %10.3f %10.3f %10.3f %9.2f %9.2f %9.0f\n",
                       s, a, b, c, a / c, b / c, 2 * m * k * n / (c * 1e6) }'
done
