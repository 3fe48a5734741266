#!/usr/bin/env bash
# example.sh: the main job. Builds raf, then trains the MLP example on
# Fashion-MNIST end to end on the CPU (the compiler builds the training
# step from the forward model), draws its loss curve next to its log
# (build/mlp/train.png, build/mlp/train.jsonl) and prints its test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh build > /dev/null
bash examples/mlp/train.sh build
