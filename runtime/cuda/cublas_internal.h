/* cublas_internal.h: what the cublas dialect's files share (cublas.c, the
 * matmul and the executor's state; cublas_attention.c).
 */
#ifndef RAF_CUDA_CUBLAS_INTERNAL_H
#define RAF_CUDA_CUBLAS_INTERNAL_H

#include "runtime/cuda/traits.h"
#include "runtime/cublas_map.h"
#include "runtime/cuda/cublaslt.h"
#include "runtime/cuda/module.h"
#include "runtime/kernel.h"

/* The workspace cuBLASLt may use per product (ir/memplan.h): in the
 * statement's planned scratch, else the state's own. */
#define RAF_CUBLAS_WORKSPACE ((size_t)RAF_CUBLAS_WORKSPACE_BYTES)

/* One column-major strided-batch product, as cuBLASLt is told it: the
 * key of the plan cache (compared bytewise: zero it before filling). */
typedef struct lt_shape {
  raf_dtype ab, c; /* the dtypes of A and B, and of C = D */
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t a_rows, a_cols, lda, b_rows, b_cols, ldb, ldc;
  int64_t batch, stride_a, stride_b, stride_c;
  /* The alignment in bytes every matrix pointer of the product has (the
   * buffers' 64, less where batch strides or offsets break it): the
   * heuristic picks only algorithms that need no more. */
  uint32_t align;
  /* The epilogue (cublasLtEpilogue_t; 0 for none, a plain product) and,
   * for those with an aux matrix (GELU's input), its leading dimension:
   * D's. */
  uint32_t epilogue;
  int64_t aux_ld;
} lt_shape;

/* The buffers' alignment: raf_device_alloc's and the memory plan's
 * (RAF_MEM_ALIGN). */
#define RAF_CUBLAS_BUFFER_ALIGN 64u


/* A product's descriptors and the algorithm the heuristic chose. */
typedef struct lt_plan {
  lt_shape shape;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulAlgo_t algo;
} lt_plan;

/* The dialect's state for one executor (owned by it; cublas.c). */
typedef struct cublas_state {
  raf_device *dev;
  raf_ctx *ctx;
  raf_cublaslt *lt;
  cublasLtHandle_t handle;
  /* RAF_CUBLAS_WORKSPACE bytes of device memory, for statements without a
   * planned scratch (NULL when every one has it). */
  void *workspace;
  bool tf32;       /* RAF_CUBLAS_TF32=1: f32 products in TF32 */
  lt_plan **plans;
  int nplans, cap_plans;
  void **bound; /* what bind handed out, freed with the state */
  int nbound, cap_bound;
  raf_cuda_module *attention; /* attention.cu's PTX, when needed */
  CUfunction softmax_fwd[3], softmax_bwd[3]; /* f32, bf16, f16 */
} cublas_state;

/* The plan of shape (cached in st, owned by it), or NULL after reporting
 * at k's statement (k may be NULL: then nothing is reported). */
lt_plan *cublas_plan(cublas_state *st, const raf_kernel *k,
                     const lt_shape *shape);

/* Queues D = alpha op(A) op(B) + beta D, per plan p, at device pointers
 * a, b and d. */
raf_status cublas_run(cublas_state *st, const raf_kernel *k, const lt_plan *p,
                      const void *a, const void *b, void *d, float alpha,
                      float beta);

/* Queues the row-major strided-batch product C [M, N] = alpha op(A)
 * op(B) + beta C (row-major leading dims and batch strides in elements;
 * dtype ab for A and B, c for C), through the column-major trick. */
raf_status cublas_rowmajor(cublas_state *st, const raf_kernel *k,
                           raf_dtype ab, raf_dtype c, bool ta, bool tb,
                           int64_t M, int64_t N, int64_t K, const void *a,
                           int64_t lda, int64_t sa, const void *b,
                           int64_t ldb, int64_t sb, void *cp, int64_t ldc,
                           int64_t sc, int64_t batch, float alpha,
                           float beta);

/* The state of the executor k runs on, from what bind gave k; NULL when
 * the dialect was not prepared. */
cublas_state *cublas_state_of(const raf_kernel *k);

/* Loads attention.cu's kernels into st (at prepare). */
raf_status cublas_attention_load(cublas_state *st);

/* The kernels (cublas_attention.c). */
raf_status cublas_attention(const raf_kernel *k);
raf_status cublas_attention_grad(const raf_kernel *k);

#endif
