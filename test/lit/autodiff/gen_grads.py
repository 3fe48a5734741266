#!/usr/bin/python3
"""Writes the numerical tests of the autodiff pass (test/lit/autodiff/*.raf,
except the hand-written ones, which do not start with "// Generated").

Each case is a forward function @NAME with a scalar loss. Its RUN line
makes @NAME_grad with `raf-opt --autodiff="func=NAME"`, runs it with
raf-run on fixed inputs and checks the loss and every param's gradient
against PyTorch's autograd, computed in float64 on the inputs as rounded
to the test's dtype. f64 cases check the formulas tightly; a few f32 cases
check the path a model takes. Ops PyTorch 1.13 lacks are written out
(scaled_dot_product_attention, slices with negative steps); dropout's mask
comes from the Philox of test/lit/run/gen_nn.py.
The rounding, the value spelling and the writing of the files come from
test/lit/run/gencommon.py.

Run it again after changing the cases (PyTorch is needed here only):
    /usr/bin/python3 test/lit/autodiff/gen_grads.py
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "run"))
from gen_nn import dropout_keep  # noqa: E402
from gencommon import fmt, round_to  # noqa: E402
from gencommon import TestFile as _TestFile  # noqa: E402
from gencommon import ints as L  # noqa: E402

TOL = {"f64": (1e-9, 1e-9), "f32": (2e-5, 2e-4)}
TORCH = {"f64": torch.float64, "f32": torch.float64}


class Arg:
    """A function argument: a param (gets a gradient) or an input."""

    def __init__(self, name, dt, values, param=False):
        self.name, self.dt, self.param = name, dt, param
        self.values = np.asarray(values)

    def decl(self):
        """The argument as TestFile.func takes it."""
        return ((self.name, self.dt, self.values.shape) +
                (("param",) if self.param else ()))

    def tensor(self):
        if self.dt in ("f64", "f32", "f16", "bf16"):
            return torch.tensor(self.values, dtype=torch.float64,
                                requires_grad=self.param)
        if self.dt == "bool":
            return torch.tensor(self.values, dtype=torch.bool)
        return torch.tensor(self.values, dtype=torch.int64)


class TestFile(_TestFile):
    generator = "gen_grads.py"
    directory = HERE

    def __init__(self, name, doc):
        super().__init__(name, doc, "PyTorch's autograd",
                         title=f"autodiff, {name}: {doc}")

    def case(self, fname, args, body, loss_fn, dt="f64", loss_dt=None,
             note=None):
        """body: the statements, the last computing %l; loss_fn(**tensors)
        gives PyTorch's loss."""
        loss_dt = loss_dt or dt
        tensors = {a.name: a.tensor() for a in args}
        loss = loss_fn(**tensors)
        params = [a for a in args if a.param]
        grads = torch.autograd.grad(loss, [tensors[a.name] for a in params],
                                    allow_unused=True)
        outs = [(loss_dt, loss.detach().numpy())]
        for a, g in zip(params, grads):
            g = np.zeros(a.values.shape) if g is None else g.numpy()
            outs.append((a.dt, g))
        flags = self.flags([(a.name, a.dt, a.values) for a in args],
                           [(d, round_to(v, d)) for d, v in outs], TOL[dt])
        if note:
            self.raw(note)
        self.runs.append(f'// RUN: raf-opt --autodiff="func={fname}" %s | '
                         f"raf-run - --function={fname}_grad {flags} | "
                         "FileCheck %s")
        self.func(fname, [a.decl() for a in args], [(loss_dt, ())],
                  body + ["return %l"])


RNG = np.random.default_rng(20261203)


def rand(shape, dt="f64", lo=-2.0, hi=2.0):
    return round_to(RNG.uniform(lo, hi, shape), dt)


def P(name, shape, dt="f64", lo=-2.0, hi=2.0, values=None):
    return Arg(name, dt, rand(shape, dt, lo, hi) if values is None
               else np.asarray(values, dtype=np.float64).reshape(shape),
               param=True)


