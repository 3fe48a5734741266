/* lower_ops.c: scalar LLVM IR for each op, and the loads, stores and
 * conversions of every dtype (see lower.h for the numerics).
 *
 * Each elementwise op's float math is its row of lang/scalar.def, expanded
 * here into builder calls, as cpu-ref expands it into C: operation by
 * operation and in the same order (no contraction into FMAs, no fast-math
 * flags), so that elementwise results are bit-identical to cpu-ref's. exp,
 * log, tanh, erf, cos, sin and pow call the math library (libm's expf/exp
 * on the host, libdevice's __nv_expf/__nv_exp on NVPTX). The integer forms
 * of the NUMBERS ops are the machine's wrapping operations, written below
 * the table's expansion.
 *
 * Conversions follow runtime/elem.c: floats to integers truncate toward
 * zero with NaN 0 and saturation (llvm.fptosi.sat.i64, then wrapped to the
 * width); integers to floats go through double; f16 and bf16 round from
 * float to nearest even (bf16 by its bits, as raf_float_to_bf16).
 */
#include "codegen/lower.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cg_fail(cg_emitter *e, const char *fmt, ...) {
  if (e->failed)
    return;
  e->failed = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->why, sizeof e->why, fmt, ap);
  va_end(ap);
}

static bool is_unsigned(raf_dtype dt) { return dt == RAF_U8; }

raf_dtype cg_work_dtype(raf_dtype dt) {
  return dt == RAF_F64 ? RAF_F64 : RAF_F32;
}

LLVMTypeRef cg_compute_type(cg_emitter *e, raf_dtype dt) {
  switch (dt) {
  case RAF_F64: return e->f64;
  case RAF_F32:
  case RAF_F16:
  case RAF_BF16: return e->f32;
  case RAF_I64: return e->i64;
  case RAF_I32: return e->i32;
  case RAF_I8:
  case RAF_U8: return e->i8;
  default: return e->i1;
  }
}

LLVMTypeRef cg_storage_type(cg_emitter *e, raf_dtype dt) {
  switch (dt) {
  case RAF_F16: return e->f16;
  case RAF_BF16: return e->i16;
  case RAF_BOOL: return e->i8;
  default: return cg_compute_type(e, dt);
  }
}

/* ---- Loads, stores, rounding ---------------------------------------------- */

static LLVMValueRef i32c(cg_emitter *e, uint64_t v) {
  return LLVMConstInt(e->i32, v, false);
}

static LLVMValueRef round_bf16(cg_emitter *e, LLVMValueRef v) {
  LLVMBuilderRef B = e->B;
  LLVMValueRef bits = LLVMBuildBitCast(B, v, e->i32, "");
  LLVMValueRef mag = LLVMBuildAnd(B, bits, i32c(e, 0x7fffffff), "");
  LLVMValueRef nan = LLVMBuildICmp(B, LLVMIntUGT, mag, i32c(e, 0x7f800000), "");
  LLVMValueRef lsb = LLVMBuildAnd(B, LLVMBuildLShr(B, bits, i32c(e, 16), ""),
                                  i32c(e, 1), "");
  LLVMValueRef r = LLVMBuildAdd(B, bits,
                                LLVMBuildAdd(B, lsb, i32c(e, 0x7fff), ""), "");
  r = LLVMBuildAnd(B, r, i32c(e, 0xffff0000u), "");
  LLVMValueRef q = LLVMBuildOr(
      B, LLVMBuildAnd(B, bits, i32c(e, 0xffff0000u), ""), i32c(e, 0x400000),
      "");
  return LLVMBuildBitCast(B, LLVMBuildSelect(B, nan, q, r, ""), e->f32, "");
}

LLVMValueRef cg_round(cg_emitter *e, raf_dtype dt, LLVMValueRef v) {
  if (dt == RAF_F16)
    return LLVMBuildFPExt(e->B, LLVMBuildFPTrunc(e->B, v, e->f16, ""), e->f32,
                          "");
  if (dt == RAF_BF16)
    return round_bf16(e, v);
  return v;
}

static LLVMValueRef gep(cg_emitter *e, LLVMTypeRef t, LLVMValueRef base,
                        LLVMValueRef off) {
  return LLVMBuildInBoundsGEP2(e->B, t, base, &off, 1, "");
}

