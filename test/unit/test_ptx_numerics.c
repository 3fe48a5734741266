/* test_ptx_numerics.c: the PTX interpreter's arithmetic at its edges:
 * cvt rounding (f32 to f16 and bf16 ties, directed modes, subnormals,
 * NaN, overflow; float to integer saturation; integer to float, 64-bit
 * sources included; f16x2/bf16x2 packing), min/max with NaN and signed
 * zeros, f16/bf16 arithmetic, the .approx functions against the PTX
 * manual's error bounds, and nvcc's half/bfloat16 conversions.
 */
#include "ptx_harness.h"

/* ---- conversions, min/max, f16/bf16 ---- */

static const op_case cvt_f16[] = {
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x3f800000, 0, 0, 0x3c00},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x3f801000, 0, 0, 0x3c00}, /* tie */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x3f803000, 0, 0, 0x3c02}, /* tie */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x3f801001, 0, 0, 0x3c01},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0xbf801000, 0, 0, 0xbc00},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x477fe000, 0, 0, 0x7bff}, /* 65504 */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x477fefff, 0, 0, 0x7bff},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x477ff000, 0, 0, 0x7c00}, /* 65520 */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x49742400, 0, 0, 0x7c00}, /* 1e6 */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x33800000, 0, 0, 0x0001}, /* 2^-24 */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x33000000, 0, 0, 0x0000}, /* 2^-25 */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x33000001, 0, 0, 0x0001},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x33400000, 0, 0, 0x0001}, /* .75 */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x33c00000, 0, 0, 0x0002}, /* tie */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x387fe000, 0, 0, 0x0400},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x00000001, 0, 0, 0x0000},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x80000000, 0, 0, 0x8000},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0xff800000, 0, 0, 0xfc00},
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0x7fc00000, 0, 0, 0x7fff}, /* NaN */
    {"cvt.rn.f16.f32 %d, %a", 4, 2, 0xffc00001, 0, 0, 0x7fff},
    {"cvt.rz.f16.f32 %d, %a", 4, 2, 0x3f803000, 0, 0, 0x3c01},
    {"cvt.rz.f16.f32 %d, %a", 4, 2, 0x49742400, 0, 0, 0x7bff},
    {"cvt.rz.f16.f32 %d, %a", 4, 2, 0xc9742400, 0, 0, 0xfbff},
    {"cvt.rz.f16.f32 %d, %a", 4, 2, 0x7f800000, 0, 0, 0x7c00},
    {"cvt.rz.f16.f32 %d, %a", 4, 2, 0x33c00000, 0, 0, 0x0001},
    {"cvt.rm.f16.f32 %d, %a", 4, 2, 0x3f801001, 0, 0, 0x3c00},
    {"cvt.rm.f16.f32 %d, %a", 4, 2, 0xbf801001, 0, 0, 0xbc01},
    {"cvt.rm.f16.f32 %d, %a", 4, 2, 0x49742400, 0, 0, 0x7bff},
    {"cvt.rm.f16.f32 %d, %a", 4, 2, 0xc9742400, 0, 0, 0xfc00},
    {"cvt.rm.f16.f32 %d, %a", 4, 2, 0xb3000000, 0, 0, 0x8001},
    {"cvt.rp.f16.f32 %d, %a", 4, 2, 0x3f800001, 0, 0, 0x3c01},
    {"cvt.rp.f16.f32 %d, %a", 4, 2, 0xbf801001, 0, 0, 0xbc00},
    {"cvt.rp.f16.f32 %d, %a", 4, 2, 0x49742400, 0, 0, 0x7c00},
    {"cvt.rp.f16.f32 %d, %a", 4, 2, 0xc9742400, 0, 0, 0xfbff},
    {"cvt.rp.f16.f32 %d, %a", 4, 2, 0x33000000, 0, 0, 0x0001},
    {"cvt.rp.f16.f32 %d, %a", 4, 2, 0xb3000000, 0, 0, 0x8000},
    {"cvt.f32.f16 %d, %a", 2, 4, 0x0001, 0, 0, 0x33800000},
    {"cvt.f32.f16 %d, %a", 2, 4, 0xfbff, 0, 0, 0xc77fe000},
    {"cvt.f32.f16 %d, %a", 2, 4, 0x7c00, 0, 0, 0x7f800000},
    {"cvt.f32.f16 %d, %a", 2, 4, 0x7e00, 0, 0, NAN32},
};

