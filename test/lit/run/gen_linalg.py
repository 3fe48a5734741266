#!/usr/bin/python3
"""Writes the raf-run lit tests of matmul and scaled_dot_product_attention
(test/lit/run/matmul.raf, test/lit/run/scaled_dot_product_attention.raf).

Expected values come from NumPy: float64 math on the inputs as rounded to
the test's dtype, rounded to the result's dtype; integers exactly (Python
ints), wrapped to the dtype's width. Attention follows PyTorch's
scaled_dot_product_attention (is_causal: the top-left aligned tril mask;
scale 1/sqrt(D) by default). Every case runs through cpu-ref, and the
matmul cases in f64, f32 and bf16 also through cblas. The dtype tables,
the rounding and the writing of the files come from gencommon.py. Run it
again after changing the cases:
    /usr/bin/python3 test/lit/run/gen_linalg.py
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gencommon import FLOATS, INTS, round_to  # noqa: E402
from gencommon import TestFile as _TestFile  # noqa: E402

CBLAS = ["f64", "f32", "bf16"]
BITS = {"i64": 64, "i32": 32, "i8": 8, "u8": 8}


def wrap(x, dt):
    """Python ints wrapped to an integer dtype's width."""
    bits, x = BITS[dt], np.asarray(x, dtype=object)
    out = []
    for v in x.ravel():
        v = int(v) % (1 << bits)
        if dt != "u8" and v >> (bits - 1):
            v -= 1 << bits
        out.append(v)
    return np.array(out, dtype=object).reshape(x.shape)


class TestFile(_TestFile):
    generator = "gen_linalg.py"

    def case(self, name, args, results, body, dialects):
        """args: [(name, dtype, array)], results: [(dtype, array)]; one RUN
        line per entry of dialects."""
        flags = self.flags(args, results)
        for d in dialects:
            self.runs.append(f"// RUN: raf-run %s --function={name} "
                             f"--dialects={d} {flags} | FileCheck %s")
        self.func_of(name, args, results, body)


def dialects_for(dt):
    return ["cpu-ref", "cblas,cpu-ref"] if dt in CBLAS else ["cpu-ref"]


def T(x):
    """Swaps the last two dims (what transpose_a/b undo)."""
    return np.swapaxes(x, -1, -2)


# ---- matmul ------------------------------------------------------------------

# Each case: (name, a shape, b shape, transpose_a, transpose_b), shapes as
# stored. Batch dims broadcast NumPy style.
MATMUL_CASES = [
    ("plain", (3, 4), (4, 2), False, False),
    ("ta", (4, 3), (4, 2), True, False),
    ("tb", (3, 4), (2, 4), False, True),
    ("tab", (4, 3), (2, 4), True, True),
    # a [2,1,2,3] with b [3,3,2]: batch [2,1] x [3] -> [2,3]
    ("bcast", (2, 1, 2, 3), (3, 3, 2), False, False),
    # a rank 2 against a batched b, b transposed
    ("bcast_a2", (2, 3), (2, 4, 3), False, True),
    # a batched and transposed, b rank 2: cblas folds nothing here
    ("bcast_ta", (2, 3, 2), (3, 4), True, False),
    # a batched, b shared: cblas folds the batch into the rows
    ("fold", (2, 2, 3), (3, 2), False, False),
]


def matmul_tests():
    t = TestFile("matmul", "matmul(a, b) {transpose_a, transpose_b} over the "
                 "last two dims, batch dims broadcast (NumPy); integers wrap; "
                 "f16/bf16 accumulate in f32; cblas for f64/f32/bf16.")
    rng = np.random.default_rng(7)
    for dt in FLOATS + INTS:
        args, results, body = [], [], []
        for i, (case, sa, sb, ta, tb) in enumerate(MATMUL_CASES):
            if dt in FLOATS:
                a = round_to(rng.uniform(-2, 2, sa), dt)
                b = round_to(rng.uniform(-2, 2, sb), dt)
                r = round_to(np.matmul(T(a) if ta else a, T(b) if tb else b), dt)
            else:
                bits = BITS[dt]
                lo, hi = (0, 255) if dt == "u8" else (-(1 << (bits - 1)),
                                                      (1 << (bits - 1)) - 1)
                a = np.array([int(v) for v in rng.integers(lo, hi, sa, endpoint=True).ravel()],
                             dtype=object).reshape(sa)
                b = np.array([int(v) for v in rng.integers(lo, hi, sb, endpoint=True).ravel()],
                             dtype=object).reshape(sb)
                r = wrap(np.matmul(T(a) if ta else a, T(b) if tb else b), dt)
            args += [(f"a{i}", dt, a), (f"b{i}", dt, b)]
            results.append((dt, r))
            flags = [f for f, on in (("transpose_a", ta), ("transpose_b", tb)) if on]
            attrs = " {" + ", ".join(flags) + "}" if flags else ""
            body.append(f"%{case} = matmul(%a{i}, %b{i}){attrs}")
        body.append("return " + ", ".join(f"%{c[0]}" for c in MATMUL_CASES))
        t.case(f"matmul_{dt}", args, results, body, dialects_for(dt))

    # K = 0: an empty sum, zeros.
    for dt in ("f32", "i32"):
        t.case(f"empty_k_{dt}", [("a", dt, np.zeros((2, 0))),
                                 ("b", dt, np.zeros((0, 3)))],
               [(dt, np.zeros((2, 3), dtype=np.int64))],
               ["%r = matmul(%a, %b)", "return %r"], dialects_for(dt))
    # M = 0 and an empty batch: empty results.
    t.case("empty_m", [("a", "f32", np.zeros((0, 2))),
                       ("b", "f32", np.ones((2, 3)))],
           [("f32", np.zeros((0, 3)))], ["%r = matmul(%a, %b)", "return %r"],
           dialects_for("f32"))
    t.case("empty_batch", [("a", "f64", np.zeros((0, 2, 2))),
                           ("b", "f64", np.ones((2, 3)))],
           [("f64", np.zeros((0, 2, 3)))], ["%r = matmul(%a, %b)", "return %r"],
           dialects_for("f64"))
    # inf * 0 is NaN, and NaN propagates through the sum.
    a = np.array([[np.inf, 1.0], [1.0, 2.0]])
    b = np.array([[0.0, 1.0], [1.0, np.nan]])
    with np.errstate(invalid="ignore"):
        r = a @ b
    for dt in CBLAS:
        t.case(f"nonfinite_{dt}", [("a", dt, a), ("b", dt, b)], [(dt, r)],
               ["%r = matmul(%a, %b)", "return %r"], dialects_for(dt))
    # Rows longer than one column tile of cpu-ref (256): [2,3] x [3,300].
    a = round_to(rng.uniform(-1, 1, (2, 3)), "f32")
    b = round_to(rng.uniform(-1, 1, (3, 300)), "f32")
    t.case("wide", [("a", "f32", a), ("b", "f32", b)],
           [("f32", round_to(a @ b, "f32"))],
           ["%r = matmul(%a, %b)", "return %r"], dialects_for("f32"))
    t.write()


