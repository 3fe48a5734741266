/* ops_elementwise.c: the mappers of ONNX's elementwise ops (arithmetic,
 * comparisons, logic, activations, casts), the emitting helpers every
 * mapper family shares (broadcasting, reshape, cast, reductions, slices,
 * concatenation, constant padding), and the element type checks.
 *
 * An ONNX op that is one .raf op is a row of imp_ops_elementwise (at the
 * end) naming that op, served by a generic mapper (map_unary, map_arith,
 * map_compare, map_chain) that emits the row's op and admits the element
 * types ops.def gives it: adding such an op is that one row. Ops .raf lacks
 * are short compositions with the ONNX definition's semantics (Elu is
 * where(x < 0, alpha * (exp(x) - 1), x), ...), as test/onnx/README.md lists
 * them; their rows name the .raf op whose element types they take. */
#include "raf-import/import.h"

#include <math.h>
#include <string.h>

/* --- attributes ----------------------------------------------------------- */

const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n,
                                     const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
      return n->attribute[i];
  return NULL;
}

int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name,
                     int64_t dflt) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  return a ? a->i : dflt;
}

double imp_attr_float(const Onnx__NodeProto *n, const char *name,
                      double dflt) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  return a ? a->f : dflt;
}

const char *imp_attr_string(imp *im, const Onnx__NodeProto *n,
                            const char *name, const char *dflt) {
  const Onnx__AttributeProto *a = imp_attr(n, name);
  if (!a || !a->has_s)
    return dflt;
  char *s = raf_arena_strndup(&im->arena, (const char *)a->s.data, a->s.len);
  if (!s) {
    im->oom = true;
    return dflt;
  }
  return s;
}

const int64_t *imp_attr_ints(const Onnx__NodeProto *n, const char *name,
                             int *count) {
  static const int64_t none[1];
  const Onnx__AttributeProto *a = imp_attr(n, name);
  *count = a ? (int)a->n_ints : 0;
  if (!a)
    return NULL;
  return a->n_ints ? a->ints : none; /* present, empty: not NULL */
}

/* --- shared helpers ------------------------------------------------------- */

int imp_norm_axis(imp *im, int64_t axis, int rank) {
  int64_t hi = rank > 1 ? rank : 1;
  if (axis < -rank || axis >= hi) {
    imp_unsupported(im, "axis %lld out of range for rank %d",
                    (long long)axis, rank);
    return -1;
  }
  return (int)(axis < 0 ? axis + rank : axis);
}

bool imp_broadcast(imp *im, const imp_value *a, const imp_value *b,
                   int *rank, int64_t *dims) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      imp_unsupported(im, "shapes %s and %s do not broadcast",
                      imp_type_str(im, a->dt, a->rank, a->dims),
                      imp_type_str(im, b->dt, b->rank, b->dims));
      return false;
    }
    dims[i] = da == 1 ? db : da;
  }
  *rank = r;
  return true;
}

static imp_value *poison(imp *im) {
  imp_value *v = imp_value_new(im, RAF_F32, 0, NULL);
  v->poisoned = true;
  return v;
}

imp_value *imp_binary(imp *im, const char *op, imp_value *a, imp_value *b,
                      raf_dtype dt) {
  int rank;
  int64_t dims[RAF_MAX_RANK];
  if (!a || !b) {
    imp_unsupported(im, "an input is missing");
    return poison(im);
  }
  if (a->poisoned || b->poisoned || !imp_broadcast(im, a, b, &rank, dims))
    return poison(im);
  imp_value *args[2] = {a, b};
  return imp_emit(im, op, args, 2, NULL, dt, rank, dims);
}

imp_value *imp_unary(imp *im, const char *op, imp_value *a) {
  if (a->poisoned)
    return a;
  return imp_emit(im, op, &a, 1, NULL, a->dt, a->rank, a->dims);
}

imp_value *imp_where(imp *im, imp_value *c, imp_value *a, imp_value *b) {
  int r1, r2;
  int64_t d1[RAF_MAX_RANK], d2[RAF_MAX_RANK];
  if (c->poisoned || a->poisoned || b->poisoned ||
      !imp_broadcast(im, c, a, &r1, d1))
    return poison(im);
  imp_value tmp = {.dt = a->dt, .rank = r1};
  memcpy(tmp.dims, d1, sizeof d1);
  if (!imp_broadcast(im, &tmp, b, &r2, d2))
    return poison(im);
  imp_value *args[3] = {c, a, b};
  return imp_emit(im, "where", args, 3, NULL, a->dt, r2, d2);
}

