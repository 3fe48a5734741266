/* fake_common.h: what the stand-ins for NVIDIA's libraries (fake_driver.c,
 * fake_cublaslt.c, fake_nccl.c, fake_cudnn.c) share: the fake device's
 * pointers, the log files their tests read and f16's conversions.
 *
 * The fake driver's device memory is host memory at addresses with bit
 * 63 flipped, so that host code that touches device memory directly
 * crashes rather than passes, and a fake library can tell a device
 * pointer from a host one.
 */
#ifndef RAF_FAKE_COMMON_H
#define RAF_FAKE_COMMON_H

#include <math.h>
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

/* A stream of the fake driver (fake_driver.c): its handles point at
 * these, numbered from 1 in the order the process made them (the cuda
 * device's own stream is the first), so that a fake library can say which
 * stream a call was queued on. A destroyed stream keeps its slot, marked
 * dead, so that a later use is caught rather than read from freed
 * memory. */
typedef struct fake_stream {
  uint32_t magic; /* FAKE_STREAM_LIVE, or FAKE_STREAM_DEAD once destroyed */
  int id;
} fake_stream;
enum { FAKE_STREAM_LIVE = 0x5354524d, FAKE_STREAM_DEAD = 0x44454144 };

/* The number of live fake stream s, or 0 when s is none (NULL, another
 * pointer, a destroyed stream). */
static inline int fake_stream_id(const void *s) {
  const fake_stream *f = s;
  return f && f->magic == FAKE_STREAM_LIVE ? f->id : 0;
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

/* The fake libraries' host arithmetic in f16: IEEE binary16 to float, exactly, and float to binary16 rounded to
 * nearest even (overflow to infinity). */
static inline float half_to_float(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  float f = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m | 1024), e - 25);
  return h & 0x8000 ? -f : f;
}

static inline uint16_t float_to_half(float v) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  float a = fabsf(v);
  if (isnan(v))
    return sign | 0x7e00;
  if (a >= 65520.0f) /* rounds to infinity */
    return sign | 0x7c00;
  if (a < 0x1p-14f) /* subnormal: units of 2^-24 (exact scaling) */
    return sign | (uint16_t)lrintf(a * 0x1p24f);
  int e;
  frexpf(a, &e); /* a in [2^(e-1), 2^e) */
  long q = lrintf(ldexpf(a, 11 - e)); /* 1024..2048: 2048 carries */
  return sign | (uint16_t)(((uint32_t)(e + 14) << 10) + (uint32_t)(q - 1024));
}

#endif
