#!/usr/bin/python3
"""bench/resnet.sh's Python side: torchvision's ResNet-18, exported to raf
and trained in PyTorch eager.

    /usr/bin/python3 bench/resnet_torch.py export --input 1x28 --batch 32 DIR
    /usr/bin/python3 bench/resnet_torch.py torch --input 1x28 --batch 32
        --steps 6 --threads 2 DIR

--input CxS is the image: 1x28 (Fashion-MNIST's size; the first
convolution takes 1 channel and the head has 10 classes, as
examples/resnet/ adapts it) or 3x224 (ImageNet's: torchvision's model as
it is, 1000 classes). The model is drawn with torch.manual_seed(0), in
train() mode (batch_norm with batch statistics, running statistics
updated).

export writes DIR/resnet.raf and DIR/resnet.safetensors through the
exporter (python/raf_torch, loss nn.CrossEntropyLoss) and the batches
DIR/x.npy, DIR/labels.npy (4 batches, random, seeded).

torch trains the same model (same seed, so the same weights) with
torch.optim.AdamW(lr=1e-3) on the same batches, one after another, and
prints one JSON line: each step's wall time in ms (zero_grad, forward,
backward, step) and its loss.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

BATCHES = 4


def make_model(channels, size):
    torch.manual_seed(0)
    if size == 224:
        return torchvision.models.resnet18(weights=None)
    model = torchvision.models.resnet18(weights=None, num_classes=10)
    model.conv1 = torch.nn.Conv2d(channels, 64, kernel_size=7, stride=2,
                                  padding=3, bias=False)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["export", "torch"])
    ap.add_argument("--input", default="1x28")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("dir")
    a = ap.parse_args()
    channels, size = map(int, a.input.split("x"))
    model = make_model(channels, size).train()
    classes = 1000 if size == 224 else 10
    if a.mode == "export":
        import raf_torch
        rng = np.random.default_rng(0)
        x = rng.standard_normal((BATCHES * a.batch, channels, size, size),
                                dtype=np.float32)
        labels = rng.integers(0, classes, BATCHES * a.batch, dtype=np.int64)
        np.save(os.path.join(a.dir, "x.npy"), x)
        np.save(os.path.join(a.dir, "labels.npy"), labels)
        raf_torch.export(model, (torch.from_numpy(x[:a.batch]),),
                         os.path.join(a.dir, "resnet"),
                         loss=torch.nn.CrossEntropyLoss())
        return
    torch.set_num_threads(a.threads)
    x = torch.from_numpy(np.load(os.path.join(a.dir, "x.npy")))
    labels = torch.from_numpy(np.load(os.path.join(a.dir, "labels.npy")))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    ms, losses = [], []
    for step in range(a.steps):
        k = step % BATCHES
        xb = x[k * a.batch:(k + 1) * a.batch]
        yb = labels[k * a.batch:(k + 1) * a.batch]
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        ms.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    print(json.dumps({"ms": ms, "loss": losses}))


if __name__ == "__main__":
    main()
