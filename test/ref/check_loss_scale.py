#!/usr/bin/python3
"""amp{dtype=f16}'s dynamic loss scaling against GradScaler's rules.

    /usr/bin/python3 test/ref/check_loss_scale.py --bin BUILD_DIR [--keep DIR]

The model is built to overflow in f16 at the initial scale 2^16: the loss is
sum(x @ w) with x all ones [4, 8], so the backward pass carries the scale S
itself and w's gradient is 4 S, exactly; f16 overflows (rounds to inf) from
65520 up. GradScaler's rules (torch.cuda.amp.GradScaler: init_scale 2^16,
growth_factor 2, backoff_factor 0.5, growth_interval 2000) then give steps
1-3 skipped (S: 65536, 32768, 16384) and S = 8192 from step 4 on.

The training step (autodiff, amp f16, AdamW, inline, fuse, plan-memory) runs
one step per raf-run call, each resuming from the previous call's checkpoint
(--load, --save), for 50 steps: the sequence of scales and of skipped steps
must equal the reference below, written from GradScaler's documented rules,
and on a skipped step every param and state but the scaler's must be the
same bits as before it (params, moments, the step counter). Then the count
of clean steps is set to 1998 in the checkpoint: the second step after it
must double the scale (to 16384, where 4 S overflows again: the third step
is skipped and backs off). Exits 1 on a mismatch.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

MODEL = """
func @f(%x: f32[4,8], %w: f32[8,2] {param, init = "normal(0, 1)"}) -> f32[] {
  %h = matmul(%x, %w)
  %l = sum(%h)
  return %l
}
"""
PIPELINE = ("autodiff,amp{dtype=f16},optimizer{kind=adamw lr=1e-3},inline,"
            "fuse,plan-memory")
F16_OVERFLOW = 65520.0  # the smallest value that rounds to f16's inf
ST_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        lo, hi = t["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + lo:8 + n + hi],
                                  ST_DTYPES[t["dtype"]]).reshape(t["shape"])
    return header, out


def patch_growth(path, value):
    """Overwrites loss_scale_growth in a checkpoint, in place."""
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    (n,) = struct.unpack("<Q", raw[:8])
    lo, _ = json.loads(raw[8:8 + n])["loss_scale_growth"]["data_offsets"]
    raw[8 + n + lo:8 + n + lo + 8] = struct.pack("<q", value)
    with open(path, "wb") as f:
        f.write(raw)


def grad_scaler(scale, growth, found_inf):
    """One update of GradScaler's scale and growth tracker."""
    if found_inf:
        return scale * 0.5, 0
    growth += 1
    if growth == 2000:
        return scale * 2.0, 0
    return scale, growth


def overflows(scale):
    # dh = S (in f16 once cast for the matmul), dw = 4 S.
    return scale >= F16_OVERFLOW or 4 * scale >= F16_OVERFLOW


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--keep")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="raf-loss-scale-")
    os.makedirs(work, exist_ok=True)
    P = lambda *p: os.path.join(work, *p)  # noqa: E731
    raf_opt = os.path.join(args.bin, "raf-opt")
    raf_run = os.path.join(args.bin, "raf-run")
    with open(P("f.raf"), "w") as f:
        f.write(MODEL)
    np.save(P("x.npy"), np.ones((4, 8), np.float32))
    subprocess.run([raf_opt, "-p", PIPELINE, P("f.raf"), "-o", P("step.raf")],
                   check=True)

    def step(i, load):
        cmd = [raf_run, P("step.raf"), "--function=f_train_step",
               "--input=x=@" + P("x.npy"), "--save=" + P(f"ck{i}.safetensors"),
               "--output=@" + P("loss.npy")]
        if load:
            cmd.append("--load=" + P(f"ck{load}.safetensors"))
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return read_safetensors(P(f"ck{i}.safetensors"))[1]

    failures = []
    scale, growth = 65536.0, 0
    prev = None
    for i in range(1, 51):
        skipped = overflows(scale)
        scale, growth = grad_scaler(scale, growth, skipped)
        got = step(i, i - 1 if i > 1 else None)
        if got["loss_scale"] != scale or got["loss_scale_growth"] != growth:
            failures.append(f"step {i}: scale {got['loss_scale']} growth "
                            f"{got['loss_scale_growth']}, GradScaler gives "
                            f"{scale} and {growth}")
        others = [k for k in got if not k.startswith("loss_scale")]
        before = prev if prev is not None else None
        if skipped and before is not None:
            for k in others:
                if got[k].tobytes() != before[k].tobytes():
                    failures.append(f"step {i} was skipped but {k} changed")
        if skipped and i == 1 and got["step"] != 0:
            failures.append("step 1 was skipped but the step counter moved")
        if not skipped and before is not None and \
                got["w"].tobytes() == before["w"].tobytes():
            failures.append(f"step {i} was clean but w did not change")
        prev = got
    print(f"50 steps: scales and skips as GradScaler's; final scale {scale}, "
          f"{growth} clean steps, step counter {prev['step']}")

    # Growth: 1998 clean steps so far; two more reach 2000.
    shutil.copy(P("ck50.safetensors"), P("ck100.safetensors"))
    patch_growth(P("ck100.safetensors"), 1998)
    growth = 1998
    for i in range(101, 104):
        skipped = overflows(scale)
        scale, growth = grad_scaler(scale, growth, skipped)
        got = step(i, i - 1)
        if got["loss_scale"] != scale or got["loss_scale_growth"] != growth:
            failures.append(f"growth step {i - 100}: scale {got['loss_scale']}"
                            f" growth {got['loss_scale_growth']}, GradScaler "
                            f"gives {scale} and {growth}")
    print(f"growth: after 2000 clean steps the scale doubled and the next "
          f"step backed off to {scale}")
    if not args.keep:
        shutil.rmtree(work)
    for f in failures:
        print("MISMATCH:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
