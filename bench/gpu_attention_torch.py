#!/usr/bin/env python3
"""PyTorch's side of scripts/gpu-check.sh's attention figure: causal
F.scaled_dot_product_attention forward and backward on a CUDA GPU.

    python3 bench/gpu_attention_torch.py [--batch 8 --heads 12 --seq 1024
        --dim 64 --dtype bf16] [--repeats 20 --warmup 3]

The same work as bench/gen_gpu_ops.py's attention module: q, k, v, dy of
[batch, heads, seq, dim] (normal(0, 1)); o = F.scaled_dot_product_attention(
q, k, v, is_causal=True), then o.backward(dy) for dq, dk, dv. PyTorch picks
its backend as it would in a model (FlashAttention, cuDNN's or the
memory-efficient kernels for bf16); the one it ran goes with the figure.
Each repeat is timed with CUDA events around the forward and the backward
(the gradients set to None first, as a training step's zero_grad).

Prints one JSON line: {"ms" (the median of the repeats after the warm-up),
"backend" (flash, cudnn, efficient or math: from the kernels' names, under
the profiler, after the timed repeats)}.
"""
import argparse
import json

import torch
import torch.nn.functional as F


def backend(run):
    """Which SDPA kernels PyTorch ran for RUN(): the names of the CUDA
    kernels one call launches, under the profiler ("unknown" if it
    fails: the figure matters more than its label)."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
            torch.cuda.synchronize()
        names = " ".join(e.key for e in prof.key_averages()).lower()
    except Exception:  # noqa: BLE001 - a label only
        return "unknown"
    for key, name in (("flash", "flash"), ("cudnn", "cudnn"),
                      ("sdpa", "cudnn"), ("fmha", "efficient"),
                      ("efficient", "efficient")):
        if key in names:
            return name
    return "math"


def main():
    ap = argparse.ArgumentParser()
    for k, v in (("batch", 8), ("heads", 12), ("seq", 1024), ("dim", 64),
                 ("repeats", 20), ("warmup", 3)):
        ap.add_argument(f"--{k}", type=int, default=v)
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "f16", "f32"))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_attention_torch.py: torch sees no CUDA device")
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16,
             "f32": torch.float32}[a.dtype]
    g = torch.Generator(device="cuda").manual_seed(0)
    shape = (a.batch, a.heads, a.seq, a.dim)
    q, k, v, dy = (torch.randn(shape, generator=g, device="cuda", dtype=dtype)
                   for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()

    def step():
        for t in (q, k, v):
            t.grad = None
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o.backward(dy)

    ms = []
    for i in range(a.warmup + a.repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        if i >= a.warmup:
            ms.append(start.elapsed_time(end))
    ms.sort()
    print(json.dumps({"ms": ms[len(ms) // 2], "backend": backend(step)}))


if __name__ == "__main__":
    main()
