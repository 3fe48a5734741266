# gpu-check-lib.sh: the figure checks of scripts/gpu-check.sh, which sources
# it (test/lit/cli/gpu-check-figures.test runs them alone). A part whose
# figure is missing must fail, and a comparison cannot be trusted to: in
# Python `float("nan") < 0.85` is false, so an accuracy that was never
# printed passed as one above the bar. Every figure a part prints or
# compares goes through `figure` first. Needs bash and awk only.

# figure WHAT VALUE: succeeds when VALUE is a finite decimal number (not
# empty, nan or inf); else says on stderr that WHAT is missing and fails.
figure() {
  if awk -v v="$2" 'BEGIN {
      exit !(v ~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/) }'; then
    return 0
  fi
  echo "no ${1}${2:+ (got '$2')}" >&2
  return 1
}

# at_least WHAT VALUE MIN: VALUE is a figure (above) and at least MIN; else
# says why on stderr and fails.
at_least() {
  figure "$1" "$2" || return 1
  if awk -v v="$2" -v m="$3" 'BEGIN { exit !(v + 0 >= m + 0) }'; then
    return 0
  fi
  echo "$1 $2 is below $3" >&2
  return 1
}