LLVMValueRef cg_load(cg_emitter *e, LLVMValueRef base, LLVMValueRef off,
                     raf_dtype dt) {
  LLVMTypeRef st = cg_storage_type(e, dt);
  LLVMValueRef v = LLVMBuildLoad2(e->B, st, gep(e, st, base, off), "");
  LLVMSetAlignment(v, (unsigned)raf_dtype_size(dt));
  switch (dt) {
  case RAF_F16:
    return LLVMBuildFPExt(e->B, v, e->f32, "");
  case RAF_BF16:
    v = LLVMBuildShl(e->B, LLVMBuildZExt(e->B, v, e->i32, ""), i32c(e, 16),
                     "");
    return LLVMBuildBitCast(e->B, v, e->f32, "");
  case RAF_BOOL:
    return LLVMBuildICmp(e->B, LLVMIntNE, v, LLVMConstInt(e->i8, 0, false),
                         "");
  default:
    return v;
  }
}

void cg_store(cg_emitter *e, LLVMValueRef base, LLVMValueRef off,
              raf_dtype dt, LLVMValueRef v) {
  LLVMTypeRef st = cg_storage_type(e, dt);
  switch (dt) {
  case RAF_F16:
    v = LLVMBuildFPTrunc(e->B, v, e->f16, "");
    break;
  case RAF_BF16:
    v = LLVMBuildBitCast(e->B, round_bf16(e, v), e->i32, "");
    v = LLVMBuildTrunc(e->B, LLVMBuildLShr(e->B, v, i32c(e, 16), ""), e->i16,
                       "");
    break;
  case RAF_BOOL:
    v = LLVMBuildZExt(e->B, v, e->i8, "");
    break;
  default:
    break;
  }
  LLVMValueRef s = LLVMBuildStore(e->B, v, gep(e, st, base, off));
  LLVMSetAlignment(s, (unsigned)raf_dtype_size(dt));
}

LLVMValueRef cg_const(cg_emitter *e, raf_dtype dt, double v) {
  LLVMTypeRef t = cg_compute_type(e, dt);
  if (raf_dtype_is_float(dt))
    return LLVMConstReal(t, v);
  if (dt == RAF_BOOL)
    return LLVMConstInt(t, v != 0, false);
  return LLVMConstInt(t, (unsigned long long)(long long)v, true);
}

/* ---- Conversions ---------------------------------------------------------- */

LLVMValueRef cg_to_f64(cg_emitter *e, LLVMValueRef v) {
  return LLVMTypeOf(v) == e->f64 ? v : LLVMBuildFPExt(e->B, v, e->f64, "");
}

LLVMValueRef cg_from_f64(cg_emitter *e, LLVMValueRef v, raf_dtype w) {
  return w == RAF_F64 ? v : LLVMBuildFPTrunc(e->B, v, e->f32, "");
}

/* An int64 as dtype `to`: wrapped to the width, to bool != 0, to floats
 * through double. */
static LLVMValueRef from_i64(cg_emitter *e, LLVMValueRef v, raf_dtype to) {
  LLVMBuilderRef B = e->B;
  if (to == RAF_BOOL)
    return LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstInt(e->i64, 0, false), "");
  if (!raf_dtype_is_float(to))
    return LLVMBuildTrunc(B, v, cg_compute_type(e, to), "");
  return NULL;
}