imp_value *imp_reshape(imp *im, imp_value *v, int rank, const int64_t *dims) {
  if (v->poisoned)
    return v;
  if (rank == v->rank &&
      !memcmp(dims, v->dims, sizeof(int64_t) * (size_t)rank))
    return v;
  if (imp_numel(rank, dims) != imp_numel(v->rank, v->dims)) {
    imp_unsupported(im, "cannot reshape %s to %s",
                    imp_type_str(im, v->dt, v->rank, v->dims),
                    imp_type_str(im, v->dt, rank, dims));
    return poison(im);
  }
  if (imp_foldable(v)) {
    imp_tensor *t = v->konst->splat ? imp_tensor_splat(im, v->dt, rank, dims)
                                    : imp_tensor_new(im, v->dt, rank, dims);
    if (!t)
      return poison(im);
    memcpy(t->data, v->konst->data,
           (size_t)(t->splat ? 1 : t->numel) * (size_t)raf_dtype_size(v->dt));
    return imp_const_value(im, t);
  }
  return imp_emit(im, "reshape", &v, 1,
                  imp_fmt(im, "{shape = %s}", imp_fmt_ints(im, dims, rank)),
                  v->dt, rank, dims);
}

imp_value *imp_cast(imp *im, imp_value *v, raf_dtype to) {
  if (v->poisoned)
    return v;
  return imp_emit(im, "cast", &v, 1,
                  imp_fmt(im, "{dtype = %s}", raf_dtype_name(to)), to,
                  v->rank, v->dims);
}

bool imp_admits(imp *im, const imp_value *v, raf_opcode op) {
  if (raf_op_table[op].dtypes & (1u << v->dt))
    return true;
  imp_unsupported(im, "element type %s is not admitted by .raf's %s",
                  raf_dtype_name(v->dt), raf_op_table[op].name);
  return false;
}

bool imp_float_only(imp *im, const imp_value *v) {
  if (imp_is_float(v->dt))
    return true;
  imp_unsupported(im, "element type %s: ONNX's %s is defined on floats",
                  raf_dtype_name(v->dt), im->node->op_type);
  return false;
}

bool imp_int_indices(imp *im, const imp_value *v) {
  if (imp_is_int(v->dt))
    return true;
  imp_unsupported(im, "indices of element type %s (.raf's take wants "
                      "integers)", raf_dtype_name(v->dt));
  return false;
}

imp_value *imp_reduce(imp *im, const char *op, imp_value *x,
                      const int64_t *axes, int naxes, bool keep) {
  bool red[RAF_MAX_RANK] = {0};
  if (x->poisoned)
    return x;
  for (int i = 0; i < x->rank; i++)
    red[i] = !axes;
  for (int i = 0; axes && i < naxes; i++) {
    int a = imp_norm_axis(im, axes[i], x->rank);
    if (a < 0)
      return poison(im);
    red[a] = true;
  }
  int rank = 0;
  int64_t dims[RAF_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    if (!red[i])
      dims[rank++] = x->dims[i];
    else if (keep)
      dims[rank++] = 1;
  }
  const char *attrs;
  if (axes && keep)
    attrs = imp_fmt(im, "{axes = %s, keepdims}", imp_fmt_ints(im, axes, naxes));
  else if (axes)
    attrs = imp_fmt(im, "{axes = %s}", imp_fmt_ints(im, axes, naxes));
  else
    attrs = keep ? "{keepdims}" : NULL;
  return imp_emit(im, op, &x, 1, attrs, x->dt, rank, dims);
}

/* The length of Python's range(begin, end, step) over a dimension of n,
 * begin and end clamped as numpy's slices clamp them; *b gets the clamped
 * begin. */
static int64_t slice_len(int64_t n, int64_t begin, int64_t end,
                         int64_t step, int64_t *b) {
  /* begin, end: ONNX's INT64_MIN/MAX mean "to the end"; n is at most
   * IMP_MAX_DIM, so the clamped values and their differences fit */
  if (begin < -n) begin = -n - 1;
  if (end < -n) end = -n - 1;
  if (begin > n) begin = n;
  if (end > n) end = n;
  if (step > 0) {
    if (begin < 0) begin += n;
    if (end < 0) end += n;
    begin = begin < 0 ? 0 : begin;
    end = end < 0 ? 0 : end;
    *b = begin;
    return end > begin ? (end - begin - 1) / step + 1 : 0;
  }
  if (begin < 0) begin += n;
  if (end < 0) end += n;
  begin = begin < 0 ? -1 : begin >= n ? n - 1 : begin;
  end = end < 0 ? -1 : end >= n ? n - 1 : end;
  *b = begin;
  /* -step fits: step > INT64_MIN is checked by the caller */
  return begin > end ? (begin - end - 1) / -step + 1 : 0;
}

