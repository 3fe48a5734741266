#!/usr/bin/python3
"""Writes the raf-run lit tests of the layers (test/lit/run/OP.raf for
dropout, conv2d, max_pool2d, avg_pool2d and batch_norm).

Expected values come from PyTorch in float64 on the inputs as rounded to
the test's dtype, rounded to the result's dtype (conv2d, pooling with
PyTorch's defaults, count_include_pad=True for avg_pool2d, and
F.batch_norm, which updates the running statistics in place). dropout's
expected masks come from the Philox 4x32-10 implementation below, which
follows runtime/cpuref/nn.c's rule: element i keeps its value, scaled by
1/(1-p), iff uniform(word 0 of Philox(counter {lo32(i), hi32(i), 0xD50, 0},
key {lo32(key), hi32(key)})) >= p.

The dtype tables, the rounding and the writing of the files come from
gencommon.py. Run it again after changing the cases (PyTorch is needed
here only):
    /usr/bin/python3 test/lit/run/gen_nn.py
The tests also call it, without PyTorch, to write the expected output of a
dropout too large to list inline:
    gen_nn.py dropout-ones KEY P N OUT.npy   (dropout(ones f32[N]))
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gencommon import FLOATS, ints, round_to  # noqa: E402
from gencommon import TestFile as _TestFile  # noqa: E402

# (atol, rtol) per dtype: one unit in the last place of the result, where
# f16 and bf16 may round a float accumulation the other way than PyTorch's
# float64 reference.
TOL = {"f64": (1e-10, 1e-10), "f32": (1e-5, 1e-5), "f16": (2e-3, 2e-3),
       "bf16": (1.6e-2, 1.6e-2)}


# ---- Philox 4x32-10, as runtime/philox.c -------------------------------------

M32 = 0xFFFFFFFF
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
DROPOUT_STREAM = 0xD50


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on uint64 arrays (or ints) of 32-bit counter words."""
    c = [np.asarray(v, dtype=np.uint64) for v in (c0, c1, c2, c3)]
    k0, k1 = int(k0), int(k1)
    m32 = np.uint64(M32)
    for rnd in range(10):
        if rnd:
            k0 = (k0 + PHILOX_W0) & M32
            k1 = (k1 + PHILOX_W1) & M32
        p0 = np.uint64(PHILOX_M0) * c[0]
        p1 = np.uint64(PHILOX_M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & m32,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & m32]
    return c


