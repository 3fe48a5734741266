/* linalg.c: placeholder, being written. */
#include "runtime/cpuref/cpuref.h"

raf_status raf_cpuref_matmul(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_attention(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}
