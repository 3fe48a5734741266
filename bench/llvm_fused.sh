#!/usr/bin/env bash
# llvm_fused.sh: fused functions through the llvm dialect (JIT-compiled
# kernels) against the same statements run one by one by cpu-ref, on
# f32[2048,4096] (32 MiB per tensor): an elementwise chain of seven ops
# with a bias broadcast, gelu (tanh) with its bias, softmax rows, and
# layer_norm rows. Median step time of 7 steps (2 warm-up steps dropped);
# the kernel cache is a fresh directory, so the first step includes no
# compilation (that happens when the executor is made).
#   bash bench/llvm_fused.sh [BUILD_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
threads=${2:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export RAF_CACHE_DIR=$tmp/cache
T=f32[2048,4096]
B=f32[4096]
bodies=(
"  %h = add(%x, %b)
  %c = constant 0.5 : f32[]
  %m = mul(%h, %c)
  %r = relu(%m)
  %k = constant 0.1 : f32[]
  %d = sub(%r, %k)
  %e = mul(%d, %d)
  %y = add(%e, %x)"
"  %h = add(%x, %b)
  %y = gelu(%h) {approximate = \"tanh\"}"
"  %y = softmax(%x)"
"  %y = layer_norm(%x, %b, %b)")
names=("elementwise chain (7 ops)" "bias + gelu(tanh)" "softmax rows" \
       "layer_norm rows")
args=()
[ "$threads" != 0 ] && args=(--threads="$threads")
for i in "${!bodies[@]}"; do
  cat > "$tmp/f.raf" <<EOF
func @fused_0(%x: $T, %b: $B) -> $T {fused} {
${bodies[$i]}
  return %y
}
func @main(%x: $T {init = "normal(0, 1)"}, %b: $B {init = "normal(1, 0.5)"}) -> $T {
  %y = call @fused_0(%x, %b)
  return %y
}
EOF
  line="${names[$i]}:"
  for d in cpu-ref llvm,cpu-ref; do
    "$build/raf-run" "$tmp/f.raf" --steps=7 --dialects=$d "${args[@]}" \
      --log="$tmp/log" --output=@"$tmp/out.npy" > /dev/null
    med=$(/usr/bin/python3 -c "
import json, statistics, sys
ms = [json.loads(l)['ms'] for l in open('$tmp/log')][2:]
print(f'{statistics.median(ms):.1f}')")
    line="$line  ${d%%,*} $med ms"
    [ "$d" = cpu-ref ] && ref=$med
  done
  echo "$line  ($(/usr/bin/python3 -c "print(f'{$ref / $med:.1f}')")x)"
done
