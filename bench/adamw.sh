#!/usr/bin/env bash
# adamw.sh: the AdamW update alone over GPT-2 124M's params (148 tensors,
# 124,439,808 f32 elements), raf against torch.optim.AdamW and against the
# machine's memory bandwidth (a STREAM triad), in the same run, with the
# same thread count.
#
#   bash bench/adamw.sh [BUILD_DIR] [STEPS]
#     BUILD_DIR  raf's build directory (default build)
#     STEPS      steps per run (default 8); the first WARMUP=2 are left out
#   environment:
#     THREADS    threads of raf-run, torch and the triad (default 2)
#     ROUNDS     runs of each variant and of the triad, interleaved
#                (default 3; the order reversed every other round)
#     VARIANTS   default "fused planned torch torch-foreach":
#       fused    bench/gen_adamw.py's module (@u_grad takes the gradients
#                as plain arguments and returns them with a constant loss)
#                through raf-opt -p 'optimizer{kind=adamw lr=3e-4},inline,
#                fuse': @u_train_step is the update of every param and its
#                two moments, one fused call per param (llvm dialect)
#       planned  the same, then plan-memory (updates donated in place)
#       torch    bench/adamw_torch.py: torch.optim.AdamW(lr=3e-4).step() on
#                the same shapes with .grad set, torch 1.13's default
#                (per-tensor) implementation; only step() is timed
#       torch-foreach  the same with foreach=True (multi-tensor)
#
# Printed, medians over all rounds' steps after the warm-up:
#   call_ms   raf-run's --log "ms": the call of @u_train_step alone
#   step_ms   raf: the whole period of a step, between consecutive --log
#             lines (bench/steptime.c): the call, then the copy of every
#             {updates} result into its argument (params, m, v: 1.5 GB when
#             the step is not memory-planned), freeing the results.
#             PyTorch: step(), which updates in place.
#   GB/s      28 bytes per param element over step_ms (read p, g, m, v;
#             write p, m, v), and over call_ms in brackets
#   %triad    that, as a share of the triad's bandwidth: bench/stream_triad.c,
#             a[i] = b[i] + s * c[i] on f64 arrays of 2^25 elements (3 x 268
#             MB, far beyond the caches), OpenMP, 24 bytes per element; each
#             round's figure is the best of 10 repeats, and the median over
#             the rounds is used
#   torch/x   PyTorch's (per-tensor) time over this variant's (above 1: raf
#             faster), on step_ms; on call_ms in brackets
#   rss_MB    the process's peak RSS (/usr/bin/time %M)
# Targets ("target:" lines): raf at least 3x faster than PyTorch; raf's
# bandwidth at least 70% of the triad's.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
steps=${2:-8}
warmup=2
threads=${THREADS:-2}
rounds=${ROUNDS:-3}
variants=${VARIANTS:-fused planned torch torch-foreach}
triad_n=$((1 << 25))
py=/usr/bin/python3
for v in $variants; do
  case $v in fused | planned | torch | torch-foreach) ;;
    *) echo "adamw.sh: unknown variant '$v' (fused planned torch torch-foreach)" >&2
       exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cc -O3 -march=native -fopenmp -std=c11 -D_POSIX_C_SOURCE=200809L \
  bench/stream_triad.c -o "$tmp/triad"
cc -O2 -shared -fPIC bench/steptime.c -o "$tmp/steptime.so"

$py examples/gpt2/gen_gpt2.py --layers 12 --heads 12 --embd 768 \
  --vocab 50257 --ctx 1024 "$tmp/gpt2.raf"
$py bench/gen_adamw.py "$tmp/gpt2.raf" "$tmp/update.raf"
for v in $variants; do
  case $v in
    fused) p='optimizer{kind=adamw lr=3e-4},inline,fuse' ;;
    planned) p='optimizer{kind=adamw lr=3e-4},inline,fuse,plan-memory' ;;
    *) continue ;;
  esac
  "$build/raf-opt" -p "$p" "$tmp/update.raf" -o "$tmp/$v.raf"
done

run_variant() { # VARIANT ROUND
  local v=$1 out=$tmp/$1.$2
  case $v in
    torch | torch-foreach)
      local flag=()
      [ "$v" = torch-foreach ] && flag=(--foreach)
      /usr/bin/time -f '%M' -o "$out.rss" $py bench/adamw_torch.py \
        --steps "$steps" --threads "$threads" "${flag[@]}" "$tmp/gpt2.raf" \
        > "$out.json" ;;
    *)
      RAF_CACHE_DIR=$tmp/cache RAF_STEP_TIMES=$out.times \
        LD_PRELOAD=$tmp/steptime.so /usr/bin/time -f '%M' -o "$out.rss" \
        "$build/raf-run" "$tmp/$v.raf" --function=u_train_step \
        --threads="$threads" --steps="$steps" --log="$out.jsonl" \
        --output=@"$tmp/loss.npy" --print-jit-stats > /dev/null \
        2> "$out.err" || { echo "raf-run failed ($v):"; cat "$out.err"; exit 1; } ;;
  esac
}

