#!/usr/bin/python3
"""A character-level dataset for gpt2.raf from a text file.

    /usr/bin/python3 examples/gpt2/prepare_data.py --seq 64 --batch 4 OUT_DIR
        [--input FILE] [--batches K]

The text defaults to the GNU GPL version 3 as Debian ships it in every
system (/usr/share/common-licenses/GPL-3, package base-files): 35,149
characters, 76 distinct. Each character is a token, numbered in the order of
its code point. The text is cut into windows of seq + 1 characters, one
every seq characters; a window's first seq tokens are an input row and its
last seq the targets (the input shifted by one). The rows are shuffled once
with a fixed seed (raf-run --dataset feeds batches in file order) and cut to
a whole number of batches K (--batches: at most K), and written as

    OUT_DIR/x.npy       i64 [K * batch, seq]   token ids
    OUT_DIR/y.npy       i64 [K * batch, seq]   next-token ids
    OUT_DIR/vocab.json  the characters, token i being vocab[i]

so that `raf-run --dataset=x=@OUT_DIR/x.npy --dataset=y=@OUT_DIR/y.npy` gives
step s batch s mod K. The model's --vocab must be at least len(vocab).
"""
import argparse
import json
import os

import numpy as np

DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


def load(path=DEFAULT_TEXT):
    """The text and its vocabulary (sorted distinct characters)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text, sorted(set(text))


def batches(text, vocab, seq, batch, max_batches=None, seed=0):
    """x, y: i64 [K * batch, seq], the windows described above."""
    index = {c: i for i, c in enumerate(vocab)}
    ids = np.array([index[c] for c in text], dtype=np.int64)
    rows = (len(ids) - 1) // seq
    if rows < batch:
        raise ValueError(f"the text ({len(ids)} characters) is too short for "
                         f"one batch of {batch} x {seq + 1}")
    starts = np.arange(rows) * seq
    starts = starts[np.random.default_rng(seed).permutation(rows)]
    k = rows // batch
    if max_batches:
        k = min(k, max_batches)
    starts = starts[:k * batch]
    x = np.stack([ids[s:s + seq] for s in starts])
    y = np.stack([ids[s + 1:s + seq + 1] for s in starts])
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", default=DEFAULT_TEXT, help="the text file")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--batches", type=int, default=0,
                    help="at most this many batches (default: all)")
    ap.add_argument("out", nargs="?", default=".")
    a = ap.parse_args()
    text, vocab = load(a.input)
    x, y = batches(text, vocab, a.seq, a.batch, a.batches)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "x.npy"), x)
    np.save(os.path.join(a.out, "y.npy"), y)
    with open(os.path.join(a.out, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    print(f"{a.input}: {len(text)} characters, vocab {len(vocab)}; "
          f"{len(x) // a.batch} batches of {a.batch} x {a.seq} "
          f"(x.npy, y.npy: i64{list(x.shape)})")


if __name__ == "__main__":
    main()
