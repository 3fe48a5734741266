#!/usr/bin/env bash
# train.sh: trains examples/bert/bert.py's BERT (masked-LM head) on the
# masked character-level GPL-3 of prepare_data.py, with raf on the CPU.
# PyTorch is only the front end: raf_torch exports the nn.Module (train
# mode, its initial weights in a safetensors file); the compiler builds the
# training step (autodiff, AdamW, inline, fuse, plan-memory); raf-run feeds
# the batches, logs the MLM loss of every step (WORK/train.jsonl, drawn
# into train.png beside it by scripts/plot-log.py) and saves the trained
# weights (WORK/bert.safetensors, readable by raf_torch.load_checkpoint).
# It prints the mean loss of the first and of the last window of steps and
# exits 1 unless the loss fell.
#
#   bash examples/bert/train.sh [BUILD_DIR] [CONFIG] [STEPS]
#     BUILD_DIR  raf's build directory (default build); WORK is
#                BUILD_DIR/bert-CONFIG
#     CONFIG     small (default: 2 layers, 64 wide; batches of 8 x 64) or
#                base (BERT-base: 12 layers, 768 wide; batches of 8 x 128)
#     STEPS      training steps (default: 1000 small, 5 base)
#   environment: LR (default 2e-3 small, 1e-4 base), BATCH, THREADS (raf-run
#   --threads; default one per CPU), DROPOUT (BERT's dropout probability,
#   default 0; raf's dropout masks, drawn from a key the step carries as
#   state), PIPELINE (raf-opt's passes, replacing the default below).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
config=${2:-small}
py=/usr/bin/python3
case $config in
  small) seq=64 steps=${3:-1000} lr=${LR:-2e-3} ;;
  base) seq=128 steps=${3:-5} lr=${LR:-1e-4} ;;
  *) echo "train.sh: unknown config '$config' (small, base)" >&2; exit 2 ;;
esac
batch=${BATCH:-8}
work=$build/bert-$config
mkdir -p "$work"
threads=()
[ -n "${THREADS:-}" ] && threads=(--threads="$THREADS")

data=$work/data-${batch}x$seq
if [ ! -f "$data/labels.npy" ]; then
  $py examples/bert/prepare_data.py --seq "$seq" --batch "$batch" "$data"
fi

echo "== export: bert.py's '$config' config, train mode, with raf_torch"
$py - "$config" "$data" "$batch" "$work/bert" "${DROPOUT:-0}" <<'PY'
import os, sys
import numpy as np
import torch
root = os.getcwd()
sys.path[:0] = [os.path.join(root, "python"), os.path.join(root, "examples", "bert")]
import raf_torch
import bert
config, data, batch, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
torch.manual_seed(0)  # the initial weights
model = bert.Bert(**bert.CONFIGS[config], dropout=float(sys.argv[5])).train()
example = tuple(torch.from_numpy(np.load(f"{data}/{n}.npy")[:batch])
                for n in ("input_ids", "labels"))
raf_torch.export(model, example, prefix)
print(f"{prefix}.raf, {prefix}.safetensors: {bert.count_params(model):,} params")
PY

default="autodiff,optimizer{kind=adamw lr=$lr beta1=0.9 beta2=0.999 eps=1e-6 weight_decay=0.01},inline,fuse,plan-memory"
pipeline=${PIPELINE:-$default}
echo "== raf-opt -p '$pipeline'"
"$build/raf-opt" -p "$pipeline" "$work/bert.raf" -o "$work/step.raf"

echo "== training: $steps steps of $batch x $seq tokens"
"$build/raf-run" "$work/step.raf" --function=bert_train_step --steps="$steps" \
  "${threads[@]}" --load="$work/bert.safetensors" \
  --dataset=input_ids=@"$data/input_ids.npy" \
  --dataset=labels=@"$data/labels.npy" \
  --log="$work/train.jsonl" --save="$work/trained.safetensors" > /dev/null

$py - "$work/train.jsonl" <<'PY'
import json, statistics, sys
log = [json.loads(line) for line in open(sys.argv[1])]
losses = [r["loss"] for r in log]
if any(l is None for l in losses):
    sys.exit("train.sh: a loss was not finite")
for r in log[::max(1, len(log) // 10)] + [log[-1]]:
    print(f"step {r['step']:5d}  loss {r['loss']:.4f}")
w = max(1, len(log) // 10)  # the window: a tenth of the steps
first, last = statistics.mean(losses[:w]), statistics.mean(losses[-w:])
ms = [r["ms"] for r in log[1:]] or [log[0]["ms"]]  # the first step warms up
print(f"mean loss of steps 1-{w}: {first:.4f}; of steps "
      f"{len(log) - w + 1}-{len(log)}: {last:.4f}")
print(f"median step {statistics.median(ms):.1f} ms (first {log[0]['ms']:.1f} ms)")
if len(log) > 1 and not last < first:
    sys.exit("train.sh: the MLM loss did not fall")
PY
if [ "$steps" -gt 1 ]; then
  $py scripts/plot-log.py "$work/train.jsonl" -o "$work/train.png" \
    --title="examples/bert ($config): masked-LM loss, AdamW lr $lr" > /dev/null
fi
