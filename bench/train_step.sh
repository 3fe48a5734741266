#!/usr/bin/env bash
# train_step.sh: GPT-2 124M training steps (AdamW), raf against PyTorch eager
# on the same machine, in the same run, with the same thread count; also
# narrower GPT-2s (SIZES entries BxTxC).
#
#   bash bench/train_step.sh [BUILD_DIR] [SIZES] [STEPS]
#     BUILD_DIR  raf's build directory (default build)
#     SIZES      space-separated BxT, GPT-2 124M, or BxTxC: the same 12
#                layers C wide with C/64 heads (default "4x64 8x256
#                4x128x384 4x128x512": 124M, then 6 and 8 heads)
#     STEPS      steps per run, the first a warm-up left out (default: 6 for
#                at most 512 tokens a step, else 3)
#   environment:
#     THREADS    kernel/BLAS/torch threads, both sides (default 2)
#     ROUNDS     runs of each variant, interleaved (default 2; at least 2
#                for the second-run JIT time)
#     VARIANTS   space-separated, in the order of the first round (default
#                "torch fused unfused planned"):
#       fused    raf-opt -p 'autodiff,optimizer{kind=adamw lr=3e-4},inline,
#                fuse'; raf-run's default dialects (fused calls: llvm,
#                matmul: cblas, the rest: cpu-ref)
#       unfused  raf-opt -p 'autodiff,optimizer{kind=adamw lr=3e-4}';
#                raf-run --dialects=cblas,cpu-ref
#       planned  fused, then plan-memory (one arena per call, updates
#                donated in place); default dialects
#       amp      planned with the amp pass (bf16) after autodiff
#       torch    bench/gpt2_torch.py: torch.optim.AdamW(lr=3e-4), eager,
#                with OMP_WAIT_POLICY=PASSIVE unless the environment sets
#                it (PyTorch's faster setting on 2 cores: its OpenMP
#                workers otherwise spin between its many parallel regions)
#       torch-amp  torch under torch.autocast("cpu", dtype=torch.bfloat16)
#     (The former DIALECTS variable is gone: VARIANTS replaces it.)
#
# The model is examples/gpt2/gen_gpt2.py's GPT-2 124M (12 layers, 12 heads,
# 768 wide, vocab 50257, ctx 1024: 124,439,808 params), or for a size BxTxC
# the same with width C and C/64 heads (C=384: 40.6M params less wpe, C=512:
# 63.6M; the 50257-token embedding is a large share of them), trained on
# random token ids, the same batches on both sides. Each round runs every variant
# once (the order reversed every other round, as the shared machine's load
# drifts) and one OpenBLAS sgemm measurement (bench/matmul_openblas.c, the
# library raf links, 1024x1024x1024, same threads) before each variant.
#
# Printed per size and variant, medians over all rounds' steps after the
# warm-up:
#   step_ms   the whole period of a step, then its range over the samples.
#             raf: the time between consecutive --log lines
#             (bench/steptime.c), which includes what raf-run does after
#             the call: storing each {updates} result into its argument (a
#             copy of params and moments when the step is not
#             memory-planned), freeing results, feeding the batch. PyTorch:
#             zero_grad + forward + backward + opt.step().
#   call_ms   raf-run's --log "ms": the call of @gpt2_train_step alone
#   tokens/s  B*T / step_ms
#   MFU       model FLOP/s over the sgemm rate measured in the same run.
#             Model FLOPs per step (PaLM appendix B, nanoGPT's estimate_mfu):
#               6 * N * B*T  +  12 * L * T * C * B*T
#             N the params less the position embedding (wte counts once, as
#             the tied LM head's matmul), L layers, C the width (= heads x
#             head dim); the attention term counts the full T x T scores
#             (causal masking not subtracted), as PaLM does.
#   rss_MB    the process's peak RSS (/usr/bin/time %M, both sides)
#   vs_torch  step_ms / PyTorch's (below 1: raf faster); rss_MB / PyTorch's
#   loss1     the first step's loss (raf variants share init and data, so
#             they must agree; PyTorch's init is another draw)
# and per size: raf-opt's time for the fused pipeline (median of 5; target
# < 1 s), and the llvm dialect's JIT time (raf-run --print-jit-stats) in the
# fused variant's first run, with an empty kernel cache (a fresh
# RAF_CACHE_DIR; target < 10 s), and its second (the cache filled; target
# < 1 s). Lines starting "target:" restate each target with the figure; for
# the narrower models (BxTxC) the target is speed: PyTorch's step time over
# raf's at least 1.5.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
sizes=${2:-4x64 8x256 4x128x384 4x128x512}
steps_arg=${3:-}
threads=${THREADS:-2}
rounds=${ROUNDS:-2}
variants=${VARIANTS:-torch fused unfused planned}
L=12 V=50257 CTX=1024
py=/usr/bin/python3
for v in $variants; do
  case $v in fused | unfused | planned | amp | torch | torch-amp) ;;
    *) echo "train_step.sh: unknown variant '$v' (fused unfused planned amp torch torch-amp)" >&2
       exit 2 ;;
  esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

