#!/usr/bin/python3
"""plot-log.py: draws the loss curves of raf-run --log files into a PNG.

    /usr/bin/python3 scripts/plot-log.py [-o OUT.png] [--metric=loss|ms]
        [--smooth=N] [--logy] [--title=TEXT] [--label=NAME ...] LOG.jsonl...

raf-run --log writes one JSON object per step, {"step": 1, "loss": 2.33,
"ms": 1.8}, "loss" null when it was not finite and absent when the first
result is no float scalar. Each log becomes one curve of --metric (default
loss) against the step, named by its --label (in order) or its file name
less .jsonl. A long, noisy curve is hard to read, so past 200 steps each
curve is drawn faintly (with up to 3 logs) and its moving average over
--smooth steps over it (default: a fiftieth of the steps; --smooth=1 draws
the raw curve alone). Steps without a finite value are left out, and their
count is named in the legend. One line per log goes to stdout: its steps,
first and last value.

The PNG goes to -o, by default next to the first log (train.jsonl ->
train.png). Needs matplotlib (Debian's python3-matplotlib; see
scripts/install-deps.sh). Exit status 1 on an unreadable or malformed log
or a log with no value to plot.
"""
import argparse
import json
import math
import os
import sys


def fail(msg):
    sys.exit("plot-log: " + msg)


def read_log(path, metric):
    """(steps, values, skipped) of `metric` in the JSONL file at path."""
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        fail(f"cannot read '{path}': {e.strerror}")
    steps, values, skipped = [], [], 0
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as e:
                fail(f"{path}:{n}: not a JSON object: {e}")
            if not isinstance(rec, dict) or not isinstance(rec.get("step"), int):
                fail(f"{path}:{n}: a record needs an integer \"step\"")
            v = rec.get(metric)
            if v is None or isinstance(v, bool) or not isinstance(v, (int, float)) \
                    or not math.isfinite(v):
                skipped += 1
                continue
            steps.append(rec["step"])
            values.append(float(v))
    if not values:
        fail(f"{path}: no step has a finite \"{metric}\"")
    return steps, values, skipped


def moving_average(values, window):
    """The mean of each value and the window - 1 before it (fewer at the
    start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def main():
    ap = argparse.ArgumentParser(
        description="Draws raf-run --log files (JSON lines) into a PNG.")
    ap.add_argument("logs", nargs="+", metavar="LOG.jsonl")
    ap.add_argument("-o", "--output", metavar="OUT.png",
                    help="the PNG (default: the first log's name, .png)")
    ap.add_argument("--metric", default="loss",
                    help="the key to plot (default loss; ms: step time)")
    ap.add_argument("--smooth", type=int, default=0, metavar="N",
                    help="moving-average window in steps (default: a "
                         "fiftieth of the steps past 200; 1: none)")
    ap.add_argument("--logy", action="store_true", help="a log-scale y axis")
    ap.add_argument("--title", help="the plot's title")
    ap.add_argument("--label", action="append", default=[], metavar="NAME",
                    help="the name of a curve, one per log in order "
                         "(default: the file name)")
    a = ap.parse_intermixed_args()  # a --label may follow its log
    if a.smooth < 0:
        fail("--smooth needs a window of 1 step or more")
    if len(a.label) > len(a.logs):
        fail(f"{len(a.label)} --label flags for {len(a.logs)} logs")
    out = a.output or os.path.splitext(a.logs[0])[0] + ".png"
    logs = [read_log(p, a.metric) for p in a.logs]

    try:
        import matplotlib
        matplotlib.use("Agg")  # no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        fail("needs matplotlib (Debian: apt-get install python3-matplotlib; "
             "see scripts/install-deps.sh)")

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    for i, (path, (steps, values, skipped)) in enumerate(zip(a.logs, logs)):
        name = a.label[i] if i < len(a.label) else \
            os.path.basename(path).removesuffix(".jsonl")
        if skipped:
            name += f" ({skipped} step{'s' if skipped > 1 else ''} " \
                    f"without a finite {a.metric})"
        window = a.smooth or (len(values) // 50 if len(values) > 200 else 1)
        color = f"C{i % 10}"
        if window > 1:
            if len(logs) <= 3:  # more raw curves hide each other's means
                ax.plot(steps, values, color=color, alpha=0.25, linewidth=0.8)
            ax.plot(steps, moving_average(values, window), color=color,
                    linewidth=1.5, label=f"{name}, mean of {window} steps")
        else:
            ax.plot(steps, values, color=color, linewidth=1.2, label=name)
        print(f"{path}: {len(values)} steps, {a.metric} {values[0]:.6g} "
              f"(step {steps[0]}) -> {values[-1]:.6g} (step {steps[-1]})")
    ax.set_xlabel("step")
    ax.set_ylabel(a.metric)
    if a.logy:
        ax.set_yscale("log")
    if a.title:
        ax.set_title(a.title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(out, format="png")
    except OSError as e:
        fail(f"cannot write '{out}': {e.strerror}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
