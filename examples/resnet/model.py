#!/usr/bin/python3
"""Exports torchvision's ResNet-18 (random init) for Fashion-MNIST through
raf_torch: the training function (train mode, CrossEntropyLoss, returning
the loss and batch_norm's new running statistics) and the evaluation
function (eval mode, running statistics, returning the batch's accuracy).

    /usr/bin/python3 examples/resnet/model.py OUT_DIR [--batch 64] [--eval-batch 500]

writes OUT_DIR/resnet.raf and resnet.safetensors (the initial weights, for
raf-run --load), and OUT_DIR/accuracy.raf (its safetensors too, unused:
the evaluation loads the trained checkpoint).

The model is torchvision.models.resnet18(weights=None, num_classes=10)
with its first convolution taking one channel: the full stem (7x7 stride
2, then 3x3 max pooling stride 2) is kept, so the 28x28 images are 7x7
maps after the stem, 1x1 in layer4; about 30 MFLOPs per image forward.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import torch  # noqa: E402
import torchvision  # noqa: E402

import raf_torch  # noqa: E402


def resnet18(seed=0):
    torch.manual_seed(seed)
    m = torchvision.models.resnet18(weights=None, num_classes=10)
    m.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3,
                              bias=False)
    return m


def accuracy(logits, labels):
    """The evaluation head: the fraction of the batch whose highest logit
    is the label."""
    return (logits.argmax(dim=1) == labels).float().mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--eval-batch", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--conv", default="op", choices=("op", "matmul"),
                    help="raf_torch.export's conv: conv2d ops, or im2col matmuls")
    a = ap.parse_args()
    m = resnet18(a.seed)
    x = torch.zeros(a.batch, 1, 28, 28)
    raf_torch.export(m.train(), (x,), os.path.join(a.out, "resnet"),
                     loss=torch.nn.CrossEntropyLoss(), conv=a.conv)
    x = torch.zeros(a.eval_batch, 1, 28, 28)
    raf_torch.export(m.eval(), (x,), os.path.join(a.out, "accuracy"),
                     loss=accuracy, conv=a.conv)


if __name__ == "__main__":
    main()
