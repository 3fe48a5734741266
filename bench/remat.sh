#!/usr/bin/env bash
# remat.sh: rematerialisation under a memory budget (the remat pass,
# docs/Remat.md) on GPT-2 124M: raf's step time and static peak at
# budgets below the peak without remat, beside PyTorch eager with and
# without torch.utils.checkpoint on every transformer block, in the same
# run; then the largest batch that fits a fixed budget.
#
#   bash bench/remat.sh [BUILD_DIR] [SIZE] [STEPS]
#     BUILD_DIR  raf's build directory (default build)
#     SIZE       BxT of the budget sweep (default 8x256)
#     STEPS      steps per run, the first a warm-up left out (default 3)
#   environment:
#     THREADS    kernel/BLAS/torch threads, both sides (default 2)
#     ROUNDS     runs of each variant, interleaved, the order reversed
#                every other round (default 1)
#     LAYERS     transformer blocks (default 12, GPT-2 124M; fewer for a
#                quick run, e.g. LAYERS=2 bash bench/remat.sh build 2x64)
#     RATIOS     the sweep's budgets as fractions of the peak without remat
#                (default "1.0 0.7 0.5 0.35")
#     BASE_B     the batch whose peak is the fixed budget (default 4, at
#                SIZE's T)
#     MAX_B      the largest batch the search tries (default 64)
#
# raf's pipelines are 'autodiff,optimizer{kind=adamw lr=3e-4},inline,fuse',
# then remat{ratio=R} or remat{budget=BYTES}, then plan-memory; "no remat"
# is the same without remat. The budget's ratio is of the planned peak
# without remat (raf-opt --stats' "planned peak": params, AdamW moments,
# batch and the arena). At 1.0 the pass has nothing to do; the script
# checks that its output is the no-remat step's and then uses that row as
# "without remat" (else it runs the no-remat step as a row of its own).
#
# 1. Budget sweep, at SIZE. Per raf row: the budget; the planned static
#    peak (raf-opt --stats) and the measured one (raf-run --print-memory,
#    which must equal it); peak RSS (/usr/bin/time %M); step_ms, the whole
#    period of a step (bench/steptime.c, as bench/train_step.sh), median
#    of all rounds' steps after the warm-up, and its range; vs_none, the
#    step over the step without remat, of the medians and (min) of the
#    fastest steps (on a loaded machine the least disturbed); the values
#    the pass recomputes and its extra FLOPs as a share of the step (the
#    pass's note: its cost model, ir/cost.c); raf-opt's wall time for the whole pipeline (median
#    of 3, without --stats) and the remat pass's (--time-passes). A budget
#    the pass cannot meet is a row "infeasible (least reachable: X)" or
#    "infeasible (below the params and states alone: X)", the pass's own
#    figures. PyTorch rows: bench/gpt2_torch.py with and without
#    --checkpoint, step_ms and peak RSS. The raf rows share init and
#    batches, so their first losses must agree (remat must not change
#    what is computed); so must PyTorch's two rows (another init draw).
#
# 2. raf at per-block checkpointing's peak. Checkpointing every block keeps
#    each block's input and runs the block's forward again in the backward
#    pass. Its recomputed FLOPs are the forward of all L blocks, counting
#    the matmuls (multiply-add = 2) of the block's four projections and of
#    attention:
#      L * (2*BT*(3C^2 + C^2 + 4C^2 + 4C^2)  +  2 * 2*B*H*T*T*D)
#        = L * (24*BT*C^2 + 4*B*T^2*C)                (C = H*D, BT = B*T)
#    and, as the figure compared, by raf's cost model (ir/cost.c, the one
#    the pass's FLOPs come from, which also counts the layer norms, softmax
#    and gelu): L times the growth of @gpt2's cost (raf-opt --stats) from a
#    model of L-1 blocks to one of L.
#    Its peak is estimated for raf's own plan rather than taken from
#    PyTorch's RSS, which holds another program's buffers and the
#    allocator's caches: without remat,
#    the peak (at the start of the backward pass) holds every block's
#    saved activations, S bytes each; with checkpointing it holds L block
#    inputs (X = BT*C*4 bytes each) and one block's full activations, the
#    rest (params, states, batch, gradients, the logits path) unchanged:
#      peak_ckpt = peak_none - (L - 1) * (S - X)
#    S is measured on raf's plan: the growth of the planned arena from a
#    model of L-1 blocks to one of L (L+1 when L is 1). raf is then
#    compiled with remat{budget=peak_ckpt} and run as the sweep's last row.
#    Printed: peak_ckpt, PyTorch's measured RSS saving from checkpointing
#    beside raf's estimated saving (L-1)*(S-X), and both sides' recomputed
#    FLOPs in GFLOP and as shares of the step's FLOPs by the same cost
#    model (@gpt2_train_step's cost in raf-opt --stats).
#
# 3. Largest batch under a fixed budget: the planned peak without remat at
#    B=BASE_B (SIZE's T). For B = BASE_B+1, BASE_B+2, ... up to MAX_B,
#    remat{budget=that peak} is compiled until the first B it cannot fit;
#    each B's outcome is printed. The largest that fits is run with remat,
#    B=BASE_B without, and their tokens/s (B*T / step_ms) compared, of the
#    median steps and of the fastest; when the largest is above 2*BASE_B,
#    2*BASE_B with remat too (the batch RAF's paper reports its
#    throughput at).
#
# Targets ("target:" lines; figures as ratios): at 50% of the peak the step
# at most 1.10x the step without remat; at per-block checkpointing's peak,
# raf's recomputed FLOPs below checkpointing's (raf / ckpt < 1); the
# largest batch under the fixed budget at least 2x BASE_B, at at least 95%
# of BASE_B's tokens/s without remat; raf-opt with remat under 1 s for
# GPT-2 124M (the slowest sweep row's pipeline).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
size=${2:-8x256}
steps=${3:-3}
threads=${THREADS:-2}
rounds=${ROUNDS:-1}
ratios=${RATIOS:-1.0 0.7 0.5 0.35}
base_b=${BASE_B:-4}
max_b=${MAX_B:-64}
L=${LAYERS:-12} H=12 C=768 V=50257 CTX=1024
B=${size%x*} T=${size#*x}
py=/usr/bin/python3
base='autodiff,optimizer{kind=adamw lr=3e-4},inline,fuse'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -shared -fPIC bench/steptime.c -o "$tmp/steptime.so"
# One kernel cache for every raf run: the remat rows compile the same fused
# functions; the JIT falls in the warm-up step either way.
export RAF_CACHE_DIR=$tmp/cache

now() { date +%s.%N; }

model() { # DIR BATCH LAYERS: DIR/gpt2.raf and its batches x.npy, y.npy
  mkdir -p "$1"
  $py examples/gpt2/gen_gpt2.py --layers "$3" --heads $H --embd $C \
    --vocab $V --ctx $CTX --seq "$T" --batch "$2" "$1/gpt2.raf"
  $py -c "import numpy as np
r = np.random.default_rng(0)
x = r.integers(0, $V, size=(8 * $2, $T), dtype=np.int64)
np.save('$1/x.npy', x); np.save('$1/y.npy', np.roll(x, -1, axis=1))"
}

compile() { # DIR NAME PASSES: base pipeline + PASSES into DIR/NAME.raf;
  # raf-opt's stderr (--stats, --time-passes, the pass's note or error) in
  # DIR/NAME.opt, its exit status in DIR/NAME.rc. A failure is a result.
  local rc=0
  rm -f "$1/$2.raf"
  "$build/raf-opt" --stats --time-passes -p "$base,$3" "$1/gpt2.raf" \
    -o "$1/$2.raf" 2> "$1/$2.opt" || rc=$?
  echo "$rc" > "$1/$2.rc"
}

time_opt() { # DIR NAME PASSES: raf-opt's wall time, 3 runs, in DIR/NAME.opt_s
  local t0 i
  for i in 1 2 3; do
    t0=$(now)
    "$build/raf-opt" -p "$base,$3" "$1/gpt2.raf" -o /dev/null 2> /dev/null || true
    awk "BEGIN { print $(now) - $t0 }" >> "$1/$2.opt_s"
  done
}

peak_of() { # OPTFILE: the planned peak of @gpt2_train_step in bytes
  sed -n 's/.*memory @gpt2_train_step: planned peak \([0-9]*\) bytes.*/\1/p' "$1"
}
arena_of() { # OPTFILE: its arena in bytes
  sed -n 's/.*memory @gpt2_train_step: .* arena \([0-9]*\),.*/\1/p' "$1"
}

run() { # DIR NAME KIND ROUND: one run; KIND raf, torch or torch-ckpt
  local d=$1 n=$2 out=$1/$2.$4 Bd
  Bd=$(cat "$d/batch")
  if [ "$3" != raf ]; then
    local ck=()
    [ "$3" = torch-ckpt ] && ck=(--checkpoint)
    /usr/bin/time -f '%M' -o "$out.rss" $py bench/gpt2_torch.py "${ck[@]}" \
      --layers "$L" --heads $H --embd $C --vocab $V --ctx $CTX --seq "$T" \
      --batch "$Bd" --steps "$steps" --threads "$threads" "$d" \
      > "$out.json" 2> "$out.err" || {
      echo "pytorch failed ($n, round $(($4 + 1))):" >&2
      tail -n 5 "$out.err" >&2
      touch "$out.failed"
    }
    return 0
  fi
  RAF_STEP_TIMES=$out.times LD_PRELOAD=$tmp/steptime.so \
    /usr/bin/time -f '%M' -o "$out.rss" \
    "$build/raf-run" "$d/$n.raf" --function=gpt2_train_step \
    --threads="$threads" --steps="$steps" --dataset=x=@"$d/x.npy" \
    --dataset=y=@"$d/y.npy" --log="$out.jsonl" --output=@"$d/loss.npy" \
    --print-memory > "$out.out" 2> "$out.err" || {
    echo "raf-run failed ($n, round $(($4 + 1))):" >&2
    tail -n 5 "$out.err" >&2
    touch "$out.failed"
  }
}

echo "GPT-2 (${L} layers, ${H} heads, ${C} wide, vocab ${V}, ctx ${CTX})," \
  "AdamW lr 3e-4, ${threads} threads, ${rounds} round(s), ${steps} steps per" \
  "run (1 warm-up), build ${build}; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# ---- 1 and 2: the budget sweep and checkpointing's peak, at SIZE
sw=$tmp/sweep
model "$sw" "$B" "$L"
echo "$B" > "$sw/batch"
echo "  compiling the sweep at ${size}" >&2
compile "$sw" none plan-memory
rows=()
for r in $ratios; do
  compile "$sw" "r$r" "remat{ratio=$r},plan-memory"
  time_opt "$sw" "r$r" "remat{ratio=$r},plan-memory"
  rows+=("r$r")
done
# S: the arena's growth per block, from a model with one block less (more
# when L is 1).
Lm=$((L > 1 ? L - 1 : L + 1))
model "$tmp/marg" "$B" "$Lm"
compile "$tmp/marg" none plan-memory
peak_none=$(peak_of "$sw/none.opt")
arena_l=$(arena_of "$sw/none.opt")
arena_m=$(arena_of "$tmp/marg/none.opt")
[ -n "$peak_none" ] && [ -n "$arena_l" ] && [ -n "$arena_m" ] || {
  echo "remat.sh: no planned peak in raf-opt --stats:" >&2
  cat "$sw/none.opt" "$tmp/marg/none.opt" >&2
  exit 1
}
block_s=$(((arena_l - arena_m) / (L - Lm)))
block_x=$((B * T * C * 4))
peak_ckpt=$((peak_none - (L - 1) * (block_s - block_x)))
echo "$block_s $block_x $peak_ckpt $Lm" > "$sw/ckpt.est"
compile "$sw" ckpt "remat{budget=$peak_ckpt},plan-memory"
time_opt "$sw" ckpt "remat{budget=$peak_ckpt},plan-memory"
rows+=(ckpt)

# The runs: name, kind and directory; the 100% row stands for "no remat"
# when its step is the same.
runs=()
none_row=""
for n in "${rows[@]}"; do
  if { [ "$n" = r1.0 ] || [ "$n" = r1 ]; } && cmp -s "$sw/none.raf" "$sw/$n.raf"; then
    none_row=$n
  fi
done
if [ -z "$none_row" ]; then
  none_row=none
  runs+=("$sw none raf")
fi
echo "$none_row" > "$sw/none_row"
for n in "${rows[@]}"; do
  if [ "$(cat "$sw/$n.rc")" = 0 ]; then runs+=("$sw $n raf"); fi
done
runs+=("$sw torch torch" "$sw torch-ckpt torch-ckpt")

# ---- 3: the largest batch under the fixed budget of BASE_B's peak
bb=$tmp/base
model "$bb" "$base_b" "$L"
echo "$base_b" > "$bb/batch"
compile "$bb" none plan-memory
budget_b=$(peak_of "$bb/none.opt")
best=$base_b
: > "$tmp/search"
for ((b = base_b + 1; b <= max_b; b++)); do
  echo "  compiling B=${b} under ${budget_b} bytes" >&2
  model "$tmp/try.$b" "$b" "$L"
  compile "$tmp/try.$b" fit "remat{budget=$budget_b},plan-memory"
  echo "$b $tmp/try.$b" >> "$tmp/search"
  [ "$(cat "$tmp/try.$b/fit.rc")" = 0 ] || break
  best=$b
done
echo "$best" > "$tmp/best"
runs+=("$bb none raf")
if [ "$best" != "$base_b" ]; then
  echo "$best" > "$tmp/try.$best/batch"
  runs+=("$tmp/try.$best fit raf")
fi
# RAF's own figure is at twice the batch: run that one too when it fits and
# is not the largest.
double=$((2 * base_b))
if ((best > double)); then
  echo "$double" > "$tmp/try.$double/batch"
  runs+=("$tmp/try.$double fit raf")
fi

# Interleaved rounds, the order reversed every other round.
for ((r = 0; r < rounds; r++)); do
  for ((i = 0; i < ${#runs[@]}; i++)); do
    if ((r % 2)); then k=$((${#runs[@]} - 1 - i)); else k=$i; fi
    read -r d n kind <<< "${runs[$k]}"
    echo "  round $((r + 1))/$rounds: ${d#"$tmp"/} $n" >&2
    run "$d" "$n" "$kind" "$r"
  done
done

$py - "$tmp" "$B" "$T" "$L" "$H" "$C" "$rounds" "$base_b" "$max_b" <<'PY'
import glob, json, os, re, statistics, sys
tmp = sys.argv[1]
B, T, L, H, C, rounds, base_b, max_b = map(int, sys.argv[2:10])
med = statistics.median
MiB = 1024 ** 2
sw = f"{tmp}/sweep"


def opt_result(d, n):
    """What raf-opt said for DIR/NAME: peak, arena, the note, or why not."""
    text = open(f"{d}/{n}.opt").read()
    rc = int(open(f"{d}/{n}.rc").read())
    r = {"rc": rc}
    m = re.search(r"memory @gpt2_train_step: planned peak (\d+) bytes"
                  r" \(arguments (\d+), arena (\d+)", text)
    if m:
        r["peak"], r["args"], r["arena"] = map(int, m.groups())
    m = re.search(r"^\s+([\d.]+) \(\s*[\d.]+%\)\s+remat$", text, re.M)
    r["remat_s"] = float(m.group(1)) if m else None
    r["cost"] = {f: float(x) for f, x in
                 re.findall(r"cost @(\S+): ([\d.e+-]+) FLOPs", text)}
    note = re.search(r"note: remat: @gpt2_train_step: (.*)", text)
    if note:
        r["note"] = note.group(1)
        m = re.search(r"(\d+) values recomputed, ([\d.e+-]+) FLOPs more "
                      r"\(([\d.]+)% of the step\)", note.group(1))
        if m:
            r["nvals"], r["extra"], r["pct"] = (int(m.group(1)),
                                                 float(m.group(2)),
                                                 float(m.group(3)))
    if rc:
        least = re.search(r"below the least peak remat can reach, .*?(\d+) "
                          r"bytes", text)
        params = re.search(r"below its parameters and states alone, .*?(\d+)"
                           r" bytes", text)
        if least:
            r["why"] = ("least reachable", int(least.group(1)))
        elif params:
            r["why"] = ("below the params and states alone",
                        int(params.group(1)))
        else:
            err = [l for l in text.splitlines() if "error" in l]
            r["why"] = ("raf-opt failed", (err or text.splitlines()
                                            or ["no message"])[-1])
    s = f"{d}/{n}.opt_s"
    if os.path.exists(s):
        r["opt_s"] = med(float(x) for x in open(s))
    return r


def run_result(d, n):
    """Step times, RSS, measured peak and first loss of DIR/NAME's runs."""
    step, rss, loss1, peak = [], [], [], []
    for r in range(rounds):
        base = f"{d}/{n}.{r}"
        if os.path.exists(f"{base}.failed"):
            err = open(f"{base}.err").read().strip().splitlines()
            return {"failed": err[-1] if err else "no message"}
        rss.append(int(open(f"{base}.rss").read().split()[-1]) / 1024)
        if n.startswith("torch"):
            j = json.loads(open(f"{base}.json").read())
            step += j["ms"][1:]
            loss1.append(j["loss"][0])
            continue
        log = [json.loads(l) for l in open(f"{base}.jsonl")]
        loss1.append(log[0]["loss"])
        t = [float(l) for l in open(f"{base}.times")]
        if not t:
            sys.exit(f"{base}.times: no step times (bench/steptime.c saw no "
                     "--log lines)")
        step += [b - a for a, b in zip(t, t[1:])]
        m = re.search(r"peak tensor memory: (\d+) bytes",
                      open(f"{base}.out").read())
        peak.append(int(m.group(1)) if m else None)
    if not step:
        sys.exit(f"{n}: no timed steps (STEPS must be at least 2)")
    return {"step": med(step), "lo": min(step), "hi": max(step),
            "rss": max(rss), "loss1": loss1[0],
            "mpeak": peak[0] if peak else None}


def mib(x):
    return f"{x / MiB:.0f}"


def infeasible(o):
    what, x = o["why"]
    if isinstance(x, int):
        return f"infeasible ({what}: {mib(x)} MiB, {100 * x / peak0:.1f}%)"
    return f"{what}: {x}"


none = opt_result(sw, "none")
peak0 = none["peak"]
none_row = open(f"{sw}/none_row").read().strip()
rows = sorted((os.path.basename(p)[:-3] for p in glob.glob(f"{sw}/r*.rc")),
              key=lambda n: -float(n[1:]))
rows.append("ckpt")
base_run = run_result(sw, none_row)
base_step, base_lo = base_run.get("step"), base_run.get("lo")


def vs_none(x):
    """A step over the step without remat: medians, and fastest steps."""
    if not base_step:
        return "-", "-"
    return f"{x['step'] / base_step:.2f}x", f"{x['lo'] / base_lo:.2f}x"

block_s, block_x, peak_ckpt, Lm = map(int, open(f"{sw}/ckpt.est").read().split())
# Checkpointing's recomputation: the forward of every block. By the matmuls
# alone (the formula), and by raf's cost model (what the pass's figures
# use): L times a block's forward, the growth of @gpt2's cost from Lm to L
# blocks. The step's FLOPs: raf's cost model of @gpt2_train_step; without
# --stats' cost lines, PaLM's model FLOPs (train_step.sh's MFU).
BT = B * T
formula_flops = L * (24 * BT * C * C + 4 * B * T * T * C)
marg = opt_result(f"{tmp}/marg", "none")
fwd_l, fwd_m = none["cost"].get("gpt2"), marg["cost"].get("gpt2")
step_cost = none["cost"].get("gpt2_train_step")
if fwd_l and fwd_m and step_cost:
    ckpt_flops = L * abs(fwd_l - fwd_m) / abs(L - Lm)
    step_flops = step_cost
    step_what = "raf's cost model: @gpt2_train_step's cost in --stats"
else:
    text = open(f"{sw}/gpt2.raf").read()
    total = int(re.search(r"; ([\d,]+) params", text).group(1)
                .replace(",", ""))
    ctx = int(re.search(r"%wpe.weight: f32\[(\d+),", text).group(1))
    N = total - ctx * C
    ckpt_flops = formula_flops
    step_flops = 6 * N * BT + 12 * L * T * C * BT
    step_what = f"6*N*BT + 12*L*T*C*BT, N = {N:,} (no cost in --stats)"

print(f"\n== budget sweep: B={B}, T={T}; peak without remat {mib(peak0)} MiB"
      f" (params, moments and batch {mib(none['args'])}, arena "
      f"{mib(none['arena'])})")
print(f"{'budget':<16} {'static':>7} {'measured':>8} {'rss':>6} "
      f"{'step_ms':>8} {'(range)':>13} {'vs_none':>7} {'(min)':>6} "
      f"{'recomp':>6} "
      f"{'FLOPs+':>7} {'opt_s':>6} {'remat_s':>7}")
print(f"{'':<16} {'MiB':>7} {'MiB':>8} {'MiB':>6}")
losses, results = {}, {}
for n in (["none"] if none_row == "none" else []) + rows:
    o = opt_result(sw, n)
    label = ("no remat" if n == "none" else "ckpt's peak" if n == "ckpt"
             else f"{100 * float(n[1:]):.0f}%")
    if n == "ckpt":
        label += f" {100 * peak_ckpt / peak0:.0f}%"
    if n == none_row and n != "none":
        label += " (=no remat)"
    results[n] = o
    if o["rc"]:
        ot = f"; raf-opt {o['opt_s']:.2f} s" if "opt_s" in o else ""
        print(f"{label:<16} {infeasible(o)}{ot}")
        continue
    x = run_result(sw, n)
    o["run"] = x
    if "failed" in x:
        print(f"{label:<16} raf-run FAILED: {x['failed']}")
        continue
    losses[n] = x["loss1"]
    meas = mib(x["mpeak"]) if x["mpeak"] is not None else "-"
    vs, vs_lo = vs_none(x)
    nv = str(o.get("nvals", 0))
    pct = f"{o['pct']:.1f}%" if "pct" in o else "0%"
    ot = f"{o['opt_s']:.2f}" if "opt_s" in o else "-"
    rt = f"{o['remat_s']:.3f}" if o.get("remat_s") is not None else "-"
    rng = f"({x['lo']:.0f}-{x['hi']:.0f})"
    print(f"{label:<16} {mib(o['peak']):>7} {meas:>8} {x['rss']:6.0f} "
          f"{x['step']:8.0f} {rng:>13} {vs:>7} {vs_lo:>6} {nv:>6} {pct:>7} "
          f"{ot:>6} "
          f"{rt:>7}")
torch = {}
for n, label in (("torch", "pytorch eager"),
                 ("torch-ckpt", "pytorch ckpt")):
    x = run_result(sw, n)
    torch[n] = x
    if "failed" in x:
        print(f"{label:<16} FAILED: {x['failed']}")
        continue
    vs, vs_lo = vs_none(x)
    rng = f"({x['lo']:.0f}-{x['hi']:.0f})"
    print(f"{label:<16} {'-':>7} {'-':>8} {x['rss']:6.0f} {x['step']:8.0f} "
          f"{rng:>13} {vs:>7} {vs_lo:>6}")
print("(static: raf-opt --stats' planned peak; measured: raf-run "
      "--print-memory; vs_none: step over raf's without remat, medians and"
      " (min) fastest steps; recomp, "
      "FLOPs+: the pass's note)")
for n, o in results.items():
    if "note" in o:
        print(f"  {n}: {o['note']}")
if len(losses) > 1:
    spread = max(losses.values()) - min(losses.values())
    ok = spread <= 1e-3 * max(abs(v) for v in losses.values())
    print(f"raf rows' first losses {'agree' if ok else 'DIFFER'} "
          f"(spread {spread:.2e}, {len(losses)} rows)")
te, tc = torch["torch"], torch["torch-ckpt"]
if "failed" not in te and "failed" not in tc:
    ok = abs(te["loss1"] - tc["loss1"]) <= 1e-3 * abs(te["loss1"])
    print(f"pytorch's first losses with and without checkpointing "
          f"{'agree' if ok else 'DIFFER'} ({te['loss1']:.5f}, "
          f"{tc['loss1']:.5f}); checkpointing's step {tc['step'] / te['step']:.2f}x"
          f" eager's, its peak RSS {tc['rss'] / te['rss']:.2f}x")

print(f"\n== raf at per-block checkpointing's peak")
print(f"S, a block's activations at the peak (the arena's growth from "
      f"{Lm} to {L} blocks, over {abs(L - Lm)}): {block_s / MiB:.1f} MiB; "
      f"X, a block's input (B*T*C*4): {block_x / MiB:.1f} MiB")
print(f"peak_ckpt = peak_none - (L-1)*(S-X) = {mib(peak0)} - "
      f"{mib((L - 1) * (block_s - block_x))} = {mib(peak_ckpt)} MiB "
      f"({100 * peak_ckpt / peak0:.1f}% of the peak without remat)")
if "failed" not in te and "failed" not in tc:
    print(f"memory checkpointing saves: pytorch's measured peak RSS "
          f"{te['rss'] - tc['rss']:.0f} MiB; raf's estimate (L-1)*(S-X) "
          f"{(L - 1) * (block_s - block_x) / MiB:.0f} MiB")
print(f"FLOPs of the step: {step_flops / 1e9:.1f} G ({step_what})")
print(f"checkpointing recomputes every block's forward: "
      f"{ckpt_flops / 1e9:.1f} GFLOP = {100 * ckpt_flops / step_flops:.1f}%"
      f" of the step (L * a block's forward by raf's cost model; the "
      f"matmuls alone, L*(24*BT*C^2 + 4*B*T^2*C): "
      f"{formula_flops / 1e9:.1f} GFLOP)")
ck = results["ckpt"]
pre = f"target: [{B}x{T}, {L} layers]"
if ck["rc"]:
    print(f"raf at remat{{budget={peak_ckpt}}}: {infeasible(ck)}")
    print(f"{pre} at per-block checkpointing's peak ({mib(peak_ckpt)} MiB), "
          f"raf recomputes fewer FLOPs than checkpointing (raf / ckpt < 1): "
          f"{infeasible(ck)}")
else:
    extra = ck.get("extra", 0.0)
    print(f"raf at remat{{budget={peak_ckpt}}}: peak {mib(ck['peak'])} MiB, "
          f"{ck.get('nvals', 0)} values recomputed, {extra / 1e9:.1f} GFLOP ="
          f" {100 * extra / step_flops:.1f}% of the step (the note: "
          f"{ck.get('pct', 0)}%)")
    print(f"{pre} at per-block checkpointing's peak ({mib(peak_ckpt)} MiB), "
          f"raf recomputes fewer FLOPs than checkpointing (raf / ckpt < 1): "
          f"{extra / ckpt_flops:.2f} ({extra / 1e9:.1f} vs "
          f"{ckpt_flops / 1e9:.1f} GFLOP; "
          f"{100 * extra / step_flops:.1f}% vs "
          f"{100 * ckpt_flops / step_flops:.1f}% of the step)")

half = next((n for n in rows if n != "ckpt" and float(n[1:]) == 0.5), None)
if half is None:
    print(f"{pre} step at 50% of the peak <= 1.10x without remat: n/a "
          f"(0.5 not in RATIOS)")
elif results[half]["rc"]:
    print(f"{pre} step at 50% of the peak <= 1.10x without remat: "
          f"{infeasible(results[half])}")
elif "failed" in results[half]["run"] or not base_step:
    print(f"{pre} step at 50% of the peak <= 1.10x without remat: "
          f"raf-run failed")
else:
    print(f"{pre} step at 50% of the peak <= 1.10x without remat: "
          f"{vs_none(results[half]['run'])[0]} (fastest steps: "
          f"{vs_none(results[half]['run'])[1]})")
times = [(o["opt_s"], n) for n, o in results.items() if "opt_s" in o]
if times:
    worst = max(times)
    print(f"{pre} raf-opt with remat < 1 s (whole pipeline, slowest row, "
          f"median of 3): {worst[0]:.2f} s ({worst[1]})")

# ---- 3
bb = f"{tmp}/base"
nb = opt_result(bb, "none")
best = int(open(f"{tmp}/best").read())
print(f"\n== largest batch under a fixed budget: the peak without remat at "
      f"B={base_b}, T={T}: {mib(nb['peak'])} MiB ({nb['peak']} bytes)")
for line in open(f"{tmp}/search"):
    b, d = line.split()
    o = opt_result(d, "fit")
    if o["rc"]:
        what, x = o["why"]
        fig = (f"{mib(x)} MiB, {x / nb['peak']:.2f}x the budget"
               if isinstance(x, int) else x)
        print(f"  B={b}: does not fit ({what}: {fig})")
    else:
        print(f"  B={b}: fits, peak {mib(o['peak'])} MiB, "
              f"{o.get('nvals', 0)} values recomputed, "
              f"{o.get('pct', 0)}% FLOPs more")
pre = f"target: [T={T}, {L} layers, budget of B={base_b}'s peak]"
x0 = run_result(bb, "none")
tps0 = base_b * T * 1e3 / x0["step"] if "step" in x0 else None
print(f"B={base_b} without remat: " + (f"{x0['step']:.0f} ms/step, "
      f"{tps0:.1f} tokens/s, rss {x0['rss']:.0f} MiB" if tps0
      else f"raf-run FAILED: {x0['failed']}"))
tps1 = None
if best != base_b:
    x1 = run_result(f"{tmp}/try.{best}", "fit")
    if "step" in x1:
        tps1 = best * T * 1e3 / x1["step"]
        meas = mib(x1["mpeak"]) if x1["mpeak"] is not None else "-"
        print(f"B={best} with remat: {x1['step']:.0f} ms/step, {tps1:.1f} "
              f"tokens/s, rss {x1['rss']:.0f} MiB, measured peak {meas} MiB")
    else:
        print(f"B={best} with remat: raf-run FAILED: {x1['failed']}")
else:
    print(f"no batch above B={base_b} fits the budget")
cap = f", MAX_B={max_b} reached" if best == max_b else ""
print(f"{pre} largest batch >= 2x: {best / base_b:.2f}x (B={best}{cap})")
if tps0 and tps1:
    print(f"{pre} its tokens/s >= 95% of B={base_b}'s without remat: "
          f"{100 * tps1 / tps0:.0f}% (fastest steps: "
          f"{100 * best * x0['lo'] / (base_b * x1['lo']):.0f}%)")
elif best == base_b:
    print(f"{pre} its tokens/s >= 95% of B={base_b}'s without remat: "
          f"n/a (no larger batch fits)")
else:
    print(f"{pre} its tokens/s >= 95% of B={base_b}'s without remat: "
          f"raf-run failed")
double = 2 * base_b
if tps0 and best > double:
    x2 = run_result(f"{tmp}/try.{double}", "fit")
    if "step" in x2:
        tps2 = double * T * 1e3 / x2["step"]
        print(f"B={double} (2x) with remat: {x2['step']:.0f} ms/step, "
              f"{tps2:.1f} tokens/s, rss {x2['rss']:.0f} MiB")
        print(f"{pre} at 2x (B={double}), tokens/s vs B={base_b}'s without "
              f"remat: {100 * tps2 / tps0:.0f}% (fastest steps: "
              f"{100 * double * x0['lo'] / (base_b * x2['lo']):.0f}%)")
    else:
        print(f"B={double} (2x) with remat: raf-run FAILED: {x2['failed']}")
PY
