#!/usr/bin/python3
"""Converts Debian's Fashion-MNIST (package dataset-fashion-mnist) to .npy.

    /usr/bin/python3 examples/mlp/prepare_data.py OUT_DIR

writes train_x.npy (f32 [60000, 784], pixels / 255), train_y.npy (i64
[60000]), test_x.npy and test_y.npy (10,000 each). The training set is
shuffled once with a fixed seed, since raf-run --dataset feeds batches in
file order.
"""
import gzip
import os
import sys

import numpy as np

SRC = "/usr/share/datasets/fashion-mnist"


def read_idx(name):
    with gzip.open(os.path.join(SRC, name), "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x = read_idx(f"{prefix}-images-idx3-ubyte.gz").reshape(-1, 784)
        y = read_idx(f"{prefix}-labels-idx1-ubyte.gz").astype(np.int64)
        x = (x.astype(np.float32) / 255.0)
        if split == "train":
            order = np.random.default_rng(0).permutation(len(y))
            x, y = x[order], y[order]
        np.save(os.path.join(out, f"{split}_x.npy"), np.ascontiguousarray(x))
        np.save(os.path.join(out, f"{split}_y.npy"), y)
        print(f"{split}: {len(y)} images")


if __name__ == "__main__":
    main()