static const op_case cvt_bf16[] = {
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x3f800000, 0, 0, 0x3f80},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x3f808000, 0, 0, 0x3f80}, /* tie */
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x3f818000, 0, 0, 0x3f82}, /* tie */
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x3f808001, 0, 0, 0x3f81},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0xbf818000, 0, 0, 0xbf82},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x7f7fffff, 0, 0, 0x7f80}, /* max */
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x7f7f7fff, 0, 0, 0x7f7f},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x7f7f8000, 0, 0, 0x7f80},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x00010000, 0, 0, 0x0001},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x00008000, 0, 0, 0x0000},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x00018000, 0, 0, 0x0002},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x00008001, 0, 0, 0x0001},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x80000000, 0, 0, 0x8000},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0x7fc00000, 0, 0, 0x7fff},
    {"cvt.rn.bf16.f32 %d, %a", 4, 2, 0xff800001, 0, 0, 0x7fff},
    {"cvt.rz.bf16.f32 %d, %a", 4, 2, 0x7f7fffff, 0, 0, 0x7f7f},
    {"cvt.rz.bf16.f32 %d, %a", 4, 2, 0x3f81ffff, 0, 0, 0x3f81},
    {"cvt.rz.bf16.f32 %d, %a", 4, 2, 0xbf81ffff, 0, 0, 0xbf81},
    {"cvt.rz.bf16.f32 %d, %a", 4, 2, 0x00018000, 0, 0, 0x0001},
    {"cvt.rn.f16x2.f32 %d, %a, %b", 4, 4, 0x3f800000, 0x40000000, 0,
     0x3c004000},
    {"cvt.rn.bf16x2.f32 %d, %a, %b", 4, 4, 0x3f800000, 0xc0000000, 0,
     0x3f80c000},
    {"cvt.rn.relu.f16x2.f32 %d, %a, %b", 4, 4, 0xbf800000, 0x40400000, 0,
     0x00004200},
};

