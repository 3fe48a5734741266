// warp_reduce.cu: a warp sum with __shfl_down_sync, for test/unit/test_ptx.c.
// Each warp of the block sums its 32 inputs; lane 0 writes the sum.
// PTX: /usr/local/cuda/bin/nvcc -ptx -arch=compute_80 -O3 warp_reduce.cu
extern "C" __global__ void warp_reduce(const float *in, float *out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i];
  for (int d = 16; d > 0; d /= 2)
    v += __shfl_down_sync(0xffffffffu, v, d);
  if ((threadIdx.x & 31) == 0)
    out[i / 32] = v;
}
