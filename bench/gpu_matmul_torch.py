"""gpu_matmul_torch.py: torch.matmul's time on the GPU for one product, the
peer of bench/gpu_matmul.sh.

    gpu_matmul_torch.py DTYPE M K N FLAGS STEPS WARMUP
        prints the median milliseconds of STEPS - WARMUP timed calls of
        torch.matmul(a, b) (a [M, K] or, FLAGS "ta", a^T of a [K, M]; b
        [K, N] or, "tb", b^T of b [N, K]), each timed with CUDA events
        and synchronized, as raf-run times a step
    gpu_matmul_torch.py --check
        exits 0 when torch sees a GPU, else 2 with the reason

DTYPE is f32 (TF32 off, unless RAF_CUBLAS_TF32=1, as raf's) or bf16.
"""
import os
import statistics
import sys


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(2)


def main():
    try:
        import torch
    except ImportError as e:
        fail(f"no torch: {e}")
    if not torch.cuda.is_available():
        fail("torch sees no CUDA device")
    if sys.argv[1:] == ["--check"]:
        return
    dt, m, k, n, flags, steps, warmup = sys.argv[1:8]
    m, k, n, steps, warmup = int(m), int(k), int(n), int(steps), int(warmup)
    tf32 = os.environ.get("RAF_CUBLAS_TF32") == "1"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dt]
    dev = torch.device("cuda")
    a = torch.randn((k, m) if flags == "ta" else (m, k), device=dev,
                    dtype=dtype)
    b = torch.randn((n, k) if flags == "tb" else (k, n), device=dev,
                    dtype=dtype)
    if flags == "ta":
        a = a.t()
    if flags == "tb":
        b = b.t()
    ms = []
    for _ in range(steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        torch.cuda.synchronize()
        ms.append(start.elapsed_time(end))
    print(f"{statistics.median(ms[warmup:]):.4f}")


if __name__ == "__main__":
    main()