static const op_case cvt_int[] = {
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0x40200000, 0, 0, 2},   /* 2.5 */
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0x40600000, 0, 0, 4},   /* 3.5 */
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0xc0200000, 0, 0, 0xfffffffe},
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0xbf000000, 0, 0, 0},   /* -0.5 */
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0x3fc00000, 0, 0, 2},   /* 1.5 */
    {"cvt.rzi.s32.f32 %d, %a", 4, 4, 0x402ccccd, 0, 0, 2},   /* 2.7 */
    {"cvt.rzi.s32.f32 %d, %a", 4, 4, 0xc02ccccd, 0, 0, 0xfffffffe},
    {"cvt.rmi.s32.f32 %d, %a", 4, 4, 0xc0200000, 0, 0, 0xfffffffd},
    {"cvt.rmi.s32.f32 %d, %a", 4, 4, 0x40200000, 0, 0, 2},
    {"cvt.rmi.s32.f32 %d, %a", 4, 4, 0xbf000000, 0, 0, 0xffffffff},
    {"cvt.rpi.s32.f32 %d, %a", 4, 4, 0x40066666, 0, 0, 3},   /* 2.1 */
    {"cvt.rpi.s32.f32 %d, %a", 4, 4, 0xc0200000, 0, 0, 0xfffffffe},
    {"cvt.rpi.s32.f32 %d, %a", 4, 4, 0xbf000000, 0, 0, 0},
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0x4f32d05e, 0, 0, 0x7fffffff}, /* 3e9 */
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0xcf32d05e, 0, 0, 0x80000000},
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0x4f000000, 0, 0, 0x7fffffff}, /* 2^31 */
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0xcf000000, 0, 0, 0x80000000},
    {"cvt.rzi.s32.f32 %d, %a", 4, 4, 0x7f800000, 0, 0, 0x7fffffff},
    {"cvt.rzi.s32.f32 %d, %a", 4, 4, 0xff800000, 0, 0, 0x80000000},
    {"cvt.rni.s32.f32 %d, %a", 4, 4, 0x7fc00000, 0, 0, 0},
    {"cvt.rzi.u32.f32 %d, %a", 4, 4, 0xbf800000, 0, 0, 0},
    {"cvt.rzi.u32.f32 %d, %a", 4, 4, 0x4f9502f9, 0, 0, 0xffffffff}, /* 5e9 */
    {"cvt.rzi.u32.f32 %d, %a", 4, 4, 0x4f7fffff, 0, 0, 0xffffff00},
    {"cvt.rzi.u32.f32 %d, %a", 4, 4, 0xffc00000, 0, 0, 0},
    {"cvt.rni.s64.f32 %d, %a", 4, 8, 0x5f0ac723, 0, 0, 0x7fffffffffffffff},
    {"cvt.rni.s64.f32 %d, %a", 4, 8, 0xdf0ac723, 0, 0, 0x8000000000000000},
    {"cvt.rzi.s16.f32 %d, %a", 4, 2, 0x471c4000, 0, 0, 0x7fff}, /* 40000 */
    {"cvt.rzi.s16.f32 %d, %a", 4, 2, 0xc71c4000, 0, 0, 0x8000},
    {"cvt.rn.f32.s32 %d, %a", 4, 4, 0x01000001, 0, 0, 0x4b800000},
    {"cvt.rn.f32.s32 %d, %a", 4, 4, 0x01000003, 0, 0, 0x4b800002},
    {"cvt.rz.f32.s32 %d, %a", 4, 4, 0x01000003, 0, 0, 0x4b800001},
    {"cvt.rp.f32.u32 %d, %a", 4, 4, 0x01000001, 0, 0, 0x4b800001},
    {"cvt.rm.f32.s32 %d, %a", 4, 4, 0xfeffffff, 0, 0, 0xcb800001},
    {"cvt.rn.f32.u32 %d, %a", 4, 4, 0xffffffff, 0, 0, 0x4f800000},
    {"cvt.rz.f32.u32 %d, %a", 4, 4, 0xffffffff, 0, 0, 0x4f7fffff},
    /* 2^60 + 2^36 + 1: rounding to a double first would make a tie */
    {"cvt.rn.f32.s64 %d, %a", 8, 4, 0x1000001000000001, 0, 0, 0x5d800001},
    {"cvt.rn.f32.u64 %d, %a", 8, 4, 0x1000001000000001, 0, 0, 0x5d800001},
    {"cvt.rn.f32.s64 %d, %a", 8, 4, 0xefffffefffffffff, 0, 0, 0xdd800001},
    {"cvt.rz.f32.u64 %d, %a", 8, 4, 0x1000001fffffffff, 0, 0, 0x5d800000},
    {"cvt.rz.f64.s64 %d, %a", 8, 8, 0x0020000000000003, 0, 0,
     0x4340000000000001},
    {"cvt.rm.f64.u64 %d, %a", 8, 8, 0xffffffffffffffff, 0, 0,
     0x43efffffffffffff},
    {"cvt.rn.f64.u64 %d, %a", 8, 8, 0xffffffffffffffff, 0, 0,
     0x43f0000000000000},
    {"cvt.rp.f64.s64 %d, %a", 8, 8, 0x8000000000000001, 0, 0,
     0xc3dfffffffffffff}, /* -(2^63 - 1) up: -(2^63 - 1024) */
    {"cvt.rn.f16.s32 %d, %a", 4, 2, 2049, 0, 0, 0x6800},
    {"cvt.rn.f16.u32 %d, %a", 4, 2, 70000, 0, 0, 0x7c00},
    {"cvt.rz.f16.s32 %d, %a", 4, 2, 70000, 0, 0, 0x7bff},
    {"cvt.rn.f32.f64 %d, %a", 8, 4, 0x3ff0000010000000, 0, 0, 0x3f800000},
    {"cvt.rz.f32.f64 %d, %a", 8, 4, 0x3ff0000030000000, 0, 0, 0x3f800001},
    {"cvt.rn.f32.f64 %d, %a", 8, 4, 0x7e37e43c8800759c, 0, 0, 0x7f800000},
    {"cvt.rz.f32.f64 %d, %a", 8, 4, 0x7e37e43c8800759c, 0, 0, 0x7f7fffff},
    {"cvt.rn.f32.f64 %d, %a", 8, 4, 0x3690000000000000, 0, 0, 0}, /* 2^-150 */
    {"cvt.rn.f32.f64 %d, %a", 8, 4, 0x3698000000000000, 0, 0, 1},
};

