#!/usr/bin/env bash
# gpu-check.sh [BUNDLE]: checks raf on a CUDA GPU, from the bundle that
# scripts/gpu-bundle.sh makes (BUNDLE: the .tar.xz, unpacked next to it, or
# its unpacked raf-gpu/ folder; default: the bundle this script is in).
# Nothing is compiled: the GPU machine needs the NVIDIA driver, python3 and,
# for the PyTorch figures, torch with CUDA.
#
# It prints one line per figure and finishes within 550 s (CHECK_SECONDS,
# default 550, under the 10 minutes a GPU machine may give one command): every part runs in a subshell under `timeout`, its limit cut
# to what is left of the whole. A part that fails prints `FAILED (reason)`
# and the next one runs; the exit status is 1 if any part failed. The parts'
# limits add up to more than the whole, so a slow part leaves less to the
# last ones: CHECK_PARTS runs only the parts it names, CHECK_SKIP leaves out
# those it names (names or shell patterns, separated by spaces or commas:
# CHECK_PARTS='resnet-* conv' CHECK_SKIP=gpt2-torch); a part left out
# prints `SKIPPED (CHECK_PARTS)` or `SKIPPED (CHECK_SKIP)` and does not
# fail. The parts' output is kept in work/ beside bin/ (work/NAME.log).
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
#   g  resnet-f32, resnet-bf16   torchvision's ResNet-18, B=64
#                  3x224x224, as bench/resnet.sh exports it (the bundle's
#                  data/resnet18/resnet.raf; its weights and a random batch
#                  made here by bench/gpu_resnet_torch.py inputs), training
#                  steps with AdamW lr 1e-3 on --device=cuda (bf16: the amp
#                  pass): ms/step, images/s
#      resnet-torch  bench/gpu_resnet_torch.py: the same step in PyTorch,
#                  eager and torch.compile, f32 and bf16, and torch ms / raf
#                  ms (above 1, raf is faster)
#      conv        ResNet-18's 3x3 convolution at 64 channels, B=64, 56x56,
#                  forward and both gradients (bench/gen_gpu_ops.py conv),
#                  f32 and bf16, against F.conv2d forward and backward:
#                  torch ms / raf ms (the target: at least 0.9)
#      conv-fusion relu(conv2d + bias) (bench/gen_gpu_ops.py conv-bias-
#                  relu) statement by statement and as cudnn's conv-bias-relu
#                  pattern's one graph: plain ms / fused ms, above 1 if the
#                  pattern helps
#   h  attention   causal attention forward and backward, B=8 H=12 T=1024
#                  D=64 bf16 (bench/gen_gpu_ops.py attention), on
#                  --dialects=cudnn,cuda and --dialects=cublas,cuda, against
#                  F.scaled_dot_product_attention (bench/gpu_attention_
#                  torch.py): ms each, cublas ms / cudnn ms, torch ms /
#                  cudnn ms
#   i  gpt2-cudnn  gpt2-bf16 (its attention on cudnn, the default dispatch:
#                  checked in the dispatched module) against the same step
#                  dispatched without cudnn (dialects=cublas,cuda: the
#                  cublas attention): both ms/step and cublas / cudnn
# A part whose figure is missing (not printed, empty, nan) fails, and so does
# one whose comparison has nothing to compare with: scripts/gpu-check-lib.sh.
# PYTHON (default python3) runs the Python parts; TORCH_SECONDS (default 95)
# limits PyTorch's GPT-2 and ResNet-18 runs within their parts, so that the
# modes done before it still print. CHECK_DEVICE (default
# cuda) is the device of raf-run: CHECK_DEVICE=cpu tries the script's
# plumbing on a machine without a GPU (the GPT-2, ResNet-18 and conv parts
# are then far too slow for their limits, and attention and gpt2-cudnn ask
# for the cuda device's dialects).
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
total=${CHECK_SECONDS:-550}
start=$SECONDS
failed=0
# A figure another part of this run wrote is newer than this file: one
# left in work/ by an earlier run is not compared with.
touch "$W/started"
IFS=', ' read -ra only <<< "${CHECK_PARTS:-}"
IFS=', ' read -ra skip <<< "${CHECK_SKIP:-}"

# GPT-2 124M as gpu-check measures it.
export L=12 H=12 C=768 V=50257 T=1024 BATCH=8 STEPS=8 WARMUP=2
PEAK=989e12 # H200 SXM, bf16 dense (tf32 494e12, f32 67e12)
export PEAK

