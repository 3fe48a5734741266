/* cublas_map.c: raf's matmul shapes as cuBLASLt GEMMs (cublas_map.h).
 *
 * The batch dims (NumPy-broadcast, as cblas.c reads them) become one
 * strided batch where strides allow: the longest run of trailing batch
 * dims along which each operand is either contiguous (one matrix after
 * another) or broadcast (stride 0). The leading dims left over are an
 * outer loop of launches. When b is shared by every batch and a is
 * neither transposed nor broadcast, the batch folds into a's rows (one
 * GEMM of batch * M rows), which is what `x [B, T, C] @ w [C, F]` is.
 */
#include "runtime/cublas_map.h"
#include "runtime/kernel.h"

#include <limits.h>
#include <string.h>

/* Whether operand strides s (over batch dims [from, r) of dims) are one
 * stride per flattened index: *stride gets it (0 when broadcast). */
static bool one_stride(const int64_t *dims, const int64_t *s, int from,
                       int r, int64_t *stride) {
  int64_t unit = -1, span = 1; /* span: elements of the flat index per step */
  for (int d = r - 1; d >= from; d--) {
    if (dims[d] == 1)
      continue;
    if (unit < 0)
      unit = s[d];
    if (s[d] != unit * span)
      return false;
    span *= dims[d];
  }
  *stride = unit < 0 ? 0 : unit;
  return true;
}

bool raf_gemm_map_make(const raf_type *at, const raf_type *bt,
                       const raf_type *ot, bool ta, bool tb,
                       raf_gemm_map *out) {
  int rank = ot->rank, r = rank - 2;
  int64_t M = ot->dims[rank - 2], N = ot->dims[rank - 1];
  int64_t K = at->dims[at->rank - 1 - ta];
  /* One matrix of contiguous row-major operands: a [M, K] (ld K, or
   * [K, M] with ld M transposed), b [K, N] (ld N, or [N, K] with ld K);
   * the batch is worked out below. */
  raf_gemm_map_rowmajor(ta, tb, M, N, K, ta ? M : K, 0, tb ? K : N, 0, N, 0,
                        1, out);
  out->empty = ot->numel == 0;
  out->zero = !out->empty && K == 0;
  int64_t sa[RAF_MAX_RANK], sb[RAF_MAX_RANK], sc[RAF_MAX_RANK];
  raf_broadcast_strides(at, ot, sa);
  raf_broadcast_strides(bt, ot, sb);
  raf_contiguous_strides(ot, sc);
  int64_t nbatch = 1;
  for (int d = 0; d < r; d++)
    nbatch *= ot->dims[d];
  bool b_shared = true;
  for (int d = 0; d < r; d++)
    b_shared &= sb[d] == 0 || ot->dims[d] == 1;
  out->batch = 1;
  out->outer = 1;
  if (nbatch > 1 && b_shared && !ta && at->numel == nbatch * M * K) {
    /* a [batch.., M, K] is one [batch * M, K] matrix. */
    out->n = nbatch * M;
    out->b_cols = out->n;
    return true;
  }
  /* The longest suffix of batch dims with one stride per operand. */
  int from = r;
  int64_t stra = 0, strb = 0;
  for (int f = 0; f <= r; f++) {
    int64_t x, y;
    if (one_stride(ot->dims, sa, f, r, &x) &&
        one_stride(ot->dims, sb, f, r, &y)) {
      from = f;
      stra = x;
      strb = y;
      break;
    }
  }
  for (int d = from; d < r; d++)
    out->batch *= ot->dims[d];
  out->stride_a = strb; /* cuBLASLt's A is raf's b */
  out->stride_b = stra;
  out->stride_c = M * N;
  out->outer_rank = from;
  for (int d = 0; d < from; d++) {
    out->outer_dims[d] = ot->dims[d];
    out->outer_sa[d] = sb[d];
    out->outer_sb[d] = sa[d];
    out->outer_sc[d] = sc[d];
    out->outer *= ot->dims[d];
  }
  return out->batch <= INT_MAX;
}

void raf_gemm_map_offsets(const raf_gemm_map *map, int64_t i, int64_t *off_a,
                          int64_t *off_b, int64_t *off_c) {
  *off_a = *off_b = *off_c = 0;
  for (int d = map->outer_rank - 1; d >= 0; d--) {
    int64_t idx = i % map->outer_dims[d];
    i /= map->outer_dims[d];
    *off_a += idx * map->outer_sa[d];
    *off_b += idx * map->outer_sb[d];
    *off_c += idx * map->outer_sc[d];
  }
}

void raf_gemm_map_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                           int64_t lda, int64_t sa, int64_t ldb, int64_t sb,
                           int64_t ldc, int64_t sc, int64_t batch,
                           raf_gemm_map *out) {
  memset(out, 0, sizeof *out);
  /* C^T [N, M] = op(B)^T op(A)^T, column-major: cuBLASLt's A is B. */
  out->trans_a = tb;
  out->trans_b = ta;
  out->m = N;
  out->n = M;
  out->k = K;
  out->a_rows = tb ? K : N;
  out->a_cols = tb ? N : K;
  out->lda = ldb;
  out->b_rows = ta ? M : K;
  out->b_cols = ta ? K : M;
  out->ldb = lda;
  out->ldc = ldc;
  out->batch = batch;
  out->stride_a = sb;
  out->stride_b = sa;
  out->stride_c = sc;
  out->outer = 1;
  out->empty = M * N * batch == 0;
  out->zero = !out->empty && K == 0;
}

/* align lowered to what a pointer advanced by `bytes` keeps. */
static uint32_t keep(uint32_t align, int64_t bytes) {
  while (align > 1 && bytes % align)
    align /= 2;
  return align;
}

uint32_t raf_gemm_map_align(const raf_gemm_map *map, uint32_t buffers,
                            int64_t ab_size, int64_t c_size) {
  uint32_t al = buffers;
  if (map->batch > 1) {
    al = keep(al, map->stride_a * ab_size);
    al = keep(al, map->stride_b * ab_size);
    al = keep(al, map->stride_c * c_size);
  }
  for (int d = 0; d < map->outer_rank; d++) {
    al = keep(al, map->outer_sa[d] * ab_size);
    al = keep(al, map->outer_sb[d] * ab_size);
    al = keep(al, map->outer_sc[d] * c_size);
  }
  return al;
}
