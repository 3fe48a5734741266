/* cublas_stub.c: the cublas dialect in a build without the CUDA toolkit.
 *
 * The dialect's rows stay in lang/dialects.def in every build; here its
 * kernels refuse to run, saying why, as onednn's do without oneDNN. In a
 * build with the toolkit runtime/cuda/cublas.c defines them instead and
 * this file is empty.
 */
#include "runtime/dialects.h"

#ifndef RAF_HAVE_CUDA

const char *const raf_cublas_unavailable =
    "raf was built without CUDA (the CUDA toolkit's headers were not found "
    "when it was configured)";

static raf_status no_cublas(const raf_kernel *k) {
  return raf_kernel_fail(k, "dialect cublas: %s", raf_cublas_unavailable);
}

const raf_dialect_hooks raf_cublas_hooks = {0};

const raf_kernel_fn raf_cublas_kernels[RAF_OP_COUNT] = {
    [RAF_OP_MATMUL] = no_cublas,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION] = no_cublas,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD] = no_cublas,
    [RAF_OP_CALL] = no_cublas,
};

#else
/* ISO C wants a translation unit to declare something. */
typedef int raf_cublas_stub_unused;
#endif
