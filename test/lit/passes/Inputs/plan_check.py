"""plan_check.py: a memory plan computes what the unplanned module does,
and the executor's measured peak is the static one raf-opt reports.

    plan_check.py FILE.raf --function=NAME [--pre=PIPELINE]
                  [--passes=PIPELINE] [--tolerance=0.05] [-- RAF-RUN ARGS]

Makes the module (`raf-opt -p PRE FILE`, or FILE), plans it (`raf-opt -p
PASSES --stats`, default plan-memory: PASSES should change no kernel, so
that both runs compute with the same ones) and reads the function's static
`planned peak` from --stats. Runs the function in both modules through
raf-run with RAF-RUN ARGS (which should carry --steps for a training step)
and --print-memory, writing every result and a checkpoint of the params
and states; checks that the results and checkpoints are the same bytes,
and that the planned run's measured peak is within the tolerance of the
static figure. Prints the figures; exits 1 on any failure. raf-opt and
raf-run are taken from PATH (lit puts the build there).
"""
import os
import re
import subprocess
import sys
import tempfile


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("plan_check: %s failed (%d):\n%s" %
                 (" ".join(cmd), p.returncode, p.stderr))
    return p


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    path, pre, passes, func, tol = None, None, "plan-memory", None, 0.05
    for a in argv:
        if a.startswith("--pre="):
            pre = a[6:]
        elif a.startswith("--passes="):
            passes = a[9:]
        elif a.startswith("--function="):
            func = a[11:]
        elif a.startswith("--tolerance="):
            tol = float(a[12:])
        else:
            path = a
    base = run(["raf-opt"] + (["-p", pre] if pre else []) + [path]).stdout
    p = run(["raf-opt", "-p", passes, "--stats", "-"], base)
    planned, stats = p.stdout, p.stderr
    m = re.search(r"memory @%s: planned peak (\d+) bytes" % re.escape(func),
                  stats)
    if not m:
        sys.exit("plan_check: no planned peak for @%s in:\n%s" % (func, stats))
    static = int(m.group(1))
    common = ["raf-run", "-", "--function=" + func, "--print-memory"] + extra
    first = run(common, base).stdout
    n = len(re.findall(r"^result\[\d+\]:", first, re.M))
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        outs, peaks = {}, {}
        for tag, text in (("unplanned", base), ("planned", planned)):
            files = [os.path.join(tmp, "%s.%d.npy" % (tag, i))
                     for i in range(n)]
            ckpt = os.path.join(tmp, tag + ".safetensors")
            out = run(common + ["--output=@" + x for x in files] +
                      ["--save=" + ckpt], text).stdout
            peaks[tag] = int(re.search(r"peak tensor memory: (\d+) bytes",
                                       out).group(1))
            # raf-run warns (on stderr) and writes an empty checkpoint when
            # the function has no params or states.
            outs[tag] = [open(x, "rb").read() for x in files + [ckpt]]
        diff = [i for i in range(n) if outs["unplanned"][i] != outs["planned"][i]]
        if diff:
            failed = True
            print("@%s: results %s differ" % (func, diff))
        else:
            print("@%s: %d results identical" % (func, n))
        if outs["unplanned"][n] != outs["planned"][n]:
            failed = True
            print("@%s: checkpoints differ" % func)
        else:
            print("@%s: checkpoints identical" % func)
    measured = peaks["planned"]
    off = abs(measured - static) / static
    print("@%s: static peak %d bytes, measured %d (%s, off by %.2f%%)" %
          (func, static, measured,
           "within %g%%" % (100 * tol) if off <= tol else "NOT within %g%%" %
           (100 * tol), 100 * off))
    print("@%s: unplanned run's peak %d bytes; planned uses %.1f%% of it" %
          (func, peaks["unplanned"], 100.0 * measured / peaks["unplanned"]))
    failed |= off > tol
    sys.exit(1 if failed else 0)


main()
