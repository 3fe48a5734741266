#!/usr/bin/env python3
"""PyTorch's side of scripts/gpu-check.sh's ResNet-18 figures: the model
exported for raf, its weights and batch, the same training step in PyTorch
on a CUDA GPU, and one convolution's forward and backward.

    /usr/bin/python3 bench/gpu_resnet_torch.py export DIR [--batch 64]
    python3 bench/gpu_resnet_torch.py inputs DIR [--batch 64]
    python3 bench/gpu_resnet_torch.py torch DIR [--batch 64] [--steps 8
        --warmup 2] [--modes eager,eager-bf16,compile,compile-bf16]
    python3 bench/gpu_resnet_torch.py conv [--batch 64 --channels 64
        --size 56] [--dtypes f32,bf16] [--repeats 20 --warmup 3]

The model is torchvision's resnet18(weights=None) as it is (3x224x224
images, 1000 classes; --size S for SxS images, to try the flow small),
drawn with torch.manual_seed(0) in train() mode: bench/resnet_torch.py's
model at --input 3x224. Where torchvision is missing (the GPU machine may
have torch alone), the same network is built here: the same modules under
the same names, the same init.

`export` (scripts/gpu-bundle.sh, on the machine that builds the bundle,
which has PyTorch, torchvision and NumPy) writes DIR/resnet.raf as
bench/resnet.sh makes it, through the same exporter (python/raf_torch,
loss nn.CrossEntropyLoss): @resnet(x, labels, params..., states...),
returning the loss and batch_norm's new running statistics. Not its
weights: 47 MB of random floats, which xz cannot shrink, would not fit
the bundle.

`inputs` (on the GPU machine) writes what raf-run needs besides:
DIR/resnet.safetensors, the weights and batch_norm's buffers under their
state_dict names, as the exporter writes them (raf-run --load), and one
random batch, DIR/x.npy (f32 [B,3,S,S], normal(0, 1)) and DIR/labels.npy
(i64 [B], below 1000), seed 0; with torch and the standard library alone
(no NumPy).

`torch` trains the same model from the same weights on that batch:
zero_grad, forward, CrossEntropyLoss, backward and
torch.optim.AdamW(lr=1e-3).step() (PyTorch's default implementation on
CUDA, foreach), as raf's step (optimizer{kind=adamw lr=1e-3}); bf16 runs
the forward under torch.autocast("cuda", torch.bfloat16) with f32 params
and optimizer; compile wraps the model in torch.compile. PyTorch's
defaults otherwise: NCHW tensors, cuDNN's TF32 allowed for f32
convolutions (torch.backends.cudnn.allow_tf32), no TF32 for f32 matmuls.
Prints one JSON line per mode as soon as it is done (a timeout keeps the
modes finished before it): {"mode", "ms" (median step time after the
warm-up, CUDA events around each step), "loss" (the last)}.

`conv` times bench/gen_gpu_ops.py's conv module in PyTorch: y =
F.conv2d(x, w, padding=1) then y.backward(dy) for dx and dw (3x3, C to C
channels: ResNet-18's layer1 at B=64, 56x56), per dtype; one JSON line per
dtype: {"dtype", "ms" (median of the repeats after the warm-up), "tf32"
(whether cuDNN may use TF32 for f32)}.
"""
import argparse
import ctypes
import json
import os
import shutil
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


def torchvision_resnet18():
    """torchvision's resnet18(weights=None), or the same network built
    here: module names (conv1, bn1, layer1.0.conv1, ..., fc) and init
    (kaiming_normal fan_out for convolutions, batch_norm 1 and 0, Linear's
    own) as torchvision 0.15+ writes them, so that the exported arguments
    are named alike."""
    try:
        import torchvision
        return torchvision.models.resnet18(weights=None)
    except ImportError:
        pass
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False),
                    nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            if self.downsample is not None:
                identity = self.downsample(x)
            return self.relu(out + identity)

    class ResNet18(nn.Module):
        def __init__(self, classes=1000):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = 64
            for i, cout in enumerate((64, 128, 256, 512)):
                stride = 1 if i == 0 else 2
                setattr(self, f"layer{i + 1}", nn.Sequential(
                    BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
                cin = cout
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, classes)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out",
                                            nonlinearity="relu")
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet18()


def make_model():
    torch.manual_seed(0)
    return torchvision_resnet18().train()


def export(a):
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import raf_torch
    os.makedirs(a.dir, exist_ok=True)
    x = torch.zeros(a.batch, 3, a.size, a.size)
    with tempfile.TemporaryDirectory() as tmp:
        raf_torch.export(make_model(), (x,), os.path.join(tmp, "resnet"),
                         loss=torch.nn.CrossEntropyLoss())
        shutil.copy(os.path.join(tmp, "resnet.raf"), a.dir)


def raw(t):
    """The bytes of a CPU tensor, C order, this (little-endian) host's."""
    t = t.detach().contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