LLVMValueRef cg_convert(cg_emitter *e, LLVMValueRef v, raf_dtype from,
                        raf_dtype to) {
  LLVMBuilderRef B = e->B;
  if (from == to)
    return v;
  bool ffrom = raf_dtype_is_float(from), fto = raf_dtype_is_float(to);
  if (to == RAF_BOOL) {
    if (ffrom)
      return LLVMBuildFCmp(B, LLVMRealUNE, v,
                           LLVMConstReal(LLVMTypeOf(v), 0), "");
    return LLVMBuildICmp(B, LLVMIntNE, v, LLVMConstInt(LLVMTypeOf(v), 0, 0),
                         "");
  }
  if (from == RAF_BOOL) {
    if (fto)
      return LLVMBuildSelect(B, v, cg_const(e, to, 1), cg_const(e, to, 0), "");
    return LLVMBuildZExt(B, v, cg_compute_type(e, to), "");
  }
  if (!ffrom) { /* integers: to int64 first (sign or zero extended) */
    LLVMValueRef w =
        LLVMTypeOf(v) == e->i64
            ? v
            : is_unsigned(from) ? LLVMBuildZExt(B, v, e->i64, "")
                                : LLVMBuildSExt(B, v, e->i64, "");
    if (!fto)
      return from_i64(e, w, to);
    LLVMValueRef d = is_unsigned(from) ? LLVMBuildUIToFP(B, w, e->f64, "")
                                       : LLVMBuildSIToFP(B, w, e->f64, "");
    return cg_round(e, to, cg_from_f64(e, d, cg_work_dtype(to)));
  }
  if (!fto) { /* floats to integers: truncate, saturate, NaN 0 */
    LLVMValueRef d = cg_to_f64(e, v);
    LLVMTypeRef tys[2] = {e->i64, e->f64};
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(
        e->M, LLVMLookupIntrinsicID("llvm.fptosi.sat", 15), tys, 2);
    LLVMTypeRef ft = LLVMIntrinsicGetType(
        e->C, LLVMLookupIntrinsicID("llvm.fptosi.sat", 15), tys, 2);
    return from_i64(e, LLVMBuildCall2(B, ft, f, &d, 1, ""), to);
  }
  /* float to float: widening is exact; narrowing goes through float */
  if (to == RAF_F64)
    return cg_to_f64(e, v);
  if (LLVMTypeOf(v) == e->f64)
    v = LLVMBuildFPTrunc(B, v, e->f32, "");
  return cg_round(e, to, v);
}

/* ---- Calls ---------------------------------------------------------------- */

LLVMValueRef cg_intrinsic(cg_emitter *e, const char *name, LLVMTypeRef type,
                          LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(e->M, id, &type, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(e->C, id, &type, 1);
  return LLVMBuildCall2(e->B, ft, f, args, (unsigned)nargs, "");
}

static void add_fn_attr(cg_emitter *e, LLVMValueRef f, const char *name,
                        uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(e->C, kind, val));
}

/* The lanes of libmvec's variants for the ISA: f32 in 256 or 512 bits. */
static int lanes(char isa, bool f32) {
  int bits = isa == 'e' ? 512 : 256;
  return bits / (f32 ? 32 : 64);
}

/* raf_<fn>: lane 0 of libmvec's variant on a splat of the arguments. */
static LLVMValueRef vector_wrapper(cg_emitter *e, const char *fn, bool f32,
                                   int nargs, char *attr, size_t attr_size) {
  char scalar[32], vec[64], wrapper[64];
  int n = lanes(e->vec_isa, f32);
  snprintf(scalar, sizeof scalar, "%s%s", fn, f32 ? "f" : "");
  snprintf(vec, sizeof vec, "_ZGV%cN%d%s_%s", e->vec_isa, n,
           nargs == 2 ? "vv" : "v", scalar);
  snprintf(wrapper, sizeof wrapper, "raf_%s", scalar);
  snprintf(attr, attr_size, "_ZGV%cN%d%s_%s(%s)", e->vec_isa, n,
           nargs == 2 ? "vv" : "v", wrapper, vec);
  LLVMValueRef w = LLVMGetNamedFunction(e->M, wrapper);
  if (w)
    return w;
  LLVMTypeRef t = f32 ? e->f32 : e->f64, vt = LLVMVectorType(t, (unsigned)n);
  LLVMTypeRef vparams[2] = {vt, vt}, params[2] = {t, t};
  LLVMTypeRef vft = LLVMFunctionType(vt, vparams, (unsigned)nargs, false);
  LLVMValueRef v = LLVMGetNamedFunction(e->M, vec);
  if (!v) {
    v = LLVMAddFunction(e->M, vec, vft);
    add_fn_attr(e, v, "nounwind", 0);
    add_fn_attr(e, v, "willreturn", 0);
    add_fn_attr(e, v, "memory", 0);
  }
  w = LLVMAddFunction(e->M, wrapper,
                      LLVMFunctionType(t, params, (unsigned)nargs, false));
  LLVMSetLinkage(w, LLVMInternalLinkage);
  add_fn_attr(e, w, "nounwind", 0);
  add_fn_attr(e, w, "willreturn", 0);
  add_fn_attr(e, w, "memory", 0);
  add_fn_attr(e, w, "noinline", 0);
  LLVMBuilderRef B = LLVMCreateBuilderInContext(e->C);
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(e->C, w, "entry"));
  LLVMValueRef args[2];
  for (int i = 0; i < nargs; i++) {
    LLVMValueRef one = LLVMBuildInsertElement(
        B, LLVMGetPoison(vt), LLVMGetParam(w, (unsigned)i),
        LLVMConstInt(e->i32, 0, false), "");
    args[i] = LLVMBuildShuffleVector(B, one, LLVMGetPoison(vt),
                                     LLVMConstNull(LLVMVectorType(e->i32,
                                                                  (unsigned)n)),
                                     "");
  }
  LLVMValueRef r = LLVMBuildCall2(B, vft, v, args, (unsigned)nargs, "");
  LLVMBuildRet(B, LLVMBuildExtractElement(B, r, LLVMConstInt(e->i32, 0, 0),
                                          ""));
  LLVMDisposeBuilder(B);
  return w;
}

