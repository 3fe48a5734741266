/* infer.c: type and shape inference, one function per row of lang/ops.def.
 *
 * raf_infer_stmt is the entry point. It first checks what the op table says
 * about every op alike: the operand and result counts, the kinds of the
 * attributes written (so shape functions can read them without checking),
 * and the choices of enumerated string attributes. It then calls the op's
 * shape function, infer_NAME, which checks the rest and fills in->results
 * with interned types:
 *   - the element types of its data operands against the op's dtype mask
 *     (admit). Not every operand is data: take's indices, dropout's key and
 *     cross_entropy's labels have their own rules, so each function says
 *     which operands infer_admit() applies to;
 *   - shapes, following NumPy (broadcasting, axes, slicing) and PyTorch
 *     (layers, pooling, losses), as docs/LangRef.md states;
 *   - the value ranges of attributes (positive strides, p in [0, 1), ...).
 *
 * Messages are lower case without a trailing period and do not name the op,
 * which raf_infer_stmt puts in front. Types are spelled as the printer spells
 * them ("f32[2,3]"), lists as "[4,2]", operands are counted from 0, and
 * negative axes count from the end. An error about the operands' types ends
 * with them all, as mlir-opt prints them ("contracting dimensions differ:
 * f32[8,32] x f32[16,4]"), and names the operand or attribute at fault, at
 * whose place in the source it is reported.
 */
#include "ir/infer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


raf_status raf_infer_fail(raf_infer *in, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(in->message, sizeof in->message, fmt, ap);
  va_end(ap);
  return RAF_ERROR;
}

/* An error at operand `at` (-1: the statement) or attribute `attr`, the
 * operand types appended when `types`: ": f32[8,32] x f32[16,4]" for
 * matmul's product, ": f32[2,3], f32[3]" for the rest. */
static raf_status vfail(raf_infer *in, int at, const char *attr, bool types,
                        const char *fmt, va_list ap) {
  vsnprintf(in->message, sizeof in->message, fmt, ap);
  in->fault_operand = at;
  in->fault_attr = attr;
  size_t len = strlen(in->message);
  const char *sep = in->stmt->op == RAF_OP_MATMUL ? " x " : ", ";
  for (int i = 0; types && i < in->noperands && len < sizeof in->message;
       i++) {
    int k = snprintf(in->message + len, sizeof in->message - len, "%s",
                     i ? sep : ": ");
    len += k > 0 ? (size_t)k : 0;
    if (len < sizeof in->message)
      raf_type_str(in->operands[i], in->message + len,
                   sizeof in->message - len);
    len += strlen(in->message + len);
  }
  return RAF_ERROR;
}

/* An error about the operands' types, at operand `at` (-1: none in
 * particular), which ends with their types. */
__attribute__((format(printf, 3, 4))) raf_status
infer_operand_fail(raf_infer *in, int at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(in, at, NULL, true, fmt, ap);
  va_end(ap);
  return RAF_ERROR;
}

/* An error at attribute `name`: about its value alone, or, with `types`,
 * about how it fits the operands, whose types then end the message. */
__attribute__((format(printf, 4, 5))) raf_status
infer_attr_fail(raf_infer *in, const char *name, bool types, const char *fmt,
                ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(in, -1, name, types, fmt, ap);
  va_end(ap);
  return RAF_ERROR;
}

/* An error at operand `at` whose message spells the types it needs. */
__attribute__((format(printf, 3, 4))) static raf_status
vfail_at(raf_infer *in, int at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(in, at, NULL, false, fmt, ap);
  va_end(ap);
  return RAF_ERROR;
}

/* ---- Spelling things in messages ----------------------------------------- */

text infer_type_text(const raf_type *t) {
  text r;
  raf_type_str(t, r.s, sizeof r.s);
  return r;
}

