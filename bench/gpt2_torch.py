#!/usr/bin/python3
"""PyTorch eager's side of bench/train_step.sh: GPT-2 training steps.

    /usr/bin/python3 bench/gpt2_torch.py --layers 12 --heads 12 --embd 768
        --vocab 50257 [--ctx 1024] --seq 64 --batch 4 --steps 6 --threads 2
        [--autocast] [--checkpoint] DATA_DIR

The model is test/ref/check_gpt2.py's torch GPT-2 (written from GPT-2's
definition, the same as examples/gpt2/gen_gpt2.py's), trained with
torch.optim.AdamW on DATA_DIR/x.npy and y.npy batch after batch (--ctx:
the rows of wpe, as gen_gpt2.py's; default --seq). The params are the
NumPy arrays' memory (torch.from_numpy), so initialisation holds no second
copy of the model. --autocast runs the forward pass under
torch.autocast("cpu", bfloat16); --checkpoint wraps every transformer block
in torch.utils.checkpoint.checkpoint(..., use_reentrant=False), PyTorch's
standard answer to activation memory: each block keeps only its input and
runs its forward again in the backward pass (bench/remat.sh). Prints one
JSON line: the wall time of each step in ms (zero_grad, forward, backward,
step), the losses, and the process's peak RSS.
"""
import argparse
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "ref"))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "gpt2"))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.utils.checkpoint  # noqa: E402

import check_gpt2  # noqa: E402
import gen_gpt2  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    for k in ("layers", "heads", "embd", "vocab", "seq", "batch", "steps",
              "threads"):
        ap.add_argument(f"--{k}", type=int, required=True)
    ap.add_argument("--ctx", type=int, default=None)
    ap.add_argument("--autocast", action="store_true",
                    help='forward under torch.autocast("cpu", bfloat16)')
    ap.add_argument("--checkpoint", action="store_true",
                    help="torch.utils.checkpoint on every transformer block")
    ap.add_argument("data")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    check_gpt2.CFG.update(layers=a.layers, heads=a.heads, embd=a.embd,
                          vocab=a.vocab, seq=a.seq, batch=a.batch)
    text = gen_gpt2.generate(a.layers, a.heads, a.embd, a.vocab, a.seq,
                             a.batch, a.ctx or a.seq)
    params = {n: torch.from_numpy(v).requires_grad_()
              for n, v in check_gpt2.params_of(text, np.random.default_rng(0))}
    x = torch.from_numpy(np.load(os.path.join(a.data, "x.npy")))
    y = torch.from_numpy(np.load(os.path.join(a.data, "y.npy")))
    opt = torch.optim.AdamW(params.values(), lr=3e-4)
    run_block = None
    if a.checkpoint:
        def run_block(block, *args):
            return torch.utils.checkpoint.checkpoint(block, *args,
                                                     use_reentrant=False)
    ms, losses = [], []
    for s in range(a.steps):
        i = s % (len(x) // a.batch)
        xb, yb = x[i * a.batch:(i + 1) * a.batch], y[i * a.batch:(i + 1) * a.batch]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast):
            loss = check_gpt2.loss_fn(params, xb, yb, run_block)
        loss.backward()
        opt.step()
        ms.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"ms": ms, "loss": losses, "rss_kb": rss_kb}))


if __name__ == "__main__":
    main()
