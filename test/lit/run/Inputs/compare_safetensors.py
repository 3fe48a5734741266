"""compare_safetensors.py A B RTOL: every tensor of safetensors file A is
in B with the same dtype and shape and values within RTOL relative (and
RTOL / 10 absolute; integers (a loss scaler's counter) exactly); says
which differ and exits 1 otherwise."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "pylib"))
from safetensors_np import read as load  # noqa: E402

a, b, rtol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
bad = [k for k in a
       if k not in b or a[k].shape != b[k].shape
       or (a[k].dtype == np.int64 and not np.array_equal(a[k], b[k]))
       or not np.allclose(b[k], a[k], rtol=rtol, atol=rtol / 10)]
for k in bad:
    print("differs: %s" % k)
sys.exit(1 if bad else 0)
