#!/usr/bin/env python3
"""train_equal.py --bin BUILD: data parallelism trains as one process does.

For the MLP example and a small GPT-2 (examples/gpt2), world 2 and 4, and
each ZeRO level 0..3: `raf-opt -p 'autodiff,optimizer,shard{world=N
zero=Z},inline,fuse,plan-memory'`, then `mpirun -np N raf-run` for 10
AdamW steps on the same global batches (--dataset) from the same init.
The losses of every step (rank 0's --log) and the trained params and
states (--save, one full checkpoint) must equal the single-process run's
to a relative 1e-5: the sums run in another order, nothing else differs.
AdamW runs with eps=1e-4: at its default 1e-8 it divides a gradient that
cancels to about eps by its own size, which turns the last bits of the sum
order into parameter changes of a few percent of lr (measured on the MLP:
5e-5 relative on w1 after 4 steps, 3e-4 on the small GPT-2, with losses
still equal to 1e-7); with eps=1e-4 the update follows the gradient
smoothly and the parameters agree to 1e-7.

The per-rank model state follows ZeRO's formulas: `raf-opt --stats` gives
the bytes of the step's arguments, which are the local batch plus the
params (4 bytes each, or a part of them at zero=3) and AdamW's two moments
(whole at zero=0, parts from zero=1), parts padded to a multiple of N.

Also, on the MLP: the bytes each rank sends per step (raf-run
--print-comm) against the volume of ZeRO's collectives (2 psi (N-1)/N
elements at zero 0..2 by ring algorithms; at zero=3, 3 psi (N-1)/N less
the params the backward pass does not read, which are not gathered again:
the MLP's backward reads only w2, since dW1 = x^T dh), each
rank's measured peak (--print-memory) against raf-opt --stats's planned
peak, and faults: a rank whose input file is missing, or that fails in the
middle of a step, ends the whole job with a non-zero status and that
rank's error, and a world the module was not sharded for is refused.

Every mpirun runs under a timeout, so a hang fails the test. Skipped (exit
77, as CTest's SKIP_RETURN_CODE) when raf-run was built without MPI.
"""
import argparse, os, re, subprocess, sys, tempfile
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pylib"))
from safetensors_np import read as read_safetensors  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distmodels import lacks_mpi, losses, make_models, reference  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 10
TIMEOUT = 180


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, **kw)
    if p.returncode:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-4000:]}")
    return p


# Open MPI's own allocations outlive the run (test/dist/lsan.supp); the
# slow unwinder reaches its frames inside the components it unloads.
LSAN = f"LSAN_OPTIONS=suppressions={ROOT}/test/dist/lsan.supp:fast_unwind_on_malloc=0"


def mpirun(n):
    env = ["env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
           "OMPI_MCA_rmaps_base_oversubscribe=1", LSAN]
    return env + ["timeout", str(TIMEOUT - 10), "mpirun", "--oversubscribe",
                  "--allow-run-as-root", "-np", str(n)]


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


def check_comm_and_peak(opt, rr, tmp, base, tail, model):
    """--print-comm's bytes against ZeRO's volumes, and every rank's
    --print-memory against the static plan."""
    src, fn, data = model
    sizes = [784 * 256, 256, 256 * 10, 10]
    psi = sum(sizes)
    failures = 0
    for world in (2, 4):
        part = sum(-(-n // world) for n in sizes)
        loss = 2 * 4 * (world - 1) / world          # the loss's all_reduce
        for zero in range(4):
            prog = f"{tmp}/comm.w{world}z{zero}.raf"
            p = run([opt, "-p", f"{base},shard{{world={world} zero={zero}}},{tail}",
                     "--stats", src, "-o", prog])
            planned = int(re.search(r"memory @%s: planned peak (\d+) bytes" % fn,
                                    p.stderr).group(1))
            p = run(mpirun(world) + [rr, prog, f"--function={fn}", "--steps=2", *data,
                                     "--print=none", "--print-comm", "--print-memory"])
            sent = float(re.search(r"comm: .*\((\d+) bytes\) sent", p.stderr).group(1))
            peaks = [int(x) for x in re.findall(r"peak tensor memory: (\d+)", p.stdout)]
            regathered = -(-sizes[2] // world) if zero == 3 else 0  # w2
            exact = (4 * 2 * psi * (world - 1) / world if zero == 0 else
                     4 * (world - 1) * (2 * part + regathered)) + loss
            zero_fig = (3 if zero == 3 else 2) * psi * (world - 1) / world
            near = (2 * psi * (world - 1) / world < sent / 4 <= zero_fig if zero == 3
                    else abs(sent / 4 / zero_fig - 1) < 0.01)
            ok = abs(sent - exact) <= 8 and near
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} comm world={world} zero={zero}: "
                  f"{sent:.0f} bytes sent per rank per step, expected {exact:.0f}; "
                  f"{sent / 4 / psi:.3f} psi elements (ZeRO: "
                  f"{zero_fig / psi:.3f} psi)")
            ok = len(peaks) == world and all(pk == planned for pk in peaks)
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} peak world={world} zero={zero}: "
                  f"measured {peaks} bytes per rank, planned {planned}")
    return failures


