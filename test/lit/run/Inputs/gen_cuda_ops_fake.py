#!/usr/bin/python3
"""Writes Inputs/cuda-ops-fake.raf and prints the RUN lines of
cuda-ops-fake.test: every op of the cuda dialect (lang/codegen_ops.def
and its hand-written IMPL rows in lang/dialects.def) and of cublas, in
f32, bf16 and f16 where the dialect has them, one function per
(op class, dtype), so that each run of it checks its results with one
tolerance, docs/Numerics.md's for the class:

  exact   copies, casts, comparisons, where, max/min, relu, neg, abs, and
          add, sub, mul, div, sqrt (each result one op of the arguments,
          so that fusing contracts nothing): rtol 0, atol 0
  trans   exp, log, tanh, erf, pow, sigmoid, gelu, sin, cos, rsqrt,
          gelu_grad: f32 4 ulp (4 * 2^-23 relative, atol 1e-30), one
          bf16/f16 ulp (2^-7, 2^-10)
  rows    sums, means, softmax, log_softmax, layer_norm, cross_entropy,
          mse_loss and their gradients: f32 cols * 2^-24 (at least 1e-6),
          bf16/f16 1e-2
  mm      matmul, batched, attention and its gradient on cuBLASLt without
          TF32: f32 1e-4, bf16/f16 1e-2

bf16 results are cast to f32 before they are returned (NumPy has no bf16
for --output); the cast is exact. Run it again after changing the cases:
    /usr/bin/python3 test/lit/run/Inputs/gen_cuda_ops_fake.py > runs.txt
"""
import os
import re

DTYPES = ["f32", "bf16", "f16"]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "cuda-ops-fake.raf")


class Func:
    def __init__(self, name, args):
        self.name = name
        self.args = args  # (name, type, init)
        self.body = []
        self.results = []  # (value, type)

    def s(self, line):
        self.body.append(line)

    def ret(self, value, ty):
        self.results.append((value, ty))

    def chain(self):
        """Makes each op part of a chain that fuse fuses (exactly): every
        float argument goes through neg (abs for a positive one) first, and
        every float result through neg before it is returned."""
        pro = []
        for n, t, i in self.args:
            if t.startswith(("f32", "bf16", "f16")) and i:
                op = "abs" if i.startswith("uniform(0.5") else "neg"
                pro.append("%%%s.p = %s(%%%s)" % (n, op, n))
                pat = re.compile(r"%%%s(?![\w.])" % re.escape(n))
                self.body = [pat.sub("%%%s.p" % n, b) for b in self.body]
        self.body = pro + self.body
        rets = []
        for v, t in self.results:
            if t.startswith(("f32", "bf16", "f16")):
                self.body.append("%%%s.n = neg(%%%s)" % (v, v))
                v += ".n"
            rets.append((v, t))
        self.results = rets
        return self

    def text(self):
        args = ", ".join("%%%s: %s%s" % (n, t, ' {init = "%s"}' % i if i else "")
                         for n, t, i in self.args)
        rets = ", ".join(t for _, t in self.results)
        out = ["func @%s(%s)\n    -> (%s) {" % (self.name, args, rets)]
        out += ["  " + b for b in self.body]
        out.append("  return " + ", ".join("%" + v for v, _ in self.results))
        out.append("}")
        return "\n".join(out)


def ret(f, dt, v, shape):
    """Returns %v of dtype dt: bf16 cast to f32 first."""
    if dt == "bf16":
        f.s("%%%s.r = cast(%%%s) {dtype = f32}" % (v, v))
        f.ret(v + ".r", "f32%s" % shape)
    else:
        f.ret(v, "%s%s" % (dt, shape))


N = "normal(0, 1)"
U = "uniform(0.5, 2)"


