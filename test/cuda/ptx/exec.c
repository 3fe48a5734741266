/* exec.c: what each PTX instruction computes, for one thread, until the
 * thread has to wait for others (a barrier, a warp collective), exits or
 * faults.
 *
 * A register is a 64-bit slot; an instruction reads the low bits its
 * type names (sign-extending the signed ones) and writes its result's
 * bits, so what lies above a narrow value never matters. The common
 * cases (integer arithmetic, f32 and f64 with round-to-nearest) are
 * inline C; rounding modes, .ftz/.sat, f16 and bf16 go through fp.c.
 * Floats are IEEE: each operation is rounded once as PTX says; the .approx
 * functions are libm's, which are within the PTX manual's bounds
 * (docs/Numerics.md).
 */
#include "fp.h"
#include "run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline uint64_t mask_bits(uint64_t v, int bits) {
  return bits >= 64 ? v : v & (((uint64_t)1 << bits) - 1);
}
static inline int64_t sext(uint64_t v, int bits) {
  if (bits >= 64)
    return (int64_t)v;
  uint64_t m = (uint64_t)1 << (bits - 1);
  return (int64_t)((mask_bits(v, bits) ^ m) - m);
}
static inline float as_f32(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint64_t of_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline double as_f64(uint64_t v) {
  double d;
  memcpy(&d, &v, 8);
  return d;
}
static inline uint64_t of_f64(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

/* A value of a scalar float type as a double (exact), and back. */
static double fget(int type, uint64_t v) {
  switch (type) {
  case PTX_T_F16: return ptx_f16_to_double((uint16_t)v);
  case PTX_T_BF16: return ptx_bf16_to_double((uint16_t)v);
  case PTX_T_F32: return as_f32(v);
  default: return as_f64(v);
  }
}
static uint64_t fput(int type, double d, int round) {
  switch (type) {
  case PTX_T_F16: return ptx_f16_from_double(d, round);
  case PTX_T_BF16: return ptx_bf16_from_double(d, round);
  case PTX_T_F32: return of_f32(ptx_f32_from_double(d, round));
  default: return of_f64(d);
  }
}
static int lane_type(int type) {
  return type == PTX_T_F16X2 ? PTX_T_F16 : type == PTX_T_BF16X2 ? PTX_T_BF16 : type;
}

static double flush_value(int type, double d) {
  double tiny = type == PTX_T_F16 ? 0x1p-14 : type == PTX_T_F64 ? 0x1p-1022 : 0x1p-126;
  return d != 0 && fabs(d) < tiny ? copysign(0.0, d) : d;
}

static double saturate(double d) {
  return isnan(d) ? 0.0 : d < 0 ? 0.0 : d > 1 ? 1.0 : d;
}

/* min/max as PTX: a NaN operand loses (unless .NaN), -0 < +0. */
static double fminmax(double a, double b, bool max, bool nan) {
  if (isnan(a) || isnan(b)) {
    if (nan || (isnan(a) && isnan(b)))
      return NAN;
    return isnan(a) ? b : a;
  }
  if (a == b && a == 0)
    return (signbit(a) != signbit(b)) ? (max ? 0.0 : -0.0) : a;
  return max ? (a > b ? a : b) : (a < b ? a : b);
}

/* One lane of a float operation of scalar type `type`. */
static uint64_t float_lane(const ptx_insn *in, int type, int fop, int op,
                           uint64_t a, uint64_t b, uint64_t c) {
  bool ftz = in->flags & PTX_F_FTZ;
  double x = fget(type, a), y = fget(type, b), z = fget(type, c);
  if (ftz) {
    x = flush_value(type, x);
    y = flush_value(type, y);
    z = flush_value(type, z);
  }
  int round = in->round == PTX_RNONE ? PTX_RN : in->round;
  double r;
  if (op == PTX_OP_MIN || op == PTX_OP_MAX) {
    r = fminmax(x, y, op == PTX_OP_MAX, in->flags & PTX_F_NAN);
    if ((in->flags & PTX_F_XORSIGN) && !isnan(r))
      r = copysign(fabs(r), (signbit(x) != signbit(y)) ? -1.0 : 1.0);
  } else if (op == PTX_OP_ABS) {
    r = fabs(x);
  } else if (op == PTX_OP_NEG) {
    r = -x;
  } else if (op == PTX_OP_COPYSIGN) {
    r = copysign(y, x);
  } else if (type == PTX_T_F32) {
    r = ptx_f32_op(fop, round, (float)x, (float)y, (float)z);
  } else if (type == PTX_T_F64) {
    r = ptx_f64_op(fop, round, x, y, z);
  } else {
    /* f16, bf16: exact in double for add, sub, mul; once rounded */
    r = ptx_f64_op(fop, PTX_RN, x, y, z);
  }
  if (in->flags & PTX_F_SAT)
    r = saturate(r);
  if ((in->flags & PTX_F_RELU) && (r < 0 || isnan(r)))
    r = isnan(r) && type != PTX_T_F32 ? r : 0.0;
  if (ftz)
    r = flush_value(type, r);
  if (type == PTX_T_F32 || type == PTX_T_F64)
    return type == PTX_T_F32 ? of_f32((float)r) : of_f64(r);
  return fput(type, r, round);
}

static uint64_t float_op(const ptx_insn *in, int fop, uint64_t a, uint64_t b,
                         uint64_t c) {
  int op = in->op, t = in->type;
  if (t == PTX_T_F16X2 || t == PTX_T_BF16X2) {
    int lt = lane_type(t);
    uint64_t lo = float_lane(in, lt, fop, op, a & 0xffff, b & 0xffff, c & 0xffff);
    uint64_t hi = float_lane(in, lt, fop, op, a >> 16 & 0xffff, b >> 16 & 0xffff,
                             c >> 16 & 0xffff);
    return (hi & 0xffff) << 16 | (lo & 0xffff);
  }
  return float_lane(in, t, fop, op, a, b, c);
}

static bool fcompare(int cmp, double a, double b) {
  bool un = isnan(a) || isnan(b);
  switch (cmp) {
  case PTX_EQ: return !un && a == b;
  case PTX_NE: return !un && a != b;
  case PTX_LT: return !un && a < b;
  case PTX_LE: return !un && a <= b;
  case PTX_GT: return !un && a > b;
  case PTX_GE: return !un && a >= b;
  case PTX_EQU: return un || a == b;
  case PTX_NEU: return un || a != b;
  case PTX_LTU: return un || a < b;
  case PTX_LEU: return un || a <= b;
  case PTX_GTU: return un || a > b;
  case PTX_GEU: return un || a >= b;
  case PTX_NUM: return !un;
  case PTX_NAN: return un;
  default: return false;
  }
}

static bool icompare(int cmp, int type, uint64_t a, uint64_t b) {
  int bits = ptx_type_bits[type], order;
  if (ptx_type_kind[type] == 's') {
    int64_t x = sext(a, bits), y = sext(b, bits);
    order = (x > y) - (x < y);
  } else {
    uint64_t x = mask_bits(a, bits), y = mask_bits(b, bits);
    order = (x > y) - (x < y);
  }
  switch (cmp) {
  case PTX_EQ: return order == 0;
  case PTX_NE: return order != 0;
  case PTX_LT: case PTX_LO: return order < 0;
  case PTX_LE: case PTX_LS: return order <= 0;
  case PTX_GT: case PTX_HI: return order > 0;
  case PTX_GE: case PTX_HS: return order >= 0;
  default: return false;
  }
}

static bool compare(const ptx_insn *in, int type, uint64_t a, uint64_t b) {
  if (ptx_type_kind[type] == 'f')
    return fcompare(in->sub, fget(type, a), fget(type, b));
  return icompare(in->sub, type, a, b);
}

static bool combine(const ptx_insn *in, bool p, uint64_t c) {
  bool q = (c & 1) != ((in->flags & PTX_F_NEG_C) != 0);
  switch (in->boolop) {
  case PTX_BOOL_AND: return p && q;
  case PTX_BOOL_OR: return p || q;
  case PTX_BOOL_XOR: return p != q;
  default: return p;
  }
}

/* A float as an integer of `type`, saturating (NaN is 0), as cvt does. */
static uint64_t float_to_int(double d, int type, int round) {
  int bits = ptx_type_bits[type];
  if (isnan(d))
    return 0;
  d = ptx_round_integral(d, round == PTX_RNONE ? PTX_RZ : round);
  if (ptx_type_kind[type] == 's') {
    int64_t max = (int64_t)(((uint64_t)1 << (bits - 1)) - 1), min = -max - 1;
    int64_t v = d <= -ldexp(1.0, bits - 1) ? min
                : d >= ldexp(1.0, bits - 1) ? max
                                            : (int64_t)d;
    return mask_bits((uint64_t)v, bits);
  }
  if (d <= 0)
    return 0;
  if (d >= ldexp(1.0, bits))
    return mask_bits(UINT64_MAX, bits);
  return (uint64_t)d;
}

/* An integer of `type` as a float of `dtype`, rounded once. */
static uint64_t int_to_float(uint64_t v, int type, int dtype, int round) {
  int bits = ptx_type_bits[type];
  bool sgn = ptx_type_kind[type] == 's';
  uint64_t x = sgn ? (uint64_t)sext(v, bits) : mask_bits(v, bits);
  if (round == PTX_RNONE)
    round = PTX_RN;
  if (dtype == PTX_T_F64)
    return of_f64(ptx_f64_from_int(x, sgn, round));
  return fput(dtype, ptx_int_to_odd_double(x, sgn), round); /* fp.c: why */
}

static uint64_t int_saturate(int64_t v, bool src_signed, uint64_t raw, int type) {
  int bits = ptx_type_bits[type];
  if (ptx_type_kind[type] == 's') {
    int64_t hi = (int64_t)(((uint64_t)1 << (bits - 1)) - 1), lo = -hi - 1;
    if (!src_signed && raw > (uint64_t)hi)
      return mask_bits((uint64_t)hi, bits);
    return mask_bits((uint64_t)(v < lo ? lo : v > hi ? hi : v), bits);
  }
  uint64_t hi = mask_bits(UINT64_MAX, bits);
  if (src_signed && v < 0)
    return 0;
  return raw > hi ? hi : raw;
}

static uint64_t convert(const ptx_insn *in, uint64_t a, uint64_t b) {
  int d = in->type, s = in->type2;
  char dk = ptx_type_kind[d], sk = ptx_type_kind[s];
  int round = in->round;
  if (d == PTX_T_F16X2 || d == PTX_T_BF16X2) { /* packs: a high, b low */
    int lt = lane_type(d);
    ptx_insn lane = *in;
    lane.type = (uint8_t)lt;
    uint64_t hi = convert(&lane, a, 0), lo = convert(&lane, b, 0);
    return (hi & 0xffff) << 16 | (lo & 0xffff);
  }
  if (sk == 'f' && dk == 'f') {
    double x = fget(s, a);
    if (in->flags & PTX_F_FTZ)
      x = flush_value(s, x);
    if (in->flags & PTX_F_INTROUND)
      x = ptx_round_integral(x, round);
    if (in->flags & PTX_F_SAT)
      x = saturate(x);
    if ((in->flags & PTX_F_RELU) && (x < 0))
      x = 0;
    if (d == PTX_T_F64)
      return of_f64(x);
    if (in->flags & PTX_F_INTROUND)
      round = PTX_RN; /* already integral */
    uint64_t r = fput(d, x, round == PTX_RNONE ? PTX_RN : round);
    if ((in->flags & PTX_F_FTZ) && d == PTX_T_F32)
      r = of_f32(ptx_flush_f32(as_f32(r)));
    return r;
  }
  if (sk == 'f') {
    double x = fget(s, a);
    if (in->flags & PTX_F_FTZ)
      x = flush_value(s, x);
    return float_to_int(x, d, round);
  }
  if (dk == 'f') {
    uint64_t r = int_to_float(a, s, d, round);
    if (in->flags & PTX_F_SAT)
      r = fput(d, saturate(fget(d, r)), PTX_RN);
    return r;
  }
  /* integer to integer: extend by the source, cut to the destination */
  int sb = ptx_type_bits[s], db = ptx_type_bits[d];
  uint64_t raw = sk == 's' ? (uint64_t)sext(a, sb) : mask_bits(a, sb);
  if (in->flags & PTX_F_SAT)
    return int_saturate(sk == 's' ? sext(a, sb) : 0, sk == 's', raw, d);
  return dk == 's' ? mask_bits(raw, db) : mask_bits(raw, db);
}

/* Loads n bytes at p as a slot value of `type` (narrow signed loads are
 * sign-extended). */
static uint64_t load(const unsigned char *p, int type) {
  int bits = ptx_type_bits[type];
  uint64_t v = 0;
  memcpy(&v, p, (size_t)(bits / 8));
  return ptx_type_kind[type] == 's' ? (uint64_t)sext(v, bits) : v;
}

static uint64_t atomic(const ptx_insn *in, unsigned char *p, uint64_t b,
                       uint64_t c) {
  int type = in->type, bits = ptx_type_bits[type];
  uint64_t old = load(p, type), r = old;
  bool f = ptx_type_kind[type] == 'f';
  switch (in->sub) {
  case PTX_ATOM_ADD:
    if (f) {
      ptx_insn add = *in;
      add.op = PTX_OP_ADD;
      add.flags = 0;
      add.round = PTX_RN;
      r = float_op(&add, PTX_FOP_ADD, old, b, 0);
    } else {
      r = old + b;
    }
    break;
  case PTX_ATOM_MIN: case PTX_ATOM_MAX: {
    bool max = in->sub == PTX_ATOM_MAX;
    if (f)
      r = fput(type, fminmax(fget(type, old), fget(type, b), max, false), PTX_RN);
    else {
      bool less = ptx_type_kind[type] == 's' ? sext(b, bits) < sext(old, bits)
                                             : mask_bits(b, bits) < mask_bits(old, bits);
      r = (less != max) ? b : old;
    }
    break;
  }
  case PTX_ATOM_EXCH: r = b; break;
  case PTX_ATOM_CAS: r = mask_bits(old, bits) == mask_bits(b, bits) ? c : old; break;
  case PTX_ATOM_INC: r = mask_bits(old, bits) >= mask_bits(b, bits) ? 0 : old + 1; break;
  case PTX_ATOM_DEC:
    r = (mask_bits(old, bits) == 0 || mask_bits(old, bits) > mask_bits(b, bits)) ? b : old - 1;
    break;
  case PTX_ATOM_AND: r = old & b; break;
  case PTX_ATOM_OR: r = old | b; break;
  case PTX_ATOM_XOR: r = old ^ b; break;
  }
  memcpy(p, &r, (size_t)(bits / 8));
  return old;
}

static uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
  uint64_t bytes = (uint64_t)b << 32 | a;
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) {
    unsigned sel = c >> (4 * i) & 0xf;
    uint32_t byte = (uint32_t)(bytes >> (8 * (sel & 7)) & 0xff);
    if (sel & 8) /* replicate the sign */
      byte = (byte & 0x80) ? 0xff : 0;
    r |= byte << (8 * i);
  }
  return r;
}