/* Appends to r as snprintf does, never past its end. */
static void text_add(text *r, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void text_add(text *r, size_t *len, const char *fmt, ...) {
  va_list ap;
  int k;
  if (*len >= sizeof r->s)
    return;
  va_start(ap, fmt);
  k = vsnprintf(r->s + *len, sizeof r->s - *len, fmt, ap);
  va_end(ap);
  *len += k > 0 ? (size_t)k : 0;
}

text infer_ints_text(const int64_t *v, int n) {
  text r;
  size_t len = 0;
  text_add(&r, &len, "[");
  for (int i = 0; i < n; i++)
    text_add(&r, &len, "%s%lld", i ? "," : "", LL(v[i]));
  text_add(&r, &len, "]");
  return r;
}

/* "a|b|c" as "\"a\", \"b\" or \"c\"". */
static text choices_text(const char *choices) {
  text r;
  size_t len = 0;
  r.s[0] = '\0';
  for (const char *p = choices;;) {
    const char *bar = strchr(p, '|');
    int n = bar ? (int)(bar - p) : (int)strlen(p);
    text_add(&r, &len, "%s\"%.*s\"", p == choices ? "" : bar ? ", " : " or ",
             n, p);
    if (!bar)
      return r;
    p = bar + 1;
  }
}


/* ---- Results ------------------------------------------------------------- */

/* Products and sums of sizes (all non-negative); false on overflow. */
bool infer_mul_ok(int64_t a, int64_t b, int64_t *out) {
  return (a == 0 || b <= INT64_MAX / a) && (*out = a * b, true);
}

static bool add_ok(int64_t a, int64_t b, int64_t *out) {
  return b <= INT64_MAX - a && (*out = a + b, true);
}

raf_status infer_check_rank(raf_infer *in, int64_t rank) {
  if (rank <= RAF_MAX_RANK)
    return RAF_OK;
  return raf_infer_fail(in, "result rank %lld exceeds the limit of %d",
                        LL(rank), RAF_MAX_RANK);
}

raf_status infer_too_large(raf_infer *in) {
  return raf_infer_fail(in, "result has more than %lld elements",
                        LL(INT64_MAX));
}

/* Interns result i; the rank and element count are checked first, since
 * dims may come straight from attributes. */
raf_status infer_set_result(raf_infer *in, int i, raf_dtype dt, int rank,
                             const int64_t *dims) {
  int64_t numel = 1;
  if (infer_check_rank(in, rank))
    return RAF_ERROR;
  for (int d = 0; d < rank; d++)
    if (!infer_mul_ok(numel, dims[d], &numel))
      return infer_too_large(in);
  in->results[i] = raf_type_get(in->m, dt, rank, dims);
  return in->results[i] ? RAF_OK : raf_infer_fail(in, "out of memory");
}

/* ---- Operands ------------------------------------------------------------ */

/* Operand i is data: its element type must be in the op's dtype mask. */
raf_status infer_admit(raf_infer *in, int i) {
  const raf_op_info *op = &raf_op_table[in->stmt->op];
  raf_dtype dt = OPND(i)->dtype;
  if (op->dtypes & (1u << dt))
    return RAF_OK;
  return infer_operand_fail(in, i,
                            "operand %d has element type %s, which %s does "
                            "not admit",
                            i, raf_dtype_name(dt), op->name);
}

raf_status infer_admit_all(raf_infer *in) {
  for (int i = 0; i < in->noperands; i++)
    if (infer_admit(in, i))
      return RAF_ERROR;
  return RAF_OK;
}

raf_status infer_same_dtype(raf_infer *in, int i, int j) {
  raf_dtype a = OPND(i)->dtype, b = OPND(j)->dtype;
  if (a == b)
    return RAF_OK;
  return infer_operand_fail(in, j, "element types differ (%s vs %s)",
                      raf_dtype_name(a), raf_dtype_name(b));
}

/* Index-like operands (take's indices, class labels) are integers. */
raf_status infer_integer_operand(raf_infer *in, int i, const char *what) {
  raf_dtype_class c = raf_dtype_class_of(OPND(i)->dtype);
  if (c == RAF_CLASS_SINT || c == RAF_CLASS_UINT)
    return RAF_OK;
  return infer_operand_fail(in, i,
                            "%s must have an integer element type, not %s",
                            what, raf_dtype_name(OPND(i)->dtype));
}

raf_status infer_need_rank(raf_infer *in, int i, const char *what, int rank,
                            bool at_least) {
  int r = OPND(i)->rank;
  if (at_least ? r >= rank : r == rank)
    return RAF_OK;
  return infer_operand_fail(in, i, "%s must have rank %s%d, not %d", what,
                      at_least ? "at least " : "", rank, r);
}

/* Operand i must have exactly the shape dims (its dtype is checked apart). */
raf_status infer_need_shape(raf_infer *in, int i, const char *what, int rank,
                             const int64_t *dims) {
  const raf_type *t = OPND(i);
  if (t->rank == rank &&
      (rank == 0 || memcmp(t->dims, dims, (size_t)rank * sizeof *dims) == 0))
    return RAF_OK;
  return infer_operand_fail(in, i, "%s must have shape %s, not %s", what,
                      INTS(dims, rank), INTS(t->dims, t->rank));
}

/* An axis of attribute `attr` (axis, axes, perm) for a rank. */
raf_status infer_normalize_axis(raf_infer *in, const char *attr,
                                 int64_t axis, int rank, int *out) {
  bool ok = axis >= -rank && axis < rank;
  *out = ok ? (int)(axis < 0 ? axis + rank : axis) : 0; /* always set */
  if (ok)
    return RAF_OK;
  return infer_attr_fail(
      in, attr, true, "axis %lld is out of range for rank %d", LL(axis), rank);
}

/* ---- Attributes ---------------------------------------------------------- */

/* The value of an op attribute: as written, else the schema default; false
 * when absent without a default. check_attrs has made the written kind fit,
 * so only the two allowed stand-ins need converting. */
bool infer_attr(const raf_infer *in, const char *name, raf_attr_value *v) {
  const raf_op_info *op = &raf_op_table[in->stmt->op];
  const raf_attr_spec *s = raf_spec_find(op->attrs, op->nattrs, name);
  const raf_attr *a = raf_attrs_find(&in->stmt->attrs, name);
  if (!a)
    return raf_stmt_attr(in->stmt, name, v);
  *v = a->val;
  if (s && s->kind == RAF_ATTR_FLOAT && a->kind == RAF_ATTR_INT)
    v->u.f = (double)a->val.u.i;
  if (s && s->kind == RAF_ATTR_INTS && a->kind != RAF_ATTR_INTS) {
    v->u.ints.v = NULL;
    v->u.ints.n = 0;
  }
  return true;
}

/* For required attributes (the verifier reports their absence too, but the
 * parser infers before verifying). */
raf_status infer_need(raf_infer *in, const char *name, raf_attr_value *v) {
  if (infer_attr(in, name, v))
    return RAF_OK;
  return raf_infer_fail(in, "missing attribute %s", name);
}

/* Readers for attributes that have defaults. */
int64_t infer_attr_int(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return infer_attr(in, name, &v) ? v.u.i : 0;
}

double infer_attr_float(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return infer_attr(in, name, &v) ? v.u.f : 0;
}

bool infer_attr_bool(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return infer_attr(in, name, &v) && v.u.b;
}

const char *infer_attr_str(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return infer_attr(in, name, &v) && v.u.s ? v.u.s : "";
}

/* A list attribute must have len entries (any number when len < 0), each at
 * least min. */
raf_status infer_check_ints(raf_infer *in, const char *name,
                             const raf_attr_value *v, int len, int64_t min) {
  const int64_t *p = v->u.ints.v;
  int n = v->u.ints.n;
  if (len >= 0 && n != len)
    return infer_attr_fail(in, name, true, "%s must have %d entries, got %d",
                           name, len, n);
  for (int i = 0; i < n; i++)
    if (p[i] < min)
      return infer_attr_fail(in, name, false, "%s entries must be %s, got %s",
                             name, min > 0 ? "positive" : "non-negative",
                             INTS(p, n));
  return RAF_OK;
}

bool raf_choices_include(const char *choices, const char *s) {
  size_t n = strlen(s);
  for (const char *p = choices;;) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && strncmp(p, s, n) == 0)
      return true;
    if (!bar)
      return false;
    p = bar + 1;
  }
}

