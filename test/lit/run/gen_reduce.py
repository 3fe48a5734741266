#!/usr/bin/python3
"""Writes the raf-run lit tests of the reductions, softmax, layer_norm, the
losses and the collectives (test/lit/run/OP.raf).

Expected values come from NumPy in float64 (PyTorch, also in float64, for
softmax, log_softmax and cross_entropy), computed from the inputs as rounded
to the test's dtype and then rounded to the result's dtype, so each test
checks raf's kernels against an external reference. f16 and bf16 runs pass
looser tolerances, since raf computes them in float. The dtype tables,
the rounding and the writing of the files come from gencommon.py. Run it
again after changing the cases:
    /usr/bin/python3 test/lit/run/gen_reduce.py
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gencommon import FLOATS, INTS, NP, as_dtype  # noqa: E402
from gencommon import TestFile as _TestFile  # noqa: E402

# --atol and --rtol for runs whose results are f16 or bf16.
TOL = {"f16": 2e-3, "bf16": 2e-2}


class TestFile(_TestFile):
    generator = "gen_reduce.py"

    def case(self, name, args, results, body, tol=None, extra=""):
        """args: [(name, dtype, array)], results: [(dtype, array)]; tol
        defaults to TOL of the first result's dtype."""
        super().case(name, args, results, body,
                     tol or TOL.get(results[0][0]), extra)

    def error(self, name, prefix, args, results, body, message):
        """A run that fails at the last statement of body with message."""
        flags = self.flags(args, [])
        self.runs.append(f"// RUN: not raf-run %s --function={name} {flags} "
                         f"2>&1 | FileCheck %s --check-prefix={prefix}")
        check = (f"// {prefix}: {{{{.*}}}}{self.op}.raf:[[@LINE+1]]:3: "
                 f"error: {message}")
        self.func_of(name, args, results, body[:-2] + [check] + body[-2:])


RNG = np.random.default_rng(20240601)
# [2,3,4] test tensors: floats in eighths (exact in every float dtype) and
# integers that wrap when summed in i8 and u8.
XF = np.round(RNG.uniform(-4, 4, (2, 3, 4)) * 8) / 8
XI = RNG.integers(-100, 100, (2, 3, 4))
XU = RNG.integers(0, 250, (2, 3, 4))


def int_input(dt):
    return (XU if dt == "u8" else XI).astype(NP[dt])


# (attribute text, axes for NumPy, keepdims)
REDUCE_CASES = [
    ("", None, False),
    ("{axes = [1]}", (1,), False),
    ("{axes = [0, -1], keepdims}", (0, 2), True),
    ("{axes = [-1]}", (2,), False),
    ("{axes = [2, 0]}", (0, 2), False),
    ("{axes = [-3, -2, -1], keepdims}", (0, 1, 2), True),
    ("{axes = []}", (), False),
]


def reduce_ref(op, x, axes, keep, dt):
    if dt in INTS:
        with np.errstate(all="ignore"):
            wide = x.astype(np.int64)
            fn = {"sum": np.sum, "max": np.max, "min": np.min}[op]
            return fn(wide, axis=axes, keepdims=keep).astype(NP[dt])
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}[op]
    return as_dtype(fn(x, axis=axes, keepdims=keep), dt)