static uint64_t lop3(uint64_t a, uint64_t b, uint64_t c, unsigned lut) {
  uint64_t r = 0;
  for (int i = 0; i < 8; i++)
    if (lut >> i & 1)
      r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  return r;
}

ptx_status ptx_frame_start(ptx_cta *cta, ptx_thread *t, ptx_frame *f,
                           const ptx_function *fn, uint64_t *regs) {
  f->fn = fn;
  f->pc = 0;
  f->own_regs = !regs;
  f->regs = regs ? memset(regs, 0, ((size_t)fn->nregs + 1) * sizeof *regs)
                 : calloc((size_t)fn->nregs + 1, sizeof *f->regs);
  /* a kernel's own parameters are the launch's; its frame needs a param
   * area only for the calls it makes */
  size_t params = fn->is_entry && !fn->calls ? 0 : fn->param_size;
  f->params = params ? calloc(params, 1) : NULL;
  if (!f->regs || (params && !f->params))
    return PTX_OUT_OF_MEMORY;
  f->local_base = t->local_top;
  if (fn->local_size) {
    uint32_t need = t->local_top + fn->local_size;
    if (need > t->local_cap) {
      unsigned char *l = realloc(t->local, need * 2);
      if (!l)
        return PTX_OUT_OF_MEMORY;
      t->local = l;
      t->local_cap = need * 2;
    }
    memset(t->local + t->local_top, 0, fn->local_size);
    t->local_top = need;
  }
  for (int i = 0; i < fn->nconsts; i++)
    f->regs[fn->consts[i].slot] =
        fn->consts[i].value + (fn->consts[i].local ? f->local_base : 0);
  const ptx_launch *l = cta->launch;
  uint64_t sr[PTX_SR_COUNT] = {
      t->tid[0], t->tid[1], t->tid[2], l->block[0], l->block[1], l->block[2],
      cta->ctaid[0], cta->ctaid[1], cta->ctaid[2], l->grid[0], l->grid[1],
      l->grid[2], t->lane, t->warp, (cta->nthreads + 31) / 32, 0, 1, 0,
      (uint64_t)1 << t->lane, ((uint64_t)1 << t->lane) - 1,
      ((uint64_t)2 << t->lane) - 1, (uint32_t)~(((uint64_t)2 << t->lane) - 1),
      (uint32_t)~(((uint64_t)1 << t->lane) - 1), cta->insns, cta->insns,
      cta->insns, l->dynamic_shared, cta->shared_size, 32};
  for (int i = 0; i < PTX_SR_COUNT; i++)
    if (fn->sreg_slot[i] >= 0)
      f->regs[fn->sreg_slot[i]] = sr[i];
  return PTX_OK;
}