LLVMValueRef cg_math(cg_emitter *e, const char *fn, raf_dtype w,
                     LLVMValueRef x, LLVMValueRef y) {
  if (e->vec_isa) {
    char attr[256];
    bool f32 = w != RAF_F64;
    int n = y ? 2 : 1;
    LLVMValueRef f = vector_wrapper(e, fn, f32, n, attr, sizeof attr);
    LLVMValueRef args[2] = {x, y};
    LLVMValueRef c =
        LLVMBuildCall2(e->B, LLVMGlobalGetValueType(f), f, args, (unsigned)n,
                       "");
    LLVMAddCallSiteAttribute(
        c, LLVMAttributeFunctionIndex,
        LLVMCreateStringAttribute(e->C, "vector-function-abi-variant", 27,
                                  attr, (unsigned)strlen(attr)));
    return c;
  }
  char name[64];
  bool f32 = w != RAF_F64;
  snprintf(name, sizeof name, "%s%s%s", e->target == CG_NVPTX ? "__nv_" : "",
           fn, f32 ? "f" : "");
  LLVMTypeRef t = f32 ? e->f32 : e->f64;
  LLVMTypeRef params[2] = {t, t};
  int n = y ? 2 : 1;
  LLVMTypeRef ft = LLVMFunctionType(t, params, (unsigned)n, false);
  LLVMValueRef f = LLVMGetNamedFunction(e->M, name);
  if (!f) {
    f = LLVMAddFunction(e->M, name, ft);
    add_fn_attr(e, f, "nounwind", 0);
    add_fn_attr(e, f, "willreturn", 0);
    add_fn_attr(e, f, "memory", 0); /* memory(none) */
  }
  LLVMValueRef args[2] = {x, y};
  LLVMValueRef c = LLVMBuildCall2(e->B, ft, f, args, (unsigned)n, "");
  return c;
}

/* ---- Helpers of the ops ---------------------------------------------------- */

/* Records that s has no lowering for dtype dt; returns x to go on with. */
static LLVMValueRef fail_op(cg_emitter *e, const raf_stmt *s, raf_dtype dt,
                               LLVMValueRef x) {
  cg_fail(e, "no lowering of %s for %s", raf_op_table[s->op].name,
          raf_dtype_name(dt));
  return x;
}

LLVMValueRef cg_fadd_reassoc(cg_emitter *e, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef r = LLVMBuildFAdd(e->B, x, y, "");
  LLVMSetFastMathFlags(r, LLVMFastMathAllowReassoc);
  return r;
}

LLVMValueRef cg_max(cg_emitter *e, raf_dtype dt, LLVMValueRef x,
                    LLVMValueRef y, bool min) {
  LLVMValueRef args[2] = {x, y};
  LLVMTypeRef t = LLVMTypeOf(x);
  if (raf_dtype_is_float(dt))
    return cg_intrinsic(e, min ? "llvm.minimum" : "llvm.maximum", t, args, 2);
  const char *name = is_unsigned(dt) ? (min ? "llvm.umin" : "llvm.umax")
                                     : (min ? "llvm.smin" : "llvm.smax");
  return cg_intrinsic(e, name, t, args, 2);
}

/* ---- The formulas of lang/scalar.def ------------------------------------- */