/* Written attributes the schema knows must have its kind (an integer may
 * stand for a float, and an empty list for a list of integers), and strings
 * one of its choices. Unknown and repeated attributes are the verifier's. */
static raf_status check_attrs(raf_infer *in) {
  const raf_op_info *op = &raf_op_table[in->stmt->op];
  const raf_attrs *as = &in->stmt->attrs;
  for (int i = 0; i < as->n; i++) {
    const raf_attr *a = &as->v[i];
    const raf_attr_spec *s = raf_spec_find(op->attrs, op->nattrs, a->name);
    if (!s)
      continue;
    bool fits = a->kind == s->kind ||
                (s->kind == RAF_ATTR_FLOAT && a->kind == RAF_ATTR_INT) ||
                (s->kind == RAF_ATTR_INTS && a->kind == RAF_ATTR_FLOATS &&
                 a->val.u.floats.n == 0);
    if (!fits)
      return infer_attr_fail(
          in, a->name, false, "attribute %s must be %s, got %s", a->name,
          raf_attr_kind_desc(s->kind), raf_attr_kind_desc(a->kind));
    if (s->kind == RAF_ATTR_STRING && s->choices) {
      const char *str = a->val.u.s ? a->val.u.s : "";
      if (!raf_choices_include(s->choices, str))
        return infer_attr_fail(in, a->name, false, "%s must be %s, got \"%s\"",
                         a->name,
                              choices_text(s->choices).s, str);
    }
  }
  return RAF_OK;
}

