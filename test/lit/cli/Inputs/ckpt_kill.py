"""ckpt_kill.py: raf-run's checkpoints against faults (raf-run-kill.test).

  ckpt_kill.py atomic RAF_RUN DIR     20 SIGKILLs of a run that saves an 8 MiB
                                      checkpoint after every step
  ckpt_kill.py write-error RAF_RUN DIR  a save that fails mid-write
  ckpt_kill.py resume RAF_RUN STEP.raf DIR [--np=N] -- ARGS...
                                      a run killed after some steps and
                                      resumed ends as one never killed
                                      (with --np, N ranks under mpirun)

atomic: Inputs/grow.raf's state after n steps is known (every element of
%w is n, and %n is n), so whatever the file holds can be checked: after
each kill, at a random moment or just after a save began (its temporary
file appeared), the checkpoint must be a whole file (every byte accounted
for, the tensors tiling the data), its tensors those of the step its
metadata names, and that step no earlier than the last trial's. The kills
that landed during a write leave their temporary file, which is counted,
then removed; at least one must have, or the test tested nothing. The
file then resumes in raf-run.

write-error: with RLIMIT_FSIZE below the checkpoint's size (SIGXFSZ
ignored), the save fails; the error names the file, the checkpoint is
byte for byte the one before, and no temporary file is left. Where the
test does not run as root (which may write anywhere) a read-only
directory is tried too.

resume: the step's uninterrupted run (--steps, --save, --log in ARGS, which
must not hold them: they are added) against runs killed once the
checkpoint has reached a step between 2 and STEPS - 2, then resumed with
the same command line: the tensors and the logged losses bit for bit.
Under mpirun every process of the job is killed at once (mpirun and the
ranks, which Open MPI puts in process groups of their own), as when the
machine fails; every mpirun runs under a timeout.
"""
import json
import os
import random
import resource
import signal
import struct
import subprocess
import sys
import time

TIMEOUT = 120


