/* dialect.c: binds each (dialect, op) of lang/dialects.def to a kernel.
 *
 * Each dialect keeps its kernels in a table indexed by opcode, defined in
 * its own file; this file only says which table belongs to which dialect.
 * A dialect this build lacks has no table, and every statement bound to it
 * is refused by the executor with a located error; or, like onednn built
 * without oneDNN, kernels that refuse to run, and raf_dialect_unavailable
 * says why. Dialects that prepare
 * their kernels ahead (compile them) also have hooks.
 */
#include "runtime/dialects.h"
#include "runtime/mpi.h"

static const raf_kernel_fn *const tables[RAF_DIALECT_COUNT] = {
    [RAF_DIALECT_CPU_REF] = raf_cpuref_kernels,
    [RAF_DIALECT_CBLAS] = raf_cblas_kernels,
    [RAF_DIALECT_LLVM] = raf_llvm_kernels,
    [RAF_DIALECT_ONEDNN] = raf_onednn_kernels,
    [RAF_DIALECT_MPI] = raf_mpi_kernels,
#ifdef RAF_HAVE_CUDA
    [RAF_DIALECT_CUDA] = raf_cuda_kernels,
#endif
    [RAF_DIALECT_CUBLAS] = raf_cublas_kernels,
};

static const raf_dialect_hooks *const hooks[RAF_DIALECT_COUNT] = {
    [RAF_DIALECT_LLVM] = &raf_llvm_hooks,
    [RAF_DIALECT_ONEDNN] = &raf_onednn_hooks,
    [RAF_DIALECT_MPI] = &raf_mpi_hooks,
#ifdef RAF_HAVE_CUDA
    [RAF_DIALECT_CUDA] = &raf_cuda_hooks,
#endif
    [RAF_DIALECT_CUBLAS] = &raf_cublas_hooks,
};

#ifdef RAF_HAVE_CUDA
static const char *const cuda_unavailable = NULL;
#else
static const char *const cuda_unavailable =
    "raf was built without the CUDA toolkit";
#endif

const char *raf_dialect_unavailable(raf_dialect d) {
  return d == RAF_DIALECT_ONEDNN ? raf_onednn_unavailable
         : d == RAF_DIALECT_MPI  ? raf_mpi_unavailable
         : d == RAF_DIALECT_CUDA ? cuda_unavailable
         : d == RAF_DIALECT_CUBLAS ? raf_cublas_unavailable
                                 : NULL;
}

const raf_dialect_hooks *raf_dialect_hooks_of(raf_dialect d) {
  return d >= 0 && d < RAF_DIALECT_COUNT ? hooks[d] : NULL;
}

raf_kernel_fn raf_dialect_kernel(raf_dialect d, raf_opcode op) {
  if (d < 0 || d >= RAF_DIALECT_COUNT || !tables[d] || op < 0 ||
      op >= RAF_OP_COUNT)
    return NULL;
  return tables[d][op];
}