raf_status infer_positive(raf_infer *in, const char *name, double x) {
  if (x > 0) /* false for NaN too */
    return RAF_OK;
  return infer_attr_fail(in, name, false, "%s must be positive, got %g", name,
                         x);
}

/* ---- Broadcasting -------------------------------------------------------- */

/* Broadcasts (*rank, dims) with (r, d) in place, NumPy style: shapes align
 * at the right and each pair of sizes must be equal or contain a 1. dims has
 * room for RAF_MAX_RANK entries. False when the shapes do not broadcast. */
bool infer_broadcast_into(int *rank, int64_t *dims, int r,
                          const int64_t *d) {
  int out = *rank > r ? *rank : r;
  int64_t res[RAF_MAX_RANK];
  for (int i = 0; i < out; i++) {
    int ia = i - (out - *rank), ib = i - (out - r);
    int64_t a = ia >= 0 ? dims[ia] : 1, b = ib >= 0 ? d[ib] : 1;
    if (a != b && a != 1 && b != 1)
      return false;
    res[i] = a == 1 ? b : a;
  }
  memcpy(dims, res, (size_t)out * sizeof *res);
  *rank = out;
  return true;
}

/* binary, compare and where: operands first.. are data of one element type;
 * all operands broadcast together into a result of element type dt. */
static raf_status broadcast_result(raf_infer *in, int first, raf_dtype dt) {
  int64_t dims[RAF_MAX_RANK];
  int rank = 0;
  for (int i = first; i < in->noperands; i++)
    if (infer_admit(in, i) || infer_same_dtype(in, first, i))
      return RAF_ERROR;
  for (int i = 0; i < in->noperands; i++) {
    if (infer_broadcast_into(&rank, dims, OPND(i)->rank, OPND(i)->dims))
      continue;
    return infer_operand_fail(in, i, "shapes do not broadcast");
  }
  return infer_set_result(in, 0, dt, rank, dims);
}

/* ---- Statements with their own syntax ------------------------------------ */

/* A constant's type is the one it states; the caller may also have put it in
 * results[0] already. */
raf_status infer_constant(raf_infer *in) {
  const raf_stmt *s = in->stmt;
  if (s->results && s->nresults > 0 && s->results[0] && s->results[0]->type)
    in->results[0] = s->results[0]->type;
  return in->results[0] ? RAF_OK
                        : raf_infer_fail(in, "constant has no stated type");
}

raf_status infer_call(raf_infer *in) {
  const raf_func *f = in->stmt->callee;
  if (!f)
    return raf_infer_fail(in, "call of unknown function");
  if (in->noperands != f->nargs)
    return raf_infer_fail(in, "@%s expects %d arguments, got %d", f->name,
                          f->nargs, in->noperands);
  for (int i = 0; i < f->nargs; i++)
    if (OPND(i) != f->args[i].value->type)
      return vfail_at(in, i, "argument %d has type %s but @%s expects %s",
                      i, TY(OPND(i)), f->name, TY(f->args[i].value->type));
  if (in->nresults != f->nresults)
    return raf_infer_fail(in, "@%s produces %d result%s, got %d", f->name,
                          f->nresults, f->nresults == 1 ? "" : "s",
                          in->nresults);
  for (int i = 0; i < f->nresults; i++)
    if (!(in->results[i] = f->results[i].type))
      return raf_infer_fail(in, "@%s has no result types yet", f->name);
  return RAF_OK;
}

