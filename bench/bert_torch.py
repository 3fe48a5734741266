#!/usr/bin/python3
"""PyTorch eager's side of bench/bert_step.sh: BERT masked-LM training steps.

    /usr/bin/python3 bench/bert_torch.py --config base --steps 4 --threads 2
        --lr 1e-4 DATA_DIR

The model is examples/bert/bert.py's (CONFIGS[--config]), initialised
after torch.manual_seed(0) as examples/bert/train.sh and bench/bert_step.sh
initialise the model they export, so the first loss is raf's too. It trains
with torch.optim.AdamW (BERT's betas 0.9, 0.999, eps 1e-6, weight decay
0.01) on DATA_DIR/input_ids.npy and labels.npy (examples/bert/
prepare_data.py), batch after batch, the batch size being the rows of the
file over the number of batches given by --batches. Prints one JSON line:
the wall time of each step in ms (zero_grad, forward, backward, step), the
losses, and the process's peak RSS.
"""
import argparse
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "bert"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import bert  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="base", choices=sorted(bert.CONFIGS))
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("data")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = bert.Bert(**bert.CONFIGS[a.config]).train()
    x = torch.from_numpy(np.load(os.path.join(a.data, "input_ids.npy")))
    y = torch.from_numpy(np.load(os.path.join(a.data, "labels.npy")))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999),
                            eps=1e-6, weight_decay=0.01)
    k = len(x) // a.batch
    ms, losses = [], []
    for s in range(a.steps):
        b = s % k
        xb, yb = x[b * a.batch:(b + 1) * a.batch], y[b * a.batch:(b + 1) * a.batch]
        t = time.perf_counter()
        opt.zero_grad()
        loss = model(xb, yb)
        loss.backward()
        opt.step()
        ms.append((time.perf_counter() - t) * 1e3)
        losses.append(loss.item())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"ms": ms, "loss": losses, "rss_mb": rss}))


if __name__ == "__main__":
    main()
