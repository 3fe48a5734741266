"""Inputs of cblas.raf: random operands for the cblas dialect's attention,
attention gradient and cross_entropy kernels, written as .npy files into
the directory given (the test compares cblas's results with cpu-ref's)."""
import sys

import numpy as np

out = sys.argv[1]
r = np.random.default_rng(7)


def save(name, shape, scale=1.0):
    np.save(f"{out}/{name}.npy", (scale * r.standard_normal(shape)).astype(np.float32))


# Two blocks of 64 query rows and a short third; keys as many, or fewer.
save("q", (2, 3, 150, 16))
save("k", (2, 3, 150, 16))
save("v", (2, 3, 150, 8))
save("dy", (2, 3, 150, 8))
save("k2", (2, 3, 40, 16))
save("v2", (2, 3, 40, 8))
# A vocabulary-wide row and a few short ones; labels with ignored rows.
save("logits", (7, 5003), 3.0)
labels = r.integers(0, 5003, 7)
labels[2] = -100
np.save(f"{out}/labels.npy", labels.astype(np.int64))
np.save(f"{out}/dyn.npy", r.standard_normal(7).astype(np.float32))
