/* cudnn_attention.c: scaled_dot_product_attention and its gradient on
 * cuDNN's graph API (cudnn_internal.h). Being written: refused for now. */
#include "runtime/cuda/cudnn_internal.h"

raf_status cudnn_attention(const raf_kernel *k) {
  return raf_kernel_fail(k, "cudnn: attention is not built yet");
}

raf_status cudnn_attention_grad(const raf_kernel *k) {
  return raf_kernel_fail(k, "cudnn: attention is not built yet");
}
