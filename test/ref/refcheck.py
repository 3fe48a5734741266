"""Shared parts of the reference checks in test/ref/: raf's training step
against PyTorch's on the same model, weights and batches.

A check (check_mlp.py, check_gpt2.py) builds its model in torch, and calls
`run_check` with the .raf module, the initial weights, the batches and a
torch function for the loss. `run_check` then
  1. writes the weights as safetensors (raf_torch.safetensors) and the
     batches as .npy, into a scratch directory;
  2. runs STEPS steps of torch.optim.AdamW in f32, recording the losses,
     and the first step's gradients in f64;
  3. runs `raf-opt --autodiff` on the module and `raf-run` on @F_grad for
     the first batch (--load, --output per gradient), then `raf-opt
     --autodiff --optimizer=...` and `raf-run` on @F_train_step for STEPS
     steps (--load, --dataset, --log);
  4. prints both loss curves and every gradient's error, and exits 1 on a
     mismatch: a loss off by more than LOSS_RTOL relatively, or a gradient
     whose largest error exceeds GRAD_RTOL times its largest element.

The pieces serve other checks too: `setup_of(check.main)` returns what a
check passes to run_check (model, weights, batches, torch loss) without
running it; `torch_grads` (in any dtype, optionally under torch.autocast),
`raf_grads` (@F_grad after any pipeline), `raf_steps` (losses of N steps of
any function) and `workdir`. check_amp.py uses them for the amp pass.
"""
import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import torch
except ImportError as e:  # CI installs python3-torch (scripts/install-deps.sh)
    sys.exit(f"test/ref: the reference checks need NumPy and PyTorch, and "
             f"the import failed ({e}); install python3-numpy and "
             f"python3-torch and run them with /usr/bin/python3")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from raf_torch import safetensors as raf_safetensors  # noqa: E402

STEPS = 20
LOSS_RTOL = 1e-4
GRAD_RTOL = 1e-4

def write_safetensors(path, tensors):
    """tensors: [(name, np.ndarray)] in order, written by the PyTorch
    exporter's writer (python/raf_torch/safetensors.py)."""
    raf_safetensors.write(path, tensors, producer="raf test/ref")


def parse_args(doc, steps=STEPS, forward_only=True):
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--bin", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build"),
        help="the build directory holding raf-opt and raf-run")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the files to DIR and keep them")
    ap.add_argument("--steps", type=int, default=steps)
    if forward_only:
        ap.add_argument("--forward-only", action="store_true",
                        help="compare only the forward loss of the first "
                             "batch (raf-run on @F; no autodiff, no optimizer)")
    return ap.parse_args()


@contextlib.contextmanager
def workdir(name, keep):
    """The scratch directory: KEEP (made, and kept) or a new temporary one,
    removed afterwards."""
    work = keep or tempfile.mkdtemp(prefix=f"raf-ref-{name}-")
    os.makedirs(work, exist_ok=True)
    try:
        yield work
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _run(cmd, what, fatal=True):
    """Runs cmd; returns (ok, seconds). A failure is reported with the
    command and its output, and ends the check when fatal."""
    t = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        out = (p.stdout[-4000:] + p.stderr[-4000:]).strip()
        print(f"FAILED: {what} exited {p.returncode}:\n  " + " ".join(cmd)
              + "\n" + (out or "(it printed nothing)"))
        if fatal:
            sys.exit(1)
    return p.returncode == 0, time.time() - t


def adamw_options(adamw):
    """The optimizer pass's options for `adamw` (lr=... beta1=... ...)."""
    return " ".join(f"{k}={adamw[k]!r}" for k in
                    ("lr", "beta1", "beta2", "eps", "weight_decay"))


def torch_train(params, batches, loss_fn, steps, adamw):
    """STEPS steps of torch.optim.AdamW in f32 from `params` (name ->
    np.ndarray), on batch s % len(batches) at step s. Returns the losses."""
    torch.manual_seed(0)
    ps = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    opt = torch.optim.AdamW(list(ps.values()), lr=adamw["lr"],
                            betas=(adamw["beta1"], adamw["beta2"]),
                            eps=adamw["eps"],
                            weight_decay=adamw["weight_decay"])
    losses = []
    for s in range(steps):
        batch = [torch.from_numpy(b) for b in batches[s % len(batches)]]
        opt.zero_grad()
        loss = loss_fn(ps, *batch)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def torch_grads(params, batch, loss_fn, dtype=np.float64, autocast=None):
    """The loss and gradients of one batch, params and float inputs in
    `dtype` (f64 by default); with autocast (a torch dtype) the forward pass
    runs under torch.autocast("cpu", dtype=autocast), so the gradients are
    the .grad of the `dtype` params."""
    ps = {k: torch.tensor(v.astype(dtype), requires_grad=True)
          for k, v in params.items()}
    b = [torch.from_numpy(x if x.dtype.kind != "f" else x.astype(dtype))
         for x in batch]
    if autocast is None:
        loss = loss_fn(ps, *b)
    else:
        with torch.autocast("cpu", dtype=autocast):
            loss = loss_fn(ps, *b)
    loss.backward()
    return loss.item(), {k: p.grad.numpy() for k, p in ps.items()}


