/* dialects.h: the kernel tables of the dialects, one per dialect file,
 * and the hooks of the dialects that prepare their kernels ahead.
 *
 * Each table is indexed by opcode; NULL where the dialect has no kernel.
 * The executor reaches them only through raf_dialect_kernel and
 * raf_dialect_hooks.
 */
#ifndef RAF_DIALECTS_H
#define RAF_DIALECTS_H

#include "ir/dialect.h"
#include "runtime/kernel.h"

extern const raf_kernel_fn raf_cpuref_kernels[RAF_OP_COUNT];
extern const raf_kernel_fn raf_cblas_kernels[RAF_OP_COUNT];
extern const raf_kernel_fn raf_llvm_kernels[RAF_OP_COUNT];
extern const raf_kernel_fn raf_onednn_kernels[RAF_OP_COUNT];
extern const raf_kernel_fn raf_mpi_kernels[RAF_OP_COUNT];
/* In a build with the CUDA toolkit only (runtime/cuda/cuda_dialect.c). */
extern const raf_kernel_fn raf_cuda_kernels[RAF_OP_COUNT];
extern const raf_kernel_fn raf_cublas_kernels[RAF_OP_COUNT];
/* In a build with the CUDA toolkit and NCCL's nccl.h only
 * (runtime/cuda/nccl.c). */
extern const raf_kernel_fn raf_nccl_kernels[RAF_OP_COUNT];
/* In a build with the CUDA toolkit and cuDNN's cudnn_graph.h only
 * (runtime/cuda/cudnn.c). */
extern const raf_kernel_fn raf_cudnn_kernels[RAF_OP_COUNT];

/* Hooks of a dialect whose kernels need work before the first call (the
 * llvm dialect compiles the fused functions its calls name). Each member
 * may be NULL.
 *   prepare  at raf_exec_create, before any statement is bound: prepares
 *            what m's statements annotated with the dialect need; *state
 *            is the dialect's own for this executor. RAF_ERROR (reported)
 *            fails raf_exec_create.
 *   bind     when the executor binds statement s to the dialect: the data
 *            its kernel gets as raf_kernel.bound. NULL declines s; a
 *            declined `call` runs its callee statement by statement. A
 *            call bound to data must be run correctly with the buffers its
 *            `inplace` attribute (a memory plan's) shares between results
 *            and operands.
 *   release  at raf_exec_destroy: frees the state. */
typedef struct raf_dialect_hooks {
  raf_status (*prepare)(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                        void **state);
  const void *(*bind)(void *state, const raf_stmt *s);
  void (*release)(void *state);
} raf_dialect_hooks;

/* For a bind hook compiling a call: the statement's in-place results (the
 * plan-memory pass's `inplace` attribute) as a new array, per result the
 * operand it overwrites or -1, which the caller frees; NULL when none does,
 * or when out of memory, which sets *oom. */
int *raf_stmt_inplace(const raf_stmt *s, bool *oom);
/* Whether two such arrays of n results (either may be NULL) are the same. */
bool raf_inplace_equal(const int *a, const int *b, int n);

/* The hooks of dialect d, or NULL when it has none. */
const raf_dialect_hooks *raf_dialect_hooks_of(raf_dialect d);

extern const raf_dialect_hooks raf_llvm_hooks;
extern const raf_dialect_hooks raf_onednn_hooks;
extern const raf_dialect_hooks raf_mpi_hooks;
extern const raf_dialect_hooks raf_cuda_hooks; /* with CUDA only */
extern const raf_dialect_hooks raf_cublas_hooks; /* with CUDA only */
extern const raf_dialect_hooks raf_nccl_hooks; /* with NCCL only */
extern const raf_dialect_hooks raf_cudnn_hooks; /* with cuDNN only */

/* Why a dialect cannot run in this build is its traits' answer,
 * raf_dialect_unavailable (ir/dialect.h): the executor refuses a
 * statement bound to such a dialect with that reason. */

/* OpenBLAS chooses its kernels when it is loaded, from the CPU's model.
 * On a virtual machine that hides the model it falls back to its generic
 * Prescott (SSE3) kernels, about 5x slower than the AVX-512 ones of the
 * same CPU. Then, and only when OPENBLAS_CORETYPE is unset, this returns
 * the value of OPENBLAS_CORETYPE that names the CPU's kernels (from its
 * features: "SkylakeX" with AVX-512, "Haswell" with AVX2); else
 * NULL. OpenBLAS reads the variable only when loaded, so a program sets it
 * and starts again (raf-run does). runtime/cblas.c. */
const char *raf_cblas_better_core(void);

#endif