CODES = {torch.float32: ("F32", "<f4"), torch.int64: ("I64", "<i8")}


def inputs(a):
    sys.path.insert(0, HERE)
    from gpu_data import write_npy
    os.makedirs(a.dir, exist_ok=True)
    model = make_model()
    # the exporter's arguments: the parameters, then the buffers the
    # state_dict holds (num_batches_tracked included)
    persistent = set(model.state_dict())
    state = list(model.named_parameters()) + [
        (n, b) for n, b in model.named_buffers() if n in persistent]
    header, at = {}, 0
    for name, t in state:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": CODES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [at, at + n]}
        at += n
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(a.dir, "resnet.safetensors"), "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for _, t in state:
            f.write(raw(t))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(a.batch, 3, a.size, a.size, generator=g)
    labels = torch.randint(0, 1000, (a.batch,), generator=g)
    for name, t in (("x", x), ("labels", labels)):
        write_npy(os.path.join(a.dir, name + ".npy"), CODES[t.dtype][1],
                  tuple(t.shape), raw(t))


def load_batch(d):
    """x.npy and labels.npy as `inputs` wrote them (format 1.0, C order,
    little-endian), read without NumPy."""
    out = []
    for name, dtype in (("x", torch.float32), ("labels", torch.int64)):
        with open(os.path.join(d, name + ".npy"), "rb") as f:
            data = f.read()
        n = int.from_bytes(data[8:10], "little")
        header = data[10:10 + n].decode("latin1")
        dims = header.split("'shape': (")[1].split(")")[0]
        shape = [int(k) for k in dims.split(",") if k.strip()]
        t = torch.frombuffer(bytearray(data[10 + n:]), dtype=dtype)
        out.append(t.reshape(shape))
    return out


def train(mode, a, x, labels):
    model = make_model().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fn = torch.compile(model) if mode.startswith("compile") else model
    bf16 = mode.endswith("bf16")
    loss_fn = torch.nn.CrossEntropyLoss()
    ms, loss = [], None
    for s in range(a.warmup + a.steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(fn(x), labels)
        loss.backward()
        opt.step()
        end.record()
        torch.cuda.synchronize()
        if s >= a.warmup:
            ms.append(start.elapsed_time(end))
    ms.sort()
    return {"mode": mode, "ms": ms[len(ms) // 2], "loss": loss.item()}


def conv(a):
    c, s = a.channels, a.size
    for name in a.dtypes.split(","):
        dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[name]
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(a.batch, c, s, s, generator=g, device="cuda",
                        dtype=dtype).requires_grad_()
        w = (torch.randn(c, c, 3, 3, generator=g, device="cuda", dtype=dtype)
             / (3 * c * 9) ** 0.5).requires_grad_()
        dy = torch.randn(a.batch, c, s, s, generator=g, device="cuda",
                         dtype=dtype)
        ms = []
        for i in range(a.warmup + a.repeats):
            x.grad = w.grad = None
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            F.conv2d(x, w, padding=1).backward(dy)
            end.record()
            torch.cuda.synchronize()
            if i >= a.warmup:
                ms.append(start.elapsed_time(end))
        ms.sort()
        print(json.dumps({"dtype": name, "ms": ms[len(ms) // 2],
                          "tf32": torch.backends.cudnn.allow_tf32}),
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    ex = sub.add_parser("export")
    ins = sub.add_parser("inputs")
    tr = sub.add_parser("torch")
    for p in (ex, ins, tr):
        p.add_argument("dir")
        p.add_argument("--batch", type=int, default=64)
        p.add_argument("--size", type=int, default=224)
    for k, v in (("steps", 8), ("warmup", 2)):
        tr.add_argument(f"--{k}", type=int, default=v)
    tr.add_argument("--modes", default="eager,eager-bf16,compile,compile-bf16")
    cv = sub.add_parser("conv")
    for k, v in (("batch", 64), ("channels", 64), ("size", 56),
                 ("repeats", 20), ("warmup", 3)):
        cv.add_argument(f"--{k}", type=int, default=v)
    cv.add_argument("--dtypes", default="f32,bf16")
    a = ap.parse_args()
    if a.what in ("export", "inputs"):
        (export if a.what == "export" else inputs)(a)
        return
    if not torch.cuda.is_available():
        raise SystemExit("gpu_resnet_torch.py: torch sees no CUDA device")
    if a.what == "conv":
        conv(a)
        return
    x, labels = (t.cuda() for t in load_batch(a.dir))
    if x.shape[0] != a.batch:
        raise SystemExit(f"gpu_resnet_torch.py: {a.dir}/x.npy holds "
                         f"{x.shape[0]} images, not --batch {a.batch}")
    for mode in a.modes.split(","):
        t0 = time.perf_counter()
        r = train(mode, a, x, labels)
        r["wall_s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(r), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
