"""Every .raf file of the lit suite that raf-opt accepts (each chunk on its
own, as --split-input-file splits it) prints to a text that prints to itself
byte for byte: print(parse(print(parse(x)))) == print(parse(x)).

usage: roundtrip_all.py RAF_OPT LIT_DIR
"""
import os
import pathlib
import subprocess
import sys


def run(raf_opt, text, loc):
    args = [raf_opt] + (["--print-loc"] if loc else [])
    return subprocess.run(args, input=text, capture_output=True, text=True)


def sources(root):
    """The suite's own .raf files: lit's Output directories are left out,
    since tests running beside this one write and delete files there."""
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "Output"]
        yield from (pathlib.Path(top, f) for f in files if f.endswith(".raf"))


def main():
    raf_opt, root = sys.argv[1], pathlib.Path(sys.argv[2])
    checked = failed = 0
    for path in sorted(sources(root)):
        for chunk in path.read_text().split("\n// -----"):
            for loc in (False, True):
                first = run(raf_opt, chunk, loc)
                if first.returncode != 0:
                    continue
                second = run(raf_opt, first.stdout, loc)
                checked += 1
                if second.returncode != 0 or second.stdout != first.stdout:
                    failed += 1
                    print(f"not a fixed point: {path} (print-loc={loc})")
    print(f"round trips: {checked} checked, {failed} failed")
    sys.exit(1 if failed or checked < 100 else 0)


if __name__ == "__main__":
    main()
