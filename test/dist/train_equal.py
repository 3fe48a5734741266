#!/usr/bin/env python3
"""train_equal.py --bin BUILD: data parallelism trains as one process does.

For the MLP example and a small GPT-2 (examples/gpt2), world 2 and 4, and
each ZeRO level 0..3: `raf-opt -p 'autodiff,optimizer,shard{world=N
zero=Z},inline,fuse,plan-memory'`, then `mpirun -np N raf-run` for 10
AdamW steps on the same global batches (--dataset) from the same init.
The losses of every step (rank 0's --log) and the trained params and
states (--save, one full checkpoint) must equal the single-process run's
to a relative 1e-5: the sums run in another order, nothing else differs.

The per-rank model state follows ZeRO's formulas: `raf-opt --stats` gives
the bytes of the step's arguments, which are the local batch plus the
params (4 bytes each, or a part of them at zero=3) and AdamW's two moments
(whole at zero=0, parts from zero=1), parts padded to a multiple of N.

Every mpirun runs under a timeout, so a hang fails the test. Skipped (exit
77, as CTest's SKIP_RETURN_CODE) when raf-run was built without MPI.
"""
import argparse, json, os, re, struct, subprocess, sys, tempfile
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 10
TIMEOUT = 180


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dt = {"F32": np.float32, "F64": np.float64, "I64": np.int64}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dt[t["dtype"]]).reshape(t["shape"])
    return out


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, **kw)
    if p.returncode:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-4000:]}")
    return p


def mpirun(n):
    env = ["env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
           "OMPI_MCA_rmaps_base_oversubscribe=1"]
    return env + ["timeout", str(TIMEOUT - 10), "mpirun", "--oversubscribe",
                  "--allow-run-as-root", "-np", str(n)]


def losses(log):
    return np.array([json.loads(l)["loss"] for l in open(log)], np.float64)


