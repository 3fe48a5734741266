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
import re
import sys
import tempfile

from passcheck import outputs, parse_args, result_count, run, same_results


def main():
    path, o, extra = parse_args(sys.argv[1:], {
        "pre": None, "passes": "fuse", "function": [], "expect-fused": None,
        "dialects": "cpu-ref"})
    pre, funcs = o["pre"], o["function"]
    base = run("fuse_same",
               ["raf-opt"] + (["-p", pre] if pre else []) + [path]).stdout
    after = run("fuse_same", ["raf-opt", "-p", o["passes"], "-"], base).stdout
    fused = re.compile(r"^func @\S+\(.*\{fused\} \{$", re.M)
    nfused = len(fused.findall(after)) - len(fused.findall(base))
    expect = o["expect-fused"]
    if expect is not None and nfused != int(expect):
        sys.exit("fuse_same: expected %s fused functions, got %d" % (expect, nfused))
    if not funcs:
        funcs = [m.group(1) for m in re.finditer(r"^func @([A-Za-z0-9_.]+)\(.*\{$", base, re.M)
                 if "{fused}" not in m.group(0)]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for f in funcs:
            common = ["raf-run", "-", "--function=" + f, "--dialects=" + o["dialects"]] + extra
            n = result_count(run("fuse_same", common + ["--print=full"], base).stdout)
            ref, _ = outputs("fuse_same", common, base, tmp, f + ".ref", n)
            new, _ = outputs("fuse_same", common, after, tmp, f + ".new", n)
            failed |= not same_results(f, ref, new, n)
    print("fused functions made: %d" % nfused)
    sys.exit(1 if failed else 0)

main()
