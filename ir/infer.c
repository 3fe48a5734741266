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
 *     which operands admit() applies to;
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
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LL(x) ((long long)(x))

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
__attribute__((format(printf, 3, 4))) static raf_status
operand_fail(raf_infer *in, int at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(in, at, NULL, true, fmt, ap);
  va_end(ap);
  return RAF_ERROR;
}

/* An error at attribute `name`: about its value alone, or, with `types`,
 * about how it fits the operands, whose types then end the message. */
__attribute__((format(printf, 4, 5))) static raf_status
attr_fail(raf_infer *in, const char *name, bool types, const char *fmt, ...) {
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

/* A spelling returned by value: in C11 it lives until the end of the full
 * expression, so several can be passed to one raf_infer_fail call. */
typedef struct text {
  char s[192]; /* the longest type, bf16 with 8 twenty-digit dims, fits */
} text;

static text type_text(const raf_type *t) {
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

static text ints_text(const int64_t *v, int n) {
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

#define TY(t) (type_text(t).s)
#define INTS(v, n) (ints_text((v), (n)).s)
#define OPND(i) (in->operands[i])

/* ---- Results ------------------------------------------------------------- */

/* Products and sums of sizes (all non-negative); false on overflow. */
static bool mul_ok(int64_t a, int64_t b, int64_t *out) {
  return (a == 0 || b <= INT64_MAX / a) && (*out = a * b, true);
}

static bool add_ok(int64_t a, int64_t b, int64_t *out) {
  return b <= INT64_MAX - a && (*out = a + b, true);
}

static raf_status check_rank(raf_infer *in, int64_t rank) {
  if (rank <= RAF_MAX_RANK)
    return RAF_OK;
  return raf_infer_fail(in, "result rank %lld exceeds the limit of %d",
                        LL(rank), RAF_MAX_RANK);
}

static raf_status too_large(raf_infer *in) {
  return raf_infer_fail(in, "result has more than %lld elements",
                        LL(INT64_MAX));
}

/* Interns result i; the rank and element count are checked first, since
 * dims may come straight from attributes. */
static raf_status set_result(raf_infer *in, int i, raf_dtype dt, int rank,
                             const int64_t *dims) {
  int64_t numel = 1;
  if (check_rank(in, rank))
    return RAF_ERROR;
  for (int d = 0; d < rank; d++)
    if (!mul_ok(numel, dims[d], &numel))
      return too_large(in);
  in->results[i] = raf_type_get(in->m, dt, rank, dims);
  return in->results[i] ? RAF_OK : raf_infer_fail(in, "out of memory");
}

/* ---- Operands ------------------------------------------------------------ */

/* Operand i is data: its element type must be in the op's dtype mask. */
static raf_status admit(raf_infer *in, int i) {
  const raf_op_info *op = &raf_op_table[in->stmt->op];
  raf_dtype dt = OPND(i)->dtype;
  if (op->dtypes & (1u << dt))
    return RAF_OK;
  return operand_fail(in, i, "operand %d has element type %s, which %s does "
                      "not admit", i, raf_dtype_name(dt), op->name);
}

static raf_status admit_all(raf_infer *in) {
  for (int i = 0; i < in->noperands; i++)
    if (admit(in, i))
      return RAF_ERROR;
  return RAF_OK;
}

static raf_status same_dtype(raf_infer *in, int i, int j) {
  raf_dtype a = OPND(i)->dtype, b = OPND(j)->dtype;
  if (a == b)
    return RAF_OK;
  return operand_fail(in, j, "element types differ (%s vs %s)",
                      raf_dtype_name(a), raf_dtype_name(b));
}

/* Index-like operands (take's indices, class labels) are integers. */
static raf_status integer_operand(raf_infer *in, int i, const char *what) {
  raf_dtype_class c = raf_dtype_class_of(OPND(i)->dtype);
  if (c == RAF_CLASS_SINT || c == RAF_CLASS_UINT)
    return RAF_OK;
  return operand_fail(in, i, "%s must have an integer element type, not %s",
                      what, raf_dtype_name(OPND(i)->dtype));
}

static raf_status need_rank(raf_infer *in, int i, const char *what, int rank,
                            bool at_least) {
  int r = OPND(i)->rank;
  if (at_least ? r >= rank : r == rank)
    return RAF_OK;
  return operand_fail(in, i, "%s must have rank %s%d, not %d", what,
                      at_least ? "at least " : "", rank, r);
}

/* Operand i must have exactly the shape dims (its dtype is checked apart). */
static raf_status need_shape(raf_infer *in, int i, const char *what, int rank,
                             const int64_t *dims) {
  const raf_type *t = OPND(i);
  if (t->rank == rank &&
      (rank == 0 || memcmp(t->dims, dims, (size_t)rank * sizeof *dims) == 0))
    return RAF_OK;
  return operand_fail(in, i, "%s must have shape %s, not %s", what,
                      INTS(dims, rank), INTS(t->dims, t->rank));
}

/* An axis of attribute `attr` (axis, axes, perm) for a rank. */
static raf_status normalize_axis(raf_infer *in, const char *attr,
                                 int64_t axis, int rank, int *out) {
  bool ok = axis >= -rank && axis < rank;
  *out = ok ? (int)(axis < 0 ? axis + rank : axis) : 0; /* always set */
  if (ok)
    return RAF_OK;
  return attr_fail(in, attr, true, "axis %lld is out of range for rank %d",
                   LL(axis), rank);
}

/* ---- Attributes ---------------------------------------------------------- */

/* The value of an op attribute: as written, else the schema default; false
 * when absent without a default. check_attrs has made the written kind fit,
 * so only the two allowed stand-ins need converting. */
static bool attr(const raf_infer *in, const char *name, raf_attr_value *v) {
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
static raf_status need(raf_infer *in, const char *name, raf_attr_value *v) {
  if (attr(in, name, v))
    return RAF_OK;
  return raf_infer_fail(in, "missing attribute %s", name);
}

/* Readers for attributes that have defaults. */
static int64_t attr_int(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return attr(in, name, &v) ? v.u.i : 0;
}

static double attr_float(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return attr(in, name, &v) ? v.u.f : 0;
}

static bool attr_bool(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return attr(in, name, &v) && v.u.b;
}

static const char *attr_str(const raf_infer *in, const char *name) {
  raf_attr_value v;
  return attr(in, name, &v) && v.u.s ? v.u.s : "";
}

/* A list attribute must have len entries (any number when len < 0), each at
 * least min. */
static raf_status check_ints(raf_infer *in, const char *name,
                             const raf_attr_value *v, int len, int64_t min) {
  const int64_t *p = v->u.ints.v;
  int n = v->u.ints.n;
  if (len >= 0 && n != len)
    return attr_fail(in, name, true, "%s must have %d entries, got %d", name,
                     len, n);
  for (int i = 0; i < n; i++)
    if (p[i] < min)
      return attr_fail(in, name, false, "%s entries must be %s, got %s", name,
                            min > 0 ? "positive" : "non-negative",
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
      return attr_fail(in, a->name, false, "attribute %s must be %s, got %s",
                       a->name,
                            raf_attr_kind_desc(s->kind),
                            raf_attr_kind_desc(a->kind));
    if (s->kind == RAF_ATTR_STRING && s->choices) {
      const char *str = a->val.u.s ? a->val.u.s : "";
      if (!raf_choices_include(s->choices, str))
        return attr_fail(in, a->name, false, "%s must be %s, got \"%s\"",
                         a->name,
                              choices_text(s->choices).s, str);
    }
  }
  return RAF_OK;
}

static raf_status positive(raf_infer *in, const char *name, double x) {
  if (x > 0) /* false for NaN too */
    return RAF_OK;
  return attr_fail(in, name, false, "%s must be positive, got %g", name, x);
}

/* ---- Broadcasting -------------------------------------------------------- */

/* Broadcasts (*rank, dims) with (r, d) in place, NumPy style: shapes align
 * at the right and each pair of sizes must be equal or contain a 1. dims has
 * room for RAF_MAX_RANK entries. False when the shapes do not broadcast. */
static bool broadcast_into(int *rank, int64_t *dims, int r, const int64_t *d) {
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
    if (admit(in, i) || same_dtype(in, first, i))
      return RAF_ERROR;
  for (int i = 0; i < in->noperands; i++) {
    if (broadcast_into(&rank, dims, OPND(i)->rank, OPND(i)->dims))
      continue;
    return operand_fail(in, i, "shapes do not broadcast");
  }
  return set_result(in, 0, dt, rank, dims);
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
  if (admit(in, 0))
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
  if (admit(in, 0))
    return RAF_ERROR;
  in->results[0] = raf_type_with_dtype(in->m, OPND(0), RAF_BOOL);
  return RAF_OK;
}

raf_status infer_where(raf_infer *in) {
  if (OPND(0)->dtype != RAF_BOOL)
    return operand_fail(in, 0, "condition must be bool, not %s",
                        raf_dtype_name(OPND(0)->dtype));
  return broadcast_result(in, 1, OPND(1)->dtype);
}

raf_status infer_cast(raf_infer *in) {
  raf_attr_value dt;
  if (admit(in, 0) || need(in, "dtype", &dt))
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
  bool keep = attr_bool(in, "keepdims");
  int64_t dims[RAF_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < x->rank; i++)
    if (drop[i] && x->dims[i] == 0 &&
        (op == RAF_OP_MAX || op == RAF_OP_MIN || op == RAF_OP_ARGMAX))
      return attr_fail(in, op == RAF_OP_ARGMAX ? "axis" : "axes", true,
                       "axis %d has size 0, and the %s of no elements is "
                       "undefined", i, raf_op_table[op].name);
  for (int i = 0; i < x->rank; i++)
    if (!drop[i])
      dims[rank++] = x->dims[i];
    else if (keep)
      dims[rank++] = 1;
  return set_result(in, 0, dt, rank, dims);
}

/* No axes reduces every axis; an empty list reduces none (as NumPy's
 * axis=()). */
raf_status infer_reduce(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value axes;
  bool all, drop[RAF_MAX_RANK];
  if (admit(in, 0))
    return RAF_ERROR;
  all = !attr(in, "axes", &axes);
  for (int i = 0; i < x->rank; i++)
    drop[i] = all;
  for (int i = 0; !all && i < axes.u.ints.n; i++) {
    int a;
    if (normalize_axis(in, "axes", axes.u.ints.v[i], x->rank, &a))
      return RAF_ERROR;
    if (drop[a])
      return attr_fail(in, "axes", false, "axes name axis %d twice", a);
    drop[a] = true;
  }
  return reduced(in, drop, x->dtype);
}

raf_status infer_argmax(raf_infer *in) {
  raf_attr_value axis;
  bool drop[RAF_MAX_RANK] = {false};
  int a;
  if (admit(in, 0) || need(in, "axis", &axis) ||
      normalize_axis(in, "axis", axis.u.i, OPND(0)->rank, &a))
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
  if (need(in, "shape", &shape) || check_rank(in, shape.u.ints.n))
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
      return attr_fail(in, "shape", false, "shape %s has more than one -1",
                       INTS(s, n));
    if (s[i] < 0)
      return attr_fail(in, "shape", false,
                       "shape %s has a negative entry other than -1",
                       INTS(s, n));
    fits = fits && mul_ok(known, s[i], &known);
  }
  if (hole >= 0 && fits && known == 0)
    return attr_fail(in, "shape", false, "cannot infer the -1 in shape %s, "
                     "which has a 0 entry", INTS(s, n));
  if (!fits || (hole >= 0 ? x->numel % known != 0 : x->numel != known))
    return attr_fail(in, "shape", true, "cannot reshape %lld elements into "
                     "shape %s", LL(x->numel), INTS(s, n));
  if (hole >= 0)
    dims[hole] = x->numel / known;
  return set_result(in, 0, x->dtype, n, dims);
}

/* No perm reverses the axes, as NumPy's transpose. */
raf_status infer_transpose(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value perm;
  int64_t dims[RAF_MAX_RANK];
  bool seen[RAF_MAX_RANK] = {false};
  if (!attr(in, "perm", &perm)) {
    for (int i = 0; i < x->rank; i++)
      dims[i] = x->dims[x->rank - 1 - i];
    return set_result(in, 0, x->dtype, x->rank, dims);
  }
  if (check_ints(in, "perm", &perm, x->rank, INT64_MIN))
    return RAF_ERROR;
  for (int i = 0; i < x->rank; i++) {
    int a;
    if (normalize_axis(in, "perm", perm.u.ints.v[i], x->rank, &a))
      return RAF_ERROR;
    if (seen[a])
      return attr_fail(in, "perm", false, "perm %s names axis %d twice",
                            INTS(perm.u.ints.v, perm.u.ints.n), a);
    seen[a] = true;
    dims[i] = x->dims[a];
  }
  return set_result(in, 0, x->dtype, x->rank, dims);
}

/* One-way broadcasting: the result is exactly the shape asked for. */
raf_status infer_broadcast_to(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value shape;
  if (need(in, "shape", &shape) || check_ints(in, "shape", &shape, -1, 0))
    return RAF_ERROR;
  const int64_t *s = shape.u.ints.v;
  int n = shape.u.ints.n;
  bool ok = n >= x->rank;
  for (int i = 1; ok && i <= x->rank; i++) {
    int64_t d = x->dims[x->rank - i];
    ok = d == 1 || d == s[n - i];
  }
  if (!ok)
    return attr_fail(in, "shape", true, "cannot broadcast to shape %s",
                     INTS(s, n));
  return set_result(in, 0, x->dtype, n, s);
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

static int64_t slice_len(int64_t dim, int64_t b, int64_t e, int64_t step) {
  int64_t start;
  return raf_slice_range(dim, b, e, step, &start);
}

raf_status infer_slice(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value begin, end, strides;
  int64_t dims[RAF_MAX_RANK];
  bool stepped = attr(in, "strides", &strides);
  if (need(in, "begin", &begin) || need(in, "end", &end) ||
      check_ints(in, "begin", &begin, x->rank, INT64_MIN) ||
      check_ints(in, "end", &end, x->rank, INT64_MIN) ||
      (stepped && check_ints(in, "strides", &strides, x->rank, INT64_MIN)))
    return RAF_ERROR;
  for (int i = 0; i < x->rank; i++) {
    int64_t step = stepped ? strides.u.ints.v[i] : 1;
    if (step == 0)
      return attr_fail(in, "strides", false, "strides must be nonzero, got %s",
                       INTS(strides.u.ints.v, strides.u.ints.n));
    dims[i] = slice_len(x->dims[i], begin.u.ints.v[i], end.u.ints.v[i], step);
  }
  return set_result(in, 0, x->dtype, x->rank, dims);
}

raf_status infer_concat(raf_infer *in) {
  int64_t dims[RAF_MAX_RANK];
  int axis;
  if (in->noperands < 1)
    return raf_infer_fail(in, "expects at least 1 operand, got 0");
  const raf_type *t0 = OPND(0);
  if (normalize_axis(in, "axis", attr_int(in, "axis"), t0->rank, &axis))
    return RAF_ERROR;
  memcpy(dims, t0->dims, (size_t)t0->rank * sizeof *dims);
  for (int i = 0; i < in->noperands; i++) {
    const raf_type *t = OPND(i);
    if (admit(in, i) || same_dtype(in, 0, i))
      return RAF_ERROR;
    bool ok = t->rank == t0->rank;
    for (int d = 0; ok && d < t->rank; d++)
      ok = d == axis || t->dims[d] == t0->dims[d];
    if (!ok)
      return operand_fail(in, i, "cannot concatenate along axis %d", axis);
    if (i > 0 && !add_ok(dims[axis], t->dims[axis], &dims[axis]))
      return too_large(in);
  }
  return set_result(in, 0, t0->dtype, t0->rank, dims);
}

raf_status infer_split(raf_infer *in) {
  const raf_type *x = OPND(0);
  raf_attr_value sec, sizes;
  int64_t dims[RAF_MAX_RANK], total = 0;
  int axis;
  if (normalize_axis(in, "axis", attr_int(in, "axis"), x->rank, &axis))
    return RAF_ERROR;
  bool by_count = attr(in, "sections", &sec);
  bool by_size = attr(in, "sizes", &sizes);
  if (by_count == by_size)
    return raf_infer_fail(in, by_count ? "takes sections or sizes, not both"
                                       : "needs sections or sizes");
  int64_t dim = x->dims[axis];
  memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
  if (by_count) {
    int64_t n = sec.u.i;
    if (n < 1)
      return attr_fail(in, "sections", false,
                       "sections must be positive, got %lld", LL(n));
    if (in->nresults != n)
      return attr_fail(in, "sections", false,
                       "has %d results but sections = %lld", in->nresults,
                       LL(n));
    if (dim % n)
      return attr_fail(in, "sections", true, "axis %d has size %lld, which "
                       "sections = %lld does not divide", axis, LL(dim),
                       LL(n));
  } else {
    const int64_t *s = sizes.u.ints.v;
    int n = sizes.u.ints.n;
    bool fits = true;
    if (check_ints(in, "sizes", &sizes, -1, 1))
      return RAF_ERROR;
    if (in->nresults != n)
      return attr_fail(in, "sizes", false,
                       "has %d results but sizes has %d entries",
                       in->nresults, n);
    for (int i = 0; i < n; i++)
      fits = fits && add_ok(total, s[i], &total);
    if (!fits || total != dim)
      return attr_fail(in, "sizes", true, "sizes %s do not sum to %lld, the "
                       "size of axis %d", INTS(s, n), LL(dim), axis);
  }
  for (int i = 0; i < in->nresults; i++) {
    dims[axis] = by_count ? dim / sec.u.i : sizes.u.ints.v[i];
    if (set_result(in, i, x->dtype, x->rank, dims))
      return RAF_ERROR;
  }
  return RAF_OK;
}

/* Result shape: table.shape[:axis] + indices.shape + table.shape[axis+1:]. */
raf_status infer_take(raf_infer *in) {
  const raf_type *t = OPND(0), *ix = OPND(1);
  int64_t dims[RAF_MAX_RANK];
  int axis, rank = 0;
  if (admit(in, 0) || integer_operand(in, 1, "indices") ||
      normalize_axis(in, "axis", attr_int(in, "axis"), t->rank, &axis) ||
      check_rank(in, t->rank - 1 + ix->rank))
    return RAF_ERROR;
  for (int i = 0; i < axis; i++)
    dims[rank++] = t->dims[i];
  for (int i = 0; i < ix->rank; i++)
    dims[rank++] = ix->dims[i];
  for (int i = axis + 1; i < t->rank; i++)
    dims[rank++] = t->dims[i];
  return set_result(in, 0, t->dtype, rank, dims);
}

/* ---- Linear algebra ------------------------------------------------------ */

raf_status infer_matmul(raf_infer *in) {
  const raf_type *a = OPND(0), *b = OPND(1);
  int64_t dims[RAF_MAX_RANK];
  if (admit(in, 0) || admit(in, 1) || same_dtype(in, 0, 1) ||
      need_rank(in, 0, "a", 2, true) || need_rank(in, 1, "b", 2, true))
    return RAF_ERROR;
  bool ta = attr_bool(in, "transpose_a"), tb = attr_bool(in, "transpose_b");
  int ra = a->rank, rb = b->rank, rank = ra - 2;
  int64_t m = a->dims[ra - 2 + ta], ka = a->dims[ra - 1 - ta];
  int64_t kb = b->dims[rb - 2 + tb], n = b->dims[rb - 1 - tb];
  if (ka != kb)
    return operand_fail(in, 1, "contracting dimensions differ%s",
                        ta && tb ? " under transpose_a and transpose_b"
                        : ta     ? " under transpose_a"
                        : tb     ? " under transpose_b"
                                 : "");
  memcpy(dims, a->dims, (size_t)rank * sizeof *dims);
  if (!broadcast_into(&rank, dims, rb - 2, b->dims))
    return operand_fail(in, 1, "batch dimensions do not broadcast");
  dims[rank++] = m; /* rank <= RAF_MAX_RANK: both batch parts are <= 6 */
  dims[rank++] = n;
  return set_result(in, 0, a->dtype, rank, dims);
}

/* ---- Neural-network layers ----------------------------------------------- */

raf_status infer_softmax(raf_infer *in) {
  int axis;
  if (admit(in, 0) ||
      normalize_axis(in, "axis", attr_int(in, "axis"), OPND(0)->rank, &axis))
    return RAF_ERROR;
  in->results[0] = OPND(0);
  return RAF_OK;
}

/* gamma and beta have the shape of the normalised dims, x.shape[axis:]. */
raf_status infer_layer_norm(raf_infer *in) {
  const raf_type *x = OPND(0);
  int axis;
  if (admit_all(in) || same_dtype(in, 0, 1) || same_dtype(in, 0, 2) ||
      normalize_axis(in, "axis", attr_int(in, "axis"), x->rank, &axis) ||
      need_shape(in, 1, "gamma", x->rank - axis, x->dims + axis) ||
      need_shape(in, 2, "beta", x->rank - axis, x->dims + axis) ||
      positive(in, "eps", attr_float(in, "eps")))
    return RAF_ERROR;
  in->results[0] = OPND(0);
  return RAF_OK;
}

/* The key seeds the mask; it is not data, so only x admits the dtypes. */
raf_status infer_dropout(raf_infer *in) {
  const raf_type *key = OPND(1);
  double p = attr_float(in, "p");
  if (admit(in, 0))
    return RAF_ERROR;
  if (key->dtype != RAF_I64 ||
      !(key->rank == 0 || (key->rank == 1 && key->dims[0] == 2)))
    return operand_fail(in, 1, "key must be i64[] or i64[2]");
  if (!(p >= 0 && p < 1)) /* also rejects NaN */
    return attr_fail(in, "p", false, "p must be in [0, 1), got %g", p);
  in->results[0] = OPND(0);
  return RAF_OK;
}

/* q, k, v (operands first..first+2): [batch.., heads, seq, dim], with equal
 * leading dims; dims gets the result's shape, q's with v's last dim. */
static raf_status attention_dims(raf_infer *in, int first, int64_t *dims) {
  const raf_type *q = OPND(first), *k = OPND(first + 1), *v = OPND(first + 2);
  static const char *const names[] = {"q", "k", "v"};
  raf_attr_value scale;
  for (int i = first; i < first + 3; i++)
    if (admit(in, i))
      return RAF_ERROR;
  if (same_dtype(in, first, first + 1) || same_dtype(in, first, first + 2) ||
      need_rank(in, first, "q", 3, true))
    return RAF_ERROR;
  int r = q->rank;
  for (int i = 1; i < 3; i++) {
    const raf_type *t = OPND(first + i);
    if (t->rank != r ||
        memcmp(t->dims, q->dims, (size_t)(r - 2) * sizeof *dims) != 0)
      return operand_fail(in, first + i, "the leading dimensions of %s do "
                          "not match q's", names[i]);
  }
  if (q->dims[r - 1] != k->dims[r - 1])
    return operand_fail(in, first + 1, "q and k head dimensions differ "
                        "(%lld vs %lld)", LL(q->dims[r - 1]),
                        LL(k->dims[r - 1]));
  if (k->dims[r - 2] != v->dims[r - 2])
    return operand_fail(in, first + 2, "k and v sequence lengths differ "
                        "(%lld vs %lld)", LL(k->dims[r - 2]),
                        LL(v->dims[r - 2]));
  if (attr(in, "scale", &scale) && positive(in, "scale", scale.u.f))
    return RAF_ERROR;
  memcpy(dims, q->dims, (size_t)r * sizeof *dims);
  dims[r - 1] = v->dims[r - 1];
  return RAF_OK;
}

raf_status infer_attention(raf_infer *in) {
  int64_t dims[RAF_MAX_RANK];
  if (attention_dims(in, 0, dims))
    return RAF_ERROR;
  return set_result(in, 0, OPND(0)->dtype, OPND(0)->rank, dims);
}

/* Output size of a window sliding over the two spatial dims, PyTorch's
 * floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1. The caller has checked
 * pad >= 0 and k, stride, dil >= 1 (dil NULL means 1). */
static raf_status window2d(raf_infer *in, const int64_t *hw, const int64_t *k,
                           const int64_t *pad, const int64_t *stride,
                           const int64_t *dil, int64_t *out) {
  int64_t extent[2], padded[2];
  for (int i = 0; i < 2; i++) {
    if (!mul_ok(dil ? dil[i] : 1, k[i] - 1, &extent[i]) ||
        extent[i] == INT64_MAX || pad[i] > (INT64_MAX - hw[i]) / 2)
      return raf_infer_fail(in, "window sizes overflow");
    extent[i] += 1;
    padded[i] = hw[i] + 2 * pad[i];
  }
  if (extent[0] > padded[0] || extent[1] > padded[1])
    return operand_fail(in, -1, "kernel extent %lldx%lld exceeds padded "
                        "input %lldx%lld", LL(extent[0]), LL(extent[1]),
                        LL(padded[0]), LL(padded[1]));
  for (int i = 0; i < 2; i++)
    out[i] = (padded[i] - extent[i]) / stride[i] + 1;
  return RAF_OK;
}

/* The result shape of conv2d over an input of shape x [N, C, H, W] (spelt
 * xs in messages) with weight shape w [O, C / groups, KH, KW] (spelt ws);
 * the ranks are checked. The backward ops pass a shape attribute for one
 * of the two. */
static raf_status conv2d_dims(raf_infer *in, const int64_t *x, const char *xs,
                              const int64_t *w, const char *ws,
                              int64_t *dims) {
  raf_attr_value stride, pad, dil;
  if (need(in, "stride", &stride) || need(in, "padding", &pad) ||
      need(in, "dilation", &dil) ||
      check_ints(in, "stride", &stride, 2, 1) ||
      check_ints(in, "padding", &pad, 2, 0) ||
      check_ints(in, "dilation", &dil, 2, 1))
    return RAF_ERROR;
  int64_t groups = attr_int(in, "groups"), c = x[1], o = w[0];
  if (groups < 1)
    return attr_fail(in, "groups", false, "groups must be at least 1, got "
                     "%lld", LL(groups));
  if (c % groups || o % groups)
    return attr_fail(in, "groups", true, "groups = %lld does not divide the "
                     "%lld %s channels", LL(groups), LL(c % groups ? c : o),
                     c % groups ? "input" : "output");
  if (w[1] != c / groups)
    return raf_infer_fail(in, "weight %s with groups = %lld does not fit the "
                          "%lld channels of %s", ws, LL(groups), LL(c), xs);
  if (w[2] < 1 || w[3] < 1)
    return raf_infer_fail(in, "weight %s has an empty kernel", ws);
  if (window2d(in, x + 2, w + 2, pad.u.ints.v, stride.u.ints.v, dil.u.ints.v,
               dims + 2))
    return RAF_ERROR;
  dims[0] = x[0];
  dims[1] = o;
  return RAF_OK;
}

/* x: [N, C, H, W]; w: [O, C / groups, KH, KW]. */
raf_status infer_conv2d(raf_infer *in) {
  const raf_type *x = OPND(0), *w = OPND(1);
  int64_t dims[4];
  if (admit_all(in) || same_dtype(in, 0, 1) ||
      need_rank(in, 0, "x", 4, false) || need_rank(in, 1, "w", 4, false) ||
      conv2d_dims(in, x->dims, TY(x), w->dims, TY(w), dims))
    return RAF_ERROR;
  return set_result(in, 0, x->dtype, 4, dims);
}

/* The result shape of a pooling window over x [N, C, H, W]. No stride
 * means the kernel's; padding is at most half the kernel, as PyTorch
 * requires. */
static raf_status pool2d_dims(raf_infer *in, const int64_t *x,
                              int64_t *dims) {
  raf_attr_value kernel, stride, pad;
  if (need(in, "kernel", &kernel) || check_ints(in, "kernel", &kernel, 2, 1))
    return RAF_ERROR;
  if (!attr(in, "stride", &stride))
    stride = kernel;
  if (check_ints(in, "stride", &stride, 2, 1) || need(in, "padding", &pad) ||
      check_ints(in, "padding", &pad, 2, 0))
    return RAF_ERROR;
  const int64_t *k = kernel.u.ints.v, *p = pad.u.ints.v;
  if (p[0] > k[0] / 2 || p[1] > k[1] / 2)
    return attr_fail(in, "padding", false, "padding should be at most half "
                     "of kernel size, got padding %s for kernel %s",
                     INTS(p, 2), INTS(k, 2));
  if (window2d(in, x + 2, k, p, stride.u.ints.v, NULL, dims + 2))
    return RAF_ERROR;
  dims[0] = x[0];
  dims[1] = x[1];
  return RAF_OK;
}

raf_status infer_pool2d(raf_infer *in) {
  const raf_type *x = OPND(0);
  int64_t dims[4];
  if (admit(in, 0) || need_rank(in, 0, "x", 4, false) ||
      pool2d_dims(in, x->dims, dims))
    return RAF_ERROR;
  return set_result(in, 0, x->dtype, 4, dims);
}

/* Results: y (x's type), then the new running mean and variance, [C]. */
raf_status infer_batch_norm(raf_infer *in) {
  static const char *const names[] = {"x", "gamma", "beta", "mean", "var"};
  const raf_type *x = OPND(0);
  double momentum = attr_float(in, "momentum");
  if (admit_all(in) || need_rank(in, 0, "x", 2, true))
    return RAF_ERROR;
  for (int i = 1; i < 5; i++)
    if (same_dtype(in, 0, i) || need_shape(in, i, names[i], 1, x->dims + 1))
      return RAF_ERROR;
  if (positive(in, "eps", attr_float(in, "eps")))
    return RAF_ERROR;
  if (!(momentum >= 0 && momentum <= 1))
    return attr_fail(in, "momentum", false, "momentum must be in [0, 1], got "
                     "%g", momentum);
  in->results[0] = OPND(0);
  if (set_result(in, 1, x->dtype, 1, x->dims + 1))
    return RAF_ERROR;
  in->results[2] = in->results[1];
  return RAF_OK;
}

/* ---- Losses -------------------------------------------------------------- */

/* reduction = "none" keeps the per-element shape; "mean" and "sum" (the
 * choices were checked with the other attributes) give a scalar. */
static raf_status loss_result(raf_infer *in, raf_dtype dt, int rank,
                              const int64_t *dims) {
  if (strcmp(attr_str(in, "reduction"), "none") == 0)
    return set_result(in, 0, dt, rank, dims);
  return set_result(in, 0, dt, 0, NULL);
}

/* logits [.., classes], labels [..] of class indices. */
raf_status infer_cross_entropy(raf_infer *in) {
  const raf_type *logits = OPND(0);
  if (admit(in, 0) || need_rank(in, 0, "logits", 1, true) ||
      integer_operand(in, 1, "labels") ||
      need_shape(in, 1, "labels", logits->rank - 1, logits->dims))
    return RAF_ERROR;
  return loss_result(in, logits->dtype, logits->rank - 1, logits->dims);
}

/* No broadcasting: a prediction and its target have one shape. */
raf_status infer_mse_loss(raf_infer *in) {
  const raf_type *a = OPND(0), *b = OPND(1);
  if (admit_all(in) || same_dtype(in, 0, 1))
    return RAF_ERROR;
  if (a != b) /* interned, and the element types agree */
    return operand_fail(in, 1, "shapes differ");
  return loss_result(in, a->dtype, a->rank, a->dims);
}

/* ---- Collectives --------------------------------------------------------- */

/* all_reduce keeps the shape and ignores axis (so the default 0 also serves
 * scalars); reduce_scatter and all_slice divide dim[axis] by world_size,
 * all_gather multiplies it. */
raf_status infer_collective(raf_infer *in) {
  const raf_type *x = OPND(0);
  int64_t ws = attr_int(in, "world_size"), dims[RAF_MAX_RANK];
  int axis;
  if (admit(in, 0))
    return RAF_ERROR;
  if (ws < 1)
    return attr_fail(in, "world_size", false,
                     "world_size must be at least 1, got %lld", LL(ws));
  if (in->stmt->op == RAF_OP_ALL_REDUCE) {
    in->results[0] = OPND(0);
    return RAF_OK;
  }
  if (normalize_axis(in, "axis", attr_int(in, "axis"), x->rank, &axis))
    return RAF_ERROR;
  memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
  if (in->stmt->op == RAF_OP_REDUCE_SCATTER ||
      in->stmt->op == RAF_OP_ALL_SLICE) {
    if (dims[axis] % ws)
      return attr_fail(in, "world_size", true, "axis %d has size %lld, which "
                       "world_size = %lld does not divide", axis,
                       LL(dims[axis]), LL(ws));
    dims[axis] /= ws;
  } else if (!mul_ok(dims[axis], ws, &dims[axis])) {
    return too_large(in);
  }
  return set_result(in, 0, x->dtype, x->rank, dims);
}

/* ---- Backward operators -------------------------------------------------- */

/* The autodiff pass makes these (docs/LangRef.md, "Backward operators").
 * Operand 0 is always dy, the gradient of the forward op's result; the
 * checks say which forward shape each gradient must have, so a backward
 * op written by hand is checked like any other. */

/* Operand i must be exactly operand j's type (dy against a forward value). */
static raf_status same_type(raf_infer *in, int i, int j, const char *what,
                            const char *of) {
  if (OPND(i) == OPND(j)) /* interned */
    return RAF_OK;
  return operand_fail(in, i, "%s must have the type of %s", what, of);
}

/* A shape attribute: entries non-negative, len of them (any when < 0). */
static raf_status shape_attr(raf_infer *in, raf_attr_value *v, int len) {
  if (need(in, "shape", v) || check_ints(in, "shape", v, len, 0) ||
      check_rank(in, v->u.ints.n))
    return RAF_ERROR;
  int64_t numel = 1;
  for (int i = 0; i < v->u.ints.n; i++)
    if (!mul_ok(numel, v->u.ints.v[i], &numel))
      return too_large(in);
  return RAF_OK;
}

/* The elementwise backward operators (gelu_grad, ...)(dy, x): dy and x of
 * one type, the result's. */
raf_status infer_elem_grad(raf_infer *in) {
  if (admit_all(in) || same_type(in, 0, 1, "dy", "x"))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* softmax_grad, log_softmax_grad(dy, y): y is the forward result. */
raf_status infer_softmax_grad(raf_infer *in) {
  int axis;
  if (admit_all(in) || same_type(in, 0, 1, "dy", "y") ||
      normalize_axis(in, "axis", attr_int(in, "axis"), OPND(1)->rank, &axis))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* layer_norm_grad(dy, x, gamma) -> (dx, dgamma, dbeta). */
raf_status infer_layer_norm_grad(raf_infer *in) {
  const raf_type *x = OPND(1);
  int axis;
  if (admit_all(in) || same_type(in, 0, 1, "dy", "x") ||
      same_dtype(in, 1, 2) ||
      normalize_axis(in, "axis", attr_int(in, "axis"), x->rank, &axis) ||
      need_shape(in, 2, "gamma", x->rank - axis, x->dims + axis) ||
      positive(in, "eps", attr_float(in, "eps")))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  in->results[1] = in->results[2] = OPND(2);
  return RAF_OK;
}

/* cross_entropy_grad(dy, logits, labels): dy is the loss's gradient, a
 * scalar, or the labels' shape under reduction = "none". */
raf_status infer_cross_entropy_grad(raf_infer *in) {
  const raf_type *logits = OPND(1);
  bool none = strcmp(attr_str(in, "reduction"), "none") == 0;
  if (admit(in, 0) || admit(in, 1) || same_dtype(in, 0, 1) ||
      need_rank(in, 1, "logits", 1, true) ||
      integer_operand(in, 2, "labels") ||
      need_shape(in, 2, "labels", logits->rank - 1, logits->dims) ||
      need_shape(in, 0, "dy", none ? logits->rank - 1 : 0, logits->dims))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* take_grad(dy, indices) {axis, dim}: the gradient of take(table, indices)
 * with table.shape[axis] = dim; dy is take's result shape, so the table's
 * rank is dy's minus the indices' plus one, and axis counts in it. */
raf_status infer_take_grad(raf_infer *in) {
  const raf_type *dy = OPND(0), *ix = OPND(1);
  raf_attr_value dim;
  int64_t dims[RAF_MAX_RANK];
  int axis, rank = dy->rank - ix->rank + 1;
  if (admit(in, 0) || integer_operand(in, 1, "indices") ||
      need(in, "dim", &dim))
    return RAF_ERROR;
  if (rank < 1)
    return operand_fail(in, 0, "dy has a lower rank than indices");
  if (normalize_axis(in, "axis", attr_int(in, "axis"), rank, &axis))
    return RAF_ERROR;
  if (memcmp(dy->dims + axis, ix->dims, (size_t)ix->rank * sizeof *dims))
    return operand_fail(in, 0, "dy does not hold indices at axis %d", axis);
  if (dim.u.i < 0)
    return attr_fail(in, "dim", false, "dim must be non-negative, got %lld",
                     LL(dim.u.i));
  memcpy(dims, dy->dims, (size_t)axis * sizeof *dims);
  dims[axis] = dim.u.i;
  memcpy(dims + axis + 1, dy->dims + axis + ix->rank,
         (size_t)(rank - axis - 1) * sizeof *dims);
  return set_result(in, 0, dy->dtype, rank, dims);
}

/* slice_grad(dy) {shape, begin, end, strides}: dy is what slice of a
 * tensor of `shape` gives; the result has `shape`. */
raf_status infer_slice_grad(raf_infer *in) {
  const raf_type *dy = OPND(0);
  raf_attr_value shape, begin, end, strides;
  int64_t dims[RAF_MAX_RANK];
  bool stepped = attr(in, "strides", &strides);
  if (admit(in, 0) || shape_attr(in, &shape, -1))
    return RAF_ERROR;
  int n = shape.u.ints.n;
  if (need(in, "begin", &begin) || need(in, "end", &end) ||
      check_ints(in, "begin", &begin, n, INT64_MIN) ||
      check_ints(in, "end", &end, n, INT64_MIN) ||
      (stepped && check_ints(in, "strides", &strides, n, INT64_MIN)))
    return RAF_ERROR;
  for (int i = 0; i < n; i++) {
    int64_t step = stepped ? strides.u.ints.v[i] : 1;
    if (step == 0)
      return attr_fail(in, "strides", false, "strides must be nonzero, got %s",
                       INTS(strides.u.ints.v, n));
    dims[i] = slice_len(shape.u.ints.v[i], begin.u.ints.v[i],
                        end.u.ints.v[i], step);
  }
  if (need_shape(in, 0, "dy", n, dims))
    return RAF_ERROR;
  return set_result(in, 0, dy->dtype, n, shape.u.ints.v);
}

/* max_pool2d_grad(dy, x): dy has the pooled shape of x. */
raf_status infer_max_pool2d_grad(raf_infer *in) {
  int64_t dims[4];
  if (admit_all(in) || same_dtype(in, 0, 1) ||
      need_rank(in, 1, "x", 4, false) ||
      pool2d_dims(in, OPND(1)->dims, dims) ||
      need_shape(in, 0, "dy", 4, dims))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* avg_pool2d_grad(dy) {.., shape}: the input's shape is an attribute, since
 * avg_pool2d's gradient reads no forward value. */
raf_status infer_avg_pool2d_grad(raf_infer *in) {
  raf_attr_value shape;
  int64_t dims[4];
  if (admit(in, 0) || shape_attr(in, &shape, 4) ||
      pool2d_dims(in, shape.u.ints.v, dims) ||
      need_shape(in, 0, "dy", 4, dims))
    return RAF_ERROR;
  return set_result(in, 0, OPND(0)->dtype, 4, shape.u.ints.v);
}

/* conv2d_grad_input(dy, w) {.., shape = x's}, conv2d_grad_weight(dy, x)
 * {.., shape = w's}: dy has the shape conv2d(x, w) gives; the result has
 * `shape`. */
raf_status infer_conv2d_grad(raf_infer *in) {
  bool input = in->stmt->op == RAF_OP_CONV2D_GRAD_INPUT;
  const raf_type *t = OPND(1);
  raf_attr_value shape;
  int64_t dims[4];
  if (admit_all(in) || same_dtype(in, 0, 1) ||
      need_rank(in, 1, input ? "w" : "x", 4, false) ||
      shape_attr(in, &shape, 4))
    return RAF_ERROR;
  const int64_t *s = shape.u.ints.v;
  if ((input ? conv2d_dims(in, s, INTS(s, 4), t->dims, TY(t), dims)
             : conv2d_dims(in, t->dims, TY(t), s, INTS(s, 4), dims)) ||
      need_shape(in, 0, "dy", 4, dims))
    return RAF_ERROR;
  return set_result(in, 0, t->dtype, 4, s);
}

/* batch_norm_grad(dy, x, gamma, mean, var) -> (dx, dgamma, dbeta); mean
 * and var are the running statistics, read when not training. */
raf_status infer_batch_norm_grad(raf_infer *in) {
  static const char *const names[] = {"dy", "x", "gamma", "mean", "var"};
  const raf_type *x = OPND(1);
  if (admit_all(in) || need_rank(in, 1, "x", 2, true) ||
      same_type(in, 0, 1, "dy", "x"))
    return RAF_ERROR;
  for (int i = 2; i < 5; i++)
    if (same_dtype(in, 1, i) || need_shape(in, i, names[i], 1, x->dims + 1))
      return RAF_ERROR;
  if (positive(in, "eps", attr_float(in, "eps")))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  in->results[1] = in->results[2] = OPND(2);
  return RAF_OK;
}

/* scaled_dot_product_attention_grad(dy, q, k, v) -> (dq, dk, dv). */
raf_status infer_attention_grad(raf_infer *in) {
  int64_t dims[RAF_MAX_RANK];
  if (admit(in, 0) || attention_dims(in, 1, dims) || same_dtype(in, 0, 1) ||
      need_shape(in, 0, "dy", OPND(1)->rank, dims))
    return RAF_ERROR;
  for (int i = 0; i < 3; i++)
    in->results[i] = OPND(i + 1);
  return RAF_OK;
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
