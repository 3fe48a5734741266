#!/usr/bin/env bash
# parse.sh: front-end speed and memory of raf-opt.
#
# For modules of 10k, 100k and 1M statements (bench/gen_module.py: a
# transformer-like mix with every type inferred) it measures
#   1. parse + verify + print   (raf-opt in.raf -o /dev/null)
#   2. the same plus a cse,dce pipeline
# and prints wall time, peak RSS, bytes per statement, and the 1M/100k time
# ratio (linear growth: 10x; target within 12x). Run on one core:
#   taskset -c 0 bash bench/parse.sh
# Targets: 1M statements under 2 s with under 1 KB per statement.
set -euo pipefail
cd "$(dirname "$0")/.."
RAF_OPT=${RAF_OPT:-build/raf-opt}
[ -x "$RAF_OPT" ] || bash scripts/build.sh build > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
REPEAT=${REPEAT:-3}

# best-of-REPEAT wall time (s) and the peak RSS (KB) of that run
measure() {
  local best="" rss=""
  for _ in $(seq "$REPEAT"); do
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" > /dev/null
    read -r t m < "$tmp/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; rss=$m; fi
  done
  echo "$best $rss"
}

printf "%-10s %-22s %9s %10s %12s\n" statements job seconds "RSS MB" "bytes/stmt"
declare -A secs
for n in 10000 100000 1000000; do
  /usr/bin/python3 bench/gen_module.py "$n" > "$tmp/m.raf"
  stmts=$(grep -c ' = \| return ' "$tmp/m.raf")
  for job in print cse-dce; do
    if [ "$job" = print ]; then
      read -r t m < <(measure "$RAF_OPT" "$tmp/m.raf" -o /dev/null)
    else
      read -r t m < <(measure "$RAF_OPT" -p cse,dce "$tmp/m.raf" -o /dev/null)
    fi
    secs[$n.$job]=$t
    awk -v n="$stmts" -v j="$job" -v t="$t" -v m="$m" \
      'BEGIN { printf "%-10s %-22s %9.2f %10.1f %12.0f\n", n, j, t, m / 1024, m * 1024 / n }'
  done
done
for job in print cse-dce; do
  awk -v j="$job" -v a="${secs[1000000.$job]}" -v b="${secs[100000.$job]}" \
    'BEGIN { printf "ratio 1M/100k (%s): %.1fx\n", j, a / b }'
done