include=$(sed -n 's/^RAF_CBLAS_INCLUDE:PATH=//p' "$build/CMakeCache.txt")
lib=$(sed -n 's/^RAF_OPENBLAS:FILEPATH=//p' "$build/CMakeCache.txt")
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I"$include" \
  bench/matmul_openblas.c "$lib" -o "$tmp/sgemm"
cc -O2 -shared -fPIC bench/steptime.c -o "$tmp/steptime.so"

now() { date +%s.%N; }

pipeline() { # VARIANT: raf-opt's pipeline
  case $1 in
    fused) echo 'autodiff,optimizer{kind=adamw lr=3e-4},inline,fuse' ;;
    unfused) echo 'autodiff,optimizer{kind=adamw lr=3e-4}' ;;
    planned) echo 'autodiff,optimizer{kind=adamw lr=3e-4},inline,fuse,plan-memory' ;;
    amp) echo 'autodiff,amp,optimizer{kind=adamw lr=3e-4},inline,fuse,plan-memory' ;;
  esac
}

run_sgemm() { # DIR: one sgemm measurement, appended to DIR/sgemm.jsonl
  "$tmp/sgemm" 1024 1024 1024 12 "$threads" "$1/sgemm.1"
  tail -n +3 "$1/sgemm.1" >> "$1/sgemm.jsonl"
}

run_variant() { # DIR B T STEPS VARIANT ROUND
  local d=$1 B=$2 T=$3 n=$4 v=$5 r=$6 out=$1/$5.$6
  if [ "$v" = torch ] || [ "$v" = torch-amp ]; then
    local autocast=()
    [ "$v" = torch-amp ] && autocast=(--autocast)
    OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE} \
      /usr/bin/time -f '%M' -o "$out.rss" $py bench/gpt2_torch.py "${autocast[@]}" --layers $L \
      --heads $H --embd $C --vocab $V --ctx $CTX --seq "$T" --batch "$B" \
      --steps "$n" --threads "$threads" "$d" > "$out.json"
    return
  fi
  local flag=()
  [ "$v" = unfused ] && flag=(--dialects=cblas,cpu-ref)
  RAF_CACHE_DIR=$d/cache.$v RAF_STEP_TIMES=$out.times \
    LD_PRELOAD=$tmp/steptime.so /usr/bin/time -f '%M' -o "$out.rss" \
    "$build/raf-run" "$d/$v.raf" --function=gpt2_train_step "${flag[@]}" \
    --threads="$threads" --steps="$n" --dataset=x=@"$d/x.npy" \
    --dataset=y=@"$d/y.npy" --log="$out.jsonl" --output=@"$d/loss.npy" \
    --print-jit-stats > /dev/null 2> "$out.err" || {
    # A failed run is reported in the table; the other variants go on.
    echo "raf-run failed ($v, ${B}x$T, round $((r + 1))):" >&2
    tail -n 5 "$out.err" >&2
    touch "$out.failed"
  }
}

echo "GPT-2 (${L} layers, 768 wide and 12 heads unless a size says BxTxC:" \
  "C wide, C/64 heads; vocab ${V}, ctx ${CTX}), AdamW lr 3e-4, ${threads}" \
  "threads, ${rounds} rounds, build ${build}"
for size in $sizes; do
  IFS=x read -r B T C <<< "$size"
  C=${C:-768}
  if [ -z "$T" ] || ((C % 64)); then
    echo "train_step.sh: size '$size' is not BxT or BxTxC with C a multiple of 64" >&2
    exit 2
  fi
  H=$((C / 64))
  steps=${steps_arg:-$(( B * T <= 512 ? 6 : 3 ))}
  d=$tmp/$size
  mkdir -p "$d"
  $py examples/gpt2/gen_gpt2.py --layers $L --heads $H --embd $C --vocab $V \
    --ctx $CTX --seq "$T" --batch "$B" "$d/gpt2.raf"
  $py -c "import numpy as np
