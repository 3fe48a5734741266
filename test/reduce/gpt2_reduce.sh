#!/usr/bin/env bash
# gpt2_reduce.sh BUILD_DIR: raf-reduce on a planted bug buried in a GPT-2
# training step (CTest reduce/gpt2).
#
# buggy-opt (test/reduce/buggy_opt.c) swaps the operands of a gelu_grad fed
# by a matmul {transpose_b}: one statement pair in the MLP backward of a
# training step of several hundred statements. gelu_bug.sh calls a module
# interesting when buggy-opt changes what raf-run computes for it. The
# reducer must bring the step down to at most 10 statements in under a
# minute, and its output must verify and still show the bug. Then the same
# for a 12-layer step of thousands of statements, with a text-only test.
set -euo pipefail
bin=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
work="$bin/reduce-gpt2"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
export RAF_BIN="$bin"
test="$src/test/reduce/gelu_bug.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

# One layer: raf-run runs a step of at most 64 arguments and results. The
# tokens get an init attribute so that raf-run can make every argument.
/usr/bin/python3 "$src/examples/gpt2/gen_gpt2.py" --layers 1 --heads 4 \
    --embd 64 --vocab 76 --seq 16 --batch 2 gpt2.raf
sed -i -E 's/(%[xy]: i64\[2,16\])/\1 {init = "uniform(0, 75)"}/' gpt2.raf
"$bin/raf-opt" --autodiff --optimizer="kind=adamw lr=1e-3" gpt2.raf -o step.raf
before=$("$bin/raf-opt" --stats step.raf -o /dev/null 2>&1 | sed -n 's/^raf-opt: \([0-9]*\) statements$/\1/p')
echo "the training step: $before statements"
[ "$before" -ge 300 ] || fail "the step has only $before statements"

# The test is not trivially true: the forward model has no gelu_grad.
"$test" step.raf || fail "the bug does not show on the training step"
if "$test" gpt2.raf; then fail "the test calls the forward model interesting"; fi

start=$(date +%s%N)
"$bin/raf-reduce" --test="$test" --timeout=60 step.raf -o small.raf
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
seconds="$((ms / 1000)).$(printf %03d $((ms % 1000)))"
cat small.raf

after=$("$bin/raf-opt" --stats small.raf -o /dev/null 2>&1 | sed -n 's/^raf-opt: \([0-9]*\) statements$/\1/p')
[ -n "$after" ] || fail "the output does not verify"
echo "reduced: $before -> $after statements in $seconds s"
[ "$after" -le 10 ] || fail "$after statements (at most 10)"
[ "$ms" -lt 60000 ] || fail "took $seconds s (at most 60)"
"$test" small.raf || fail "the output does not show the bug"
grep -q 'gelu_grad(' small.raf || fail "the output has no gelu_grad"
grep -q 'matmul(.*transpose_b' small.raf || fail "the output has no matmul {transpose_b}"

# A step of thousands of statements (12 layers; text only, raf-run would
# refuse its 300 arguments): the test is that buggy-opt changes the text.
cat > changes.sh <<'SH'
#!/bin/sh
"$RAF_BIN/buggy-opt" "$1" | cmp -s - "$1" && exit 1
exit 0
SH
chmod +x changes.sh
/usr/bin/python3 "$src/examples/gpt2/gen_gpt2.py" --layers 12 --heads 4 \
    --embd 64 --vocab 76 --seq 16 --batch 2 gpt2-12.raf
"$bin/raf-opt" --autodiff --optimizer gpt2-12.raf -o step-12.raf
start=$(date +%s%N)
"$bin/raf-reduce" --test=./changes.sh step-12.raf -o small-12.raf
ms=$(( ($(date +%s%N) - start) / 1000000 ))
n=$("$bin/raf-opt" --stats small-12.raf -o /dev/null 2>&1 | sed -n 's/^raf-opt: \([0-9]*\) statements$/\1/p')
echo "12 layers: reduced to $n statements in $ms ms"
[ -n "$n" ] && [ "$n" -le 10 ] || fail "12 layers: ${n:-invalid} statements"
[ "$ms" -lt 60000 ] || fail "12 layers: took $ms ms"
./changes.sh small-12.raf || fail "12 layers: the output does not show the bug"
echo PASS
