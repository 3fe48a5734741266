#!/usr/bin/python3
"""torchvision's ResNet-18 exported by raf_torch and run by raf-run, against
PyTorch (in f64, as raf's cpu-ref convolutions compute in double).

    /usr/bin/python3 test/torch/check_resnet18.py [--bin BUILD_DIR]

ResNet-18 with a 1-channel stem and 10 classes on a batch of 8 images of
28x28 (at 2 images, layer4's batch statistics over 1x1 maps are too
ill-conditioned for 1e-4: torch's own f32 gradients are 20% off its f64); batch_norm's affine params and running statistics are random so
that each counts. Checked, each to 1e-4 of the reference's largest value:
  eval mode: the logits; and with CrossEntropyLoss, the loss and every
    param's gradient (raf-opt --autodiff, @resnet_grad);
  train mode with CrossEntropyLoss: the loss, then every new running mean
    and variance and num_batches_tracked (the {updates} results), against
    the module's buffers after one torch forward pass; and @resnet_grad of
    that function (raf-opt --autodiff): the loss, every gradient, then the
    same state updates. update_state=False leaves the updates out.
"""
import copy
import os
import re

import torchcheck as tc
import torch
import torchvision

import raf_torch


def model():
    torch.manual_seed(0)
    m = torchvision.models.resnet18(weights=None, num_classes=10)
    m.conv1 = torch.nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            c = mod.num_features
            mod.weight.data = 1 + 0.2 * torch.randn(c, generator=g)
            mod.bias.data = 0.1 * torch.randn(c, generator=g)
            mod.running_mean = 0.1 * torch.randn(c, generator=g)
            mod.running_var = 1 + 0.3 * torch.rand(c, generator=g)
            mod.num_batches_tracked.fill_(3)
    return m


def torch_grads(m, x, y):
    m64 = copy.deepcopy(m).double()
    loss = torch.nn.functional.cross_entropy(m64(x.double()), y)
    loss.backward()
    return (loss.item(), {n: p.grad.numpy() for n, p in m64.named_parameters()},
            m64.state_dict())


def check_grads(b, work, prefix, func, inputs, m, x, y, what, updated=()):
    """@FUNC_grad against torch.autograd: the loss, every gradient, then
    (train mode) the state updates @FUNC_grad passes on, against the
    module's buffers after torch's forward pass."""
    tc.autodiff(b, prefix + ".raf", prefix + ".grad.raf")
    names = [n for n, _ in m.named_parameters()]
    got = tc.run(b, prefix + ".grad.raf", func + "_grad",
                 prefix + ".safetensors", inputs,
                 1 + len(names) + len(updated), work, func + ".grad")
    ref_loss, ref, state = torch_grads(m, x, y)
    print(f"{what}: loss and gradients against torch.autograd (f64):")
    ok = tc.close("loss", got[0], ref_loss)
    for n, g in zip(names, got[1:]):
        ok &= tc.close(n, g, ref[n])
    for n, g in zip(updated, got[1 + len(names):]):
        ok &= tc.close(n, g, state[n].numpy())
    return ok


def main():
    b = tc.bindir()
    work = tc.scratch("resnet18")
    x = torch.randn(8, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    y = torch.tensor([3, 7, 0, 1, 9, 2, 5, 5])
    inputs = {"x": x.numpy(), "labels": y.numpy()}
    ok = True

    # eval mode: logits, then loss and gradients
    m = model().eval()
    p = os.path.join(work, "eval")
    raf_torch.export(m, (x,), p, name="resnet")
    got = tc.run(b, p + ".raf", "resnet", p + ".safetensors",
                 {"x": inputs["x"]}, 1, work, "eval")
    with torch.no_grad():
        want = copy.deepcopy(m).double()(x.double()).numpy()
    print("eval mode, logits:")
    ok &= tc.close("logits", got[0], want)
    p = os.path.join(work, "eval_loss")
    raf_torch.export(m, (x,), p, name="resnet",
                     loss=torch.nn.CrossEntropyLoss())
    ok &= check_grads(b, work, p, "resnet", inputs, m, x, y, "eval mode")

    # train mode: the loss and the new running statistics
    m = model().train()
    p = os.path.join(work, "train")
    text = raf_torch.export(m, (x,), p, name="resnet",
                            loss=torch.nn.CrossEntropyLoss())
    updated = re.findall(r"updates = %([\w.]+)", text)
    got = tc.run(b, p + ".raf", "resnet", p + ".safetensors", inputs,
                 1 + len(updated), work, "train")
    m64 = copy.deepcopy(m).double()
    with torch.no_grad():
        ref_loss = torch.nn.functional.cross_entropy(m64(x.double()), y).item()
    state = m64.state_dict()
    print(f"train mode: the loss and {len(updated)} state updates:")
    ok &= tc.close("loss", got[0], ref_loss)
    ok &= len(updated) == 3 * 20
    for name, g in zip(updated, got[1:]):
        ok &= tc.close(name, g, state[name].numpy())
    ok &= check_grads(b, work, p, "resnet", inputs, m, x, y,
                      "train mode (then the state updates)", updated)
    # update_state=False: the batch's statistics, no state results
    text = raf_torch.export(m, (x,), os.path.join(work, "frozen"),
                            name="resnet", loss=torch.nn.CrossEntropyLoss(),
                            update_state=False)
    frozen_ok = "updates" not in text and "batch_norm(" in text and \
        "training = false" not in text
    print(f"update_state=False: {'no' if frozen_ok else 'UNEXPECTED'} "
          f"state results, batch statistics")
    ok &= frozen_ok
    tc.finish("torch/resnet18", ok)


if __name__ == "__main__":
    main()
