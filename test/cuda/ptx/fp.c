/* fp.c: the floating-point arithmetic of the interpreter that C's
 * operators do not give directly: rounding modes other than
 * round-to-nearest-even (through the C environment's rounding mode, so
 * each operation is rounded once, as IEEE 754 requires), and conversions
 * to and from f16 and bf16, which are rounded here bit by bit from a
 * double (exact for every f16, bf16 and f32 value).
 *
 * Built with -frounding-math (CMakeLists.txt), so the compiler neither
 * folds nor moves arithmetic across fesetround.
 */
#include "fp.h"

#include <fenv.h>
#include <math.h>
#include <string.h>

static int c_mode(int round) {
  switch (round) {
  case PTX_RZ: return FE_TOWARDZERO;
  case PTX_RM: return FE_DOWNWARD;
  case PTX_RP: return FE_UPWARD;
  default: return FE_TONEAREST;
  }
}

static double apply_f64(int fop, double a, double b, double c) {
  switch (fop) {
  case PTX_FOP_ADD: return a + b;
  case PTX_FOP_SUB: return a - b;
  case PTX_FOP_MUL: return a * b;
  case PTX_FOP_DIV: return a / b;
  case PTX_FOP_FMA: return fma(a, b, c);
  case PTX_FOP_SQRT: return sqrt(a);
  case PTX_FOP_RCP: return 1.0 / a;
  case PTX_FOP_RSQRT: return 1.0 / sqrt(a);
  case PTX_FOP_EX2: return exp2(a);
  case PTX_FOP_LG2: return log2(a);
  case PTX_FOP_SIN: return sin(a);
  case PTX_FOP_COS: return cos(a);
  case PTX_FOP_TANH: return tanh(a);
  default: return NAN;
  }
}

static float apply_f32(int fop, float a, float b, float c) {
  switch (fop) {
  case PTX_FOP_ADD: return a + b;
  case PTX_FOP_SUB: return a - b;
  case PTX_FOP_MUL: return a * b;
  case PTX_FOP_DIV: return a / b;
  case PTX_FOP_FMA: return fmaf(a, b, c);
  case PTX_FOP_SQRT: return sqrtf(a);
  case PTX_FOP_RCP: return 1.0f / a;
  case PTX_FOP_RSQRT: return 1.0f / sqrtf(a);
  case PTX_FOP_EX2: return exp2f(a);
  case PTX_FOP_LG2: return log2f(a);
  case PTX_FOP_SIN: return sinf(a);
  case PTX_FOP_COS: return cosf(a);
  case PTX_FOP_TANH: return tanhf(a);
  default: return NAN;
  }
}

double ptx_f64_op(int fop, int round, double a, double b, double c) {
  if (round == PTX_RN || round == PTX_RNONE || round == PTX_RNA)
    return apply_f64(fop, a, b, c);
  int saved = fegetround();
  fesetround(c_mode(round));
  volatile double r = apply_f64(fop, a, b, c);
  fesetround(saved);
  return r;
}

float ptx_f32_op(int fop, int round, float a, float b, float c) {
  if (round == PTX_RN || round == PTX_RNONE || round == PTX_RNA)
    return apply_f32(fop, a, b, c);
  int saved = fegetround();
  fesetround(c_mode(round));
  volatile float r = apply_f32(fop, a, b, c);
  fesetround(saved);
  return r;
}

float ptx_f32_from_double(double x, int round) {
  if (round == PTX_RN || round == PTX_RNONE)
    return (float)x;
  int saved = fegetround();
  fesetround(c_mode(round));
  volatile float r = (float)x;
  fesetround(saved);
  return r;
}

/* x rounded to a binary format with `man` fraction bits and exponents
 * from emin (of normal numbers) to emax; the result's bits. */
