#!/usr/bin/python3
"""torch_cnn.py: a small CNN in PyTorch (no torchvision), exported with
torch.onnx.export at opset 13, for raf-import's end-to-end test.

    torch_cnn.py OUTDIR

writes OUTDIR/cnn.onnx, a batch OUTDIR/x.npy and PyTorch's output on it,
OUTDIR/y.npy. The model is in eval mode (BatchNorm uses its running
statistics, Dropout is the identity), with weights and statistics drawn
from a fixed seed; the export keeps the shape computations of flatten
(do_constant_folding=False), so raf-import must fold them itself.
"""
import os
import sys

import numpy as np
import torch
from torch import nn


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.pool = nn.AvgPool2d(2)
        self.drop = nn.Dropout(0.25)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = nn.functional.max_pool2d(x, 2)
        x = nn.functional.gelu(self.conv2(x))
        x = self.pool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.drop(torch.tanh(self.fc1(x)))
        return torch.log_softmax(self.fc2(x), dim=1)


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = CNN()
    with torch.no_grad():
        model.bn1.running_mean.uniform_(-0.5, 0.5)
        model.bn1.running_var.uniform_(0.5, 1.5)
    model.eval()
    x = torch.randn(3, 1, 16, 16)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, (x,), os.path.join(out, 'cnn.onnx'),
                      input_names=['image'], output_names=['log_probs'],
                      opset_version=13, do_constant_folding=False)
    np.save(os.path.join(out, 'x.npy'), x.numpy())
    np.save(os.path.join(out, 'y.npy'), y.numpy())


if __name__ == '__main__':
    main(sys.argv[1])