def I(name, shape, dt="f64", lo=-2.0, hi=2.0, values=None):
    return Arg(name, dt, rand(shape, dt, lo, hi) if values is None
               else np.asarray(values).reshape(shape), param=False)


def weighted(expr, c="c"):
    """Lines that reduce %y to %l as sum(y * c), so every element of the
    gradient differs."""
    return [f"%y = {expr}", f"%z = mul(%y, %{c})", "%l = sum(%z)"]


# ---- Unary -------------------------------------------------------------------

def unary():
    t = TestFile("unary", "every differentiable unary op, "
                 "loss = sum(op(w) * c)")
    ops = {
        "neg": (lambda w: -w, {}),
        "abs": (torch.abs, {"values": [-1.5, 0.0, 0.5, 2.0, -0.25, 1.0]}),
        "exp": (torch.exp, {}),
        "log": (torch.log, {"lo": 0.2, "hi": 3.0}),
        "sqrt": (torch.sqrt, {"lo": 0.2, "hi": 3.0}),
        "rsqrt": (torch.rsqrt, {"lo": 0.2, "hi": 3.0}),
        "tanh": (torch.tanh, {}),
        "sigmoid": (torch.sigmoid, {}),
        "relu": (torch.relu, {"values": [-1.5, 0.0, 0.5, 2.0, -0.25, 1.0]}),
        "erf": (torch.erf, {}),
        "cos": (torch.cos, {}),
        "sin": (torch.sin, {}),
        "gelu": (lambda w: F.gelu(w), {}),
    }
    for op, (fn, kw) in ops.items():
        w = P("w", (2, 3), **kw)
        c = I("c", (2, 3))
        t.case(op, [w, c], weighted(f"{op}(%w)"),
               lambda w, c, fn=fn: (fn(w) * c).sum())
    w, c = P("w", (2, 3)), I("c", (2, 3))
    t.case("gelu_tanh", [w, c], weighted('gelu(%w) {approximate = "tanh"}'),
           lambda w, c: (F.gelu(w, approximate="tanh") * c).sum())
    # f32 end to end
    w, c = P("w", (3, 4), "f32"), I("c", (3, 4), "f32")
    t.case("tanh_f32", [w, c], weighted("tanh(%w)"),
           lambda w, c: (torch.tanh(w) * c).sum(), dt="f32")
    w, c = P("w", (3, 4), "f32"), I("c", (3, 4), "f32")
    t.case("gelu_f32", [w, c], weighted("gelu(%w)"),
           lambda w, c: (F.gelu(w) * c).sum(), dt="f32")
    t.write()


# ---- Binary ------------------------------------------------------------------