imp_value *imp_slice(imp *im, imp_value *x, const int64_t *begin,
                     const int64_t *end, const int64_t *strides) {
  if (x->poisoned)
    return x;
  int64_t dims[RAF_MAX_RANK], first[RAF_MAX_RANK];
  bool unit = true;
  for (int i = 0; i < x->rank; i++) {
    int64_t s = strides ? strides[i] : 1;
    if (s == 0 || s == INT64_MIN) {
      imp_unsupported(im, "a slice step of %lld", (long long)s);
      return poison(im);
    }
    unit &= s == 1;
    dims[i] = slice_len(x->dims[i], begin[i], end[i], s, &first[i]);
  }
  if (imp_foldable(x) && x->konst->splat) {
    imp_tensor *t = imp_tensor_splat(im, x->dt, x->rank, dims);
    if (!t)
      return poison(im);
    memcpy(t->data, x->konst->data, (size_t)raf_dtype_size(x->dt));
    return imp_const_value(im, t);
  }
  if (imp_foldable(x)) {
    imp_tensor *t = imp_tensor_new(im, x->dt, x->rank, dims);
    if (!t)
      return poison(im);
    size_t es = (size_t)raf_dtype_size(x->dt);
    for (int64_t o = 0; o < t->numel; o++) {
      int64_t rem = o, src = 0, stride = 1;
      for (int i = x->rank - 1; i >= 0; i--) {
        int64_t k = rem % dims[i];
        rem /= dims[i];
        src += (first[i] + k * (strides ? strides[i] : 1)) * stride;
        stride *= x->dims[i];
      }
      memcpy((char *)t->data + o * (int64_t)es,
             (char *)x->konst->data + src * (int64_t)es, es);
    }
    return imp_const_value(im, t);
  }
  const char *attrs = imp_fmt(im, "{begin = %s, end = %s%s%s}",
                              imp_fmt_ints(im, begin, x->rank),
                              imp_fmt_ints(im, end, x->rank),
                              unit ? "" : ", strides = ",
                              unit ? "" : imp_fmt_ints(im, strides, x->rank));
  return imp_emit(im, "slice", &x, 1, attrs, x->dt, x->rank, dims);
}

imp_value *imp_concat(imp *im, imp_value **parts, int n, int axis) {
  int64_t dims[RAF_MAX_RANK];
  imp_value *x = parts[0];
  memcpy(dims, x->dims, sizeof dims);
  dims[axis] = 0;
  bool fold = true;
  for (int i = 0; i < n; i++) {
    if (parts[i]->poisoned)
      return parts[i];
    if (parts[i]->rank != x->rank) {
      imp_unsupported(im, "concatenated ranks differ");
      return poison(im);
    }
    dims[axis] += parts[i]->dims[axis];
    fold &= imp_foldable(parts[i]);
  }
  if (n == 1)
    return x;
  if (fold) {
    imp_tensor *t = imp_tensor_new(im, x->dt, x->rank, dims);
    if (!t)
      return poison(im);
    for (int i = 0; i < n; i++)
      if (!(parts[i]->konst = imp_tensor_dense(im, parts[i]->konst)))
        return poison(im);
    size_t es = (size_t)raf_dtype_size(x->dt);
    int64_t outer = imp_numel(axis, dims), inner = 1;
    for (int i = axis + 1; i < x->rank; i++)
      inner *= dims[i];
    char *dst = t->data;
    for (int64_t o = 0; o < outer; o++)
      for (int i = 0; i < n; i++) {
        size_t chunk = (size_t)(parts[i]->dims[axis] * inner) * es;
        memcpy(dst, (char *)parts[i]->konst->data + (size_t)o * chunk, chunk);
        dst += chunk;
      }
    return imp_const_value(im, t);
  }
  return imp_emit(im, "concat", parts, n, imp_fmt(im, "{axis = %d}", axis),
                  x->dt, x->rank, dims);
}

