/* values.c: the values of the ONNX graph during import: tensors known at
 * import time (read from TensorProtos, folded, written as literals), the
 * first use of a value as data (a `constant` statement, or an argument for
 * an initializer), and the emitting of statements with their types. */
#include "raf-import/import.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Constants with more elements than this, other than splats, are refused:
 * they are written into the .raf text as literals, and a shape taken from
 * a model's data must not make the importer allocate or write without
 * bound. (Large weights are initializers, which go to the safetensors
 * file and are not subject to this.) */
#define MAX_CONST_ELEMS ((int64_t)1 << 22)

int64_t imp_numel(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return -1;
    if (dims[i] && n > INT64_MAX / dims[i])
      return -1;
    n *= dims[i];
  }
  return n;
}

bool imp_shape_ok(imp *im, int rank, const int64_t *dims) {
  for (int i = 0; i < rank; i++)
    if (dims[i] < 0 || dims[i] > IMP_MAX_DIM) {
      imp_unsupported(im, "a dimension of %lld (raf-import takes 0 to 2^32)",
                      (long long)dims[i]);
      return false;
    }
  if (imp_numel(rank, dims) < 0) {
    imp_unsupported(im, "a shape of more than 2^63 elements");
    return false;
  }
  return true;
}

bool imp_is_float(raf_dtype dt) { return raf_dtype_is_float(dt); }

bool imp_is_int(raf_dtype dt) {
  return dt == RAF_I64 || dt == RAF_I32 || dt == RAF_I8 || dt == RAF_U8;
}

imp_value *imp_value_new(imp *im, raf_dtype dt, int rank,
                         const int64_t *dims) {
  imp_value *v = RAF_NEW(&im->arena, imp_value);
  if (!v) {
    im->oom = true;
    static imp_value dummy;
    return &dummy;
  }
  v->dt = dt;
  v->rank = rank;
  if (rank)
    memcpy(v->dims, dims, sizeof(int64_t) * (size_t)rank);
  v->arg = -1;
  return v;
}

imp_tensor *imp_tensor_new(imp *im, raf_dtype dt, int rank,
                           const int64_t *dims) {
  int64_t n = imp_numel(rank, dims);
  if (n > MAX_CONST_ELEMS) {
    imp_unsupported(im, "a constant of %lld elements is too large to fold "
                        "(raf-import folds at most 2^22)", (long long)n);
    return NULL;
  }
  return imp_tensor_for_data(im, dt, rank, dims);
}

imp_tensor *imp_tensor_for_data(imp *im, raf_dtype dt, int rank,
                                const int64_t *dims) {
  int64_t n = imp_numel(rank, dims);
  if (rank < 0 || rank > RAF_MAX_RANK || n < 0 ||
      (uint64_t)n > SIZE_MAX / 8) {
    imp_unsupported(im, "a tensor of rank %d and %lld elements", rank,
                    (long long)n);
    return NULL;
  }
  imp_tensor *t = RAF_NEW(&im->arena, imp_tensor);
  void *data = raf_arena_alloc(&im->arena,
                               (size_t)(n ? n : 1) * (size_t)raf_dtype_size(dt));
  if (!t || !data) {
    im->oom = true;
    return NULL;
  }
  t->dt = dt;
  t->rank = rank;
  if (rank)
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
  t->numel = n;
  t->data = data;
  return t;
}

imp_tensor *imp_tensor_dense(imp *im, imp_tensor *t) {
  if (!t->splat)
    return t;
  imp_tensor *d = imp_tensor_new(im, t->dt, t->rank, t->dims);
  if (!d)
    return NULL;
  size_t es = (size_t)raf_dtype_size(t->dt);
  for (int64_t i = 0; i < d->numel; i++)
    memcpy((char *)d->data + i * (int64_t)es, t->data, es);
  return d;
}

double imp_get_f64(const imp_tensor *t, int64_t i) {
  if (t->splat)
    i = 0;
  const char *p = (const char *)t->data + i * raf_dtype_size(t->dt);
  switch (t->dt) {
  case RAF_F64: { double v; memcpy(&v, p, 8); return v; }
  case RAF_F32: { float v; memcpy(&v, p, 4); return v; }
  case RAF_F16: { uint16_t v; memcpy(&v, p, 2); return raf_half_to_float(v); }
  case RAF_BF16: { uint16_t v; memcpy(&v, p, 2); return raf_bf16_to_float(v); }
  default: return (double)imp_get_i64(t, i);
  }
}

