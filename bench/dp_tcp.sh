#!/usr/bin/env bash
# dp_tcp.sh: data parallelism over TCP between two "hosts" (network
# namespaces of this machine, test/dist/netns.py, as test/dist/multihost.py
# makes them) against shared memory on one host, on GPT-2 as dp.sh trains
# it (the same configs, batches and pipelines), interleaved:
#   1proc            1 process x 2 threads                 (the reference)
#   shm-z0, shm-z2   mpirun -np 2 raf-run --threads=1, zero 0 and 2, one
#                    host, Open MPI's default transports (shared memory)
#   shm-o0, shm-o2   the same with overlap-comm (async collectives)
#   tcp-*            the same four, 1 rank on each of the 2 hosts, TCP only
#                    (btl tcp,self over the namespaces' veths and bridge)
#
#   bash bench/dp_tcp.sh [BUILD_DIR] [CONFIGS] [STEPS]
#     BUILD_DIR  raf's build directory (default build)
#     CONFIGS    space-separated LAYERSxEMBDxBxT (default "4x256x8x128";
#                "4x256x8x128 12x768x8x128" adds GPT-2 124M)
#     STEPS      steps per run (default 4; the first is left out)
#   Environment:
#     ROUNDS     runs of each variant, interleaved, the order reversed
#                every other round (default 3)
#
# Needs root (CAP_NET_ADMIN) for the namespaces; they are removed at the
# end whatever happens (and those of an earlier run whose shell is gone, at
# the start). Both "hosts" share this machine's cores: TCP here goes
# through the kernel's network stack (veth, bridge) on the same CPUs that
# compute, so its cost is CPU time as much as latency, unlike between two
# machines, where the NICs carry it and each host has its own cores.
#
# Per variant (dp.sh's measures): the median step (all rounds' steps after
# each run's first), tokens/s, the share of the single process's tokens/s
# (within each round, the median over rounds, the rounds' range beside it),
# the share of the step in collectives and the share of that hidden behind
# compute (raf-run --print-comm, rank 0), the CPU seconds of the run's
# raf-run processes (user+sys summed over the ranks, sys in brackets: the
# kernel's part, where TCP's network stack runs; start-up included), and
# for tcp-* the step time over the matching shm-* one (within each round,
# the median over rounds).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
configs=${2:-"4x256x8x128"}
steps=${3:-4}
rounds=${ROUNDS:-3}
# shellcheck source=bench/gpt2-data.sh
. bench/gpt2-data.sh
# shellcheck source=bench/openblas-core.sh
. bench/openblas-core.sh "$build"
tmp=$(mktemp -d)
id=$$
subnet=10.214.$((id % 250 + 1))
netns=(/usr/bin/python3 test/dist/netns.py)
trap '"${netns[@]}" down rafbt "$id"; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
hosts=$("${netns[@]}" up rafbt "$id" "$subnet" "$tmp/netns.map") ||
  { echo "dp_tcp.sh: no network namespaces (run it as root)" >&2; exit 1; }
read -r host_a host_b <<< "$hosts"
mapfile -t tcp_args < <("${netns[@]}" args "$subnet")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# --bind-to none: Open MPI binds each host's one rank to its first core,
# and both "hosts" are this machine.
shm=(timeout -k 5 1800 mpirun --oversubscribe --allow-run-as-root --bind-to none -np 2)
tcp=(env RAF_NETNS_MAP="$tmp/netns.map" PMIX_MCA_gds=hash
     timeout -k 5 1800 mpirun --allow-run-as-root --bind-to none
     --host "$host_a:1,$host_b:1" -np 2 "${tcp_args[@]}")
base='autodiff,optimizer{kind=adamw lr=3e-4}'
tail='inline,fuse,plan-memory'
modules=(single z0 z2 o0 o2)
variants=(1proc shm-z0 tcp-z0 shm-z2 tcp-z2 shm-o0 tcp-o0 shm-o2 tcp-o2)
# Each process that trains appends its user and sys CPU seconds to $1.
cat > "$tmp/cpu.sh" <<'SH'
out=$1; shift
TIMEFORMAT='%U %S'
{ time "$@" 2>&3; } 3>&2 2>> "$out"
SH