/* The verifier checks returned values against the function's signature. */
raf_status infer_return(raf_infer *in) {
  (void)in;
  return RAF_OK;
}

/* ---- Elementwise --------------------------------------------------------- */

raf_status infer_unary(raf_infer *in) {
  if (infer_admit(in, 0))
    return RAF_ERROR;
  in->results[0] = OPND(0);
  return RAF_OK;
}

raf_status infer_binary(raf_infer *in) {
  return broadcast_result(in, 0, OPND(0)->dtype);
}

raf_status infer_compare(raf_infer *in) {
  return broadcast_result(in, 0, RAF_BOOL);
}

raf_status infer_isfinite(raf_infer *in) {
  if (infer_admit(in, 0))
    return RAF_ERROR;
  in->results[0] = raf_type_with_dtype(in->m, OPND(0), RAF_BOOL);
  return RAF_OK;
}

raf_status infer_where(raf_infer *in) {
  if (OPND(0)->dtype != RAF_BOOL)
    return infer_operand_fail(in, 0, "condition must be bool, not %s",
                        raf_dtype_name(OPND(0)->dtype));
  return broadcast_result(in, 1, OPND(1)->dtype);
}

raf_status infer_cast(raf_infer *in) {
  raf_attr_value dt;
  if (infer_admit(in, 0) || infer_need(in, "dtype", &dt))
    return RAF_ERROR;
  in->results[0] = raf_type_with_dtype(in->m, OPND(0), dt.u.dt);
  return in->results[0] ? RAF_OK : raf_infer_fail(in, "out of memory");
}

/* ---- Reductions ---------------------------------------------------------- */

/* The operand's shape without the axes marked in drop, or with them kept as
 * size 1 under keepdims. max, min and argmax have no value for an empty
 * set, so, as in PyTorch (and NumPy), none of their reduced axes may have
 * size 0. */
static raf_status reduced(raf_infer *in, const bool *drop, raf_dtype dt) {
  const raf_type *x = OPND(0);
  raf_opcode op = in->stmt->op;
  bool keep = infer_attr_bool(in, "keepdims");
  int64_t dims[RAF_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < x->rank; i++)
    if (drop[i] && x->dims[i] == 0 &&
        (op == RAF_OP_MAX || op == RAF_OP_MIN || op == RAF_OP_ARGMAX))
      return infer_attr_fail(in, op == RAF_OP_ARGMAX ? "axis" : "axes", true,
                       "axis %d has size 0, and the %s of no elements is "
                       "undefined", i, raf_op_table[op].name);
  for (int i = 0; i < x->rank; i++)
    if (!drop[i])
      dims[rank++] = x->dims[i];
    else if (keep)
      dims[rank++] = 1;
  return infer_set_result(in, 0, dt, rank, dims);
}

/* No axes reduces every axis; an empty list reduces none (as NumPy's
 * axis=()). */
raf_status infer_reduce(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value axes;
  bool all, drop[RAF_MAX_RANK];
  if (infer_admit(in, 0))
    return RAF_ERROR;
  all = !infer_attr(in, "axes", &axes);
  for (int i = 0; i < x->rank; i++)
    drop[i] = all;
  for (int i = 0; !all && i < axes.u.ints.n; i++) {
    int a;
    if (infer_normalize_axis(in, "axes", axes.u.ints.v[i], x->rank, &a))
      return RAF_ERROR;
    if (drop[a])
      return infer_attr_fail(in, "axes", false, "axes name axis %d twice", a);
    drop[a] = true;
  }
  return reduced(in, drop, x->dtype);
}

raf_status infer_argmax(raf_infer *in) {
  raf_attr_value axis;
  bool drop[RAF_MAX_RANK] = {false};
  int a;
  if (infer_admit(in, 0) || infer_need(in, "axis", &axis) ||
      infer_normalize_axis(in, "axis", axis.u.i, OPND(0)->rank, &a))
    return RAF_ERROR;
  drop[a] = true;
  return reduced(in, drop, RAF_I64);
}

