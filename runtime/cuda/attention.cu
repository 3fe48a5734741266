/* attention.cu: the softmax kernels of the cublas dialect's attention
 * (runtime/cuda/cublas_attention.c), which does the matrix products with
 * cuBLASLt. nvcc turns this file into PTX when raf is built; the runtime
 * loads it with raf_cuda_embedded_ptx("attention").
 *
 * The scores are f32 [rows = batch * heads * L, S] (already scaled), one
 * thread block per row, f32 throughout; the probabilities are written in
 * f32 (over the scores) and in the operands' dtype T (for the product
 * with v; the same buffer when T is float). A causal row i (its position
 * i % L) sees keys [0, min(i + 1, S)): PyTorch's top-left mask; masked
 * keys get probability 0, and a row that sees no key is all zeros.
 *
 * Conventions: extern "C" names prefixed raf_; the block size is a
 * multiple of 32 and at most RAF_CUDA_BLOCK (256: the launch uses it, and
 * the kernels declare it with __launch_bounds__).
 */
#include "runtime/cuda/kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

__device__ static inline void store(float *p, int64_t i, float v) { p[i] = v; }
__device__ static inline void store(__nv_bfloat16 *p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}
__device__ static inline void store(__half *p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}

/* The block's reduction of v (max or sum) in every thread. */
template <bool Max> __device__ static float block_reduce(float v) {
  __shared__ float part[32];
  __shared__ float total;
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmaxf(v, w) : v + w;
  }
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int nwarps = blockDim.x / 32;
    v = lane < nwarps ? part[lane] : (Max ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = Max ? fmaxf(v, w) : v + w;
    }
    if (lane == 0)
      total = v;
  }
  __syncthreads();
  v = total;
  __syncthreads(); /* part and total are reused by the next reduction */
  return v;
}

/* The keys row r sees. */
__device__ static int64_t keys_of(int64_t r, int64_t L, int64_t S,
                                  int causal) {
  if (!causal)
    return S;
  int64_t i = r % L;
  return i + 1 < S ? i + 1 : S;
}

/* s [rows, S] f32 scores into probabilities, in place and into p (T). */
template <typename T>
__device__ static void softmax_fwd(float *s, T *p, int64_t rows, int64_t L,
                                   int64_t S, int causal) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float *row = s + r * S;
    int64_t n = keys_of(r, L, S, causal);
    float top = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      top = fmaxf(top, row[j]);
    top = block_reduce<true>(top);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      sum += __expf(row[j] - top);
    sum = block_reduce<false>(sum);
    float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
      float v = j < n ? __expf(row[j] - top) * inv : 0.0f;
      row[j] = v;
      store(p, r * S + j, v);
    }
  }
}

/* ds = p * (dp - rowsum(dp * p)) * scale, from the f32 probabilities p
 * and their gradient dp [rows, S], into ds (T). */
template <typename T>
__device__ static void softmax_bwd(const float *p, const float *dp, T *ds,
                                   int64_t rows, int64_t S, float scale) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *pr = p + r * S, *dpr = dp + r * S;
    float dot = 0.0f;
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x)
      dot += pr[j] * dpr[j];
    dot = block_reduce<false>(dot);
    for (int64_t j = threadIdx.x; j < S; j += blockDim.x)
      store(ds, r * S + j, pr[j] * (dpr[j] - dot) * scale);
  }
}

#define RAF_ATTENTION_KERNELS(SUFFIX, T)                                       \
  extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) raf_attn_softmax_fwd_##SUFFIX(                    \
      float *s, T *p, int64_t rows, int64_t L, int64_t S, int causal) {        \
    softmax_fwd<T>(s, p, rows, L, S, causal);                                  \
  }                                                                            \
  extern "C" __global__ void __launch_bounds__(RAF_CUDA_BLOCK) raf_attn_softmax_bwd_##SUFFIX(                    \
      const float *p, const float *dp, T *ds, int64_t rows, int64_t S,         \
      float scale) {                                                           \
    softmax_bwd<T>(p, dp, ds, rows, S, scale);                                 \
  }

RAF_ATTENTION_KERNELS(f32, float)
RAF_ATTENTION_KERNELS(bf16, __nv_bfloat16)
RAF_ATTENTION_KERNELS(f16, __half)