def binary():
    t = TestFile("binary", "binary ops with broadcasting undone by "
                 "summation, ties of maximum/minimum split evenly, pow's "
                 "zero cases, where")
    fns = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
           "div": torch.div, "pow": torch.pow, "maximum": torch.maximum,
           "minimum": torch.minimum}
    for op, fn in fns.items():
        lo = 0.3 if op == "pow" else -2.0
        a, b = P("a", (3, 4), lo=lo), P("b", (4,), lo=-2.0)
        if op == "div":
            b = P("b", (4,), lo=0.5, hi=2.0)
        c = I("c", (3, 4))
        t.case(op, [a, b, c], weighted(f"{op}(%a, %b)"),
               lambda a, b, c, fn=fn: (fn(a, b) * c).sum())
        # both operands broadcast: [3,1] x [1,4] -> [3,4], b first
        a, b = P("a", (3, 1), lo=lo), P("b", (2, 1, 4), lo=0.5)
        c = I("c", (2, 3, 4))
        t.case(f"{op}_both", [b, a, c], weighted(f"{op}(%a, %b)"),
               lambda b, a, c, fn=fn: (fn(a, b) * c).sum())
    vals_a = [1.0, 2.0, -1.0, 0.5, 3.0, 3.0]
    vals_b = [1.0, -2.0, -1.0, 0.75, 3.0, 1.0]
    for op, fn in (("maximum", torch.maximum), ("minimum", torch.minimum)):
        a, b, c = (P("a", (6,), values=vals_a), P("b", (6,), values=vals_b),
                   I("c", (6,)))
        t.case(f"{op}_ties", [a, b, c], weighted(f"{op}(%a, %b)"),
               lambda a, b, c, fn=fn: (fn(a, b) * c).sum())
    a = P("a", (6,), values=[0.0, 0.0, 2.0, 0.5, 0.0, 1.5])
    b = P("b", (6,), values=[0.0, 2.0, 0.0, -1.0, 1.0, 3.0])
    c = I("c", (6,))
    t.case("pow_zeros", [a, b, c], weighted("pow(%a, %b)"),
           lambda a, b, c: (torch.pow(a, b) * c).sum())
    x, a, b, c = I("x", (3, 4)), P("a", (3, 4)), P("b", (4,)), I("c", (3, 4))
    t.case("where", [x, a, b, c],
           ["%zero = constant 0.0 : f64[]", "%cond = gt(%x, %zero)"] +
           weighted("where(%cond, %a, %b)"),
           lambda x, a, b, c: (torch.where(x > 0, a, b) * c).sum())
    w, k = P("w", (5,), "f32"), I("k", (5,), "f64")
    t.case("cast", [w, k], ["%w64 = cast(%w) {dtype = f64}",
                            "%y = mul(%w64, %k)", "%l = sum(%y)"],
           lambda w, k: (w * k).sum(), dt="f32", loss_dt="f64")
    t.write()


# ---- Reductions ---------------------------------------------------------------

def reduce():
    t = TestFile("reduce", "sum, mean, max, min over axes with and without "
                 "keepdims; max/min split the gradient among ties")
    cases = [("sum", "{axes = [1]}", lambda w: w.sum(1)),
             ("sum_all", "", lambda w: w.sum()),
             ("sum_keep", "{axes = [0, 2], keepdims}",
              lambda w: w.sum((0, 2), keepdim=True)),
             ("mean", "{axes = [-1]}", lambda w: w.mean(-1)),
             ("mean_keep", "{axes = [1], keepdims}",
              lambda w: w.mean(1, keepdim=True)),
             ("max", "{axes = [1]}", lambda w: torch.amax(w, 1)),
             ("max_keep", "{axes = [0, 2], keepdims}",
              lambda w: torch.amax(w, (0, 2), keepdim=True)),
             ("min", "{axes = [2]}", lambda w: torch.amin(w, 2)),
             ("max_all", "", lambda w: torch.amax(w))]
    for name, attrs, fn in cases:
        op = name.split("_")[0]
        w = P("w", (2, 3, 4))
        shape = tuple(fn(torch.zeros(2, 3, 4)).shape)
        c = I("c", shape)
        body = [f"%y = {op}(%w) {attrs}".rstrip(), "%z = mul(%y, %c)",
                "%l = sum(%z)"]
        t.case(name, [w, c], body,
               lambda w, c, fn=fn: (fn(w) * c).sum())
    # ties: two equal maxima in a row share its gradient
    w = P("w", (2, 4), values=[[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 0.0]])
    c = I("c", (2,))
    t.case("max_ties", [w, c], weighted("max(%w) {axes = [1]}"),
           lambda w, c: (torch.amax(w, 1) * c).sum())
    t.case("min_ties", [P("w", (2, 4), values=[[1.0, -3.0, -3.0, 4.0],
                                                 [0.0, 0.0, 5.0, 0.0]]),
                        I("c", (2,))],
           weighted("min(%w) {axes = [1]}"),
           lambda w, c: (torch.amin(w, 1) * c).sum())
    t.write()


# ---- Shapes -------------------------------------------------------------------

def py_slice(x, begin, end, strides):
    """Python/NumPy slicing with any steps, through index_select."""
    for d, (b, e, s) in enumerate(zip(begin, end, strides)):
        idx = list(range(x.shape[d]))[b:e:s]
        x = torch.index_select(x, d, torch.tensor(idx, dtype=torch.int64))
    return x