/* ---- Shape manipulation -------------------------------------------------- */

raf_status infer_reshape(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value shape;
  int64_t dims[RAF_MAX_RANK], known = 1;
  int hole = -1;
  bool fits = true; /* false once the product of the entries overflows */
  if (infer_need(in, "shape", &shape) || infer_check_rank(in, shape.u.ints.n))
    return RAF_ERROR;
  const int64_t *s = shape.u.ints.v;
  int n = shape.u.ints.n;
  for (int i = 0; i < n; i++) {
    dims[i] = s[i];
    if (s[i] == -1 && hole < 0) {
      hole = i;
      continue;
    }
    if (s[i] == -1)
      return infer_attr_fail(in, "shape", false,
                             "shape %s has more than one -1", INTS(s, n));
    if (s[i] < 0)
      return infer_attr_fail(in, "shape", false,
                       "shape %s has a negative entry other than -1",
                       INTS(s, n));
    fits = fits && infer_mul_ok(known, s[i], &known);
  }
  if (hole >= 0 && fits && known == 0)
    return infer_attr_fail(in, "shape", false,
                           "cannot infer the -1 in shape %s, "
                           "which has a 0 entry",
                           INTS(s, n));
  if (!fits || (hole >= 0 ? x->numel % known != 0 : x->numel != known))
    return infer_attr_fail(in, "shape", true,
                           "cannot reshape %lld elements into "
                           "shape %s",
                           LL(x->numel), INTS(s, n));
  if (hole >= 0)
    dims[hole] = x->numel / known;
  return infer_set_result(in, 0, x->dtype, n, dims);
}

/* No perm reverses the axes, as NumPy's transpose. */
raf_status infer_transpose(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value perm;
  int64_t dims[RAF_MAX_RANK];
  bool seen[RAF_MAX_RANK] = {false};
  if (!infer_attr(in, "perm", &perm)) {
    for (int i = 0; i < x->rank; i++)
      dims[i] = x->dims[x->rank - 1 - i];
    return infer_set_result(in, 0, x->dtype, x->rank, dims);
  }
  if (infer_check_ints(in, "perm", &perm, x->rank, INT64_MIN))
    return RAF_ERROR;
  for (int i = 0; i < x->rank; i++) {
    int a;
    if (infer_normalize_axis(in, "perm", perm.u.ints.v[i], x->rank, &a))
      return RAF_ERROR;
    if (seen[a])
      return infer_attr_fail(in, "perm", false, "perm %s names axis %d twice",
                            INTS(perm.u.ints.v, perm.u.ints.n), a);
    seen[a] = true;
    dims[i] = x->dims[a];
  }
  return infer_set_result(in, 0, x->dtype, x->rank, dims);
}

/* One-way broadcasting: the result is exactly the shape asked for. */
raf_status infer_broadcast_to(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value shape;
  if (infer_need(in, "shape", &shape) ||
      infer_check_ints(in, "shape", &shape, -1, 0))
    return RAF_ERROR;
  const int64_t *s = shape.u.ints.v;
  int n = shape.u.ints.n;
  bool ok = n >= x->rank;
  for (int i = 1; ok && i <= x->rank; i++) {
    int64_t d = x->dims[x->rank - i];
    ok = d == 1 || d == s[n - i];
  }
  if (!ok)
    return infer_attr_fail(in, "shape", true, "cannot broadcast to shape %s",
                     INTS(s, n));
  return infer_set_result(in, 0, x->dtype, n, s);
}

int64_t raf_slice_range(int64_t dim, int64_t b, int64_t e, int64_t step,
                        int64_t *start) {
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
  b = b < 0 ? b + dim : b;
  e = e < 0 ? e + dim : e;
  b = b < lo ? lo : b > hi ? hi : b;
  e = e < lo ? lo : e > hi ? hi : e;
  *start = b;
  if (step > 0)
    return b < e ? (e - b - 1) / step + 1 : 0;
  return b > e ? (e - b + 1) / step + 1 : 0; /* both negative: no overflow */
}

int64_t infer_slice_len(int64_t dim, int64_t b, int64_t e, int64_t step) {
  int64_t start;
  return raf_slice_range(dim, b, e, step, &start);
}

