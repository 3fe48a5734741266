#!/usr/bin/env python3
"""The one-op modules of scripts/gpu-check.sh's kernel figures, against
PyTorch's same ops (bench/gpu_attention_torch.py, bench/gpu_resnet_torch.py
conv), written with the standard library alone.

    python3 bench/gen_gpu_ops.py attention OUT.raf [--batch 8 --heads 12
        --seq 1024 --dim 64 --dtype bf16]
    python3 bench/gen_gpu_ops.py conv OUT.raf [--batch 64 --channels 64
        --size 56 --dtype f32]
    python3 bench/gen_gpu_ops.py conv-bias-relu OUT.raf [same options]

`attention`: @main(q, k, v, dy) returns causal
scaled_dot_product_attention(q, k, v) and its gradients
scaled_dot_product_attention_grad(dy, q, k, v): a training step's
attention, forward and backward, as F.scaled_dot_product_attention's
forward and backward do it (the backward recomputes the scores, as
FlashAttention's).

`conv`: @main(x, w, dy) returns conv2d(x, w) (3x3, padding 1, stride 1:
ResNet-18's layer1 convolution at 64 channels and 56x56) and its
gradients conv2d_grad_input(dy, w), conv2d_grad_weight(dy, x): a
convolution's forward and backward in a training step.

`conv-bias-relu`: @main(x, w, b) returns relu(conv2d(x, w) + b), b per
channel: the group cudnn's `conv-bias-relu` fusion pattern makes, timed
fused and statement by statement.

Every argument has an `init` (normal(0, 1); the weight's is scaled as
PyTorch's default), so raf-run needs no input files; the results are
returned so that nothing is dead. The timing does not depend on the values.
"""
import argparse
import math


def ty(dtype, *dims):
    return f"{dtype}[" + ",".join(str(d) for d in dims) + "]"


def attention(a):
    t = ty(a.dtype, a.batch, a.heads, a.seq, a.dim)
    args = ", ".join(f'%{n}: {t} {{init = "normal(0, 1)"}}'
                     for n in ("q", "k", "v", "dy"))
    return (f"func @main({args})\n    -> ({t}, {t}, {t}, {t}) {{\n"
            "  %o = scaled_dot_product_attention(%q, %k, %v) {causal}\n"
            "  %dq, %dk, %dv = scaled_dot_product_attention_grad(%dy, %q, %k, %v) {causal}\n"
            "  return %o, %dq, %dk, %dv\n}\n")


def conv(a):
    n, c, s, d = a.batch, a.channels, a.size, a.dtype
    x = ty(d, n, c, s, s)
    w = ty(d, c, c, 3, 3)
    # kaiming_uniform(a=sqrt(5)), PyTorch's Conv2d default, has this std
    std = 1 / math.sqrt(3 * c * 9)
    conv_attrs = "stride = [1, 1], padding = [1, 1]"
    return (f'func @main(%x: {x} {{init = "normal(0, 1)"}},\n'
            f'    %w: {w} {{init = "normal(0, {std:.6g})"}},\n'
            f'    %dy: {x} {{init = "normal(0, 1)"}})\n'
            f"    -> ({x}, {x}, {w}) {{\n"
            f"  %y = conv2d(%x, %w) {{{conv_attrs}}}\n"
            f"  %dx = conv2d_grad_input(%dy, %w) {{{conv_attrs}, "
            f"shape = [{n}, {c}, {s}, {s}]}}\n"
            f"  %dw = conv2d_grad_weight(%dy, %x) {{{conv_attrs}, "
            f"shape = [{c}, {c}, 3, 3]}}\n"
            "  return %y, %dx, %dw\n}\n")


def conv_bias_relu(a):
    n, c, s, d = a.batch, a.channels, a.size, a.dtype
    x = ty(d, n, c, s, s)
    std = 1 / math.sqrt(3 * c * 9)
    return (f'func @main(%x: {x} {{init = "normal(0, 1)"}},\n'
            f'    %w: {ty(d, c, c, 3, 3)} {{init = "normal(0, {std:.6g})"}},\n'
            f'    %b: {ty(d, c)} {{init = "normal(0, 1)"}}) -> {x} {{\n'
            f"  %b4 = reshape(%b) {{shape = [1, {c}, 1, 1]}}\n"
            "  %y = conv2d(%x, %w) {stride = [1, 1], padding = [1, 1]}\n"
            "  %z = add(%y, %b4)\n"
            "  %r = relu(%z)\n"
            "  return %r\n}\n")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    at = sub.add_parser("attention")
    for k, v in (("batch", 8), ("heads", 12), ("seq", 1024), ("dim", 64)):
        at.add_argument(f"--{k}", type=int, default=v)
    at.add_argument("--dtype", default="bf16")
    cv = sub.add_parser("conv")
    for k, v in (("batch", 64), ("channels", 64), ("size", 56)):
        cv.add_argument(f"--{k}", type=int, default=v)
    cv.add_argument("--dtype", default="f32")
    cbr = sub.add_parser("conv-bias-relu")
    for k, v in (("batch", 64), ("channels", 64), ("size", 56)):
        cbr.add_argument(f"--{k}", type=int, default=v)
    cbr.add_argument("--dtype", default="f32")
    for p in (at, cv, cbr):
        p.add_argument("out")
    a = ap.parse_args()
    text = {"attention": attention, "conv": conv,
            "conv-bias-relu": conv_bias_relu}[a.what](a)
    with open(a.out, "w") as f:
        f.write(f"// bench/gen_gpu_ops.py {a.what}: scripts/gpu-check.sh's "
                f"{a.what} figure.\n" + text)


if __name__ == "__main__":
    main()
