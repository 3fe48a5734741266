#!/usr/bin/env bash
# bert_step.sh: BERT-base masked-LM training steps (AdamW), raf against
# PyTorch eager on the same machine, in the same run, with the same thread
# count. The model is examples/bert/bert.py's `base` config (12 layers, 768
# wide, 12 heads, FFN 3072, character vocabulary of 77, 128 positions:
# 85.8M params) exported by raf_torch, on examples/bert/prepare_data.py's
# masked batches; both sides start from the same weights (torch.manual_seed
# (0)) and see the same batches, so their first losses agree.
#
#   bash bench/bert_step.sh [BUILD_DIR] [SIZES] [STEPS]
#     BUILD_DIR  raf's build directory (default build)
#     SIZES      space-separated BxT, T at most 128 (default "8x128")
#     STEPS      steps per run, the first a warm-up left out (default 4)
#   environment:
#     THREADS    kernel/BLAS/torch threads, both sides (default 2)
#     ROUNDS     runs of each variant, interleaved, the order reversed every
#                other round (default 2)
#     VARIANTS   (default "torch fused planned")
#       fused    raf-opt -p 'autodiff,optimizer{kind=adamw lr=1e-4 beta1=0.9
#                beta2=0.999 eps=1e-6 weight_decay=0.01},inline,fuse'
#       planned  fused, then plan-memory
#       torch    bench/bert_torch.py: torch.optim.AdamW, eager, with
#                OMP_WAIT_POLICY=PASSIVE unless the environment sets it
#
# Printed per size and variant, medians over all rounds' steps after the
# warm-up (as bench/train_step.sh measures them): step_ms, the whole period
# of a step (raf: between consecutive --log lines, bench/steptime.c; torch:
# zero_grad + forward + backward + step), its range, call_ms (raf-run's
# --log time of the call alone), tokens/s, peak RSS, the ratios to PyTorch
# (below 1: raf faster) and the first step's loss.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
sizes=${2:-8x128}
steps=${3:-4}
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
variants=${VARIANTS:-torch fused planned}
opt='optimizer{kind=adamw lr=1e-4 beta1=0.9 beta2=0.999 eps=1e-6 weight_decay=0.01}'
py=/usr/bin/python3
for v in $variants; do
  case $v in fused | planned | torch) ;;
    *) echo "bert_step.sh: unknown variant '$v' (fused planned torch)" >&2
       exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -shared -fPIC bench/steptime.c -o "$tmp/steptime.so"

run_variant() { # DIR B STEPS VARIANT ROUND
  local d=$1 B=$2 n=$3 v=$4 r=$5 out=$1/$4.$5
  if [ "$v" = torch ]; then
    OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} \
      /usr/bin/time -f '%M' -o "$out.rss" $py bench/bert_torch.py --config base \
      --batch "$B" --steps "$n" --threads "$threads" --lr 1e-4 "$d/data" \
      > "$out.json"
    return
  fi
  RAF_CACHE_DIR=$d/cache RAF_STEP_TIMES=$out.times \
    LD_PRELOAD=$tmp/steptime.so /usr/bin/time -f '%M' -o "$out.rss" \
    "$build/raf-run" "$d/$v.raf" --function=bert_train_step \
    --threads="$threads" --steps="$n" --load="$d/bert.safetensors" \
    --dataset=input_ids=@"$d/data/input_ids.npy" \
    --dataset=labels=@"$d/data/labels.npy" --log="$out.jsonl" \
    --output=@"$d/loss.npy" > /dev/null 2> "$out.err" || {
    echo "raf-run failed ($v, round $((r + 1))):" >&2
    tail -n 5 "$out.err" >&2
    exit 1
  }
}

echo "BERT-base (examples/bert/bert.py, 12 layers, 768 wide, vocab 77)," \
  "AdamW lr 1e-4, ${threads} threads, ${rounds} rounds, build ${build}"
