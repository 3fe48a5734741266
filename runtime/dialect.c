/* dialect.c: binds each (dialect, op) of lang/dialects.def to a kernel.
 *
 * Each dialect keeps its kernels in a table indexed by opcode, defined in
 * its own file; this file only says which table belongs to which dialect.
 * A dialect this build lacks (its traits' unavailable answer, ir/dialect.h)
 * may have no table: the executor refuses every statement bound to it with
 * a located error that gives the reason. Dialects that prepare
 * their kernels ahead (compile them) also have hooks.
 */
#include "runtime/dialects.h"
#include "runtime/mpi.h"

#include <stdlib.h>
#include <string.h>

static const raf_kernel_fn *const tables[RAF_DIALECT_COUNT] = {
    [RAF_DIALECT_CPU_REF] = raf_cpuref_kernels,
    [RAF_DIALECT_CBLAS] = raf_cblas_kernels,
    [RAF_DIALECT_LLVM] = raf_llvm_kernels,
    [RAF_DIALECT_ONEDNN] = raf_onednn_kernels,
    [RAF_DIALECT_MPI] = raf_mpi_kernels,
#ifdef RAF_HAVE_CUDA
    [RAF_DIALECT_CUDA] = raf_cuda_kernels,
    [RAF_DIALECT_CUBLAS] = raf_cublas_kernels,
#endif
#ifdef RAF_HAVE_NCCL
    [RAF_DIALECT_NCCL] = raf_nccl_kernels,
#endif
#ifdef RAF_HAVE_CUDNN
    [RAF_DIALECT_CUDNN] = raf_cudnn_kernels,
#endif
};

static const raf_dialect_hooks *const hooks[RAF_DIALECT_COUNT] = {
    [RAF_DIALECT_LLVM] = &raf_llvm_hooks,
    [RAF_DIALECT_ONEDNN] = &raf_onednn_hooks,
    [RAF_DIALECT_MPI] = &raf_mpi_hooks,
#ifdef RAF_HAVE_CUDA
    [RAF_DIALECT_CUDA] = &raf_cuda_hooks,
    [RAF_DIALECT_CUBLAS] = &raf_cublas_hooks,
#endif
#ifdef RAF_HAVE_NCCL
    [RAF_DIALECT_NCCL] = &raf_nccl_hooks,
#endif
#ifdef RAF_HAVE_CUDNN
    [RAF_DIALECT_CUDNN] = &raf_cudnn_hooks,
#endif
};

raf_mpi_stats raf_comm_stats_of(const raf_exec *ex) {
  raf_mpi_stats all = raf_mpi_stats_of(ex);
#ifdef RAF_HAVE_NCCL
  raf_mpi_stats gpu = raf_nccl_stats_of(ex);
  all.calls += gpu.calls;
  all.bytes += gpu.bytes;
  all.ns += gpu.ns;
  all.waited_ns += gpu.waited_ns;
#endif
  return all;
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

int *raf_stmt_inplace(const raf_stmt *s, bool *oom) {
  const raf_attr *a = raf_attrs_find(&s->attrs, "inplace");
  *oom = false;
  if (!a || a->kind != RAF_ATTR_INTS || a->val.u.ints.n != s->nresults)
    return NULL;
  bool any = false;
  for (int r = 0; r < s->nresults; r++)
    any |= a->val.u.ints.v[r] >= 0;
  int *v = any ? malloc(sizeof *v * (size_t)s->nresults) : NULL;
  *oom = any && !v;
  for (int r = 0; v && r < s->nresults; r++)
    v[r] = (int)a->val.u.ints.v[r];
  return v;
}

bool raf_inplace_equal(const int *a, const int *b, int n) {
  if (!a || !b)
    return a == b;
  return memcmp(a, b, sizeof *a * (size_t)n) == 0;
}
