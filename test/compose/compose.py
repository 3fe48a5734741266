#!/usr/bin/python3
"""compose.py --bin BUILD: the composition matrix.

Every pipeline of the table ROWS below, crossed with every model of
test/compose/models.py (an MLP with dropout, a small ResNet-like CNN with
batch_norm, a small GPT-2 with dropout, a small BERT with a masked-LM loss
using ignore_index; each with a mean and a summed loss), trains 5 AdamW
steps and is compared with the plain f32 step (the reference, row `ref`):
the loss of every step (--log), and every tensor of the checkpoint (--save):
params, Adam's moments, the step counter, batch_norm's running statistics,
the dropout key and, with f16 amp, the loss scaler's state. A cell is one
(row, model):

- `bit`: the same log and the same checkpoint, byte for byte (what the docs
  promise for fuse, plan-memory and remat, on RAF_JIT_MATH=exact);
- `f32`, `bf16`, `f16`: within the tolerances of TOL, per kind of tensor
  (docs/Numerics.md, "Composition: tolerances per pipeline pair", says why
  and what was measured);
- `refused:TEXT`: raf-opt exits non-zero with an error containing TEXT (a
  combination that cannot be made consistent).

A row may compare with another row than `ref` (`vs`): `amp-bf16+fuse+pm`
with `amp-bf16`, bit for bit. The table is the only place that says what
runs: a new pass or a new model is one row (or one entry of models.MODELS).

    /usr/bin/python3 test/compose/compose.py --bin build          # CI subset
    RAF_COMPOSE=full /usr/bin/python3 test/compose/compose.py --bin build
    ... --smoke             # the AddressSanitizer build's small subset
    ... --only 'shard.*z3' --model cnn --keep -v   # some cells, commands shown
    ... --list              # the matrix, without running it

Sharded rows run under mpirun (with a timeout, as test/dist/train_equal.py)
and are skipped, saying so, in a build without MPI; rows that need a dialect
(onednn, cblas) are skipped where raf-run does not list it. Exit status 1 when
a cell fails, else 0.
"""
import argparse, concurrent.futures, itertools, json, os, re, shutil, subprocess
import sys, tempfile, time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "pylib"))
import models  # noqa: E402
from safetensors_np import read as read_safetensors  # noqa: E402

STEPS = 5
TIMEOUT = 120
OPT = {
    "adamw": "optimizer{kind=adamw lr=1e-3 eps=1e-4}",
    "clip": "optimizer{kind=adamw lr=1e-3 eps=1e-4 clip_norm=0.05}",
}

# Tolerances per class: the largest error allowed, per kind of tensor, as
# max |x - ref| / max |ref| over each tensor (the losses: max over steps of
# |x - ref| / |ref|). docs/Numerics.md gives the measured maxima.
TOL = {
    "f32": {"loss": 1e-6, "param": 5e-4, "moment": 1e-5, "stats": 1e-5},
    "bf16": {"loss": 1e-2, "param": 0.6, "moment": 0.5, "stats": 5e-2},
    "f16": {"loss": 2e-3, "param": 0.25, "moment": 0.2, "stats": 2e-2},
}
FLOOR = 1e-2
# f16 with a summed loss: GradScaler's first scale, 2^16, overflows f16 in
# every model's first backward (a summed cross_entropy's logit gradients
# reach 1, times 2^16); the f16 cells of the sum variants start at 2^10, as
# one would give GradScaler(init_scale=...), so that no step is skipped and
# the run stays comparable with the f32 reference.
F16_SUM_SCALE = 1024