def check_memory(opt):
    """The step's argument bytes per rank against ZeRO's formulas, for the
    MLP (psi = 203,530 params; the local batch x f32[100/N,784] and labels
    i64[100/N]; AdamW's %step, 4 bytes)."""
    shapes = [(784, 256), (256,), (256, 10), (10,)]
    sizes = [int(np.prod(s)) for s in shapes]
    psi = sum(sizes)
    failures = 0
    for world in (2, 4):
        part = sum(-(-n // world) for n in sizes)  # padded parts
        data = (100 // world) * (784 * 4 + 8) + 4
        expect = {0: 4 * psi + 8 * psi, 1: 4 * psi + 8 * part,
                  2: 4 * psi + 8 * part, 3: 12 * part}
        for zero, state in expect.items():
            p = run([opt, "-p", "autodiff,optimizer{kind=adamw},"
                     f"shard{{world={world} zero={zero}}},inline,fuse,plan-memory",
                     "--stats", f"{ROOT}/examples/mlp/mlp.raf", "-o", os.devnull])
            m = re.search(r"memory @mlp_train_step: .*\(arguments (\d+),", p.stderr)
            got = int(m.group(1)) - data if m else -1
            ok = got == state
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} memory world={world} zero={zero}: "
                  f"params+states {got} bytes per rank, ZeRO's formula {state} "
                  f"({state / psi:.2f} psi)")
    return failures


def check_resume(opt, rr, tmp, base, tail, model):
    """Checkpoints move between sharded and unsharded runs: 5 steps in one
    process, then 5 more sharded from its checkpoint (and the reverse),
    give the losses and params of 10 uninterrupted steps."""
    src, fn, _ = model
    x, labels = np.load(f"{tmp}/x.npy"), np.load(f"{tmp}/labels.npy")
    half = 100 * STEPS // 2
    for part, rows in (("a", slice(0, half)), ("b", slice(half, None))):
        np.save(f"{tmp}/x_{part}.npy", x[rows])
        np.save(f"{tmp}/labels_{part}.npy", labels[rows])
    data = lambda part: [f"--dataset=x=@{tmp}/x_{part}.npy",
                         f"--dataset=labels=@{tmp}/labels_{part}.npy"]
    ref_loss = losses(f"{tmp}/mlp.ref.jsonl")
    ref_ckpt = read_safetensors(f"{tmp}/mlp.ref.safetensors")
    one = f"{tmp}/mlp.ref.raf"
    failures = 0
    for zero in (2, 3):
        sharded = f"{tmp}/mlp.resume.z{zero}.raf"
        run([opt, "-p", f"{base},shard{{world=2 zero={zero}}},{tail}", src, "-o", sharded])
        for first, second in ((one, sharded), (sharded, one)):
            cmd = lambda prog: (mpirun(2) if prog == sharded else []) + [rr, prog]
            tag = f"{tmp}/resume.z{zero}.{'s' if first == one else 'u'}"
            run(cmd(first) + [f"--function={fn}", f"--steps={STEPS // 2}", *data("a"),
                              f"--save={tag}.1.safetensors", "--print=none"])
            run(cmd(second) + [f"--function={fn}", f"--steps={STEPS // 2}", *data("b"),
                               f"--load={tag}.1.safetensors", f"--log={tag}.jsonl",
                               f"--save={tag}.2.safetensors", "--print=none"])
            loss = losses(f"{tag}.jsonl")
            ckpt = read_safetensors(f"{tag}.2.safetensors")
            dl = float(np.max(np.abs(loss - ref_loss[STEPS // 2:]) / np.abs(ref_loss[STEPS // 2:])))
            dp = max(float(np.max(np.abs(ckpt[k].astype(np.float64) - v))) /
                     max(float(np.max(np.abs(v))), 1e-30) for k, v in ref_ckpt.items())
            ok = dl <= 1e-5 and dp <= 1e-5
            failures += not ok
            way = "one process, then sharded" if first == one else "sharded, then one process"
            print(f"{'ok  ' if ok else 'FAIL'} resume zero={zero} ({way}): "
                  f"loss rel diff {dl:.2e}, params/states rel diff {dp:.2e}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    opt, rr = os.path.join(args.bin, "raf-opt"), os.path.join(args.bin, "raf-run")
    failures = check_memory(opt)
    probe = subprocess.run([rr, "--version"], capture_output=True, text=True)
    if "mpi" not in (probe.stdout + probe.stderr).lower():
        print("SKIP: raf-run was built without MPI")
        return 77
    tmp = tempfile.mkdtemp(prefix="raf-dist-")
    rng = np.random.default_rng(0)
    # MLP: batches of 100 (examples/mlp/mlp.raf); GPT-2: 4 sequences of 16.
    np.save(f"{tmp}/x.npy", rng.standard_normal((100 * STEPS, 784)).astype(np.float32))
    np.save(f"{tmp}/labels.npy", rng.integers(0, 10, 100 * STEPS).astype(np.int64))
    toks = rng.integers(0, 64, (4 * STEPS, 17)).astype(np.int64)
    np.save(f"{tmp}/tx.npy", toks[:, :16])
    np.save(f"{tmp}/ty.npy", toks[:, 1:])
    run(["/usr/bin/python3", f"{ROOT}/examples/gpt2/gen_gpt2.py", "--layers", "2",
         "--heads", "2", "--embd", "32", "--vocab", "64", "--seq", "16",
         "--batch", "4", f"{tmp}/gpt2.raf"])
    models = {
        "mlp": (f"{ROOT}/examples/mlp/mlp.raf", "mlp_train_step",
                [f"--dataset=x=@{tmp}/x.npy", f"--dataset=labels=@{tmp}/labels.npy"]),
        "gpt2": (f"{tmp}/gpt2.raf", "gpt2_train_step",
                 [f"--dataset=x=@{tmp}/tx.npy", f"--dataset=y=@{tmp}/ty.npy"]),
    }
    base = "autodiff,optimizer{kind=adamw lr=1e-3}"
    tail = "inline,fuse,plan-memory"
    for model, (src, fn, data) in models.items():
        ref = f"{tmp}/{model}.ref"
        run([opt, "-p", f"{base},{tail}", src, "-o", ref + ".raf"])
        run([rr, ref + ".raf", f"--function={fn}", f"--steps={STEPS}", *data,
             f"--log={ref}.jsonl", f"--save={ref}.safetensors", "--print=none"])
        ref_loss, ref_ckpt = losses(ref + ".jsonl"), read_safetensors(ref + ".safetensors")
        for world in (2, 4):
            for zero in range(4):
                out = f"{tmp}/{model}.w{world}z{zero}"
                run([opt, "-p", f"{base},shard{{world={world} zero={zero}}},{tail}",
                     src, "-o", out + ".raf"])
                run(mpirun(world) + [rr, out + ".raf", f"--function={fn}",
                                     f"--steps={STEPS}", *data, f"--log={out}.jsonl",
                                     f"--save={out}.safetensors", "--print=none"])
                loss = losses(out + ".jsonl")
                ckpt = read_safetensors(out + ".safetensors")
                dl = float(np.max(np.abs(loss - ref_loss) / np.abs(ref_loss)))
                dp = 0.0
                if sorted(ckpt) != sorted(ref_ckpt):
                    print(f"FAIL {model} world={world} zero={zero}: checkpoint names differ")
                    failures += 1
                    continue
                for k, v in ref_ckpt.items():
                    if ckpt[k].shape != v.shape:
                        sys.exit(f"FAIL {model} w{world} z{zero}: {k} shape {ckpt[k].shape} vs {v.shape}")
                    scale = max(float(np.max(np.abs(v))), 1e-30)
                    dp = max(dp, float(np.max(np.abs(ckpt[k].astype(np.float64) - v))) / scale)
                ok = dl <= 1e-5 and dp <= 1e-5
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {model} world={world} zero={zero}: "
                      f"loss rel diff {dl:.2e}, params/states rel diff {dp:.2e}")
    failures += check_resume(opt, rr, tmp, base, tail, models["mlp"])
    print(f"train_equal: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
