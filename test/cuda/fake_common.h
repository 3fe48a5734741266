/* fake_common.h: what the stand-ins for NVIDIA's libraries (fake_driver.c,
 * fake_cublaslt.c, fake_nccl.c) share: the fake device's pointers and the
 * log files their tests read.
 *
 * The fake driver's device memory is host memory at addresses with bit
 * 63 flipped, so that host code that touches device memory directly
 * crashes rather than passes, and a fake library can tell a device
 * pointer from a host one.
 */
#ifndef RAF_FAKE_COMMON_H
#define RAF_FAKE_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAKE_DEVICE_BIT ((uint64_t)1 << 63)

/* The host address of device pointer p, or NULL when p is not one. */
static inline void *fake_host_of(const void *p) {
  uint64_t u = (uint64_t)(uintptr_t)p;
  return u & FAKE_DEVICE_BIT ? (void *)(uintptr_t)(u ^ FAKE_DEVICE_BIT)
                             : NULL;
}

/* Appends one line to the file the environment variable `env` names,
 * when it is set. */
static void fake_log(const char *env, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), unused));
static void fake_log(const char *env, const char *fmt, ...) {
  const char *path = getenv(env);
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (!f)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

#endif
