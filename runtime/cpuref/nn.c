/* nn.c: placeholder, being written. */
#include "runtime/cpuref/cpuref.h"

raf_status raf_cpuref_dropout(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_conv2d(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_pool2d(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_batch_norm(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}
