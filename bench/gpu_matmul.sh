#!/usr/bin/env bash
# gpu_matmul.sh: matmul through the cublas dialect on a GPU (raf-run
# --device=cuda --dialects=cublas) against torch.matmul on the same GPU
# (bench/gpu_matmul_torch.py), on GPT-2 124M's products at B*T = 8192
# tokens: the forward MxKxN (qkv 768->2304, attention projection 768->768,
# mlp 768->3072 and 3072->768, LM head 768->50257) and, for each, the two
# products of its backward (dx = dy W^T: MxNxK with transpose_b; dW = x^T
# dy: KxMxN with transpose_a), in f32 (TF32 off on both sides) and bf16.
# PYTHON: the Python with torch (default /usr/bin/python3).
# Each product is a one-statement module whose operands raf-run makes on
# the host ({init}) and copies to the GPU once; a step is timed to the end
# of its work on the GPU (raf-run synchronizes), so it includes the
# executor's per-call overhead (torch's is the GPU's time between two
# events around the call). Prints ms and GFLOP/s per product, torch's,
# and the ratio raf / torch (time).
#   bash bench/gpu_matmul.sh [BUILD_DIR] [STEPS]
#   environment: SHAPES (space-separated MxKxN, default GPT-2's above),
#   DTYPES (default "f32 bf16"), RAF_CUBLAS_TF32 (1: TF32 on for raf's
#   f32, and then for torch's too)
# Without a GPU (or a build without CUDA) it says so and exits 2.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
steps=${2:-50}
warmup=10
if ! "$build/raf-run" --device=cuda --list-devices > /dev/null 2> /dev/null; then
  echo "gpu_matmul: no usable CUDA device (raf-run --device=cuda" \
       "--list-devices fails); nothing measured" >&2
  "$build/raf-run" --device=cuda --list-devices >&2 || true
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
T=8192
fwd="${T}x768x2304 ${T}x768x768 ${T}x768x3072 ${T}x3072x768 ${T}x768x50257"
# Every product: "MxKxN:flags", flags ta (transpose_a), tb (transpose_b).
products=()
for s in ${SHAPES:-$fwd}; do
  IFS=x read -r m k n <<< "$s"
  products+=("${m}x${k}x${n}:" "${m}x${n}x${k}:tb" "${k}x${m}x${n}:ta")
done

median() { # LOG: the median "ms" over the steps after the warm-up
  "${PYTHON:-/usr/bin/python3}" - "$warmup" "$1" <<'PY'
import json, statistics, sys
ms = [json.loads(line)["ms"] for line in open(sys.argv[2])][int(sys.argv[1]):]
print(f"{statistics.median(ms):.4f}")
PY
}

torch_ok=1
if ! "${PYTHON:-/usr/bin/python3}" bench/gpu_matmul_torch.py --check 2> "$tmp/torch.err"; then
  echo "gpu_matmul: no torch on the GPU ($(head -1 "$tmp/torch.err"));" \
       "raf's figures only" >&2
  torch_ok=0
fi

printf "%-6s %-20s %10s %10s %10s %10s %7s\n" dtype "MxKxN op" "raf ms" \
  "GFLOP/s" "torch ms" "GFLOP/s" ratio
for dt in ${DTYPES:-f32 bf16}; do
  for p in "${products[@]}"; do
    shape=${p%%:*} flags=${p#*:}
    IFS=x read -r m k n <<< "$shape"
    adims="$m,$k" bdims="$k,$n" attrs=""
    [ "$flags" = ta ] && adims="$k,$m" attrs=" {transpose_a}"
    [ "$flags" = tb ] && bdims="$n,$k" attrs=" {transpose_b}"
    cat > "$tmp/mm.raf" <<RAF
func @mm(%a: $dt[$adims] {init = "normal(0, 1)"}, %b: $dt[$bdims] {init = "normal(0, 1)"}) -> $dt[$m,$n] {
  %r = matmul(%a, %b)$attrs
  return %r
}
RAF
    "$build/raf-run" "$tmp/mm.raf" --device=cuda --dialects=cublas \
      --steps="$steps" --log="$tmp/raf.jsonl" --print=none
    raf_ms=$(median "$tmp/raf.jsonl")
    torch_ms=nan
    if [ "$torch_ok" = 1 ]; then
      torch_ms=$("${PYTHON:-/usr/bin/python3}" bench/gpu_matmul_torch.py "$dt" "$m" "$k" \
                 "$n" "$flags" "$steps" "$warmup")
    fi
    awk -v dt="$dt" -v s="$shape ${flags:-nn}" -v r="$raf_ms" \
      -v t="$torch_ms" -v m="$m" -v k="$k" -v n="$n" 'BEGIN {
        f = 2 * m * k * n / 1e6
        if (t == "nan")
          printf "%-6s %-20s %10.3f %10.0f %10s %10s %7s\n", dt, s, r, f / r,
                 "-", "-", "-"
        else
          printf "%-6s %-20s %10.3f %10.0f %10.3f %10.0f %7.3f\n", dt, s, r,
                 f / r, t, f / t, r / t }'
  done
done
