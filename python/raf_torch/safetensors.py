"""Safetensors files written and read by hand (struct + json), so that the
exporter needs nothing beyond PyTorch and NumPy: raf-run --load reads the
weights the exporter writes, and a checkpoint raf-run --save wrote goes
back into a PyTorch module.

The layout: the header length (8 bytes, little-endian), a JSON header
(padded with spaces so the data starts 8-byte aligned), then each tensor's
bytes, little-endian, C order, at its offsets.
"""
import json
import struct

import numpy as np
import torch

_CODES = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64",
          np.dtype("<f2"): "F16", np.dtype("<i8"): "I64",
          np.dtype("<i4"): "I32", np.dtype("<i1"): "I8",
          np.dtype("u1"): "U8", np.dtype("bool"): "BOOL"}
_DTYPES = {code: dt for dt, code in _CODES.items()}


def write(path, tensors, producer="raf_torch"):
    """tensors: [(name, torch.Tensor or np.ndarray)], written in order."""
    header, chunks, at = {}, [], 0
    for name, t in tensors:
        a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t
        # np.array, not np.ascontiguousarray, which makes a scalar [1]
        a = np.array(a, dtype=a.dtype.newbyteorder("<"), order="C")
        if a.dtype not in _CODES:
            raise ValueError(f"safetensors: {name} has dtype {a.dtype}, "
                             f"which raf cannot read")
        raw = a.tobytes()
        header[name] = {"dtype": _CODES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [at, at + len(raw)]}
        chunks.append(raw)
        at += len(raw)
    header["__metadata__"] = {"producer": producer}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)


def read(path):
    """{name: torch.Tensor} of a safetensors file (BF16 is not read)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if e["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: {name} has dtype {e['dtype']}, "
                             f"which raf_torch does not read")
        lo, hi = e["data_offsets"]
        a = np.frombuffer(data[lo:hi], _DTYPES[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(a.copy())
    return out