imp_value *imp_pad_const(imp *im, imp_value *x, const int64_t *begins,
                         const int64_t *ends, double value) {
  int64_t b[RAF_MAX_RANK], e[RAF_MAX_RANK];
  bool crop = false;
  for (int i = 0; i < x->rank; i++) {
    if (begins[i] < -x->dims[i] || ends[i] < -x->dims[i] ||
        begins[i] > IMP_MAX_DIM || ends[i] > IMP_MAX_DIM) {
      imp_unsupported(im, "pads of %lld and %lld for a dimension of %lld",
                      (long long)begins[i], (long long)ends[i],
                      (long long)x->dims[i]);
      return poison(im);
    }
    crop |= begins[i] < 0 || ends[i] < 0;
  }
  if (crop) {
    int64_t sb[RAF_MAX_RANK], se[RAF_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
      sb[i] = begins[i] < 0 ? -begins[i] : 0;
      se[i] = x->dims[i] - (ends[i] < 0 ? -ends[i] : 0);
    }
    x = imp_slice(im, x, sb, se, NULL);
  }
  for (int i = 0; i < x->rank; i++) {
    b[i] = begins[i] > 0 ? begins[i] : 0;
    e[i] = ends[i] > 0 ? ends[i] : 0;
  }
  for (int axis = 0; axis < x->rank; axis++) {
    if (!b[axis] && !e[axis])
      continue;
    imp_value *parts[3];
    int np = 0;
    int64_t dims[RAF_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    if (b[axis]) {
      dims[axis] = b[axis];
      parts[np++] = imp_splat(im, value, x->dt, x->rank, dims);
    }
    parts[np++] = x;
    if (e[axis]) {
      dims[axis] = e[axis];
      parts[np++] = imp_splat(im, value, x->dt, x->rank, dims);
    }
    x = imp_concat(im, parts, np, axis);
  }
  return x;
}

/* --- unary ---------------------------------------------------------------- */

/* One .raf op of the same operand and result type: the row's. */
static int map_unary(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)n, (void)nins;
  raf_opcode op = im->row->raf;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, op))
    return -1;
  if (op == RAF_OP_NEG && imp_foldable(x) && imp_is_int(x->dt)) {
    imp_tensor *t = imp_tensor_like(im, x->konst, x->dt);
    if (!t)
      return -1;
    for (int64_t i = 0; i < (t->splat ? 1 : t->numel); i++)
      imp_set_i64(t, i, (int64_t)(0 - (uint64_t)imp_get_i64(x->konst, i)));
    outs[0] = imp_const_value(im, t);
    return 1;
  }
  outs[0] = imp_unary(im, raf_op_table[op].name, x);
  return 1;
}

static int map_gelu(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)nins;
  if (!imp_admits(im, ins[0], im->row->raf))
    return -1;
  const char *approx = imp_attr_string(im, n, "approximate", "none");
  outs[0] = imp_emit(im, "gelu", ins, 1,
                     strcmp(approx, "none")
                         ? imp_fmt(im, "{approximate = \"%s\"}", approx)
                         : NULL,
                     ins[0]->dt, ins[0]->rank, ins[0]->dims);
  return 1;
}

static int map_reciprocal(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                          int nins, imp_value **outs) {
  (void)n, (void)nins;
  if (!imp_admits(im, ins[0], im->row->raf))
    return -1;
  outs[0] = imp_binary(im, "div", imp_scalar(im, 1, ins[0]->dt), ins[0],
                       ins[0]->dt);
  return 1;
}

static int map_identity(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                        int nins, imp_value **outs) {
  (void)im, (void)n, (void)nins;
  outs[0] = ins[0];
  return 1;
}

/* --- binary --------------------------------------------------------------- */

static int64_t fold_int(raf_opcode op, int64_t a, int64_t b) {
  /* wrap like NumPy's int64 arithmetic, without C's signed overflow */
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  return (int64_t)(op == RAF_OP_ADD   ? ua + ub
                   : op == RAF_OP_SUB ? ua - ub
                                      : ua * ub);
}

/* Integer Add/Sub/Mul of two constants (shape arithmetic) folded. */
static imp_value *fold_binary(imp *im, raf_opcode op, imp_value *a,
                              imp_value *b) {
  int rank;
  int64_t dims[RAF_MAX_RANK];
  if (!imp_broadcast(im, a, b, &rank, dims))
    return NULL;
  imp_tensor *t = imp_tensor_new(im, a->dt, rank, dims);
  if (!t)
    return NULL;
  for (int64_t o = 0; o < t->numel; o++) {
    int64_t rem = o, ia = 0, ib = 0, sa = 1, sb = 1;
    for (int i = rank - 1; i >= 0; i--) {
      int64_t k = rem % dims[i];
      rem /= dims[i];
      int da = i - (rank - a->rank), db = i - (rank - b->rank);
      if (da >= 0) {
        ia += (a->dims[da] == 1 ? 0 : k) * sa;
        sa *= a->dims[da];
      }
      if (db >= 0) {
        ib += (b->dims[db] == 1 ? 0 : k) * sb;
        sb *= b->dims[db];
      }
    }
    imp_set_i64(t, o, fold_int(op, imp_get_i64(a->konst, ia),
                               imp_get_i64(b->konst, ib)));
  }
  return imp_const_value(im, t);
}

