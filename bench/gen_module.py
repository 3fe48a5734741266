#!/usr/bin/env python3
"""gen_module.py N > out.raf: a module of about N statements.

The statements are a realistic mix of a transformer's forward and backward
ops (matmul, add with broadcasting, gelu, layer_norm, softmax, reshape,
transpose, reductions, constants), in functions of about 1000 statements,
with every result type left out so that inference runs on each one.
"""
import sys

BODY = [
    "%{p}a = matmul({inp}, %w)",
    "%{p}b = add(%{p}a, %bias)",
    "%{p}c = gelu(%{p}b)",
    "%{p}d = layer_norm(%{p}c, %g, %bt) {{eps = 1e-5}}",
    "%{p}e = reshape(%{p}d) {{shape = [8, 16, 64]}}",
    "%{p}f = transpose(%{p}e) {{perm = [1, 0, 2]}}",
    "%{p}s = softmax(%{p}f) {{axis = -1}}",
    "%{p}k = constant 0.5 : f32[]",
    "%{p}m = mul(%{p}s, %{p}k)",
    "%{p}r = sum(%{p}m) {{axes = [0], keepdims = true}}",
    "%{p}t = sub(%{p}m, %{p}r)",
    "%{p}u = mean(%{p}t)",
    "%{p}y = reshape(%{p}t) {{shape = [128, 64]}}",
]


def main():
    n = int(sys.argv[1])
    per_func = 1000
    funcs = max(1, n // per_func)
    reps = per_func // len(BODY)
    out = sys.stdout
    for f in range(funcs):
        out.write(f"func @f{f}(%x: f32[128,64], %w: f32[64,64], %bias: f32[64], "
                  f"%g: f32[64], %bt: f32[64]) -> f32[] {{\n")
        last = None
        inp = "%x"
        for r in range(reps):
            p = f"v{r}."
            for line in BODY:
                out.write("  " + line.format(p=p, inp=inp) + "\n")
            inp = f"%{p}y"  # each block feeds the next
            last = f"%{p}u"
        if last is None:
            last = "%x"
        # Keep every chain alive: add the means up.
        acc = "%v0.u"
        for r in range(1, reps):
            out.write(f"  %acc{r} = add({acc}, %v{r}.u)\n")
            acc = f"%acc{r}"
        out.write(f"  return {acc}\n}}\n\n")


if __name__ == "__main__":
    main()
