#!/usr/bin/env bash
# mlp_accuracy.sh BUILD_DIR: trains the MLP example (examples/mlp/train.sh)
# and fails unless its Fashion-MNIST test accuracy reaches 85%.
set -euo pipefail
out=$(bash "$(dirname "$0")/../../examples/mlp/train.sh" "$1")
echo "$out"
acc=$(echo "$out" | tail -1)
/usr/bin/python3 -c "import sys; a = float(sys.argv[1]); print(f'accuracy {a:.4f} (needs 0.85)'); sys.exit(a < 0.85)" "$acc"