def shapes():
    t = TestFile("shape", "reshape, transpose, broadcast_to, slice, concat, "
                 "split, take (repeated indices accumulate)")
    w, c = P("w", (2, 6)), I("c", (3, 4))
    t.case("reshape", [w, c], weighted("reshape(%w) {shape = [3, -1]}"),
           lambda w, c: (w.reshape(3, 4) * c).sum())
    w, c = P("w", (2, 3, 4)), I("c", (4, 2, 3))
    t.case("transpose", [w, c],
           weighted("transpose(%w) {perm = [2, 0, 1]}"),
           lambda w, c: (w.permute(2, 0, 1) * c).sum())
    w, c = P("w", (2, 3, 4)), I("c", (4, 3, 2))
    t.case("transpose_reverse", [w, c], weighted("transpose(%w)"),
           lambda w, c: (w.permute(2, 1, 0) * c).sum())
    w, c = P("w", (3, 1)), I("c", (2, 3, 4))
    t.case("broadcast_to", [w, c],
           weighted("broadcast_to(%w) {shape = [2, 3, 4]}"),
           lambda w, c: (w.expand(2, 3, 4) * c).sum())
    w = P("w", (4, 6))
    for name, b, e, s in (("slice", [1, 0], [3, 6], [1, 2]),
                          ("slice_negative", [-1, 5], [-5, -7], [-2, -3])):
        out = py_slice(torch.zeros(4, 6), b, e, s)
        c = I("c", tuple(out.shape))
        t.case(name, [w, c],
               weighted(f"slice(%w) {{begin = {L(b)}, end = {L(e)}, "
                        f"strides = {L(s)}}}"),
               lambda w, c, b=b, e=e, s=s: (py_slice(w, b, e, s) * c).sum())
    a, b, c = P("a", (2, 3)), P("b", (2, 2)), I("c", (2, 5))
    t.case("concat", [a, b, c], weighted("concat(%a, %b) {axis = 1}"),
           lambda a, b, c: (torch.cat([a, b], 1) * c).sum())
    a, b, c = P("a", (2, 3)), P("b", (2, 2)), I("c", (2, 8))
    t.case("concat_twice", [a, b, c],
           ["%y = concat(%a, %b, %a) {axis = -1}", "%z = mul(%y, %c)",
            "%l = sum(%z)"],
           lambda a, b, c: (torch.cat([a, b, a], 1) * c).sum())
    w, c0, c2 = P("w", (6, 2)), I("c0", (1, 2)), I("c2", (3, 2))
    # part 1 unused: its gradient is zeros
    t.case("split", [w, c0, c2],
           ["%p0, %p1, %p2 = split(%w) {sizes = [1, 2, 3]}",
            "%a = mul(%p0, %c0)", "%b = mul(%p2, %c2)", "%s0 = sum(%a)",
            "%s2 = sum(%b)", "%l = add(%s0, %s2)"],
           lambda w, c0, c2: ((w[0:1] * c0).sum() + (w[3:6] * c2).sum()))
    table = P("table", (5, 3))
    ids = I("ids", (2, 3), "i64", values=[[1, 4, 1], [0, -1, 1]])
    c = I("c", (2, 3, 3))
    t.case("take", [table, ids, c], weighted("take(%table, %ids)"),
           lambda table, ids, c: (table[ids % 5] * c).sum())
    table = P("table", (2, 5, 3))
    ids = I("ids", (4,), "i32", values=[3, 3, 0, 2])
    c = I("c", (2, 4, 3))
    t.case("take_axis1", [table, ids, c],
           weighted("take(%table, %ids) {axis = 1}"),
           lambda table, ids, c: (torch.index_select(table, 1, ids) * c).sum())
    t.write()


# ---- Linear algebra -----------------------------------------------------------

