/* cublas_map.h: raf's matmul in cuBLASLt's terms (cublas_map.c).
 *
 * raf's matrices are row-major, cuBLASLt's column-major. A row-major
 * [R, C] matrix with leading dimension C is, read column-major, its
 * transpose [C, R] with the same leading dimension, so raf's
 * C = op(a) op(b) is computed as cuBLASLt's C^T = op(b)^T op(a)^T: its A
 * operand is raf's b, its B operand raf's a, and nothing is copied.
 *
 * This mapping is pure arithmetic on shapes, with no CUDA in it, so that
 * a unit test checks it against a host GEMM on every build (test/unit/
 * test_cublas_map.c); the cublas dialect (runtime/cuda/cublas.c) hands it
 * to cuBLASLt.
 */
#ifndef RAF_CUBLAS_MAP_H
#define RAF_CUBLAS_MAP_H

#include "ir/ir.h"

#include <stdbool.h>
#include <stdint.h>

/* One column-major GEMM per outer batch index, each a strided batch of
 * `batch` products: D[m, n] = op_a(A)[m, k] op_b(B)[k, n], with
 * A = raf's b, B = raf's a, D = raf's result (every count in elements). */
typedef struct raf_gemm_map {
  bool trans_a, trans_b; /* cuBLASLt's op of its A and B (CUBLAS_OP_T) */
  int64_t m, n, k;       /* m = raf's N, n = raf's M (times a fold) */
  int64_t lda, ldb, ldc;
  /* The stored matrices as cuBLASLt describes them: rows and columns. */
  int64_t a_rows, a_cols, b_rows, b_cols;
  int64_t batch;                        /* the strided batch's count */
  int64_t stride_a, stride_b, stride_c; /* 0: one matrix for every batch */
  /* Outer batch dims that no single stride expresses (an operand
   * broadcast along some of them and not others): one strided GEMM per
   * index; raf_gemm_map_offsets gives its matrices' offsets. */
  int outer_rank;
  int64_t outer; /* product of outer_dims; 1 when outer_rank is 0 */
  int64_t outer_dims[RAF_MAX_RANK];
  int64_t outer_sa[RAF_MAX_RANK], outer_sb[RAF_MAX_RANK],
      outer_sc[RAF_MAX_RANK];
  bool empty; /* nothing to compute: the result has no elements */
  bool zero;  /* K = 0: the result is all zeros, no GEMM */
} raf_gemm_map;

/* Maps matmul(a, b) {transpose_a = ta, transpose_b = tb} with operand
 * types at, bt and result type ot (as lang/ops.def infers it) into *out.
 * False when a count exceeds what cuBLASLt takes (a batch count over
 * INT_MAX). All types are borrowed. */
bool raf_gemm_map_make(const raf_type *at, const raf_type *bt,
                       const raf_type *ot, bool ta, bool tb,
                       raf_gemm_map *out);

/* The row-major strided-batch product C [M, N] = op(A) op(B), `batch`
 * times, with row-major leading dims lda, ldb, ldc and batch strides sa,
 * sb, sc (elements), as one column-major strided batch into *out (no
 * outer loop). The attention kernels' products. */
void raf_gemm_map_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                           int64_t lda, int64_t sa, int64_t ldb, int64_t sb,
                           int64_t ldc, int64_t sc, int64_t batch,
                           raf_gemm_map *out);

/* The alignment in bytes (a power of two, at most `buffers`) that every
 * matrix pointer of map's GEMMs keeps when its buffers are aligned to
 * `buffers`: lowered where a batch stride or an outer offset, in bytes
 * (elements of ab_size for A and B, c_size for C), is not a multiple. */
uint32_t raf_gemm_map_align(const raf_gemm_map *map, uint32_t buffers,
                            int64_t ab_size, int64_t c_size);

/* The element offsets of outer launch i (0 <= i < map->outer) into
 * cuBLASLt's A (raf's b), B (raf's a) and D (raf's result). */
void raf_gemm_map_offsets(const raf_gemm_map *map, int64_t i, int64_t *off_a,
                          int64_t *off_b, int64_t *off_c);

#endif