# ---------------------------------------------------------------------------
# The table. One row per pipeline:
#   name    the cell's name (a row is referred to by it in `vs`)
#   passes  raf-opt's pipeline; {opt} is the optimizer of the row's `opt`
#   world   1, or the ranks of mpirun (the pass string's shard{world=N})
#   flags   raf-run's extra flags
#   expect  "bit" | "f32" | "bf16" | "f16" | "refused:TEXT", or a dict
#           model -> one of those, "*" for the others
#   vs      the row compared with (default "ref" for opt=adamw, "ref-clip"
#           for opt=clip)
#   opt     "adamw" or "clip" (clip_norm)
#   needs   the dialects raf-run must have ("mpi" is implied by world > 1)
#   tier    "smoke" (also in the ASAN build), "ci" (the default), "full"
#           (RAF_COMPOSE=full only)
#   ci      the models the row runs with outside full (None: all)
#   env     environment for raf-run (RAF_JIT_MATH=exact unless given)
# ---------------------------------------------------------------------------
BASE = "autodiff,{opt}"
TAIL = "inline,fuse,plan-memory"


def row(name, passes, expect, world=1, flags="", vs=None, opt="adamw", needs=(),
        tier="ci", ci=None, env=None):
    return dict(name=name, passes=passes, expect=expect, world=world, flags=flags,
                vs=vs or ("ref-clip" if opt == "clip" else "ref"), opt=opt,
                needs=tuple(needs), tier=tier, ci=ci, env=env or {})


def shard(world, zero, extra=""):
    return f"shard{{world={world} zero={zero}{extra}}}"