def linalg():
    t = TestFile("matmul", "matmul with every transpose flag, batched, with "
                 "broadcast batch dims summed away")
    for ta in (False, True):
        for tb in (False, True):
            a = P("a", (4, 3) if ta else (3, 4))
            b = P("b", (5, 4) if tb else (4, 5))
            c = I("c", (3, 5))
            flags = ", ".join(n for n, f in (("transpose_a", ta),
                                             ("transpose_b", tb)) if f)
            attrs = f" {{{flags}}}" if flags else ""
            name = "matmul" + ("_ta" if ta else "") + ("_tb" if tb else "")

            def fn(a, b, c, ta=ta, tb=tb):
                A = a.transpose(-1, -2) if ta else a
                B = b.transpose(-1, -2) if tb else b
                return (A @ B * c).sum()
            t.case(name, [a, b, c], weighted(f"matmul(%a, %b){attrs}"), fn)
    a, b, c = P("a", (2, 3, 4)), P("b", (4, 5)), I("c", (2, 3, 5))
    t.case("matmul_batch_b", [a, b, c], weighted("matmul(%a, %b)"),
           lambda a, b, c: (a @ b * c).sum())
    a, b, c = P("a", (2, 2, 3, 4)), P("b", (5, 4)), I("c", (2, 2, 3, 5))
    t.case("matmul_batch_b_tb", [a, b, c],
           weighted("matmul(%a, %b) {transpose_b}"),
           lambda a, b, c: (a @ b.transpose(-1, -2) * c).sum())
    a, b, c = P("a", (2, 4, 3)), P("b", (4, 5)), I("c", (2, 3, 5))
    t.case("matmul_batch_b_ta", [a, b, c],
           weighted("matmul(%a, %b) {transpose_a}"),
           lambda a, b, c: (a.transpose(-1, -2) @ b * c).sum())
    a, b, c = P("a", (3, 4)), P("b", (2, 2, 5, 4)), I("c", (2, 2, 3, 5))
    t.case("matmul_batch_a_tb", [a, b, c],
           weighted("matmul(%a, %b) {transpose_b}"),
           lambda a, b, c: (a @ b.transpose(-1, -2) * c).sum())
    a, b, c = P("a", (2, 1, 3, 4)), P("b", (3, 5, 4)), I("c", (2, 3, 3, 5))
    t.case("matmul_broadcast_both", [a, b, c],
           weighted("matmul(%a, %b) {transpose_b}"),
           lambda a, b, c: (a @ b.transpose(-1, -2) * c).sum())
    a, b, c = P("a", (6, 8), "f32"), P("b", (8, 5), "f32"), I("c", (6, 5), "f32")
    t.case("matmul_f32", [a, b, c], weighted("matmul(%a, %b)"),
           lambda a, b, c: (a @ b * c).sum(), dt="f32")
    t.write()


# ---- Layers ------------------------------------------------------------------

def attention_ref(q, k, v, causal, scale):
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        lq, lk = s.shape[-2], s.shape[-1]
        mask = torch.ones(lq, lk, dtype=torch.bool).tril()
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v


