/* kernels.cu: hand-written CUDA kernels of the cuda dialect, for the ops
 * that codegen's point-wise and row lowering does not express. nvcc
 * turns this file into PTX when raf is built (CMakeLists.txt); the
 * runtime loads it with raf_cuda_embedded_ptx("kernels").
 *
 * Conventions: extern "C" names prefixed raf_; shapes in comments; every
 * kernel strides over its work, so any grid covers it, and is launched
 * with blocks of at most RAF_CUDA_BLOCK threads, which it declares with
 * __launch_bounds__ (kernels.h).
 */
#include "runtime/cuda/kernels.h"
#include "runtime/philox.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

/* dst[i] = value for i in [0, n): the fill of a buffer of f32. */
extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) raf_fill_f32(float *dst, float value, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = value;
}

/* ---- Data movement (kernels.h: raf_move) --------------------------------- */

/* The strided copy of m, for elements of SIZE bytes (any dtype). */
#define RAF_MOVE_KERNEL(NAME, T)                                               \
  extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) NAME(T *dst, const T *src, raf_move m) {          \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m.n;  \
         i += (int64_t)gridDim.x * blockDim.x)                                 \
      dst[raf_move_offset(&m, i, 0)] = src[raf_move_offset(&m, i, 1)];         \
  }
RAF_MOVE_KERNEL(raf_move_1, uint8_t)
RAF_MOVE_KERNEL(raf_move_2, uint16_t)
RAF_MOVE_KERNEL(raf_move_4, uint32_t)
RAF_MOVE_KERNEL(raf_move_8, uint64_t)

/* take(table, indices) {axis}, the table viewed as [outer, dim, inner],
 * the result as [outer, nidx, inner]: result[o, i, c] = table[o,
 * indices[i], c]. Indices are int64 (idx32 == 0) or int32, already checked
 * on the host to be in [-dim, dim). */
#define RAF_TAKE_KERNEL(NAME, T)                                               \
  extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) NAME(T *dst, const T *table, const void *idx,     \
                                  int idx32, int64_t outer, int64_t nidx,      \
                                  int64_t dim, int64_t inner) {                \
    int64_t n = outer * nidx * inner;                                          \
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;    \
         e += (int64_t)gridDim.x * blockDim.x) {                               \
      int64_t c = e % inner, i = e / inner % nidx, o = e / inner / nidx;       \
      int64_t x = idx32 ? ((const int32_t *)idx)[i]                            \
                        : ((const int64_t *)idx)[i];                           \
      if (x < 0)                                                               \
        x += dim;                                                              \
      dst[e] = table[(o * dim + x) * inner + c];                               \
    }                                                                          \
  }
RAF_TAKE_KERNEL(raf_take_1, uint8_t)
RAF_TAKE_KERNEL(raf_take_2, uint16_t)
RAF_TAKE_KERNEL(raf_take_4, uint32_t)
RAF_TAKE_KERNEL(raf_take_8, uint64_t)

/* argmax(x) {axis} in f32, x viewed as [outer, dim, inner], the i64
 * result as [outer, inner]: one thread per result element scans its row
 * (raf_argmax_row_f32). Rows are short where it is used (a classifier's
 * logits), so no reduction across threads. */
extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) raf_argmax_f32(int64_t *dst, const float *x,
                                          int64_t outer, int64_t dim,
                                          int64_t inner) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       e < outer * inner; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = e / inner, c = e % inner;
    dst[e] = raf_argmax_row_f32(x + o * dim * inner + c, dim, inner);
  }
}

/* take_grad(dy, indices) {axis, dim} in f32: one block per table row
 * (o, x) (blocks stride over the rows), its threads over the row's inner
 * elements, each summing in float, as PyTorch's embedding backward and
 * cpu-ref do, the dy rows of the indices that land on x in ascending
 * order (raf_take_grad_owns): deterministic, without atomics. */
extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) raf_take_grad_f32(float *dst, const float *dy,
                                             const void *idx, int idx32,
                                             int64_t outer, int64_t nidx,
                                             int64_t dim, int64_t inner) {
  for (int64_t row = blockIdx.x; row < outer * dim; row += gridDim.x) {
    int64_t o = row / dim, x = row % dim;
    for (int64_t c = threadIdx.x; c < inner; c += blockDim.x) {
      float acc = 0.0f;
      for (int64_t i = 0; i < nidx; i++) {
        int64_t v = idx32 ? ((const int32_t *)idx)[i]
                          : ((const int64_t *)idx)[i];
        if (raf_take_grad_owns(v, dim, x))
          acc += dy[(o * nidx + i) * inner + c];
      }
      dst[row * inner + c] = acc;
    }
  }
}

/* ---- layer_norm_grad (f32) ------------------------------------------------ */

/* v summed over the 32 lanes of a warp by shfl.sync butterflies: lanes a
 * and b add a + b and b + a, the same bits, so every lane gets the same
 * sum. */
