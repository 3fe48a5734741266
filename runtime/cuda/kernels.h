/* kernels.h: what the hand-written kernels of kernels.cu and the host code
 * that launches them (movement.c) share: the descriptor of a strided copy
 * and the index arithmetic of the kernels, compiled by nvcc for the GPU
 * and by the C compiler for the host, so that a unit test
 * (test/unit/test_cuda_move.c) runs the same arithmetic on the CPU.
 *
 * The descriptors are made on the host (movement.c: raf_move_transpose,
 * raf_move_block, declared below for C only).
 *
 * A strided copy: element i (C order over dims[0..rank)) of the copy reads
 * src[src_off + sum_d idx_d * src_strides[d]] and writes
 * dst[dst_off + sum_d idx_d * dst_strides[d]], strides in elements. It
 * expresses transpose (dst contiguous, src strides permuted), and each
 * operand of concat and result of split (a block of the larger tensor at
 * an offset along the axis), and slice and slice_grad (a stepped window
 * of the larger tensor). Every destination element is written by one
 * thread from one source element, so results are exact and deterministic.
 */
#ifndef RAF_CUDA_KERNELS_H
#define RAF_CUDA_KERNELS_H

#include <stdint.h>

#ifdef __CUDACC__
#define RAF_HD __host__ __device__
#else
#define RAF_HD
#endif

/* The block size the hand-written kernels (kernels.cu, attention.cu) are
 * launched with, at most: movement.c and cublas_attention.c launch blocks
 * of it (raf_take_grad_f32 blocks of 32 for short rows), and every kernel
 * declares it with __launch_bounds__ (PTX `.maxntid 256, 1, 1`), so that
 * ptxas budgets registers for that many threads and a larger launch is
 * refused instead of running a kernel built for fewer. */
#define RAF_CUDA_BLOCK 256

#define RAF_MOVE_MAX_RANK 8

/* Passed by value as one kernel parameter; C layout on both sides. */
typedef struct raf_move {
  int64_t n; /* elements to copy: the product of dims */
  int64_t src_off, dst_off;
  int64_t dims[RAF_MOVE_MAX_RANK];
  int64_t src_strides[RAF_MOVE_MAX_RANK];
  int64_t dst_strides[RAF_MOVE_MAX_RANK];
  int32_t rank;
  int32_t pad;
} raf_move;

/* The source (src != 0) or destination offset of copy element i. */
static inline RAF_HD int64_t raf_move_offset(const raf_move *m, int64_t i,
                                             int src) {
  int64_t off = src ? m->src_off : m->dst_off;
  for (int d = m->rank - 1; d >= 0; d--) {
    int64_t idx = i % m->dims[d];
    i /= m->dims[d];
    off += idx * (src ? m->src_strides[d] : m->dst_strides[d]);
  }
  return off;
}

/* take_grad's ownership: the gradient table viewed as [outer, dim, inner],
 * dy as [outer, nidx, inner]. Row x of the table (per outer o) is owned by
 * one block, which sums dy[o, i, :] over every i with index x (negative
 * indices counting from the end), in ascending i: no atomics, and the
 * same sum in the same order on every run. Whether index value v lands on
 * row x: */
static inline RAF_HD int raf_take_grad_owns(int64_t v, int64_t dim,
                                            int64_t x) {
  return (v < 0 ? v + dim : v) == x;
}

/* argmax over one row of n floats `stride` apart: the first index of the
 * largest value, a NaN counting as larger than everything (the first NaN
 * wins), as cpu-ref's and PyTorch's. */
static inline RAF_HD int64_t raf_argmax_row_f32(const float *x, int64_t n,
                                                int64_t stride) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++) {
    float b = x[best * stride], v = x[i * stride];
    if (b != b)
      break;
    if (v != v || v > b)
      best = i;
  }
  return best;
}

#ifndef __CUDACC__
#include <stdbool.h>

/* Host code (movement.c), pure: the descriptors of the copies. */

/* The strided copy of a transpose of a C-order tensor of dims
 * src_dims[0..rank) into a C-order result whose dim d is the source's
 * perm[d] (perm already normalised). false when rank is above
 * RAF_MOVE_MAX_RANK. */
bool raf_move_transpose(const int64_t *src_dims, int rank, const int *perm,
                        raf_move *m);
/* The strided copy between a part (C order, part_dims) and its block of a
 * whole (C order, whole_dims, equal but along `axis`) that starts at
 * index `at` of the axis: part into whole (concat, into_whole) or whole
 * into part (split). false when rank or axis is out of range. */
bool raf_move_block(const int64_t *part_dims, const int64_t *whole_dims,
                    int rank, int axis, int64_t at, bool into_whole,
                    raf_move *m);
/* The strided copy between a slice (C order, part_dims) and the whole it
 * was cut from (C order, whole_dims): along dim d the slice takes step[d]
 * from start[d] (raf_slice_range's). Whole into part (slice) or part into
 * whole (slice_grad, over zeros). false when rank is out of range. */
bool raf_move_slice(const int64_t *part_dims, const int64_t *whole_dims,
                    int rank, const int64_t *start, const int64_t *step,
                    bool into_whole, raf_move *m);
#endif

#endif