# matches NAME PATTERN...: whether NAME matches one of the patterns
matches() {
  local name=$1 p
  shift
  for p in "$@"; do
    # shellcheck disable=SC2254 # the pattern is a pattern
    case $name in $p) return 0 ;; esac
  done
  return 1
}
# part NAME SECONDS FUNCTION: runs FUNCTION in a subshell under timeout;
# its stdout lines are the part's figures, its stderr goes to the log.
part() {
  local name=$1 limit=$2 fn=$3 left rc reason
  if [ ${#only[@]} -gt 0 ] && ! matches "$name" "${only[@]}"; then
    printf '%-12s SKIPPED (CHECK_PARTS)\n' "$name"
    return
  fi
  if [ ${#skip[@]} -gt 0 ] && matches "$name" "${skip[@]}"; then
    printf '%-12s SKIPPED (CHECK_SKIP)\n' "$name"
    return
  fi
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

# the figure FILE holds, if a part of this run wrote it (else nothing,
# which `figure` refuses): one of an earlier run, or of a part that failed
# or was skipped this time, is not compared with
fresh_ms() { # FILE
  [ "$1" -nt "$W/started" ] && cat "$1"
  return 0
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
export -f fresh_ms median_ms param_count figure at_least

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
gpt2() { # PIPELINE NAME [RAF-RUN OPTIONS...]
  set -e
  gpt2_model
  d=$W/gpt2
  "$B/bin/raf-opt" -p "$1" "$d/gpt2.raf" -o "$d/$2.raf"
  "$B/bin/raf-run" --device="$DEVICE" "$d/$2.raf" --function=gpt2_train_step \
    --steps=$((WARMUP + STEPS)) --dataset=x=@"$d/x.npy" \
    --dataset=y=@"$d/y.npy" --log="$d/$2.jsonl" "${@:3}" > /dev/null
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
  f32=$(fresh_ms "$W/gpt2/f32.ms")
  figure "gpt2-f32 figure to compare with (its part failed or did not run)" "$f32" || exit 1
  "$PY" -c '
import sys
f32, epi = float(sys.argv[1]), float(open(sys.argv[2]).read())
print(f"gpt2-f32 / with epilogues: {f32 / epi:.2f}x")' "$f32" "$W/gpt2/f32-epilogue.ms"
}
# torch_vs_raf DIR SCRIPT PREFIX UNIT: each mode of DIR/torch.jsonl (SCRIPT's
# lines: {"mode", "ms"}) with torch's time over raf's, raf's being what the
# part PREFIX-f32 or PREFIX-bf16 of this run wrote (DIR/f32.ms, bf16.ms).
# Fails without torch's figures, or raf's to compare them with.
torch_vs_raf() {
  "$PY" - "$@" "$W/started" <<'PY'
import json, os, sys
d, script, prefix, unit, started = sys.argv[1:6]
def raf(name):
    path = os.path.join(d, name + ".ms")
    try:
        if os.path.getmtime(path) <= os.path.getmtime(started):
            return None  # an earlier run's figure
        return float(open(path).read())
    except (OSError, ValueError):
        return None
missing, lines = [], 0
for line in open(os.path.join(d, "torch.jsonl")):
    r = json.loads(line)
    name = "bf16" if r["mode"].endswith("bf16") else "f32"
    mine = raf(name)
    vs = (f"torch/raf {r['ms'] / mine:.2f}x" if mine else "raf: no figure")
    print(f"{r['mode']:<13} {r['ms']:.1f} {unit}; {vs}")
    lines += 1
    if not mine and name not in missing:
        missing.append(name)
# A part fails without its figures: torch's, or raf's to compare them with.
if not lines:
    sys.exit(f"{script} printed no figure")
if missing:
    sys.exit(f"no raf figure of this run to compare with ({prefix}-"
             + f", {prefix}-".join(missing) + " failed or did not run)")
PY
}
gpt2_torch() {
  d=$W/gpt2
  mkdir -p "$d"
  # Its own limit, under the part's: the modes done before it are printed.
  timeout -k 5 "${TORCH_SECONDS:-95}" "$PY" "$B/bench/gpu_gpt2_torch.py" \
    --layers $L --heads $H --embd $C --vocab $V --seq $T --batch $BATCH \
    --steps $STEPS --warmup $WARMUP > "$d/torch.jsonl"
  rc=$?
  torch_vs_raf "$d" gpu_gpt2_torch.py gpt2 ms/step
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

# ResNet-18 as gpu-check measures it (bench/resnet.sh's model at 3x224).
export RBATCH=64
resnet_model() { # the bundle's model's weights and batch in $W/resnet/model (once)
  d=$W/resnet
  mkdir -p "$d"
  [ -f "$B/data/resnet18/resnet.raf" ] || {
    echo "no data/resnet18/resnet.raf in the bundle (scripts/gpu-bundle.sh exports it)" >&2
    return 1; }
  [ -f "$d/model/labels.npy" ] && return 0
  # written aside, then moved: a part cut short leaves no half file
  rm -rf "$d/model.part"
  "$PY" "$B/bench/gpu_resnet_torch.py" inputs "$d/model.part" --batch $RBATCH >&2 &&
    mv "$d/model.part" "$d/model"
}
resnet() { # PIPELINE NAME
  set -e
  resnet_model
  d=$W/resnet
  "$B/bin/raf-opt" -p "$1" "$B/data/resnet18/resnet.raf" -o "$d/$2.raf"
  "$B/bin/raf-run" --device="$DEVICE" "$d/$2.raf" --function=resnet_train_step \
    --steps=$((WARMUP + STEPS)) --load="$d/model/resnet.safetensors" \
    --dataset=x=@"$d/model/x.npy" --dataset=labels=@"$d/model/labels.npy" \
    --log="$d/$2.jsonl" --print=none > /dev/null
  ms=$(median_ms "$d/$2.jsonl" $WARMUP)
  figure "ms/step (no steps in $2.jsonl)" "$ms"
  echo "$ms" > "$d/$2.ms"
  "$PY" -c '
import sys
ms, b = float(sys.argv[1]), int(sys.argv[2])
print(f"{ms:.1f} ms/step, {b * 1e3 / ms:,.0f} images/s (B={b}, 3x224x224, AdamW)")' \
    "$ms" $RBATCH
}
resnet_f32() {
  resnet "autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse,dispatch{device=$DEVICE},plan-memory" f32
}
resnet_bf16() {
  resnet "autodiff,amp,optimizer{kind=adamw lr=1e-3},inline,fuse,dispatch{device=$DEVICE},plan-memory" bf16
}
resnet_torch() {
  resnet_model || exit 1
  d=$W/resnet
  # Its own limit, under the part's: the modes done before it are printed.
  timeout -k 5 "${TORCH_SECONDS:-95}" "$PY" "$B/bench/gpu_resnet_torch.py" \
    torch "$d/model" --batch $RBATCH --steps $STEPS --warmup $WARMUP > "$d/torch.jsonl"
  rc=$?
  torch_vs_raf "$d" gpu_resnet_torch.py resnet ms/step
  figs=$?
  [ $rc -eq 124 ] && echo "gpu_resnet_torch.py: timed out after ${TORCH_SECONDS:-95} s" >&2
  [ $rc -ne 0 ] && exit $rc
  exit $figs
}
# op_ms DIR NAME PIPELINE [RAF-RUN OPTIONS...]: raf-opt and 12 steps of the
# one-op module DIR/NAME.raf's @main (bench/gen_gpu_ops.py), its median ms
# after 2 in DIR/NAME.ms (none when it fails: not an earlier run's either)
op_ms() {
  local d=$1 name=$2 ms
  rm -f "$d/$name.ms"
  "$B/bin/raf-opt" -p "$3" "$d/$name.raf" -o "$d/$name-step.raf" || return 1
  "$B/bin/raf-run" --device="$DEVICE" "$d/$name-step.raf" --steps=12 \
    --log="$d/$name.jsonl" --print=none "${@:4}" > /dev/null || return 1
  ms=$(median_ms "$d/$name.jsonl" 2)
  figure "median time of $name (no steps in $name.jsonl)" "$ms" || return 1
  echo "$ms" > "$d/$name.ms"
}
export -f op_ms
conv() { # the target: raf's convolutions within 10% of PyTorch's
  set -e
  d=$W/conv
  mkdir -p "$d"
  for t in f32 bf16; do
    "$PY" "$B/bench/gen_gpu_ops.py" conv --dtype $t "$d/$t.raf"
    op_ms "$d" $t "dispatch{device=$DEVICE},plan-memory"
  done
  "$PY" "$B/bench/gpu_resnet_torch.py" conv --dtypes f32,bf16 > "$d/torch.jsonl"
  "$PY" - "$d" <<'PY'
import json, os, sys
d = sys.argv[1]
lines = [json.loads(l) for l in open(os.path.join(d, "torch.jsonl"))]
if not lines:
    sys.exit("gpu_resnet_torch.py conv printed no figure")
for r in lines:
    mine = float(open(os.path.join(d, r["dtype"] + ".ms")).read())
    tf32 = ", cuDNN's TF32 allowed, PyTorch's default" if r["tf32"] and r["dtype"] == "f32" else ""
    print(f"3x3 conv 64->64, B=64 56x56, {r['dtype']}, forward + backward: "
          f"raf {mine:.3f} ms, torch {r['ms']:.3f} ms{tf32}; "
          f"torch/raf {r['ms'] / mine:.2f}x (target: at least 0.90)")
PY
}
conv_fusion() { # keep cudnn's conv-bias-relu pattern only if it helps
  set -e
  d=$W/conv-fusion
  mkdir -p "$d"
  "$PY" "$B/bench/gen_gpu_ops.py" conv-bias-relu "$d/plain.raf"
  cp "$d/plain.raf" "$d/fused.raf"
  op_ms "$d" plain "dispatch{device=$DEVICE},plan-memory"
  op_ms "$d" fused \
    "fuse{patterns=conv-bias-relu},dispatch{device=$DEVICE},plan-memory"
  "$PY" -c '
import sys
plain, fused = (float(open(f).read()) for f in sys.argv[1:3])
print(f"conv + bias + relu, 64->64, B=64 56x56, f32: statement by statement "
      f"{plain:.3f} ms, one cuDNN graph {fused:.3f} ms; plain/fused "
      f"{plain / fused:.2f}x (above 1: the pattern helps)")' "$d/plain.ms" "$d/fused.ms"
}
attention() {
  set -e
  d=$W/attention
  mkdir -p "$d"
  "$PY" "$B/bench/gen_gpu_ops.py" attention "$d/att.raf"
  # Each dialect list, even when one fails: the other figures still print.
  bad=0
  for ds in cudnn cublas; do
    cp "$d/att.raf" "$d/$ds.raf"
    op_ms "$d" $ds "dispatch{device=$DEVICE dialects=$ds,cuda},plan-memory" \
      --dialects=$ds,cuda || bad=1
  done
  "$PY" "$B/bench/gpu_attention_torch.py" > "$d/torch.json" || bad=1
  "$PY" - "$d" <<'PY' || bad=1
import json, os, sys
d = sys.argv[1]
def ms(name):
    try:
        return float(open(os.path.join(d, name + ".ms")).read())
    except (OSError, ValueError):
        return None
cudnn, cublas = ms("cudnn"), ms("cublas")
try:
    torch = json.load(open(os.path.join(d, "torch.json")))
except (OSError, ValueError):
    torch = None
def vs(x, what):
    return f"; {what} / cudnn {x / cudnn:.2f}x" if cudnn else ""
what = "causal attention B=8 H=12 T=1024 D=64 bf16, forward + backward"
if cudnn:
    print(f"raf cudnn,cuda:  {cudnn:.3f} ms ({what})")
if cublas:
    print(f"raf cublas,cuda: {cublas:.3f} ms{vs(cublas, 'cublas')}")
if torch:
    print(f"torch ({torch['backend']}): {torch['ms']:.3f} ms{vs(torch['ms'], 'torch')}")
if not cudnn:
    sys.exit("no cudnn figure to compare with")
PY
  exit $bad
}
gpt2_cudnn() { # gpt2-bf16, attention on cudnn, against the cublas attention
  set -e
  d=$W/gpt2
  amp="autodiff,amp,optimizer{kind=adamw lr=3e-4},inline,fuse"
  # gpt2-bf16's step of this run, else one of its own
  cudnn=$(fresh_ms "$d/bf16.ms")
  [ -n "$cudnn" ] || { gpt2 "$amp,dispatch{device=$DEVICE},plan-memory" bf16 >&2;
                       cudnn=$(cat "$d/bf16.ms"); }
  figure "gpt2-bf16 step time" "$cudnn"
  # The default dispatch must have chosen cudnn for the attention, or
  # there is nothing to compare.
  n=$(grep -cE 'scaled_dot_product_attention.*dialect = "cudnn"' "$d/bf16.raf" || true)
  [ "${n:-0}" -gt 0 ] ||
    { echo "the default dispatch put no attention of bf16.raf on cudnn" >&2; exit 1; }
  gpt2 "$amp,dispatch{device=$DEVICE dialects=cublas,cuda},plan-memory" \
    bf16-cublas --dialects=cublas,cuda >&2
  "$PY" -c '
import sys
cudnn, cublas = float(sys.argv[1]), float(open(sys.argv[2]).read())
print(f"bf16 step, attention on cudnn (default dispatch): {cudnn:.1f} ms")
print(f"bf16 step, attention on cublas (dialects=cublas,cuda): {cublas:.1f} ms; "
      f"cublas / cudnn {cublas / cudnn:.2f}x")' "$cudnn" "$d/bf16-cublas.ms"
}
export -f devices test_device lit_cuda mlp gpt2_model gpt2 gpt2_f32 gpt2_bf16 \
  torch_vs_raf gpt2_torch copy_bw elementwise adamw matmul gpt2_epilogue \
  resnet_model resnet resnet_f32 resnet_bf16 resnet_torch conv conv_fusion \
  attention gpt2_cudnn

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
part resnet-f32 60 resnet_f32
part resnet-bf16 40 resnet_bf16
part resnet-torch 110 resnet_torch
part conv 30 conv
part conv-fusion 20 conv_fusion
part attention 30 attention
part gpt2-cudnn 50 gpt2_cudnn
echo "gpu-check.sh: $failed part(s) failed, $((SECONDS - start)) s"
[ "$failed" -eq 0 ]
