#!/usr/bin/python3
"""PyTorch's side of bench/adamw.sh: torch.optim.AdamW's step() alone.

    /usr/bin/python3 bench/adamw_torch.py --steps 10 --threads 2
        [--foreach] MODEL.raf

Makes one f32 tensor per {param} argument of MODEL.raf's first function
(the shapes bench/gen_adamw.py reads; GPT-2 124M), each with .grad set
(normal(0, 0.01)), and times opt.step() of torch.optim.AdamW(lr=3e-4, the
other options torch's defaults: betas (0.9, 0.999), eps 1e-8, weight decay
0.01, as raf's optimizer pass) for --steps steps; the gradients stay the
same from step to step, as in raf's module. --foreach uses torch's
multi-tensor implementation (torch 1.13's default is the per-tensor loop).
Prints one JSON line: the wall time of each step() in ms, the number of
param elements, and the process's peak RSS.
"""
import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import gen_adamw  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--foreach", action="store_true")
    ap.add_argument("model")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    params = []
    for _, ty, _ in gen_adamw.params(open(a.model).read()):
        shape = [int(d) for d in ty[4:-1].split(",")]
        p = torch.empty(shape).normal_(0, 0.02).requires_grad_()
        p.grad = torch.empty(shape).normal_(0, 0.01)
        params.append(p)
    opt = torch.optim.AdamW(params, lr=3e-4,
                            foreach=True if a.foreach else None)
    ms = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        opt.step()
        ms.append((time.perf_counter() - t0) * 1e3)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"ms": ms, "elements": sum(p.numel() for p in params),
                      "rss_kb": rss_kb}))


if __name__ == "__main__":
    main()
