#!/usr/bin/python3
"""Writes the raf-run lit tests of the shape ops (test/lit/run/OP.raf for
reshape, transpose, broadcast_to, slice, concat, split and take).

These ops move elements without changing them, so every case runs in every
dtype (f64 f32 f16 bf16 i64 i32 i8 u8 bool) on values each dtype holds
exactly, and the expected values are NumPy's results on the same values
(reshape, transpose, broadcast_to, basic slicing, concatenate, split, take).
The dtype table and the writing of the files (its checks' @LINE<statement>
included) come from gencommon.py. Run it again after changing the cases:
    /usr/bin/python3 test/lit/run/gen_shape.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gencommon import DTYPES, fmt, ints  # noqa: E402
from gencommon import TestFile as _TestFile  # noqa: E402


class TestFile(_TestFile):
    generator = "gen_shape.py"


def values(dt, shape, salt=0):
    """Distinct-looking values of shape that dtype dt holds exactly: halves
    for the floats, small signed integers (non-negative for u8), a pattern
    for bool."""
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.int64) * 7 + salt
    if dt == "bool":
        v = i % 3 == 0
    elif dt == "u8":
        v = i % 251
    elif dt in ("i64", "i32", "i8"):
        v = i % 200 - 100
    else:
        v = (i % 61 - 30) * 0.5
    return v.reshape(shape)


def reshape_tests():
    t = TestFile("reshape", "the same elements in C order under a new shape "
                 "(one -1 entry inferred).")
    for dt in DTYPES:
        x = values(dt, (2, 3, 4))
        t.case(f"reshape_{dt}", [("x", dt, x)],
               [(dt, x.reshape(4, 6)), (dt, x.reshape(-1, 2)),
                (dt, x.reshape(24)), (dt, x.reshape(1, 2, 1, 12))],
               ["%a = reshape(%x) {shape = [4, -1]}",
                "%b = reshape(%x) {shape = [-1, 2]}",
                "%c = reshape(%x) {shape = [24]}",
                "%d = reshape(%x) {shape = [1, 2, 1, 12]}",
                "return %a, %b, %c, %d"])
    t.write()


def transpose_tests():
    t = TestFile("transpose", "dims permuted by perm (negative entries count "
                 "from the end; no perm reverses them); [9,10] and [2,33,35] "
                 "take the tiled path (partial and whole tiles).")
    for dt in DTYPES:
        x = values(dt, (2, 3, 4))
        y = values(dt, (9, 10), 3)
        t.case(f"transpose_{dt}", [("x", dt, x), ("y", dt, y)],
               [(dt, x.transpose(2, 0, 1)), (dt, x.transpose(2, 0, 1)),
                (dt, x.transpose()), (dt, x.transpose(0, 2, 1)), (dt, y.T)],
               ["%a = transpose(%x) {perm = [2, 0, 1]}",
                "%b = transpose(%x) {perm = [-1, -3, 1]}",
                "%c = transpose(%x)",
                "%d = transpose(%x) {perm = [0, 2, 1]}",
                "%e = transpose(%y) {perm = [1, 0]}",
                "return %a, %b, %c, %d, %e"])
    z = values("f32", (2, 33, 35))
    t.case("transpose_tiles", [("z", "f32", z)], [("f32", z.transpose(0, 2, 1))],
           ["%a = transpose(%z) {perm = [0, 2, 1]}", "return %a"])
    s = values("i32", ())
    t.case("transpose_scalar", [("s", "i32", s)], [("i32", s)],
           ["%a = transpose(%s) {perm = []}", "return %a"])
    t.write()


def broadcast_to_tests():
    t = TestFile("broadcast_to", "x repeated along its size-1 and new "
                 "leading dims to exactly the shape asked for (NumPy rules).")
    for dt in DTYPES:
        x = values(dt, (3, 1))
        v = values(dt, (4,), 1)
        s = values(dt, (), 2)
        t.case(f"broadcast_to_{dt}", [("x", dt, x), ("v", dt, v), ("s", dt, s)],
               [(dt, np.broadcast_to(x, (2, 3, 4))),
                (dt, np.broadcast_to(x, (3, 1))),
                (dt, np.broadcast_to(v, (3, 1, 4))),
                (dt, np.broadcast_to(s, (2, 2)))],
               ["%a = broadcast_to(%x) {shape = [2, 3, 4]}",
                "%b = broadcast_to(%x) {shape = [3, 1]}",
                "%c = broadcast_to(%v) {shape = [3, 1, 4]}",
                "%d = broadcast_to(%s) {shape = [2, 2]}",
                "return %a, %b, %c, %d"])
    t.write()


# slice cases on a [4,5] operand: (begin, end, strides or None).
SLICES = [
    ([1, 0], [3, 5], None),           # plain
    ([-3, -4], [-1, 5], None),        # negative begin and end
    ([0, 1], [4, 5], [2, 2]),         # strided
    ([-1, -1], [-100, -100], [-1, -1]),  # reversed, end clamped to -1
    ([3, 4], [0, -6], [-2, -3]),      # reversed and strided
    ([10, -10], [-10, 10], [-1, 1]),  # begin and end clamped
    ([2, 0], [0, 5], [1, 7]),         # empty dim 0; step past the end
]


def slice_tests():
    t = TestFile("slice", "Python's x[b:e:s] per dim (NumPy, ONNX Slice): "
                 "negative begin and end count from the end, then clamp; "
                 "negative strides walk backwards.")
    for dt in DTYPES:
        x = values(dt, (4, 5))
        results, body, names = [], [], []
        for k, (b, e, s) in enumerate(SLICES):
            r = x[tuple(slice(bb, ee, ss) for bb, ee, ss
                        in zip(b, e, s or [1, 1]))]
            if r.size == 0:
                continue  # an empty result cannot be given inline
            results.append((dt, r))
            attrs = f"begin = {ints(b)}, end = {ints(e)}"
            if s:
                attrs += f", strides = {ints(s)}"
            body.append(f"%r{k} = slice(%x) {{{attrs}}}")
            names.append(f"%r{k}")
        body.append("return " + ", ".join(names))
        t.case(f"slice_{dt}", [("x", dt, x)], results, body)
    # An empty slice is still a value: a later op reads it.
    x = values("f32", (4, 5))
    t.case("slice_empty", [("x", "f32", x)],
           [("f32", np.concatenate([x[2:0], x[1:2]], axis=0))],
           ["%e = slice(%x) {begin = [2, 0], end = [0, 5]}",
            "%o = slice(%x) {begin = [1, 0], end = [2, 5]}",
            "%r = concat(%e, %o) {axis = 0}", "return %r"])
    y = values("i64", (2, 3, 4))
    t.case("slice_rank3", [("y", "i64", y)], [("i64", y[::-1, 1:, -1:0:-2])],
           ["%r = slice(%y) {begin = [-1, 1, -1], end = [-3, 3, 0], "
            "strides = [-1, 1, -2]}", "return %r"])
    t.write()


def concat_tests():
    t = TestFile("concat", "operands joined along axis (negative counts from "
                 "the end); the others' dims are equal.")
    for dt in DTYPES:
        a = values(dt, (2, 3))
        b = values(dt, (2, 1), 1)
        c = values(dt, (2, 2), 2)
        d = values(dt, (1, 3), 3)
        t.case(f"concat_{dt}",
               [("a", dt, a), ("b", dt, b), ("c", dt, c), ("d", dt, d)],
               [(dt, np.concatenate([a, b, c], axis=1)),
                (dt, np.concatenate([c, a], axis=-1)),
                (dt, np.concatenate([a, d, a], axis=0)),
                (dt, np.concatenate([d], axis=-2))],
               ["%r = concat(%a, %b, %c) {axis = 1}",
                "%s = concat(%c, %a) {axis = -1}",
                "%u = concat(%a, %d, %a)",
                "%v = concat(%d) {axis = -2}",
                "return %r, %s, %u, %v"])
    t.write()


def split_tests():
    t = TestFile("split", "x cut along axis into `sections` equal parts or "
                 "parts of the given `sizes`, one result each.")
    for dt in DTYPES:
        x = values(dt, (6, 4))
        s0 = np.split(x, 3, axis=0)
        s1 = np.split(x, [1], axis=-1)
        s2 = np.split(x, [3, 5], axis=0)
        s3 = np.split(x, 2, axis=1)
        results = [(dt, r) for r in s0 + s1 + s2 + s3]
        t.case(f"split_{dt}", [("x", dt, x)], results,
               ["%a0, %a1, %a2 = split(%x) {sections = 3}",
                "%b0, %b1 = split(%x) {axis = -1, sizes = [1, 3]}",
                "%c0, %c1, %c2 = split(%x) {axis = 0, sizes = [3, 2, 1]}",
                "%d0, %d1 = split(%x) {axis = -1, sections = 2}",
                "return %a0, %a1, %a2, %b0, %b1, %c0, %c1, %c2, %d0, %d1"])
    x = values("f32", (2, 3, 4))
    t.case("split_one", [("x", "f32", x)], [("f32", x)],
           ["%a = split(%x) {axis = 1, sections = 1}", "return %a"])
    t.write()


def take_tests():
    t = TestFile("take", "NumPy's take: the result is table.shape[:axis] + "
                 "indices.shape + table.shape[axis+1:]; negative indices "
                 "count from the end; an index out of range is a located "
                 "error.")
    i0 = np.array([[0, -1], [3, -4]])
    i1 = np.array([2, -3, 0, 1, -1])
    i2 = np.array([1, 0, 2])
    for dt in DTYPES:
        x = values(dt, (4, 3))
        t.case(f"take_{dt}", [("x", dt, x), ("i", "i64", i0),
                              ("j", "i32", i1), ("k", "u8", i2),
                              ("s", "i8", np.array(-2))],
               [(dt, np.take(x, i0, axis=0)), (dt, np.take(x, i1, axis=1)),
                (dt, np.take(x, i2, axis=-1)), (dt, np.take(x, -2, axis=0)),
                (dt, np.take(x, i0, axis=-2))],
               ["%a = take(%x, %i)",
                "%b = take(%x, %j) {axis = 1}",
                "%c = take(%x, %k) {axis = -1}",
                "%d = take(%x, %s) {axis = 0}",
                "%e = take(%x, %i) {axis = -2}",
                "return %a, %b, %c, %d, %e"])
    y = values("f32", (2, 3, 4))
    iy = np.array([[2, -1, 0], [1, 1, -3]])
    t.case("take_rank3", [("y", "f32", y), ("i", "i64", iy)],
           [("f32", np.take(y, iy, axis=1))], ["%r = take(%y, %i) {axis = 1}",
                                               "return %r"])
    # Out of range: 4 and -5 for a dim of 4; the first in C order is named.
    x = values("f32", (4, 3))
    bad = np.array([[1, 4], [-5, 0]])
    t.func("take_oob", [("x", "f32", x.shape), ("i", "i64", bad.shape)],
           [("f32", (2, 2, 3))], ["%r = take(%x, %i)", "return %r"])
    t.runs.append(f"// RUN: not raf-run %s --function=take_oob "
                  f"--input=x={fmt(x)} --input=i={fmt(bad)} 2>&1 "
                  f"| FileCheck %s --check-prefix=OOB")
    t.checks += [
        "// OOB: take.raf:@LINE<%r = take(%x, %i)>:3: error: take: index 4 "
        "(indices[0,1]) is out of bounds for axis 0 with size 4",
        "// OOB-NEXT: %r = take(%x, %i)",
        "// OOB-NOT: [SUCCESS]"]
    bad = np.array([1, 0, -4])
    t.func("take_oob_axis1", [("x", "f32", x.shape), ("i", "i32", bad.shape)],
           [("f32", (4, 3))], ["%r = take(%x, %i) {axis = 1}", "return %r"])
    t.runs.append(f"// RUN: not raf-run %s --function=take_oob_axis1 "
                  f"--input=x={fmt(x)} --input=i={fmt(bad)} 2>&1 "
                  f"| FileCheck %s --check-prefix=OOB1")
    t.checks += [
        "// OOB1: take.raf:@LINE<%r = take(%x, %i) {axis = 1}>:3: error: "
        "take: index -4 (indices[2]) is out of bounds for axis 1 with size 3"]
    t.write()


reshape_tests()
transpose_tests()
broadcast_to_tests()
slice_tests()
concat_tests()
split_tests()
take_tests()
