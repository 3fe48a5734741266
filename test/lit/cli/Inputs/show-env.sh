#!/bin/sh
# A raf-run for gpu-check-env.test's fake bundle: --list-devices prints the
# environment gpu-check.sh gives raf (as its one device); else it fails.
for a in "$@"; do
  if [ "$a" = --list-devices ]; then
    echo "RAF_LIBDEVICE=${RAF_LIBDEVICE:-unset}"
    exit 0
  fi
done
echo "error: no CUDA device here" >&2
exit 1