static void frame_end(ptx_thread *t, ptx_frame *f) {
  if (f->own_regs)
    free(f->regs);
  free(f->params);
  f->regs = NULL;
  f->params = NULL;
  t->local_top = f->local_base;
}

#define NEAREST(in) ((in)->round == PTX_RN || (in)->round == PTX_RNONE)
#define S(i) r[in->src[i]]
#define D(i) r[in->dst[i]]
#define FAULT(st, ...) ptx_fault(cta, t, in, st, __VA_ARGS__)

/* mad's addend c added to the product's half p (bits wide), plus the
 * carry for madc; .cc sets the carry out, as add.cc and addc.cc do. */
static uint64_t mad_add(ptx_thread *t, const ptx_insn *in, uint64_t p,
                        uint64_t c, int bits) {
  uint64_t a = mask_bits(p, bits), b = mask_bits(c, bits);
  uint64_t cin = in->op == PTX_OP_MADC ? t->carry : 0, s = a + b + cin;
  if (in->flags & PTX_F_CC)
    t->carry = bits == 64 ? (s < a || (cin && s == a)) : (s >> bits) & 1;
  return s;
}


int ptx_thread_run(ptx_cta *cta, ptx_thread *t) {
  ptx_frame *f = &t->frames[t->depth];
  uint64_t *r = f->regs;
  const ptx_insn *code = f->fn->code;
  uint32_t pc = f->pc;
  uint64_t executed = 0;
  int result = PTX_EXITED;
  for (;;) {
    const ptx_insn *in = &code[pc++];
    executed++;
    if (in->guard >= 0 && (r[in->guard] & 1) == in->guard_neg)
      continue;
    int type = in->type, bits = ptx_type_bits[type];
    char kind = ptx_type_kind[type];
    switch (in->op) {
    case PTX_OP_ADD:
    case PTX_OP_SUB:
      if (kind == 'f') {
        if (type == PTX_T_F32 && !in->flags && NEAREST(in))
          D(0) = of_f32(in->op == PTX_OP_ADD ? as_f32(S(0)) + as_f32(S(1))
                                             : as_f32(S(0)) - as_f32(S(1)));
        else if (type == PTX_T_F64 && !in->flags && NEAREST(in))
          D(0) = of_f64(in->op == PTX_OP_ADD ? as_f64(S(0)) + as_f64(S(1))
                                             : as_f64(S(0)) - as_f64(S(1)));
        else
          D(0) = float_op(in, in->op == PTX_OP_ADD ? PTX_FOP_ADD : PTX_FOP_SUB,
                          S(0), S(1), 0);
      } else if (in->flags & PTX_F_SAT) {
        int64_t x = sext(S(0), 32), y = sext(S(1), 32);
        int64_t s = in->op == PTX_OP_ADD ? x + y : x - y;
        D(0) = mask_bits((uint64_t)(s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s), 32);
      } else {
        uint64_t a = mask_bits(S(0), bits), b = mask_bits(S(1), bits);
        uint64_t s = in->op == PTX_OP_ADD ? a + b : a - b;
        if (in->flags & PTX_F_CC)
          t->carry = in->op == PTX_OP_ADD ? (bits == 64 ? s < a : (s >> bits) & 1)
                                          : a < b; /* borrow */
        D(0) = mask_bits(s, bits);
      }
      break;
    case PTX_OP_ADDC:
    case PTX_OP_SUBC: {
      uint64_t a = mask_bits(S(0), bits), b = mask_bits(S(1), bits), c = t->carry;
      uint64_t s = in->op == PTX_OP_ADDC ? a + b + c : a - b - c;
      if (in->flags & PTX_F_CC)
        t->carry = in->op == PTX_OP_ADDC
                       ? (bits == 64 ? (s < a || (c && s == a)) : (s >> bits) & 1)
                       : (a < b || (c && a == b));
      D(0) = mask_bits(s, bits);
      break;
    }
    case PTX_OP_MUL:
    case PTX_OP_MAD:
    case PTX_OP_MADC:
    case PTX_OP_MUL24:
    case PTX_OP_MAD24:
      if (kind == 'f') {
        if (in->op == PTX_OP_MUL)
          D(0) = type == PTX_T_F32 && !in->flags && NEAREST(in)
                     ? of_f32(as_f32(S(0)) * as_f32(S(1)))
                     : float_op(in, PTX_FOP_MUL, S(0), S(1), 0);
        else
          D(0) = float_op(in, PTX_FOP_FMA, S(0), S(1), S(2));
      } else {
        uint64_t a = S(0), b = S(1), p;
        bool sgn = kind == 's';
        if (in->op == PTX_OP_MUL24 || in->op == PTX_OP_MAD24) {
          a = sgn ? (uint64_t)sext(a, 24) : mask_bits(a, 24);
          b = sgn ? (uint64_t)sext(b, 24) : mask_bits(b, 24);
        }
        if (in->flags & PTX_F_WIDE) {
          p = sgn ? (uint64_t)(sext(a, bits) * sext(b, bits))
                  : mask_bits(a, bits) * mask_bits(b, bits);
          if (bits == 64) {
            FAULT(PTX_LAUNCH_FAILED, "mul.wide of 64-bit operands");
            goto out;
          }
          if (in->op == PTX_OP_MAD)
            p += S(2);
          D(0) = mask_bits(p, 2 * bits);
        } else if (in->flags & PTX_F_HI) {
          __int128 x = sgn ? (__int128)sext(a, bits) : (__int128)mask_bits(a, bits);
          __int128 y = sgn ? (__int128)sext(b, bits) : (__int128)mask_bits(b, bits);
          if (in->op == PTX_OP_MUL24 || in->op == PTX_OP_MAD24)
            p = (uint64_t)((x * y) >> 16);
          else
            p = (uint64_t)((x * y) >> bits);
          if (in->op == PTX_OP_MAD || in->op == PTX_OP_MADC)
            p = mad_add(t, in, p, S(2), bits);
          else if (in->op == PTX_OP_MAD24)
            p += S(2);
          D(0) = mask_bits(p, bits);
        } else {
          p = a * b;
          if (in->op == PTX_OP_MAD || in->op == PTX_OP_MADC)
            p = mad_add(t, in, p, S(2), bits);
          else if (in->op == PTX_OP_MAD24)
            p += S(2);
          D(0) = mask_bits(p, bits);
        }
      }
      break;
    case PTX_OP_SAD: {
      uint64_t x = kind == 's' ? (uint64_t)sext(S(0), bits) : mask_bits(S(0), bits);
      uint64_t y = kind == 's' ? (uint64_t)sext(S(1), bits) : mask_bits(S(1), bits);
      bool greater = kind == 's' ? (int64_t)x > (int64_t)y : x > y;
      D(0) = mask_bits((greater ? x - y : y - x) + S(2), bits);
      break;
    }
    case PTX_OP_FMA:
      if (type == PTX_T_F32 && !in->flags && NEAREST(in))
        D(0) = of_f32(fmaf(as_f32(S(0)), as_f32(S(1)), as_f32(S(2))));
      else if (type == PTX_T_F64 && !in->flags && NEAREST(in))
        D(0) = of_f64(fma(as_f64(S(0)), as_f64(S(1)), as_f64(S(2))));
      else
        D(0) = float_op(in, PTX_FOP_FMA, S(0), S(1), S(2));
      break;
    case PTX_OP_DIV:
    case PTX_OP_REM:
      if (kind == 'f') {
        D(0) = float_op(in, PTX_FOP_DIV, S(0), S(1), 0);
      } else if (kind == 's') {
        int64_t x = sext(S(0), bits), y = sext(S(1), bits);
        /* division by zero gives what the GPU gives: all ones (div),
         * the dividend (rem); no trap */
        int64_t q = y == 0 ? -1 : (y == -1 ? (int64_t)(0 - (uint64_t)x) : x / y);
        int64_t m = y == 0 ? x : (y == -1 ? 0 : x % y);
        D(0) = mask_bits((uint64_t)(in->op == PTX_OP_DIV ? q : m), bits);
      } else {
        uint64_t x = mask_bits(S(0), bits), y = mask_bits(S(1), bits);
        uint64_t q = y ? x / y : mask_bits(UINT64_MAX, bits), m = y ? x % y : x;
        D(0) = in->op == PTX_OP_DIV ? q : m;
      }
      break;
    case PTX_OP_ABS:
    case PTX_OP_NEG:
      if (kind == 'f') {
        if (type == PTX_T_F32 && !in->flags)
          D(0) = in->op == PTX_OP_NEG ? (S(0) ^ 0x80000000u) & 0xffffffffu
                                      : S(0) & 0x7fffffffu;
        else if (type == PTX_T_F64)
          D(0) = in->op == PTX_OP_NEG ? S(0) ^ ((uint64_t)1 << 63)
                                      : S(0) & ~((uint64_t)1 << 63);
        else
          D(0) = float_op(in, 0, S(0), 0, 0);
      } else {
        int64_t x = sext(S(0), bits);
        uint64_t u = (uint64_t)x; /* negated unsigned: -INT64_MIN too */
        D(0) = mask_bits(in->op == PTX_OP_NEG || x < 0 ? 0 - u : u, bits);
      }
      break;
    case PTX_OP_MIN:
    case PTX_OP_MAX:
      if (kind == 'f') {
        D(0) = float_op(in, 0, S(0), S(1), 0);
      } else {
        bool max = in->op == PTX_OP_MAX;
        bool less = kind == 's' ? sext(S(0), bits) < sext(S(1), bits)
                                : mask_bits(S(0), bits) < mask_bits(S(1), bits);
        D(0) = mask_bits(less != max ? S(0) : S(1), bits);
      }
      break;
    case PTX_OP_COPYSIGN:
      D(0) = float_op(in, 0, S(0), S(1), 0);
      break;
    case PTX_OP_POPC:
      D(0) = (uint64_t)__builtin_popcountll(mask_bits(S(0), bits));
      break;
    case PTX_OP_CLZ: {
      uint64_t v = mask_bits(S(0), bits);
      D(0) = v ? (uint64_t)(__builtin_clzll(v) - (64 - bits)) : (uint64_t)bits;
      break;
    }
    case PTX_OP_BFIND: {
      uint64_t v = kind == 's' && sext(S(0), bits) < 0 ? ~S(0) : S(0);
      v = mask_bits(v, bits);
      uint64_t pos = v ? (uint64_t)(63 - __builtin_clzll(v)) : 0xffffffffu;
      if (v && (in->flags & PTX_F_SHIFTAMT))
        pos = (uint64_t)(bits - 1) - pos;
      D(0) = pos & 0xffffffffu;
      break;
    }
    case PTX_OP_BREV: {
      uint64_t v = mask_bits(S(0), bits), o = 0;
      for (int i = 0; i < bits; i++)
        o |= (v >> i & 1) << (bits - 1 - i);
      D(0) = o;
      break;
    }
    case PTX_OP_BFE: {
      unsigned pos = (unsigned)S(1) & 0xff, len = (unsigned)S(2) & 0xff;
      uint64_t v = mask_bits(S(0), bits), o = 0;
      bool sbit = kind == 's' && len && ((v >> (pos + len - 1 < (unsigned)bits
                                                    ? pos + len - 1
                                                    : (unsigned)bits - 1)) & 1);
      for (unsigned i = 0; i < (unsigned)bits; i++) {
        uint64_t b = i < len ? (pos + i < (unsigned)bits ? v >> (pos + i) & 1 : (uint64_t)sbit)
                             : (uint64_t)sbit;
        if (kind != 's' && i >= len)
          b = 0;
        o |= b << i;
      }
      D(0) = o;
      break;
    }
    case PTX_OP_BFI: {
      unsigned pos = (unsigned)S(2) & 0xff, len = (unsigned)S(3) & 0xff;
      uint64_t a = S(0), o = mask_bits(S(1), bits);
      for (unsigned i = 0; i < len && pos + i < (unsigned)bits; i++)
        o = (o & ~((uint64_t)1 << (pos + i))) | ((a >> i & 1) << (pos + i));
      D(0) = o;
      break;
    }
    case PTX_OP_PRMT:
      D(0) = prmt((uint32_t)S(0), (uint32_t)S(1), (uint32_t)S(2));
      break;
    case PTX_OP_SHF: {
      uint64_t v = (uint64_t)(uint32_t)S(1) << 32 | (uint32_t)S(0);
      unsigned n = (unsigned)S(2);
      n = (in->flags & PTX_F_CLAMP) ? (n > 32 ? 32 : n) : n & 31;
      D(0) = (in->flags & PTX_F_LEFT) ? (uint32_t)((v << n) >> 32)
                                      : (uint32_t)(v >> n);
      break;
    }
    case PTX_OP_SHL: {
      uint64_t n = mask_bits(S(1), 32);
      D(0) = n >= (uint64_t)bits ? 0 : mask_bits(S(0) << n, bits);
      break;
    }
    case PTX_OP_SHR: {
      uint64_t n = mask_bits(S(1), 32);
      if (kind == 's')
        D(0) = mask_bits((uint64_t)(sext(S(0), bits) >> (n >= (uint64_t)bits ? bits - 1 : (int)n)), bits);
      else
        D(0) = n >= (uint64_t)bits ? 0 : mask_bits(S(0), bits) >> n;
      break;
    }
    case PTX_OP_AND: D(0) = mask_bits(S(0) & S(1), bits); break;
    case PTX_OP_OR: D(0) = mask_bits(S(0) | S(1), bits); break;
    case PTX_OP_XOR: D(0) = mask_bits(S(0) ^ S(1), bits); break;
    case PTX_OP_NOT: D(0) = mask_bits(~S(0), bits); break;
    case PTX_OP_CNOT: D(0) = mask_bits(S(0), bits) == 0; break;
    case PTX_OP_LOP3: D(0) = mask_bits(lop3(S(0), S(1), S(2), (unsigned)S(3)), bits); break;
    case PTX_OP_TESTP: {
      double x = fget(type, S(0));
      bool v;
      switch (in->sub) {
      case PTX_TEST_FINITE: v = isfinite(x); break;
      case PTX_TEST_INFINITE: v = isinf(x); break;
      case PTX_TEST_NUMBER: v = !isnan(x); break;
      case PTX_TEST_NAN: v = isnan(x); break;
      case PTX_TEST_NORMAL: v = fpclassify((type == PTX_T_F32) ? (float)x : x) == FP_NORMAL; break;
      default: v = fpclassify((type == PTX_T_F32) ? (float)x : x) == FP_SUBNORMAL; break;
      }
      D(0) = v;
      break;
    }
    case PTX_OP_RCP: case PTX_OP_SQRT: case PTX_OP_RSQRT: case PTX_OP_SIN:
    case PTX_OP_COS: case PTX_OP_LG2: case PTX_OP_EX2: case PTX_OP_TANH: {
      int fop = in->op == PTX_OP_RCP ? PTX_FOP_RCP
                : in->op == PTX_OP_SQRT ? PTX_FOP_SQRT
                : in->op == PTX_OP_RSQRT ? PTX_FOP_RSQRT
                : in->op == PTX_OP_SIN ? PTX_FOP_SIN
                : in->op == PTX_OP_COS ? PTX_FOP_COS
                : in->op == PTX_OP_LG2 ? PTX_FOP_LG2
                : in->op == PTX_OP_EX2 ? PTX_FOP_EX2 : PTX_FOP_TANH;
      D(0) = float_op(in, fop, S(0), 0, 0);
      break;
    }
    case PTX_OP_SETP: {
      bool p = compare(in, type, S(0), S(1));
      D(0) = combine(in, p, in->nsrc > 2 ? S(2) : 0);
      if (in->dst[1] >= 0)
        D(1) = combine(in, !p, in->nsrc > 2 ? S(2) : 0);
      break;
    }
    case PTX_OP_SET: {
      bool p = combine(in, compare(in, in->type2, S(0), S(1)), in->nsrc > 2 ? S(2) : 0);
      D(0) = kind == 'f' ? fput(type, p ? 1.0 : 0.0, PTX_RN) : (p ? mask_bits(UINT64_MAX, bits) : 0);
      break;
    }
    case PTX_OP_SELP: D(0) = (S(2) & 1) ? S(0) : S(1); break;
    case PTX_OP_SLCT: {
      bool ge = ptx_type_kind[in->type2] == 'f' ? as_f32(S(2)) >= 0.0f
                                               : sext(S(2), 32) >= 0;
      D(0) = ge ? S(0) : S(1);
      break;
    }
    case PTX_OP_MOV: D(0) = S(0); break;
    case PTX_OP_PACK: {
      int w = bits / in->vec;
      uint64_t v = 0;
      for (int i = in->vec - 1; i >= 0; i--)
        v = (w == 64 ? 0 : v << w) | mask_bits(S(i), w);
      D(0) = v;
      break;
    }
    case PTX_OP_UNPACK: {
      int w = bits / in->vec;
      uint64_t v = S(0);
      for (int i = 0; i < in->vec; i++)
        D(i) = mask_bits(v >> (w * i), w);
      break;
    }
    case PTX_OP_CVT:
      D(0) = convert(in, S(0), in->nsrc > 1 ? S(1) : 0);
      break;
    case PTX_OP_CVTA: {
      uint64_t a = S(0), win = in->space == PTX_SHARED ? PTX_SHARED_WINDOW
                              : in->space == PTX_LOCAL ? PTX_LOCAL_WINDOW : 0;
      if (in->space == PTX_PARAM) {
        FAULT(PTX_LAUNCH_FAILED, "cvta.param is not supported");
        goto out;
      }
      if (in->flags & PTX_F_TO)
        D(0) = win && a >= win && a < win + PTX_WINDOW_SIZE ? a - win
               : win ? a /* not this space: the GPU gives garbage */ : a;
      else
        D(0) = a + win;
      if (bits == 32)
        D(0) = mask_bits(D(0), 32);
      break;
    }
    case PTX_OP_ISSPACEP: {
      uint64_t a = S(0);
      bool g = a >> 63, sh = a >= PTX_SHARED_WINDOW && a < PTX_SHARED_WINDOW + PTX_WINDOW_SIZE,
           lo = a >= PTX_LOCAL_WINDOW && a < PTX_LOCAL_WINDOW + PTX_WINDOW_SIZE;
      D(0) = in->space == PTX_GLOBAL ? g : in->space == PTX_SHARED ? sh
             : in->space == PTX_LOCAL ? lo : 0;
      break;
    }
    case PTX_OP_LD:
    case PTX_OP_LDU: {
      unsigned size = (unsigned)(bits / 8);
      const unsigned char *p = ptx_address(cta, t, in, in->space,
                                           S(0) + (uint64_t)in->offset,
                                           size * in->vec, false);
      if (!p) {
        result = PTX_FAULTED;
        goto out;
      }
      for (int i = 0; i < in->vec; i++)
        D(i) = load(p + size * (unsigned)i, type);
      break;
    }
    case PTX_OP_ST: {
      unsigned size = (unsigned)(bits / 8);
      unsigned char *p = ptx_address(cta, t, in, in->space,
                                     S(0) + (uint64_t)in->offset,
                                     size * in->vec, true);
      if (!p) {
        result = PTX_FAULTED;
        goto out;
      }
      for (int i = 0; i < in->vec; i++)
        memcpy(p + size * (unsigned)i, &S(1 + i), size);
      break;
    }
    case PTX_OP_ATOM:
    case PTX_OP_RED: {
      unsigned size = (unsigned)(bits / 8);
      uint64_t a = S(0) + (uint64_t)in->offset;
      int space = in->space;
      if (space == PTX_GENERIC && a >= PTX_SHARED_WINDOW &&
          a < PTX_SHARED_WINDOW + PTX_WINDOW_SIZE) {
        space = PTX_SHARED;
        a -= PTX_SHARED_WINDOW;
      }
      unsigned char *p;
      if (space == PTX_SHARED) {
        p = a + size <= cta->shared_size ? cta->shared + a : NULL;
        if (!p) {
          result = FAULT(PTX_ILLEGAL_ADDRESS,
                         "out-of-bounds atomic on shared memory at offset %llu "
                         "(%u bytes of shared memory)",
                         (unsigned long long)a, cta->shared_size);
          goto out;
        }
        if (a % size) {
          result = FAULT(PTX_MISALIGNED_ADDRESS, "misaligned atomic on shared memory");
          goto out;
        }
        ptx_shared_atomic(cta, a, size);
      } else {
        p = ptx_address(cta, t, in, space, a, size, true);
        if (!p) {
          result = PTX_FAULTED;
          goto out;
        }
      }
      uint64_t old = atomic(in, p, S(1), in->nsrc > 2 ? S(2) : 0);
      if (in->op == PTX_OP_ATOM)
        D(0) = mask_bits(old, bits);
      break;
    }
    case PTX_OP_BRA:
      pc = (uint32_t)in->target;
      if (cta->max_insns && cta->insns + executed > cta->max_insns) {
        result = FAULT(PTX_TOO_MANY_INSNS,
                       "more than %llu instructions (RAF_FAKE_CUDA_MAX_INSNS)",
                       (unsigned long long)cta->max_insns);
        goto out;
      }
      break;
    case PTX_OP_CALL: {
      const ptx_function *callee = f->fn->module->fns[in->target];
      if (t->depth + 1 == PTX_MAX_DEPTH) {
        result = FAULT(PTX_LAUNCH_FAILED, "calls nested deeper than %d", PTX_MAX_DEPTH);
        goto out;
      }
      f->pc = pc;
      ptx_frame *nf = &t->frames[t->depth + 1];
      if (ptx_frame_start(cta, t, nf, callee, NULL) != PTX_OK) {
        result = FAULT(PTX_OUT_OF_MEMORY, "out of host memory for a call");
        goto out;
      }
      nf->call = in;
      for (int i = 0; i < in->nsrc && i < callee->nparams; i++)
        memcpy(nf->params + callee->params[i].offset,
               f->params + (S(i) - PTX_FRAME_PARAM), callee->params[i].size);
      t->depth++;
      f = nf;
      r = f->regs;
      code = callee->code;
      pc = 0;
      break;
    }
    case PTX_OP_RET:
      if (t->depth == 0) {
        result = PTX_EXITED;
        goto out;
      }
      {
        ptx_frame *caller = &t->frames[t->depth - 1];
        const ptx_insn *call = f->call;
        if (call->ndst && f->fn->nrets)
          memcpy(caller->params + (caller->regs[call->dst[0]] - PTX_FRAME_PARAM),
                 f->params + f->fn->rets[0].offset, f->fn->rets[0].size);
        frame_end(t, f);
        t->depth--;
        f = caller;
        r = f->regs;
        code = f->fn->code;
        pc = f->pc;
      }
      break;
    case PTX_OP_EXIT:
      result = PTX_EXITED;
      goto out;
    case PTX_OP_TRAP:
      result = FAULT(PTX_LAUNCH_FAILED, "trap");
      goto out;
    case PTX_OP_BAR:
    case PTX_OP_BARRIER:
      if (in->flags & PTX_F_ARRIVE) {
        cta->arrivals[S(0) & 15]++;
        break;
      }
      t->wait = in;
      t->wait_a = in->nsrc ? S(0) & 15 : 0;
      /* bar.red's predicate is its last operand, after the count */
      t->wait_b = in->nsrc > 1 + !!(in->flags & PTX_F_RED) ? S(1) : 0;
      if (in->flags & PTX_F_RED)
        t->wait_c = ((S(in->nsrc - 1) & 1) != 0) !=
                    ((in->flags & PTX_F_NEG_C) != 0);
      result = PTX_AT_BARRIER;
      goto out;
    case PTX_OP_SHFL:
      t->wait = in;
      t->wait_a = S(0);
      t->wait_b = S(1);
      t->wait_c = S(2);
      t->wait_mask = in->nsrc > 3 ? S(3) : 0xffffffffu;
      result = PTX_AT_WARP;
      goto out;
    case PTX_OP_VOTE:
      t->wait = in;
      t->wait_a = ((S(0) & 1) != 0) != ((in->flags & PTX_F_NEG_C) != 0);
      t->wait_mask = in->nsrc > 1 ? S(1) : 0xffffffffu;
      result = PTX_AT_WARP;
      goto out;
    case PTX_OP_BARWARP:
      t->wait = in;
      t->wait_mask = in->nsrc ? S(0) : 0xffffffffu;
      result = PTX_AT_WARP;
      goto out;
    case PTX_OP_ACTIVEMASK: {
      /* the lanes of the warp that have not exited */
      uint64_t m = 0;
      for (unsigned i = 0; i < 32; i++) {
        unsigned id = t->warp * 32 + i;
        if (id < cta->nthreads && cta->threads[id].state != PTX_EXITED)
          m |= (uint64_t)1 << i;
      }
      D(0) = m;
      break;
    }
    case PTX_OP_DP4A:
    case PTX_OP_DP2A: {
      int64_t acc = ptx_type_kind[in->type2] == 's' ? sext(S(2), 32) : (int64_t)(uint32_t)S(2);
      uint32_t a = (uint32_t)S(0), b = (uint32_t)S(1);
      bool sa = kind == 's', sb = ptx_type_kind[in->type2] == 's';
      if (in->op == PTX_OP_DP4A) {
        for (int i = 0; i < 4; i++) {
          int64_t x = sa ? sext(a >> (8 * i), 8) : (a >> (8 * i) & 0xff);
          int64_t y = sb ? sext(b >> (8 * i), 8) : (b >> (8 * i) & 0xff);
          acc += x * y;
        }
      } else {
        int base = (in->flags & PTX_F_HI) ? 2 : 0;
        for (int i = 0; i < 2; i++) {
          int64_t x = sa ? sext(a >> (16 * i), 16) : (a >> (16 * i) & 0xffff);
          int64_t y = sb ? sext(b >> (8 * (base + i)), 8) : (b >> (8 * (base + i)) & 0xff);
          acc += x * y;
        }
      }
      D(0) = mask_bits((uint64_t)acc, 32);
      break;
    }
    case PTX_OP_MEMBAR: case PTX_OP_FENCE: case PTX_OP_PREFETCH:
    case PTX_OP_PREFETCHU: case PTX_OP_NANOSLEEP: case PTX_OP_PMEVENT:
      break;
    default:
      result = FAULT(PTX_LAUNCH_FAILED, "instruction not implemented");
      goto out;
    }
  }
out:
  f->pc = pc;
  cta->insns += executed;
  if (result == PTX_EXITED)
    while (t->depth >= 0) {
      frame_end(t, &t->frames[t->depth]);
      if (t->depth == 0)
        break;
      t->depth--;
    }
  return result;
}
