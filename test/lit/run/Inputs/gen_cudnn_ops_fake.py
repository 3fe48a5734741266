#!/usr/bin/python3
"""Writes Inputs/cudnn-ops-fake.raf and prints the RUN lines of
cudnn-ops-fake.test: every op of the cudnn dialect but attention
(lang/dialects.def's CUDNN rows) in f32, bf16 and f16 (batch_norm and its
gradient in f32, the dtypes cudnn has them in), one function per
(op group, dtype), each run on cpu-ref and then on the fake cuDNN (logging its graphs to
%t/FUNCTION.log) and held to docs/Numerics.md's cudnn row:

  f32        rtol 1e-5, atol 1e-5 (float rounding of the fake's double
             sums against cpu-ref's; the atol for sums that cancel)
  bf16, f16  one ulp of the dtype (2^-7, 2^-10) relative, atol 1e-5: the
             same float sum rounded once to the dtype, or to a neighbour

bf16 results are cast to f32 before they are returned (NumPy has no bf16
for --output); the cast is exact. Run it again after changing the cases:
    /usr/bin/python3 test/lit/run/Inputs/gen_cudnn_ops_fake.py > runs.txt
"""
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                   "cudnn-ops-fake.raf")
N = "normal(0, 1)"
U = "uniform(0.5, 2)"
TOL = {"f32": (1e-5, 1e-5), "bf16": (2.0 ** -7, 1e-5),
       "f16": (2.0 ** -10, 1e-5)}

# x [2, 4, 9, 9]; each convolution: (name, w's shape, attrs, y's shape).
X = [2, 4, 9, 9]
CONVS = [
    ("s2p1", [6, 4, 3, 3], "stride = [2, 2], padding = [1, 1]", [2, 6, 5, 5]),
    ("dil2", [6, 4, 3, 3], "padding = [2, 2], dilation = [2, 2]",
     [2, 6, 9, 9]),
    ("grp2", [6, 2, 3, 3], "padding = [1, 1], groups = 2", [2, 6, 9, 9]),
    ("dw", [4, 1, 3, 3], "padding = [1, 1], groups = 4", [2, 4, 9, 9]),
    ("all", [6, 2, 3, 2],
     "stride = [2, 1], padding = [1, 1], dilation = [2, 2], groups = 2",
     [2, 6, 4, 9]),
]
# Pooling of x [2, 3, 9, 9]: kernel 3, stride 2, padding 1.
PX = [2, 3, 9, 9]
PY = [2, 3, 5, 5]
POOL = "kernel = [3, 3], stride = [2, 2], padding = [1, 1]"
BX = [4, 3, 5, 5]


def sh(dims):
    return "[" + ",".join(str(d) for d in dims) + "]"


class Func:
    def __init__(self, name, dt):
        self.name, self.dt = name, dt
        self.args, self.body, self.results = [], [], []

    def arg(self, name, dims, init=N, dt=None):
        self.args.append("%%%s: %s%s {init = \"%s\"}"
                         % (name, dt or self.dt, sh(dims), init))

    def s(self, line):
        self.body.append("  " + line)

    def ret(self, v, dims, dt=None):
        dt = dt or self.dt
        if dt == "bf16":
            self.s("%%%s.r = cast(%%%s) {dtype = f32}" % (v, v))
            v, dt = v + ".r", "f32"
        self.results.append((v, dt + sh(dims)))

    def text(self):
        out = ["func @%s(%s)\n    -> (%s) {"
               % (self.name, ", ".join(self.args),
                  ", ".join(t for _, t in self.results))]
        out += self.body
        out.append("  return " + ", ".join("%" + v for v, _ in self.results))
        out.append("}")
        return "\n".join(out)


def conv(dt):
    f = Func("conv_" + dt, dt)
    f.arg("x", X)
    for name, w, attrs, y in CONVS:
        f.arg("w_" + name, w)
    for name, w, attrs, y in CONVS:
        f.s("%%%s = conv2d(%%x, %%w_%s) {%s}" % (name, name, attrs))
        f.ret(name, y)
    return f


