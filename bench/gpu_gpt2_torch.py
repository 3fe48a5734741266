#!/usr/bin/env python3
"""PyTorch's side of scripts/gpu-check.sh's GPT-2 figure: training steps of
GPT-2 on a CUDA GPU, eager and torch.compile, f32 and bf16 autocast.

    python3 bench/gpu_gpt2_torch.py [--layers 12 --heads 12 --embd 768
        --vocab 50257 --seq 1024 --batch 8] [--steps 10 --warmup 3]
        [--modes eager,eager-bf16,compile,compile-bf16]

The model is examples/gpt2/gen_gpt2.py's GPT-2 written in torch (as
bench/gpt2_torch.py's, without NumPy, which the GPU machine may lack):
wte + wpe, pre-LayerNorm blocks of causal attention
(F.scaled_dot_product_attention) and a 4x MLP with gelu(tanh), ln_f, the
head tied to wte, mean cross-entropy; GPT-2's init. A step is zero_grad,
forward, backward and torch.optim.AdamW(lr=3e-4).step() (PyTorch's default
implementation on CUDA, foreach), on random tokens. f32 matmuls use
PyTorch's default precision (torch.backends.cuda.matmul.allow_tf32 is
False: no TF32). bf16 runs the forward under torch.autocast("cuda",
torch.bfloat16), with f32 params and optimizer.

Prints one JSON line per mode as soon as it is done (a timeout keeps the
modes finished before it): {"mode", "ms" (median step time over the steps
after the warm-up, CUDA events around each step), "loss" (the last),
"params"}.
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F


def make_params(L, C, V, T, device):
    g = torch.Generator(device="cpu").manual_seed(0)

    def normal(*shape, std=0.02):
        return (torch.randn(*shape, generator=g) * std).to(device)

    proj_std = 0.02 / math.sqrt(2 * L)
    p = {"wte": normal(V, C), "wpe": normal(T, C),
         "ln_f.w": torch.ones(C, device=device),
         "ln_f.b": torch.zeros(C, device=device)}
    for i in range(L):
        p.update({
            f"{i}.ln_1.w": torch.ones(C, device=device),
            f"{i}.ln_1.b": torch.zeros(C, device=device),
            f"{i}.attn.w": normal(C, 3 * C),
            f"{i}.attn.b": torch.zeros(3 * C, device=device),
            f"{i}.proj.w": normal(C, C, std=proj_std),
            f"{i}.proj.b": torch.zeros(C, device=device),
            f"{i}.ln_2.w": torch.ones(C, device=device),
            f"{i}.ln_2.b": torch.zeros(C, device=device),
            f"{i}.fc.w": normal(C, 4 * C),
            f"{i}.fc.b": torch.zeros(4 * C, device=device),
            f"{i}.fcp.w": normal(4 * C, C, std=proj_std),
            f"{i}.fcp.b": torch.zeros(C, device=device),
        })
    for t in p.values():
        t.requires_grad_()
    return p


def loss_fn(p, x, y, L, H):
    B, T = x.shape
    C = p["wte"].shape[1]
    h = p["wte"][x] + p["wpe"][:T]
    for i in range(L):
        a = F.layer_norm(h, (C,), p[f"{i}.ln_1.w"], p[f"{i}.ln_1.b"])
        qkv = a @ p[f"{i}.attn.w"] + p[f"{i}.attn.b"]
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2)
                   for t in qkv.split(C, dim=2))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o.transpose(1, 2).reshape(B, T, C)
        h = h + o @ p[f"{i}.proj.w"] + p[f"{i}.proj.b"]
        m = F.layer_norm(h, (C,), p[f"{i}.ln_2.w"], p[f"{i}.ln_2.b"])
        m = F.gelu(m @ p[f"{i}.fc.w"] + p[f"{i}.fc.b"], approximate="tanh")
        h = h + m @ p[f"{i}.fcp.w"] + p[f"{i}.fcp.b"]
    h = F.layer_norm(h, (C,), p["ln_f.w"], p["ln_f.b"])
    logits = h @ p["wte"].t()
    return F.cross_entropy(logits.view(B * T, -1).float(), y.view(-1))


def run(mode, a, device):
    p = make_params(a.layers, a.embd, a.vocab, a.seq, device)
    n = sum(t.numel() for t in p.values())
    opt = torch.optim.AdamW(p.values(), lr=3e-4)
    bf16 = mode.endswith("bf16")
    fn = loss_fn
    if mode.startswith("compile"):
        fn = torch.compile(loss_fn)
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=g).to(device)
    xb, yb = x[:, :-1].contiguous(), x[:, 1:].contiguous()
    ms = []
    loss = None
    for s in range(a.warmup + a.steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = fn(p, xb, yb, a.layers, a.heads)
        loss.backward()
        opt.step()
        end.record()
        torch.cuda.synchronize()
        if s >= a.warmup:
            ms.append(start.elapsed_time(end))
    ms.sort()
    return {"mode": mode, "ms": ms[len(ms) // 2], "loss": loss.item(),
            "params": n}


def main():
    ap = argparse.ArgumentParser()
    for k, v in (("layers", 12), ("heads", 12), ("embd", 768),
                 ("vocab", 50257), ("seq", 1024), ("batch", 8),
                 ("steps", 10), ("warmup", 3)):
        ap.add_argument(f"--{k}", type=int, default=v)
    ap.add_argument("--modes", default="eager,eager-bf16,compile,compile-bf16")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_gpt2_torch.py: torch sees no CUDA device")
    device = torch.device("cuda")
    for mode in a.modes.split(","):
        t0 = time.perf_counter()
        r = run(mode, a, device)
        r["wall_s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(r), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
