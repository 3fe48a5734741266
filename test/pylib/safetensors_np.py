"""safetensors_np.py: reads a safetensors file (raf-run --save) into NumPy
arrays, for the test scripts that compare checkpoints (test/dist,
test/compose, test/lit's Inputs): read(path) -> {name: array}."""
import json
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
          "I64": np.int64, "I32": np.int32}


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] not in DTYPES:
            raise ValueError("%s: %s is %s, which the tests do not read"
                             % (path, name, t["dtype"]))
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], DTYPES[t["dtype"]]).reshape(t["shape"])
    return out
