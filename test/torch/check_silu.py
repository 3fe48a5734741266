#!/usr/bin/python3
"""raf_torch's silu: nn.SiLU and F.silu export to raf's silu, whose results
and gradients (through silu_grad) match torch.autograd in f64.

    /usr/bin/python3 test/torch/check_silu.py [--bin BUILD]
"""
import os

import torchcheck as tc
import torch
import torch.nn as nn
import torch.nn.functional as F

import raf_torch


class Swish(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.act = nn.SiLU()
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(F.silu(self.act(self.fc1(x))))


def main():
    torch.manual_seed(0)
    m = Swish().eval()
    x = torch.randn(5, 6) * 2
    labels = torch.tensor([0, 3, 1, 2, 3])
    b, work = tc.bindir(), tc.scratch("silu")
    m64 = Swish().double()
    m64.load_state_dict(m.state_dict())

    prefix = os.path.join(work, "fwd")
    text = raf_torch.export(m, (x,), prefix, name="swish")
    sites = text.count("= silu(")
    print(f"exported: {sites} silu statements")
    ok = sites == 2
    got = tc.run(b, prefix + ".raf", "swish", prefix + ".safetensors",
                 {"x": x.numpy()}, 1, work, "fwd")
    with torch.no_grad():
        want = m64(x.double()).numpy()
    ok &= tc.close("output", got[0], want)

    loss_fn = nn.CrossEntropyLoss()
    prefix = os.path.join(work, "loss")
    raf_torch.export(m, (x,), prefix, name="swish", loss=loss_fn,
                     target=labels)
    tc.autodiff(b, prefix + ".raf", prefix + ".grad.raf")
    grad_text = open(prefix + ".grad.raf").read()
    ok &= "silu_grad(" in grad_text
    names = [n for n, _ in m.named_parameters()]
    got = tc.run(b, prefix + ".grad.raf", "swish_grad",
                 prefix + ".safetensors",
                 {"x": x.numpy(), "labels": labels.numpy()},
                 1 + len(names), work, "grad")
    loss = loss_fn(m64(x.double()), labels)
    loss.backward()
    ok &= tc.close("loss", got[0], loss.item())
    for n, p in zip(names, got[1:]):
        ok &= tc.close(n, p, dict(m64.named_parameters())[n].grad.numpy())
    tc.finish("torch/silu", ok)


if __name__ == "__main__":
    main()