ROWS = [
    # The references, one per optimizer.
    row("ref", BASE, "bit", tier="smoke"),
    row("ref-clip", BASE, "bit", opt="clip", tier="smoke"),
    # One process, the optimisation passes: the same bits.
    row("inline", f"{BASE},inline", "bit"),
    row("fuse", f"{BASE},inline,fuse", "bit"),
    row("plan-memory", f"{BASE},inline,plan-memory", "bit"),
    row("fuse+pm", f"{BASE},{TAIL}", "bit", tier="smoke"),
    row("fuse+pm-clip", f"{BASE},{TAIL}", "bit", opt="clip"),
    row("cse+fuse+pm", f"{BASE},inline,cse,canonicalize,dce,fuse,plan-memory", "bit"),
    # libmvec's exp, log, tanh, erf in the fused kernels: within a few ulp.
    row("fuse+pm-libmvec", f"{BASE},{TAIL}", "f32", env={"RAF_JIT_MATH": ""}),
    row("remat", f"{BASE},inline,fuse,remat{{ratio=0.7}},plan-memory", "bit",
        tier="smoke"),
    row("remat-unfused", f"{BASE},inline,remat{{ratio=0.7}},plan-memory", "bit",
        tier="full"),
    # amp, before or after the optimizer: the same step.
    row("amp-bf16", "autodiff,amp,{opt}", "bf16", tier="smoke"),
    row("amp-bf16-after-opt", "autodiff,{opt},amp", "bit", vs="amp-bf16"),
    # With amp, fuse groups amp's widening cast of the logits with
    # cross_entropy_grad, which then runs in the llvm dialect's kernel with
    # cpu-ref's numerics instead of the cblas dialect's (its vectorised
    # exp): its f32 results move by an ulp or so (docs/Fusion.md), which
    # can flip the rounding of a later bf16 or f16 product, so the step is
    # held to amp's own class against amp alone; on llvm and cpu-ref alone,
    # the same bits.
    row("amp-bf16+fuse+pm", f"autodiff,amp,{{opt}},{TAIL}", "bf16", vs="amp-bf16"),
    row("amp-bf16-cpu-ref", "autodiff,amp,{opt}", "bf16", flags="--dialects=llvm,cpu-ref"),
    row("amp-bf16+fuse+pm-cpu-ref", f"autodiff,amp,{{opt}},{TAIL}", "bit",
        flags="--dialects=llvm,cpu-ref", vs="amp-bf16-cpu-ref"),
    # amp's steps keep less (bf16 activations) beside the same f32 params
    # and moments: the CNN's cannot reach 0.7 of its peak (the MLP's,
    # with silu as its third activation, can).
    row("amp-bf16+remat", f"autodiff,amp,{{opt}},inline,fuse,remat{{ratio=0.8}},plan-memory",
        "bit", vs="amp-bf16+fuse+pm"),
    row("amp-bf16+remat-0.7", f"autodiff,amp,{{opt}},inline,fuse,remat{{ratio=0.7}},plan-memory",
        {"cnn": "refused:is below the least peak remat can reach", "*": "bit"},
        vs="amp-bf16+fuse+pm", ci=["gpt2", "mlp", "cnn"]),
    row("amp-f16", "autodiff,amp{dtype=f16},{opt}", "f16", tier="smoke"),
    row("amp-f16+fuse+pm", f"autodiff,amp{{dtype=f16}},{{opt}},{TAIL}", "f16",
        vs="amp-f16"),
    row("amp-f16+fuse+pm-cpu-ref", f"autodiff,amp{{dtype=f16}},{{opt}},{TAIL}", "bit",
        flags="--dialects=llvm,cpu-ref", vs="amp-f16-cpu-ref"),
    row("amp-f16-clip", "autodiff,amp{dtype=f16},{opt}", "f16", opt="clip"),
    row("amp-f16-cpu-ref", "autodiff,amp{dtype=f16},{opt}", "f16",
        flags="--dialects=llvm,cpu-ref"),
    # The dialects: each on or off against raf-run's default (every dialect
    # of the build, highest priority first).
    row("no-onednn", BASE, "f32", flags="--dialects=cblas,llvm,cpu-ref",
        needs=["onednn"]),
    row("no-cblas", BASE, "f32", flags="--dialects=onednn,llvm,cpu-ref",
        needs=["onednn", "cblas"]),
    row("cpu-ref", BASE, "f32", flags="--dialects=cpu-ref", needs=["cblas"]),
    row("fuse+pm-cpu-ref", f"{BASE},{TAIL}", "f32", flags="--dialects=llvm,cpu-ref",
        needs=["cblas"]),
    row("amp-bf16-no-onednn", "autodiff,amp,{opt}", "bf16",
        flags="--dialects=cblas,llvm,cpu-ref", needs=["onednn"]),
    # shard, every ZeRO level, at world 2 and 4 (full: world 4 with every model).
    *[row(f"shard-w2-z{z}", f"{BASE},{shard(2, z)}", "f32", world=2,
          tier="smoke" if z in (0, 3) else "ci") for z in range(4)],
    *[row(f"shard-w4-z{z}", f"{BASE},{shard(4, z)}", "f32", world=4,
          ci=[("mlp", "cnn"), ("gpt2", "bert"), ("mlp", "bert"), ("cnn", "gpt2")][z])
      for z in range(4)],
    row("shard-w1", f"{BASE},{shard(1, 0)}", "bit", tier="full"),
    # clip_norm's global norm over the ranks' parts.
    *[row(f"shard-w2-z{z}-clip", f"{BASE},{shard(2, z)}", "f32", world=2, opt="clip",
          tier="ci" if z in (0, 2) else "full") for z in range(4)],
    row("shard-w4-z3-clip", f"{BASE},{shard(4, 3)}", "f32", world=4, opt="clip",
        tier="full"),
    # batch_norm's two ways under shard: sync (the default) all-reduces the
    # batch statistics and trains as one process does; local (DDP) keeps
    # each rank's, all-reducing only the running statistics at the step's
    # end, so it trains otherwise (not compared) and cannot shard params.
    row("shard-w2-z1-bnsync", f"{BASE},{shard(2, 1, ' batch_norm=sync')}", "f32",
        world=2, ci=["cnn"]),
    row("shard-w2-z3-bnlocal", f"{BASE},{shard(2, 3, ' batch_norm=local')}",
        {"cnn": "refused:batch_norm=local", "*": "f32"}, world=2,
        ci=["cnn", "mlp"]),
    # shard with the other passes.
    *[row(f"shard-w2-z{z}+amp-bf16", f"autodiff,amp,{{opt}},{shard(2, z)}", "bf16",
          world=2, tier="ci" if z in (0, 3) else "full") for z in range(4)],
    *[row(f"shard-w2-z{z}+amp-f16", f"autodiff,amp{{dtype=f16}},{{opt}},{shard(2, z)}",
          "f16", world=2, tier="ci" if z in (0, 2) else "full") for z in range(4)],
    row("shard-w4-z1+amp-f16-clip", f"autodiff,amp{{dtype=f16}},{{opt}},{shard(4, 1)}",
        "f16", world=4, opt="clip", tier="full"),
    # A rank's activations are half of one process's, its params and
    # moments not: remat at 0.8 of the sharded step's peak.
    *[row(f"shard-w2-z{z}+remat", f"{BASE},{shard(2, z)},inline,fuse,remat{{ratio=0.8}},plan-memory",
          "f32", world=2, tier="ci" if z in (1, 3) else "full") for z in range(4)],
    *[row(f"shard-w{w}-z{z}+fuse+pm", f"{BASE},{shard(w, z)},{TAIL}", "f32", world=w,
          tier="smoke" if (w, z) == (2, 2) else "ci" if (w, z) == (4, 3) else "full")
      for w in (2, 4) for z in range(4)],
    row("shard-w2-z2+amp-bf16+fuse+pm", f"autodiff,amp,{{opt}},{shard(2, 2)},{TAIL}",
        "bf16", world=2),
    # overlap-comm's async collectives, with the passes around them.
    *[row(f"shard-w2-z{z}+overlap", f"{BASE},{shard(2, z)},inline,fuse,overlap-comm,plan-memory",
          "f32", world=2, tier="smoke" if z == 3 else "ci" if z == 0 else "full")
      for z in range(4)],
    row("shard-w2-z1+remat+overlap",
        f"{BASE},{shard(2, 1)},inline,fuse,remat{{ratio=0.8}},overlap-comm,plan-memory",
        "f32", world=2),
    row("shard-w2-z1+amp-f16+overlap",
        f"autodiff,amp{{dtype=f16}},{{opt}},{shard(2, 1)},inline,fuse,overlap-comm,plan-memory",
        "f16", world=2),
    row("overlap-after-plan", f"{BASE},{shard(2, 0)},{TAIL},overlap-comm",
        "refused:pass 'overlap-comm' must run before 'plan-memory'"),
    row("shard-w2-z0-no-cblas", f"{BASE},{shard(2, 0)}", "f32", world=2,
        flags="--dialects=mpi,onednn,llvm,cpu-ref", needs=["onednn", "cblas"], tier="full"),
    # Refused: orders and combinations that cannot be made consistent.
    row("amp-after-inline", f"{BASE},inline,fuse,amp",
        "refused:pass 'amp' must run before 'inline'"),
    row("remat-after-pm", f"{BASE},{TAIL},remat{{ratio=0.7}}",
        "refused:pass 'remat' must run before 'plan-memory'"),
    row("shard-after-inline", f"{BASE},inline,{shard(2, 0)}",
        "refused:pass 'shard' must run before 'inline'"),
    row("shard-before-opt", f"autodiff,{shard(2, 0)},{{opt}}",
        "refused:pass 'shard' must run after 'optimizer'"),
    row("shard-twice", f"{BASE},{shard(2, 0)},{shard(2, 1)}",
        "refused:is sharded already (world = 2)"),
    row("shard-w3", f"{BASE},{shard(3, 0)}", "refused:is not divisible by world = 3"),
    row("remat-ratio-0.1", f"{BASE},inline,fuse,remat{{ratio=0.1}},plan-memory",
        "refused:is below", tier="full"),
]
ROW = {r["name"]: r for r in ROWS}


