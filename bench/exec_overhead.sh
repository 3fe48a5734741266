#!/usr/bin/env bash
# exec_overhead.sh: the executor's cost per statement. A chain of N tiny
# adds (f32[4], so the kernels do almost nothing) runs for a few steps;
# the median step time over N is the dispatch + executor + kernel-call
# overhead of one statement. Target: under 2 microseconds.
#   bash bench/exec_overhead.sh [BUILD_DIR] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "func @chain(%x: f32[4] {param, init = \"ones\"}) -> f32[4] {"
  echo "  %v0 = add(%x, %x)"
  for ((i = 1; i < n; i++)); do echo "  %v$i = add(%v$((i - 1)), %x)"; done
  echo "  return %v$((n - 1))"
  echo "}"
} > "$tmp/chain.raf"
for threads in 1 2; do
  "$build/raf-run" "$tmp/chain.raf" --steps=7 --threads=$threads \
    --log="$tmp/log.$threads" > /dev/null
  /usr/bin/python3 - "$tmp/log.$threads" "$n" "$threads" <<'PY'
import json, statistics, sys
ms = [json.loads(l)["ms"] for l in open(sys.argv[1])][2:]  # 2 warm-up steps
med = statistics.median(ms)
n = int(sys.argv[2])
print(f"threads={sys.argv[3]}: {n} statements, median step {med:.2f} ms, "
      f"{med * 1e3 / n:.3f} us per statement")
PY
done
# The dispatch pass itself runs once per module, before the first step.
"$build/raf-opt" --dispatch --time-passes "$tmp/chain.raf" -o /dev/null 2>&1 |
  grep -i dispatch | sed "s/^/dispatch pass over $n statements: /"
