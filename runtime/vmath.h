/* vmath.h: float math for the fast kernels of the cblas dialect, written so
 * that GCC vectorizes loops over arrays of it (no branches, no calls).
 *
 * raf_vexpf(x) is e^x in float: x = n ln2 + r with |r| <= ln2 / 2 (Cody and
 * Waite's two-part ln2), e^r by Cephes's degree-6 polynomial (about 1 ulp),
 * scaled by 2^n built in the exponent bits. Results below e^-87.3 (where
 * 2^n would be subnormal) are 0, above e^88.7 +inf; NaN stays NaN. The
 * result is a function of x alone, computed with plain IEEE operations (no
 * FMA contraction: the project builds in ISO C, -ffp-contract=off), so a
 * vectorized loop gives the bits of the scalar one at any position and on
 * any thread. */
#ifndef RAF_VMATH_H
#define RAF_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* GCC if-converts (and so vectorizes) the selects below only where
 * comparisons may not trap; the results are the same. A loop that should
 * vectorize over raf_vexpf carries RAF_VEC_LOOP, which also compiles it
 * three times, for AVX-512 (16 lanes) and AVX2 (8 lanes), one chosen at
 * load time on a CPU that has it, and for the baseline (SSE2, 4 lanes).
 * No FMA contraction: every version does the same IEEE operations, so they
 * give the same bits. AVX-512 runs the exponentials of cross_entropy and
 * softmax about 1.5x as fast as AVX2 on the CPUs that have it. */
#if defined(__GNUC__) && !defined(__clang__)
#define RAF_VEC_FN __attribute__((optimize("no-trapping-math")))
#if defined(__x86_64__)
#define RAF_VEC_LOOP                                                           \
  __attribute__((optimize("no-trapping-math"),                                \
                 target_clones("avx512f", "avx2", "default")))
#else
#define RAF_VEC_LOOP RAF_VEC_FN
#endif
#else
#define RAF_VEC_FN
#define RAF_VEC_LOOP
#endif

RAF_VEC_FN static inline float raf_vexpf(float x) {
  const float hi = 88.72283f, lo = -87.33654f;
  float xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  /* A NaN computes as 0 (its result is x itself, below), so that the
   * conversion to an exponent stays defined. */
  xc = x != x ? 0.0f : xc;
  /* n = round(x / ln2) by the 1.5 * 2^23 shifter (round to nearest). */
  float t = xc * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float y = p * (r * r) + r + 1.0f;
  /* 2^n: n in [-126, 128]; 128 only at hi, where y * 2^127 * 2 follows. */
  int32_t e = (int32_t)n;
  int32_t e1 = e > 127 ? 127 : e;
  int32_t bits = (e1 + 127) << 23;
  float s;
  memcpy(&s, &bits, sizeof s);
  y = y * s;
  y = e > 127 ? y * 2.0f : y;
  y = x < lo ? 0.0f : y;
  y = x > hi ? (float)INFINITY : y;
  return x != x ? x : y;
}

#endif
