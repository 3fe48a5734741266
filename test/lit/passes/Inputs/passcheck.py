"""passcheck.py: what plan_check.py and fuse_same.py share: running the
tools, their command lines, and running a function of two modules to
compare the results byte for byte."""
import os
import re
import subprocess
import sys


def run(who, cmd, stdin=None):
    """The tool's completed process; exits with its stderr if it failed."""
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: %s failed (%d):\n%s" %
                 (who, " ".join(cmd), p.returncode, p.stderr))
    return p


def parse_args(argv, defaults):
    """(FILE, options, RAF-RUN ARGS) of `FILE --name=value ... [-- ARGS]`:
    options start from defaults; a name whose default is a list collects
    every value given, the others keep the last, converted to the
    default's type when it has one."""
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    path, opts = None, dict(defaults)
    for a in argv:
        name, eq, value = a[2:].partition("=")
        if not a.startswith("--") or not eq or name not in defaults:
            path = a
        elif isinstance(defaults[name], list):
            opts[name] = opts[name] + [value]
        elif defaults[name] is not None:
            opts[name] = type(defaults[name])(value)
        else:
            opts[name] = value
    return path, opts, extra


def result_count(raf_run_stdout):
    """The results of a function, from the stdout of raf-run --print=full
    (by default a training step's updates are one line)."""
    return len(re.findall(r"^result\[\d+\]:", raf_run_stdout, re.M))


def outputs(who, cmd, text, tmp, tag, n, more=()):
    """raf-run `cmd` on module `text`, its n results written to .npy files
    (and the files of `more` extra arguments, paths in tmp named after
    tag): (their bytes, raf-run's stdout)."""
    files = [os.path.join(tmp, "%s.%d.npy" % (tag, i)) for i in range(n)]
    extra = [m % os.path.join(tmp, tag) for m in more]
    out = run(who, cmd + ["--output=@" + x for x in files] + extra,
              text).stdout
    paths = files + [m.split("=", 1)[1] for m in extra]
    return [open(x, "rb").read() for x in paths], out


def same_results(func, a, b, n):
    """Prints whether the first n of a and b are the same; True if so."""
    diff = [i for i in range(n) if a[i] != b[i]]
    if diff:
        print("@%s: results %s differ" % (func, diff))
    else:
        print("@%s: %d results identical" % (func, n))
    return not diff
