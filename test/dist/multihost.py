#!/usr/bin/env python3
"""multihost.py --bin BUILD: sharded training across two hosts over TCP,
the hosts being network namespaces of this machine.

Two namespaces (rafmh<pid>a and rafmh<pid>b, made by test/dist/netns.py),
each with loopback and one veth whose other end is on a bridge in the root
namespace, hold the addresses 10.213.S.2 and 10.213.S.3 (S from the pid);
the bridge holds 10.213.S.1. mpirun runs in the root namespace with
`--host A:2,B:2` (the addresses as host names) and Open MPI's rsh launcher
with test/dist/netns-agent.sh as its agent, which starts each host's
daemon in its namespace; the ranks talk TCP only (btl tcp,self) on that
subnet, and mpirun's daemons find each other there too
(oob_tcp_if_include), with TCP keepalives of a few seconds so that a
daemon whose host is gone is noticed.

- The MLP and a small GPT-2 at world 4 (2 hosts x 2 ranks), zero 0 and 2,
  train 10 AdamW steps with the losses and the saved checkpoint of one
  process, to a relative 1e-5 (as train_equal.py).
- A rank on the second host killed with SIGKILL mid-run: every rank ends,
  mpirun names it, within 30 s.
- The second host's link taken down (`ip link set ... down`) mid-run, with
  RAF_COMM_TIMEOUT=5: every rank ends, with a message that names a lost
  rank or the lost host, within 30 s.
- A hostfile naming a host that is not there (an address of the subnet no
  namespace holds; a name that does not resolve): mpirun's error, within
  30 s.

The namespaces, the bridge and the veths are removed at the end whatever
happens, and any left by an earlier run whose process is gone at the start.
Exit 77 (skipped) without MPI, or where namespaces cannot be made (not root,
no CAP_NET_ADMIN, no `ip`).
"""
import argparse, os, re, shutil, subprocess, sys, tempfile, time
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))
from faults import ENV, LIMIT, kill_rank, rank_pids, run_fault, report  # noqa: E402
from safetensors_np import read as read_safetensors  # noqa: E402
import netns  # noqa: E402
from distmodels import lacks_mpi, losses, make_models, reference  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
PREFIX = "rafmh"
STEPS = 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    opt, rr = os.path.join(args.bin, "raf-opt"), os.path.join(args.bin, "raf-run")
    if lacks_mpi(rr):
        return 77
    if not shutil.which("mpirun"):
        print("SKIP: no mpirun")
        return 77
    pid = os.getpid()
    subnet = f"10.213.{pid % 250 + 1}"
    tmp = tempfile.mkdtemp(prefix="raf-multihost-")
    hosts = netns.up(PREFIX, pid, subnet, f"{tmp}/netns.map")
    if hosts is None:
        print("SKIP: cannot make network namespaces (the reason above); this test needs root")
        return 77
    try:
        return run_tests(opt, rr, tmp, subnet, hosts)
    finally:
        netns.remove_net(PREFIX, pid)


