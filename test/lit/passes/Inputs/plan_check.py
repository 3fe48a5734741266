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
import re
import sys
import tempfile

from passcheck import outputs, parse_args, result_count, run, same_results


def main():
    path, o, extra = parse_args(sys.argv[1:], {
        "pre": None, "passes": "plan-memory", "function": None,
        "tolerance": 0.05})
    func, tol, pre = o["function"], o["tolerance"], o["pre"]
    base = run("plan_check",
               ["raf-opt"] + (["-p", pre] if pre else []) + [path]).stdout
    p = run("plan_check", ["raf-opt", "-p", o["passes"], "--stats", "-"], base)
    planned, stats = p.stdout, p.stderr
    m = re.search(r"memory @%s: planned peak (\d+) bytes" % re.escape(func),
                  stats)
    if not m:
        sys.exit("plan_check: no planned peak for @%s in:\n%s" % (func, stats))
    static = int(m.group(1))
    common = ["raf-run", "-", "--function=" + func, "--print-memory"] + extra
    n = result_count(run("plan_check", common + ["--print=full"], base).stdout)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        outs, peaks = {}, {}
        for tag, text in (("unplanned", base), ("planned", planned)):
            # raf-run warns (on stderr) and writes an empty checkpoint when
            # the function has no params or states.
            outs[tag], out = outputs("plan_check", common, text, tmp, tag, n,
                                     ["--save=%s.safetensors"])
            peaks[tag] = int(re.search(r"peak tensor memory: (\d+) bytes",
                                       out).group(1))
        failed |= not same_results(func, outs["unplanned"], outs["planned"], n)
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