def expectation(r, model):
    e = r["expect"]
    if isinstance(e, dict):
        e = e.get(model.split("-")[0], e["*"])
    return e


# ---------------------------------------------------------------------------
# Data: 5 global batches per model, the same for every cell.
# ---------------------------------------------------------------------------
def make_data(tmp):
    rng = np.random.default_rng(0)
    data = {}

    def save(name, a):
        path = f"{tmp}/{name}.npy"
        np.save(path, a)
        return path

    B = 256
    data["mlp"] = {"x": save("mlp.x", rng.standard_normal((STEPS * B, 8)).astype(np.float32)),
                   "labels": save("mlp.labels", rng.integers(0, 4, STEPS * B))}
    B = 16
    data["cnn"] = {"x": save("cnn.x", rng.standard_normal((STEPS * B, 3, 8, 8)).astype(np.float32)),
                   "labels": save("cnn.labels", rng.integers(0, 4, STEPS * B))}
    g = models.GPT
    toks = rng.integers(0, g["V"], (STEPS * g["B"], g["T"] + 1))
    data["gpt2"] = {"x": save("gpt2.x", toks[:, :-1]), "y": save("gpt2.y", toks[:, 1:])}
    b = models.BERT
    x = rng.integers(0, b["V"], (STEPS * b["B"], b["T"]))
    labels = np.where(rng.random(x.shape) < 0.25, x, -100)
    # Uneven counts: in the second batch the last two sequences (rank 3's at
    # world 4) mask nothing, in the fourth the first sequence masks nothing.
    labels[b["B"] + b["B"] - 2: 2 * b["B"]] = -100
    labels[3 * b["B"]] = -100
    assert all((labels[i * b["B"]:(i + 1) * b["B"]] >= 0).any() for i in range(STEPS))
    data["bert"] = {"x": save("bert.x", x), "labels": save("bert.labels", labels)}
    return data


