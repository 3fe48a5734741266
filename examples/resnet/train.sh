#!/usr/bin/env bash
# train.sh: trains torchvision's ResNet-18, exported from PyTorch by
# python/raf_torch, on Fashion-MNIST on the CPU (or a CUDA GPU:
# DEVICE=cuda), and prints its test accuracy. model.py exports the training function (train mode: the
# CrossEntropyLoss, then batch_norm's new running statistics as {updates}
# results) and the evaluation function (eval mode: the running statistics;
# the batch's accuracy); raf-opt builds the training step (autodiff, AdamW
# with warm-up and cosine decay), inlines, fuses and plans it; raf-run
# trains, logging every step (WORK/train.jsonl, drawn into train.png) and
# saving the params with the running statistics; raf-run then evaluates
# that checkpoint on the test images in batches of 500 (EVAL_BATCH).
#   bash examples/resnet/train.sh [BUILD_DIR] [EPOCHS] [STEPS]
# EPOCHS defaults to 2 (90.6% measured); STEPS (default: every training
# image once per epoch) stops early. Environment: BATCH (default 64),
# EVAL_BATCH (test images per evaluation batch, default 500), EVAL_STEPS
# (evaluation batches, default 20: all 10,000 test images), WORK (default
# BUILD_DIR/resnet), DATA (the .npy images and labels, default
# BUILD_DIR/resnet-data, made from Debian's Fashion-MNIST when it lacks
# test_y.npy), DEVICE=cuda to train and evaluate on the GPU (raf-run
# --device=cuda: the convolutions, pooling and batch_norm on the cudnn
# dialect, the rest on cuda and cublas; the step is dispatched for the
# device before plan-memory), CONV=matmul to export each convolution as
# im2col matmuls on BLAS (raf_torch.export's conv="matmul") instead of
# conv2d ops, which the onednn dialect runs on the CPU (the default,
# CONV=op).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
epochs=${2:-2}
batch=${BATCH:-64}
steps=${3:-$((epochs * 60000 / batch))}
eval_batch=${EVAL_BATCH:-500}
eval_steps=${EVAL_STEPS:-20}
conv=${CONV:-op}
device=${DEVICE:-cpu}
work=${WORK:-$build/resnet}
data=${DATA:-$build/resnet-data}
mkdir -p "$work"

if [ ! -f "$data/test_y.npy" ]; then
  /usr/bin/python3 examples/mlp/prepare_data.py "$data"
  /usr/bin/python3 - "$data" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
for split in ("train", "test"):  # images as N x 1 x 28 x 28
    p = os.path.join(d, f"{split}_x.npy")
    np.save(p, np.load(p).reshape(-1, 1, 28, 28))
PY
fi
echo "== export (python/raf_torch): examples/resnet/model.py, conv=$conv"
/usr/bin/python3 examples/resnet/model.py "$work" --batch="$batch" \
  --eval-batch="$eval_batch" --conv="$conv"
# A memory plan is made for the dialects that will run the step: on a GPU,
# dispatch for it first.
dispatch=
[ "$device" = cpu ] || dispatch="dispatch{device=$device},"
# 100 warm-up steps; a run of 100 steps or fewer warms up over its first half.
warmup=$(( steps > 100 ? 100 : steps / 2 ))
pipeline="autodiff,optimizer{kind=adamw lr=2e-3 warmup_steps=$warmup total_steps=$steps min_lr=1e-5},inline,fuse,${dispatch}plan-memory"
echo "== raf-opt -p '$pipeline'"
"$build/raf-opt" -p "$pipeline" "$work/resnet.raf" -o "$work/step.raf"
echo "== training: $steps steps of $batch images on $device"
start=$(date +%s)
"$build/raf-run" --device="$device" "$work/step.raf" --function=resnet_train_step \
  --steps="$steps" --load="$work/resnet.safetensors" \
  --dataset=x=@"$data/train_x.npy" --dataset=labels=@"$data/train_y.npy" \
  --log="$work/train.jsonl" --save="$work/trained.safetensors" --print=none
echo "training took $(( $(date +%s) - start )) s"
/usr/bin/python3 - "$work/train.jsonl" <<'PY'
import json, sys
log = [json.loads(line) for line in open(sys.argv[1])]
every = max(1, len(log) // 10)
for rec in log[::every] + [log[-1]]:
    print(f"step {rec['step']:5d}  loss {rec['loss']:.4f}")
ms = sorted(r["ms"] for r in log)[len(log) // 2]
print(f"median step {ms:.0f} ms")
PY
/usr/bin/python3 scripts/plot-log.py "$work/train.jsonl" -o "$work/train.png" \
  --title="examples/resnet: ResNet-18 on Fashion-MNIST, AdamW" > /dev/null || true
echo "== test accuracy (eval mode, running statistics; $((eval_steps * eval_batch)) images)"
# the checkpoint also holds AdamW's moments, which @accuracy lacks: raf-run
# warns about them and skips them
"$build/raf-run" --device="$device" "$work/accuracy.raf" --function=accuracy --steps="$eval_steps" \
  --load="$work/trained.safetensors" \
  --dataset=x=@"$data/test_x.npy" --dataset=labels=@"$data/test_y.npy" \
  --log="$work/eval.jsonl" --print=none 2> /dev/null
/usr/bin/python3 - "$work/eval.jsonl" <<'PY'
import json, sys
acc = [json.loads(line)["loss"] for line in open(sys.argv[1])]
print(f"test accuracy {sum(acc) / len(acc):.4f}")
PY
