#!/usr/bin/python3
"""raf_torch's errors: every unsupported call of a module is reported at
once, each with its source line; data-dependent control flow gets fx's
TraceError re-raised with what it means for raf; parameters read outside
the trace (a dict of named_parameters()) are refused rather than frozen
into constants.

    /usr/bin/python3 test/torch/check_errors.py
"""
import os

import torchcheck as tc
import torch
import torch.nn as nn

import raf_torch

HERE = os.path.abspath(__file__)


def line_of(marker):
    """The line of this file holding `marker` in a comment."""
    for i, text in enumerate(open(HERE), 1):
        if text.rstrip().endswith(f"# {marker}"):
            return i
    raise AssertionError(marker)


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 4, 3)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        s = torch.cumsum(y, dim=1)  # SORT
        z = self.conv(s.unsqueeze(0))  # CONV1D
        return z.flip(0)  # FLIP


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:  # BRANCH
            return self.fc(x)
        return x


class ParamsByDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        p = dict(self.named_parameters())
        return x @ p["fc.weight"].t()


def expect(what, fn, check):
    try:
        fn()
    except raf_torch.ExportError as e:
        text = str(e)
        print(f"{what}: {type(e).__name__}:\n  " + text.replace("\n", "\n  "))
        ok = check(e, text)
        print(f"  -> {'as expected' if ok else 'NOT AS EXPECTED'}")
        return ok
    print(f"{what}: no error raised")
    return False


def main():
    work = tc.scratch("errors")
    x = torch.randn(4, 4)
    ok = True
    here = os.path.basename(HERE)  # locations are relative or absolute

    def unsupported(e, text):
        if not isinstance(e, raf_torch.UnsupportedError):
            return False
        want = [(f"/{here}:{line_of(m)}", name) for m, name in
                (("SORT", "torch.cumsum"), ("CONV1D", "conv1d"),
                 ("FLIP", "Tensor.flip"))]
        return len(e.unsupported) == 3 and all(
            ("/" + loc).endswith(w_loc) and w_name in what
            for (what, loc), (w_loc, w_name) in zip(e.unsupported, want))
    ok &= expect("unsupported calls",
                 lambda: raf_torch.export(Unsupported(), (x,),
                                          os.path.join(work, "u")),
                 unsupported)

    ok &= expect("data-dependent control flow",
                 lambda: raf_torch.export(Branchy(), (x,),
                                          os.path.join(work, "b")),
                 lambda e, text: isinstance(
                     e.__cause__, torch.fx.proxy.TraceError)
                 and f"{here}:{line_of('BRANCH')}: " in text.split("\n")[0]
                 and "static graph" in text)

    ok &= expect("parameters read outside the trace",
                 lambda: raf_torch.export(ParamsByDict(), (x,),
                                          os.path.join(work, "p")),
                 lambda e, text: "module attributes" in text)
    tc.finish("torch/errors", ok)


if __name__ == "__main__":
    main()
