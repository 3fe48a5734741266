#!/usr/bin/env python3
"""The data of scripts/gpu-check.sh, written with the standard library alone.

    python3 bench/gpu_data.py pack SRC OUT --train N
    python3 bench/gpu_data.py mlp SRC OUT
    python3 bench/gpu_data.py tokens OUT --rows R --seq T --vocab V

The GPU machine's Python has PyTorch but maybe not NumPy, so this writes
.npy files by hand (format 1.0: magic, a padded header dict, the C-order
little-endian data).

`pack`: Fashion-MNIST's four idx files (as Debian ships them, gzipped)
from SRC into OUT, uncompressed (xz packs them 15% smaller than gzip did)
and with the first N training images and labels only (scripts/gpu-bundle.sh
keeps 50,000 of 60,000 so that the bundle stays under 60 MB).

`mlp`: examples/mlp/prepare_data.py's files from Fashion-MNIST's idx files
in SRC (gzipped or not; train_x.npy f32 [60000, 784] = pixels / 255, train_y.npy i64
[60000], test_x.npy, test_y.npy [10000]); the training set is shuffled
once with random.Random(0) (not NumPy's generator: another order than
prepare_data.py's, the same kind of run).

`tokens`: x.npy and y.npy, i64 [R, T], uniform random tokens below V
(seed 0) with y = x shifted by one: the GPT-2 benchmark's batches, R / B of
them for a batch of B rows. Timing does not depend on the tokens' values.
"""
import argparse
import array
import gzip
import os
import random
import sys


def write_npy(path, descr, shape, data):
    """Writes bytes `data` as an .npy of dtype `descr` ('<f4', '<i8')."""
    dims = "(" + "".join(f"{d}, " for d in shape).rstrip(" ")
    if len(shape) > 1:
        dims = dims.rstrip(",")
    dims += ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00")
        f.write(len(header).to_bytes(2, "little"))
        f.write(header.encode("latin1"))
        f.write(data)


def read_raw(src, name):
    """The bytes of idx file NAME in SRC, NAME or NAME.gz."""
    path = os.path.join(src, name)
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    with gzip.open(path + ".gz", "rb") as f:
        return f.read()


def read_idx(src, name):
    data = read_raw(src, name)
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return dims, data[4 + 4 * ndim:]


def mlp(src, out):
    scale = [b / 255.0 for b in range(256)]
    for split, prefix in (("train", "train"), ("test", "t10k")):
        (n, h, w), pixels = read_idx(src, f"{prefix}-images-idx3-ubyte")
        _, labels = read_idx(src, f"{prefix}-labels-idx1-ubyte")
        row = h * w
        order = list(range(n))
        if split == "train":
            random.Random(0).shuffle(order)
        pixels = b"".join(pixels[i * row:(i + 1) * row] for i in order)
        x = array.array("f", map(scale.__getitem__, pixels))
        y = array.array("q", (labels[i] for i in order))
        if sys.byteorder != "little":
            x.byteswap()
            y.byteswap()
        write_npy(os.path.join(out, f"{split}_x.npy"), "<f4", (n, row), x.tobytes())
        write_npy(os.path.join(out, f"{split}_y.npy"), "<i8", (n,), y.tobytes())
        print(f"{split}: {n} images")


def pack(src, out, train):
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        data = read_raw(src, name)
        if name.startswith("train"):
            ndim = data[3]
            dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
                    for i in range(ndim)]
            item = 1
            for d in dims[1:]:
                item *= d
            n = min(train, dims[0])
            body = data[4 + 4 * ndim:4 + 4 * ndim + n * item]
            data = data[:4] + n.to_bytes(4, "big") + data[8:4 + 4 * ndim] + body
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


def tokens(out, rows, seq, vocab):
    rng = random.Random(0)
    stream = [rng.randrange(vocab) for _ in range(rows * seq + 1)]
    x = array.array("q")
    y = array.array("q")
    for r in range(rows):
        x.extend(stream[r * seq:(r + 1) * seq])
        y.extend(stream[r * seq + 1:(r + 1) * seq + 1])
    if sys.byteorder != "little":
        x.byteswap()
        y.byteswap()
    write_npy(os.path.join(out, "x.npy"), "<i8", (rows, seq), x.tobytes())
    write_npy(os.path.join(out, "y.npy"), "<i8", (rows, seq), y.tobytes())


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("pack")
    p.add_argument("src")
    p.add_argument("out")
    p.add_argument("--train", type=int, required=True)
    m = sub.add_parser("mlp")
    m.add_argument("src")
    m.add_argument("out")
    t = sub.add_parser("tokens")
    t.add_argument("out")
    for k in ("rows", "seq", "vocab"):
        t.add_argument(f"--{k}", type=int, required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.what == "pack":
        pack(a.src, a.out, a.train)
    elif a.what == "mlp":
        mlp(a.src, a.out)
    else:
        tokens(a.out, a.rows, a.seq, a.vocab)


if __name__ == "__main__":
    main()
