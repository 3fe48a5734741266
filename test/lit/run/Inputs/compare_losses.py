"""compare_losses.py A.jsonl B.jsonl RTOL [FIRST RTOL_FIRST]: the losses
that raf-run --log wrote, step by step: B has A's steps and each loss within
RTOL relative of A's (and, with FIRST, the first FIRST steps within
RTOL_FIRST). Prints the largest difference found; says which step differs
and exits 1 otherwise."""
import json
import sys


def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


a, b = losses(sys.argv[1]), losses(sys.argv[2])
rtol = float(sys.argv[3])
first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
rtol_first = float(sys.argv[5]) if len(sys.argv) > 5 else rtol
if len(a) != len(b) or not a:
    sys.exit("%s has %d steps, %s %d" % (sys.argv[1], len(a), sys.argv[2], len(b)))
worst, worst_step, bad = 0.0, 0, []
for i, (x, y) in enumerate(zip(a, b)):
    if x is None or y is None:
        bad.append("step %d: loss %s, expected %s" % (i + 1, y, x))
        continue
    d = abs(x - y) / max(abs(x), 1e-30)
    if d > worst:
        worst, worst_step = d, i + 1
    tol = rtol_first if i < first else rtol
    if d > tol:
        bad.append("step %d: loss %.9g, expected %.9g (rel %.3g > %g)" % (i + 1, y, x, d, tol))
print("%d steps, largest relative difference %.3g (step %d)" % (len(a), worst, worst_step))
for line in bad[:10]:
    print("differs: " + line)
sys.exit(1 if bad else 0)
