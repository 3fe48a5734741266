#!/bin/sh
# A raf-run, raf-opt or test_device of a machine without a GPU, for
# gpu-check.test's fake bundle: says why and fails.
echo "error: no CUDA device here" >&2
exit 1
