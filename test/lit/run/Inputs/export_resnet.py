"""export_resnet.py ROOT OUT: a tiny ResNet for cudnn-resnet-fake.test,
exported by raf_torch in train mode (nn.CrossEntropyLoss; batch_norm's new
running statistics as {updates} results, as examples/resnet's
ResNet-18) as OUT/resnet.raf and its initial weights OUT/resnet.safetensors,
with a dataset of 5 batches of 4 random 3 x 16 x 16 images and labels:
OUT/x.npy, OUT/labels.npy.

The model: a 3x3 stem (3 -> 8 channels), batch_norm, relu, 3x3 max
pooling of stride 2 (8 x 8 maps); two basic blocks as torchvision's
ResNet-18 has them (conv, batch_norm, relu, conv, batch_norm, the residual
add, relu; written here, so that the test needs torch alone): 8 -> 8, then
8 -> 16 with stride 2 and a 1x1 convolution with batch_norm on the
shortcut (4 x 4 maps); global average pooling (avg_pool2d); a linear
layer to 10 classes. Every convolution, pooling and batch_norm (and their
gradients) is the cudnn dialect's on --device=cuda."""
import os
import sys

import numpy as np
import torch
from torch import nn

root, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(root, "python"))
import raf_torch  # noqa: E402

BATCH, STEPS = 4, 5


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock."""

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1,
                               bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = BasicBlock(8, 8)
        down = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False),
                             nn.BatchNorm2d(16))
        self.layer2 = BasicBlock(8, 16, stride=2, downsample=down)
        # Global average pooling over the 4 x 4 maps as an avg_pool2d, which
        # cudnn runs (torchvision's AdaptiveAvgPool2d(1) exports as a mean).
        self.avgpool = nn.AvgPool2d(4)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


r = np.random.RandomState(0)
x = r.randn(STEPS * BATCH, 3, 16, 16).astype(np.float32)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "labels.npy"), r.randint(0, 10, STEPS * BATCH))
torch.manual_seed(0)
raf_torch.export(TinyResNet().train(), (torch.from_numpy(x[:BATCH]),),
                 os.path.join(out, "resnet"), loss=nn.CrossEntropyLoss())