def layers():
    t = TestFile("nn", "softmax, log_softmax, layer_norm, dropout, "
                 "attention, conv2d, pooling, batch_norm")
    for op, fn in (("softmax", torch.softmax),
                   ("log_softmax", torch.log_softmax)):
        for axis in (-1, 0):
            w, c = P("w", (3, 5)), I("c", (3, 5))
            attrs = "" if axis == -1 else f" {{axis = {axis}}}"
            t.case(f"{op}{'' if axis == -1 else '_axis0'}", [w, c],
                   weighted(f"{op}(%w){attrs}"),
                   lambda w, c, fn=fn, axis=axis: (fn(w, axis) * c).sum())
    for axis, shape in ((-1, (3, 6)), (1, (2, 3, 4))):
        x = P("x", shape)
        g, b = P("g", shape[axis:]), P("b", shape[axis:])
        c = I("c", shape)
        attrs = f" {{axis = {axis}, eps = 0.001}}"
        t.case(f"layer_norm{'' if axis == -1 else '_axis1'}", [x, g, b, c],
               weighted(f"layer_norm(%x, %g, %b){attrs}"),
               lambda x, g, b, c, axis=axis: (F.layer_norm(
                   x, x.shape[axis:], g, b, 0.001) * c).sum())
    # dropout: grad = c * keep / (1 - p)
    key, p = 1234, 0.3
    keep = torch.tensor(dropout_keep(key, p, 24).reshape(4, 6))
    w, c = P("w", (4, 6)), I("c", (4, 6))
    k = I("key", (), "i64", values=key)
    t.case("dropout", [w, k, c], weighted(f"dropout(%w, %key) {{p = {p}}}"),
           lambda w, key, c: (w * keep / (1 - p) * c).sum())
    for causal, scale in ((False, None), (True, 0.5)):
        q, kk, v = P("q", (2, 3, 4)), P("k", (2, 5, 4)), P("v", (2, 5, 3))
        c = I("c", (2, 3, 3))
        flags = ", ".join(x for x in (("causal" if causal else None),
                                      (f"scale = {scale}" if scale else None))
                          if x)
        attrs = f" {{{flags}}}" if flags else ""
        t.case("attention" + ("_causal" if causal else ""), [q, kk, v, c],
               weighted(f"scaled_dot_product_attention(%q, %k, %v){attrs}"),
               lambda q, k, v, c, causal=causal, scale=scale: (attention_ref(
                   q, k, v, causal, scale or 1 / math.sqrt(4)) * c).sum())
    convs = [("conv2d", (2, 3, 5, 5), (4, 3, 3, 3), {}),
             ("conv2d_strided", (1, 4, 7, 6), (6, 2, 3, 2),
              {"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1],
               "groups": 2})]
    for name, xs, ws, kw in convs:
        x, w = P("x", xs), P("w", ws)
        out = F.conv2d(torch.zeros(xs, dtype=torch.float64),
                       torch.zeros(ws, dtype=torch.float64), **kw)
        c = I("c", tuple(out.shape))
        attrs = ", ".join(f"{k} = {L(v) if isinstance(v, list) else v}"
                          for k, v in kw.items())
        attrs = f" {{{attrs}}}" if attrs else ""
        t.case(name, [x, w, c], weighted(f"conv2d(%x, %w){attrs}"),
               lambda x, w, c, kw=kw: (F.conv2d(x, w, **kw) * c).sum())
    pools = [("max_pool2d", {"kernel": [2, 2]}),
             ("max_pool2d_padded", {"kernel": [3, 2], "stride": [2, 1],
                                    "padding": [1, 1]}),
             ("avg_pool2d", {"kernel": [2, 2]}),
             ("avg_pool2d_padded", {"kernel": [3, 3], "stride": [2, 2],
                                    "padding": [1, 1]})]
    for name, kw in pools:
        op = name.split("_padded")[0]
        fn = F.max_pool2d if op == "max_pool2d" else F.avg_pool2d
        tk = {"kernel_size": kw["kernel"], "stride": kw.get("stride"),
              "padding": kw.get("padding", 0)}
        x = P("x", (2, 2, 5, 6))
        out = fn(torch.zeros(2, 2, 5, 6), **tk)
        c = I("c", tuple(out.shape))
        attrs = ", ".join(f"{k} = {L(v)}" for k, v in kw.items())
        t.case(name, [x, c], weighted(f"{op}(%x) {{{attrs}}}"),
               lambda x, c, fn=fn, tk=tk: (fn(x, **tk) * c).sum())
    # max_pool2d with ties: the first maximum in the window gets it all
    x = P("x", (1, 1, 2, 4), values=[[[[1.0, 1.0, 2.0, 0.0],
                                       [1.0, 0.0, 2.0, 2.0]]]])
    c = I("c", (1, 1, 1, 2))
    t.case("max_pool2d_ties", [x, c], weighted("max_pool2d(%x) {kernel = "
                                               "[2, 2]}"),
           lambda x, c: (F.max_pool2d(x, 2) * c).sum())
    for training in (True, False):
        x = P("x", (3, 2, 2, 2))
        g, b = P("g", (2,)), P("b", (2,))
        mean, var = I("mean", (2,)), I("var", (2,), lo=0.5, hi=2.0)
        c = I("c", (3, 2, 2, 2))
        attrs = " {eps = 0.001}" if training else \
            " {eps = 0.001, training = false}"
        t.case("batch_norm" + ("" if training else "_eval"),
               [x, g, b, mean, var, c],
               ["%y, %nm, %nv = batch_norm(%x, %g, %b, %mean, %var)" + attrs,
                "%z = mul(%y, %c)", "%l = sum(%z)"],
               lambda x, g, b, mean, var, c, training=training:
               (F.batch_norm(x, mean.clone(), var.clone(), g, b, training,
                             0.1, 0.001) * c).sum())
    t.write()


