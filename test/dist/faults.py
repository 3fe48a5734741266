#!/usr/bin/env python3
"""faults.py --bin BUILD --hang-abort LIB: faults and bad input of sharded
runs on one machine, each ending every rank with a non-zero status and a
message that says what happened, within a bounded time.

- A rank killed with SIGKILL in the middle of a run of many steps: mpirun
  ends the others and names the rank ("process rank 1 ... exited on signal
  9"); the test measures the time from the kill to mpirun's exit.
- An MPI_Abort that never returns (LIB, preloaded, stands for an abort that
  cannot reach mpirun): raf-run's guard ends the rank after 5 s, and mpirun
  the rest.
- Ranks that run other modules, or other --steps (an mpirun MPMD line):
  rank 0 says which rank differs from it, and every rank exits 1.
- A dataset cut for one rank's batch rather than the global one: the error
  names the global batch, the rows per rank and the ranks; a dataset whose
  rows are not a multiple of the global batch: a warning naming the rows
  that are never fed; a batch the world does not divide: raf-opt's error.
- A checkpoint of another model given to --load: a GPT-2's to the MLP (no
  param in common), and a wider GPT-2's (same names, other shapes).

Every mpirun runs under a timeout (killed 5 s after it), so a hang fails
the test. Exit 77 (skipped, CTest's SKIP_RETURN_CODE) where raf-run was
built without MPI.
"""
import argparse, os, re, signal, subprocess, sys, tempfile, time
import numpy as np

from distmodels import lacks_mpi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIMIT = 30  # seconds a fault may take to end the job
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
       "OMPI_MCA_rmaps_base_oversubscribe": "1",
       "LSAN_OPTIONS": f"suppressions={ROOT}/test/dist/lsan.supp:fast_unwind_on_malloc=0"}


def mpirun(timeout=90):
    return ["timeout", "-k", "5", str(timeout), "mpirun", "--oversubscribe", "--allow-run-as-root"]


def must(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=ENV)
    if p.returncode:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-4000:]}")
    return p