class _Setup(Exception):
    """run_check's arguments, raised out of a check's main() by setup_of."""
    def __init__(self, setup):
        super().__init__("run_check called by setup_of")
        self.setup = setup


_capturing = False


def setup_of(main):
    """The arguments a check's main() passes to run_check, as a dict (name,
    module_text, func, params, inputs, batches, loss_fn, adamw), without
    running the check: so that another check (check_amp.py) uses the same
    model, weights and batches."""
    global _capturing
    _capturing = True
    try:
        main()
    except _Setup as e:
        return e.setup
    finally:
        _capturing = False
    raise RuntimeError(f"{main.__module__}.main did not call run_check")


def tools(bindir, name):
    """raf-opt and raf-run in bindir; exits when one is missing."""
    bindir = os.path.abspath(bindir)
    found = [os.path.join(bindir, t) for t in ("raf-opt", "raf-run")]
    for tool in found:
        if not os.access(tool, os.X_OK):
            sys.exit(f"{name}: {tool} not found (--bin names the build directory)")
    return found


def optimize(raf_opt, work, passes, out_file):
    """raf-opt -p PASSES work/model.raf -o work/OUT_FILE; exits on a
    failure (reported)."""
    _run([raf_opt, "-p", passes, os.path.join(work, "model.raf"), "-o",
          os.path.join(work, out_file)], f"raf-opt -p '{passes}'")


def raf_grads(raf_opt, raf_run, work, passes, func, params, inputs, tag):
    """Runs `raf-opt -p PASSES` (autodiff first) on work/model.raf and
    raf-run on @FUNC_grad for the first batch (work/INPUT0.npy) with the
    weights of work/init.safetensors. Returns (loss, {param: gradient}), or
    None when raf-run fails (reported). `tag` names its files."""
    P = os.path.join
    optimize(raf_opt, work, passes, f"{tag}.raf")
    nres = 1 + len(params)
    ok, _ = _run(
        [raf_run, P(work, f"{tag}.raf"), f"--function={func}_grad",
         "--load=" + P(work, "init.safetensors")]
        + [f"--input={inp}=@{P(work, inp + '0.npy')}" for inp in inputs]
        + [f"--output=@{P(work, f'{tag}.g{i}.npy')}" for i in range(nres)],
        f"raf-run @{func}_grad ({passes})", fatal=False)
    if not ok:
        return None
    loss = float(np.load(P(work, f"{tag}.g0.npy")))
    return loss, {pname: np.load(P(work, f"{tag}.g{i + 1}.npy"))
                  for i, (pname, _) in enumerate(params)}


def raf_steps(raf_run, work, module_file, function, steps, inputs, tag,
              init="init.safetensors"):
    """raf-run on @FUNCTION of work/MODULE_FILE for `steps` steps (a
    training step, or a forward function: then every step is the loss of
    one batch) from work/INIT, on the datasets work/INPUT.npy. Returns
    (losses, seconds), the losses from raf-run's --log; losses is None when
    raf-run fails (reported)."""
    P = os.path.join
    log = P(work, f"{tag}.jsonl")
    ok, t = _run(
        [raf_run, P(work, module_file), f"--function={function}",
         f"--steps={steps}", "--load=" + P(work, init),
         "--log=" + log,
         # one --output, so that raf-run does not print every updated param
         # and state
         "--output=@" + P(work, f"{tag}.last_loss.npy")]
        + [f"--dataset={inp}=@{P(work, inp + '.npy')}" for inp in inputs],
        f"raf-run @{function} ({module_file})", fatal=False)
    if not ok:
        return None, t
    with open(log) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()], t


def run_check(name, module_text, func, params, inputs, batches, loss_fn,
              adamw, grad_scale_of=None):
    """name: the check's name; module_text: the forward model (.raf);
    func: its function (@func, @func_grad, @func_train_step); params:
    [(name, f32 array)] in argument order; inputs: the batch arguments'
    names; batches: a list of tuples of arrays, one per input, each one
    batch; loss_fn(params_dict, *batch) -> torch scalar; adamw: lr, beta1,
    beta2, eps, weight_decay; grad_scale_of: {param: other param} for
    params whose exact gradient is zero (an attention key's bias: softmax
    ignores a constant added to every score of a row), whose error is
    measured against the other param's largest gradient instead of their
    own (round-off against zero)."""
    if _capturing:
        raise _Setup(dict(name=name, module_text=module_text, func=func,
                          params=params, inputs=inputs, batches=batches,
                          loss_fn=loss_fn, adamw=adamw,
                          grad_scale_of=grad_scale_of or {}))
    a = parse_args(f"{name}: raf against PyTorch")
    raf_opt, raf_run = tools(a.bin, name)
    with workdir(name, a.keep) as work:
        check = _check_forward if a.forward_only else _check
        ok = check(name, work, raf_opt, raf_run, module_text, func, params,
                   inputs, batches, loss_fn, adamw, a.steps,
                   grad_scale_of or {})
    print(f"{name}: {'PASSED' if ok else 'FAILED'}")
    sys.exit(0 if ok else 1)


