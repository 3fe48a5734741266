#!/usr/bin/env bash
# test.sh: the whole test suite. Installs what is missing, builds, and runs
#  1. the unit and lit tests (CTest) on the release build;
#  2. the same again on an AddressSanitizer + UBSan build;
#  3. the parser fuzzer (libFuzzer, clang-19), seeded with the lit tests,
#     the PTX interpreter's loader's, seeded with PTX, and raf-import's,
#     seeded with the ONNX node tests' models, for a third of FUZZ_SECONDS
#     (default 60) each.
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0
failed=0
step() { # step NAME COMMAND...: runs a step and counts it
  local name=$1; shift
  echo "== $name"
  if "$@"; then passed=$((passed + 1)); echo "== $name: ok"
  else failed=$((failed + 1)); echo "== $name: FAILED"; fi
}

bash scripts/install-deps.sh || exit 1

release() {
  bash scripts/build.sh build && (cd build && ctest --output-on-failure)
}
sanitized() {
  bash scripts/build.sh build-asan -DRAF_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug &&
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure)
}
fuzz() {
  bash scripts/build.sh build-fuzz -DRAF_FUZZ=ON -DCMAKE_C_COMPILER=clang-19 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo || return 1
  local corpus
  corpus=$(mktemp -d)
  # Each chunk of a split test is a seed of its own.
  find test/lit -name '*.raf' | while read -r f; do
    csplit -s -z -f "$corpus/$(basename "$f" .raf)." "$f" '/^\/\/ -----/' '{*}' 2>/dev/null ||
      cp "$f" "$corpus/"
  done
  # FUZZ_SECONDS is shared in thirds (the raf parser, the PTX loader,
  # raf-import), so the step takes FUZZ_SECONDS whatever fuzzers it has;
  # a fixed share for one would make the budget a lower bound instead.
  local seconds=$(( (${FUZZ_SECONDS:-60} + 2) / 3 ))
  build-fuzz/fuzz-parse -max_total_time="$seconds" -max_len=4096 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus" 2>&1 |
    grep -E '^(#[0-9]+ +DONE|Done |stat::|==[0-9]+==|SUMMARY|artifact)' 
  local rc=${PIPESTATUS[0]}
  rm -rf "$corpus"
  [ "$rc" = 0 ] || return "$rc"
  # The PTX interpreter's loader (test/cuda/ptx), seeded with nvcc's PTX
  # (testdata), the unit tests' kernels (ptx-seeds) and, when the build
  # had nvcc, the runtime's kernels.
  corpus=$(mktemp -d)
  cp test/cuda/ptx/testdata/*.ptx test/fuzz/ptx-seeds/*.ptx "$corpus/"
  for f in build-fuzz/cuda-ptx/kernels.ptx build-fuzz/cuda-ptx/attention.ptx; do
    [ -f "$f" ] && cp "$f" "$corpus/"
  done
  build-fuzz/fuzz-ptx -max_total_time="$seconds" -max_len=16384 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus" 2>&1 |
    grep -E '^(#[0-9]+ +DONE|Done |stat::|==[0-9]+==|SUMMARY|artifact)'
  rc=${PIPESTATUS[0]}
  rm -rf "$corpus"
  [ "$rc" = 0 ] || return "$rc"
  # raf-import, seeded with the ONNX node tests' models and the inputs
  # that once crashed it.
  [ -x build-fuzz/fuzz-import ] || return 0
  corpus=$(mktemp -d)
  for f in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
    [ -f "$f" ] && cp "$f" "$corpus/$(basename "$(dirname "$f")").onnx"
  done
  cp test/fuzz/import-crashes/*.onnx "$corpus/" # inputs that once crashed it
  build-fuzz/fuzz-import -max_total_time="$seconds" -max_len=16384 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "$corpus" 2>&1 |
    grep -E '^(#[0-9]+ +DONE|Done |stat::|==[0-9]+==|SUMMARY|artifact)'
  rc=${PIPESTATUS[0]}
  rm -rf "$corpus"
  return "$rc"
}

step "release build: unit and lit tests" release
step "AddressSanitizer/UBSan build: unit and lit tests" sanitized
step "fuzzers: ${FUZZ_SECONDS:-60} s over parse, verify, print and passes, the PTX loader, and raf-import" fuzz
echo "test.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
