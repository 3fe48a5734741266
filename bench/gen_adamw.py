#!/usr/bin/python3
"""Writes bench/adamw.sh's module: the AdamW update alone, over the params
of a .raf forward model (GPT-2 124M from examples/gpt2/gen_gpt2.py).

    /usr/bin/python3 bench/gen_adamw.py gpt2.raf update.raf

@u_grad takes every {param} argument of the model's first function (same
name, type and init) and, after them, one plain argument per param holding
its gradient (`%NAME.grad`, init normal(0, 0.01)); it returns a constant
loss and the gradients as they came. So `raf-opt -p 'optimizer{kind=adamw},
inline,fuse'` makes @u_train_step, a training step whose only work is the
update of every param and its two moments.
"""
import re
import sys


def params(text):
    """[(name, type, init)] of the {param} arguments of the first function."""
    head = text[text.index("func @"):]
    head = head[:head.index(") ->")]
    return re.findall(r'%([\w.]+): (f32\[[\d,]*\]) \{param, init = "([^"]*)"\}',
                      head)


def generate(ps):
    args = [f'%{n}: {t} {{param, init = "{i}"}}' for n, t, i in ps]
    args += [f'%{n}.grad: {t} {{init = "normal(0, 0.01)"}}' for n, t, _ in ps]
    results = ["f32[]"] + [t for _, t, _ in ps]
    lines = [f"// The AdamW update alone over {len(ps)} params "
             f"(written by bench/gen_adamw.py).",
             "func @u_grad(" + ",\n             ".join(args) + ") -> ("
             + ", ".join(results) + ") {",
             "  %loss = constant 0.0 : f32[]",
             "  return %loss, " + ", ".join(f"%{n}.grad" for n, _, _ in ps),
             "}"]
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen_adamw.py MODEL.raf OUT.raf")
    ps = params(open(sys.argv[1]).read())
    if not ps:
        sys.exit(f"gen_adamw: no {{param}} arguments in {sys.argv[1]}")
    with open(sys.argv[2], "w") as f:
        f.write(generate(ps))


if __name__ == "__main__":
    main()
