"""Shared parts of the exporter's tests (test/torch/): export a module with
raf_torch, run the exported function with raf-run on the same inputs and
weights, and compare its results with PyTorch's.

    run_forward(work, bindir, prefix, func, inputs, nres)  raf-run's results
    raf_grads(work, bindir, prefix, func, inputs, nres)    @FUNC_grad's results
    close(name, got, want, rtol)                          prints, returns ok

Errors are relative to the reference's largest magnitude (1e-4 by default),
as test/ref's gradients are.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

RTOL = 1e-4


def bindir():
    """The build directory: --bin DIR on the command line, or build/."""
    if "--bin" in sys.argv:
        return os.path.abspath(sys.argv[sys.argv.index("--bin") + 1])
    return os.path.join(HERE, "..", "..", "build")


def scratch(name):
    return tempfile.mkdtemp(prefix=f"raf-torch-{name}-")


def _run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        sys.exit("FAILED: " + " ".join(cmd) + "\n" + p.stdout[-3000:]
                 + p.stderr[-3000:])
    return p.stdout


def save_inputs(work, inputs):
    """inputs: {name: np.ndarray} -> raf-run --input flags."""
    flags = []
    for k, v in inputs.items():
        path = os.path.join(work, f"in.{k}.npy")
        np.save(path, v)
        flags.append(f"--input={k}=@{path}")
    return flags


def run(bin_dir, module, func, load, inputs, nres, work, tag):
    """raf-run MODULE --function=FUNC --load=LOAD with inputs; returns the
    first nres results as arrays."""
    outs = [os.path.join(work, f"{tag}.{i}.npy") for i in range(nres)]
    _run([os.path.join(bin_dir, "raf-run"), module, f"--function={func}",
          f"--load={load}"] + save_inputs(work, inputs)
         + [f"--output=@{o}" for o in outs])
    return [np.load(o) for o in outs]


def autodiff(bin_dir, module, out):
    _run([os.path.join(bin_dir, "raf-opt"), "--autodiff", module, "-o", out])


def close(name, got, want, rtol=RTOL, zero_scale=None):
    """Prints the error of got against want (max |got - want| / max
    |want|) and returns whether it is within rtol. A reference that is zero
    but for round-off (an attention key's bias: softmax ignores a constant
    added to a row of scores) is measured against zero_scale instead (the
    model's largest gradient)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        print(f"  {name:<34} shape {got.shape} vs {want.shape}  MISMATCH")
        return False
    scale = float(np.abs(want).max()) if want.size else 0.0
    if zero_scale and scale < 1e-12 * zero_scale:
        name += " (~0)"
        scale = zero_scale
    err = float(np.abs(got - want).max()) if want.size else 0.0
    rel = err / scale if scale > 0 else err
    ok = np.isfinite(rel) and rel <= rtol
    print(f"  {name:<34} max|ref| {scale:.3e}  error {rel:.2e}"
          + ("" if ok else "  MISMATCH"))
    return ok


def finish(name, ok):
    print(f"{name}: {'PASSED' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)