/* Add, Sub, Mul, Div: the row's .raf op. */
static int map_arith(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)n, (void)nins;
  raf_opcode op = im->row->raf;
  imp_value *a = ins[0], *b = ins[1];
  if (a->dt != b->dt)
    return imp_unsupported(im, "operand types %s and %s differ",
                           raf_dtype_name(a->dt), raf_dtype_name(b->dt));
  if (op != RAF_OP_DIV && imp_foldable(a) && imp_foldable(b) &&
      imp_is_int(a->dt)) {
    outs[0] = fold_binary(im, op, a, b);
    return outs[0] ? 1 : -1;
  }
  if (op == RAF_OP_DIV && imp_is_int(a->dt))
    return imp_unsupported(im, "integer Div (.raf div is true division)");
  if (!imp_admits(im, a, op))
    return -1;
  outs[0] = imp_binary(im, raf_op_table[op].name, a, b, a->dt);
  return 1;
}

static int map_pow(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                   int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0], *y = ins[1];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  if (y->dt != x->dt) {
    /* ONNX lets the exponent have another type; .raf casts it first, which
     * must not change its values. */
    imp_tensor *yv = imp_known(im, y, "a Pow exponent of another type");
    if (!yv)
      return -1;
    for (int64_t i = 0; i < (yv->splat ? 1 : yv->numel); i++) {
      double d = imp_get_f64(yv, i);
      imp_tensor probe = {.dt = x->dt, .numel = 1};
      char buf[8];
      probe.data = buf;
      imp_set_f64(&probe, 0, d);
      if (imp_get_f64(&probe, 0) != d)
        return imp_unsupported(im, "the Pow exponent is not exact in the "
                                   "base type");
    }
    y = imp_cast(im, y, x->dt);
  }
  outs[0] = imp_binary(im, "pow", x, y, x->dt);
  return 1;
}

/* Equal, Less, ...: the row's .raf comparison. */
static int map_compare(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                       int nins, imp_value **outs) {
  (void)n, (void)nins;
  raf_opcode op = im->row->raf;
  if (!imp_admits(im, ins[0], op))
    return -1;
  outs[0] = imp_binary(im, raf_op_table[op].name, ins[0], ins[1], RAF_BOOL);
  return 1;
}

static int map_logic(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)nins;
  const char *op = n->op_type;
  if (!strcmp(op, "Not"))
    outs[0] = imp_binary(im, "eq", ins[0], imp_scalar(im, 0, RAF_BOOL),
                         RAF_BOOL);
  else if (!strcmp(op, "And"))
    outs[0] = imp_where(im, ins[0], ins[1], imp_scalar(im, 0, RAF_BOOL));
  else if (!strcmp(op, "Or"))
    outs[0] = imp_where(im, ins[0], imp_scalar(im, 1, RAF_BOOL), ins[1]);
  else
    outs[0] = imp_binary(im, "ne", ins[0], ins[1], RAF_BOOL);
  return 1;
}

static int map_where(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)n, (void)nins;
  outs[0] = imp_where(im, ins[0], ins[1], ins[2]);
  return 1;
}

/* Max, Min, Sum of n inputs: chains of the row's .raf op; Mean (the row's
 * div) is Sum's chain divided by n. */
static int map_chain(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)n;
  raf_opcode op = im->row->raf;
  bool mean = op == RAF_OP_DIV;
  for (int i = 0; i < nins; i++)
    if (!ins[i])
      return imp_unsupported(im, "input %d is missing", i);
  if (!imp_admits(im, ins[0], op) ||
      (mean && !imp_admits(im, ins[0], RAF_OP_ADD)))
    return -1;
  const char *chain = raf_op_table[mean ? RAF_OP_ADD : op].name;
  imp_value *acc = ins[0];
  for (int i = 1; i < nins; i++)
    acc = imp_binary(im, chain, acc, ins[i], acc->dt);
  if (mean)
    acc = imp_binary(im, "div", acc, imp_scalar(im, nins, acc->dt), acc->dt);
  outs[0] = acc;
  return 1;
}