/* The table's words as LLVM builder calls on the float working type t
 * (dtype w): the same IEEE operations, in the same nesting, as cpu-ref's
 * C expansion, so that the results are the same bits. Sibling operands may
 * be built in either order (C leaves it open); that changes no value. */
static LLVMValueRef intrinsic1(cg_emitter *e, const char *name,
                               LLVMValueRef a) {
  return cg_intrinsic(e, name, LLVMTypeOf(a), &a, 1);
}

#define X x
#define Y y
#define DY dy
#define K(c) LLVMConstReal(t, (c))
#define NEG(a) LLVMBuildFNeg(B, (a), "")
#define ADD(a, b) LLVMBuildFAdd(B, (a), (b), "")
#define SUB(a, b) LLVMBuildFSub(B, (a), (b), "")
#define MUL(a, b) LLVMBuildFMul(B, (a), (b), "")
#define DIV(a, b) LLVMBuildFDiv(B, (a), (b), "")
#define FABS(a) intrinsic1(e, "llvm.fabs", (a))
#define SQRT(a) intrinsic1(e, "llvm.sqrt", (a))
#define EXP(a) cg_math(e, "exp", w, (a), NULL)
#define LOG(a) cg_math(e, "log", w, (a), NULL)
#define TANH(a) cg_math(e, "tanh", w, (a), NULL)
#define ERF(a) cg_math(e, "erf", w, (a), NULL)
#define COS(a) cg_math(e, "cos", w, (a), NULL)
#define SIN(a) cg_math(e, "sin", w, (a), NULL)
#define POW(a, b) cg_math(e, "pow", w, (a), (b))
#define LT(a, b) LLVMBuildFCmp(B, LLVMRealOLT, (a), (b), "")
#define LE(a, b) LLVMBuildFCmp(B, LLVMRealOLE, (a), (b), "")
#define GT(a, b) LLVMBuildFCmp(B, LLVMRealOGT, (a), (b), "")
#define GE(a, b) LLVMBuildFCmp(B, LLVMRealOGE, (a), (b), "")
#define EQ(a, b) LLVMBuildFCmp(B, LLVMRealOEQ, (a), (b), "")
#define NE(a, b) LLVMBuildFCmp(B, LLVMRealUNE, (a), (b), "")
#define UNORDERED(a, b) LLVMBuildFCmp(B, LLVMRealUNO, (a), (b), "")
#define SELECT(c, a, b) LLVMBuildSelect(B, (c), (a), (b), "")
/* A C choice: only the chosen formula is built. */
#define IF_TANH(a, b) (tanh_approx ? (a) : (b))

#define UNARY(OP, f) case RAF_OP_##OP: return f;
#define BINARY(OP, f) case RAF_OP_##OP: return f;
#define COMPARE(OP, f) case RAF_OP_##OP: return f;
#define TEST(OP, f) case RAF_OP_##OP: return f;
#define BACKWARD(OP, f) case RAF_OP_##OP: return f;
#define NO_FORMULA(OP, why)

/* s's formula over float operands of work dtype w (x and y, or dy and x
 * for a backward operator); NULL when s's op has none. */
static LLVMValueRef formula(cg_emitter *e, const raf_stmt *s, raf_dtype w,
                            LLVMValueRef x, LLVMValueRef y, LLVMValueRef dy) {
  LLVMBuilderRef B = e->B;
  LLVMTypeRef t = w == RAF_F64 ? e->f64 : e->f32;
  const char *approx = raf_stmt_attr_str(s, "approximate");
  bool tanh_approx = approx && strcmp(approx, "tanh") == 0;
  (void)x, (void)y, (void)dy, (void)t, (void)B, (void)tanh_approx;
  switch (s->op) {
#include "lang/scalar.def"
  default: return NULL;
  }
}

#include "lang/scalar_end.h"

/* Which row of lang/scalar.def s's op has. */
typedef enum formula_kind {
  NONE_KIND,
  UNARY_KIND,
  BINARY_KIND,
  COMPARE_KIND,
  TEST_KIND,
  BACKWARD_KIND
} formula_kind;