def rank_pids(marker):
    """pid -> rank of the raf-run processes whose command line names marker."""
    pids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
            if not argv[0].endswith(b"raf-run") or marker.encode() not in b" ".join(argv):
                continue
            env = open(f"/proc/{d}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                pids[int(d)] = int(e.split(b"=")[1])
    return pids


def run_fault(cmd, marker, log, act, env=ENV):
    """Starts cmd (a long run), waits for 2 steps in log, then calls act()
    (the fault; it returns what to print if it could not act); returns
    (exit status, output, seconds from the fault to mpirun's exit, seconds
    until no rank was left)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=env)
    deadline = time.time() + 120
    while time.time() < deadline and p.poll() is None:
        if os.path.exists(log) and sum(1 for _ in open(log)) >= 2:
            break
        time.sleep(0.1)
    t0 = time.time()
    why = act() if p.poll() is None else "the run ended early"
    if why:
        if p.poll() is None:
            p.kill()
        out = p.communicate()[0]
        return None, f"({why})\n{out}", 0, 0
    gone = None
    while p.poll() is None and time.time() - t0 < 120:
        if gone is None and not rank_pids(marker):
            gone = time.time() - t0
        time.sleep(0.05)
    out = p.communicate(timeout=30)[0]
    took = time.time() - t0
    return p.returncode, out, took, gone if gone is not None else took


def kill_rank(cmd, marker, log, rank, env=ENV):
    """run_fault with SIGKILL to `rank` as the fault."""
    def act():
        victims = [pid for pid, r in rank_pids(marker).items() if r == rank]
        if not victims:
            return f"rank {rank} not found"
        os.kill(victims[0], signal.SIGKILL)
        return None
    return run_fault(cmd, marker, log, act, env)


def report(ok, what, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + ("" if ok else f"\n{detail[-3000:]}"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--hang-abort", required=True)
    args = ap.parse_args()
    opt, rr = os.path.join(args.bin, "raf-opt"), os.path.join(args.bin, "raf-run")
    if lacks_mpi(rr):
        return 77
    tmp = tempfile.mkdtemp(prefix="raf-faults-")
    rng = np.random.default_rng(0)
    np.save(f"{tmp}/x.npy", rng.standard_normal((1000, 784)).astype(np.float32))
    np.save(f"{tmp}/labels.npy", rng.integers(0, 10, 1000).astype(np.int64))
    base = "autodiff,optimizer{kind=adamw lr=1e-3 eps=1e-4}"
    mlp = f"{ROOT}/examples/mlp/mlp.raf"
    for zero in (0, 2):
        must([opt, "-p", f"{base},shard{{world=2 zero={zero}}},inline,fuse,plan-memory",
              mlp, "-o", f"{tmp}/w2z{zero}.raf"])
    fn = "--function=mlp_train_step"
    data = [f"--dataset=x=@{tmp}/x.npy", f"--dataset=labels=@{tmp}/labels.npy"]
    failures = 0

    # A rank killed mid-run.
    log = f"{tmp}/kill.jsonl"
    rc, out, took, gone = kill_rank(
        mpirun() + ["-np", "2", rr, f"{tmp}/w2z2.raf", fn, "--steps=100000", *data,
                    f"--log={log}", "--print=none"], tmp, log, 1)
    ok = (rc not in (0, None) and took <= LIMIT
          and re.search(r"rank 1 .*exited on signal 9", out) is not None)
    failures += report(ok, f"rank 1 killed (SIGKILL) mid-run: exit {rc}, mpirun ended "
                           f"{took:.1f} s after the kill, the last rank {gone:.1f} s", out)
    m = re.search(r"mpirun noticed that process rank \d+ .*", out)
    print(f"     what mpirun said: {m.group(0) if m else '(nothing)'}")

    # An abort that hangs: rank 1 meets a NaN (--check-numerics) and calls
    # MPI_Abort, which never returns.
    x = np.load(f"{tmp}/x.npy")
    x[250, 3] = np.nan  # rank 1's rows of the third batch
    np.save(f"{tmp}/x_nan.npy", x)
    env = {**ENV, "LD_PRELOAD": args.hang_abort,
           "ASAN_OPTIONS": "verify_asan_link_order=0:" + os.environ.get("ASAN_OPTIONS", "")}
    t0 = time.time()
    p = subprocess.run(mpirun() + ["-x", "LD_PRELOAD", "-np", "2", rr, f"{tmp}/w2z2.raf", fn,
                                   "--steps=20", "--check-numerics",
                                   f"--dataset=x=@{tmp}/x_nan.npy",
                                   f"--dataset=labels=@{tmp}/labels.npy", "--print=none"],
                       capture_output=True, text=True, env=env)
    took, out = time.time() - t0, p.stdout + p.stderr
    ok = (p.returncode != 0 and took <= LIMIT
          and "rank 1: error: MPI_Abort did not end the job within 5 s" in out
          and re.search(r"rank 1: .*(NaN|Inf|non-finite)", out) is not None)
    failures += report(ok, f"MPI_Abort hangs on rank 1: exit {p.returncode} after {took:.1f} s",
                       out)

    # Ranks that run other things (MPMD).
    run = [fn, "--steps=3", *data, "--print=none"]
    cases = [
        ("rank 1 runs another module (zero=0 against zero=2)",
         ["-np", "1", rr, f"{tmp}/w2z2.raf", *run, ":", "-np", "1", rr, f"{tmp}/w2z0.raf", *run],
         r"rank 0: error: rank 1 runs another module than rank 0 \(hash [0-9a-f]{16} vs [0-9a-f]{16}\)"),
        ("rank 1 runs other --steps",
         ["-np", "1", rr, f"{tmp}/w2z2.raf", *run, ":", "-np", "1", rr, f"{tmp}/w2z2.raf",
          *run, "--steps=4"],
         r"rank 0: error: rank 1 runs 4 steps, rank 0 3 \(--steps\)"),
    ]
    # Each rank's exit status, by a wrapper that records it.
    status = f"{tmp}/status"
    wrap = f"{tmp}/wrap.sh"
    with open(wrap, "w") as f:
        f.write('#!/bin/sh\n"$@"\nrc=$?\necho "$OMPI_COMM_WORLD_RANK $rc" >> "$RAF_STATUS"\n'
                'exit $rc\n')
    os.chmod(wrap, 0o755)
    for what, line, want in cases:
        if os.path.exists(status):
            os.unlink(status)
        line = [x for a in line for x in ((wrap, rr) if a == rr else (a,))]
        t0 = time.time()
        p = subprocess.run(mpirun(60) + ["-x", "RAF_STATUS"] + line, capture_output=True,
                           text=True, env={**ENV, "RAF_STATUS": status})
        took, out = time.time() - t0, p.stdout + p.stderr
        ranks = sorted(open(status).read().split("\n")[:-1]) if os.path.exists(status) else []
        # A rank that exits 1 a moment after another may be ended by mpirun
        # first (its status then unrecorded); none may exit otherwise.
        ok = (ranks and all(r.endswith(" 1") for r in ranks)
              and p.returncode == 1 and re.search(want, out) is not None)
        failures += report(bool(ok), f"{what}: exit {p.returncode}, ranks' statuses {ranks}, "
                               f"{took:.1f} s", out)

    # The batch: a file cut for one rank's batch; a ragged file; a world
    # that does not divide the batch.
    np.save(f"{tmp}/x_local.npy", np.load(f"{tmp}/x.npy").reshape(20, 50, 784))
    np.save(f"{tmp}/x_990.npy", np.load(f"{tmp}/x.npy")[:990])
    np.save(f"{tmp}/labels_990.npy", np.load(f"{tmp}/labels.npy")[:990])
    p = subprocess.run(mpirun(60) + ["-np", "2", rr, f"{tmp}/w2z2.raf", fn, "--steps=3",
                                     f"--dataset=x=@{tmp}/x_local.npy",
                                     f"--dataset=labels=@{tmp}/labels.npy", "--print=none"],
                       capture_output=True, text=True, env=ENV)
    out = p.stdout + p.stderr
    ok = p.returncode != 0 and re.search(
        r"rank 0: error: --dataset=x: .*x_local\.npy must hold slices of argument %x "
        r"\(f32\[100,784\]\).*\(the global batch: 100 rows, 50 per rank x 2 ranks\)", out)
    failures += report(bool(ok), f"a dataset cut for one rank's batch: exit {p.returncode}", out)
    p = subprocess.run(mpirun(60) + ["-np", "2", rr, f"{tmp}/w2z2.raf", fn, "--steps=3",
                                     f"--dataset=x=@{tmp}/x_990.npy",
                                     f"--dataset=labels=@{tmp}/labels_990.npy", "--print=none"],
                       capture_output=True, text=True, env=ENV)
    out = p.stdout + p.stderr
    ok = p.returncode == 0 and re.search(
        r"rank 0: warning: --dataset=x: .*x_990\.npy has 990 rows, 9 batches of 100 \(the "
        r"global batch: 100 rows, 50 per rank x 2 ranks\); its last 90 rows are never fed", out)
    failures += report(bool(ok), "a dataset of 990 rows for a global batch of 100: warned", out)
    p = subprocess.run([opt, "-p", f"{base},shard{{world=3}}", mlp, "-o", os.devnull],
                       capture_output=True, text=True)
    ok = p.returncode == 1 and re.search(r"error: .*100.*3|error: .*3.*100", p.stderr)
    failures += report(bool(ok), "shard{world=3} of a batch of 100: raf-opt refuses it: "
                       + (p.stderr.strip().splitlines() or ["(nothing)"])[0][:160], p.stderr)

    # A checkpoint of another model.
    gen = ["/usr/bin/python3", f"{ROOT}/examples/gpt2/gen_gpt2.py", "--layers", "1",
           "--heads", "2", "--vocab", "64", "--seq", "16", "--batch", "4"]
    must(gen + ["--embd", "32", f"{tmp}/gpt2.raf"])
    must(gen + ["--embd", "48", f"{tmp}/gpt2_wide.raf"])
    toks = rng.integers(0, 64, (8, 17)).astype(np.int64)
    np.save(f"{tmp}/tx.npy", toks[:, :16])
    np.save(f"{tmp}/ty.npy", toks[:, 1:])
    gdata = [f"--dataset=x=@{tmp}/tx.npy", f"--dataset=y=@{tmp}/ty.npy"]
    must([opt, "-p", f"{base},shard{{world=2 zero=2}},inline,fuse,plan-memory",
          f"{tmp}/gpt2.raf", "-o", f"{tmp}/gpt2.w2.raf"])
    must([opt, "-p", f"{base},inline,fuse,plan-memory", f"{tmp}/gpt2_wide.raf",
          "-o", f"{tmp}/gpt2_wide.1.raf"])
    must([rr, f"{tmp}/gpt2_wide.1.raf", "--function=gpt2_train_step", "--steps=1", *gdata,
          f"--save={tmp}/gpt2_wide.safetensors", "--print=none"])
    cases = [
        ("the MLP from a GPT-2 checkpoint",
         [rr, f"{tmp}/w2z2.raf", fn, "--steps=2", *data],
         r"rank 0: error: --load: .*gpt2_wide\.safetensors holds none of @mlp_train_step's "
         r"params \(it holds \d+ tensors: %wte\.weight, .*\): a checkpoint of another model\?"),
        ("GPT-2 (embd 32) from a wider GPT-2's (embd 48) checkpoint",
         [rr, f"{tmp}/gpt2.w2.raf", "--function=gpt2_train_step", "--steps=2", *gdata],
         r"rank 0: error: --load: .*gpt2_wide\.safetensors: argument %wte\.weight has type "
         r"f32\[64,32\], but the checkpoint holds f32\[64,48\]"),
    ]
    for what, line, want in cases:
        p = subprocess.run(mpirun(60) + ["-np", "2"] + line +
                           [f"--load={tmp}/gpt2_wide.safetensors", "--print=none"],
                           capture_output=True, text=True, env=ENV)
        out = p.stdout + p.stderr
        ok = p.returncode == 1 and re.search(want, out) is not None
        failures += report(ok, f"--load of {what}: exit {p.returncode}", out)

    print(f"faults: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