static const op_case minmax[] = {
    {"min.f32 %d, %a, %b", 4, 4, 0x7fc00000, 0x3f800000, 0, 0x3f800000},
    {"min.f32 %d, %a, %b", 4, 4, 0x3f800000, 0x7fc00000, 0, 0x3f800000},
    {"max.f32 %d, %a, %b", 4, 4, 0xffc00000, 0xbf800000, 0, 0xbf800000},
    {"min.f32 %d, %a, %b", 4, 4, 0x7fc00000, 0x7fc00000, 0, NAN32},
    {"min.NaN.f32 %d, %a, %b", 4, 4, 0x7fc00000, 0x3f800000, 0, NAN32},
    {"max.NaN.f32 %d, %a, %b", 4, 4, 0x40000000, 0x7fc00000, 0, NAN32},
    {"min.f32 %d, %a, %b", 4, 4, 0x80000000, 0x00000000, 0, 0x80000000},
    {"min.f32 %d, %a, %b", 4, 4, 0x00000000, 0x80000000, 0, 0x80000000},
    {"max.f32 %d, %a, %b", 4, 4, 0x80000000, 0x00000000, 0, 0x00000000},
    {"max.f32 %d, %a, %b", 4, 4, 0x00000000, 0x80000000, 0, 0x00000000},
    {"max.f32 %d, %a, %b", 4, 4, 0x7f800000, 0x7fc00000, 0, 0x7f800000},
    {"min.f64 %d, %a, %b", 8, 8, 0x7ff8000000000000, 0x3ff0000000000000, 0,
     0x3ff0000000000000},
    {"max.NaN.f64 %d, %a, %b", 8, 8, 0x7ff8000000000000, 0x3ff0000000000000,
     0, NAN64},
    {"min.f16 %d, %a, %b", 2, 2, 0x7e00, 0x3c00, 0, 0x3c00},
    {"max.NaN.f16 %d, %a, %b", 2, 2, 0x3c00, 0x7e00, 0, 0x7fff},
    {"min.bf16 %d, %a, %b", 2, 2, 0x8000, 0x0000, 0, 0x8000},
    {"max.bf16 %d, %a, %b", 2, 2, 0x8000, 0x0000, 0, 0x0000},
    {"min.s32 %d, %a, %b", 4, 4, 0xffffffff, 1, 0, 0xffffffff},
    {"min.u32 %d, %a, %b", 4, 4, 0xffffffff, 1, 0, 1},
    {"max.s16 %d, %a, %b", 2, 2, 0x8000, 0x7fff, 0, 0x7fff},
};

static const op_case half_arith[] = {
    {"add.f16 %d, %a, %b", 2, 2, 0x3c00, 0x3c00, 0, 0x4000},
    {"add.f16 %d, %a, %b", 2, 2, 0x6801, 0x3c00, 0, 0x6802}, /* 2051: tie */
    {"add.f16 %d, %a, %b", 2, 2, 0x6800, 0x3c00, 0, 0x6800}, /* 2049: tie */
    {"add.rz.f16 %d, %a, %b", 2, 2, 0x6801, 0x3c00, 0, 0x6801},
    {"sub.f16 %d, %a, %b", 2, 2, 0x3c00, 0x3c00, 0, 0x0000},
    {"mul.f16 %d, %a, %b", 2, 2, 0x7bff, 0x4000, 0, 0x7c00},
    {"add.f16 %d, %a, %b", 2, 2, 0x7c00, 0xfc00, 0, 0x7fff},
    {"add.f16 %d, %a, %b", 2, 2, 0x0001, 0x0001, 0, 0x0002},
    {"add.ftz.f16 %d, %a, %b", 2, 2, 0x0001, 0x0001, 0, 0x0000},
    /* (1+2^-7)^2 - (1+2^-6) = 2^-14, exact only if rounded once */
    {"fma.rn.bf16 %d, %a, %b, %c", 2, 2, 0x3f81, 0x3f81, 0xbf82, 0x3880},
    {"fma.rn.f16 %d, %a, %b, %c", 2, 2, 0x3c01, 0x3c01, 0xbc02, 0x0010},
    {"fma.rn.bf16x2 %d, %a, %b, %c", 4, 4, 0x3f813f80, 0x3f813f80,
     0xbf823f80, 0x38804000},
    {"add.f16x2 %d, %a, %b", 4, 4, 0x7bff3c00, 0x7bff3800, 0, 0x7c003e00},
    {"mul.f16x2 %d, %a, %b", 4, 4, 0x40003c00, 0xc0004200, 0, 0xc4004200},
    {"neg.bf16 %d, %a", 2, 2, 0x3f80, 0, 0, 0xbf80},
    {"abs.f16 %d, %a", 2, 2, 0xbc00, 0, 0, 0x3c00},
};