# ---- scaled_dot_product_attention --------------------------------------------

def attention(q, k, v, causal, scale):
    """PyTorch's scaled_dot_product_attention in float64."""
    lq, lk = q.shape[-2], k.shape[-2]
    if scale is None:
        scale = 1 / math.sqrt(q.shape[-1])
    s = np.matmul(q, T(k)) * scale
    if causal:
        s = np.where(np.tril(np.ones((lq, lk), dtype=bool)), s, -np.inf)
    if lk == 0:
        return np.zeros(q.shape[:-1] + (v.shape[-1],))
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.matmul(p, v)


# (name, q shape, k shape, v shape): [batch.., heads, seq, dim].
ATTENTION_SHAPES = [
    ("bh", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)),  # Lq < Lk
    ("long_q", (2, 4, 2), (2, 2, 2), (2, 2, 3)),       # Lq > Lk, rank 3
    ("square", (1, 4, 3), (1, 4, 3), (1, 4, 2)),
]


def attention_tests():
    t = TestFile("scaled_dot_product_attention",
                 "softmax(scale * q @ k^T) @ v over [batch.., heads, seq, "
                 "dim], PyTorch semantics: causal keeps keys j <= i (top-left "
                 "aligned when Lq != Lk), scale defaults to 1/sqrt(dim); "
                 "f16/bf16 compute in f32.")
    rng = np.random.default_rng(11)
    for dt in FLOATS:
        for name, sq, sk, sv in ATTENTION_SHAPES:
            q = round_to(rng.uniform(-2, 2, sq), dt)
            k = round_to(rng.uniform(-2, 2, sk), dt)
            v = round_to(rng.uniform(-2, 2, sv), dt)
            variants = [("plain", False, None), ("causal", True, None),
                        ("scaled", False, 0.75), ("causal_scaled", True, 0.75)]
            results, body = [], []
            for vn, causal, scale in variants:
                attrs = []
                if causal:
                    attrs.append("causal")
                if scale is not None:
                    attrs.append(f"scale = {scale}")
                attrs = " {" + ", ".join(attrs) + "}" if attrs else ""
                body.append(f"%{vn} = scaled_dot_product_attention(%q, %k, %v){attrs}")
                results.append((dt, round_to(attention(q, k, v, causal, scale), dt)))
            body.append("return " + ", ".join(f"%{v[0]}" for v in variants))
            t.case(f"{name}_{dt}", [("q", dt, q), ("k", dt, k), ("v", dt, v)],
                   results, body, ["cpu-ref"])
    # Large scores: the softmax subtracts the row's maximum, so exp never
    # overflows (naive exp(800) is inf).
    q = np.array([[[10.0, 20.0], [-30.0, 40.0]]])
    k = np.array([[[40.0, 0.0], [0.0, 40.0], [-40.0, 10.0]]])
    v = np.array([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]])
    t.case("stable_f32", [("q", "f32", q), ("k", "f32", k), ("v", "f32", v)],
           [("f32", round_to(attention(q, k, v, False, None), "f32"))],
           ["%r = scaled_dot_product_attention(%q, %k, %v)", "return %r"],
           ["cpu-ref"])
    # No keys: every row is an empty sum, zeros.
    t.case("no_keys", [("q", "f32", np.ones((1, 2, 2))),
                       ("k", "f32", np.zeros((1, 0, 2))),
                       ("v", "f32", np.zeros((1, 0, 3)))],
           [("f32", np.zeros((1, 2, 3)))],
           ["%r = scaled_dot_product_attention(%q, %k, %v) {causal}",
            "return %r"], ["cpu-ref"])
    # A NaN in one key poisons every row that attends it (row 0 does not
    # under the causal mask).
    q = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    k = np.array([[[1.0, 1.0], [np.nan, 1.0]]])
    v = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    t.case("nan_key", [("q", "f64", q), ("k", "f64", k), ("v", "f64", v)],
           [("f64", attention(q, k, v, True, None))],
           ["%r = scaled_dot_product_attention(%q, %k, %v) {causal}",
            "return %r"], ["cpu-ref"])
    t.write()


if __name__ == "__main__":
    matmul_tests()
    attention_tests()
