/* canonicalize.c: constant folding and algebraic simplification.
 *
 * The pass rewrites each statement into a simpler one that computes the
 * same value, and removes what the rewrites leave dead. The rewrites:
 *
 *  Constant folding. An elementwise op whose operands are all `constant`
 *  statements, and whose result has at most FOLD_LIMIT elements, becomes a
 *  constant: every op with a formula in lang/scalar.def (the unary,
 *  binary and backward ops, the comparisons and isfinite, with a bool
 *  result) and no attributes (gelu and gelu_grad stay for fuse's cuBLASLt
 *  epilogues), and cast. Operands broadcast NumPy style. Floats are computed
 *  in double, by the table's formulas, and rounded once to the result's
 *  element type (for f32 and below the runtime computes in float, so a
 *  folded constant may differ from the runtime's result in the last bit:
 *  the closer value of the two);
 *  integers are computed in int64 and folded only where that is exact: an
 *  overflow of the result type, a division with a remainder or by zero, a
 *  negative integer power, or a float cast to an integer that cannot hold
 *  it leaves the statement to run as written (wrapping is the runtime's
 *  business, not the folder's guess). Integer casts wrap, as NumPy's do.
 *  A result whose elements are all equal is stored as a splat. A reshape
 *  of a constant becomes a constant of the new type over the same data
 *  (constant data is never written once built, so sharing it is safe),
 *  whatever its size, since that costs nothing.
 *
 *  Identities.
 *    reshape(reshape(x))        -> reshape(x)
 *    reshape(x) to x's type     -> x
 *    transpose(transpose(x))    -> transpose(x) with the composed perm,
 *                                  or x when that is the identity
 *    transpose(x), identity perm-> x           (no perm: axes reversed)
 *    add(x, 0) add(0, x) sub(x, 0) mul(x, 1) mul(1, x) div(x, 1) -> x
 *                                  only when the result's type is x's
 *                                  (broadcasting would otherwise change
 *                                  the shape) and the constant is all
 *                                  zeros / ones (of either sign for zero:
 *                                  as XLA, the pass does not keep -0.0
 *                                  apart for the sake of x + 0.0)
 *    cast(x) to x's dtype       -> x
 *    neg(neg(x))                -> x
 *  stop_gradient is kept: it is an identity on values but not on
 *  gradients, and autodiff runs after this pass as often as before it.
 *
 * Order. The walk is forward, so a statement's operands have been
 * canonicalized when it is visited, and a rewrite of a statement is
 * re-examined on the spot (a reshape pulled past another reshape may now be
 * a reshape to its operand's type). One walk therefore usually reaches the
 * fixpoint; the pass still repeats the walk while anything changed, at most
 * max-iterations times (option, default 10; it must be at least 1), as a
 * guard for rewrites added later that look further than their operands.
 * After each walk the dead statements go (raf_erase_dead, shared with dce),
 * including ones that were dead before the pass.
 *
 * Statements that are simplified in place (a reshape or transpose given a
 * new operand) keep their name and location; new constants take the
 * location of the statement they replace and a fresh name built from its
 * name ("%c" -> "%c.1"), so --print-loc still points at the source line.
 *
 * Requires: a verified module.
 * Preserves: function signatures, the order of the statements that stay,
 * names and locations of everything not rewritten, attributes of
 * statements simplified in place.
 */
#include "passes/pass.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Larger results are left to the runtime: folding them would put big
 * constants in the text, and costs compile time for little gain. The same
 * bound caps how many stored elements an identity test reads. */
#define FOLD_LIMIT 1024

typedef struct canon {
  raf_module *m;
  raf_func *f;
  bool oom;
} canon;

static raf_stmt *const_def(const raf_value *v) {
  return v && v->def && v->def->op == RAF_OP_CONSTANT && v->def->cdata
             ? v->def
             : NULL;
}

/* ---- New statements ------------------------------------------------------ */

/* Replaces the single result of s by a new constant of s's type and data c,
 * inserted before s with s's location. */
