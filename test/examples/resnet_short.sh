#!/usr/bin/env bash
# resnet_short.sh BUILD_DIR: a short run of examples/resnet/train.sh (150
# steps of 32 images, evaluated on the first 2,000 test images, about two
# minutes on 2 cores): fails unless the loss falls (the mean of the last 20
# steps below 60% of the first 20's) and the test accuracy reaches 70%.
set -euo pipefail
build=$1
out=$(BATCH=32 EVAL_STEPS=4 WORK="$build/resnet-short" \
  bash "$(dirname "$0")/../../examples/resnet/train.sh" "$build" 1 150)
echo "$out"
acc=$(echo "$out" | tail -1 | awk '{print $3}')
/usr/bin/python3 - "$build/resnet-short/train.jsonl" "$acc" <<'PY'
import json, sys
loss = [json.loads(line)["loss"] for line in open(sys.argv[1])]
first, last = sum(loss[:20]) / 20, sum(loss[-20:]) / 20
acc = float(sys.argv[2])
print(f"loss {first:.3f} (first 20 steps) -> {last:.3f} (last 20), needs "
      f"below {0.6 * first:.3f}; accuracy {acc:.4f}, needs 0.70")
sys.exit(not (last < 0.6 * first and acc >= 0.70))
PY
