#!/usr/bin/env bash
# train_step.sh: GPT-2 124M training steps (AdamW), raf-run against PyTorch
# eager on the same machine, in the same run, with the same thread count.
#
# For each size BxT: examples/gpt2/gen_gpt2.py writes the forward model,
# raf-opt builds the training step (--autodiff --optimizer, timed), and
# raf-run trains STEPS steps on random token ids, once per dialect list in
# DIALECTS; bench/gpt2_torch.py trains the same model for as many steps.
# The first step of each is a warm-up and left out; the table gives the
# median ms per step, tokens per second, peak RSS (of the whole process:
# /usr/bin/time for raf-run, getrusage in PyTorch) and raf / PyTorch.
#   bash bench/train_step.sh [BUILD_DIR] [SIZES] [STEPS]
#   SIZES: space-separated BxT (default "4x64"); DIALECTS (environment):
#   ';'-separated --dialects lists, "default" for the dispatch pass's
#   choice (default "default;cpu-ref"; cpu-ref runs REF_STEPS=2 steps).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
sizes=${2:-4x64}
steps=${3:-6}
threads=${THREADS:-$(nproc)}
dialects=${DIALECTS:-default;cpu-ref}
ref_steps=${REF_STEPS:-2}
L=12 H=12 C=768 V=50257
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

calc() { /usr/bin/python3 -c "print($1)"; }

median() { # LOG: the median ms of its steps after the first
  /usr/bin/python3 -c 'import json, statistics, sys
ms = [json.loads(l)["ms"] for l in open(sys.argv[1])][1:]
print(f"{statistics.median(ms):.1f}")' "$1"
}

printf '%-8s %-22s %10s %10s %10s %8s\n' size who ms/step tokens/s rss_MB ratio
for size in $sizes; do
  B=${size%x*} T=${size#*x}
  /usr/bin/python3 examples/gpt2/gen_gpt2.py --layers $L --heads $H \
    --embd $C --vocab $V --seq "$T" --batch "$B" "$tmp/gpt2.raf"
  /usr/bin/python3 -c "import numpy as np
r = np.random.default_rng(0)
x = r.integers(0, $V, size=(8 * $B, $T), dtype=np.int64)
np.save('$tmp/x.npy', x); np.save('$tmp/y.npy', np.roll(x, -1, axis=1))"
  start=$(date +%s.%N)
  "$build/raf-opt" --autodiff --optimizer="kind=adamw lr=3e-4" \
    "$tmp/gpt2.raf" -o "$tmp/step.raf"
  opt_s=$(calc "round($(date +%s.%N) - $start, 3)")
  echo "raf-opt --autodiff --optimizer on ${size}: ${opt_s} s" >&2

  /usr/bin/python3 bench/gpt2_torch.py --layers $L --heads $H --embd $C \
    --vocab $V --seq "$T" --batch "$B" --steps "$steps" \
    --threads "$threads" "$tmp" > "$tmp/torch.json"
  read -r torch_ms torch_rss < <(/usr/bin/python3 -c 'import json, statistics, sys
d = json.load(open(sys.argv[1]))
ms, rss = statistics.median(d["ms"][1:]), d["rss_kb"] / 1024
print(f"{ms:.1f} {rss:.0f}")' "$tmp/torch.json")

  IFS=';' read -ra lists <<< "$dialects"
  for d in "${lists[@]}"; do
    flag=() n=$steps
    if [ "$d" != default ]; then flag=(--dialects="$d"); fi
    if [ "$d" = cpu-ref ]; then n=$ref_steps; fi
    /usr/bin/time -f '%M' -o "$tmp/rss" "$build/raf-run" "$tmp/step.raf" \
      --function=gpt2_train_step "${flag[@]}" --threads="$threads" \
      --steps="$n" --dataset=x=@"$tmp/x.npy" --dataset=y=@"$tmp/y.npy" \
      --log="$tmp/raf.jsonl" --output=@"$tmp/loss.npy" > /dev/null
    ms=$(median "$tmp/raf.jsonl")
    rss=$(( $(cat "$tmp/rss") / 1024 ))
    printf '%-8s %-22s %10s %10.0f %10s %8.2f\n' "$size" "raf ($d)" "$ms" \
      "$(calc "$B * $T * 1000 / $ms")" "$rss" "$(calc "$ms / $torch_ms")"
  done
  printf '%-8s %-22s %10s %10.0f %10s %8s\n' "$size" "pytorch eager" \
    "$torch_ms" "$(calc "$B * $T * 1000 / $torch_ms")" "$torch_rss" 1.00
done
