// histogram.cu: a histogram with atomicAdd on global memory, every thread
// of every block adding into the same 16 bins, for test/unit/test_ptx.c.
// PTX: /usr/local/cuda/bin/nvcc -ptx -arch=compute_80 -O3 histogram.cu
extern "C" __global__ void histogram(const unsigned *in, unsigned n,
                                     unsigned *bins) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd(&bins[in[i] % 16], 1u);
}