def run_tests(opt, rr, tmp, subnet, hosts):
    host_a, host_b = sorted(hosts)
    env = {**ENV, **netns.ENV, "RAF_NETNS_MAP": f"{tmp}/netns.map"}

    def mpirun(hostlist, timeout=120):
        return ["timeout", "-k", "5", str(timeout), "mpirun", "--allow-run-as-root",
                *netns.mpirun_args(subnet), *hostlist]

    hosts4 = ["--host", f"{host_a}:2,{host_b}:2", "-np", "4"]

    def must(cmd, **kw):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, **kw)
        if p.returncode:
            sys.exit(f"FAIL: {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-4000:]}")
        return p

    failures = 0
    models = make_models(tmp, STEPS, must)
    base = "autodiff,optimizer{kind=adamw lr=1e-3 eps=1e-4}"
    tail = "inline,fuse,plan-memory"
    for model, (src, fn, data) in models.items():
        ref_loss, ref_ckpt = reference(opt, rr, must, tmp, model, (src, fn, data),
                                       f"{base},{tail}", STEPS)
        for zero in (0, 2):
            out = f"{tmp}/{model}.w4z{zero}"
            must([opt, "-p", f"{base},shard{{world=4 zero={zero}}},{tail}", src,
                  "-o", out + ".raf"])
            t0 = time.time()
            must(mpirun(hosts4) + [rr, out + ".raf", f"--function={fn}", f"--steps={STEPS}",
                                   *data, f"--log={out}.jsonl", f"--save={out}.safetensors",
                                   "--print=none"])
            took = time.time() - t0
            loss, ckpt = losses(out + ".jsonl"), read_safetensors(out + ".safetensors")
            dl = float(np.max(np.abs(loss - ref_loss) / np.abs(ref_loss)))
            same = sorted(ckpt) == sorted(ref_ckpt) and all(
                ckpt[k].shape == v.shape for k, v in ref_ckpt.items())
            dp = max((float(np.max(np.abs(ckpt[k].astype(np.float64) - v))) /
                      max(float(np.max(np.abs(v))), 1e-30) for k, v in ref_ckpt.items()),
                     default=0.0) if same else float("inf")
            ok = dl <= 1e-5 and dp <= 1e-5
            failures += report(ok, f"{model} 2 hosts x 2 ranks, zero={zero}: loss rel diff "
                                   f"{dl:.2e}, params/states rel diff {dp:.2e} ({took:.1f} s)")

    prog = f"{tmp}/mlp.w4z2.raf"
    fn, data = models["mlp"][1], models["mlp"][2]

    def long_run(tag):
        return mpirun(hosts4) + ["-x", "RAF_COMM_TIMEOUT", rr, prog, f"--function={fn}",
                                 "--steps=1000000", *data, f"--log={tmp}/{tag}.jsonl",
                                 "--print=none"]

    # A rank of the second host killed (ranks 2 and 3 are on it).
    rc, out, took, gone = kill_rank(long_run("kill"), tmp, f"{tmp}/kill.jsonl", 2, env=env)
    ok = rc not in (0, None) and took <= LIMIT and re.search(
        r"rank 2 .*exited on signal 9", out) is not None
    failures += report(ok, f"rank 2 (second host) killed: exit {rc}, mpirun ended {took:.1f} s "
                           f"after the kill, the last rank {gone:.1f} s", out)

    # Unreachable hosts in a hostfile.
    for what, name in (("an address no host holds", f"{subnet}.9"),
                       ("a name that does not resolve", "nosuchhost.invalid")):
        with open(f"{tmp}/hostfile", "w") as f:
            f.write(f"{host_a} slots=2\n{name} slots=2\n")
        t0 = time.time()
        p = subprocess.run(mpirun(["--hostfile", f"{tmp}/hostfile", "-np", "4"], 60) +
                           [rr, prog, f"--function={fn}", "--steps=2", *data, "--print=none"],
                           capture_output=True, text=True, env=env)
        took, out = time.time() - t0, p.stdout + p.stderr
        ok = p.returncode not in (0, 124, 137) and took <= LIMIT and \
            "ORTE was unable to reliably start one or more daemons" in out
        first = next((line for line in out.splitlines() if line.strip() and "---" not in line),
                     "")
        failures += report(ok, f"hostfile with {what}: exit {p.returncode} after {took:.1f} s: "
                               f"{first[:120]}", out)

    # The second host's link goes down mid-run.
    def link_down():
        netns.ip("link", "set", hosts[host_b], "down")
        return None
    env_link = {**env, "RAF_COMM_TIMEOUT": "5"}
    rc, out, took, gone = run_fault(long_run("link"), tmp, f"{tmp}/link.jsonl", link_down,
                                    env=env_link)
    # raf's watchdog names the rank (RAF_COMM_TIMEOUT); mpirun, when its
    # keepalives notice first, the host whose daemon it lost.
    named = re.search(r"rank [0-9]+ is lost|lost rank|unreachable", out) or (
        "lost communication with a remote daemon" in out and host_b in out)
    ok = rc not in (0, None) and took <= LIMIT and gone <= LIMIT and bool(named)
    m = re.search(r"rank [0-9]+ is lost.*|lost rank.*|.*unreachable.*|"
                  r"lost communication with a remote daemon.*", out)
    failures += report(ok, f"the second host's link down: exit {rc}, mpirun ended {took:.1f} s "
                           f"after, the last rank {gone:.1f} s: {m.group(0) if m else ''}", out)
    leftover = rank_pids(tmp)
    failures += report(not leftover, f"no rank left running ({sorted(leftover.values())})")

    print(f"multihost: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
