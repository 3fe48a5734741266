#!/usr/bin/env bash
# resnet.sh: torchvision's ResNet-18 training step (AdamW), raf against
# PyTorch eager on the same machine, in the same run, with the same
# thread count.
#
#   bash bench/resnet.sh [BUILD_DIR] [CONFIGS] [STEPS]
#     BUILD_DIR  raf's build directory (default build)
#     CONFIGS    space-separated BATCHxCHANNELSxSIZE (default
#                "32x1x28 8x3x224": Fashion-MNIST's images, as
#                examples/resnet/ trains, and ImageNet's)
#     STEPS      steps per run, the first a warm-up left out (default 6)
#   environment:
#     THREADS    raf-run's --threads and torch.set_num_threads (default 2)
#     ROUNDS     runs of each side, interleaved, the order reversed every
#                other round (default 2)
#     DIALECTS   raf-run's --dialects (default: raf-run's own, every
#                dialect the build has, by priority)
#
# Both sides train the same model from the same weights on the same
# batches: bench/resnet_torch.py draws torchvision's resnet18 with seed 0
# (at 1x28 the first convolution takes one channel and the head has 10
# classes), exports it in train() mode with its loss through the PyTorch
# exporter (python/raf_torch), and writes 4 random batches. raf's step is
#   raf-opt -p 'autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse,plan-memory'
# run by raf-run --steps with --load of the exported weights; PyTorch's is
# zero_grad + forward + backward + torch.optim.AdamW(lr=1e-3).step(), with
# OMP_WAIT_POLICY=PASSIVE (its faster setting on 2 cores).
#
# Printed per configuration, medians over all rounds' steps after the
# warm-up: step_ms (raf: the whole period between --log lines, by
# bench/steptime.c; PyTorch: the loop body), its range, images/s, peak RSS,
# raf/PyTorch step-time ratio (below 1: raf faster) and speedup, and the
# first two losses of each side (the same model and batches: they agree to
# float rounding).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
configs=${2:-32x1x28 8x3x224}
steps=${3:-6}
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -shared -fPIC bench/steptime.c -o "$tmp/steptime.so"
dialects=()
[ -n "${DIALECTS:-}" ] && dialects=(--dialects="$DIALECTS")

run_raf() { # DIR ROUND
  local d=$1 out=$1/raf.$2
  RAF_STEP_TIMES=$out.times LD_PRELOAD=$tmp/steptime.so \
    /usr/bin/time -f '%M' -o "$out.rss" \
    "$build/raf-run" "$d/step.raf" --function=resnet_train_step \
    "${dialects[@]}" --threads="$threads" --steps="$steps" \
    --load="$d/resnet.safetensors" --dataset=x=@"$d/x.npy" \
    --dataset=labels=@"$d/labels.npy" --log="$out.jsonl" --print=none \
    > /dev/null 2> "$out.err" || { tail -n 5 "$out.err" >&2; exit 1; }
}

run_torch() { # DIR ROUND INPUT BATCH
  local out=$1/torch.$2
  OMP_WAIT_POLICY=PASSIVE /usr/bin/time -f '%M' -o "$out.rss" \
    $py bench/resnet_torch.py torch --input "$3" --batch "$4" \
    --steps "$steps" --threads "$threads" "$1" > "$out.json"
}

echo "ResNet-18 training step, AdamW lr 1e-3, ${threads} threads," \
  "${rounds} rounds, ${steps} steps a run (1 warm-up), build ${build}"
for cfg in $configs; do
  IFS=x read -r B C S <<< "$cfg"
  d=$tmp/$cfg
  mkdir -p "$d"
  PYTHONPATH=python $py bench/resnet_torch.py export --input "${C}x$S" \
    --batch "$B" "$d"
  t0=$(date +%s.%N)
  "$build/raf-opt" -p 'autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse,plan-memory' \
    "$d/resnet.raf" -o "$d/step.raf"
  opt_s=$(printf '%.2f' "$(echo "$(date +%s.%N) - $t0" | bc)")
  echo
  echo "== B=$B, ${C}x${S}x${S} (raf-opt: ${opt_s} s)"
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2)); then
      run_torch "$d" "$r" "${C}x$S" "$B"; run_raf "$d" "$r"
    else
      run_raf "$d" "$r"; run_torch "$d" "$r" "${C}x$S" "$B"
    fi
  done
  $py - "$d" "$B" "$rounds" <<'PY'
import json, statistics, sys
d, B, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = {}
for side in ("raf", "torch"):
    step, rss, loss = [], [], None
    for r in range(rounds):
        base = f"{d}/{side}.{r}"
        rss.append(int(open(f"{base}.rss").read().split()[-1]) / 1024)
        if side == "torch":
            j = json.loads(open(f"{base}.json").read())
            step += j["ms"][1:]
            loss = loss or j["loss"][:2]
            continue
        t = [float(l) for l in open(f"{base}.times")]
        step += [b - a for a, b in zip(t, t[1:])]
        log = [json.loads(l) for l in open(f"{base}.jsonl")]
        loss = loss or [e["loss"] for e in log[:2]]
    rows[side] = dict(step=statistics.median(step), lo=min(step),
                      hi=max(step), rss=max(rss), loss=loss)
names = {"raf": "raf (planned)", "torch": "pytorch eager"}
print(f"{'side':<15} {'step_ms':>9} {'(range)':>15} {'images/s':>9} "
      f"{'rss_MB':>7} {'losses 1, 2':>22}")
for side, x in rows.items():
    rng = f"({x['lo']:.0f}-{x['hi']:.0f})"
    print(f"{names[side]:<15} {x['step']:9.1f} {rng:>15} "
          f"{B * 1e3 / x['step']:9.1f} {x['rss']:7.0f} "
          f"{x['loss'][0]:10.5f} {x['loss'][1]:10.5f}")
ratio = rows["raf"]["step"] / rows["torch"]["step"]
print(f"target: ResNet-18 B={B} step at least 1.2x as fast as PyTorch eager: "
      f"{1 / ratio:.2f}x (raf {rows['raf']['step']:.0f} ms, PyTorch "
      f"{rows['torch']['step']:.0f} ms)")
PY
done
