"""ckpt.py: checks of raf-run checkpoints and logs, for the --resume and
--save-every tests. Reads files with json and struct only, so the tests do
not depend on raf's reader.

  ckpt.py same A B        the same tensors (names, dtypes, shapes, bytes),
                          metadata aside; says which differ, exits 1 if any
  ckpt.py meta F          prints F's "raf-run." metadata, key=value, sorted
  ckpt.py same-log A B    two --log files have the same steps and losses,
                          bit for bit as logged ("ms" aside)
"""
import json
import struct
import sys


def read(path):
    """{name: (dtype, shape, bytes)} and the metadata of a file."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    buf = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors = {k: (e["dtype"], e["shape"], buf[e["data_offsets"][0]:e["data_offsets"][1]])
               for k, e in header.items()}
    return tensors, meta


def same(a, b):
    ta, tb = read(a)[0], read(b)[0]
    bad = sorted(k for k in set(ta) | set(tb) if ta.get(k) != tb.get(k))
    for k in bad:
        print("differs: %s" % k)
    if not bad:
        print("same: %d tensors" % len(ta))
    return 1 if bad else 0


def meta(path):
    for k, v in sorted(read(path)[1].items()):
        if k.startswith("raf-run."):
            print("%s=%s" % (k, v))
    return 0


def steps(path):
    out = []
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            out.append((d["step"], d.get("loss")))
    return out


def same_log(a, b):
    la, lb = steps(a), steps(b)
    if la != lb:
        print("differs: %s has %s, %s has %s" % (a, la, b, lb))
        return 1
    print("same: steps %s" % [s for s, _ in la])
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    sys.exit({"same": same, "meta": meta, "same-log": same_log}[cmd](*args))