/* Reference conversions with integer arithmetic only, independent of the
 * interpreter's (which rounds from a double). */
static uint16_t ref_f16(uint32_t u) {
  uint32_t sign = u >> 16 & 0x8000, a = u & 0x7fffffff;
  if (a > 0x7f800000)
    return 0x7fff;
  if (a >= 0x477ff000) /* 65520 and up round to infinity */
    return (uint16_t)(sign | 0x7c00);
  if (a >= 0x38800000) { /* normal: rebias the exponent, round 13 bits */
    uint32_t r = a - (112u << 23), h = r >> 13, rem = r & 0x1fff;
    h += rem > 0x1000 || (rem == 0x1000 && (h & 1));
    return (uint16_t)(sign | h);
  }
  int e = (int)(a >> 23);
  if (e < 102) /* below 2^-25 */
    return (uint16_t)sign;
  uint32_t m = (a & 0x7fffff) | 0x800000;
  int shift = 126 - e;
  uint32_t h = m >> shift, rem = m & ((1u << shift) - 1),
           half = 1u << (shift - 1);
  h += rem > half || (rem == half && (h & 1));
  return (uint16_t)(sign | h);
}
static uint16_t ref_bf16(uint32_t u) {
  if ((u & 0x7fffffff) > 0x7f800000)
    return 0x7fff;
  return (uint16_t)((u + 0x7fff + (u >> 16 & 1)) >> 16);
}

static float half_value(uint16_t h) {
  int e = h >> 10 & 31, f = h & 0x3ff;
  float v = e == 31 ? (f ? NAN : INFINITY)
            : e ? ldexpf((float)(f | 0x400), e - 25)
                : ldexpf((float)f, -24);
  return h >> 15 ? -v : v;
}

static void test_cvt_bulk(void) {
  enum { N = 4096 };
  static uint32_t in[N];
  static uint16_t h[N], b[N];
  for (unsigned i = 0; i < N; i++) /* random, then near the edges */
    in[i] = i < N / 2 ? rng()
            : i < 3 * N / 4 ? (0x33000000 + (rng() & 0x07ffffff)) ^
                                  (rng() & 0x80000000)
                            : 0x477f0000 + (rng() & 0x1ffff);
  if (run_op("cvt.rn.f16.f32 %d, %a", 4, 2, in, NULL, NULL, h, N))
    for (unsigned i = 0, bad = 0; i < N && bad < 5; i++)
      if (h[i] != ref_f16(in[i]))
        bad++, fail("cvt.rn.f16.f32 of 0x%08x gives 0x%04x, want 0x%04x",
                    in[i], h[i], ref_f16(in[i]));
  if (run_op("cvt.rn.bf16.f32 %d, %a", 4, 2, in, NULL, NULL, b, N))
    for (unsigned i = 0, bad = 0; i < N && bad < 5; i++)
      if (b[i] != ref_bf16(in[i]))
        bad++, fail("cvt.rn.bf16.f32 of 0x%08x gives 0x%04x, want 0x%04x",
                    in[i], b[i], ref_bf16(in[i]));
}

/* ---- .approx math ---- */