# ---------------------------------------------------------------------------
# Running a cell.
# ---------------------------------------------------------------------------
LSAN = f"suppressions={ROOT}/test/dist/lsan.supp:fast_unwind_on_malloc=0"


def mpirun(n):
    return ["timeout", str(TIMEOUT - 10), "mpirun", "--oversubscribe",
            "--allow-run-as-root", "-np", str(n)]


def shell(cmd, env):
    extra = " ".join(f"{k}={v}" for k, v in sorted(env.items()))
    return (extra + " " if extra else "") + " ".join(
        c if re.fullmatch(r"[\w@%+=:,./{}-]+", c) else "'" + c + "'" for c in cmd)


class Cell:
    def __init__(self, r, model):
        self.row, self.model = r, model
        self.name = f"{r['name']} / {model}"
        self.expect = expectation(r, model)
        self.status, self.detail, self.cmds, self.errors = None, "", [], {}
        self.out = None


def run_cell(cell, ctx):
    try:
        return run_cell_(cell, ctx)
    except (OSError, subprocess.SubprocessError) as e:
        cell.status, cell.detail = "fail", f"{type(e).__name__}: {e}"
        return cell


def run_cell_(cell, ctx):
    r, model = cell.row, cell.model
    tag = f"{ctx.tmp}/{r['name']}.{model}"
    src = ctx.models[model]
    fn = model.split("-")[0] + "_train_step"
    passes = r["passes"].replace("{opt}", OPT[r["opt"]])
    env = {"RAF_JIT_MATH": "exact", "RAF_CACHE_DIR": f"{ctx.tmp}/kernels", **r["env"]}
    opt_cmd = [ctx.opt, "-p", passes, src, "-o", f"{tag}.raf"]
    cell.cmds.append(shell(opt_cmd, {}))
    p = subprocess.run(opt_cmd, capture_output=True, text=True, timeout=TIMEOUT)
    if cell.expect.startswith("refused:"):
        want = cell.expect[len("refused:"):]
        err = p.stderr.strip()
        located = re.search(r"(^|\n)(\S+:\d+:\d+: error: |error: pipeline: )", err)
        if p.returncode and want in err and located:
            cell.status, cell.detail = "refused", err.splitlines()[0][:160]
        else:
            cell.status = "fail"
            cell.detail = (f"expected a located error containing {want!r}; raf-opt exited "
                           f"{p.returncode}: {err[-600:] or '(nothing on stderr)'}")
        return cell
    if p.returncode:
        cell.status, cell.detail = "fail", f"raf-opt exited {p.returncode}: {p.stderr.strip()[-900:]}"
        return cell
    data = [f"--dataset={k}=@{v}" for k, v in ctx.data[model.split("-")[0]].items()]
    if "dtype=f16" in passes and model.endswith("-sum"):
        data.append(f"--input=loss_scale={F16_SUM_SCALE}")
    cmd = ([] if r["world"] == 1 else mpirun(r["world"])) + [
        ctx.rr, f"{tag}.raf", f"--function={fn}", f"--steps={STEPS}", "--threads=1",
        *data, f"--log={tag}.jsonl", f"--save={tag}.safetensors", "--print=none",
        *r["flags"].split()]
    full_env = dict(os.environ, **env)
    if r["world"] > 1:
        # Each job its own session directory: two mpiruns started at once
        # race to make the same one under /tmp ("unable to create the
        # desired directory ... File exists").
        session = f"{ctx.tmp}/o{next(ctx.jobs)}"
        os.makedirs(session)
        full_env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OMPI_MCA_rmaps_base_oversubscribe="1", LSAN_OPTIONS=LSAN,
                        OMPI_MCA_orte_tmpdir_base=session)
    cell.cmds.append(shell(cmd, env))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=full_env)
        rc, out = p.returncode, (p.stdout + p.stderr).strip()
    except subprocess.TimeoutExpired:
        rc, out = None, f"(hung: killed after {TIMEOUT} s)"
    if rc != 0:
        out = "\n".join(l for l in out.splitlines()
                        if not re.match(r"^(-{20,}|\s*$)", l))
        cell.status, cell.detail = "fail", f"raf-run exited {rc}: {out[-900:]}"
        return cell
    log = [json.loads(l) for l in open(f"{tag}.jsonl")]
    cell.out = dict(log_text=open(f"{tag}.jsonl").read(),
                    losses=np.array([np.nan if l["loss"] is None else l["loss"] for l in log]),
                    ckpt_bytes=open(f"{tag}.safetensors", "rb").read(),
                    ckpt=read_safetensors(f"{tag}.safetensors"))
    cell.status = "ran"
    return cell


