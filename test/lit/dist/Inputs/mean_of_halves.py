"""mean_of_halves.py SHARDED.safetensors SHARDED.jsonl HALF0.safetensors
HALF0.jsonl HALF1.safetensors HALF1.jsonl RTOL: batch_norm=local at world 2
after one SGD step is the mean of two processes that each train on one
half of the batch: the same loss (the ranks' mean), params (the update is
linear in the gradient, and the gradient the mean of the halves') and
running statistics (the ranks' mean)."""
import json, os, sys
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "pylib"))
from safetensors_np import read as tensors  # noqa: E402


def first_loss(path):
    with open(path) as f:
        return json.loads(f.readline())["loss"]


sharded, halves = sys.argv[1:3], [sys.argv[3:5], sys.argv[5:7]]
rtol = float(sys.argv[7])
got, want = tensors(sharded[0]), [tensors(h[0]) for h in halves]
bad = [k for k in got
       if not np.allclose(got[k], (want[0][k] + want[1][k]) / 2, rtol=rtol,
                          atol=rtol / 10)]
loss = (first_loss(halves[0][1]) + first_loss(halves[1][1])) / 2
if not np.isclose(first_loss(sharded[1]), loss, rtol=rtol):
    bad.append("loss")
for k in bad:
    print("differs: %s" % k)
print("mean of the halves" if not bad else "not the mean of the halves")
sys.exit(1 if bad else 0)