static double ulp_f32(double x) {
  int e;
  frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
  return ldexp(1.0, (e - 1 < -126 ? -126 : e - 1) - 23);
}

#define PI 3.14159265358979323846
static void test_approx(void) {
  enum { N = 2048 };
  static float in[N], out[N];
  /* kind 0: error in ulps; 1: relative; 2: absolute; 3: absolute, plus an
   * ulp of the result (lg2's bound is for the mantissa's logarithm, and
   * a result of 100 has ulps of 2^-17). scale 'l': lo..hi log-spaced,
   * 'L': the same with alternating signs. */
  static const struct {
    const char *insn;
    double lo, hi;
    char scale;
    int kind;
    double log2_bound; /* the bound is 2^this (2 ulps: 1) */
  } ops[] = {
      {"ex2.approx.f32 %d, %a", -125, 127, 0, 0, 1},
      {"ex2.approx.ftz.f32 %d, %a", -20, 20, 0, 0, 1},
      {"lg2.approx.f32 %d, %a", 1e-30, 1e30, 'l', 3, -22.6},
      {"lg2.approx.f32 %d, %a", 0.5, 2, 0, 2, -22.6},
      {"rcp.approx.f32 %d, %a", 1e-30, 1e30, 'L', 0, 0},
      {"rsqrt.approx.f32 %d, %a", 1e-30, 1e30, 'l', 1, -22.9},
      {"sqrt.approx.f32 %d, %a", 1e-30, 1e30, 'l', 1, -23},
      {"sin.approx.f32 %d, %a", -PI, PI, 0, 2, -20.5},
      {"cos.approx.f32 %d, %a", -PI, PI, 0, 2, -20.5},
      {"tanh.approx.f32 %d, %a", -10, 10, 0, 1, -11},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    double lo = ops[k].lo, hi = ops[k].hi;
    for (unsigned i = 0; i < N; i++) {
      double t = (i + 0.5) / N;
      in[i] = (float)(ops[k].scale ? lo * pow(hi / lo, t) : lo + (hi - lo) * t);
      if (ops[k].scale == 'L' && i % 2)
        in[i] = -in[i];
    }
    if (!run_op(ops[k].insn, 4, 4, in, NULL, NULL, out, N))
      continue;
    const char *n = ops[k].insn;
    double worst = 0;
    unsigned at = 0;
    for (unsigned i = 0; i < N; i++) {
      double x = in[i];
      double ref = strncmp(n, "ex2", 3) == 0     ? exp2(x)
                   : strncmp(n, "lg2", 3) == 0   ? log2(x)
                   : strncmp(n, "rcp", 3) == 0   ? 1 / x
                   : strncmp(n, "rsqrt", 5) == 0 ? 1 / sqrt(x)
                   : strncmp(n, "sqrt", 4) == 0  ? sqrt(x)
                   : strncmp(n, "sin", 3) == 0   ? sin(x)
                   : strncmp(n, "cos", 3) == 0   ? cos(x)
                                                 : tanh(x);
      double err = fabs(out[i] - ref);
      switch (ops[k].kind) {
      case 0: err /= ulp_f32(ref); break;
      case 1: err /= fabs(ref); break;
      case 3: err = err - ulp_f32(ref) > 0 ? err - ulp_f32(ref) : 0; break;
      }
      if (!(err <= worst)) { /* NaN too */
        worst = err;
        at = i;
      }
    }
    double bound = exp2(ops[k].log2_bound);
    EXPECT(worst <= bound, "%s: error %g at %.9g (got %.9g), over the PTX "
           "manual's bound %g", n, worst, (double)in[at], (double)out[at],
           bound);
  }
  /* special values */
  static const op_case special[] = {
      {"ex2.approx.f32 %d, %a", 4, 4, 0xff800000, 0, 0, 0},
      {"ex2.approx.f32 %d, %a", 4, 4, 0x7f800000, 0, 0, 0x7f800000},
      {"ex2.approx.f32 %d, %a", 4, 4, 0x80000000, 0, 0, 0x3f800000},
      {"ex2.approx.f32 %d, %a", 4, 4, 0x7fc00000, 0, 0, NAN32},
      {"lg2.approx.f32 %d, %a", 4, 4, 0, 0, 0, 0xff800000},
      {"lg2.approx.f32 %d, %a", 4, 4, 0xbf800000, 0, 0, NAN32},
      {"lg2.approx.f32 %d, %a", 4, 4, 0x7f800000, 0, 0, 0x7f800000},
      {"rcp.approx.f32 %d, %a", 4, 4, 0x80000000, 0, 0, 0xff800000},
      {"rcp.approx.f32 %d, %a", 4, 4, 0x7f800000, 0, 0, 0},
      {"rsqrt.approx.f32 %d, %a", 4, 4, 0, 0, 0, 0x7f800000},
      {"sqrt.approx.f32 %d, %a", 4, 4, 0xbf800000, 0, 0, NAN32},
      {"sin.approx.f32 %d, %a", 4, 4, 0x7f800000, 0, 0, NAN32},
      {"tanh.approx.f32 %d, %a", 4, 4, 0x7f800000, 0, 0, 0x3f800000},
      {"tanh.approx.f32 %d, %a", 4, 4, 0xff800000, 0, 0, 0xbf800000},
  };
  CHECK_CASES("approx special values", special);
}