/* --- casts ---------------------------------------------------------------- */

static int cast_to(imp *im, imp_value *x, raf_dtype to, imp_value **outs) {
  if (to == RAF_BF16 && (x->dt == RAF_F32 || x->dt == RAF_F64))
    return imp_unsupported(im, "semantics differ: ONNX 1.12's reference "
                               "truncates to bfloat16, .raf rounds to "
                               "nearest even");
  if (imp_foldable(x) && !imp_is_float(to) && !imp_is_float(x->dt)) {
    imp_tensor *t = imp_tensor_like(im, x->konst, to);
    if (!t)
      return -1;
    for (int64_t i = 0; i < (t->splat ? 1 : t->numel); i++)
      imp_set_i64(t, i, imp_get_i64(x->konst, i));
    outs[0] = imp_const_value(im, t);
    return 1;
  }
  outs[0] = imp_cast(im, x, to);
  return 1;
}

static int map_cast(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)nins;
  raf_dtype to;
  int64_t t = imp_attr_int(n, "to", 0);
  if (!imp_dtype_from_onnx((int32_t)t, &to))
    return imp_unsupported(im, "Cast to %s, which .raf lacks",
                           imp_onnx_dtype_name((int32_t)t));
  return cast_to(im, ins[0], to, outs);
}

static int map_castlike(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                        int nins, imp_value **outs) {
  (void)n, (void)nins;
  return cast_to(im, ins[0], ins[1]->dt, outs);
}

/* --- activations ---------------------------------------------------------- */

static imp_value *sc(imp *im, double v, const imp_value *like) {
  return imp_scalar(im, v, like->dt);
}

static int map_clip(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  imp_value *x = ins[0], *lo = NULL, *hi = NULL;
  if (!imp_admits(im, x, im->row->raf) ||
      !imp_admits(im, x, RAF_OP_MINIMUM))
    return -1;
  if (im->opset < 11) {
    if (imp_attr(n, "min"))
      lo = sc(im, imp_attr_float(n, "min", 0), x);
    if (imp_attr(n, "max"))
      hi = sc(im, imp_attr_float(n, "max", 0), x);
  } else {
    lo = nins > 1 ? ins[1] : NULL;
    hi = nins > 2 ? ins[2] : NULL;
  }
  if (lo)
    x = imp_binary(im, "maximum", x, lo, x->dt);
  if (hi)
    x = imp_binary(im, "minimum", x, hi, x->dt);
  outs[0] = x;
  return 1;
}

static int map_leaky_relu(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                          int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_float_only(im, x))
    return -1;
  imp_value *neg = imp_binary(im, "lt", x, sc(im, 0, x), RAF_BOOL);
  imp_value *ax = imp_binary(im, "mul", x,
                             sc(im, imp_attr_float(n, "alpha", 0.01), x), x->dt);
  outs[0] = imp_where(im, neg, ax, x);
  return 1;
}

static int map_prelu(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  imp_value *neg = imp_binary(im, "lt", x, sc(im, 0, x), RAF_BOOL);
  imp_value *ax = imp_binary(im, "mul", x, ins[1], x->dt);
  outs[0] = imp_where(im, neg, ax, x);
  return 1;
}

static int map_thresholded_relu(imp *im, const Onnx__NodeProto *n,
                                imp_value **ins, int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_float_only(im, x))
    return -1;
  imp_value *gt = imp_binary(im, "gt", x,
                             sc(im, imp_attr_float(n, "alpha", 1.0), x), RAF_BOOL);
  outs[0] = imp_where(im, gt, x, sc(im, 0, x));
  return 1;
}

/* alpha * (exp(x) - 1) */
static imp_value *elu_neg(imp *im, imp_value *x, double alpha) {
  imp_value *e = imp_binary(im, "sub", imp_unary(im, "exp", x), sc(im, 1, x),
                            x->dt);
  return imp_binary(im, "mul", e, sc(im, alpha, x), x->dt);
}

static int map_elu(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                   int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  imp_value *neg = imp_binary(im, "lt", x, sc(im, 0, x), RAF_BOOL);
  outs[0] = imp_where(im, neg, elu_neg(im, x, imp_attr_float(n, "alpha", 1.0)),
                      x);
  return 1;
}