def exact(dt):
    X = "[37,33]"
    f = Func("exact_" + dt, [("x", dt + X, N), ("y", dt + "[33]", N),
                             ("u", dt + X, U), ("c", dt + "[37,1]", N),
                             ("s", dt + "[]", N)])
    for v, e in [("neg", "neg(%x)"), ("abs", "abs(%x)"), ("relu", "relu(%x)"),
                 ("maximum", "maximum(%x, %y)"), ("minimum", "minimum(%x, %c)"),
                 ("add", "add(%x, %y)"), ("sub", "sub(%x, %s)"),
                 ("mul", "mul(%x, %c)"), ("div", "div(%x, %u)"),
                 ("sqrt", "sqrt(%u)"), ("stop", "stop_gradient(%x)"),
                 ("bcast", "broadcast_to(%y) {shape = [37, 33]}"),
                 ("wh", "where(%lt, %x, %y)"),
                 ("fill", "constant -2.5 : %s[37,33]" % dt)]:
        if v == "wh":
            f.s("%lt = lt(%x, %y)")
        f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, X)
    f.s("%rs = reshape(%x) {shape = [33, 37]}")
    ret(f, dt, "rs", "[33,37]")
    for v, e in [("eq", "eq(%x, %maximum)"), ("ne", "ne(%x, %minimum)"),
                 ("lt", None), ("le", "le(%x, %c)"), ("gt", "gt(%x, %s)"),
                 ("ge", "ge(%x, %y)"), ("fin", "isfinite(%q)")]:
        if v == "fin":
            f.s("%ry = relu(%y)")
            f.s("%q = div(%x, %ry)")
        if e:
            f.s("%%%s = %s" % (v, e))
        f.ret(v, "bool" + X)
    for to in ["f32", "bf16", "f16", "i32", "i64", "bool"]:
        if to == dt:
            continue
        v = "to_" + to
        f.s("%%%s = cast(%%x) {dtype = %s}" % (v, to))
        if to == "bf16":
            f.s("%%%s.r = cast(%%%s) {dtype = f32}" % (v, v))
            f.ret(v + ".r", "f32" + X)
        else:
            f.ret(v, to + X)
    f.s("%big = mul(%x, %u)")
    f.s("%ints = cast(%big) {dtype = i64}")
    f.s("%%from = cast(%%ints) {dtype = %s}" % dt)
    ret(f, dt, "from", X)
    for v, e, sh in [("rmax", "max(%x) {axes = [1]}", "[37]"),
                     ("cmin", "min(%x) {axes = [0]}", "[33]"),
                     ("amax", "max(%x)", "[]")]:
        f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, sh)
    return f


def ints(dt):
    X = "[37,33]"
    f = Func("ints_" + dt, [("a", "f32" + X, "normal(0, 100)"),
                            ("b", "f32[33]", "normal(0, 100)")])
    f.s("%%x = cast(%%a) {dtype = %s}" % dt)
    f.s("%%y = cast(%%b) {dtype = %s}" % dt)
    for v, e in [("neg", "neg(%x)"), ("abs", "abs(%x)"), ("relu", "relu(%x)"),
                 ("maximum", "maximum(%x, %y)"), ("minimum", "minimum(%x, %y)"),
                 ("add", "add(%x, %y)"), ("sub", "sub(%x, %y)"),
                 ("mul", "mul(%x, %y)")]:
        f.s("%%%s = %s" % (v, e))
        f.ret(v, dt + X)
    for v, e in [("eq", "eq(%x, %maximum)"), ("lt", "lt(%x, %y)"),
                 ("ge", "ge(%x, %y)")]:
        f.s("%%%s = %s" % (v, e))
        f.ret(v, "bool" + X)
    f.s("%wh = where(%lt, %x, %y)")
    f.ret("wh", dt + X)
    for v, e, sh in [("rsum", "sum(%x) {axes = [1]}", "[37]"),
                     ("csum", "sum(%x) {axes = [0]}", "[33]"),
                     ("rmax", "max(%x) {axes = [1]}", "[37]"),
                     ("cmin", "min(%x) {axes = [0]}", "[33]")]:
        f.s("%%%s = %s" % (v, e))
        f.ret(v, dt + sh)
    return f


