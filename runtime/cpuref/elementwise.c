/* elementwise.c: cpu-ref kernels for the elementwise ops: unary, binary
 * (with NumPy broadcasting), comparisons, the elementwise backward
 * operators (gelu_grad, ...), where, cast, copies and constants.
 *
 * Every kernel walks the output in chunks of CHUNK elements (in parallel,
 * chunks being independent): it gathers the operands' elements for the
 * chunk into working-type arrays (see cpuref.h), applies the op over the
 * arrays, and converts the chunk into the output's dtype. The float math
 * of each op is its row of lang/scalar.def, expanded below into C on float
 * and on double (the llvm dialect expands the same rows into LLVM IR).
 * Numerics follow PyTorch: relu, maximum and minimum propagate NaN; gelu
 * "none" is x * Phi(x) with erf, "tanh" is PyTorch's tanh approximation;
 * integer arithmetic wraps.
 *
 * In place (plan-memory): an operand of the result's type may share the
 * result's buffer. Result element i is computed from element i of such an
 * operand only, which is read (into the chunk's arrays, or directly) no
 * later than element i is written, so sharing gives the same results.
 */
#include "runtime/cpuref/cpuref.h"

#include <math.h>
#include <string.h>

enum { CHUNK = 4096 };

raf_dtype raf_cpuref_work_dtype(raf_dtype dt) {
  if (dt == RAF_F64)
    return RAF_F64;
  return raf_dtype_is_float(dt) ? RAF_F32 : RAF_I64;
}

void raf_cpuref_gather(const raf_tensor *x, const raf_type *out,
                       int64_t begin, int64_t n, raf_dtype work, void *dst) {
  raf_dtype dt = x->type->dtype;
  int size = raf_dtype_size(dt);
  if (x->type->numel == out->numel) { /* same shape, or only 1-dims added */
    raf_elem_convert(work, dst, dt, (const char *)x->data + begin * size, n);
    return;
  }
  int wsize = raf_dtype_size(work);
  if (x->type->numel == 1) {
    raf_elem_convert(work, dst, dt, x->data, 1);
    if (wsize == 8) { /* the working types but f32 (where's: any) */
      uint64_t v = *(const uint64_t *)dst, *d = dst;
      for (int64_t i = 1; i < n; i++)
        d[i] = v;
    } else if (wsize == 4) {
      uint32_t v = *(const uint32_t *)dst, *d = dst;
      for (int64_t i = 1; i < n; i++)
        d[i] = v;
    } else {
      for (int64_t i = 1; i < n; i++)
        memcpy((char *)dst + i * wsize, dst, (size_t)wsize);
    }
    return;
  }
  int rank = out->rank;
  int64_t strides[RAF_MAX_RANK], idx[RAF_MAX_RANK];
  raf_broadcast_strides(x->type, out, strides);
  int64_t rest = begin, off = 0;
  for (int d = rank - 1; d >= 0; d--) {
    idx[d] = rest % out->dims[d];
    rest /= out->dims[d];
    off += idx[d] * strides[d];
  }
  /* Runs along the last dim: contiguous (converted at once), broadcast
   * (one element repeated) or strided. */
  const int last = rank - 1;
  const int64_t s = strides[last], len = out->dims[last];
  for (int64_t i = 0; i < n;) {
    int64_t run = len - idx[last] < n - i ? len - idx[last] : n - i;
    const char *src = (const char *)x->data + off * size;
    char *d = (char *)dst + i * wsize;
    if (s == 1) {
      raf_elem_convert(work, d, dt, src, run);
    } else {
      raf_elem_convert(work, d, dt, src, 1);
      for (int64_t e = 1; e < run; e++) {
        if (s == 0)
          memcpy(d + e * wsize, d, (size_t)wsize);
        else
          raf_elem_convert(work, d + e * wsize, dt, src + e * s * size, 1);
      }
    }
    i += run;
    off += run * s;
    idx[last] += run;
    if (idx[last] < len)
      continue;
    off -= s * len; /* the odometer: carry into the outer dims */
    idx[last] = 0;
    for (int d = last - 1; d >= 0; d--) {
      off += strides[d];
      if (++idx[d] < out->dims[d])
        break;
      off -= strides[d] * out->dims[d];
      idx[d] = 0;
    }
  }
}

/* What a chunk needs: the kernel, and the function that computes n
 * working-type elements from the gathered operands. */
