#!/usr/bin/env bash
# example.sh: the main job. Builds raf and runs the example model through
# raf-opt: parse, infer types, verify, optimise and print it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh build > /dev/null
echo "== examples/mlp/mlp.raf through raf-opt -p 'canonicalize,cse,dce' =="
build/raf-opt -p 'canonicalize,cse,dce' examples/mlp/mlp.raf
