// sync_reductions.cu: __syncthreads_count, _and and _or (PTX's bar.red,
// with predicates declared in nested { } scopes), for test/unit/test_ptx.c.
// PTX: /usr/local/cuda/bin/nvcc -ptx -arch=compute_80 -O3 sync_reductions.cu
extern "C" __global__ void sync_reductions(int *out, const int *in) {
  int v = in[threadIdx.x];
  int c = __syncthreads_count(v > 10);
  int a = __syncthreads_and(v > 10);
  int o = __syncthreads_or(v > 90);
  out[threadIdx.x] = c * 100 + a * 10 + o;
  __threadfence();
}
