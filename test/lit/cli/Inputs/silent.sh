#!/bin/sh
# A raf-run, raf-opt or test_device that succeeds and prints nothing, for
# gpu-check-figures.test's fake bundle; given --log=FILE it writes 12 steps
# of 1 ms there, so that a step time is the only figure a part finds.
for a in "$@"; do
  case $a in
  --log=*)
    f=${a#--log=}
    : > "$f"
    for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
      echo '{"step": '$i', "ms": 1.0}' >> "$f"
    done ;;
  esac
done
exit 0