def check_faults(rr, tmp, model):
    """Faults end the job: non-zero, with the failing rank's message, well
    within the timeout."""
    src, fn, _ = model
    prog = f"{tmp}/comm.w2z2.raf"
    x = np.load(f"{tmp}/x.npy")
    x[150, 3] = np.nan      # in rank 1's rows of the second batch
    np.save(f"{tmp}/x_nan.npy", x)
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    rank_file = ('f=@%s/x.npy; [ "$OMPI_COMM_WORLD_RANK" = 1 ] && f=@%s/missing.npy; '
                 'exec %s %s --function=%s --steps=2 --dataset=x=$f '
                 '--dataset=labels=@%s/labels.npy --print=none' %
                 (tmp, tmp, rr, prog, fn, tmp))
    np.save(f"{tmp}/x_one.npy", x[:100])
    np.save(f"{tmp}/labels_one.npy", np.load(f"{tmp}/labels.npy")[:100])
    # Rank 1 stops (SIGSTOP) in the middle of a long run: rank 0's
    # collective hears nothing from it for RAF_COMM_TIMEOUT seconds and
    # ends the job naming it, rather than waiting forever.
    stop_rank = ('cmd="%s %s --function=%s --steps=1000000 --input=x=@%s/x_one.npy '
                 '--input=labels=@%s/labels_one.npy --print=none"; '
                 'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then $cmd & pid=$!; sleep 2; '
                 'kill -STOP $pid; wait $pid; else exec $cmd; fi' %
                 (rr, prog, fn, tmp, tmp))
    cases = [
        ("rank 1 stops answering mid-run (--comm-timeout=3)",
         mpirun(2) + ["sh", "-c", stop_rank.replace("--print=none", "--print=none --comm-timeout=3")],
         r"rank 0: .*nothing from rank 1 for 3 s: rank 1 is lost"),
        ("rank 1's input file is missing", mpirun(2) + ["sh", "-c", rank_file],
         r"rank 1: .*missing\.npy"),
        ("rank 1 makes a NaN mid-run (--check-numerics)",
         mpirun(2) + [rr, prog, f"--function={fn}", "--steps=3", "--check-numerics",
                      f"--dataset=x=@{tmp}/x_nan.npy",
                      f"--dataset=labels=@{tmp}/labels.npy", "--print=none"],
         r"rank 1: .*(NaN|Inf|non-finite)"),
        ("a world=2 module on 4 ranks", mpirun(4) + [rr, prog, f"--function={fn}",
                                                      f"--dataset=x=@{tmp}/x.npy",
                                                      f"--dataset=labels=@{tmp}/labels.npy"],
         r"sharded over world = 2 ranks, but this MPI job has 4"),
        ("a world=2 module without mpirun", [rr, prog, f"--function={fn}",
                                              f"--dataset=x=@{tmp}/x.npy",
                                              f"--dataset=labels=@{tmp}/labels.npy"],
         r"run one process per rank, as `mpirun -np 2 raf-run"),
    ]
    failures = 0
    for what, cmd, want in cases:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
            out, rc = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, rc = "(hung: killed after 60 s)", None
        ok = rc not in (0, None) and re.search(want, out) is not None
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} fault: {what}: exit {rc}"
              + ("" if ok else f"\n{out[-2000:]}"))
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    opt, rr = os.path.join(args.bin, "raf-opt"), os.path.join(args.bin, "raf-run")
    failures = check_memory(opt)
    if lacks_mpi(rr):
        return 77
    tmp = tempfile.mkdtemp(prefix="raf-dist-")
    models = make_models(tmp, STEPS, run)
    base = "autodiff,optimizer{kind=adamw lr=1e-3 eps=1e-4}"
    tail = "inline,fuse,plan-memory"
    for model, (src, fn, data) in models.items():
        ref_loss, ref_ckpt = reference(opt, rr, run, tmp, model, (src, fn, data),
                                       f"{base},{tail}", STEPS)
        # Every world and level, then the same with overlap-comm's async
        # collectives (world 2 at every level, world 4 at zero=3, and a
        # budget so small that every wait is pulled up to the next start).
        cases = [(w, z, "") for w in (2, 4) for z in range(4)]
        cases += [(2, z, "overlap-comm,") for z in range(4)]
        cases += [(4, 3, "overlap-comm,"), (2, 3, "overlap-comm{budget=1K},")]
        for world, zero, overlap in cases:
                mark = "o" if overlap else ""
                mark += "b" if "budget" in overlap else ""
                out = f"{tmp}/{model}.w{world}z{zero}{mark}"
                run([opt, "-p", f"{base},shard{{world={world} zero={zero}}},"
                     f"{tail.replace('plan-memory', overlap + 'plan-memory')}",
                     src, "-o", out + ".raf"])
                run(mpirun(world) + [rr, out + ".raf", f"--function={fn}",
                                     f"--steps={STEPS}", *data, f"--log={out}.jsonl",
                                     f"--save={out}.safetensors", "--print=none"])
                loss = losses(out + ".jsonl")
                ckpt = read_safetensors(out + ".safetensors")
                dl = float(np.max(np.abs(loss - ref_loss) / np.abs(ref_loss)))
                dp = 0.0
                if sorted(ckpt) != sorted(ref_ckpt):
                    print(f"FAIL {model} world={world} zero={zero} {overlap}: checkpoint names differ")
                    failures += 1
                    continue
                for k, v in ref_ckpt.items():
                    if ckpt[k].shape != v.shape:
                        sys.exit(f"FAIL {model} w{world} z{zero}: {k} shape {ckpt[k].shape} vs {v.shape}")
                    scale = max(float(np.max(np.abs(v))), 1e-30)
                    dp = max(dp, float(np.max(np.abs(ckpt[k].astype(np.float64) - v))) / scale)
                ok = dl <= 1e-5 and dp <= 1e-5
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {model} world={world} zero={zero}"
                      f"{' ' + overlap.rstrip(',') if overlap else ''}: "
                      f"loss rel diff {dl:.2e}, params/states rel diff {dp:.2e}")
    failures += check_resume(opt, rr, tmp, base, tail, models["mlp"])
    failures += check_comm_and_peak(opt, rr, tmp, base, tail, models["mlp"])
    failures += check_faults(rr, tmp, models["mlp"])
    print(f"train_equal: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
