#!/usr/bin/env bash
# gpu-check.sh [BUNDLE]: checks raf on a CUDA GPU, from the bundle that
# scripts/gpu-bundle.sh makes (BUNDLE: the .tar.xz, unpacked next to it, or
# its unpacked raf-gpu/ folder; default: the bundle this script is in).
# Nothing is compiled: the GPU machine needs the NVIDIA driver, python3 and,
# for the PyTorch figures, torch with CUDA.
#
# It prints one line per figure and finishes within 8 minutes (CHECK_SECONDS,
# default 470): every part runs in a subshell under `timeout`, its limit cut
# to what is left of the whole. A part that fails prints `FAILED (reason)`
# and the next one runs; the exit status is 1 if any part failed. The parts'
# output is kept in work/ beside bin/ (work/NAME.log).
#   a  devices     raf-run --device=cuda --list-devices
#      test_device test_device --gpu (the device's unit tests on this GPU)
#      lit-cuda    the lit tests that say `REQUIRES: cuda`
#   b  mlp         examples/mlp trained on --device=cuda for 3,000 steps of
#                  100 images (the CPU example's 5 epochs; 6 epochs of the
#                  bundle's 50,000 images); its test accuracy (85% needed,
#                  as test/examples/mlp_accuracy.sh)
#   c  gpt2-f32, gpt2-bf16   GPT-2 124M, B=8 T=1024, training steps on
#                  --device=cuda (bf16: the amp pass): ms/step, tokens/s,
#                  MFU (llm.c's gpt2_estimate_mfu: 6N + 6LCT flops per
#                  token, over the H200's bf16 dense peak, 989 TFLOP/s, for
#                  both, as llm.c does)
#      gpt2-torch  bench/gpu_gpt2_torch.py: eager and torch.compile, f32 and
#                  bf16, and raf's step against them (torch ms / raf ms:
#                  above 1, raf is faster)
#   d  copy-bw     bench/gpu_copy_bw.py: torch's device-to-device copy
#      elementwise a fused chain of 7 elementwise ops on f32[16384,4096]
#      adamw       the AdamW update of GPT-2 124M's params
#                  (bench/gen_adamw.py), both as % of the copy bandwidth
#   e  matmul      bench/gpu_matmul* (the cublas dialect vs torch.matmul)
#                  if the bundle has it
#   f  gpt2-epi    gpt2-f32 with fuse{patterns=matmul-epilogue} (bias,
#                  GELU, its derivative and the bias gradients in
#                  cuBLASLt's epilogues), and gpt2-f32's time over it
# A part whose figure is missing (not printed, empty, nan) fails, and so does
# one whose comparison has nothing to compare with: scripts/gpu-check-lib.sh.
# PYTHON (default python3) runs the Python parts; TORCH_SECONDS (default 95)
# limits PyTorch's GPT-2 runs within their part, so that the modes done
# before it still print. CHECK_DEVICE (default
# cuda) is the device of raf-run: CHECK_DEVICE=cpu tries the script's
# plumbing on a machine without a GPU (the GPT-2 parts are then far too slow
# for their limits).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/gpu-check-lib.sh
. "$here/scripts/gpu-check-lib.sh" || exit 2
arg=${1:-$here}
if [ -f "$arg" ]; then
  dest=$(dirname "$(realpath "$arg")")
  echo "gpu-check.sh: unpacking $arg in $dest" >&2
  tar -C "$dest" -xJf "$arg" || { echo "gpu-check.sh: cannot unpack $arg" >&2; exit 2; }
  arg=$dest/raf-gpu
fi
B=$(cd "$arg" 2>/dev/null && pwd)
if [ -z "$B" ] || [ ! -x "$B/bin/raf-run" ]; then
  echo "gpu-check.sh: $arg is no bundle (no bin/raf-run): build one with scripts/gpu-bundle.sh" >&2
  exit 2
