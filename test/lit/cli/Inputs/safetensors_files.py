"""Safetensors files for raf-run-checkpoint.test, written by hand (struct and
json, not the `safetensors` package) so the test does not depend on raf's
writer.

  safetensors_files.py write DIR        good.safetensors and every bad-*.safetensors
  safetensors_files.py check CKPT NAME=FILE.npy...
      checks that tensor NAME of CKPT equals the .npy bit for bit
"""
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "I64": "<i8", "I32": "<i4", "U8": "u1",
          "I8": "i1", "BOOL": "u1", "BF16": "<u2", "F16": "<f2"}


def pack(header, data, pad=True):
    """The bytes of a file: length, header (space padded to 8), data."""
    text = json.dumps(header).encode()
    if pad:
        text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def tensors(items, order=None):
    """A header and buffer for [(name, dtype, array)]; the buffer holds the
    arrays in `order` (indices), which need not be the header's order."""
    order = order if order is not None else range(len(items))
    header, data, at = {}, b"", {}
    for i in order:
        name, dtype, a = items[i]
        raw = np.ascontiguousarray(a).astype(DTYPES[dtype]).tobytes()
        at[i] = (len(data), len(data) + len(raw))
        data += raw
    for i, (name, dtype, a) in enumerate(items):
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)),
                        "data_offsets": list(at[i])}
    return header, data


def bf16_bits(values):
    """bf16 bit patterns of values exact in bf16."""
    f = np.asarray(values, dtype=np.float32).view(np.uint32)
    return (f >> 16).astype(np.uint16)


def write(d):
    w = np.array([[1.5, -2], [0.25, 3], [-0.5, 1e-3]], dtype=np.float32)
    b = np.array([[7, -7]], dtype=np.float32)
    good = [("m", "BOOL", np.array([1, 0], dtype=np.uint8)),
            ("w", "F32", w),
            ("extra", "I32", np.arange(3, dtype=np.int32)),
            ("s", "BF16", bf16_bits([0.5, -96])),
            ("n", "I64", np.array(41, dtype=np.int64)),
            ("b", "F32", b)]
    # The buffer in another order than the header, and metadata.
    header, data = tensors(good, order=[5, 2, 0, 4, 1, 3])
    header["__metadata__"] = {"producer": "hand-written"}
    files = {"good": pack(header, data)}
    np.save(os.path.join(d, "good_w.npy"), w)

    small = [("w", "F32", w), ("b", "F32", b)]
    header, data = tensors(small)

    def bad(name, h=None, dat=None, raw=None):
        if raw is None:
            raw = pack(h if h is not None else header,
                       dat if dat is not None else data)
        files["bad-" + name] = raw

    def edit(**entries):
        h = json.loads(json.dumps(header))
        for k, v in entries.items():
            if v is None:
                del h[k]
            else:
                h[k] = v
        return h

    bad("short", raw=b"\x05\x00\x00")
    bad("hlen", raw=struct.pack("<Q", 1 << 40) + b"{}")
    bad("trunc-data", dat=data[:-3])
    text = b'{"w": {"dtype": "F32", "shape": [3, 2'
    bad("json", raw=struct.pack("<Q", len(text)) + text)
    bad("notobj", raw=pack([1, 2], b""))
    bad("garbage", raw=struct.pack("<Q", 6) + b"{} x}\x00")
    bad("range", edit(b={"dtype": "F32", "shape": [1, 2],
                         "data_offsets": [24, 40]}))
    bad("overlap", edit(b={"dtype": "F32", "shape": [1, 2],
                           "data_offsets": [16, 24]}), data[:24])
    bad("hole", edit(b={"dtype": "F32", "shape": [1, 2],
                        "data_offsets": [28, 36]}), data + b"\0" * 4)
    bad("trailing", dat=data + b"\0" * 4)
    bad("size", edit(b={"dtype": "F32", "shape": [1, 3],
                        "data_offsets": [24, 32]}))
    bad("dtype", edit(b={"dtype": "C64", "shape": [1],
                         "data_offsets": [24, 32]}))
    bad("nofield", edit(b={"dtype": "F32", "shape": [1, 2]}))
    bad("negdim", edit(b={"dtype": "F32", "shape": [-1, 2],
                          "data_offsets": [24, 32]}))
    bad("meta", edit(__metadata__={"step": 3}))
    dup = pack(header, data).replace(b'"b"', b'"w"')
    bad("dup", raw=dup)
    header_m, data_m = tensors([("m", "BOOL", np.array([1, 2], np.uint8))])
    bad("bool", header_m, data_m)
    # Loadable files whose tensors do not fit @peek's arguments.
    h, dat = tensors([("w", "F64", w.astype(np.float64))])
    files["wrong-dtype"] = pack(h, dat)
    h, dat = tensors([("w", "F32", w.T)])
    files["wrong-shape"] = pack(h, dat)
    for name, raw in files.items():
        with open(os.path.join(d, name + ".safetensors"), "wb") as f:
            f.write(raw)


def read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert (8 + n) % 8 == 0, "the data does not start 8-byte aligned"
    buf = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        out[name] = np.frombuffer(buf[lo:hi], DTYPES[e["dtype"]]).reshape(
            e["shape"])
    return header, out


def check(path, pairs):
    header, ts = read(path)
    assert header["__metadata__"]["producer"].startswith("raf-run ")
    for pair in pairs:
        name, npy = pair.split("=", 1)
        want = np.load(npy)
        got = ts[name]
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert got.tobytes() == want.tobytes(), (name, got, want)
    print("checkpoint ok:", " ".join(sorted(n for n in header
                                            if n != "__metadata__")))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3:])