def write_files(work, module_text, params, inputs, batches):
    """The model, the weights, the batches (all of them stacked along axis
    0, as raf-run --dataset slices them; and the first alone)."""
    P = os.path.join
    with open(P(work, "model.raf"), "w") as f:
        f.write(module_text)
    write_safetensors(P(work, "init.safetensors"), params)
    for i, inp in enumerate(inputs):
        np.save(P(work, f"{inp}.npy"),
                np.concatenate([b[i] for b in batches], axis=0))
        np.save(P(work, f"{inp}0.npy"), batches[0][i])


def _check_forward(name, work, raf_opt, raf_run, module_text, func, params,
                   inputs, batches, loss_fn, adamw, steps, grad_scale_of):
    P = os.path.join
    write_files(work, module_text, params, inputs, batches)
    ref_loss0, _ = torch_grads(dict(params), batches[0], loss_fn)
    _run([raf_run, P(work, "model.raf"), f"--function={func}",
          "--load=" + P(work, "init.safetensors"),
          "--output=@" + P(work, "loss.npy")]
         + [f"--input={inp}=@{P(work, inp + '0.npy')}" for inp in inputs],
         f"raf-run @{func}")
    loss = float(np.load(P(work, "loss.npy")))
    d = abs(loss - ref_loss0) / abs(ref_loss0)
    print(f"{name}: forward loss of batch 1: raf {loss:.7f}, torch (f64) "
          f"{ref_loss0:.7f}, rel. diff {d:.2e}")
    return d <= LOSS_RTOL


def _check(name, work, raf_opt, raf_run, module_text, func, params, inputs,
           batches, loss_fn, adamw, steps, grad_scale_of):
    P = os.path.join
    pdict = dict(params)
    write_files(work, module_text, params, inputs, batches)

    # PyTorch.
    t = time.time()
    ref_losses = torch_train(pdict, batches, loss_fn, steps, adamw)
    ref_loss0, ref_grads = torch_grads(pdict, batches[0], loss_fn)
    t_torch = time.time() - t

    # raf: the gradients of the first batch, then the training steps.
    opts = adamw_options(adamw)
    _, t_opt = _run([raf_opt, "--autodiff", f"--optimizer=kind=adamw {opts}",
                     P(work, "model.raf"), "-o", P(work, "step.raf")],
                    "raf-opt --autodiff --optimizer")
    # @f_grad from a module of its own (autodiff alone), so that a failure
    # of the training step does not hide the gradients.
    grads = raf_grads(raf_opt, raf_run, work, "autodiff", func, params,
                      inputs, "grad")
    raf_losses, t_train = raf_steps(raf_run, work, "step.raf",
                                    f"{func}_train_step", steps, inputs,
                                    "log")
    train_ok = raf_losses is not None
    raf_losses = raf_losses or []

    ok = grads is not None and train_ok
    print(f"{name}: {steps} steps of AdamW ({opts}); "
          f"torch {t_torch:.2f} s, raf-opt {t_opt:.2f} s, raf-run {t_train:.2f} s")
    print(f"{'step':>4}  {'torch':>12}  {'raf':>12}  {'rel. diff':>9}")
    if len(raf_losses) != steps:
        print(f"raf's log has {len(raf_losses)} steps, not {steps}")
        ok = False
    for s in range(steps):
        r = raf_losses[s] if s < len(raf_losses) else None
        if r is None:
            print(f"{s + 1:>4}  {ref_losses[s]:>12.7f}  {'-':>12}")
            ok = False
            continue
        d = abs(r - ref_losses[s]) / abs(ref_losses[s])
        bad = d > LOSS_RTOL
        ok &= not bad
        print(f"{s + 1:>4}  {ref_losses[s]:>12.7f}  {r:>12.7f}  {d:>9.2e}"
              + ("  MISMATCH" if bad else ""))
    if grads is None:
        return False
    raf_loss0, got = grads

    print(f"gradients of step 1 (torch in f64; error = max |raf - torch| / "
          f"max |torch|, at most {GRAD_RTOL:g}):")
    d = abs(raf_loss0 - ref_loss0) / abs(ref_loss0)
    bad = d > LOSS_RTOL
    ok &= not bad
    print(f"  {'loss':<28} {raf_loss0:.7f} vs {ref_loss0:.7f}  {d:.2e}"
          + ("  MISMATCH" if bad else ""))
    for pname, _ in params:
        g, r = got[pname], ref_grads[pname]
        if g.shape != r.shape:
            print(f"  {pname:<28} shape {g.shape} vs {r.shape}  MISMATCH")
            ok = False
            continue
        scale = float(np.abs(ref_grads[grad_scale_of.get(pname, pname)]).max())
        err = float(np.abs(g.astype(np.float64) - r).max())
        rel = err / scale if scale > 0 else err
        bad = not np.isfinite(rel) or rel > GRAD_RTOL
        ok &= not bad
        other = grad_scale_of.get(pname)
        print(f"  {pname:<28} max|g| {scale:.3e}  error {rel:.2e}"
              + (f" (exactly 0; scale of {other})" if other else "")
              + ("  MISMATCH" if bad else ""))
    return ok
