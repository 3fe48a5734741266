// half_convert.cu: float to half and bfloat16 and back (cuda_fp16.h and
// cuda_bf16.h), and half2 arithmetic, for test/unit/test_ptx.c.
// PTX: /usr/local/cuda/bin/nvcc -ptx -arch=compute_80 -O3 half_convert.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void half_convert(const float *in, unsigned short *h,
                                        unsigned short *b, float *back,
                                        unsigned *h2sum) {
  unsigned i = threadIdx.x;
  __half x = __float2half_rn(in[i]);
  __nv_bfloat16 y = __float2bfloat16_rn(in[i]);
  h[i] = __half_as_ushort(x);
  b[i] = __bfloat16_as_ushort(y);
  back[i] = __half2float(x) + __bfloat162float(y);
  __half2 p = __floats2half2_rn(in[i], 1.0f);
  __half2 q = __hadd2(p, p);
  h2sum[i] = *reinterpret_cast<unsigned *>(&q);
}