def reduce_tests():
    docs = {
        "sum": "the sum over axes (every axis when absent, none when empty), "
               "negative axes from the end, keepdims; integer sums wrap; f32 "
               "accumulates in double.",
        "mean": "the mean over axes (floats only); the mean of no elements "
                "is NaN.",
        "max": "the largest element over axes; NaN propagates.",
        "min": "the smallest element over axes; NaN propagates.",
    }
    for op, doc in docs.items():
        t = TestFile(op, doc)
        for dt in FLOATS + (INTS if op != "mean" else []):
            x = as_dtype(XF, dt) if dt in FLOATS else int_input(dt)
            body, results = [], []
            for i, (attrs, axes, keep) in enumerate(REDUCE_CASES):
                body.append(f"%r{i} = {op}(%x) {attrs}".rstrip())
                results.append((dt, reduce_ref(op, x, axes, keep, dt)))
            body.append("return " + ", ".join(f"%r{i}"
                                              for i in range(len(results))))
            t.case(f"{op}_{dt}", [("x", dt, x)], results, body)
        # A scalar reduces to itself.
        t.case(f"{op}_scalar", [("s", "f32", np.array(2.5))],
               [("f32", np.array(2.5))], [f"%r = {op}(%s)", "return %r"])
        if op == "sum":
            big = np.array([2 ** 62, 2 ** 62, 2 ** 62, 5], dtype=np.int64)
            with np.errstate(all="ignore"):
                want = np.sum(big)
            t.case("sum_i64_wraps", [("x", "i64", big)], [("i64", want)],
                   ["%r = sum(%x)", "return %r"])
            # Many small terms: f32 accumulates in double, so the sum of
            # 0.1 (as f32) 300 times is the exact sum rounded once.
            tenth = np.full((3, 100), 0.1, dtype=np.float32)
            exact = tenth.astype(np.float64).sum(axis=1).astype(np.float32)
            t.case("sum_f32_accurate", [("x", "f32", tenth)],
                   [("f32", exact)], ["%r = sum(%x) {axes = [1]}",
                                      "return %r"], tol="0")
            # Thread count: many independent outputs, bit-identical results.
            t.runs.append(
                "// RUN: %python -c \"import numpy as np; np.save('%t.x.npy', "
                "np.random.default_rng(1).standard_normal((20000, 7)).astype("
                "np.float32))\"")
            for n in (1, 3, 8):
                t.runs.append(f"// RUN: raf-run %s --function=sum_threads "
                              f"--input=x=@%t.x.npy --threads={n} "
                              f"--output=@%t.{n}.npy --output=@%t.{n}b.npy")
            t.runs.append("// RUN: cmp %t.1.npy %t.3.npy")
            t.runs.append("// RUN: cmp %t.1.npy %t.8.npy")
            t.runs.append("// RUN: cmp %t.1b.npy %t.8b.npy")
            t.func("sum_threads", [("x", "f32", (20000, 7))],
                   [("f32", (20000,)), ("f32", (7,))],
                   ["%r = sum(%x) {axes = [1]}", "%c = sum(%x) {axes = [0]}",
                    "return %r, %c"])
        if op in ("sum", "mean"):
            # Reducing an empty axis: sum 0, mean NaN (PyTorch).
            want = np.zeros(3) if op == "sum" else np.full(3, np.nan)
            t.case(f"{op}_empty", [("x", "f32", np.zeros((0, 3)))],
                   [("f32", want)], [f"%r = {op}(%x) {{axes = [0]}}",
                                     "return %r"])
        if op in ("max", "min"):
            x = np.array([[1.0, np.nan, 3.0], [-np.inf, -1.0, -2.0],
                          [np.nan, 5.0, -5.0]])
            fn = np.max if op == "max" else np.min
            for dt in ("f32", "bf16"):
                t.case(f"{op}_nan_{dt}", [("x", dt, x)],
                       [(dt, fn(x, axis=1)), (dt, fn(x, axis=0))],
                       [f"%r = {op}(%x) {{axes = [1]}}",
                        f"%c = {op}(%x) {{axes = [-2]}}", "return %r, %c"])
        t.write()


def argmax_tests():
    t = TestFile("argmax", "the index (i64) of the first largest element "
                 "along axis; NaN counts as the largest (the first NaN wins).")
    for dt in FLOATS + INTS:
        # Rounding to the dtype, and a copied row, make ties.
        x = as_dtype(XF, dt) if dt in FLOATS else int_input(dt)
        x = x.copy()
        x[1, 2] = x[1, 0]
        x[0, :, 3] = x[0, :, 1]
        body = ["%a = argmax(%x) {axis = 0}",
                "%b = argmax(%x) {axis = 1, keepdims}",
                "%c = argmax(%x) {axis = -1}",
                "%d = argmax(%x) {axis = -2}",
                "return %a, %b, %c, %d"]
        results = [("i64", np.argmax(x, axis=0)),
                   ("i64", np.argmax(x, axis=1)[:, None, :]),
                   ("i64", np.argmax(x, axis=2)),
                   ("i64", np.argmax(x, axis=1))]
        t.case(f"argmax_{dt}", [("x", dt, x)], results, body)
    x = np.array([[1.0, np.nan, 3.0, np.nan], [np.nan, 5.0, 7.0, 1.0],
                  [-np.inf, -np.inf, -np.inf, -np.inf], [2.0, 9.0, 9.0, 1.0]])
    for dt in ("f32", "f16"):
        t.case(f"argmax_nan_{dt}", [("x", dt, x)],
               [("i64", np.argmax(x, axis=1))],
               ["%r = argmax(%x) {axis = 1}", "return %r"])
    t.write()