static __device__ __forceinline__ float raf_warp_sum_f32(float v) {
  for (int m = 16; m >= 1; m /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

/* layer_norm_grad(dy, x, gamma) -> (dx, dgamma, dbeta) over rows of n
 * elements, cpu-ref's formulas (runtime/cpuref/grad.c) accumulated in
 * float (docs/Numerics.md): a warp per row (warps stride over the rows;
 * blockDim.x a multiple of 32), lane l adding elements l, l + 32, ... in
 * float, the lanes combined by butterflies. Each row's mean and rstd are
 * kept as floats in mean_rstd[2 * row], [2 * row + 1] (the runtime's
 * scratch of 2 * rows doubles: its first half). */
extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) raf_layer_norm_grad_rows_f32(
    float *dx, float *mean_rstd, const float *dy, const float *x,
    const float *gamma, int64_t rows, int64_t n, double eps) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x / 32);
  const float nf = (float)n, feps = (float)eps;
  for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
       r < rows; r += warps) {
    const float *xr = x + r * n, *dyr = dy + r * n;
    float s = 0;
    for (int64_t e = lane; e < n; e += 32)
      s += xr[e];
    const float mean = raf_warp_sum_f32(s) / nf;
    float v = 0;
    for (int64_t e = lane; e < n; e += 32)
      v += (xr[e] - mean) * (xr[e] - mean);
    const float rstd = 1.0f / sqrtf(raf_warp_sum_f32(v) / nf + feps);
    float mg = 0, mgx = 0;
    for (int64_t e = lane; e < n; e += 32) {
      float g = dyr[e] * gamma[e];
      mg += g;
      mgx += g * (xr[e] - mean) * rstd;
    }
    mg = raf_warp_sum_f32(mg) / nf;
    mgx = raf_warp_sum_f32(mgx) / nf;
    for (int64_t e = lane; e < n; e += 32)
      dx[r * n + e] =
          rstd * (dyr[e] * gamma[e] - mg - (xr[e] - mean) * rstd * mgx);
    if (lane == 0) {
      mean_rstd[2 * r] = mean;
      mean_rstd[2 * r + 1] = rstd;
    }
  }
}

/* Then dgamma and dbeta in float: column tiles of 32 adjacent columns (a
 * warp reads 32 adjacent elements), blockDim.x / 32 lanes down each
 * (blockDim.x a multiple of 32): lane k adds rows k, k + lanes, ... in
 * order, then lane 0 adds the lanes' sums in order from shared memory.
 * Tiles stride over the columns; each tile's step is uniform over its
 * block, so every thread meets both __syncthreads. */
extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) raf_layer_norm_grad_params_f32(
    float *dgamma, float *dbeta, const float *dy, const float *x,
    const float *mean_rstd, int64_t rows, int64_t n) {
  __shared__ float part[2][RAF_CUDA_BLOCK];
  const int col = threadIdx.x % 32, lane = threadIdx.x / 32;
  const int lanes = blockDim.x / 32;
  for (int64_t c0 = blockIdx.x * (int64_t)32; c0 < n;
       c0 += (int64_t)gridDim.x * 32) {
    const int64_t e = c0 + col;
    float dg = 0, db = 0;
    if (e < n)
      for (int64_t r = lane; r < rows; r += lanes) {
        float d = dy[r * n + e];
        dg += d * (x[r * n + e] - mean_rstd[2 * r]) * mean_rstd[2 * r + 1];
        db += d;
      }
    part[0][threadIdx.x] = dg;
    part[1][threadIdx.x] = db;
    __syncthreads();
    if (lane == 0 && e < n) {
      for (int k = 1; k < lanes; k++) {
        dg += part[0][k * 32 + col];
        db += part[1][k * 32 + col];
      }
      dgamma[e] = dg;
      dbeta[e] = db;
    }
    __syncthreads();
  }
}

/* ---- dropout -------------------------------------------------------------- */

/* The smallest float t with (double)t >= p (p a number; NaN for NaN):
 * for a float u, u >= t exactly when (double)u >= p. */
static __device__ __forceinline__ float raf_dropout_threshold(double p) {
  float t = (float)p; /* p's nearest float: p lies between t's neighbours */
  return (double)t < p ? nextafterf(t, __int_as_float(0x7f800000)) : t;
}

/* y = x * scale where raf_dropout_keeps(first + i, key[0], p), else 0, for
 * x, y [n], where first is key[1] for a key of two elements (nkey), else 0:
 * cpu-ref's mask (the same inline Philox), and its arithmetic (the
 * product in float, rounded once to the element type). The key is read
 * from the device, where the executor keeps it. raf_dropout_keeps
 * compares the uniform (a float) in double; given p's threshold as a
 * double, that compare is one of two floats widened, which compiles to a
 * float compare (no f64 instruction per element), with the same mask. */
#define RAF_DROPOUT_KERNEL(NAME, T, LOAD, STORE)                               \
  extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) NAME(T *y, const T *x, const int64_t *key,       \
                                  int64_t nkey, int64_t n, double p, float scale) { \
    uint64_t k = (uint64_t)key[0], first = nkey > 1 ? (uint64_t)key[1] : 0;   \
    const double pt = (double)raf_dropout_threshold(p);                        \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;  \
         i += (int64_t)gridDim.x * blockDim.x)                                 \
      y[i] = STORE(raf_dropout_keeps(first + (uint64_t)i, k, pt) ? LOAD(x[i]) * scale  \
                                                        : 0.0f);               \
  }
#define RAF_SAME(v) (v)
RAF_DROPOUT_KERNEL(raf_dropout_f32, float, RAF_SAME, RAF_SAME)
RAF_DROPOUT_KERNEL(raf_dropout_bf16, __nv_bfloat16, __bfloat162float,
                   __float2bfloat16_rn)
RAF_DROPOUT_KERNEL(raf_dropout_f16, __half, __half2float, __float2half_rn)
