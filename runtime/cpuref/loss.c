/* loss.c: placeholder, being written. */
#include "runtime/cpuref/cpuref.h"

raf_status raf_cpuref_cross_entropy(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_mse_loss(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_collective(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}