def torch_softmax(x, axis, log):
    tx = torch.tensor(x, dtype=torch.float64)
    fn = torch.log_softmax if log else torch.softmax
    return fn(tx, dim=axis).numpy()


def softmax_tests():
    for op in ("softmax", "log_softmax"):
        log = op == "log_softmax"
        t = TestFile(op, ("log(softmax(x))" if log else "exp(x) / sum exp(x)")
                     + " along axis (default -1), stable: the row's maximum "
                     "is subtracted first.", "PyTorch")
        for dt in FLOATS:
            x = as_dtype(XF, dt)
            body = [f"%a = {op}(%x)", f"%b = {op}(%x) {{axis = 0}}",
                    f"%c = {op}(%x) {{axis = 1}}",
                    f"%d = {op}(%x) {{axis = -2}}",
                    "return %a, %b, %c, %d"]
            results = [(dt, as_dtype(torch_softmax(x, a, log), dt))
                       for a in (-1, 0, 1, -2)]
            t.case(f"{op}_{dt}", [("x", dt, x)], results, body)
        # Large logits do not overflow; -inf gets probability 0.
        x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1003.0],
                      [-np.inf, 0.0, 1.0]])
        for dt in ("f64", "f32"):
            t.case(f"{op}_stable_{dt}", [("x", dt, x)],
                   [(dt, as_dtype(torch_softmax(x, 1, log), dt))],
                   [f"%r = {op}(%x) {{axis = 1}}", "return %r"])
        # A NaN spoils its row only.
        x = np.array([[np.nan, 1.0], [1.0, 2.0]])
        t.case(f"{op}_nan", [("x", "f32", x)],
               [("f32", as_dtype(torch_softmax(x, 1, log), "f32"))],
               [f"%r = {op}(%x)", "return %r"])
        t.write()


