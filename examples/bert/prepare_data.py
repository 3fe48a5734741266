#!/usr/bin/python3
"""Masked-language-model batches for examples/bert from a text file.

    /usr/bin/python3 examples/bert/prepare_data.py --seq 64 --batch 8 OUT_DIR
        [--input FILE] [--copies N] [--batches K] [--seed S]

The text and its character vocabulary are examples/gpt2/prepare_data.py's
(GPL-3 as Debian ships it: 76 distinct characters, token i the i-th in code
point order); the [MASK] token is one more id, len(vocab). The text is cut
into windows of seq characters, one every seq characters, and the windows
are shuffled with the seed.

Masking is BERT's (create_pretraining_data.py): in each sequence
max(1, round(0.15 * seq)) distinct positions are chosen; each chosen
position's label is its original token, and its input becomes [MASK] with
probability 0.8, a random character with 0.1, and stays as it is with 0.1.
Every other label is -100, the ignore_index of PyTorch's and raf's
cross_entropy, so the loss counts the chosen positions only. As in BERT the
masks are static, drawn here; --copies N (default 4) writes the text N
times over, each copy with its own draw of windows order and masks, so that
the model does not see the same masked batch every epoch.

Written, with the seed fixed (default 0), so every run gets the same files:

    OUT_DIR/input_ids.npy  i64 [K * batch, seq]  token ids after masking
    OUT_DIR/labels.npy     i64 [K * batch, seq]  original ids or -100
    OUT_DIR/vocab.json     {"chars": [...], "mask": id, "vocab": size}

raf-run --dataset=input_ids=@OUT_DIR/input_ids.npy
--dataset=labels=@OUT_DIR/labels.npy gives step s batch s mod K. The
model's vocab (bert.py's CONFIGS) must be at least len(chars) + 1.
"""
import argparse
import importlib.util
import json
import os

import numpy as np


def _gpt2_data():
    """examples/gpt2/prepare_data.py (the text and its vocabulary), loaded
    by path: it has this module's name, so `import` would find this one."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                        "gpt2", "prepare_data.py")
    spec = importlib.util.spec_from_file_location("gpt2_prepare_data", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gpt2_data = _gpt2_data()

MASK_PROB = 0.15
IGNORE = -100


def windows(text, chars, seq, rng):
    """i64 [rows, seq]: the text's token ids cut into windows, shuffled."""
    index = {c: i for i, c in enumerate(chars)}
    ids = np.array([index[c] for c in text], dtype=np.int64)
    rows = len(ids) // seq
    if rows < 1:
        raise ValueError(f"the text ({len(ids)} characters) is shorter than "
                         f"one sequence of {seq}")
    x = ids[:rows * seq].reshape(rows, seq)
    return x[rng.permutation(rows)]


def mask(x, n_chars, mask_id, rng):
    """BERT's masking of every row of x: (input_ids, labels)."""
    rows, seq = x.shape
    picks = max(1, int(round(MASK_PROB * seq)))
    inputs, labels = x.copy(), np.full_like(x, IGNORE)
    for r in range(rows):
        pos = rng.choice(seq, size=picks, replace=False)
        labels[r, pos] = x[r, pos]
        u = rng.random(picks)
        inputs[r, pos[u < 0.8]] = mask_id
        rand = pos[(u >= 0.8) & (u < 0.9)]
        inputs[r, rand] = rng.integers(0, n_chars, size=len(rand))
        # u >= 0.9: the token stays, but is still predicted
    return inputs, labels


def batches(text, chars, seq, batch, copies=4, max_batches=0, seed=0):
    """(input_ids, labels), i64 [K * batch, seq] each: `copies` passes over
    the text, each with its own order and masks, cut to whole batches."""
    rng = np.random.default_rng(seed)
    mask_id = len(chars)
    xs, ys = [], []
    for _ in range(copies):
        x, y = mask(windows(text, chars, seq, rng), len(chars), mask_id, rng)
        xs.append(x)
        ys.append(y)
    x, y = np.concatenate(xs), np.concatenate(ys)
    k = len(x) // batch
    if k < 1:
        raise ValueError(f"{len(x)} sequences do not make one batch of {batch}")
    if max_batches:
        k = min(k, max_batches)
    return x[:k * batch], y[:k * batch]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--input", default=gpt2_data.DEFAULT_TEXT)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--copies", type=int, default=4,
                    help="passes over the text, each masked anew")
    ap.add_argument("--batches", type=int, default=0,
                    help="at most this many batches (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("out", nargs="?", default=".")
    a = ap.parse_args()
    text, chars = gpt2_data.load(a.input)
    x, y = batches(text, chars, a.seq, a.batch, a.copies, a.batches, a.seed)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "input_ids.npy"), x)
    np.save(os.path.join(a.out, "labels.npy"), y)
    with open(os.path.join(a.out, "vocab.json"), "w") as f:
        json.dump({"chars": chars, "mask": len(chars),
                   "vocab": len(chars) + 1}, f)
    masked = int((y != IGNORE).sum())
    print(f"{a.input}: {len(text)} characters, {len(chars)} distinct + "
          f"[MASK] = vocab {len(chars) + 1}; {len(x) // a.batch} batches of "
          f"{a.batch} x {a.seq}, {masked} masked positions "
          f"({masked / y.size:.1%})")


if __name__ == "__main__":
    main()