raf_status infer_slice(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value begin, end, strides;
  int64_t dims[RAF_MAX_RANK];
  bool stepped = infer_attr(in, "strides", &strides);
  if (infer_need(in, "begin", &begin) || infer_need(in, "end", &end) ||
      infer_check_ints(in, "begin", &begin, x->rank, INT64_MIN) ||
      infer_check_ints(in, "end", &end, x->rank, INT64_MIN) ||
      (stepped &&
       infer_check_ints(in, "strides", &strides, x->rank, INT64_MIN)))
    return RAF_ERROR;
  for (int i = 0; i < x->rank; i++) {
    int64_t step = stepped ? strides.u.ints.v[i] : 1;
    if (step == 0)
      return infer_attr_fail(in, "strides", false,
                             "strides must be nonzero, got %s",
                             INTS(strides.u.ints.v, strides.u.ints.n));
    dims[i] =
        infer_slice_len(x->dims[i], begin.u.ints.v[i], end.u.ints.v[i], step);
  }
  return infer_set_result(in, 0, x->dtype, x->rank, dims);
}

raf_status infer_concat(raf_infer *in) {
  int64_t dims[RAF_MAX_RANK];
  int axis;
  if (in->noperands < 1)
    return raf_infer_fail(in, "expects at least 1 operand, got 0");
  const raf_type *t0 = OPND(0);
  if (infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"), t0->rank,
                           &axis))
    return RAF_ERROR;
  memcpy(dims, t0->dims, (size_t)t0->rank * sizeof *dims);
  for (int i = 0; i < in->noperands; i++) {
    const raf_type *t = OPND(i);
    if (infer_admit(in, i) || infer_same_dtype(in, 0, i))
      return RAF_ERROR;
    bool ok = t->rank == t0->rank;
    for (int d = 0; ok && d < t->rank; d++)
      ok = d == axis || t->dims[d] == t0->dims[d];
    if (!ok)
      return infer_operand_fail(in, i, "cannot concatenate along axis %d",
                                axis);
    if (i > 0 && !add_ok(dims[axis], t->dims[axis], &dims[axis]))
      return infer_too_large(in);
  }
  return infer_set_result(in, 0, t0->dtype, t0->rank, dims);
}

raf_status infer_split(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value sec, sizes;
  int64_t dims[RAF_MAX_RANK], total = 0;
  int axis;
  if (infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"), x->rank,
                           &axis))
    return RAF_ERROR;
  bool by_count = infer_attr(in, "sections", &sec);
  bool by_size = infer_attr(in, "sizes", &sizes);
  if (by_count == by_size)
    return raf_infer_fail(in, by_count ? "takes sections or sizes, not both"
                                       : "needs sections or sizes");
  int64_t dim = x->dims[axis];
  memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
  if (by_count) {
    int64_t n = sec.u.i;
    if (n < 1)
      return infer_attr_fail(in, "sections", false,
                       "sections must be positive, got %lld", LL(n));
    if (in->nresults != n)
      return infer_attr_fail(in, "sections", false,
                       "has %d results but sections = %lld", in->nresults,
                       LL(n));
    if (dim % n)
      return infer_attr_fail(in, "sections", true,
                             "axis %d has size %lld, which "
                             "sections = %lld does not divide",
                             axis, LL(dim), LL(n));
  } else {
    const int64_t *s = sizes.u.ints.v;
    int n = sizes.u.ints.n;
    bool fits = true;
    if (infer_check_ints(in, "sizes", &sizes, -1, 1))
      return RAF_ERROR;
    if (in->nresults != n)
      return infer_attr_fail(in, "sizes", false,
                       "has %d results but sizes has %d entries",
                       in->nresults, n);
    for (int i = 0; i < n; i++)
      fits = fits && add_ok(total, s[i], &total);
    if (!fits || total != dim)
      return infer_attr_fail(in, "sizes", true,
                             "sizes %s do not sum to %lld, the "
                             "size of axis %d",
                             INTS(s, n), LL(dim), axis);
  }
  for (int i = 0; i < in->nresults; i++) {
    dims[axis] = by_count ? dim / sec.u.i : sizes.u.ints.v[i];
    if (infer_set_result(in, i, x->dtype, x->rank, dims))
      return RAF_ERROR;
  }
  return RAF_OK;
}