static int map_selu(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  double alpha = imp_attr_float(n, "alpha", 1.67326319217681884765625);
  double gamma = imp_attr_float(n, "gamma", 1.05070102214813232421875);
  imp_value *pos = imp_binary(im, "gt", x, sc(im, 0, x), RAF_BOOL);
  imp_value *e = imp_binary(im, "mul", imp_unary(im, "exp", x),
                            sc(im, alpha, x), x->dt);
  e = imp_binary(im, "sub", e, sc(im, alpha, x), x->dt);
  imp_value *w = imp_where(im, pos, x, e);
  outs[0] = imp_binary(im, "mul", w, sc(im, gamma, x), x->dt);
  return 1;
}

static int map_celu(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  double alpha = imp_attr_float(n, "alpha", 1.0);
  /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
  imp_value *xa = imp_binary(im, "div", x, sc(im, alpha, x), x->dt);
  imp_value *e = elu_neg(im, xa, alpha);
  imp_value *a = imp_binary(im, "maximum", x, sc(im, 0, x), x->dt);
  imp_value *b = imp_binary(im, "minimum", e, sc(im, 0, x), x->dt);
  outs[0] = imp_binary(im, "add", a, b, x->dt);
  return 1;
}

static imp_value *hard_sigmoid(imp *im, imp_value *x, double alpha,
                               double beta) {
  imp_value *y = imp_binary(im, "mul", x, sc(im, alpha, x), x->dt);
  y = imp_binary(im, "add", y, sc(im, beta, x), x->dt);
  y = imp_binary(im, "maximum", y, sc(im, 0, x), x->dt);
  return imp_binary(im, "minimum", y, sc(im, 1, x), x->dt);
}

static int map_hard_sigmoid(imp *im, const Onnx__NodeProto *n,
                            imp_value **ins, int nins, imp_value **outs) {
  (void)nins;
  if (!imp_float_only(im, ins[0]))
    return -1;
  outs[0] = hard_sigmoid(im, ins[0], imp_attr_float(n, "alpha", 0.2),
                         imp_attr_float(n, "beta", 0.5));
  return 1;
}

static int map_hard_swish(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                          int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  if (!imp_float_only(im, x))
    return -1;
  outs[0] = imp_binary(im, "mul", x, hard_sigmoid(im, x, 1.0 / 6, 0.5), x->dt);
  return 1;
}

static int map_softsign(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                        int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  imp_value *d = imp_binary(im, "add", imp_unary(im, "abs", x), sc(im, 1, x),
                            x->dt);
  outs[0] = imp_binary(im, "div", x, d, x->dt);
  return 1;
}

static int map_softplus(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                        int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  imp_value *e = imp_binary(im, "add", imp_unary(im, "exp", x), sc(im, 1, x),
                            x->dt);
  outs[0] = imp_unary(im, "log", e);
  return 1;
}

static int map_sign(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  imp_value *z = sc(im, 0, x);
  imp_value *pos = imp_binary(im, "gt", x, z, RAF_BOOL);
  imp_value *neg = imp_binary(im, "lt", x, z, RAF_BOOL);
  imp_value *inner = imp_where(im, neg, x->dt == RAF_U8 ? z : sc(im, -1, x), z);
  outs[0] = imp_where(im, pos, sc(im, 1, x), inner);
  return 1;
}

static int map_shrink(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_float_only(im, x))
    return -1;
  double lambd = imp_attr_float(n, "lambd", 0.5);
  double bias = imp_attr_float(n, "bias", 0.0);
  imp_value *lo = imp_binary(im, "lt", x, sc(im, -lambd, x), RAF_BOOL);
  imp_value *hi = imp_binary(im, "gt", x, sc(im, lambd, x), RAF_BOOL);
  imp_value *xp = imp_binary(im, "add", x, sc(im, bias, x), x->dt);
  imp_value *xm = imp_binary(im, "sub", x, sc(im, bias, x), x->dt);
  imp_value *inner = imp_where(im, hi, xm, sc(im, 0, x));
  outs[0] = imp_where(im, lo, xp, inner);
  return 1;
}

static int map_isnan(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)n, (void)nins;
  if (!imp_float_only(im, ins[0]))
    return -1;
  outs[0] = imp_binary(im, "ne", ins[0], ins[0], RAF_BOOL);
  return 1;
}