def layer_norm_ref(x, g, b, axis, eps):
    dims = tuple(range(axis, x.ndim))
    mean = x.mean(axis=dims, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=dims, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def layer_norm_tests():
    t = TestFile("layer_norm", "(x - mean) / sqrt(var + eps) * gamma + beta "
                 "over the dims from axis to the last (ONNX), biased "
                 "variance.")
    g4 = np.array([1.0, 0.5, -2.0, 1.5])
    b4 = np.array([0.25, 0.0, -1.0, 0.5])
    g34 = np.round(RNG.uniform(-2, 2, (3, 4)) * 8) / 8
    b34 = np.round(RNG.uniform(-1, 1, (3, 4)) * 8) / 8
    for dt in FLOATS:
        x, ga, ba, gb, bb = (as_dtype(v, dt) for v in (XF, g4, b4, g34, b34))
        gc, bc = (as_dtype(v, dt) for v in (XF[::-1] * 0.5, XF * 0.25))
        body = ["%a = layer_norm(%x, %g, %b)",
                "%c = layer_norm(%x, %g2, %b2) {axis = 1, eps = 0.001}",
                "%d = layer_norm(%x, %g2, %b2) {axis = -2}",
                "%e = layer_norm(%x, %g3, %b3) {axis = 0, eps = 0.5}",
                "return %a, %c, %d, %e"]
        results = [(dt, as_dtype(layer_norm_ref(x, ga, ba, 2, 1e-5), dt)),
                   (dt, as_dtype(layer_norm_ref(x, gb, bb, 1, 1e-3), dt)),
                   (dt, as_dtype(layer_norm_ref(x, gb, bb, 1, 1e-5), dt)),
                   (dt, as_dtype(layer_norm_ref(x, gc, bc, 0, 0.5), dt))]
        t.case(f"layer_norm_{dt}",
               [("x", dt, x), ("g", dt, ga), ("b", dt, ba), ("g2", dt, gb),
                ("b2", dt, bb), ("g3", dt, gc), ("b3", dt, bc)],
               results, body)
    # A constant row has variance 0: y = beta.
    x = np.full((2, 4), 3.0)
    t.case("layer_norm_constant", [("x", "f32", x), ("g", "f32", g4),
                                   ("b", "f32", b4)],
           [("f32", layer_norm_ref(x, g4, b4, 1, 1e-5))],
           ["%r = layer_norm(%x, %g, %b)", "return %r"])
    t.write()


def torch_ce(logits, labels, reduction, ignore):
    c = logits.shape[-1]
    tl = torch.tensor(logits.reshape(-1, c), dtype=torch.float64)
    ty_ = torch.tensor(np.asarray(labels, dtype=np.int64).reshape(-1))
    r = torch.nn.functional.cross_entropy(tl, ty_, reduction=reduction,
                                          ignore_index=ignore).numpy()
    return r.reshape(np.shape(labels)) if reduction == "none" else r


def cross_entropy_tests():
    t = TestFile("cross_entropy", "logsumexp(logits) - logits[label] over "
                 "the last axis, reduction mean | sum | none, ignore_index "
                 "rows give 0 and do not count in the mean; a label out of "
                 "range is a located error.", "PyTorch")
    logits = np.round(RNG.uniform(-3, 3, (5, 4)) * 8) / 8
    labels = np.array([0, 3, -100, 1, 2])
    body = ["%m = cross_entropy(%x, %l)",
            "%s = cross_entropy(%x, %l) {reduction = \"sum\"}",
            "%n = cross_entropy(%x, %l) {reduction = \"none\"}",
            "return %m, %s, %n"]
    for dt in FLOATS:
        x = as_dtype(logits, dt)
        results = [(dt, as_dtype(torch_ce(x, labels, r, -100), dt))
                   for r in ("mean", "sum", "none")]
        t.case(f"ce_{dt}", [("x", dt, x), ("l", "i64", labels)], results,
               body)
    # Labels of every integer type; u8 cannot hold -100, so none is ignored.
    for ldt in ("i32", "i8", "u8"):
        lab = labels if ldt != "u8" else np.array([0, 3, 2, 1, 2])
        results = [("f32", as_dtype(torch_ce(logits, lab, r, -100), "f32"))
                   for r in ("mean", "sum", "none")]
        t.case(f"ce_labels_{ldt}", [("x", "f32", logits),
                                    ("l", ldt, lab.astype(NP[ldt]))],
               results, body)
    # An ignore_index inside [0, C) ignores that class.
    lab = np.array([0, 1, 2, 1, 3])
    t.case("ce_ignore_class", [("x", "f64", logits), ("l", "i64", lab)],
           [("f64", torch_ce(logits, lab, r, 1)) for r in ("mean", "none")],
           ["%m = cross_entropy(%x, %l) {ignore_index = 1}",
            "%n = cross_entropy(%x, %l) {reduction = \"none\", "
            "ignore_index = 1}", "return %m, %n"])
    # Logits [C] with a scalar label, and [N, d, C] with labels [N, d].
    t.case("ce_vector", [("x", "f32", logits[1]), ("l", "i64", np.array(2))],
           [("f32", as_dtype(torch_ce(logits[1], np.array(2), r, -100),
                             "f32")) for r in ("mean", "none")],
           ["%m = cross_entropy(%x, %l)",
            "%n = cross_entropy(%x, %l) {reduction = \"none\"}",
            "return %m, %n"])
    x3 = np.round(RNG.uniform(-3, 3, (2, 3, 4)) * 8) / 8
    l3 = np.array([[0, 1, 2], [3, -100, 0]])
    t.case("ce_rank3", [("x", "f32", x3), ("l", "i32", l3.astype(np.int32))],
           [("f32", as_dtype(torch_ce(x3, l3, r, -100), "f32"))
            for r in ("mean", "none")],
           ["%m = cross_entropy(%x, %l)",
            "%n = cross_entropy(%x, %l) {reduction = \"none\"}",
            "return %m, %n"])
    # Stable for large logits.
    big = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -998.0, -1003.0]])
    lb = np.array([1, 2])
    t.case("ce_large", [("x", "f32", big), ("l", "i64", lb)],
           [("f32", as_dtype(torch_ce(big, lb, "none", -100), "f32"))],
           ["%n = cross_entropy(%x, %l) {reduction = \"none\"}",
            "return %n"])
    # Every row ignored: the mean is NaN, the sum 0 (PyTorch).
    lab = np.array([-100, -100])
    t.case("ce_all_ignored", [("x", "f32", logits[:2]), ("l", "i64", lab)],
           [("f32", torch_ce(logits[:2], lab, r, -100))
            for r in ("mean", "sum")],
           ["%m = cross_entropy(%x, %l)",
            "%s = cross_entropy(%x, %l) {reduction = \"sum\"}",
            "return %m, %s"])
    # Labels out of range, not ignore_index, are located errors.
    t.error("ce_bad_label", "BAD", [("x", "f32", logits[:3]),
                                    ("l", "i64", np.array([0, 4, 9]))],
            [("f32", np.array(0.0))],
            ["%m = cross_entropy(%x, %l)", "return %m"],
            "cross_entropy: label 4 at [1] is out of range for 4 classes "
            "(and is not ignore_index = -100)")
    t.error("ce_negative_label", "NEG", [("x", "f32", logits[0]),
                                        ("l", "i8", np.array(-1, np.int8))],
            [("f32", np.array(0.0))],
            ["%m = cross_entropy(%x, %l) {ignore_index = -2}", "return %m"],
            "cross_entropy: label -1 is out of range for 4 classes "
            "(and is not ignore_index = -2)")
    t.write()