r = np.random.default_rng(0)
x = r.integers(0, $V, size=(8 * $B, $T), dtype=np.int64)
np.save('$d/x.npy', x); np.save('$d/y.npy', np.roll(x, -1, axis=1))"

  # raf-opt: every variant's pipeline once, the fused one timed 5 times.
  for v in $variants; do
    [ "${v#torch}" != "$v" ] || "$build/raf-opt" -p "$(pipeline "$v")" "$d/gpt2.raf" \
      -o "$d/$v.raf"
  done
  opt_s=()
  for i in 1 2 3 4 5; do
    t0=$(now)
    "$build/raf-opt" -p "$(pipeline fused)" "$d/gpt2.raf" -o "$d/opt.raf"
    opt_s+=("$(now) - $t0")
  done
  opt_med=$($py -c "import statistics; print(f'{statistics.median([${opt_s[*]/%/,}]):.3f}')")

  echo
  echo "== ${size}: B=${B}, T=${T}, C=${C} (${H} heads), ${steps} steps per run (1 warm-up)"
  order=($variants)
  for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < ${#order[@]}; i++)); do
      if ((r % 2)); then v=${order[$((${#order[@]} - 1 - i))]}; else v=${order[$i]}; fi
      run_sgemm "$d"
      echo "  round $((r + 1))/$rounds: $v" >&2
      run_variant "$d" "$B" "$T" "$steps" "$v" "$r"
    done
  done

  $py - "$d" "$B" "$T" "$L" "$C" "$rounds" "$opt_med" $variants <<'PY'
import glob, json, re, statistics, sys
d, B, T, L, C, rounds, opt_med = sys.argv[1], *map(int, sys.argv[2:7]), sys.argv[7]
variants = sys.argv[8:]
med = statistics.median

# N: the params less wpe, from the model's header ("123,702,528 params").
text = open(f"{d}/gpt2.raf").read()
total = int(re.search(r"; ([\d,]+) params", text).group(1).replace(",", ""))
ctx = int(re.search(r"%wpe.weight: f32\[(\d+),", text).group(1))
N = total - ctx * C
tokens = B * T
flops = 6 * N * tokens + 12 * L * T * C * tokens
gemm = [2 * 1024 ** 3 / (json.loads(l)["ms"] * 1e-3)
        for l in open(f"{d}/sgemm.jsonl")]
peak = med(gemm)

rows = {}
for v in variants:
    step, call, rss, loss1 = [], [], [], []
    failed = [r for r in range(rounds)
              if glob.glob(f"{d}/{v}.{r}.failed")]
    if failed:
        err = open(f"{d}/{v}.{failed[0]}.err").read().strip().splitlines()
        rows[v] = dict(failed=f"FAILED in round(s) {[r + 1 for r in failed]}: "
                       + (err[-1] if err else "no message"))
        continue
    for r in range(rounds):
        base = f"{d}/{v}.{r}"
        rss.append(int(open(f"{base}.rss").read().split()[-1]) / 1024)
        if v.startswith("torch"):
            j = json.loads(open(f"{base}.json").read())
            step += j["ms"][1:]
            loss1.append(j["loss"][0])
            continue
        log = [json.loads(l) for l in open(f"{base}.jsonl")]
        call += [e["ms"] for e in log][1:]
        loss1.append(log[0]["loss"] if log[0]["loss"] is not None
                     else float("nan"))
        t = [float(l) for l in open(f"{base}.times")]
        step += [b - a for a, b in zip(t, t[1:])]
        if not t:
            sys.exit(f"{base}.times: no step times (bench/steptime.c saw no "
                     "--log lines)")
    if not step:
        sys.exit(f"{v}: no timed steps (STEPS must be at least 2)")
    rows[v] = dict(step=med(step), lo=min(step), hi=max(step),
                   call=med(call) if call else None, rss=max(rss),
                   loss1=loss1[0], n=len(step))

names = {"fused": "raf fused", "unfused": "raf unfused",
         "planned": "raf fused+plan-memory", "amp": "raf amp bf16 (planned)",
         "torch": "pytorch eager", "torch-amp": "pytorch autocast bf16"}
tq = rows.get("torch")
tq = tq if tq and "failed" not in tq else None
print(f"model FLOPs per step {flops / 1e9:.1f} G (N = {N:,} params less wpe);"
      f" OpenBLAS sgemm 1024^3: {peak / 1e9:.1f} GFLOP/s (median of "
      f"{len(gemm)}, range {min(gemm) / 1e9:.1f}-{max(gemm) / 1e9:.1f})")
print(f"{'variant':<22} {'step_ms':>9} {'(range)':>15} {'call_ms':>9} "
      f"{'tokens/s':>9} {'MFU':>6} {'rss_MB':>7} {'vs_torch':>8} "
      f"{'rss_vs':>7} {'loss1':>9}")
for v in variants:
    x = rows[v]
    if "failed" in x:
        print(f"{names[v]:<22} {x['failed']}")
        continue
    call = f"{x['call']:9.0f}" if x["call"] is not None else f"{'-':>9}"
    ratio = f"{x['step'] / tq['step']:8.2f}" if tq else f"{'-':>8}"
    rratio = f"{x['rss'] / tq['rss']:7.2f}" if tq else f"{'-':>7}"
    rng = f"({x['lo']:.0f}-{x['hi']:.0f})"
    print(f"{names[v]:<22} {x['step']:9.0f} {rng:>15} {call} "
          f"{tokens * 1e3 / x['step']:9.1f} "
          f"{100 * flops / (x['step'] * 1e-3) / peak:5.1f}% {x['rss']:7.0f} "
          f"{ratio} {rratio} {x['loss1']:9.5f}")

# The raf variants start from the same params and see the same batches.
ls = {v: rows[v]["loss1"] for v in variants
      if not v.startswith("torch") and v != "amp" and "failed" not in rows[v]}
if len(ls) > 1:
    spread = max(ls.values()) - min(ls.values())
    ok = spread <= 1e-3 * max(abs(x) for x in ls.values())
    print(f"raf variants' first losses {'agree' if ok else 'DIFFER'} "
          f"(spread {spread:.2e})")

# JIT: the fused variant's first run (empty cache) and second (filled).
def jit(v, r):
    try:
        err = open(f"{d}/{v}.{r}.err").read()
    except OSError:
        return None
    m = re.search(r"jit: (\d+) fused functions: (\d+) compiled, (\d+) from "
                  r"the cache, (\d+) reused, (\d+) declined \(([\d.]+) ms\)", err)
    return m and (float(m.group(6)) / 1e3, m.group(0))

pre = f"target: [{B}x{T}]" if C == 768 else f"target: [{B}x{T}x{C}]"
print(f"{pre} raf-opt whole fused pipeline < 1 s: {opt_med} s (median of 5)")
if "fused" in variants:
    for r, what, lim in ((0, "first run (empty kernel cache)", 10),
                         (1, "second run (kernel cache filled)", 1)):
        j = jit("fused", r) if r < rounds else None
        if j:
            print(f"{pre} JIT time, {what} < {lim} s: {j[0]:.3f} s  [{j[1]}]")
        else:
            print(f"{pre} JIT time, {what} < {lim} s: n/a")
for v in ("fused", "planned"):
    if v in rows and "failed" not in rows[v]:
        x = rows[v]
        print(f"{pre} MFU of {names[v]} >= 50%: "
              f"{100 * flops / (x['step'] * 1e-3) / peak:.1f}%")
if tq and C != 768:
    for v in ("fused", "planned"):
        if v in rows and "failed" not in rows[v]:
            print(f"{pre} {names[v]} >= 1.5x pytorch eager's speed: "
                  f"{tq['step'] / rows[v]['step']:.2f}x")
if tq:
    print(f"{pre} MFU of pytorch eager (for reference): "
          f"{100 * flops / (tq['step'] * 1e-3) / peak:.1f}%")
    for v in ("fused", "planned", "unfused"):
        if v in rows and "failed" not in rows[v]:
            x = rows[v]
            print(f"{pre} peak RSS of {names[v]} <= pytorch's: "
                  f"{x['rss']:.0f} MB vs {tq['rss']:.0f} MB "
                  f"({x['rss'] / tq['rss']:.2f}x)")
PY
done