def trans(dt):
    X = "[37,33]"
    f = Func("trans_" + dt, [("x", dt + X, N), ("u", dt + X, U),
                             ("y", dt + "[33]", U), ("dy", dt + X, N)])
    # sin and cos of large arguments: libdevice's Payne-Hanek reduction
    f.s("%%big = constant %s : %s[]" % ("1000.0" if dt == "f16" else "1000000.0", dt))
    f.s("%xl = mul(%x, %big)")
    for v, e in [("exp", "exp(%x)"), ("log", "log(%u)"), ("tanh", "tanh(%x)"),
                 ("erf", "erf(%x)"), ("sig", "sigmoid(%x)"),
                 ("sin", "sin(%x)"), ("cos", "cos(%x)"), ("rsqrt", "rsqrt(%u)"),
                 ("pow", "pow(%u, %x)"), ("sinl", "sin(%xl)"),
                 ("cosl", "cos(%xl)"), ("powb", "pow(%x, %y)"),
                 ("gg", "gelu_grad(%dy, %x)"),
                 ("ggt", 'gelu_grad(%dy, %x) {approximate = "tanh"}')]:
        f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, X)
    return f


def gelu(dt):
    """gelu: 1 + erf (tanh) cancels for x < 0 in float, on both devices."""
    X = "[37,33]"
    f = Func("gelu_" + dt, [("x", dt + X, N)])
    for v, e in [("gelu", "gelu(%x)"),
                 ("gelut", 'gelu(%x) {approximate = "tanh"}')]:
        f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, X)
    return f


def cols(dt, r, c):
    """Reductions over the leading axis (column tiles) and over all."""
    X = "[%d,%d]" % (r, c)
    f = Func("cols%d_%s" % (r, dt), [("x", dt + X, N)])
    for v, e, sh in [("sum0", "sum(%x) {axes = [0]}", "[%d]" % c),
                     ("mean0", "mean(%x) {axes = [0]}", "[%d]" % c),
                     ("sumk", "sum(%x) {axes = [0], keepdims}", "[1,%d]" % c),
                     ("sumall", "sum(%x)", "[]"), ("meanall", "mean(%x)", "[]")]:
        f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, sh)
    return f


def move(dt):
    """The hand-written data movement kernels: exact."""
    f = Func("move_" + dt, [("table", dt + "[6,4]", N), ("ids", "i64[2,3]", None),
                            ("x", dt + "[2,3,4]", N), ("w", dt + "[4,6,5]", N),
                            ("dy", dt + "[2,3,5]", N)])
    f.s("%ids32 = cast(%ids) {dtype = i32}")
    for v, e, sh in [("take", "take(%table, %ids)", "[2,3,4]"),
                     ("take32", "take(%table, %ids32)", "[2,3,4]"),
                     ("tr", "transpose(%x) {perm = [2, 0, 1]}", "[4,2,3]"),
                     ("sa", None, "[2,3,1]"), ("sb", None, "[2,3,3]"),
                     ("cat", None, None),
                     ("sl", "slice(%w) {begin = [3, 1, 0], end = [0, 6, 5], strides = [-2, 2, 1]}", "[2,3,5]"),
                     ("slg", "slice_grad(%dy) {shape = [4, 6, 5], begin = [3, 1, 0], end = [0, 6, 5], strides = [-2, 2, 1]}", "[4,6,5]")]:
        if v == "sa":
            f.s("%sa, %sb = split(%x) {axis = -1, sizes = [1, 3]}")
        elif v == "sb":
            pass
        elif v == "cat":
            f.s("%cat = concat(%x, %x, %x) {axis = 1}")
            ret(f, dt, "cat", "[2,9,4]")
            f.s("%cat2 = concat(%sb, %sa) {axis = -1}")
            v, sh = "cat2", "[2,3,4]"
        else:
            f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, sh)
    return f


def dropout(dt):
    X = "[37,300]"
    f = Func("dropout_" + dt, [("x", dt + X, N), ("key", "i64[]", None)])
    for v, p in [("d3", "0.3"), ("d9", "0.9")]:
        f.s("%%%s = dropout(%%x, %%key) {p = %s}" % (v, p))
        ret(f, dt, v, X)
    return f