typedef struct chunk_job {
  const raf_kernel *k;
  raf_dtype work;     /* of the operands */
  raf_dtype out_work; /* of the result */
  void (*apply)(const struct chunk_job *j, void *const *ops, void *res,
                int64_t n);
} chunk_job;

static void run_chunks(void *data, int64_t begin, int64_t end) {
  const chunk_job *j = data;
  const raf_kernel *k = j->k;
  const raf_type *out = k->out[0]->type;
  /* 8-byte working elements: up to three operands and the result. */
  _Alignas(64) char buf[4][CHUNK * 8];
  void *ops[3];
  for (int64_t b = begin; b < end; b += CHUNK) {
    int64_t n = end - b < CHUNK ? end - b : CHUNK;
    for (int i = 0; i < k->nin; i++) {
      const raf_tensor *x = k->in[i];
      raf_dtype w = k->stmt->op == RAF_OP_WHERE && i == 0 ? RAF_I64 : j->work;
      if (x->type->dtype == w && x->type->numel == out->numel) {
        /* already in the working type and layout: read in place */
        ops[i] = (char *)x->data + b * raf_dtype_size(w);
      } else {
        raf_cpuref_gather(x, out, b, n, w, buf[i]);
        ops[i] = buf[i];
      }
    }
    raf_dtype dt = out->dtype;
    char *dst = (char *)k->out[0]->data + b * raf_dtype_size(dt);
    if (dt == j->out_work) { /* write in place */
      j->apply(j, ops, dst, n);
    } else {
      j->apply(j, ops, buf[3], n);
      raf_elem_convert(dt, dst, j->out_work, buf[3], n);
    }
  }
}

static raf_status run(const raf_kernel *k, raf_dtype work, raf_dtype out_work,
                      void (*apply)(const chunk_job *, void *const *, void *,
                                    int64_t)) {
  chunk_job j = {k, work, out_work, apply};
  raf_kernel_parallel(k, k->out[0]->type->numel, CHUNK * 4, run_chunks, &j);
  return RAF_OK;
}

/* ---- The formulas of lang/scalar.def ------------------------------------- */

/* IF_TANH's choice for statement s. */
static bool tanh_approx_of(const raf_stmt *s) {
  const char *a = raf_stmt_attr_str(s, "approximate");
  return a && strcmp(a, "tanh") == 0;
}

/* The table's words as C (float computes in float, double in double). */
#include "lang/scalar_c.h"

/* One loop per op: r[i] = f over x = a[i] (FOR_EACH1) or x = a[i] and
 * y = b[i] (FOR_EACH2), in working type T, the result in R. */
#define FOR_EACH1(T, R, f)                                                     \
  do {                                                                         \
    const T *a = ops[0];                                                       \
    R *r = res;                                                                \
    for (int64_t i = 0; i < n; i++) {                                          \
      T x = a[i];                                                              \
      r[i] = (f);                                                              \
    }                                                                          \
  } while (0)
#define FOR_EACH2(T, R, f)                                                     \
  do {                                                                         \
    const T *a = ops[0], *b = ops[1];                                          \
    R *r = res;                                                                \
    for (int64_t i = 0; i < n; i++) {                                          \
      T x = a[i], y = b[i];                                                    \
      r[i] = (f);                                                              \
    }                                                                          \
  } while (0)

/* The float unary and binary ops, in float and in double. */
#define UNARY(OP, f) case RAF_OP_##OP: FOR_EACH1(work_t, work_t, f); break;
#define BINARY(OP, f) case RAF_OP_##OP: FOR_EACH2(work_t, work_t, f); break;
#define COMPARE(OP, f)
#define TEST(OP, f)
#define BACKWARD(OP, f)
#define NO_FORMULA(OP, why)

static void float_arith(raf_opcode op, bool tanh_approx, void *const *ops,
                        void *res, int64_t n) {
  typedef float work_t;
  switch (op) {
#include "lang/scalar.def"
  default: break;
  }
}

static void double_arith(raf_opcode op, bool tanh_approx, void *const *ops,
                         void *res, int64_t n) {
  typedef double work_t;
  switch (op) {
#include "lang/scalar.def"
  default: break;
  }
}

#undef UNARY
#undef BINARY
#undef COMPARE
#undef TEST

/* The comparisons and isfinite, of float, double or int64 (the words are
 * C's operators, which compare integers too), into int64 0 or 1. */
