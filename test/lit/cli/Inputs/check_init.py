# Checks the statistics of the tensors raf-run made from `init`.
import sys

import numpy as np

n = np.load(sys.argv[1])
u = np.load(sys.argv[2])
assert abs(n.mean() - 1) < 0.2 and abs(n.std() - 2) < 0.2, (n.mean(), n.std())
assert u.min() >= -3 and u.max() < -1 and abs(u.mean() + 2) < 0.1, u
print("stats ok")