def kind(name, ckpt):
    if name in ("loss_scale", "loss_scale_growth"):
        return "scaler"
    if name == "step" or name.endswith("dropout.key") or name.endswith("num_batches_tracked"):
        return "counter"
    if "running_" in name:
        return "stats"
    if name[-2:] in (".m", ".v") and name[:-2] in ckpt:
        return "moment"
    return "param"


def compare(cell, ref):
    """Errors per kind of tensor against the ref cell; returns (ok, text)."""
    a, b = cell.out, ref.out
    cls = cell.expect
    if cls == "bit":
        same_log = [l.split('"ms"')[0] for l in a["log_text"].splitlines()] == \
                   [l.split('"ms"')[0] for l in b["log_text"].splitlines()]
        if same_log and a["ckpt_bytes"] == b["ckpt_bytes"]:
            return True, "bit-identical"
        diffs = [k for k in b["ckpt"] if k not in a["ckpt"] or
                 a["ckpt"][k].tobytes() != b["ckpt"][k].tobytes()]
        extra = [k for k in a["ckpt"] if k not in b["ckpt"]]
        return False, (f"not bit-identical: losses {'equal' if same_log else 'differ'}"
                       f"; tensors that differ: {', '.join(diffs[:8]) or 'none'}"
                       + (f"; extra: {', '.join(extra)}" if extra else "")
                       + f"; {summary_errors(errors(a, b))}")
    err = errors(a, b)
    cell.errors = err
    bad = []
    extra = [k for k in a["ckpt"] if k not in b["ckpt"]]
    missing = [k for k in b["ckpt"] if k not in a["ckpt"]]
    if missing:
        bad.append(f"missing from the checkpoint: {', '.join(missing)}")
    for k in extra:
        if kind(k, a["ckpt"]) != "scaler":
            bad.append(f"unexpected tensor {k}")
    # The loss scaler after 5 clean steps, as GradScaler's: its first scale
    # (2^16, or F16_SUM_SCALE), 5 clean steps.
    if "loss_scale" in a["ckpt"] and "loss_scale" not in b["ckpt"]:
        s, g = float(a["ckpt"]["loss_scale"]), int(a["ckpt"]["loss_scale_growth"])
        first = F16_SUM_SCALE if cell.model.endswith("-sum") else 65536
        if (s, g) != (first, STEPS):
            bad.append(f"loss scaler {s:g}, {g} clean steps (expected {first}, {STEPS})")
    for k, e in err.items():
        lim = 0.0 if k in ("counter", "scaler") else TOL[cls][k]
        if not e[0] <= lim:
            bad.append(f"{k} {e[0]:.2e} > {lim:.0e} ({e[1]})")
    text = summary_errors(err)
    return (not bad), (text if not bad else "; ".join(bad) + f" [{text}]")


