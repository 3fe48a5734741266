#!/usr/bin/env bash
# fused_vs_unfused.sh BUILD_DIR: the examples' training steps give the same
# losses fused (inline, fuse, plan-memory; fused functions on the llvm
# dialect) as unfused (every statement on cblas/cpu-ref), step by step to a
# relative 1e-4: the MLP on synthetic batches and a small GPT-2 on GPL-3 text.
# The logs stay in BUILD_DIR/fused_vs_unfused, each model's two loss curves
# drawn beside them (mlp.png, gpt2.png; scripts/plot-log.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
logs=$build/fused_vs_unfused
mkdir -p "$logs"
export RAF_CACHE_DIR=$tmp/cache

/usr/bin/python3 - "$tmp" <<'PY'
import sys
import numpy as np
r = np.random.default_rng(0)
np.save(f"{sys.argv[1]}/mlp_x.npy", r.random((400, 784), dtype=np.float32))
np.save(f"{sys.argv[1]}/mlp_y.npy", r.integers(0, 10, 400, dtype=np.int64))
PY
/usr/bin/python3 "$root/examples/gpt2/gen_gpt2.py" --layers 2 --heads 2 \
  --embd 32 --vocab 80 --seq 16 --batch 2 "$tmp/gpt2.raf"
/usr/bin/python3 "$root/examples/gpt2/prepare_data.py" --seq 16 --batch 2 \
  --batches 8 "$tmp/gpt2data" > /dev/null

# compare NAME MODEL FUNC DATASETS...: trains 12 steps both ways.
compare() {
  local name=$1 model=$2 func=$3
  shift 3
  for way in unfused fused; do
    local p='autodiff,optimizer{kind=adamw lr=1e-3}' d=cblas,cpu-ref
    if [ $way = fused ]; then p="$p,inline,fuse,plan-memory" d=; fi
    "$build/raf-opt" -p "$p" "$model" -o "$tmp/$name.$way.raf"
    "$build/raf-run" "$tmp/$name.$way.raf" --function="${func}_train_step" \
      ${d:+--dialects=$d} --steps=12 "$@" --log="$logs/$name.$way.jsonl" \
      --output=@"$tmp/$name.$way.npy" > /dev/null
  done
  grep -q 'call @fused_' "$tmp/$name.fused.raf"
  /usr/bin/python3 "$root/scripts/plot-log.py" "$logs/$name.unfused.jsonl" \
    "$logs/$name.fused.jsonl" --label=unfused --label=fused \
    --title="$name: fused vs unfused" -o "$logs/$name.png" > /dev/null
  /usr/bin/python3 - "$name" "$logs/$name.unfused.jsonl" "$logs/$name.fused.jsonl" <<'PY'
import json, sys
name, a, b = sys.argv[1:]
la = [json.loads(l)["loss"] for l in open(a)]
lb = [json.loads(l)["loss"] for l in open(b)]
worst = max(abs(x - y) / abs(x) for x, y in zip(la, lb))
print(f"{name}: {len(la)} steps, losses {la[0]:.6f} -> {la[-1]:.6f}, "
      f"worst relative difference fused vs unfused {worst:.2e}")
sys.exit(len(la) != len(lb) or worst > 1e-4)
PY
}
compare mlp "$root/examples/mlp/mlp.raf" mlp \
  --dataset=x=@"$tmp/mlp_x.npy" --dataset=labels=@"$tmp/mlp_y.npy"
compare gpt2 "$tmp/gpt2.raf" gpt2 \
  --dataset=x=@"$tmp/gpt2data/x.npy" --dataset=y=@"$tmp/gpt2data/y.npy"
