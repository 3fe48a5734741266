/* reduce.c: placeholder, being written. */
#include "runtime/cpuref/cpuref.h"

raf_status raf_cpuref_reduce(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_argmax(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_softmax(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_layer_norm(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}