def mse_tests():
    t = TestFile("mse_loss", "(a - b)^2 per element (reduction none), "
                 "summed, or averaged (mean, the default).")
    a = np.round(RNG.uniform(-3, 3, (2, 3)) * 8) / 8
    b = np.round(RNG.uniform(-3, 3, (2, 3)) * 8) / 8
    for dt in FLOATS:
        x, y = as_dtype(a, dt), as_dtype(b, dt)
        sq = (x - y) ** 2
        t.case(f"mse_{dt}", [("a", dt, x), ("b", dt, y)],
               [(dt, as_dtype(sq.mean(), dt)), (dt, as_dtype(sq.sum(), dt)),
                (dt, as_dtype(sq, dt))],
               ["%m = mse_loss(%a, %b)",
                "%s = mse_loss(%a, %b) {reduction = \"sum\"}",
                "%n = mse_loss(%a, %b) {reduction = \"none\"}",
                "return %m, %s, %n"])
    t.case("mse_scalar", [("a", "f32", np.array(1.5)),
                          ("b", "f32", np.array(-0.5))],
           [("f32", np.array(4.0)), ("f32", np.array(4.0))],
           ["%m = mse_loss(%a, %b)",
            "%n = mse_loss(%a, %b) {reduction = \"none\"}", "return %m, %n"])
    t.write()


def collective_tests():
    docs = {
        "all_reduce": "the sum or mean over the ranks; with world_size = 1 "
                      "(one process) the identity.",
        "reduce_scatter": "the reduction over the ranks, scattered along "
                          "axis; with world_size = 1 the identity.",
        "all_gather": "the ranks' tensors concatenated along axis; with "
                      "world_size = 1 the identity.",
    }
    for op, doc in docs.items():
        t = TestFile(op, doc + " A world_size above 1 outside an MPI job is "
                     "a located error that says to run it under mpirun "
                     "(test/dist runs it there).")
        dts = FLOATS + INTS + (["bool"] if op == "all_gather" else [])
        for dt in dts:
            if dt == "bool":
                x = XI[0] > 0
            else:
                x = as_dtype(XF[0], dt) if dt in FLOATS else int_input(dt)[0]
            body = [f"%a = {op}(%x)",
                    f"%b = {op}(%x) {{op = \"mean\", axis = 1, "
                    f"world_size = 1}}",
                    f"%c = {op}(%x) {{axis = -1}}", "return %a, %b, %c"]
            t.case(f"{op}_{dt}", [("x", dt, x)], [(dt, x)] * 3, body)
        shape = (4, 2)
        want = {"all_reduce": "all_reduce: world_size = 2",
                "reduce_scatter": "reduce_scatter: world_size = 2",
                "all_gather": "all_gather: world_size = 2"}[op]
        out = {"all_reduce": (4, 2), "reduce_scatter": (2, 2),
               "all_gather": (8, 2)}[op]
        t.error(f"{op}_world2", "WORLD", [("x", "f32", np.zeros(shape))],
                [("f32", np.zeros(out))],
                [f"%r = {op}(%x) {{world_size = 2}}", "return %r"],
                want + "{{.*}}mpirun")
        t.write()


reduce_tests()
argmax_tests()
softmax_tests()
layer_norm_tests()
cross_entropy_tests()
mse_tests()
collective_tests()