def check_philox():
    """The known answers of test/unit/test_philox.c."""
    cases = [((0, 0, 0, 0), (0, 0),
              (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
             ((M32,) * 4, (M32, M32),
              (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
             ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
              (0xa4093822, 0x299f31d0),
              (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for ctr, key, want in cases:
        got = tuple(int(w) for w in philox(*ctr, *key))
        assert got == want, (ctr, key, [hex(w) for w in got])


def dropout_keep(key, p, n):
    """The keep mask of dropout over n elements with an i64 key."""
    key &= (1 << 64) - 1
    i = np.arange(n, dtype=np.uint64)
    w = philox(i & np.uint64(M32), i >> np.uint64(32),
               np.full(n, DROPOUT_STREAM, dtype=np.uint64),
               np.zeros(n, dtype=np.uint64), key & M32, key >> 32)[0]
    u = (w >> np.uint64(8)).astype(np.float64) / 16777216.0
    return u >= p


# ---- Test files --------------------------------------------------------------

def attrs(**kw):
    """An attribute dictionary; lists print as [a, b], None is left out."""
    parts = []
    for name, v in kw.items():
        if v is None:
            continue
        if isinstance(v, bool):
            parts.append(name if v else f"{name} = false")
        elif isinstance(v, (list, tuple)):
            parts.append(f"{name} = {ints(v)}")
        else:
            parts.append(f"{name} = {v}")
    return " {" + ", ".join(parts) + "}" if parts else ""


class TestFile(_TestFile):
    generator = "gen_nn.py"

    def __init__(self, op, doc, source="PyTorch"):
        super().__init__(op, doc, source)

    def case(self, name, args, results, body, dt=None):
        """args: [(name, dtype, array)], results: [(dtype, array)]; checked
        with dt's tolerances."""
        super().case(name, args, results, body, TOL[dt] if dt else None)


def thread_check(t, name, outputs):
    """RUN lines: the function at 1 and 3 threads gives the same bits."""
    t.raw("RUN: rm -rf %t && mkdir -p %t")
    for n in (1, 3):
        outs = " ".join(f"--output=@%t/{name}{i}_{n}.npy"
                        for i in range(outputs))
        t.raw(f"RUN: raf-run %s --function={name} --threads={n} {outs}")
    t.raw("RUN: " + " && ".join(f"cmp %t/{name}{i}_1.npy %t/{name}{i}_3.npy"
                                for i in range(outputs)))


def rand(rng, shape, dt, lo=-2.0, hi=2.0):
    return round_to(rng.uniform(lo, hi, shape), dt)


# ---- dropout -----------------------------------------------------------------

def dropout_expected(x, key, p, dt):
    """x kept (times 1/(1-p), in the working type) or 0."""
    keep = dropout_keep(key, p, x.size).reshape(x.shape)
    if dt == "f64":
        scaled = x * (1.0 / (1.0 - p))
    else:
        scaled = (x.astype(np.float32) *
                  np.float32(1.0 / (1.0 - p))).astype(np.float64)
    return round_to(np.where(keep, scaled, 0.0), dt), keep


def dropout_tests():
    check_philox()
    t = TestFile("dropout", "zeroes element i unless uniform(Philox4x32-10 "
                 "of counter {lo32(i), hi32(i), 0xD50, 0}, key {lo32(key), "
                 "hi32(key)}) >= p, scales the kept ones by 1/(1-p); p = 0 "
                 "is the identity; the mask depends on the key only.",
                 "the generator's Philox")
    rng = np.random.default_rng(5)
    special = np.array([1.5, -2.0, 0.0, np.inf, -np.inf, np.nan, 3.25, -0.5])
    key1, key2 = 42, -7046029254386353131  # key2 has both halves set
    for dt in FLOATS:
        # p = 0: the identity, non-finite values included.
        x = round_to(special, dt)
        t.case(f"identity_{dt}", [("x", dt, x), ("key", "i64", np.array(7))],
               [(dt, x)], ["%y = dropout(%x, %key) {p = 0.0}", "return %y"],
               dt)
        # The same key twice gives the same mask; another key another mask.
        # |x| >= 0.25, so a kept element is never 0.
        x = rand(rng, (3, 5, 4), dt, 0.25, 2.0) * rng.choice([-1, 1], (3, 5, 4))
        results, body = [], []
        masks = {}
        for name, key, p in (("a", "k1", 0.5), ("b", "k1", 0.5),
                             ("c", "k2", 0.5), ("d", "k1", 0.3),
                             ("e", "k2", 0.9)):
            y, keep = dropout_expected(x, key1 if key == "k1" else key2, p, dt)
            assert 0 < keep.sum() < keep.size, (name, dt)
            masks[name] = keep
            results.append((dt, y))
            body.append(f"%{name} = dropout(%x, %{key}){attrs(p=p)}")
        assert (masks["a"] != masks["c"]).any()
        # The mask only grows with p: u >= 0.5 implies u >= 0.3.
        assert (masks["d"] >= masks["a"]).all()
        body.append("return %a, %b, %c, %d, %e")
        t.case(f"mask_{dt}", [("x", dt, x), ("k1", "i64", np.array(key1)),
                              ("k2", "i64", np.array(key2))],
               results, body, dt)
    # The default p is 0.5; shapes of any rank, scalars included.
    x = np.array(3.0)
    y, _ = dropout_expected(x, 1, 0.5, "f32")
    t.case("scalar_default_p", [("x", "f32", x), ("key", "i64", np.array(1))],
           [("f32", y)], ["%y = dropout(%x, %key)", "return %y"], "f32")
    # Past one parallel chunk (8192 elements): the expected mask from this
    # script, at 1 and 3 threads.
    n = 10000
    t.raw("", "dropout(ones f32[10000]) against the mask this generator "
          "computes, at 1 and 3 threads.",
          "RUN: rm -rf %t && mkdir -p %t",
          f"RUN: %python %S/gen_nn.py dropout-ones {key2} 0.25 {n} "
          "%t/ones.npy")
    for threads in (1, 3):
        t.raw(f"RUN: raf-run %s --function=big --threads={threads} "
              "--expected-output=@%t/ones.npy | FileCheck %s")
    t.func("big", [], [("f32", (n,))],
           [f"%x = constant 1 : f32[{n}]",
            f"%k = constant {key2} : i64[]",
            "%y = dropout(%x, %k) {p = 0.25}", "return %y"])
    t.write()


def write_dropout_ones(key, p, n, path):
    y = np.where(dropout_keep(int(key), float(p), int(n)),
                 np.float32(1.0 / (1.0 - float(p))), np.float32(0))
    np.save(path, y.astype(np.float32))


# ---- conv2d ------------------------------------------------------------------

# (name, x shape, w shape, stride, padding, dilation, groups); None: default.
CONV_CASES = [
    ("plain", (1, 2, 5, 5), (3, 2, 3, 3), None, None, None, None),
    ("stride", (2, 3, 7, 6), (4, 3, 3, 2), (2, 3), None, None, None),
    ("padding", (1, 2, 4, 5), (2, 2, 3, 3), None, (1, 2), None, None),
    ("dilation", (1, 2, 7, 7), (2, 2, 3, 2), None, (2, 1), (2, 3), None),
    ("groups", (2, 4, 5, 5), (6, 2, 3, 3), (1, 2), (1, 1), None, 2),
    ("depthwise", (1, 3, 6, 6), (3, 1, 3, 3), None, (1, 1), None, 3),
    ("depthwise_x2", (1, 2, 5, 4), (4, 1, 2, 2), (2, 1), (1, 1), None, 2),
    ("pointwise", (2, 3, 3, 3), (5, 3, 1, 1), (2, 2), None, None, None),
    ("everything", (2, 4, 9, 8), (4, 1, 3, 3), (2, 1), (2, 1), (2, 2), 4),
    ("pad_only", (1, 1, 2, 2), (1, 1, 3, 3), (3, 3), (2, 2), None, None),
]


def conv_tests():
    import torch
    import torch.nn.functional as F

    t = TestFile("conv2d", "2-D cross-correlation of NCHW x with OIHW w, "
                 "PyTorch semantics: stride, zero padding, dilation, groups "
                 "(depthwise included); f16/bf16 accumulate in f32.")
    rng = np.random.default_rng(3)
    for dt in FLOATS:
        args, results, body = [], [], []
        for i, (name, sx, sw, st, pad, dil, g) in enumerate(CONV_CASES):
            x, w = rand(rng, sx, dt), rand(rng, sw, dt)
            y = F.conv2d(torch.from_numpy(x), torch.from_numpy(w),
                         stride=st or 1, padding=pad or 0,
                         dilation=dil or 1, groups=g or 1).numpy()
            args += [(f"x{i}", dt, x), (f"w{i}", dt, w)]
            results.append((dt, round_to(y, dt)))
            a = attrs(stride=st, padding=pad, dilation=dil, groups=g)
            body.append(f"%{name} = conv2d(%x{i}, %w{i}){a}")
        body.append("return " + ", ".join(f"%{c[0]}" for c in CONV_CASES))
        t.case(f"conv2d_{dt}", args, results, body, dt)
    # No input channels: an empty sum, zeros; no batch: an empty result.
    t.case("no_channels", [("x", "f32", np.zeros((1, 0, 3, 3))),
                           ("w", "f32", np.zeros((2, 0, 2, 2)))],
           [("f32", np.zeros((1, 2, 2, 2)))],
           ["%y = conv2d(%x, %w)", "return %y"], "f32")
    t.case("no_batch", [("x", "f64", np.zeros((0, 2, 3, 3))),
                        ("w", "f64", np.ones((2, 2, 2, 2)))],
           [("f64", np.zeros((0, 2, 2, 2)))],
           ["%y = conv2d(%x, %w)", "return %y"], "f64")
    # NaN and inf propagate to the outputs whose windows hold them.
    x = np.zeros((1, 1, 3, 3))
    x[0, 0, 0, 0], x[0, 0, 2, 2] = np.nan, np.inf
    w = np.ones((1, 1, 2, 2))
    y = F.conv2d(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    t.case("nonfinite", [("x", "f32", x), ("w", "f32", w)], [("f32", y)],
           ["%y = conv2d(%x, %w)", "return %y"], "f32")
    # Several chunks of (n, o) planes: the same bits at any thread count.
    t.raw("")
    thread_check(t, "big", 1)
    t.func("big", [("x", "f32", (2, 8, 20, 20), 'param, init = "uniform(-1, 1)"'),
                   ("w", "f32", (16, 8, 3, 3), 'param, init = "uniform(-1, 1)"')],
           [("f32", (2, 16, 10, 20))],
           ["%y = conv2d(%x, %w) {stride = [2, 1], padding = [1, 1]}",
            "return %y"])
    t.write()


# ---- max_pool2d, avg_pool2d --------------------------------------------------

# (name, x shape, kernel, stride, padding); None: default.
POOL_CASES = [
    ("default_stride", (2, 3, 4, 5), (2, 2), None, None),
    ("padded", (1, 2, 7, 6), (3, 3), (2, 2), (1, 1)),
    ("rect", (1, 2, 5, 5), (3, 2), (1, 2), (1, 0)),
    ("rect_padded", (2, 1, 6, 7), (2, 3), (3, 1), (1, 1)),
    ("global", (1, 2, 4, 4), (4, 4), None, None),
    ("overlap", (1, 1, 5, 5), (3, 3), (1, 1), None),
]


def pool_tests():
    import torch
    import torch.nn.functional as F

    for op, fn, doc in (
            ("max_pool2d", F.max_pool2d,
             "the largest element of each window, PyTorch semantics: "
             "padded positions never win (all-negative inputs stay "
             "negative), NaN propagates."),
            ("avg_pool2d", F.avg_pool2d,
             "the mean of each window, PyTorch's default "
             "count_include_pad=True: padded positions count as zeros and "
             "every window divides by the kernel area.")):
        t = TestFile(op, doc + " stride defaults to the kernel; floor mode.")
        rng = np.random.default_rng(9)
        for dt in FLOATS:
            args, results, body = [], [], []
            for i, (name, sx, k, st, pad) in enumerate(POOL_CASES):
                x = rand(rng, sx, dt)
                y = fn(torch.from_numpy(x), k, stride=st or k,
                       padding=pad or 0).numpy()
                args.append((f"x{i}", dt, x))
                results.append((dt, round_to(y, dt)))
                a = attrs(kernel=k, stride=st, padding=pad)
                body.append(f"%{name} = {op}(%x{i}){a}")
            # All negative, padded: max is never the padding's 0, and avg
            # counts the padding.
            x = -rand(rng, (1, 2, 3, 3), dt, 0.5, 2.0)
            y = fn(torch.from_numpy(x), (3, 3), stride=(2, 2),
                   padding=(1, 1)).numpy()
            args.append(("neg", dt, x))
            results.append((dt, round_to(y, dt)))
            body.append(f"%negative = {op}(%neg) {{kernel = [3, 3], "
                        "stride = [2, 2], padding = [1, 1]}")
            body.append("return " + ", ".join(f"%{c[0]}" for c in POOL_CASES)
                        + ", %negative")
            t.case(f"{op}_{dt}", args, results, body, dt)
        # NaN in a window makes it NaN; -inf and inf are ordinary values.
        x = np.array([[[[np.nan, 1.0, 2.0, 3.0], [0.0, 0.0, -np.inf, 4.0],
                        [5.0, 6.0, -np.inf, -np.inf],
                        [7.0, np.inf, -np.inf, -np.inf]]]])
        y = fn(torch.from_numpy(x), (2, 2)).numpy()
        t.case("nonfinite", [("x", "f32", x)], [("f32", y)],
               [f"%y = {op}(%x) {{kernel = [2, 2]}}", "return %y"], "f32")
        t.raw("")
        thread_check(t, "big", 1)
        t.func("big", [("x", "f32", (2, 150, 32, 32),
                        'param, init = "uniform(-1, 1)"')],
               [("f32", (2, 150, 16, 16))],
               [f"%y = {op}(%x) {{kernel = [3, 3], stride = [2, 2], "
                "padding = [1, 1]}", "return %y"])
        t.write()


# ---- batch_norm --------------------------------------------------------------

# (name, x shape, eps, momentum, training); None: default.
BN_CASES = [
    ("train4d", (3, 2, 3, 4), None, None, None),
    ("train2d", (5, 3), 1e-3, 0.3, None),
    ("train3d", (2, 3, 4), None, 1.0, None),
    ("train_no_momentum", (4, 2, 2, 1), 0.5, 0.0, None),
    ("eval4d", (2, 3, 2, 2), None, None, False),
    ("eval2d", (3, 2), 0.25, 0.5, False),
]


def batch_norm_tests():
    import torch
    import torch.nn.functional as F

    t = TestFile("batch_norm", "normalises over every axis but 1; training "
                 "uses the batch mean and biased variance and returns the "
                 "running stats updated with the unbiased variance "
                 "(PyTorch), eval uses and returns the running stats; "
                 "computed in double.")
    rng = np.random.default_rng(13)
    for dt in FLOATS:
        for name, sx, eps, mom, training in BN_CASES:
            c = sx[1]
            shift = np.arange(c).reshape((1, c) + (1,) * (len(sx) - 2))
            x = round_to(rng.uniform(-2, 2, sx) + 2.0 * shift, dt)
            gamma, beta = rand(rng, (c,), dt, 0.5, 2.0), rand(rng, (c,), dt)
            mean, var = rand(rng, (c,), dt), rand(rng, (c,), dt, 0.5, 2.0)
            rm, rv = torch.from_numpy(mean.copy()), torch.from_numpy(var.copy())
            y = F.batch_norm(torch.from_numpy(x), rm, rv,
                             torch.from_numpy(gamma), torch.from_numpy(beta),
                             training=training is not False,
                             momentum=0.1 if mom is None else mom,
                             eps=1e-5 if eps is None else eps).numpy()
            a = attrs(eps=eps, momentum=mom, training=training)
            t.case(f"{name}_{dt}",
                   [("x", dt, x), ("gamma", dt, gamma), ("beta", dt, beta),
                    ("mean", dt, mean), ("var", dt, var)],
                   [(dt, round_to(y, dt)), (dt, round_to(rm.numpy(), dt)),
                    (dt, round_to(rv.numpy(), dt))],
                   [f"%y, %m, %v = batch_norm(%x, %gamma, %beta, %mean, "
                    f"%var){a}", "return %y, %m, %v"], dt)
    # One value per channel has no unbiased variance: an error when
    # training (PyTorch's too), fine when not.
    t.raw("", "RUN: not raf-run %s --function=one_value --input=x=1,2 "
          "--input=p=1,1 2>&1 | FileCheck %s --check-prefix=ONE",
          "ONE: error: batch_norm: expected more than 1 value per channel "
          "when training, got input f32[1,2]")
    t.func("one_value", [("x", "f32", (1, 2)), ("p", "f32", (2,))],
           [("f32", (1, 2)), ("f32", (2,)), ("f32", (2,))],
           ["%y, %m, %v = batch_norm(%x, %p, %p, %p, %p)",
            "return %y, %m, %v"])
    x = np.array([[1.0, 2.0]])
    y = F.batch_norm(torch.from_numpy(x), torch.zeros(2, dtype=torch.float64),
                     torch.ones(2, dtype=torch.float64), training=False).numpy()
    t.case("one_value_eval", [("x", "f32", x), ("m", "f32", np.zeros(2)),
                              ("v", "f32", np.ones(2))],
           [("f32", y), ("f32", np.zeros(2)), ("f32", np.ones(2))],
           ["%y, %m2, %v2 = batch_norm(%x, %v, %m, %m, %v) "
            "{training = false}", "return %y, %m2, %v2"], "f32")
    # Several chunks of channels: the same bits at any thread count.
    t.raw("")
    thread_check(t, "big", 3)
    init = 'param, init = "uniform(-1, 1)"'
    t.func("big", [("x", "f32", (16, 32, 32, 32), init),
                   ("gamma", "f32", (32,), init), ("beta", "f32", (32,), init),
                   ("mean", "f32", (32,), init),
                   ("var", "f32", (32,), 'param, init = "uniform(0.5, 2)"')],
           [("f32", (16, 32, 32, 32)), ("f32", (32,)), ("f32", (32,))],
           ["%y, %m, %v = batch_norm(%x, %gamma, %beta, %mean, %var)",
            "return %y, %m, %v"])
    t.write()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        if sys.argv[1] != "dropout-ones" or len(sys.argv) != 6:
            sys.exit("usage: gen_nn.py [dropout-ones KEY P N OUT.npy]")
        write_dropout_ones(*sys.argv[2:])
    else:
        dropout_tests()
        conv_tests()
        pool_tests()
        batch_norm_tests()
