#!/usr/bin/env bash
# amp.sh: mixed precision on GPT-2 124M: raf f32 vs raf amp bf16 vs PyTorch
# f32 vs PyTorch autocast bf16, side by side in one run.
#
#   bash bench/amp.sh [BUILD_DIR] [SIZES] [STEPS]
#     (arguments and THREADS, ROUNDS as bench/train_step.sh's)
#
# Prints the CPU's bf16 features (lscpu: avx512_bf16, amx_bf16), then per
# size the static memory of @gpt2_train_step from raf-opt --stats for f32
# and amp: what it saves for backward (the activation memory: the values
# the forward makes and the backward reads, PyTorch's saved tensors), the
# planned peak, the arguments (params, states and batch) and the arena
# (everything else the step holds: the saved activations, the gradients,
# the backward's and the update's temporaries), with the ratio of the
# saved bytes (the target: amp's activation memory at most 0.6x f32's);
# then
# bench/train_step.sh's table for VARIANTS="planned amp torch torch-amp":
# step time, peak RSS and their ratios to PyTorch eager f32. The targets on
# a CPU with avx512_bf16 or amx_bf16: the amp step at least 1.3x faster than
# raf's f32 step and faster than PyTorch's autocast step; on one without:
# no slower than raf's f32 step.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
sizes=${2:-4x64 8x256}
steps=${3:-}
flags=$(lscpu | sed -n 's/^Flags: *//p')
feats=""
for f in avx512_bf16 amx_bf16 amx_tile avx512_fp16; do
  case " $flags " in *" $f "*) feats="$feats $f" ;; esac
done
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); bf16 features:${feats:- none}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for size in $sizes; do
  B=${size%x*} T=${size#*x}
  /usr/bin/python3 examples/gpt2/gen_gpt2.py --layers 12 --heads 12 \
    --embd 768 --vocab 50257 --ctx 1024 --seq "$T" --batch "$B" "$tmp/gpt2.raf"
  for v in f32 amp; do
    a=""; [ $v = amp ] && a="amp,"
    "$build/raf-opt" --stats -p "autodiff,${a}optimizer{kind=adamw lr=3e-4},inline,fuse,plan-memory" \
      "$tmp/gpt2.raf" -o /dev/null 2>&1 \
      | grep -e "memory @gpt2_train_step" -e "saved for backward @gpt2_train_step" \
      > "$tmp/$v.stats"
  done
  /usr/bin/python3 - "$tmp" "$size" <<'PY'
import re, sys
d, size = sys.argv[1], sys.argv[2]
def read(v):
    t = open(f"{d}/{v}.stats").read()
    return [int(re.search(p + r" (\d+)", t).group(1))
            for p in ("saved for backward @gpt2_train_step:", "planned peak",
                      "arguments", "arena")]
f, a = read("f32"), read("amp")
print(f"[{size}] static memory of @gpt2_train_step (raf-opt --stats), MB:")
for name, (saved, peak, args, arena) in (("raf f32", f), ("raf amp bf16", a)):
    print(f"  {name:<14} saved for backward {saved / 1e6:8.1f}  peak "
          f"{peak / 1e6:8.1f}  arguments {args / 1e6:8.1f}  arena "
          f"{arena / 1e6:8.1f}")
print(f"  amp / f32: saved for backward {a[0] / f[0]:.2f}x, arena "
      f"{a[3] / f[3]:.2f}x, peak {a[1] / f[1]:.2f}x")
print(f"target: [{size}] amp activation memory (saved for backward) <= 0.6x "
      f"f32's: {a[0] / f[0]:.2f}x ({a[0] / 1e6:.1f} vs {f[0] / 1e6:.1f} MB)")
PY
done
VARIANTS=${VARIANTS:-planned amp torch torch-amp} \
  bash bench/train_step.sh "$build" "$sizes" $steps