def mm(dt):
    f = Func("mm_" + dt, [("a", dt + "[37,33]", N), ("b", dt + "[33,20]", N),
                          ("bt", dt + "[20,33]", N), ("c", dt + "[3,17,9]", N),
                          ("d", dt + "[3,9,5]", N), ("e", dt + "[2,1,9,17]", N),
                          ("g", dt + "[1,4,17,5]", N), ("q", dt + "[2,3,16,8]", N),
                          ("k", dt + "[2,3,16,8]", N), ("v", dt + "[2,3,16,8]", N),
                          ("do", dt + "[2,3,16,8]", N)])
    A = "[2,3,16,8]"
    for v, e, sh in [("mm", "matmul(%a, %b)", "[37,20]"),
                     ("mmt", "matmul(%a, %bt) {transpose_b}", "[37,20]"),
                     ("mmta", "matmul(%b, %a) {transpose_a, transpose_b}", "[20,37]"),
                     ("bmm", "matmul(%c, %d)", "[3,17,5]"),
                     ("bbmm", "matmul(%e, %g)", "[2,4,9,5]"),
                     ("att", "scaled_dot_product_attention(%q, %k, %v)", A),
                     ("attc", "scaled_dot_product_attention(%q, %k, %v) {causal}", A),
                     ("dq", None, A), ("dk", None, A), ("dv", None, A)]:
        if v == "dq":
            f.s("%dq, %dk, %dv = scaled_dot_product_attention_grad(%do, %q, %k, %v) {causal}")
        elif v in ("dk", "dv"):
            pass
        else:
            f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, sh)
    return f


def hand_f32():
    """The f32-only hand-written kernels: argmax (exact), and
    layer_norm_grad and take_grad (sums: row tolerance)."""
    a = Func("argmax_f32", [("x", "f32[37,33]", N)])
    a.s("%rows = argmax(%x) {axis = 1}")
    a.ret("rows", "i64[37]")
    a.s("%cols = argmax(%x) {axis = 0}")
    a.ret("cols", "i64[33]")
    h = Func("hand_f32", [("dy", "f32[37,33]", N), ("x", "f32[37,33]", N),
                          ("g", "f32[33]", U), ("ids", "i64[2,3]", None),
                          ("dt", "f32[2,3,4]", N)])
    h.s("%dx, %dg, %db = layer_norm_grad(%dy, %x, %g)")
    h.ret("dx", "f32[37,33]")
    h.ret("dg", "f32[33]")
    h.ret("db", "f32[33]")
    h.s("%tg = take_grad(%dt, %ids) {dim = 6}")
    h.ret("tg", "f32[6,4]")
    return [a, h]


def big():
    """A flat grid past 65,535 blocks: 70,000 x 256 elements, cheap ops
    (the grid is capped at 65,535 blocks, whose threads stride)."""
    f = Func("big_f16", [("x", "f16[70000,256]", N), ("y", "f16[256]", N)])
    f.s("%a = add(%x, %y)")
    f.ret("a", "f16[70000,256]")
    return f


def rows(dt, name, r, c, tile=False):
    """Row ops of [r, c] (warp per row for c <= 1024, a block per row
    above), the leading-axis sums as column tiles, the totals' second
    stage."""
    X = "[%d,%d]" % (r, c)
    f = Func("%s_%s" % (name, dt), [("x", dt + X, N), ("dy", dt + X, N),
                                    ("g", dt + "[%d]" % c, U),
                                    ("b", dt + "[%d]" % c, N),
                                    ("t", dt + X, N), ("labels", "i64[%d]" % r, None)])
    outs = [("sum1", "sum(%x) {axes = [1]}", "[%d]" % r),
            ("mean1", "mean(%x) {axes = [1]}", "[%d]" % r),
            ("sm", "softmax(%x)", X), ("lsm", "log_softmax(%x)", X),
            ("smg", "softmax_grad(%dy, %sm)", X),
            ("lsmg", "log_softmax_grad(%dy, %lsm)", X),
            ("ln", "layer_norm(%x, %g, %b)", X),
            ("cem", "cross_entropy(%x, %labels)", "[]"),
            ("ces", 'cross_entropy(%x, %labels) {reduction = "sum"}', "[]"),
            ("cen", 'cross_entropy(%x, %labels) {reduction = "none"}', "[%d]" % r),
            ("cei", 'cross_entropy(%x, %labels) {ignore_index = 3}', "[]"),
            ("ceg", "cross_entropy_grad(%one, %x, %labels)", X),
            ("cegs", 'cross_entropy_grad(%one, %x, %labels) {reduction = "sum", ignore_index = 3}', X),
            ("mse", "mse_loss(%x, %t)", "[]"),
            ("mses", 'mse_loss(%x, %t) {reduction = "sum"}', "[]")]
    if tile:
        outs += [("sum0", "sum(%x) {axes = [0]}", "[%d]" % c),
                 ("mean0", "mean(%x) {axes = [0]}", "[%d]" % c),
                 ("sumall", "sum(%x)", "[]")]
    f.s("%%one = constant 1.0 : %s[]" % dt)
    for v, e, sh in outs:
        f.s("%%%s = %s" % (v, e))
        ret(f, dt, v, sh)
    return f