static void replace_by_const(canon *c, raf_stmt *s, raf_const *data) {
  raf_type *t = s->results[0]->type;
  raf_stmt *k = raf_stmt_create(c->m, RAF_OP_CONSTANT, 0, NULL, 1, &t, s->loc);
  if (!k) {
    c->oom = true;
    return;
  }
  k->cdata = data;
  const char *name = raf_func_derived_name(c->f, s->results[0]->name);
  k->results[0]->func = c->f;
  if (name)
    raf_value_set_name(k->results[0], name);
  raf_stmt_insert_before(c->f, k, s);
  raf_value_replace_uses(s->results[0], k->results[0]);
}

/* ---- Element arithmetic -------------------------------------------------- */

/* Which ops fold is decided by the evaluators below: each knows the ops
 * it can compute and says false for the rest, so there is no list of
 * foldable ops beside them. */

/* The words of lang/scalar.def as C (here on double). */
#include "lang/scalar_c.h"

/* Float arithmetic in double over operands a (and b); false for an op it
 * does not compute. A backward operator's operands are dy, then x. */
#define UNARY(OP, f)                                                           \
  case RAF_OP_##OP: {                                                          \
    double x = a;                                                              \
    *r = (f);                                                                  \
    return true;                                                               \
  }
#define BINARY(OP, f)                                                          \
  case RAF_OP_##OP: {                                                          \
    double x = a, y = b;                                                       \
    *r = (f);                                                                  \
    return true;                                                               \
  }
#define BACKWARD(OP, f)                                                        \
  case RAF_OP_##OP: {                                                          \
    double dy = a, x = b;                                                      \
    *r = (f);                                                                  \
    return true;                                                               \
  }
#define COMPARE(OP, f)
#define TEST(OP, f)
#define NO_FORMULA(OP, why)

static bool eval_float(raf_opcode op, double a, double b, double *r) {
  typedef double work_t;
  /* No op with attributes is folded (fold_elementwise), gelu's among them. */
  const bool tanh_approx = false;
  switch (op) {
#include "lang/scalar.def"
  default: return false;
  }
}

#undef UNARY
#undef BINARY
#undef BACKWARD
#undef COMPARE
#undef TEST

/* A comparison (or isfinite) of floats or of integers, by the same C
 * operators; false when op compares nothing. */
#define UNARY(OP, f)
#define BINARY(OP, f)
#define BACKWARD(OP, f)
#define COMPARE(OP, f)                                                         \
  case RAF_OP_##OP: {                                                          \
    *r = (f);                                                                  \
    return true;                                                               \
  }
#define TEST(OP, f)                                                            \
  case RAF_OP_##OP: {                                                          \
    *r = (f);                                                                  \
    return true;                                                               \
  }

static bool eval_compare_float(raf_opcode op, double x, double y, bool *r) {
  typedef double work_t;
  (void)y;
  switch (op) {
#include "lang/scalar.def"
  default: return false;
  }
}

#undef TEST
#define TEST(OP, f) /* isfinite takes floats only */

static bool eval_compare_int(raf_opcode op, int64_t x, int64_t y, bool *r) {
  switch (op) {
#include "lang/scalar.def"
  default: return false;
  }
}

#include "lang/scalar_end.h"

