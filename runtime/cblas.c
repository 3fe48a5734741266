/* cblas.c: the cblas dialect: matmul bound to OpenBLAS's gemm.
 *
 * matmul(a, b) in f64 (cblas_dgemm), f32 (cblas_sgemm) and bf16, with both
 * transpose flags (passed to gemm as CblasTrans, so nothing is copied) and
 * NumPy-broadcast batch dims: one gemm per result matrix, at the operands'
 * matrix offsets (an operand whose batch dim is 1 keeps offset 0 along
 * it). When b is shared by every batch and a is neither transposed nor
 * broadcast, the batch folds into the rows: one gemm of M' = batch * M,
 * which is what `x [B, S, D] @ w [D, F]` needs and is much faster than B
 * small gemms.
 *
 * bf16: OpenBLAS's cblas_sbgemm (bf16 operands, float accumulation and
 * result) when the library has it; Debian's 0.3.21 declares it in cblas.h
 * but is built without BUILD_BFLOAT16, so the symbol is a weak reference
 * that the kernel checks. Without it the operands widen to f32 (exactly)
 * and cblas_sgemm computes the same float products and sums. Either way
 * the float result rounds to bf16 to nearest even once, as cpu-ref does.
 *
 * OpenBLAS runs its own threads; the kernel sets their number to the
 * executor's (--threads), so one knob governs both. OpenBLAS partitions
 * gemm over M and N only, never K, so a result element's sum order does
 * not depend on the thread count.
 */
#include "runtime/dialects.h"
#include "runtime/exec.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#pragma weak cblas_sbgemm

/* A gemm on row-major matrices, C = op(A) op(B), C [m, n]. */
typedef struct gemm_call {
  raf_dtype dt; /* of the buffers: RAF_F64, RAF_F32, or RAF_BF16 with C f32 */
  bool ta, tb;
  int64_t m, n, k;
} gemm_call;

static void gemm(const gemm_call *g, const void *a, const void *b, void *c) {
  enum CBLAS_TRANSPOSE ta = g->ta ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE tb = g->tb ? CblasTrans : CblasNoTrans;
  blasint m = (blasint)g->m, n = (blasint)g->n, k = (blasint)g->k;
  blasint lda = g->ta ? m : k, ldb = g->tb ? k : n;
  switch (g->dt) {
  case RAF_F64:
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, n);
    break;
  case RAF_F32:
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                n);
    break;
  default: /* RAF_BF16: the caller checked that cblas_sbgemm exists */
    cblas_sbgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c,
                 n);
    break;
  }
}

static bool fits_blasint(int64_t v) { return v <= INT_MAX; }

/* Runs the gemms of the whole matmul: a, b and c hold elements of size
 * `size` (c's may differ: csize), laid out as the operand types say. */
static void batched_gemm(const raf_kernel *k, gemm_call g, const void *a,
                         size_t asize, const void *b, size_t bsize, void *c,
                         size_t csize) {
  const raf_type *at = k->in[0]->type, *bt = k->in[1]->type,
                 *ot = k->out[0]->type;
  int batch_rank = ot->rank - 2;
  int64_t nbatch = ot->numel / (g.m * g.n);
  int64_t sa[RAF_MAX_RANK], sb[RAF_MAX_RANK];
  raf_broadcast_strides(at, ot, sa);
  raf_broadcast_strides(bt, ot, sb);
  bool b_shared = true;
  for (int d = 0; d < batch_rank; d++)
    b_shared &= sb[d] == 0;
  if (nbatch > 1 && b_shared && !g.ta && at->numel == nbatch * g.m * g.k &&
      fits_blasint(nbatch * g.m)) {
    /* a [batch.., M, K] is one [batch * M, K] matrix. */
    g.m *= nbatch;
    gemm(&g, a, b, c);
    return;
  }
  for (int64_t i = 0; i < nbatch; i++) {
    int64_t rest = i, aoff = 0, boff = 0;
    for (int d = batch_rank - 1; d >= 0; d--) {
      int64_t idx = rest % ot->dims[d];
      rest /= ot->dims[d];
      aoff += idx * sa[d];
      boff += idx * sb[d];
    }
    gemm(&g, (const char *)a + (size_t)aoff * asize,
         (const char *)b + (size_t)boff * bsize,
         (char *)c + (size_t)(i * g.m * g.n) * csize);
  }
}