TWO24 = 2.0 ** -24
ULP4 = 4 * 2.0 ** -23  # 4 ulp of f32, relative
ONE_ULP = {"bf16": 2.0 ** -7, "f16": 2.0 ** -10}


def tol(cls, dt, n=0):
    """(rtol, atol) of docs/Numerics.md for an op class and dtype."""
    if cls == "exact":
        return 0, 0
    if cls == "trans":
        return (ULP4, 1e-30) if dt == "f32" else (ONE_ULP[dt], 1e-30)
    if cls == "gelu":
        # 1 + erf(x / sqrt 2) (or 1 + tanh) cancels for x < 0: both
        # devices' float erf are within 2 ulp of 1, so the absolute error
        # is up to |x| / 2 * 4 ulp(1): atol 4 ulp of 1 for |x| <= 4.
        return (ULP4, ULP4) if dt == "f32" else (ONE_ULP[dt], 1e-30)
    if cls == "rows":
        # n: the longest reduction; atol as rtol, the inputs being ~1.
        r = max(1e-6, n * TWO24)
        return (r, r) if dt == "f32" else (1e-2, 1e-5)
    if cls == "mm":
        # bf16/f16: attention's results cancel (P and the products rounded
        # to the dtype): 1e-2 of their magnitude (~2).
        return (1e-4, 1e-5) if dt == "f32" else (1e-2, 2e-2)
    raise ValueError(cls)


def files():
    """{raf file: [(func, class, n, extra flags)]}"""
    elem, rws, mv = [], [], []
    for dt in DTYPES:
        elem += [(exact(dt).chain(), "exact", 0, ""),
                 (trans(dt).chain(), "trans", 0, ""),
                 (gelu(dt).chain(), "gelu", 0, "")]
    for dt in ["i32", "i64"]:
        elem.append((ints(dt), "exact", 0, ""))
    elem.append((big(), "exact", 0, ""))
    for dt in DTYPES:
        for name, r, c in [("warp", 37, 33), ("warp1024", 9, 1024),
                           ("block", 3, 1500), ("total", 300, 10)]:
            rws.append((rows(dt, name, r, c).chain(), "rows", c,
                        "--input=labels=@%%t/labels-%s.npy" % name))
        rws += [(cols(dt, 300, 70).chain(), "rows", 300 * 70, ""),
                (cols(dt, 9, 1024).chain(), "rows", 9 * 1024, "")]
    a, h = hand_f32()
    rws += [(a, "exact", 0, ""), (h, "rows", 33, "--input=ids=0,1,5,-1,2,0")]
    for dt in DTYPES:
        mv += [(move(dt), "exact", 0, "--input=ids=0,1,5,-1,2,0"),
               (dropout(dt), "exact", 0, "--input=key=7"),
               (mm(dt), "mm", 0, "")]
    return {"elem": elem, "rows": rws, "move": mv}


EXTRA = {
    "rows": """// The labels: every class index, ignore_index 3 every fifth row.
// RUN: %python -c "import numpy as np; r = np.random.RandomState(0); [np.save('%t/labels-' + k + '.npy', np.where(np.arange(n) %% 5 == 0, 3, r.randint(0, c, n))) for k, n, c in [('warp', 37, 33), ('warp1024', 9, 1024), ('block', 3, 1500), ('total', 300, 10)]]"
""",
}