order=($variants)
for ((r = 0; r < rounds; r++)); do
  echo "  round $((r + 1))/$rounds: triad" >&2
  "$tmp/triad" "$triad_n" 10 "$threads" > "$tmp/triad.$r.json"
  for ((i = 0; i < ${#order[@]}; i++)); do
    if ((r % 2)); then v=${order[$((${#order[@]} - 1 - i))]}; else v=${order[$i]}; fi
    echo "  round $((r + 1))/$rounds: $v" >&2
    run_variant "$v" "$r"
  done
done

$py - "$tmp" "$rounds" "$warmup" "$steps" "$threads" $variants <<'PY'
import json, re, statistics, sys
tmp, rounds, warmup, steps, threads = sys.argv[1], *map(int, sys.argv[2:6])
variants = sys.argv[6:]
med = statistics.median
sys.path.insert(0, "bench")
import gen_adamw
shapes = [t for _, t, _ in gen_adamw.params(open(f"{tmp}/gpt2.raf").read())]
elems = sum(eval("*".join(t[4:-1].split(","))) for t in shapes)
nbytes = 28 * elems

triads = [json.load(open(f"{tmp}/triad.{r}.json"))["triad_gbs"]
          for r in range(rounds)]
triad = med(triads)
rows = {}
for v in variants:
    step, call, rss, declined = [], [], [], ""
    for r in range(rounds):
        base = f"{tmp}/{v}.{r}"
        rss.append(int(open(f"{base}.rss").read().split()[-1]) / 1024)
        if v.startswith("torch"):
            step += json.load(open(f"{base}.json"))["ms"][warmup:]
            continue
        call += [json.loads(l)["ms"] for l in open(f"{base}.jsonl")][warmup:]
        t = [float(l) for l in open(f"{base}.times")]
        # t[k] ends step k + 1; the period of step k + 1 is t[k] - t[k - 1]
        step += [t[k] - t[k - 1] for k in range(max(warmup, 1), len(t))]
        if not t:
            sys.exit(f"{base}.times: no step times (bench/steptime.c saw no "
                     "--log lines)")
        m = re.search(r"jit: .*declined \([\d.]+ ms\)", open(f"{base}.err").read())
        declined = m.group(0) if m else "no jit stats"
    rows[v] = dict(step=med(step), call=med(call) if call else None,
                   rss=max(rss), jit=declined)

names = {"fused": "raf fused", "planned": "raf fused+plan-memory",
         "torch": "pytorch (per-tensor)", "torch-foreach": "pytorch (foreach)"}
print(f"AdamW update alone over GPT-2 124M's {len(shapes)} params "
      f"({elems:,} f32 elements), {threads} threads, {rounds} rounds x "
      f"{steps - warmup} steps (after {warmup} warm-up)")
print(f"STREAM triad (f64, 3 x {(1 << 25) * 8 / 1e6:.0f} MB, 24 B/element): "
      f"{triad:.2f} GB/s (median over rounds of the best of 10; rounds "
      + ", ".join(f"{x:.2f}" for x in triads) + ")")
tq = rows.get("torch")
print(f"{'variant':<24} {'call_ms':>8} {'step_ms':>8} {'GB/s':>14} "
      f"{'%triad':>14} {'torch/x':>13} {'rss_MB':>7}")
def br(a, b, f):
    return f"{f(a)} ({f(b)})" if b is not None else f(a)
for v in variants:
    x = rows[v]
    bw = nbytes / (x["step"] * 1e-3) / 1e9
    bwc = nbytes / (x["call"] * 1e-3) / 1e9 if x["call"] else None
    sp = tq["step"] / x["step"] if tq else float("nan")
    spc = tq["step"] / x["call"] if tq and x["call"] else None
    call = f"{x['call']:8.0f}" if x["call"] else f"{'-':>8}"
    print(f"{names[v]:<24} {call} {x['step']:8.0f} "
          f"{br(bw, bwc, lambda z: f'{z:.2f}'):>14} "
          f"{br(bw / triad, bwc and bwc / triad, lambda z: f'{100 * z:.0f}%'):>14} "
          f"{br(sp, spc, lambda z: f'{z:.2f}x') if tq else '-':>13} "
          f"{x['rss']:7.0f}")
for v in ("fused", "planned"):
    if v in rows:
        print(f"  {names[v]}: {rows[v]['jit']}")
for v in ("fused", "planned"):
    if v not in rows:
        continue
    x = rows[v]
    for t in ("torch", "torch-foreach"):
        if t in rows:
            q = rows[t]["step"]
            print(f"target: AdamW {names[v]} >= 3x faster than {names[t]}: "
                  f"{q / x['step']:.2f}x on the whole step "
                  f"({q / x['call']:.2f}x on the call alone)")
    print(f"target: AdamW {names[v]} bandwidth >= 70% of the triad's: "
          f"{100 * nbytes / (x['step'] * 1e-3) / 1e9 / triad:.0f}% on the "
          f"whole step ({100 * nbytes / (x['call'] * 1e-3) / 1e9 / triad:.0f}%"
          f" on the call alone)")
PY