def errors(a, b):
    """max error per kind: (value, where)."""
    err = {}

    def put(k, v, where):
        if k not in err or not v <= err[k][0]:
            err[k] = (v, where)

    la, lb = a["losses"], b["losses"]
    if la.shape != lb.shape:
        put("loss", np.inf, f"{len(la)} steps logged, {len(lb)} expected")
    else:
        d = np.abs(la - lb) / np.maximum(np.abs(lb), 1e-30)
        i = int(np.argmax(np.where(np.isnan(d), np.inf, d)))
        put("loss", float(d[i]), f"step {i + 1}: {la[i]:.8g} vs {lb[i]:.8g}")
    # Each tensor's error is relative to its largest element, or to a floor
    # where that is near zero: a param's floor is FLOOR (the distance 5 AdamW
    # steps of lr 1e-3 can move it), a moment's a thousandth of the largest
    # moment of its kind (.m or .v) in the checkpoint. Without them a
    # gradient that is zero but for rounding (BERT's key bias: softmax does
    # not see it) compares its noise with other noise.
    top = {}
    for name, v in b["ckpt"].items():
        if kind(name, b["ckpt"]) == "moment" and v.size:
            top[name[-2:]] = max(top.get(name[-2:], 0.0), float(np.max(np.abs(v))))
    for name, v in b["ckpt"].items():
        if name not in a["ckpt"]:
            continue
        x = a["ckpt"][name]
        k = kind(name, b["ckpt"])
        if x.shape != v.shape:
            put(k, np.inf, f"{name}: shape {x.shape} vs {v.shape}")
            continue
        x, v = x.astype(np.float64), v.astype(np.float64)
        if k in ("counter", "scaler"):
            put(k, float(np.any(x != v)), name)
            continue
        if not v.size:
            continue
        floor = {"param": FLOOR, "moment": 1e-3 * top.get(name[-2:], 0.0)}.get(k, 0.0)
        scale = max(float(np.max(np.abs(v))), floor, 1e-30)
        e = float(np.max(np.abs(x - v))) / scale
        put(k, np.inf if np.isnan(e) else e, name)
    return err


def summary_errors(err):
    return ", ".join(f"{k} {v[0]:.1e}" for k, v in sorted(err.items())
                     if k not in ("counter", "scaler"))


