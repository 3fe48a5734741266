#!/usr/bin/env bash
# build.sh [DIR [cmake options...]]: configures and builds raf in DIR
# (default: build/), installing missing packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=${1:-build}
shift || true
mkdir -p "$dir"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" > "$dir/cmake.log" 2>&1 \
  || { cat "$dir/cmake.log"; exit 1; }
cmake --build "$dir" -j "$(nproc)"
