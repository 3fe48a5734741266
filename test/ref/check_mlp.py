#!/usr/bin/python3
"""The MLP of examples/mlp/mlp.raf trained by raf and by PyTorch.

    /usr/bin/python3 test/ref/check_mlp.py --bin BUILD_DIR [--keep DIR]

The same weights (normal(0, 0.05), biases too, so that every gradient term
counts) and 8 synthetic batches (pixels uniform in [0, 1), labels the argmax
of a fixed random linear map, so the loss falls) go to both; 20 steps of
AdamW must give the same losses, and the first step the same gradients (see
refcheck.py). Exits 1 on a mismatch.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refcheck  # noqa: E402  (exits when torch is missing)
from refcheck import np, torch  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BATCHES = 8
ADAMW = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8,
         "weight_decay": 0.01}


def signature(text):
    """[(name, dtype, shape, is_param)] of @mlp's arguments."""
    head = text[text.index("func @mlp("):text.index("->")]
    out = []
    for m in re.finditer(r"%([\w.]+): (\w+)\[([\d,]*)\]( \{[^}]*\})?", head):
        shape = tuple(int(d) for d in m.group(3).split(",") if d)
        out.append((m.group(1), m.group(2), shape,
                    "param" in (m.group(4) or "")))
    return out


def loss_fn(p, x, labels):
    h = torch.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return torch.nn.functional.cross_entropy(logits, labels)


def main():
    with open(os.path.join(ROOT, "examples", "mlp", "mlp.raf")) as f:
        text = f.read()
    sig = signature(text)
    names = [s[0] for s in sig]
    assert names == ["x", "labels", "w1", "b1", "w2", "b2"], names
    rng = np.random.default_rng(1234)
    params = [(n, rng.normal(0, 0.05, shape).astype(np.float32))
              for n, _, shape, is_param in sig if is_param]
    n, d = sig[0][2]
    classes = sig[-1][2][0]
    truth = rng.normal(0, 1, (d, classes))
    batches = []
    for _ in range(BATCHES):
        x = rng.uniform(0, 1, (n, d)).astype(np.float32)
        y = np.argmax((x - 0.5) @ truth, axis=1).astype(np.int64)
        batches.append((x, y))
    refcheck.run_check("mlp", text, "mlp", params, ["x", "labels"], batches,
                       loss_fn, ADAMW)


if __name__ == "__main__":
    main()