static void test_half_convert(void) {
  char *src = read_testdata("half_convert.ptx");
  ptx_module *m = src ? load_on(src, &dev90, "half_convert.ptx") : NULL;
  if (m) {
    enum { N = 64 };
    static const uint32_t edge[] = {0x3f801000, 0x3f803000, 0x477ff000,
                                    0x33000000, 0x33c00000, 0x7fc00000,
                                    0x3f808000, 0x3f818000, 0x00018000,
                                    0x7f7fffff, 0x80000000, 0xc9742400};
    dbuf in = dnew(N * 4), h = dnew(N * 2), b = dnew(N * 2),
         back = dnew(N * 4), h2 = dnew(N * 4);
    uint32_t *x = in.host;
    for (unsigned i = 0; i < N; i++)
      x[i] = i < sizeof edge / 4 ? edge[i] : rng();
    void *params[] = {&in.dev, &h.dev, &b.dev, &back.dev, &h2.dev};
    if (run1(m, "half_convert", 1, N, params, "half_convert"))
      for (unsigned i = 0; i < N; i++) {
        uint16_t hv = ((uint16_t *)h.host)[i], bv = ((uint16_t *)b.host)[i];
        uint32_t bb = (uint32_t)ref_bf16(x[i]) << 16;
        float fb, sum = ((float *)back.host)[i];
        memcpy(&fb, &bb, 4);
        float want = half_value(ref_f16(x[i])) + fb;
        EXPECT(sum == want || (isnan(sum) && isnan(want)),
               "half_convert: 0x%08x: __half2float + __bfloat162float gives "
               "%.9g, want %.9g", x[i], (double)sum, (double)want);
        EXPECT(hv == ref_f16(x[i]) && bv == ref_bf16(x[i]),
               "half_convert: 0x%08x to half 0x%04x, bfloat16 0x%04x; want "
               "0x%04x 0x%04x", x[i], hv, bv, ref_f16(x[i]), ref_bf16(x[i]));
        /* __hadd2 of {x, 1} with itself: the high half is 2.0 */
        uint32_t s = ((uint32_t *)h2.host)[i];
        EXPECT(s >> 16 == 0x4000, "half_convert: __hadd2's high half 0x%04x, "
               "want 0x4000", s >> 16);
      }
    dfree(&in);
    dfree(&h);
    dfree(&b);
    dfree(&back);
    dfree(&h2);
  }
  ptx_module_free(m);
  free(src);
}

int main(void) {
  CHECK_CASES("cvt to f16", cvt_f16);
  CHECK_CASES("cvt to bf16", cvt_bf16);
  CHECK_CASES("cvt with integers", cvt_int);
  test_cvt_bulk();
  CHECK_CASES("min/max", minmax);
  CHECK_CASES("f16/bf16 arithmetic", half_arith);
  test_approx();
  test_half_convert();
  if (failures)
    fprintf(stderr, "%s: %d checks failed\n", __FILE__, failures);
  return failures != 0;
}