def read_whole(path):
    """The tensors {name: bytes} and metadata of a safetensors file, refusing
    one that is not whole."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    buf = raw[8 + n:]
    spans = sorted(tuple(e["data_offsets"]) for e in header.values())
    at = 0
    for a, b in spans:
        assert a == at, "%s: a hole or overlap at byte %d" % (path, at)
        at = b
    assert at == len(buf), "%s: %d data bytes, %d used" % (path, len(buf), at)
    return {k: buf[e["data_offsets"][0]:e["data_offsets"][1]]
            for k, e in header.items()}, meta


def grow_step(path):
    """The step of a grow.raf checkpoint, checked against its tensors."""
    t, meta = read_whole(path)
    step = int(meta["raf-run.step"])
    assert t["w"] == struct.pack("<f", step) * (1024 * 2048), \
        "%s: %%w is not step %d's" % (path, step)
    assert t["n"] == struct.pack("<q", step), "%s: %%n is not %d" % (path, step)
    return step


def temps(d, name):
    return [f for f in os.listdir(d) if f.startswith(name + ".tmp-")]


def atomic(rr, d):
    rng = random.Random(1)
    step_raf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grow.raf")
    ckpt = os.path.join(d, "grow.safetensors")
    cmd = [rr, step_raf, "--steps=1000000", "--save-every=1", "--resume",
           "--save=" + ckpt, "--print=none"]
    subprocess.run(cmd[:2] + ["--steps=1", "--save=" + ckpt, "--print=none"],
                   check=True, timeout=TIMEOUT)
    last, torn = grow_step(ckpt), 0
    for trial in range(20):
        p = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
        if trial % 2:   # at a random moment (startup included)
            time.sleep(rng.uniform(0.05, 0.6))
        else:           # just after a save has begun
            deadline = time.time() + 30
            while not temps(d, "grow.safetensors") and time.time() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.02))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=TIMEOUT)
        step = grow_step(ckpt)
        assert step >= last, "trial %d: the checkpoint went back from step %d to %d" % (
            trial, last, step)
        left = temps(d, "grow.safetensors")
        torn += len(left) > 0
        for f in left:
            os.remove(os.path.join(d, f))
        print("trial %2d: checkpoint whole at step %d%s" % (
            trial, step, ", killed mid-save" if left else ""))
        last = step
    assert torn >= 1, "no kill landed during a save"
    subprocess.run(cmd[:2] + ["--steps=%d" % (last + 1), "--resume", "--save=" + ckpt,
                              "--print=none"], check=True, timeout=TIMEOUT)
    assert grow_step(ckpt) == last + 1
    print("atomic: 20 kills, %d during a save; the checkpoint was whole each time "
          "and resumed to step %d" % (torn, last + 1))


def write_error(rr, d):
    step_raf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grow.raf")
    ckpt = os.path.join(d, "err.safetensors")
    subprocess.run([rr, step_raf, "--steps=2", "--save=" + ckpt, "--print=none"],
                   check=True, timeout=TIMEOUT)
    before = open(ckpt, "rb").read()

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    cases = [("a write past RLIMIT_FSIZE", small_files, "File too large")]
    if os.geteuid() != 0:
        cases.append(("a read-only directory", lambda: os.chmod(d, 0o555),
                      "Permission denied"))
    else:
        print("skipped: a read-only directory (root writes anywhere)")
    for what, setup, why in cases:
        p = subprocess.run([rr, step_raf, "--steps=5", "--save-every=1", "--resume",
                            "--save=" + ckpt, "--print=none"], preexec_fn=setup,
                           capture_output=True, text=True, timeout=TIMEOUT)
        os.chmod(d, 0o755)
        want = "error: %s: cannot" % ckpt
        assert p.returncode == 1, "%s: exit %d" % (what, p.returncode)
        assert want in p.stderr and why in p.stderr, "%s: %s" % (what, p.stderr)
        assert open(ckpt, "rb").read() == before, "%s: the checkpoint changed" % what
        assert not temps(d, "err.safetensors"), "%s: a temporary file is left" % what
        print("%s: %s" % (what, p.stderr.strip().splitlines()[0]))


# Open MPI's own allocations outlive the run (test/dist/lsan.supp), for a
# sanitizer build.
LSAN_SUPP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                         "dist", "lsan.supp")


def mpirun(n):
    return ["env", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
            "OMPI_MCA_rmaps_base_oversubscribe=1",
            "LSAN_OPTIONS=suppressions=%s:fast_unwind_on_malloc=0" % os.path.abspath(LSAN_SUPP),
            "timeout", str(TIMEOUT - 10),
            "mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(n)]


def kill_tree(pid):
    """SIGKILL to pid and every process below it, the deepest first."""
    def below(p):
        out = []
        try:
            for task in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    for c in f.read().split():
                        out += below(int(c)) + [int(c)]
        except OSError:
            pass
        return out
    for p in below(pid) + [pid]:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def resume(rr, step_raf, d, args, np_=1):
    rng = random.Random(2)
    steps = 40
    ref = os.path.join(d, "ref%d" % np_)
    launch = mpirun(np_) if np_ > 1 else []
    base = launch + [rr, step_raf, "--steps=%d" % steps, "--print=none"] + args
    subprocess.run(base + ["--save=%s.safetensors" % ref, "--log=%s.jsonl" % ref],
                   check=True, timeout=TIMEOUT)
    want = read_whole(ref + ".safetensors")[0]
    want_log = [(x["step"], x["loss"]) for x in map(json.loads, open(ref + ".jsonl"))]
    # One kill early, one midway, one late.
    targets = [rng.randint(2, 12), rng.randint(13, 25), rng.randint(26, steps - 2)]
    for trial, target in enumerate(targets):
        out = os.path.join(d, "killed%d.np%d" % (trial, np_))
        cmd = base + ["--save-every=1", "--resume", "--save=%s.safetensors" % out,
                      "--log=%s.jsonl" % out]
        p = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
        deadline, at = time.time() + TIMEOUT, 0
        while at < target and time.time() < deadline and p.poll() is None:
            try:
                at = int(read_whole(out + ".safetensors")[1]["raf-run.step"])
            except (OSError, ValueError, KeyError, AssertionError, struct.error):
                pass
            time.sleep(0.001)
        kill_tree(p.pid)
        p.wait(timeout=TIMEOUT)
        at = int(read_whole(out + ".safetensors")[1]["raf-run.step"])
        assert at < steps, "trial %d: the run ended before it was killed" % trial
        subprocess.run(cmd, check=True, timeout=TIMEOUT)
        got = read_whole(out + ".safetensors")[0]
        bad = sorted(k for k in set(want) | set(got) if want.get(k) != got.get(k))
        assert not bad, "trial %d: differ after resuming at step %d: %s" % (trial, at, bad)
        log = [(x["step"], x["loss"]) for x in map(json.loads, open(out + ".jsonl"))]
        assert log == want_log, "trial %d: the log differs: %s" % (trial, log)
        print("resume%s: killed with the checkpoint at step %d, resumed to %d: "
              "%d tensors and %d losses bit for bit" % (
                  " at world %d" % np_ if np_ > 1 else "", at, steps, len(got), len(log)))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "atomic":
        atomic(sys.argv[2], sys.argv[3])
    elif mode == "write-error":
        write_error(sys.argv[2], sys.argv[3])
    else:
        dash = sys.argv.index("--")
        opts = dict(a[2:].split("=") for a in sys.argv[5:dash])
        resume(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[dash + 1:],
               int(opts.get("np", 1)))
