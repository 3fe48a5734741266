#!/usr/bin/env bash
# dp.sh: data-parallel training (the shard pass and raf-run over MPI,
# docs/Distributed.md) against one process, on this machine, in one run:
# GPT-2 (a small config, then 124M) with the same global batch, as
#   1 process x 2 threads               (no shard)
#   2 ranks x 1 thread, zero=0..3       (mpirun -np 2 raf-run --threads=1)
# printing tokens/s (median step of the steps after the first), the share
# of the step spent in collectives (raf-run --print-comm, rank 0), the
# bytes each rank sends per step, and each rank's planned peak and its
# params+states (raf-opt --stats), for every variant.
#
#   bash bench/dp.sh [BUILD_DIR] [CONFIGS] [STEPS]
#     BUILD_DIR  raf's build directory (default build)
#     CONFIGS    space-separated LAYERSxEMBDxBxT (default "4x256x8x128 12x768x8x128")
#     STEPS      steps per run (default 4; the first is left out)
# Targets: 2 ranks reach >= 90% of the single process's tokens/s at zero=0
# and zero=2, >= 80% at zero=3.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
configs=${2:-"4x256x8x128 12x768x8x128"}
steps=${3:-4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(timeout 1800 mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2)
base='autodiff,optimizer{kind=adamw lr=3e-4}'
tail='inline,fuse,plan-memory'

median_ms() { # LOG: the median step time after the first step
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
ms = sorted(json.loads(l)["ms"] for l in open(sys.argv[1]))[1:] or [0]
print(f"{ms[len(ms) // 2]:.1f}")
PY
}

for cfg in $configs; do
  IFS=x read -r layers embd batch seq <<< "$cfg"
  heads=$((embd / 64))
  /usr/bin/python3 examples/gpt2/gen_gpt2.py --layers "$layers" --heads "$heads" \
    --embd "$embd" --vocab 50257 --seq "$seq" --batch "$batch" --ctx "$seq" "$tmp/m.raf"
  /usr/bin/python3 - "$tmp" "$batch" "$seq" "$steps" <<'PY'
import numpy as np, sys
tmp, b, t, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
tok = np.random.default_rng(0).integers(0, 50257, (b * steps, t + 1)).astype(np.int64)
np.save(f"{tmp}/x.npy", tok[:, :t]); np.save(f"{tmp}/y.npy", tok[:, 1:])
PY
  data=(--dataset=x=@"$tmp/x.npy" --dataset=y=@"$tmp/y.npy")
  tokens=$((batch * seq))
  echo "== GPT-2 $layers layers, embedding $embd, global batch ${batch}x$seq ($tokens tokens a step)"
  printf '%-22s %10s %10s %9s %12s %14s %14s\n' variant step_ms tokens/s vs_1proc comm_share sent_MB/step peak/params+states_MB
  one=""
  for v in single z0 z1 z2 z3; do
    if [ "$v" = single ]; then
      pipe="$base,$tail"; run=("$build/raf-run"); threads=2
    else
      pipe="$base,shard{world=2 zero=${v#z}},$tail"; run=("${mpi[@]}" "$build/raf-run"); threads=1
    fi
    stats=$("$build/raf-opt" -p "$pipe" --stats "$tmp/m.raf" -o "$tmp/$v.raf" 2>&1 >/dev/null | grep "memory @gpt2_train_step")
    peak=$(sed -n 's/.*planned peak \([0-9]*\) bytes (arguments \([0-9]*\),.*/\1 \2/p' <<< "$stats")
    "${run[@]}" "$tmp/$v.raf" --function=gpt2_train_step --steps="$steps" "${data[@]}" \
      --threads="$threads" --log="$tmp/$v.jsonl" --print=none --print-comm > "$tmp/$v.out" 2>&1 \
      || { echo "$v failed:"; tail -5 "$tmp/$v.out"; continue; }
    ms=$(median_ms "$tmp/$v.jsonl")
    [ -n "$one" ] || one=$ms
    comm=$(sed -n 's/.*comm: .*(\([0-9.]*%\) of the step).*/\1/p' "$tmp/$v.out" | head -1)
    sent=$(sed -n 's/.*comm: \([0-9.]*\) MB .*sent per rank per step.*/\1/p' "$tmp/$v.out" | head -1)
    read -r pk args <<< "$peak"
    printf '%-22s %10s %10.0f %8.1f%% %12s %14s %8.1f/%.1f\n' "$v" "$ms" \
      "$(echo "$tokens * 1000 / $ms" | bc -l)" "$(echo "100 * $one / $ms" | bc -l)" \
      "${comm:--}" "${sent:--}" "$(echo "$pk / 1048576" | bc -l)" "$(echo "$args / 1048576" | bc -l)"
  done
done