static int map_isinf(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_float_only(im, x))
    return -1;
  bool pos = imp_attr_int(n, "detect_positive", 1);
  bool neg = imp_attr_int(n, "detect_negative", 1);
  if (pos && neg)
    outs[0] = imp_binary(im, "eq", imp_unary(im, "abs", x), sc(im, INFINITY, x),
                         RAF_BOOL);
  else if (pos || neg)
    outs[0] = imp_binary(im, "eq", x, sc(im, pos ? INFINITY : -INFINITY, x),
                         RAF_BOOL);
  else
    outs[0] = imp_splat(im, 0, RAF_BOOL, x->rank, x->dims);
  return 1;
}

/* Adding an ONNX op that is one .raf elementwise op of the same type
 * (Tan: tan) is one row here: {"Tan", map_unary, RAF_OP_TAN, 1}. */
const imp_op imp_ops_elementwise[] = {
    {"Abs", map_unary, RAF_OP_ABS, 1},
    {"Neg", map_unary, RAF_OP_NEG, 1},
    {"Exp", map_unary, RAF_OP_EXP, 1},
    {"Log", map_unary, RAF_OP_LOG, 1},
    {"Sqrt", map_unary, RAF_OP_SQRT, 1},
    {"Tanh", map_unary, RAF_OP_TANH, 1},
    {"Sigmoid", map_unary, RAF_OP_SIGMOID, 1},
    {"Relu", map_unary, RAF_OP_RELU, 1},
    {"Erf", map_unary, RAF_OP_ERF, 1},
    {"Cos", map_unary, RAF_OP_COS, 1},
    {"Sin", map_unary, RAF_OP_SIN, 1},
    {"Gelu", map_gelu, RAF_OP_GELU, 1},
    {"Reciprocal", map_reciprocal, RAF_OP_DIV, 1},
    {"Identity", map_identity, IMP_NO_OP, 1},
    {"Add", map_arith, RAF_OP_ADD, 2},
    {"Sub", map_arith, RAF_OP_SUB, 2},
    {"Mul", map_arith, RAF_OP_MUL, 2},
    {"Div", map_arith, RAF_OP_DIV, 2},
    {"Pow", map_pow, RAF_OP_POW, 2},
    {"Equal", map_compare, RAF_OP_EQ, 2},
    {"Less", map_compare, RAF_OP_LT, 2},
    {"LessOrEqual", map_compare, RAF_OP_LE, 2},
    {"Greater", map_compare, RAF_OP_GT, 2},
    {"GreaterOrEqual", map_compare, RAF_OP_GE, 2},
    {"Not", map_logic, IMP_NO_OP, 1},
    {"And", map_logic, IMP_NO_OP, 2},
    {"Or", map_logic, IMP_NO_OP, 2},
    {"Xor", map_logic, IMP_NO_OP, 2},
    {"Where", map_where, IMP_NO_OP, 3},
    {"Max", map_chain, RAF_OP_MAXIMUM, 1},
    {"Min", map_chain, RAF_OP_MINIMUM, 1},
    {"Sum", map_chain, RAF_OP_ADD, 1},
    {"Mean", map_chain, RAF_OP_DIV, 1},
    {"Cast", map_cast, IMP_NO_OP, 1},
    {"CastLike", map_castlike, IMP_NO_OP, 2},
    {"Clip", map_clip, RAF_OP_MAXIMUM, 1},
    {"LeakyRelu", map_leaky_relu, IMP_NO_OP, 1},
    {"PRelu", map_prelu, RAF_OP_MUL, 2},
    {"ThresholdedRelu", map_thresholded_relu, IMP_NO_OP, 1},
    {"Elu", map_elu, RAF_OP_EXP, 1},
    {"Selu", map_selu, RAF_OP_EXP, 1},
    {"Celu", map_celu, RAF_OP_EXP, 1},
    {"HardSigmoid", map_hard_sigmoid, IMP_NO_OP, 1},
    {"HardSwish", map_hard_swish, IMP_NO_OP, 1},
    {"Softsign", map_softsign, RAF_OP_DIV, 1},
    {"Softplus", map_softplus, RAF_OP_LOG, 1},
    {"Sign", map_sign, RAF_OP_GT, 1},
    {"Shrink", map_shrink, IMP_NO_OP, 1},
    {"IsNaN", map_isnan, IMP_NO_OP, 1},
    {"IsInf", map_isinf, IMP_NO_OP, 1},
    {NULL, NULL, IMP_NO_OP, 0}};

const imp_op *imp_find_op(const char *op_type) {
  const imp_op *tables[] = {imp_ops_elementwise, imp_ops_shape, imp_ops_nn};
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
    for (const imp_op *o = tables[t]; o->op_type; o++)
      if (!strcmp(o->op_type, op_type))
        return o;
  return NULL;
}