static uint32_t round_to(double x, int man, int emin, int emax, int round) {
  int ebits = man == 10 ? 5 : 8;
  uint32_t sign = signbit(x) ? 1u << (man + ebits) : 0;
  uint32_t inf = ((1u << ebits) - 1) << man;
  if (isnan(x)) /* the GPU's canonical NaN (0x7fff), whatever the sign */
    return inf | ((1u << man) - 1);
  double a = fabs(x);
  if (isinf(a))
    return sign | inf;
  if (a == 0)
    return sign;
  int e;
  frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
  e -= 1;       /* a = g * 2^e, g in [1, 2) */
  if (e < emin)
    e = emin; /* subnormal: the quantum of emin */
  double quantum = ldexp(1.0, e - man);
  double q = a / quantum; /* exact: a power-of-two scaling */
  double fl = floor(q);
  double rem = q - fl;
  bool up;
  bool neg = sign != 0;
  switch (round) {
  case PTX_RZ: up = false; break;
  case PTX_RM: up = neg && rem > 0; break;
  case PTX_RP: up = !neg && rem > 0; break;
  case PTX_RNA: up = rem >= 0.5; break;
  default: up = rem > 0.5 || (rem == 0.5 && fmod(fl, 2.0) != 0); break;
  }
  double m = fl + (up ? 1 : 0);
  double value = m * quantum;
  if (value >= ldexp(2.0, emax)) { /* overflow */
    bool to_inf = round == PTX_RN || round == PTX_RNONE || round == PTX_RNA ||
                  (round == PTX_RP && !neg) || (round == PTX_RM && neg);
    return to_inf ? sign | inf : sign | (inf - 1);
  }
  int ve;
  frexp(value, &ve);
  ve -= 1;
  if (value < ldexp(1.0, emin)) /* subnormal */
    return sign | (uint32_t)m;
  uint32_t frac = (uint32_t)(ldexp(value, man - ve) - ldexp(1.0, man));
  return sign | (uint32_t)(ve - emin + 1) << man | frac;
}

uint16_t ptx_f16_from_double(double x, int round) {
  return (uint16_t)round_to(x, 10, -14, 15, round);
}

uint16_t ptx_bf16_from_double(double x, int round) {
  return (uint16_t)round_to(x, 7, -126, 127, round);
}

static double from_bits(uint32_t h, int man, int ebits, int emin) {
  uint32_t sign = h >> (man + ebits) & 1;
  uint32_t exp = h >> man & ((1u << ebits) - 1);
  uint32_t frac = h & ((1u << man) - 1);
  double v;
  if (exp == (1u << ebits) - 1)
    v = frac ? NAN : INFINITY;
  else if (exp == 0)
    v = ldexp((double)frac, emin - man);
  else
    v = ldexp((double)(frac | 1u << man), (int)exp - 1 + emin - man);
  return sign ? -v : v;
}

double ptx_f16_to_double(uint16_t h) { return from_bits(h, 10, 5, -14); }
double ptx_bf16_to_double(uint16_t h) { return from_bits(h, 7, 8, -126); }

/* Integers need no double rounding: a 64-bit one may have more bits than
 * a double holds, and rounding it to a double and then to f32 can make a
 * tie of what was not one (2^60 + 2^36 + 1). */
double ptx_f64_from_int(uint64_t v, bool is_signed, int round) {
  int saved = fegetround();
  fesetround(c_mode(round));
  volatile double r = is_signed ? (double)(int64_t)v : (double)v;
  fesetround(saved);
  return r;
}

double ptx_int_to_odd_double(uint64_t v, bool is_signed) {
  bool neg = is_signed && (int64_t)v < 0;
  uint64_t m = neg ? 0 - v : v;
  int shift = 0;
  if (m >> 53) { /* keep 53 bits; what is shifted out becomes a sticky 1 */
    shift = 11 - __builtin_clzll(m);
    m = m >> shift | ((m & (((uint64_t)1 << shift) - 1)) != 0);
  }
  double d = ldexp((double)m, shift);
  return neg ? -d : d;
}

double ptx_round_integral(double x, int round) {
  switch (round) {
  case PTX_RZ: return trunc(x);
  case PTX_RM: return floor(x);
  case PTX_RP: return ceil(x);
  default: return nearbyint(x); /* the default mode: ties to even */
  }
}

float ptx_flush_f32(float x) {
  return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}
