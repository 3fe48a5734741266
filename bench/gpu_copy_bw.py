#!/usr/bin/env python3
"""The GPU's device-to-device copy bandwidth as PyTorch sees it: the
yardstick of scripts/gpu-check.sh's memory-bound figures (a fused
elementwise kernel, the AdamW update).

    python3 bench/gpu_copy_bw.py [--mib 1024] [--repeats 20]

y.copy_(x) on two f32 tensors of MIB MiB each (far beyond the L2), timed
with CUDA events; the best of REPEATS after two warm-ups. The bandwidth
counts the bytes read and written: 2 * MIB MiB over the time. Prints one
JSON line: {"gbs", "ms", "bytes"}.
"""
import argparse
import json

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=20)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_copy_bw.py: torch sees no CUDA device")
    n = a.mib * (1 << 20) // 4
    x = torch.rand(n, device="cuda")
    y = torch.empty_like(x)
    best = float("inf")
    for i in range(a.repeats + 2):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        y.copy_(x)
        end.record()
        torch.cuda.synchronize()
        if i >= 2:
            best = min(best, start.elapsed_time(end))
    moved = 2 * n * 4
    print(json.dumps({"gbs": moved / (best * 1e-3) / 1e9, "ms": best,
                      "bytes": moved}))


if __name__ == "__main__":
    main()
