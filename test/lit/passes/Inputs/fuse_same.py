"""fuse_same.py: a pass pipeline must not change what a module computes.

    fuse_same.py FILE.raf [--pre=PIPELINE] [--passes=PIPELINE]
                 [--function=NAME ...] [--expect-fused=N]
                 [--dialects=LIST] [-- RAF-RUN ARGS]

Runs each function of FILE (after `raf-opt -p PRE` when --pre is given)
through raf-run, then the same module after `-p PASSES` (default `fuse`),
with the same arguments (every argument needs an `init` attribute, or a
value among RAF-RUN ARGS), and checks that every result is bit for bit the
same (.npy bytes). By default the functions are those of the module before
PASSES; --function picks some. --expect-fused=N also checks that PASSES
made N new fused functions. Prints one line per function; exits 1 on any
difference. Both runs use the dialects LIST (default cpu-ref), so that a
fused function runs statement by statement with the same kernels as the
unfused code: the check is about the pass, not about a code generator's
numerics. raf-opt and raf-run are taken from PATH (lit puts the build
there).
"""
import os
import re
import subprocess
import sys
import tempfile


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("fuse_same: %s failed (%d):\n%s" % (" ".join(cmd), p.returncode, p.stderr))
    return p.stdout


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    path, pre, passes, funcs, expect = None, None, "fuse", [], None
    dialects = "cpu-ref"
    for a in argv:
        if a.startswith("--pre="):
            pre = a[6:]
        elif a.startswith("--passes="):
            passes = a[9:]
        elif a.startswith("--function="):
            funcs.append(a[11:])
        elif a.startswith("--dialects="):
            dialects = a[11:]
        elif a.startswith("--expect-fused="):
            expect = int(a[15:])
        else:
            path = a
    base = run(["raf-opt"] + (["-p", pre] if pre else []) + [path])
    after = run(["raf-opt", "-p", passes, "-"], base)
    fused = re.compile(r"^func @\S+\(.*\{fused\} \{$", re.M)
    nfused = len(fused.findall(after)) - len(fused.findall(base))
    if expect is not None and nfused != expect:
        sys.exit("fuse_same: expected %d fused functions, got %d" % (expect, nfused))
    if not funcs:
        funcs = [m.group(1) for m in re.finditer(r"^func @([A-Za-z0-9_.]+)\(.*\{$", base, re.M)
                 if "{fused}" not in m.group(0)]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for f in funcs:
            common = ["raf-run", "-", "--function=" + f, "--dialects=" + dialects] + extra
            n = len(re.findall(r"^result\[\d+\]:", run(common, base), re.M))
            outs = {}
            for tag, text in (("ref", base), ("new", after)):
                files = [os.path.join(tmp, "%s.%s.%d.npy" % (f, tag, i)) for i in range(n)]
                run(common + ["--output=@" + x for x in files], text)
                outs[tag] = [open(x, "rb").read() for x in files]
            diff = [i for i in range(n) if outs["ref"][i] != outs["new"][i]]
            if diff:
                failed = True
                print("@%s: results %s differ" % (f, diff))
            else:
                print("@%s: %d results identical" % (f, n))
    print("fused functions made: %d" % nfused)
    sys.exit(1 if failed else 0)


main()