# ---------------------------------------------------------------------------
def dialects(rr):
    p = subprocess.run([rr, "--version"], capture_output=True, text=True)
    return set(p.stdout.partition("dialects:")[2].strip(" )\n").split())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="the build directory (raf-opt, raf-run)")
    ap.add_argument("--smoke", action="store_true",
                    help="the rows of tier smoke only (the ASAN build)")
    ap.add_argument("--full", action="store_true", help="as RAF_COMPOSE=full")
    ap.add_argument("--only", help="a regular expression on row names")
    ap.add_argument("--model", action="append",
                    help="a model (mlp) or model variant (mlp-sum); repeatable")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--list", action="store_true", help="print the cells, run nothing")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every cell's commands and errors")
    args = ap.parse_args()
    full = args.full or os.environ.get("RAF_COMPOSE") == "full"
    mode = "full" if full else "smoke" if args.smoke else "ci"
    opt, rr = os.path.join(args.bin, "raf-opt"), os.path.join(args.bin, "raf-run")
    have = dialects(rr)

    variants = [f"{m}-{red}" for m in models.MODELS for red in ("mean", "sum")]
    if args.model:
        variants = [v for v in variants
                    if v in args.model or v.split("-")[0] in args.model]
    cells, skipped = [], []
    tiers = {"smoke": ("smoke",), "ci": ("smoke", "ci"), "full": ("smoke", "ci", "full")}
    for r in ROWS:
        if r["tier"] not in tiers[mode]:
            continue
        if args.only and not re.search(args.only, r["name"]):
            continue
        for m in variants:
            if mode == "ci" and r["ci"] and m.split("-")[0] not in r["ci"]:
                continue
            c = Cell(r, m)
            need = set(r["needs"]) | ({"mpi"} if r["world"] > 1 else set())
            if need - have and not c.expect.startswith("refused:"):
                c.status, c.detail = "skip", f"raf-run has no {', '.join(sorted(need - have))}"
                skipped.append(c)
                continue
            cells.append(c)
    # The rows others compare with run first, and with every model they serve.
    by_key = {(c.row["name"], c.model): c for c in cells}
    for c in list(cells):
        vs = c.row["vs"]
        if not c.expect.startswith("refused:") and (vs, c.model) not in by_key:
            base = Cell(ROW[vs], c.model)
            by_key[(vs, c.model)] = base
            cells.append(base)
    if args.list:
        for c in cells + skipped:
            r = c.row
            print(f"{c.name:44} {c.expect:40} world {r['world']}  "
                  f"{r['passes'].replace('{opt}', OPT[r['opt']])} {r['flags']}")
        print(f"{len(cells)} cells, {len(skipped)} skipped")
        return 0

    tmp = tempfile.mkdtemp(prefix="raf-compose-")
    start = time.time()
    paths = models.write(tmp)
    ctx = argparse.Namespace(tmp=tmp, opt=opt, rr=rr, models=paths, data=make_data(tmp),
                             jobs=itertools.count())
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(lambda c: run_cell(c, ctx), cells))

    counts = {"equal": 0, "refused": 0, "fail": 0}
    worst = {}
    for c in cells:
        if c.status == "ran":
            ref = by_key[(c.row["vs"], c.model)]
            if c.row["vs"] == c.row["name"]:
                c.status, c.detail = "equal", "the reference"
            elif ref.out is None:
                c.status, c.detail = "fail", f"its reference {ref.name} did not run"
            else:
                ok, c.detail = compare(c, ref)
                c.status = "equal" if ok else "fail"
        st = c.status
        counts["equal" if st == "equal" else "refused" if st == "refused" else "fail"] += 1
        if c.status == "equal" and c.expect in TOL:
            for k, (v, where) in c.errors.items():
                if k in TOL[c.expect]:
                    key = (c.expect, k)
                    if key not in worst or v > worst[key][0]:
                        worst[key] = (v, f"{c.name}: {where}")
        mark = {"equal": "ok  ", "refused": "ok  ", "fail": "FAIL"}[c.status]
        print(f"{mark} {c.name}: {c.expect}: {c.detail}")
        if c.status == "fail" or args.verbose:
            for cmd in c.cmds:
                print(f"       $ {cmd}")
    for c in skipped:
        print(f"skip {c.name}: {c.detail}")
    for (cls, k), (v, where) in sorted(worst.items()):
        print(f"max error {cls:5} {k:7} {v:.2e} (tolerance {TOL[cls][k]:.0e}) at {where}")
    elapsed = time.time() - start
    print(f"compose ({mode}): {len(cells)} cells: {counts['equal']} equal, "
          f"{counts['refused']} refused as expected, {counts['fail']} failed, "
          f"{len(skipped)} skipped, in {elapsed:.0f} s")
    if args.keep or counts["fail"]:
        print(f"work directory: {tmp}" + ("" if args.keep else " (kept for the failures)"))
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