int64_t imp_get_i64(const imp_tensor *t, int64_t i) {
  if (t->splat)
    i = 0;
  const char *p = (const char *)t->data + i * raf_dtype_size(t->dt);
  switch (t->dt) {
  case RAF_I64: { int64_t v; memcpy(&v, p, 8); return v; }
  case RAF_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case RAF_I8: return (int8_t)*p;
  case RAF_U8: return (uint8_t)*p;
  case RAF_BOOL: return *p != 0;
  default: {
    double d = imp_get_f64(t, i);
    if (!(d > -9.2e18 && d < 9.2e18))
      return 0;
    return (int64_t)d;
  }
  }
}

void imp_set_f64(imp_tensor *t, int64_t i, double v) {
  char *p = (char *)t->data + i * raf_dtype_size(t->dt);
  switch (t->dt) {
  case RAF_F64: memcpy(p, &v, 8); break;
  case RAF_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
  case RAF_F16: { uint16_t h = raf_float_to_half((float)v); memcpy(p, &h, 2); break; }
  case RAF_BF16: { uint16_t h = raf_float_to_bf16((float)v); memcpy(p, &h, 2); break; }
  default:
    imp_set_i64(t, i, (v > -9.2e18 && v < 9.2e18) ? (int64_t)v : 0);
  }
}

void imp_set_i64(imp_tensor *t, int64_t i, int64_t v) {
  char *p = (char *)t->data + i * raf_dtype_size(t->dt);
  switch (t->dt) {
  case RAF_I64: memcpy(p, &v, 8); break;
  case RAF_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
  case RAF_I8: *p = (char)(int8_t)v; break;
  case RAF_U8: *(unsigned char *)p = (unsigned char)v; break;
  case RAF_BOOL: *p = v != 0; break;
  default: imp_set_f64(t, i, (double)v);
  }
}

imp_value *imp_const_value(imp *im, imp_tensor *t) {
  imp_value *v = imp_value_new(im, t->dt, t->rank, t->dims);
  v->konst = t;
  return v;
}

imp_tensor *imp_tensor_splat(imp *im, raf_dtype dt, int rank,
                             const int64_t *dims) {
  if (rank < 0 || rank > RAF_MAX_RANK || !imp_shape_ok(im, rank, dims))
    return NULL;
  int64_t one = 1;
  imp_tensor *t = imp_tensor_new(im, dt, 1, &one);
  if (!t)
    return NULL;
  t->rank = rank;
  if (rank)
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
  t->numel = imp_numel(rank, dims);
  t->splat = true;
  return t;
}

imp_tensor *imp_tensor_like(imp *im, const imp_tensor *t, raf_dtype dt) {
  return t->splat ? imp_tensor_splat(im, dt, t->rank, t->dims)
                  : imp_tensor_new(im, dt, t->rank, t->dims);
}

imp_value *imp_splat(imp *im, double x, raf_dtype dt, int rank,
                     const int64_t *dims) {
  imp_tensor *t = imp_tensor_splat(im, dt, rank, dims);
  imp_value *v = imp_value_new(im, dt, rank, dims);
  if (!t) {
    v->poisoned = true;
    return v;
  }
  imp_set_f64(t, 0, x);
  v->konst = t;
  return v;
}

imp_value *imp_scalar(imp *im, double x, raf_dtype dt) {
  return imp_splat(im, x, dt, 0, NULL);
}

bool imp_foldable(const imp_value *v) {
  return v && v->konst && !(v->initializer && imp_is_float(v->dt));
}

imp_tensor *imp_known(imp *im, imp_value *v, const char *what) {
  if (v && v->konst)
    return v->konst;
  if (v && v->spec)
    return v->spec;
  imp_unsupported(im, "%s is computed at run time (give it with "
                      "--specialize, or as an initializer)", what);
  return NULL;
}

/* --- literals ------------------------------------------------------------ */

static void fmt_number(char *buf, size_t size, const imp_tensor *t,
                       int64_t i) {
  if (t->dt == RAF_BOOL) {
    snprintf(buf, size, "%s", imp_get_i64(t, i) ? "true" : "false");
    return;
  }
  if (!imp_is_float(t->dt)) {
    snprintf(buf, size, "%lld", (long long)imp_get_i64(t, i));
    return;
  }
  double d = imp_get_f64(t, i);
  if (isnan(d)) {
    snprintf(buf, size, "nan");
    return;
  }
  if (isinf(d)) {
    snprintf(buf, size, "%s", d > 0 ? "inf" : "-inf");
    return;
  }
  snprintf(buf, size, t->dt == RAF_F64 ? "%.17g" : "%.9g", d);
  /* A float literal needs a '.' or an exponent. */
  if (!strpbrk(buf, ".e"))
    strncat(buf, ".0", size - strlen(buf) - 1);
}