static formula_kind kind_of(raf_opcode op) {
  switch (op) {
#define UNARY(OP, f) case RAF_OP_##OP: return UNARY_KIND;
#define BINARY(OP, f) case RAF_OP_##OP: return BINARY_KIND;
#define COMPARE(OP, f) case RAF_OP_##OP: return COMPARE_KIND;
#define TEST(OP, f) case RAF_OP_##OP: return TEST_KIND;
#define BACKWARD(OP, f) case RAF_OP_##OP: return BACKWARD_KIND;
#define NO_FORMULA(OP, why)
#include "lang/scalar.def"
#include "lang/scalar_end.h"
  default: return NONE_KIND;
  }
}

/* ---- Integers (lang/scalar.def, "Integers") ------------------------------- */

static LLVMValueRef int_unary(cg_emitter *e, raf_opcode op, raf_dtype dt,
                              LLVMValueRef x) {
  LLVMBuilderRef B = e->B;
  LLVMValueRef zero = LLVMConstInt(LLVMTypeOf(x), 0, false);
  switch (op) {
  case RAF_OP_NEG: return LLVMBuildSub(B, zero, x, "");
  case RAF_OP_ABS: {
    if (is_unsigned(dt))
      return x;
    LLVMValueRef args[2] = {x, LLVMConstInt(e->i1, 0, false)};
    return cg_intrinsic(e, "llvm.abs", LLVMTypeOf(x), args, 2);
  }
  case RAF_OP_RELU:
    if (is_unsigned(dt))
      return x;
    return LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, x, zero, ""), zero,
                           x, "");
  default: return NULL;
  }
}

static LLVMValueRef int_binary(cg_emitter *e, raf_opcode op, raf_dtype dt,
                               LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef B = e->B;
  switch (op) {
  case RAF_OP_ADD: return LLVMBuildAdd(B, x, y, "");
  case RAF_OP_SUB: return LLVMBuildSub(B, x, y, "");
  case RAF_OP_MUL: return LLVMBuildMul(B, x, y, "");
  case RAF_OP_MAXIMUM: return cg_max(e, dt, x, y, false);
  case RAF_OP_MINIMUM: return cg_max(e, dt, x, y, true);
  default: return NULL;
  }
}

/* Integers and bools compare by their signedness. */
static LLVMValueRef int_compare(cg_emitter *e, raf_opcode op, raf_dtype dt,
                                LLVMValueRef x, LLVMValueRef y) {
  bool u = is_unsigned(dt) || dt == RAF_BOOL;
  LLVMIntPredicate p;
  switch (op) {
  case RAF_OP_EQ: p = LLVMIntEQ; break;
  case RAF_OP_NE: p = LLVMIntNE; break;
  case RAF_OP_LT: p = u ? LLVMIntULT : LLVMIntSLT; break;
  case RAF_OP_LE: p = u ? LLVMIntULE : LLVMIntSLE; break;
  case RAF_OP_GT: p = u ? LLVMIntUGT : LLVMIntSGT; break;
  case RAF_OP_GE: p = u ? LLVMIntUGE : LLVMIntSGE; break;
  default: return NULL;
  }
  return LLVMBuildICmp(e->B, p, x, y, "");
}

/* ---- Ops ------------------------------------------------------------------ */

LLVMValueRef cg_elementwise(cg_emitter *e, const raf_stmt *s, raf_dtype odt,
                            raf_dtype dt, LLVMValueRef a, LLVMValueRef b) {
  formula_kind kind = kind_of(s->op);
  LLVMValueRef r = NULL;
  if (kind == BACKWARD_KIND) { /* in double, rounded once */
    r = formula(e, s, RAF_F64, cg_to_f64(e, b), NULL, cg_to_f64(e, a));
    return cg_round(e, dt, cg_from_f64(e, r, cg_work_dtype(dt)));
  }
  bool is_float = raf_dtype_is_float(odt);
  switch (kind) {
  case UNARY_KIND:
  case BINARY_KIND:
    r = is_float ? formula(e, s, cg_work_dtype(odt), a, b, NULL)
        : kind == UNARY_KIND ? int_unary(e, s->op, odt, a)
                             : int_binary(e, s->op, odt, a, b);
    return r ? cg_round(e, dt, r) : fail_op(e, s, odt, a);
  case COMPARE_KIND:
  case TEST_KIND:
    r = is_float ? formula(e, s, cg_work_dtype(odt), a, b, NULL)
                 : int_compare(e, s->op, odt, a, b);
    return r ? r : fail_op(e, s, odt, a);
  default: return fail_op(e, s, odt, a);
  }
}
