# openblas-core.sh BUILD_DIR: sourced by the bench scripts. OpenBLAS picks
# its kernels at load time from the CPU's model; on a virtual machine that
# hides the model ("Intel(R) Xeon(R) Processor") it falls back to its
# Prescott (SSE3) kernels: on the reference machine's Sapphire Rapids,
# 2048^3 sgemm at 2 threads ran at 40 GFLOP/s so, and at 190 with its
# AVX-512 ones. When OpenBLAS says Prescott and OPENBLAS_CORETYPE is not
# set, this sets it from the CPU's flags (SkylakeX with avx512f, Haswell
# with avx2) and says so on stderr. raf-run does the same for itself
# (docs/raf-run.md); this gives the peers that link OpenBLAS
# (matmul_openblas.c) the same kernels, and says which they are.
if [ -z "${OPENBLAS_CORETYPE:-}" ] &&
   [ "$(OPENBLAS_VERBOSE=2 "${1:-build}/raf-run" --version 2>&1 | head -1)" = "Core: Prescott" ]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo)
  case " $flags " in
    *" avx512f "*) export OPENBLAS_CORETYPE=SkylakeX ;;
    *" avx2 "*) export OPENBLAS_CORETYPE=Haswell ;;
  esac
  [ -z "${OPENBLAS_CORETYPE:-}" ] ||
    echo "openblas-core.sh: OpenBLAS detects Prescott on this CPU; OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE" >&2
fi