def conv_grad(dt):
    f = Func("conv_grad_" + dt, dt)
    f.arg("x", X)
    for name, w, attrs, y in CONVS:
        f.arg("w_" + name, w)
        f.arg("dy_" + name, y)
    for name, w, attrs, y in CONVS:
        f.s("%%dx_%s = conv2d_grad_input(%%dy_%s, %%w_%s) {%s, shape = %s}"
            % (name, name, name, attrs, ", ".join(map(str, X)).join("[]")))
        f.ret("dx_" + name, X)
        f.s("%%dw_%s = conv2d_grad_weight(%%dy_%s, %%x) {%s, shape = %s}"
            % (name, name, attrs, ", ".join(map(str, w)).join("[]")))
        f.ret("dw_" + name, w)
    return f


def pool(dt):
    f = Func("pool_" + dt, dt)
    f.arg("x", PX)
    f.arg("dy", PY)
    f.s("%%max = max_pool2d(%%x) {%s}" % POOL)
    f.ret("max", PY)
    f.s("%%dmax = max_pool2d_grad(%%dy, %%x) {%s}" % POOL)
    f.ret("dmax", PX)
    f.s("%%avg = avg_pool2d(%%x) {%s}" % POOL)
    f.ret("avg", PY)
    f.s("%%davg = avg_pool2d_grad(%%dy) {%s, shape = %s}"
        % (POOL, ", ".join(map(str, PX)).join("[]")))
    f.ret("davg", PX)
    return f


def batch_norm():
    f = Func("bn_f32", "f32")
    f.arg("x", BX)
    f.arg("dy", BX)
    f.arg("g", [3], U)
    f.arg("b", [3])
    f.arg("m", [3])
    f.arg("v", [3], U)
    f.s("%y, %nm, %nv = batch_norm(%x, %g, %b, %m, %v) {eps = 0.001, "
        "momentum = 0.3}")
    f.ret("y", BX)
    f.ret("nm", [3])
    f.ret("nv", [3])
    f.s("%ye, %me, %ve = batch_norm(%x, %g, %b, %m, %v) {training = false}")
    f.ret("ye", BX)
    f.ret("me", [3])
    f.ret("ve", [3])
    f.s("%dx, %dg, %db = batch_norm_grad(%dy, %x, %g, %m, %v) {eps = 0.001}")
    f.ret("dx", BX)
    f.ret("dg", [3])
    f.ret("db", [3])
    return f


def main():
    funcs = []
    for dt in ["f32", "bf16", "f16"]:
        funcs += [conv(dt), conv_grad(dt), pool(dt)]
    funcs.append(batch_norm())
    with open(OUT, "w") as out:
        out.write("// Written by gen_cudnn_ops_fake.py: the ops of the cudnn "
                  "dialect by group\n// and dtype, for cudnn-ops-fake.test."
                  "\n\n")
        out.write("\n\n".join(f.text() for f in funcs) + "\n")
    for f in funcs:
        rtol, atol = TOL[f.dt]
        n = len(f.results)
        outs = " ".join("--output=@%%t/%s.%d.npy" % (f.name, i)
                        for i in range(n))
        exps = " ".join("--expected-output=@%%t/%s.%d.npy" % (f.name, i)
                        for i in range(n))
        print("// %s: rtol %.3g atol %.3g" % (f.name, rtol, atol))
        print("// RUN: %%{cpu} %%S/Inputs/cudnn-ops-fake.raf --function=%s %s"
              % (f.name, outs))
        print("// RUN: env RAF_FAKE_CUDNN_LOG=%%t/%s.log %%{cuda} "
              "%%S/Inputs/cudnn-ops-fake.raf --function=%s %s --rtol=%r "
              "--atol=%r" % (f.name, f.name, exps, rtol, atol))


if __name__ == "__main__":
    main()