# The plain runs whose launches TAIL checks: each schedule of docs/Codegen.md.
LOGGED = {"big_f16", "warp_f32", "block_f32", "total_f32", "cols300_f32"}

TAIL = {
    "elem": """
// The flat grid past 65,535 blocks: capped there, each thread strides.
// RUN: FileCheck %s --check-prefix=BIG < %t/big_f16.log
// BIG: launch raf_add_{{[0-9]+}} grid=65535,1,1 block=256,1,1
""",
    "rows": """
// The schedules: a warp per row (8 rows a block of 256: 37 rows, 5
// blocks; 300 rows, 38), a block of 512 per row of 1,500, column tiles (70
// columns: 3 blocks of 32), the totals' second stage (one block of 256
// over 300 rows' losses).
// RUN: FileCheck %s --check-prefix=WARP < %t/warp_f32.log
// WARP: launch raf_softmax_{{[0-9]+}} grid=5,1,1 block=256,1,1
// WARP: launch raf_cross_entropy_{{[0-9]+}} grid=5,1,1 block=256,1,1
// WARP-NEXT: launch raf_cross_entropy_{{[0-9]+}}_final grid=1,1,1 block=256,1,1
// RUN: FileCheck %s --check-prefix=BLOCK < %t/block_f32.log
// BLOCK: launch raf_softmax_{{[0-9]+}} grid=3,1,1 block=512,1,1
// RUN: FileCheck %s --check-prefix=TOTAL < %t/total_f32.log
// TOTAL: launch raf_cross_entropy_{{[0-9]+}} grid=38,1,1 block=256,1,1
// TOTAL-NEXT: launch raf_cross_entropy_{{[0-9]+}}_final grid=1,1,1 block=256,1,1
// RUN: FileCheck %s --check-prefix=TILES < %t/cols300_f32.log
// TILES: launch raf_sum_{{[0-9]+}} grid=3,1,1 block=256,1,1

// The optimizer updates (AdamW, SGD), alone and fused, three steps, of a
// step whose gradients are exact on both devices: the params and states
// within 4 ulp (docs/Numerics.md), compared as --save writes them.
// RUN: %raf-opt -p 'autodiff,optimizer{kind=adamw lr=0.1},inline' %S/Inputs/cuda-ops-fake-train.raf -o %t/adamw.raf
// RUN: %raf-opt -p 'autodiff,optimizer{kind=adamw lr=0.1},inline,fuse' %S/Inputs/cuda-ops-fake-train.raf -o %t/adamw-fused.raf
// RUN: %raf-opt -p 'autodiff,optimizer{kind=sgd lr=0.1},inline' %S/Inputs/cuda-ops-fake-train.raf -o %t/sgd.raf
// RUN: %raf-opt -p 'autodiff,optimizer{kind=sgd lr=0.1},inline,fuse' %S/Inputs/cuda-ops-fake-train.raf -o %t/sgd-fused.raf
// RUN: %{cpu} %t/adamw.raf --function=opt_train_step --steps=3 --print=none --save=%t/adamw-cpu.safetensors
// RUN: %{cpu} %t/sgd.raf --function=opt_train_step --steps=3 --print=none --save=%t/sgd-cpu.safetensors
// RUN: %{cuda} %t/adamw.raf --function=opt_train_step --steps=3 --print=none --save=%t/adamw-cuda.safetensors
// RUN: %{cuda} %t/adamw-fused.raf --function=opt_train_step --steps=3 --print=none --save=%t/adamw-fused.safetensors
// RUN: %{cuda} %t/sgd.raf --function=opt_train_step --steps=3 --print=none --save=%t/sgd-cuda.safetensors
// RUN: %{cuda} %t/sgd-fused.raf --function=opt_train_step --steps=3 --print=none --save=%t/sgd-fused.safetensors
// RUN: %python %S/Inputs/compare_safetensors.py %t/adamw-cpu.safetensors %t/adamw-cuda.safetensors 4.8e-7
// RUN: %python %S/Inputs/compare_safetensors.py %t/adamw-cpu.safetensors %t/adamw-fused.safetensors 4.8e-7
// RUN: %python %S/Inputs/compare_safetensors.py %t/sgd-cpu.safetensors %t/sgd-cuda.safetensors 4.8e-7
// RUN: %python %S/Inputs/compare_safetensors.py %t/sgd-cpu.safetensors %t/sgd-fused.safetensors 4.8e-7
""",
}