fi
W=$B/work
mkdir -p "$W"
PY=${PYTHON:-python3}
DEVICE=${CHECK_DEVICE:-cuda}
export B W PY DEVICE
export RAF_CACHE_DIR=$W/cache
# Codegen's math library: the bundle's libdevice (scripts/gpu-bundle.sh), the
# one raf was checked with; a GPU machine whose nvcc came from pip or conda
# has none where codegen would look. RAF_LIBDEVICE set by hand wins.
if [ -z "${RAF_LIBDEVICE:-}" ] && [ -f "$B/nvvm/libdevice/libdevice.10.bc" ]; then
  export RAF_LIBDEVICE=$B/nvvm/libdevice/libdevice.10.bc
fi
total=${CHECK_SECONDS:-470}
start=$SECONDS
failed=0

# GPT-2 124M as gpu-check measures it.
export L=12 H=12 C=768 V=50257 T=1024 BATCH=8 STEPS=8 WARMUP=2
PEAK=989e12 # H200 SXM, bf16 dense (tf32 494e12, f32 67e12)
export PEAK

# part NAME SECONDS FUNCTION: runs FUNCTION in a subshell under timeout;
# its stdout lines are the part's figures, its stderr goes to the log.
part() {
  local name=$1 limit=$2 fn=$3 left rc reason
  left=$((total - (SECONDS - start)))
  [ "$limit" -le "$left" ] || limit=$left
  if [ "$limit" -lt 5 ]; then
    printf '%-12s FAILED (no time left of the %d s)\n' "$name" "$total"
    failed=$((failed + 1))
    return
  fi
  timeout -k 10 "$limit" bash -c "$fn" > "$W/$name.out" 2> "$W/$name.log"
  rc=$?
  sed "s/^/$(printf '%-12s' "$name") /" "$W/$name.out"
  if [ "$rc" -ne 0 ]; then
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
      reason="timed out after $limit s"
    else
      reason=$(grep -v '^\s*$' "$W/$name.log" | tail -1 | cut -c1-200)
      reason=${reason:-exit $rc}
    fi
    printf '%-12s FAILED (%s; log: work/%s.log)\n' "$name" "$reason" "$name"
    failed=$((failed + 1))
  fi
}