static bool all_equal(const imp_tensor *t) {
  if (t->splat)
    return true;
  size_t es = (size_t)raf_dtype_size(t->dt);
  for (int64_t i = 1; i < t->numel; i++)
    if (memcmp((char *)t->data + i * (int64_t)es, t->data, es))
      return false;
  return true;
}

static void append_nested(imp *im, const imp_tensor *t, int axis,
                          int64_t *offset) {
  char buf[64];
  if (axis == t->rank) {
    fmt_number(buf, sizeof buf, t, (*offset)++);
    imp_append(im, "%s", buf);
    return;
  }
  imp_append(im, "[");
  for (int64_t i = 0; i < t->dims[axis]; i++) {
    if (i)
      imp_append(im, ", ");
    append_nested(im, t, axis + 1, offset);
  }
  imp_append(im, "]");
}

static const char *emit_constant(imp *im, const imp_tensor *t) {
  const char *r = imp_fresh(im);
  imp_append(im, "  %s = constant ", r);
  char buf[64];
  if (t->numel == 0) {
    imp_append(im, "%s", t->dt == RAF_BOOL ? "false"
                         : imp_is_float(t->dt) ? "0.0" : "0");
  } else if (all_equal(t)) {
    fmt_number(buf, sizeof buf, t, 0);
    imp_append(im, "%s", buf);
  } else {
    int64_t off = 0;
    append_nested(im, t, 0, &off);
  }
  imp_append(im, " : %s\n", imp_type_str(im, t->dt, t->rank, t->dims));
  return r;
}

const char *imp_ref(imp *im, imp_value *v) {
  if (v->arg >= 0) {
    im->args[v->arg].used = true;
    if (!v->ref)
      v->ref = imp_fmt(im, "%%%s", im->args[v->arg].name);
    return v->ref;
  }
  if (!v->ref && v->konst)
    v->ref = emit_constant(im, v->konst);
  if (!v->ref) {
    imp_error(im, "%s: internal error: a value used before it is defined",
              im->file);
    v->ref = "%undefined";
  }
  return v->ref;
}

imp_value *imp_emit(imp *im, const char *op, imp_value **args, int nargs,
                    const char *attrs, raf_dtype dt, int rank,
                    const int64_t *dims) {
  imp_value *out;
  int64_t d[1][RAF_MAX_RANK] = {{0}};
  if (rank > RAF_MAX_RANK)
    rank = RAF_MAX_RANK;
  if (rank > 0)
    memcpy(d[0], dims, sizeof(int64_t) * (size_t)rank);
  imp_emit_n(im, op, args, nargs, attrs, 1, &dt, &rank, d, &out);
  return out;
}

void imp_emit_n(imp *im, const char *op, imp_value **args, int nargs,
                const char *attrs, int n, raf_dtype *dts, int *ranks,
                int64_t (*dims)[RAF_MAX_RANK], imp_value **outs) {
  const char *refs[64]; /* import_node admits at most 64 inputs a node */
  if (nargs > 64)
    nargs = 64;
  for (int i = 0; i < nargs; i++)
    refs[i] = imp_ref(im, args[i]);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    outs[i] = imp_value_new(im, dts[i], ranks[i], dims[i]);
    outs[i]->ref = imp_fresh(im);
    if (!imp_shape_ok(im, ranks[i], dims[i])) {
      outs[i]->poisoned = true;
      ok = false;
    }
  }
  if (!ok)
    return;
  imp_append(im, "  ");
  for (int i = 0; i < n; i++)
    imp_append(im, "%s%s", i ? ", " : "", outs[i]->ref);
  imp_append(im, " = %s(", op);
  for (int i = 0; i < nargs; i++)
    imp_append(im, "%s%s", i ? ", " : "", refs[i]);
  imp_append(im, ")");
  if (attrs && *attrs)
    imp_append(im, " %s", attrs);
  imp_append(im, " : ");
  for (int i = 0; i < n; i++)
    imp_append(im, "%s%s", i ? ", " : "",
               imp_type_str(im, dts[i], ranks[i], dims[i]));
  imp_append(im, "\n");
}
