#!/usr/bin/python3
"""Writes test/lit/optimizer/torch-*.raf: the optimizer pass's updates
checked against torch.optim.

Each test is a hand-written gradient function (loss = 0.5 * sum((w x + b -
1)^2), its gradients written out) turned into a training step by
`raf-opt --optimizer=...`, run for STEPS steps by raf-run; the loss of the
last step and the params after it must equal what torch.optim computes
from the same start with autograd. The value spelling and the writing of
the files come from test/lit/run/gencommon.py. Run it again after
changing the cases:
    /usr/bin/python3 test/lit/optimizer/gen_optimizer.py
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "run"))
from gencommon import fmt  # noqa: E402
from gencommon import TestFile as _TestFile  # noqa: E402


class TestFile(_TestFile):
    generator = "gen_optimizer.py"
    directory = HERE


STEPS = 4
X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)
W0 = np.array([[0.1, 0.2, -0.3], [0.4, -0.5, 0.6]], dtype=np.float32)
B0 = np.array([0.05, -0.1, 0.2], dtype=np.float32)

GRAD_FUNC = """func @f_grad(%x: f32[2,3], %w: f32[2,3] {param}, %b: f32[3] {param}) -> (f32[], f32[2,3], f32[3]) {
  %wx = mul(%w, %x)
  %z = add(%wx, %b)
  %one = constant 1.0 : f32[]
  %r = sub(%z, %one)
  %r2 = mul(%r, %r)
  %s = sum(%r2)
  %half = constant 0.5 : f32[]
  %loss = mul(%s, %half)
  %gw = mul(%r, %x)
  %gb = sum(%r) {axes = [0]}
  return %loss, %gw, %gb
}"""

# (name, raf-opt options, torch optimizer factory, schedule lambda or None)
CASES = [
    ("sgd", "kind=sgd lr=0.1 weight_decay=0.1",
     lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=0.1), None, 0),
    ("momentum", "kind=momentum lr=0.05 momentum=0.8 weight_decay=0.01",
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, weight_decay=0.01),
     None, 0),
    ("adam", "kind=adam lr=0.01 beta1=0.8 beta2=0.95 eps=1e-6 weight_decay=0.1",
     lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.95), eps=1e-6,
                                weight_decay=0.1), None, 0),
    ("adamw", "kind=adamw lr=0.01",
     lambda p: torch.optim.AdamW(p, lr=0.01), None, 0),
    ("adamw-clip", "kind=adamw lr=0.01 weight_decay=0.1 clip_norm=0.5",
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1), None, 0.5),
    ("adamw-schedule",
     "kind=adamw lr=0.02 warmup_steps=2 total_steps=6 min_lr=0.001",
     lambda p: torch.optim.AdamW(p, lr=0.02),
     lambda t: (t / 2 if t <= 2 else
                (0.001 + 0.5 * (0.02 - 0.001) *
                 (1 + math.cos(math.pi * min(1.0, (t - 2) / 4)))) / 0.02), 0),
    ("sgd-schedule", "kind=sgd lr=0.1 warmup_steps=3",
     lambda p: torch.optim.SGD(p, lr=0.1),
     lambda t: t / 3 if t <= 3 else 1.0, 0),
]


def reference(make, sched, clip):
    w = torch.tensor(W0, requires_grad=True)
    b = torch.tensor(B0, requires_grad=True)
    x = torch.tensor(X)
    opt = make([w, b])
    lam = (torch.optim.lr_scheduler.LambdaLR(opt, lambda s: sched(s + 1))
           if sched else None)
    loss = None
    for _ in range(STEPS):
        opt.zero_grad()
        loss = 0.5 * ((w * x + b - 1) ** 2).sum()
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_([w, b], clip)
        opt.step()
        if lam:
            lam.step()
    return loss.item(), w.detach().numpy(), b.detach().numpy()


def main():
    for name, opts, make, sched, clip in CASES:
        loss, w, b = reference(make, sched, clip)
        title = f"optimizer {opts}: {STEPS} steps against torch.optim."
        t = TestFile(f"torch-{name}", None, "PyTorch", title=title)
        t.runs.append(f'// RUN: raf-opt --optimizer="{opts}" %s | raf-run - '
                      f"--function=f_train_step --steps={STEPS} "
                      f"--input=x={fmt(X)} --input=w={fmt(W0)} "
                      f"--input=b={fmt(B0)} --expected-output={loss!r} "
                      f"--expected-output={fmt(w)} --expected-output={fmt(b)} "
                      "--atol=1e-6 --rtol=1e-5 | FileCheck %s")
        t.funcs.append(GRAD_FUNC)
        t.write()


if __name__ == "__main__":
    main()