/* Integer arithmetic in int64; false where the result is not exact. */
static bool eval_int(raf_opcode op, int64_t a, int64_t b, int64_t *r) {
  switch (op) {
  case RAF_OP_NEG:
    *r = 0;
    return !__builtin_sub_overflow((int64_t)0, a, r);
  case RAF_OP_ABS:
    *r = a;
    return a >= 0 || !__builtin_sub_overflow((int64_t)0, a, r);
  case RAF_OP_RELU: *r = a < 0 ? 0 : a; return true;
  case RAF_OP_ADD: return !__builtin_add_overflow(a, b, r);
  case RAF_OP_SUB: return !__builtin_sub_overflow(a, b, r);
  case RAF_OP_MUL: return !__builtin_mul_overflow(a, b, r);
  case RAF_OP_DIV:
    /* Truncating and flooring division agree when the division is exact. */
    if (b == 0 || (a == INT64_MIN && b == -1) || a % b != 0)
      return false;
    *r = a / b;
    return true;
  case RAF_OP_POW: {
    if (b < 0)
      return false;
    int64_t acc = 1, base = a;
    for (; b; b >>= 1) {
      if ((b & 1) && __builtin_mul_overflow(acc, base, &acc))
        return false;
      if (b > 1 && __builtin_mul_overflow(base, base, &base))
        return false;
    }
    *r = acc;
    return true;
  }
  case RAF_OP_MAXIMUM: *r = a > b ? a : b; return true;
  case RAF_OP_MINIMUM: *r = a < b ? a : b; return true;
  default: return false; /* float-only, or not computed here */
  }
}

static void store_float(raf_dtype dt, double d, unsigned char *dst) {
  switch (dt) {
  case RAF_F64: memcpy(dst, &d, 8); break;
  case RAF_F32: { float f = (float)d; memcpy(dst, &f, 4); break; }
  case RAF_F16: {
    uint16_t h = raf_float_to_half((float)d);
    memcpy(dst, &h, 2);
    break;
  }
  default: {
    uint16_t h = raf_float_to_bf16((float)d);
    memcpy(dst, &h, 2);
    break;
  }
  }
}

/* Stores v as an integer of dt (bool included); false when dt cannot hold
 * it. */
static bool store_int(raf_dtype dt, int64_t v, unsigned char *dst) {
  switch (dt) {
  case RAF_I64: memcpy(dst, &v, 8); return true;
  case RAF_I32: {
    if (v < INT32_MIN || v > INT32_MAX)
      return false;
    int32_t x = (int32_t)v;
    memcpy(dst, &x, 4);
    return true;
  }
  case RAF_I8:
    if (v < -128 || v > 127)
      return false;
    *dst = (unsigned char)(uint8_t)(int8_t)v;
    return true;
  case RAF_U8:
    if (v < 0 || v > 255)
      return false;
    *dst = (unsigned char)v;
    return true;
  default: /* bool */
    if (v < 0 || v > 1)
      return false;
    *dst = (unsigned char)v;
    return true;
  }
}

/* An integer wrapped to dt's width, as NumPy's astype does. */
static int64_t wrap_int(raf_dtype dt, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dt) {
  case RAF_I32:
    u &= 0xffffffffu;
    return u >= 0x80000000u ? (int64_t)u - 0x100000000 : (int64_t)u;
  case RAF_I8:
    u &= 0xff;
    return u >= 0x80 ? (int64_t)u - 0x100 : (int64_t)u;
  case RAF_U8: return (int64_t)(u & 0xff);
  case RAF_BOOL: return v != 0;
  default: return v;
  }
}

/* cast of one element from dt_in to dt_out. */
static bool cast_elem(raf_dtype in, raf_dtype out, const raf_const *c,
                      int64_t i, unsigned char *dst) {
  if (raf_dtype_is_float(in)) {
    double d = raf_const_get_f64(in, c, i);
    if (raf_dtype_is_float(out)) {
      store_float(out, d, dst);
      return true;
    }
    if (out == RAF_BOOL)
      return store_int(out, d != 0, dst); /* NaN is true, as in NumPy */
    /* Truncation toward zero; a value the integer type cannot hold (NaN,
     * inf, too large) has no defined result, so it is not folded. */
    if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
      return false;
    return store_int(out, (int64_t)d, dst);
  }
  int64_t v = raf_const_get_i64(in, c, i);
  if (raf_dtype_is_float(out)) {
    store_float(out, (double)v, dst);
    return true;
  }
  return store_int(out, wrap_int(out, v), dst);
}