# ---- Losses and collectives ------------------------------------------------

def losses():
    t = TestFile("loss", "cross_entropy (reductions, ignore_index), "
                 "mse_loss, collectives over one rank")
    for red in ("mean", "sum", "none"):
        logits = P("logits", (4, 5))
        labels = I("labels", (4,), "i64", values=[1, -100, 4, 0])
        body = [f'%y = cross_entropy(%logits, %labels) {{reduction = "{red}"}}']
        args = [logits, labels]
        if red == "none":
            c = I("c", (4,))
            args.append(c)
            body += ["%z = mul(%y, %c)", "%l = sum(%z)"]

            def fn(logits, labels, c):
                return (F.cross_entropy(logits, labels, reduction="none") *
                        c).sum()
        else:
            body[-1] = body[-1].replace("%y =", "%l =")

            def fn(logits, labels, red=red):
                return F.cross_entropy(logits, labels, reduction=red)
        t.case(f"cross_entropy_{red}", args, body, fn)
    logits = P("logits", (2, 3, 4))
    labels = I("labels", (2, 3), "i32", values=[[0, 3, 2], [2, 2, 1]])
    t.case("cross_entropy_3d", [logits, labels],
           ["%l = cross_entropy(%logits, %labels) {ignore_index = 2}"],
           lambda logits, labels: F.cross_entropy(
               logits.reshape(-1, 4), labels.reshape(-1), ignore_index=2))
    for red in ("mean", "sum", "none"):
        a, b = P("a", (3, 4)), P("b", (3, 4))
        body = [f'%y = mse_loss(%a, %b) {{reduction = "{red}"}}']
        args = [a, b]
        if red == "none":
            args.append(I("c", (3, 4)))
            body += ["%z = mul(%y, %c)", "%l = sum(%z)"]

            def fn(a, b, c):
                return (F.mse_loss(a, b, reduction="none") * c).sum()
        else:
            body[-1] = body[-1].replace("%y =", "%l =")

            def fn(a, b, red=red):
                return F.mse_loss(a, b, reduction=red)
        t.case(f"mse_loss_{red}", args, body, fn)
    w, c = P("w", (4, 3)), I("c", (4, 3))
    t.case("collectives", [w, c],
           ["%r = all_reduce(%w)", '%m = all_reduce(%r) {op = "mean"}',
            "%s = reduce_scatter(%m) {axis = 1}",
            "%y = all_gather(%s) {axis = 1}", "%z = mul(%y, %c)",
            "%l = sum(%z)"],
           lambda w, c: (w * c).sum())
    t.write()


# ---- Whole models ----------------------------------------------------------

