/* shape.c: placeholder, being written. */
#include "runtime/cpuref/cpuref.h"

raf_status raf_cpuref_transpose(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_broadcast_to(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_slice(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_concat(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_split(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}

raf_status raf_cpuref_take(const raf_kernel *k) {
  return raf_kernel_fail(k, "not implemented yet");
}