/* One element of an elementwise op over constants a (and b). */
static bool eval_elem(raf_opcode op, raf_dtype in, raf_dtype out,
                      const raf_const *a, int64_t ia, const raf_const *b,
                      int64_t ib, unsigned char *dst) {
  if (op == RAF_OP_CAST)
    return cast_elem(in, out, a, ia, dst);
  bool cmp;
  if (raf_dtype_is_float(in)) {
    double x = raf_const_get_f64(in, a, ia);
    double y = b ? raf_const_get_f64(in, b, ib) : 0, r;
    if (eval_compare_float(op, x, y, &cmp))
      return store_int(out, cmp, dst);
    if (!eval_float(op, x, y, &r))
      return false;
    store_float(out, r, dst);
    return true;
  }
  int64_t x = raf_const_get_i64(in, a, ia);
  int64_t y = b ? raf_const_get_i64(in, b, ib) : 0, r;
  if (eval_compare_int(op, x, y, &cmp))
    return store_int(out, cmp, dst);
  return eval_int(op, x, y, &r) && store_int(out, r, dst);
}

/* ---- Constant folding ---------------------------------------------------- */

/* New constant data of type t from n elements of buf, as a splat when they
 * are all alike. */
static raf_const *make_const(canon *c, const raf_type *t,
                             const unsigned char *buf) {
  size_t size = (size_t)raf_dtype_size(t->dtype);
  int64_t n = t->numel;
  bool alike = n > 1 && t->rank > 0;
  for (int64_t i = 1; alike && i < n; i++)
    alike = memcmp(buf, buf + (size_t)i * size, size) == 0;
  raf_const *k = RAF_NEW(&c->m->arena, raf_const);
  int64_t count = alike ? 1 : n;
  void *data = raf_arena_memdup(&c->m->arena, buf, (size_t)count * size);
  if (!k || !data) {
    c->oom = true;
    return NULL;
  }
  k->count = count;
  k->splat = alike;
  k->data = data;
  return k;
}

/* Folds an elementwise statement over constant operands; false when it
 * does not apply. */
static bool fold_elementwise(canon *c, raf_stmt *s) {
  /* Elementwise ops of one or two operands, by the op table; the
   * evaluators then decide which of them they compute. */
  const raf_op_info *info = &raf_op_table[s->op];
  raf_opcode op = s->op;
  int arity = info->noperands;
  const raf_type *t = s->results[0]->type;
  if ((info->fusion != RAF_FUSE_ELEMWISE &&
       info->fusion != RAF_FUSE_BROADCAST) ||
      arity < 1 || arity > 2 || s->noperands != arity || s->nresults != 1 ||
      t->numel > FOLD_LIMIT)
    return false;
  /* Ops with attributes (gelu, gelu_grad) stay for the passes that match
   * them (fuse's cuBLASLt epilogues), cast aside. */
  if (info->nattrs && op != RAF_OP_CAST)
    return false;
  const raf_stmt *k[2] = {NULL, NULL};
  for (int i = 0; i < arity; i++)
    if (!(k[i] = const_def(s->operands[i].value)))
      return false;
  raf_dtype in = s->operands[0].value->type->dtype, out = t->dtype;
  /* Broadcasting: operand i's element for result index idx is at
   * sum(idx[d] * stride[i][d]), with stride 0 along the dimensions it
   * lacks or has as 1. */
  int rank = t->rank;
  int64_t stride[2][RAF_MAX_RANK];
  for (int i = 0; i < arity; i++) {
    const raf_type *ot = s->operands[i].value->type;
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) {
      int od = d - (rank - ot->rank);
      bool spread = od < 0 || ot->dims[od] == 1;
      stride[i][d] = spread ? 0 : step;
      if (od >= 0)
        step *= ot->dims[od];
    }
  }
  unsigned char buf[FOLD_LIMIT * 8];
  size_t size = (size_t)raf_dtype_size(out);
  int64_t idx[RAF_MAX_RANK] = {0};
  for (int64_t e = 0; e < t->numel; e++) {
    int64_t at[2] = {0, 0};
    for (int i = 0; i < arity; i++)
      for (int d = 0; d < rank; d++)
        at[i] += idx[d] * stride[i][d];
    if (!eval_elem(op, in, out, k[0]->cdata, at[0],
                   arity == 2 ? k[1]->cdata : NULL, at[1],
                   buf + (size_t)e * size))
      return false;
    for (int d = rank - 1; d >= 0 && ++idx[d] == t->dims[d]; d--)
      idx[d] = 0;
  }
  raf_const *data = make_const(c, t, buf);
  if (data)
    replace_by_const(c, s, data);
  return true;
}

