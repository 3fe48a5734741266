#!/bin/sh
# A raf-run or test_device for gpu-check-env.test's fake bundle: prints
# the environment gpu-check.sh gives raf, for --list-devices (as its one
# device) and --gpu (test_device's run); anything else fails.
for a in "$@"; do
  case $a in
  --list-devices | --gpu)
    echo "RAF_LIBDEVICE=${RAF_LIBDEVICE:-unset} RAF_CUDA_SYNC=${RAF_CUDA_SYNC:-unset}"
    exit 0 ;;
  esac
done
echo "error: no CUDA device here" >&2
exit 1