def models():
    t = TestFile("model", "small models end to end: an MLP with "
                 "cross_entropy (docs/LangRef.md's example), a call, a residual "
                 "block with layer_norm and gelu")
    x = I("x", (6, 5), "f32")
    labels = I("labels", (6,), "i64", values=[0, 2, 1, 3, 3, 0])
    w1, b1 = P("w1", (5, 4), "f32", -0.5, 0.5), P("b1", (4,), "f32", -0.1, 0.1)
    w2, b2 = P("w2", (4, 4), "f32", -0.5, 0.5), P("b2", (4,), "f32", -0.1, 0.1)
    t.case("mlp", [x, labels, w1, b1, w2, b2],
           ["%h = matmul(%x, %w1)", "%h1 = add(%h, %b1)", "%a = tanh(%h1)",
            "%o = matmul(%a, %w2)", "%logits = add(%o, %b2)",
            '%l = cross_entropy(%logits, %labels) {reduction = "mean"}'],
           lambda x, labels, w1, b1, w2, b2: F.cross_entropy(
               torch.tanh(x @ w1 + b1) @ w2 + b2, labels), dt="f32")
    x = I("x", (2, 3, 4))
    g, b = P("g", (4,)), P("b", (4,))
    w = P("w", (4, 4), lo=-0.5, hi=0.5)
    t.case("residual", [x, g, b, w],
           ["%n = layer_norm(%x, %g, %b)", "%h = matmul(%n, %w)",
            "%a = gelu(%h)", "%r = add(%x, %a)", "%s = mul(%r, %r)",
            "%l = mean(%s)"],
           lambda x, g, b, w: ((x + F.gelu(F.layer_norm(x, (4,), g, b) @ w))
                               ** 2).mean())
    t.write()


# ---- Training, step by step against torch.optim ------------------------------

def train():
    """autodiff + optimizer + raf-run --steps against PyTorch's autograd and
    torch.optim.Adam, loss by loss, from the same initial params."""
    steps, lr = 20, 0.05
    x = round_to(RNG.uniform(-1, 1, (8, 4)), "f32")
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    init = {"w1": round_to(RNG.normal(0, 0.5, (4, 16)), "f32"),
            "b1": np.zeros(16),
            "w2": round_to(RNG.normal(0, 0.5, (16, 3)), "f32"),
            "b2": np.zeros(3)}
    params = {k: torch.tensor(v, dtype=torch.float32, requires_grad=True)
              for k, v in init.items()}
    opt = torch.optim.Adam(params.values(), lr=lr)
    xt, lt = torch.tensor(x, dtype=torch.float32), torch.tensor(labels)
    losses = []
    for _ in range(steps):
        p = params
        h = F.gelu(xt @ p["w1"] + p["b1"])
        loss = F.cross_entropy(h @ p["w2"] + p["b2"], lt)
        losses.append(float(loss))
        opt.zero_grad()
        loss.backward()
        opt.step()
    flags = f"--input=x={fmt(x)} --input=labels={fmt(labels)} " + " ".join(
        f"--input={k}={fmt(v)}" for k, v in init.items())
    want = ",".join(repr(v) for v in losses)
    text = f"""// autodiff, training: @tiny_grad made by autodiff, @tiny_train_step by the
// optimizer pass (adam), run for {steps} steps by raf-run; every step's loss
// matches PyTorch's autograd and torch.optim.Adam from the same params.
// Generated by gen_grads.py.
// RUN: raf-opt --autodiff --optimizer="kind=adam lr={lr}" %s | raf-run - --function=tiny_train_step --steps={steps} {flags} --log=%t.jsonl
// RUN: %python -c "import json, sys; got = [json.loads(l)['loss'] for l in open(sys.argv[1])]; want = [{want}]; bad = [(i + 1, g, w) for i, (g, w) in enumerate(zip(got, want)) if abs(g - w) > 1e-5 + 1e-4 * abs(w)]; assert len(got) == len(want) and not bad, bad" %t.jsonl

func @tiny(%x: f32[8,4], %labels: i64[8],
           %w1: f32[4,16] {{param}}, %b1: f32[16] {{param}},
           %w2: f32[16,3] {{param}}, %b2: f32[3] {{param}}) -> f32[] {{
  %h = matmul(%x, %w1)
  %h1 = add(%h, %b1)
  %a = gelu(%h1)
  %o = matmul(%a, %w2)
  %logits = add(%o, %b2)
  %loss = cross_entropy(%logits, %labels)
  return %loss
}}
"""
    with open(os.path.join(HERE, "train.raf"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    unary()
    binary()
    reduce()
    shapes()
    linalg()
    layers()
    losses()
    models()
    train()