/* reshape of constant k: the same elements under s's type. */
static void fold_reshape(canon *c, raf_stmt *s, const raf_stmt *k) {
  raf_const *data = RAF_NEW(&c->m->arena, raf_const);
  if (!data) {
    c->oom = true;
    return;
  }
  *data = *k->cdata;
  /* A rank-0 constant is stored as one element, not as a splat. */
  data->splat = k->cdata->splat && s->results[0]->type->rank > 0;
  replace_by_const(c, s, data);
}

/* ---- Identities ---------------------------------------------------------- */

/* Is every element of constant k equal to v? Only small data is read. */
static bool all_equal(const raf_stmt *k, double v) {
  const raf_const *d = k->cdata;
  raf_dtype dt = k->results[0]->type->dtype;
  if (d->count > FOLD_LIMIT)
    return false;
  for (int64_t i = 0; i < d->count; i++)
    if (raf_dtype_is_float(dt) ? raf_const_get_f64(dt, d, i) != v
                               : raf_const_get_i64(dt, d, i) != (int64_t)v)
      return false;
  return true;
}

/* Operand i of s, when it is a constant whose every element is v. */
static bool operand_is(const raf_stmt *s, int i, double v) {
  const raf_stmt *k = const_def(s->operands[i].value);
  return k && all_equal(k, v);
}

/* x in op(x, k) / op(k, x) when the statement is an identity on x. */
static raf_value *arith_identity(const raf_stmt *s) {
  raf_value *a = s->operands[0].value, *b = s->operands[1].value;
  raf_type *t = s->results[0]->type;
  int unit;      /* the identity element */
  bool commutes; /* may the identity stand first too? */
  switch (s->op) {
  case RAF_OP_ADD: unit = 0; commutes = true; break;
  case RAF_OP_SUB: unit = 0; commutes = false; break;
  case RAF_OP_MUL: unit = 1; commutes = true; break;
  case RAF_OP_DIV: unit = 1; commutes = false; break;
  default: return NULL;
  }
  if (a->type == t && operand_is(s, 1, unit))
    return a;
  if (commutes && b->type == t && operand_is(s, 0, unit))
    return b;
  return NULL;
}

/* The perm of transpose s over rank axes, normalised; false if malformed
 * (the verifier would have said so). */
static bool get_perm(const raf_stmt *s, int rank, int *perm) {
  raf_attr_value v;
  if (!raf_stmt_attr(s, "perm", &v)) {
    for (int i = 0; i < rank; i++)
      perm[i] = rank - 1 - i;
    return true;
  }
  if (v.u.ints.n != rank)
    return false;
  for (int i = 0; i < rank; i++) {
    int64_t a = v.u.ints.v[i] < 0 ? v.u.ints.v[i] + rank : v.u.ints.v[i];
    if (a < 0 || a >= rank)
      return false;
    perm[i] = (int)a;
  }
  return true;
}

/* Gives transpose s the perm p (its other attributes stay). */
static bool set_perm(canon *c, raf_stmt *s, const int *p, int rank) {
  int64_t v[RAF_MAX_RANK];
  for (int i = 0; i < rank; i++)
    v[i] = p[i];
  if (raf_stmt_set_attr_ints(c->m, s, "perm", v, rank) != RAF_OK) {
    c->oom = true;
    return false;
  }
  return true;
}

/* The value transpose s can be replaced by, after merging it with a
 * transpose that feeds it; *changed is set when s was rewritten in place. */