# median ms of a raf-run --log after the warm-up steps; nothing when there
# is none (no log, too few steps), which `figure` then refuses
median_ms() { # LOG WARMUP
  "$PY" -c '
import json, sys
try:
    ms = sorted(json.loads(l)["ms"] for l in open(sys.argv[1]))[int(sys.argv[2]):]
except (OSError, ValueError, KeyError):
    ms = []
print(ms[len(ms) // 2] if ms else "")' "$1" "$2"
}
# f32 elements of the params of a .raf model
param_count() { # MODEL
  "$PY" -c '
import sys
sys.path.insert(0, sys.argv[2])
import gen_adamw
n = 0
for _, t, _ in gen_adamw.params(open(sys.argv[1]).read()):
    k = 1
    for d in t[4:-1].split(","):
        k *= int(d)
    n += k
print(n)' "$1" "$B/bench"
}
export -f median_ms param_count figure at_least

devices() {
  out=$("$B/bin/raf-run" --device="$DEVICE" --list-devices) || exit 1
  [ -n "$out" ] || { echo "raf-run --list-devices listed no device" >&2; exit 1; }
  echo "$out"
}
# The tests (test_device, lit-cuda, mlp) wait for the GPU after every
# statement (RAF_CUDA_SYNC=1, raf-run --cuda-sync-each): a kernel that
# faults is then named at its statement, not at a later synchronisation.
# The timing parts do not, since waiting would add the host's launch time
# to every step; rerun one with RAF_CUDA_SYNC=1 to name its fault.
test_device() {
  export RAF_CUDA_SYNC=1
  "$B/bin/test_device" --gpu >&2
  rc=$?
  [ $rc -eq 77 ] && { echo "test_device --gpu: skipped, it sees no GPU" >&2; exit 1; }
  [ $rc -eq 0 ] && echo "ok"
  exit $rc
}
lit_cuda() {
  export RAF_CUDA_SYNC=1
  mapfile -t tests < <(grep -rlE 'REQUIRES:.*\bcuda\b([^-]|$)' "$B/test/lit" \
    --include='*.raf' --include='*.test' | grep -v /Inputs/)
  [ ${#tests[@]} -gt 0 ] || { echo "SKIPPED (no lit test says REQUIRES: cuda)"; exit 0; }
  LD_LIBRARY_PATH=$B/lib "$PY" "$B/lit/lit.py" -v --param raf_bin="$B/bin" \
    --param llvm_bin="$B/bin" --param python="$PY" "${tests[@]}" > "$W/lit-cuda.txt" 2>&1
  rc=$?
  cat "$W/lit-cuda.txt" >&2
  grep -q "UNSUPPORTED: raf" "$W/lit-cuda.txt" &&
    echo "some tests UNSUPPORTED: lit found no cuda feature" >&2
  passed=$(grep -cE '^(PASS|XFAIL):' "$W/lit-cuda.txt")
  echo "$passed passed," \
    "$(grep -cE '^(FAIL|XPASS):' "$W/lit-cuda.txt") failed," \
    "$(grep -c '^UNSUPPORTED:' "$W/lit-cuda.txt") unsupported of ${#tests[@]}"
  [ $rc -ne 0 ] && exit $rc
  [ "$passed" -gt 0 ] || { echo "no lit test passed" >&2; exit 1; }
}
mlp() {
  set -e
  export RAF_CUDA_SYNC=1
  d=$W/mlp
  mkdir -p "$d"
  [ -f "$d/data/test_y.npy" ] ||
    "$PY" "$B/bench/gpu_data.py" mlp "$B/data/fashion-mnist" "$d/data" >&2
  "$B/bin/raf-opt" -p "autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse,dispatch{device=$DEVICE},plan-memory" \
    "$B/examples/mlp/mlp.raf" -o "$d/step.raf"
  t0=$SECONDS
  "$B/bin/raf-run" --device="$DEVICE" "$d/step.raf" --function=mlp_train_step \
    --steps=3000 --dataset=x=@"$d/data/train_x.npy" \
    --dataset=labels=@"$d/data/train_y.npy" --log="$d/train.jsonl" \
    --save="$d/mlp.safetensors" > /dev/null
  train_s=$((SECONDS - t0))
  acc=$("$B/bin/raf-run" --device="$DEVICE" "$B/examples/mlp/eval.raf" \
    --function=accuracy --load="$d/mlp.safetensors" \
    --input=x=@"$d/data/test_x.npy" --input=labels=@"$d/data/test_y.npy" |
    tail -1 | grep -oE '[0-9]+\.[0-9]+([eE][-+]?[0-9]+)?' | tail -1)
  ms=$(median_ms "$d/train.jsonl" 10)
  figure "test accuracy (eval.raf printed none)" "$acc"
  figure "median step time (no steps in train.jsonl)" "$ms"
  "$PY" -c '
import sys
acc, ms, s = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
print(f"test accuracy {100 * acc:.2f}% after 3000 steps (needs 85%), "
      f"median step {ms:.3f} ms, training {s} s")' "$acc" "$ms" "$train_s"
  at_least "test accuracy" "$acc" 0.85
}
gpt2_model() { # the model and its batches in $W/gpt2 (once)
  d=$W/gpt2
  mkdir -p "$d"
  # written aside, then moved: a part cut short leaves no half model
  [ -f "$d/gpt2.raf" ] || { "$PY" "$B/examples/gpt2/gen_gpt2.py" --layers $L \
    --heads $H --embd $C --vocab $V --ctx $T --seq $T --batch $BATCH \
    "$d/gpt2.raf.part" && mv "$d/gpt2.raf.part" "$d/gpt2.raf"; } || return 1
  [ -f "$d/y.npy" ] || "$PY" "$B/bench/gpu_data.py" tokens "$d" \
    --rows $((2 * BATCH)) --seq $T --vocab $V || return 1
}
gpt2() { # PIPELINE NAME
  set -e
  gpt2_model
  d=$W/gpt2
  "$B/bin/raf-opt" -p "$1" "$d/gpt2.raf" -o "$d/$2.raf"
  "$B/bin/raf-run" --device="$DEVICE" "$d/$2.raf" --function=gpt2_train_step \
    --steps=$((WARMUP + STEPS)) --dataset=x=@"$d/x.npy" \
    --dataset=y=@"$d/y.npy" --log="$d/$2.jsonl" > /dev/null
  ms=$(median_ms "$d/$2.jsonl" $WARMUP)
  figure "ms/step (no steps in $2.jsonl)" "$ms"
  echo "$ms" > "$d/$2.ms"
  n=$(param_count "$d/gpt2.raf")
  figure "parameter count of gpt2.raf" "$n"
  "$PY" -c '
import sys
ms, n, L, C, T, B, peak = map(float, sys.argv[1:8])
flops = (6 * n + 6 * L * C * T) * B * T  # llm.c: gpt2_estimate_mfu
print(f"{ms:.1f} ms/step, {B * T / ms * 1e3:,.0f} tokens/s, "
      f"MFU {100 * flops / (ms * 1e-3) / peak:.1f}% (of {peak / 1e12:.0f} "
      f"TFLOP/s bf16 dense; N = {n:,.0f})")' \
    "$ms" "$n" $L $C $T $BATCH $PEAK
}
gpt2_f32() {
  gpt2 "autodiff,optimizer{kind=adamw lr=3e-4},inline,fuse,dispatch{device=$DEVICE},plan-memory" f32
}
gpt2_bf16() {
  gpt2 "autodiff,amp,optimizer{kind=adamw lr=3e-4},inline,fuse,dispatch{device=$DEVICE},plan-memory" bf16
}
gpt2_epilogue() { # f32 with the cuBLASLt epilogues, against gpt2-f32
  gpt2 "autodiff,optimizer{kind=adamw lr=3e-4},inline,fuse{patterns=matmul-epilogue},dispatch{device=$DEVICE},plan-memory" f32-epilogue
  f32=$(cat "$W/gpt2/f32.ms" 2>/dev/null || true)
  figure "gpt2-f32 figure to compare with (its part failed)" "$f32" || exit 1
  "$PY" -c '
import sys
f32, epi = float(sys.argv[1]), float(open(sys.argv[2]).read())
print(f"gpt2-f32 / with epilogues: {f32 / epi:.2f}x")' "$f32" "$W/gpt2/f32-epilogue.ms"
}
gpt2_torch() {
  d=$W/gpt2
  mkdir -p "$d"
  # Its own limit, under the part's: the modes done before it are printed.
  timeout -k 5 "${TORCH_SECONDS:-95}" "$PY" "$B/bench/gpu_gpt2_torch.py" \
    --layers $L --heads $H --embd $C --vocab $V --seq $T --batch $BATCH \
    --steps $STEPS --warmup $WARMUP > "$d/torch.jsonl"
  rc=$?
  "$PY" - "$d" <<'PY'
import json, os, sys
d = sys.argv[1]
def raf(name):
    try:
        return float(open(os.path.join(d, name + ".ms")).read())
    except (OSError, ValueError):
        return None
missing, lines = [], 0
for line in open(os.path.join(d, "torch.jsonl")):
    r = json.loads(line)
    name = "bf16" if r["mode"].endswith("bf16") else "f32"
    mine = raf(name)
    vs = (f"torch/raf {r['ms'] / mine:.2f}x" if mine else "raf: no figure")
    print(f"{r['mode']:<13} {r['ms']:.1f} ms/step; {vs}")
    lines += 1
    if not mine and name not in missing:
        missing.append(name)
# A part fails without its figures: torch's, or raf's to compare them with.
if not lines:
    sys.exit("gpu_gpt2_torch.py printed no figure")
if missing:
    sys.exit("no raf figure to compare with (gpt2-" + ", gpt2-".join(missing) + " failed)")
PY
  figs=$?
  [ $rc -eq 124 ] && echo "gpu_gpt2_torch.py: timed out after ${TORCH_SECONDS:-95} s" >&2
  [ $rc -ne 0 ] && exit $rc
  exit $figs
}
copy_bw() {
  "$PY" "$B/bench/gpu_copy_bw.py" > "$W/copy.json" || exit 1
  "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(f"torch y.copy_(x), 2 x 1 GiB f32: {r[\"gbs\"]:.0f} GB/s (read + write)")' "$W/copy.json"
}
pct_of_copy() { # BYTES MS WHAT: fails without MS or the copy's figure
  figure "median time of $3" "$2" || return 1
  "$PY" -c '
import json, sys
nbytes, ms, what = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
gbs = nbytes / (ms * 1e-3) / 1e9
try:
    ref = json.load(open(sys.argv[4]))["gbs"]
    vs = f"{100 * gbs / ref:.0f}% of the copy bandwidth"
except (OSError, ValueError, KeyError):
    ref, vs = None, "no copy bandwidth to compare"
print(f"{what}: {ms:.3f} ms, {gbs:.0f} GB/s, {vs}")
if ref is None:
    sys.exit("no copy bandwidth to compare with (the copy-bw part failed)")' \
    "$1" "$2" "$3" "$W/copy.json"
}
export -f pct_of_copy
elementwise() {
  set -e
  d=$W/elementwise
  mkdir -p "$d"
  cat > "$d/f.raf" <<'EOF'
func @fused_0(%x: f32[16384,4096], %b: f32[4096]) -> f32[16384,4096] {fused} {
  %h = add(%x, %b)
  %c = constant 0.5 : f32[]
  %m = mul(%h, %c)
  %r = relu(%m)
  %k = constant 0.1 : f32[]
  %d = sub(%r, %k)
  %e = mul(%d, %d)
  %y = add(%e, %x)
  return %y
}
func @main(%x: f32[16384,4096] {init = "normal(0, 1)"}, %b: f32[4096] {init = "normal(1, 0.5)"}) -> f32[16384,4096] {
  %y = call @fused_0(%x, %b)
  return %y
}
EOF
  "$B/bin/raf-run" --device="$DEVICE" "$d/f.raf" --steps=12 --log="$d/log.jsonl" \
    --print=none > /dev/null
  # read x, write y (b stays in the cache): 8 bytes per element
  pct_of_copy $((16384 * 4096 * 8)) "$(median_ms "$d/log.jsonl" 2)" \
    "7-op elementwise chain, f32[16384,4096]"
}
adamw() {
  set -e
  gpt2_model
  d=$W/adamw
  mkdir -p "$d"
  "$PY" "$B/bench/gen_adamw.py" "$W/gpt2/gpt2.raf" "$d/update.raf"
  "$B/bin/raf-opt" -p "optimizer{kind=adamw lr=3e-4},inline,fuse,dispatch{device=$DEVICE},plan-memory" \
    "$d/update.raf" -o "$d/step.raf"
  "$B/bin/raf-run" --device="$DEVICE" "$d/step.raf" --function=u_train_step \
    --steps=10 --log="$d/log.jsonl" --print=none > /dev/null
  n=$(param_count "$W/gpt2/gpt2.raf")
  # read p, g, m, v; write p, m, v: 28 bytes per element
  pct_of_copy $((28 * n)) "$(median_ms "$d/log.jsonl" 2)" \
    "AdamW update, GPT-2 124M ($n f32)"
}
matmul() {
  if [ -f "$B/bench/gpu_matmul.sh" ]; then
    PYTHON="$PY" bash "$B/bench/gpu_matmul.sh" "$B/bin"
  elif [ -f "$B/bench/gpu_matmul.py" ]; then
    "$PY" "$B/bench/gpu_matmul.py" --raf-bin "$B/bin"
  else
    echo "SKIPPED (no bench/gpu_matmul)"
  fi
}
export -f devices test_device lit_cuda mlp gpt2_model gpt2 gpt2_f32 gpt2_bf16 \
  gpt2_torch copy_bw elementwise adamw matmul gpt2_epilogue

echo "gpu-check.sh: $B, $(date -u '+%Y-%m-%d %H:%M UTC'), at most $total s"
part devices 30 devices
part test_device 60 test_device
part lit-cuda 60 lit_cuda
part mlp 60 mlp
part gpt2-f32 50 gpt2_f32
part gpt2-bf16 50 gpt2_bf16
part gpt2-torch 110 gpt2_torch
part copy-bw 20 copy_bw
part elementwise 20 elementwise
part adamw 30 adamw
part matmul 40 matmul
part gpt2-epi 50 gpt2_epilogue
echo "gpu-check.sh: $failed part(s) failed, $((SECONDS - start)) s"
[ "$failed" -eq 0 ]