/* bf16: the float result in a scratch buffer, rounded into the output. */
static raf_status matmul_bf16(const raf_kernel *k, gemm_call g) {
  const raf_tensor *a = k->in[0], *b = k->in[1];
  raf_tensor *out = k->out[0];
  float *c = malloc((size_t)out->type->numel * sizeof *c);
  float *wa = NULL, *wb = NULL;
  bool widen = !cblas_sbgemm;
  if (c && widen) {
    wa = malloc((size_t)(a->type->numel ? a->type->numel : 1) * sizeof *wa);
    wb = malloc((size_t)(b->type->numel ? b->type->numel : 1) * sizeof *wb);
  }
  raf_status rc = RAF_OK;
  if (!c || (widen && (!wa || !wb))) {
    rc = raf_kernel_fail(k, "out of memory for the bf16 working buffers");
  } else if (widen) {
    raf_elem_convert(RAF_F32, wa, RAF_BF16, a->data, a->type->numel);
    raf_elem_convert(RAF_F32, wb, RAF_BF16, b->data, b->type->numel);
    g.dt = RAF_F32;
    batched_gemm(k, g, wa, sizeof *wa, wb, sizeof *wb, c, sizeof *c);
  } else {
    batched_gemm(k, g, a->data, 2, b->data, 2, c, sizeof *c);
  }
  if (rc == RAF_OK)
    raf_elem_convert(RAF_BF16, out->data, RAF_F32, c, out->type->numel);
  free(c);
  free(wa);
  free(wb);
  return rc;
}

static raf_status cblas_matmul(const raf_kernel *k) {
  const raf_type *at = k->in[0]->type, *ot = k->out[0]->type;
  raf_dtype dt = at->dtype;
  gemm_call g = {.dt = dt,
                 .ta = raf_stmt_attr_bool(k->stmt, "transpose_a"),
                 .tb = raf_stmt_attr_bool(k->stmt, "transpose_b"),
                 .m = ot->dims[ot->rank - 2],
                 .n = ot->dims[ot->rank - 1]};
  g.k = at->dims[at->rank - 1 - g.ta];
  if (dt != RAF_F64 && dt != RAF_F32 && dt != RAF_BF16)
    return raf_kernel_fail(k, "cblas has no matmul for %s",
                           raf_dtype_name(dt));
  if (ot->numel == 0)
    return RAF_OK;
  if (g.k == 0) { /* an empty sum; gemm wants lda >= 1 */
    memset(k->out[0]->data, 0, k->out[0]->nbytes);
    return RAF_OK;
  }
  if (!fits_blasint(g.m) || !fits_blasint(g.n) || !fits_blasint(g.k))
    return raf_kernel_fail(k, "matrix dimensions exceed the BLAS integer "
                           "(%lld x %lld x %lld)", (long long)g.m,
                           (long long)g.k, (long long)g.n);
  int threads = raf_exec_threads(k->ex);
  if (threads > 0 && openblas_get_num_threads() != threads)
    openblas_set_num_threads(threads);
  if (dt == RAF_BF16)
    return matmul_bf16(k, g);
  size_t size = (size_t)raf_dtype_size(dt);
  batched_gemm(k, g, k->in[0]->data, size, k->in[1]->data, size,
               k->out[0]->data, size);
  return RAF_OK;
}

const raf_kernel_fn raf_cblas_kernels[RAF_OP_COUNT] = {
    [RAF_OP_MATMUL] = cblas_matmul,
};