static raf_value *simplify_transpose(canon *c, raf_stmt *s, bool *changed) {
  raf_value *x = s->operands[0].value;
  int rank = x->type->rank, outer[RAF_MAX_RANK], inner[RAF_MAX_RANK];
  if (!get_perm(s, rank, outer))
    return NULL;
  raf_stmt *d = x->def;
  if (d && d->op == RAF_OP_TRANSPOSE && get_perm(d, rank, inner)) {
    /* y = transpose(z, p1): y[i] = z[p1[i]]; transpose(y, p2)[i] =
     * z[p1[p2[i]]]. */
    int composed[RAF_MAX_RANK];
    for (int i = 0; i < rank; i++)
      composed[i] = inner[outer[i]];
    if (set_perm(c, s, composed, rank)) {
      raf_use_set(&s->operands[0], d->operands[0].value);
      memcpy(outer, composed, sizeof composed);
      x = s->operands[0].value;
      *changed = true;
    }
  }
  for (int i = 0; i < rank; i++)
    if (outer[i] != i)
      return NULL;
  return x;
}

/* ---- The walk ------------------------------------------------------------ */

/* Canonicalizes s; true when anything changed. */
static bool canon_stmt(canon *c, raf_stmt *s) {
  bool changed = false;
  raf_value *to = NULL;
  if (s->nresults != 1 || s->noperands < 1)
    return false;
  raf_value *x = s->operands[0].value;
  raf_type *t = s->results[0]->type;
  switch (s->op) {
  case RAF_OP_RESHAPE: {
    /* The operand's operand has the same number of elements, so the shape
     * attribute (and its -1) means the same over it. */
    while (x->def && x->def->op == RAF_OP_RESHAPE) {
      raf_use_set(&s->operands[0], x->def->operands[0].value);
      x = s->operands[0].value;
      changed = true;
    }
    const raf_stmt *k;
    if (x->type == t)
      to = x;
    else if ((k = const_def(x))) {
      fold_reshape(c, s, k);
      return true;
    }
    break;
  }
  case RAF_OP_TRANSPOSE:
    to = simplify_transpose(c, s, &changed);
    break;
  case RAF_OP_CAST:
    if (x->type == t)
      to = x;
    else if (fold_elementwise(c, s))
      return true;
    break;
  case RAF_OP_NEG:
    if (x->def && x->def->op == RAF_OP_NEG)
      to = x->def->operands[0].value;
    else if (fold_elementwise(c, s))
      return true;
    break;
  default:
    if (fold_elementwise(c, s))
      return true;
    if (s->noperands == 2)
      to = arith_identity(s);
    break;
  }
  if (to) {
    raf_value_replace_uses(s->results[0], to);
    changed = true;
  }
  return changed;
}

static bool canon_func(canon *c, raf_func *f) {
  bool changed = false;
  c->f = f;
  /* New statements go before the one they replace, so the walk never
   * meets them; they are canonical as made. */
  for (raf_stmt *s = f->first; s && !c->oom; s = s->next)
    changed |= canon_stmt(c, s);
  if (raf_erase_dead(f))
    changed = true;
  return changed;
}

raf_status raf_pass_canonicalize(raf_module *m, const raf_pass_args *args) {
  int64_t max = raf_pass_opt_int(args, "max-iterations");
  raf_loc noloc = {NULL, 0, 0};
  if (max < 1) {
    raf_diag_report(args->ctx, noloc, RAF_SEV_ERROR,
                    "canonicalize: max-iterations must be at least 1, got %lld",
                    (long long)max);
    return RAF_ERROR;
  }
  canon c = {m, NULL, false};
  for (int64_t it = 0; it < max; it++) {
    bool changed = false;
    for (raf_func *f = m->first; f && !c.oom; f = f->next)
      changed |= canon_func(&c, f);
    if (c.oom) {
      raf_diag_report(args->ctx, noloc, RAF_SEV_ERROR,
                      "canonicalize: out of memory");
      return RAF_ERROR;
    }
    if (!changed)
      break;
  }
  return RAF_OK;
}
