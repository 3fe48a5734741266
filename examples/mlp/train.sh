#!/usr/bin/env bash
# train.sh: trains examples/mlp/mlp.raf on Fashion-MNIST on the CPU and
# prints its test accuracy. The compiler builds the training step from the
# forward model (autodiff, then AdamW), inlines it into one function,
# fuses it (the fused functions run as LLVM-compiled kernels, the matmuls
# through BLAS) and plans its memory (one arena per call); raf-run feeds the
# batches, logs the loss of every step (BUILD_DIR/mlp/train.jsonl, drawn
# into train.png beside it by scripts/plot-log.py), saves the trained
# params, and evaluates them with eval.raf. PIPELINE overrides the passes.
#   bash examples/mlp/train.sh [BUILD_DIR] [EPOCHS]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
epochs=${2:-5}
work=$build/mlp
mkdir -p "$work"

if [ ! -f "$work/data/test_y.npy" ]; then
  /usr/bin/python3 examples/mlp/prepare_data.py "$work/data"
fi
default='autodiff,optimizer{kind=adamw lr=1e-3},inline,fuse,plan-memory'
pipeline=${PIPELINE:-$default}
echo "== raf-opt -p '$pipeline' examples/mlp/mlp.raf"
"$build/raf-opt" -p "$pipeline" examples/mlp/mlp.raf -o "$work/step.raf"
steps=$((epochs * 600)) # 60,000 images in batches of 100
echo "== training: $epochs epochs, $steps steps of 100 images"
"$build/raf-run" "$work/step.raf" --function=mlp_train_step --steps="$steps" \
  --dataset=x=@"$work/data/train_x.npy" \
  --dataset=labels=@"$work/data/train_y.npy" \
  --log="$work/train.jsonl" --save="$work/mlp.safetensors" > /dev/null
/usr/bin/python3 - "$work/train.jsonl" <<'PY'
import json, sys
log = [json.loads(line) for line in open(sys.argv[1])]
for rec in log[::300] + [log[-1]]:
    print(f"step {rec['step']:5d}  loss {rec['loss']:.4f}")
ms = sorted(r["ms"] for r in log)[len(log) // 2]
print(f"median step {ms:.2f} ms")
PY
echo "== the loss curve"
/usr/bin/python3 scripts/plot-log.py "$work/train.jsonl" -o "$work/train.png" \
  --title="examples/mlp: $epochs epochs of Fashion-MNIST, AdamW"
echo "== test accuracy (examples/mlp/eval.raf on 10,000 images)"
"$build/raf-run" examples/mlp/eval.raf --function=accuracy \
  --load="$work/mlp.safetensors" --input=x=@"$work/data/test_x.npy" \
  --input=labels=@"$work/data/test_y.npy" 2>/dev/null | tail -1
