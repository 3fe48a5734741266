# openblas-core.sh BUILD_DIR: sourced by the bench scripts. OpenBLAS picks
# its kernels at load time from the CPU's model; on a virtual machine that
# hides the model ("Intel(R) Xeon(R) Processor") it falls back to its
# Prescott (SSE3) kernels: on the reference machine's Sapphire Rapids,
# 2048^3 sgemm at 2 threads ran at 40 GFLOP/s so, and at 190 with its
# AVX-512 ones. When OpenBLAS says Prescott and OPENBLAS_CORETYPE is not
# set, this sets it from the CPU's flags (Cooperlake with avx512_bf16,
# whose kernels include bf16 sbgemm; SkylakeX with avx512f; Haswell with
# avx2) and says so on stderr.
if [ -z "${OPENBLAS_CORETYPE:-}" ] &&
   [ "$(OPENBLAS_VERBOSE=2 "${1:-build}/raf-run" --version 2>&1 | head -1)" = "Core: Prescott" ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo)
  case " $flags " in
    *" avx512_bf16 "*) export OPENBLAS_CORETYPE=Cooperlake ;;
    *" avx512f "*) export OPENBLAS_CORETYPE=SkylakeX ;;
    *" avx2 "*) export OPENBLAS_CORETYPE=Haswell ;;
  esac
  [ -z "${OPENBLAS_CORETYPE:-}" ] ||
    echo "openblas-core.sh: OpenBLAS detects Prescott on this CPU; OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE" >&2
fi
