#!/usr/bin/python3
"""Writes the raf-run lit tests of the elementwise ops (test/lit/run/OP.raf).

Expected values come from NumPy (float64 math, rounded to the result's
dtype), so each test checks raf's kernels against an external reference.
The dtype tables, the rounding and the writing of the files come from
gencommon.py. Run it again after changing the cases:
    /usr/bin/python3 test/lit/run/gen_elementwise.py
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gencommon import FLOATS, INTS, NP, as_dtype  # noqa: E402
from gencommon import TestFile as _TestFile  # noqa: E402


class TestFile(_TestFile):
    generator = "gen_elementwise.py"


def erf(x):
    return np.vectorize(math.erf)(x)


UNARY = {
    "neg": (lambda x: -x, "negation"),
    "abs": (np.abs, "absolute value"),
    "exp": (np.exp, "e ** x"),
    "log": (np.log, "natural logarithm (NaN below 0, -inf at 0)"),
    "sqrt": (np.sqrt, "square root (NaN below 0)"),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "1 / sqrt(x)"),
    "tanh": (np.tanh, "hyperbolic tangent"),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "1 / (1 + exp(-x))"),
    "relu": (lambda x: np.where(x < 0, 0, x), "max(x, 0), NaN kept"),
    "erf": (erf, "the error function"),
    "cos": (np.cos, "cosine"),
    "sin": (np.sin, "sine"),
}
X = np.array([-2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.5]).reshape(2, 4)
XI = np.array([-100, -3, -1, 0, 1, 2, 7, 120]).reshape(2, 4)


def unary_tests():
    for op, (fn, doc) in UNARY.items():
        t = TestFile(op, doc + "; f16/bf16 compute in f32.")
        with np.errstate(all="ignore"):
            for dt in FLOATS:
                x = as_dtype(X, dt).astype(np.float64)
                t.case(f"{op}_{dt}", [("x", dt, x)],
                       [(dt, as_dtype(fn(x), dt))], [f"%r = {op}(%x)",
                                                     "return %r"])
            if op == "relu":
                t.case("relu_nan", [("x", "f32", np.array([np.nan, -1.0]))],
                       [("f32", np.array([np.nan, 0.0]))],
                       ["%r = relu(%x)", "return %r"])
        if op in ("neg", "abs", "relu"):
            for dt in INTS:
                x = XI.astype(NP[dt])
                with np.errstate(all="ignore"):
                    r = fn(x.astype(np.int64)).astype(NP[dt])
                t.case(f"{op}_{dt}", [("x", dt, x)], [(dt, r)],
                       [f"%r = {op}(%x)", "return %r"])
        t.write()
    t = TestFile("gelu", "x * Phi(x) (approximate = \"none\") or PyTorch's "
                 "tanh form (approximate = \"tanh\").")
    for dt in FLOATS:
        x = as_dtype(X, dt).astype(np.float64)
        exact = 0.5 * x * (1 + erf(x / math.sqrt(2)))
        approx = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                        (x + 0.044715 * x ** 3)))
        t.case(f"gelu_{dt}", [("x", dt, x)],
               [(dt, as_dtype(exact, dt)), (dt, as_dtype(approx, dt))],
               ["%a = gelu(%x)", "%b = gelu(%x) {approximate = \"tanh\"}",
                "return %a, %b"])
    t.write()


BINARY = {
    "add": (np.add, "a + b"), "sub": (np.subtract, "a - b"),
    "mul": (np.multiply, "a * b"), "div": (np.divide, "a / b (floats only)"),
    "pow": (np.power, "a ** b"),
    "maximum": (np.maximum, "the larger, NaN propagated"),
    "minimum": (np.minimum, "the smaller, NaN propagated"),
}
A = np.array([[1.5, -2.0, 3.0], [0.25, 4.0, -0.5]])
B = np.array([2.0, 0.5, -1.0])
AI = np.array([[100, -7, 3], [0, 12, -128]])
BI = np.array([100, 2, 3])


def binary_tests():
    for op, (fn, doc) in BINARY.items():
        t = TestFile(op, doc + ", with NumPy broadcasting ([2,3] with [3] "
                     "and with a scalar).")
        for dt in FLOATS:
            a = as_dtype(A if op != "pow" else np.abs(A), dt).astype(np.float64)
            b = as_dtype(B, dt).astype(np.float64)
            s = np.float64(as_dtype(np.array(0.75), dt))
            t.case(f"{op}_{dt}", [("a", dt, a), ("b", dt, b), ("s", dt, s)],
                   [(dt, as_dtype(fn(a, b), dt)), (dt, as_dtype(fn(s, a), dt))],
                   [f"%r = {op}(%a, %b)", f"%q = {op}(%s, %a)",
                    "return %r, %q"])
        if op in ("maximum", "minimum"):
            a = np.array([np.nan, 1.0, 2.0])
            b = np.array([0.0, np.nan, 3.0])
            t.case(f"{op}_nan", [("a", "f32", a), ("b", "f32", b)],
                   [("f32", fn(a, b))], [f"%r = {op}(%a, %b)", "return %r"])
        if op != "div":
            for dt in INTS:
                a = AI.astype(NP[dt]) if dt != "u8" else np.abs(AI).astype(np.uint8)
                b = BI.astype(NP[dt])
                with np.errstate(all="ignore"):
                    r = fn(a.astype(np.int64), b.astype(np.int64)).astype(NP[dt])
                t.case(f"{op}_{dt}", [("a", dt, a), ("b", dt, b)], [(dt, r)],
                       [f"%r = {op}(%a, %b)", "return %r"])
        t.write()


COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
           "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def compare_tests():
    for op, fn in COMPARE.items():
        t = TestFile(op, "elementwise comparison with broadcasting; the "
                     "result is bool; NaN compares unequal to everything.")
        a = np.array([[1.0, np.nan, 3.0], [2.0, 2.0, -1.0]])
        b = np.array([1.0, 2.0, 2.0])
        for dt in FLOATS:
            t.case(f"{op}_{dt}", [("a", dt, a), ("b", dt, b)],
                   [("bool", fn(a, b))], [f"%r = {op}(%a, %b)", "return %r"])
        for dt in INTS:
            ai = np.array([[1, 0, 3], [2, 2, 5]]).astype(NP[dt])
            bi = np.array([1, 2, 2]).astype(NP[dt])
            t.case(f"{op}_{dt}", [("a", dt, ai), ("b", dt, bi)],
                   [("bool", fn(ai, bi))], [f"%r = {op}(%a, %b)", "return %r"])
        if op in ("eq", "ne"):
            ab = np.array([True, False, True, False])
            bb = np.array([True, True, False, False])
            t.case(f"{op}_bool", [("a", "bool", ab), ("b", "bool", bb)],
                   [("bool", fn(ab, bb))], [f"%r = {op}(%a, %b)", "return %r"])
        t.write()


def where_tests():
    t = TestFile("where", "where(cond, a, b) picks a where cond holds, with "
                 "broadcasting of all three.")
    c = np.array([[True, False, True], [False, False, True]])
    for dt in FLOATS + INTS + ["bool"]:
        a = (np.array([[1, 2, 3], [4, 5, 6]]) % 2 == 0 if dt == "bool"
             else np.array([[1, 2, 3], [4, 5, 6]]).astype(NP.get(dt, np.float64)))
        b = np.array(dt != "bool" and 9 or False)
        b = b.astype(a.dtype)
        t.case(f"where_{dt}", [("c", "bool", c), ("a", dt, a), ("b", dt, b)],
               [(dt, np.where(c, a, b))], ["%r = where(%c, %a, %b)", "return %r"])
    t.write()


def cast_tests():
    t = TestFile("cast", "conversion between element types: floats to "
                 "integers truncate toward zero, integers wrap, anything "
                 "to bool is != 0.")
    # The input is f32, so the expected values start from its f32 rounding.
    src = np.array([-2.7, -0.5, 0.0, 0.5, 1.9, 100.25], dtype=np.float32).astype(np.float64)
    for to in FLOATS + ["i64", "i32", "i8", "bool"]:
        if to == "bool":
            r = src != 0
        elif to in FLOATS:
            r = as_dtype(src, to)
        else:
            r = np.trunc(src).astype(np.int64).astype(NP[to])
        t.case(f"f32_to_{to}", [("x", "f32", src)], [(to, r)],
               [f"%r = cast(%x) {{dtype = {to}}}", "return %r"])
    ints = np.array([-129, -1, 0, 1, 255, 300])
    for to in ["i8", "u8", "f16", "bf16", "bool"]:
        if to == "bool":
            r = ints != 0
        elif to in ("f16", "bf16"):
            r = as_dtype(ints.astype(np.float64), to)
        else:
            r = ints.astype(np.int64).astype(NP[to])
        t.case(f"i64_to_{to}", [("x", "i64", ints)], [(to, r)],
               [f"%r = cast(%x) {{dtype = {to}}}", "return %r"])
    bools = np.array([True, False, True])
    t.case("bool_to_f64", [("x", "bool", bools)], [("f64", bools.astype(float))],
           ["%r = cast(%x) {dtype = f64}", "return %r"])
    t.write()


def misc_tests():
    t = TestFile("constant", "scalar, splat and dense constants of every "
                 "dtype materialise their data.")
    t.case("dense", [], [("f32", np.array([[1.0, 2.0], [3.0, 4.5]])),
                         ("i8", np.array([-1, 2, 3])),
                         ("bool", np.array([True, False]))],
           ["%a = constant [[1, 2], [3, 4.5]] : f32[2,2]",
            "%b = constant [-1, 2, 3] : i8[3]",
            "%c = constant [true, false] : bool[2]",
            "return %a, %b, %c"])
    t.case("splat", [], [("f16", np.full((2, 3), 0.5)),
                         ("bf16", np.full((4,), -2.0)),
                         ("u8", np.full((2,), 7)),
                         ("f64", np.array(3.25))],
           ["%a = constant 0.5 : f16[2,3]", "%b = constant -2 : bf16[4]",
            "%c = constant 7 : u8[2]", "%d = constant 3.25 : f64[]",
            "return %a, %b, %c, %d"])
    t.write()
    t = TestFile("stop_gradient", "the identity on values (autodiff treats it "
                 "as a constant).")
    for dt in ["f32", "i32", "bool"]:
        x = np.array([1, 0, 1]).astype(NP[dt])
        t.case(f"stop_gradient_{dt}", [("x", dt, x)], [(dt, x)],
               ["%r = stop_gradient(%x)", "return %r"])
    t.write()


unary_tests()
binary_tests()
compare_tests()
where_tests()
cast_tests()
misc_tests()