for cfg in $configs; do
  gpt2_data "$cfg" "$tmp" "$steps"
  data=(--dataset=x=@"$tmp/x.npy" --dataset=y=@"$tmp/y.npy")
  for m in "${modules[@]}"; do
    case $m in
      single) pipe="$base,$tail" ;;
      z*) pipe="$base,shard{world=2 zero=${m#z}},$tail" ;;
      o*) pipe="$base,shard{world=2 zero=${m#o}},${tail/plan-memory/overlap-comm,plan-memory}" ;;
    esac
    "$build/raf-opt" -p "$pipe" "$tmp/m.raf" -o "$tmp/$m.raf"
  done
  for ((r = 0; r < rounds; r++)); do
    order=("${variants[@]}")
    if ((r % 2)); then
      order=(); for ((i = ${#variants[@]} - 1; i >= 0; i--)); do order+=("${variants[i]}"); done
    fi
    for v in "${order[@]}"; do
      echo "  $cfg round $((r + 1))/$rounds: $v" >&2
      case $v in
        1proc) run=(); m=single; threads=2 ;;
        shm-*) run=("${shm[@]}"); m=${v#shm-}; threads=1 ;;
        tcp-*) run=("${tcp[@]}"); m=${v#tcp-}; threads=1 ;;
      esac
      "${run[@]}" /bin/bash "$tmp/cpu.sh" "$tmp/$v.$r.cpu" "$build/raf-run" "$tmp/$m.raf" \
        --function=gpt2_train_step --steps="$steps" "${data[@]}" --threads="$threads" \
        --log="$tmp/$v.$r.jsonl" --print=none --print-comm > "$tmp/$v.$r.out" 2>&1 ||
        { echo "$v failed:"; tail -5 "$tmp/$v.$r.out"; exit 1; }
    done
  done
  echo "== GPT-2 $layers layers, embedding $embd, global batch ${batch}x$seq" \
    "($((batch * seq)) tokens a step), $rounds round(s) of $steps steps"
  /usr/bin/python3 - "$tmp" "$rounds" "$((batch * seq))" "$cfg" "${variants[@]}" <<'PY'
import json, re, statistics as stat, sys
tmp, rounds, tokens, cfg, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5:]
med = stat.median

def steps_ms(v, r):  # the steps of one run after its first
    ms = [json.loads(l)["ms"] for l in open(f"{tmp}/{v}.{r}.jsonl")]
    return ms[1:] or ms

def comm(v, r):  # (share of the step in collectives, share of that hidden)
    m = re.search(r"\(([0-9.]+)% of the step\).*\(([0-9.]+)% hidden",
                  open(f"{tmp}/{v}.{r}.out").read())
    return (float(m[1]), float(m[2])) if m else (0.0, 0.0)

def cpu(v, r):  # (user + sys, sys) seconds of the run's processes
    t = [tuple(map(float, l.split())) for l in open(f"{tmp}/{v}.{r}.cpu") if l.strip()]
    return sum(u + s for u, s in t), sum(s for _, s in t)

print(f"{'variant':<8} {'step_ms':>9} {'tokens/s':>9} {'vs_1proc':>9} {'rounds_range':>13} "
      f"{'comm':>6} {'hidden':>7} {'cpu_s(sys)':>12} {'tcp/shm':>8}")
single = [med(steps_ms("1proc", r)) for r in range(rounds)]
for v in variants:
    ms = med([m for r in range(rounds) for m in steps_ms(v, r)])
    share = [100 * single[r] / med(steps_ms(v, r)) for r in range(rounds)]
    cshare, hidden = (med(comm(v, r)[i] for r in range(rounds)) for i in (0, 1))
    cpus, sys_s = (med(cpu(v, r)[i] for r in range(rounds)) for i in (0, 1))
    ratio = ""
    if v.startswith("tcp-"):
        shm = "shm-" + v[4:]
        ratio = f"{med(med(steps_ms(v, r)) / med(steps_ms(shm, r)) for r in range(rounds)):.2f}x"
    dist = v != "1proc"
    print(f"{v:<8} {ms:9.1f} {tokens * 1000 / ms:9.0f} {med(share):8.1f}% "
          f"{f'{min(share):.0f}-{max(share):.0f}%':>13} "
          f"{f'{cshare:.1f}%' if dist else '':>6} {f'{hidden:.1f}%' if dist else '':>7} "
          f"{f'{cpus:.1f}({sys_s:.1f})':>12} {ratio:>8}")
PY
done
