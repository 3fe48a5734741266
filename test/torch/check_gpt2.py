#!/usr/bin/python3
"""test/ref's PyTorch GPT-2 (check_gpt2.loss_fn, the model bench/gpt2_torch.py
times) as an nn.Module, exported by raf_torch and run by raf-run.

    /usr/bin/python3 test/torch/check_gpt2.py [--bin BUILD_DIR]

The module holds check_gpt2's parameters under their names (wte.weight,
h.0.attn.c_attn.weight, ...) and its forward is check_gpt2.loss_fn, given
the parameters as traced module attributes and the causal mask as a
non-persistent buffer (a constant of the export). Checked to 1e-4 against
torch in f64: the loss of one batch, and every gradient (raf-opt
--autodiff, @gpt2_grad).
"""
import functools
import os
import sys

import torchcheck as tc
import numpy as np
import torch

sys.path.insert(0, os.path.join(tc.HERE, "..", "ref"))
sys.path.insert(0, os.path.join(tc.HERE, "..", "..", "examples", "gpt2"))
import check_gpt2  # noqa: E402
import gen_gpt2  # noqa: E402
import raf_torch  # noqa: E402


class GPT2(torch.nn.Module):
    def __init__(self, params):
        super().__init__()
        self.names = [n for n, _ in params]
        for name, a in params:
            *path, leaf = name.split(".")
            mod = self
            for part in path:
                if not hasattr(mod, part):
                    mod.add_module(part, torch.nn.Module())
                mod = getattr(mod, part)
            mod.register_parameter(leaf, torch.nn.Parameter(torch.tensor(a)))

    def forward(self, x, y):
        # attribute access, so that fx traces every use of a parameter
        p = {n: functools.reduce(getattr, n.split("."), self)
             for n in self.names}
        return check_gpt2.loss_fn(p, x, y)


def main():
    C = check_gpt2.CFG
    text = gen_gpt2.generate(C["layers"], C["heads"], C["embd"], C["vocab"],
                             C["seq"], C["batch"], C["seq"])
    params = check_gpt2.params_of(text, np.random.default_rng(7))
    m = GPT2(params)
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, C["vocab"], (C["batch"], C["seq"]), generator=g)
    y = torch.randint(0, C["vocab"], (C["batch"], C["seq"]), generator=g)
    work = tc.scratch("gpt2")
    b = tc.bindir()
    prefix = os.path.join(work, "gpt2")
    raf_torch.export(m, (x, y), prefix)
    tc.autodiff(b, prefix + ".raf", prefix + ".grad.raf")
    got = tc.run(b, prefix + ".grad.raf", "gpt2_grad", prefix + ".safetensors",
                 {"x": x.numpy(), "y": y.numpy()}, 1 + len(params), work, "g")
    p64 = {n: torch.tensor(a, dtype=torch.float64, requires_grad=True)
           for n, a in params}
    loss = check_gpt2.loss_fn(p64, x, y)
    loss.backward()
    print("gpt2: loss and gradients against torch.autograd (f64):")
    ok = tc.close("loss", got[0], loss.item())
    for (n, _), g in zip(params, got[1:]):
        ok &= tc.close(n, g, p64[n].grad.numpy())
    tc.finish("torch/gpt2", ok)


if __name__ == "__main__":
    main()
