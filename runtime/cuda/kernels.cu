/* kernels.cu: hand-written CUDA kernels of the cuda dialect, for the ops
 * that codegen's point-wise and row lowering does not express. nvcc
 * turns this file into PTX when raf is built (CMakeLists.txt); the
 * runtime loads it with raf_cuda_embedded_ptx("kernels").
 *
 * Conventions: extern "C" names prefixed raf_; shapes in comments; every
 * kernel strides over its work, so any grid covers it.
 */
#include <stdint.h>

/* dst[i] = value for i in [0, n): the fill of a buffer of f32. */
extern "C" __global__ void raf_fill_f32(float *dst, float value, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = value;
}