for size in $sizes; do
  B=${size%x*} T=${size#*x}
  if [ "$T" -gt 128 ]; then
    echo "bert_step.sh: T=$T is longer than the position table (128)" >&2
    exit 2
  fi
  d=$tmp/$size
  mkdir -p "$d"
  $py examples/bert/prepare_data.py --seq "$T" --batch "$B" --copies 1 \
    --batches 8 "$d/data" > /dev/null
  $py - "$d" "$B" <<'PY'
import os, sys
import numpy as np
import torch
sys.path[:0] = [os.path.join(os.getcwd(), "python"),
                os.path.join(os.getcwd(), "examples", "bert")]
import raf_torch
import bert
d, B = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)  # bench/bert_torch.py's init
model = bert.Bert(**bert.CONFIGS["base"]).train()
ex = tuple(torch.from_numpy(np.load(f"{d}/data/{n}.npy")[:B])
           for n in ("input_ids", "labels"))
raf_torch.export(model, ex, f"{d}/bert")
PY
  t0=$(date +%s.%N)
  "$build/raf-opt" -p "autodiff,$opt,inline,fuse" "$d/bert.raf" -o "$d/fused.raf"
  t1=$(date +%s.%N)
  "$build/raf-opt" -p "autodiff,$opt,inline,fuse,plan-memory" "$d/bert.raf" \
    -o "$d/planned.raf"

  echo
  echo "== ${size}: B=${B}, T=${T}, ${steps} steps per run (1 warm-up);" \
    "raf-opt (fused) $(printf '%.3f' "$(echo "$t1 - $t0" | bc)") s"
  order=($variants)
  for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < ${#order[@]}; i++)); do
      if ((r % 2)); then v=${order[$((${#order[@]} - 1 - i))]}; else v=${order[$i]}; fi
      echo "  round $((r + 1))/$rounds: $v" >&2
      run_variant "$d" "$B" "$steps" "$v" "$r"
    done
  done

  $py - "$d" "$B" "$T" "$rounds" $variants <<'PY'
import json, statistics, sys
d, B, T, rounds = sys.argv[1], *map(int, sys.argv[2:5])
variants = sys.argv[5:]
med = statistics.median
rows = {}
for v in variants:
    step, call, rss, loss1 = [], [], [], []
    for r in range(rounds):
        base = f"{d}/{v}.{r}"
        rss.append(int(open(f"{base}.rss").read().split()[-1]) / 1024)
        if v == "torch":
            j = json.loads(open(f"{base}.json").read())
            step += j["ms"][1:]
            loss1.append(j["loss"][0])
            continue
        log = [json.loads(l) for l in open(f"{base}.jsonl")]
        call += [e["ms"] for e in log][1:]
        loss1.append(log[0]["loss"])
        t = [float(l) for l in open(f"{base}.times")]
        step += [b - a for a, b in zip(t, t[1:])]
    if not step:
        sys.exit(f"{v}: no timed steps (STEPS must be at least 2)")
    rows[v] = dict(step=med(step), lo=min(step), hi=max(step),
                   call=med(call) if call else None, rss=max(rss),
                   loss1=loss1[0])
names = {"fused": "raf fused", "planned": "raf fused+plan-memory",
         "torch": "pytorch eager"}
tq = rows.get("torch")
print(f"{'variant':<22} {'step_ms':>9} {'(range)':>15} {'call_ms':>9} "
      f"{'tokens/s':>9} {'rss_MB':>7} {'vs_torch':>8} {'rss_vs':>7} "
      f"{'loss1':>9}")
for v in variants:
    x = rows[v]
    call = f"{x['call']:9.0f}" if x["call"] is not None else f"{'-':>9}"
    ratio = f"{x['step'] / tq['step']:8.2f}" if tq else f"{'-':>8}"
    rratio = f"{x['rss'] / tq['rss']:7.2f}" if tq else f"{'-':>7}"
    rng = f"({x['lo']:.0f}-{x['hi']:.0f})"
    print(f"{names[v]:<22} {x['step']:9.0f} {rng:>15} {call} "
          f"{B * T * 1e3 / x['step']:9.1f} {x['rss']:7.0f} {ratio} "
          f"{rratio} {x['loss1']:9.5f}")
if tq:
    for v in variants:
        if v != "torch":
            print(f"[{B}x{T}] {names[v]}: {tq['step'] / rows[v]['step']:.2f}x "
                  f"PyTorch eager's speed")
PY
done