/* Result shape: table.shape[:axis] + indices.shape + table.shape[axis+1:]. */
raf_status infer_take(raf_infer *in) {
  const raf_type *t = OPND(0), *ix = OPND(1);
  int64_t dims[RAF_MAX_RANK];
  int axis, rank = 0;
  if (infer_admit(in, 0) || infer_integer_operand(in, 1, "indices") ||
      infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"), t->rank,
                           &axis) ||
      infer_check_rank(in, t->rank - 1 + ix->rank))
    return RAF_ERROR;
  for (int i = 0; i < axis; i++)
    dims[rank++] = t->dims[i];
  for (int i = 0; i < ix->rank; i++)
    dims[rank++] = ix->dims[i];
  for (int i = axis + 1; i < t->rank; i++)
    dims[rank++] = t->dims[i];
  return infer_set_result(in, 0, t->dtype, rank, dims);
}

/* ---- Entry point --------------------------------------------------------- */

/* What the op table says of every op alike: counts, operand types, and the
 * attributes' kinds and choices. */
static raf_status check_generic(raf_infer *in) {
  const raf_op_info *op = &raf_op_table[in->stmt->op];
  if (op->noperands != RAF_VARIADIC && in->noperands != op->noperands)
    return raf_infer_fail(in, "expects %d operand%s, got %d", op->noperands,
                          op->noperands == 1 ? "" : "s", in->noperands);
  if (op->nresults != RAF_VARIADIC && in->nresults != op->nresults)
    return raf_infer_fail(in, "produces %d result%s, got %d", op->nresults,
                          op->nresults == 1 ? "" : "s", in->nresults);
  for (int i = 0; i < in->noperands; i++) {
    const raf_value *v = in->stmt->operands[i].value;
    if (!v || !v->type)
      return vfail_at(in, i, "operand %d has no type", i);
    if (v->type->rank > RAF_MAX_RANK) /* shape functions rely on the limit */
      return vfail_at(in, i, "operand %d has rank %d, above the limit of %d",
                      i, v->type->rank, RAF_MAX_RANK);
    in->operands[i] = v->type;
  }
  return check_attrs(in);
}

/* Where an error is reported: at the attribute or operand at fault as
 * written, else (and for what passes made) at the statement. */
static raf_loc fault_loc(const raf_infer *in) {
  const raf_stmt *s = in->stmt;
  const raf_attr *a =
      in->fault_attr ? raf_attrs_find(&s->attrs, in->fault_attr) : NULL;
  if (a && a->loc.line)
    return a->loc;
  int i = in->fault_operand;
  if (i >= 0 && i < s->noperands && s->operands[i].loc.line)
    return s->operands[i].loc;
  return s->loc;
}

raf_status raf_infer_stmt(raf_module *m, const raf_stmt *stmt,
                          raf_type **types, int ntypes) {
  raf_type *small[16];
  raf_infer in;
  raf_status st;
  if ((unsigned)stmt->op >= RAF_OP_COUNT) {
    raf_diag_report(m->ctx, stmt->loc, RAF_SEV_ERROR, "invalid opcode %d",
                    (int)stmt->op);
    return RAF_ERROR;
  }
  const raf_op_info *op = &raf_op_table[stmt->op];
  in.m = m;
  in.stmt = stmt;
  in.noperands = stmt->noperands;
  in.nresults = ntypes;
  in.results = types;
  in.message[0] = '\0';
  in.fault_operand = -1;
  in.fault_attr = NULL;
  in.operands = small;
  if (stmt->noperands > (int)(sizeof small / sizeof *small))
    in.operands = malloc((size_t)stmt->noperands * sizeof *in.operands);
  if (!in.operands)
    st = raf_infer_fail(&in, "out of memory");
  else
    st = check_generic(&in) ? RAF_ERROR : op->infer(&in);
  if (in.operands != small)
    free(in.operands);
  if (st != RAF_OK)
    raf_diag_report(m->ctx, fault_loc(&in), RAF_SEV_ERROR, "%s: %s",
                    op->name, in.message);
  return st;
}