#define UNARY(OP, f)
#define BINARY(OP, f)
#define COMPARE(OP, f) case RAF_OP_##OP: FOR_EACH2(work_t, int64_t, f); break;
#define TEST(OP, f) case RAF_OP_##OP: FOR_EACH1(work_t, int64_t, f); break;

static void float_compare(raf_opcode op, void *const *ops, void *res,
                          int64_t n) {
  typedef float work_t;
  switch (op) {
#include "lang/scalar.def"
  default: break;
  }
}

static void double_compare(raf_opcode op, void *const *ops, void *res,
                           int64_t n) {
  typedef double work_t;
  switch (op) {
#include "lang/scalar.def"
  default: break;
  }
}

#undef COMPARE
#undef TEST
#undef BACKWARD

/* The backward operators (dy, x), in double whatever the dtype: the chunk
 * gathers both operands as doubles and rounds the result once. */
#define COMPARE(OP, f)
#define TEST(OP, f)
#define BACKWARD(OP, f)                                                        \
  case RAF_OP_##OP:                                                            \
    for (int64_t i = 0; i < n; i++) {                                          \
      double dy = a[i], x = b[i];                                              \
      r[i] = (f);                                                              \
    }                                                                          \
    break;

static void apply_backward(const chunk_job *j, void *const *ops, void *res,
                           int64_t n) {
  typedef double work_t;
  bool tanh_approx = tanh_approx_of(j->k->stmt);
  const double *a = ops[0], *b = ops[1];
  double *r = res;
  switch (j->k->stmt->op) {
#include "lang/scalar.def"
  default: break;
  }
}

raf_status raf_cpuref_backward_elem(const raf_kernel *k) {
  return run(k, RAF_F64, RAF_F64, apply_backward);
}

#undef BACKWARD
#undef COMPARE
#undef TEST
#define BACKWARD(OP, f)
#define COMPARE(OP, f) case RAF_OP_##OP: FOR_EACH2(work_t, int64_t, f); break;
#define TEST(OP, f) /* isfinite takes floats only */

static void int_compare(raf_opcode op, void *const *ops, void *res,
                        int64_t n) {
  typedef int64_t work_t;
  switch (op) {
#include "lang/scalar.def"
  default: break;
  }
}

#include "lang/scalar_end.h"

/* ---- Unary ---------------------------------------------------------------- */

static void apply_unary(const chunk_job *j, void *const *ops, void *res,
                        int64_t n) {
  raf_opcode op = j->k->stmt->op;
  if (j->work == RAF_F32) {
    float_arith(op, tanh_approx_of(j->k->stmt), ops, res, n);
  } else if (j->work == RAF_F64) {
    double_arith(op, tanh_approx_of(j->k->stmt), ops, res, n);
  } else { /* integers wrap (lang/scalar.def, "Integers") */
    switch (op) {
    case RAF_OP_NEG:
      FOR_EACH1(int64_t, int64_t, (int64_t)(0 - (uint64_t)x));
      break;
    case RAF_OP_ABS:
      FOR_EACH1(int64_t, int64_t, x < 0 ? (int64_t)(0 - (uint64_t)x) : x);
      break;
    case RAF_OP_RELU: FOR_EACH1(int64_t, int64_t, x < 0 ? 0 : x); break;
    default: break;
    }
  }
}

raf_status raf_cpuref_unary(const raf_kernel *k) {
  raf_dtype w = raf_cpuref_work_dtype(k->in[0]->type->dtype);
  if (w == RAF_I64 && k->stmt->op != RAF_OP_NEG &&
      k->stmt->op != RAF_OP_ABS && k->stmt->op != RAF_OP_RELU)
    return raf_kernel_fail(k, "not defined for %s",
                           raf_dtype_name(k->in[0]->type->dtype));
  return run(k, w, w, apply_unary);
}

/* ---- Binary --------------------------------------------------------------- */

/* x ** y for integers; a negative power truncates toward zero as PyTorch
 * does (0 unless |x| is 1). */
static int64_t ipow(int64_t x, int64_t y) {
  if (y < 0)
    return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
  uint64_t r = 1, base = (uint64_t)x;
  while (y) {
    if (y & 1)
      r *= base;
    base *= base;
    y >>= 1;
  }
  return (int64_t)r;
}

