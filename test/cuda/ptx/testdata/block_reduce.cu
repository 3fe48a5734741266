// block_reduce.cu: a block sum through shared memory and __syncthreads
// (a tree over 256 threads), for test/unit/test_ptx.c.
// PTX: /usr/local/cuda/bin/nvcc -ptx -arch=compute_80 -O3 block_reduce.cu
extern "C" __global__ void block_reduce(const int *in, int *out) {
  __shared__ int s[256];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned d = 128; d > 0; d /= 2) {
    if (t < d)
      s[t] += s[t + d];
    __syncthreads();
  }
  if (t == 0)
    out[blockIdx.x] = s[0];
}
