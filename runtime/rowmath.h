/* rowmath.h: loops over the rows of a softmax or a cross_entropy, shared
 * by the cblas and onednn dialects (cblas.c's cross_entropy and attention,
 * onednn/attention.c): the row maximum, exponentials by raf_vexpf (vmath.h)
 * and sums in double in a fixed order, so that a row gives the same bits
 * on every thread, at every thread count, and in either dialect. Each loop
 * is compiled for AVX-512, AVX2 and the baseline (RAF_VEC_LOOP), which do
 * the same IEEE operations.
 */
#ifndef RAF_RUNTIME_ROWMATH_H
#define RAF_RUNTIME_ROWMATH_H

#include "runtime/vmath.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The row's maximum, or NaN when it holds one (then everything is NaN, as
 * cpu-ref). Sixteen partial maxima: the max of floats is exact, so the order
 * does not matter but for the sign of a zero maximum, which no result
 * sees. GCC does not vectorize a select between floats, so with GCC's
 * vector extensions the lanes are one vector and the select a mask; NaN is
 * found by the sum of v - v, NaN for a NaN or an infinity and 0 otherwise,
 * and a row where it is NaN (rare) is scanned again for a NaN proper. */
#if defined(__GNUC__)
typedef float raf_f32x16 __attribute__((vector_size(64)));
typedef int32_t raf_i32x16 __attribute__((vector_size(64)));

RAF_VEC_LOOP static inline float raf_row_max(const float *x, int64_t n) {
  raf_f32x16 m, nonfinite = {0};
  for (int l = 0; l < 16; l++)
    m[l] = -INFINITY;
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    raf_f32x16 v;
    memcpy(&v, x + c, sizeof v);
    raf_i32x16 more = v > m;
    m = (raf_f32x16)(((raf_i32x16)v & more) | ((raf_i32x16)m & ~more));
    nonfinite += v - v;
  }
  float top = m[0], check = 0;
  for (int l = 1; l < 16; l++)
    top = m[l] > top ? m[l] : top;
  for (int l = 0; l < 16; l++)
    check += nonfinite[l];
  for (; c < n; c++) {
    top = x[c] > top ? x[c] : top;
    check += x[c] - x[c];
  }
#else
static inline float raf_row_max(const float *x, int64_t n) {
  float top = -INFINITY, check = 0;
  for (int64_t c = 0; c < n; c++) {
    top = x[c] > top ? x[c] : top;
    check += x[c] - x[c];
  }
#endif
  if (check == check)
    return top;
  for (int64_t c = 0; c < n; c++)
    if (x[c] != x[c])
      return NAN;
  return top;
}

/* Sums in double in a fixed order: eight partial sums, element c into
 * acc[c mod 8] (raf_lanes_add may be called on consecutive pieces whose
 * starts are multiples of 8), added up as raf_lanes_total does; the same
 * bits every time. */
RAF_VEC_FN static inline void raf_lanes_add(double acc[8], const float *x,
                                           int64_t n) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += (double)x[c + l];
  for (; c < n; c++)
    acc[c & 7] += (double)x[c];
}

static inline double raf_lanes_total(const double acc[8]) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* e[c] = exp(x[c] - top) in place, and their sum as raf_lanes_add sums. */
RAF_VEC_LOOP static inline double raf_row_exp_sum_inplace(float *x,
                                                          int64_t n,
                                                          float top) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t c = 0; c < n; c++)
    x[c] = raf_vexpf(x[c] - top);
  raf_lanes_add(acc, x, n);
  return raf_lanes_total(acc);
}

/* The sum of a[c] * b[c] in double, in raf_lanes_add' order. */
RAF_VEC_LOOP static inline double raf_row_dot(const float *a,
                                              const float *b, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += (double)a[c + l] * (double)b[c + l];
  for (; c < n; c++)
    acc[c & 7] += (double)a[c] * (double)b[c];
  return raf_lanes_total(acc);
}

/* dS = P * (dP - dot) * scale over a row, in place of dP. */
RAF_VEC_LOOP static inline void raf_row_softmax_backward(float *d,
                                                        const float *p,
                                                        int64_t n, float dot,
                                                        float scale) {
  for (int64_t c = 0; c < n; c++)
    d[c] = p[c] * (d[c] - dot) * scale;
}

/* x *= by over a row. */
RAF_VEC_LOOP static inline void raf_row_scale(float *x, int64_t n,
                                              float by) {
  for (int64_t e = 0; e < n; e++)
    x[e] *= by;
}

#endif