static void apply_binary(const chunk_job *j, void *const *ops, void *res,
                         int64_t n) {
  raf_opcode op = j->k->stmt->op;
  if (j->work == RAF_F32) {
    float_arith(op, false, ops, res, n);
  } else if (j->work == RAF_F64) {
    double_arith(op, false, ops, res, n);
  } else { /* integers wrap (lang/scalar.def, "Integers") */
    switch (op) {
    case RAF_OP_ADD:
      FOR_EACH2(int64_t, int64_t, (int64_t)((uint64_t)x + (uint64_t)y));
      break;
    case RAF_OP_SUB:
      FOR_EACH2(int64_t, int64_t, (int64_t)((uint64_t)x - (uint64_t)y));
      break;
    case RAF_OP_MUL:
      FOR_EACH2(int64_t, int64_t, (int64_t)((uint64_t)x * (uint64_t)y));
      break;
    case RAF_OP_POW: FOR_EACH2(int64_t, int64_t, ipow(x, y)); break;
    case RAF_OP_MAXIMUM: FOR_EACH2(int64_t, int64_t, x > y ? x : y); break;
    case RAF_OP_MINIMUM: FOR_EACH2(int64_t, int64_t, x < y ? x : y); break;
    default: break;
    }
  }
}

raf_status raf_cpuref_binary(const raf_kernel *k) {
  raf_dtype w = raf_cpuref_work_dtype(k->in[0]->type->dtype);
  if (w == RAF_I64 && k->stmt->op == RAF_OP_DIV)
    return raf_kernel_fail(k, "not defined for %s",
                           raf_dtype_name(k->in[0]->type->dtype));
  return run(k, w, w, apply_binary);
}

/* ---- Comparisons and where ------------------------------------------------ */

static void apply_compare(const chunk_job *j, void *const *ops, void *res,
                          int64_t n) {
  raf_opcode op = j->k->stmt->op;
  if (j->work == RAF_F32)
    float_compare(op, ops, res, n);
  else if (j->work == RAF_F64)
    double_compare(op, ops, res, n);
  else
    int_compare(op, ops, res, n);
}

raf_status raf_cpuref_compare(const raf_kernel *k) {
  return run(k, raf_cpuref_work_dtype(k->in[0]->type->dtype), RAF_I64,
             apply_compare);
}

raf_status raf_cpuref_isfinite(const raf_kernel *k) {
  return run(k, raf_cpuref_work_dtype(k->in[0]->type->dtype), RAF_I64,
             apply_compare);
}

static void apply_where(const chunk_job *j, void *const *ops, void *res,
                        int64_t n) {
  const int64_t *c = ops[0];
  size_t w = (size_t)raf_dtype_size(j->work);
  /* memmove: the result may be written over a or b (in place). */
  for (int64_t i = 0; i < n; i++)
    memmove((char *)res + (size_t)i * w,
            (const char *)ops[c[i] ? 1 : 2] + (size_t)i * w, w);
}

raf_status raf_cpuref_where(const raf_kernel *k) {
  /* Selecting copies bits, so the working type is the storage type. */
  raf_dtype dt = k->in[1]->type->dtype;
  return run(k, dt, dt, apply_where);
}

/* ---- Cast, copies, constants ---------------------------------------------- */

static void cast_range(void *data, int64_t begin, int64_t end) {
  const raf_kernel *k = data;
  raf_dtype from = k->in[0]->type->dtype, to = k->out[0]->type->dtype;
  raf_elem_convert(to, (char *)k->out[0]->data + begin * raf_dtype_size(to),
                   from,
                   (const char *)k->in[0]->data + begin * raf_dtype_size(from),
                   end - begin);
}

raf_status raf_cpuref_cast(const raf_kernel *k) {
  raf_kernel_parallel(k, k->out[0]->type->numel, CHUNK * 4, cast_range,
                      (void *)k);
  return RAF_OK;
}

raf_status raf_cpuref_copy(const raf_kernel *k) {
  if (k->out[0]->data == k->in[0]->data) /* a wait planned in place */
    return RAF_OK;
  memcpy(k->out[0]->data, k->in[0]->data, k->out[0]->nbytes);
  return RAF_OK;
}

raf_status raf_cpuref_constant(const raf_kernel *k) {
  const raf_const *c = k->stmt->cdata;
  raf_tensor *out = k->out[0];
  size_t size = (size_t)raf_dtype_size(out->type->dtype);
  if (!c->splat) {
    memcpy(out->data, c->data, out->nbytes);
    return RAF_OK;
  }
  for (int64_t i = 0; i < out->type->numel; i++)
    memcpy((char *)out->data + (size_t)i * size, c->data, size);
  return RAF_OK;
}
