"""compare_safetensors.py A B RTOL: every tensor of safetensors file A is
in B with the same dtype and shape and values within RTOL relative (and
RTOL / 10 absolute; integers (a loss scaler's counter) exactly); says
which differ and exits 1 otherwise. F32 and I64."""
import json
import struct
import sys

import numpy as np


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        types = {"F32": np.float32, "I64": np.int64}
        if t["dtype"] not in types:
            sys.exit("%s: %s is %s, not F32 or I64" % (path, name, t["dtype"]))
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(body[b:e], types[t["dtype"]]).reshape(t["shape"])
    return out


a, b, rtol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
bad = [k for k in a
       if k not in b or a[k].shape != b[k].shape
       or (a[k].dtype == np.int64 and not np.array_equal(a[k], b[k]))
       or not np.allclose(b[k], a[k], rtol=rtol, atol=rtol / 10)]
for k in bad:
    print("differs: %s" % k)
sys.exit(1 if bad else 0)
