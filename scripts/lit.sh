#!/usr/bin/env bash
# lit.sh [PATH...]: runs the lit tests at PATH (a test file or a folder;
# default: all of test/lit) against the binaries of $RAF_BUILD (default:
# build/), verbosely. Extra lit options go after the paths, e.g.
#   scripts/lit.sh test/lit/passes/cse.raf
#   scripts/lit.sh test/lit/codegen --filter emit
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${RAF_BUILD:-$root/build}" && pwd)
paths=()
while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do
  paths+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
  shift
done
[ ${#paths[@]} -gt 0 ] || paths=("$root/test/lit")
exec /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv \
  --param raf_bin="$build" "$@" "${paths[@]}"