def run_lines(raf, cases, fused_big=False):
    out = []
    for f, cls, n, extra in cases:
        k = len(f.results)
        rtol, atol = tol(cls, f.name.rsplit("_", 1)[1], n)
        ex = " " + extra if extra else ""
        outs = " ".join("--output=@%%t/%s.%d.npy" % (f.name, i) for i in range(k))
        exps = " ".join("--expected-output=@%%t/%s.%d.npy" % (f.name, i)
                        for i in range(k))
        out.append("// %s: %s, rtol %.3g atol %.3g" % (f.name, cls, rtol, atol))
        out.append("// RUN: %%{cpu} %%S/Inputs/%s --function=%s%s %s"
                   % (raf, f.name, ex, outs))
        srcs = ["%%S/Inputs/%s" % raf]
        if f.name != "big_f16" or fused_big:
            srcs.append("%t/fused.raf")
        for src in srcs:
            log = ("env RAF_FAKE_CUDA_LOG=%%t/%s.log " % f.name
                   if f.name in LOGGED and src != "%t/fused.raf" else "")
            out.append("// RUN: " + log + "%%{cuda} %s --function=%s%s %s --rtol=%.17g --atol=%.17g"
                       % (src, f.name, ex, exps, rtol, atol))
    return "\n".join(out)


HEADER = """// Written by Inputs/gen_cuda_ops_fake.py (run it again after changing the
// cases): %s
// on the fake driver of test/cuda/fake_driver.c, whose PTX interpreter
// (test/cuda/ptx/) runs every kernel, and the fake cuBLASLt, which
// computes the products: each function of Inputs/%s (one op class and
// dtype) runs on cpu-ref, then on cuda alone (one-statement kernels) and
// fused (raf-opt -p fuse), checked with docs/Numerics.md's tolerance for
// the class (the line above each function's runs).
// REQUIRES: cuda-support
// DEFINE: %%{cpu} = raf-run --device=cpu --dialects=cpu-ref --seed=3
// DEFINE: %%{cuda} = env LD_LIBRARY_PATH=%%fake-cuda NVIDIA_TF32_OVERRIDE=0 raf-run --device=cuda --seed=3
// RUN: rm -rf %%t && mkdir -p %%t
// RUN: %%raf-opt -p fuse %%S/Inputs/%s -o %%t/fused.raf
"""

ABOUT = {
    "elem": ("the cuda dialect's elementwise ops (flat schedule),\n"
             "// comparisons, where, casts, max/min reductions, constants, in f32,\n"
             "// bf16, f16 (and the integer ops in i32, i64)"),
    "rows": ("the cuda dialect's row ops and reductions (warp\n"
             "// per row, block per row, column tiles, the totals' second stage) in\n"
             "// f32, bf16, f16, its f32-only hand-written kernels and the\n"
             "// optimizer updates"),
    "move": ("the cuda dialect's data movement kernels, dropout\n"
             "// (exact: the same Philox mask) and the cublas dialect's products and\n"
             "// attention, in f32, bf16, f16"),
}


def main():
    here = os.path.dirname(OUT)
    for key, cases in files().items():
        raf = "cuda-ops-fake-%s.raf" % key
        with open(os.path.join(here, raf), "w") as out:
            out.write("// Written by gen_cuda_ops_fake.py: the ops of the cuda dialect\n"
                      "// by class and dtype, for cuda-ops-fake-%s.test.\n" % key)
            for f, _, _, _ in cases:
                out.write("\n" + f.text() + "\n")
        test = os.path.join(os.path.dirname(here), "cuda-ops-fake-%s.test" % key)
        with open(test, "w") as out:
            out.write(HEADER % (ABOUT[key], raf, raf))
            out.write(EXTRA.get(key, ""))
            out.write("\n" + run_lines(raf, cases) + "\n")
            out.write(TAIL.get(key, ""))


if __name__ == "__main__":
    main()
