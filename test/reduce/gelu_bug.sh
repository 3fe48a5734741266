#!/bin/sh
# gelu_bug.sh CANDIDATE.raf: the interestingness test of the planted bug.
# Exits 0 when buggy-opt changes what the module computes: raf-run prints
# different results (all of them, every element: --print=full) for the
# module and for buggy-opt's output of it, both runs succeeding. RAF_BIN is
# the build directory (raf-run, buggy-opt).
bin=${RAF_BIN:?RAF_BIN must name the build directory}
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT
"$bin/buggy-opt" "$1" -o "$work/opt.raf" 2>/dev/null || exit 1
"$bin/raf-run" --print=full "$1" > "$work/before.txt" 2>/dev/null || exit 1
"$bin/raf-run" --print=full "$work/opt.raf" > "$work/after.txt" 2>/dev/null || exit 1
! cmp -s "$work/before.txt" "$work/after.txt"
