/* reduce.c: cpu-ref kernels for the reductions (sum mean max min argmax),
 * softmax and log_softmax, and layer_norm.
 *
 * sum, mean, max, min(x): x of any rank; `axes` (negative ones count from
 * the end) names the reduced dims, every dim when absent, none when empty.
 * The result has x's shape without those dims, or with them kept as 1
 * under `keepdims`; either way its elements are in the same C order.
 * sum of no elements is 0, mean of none NaN (0/0, as PyTorch); infer_reduce
 * rejects max and min over an empty axis.
 *
 * argmax(x): over the one dim `axis`, result i64 with the shape rule above.
 * It gives the first index of the largest value; a NaN counts as larger
 * than everything (PyTorch), so the first NaN wins.
 *
 * softmax, log_softmax(x): over `axis` (default -1), result x's shape. Each
 * row subtracts its maximum before exp, so no finite input overflows;
 * log_softmax is (x - max) - log(sum exp(x - max)). A row holding a NaN, or
 * +inf, or only -inf, gives NaN throughout (PyTorch).
 *
 * layer_norm(x, gamma, beta): as ONNX's LayerNormalization, each row of the
 * dims from `axis` to the last (gamma and beta have those dims' shape) is
 * normalised by its mean and biased variance:
 * y = (x - mean) / sqrt(var + eps) * gamma + beta.
 *
 * Numerics: elementwise math runs in the working type of cpuref.h (double
 * for f64, float for f32/f16/bf16); every accumulation of floats (sums,
 * means, variances, softmax denominators) runs in double and is rounded
 * once to the result's type. max and min propagate NaN. Integer sums wrap
 * (in uint64, then to the storage width, which equals wrapping at every
 * step); mean admits floats only.
 *
 * Every output element (or row) is computed by one loop in a fixed order
 * (reduced elements in ascending C order), and the parallel split is over
 * independent outputs, so results do not depend on the thread count.
 * Operands not already in their working type are converted to a working
 * copy first, and results to be stored narrower are computed into a
 * working buffer and converted at the end.
 */
#include "runtime/cpuref/cpuref.h"

#include <math.h>
#include <stdlib.h>

/* About this many element visits per parallel chunk. */
#define CHUNK_WORK ((int64_t)1 << 16)



/* Where to compute result y in dtype `work`: y's own data when that is its
 * dtype, else a new buffer (*owned) that store_out converts into y. */
static raf_status work_out(const raf_kernel *k, raf_tensor *y, raf_dtype work,
                           void **out, void **owned) {
  *owned = NULL;
  if (y->type->dtype == work) {
    *out = y->data;
    return RAF_OK;
  }
  void *buf =
      malloc((size_t)y->type->numel * (size_t)raf_dtype_size(work) + 1);
  if (!buf)
    return raf_kernel_fail(k, "out of memory for a working result");
  *out = *owned = buf;
  return RAF_OK;
}

static void store_out(const raf_kernel *k, raf_tensor *y, raf_dtype work,
                      const void *owned) {
  if (owned)
    raf_cpuref_convert(k, y->type->dtype, y->data, work, owned, y->type->numel);
}

/* The normalised axis of attribute `name` for rank `rank` (inference has
 * checked its range). */
static int axis_attr(const raf_kernel *k, const char *name, int rank) {
  int64_t a = raf_stmt_attr_int(k->stmt, name);
  return (int)(a < 0 ? a + rank : a);
}

/* x's dims as outer x n x inner around `axis`. */
static void split_at(const raf_type *t, int axis, int64_t *outer, int64_t *n,
                     int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < axis; d++)
    *outer *= t->dims[d];
  *n = t->dims[axis];
  for (int d = axis + 1; d < t->rank; d++)
    *inner *= t->dims[d];
}

/* ---- sum mean max min ---------------------------------------------------- */

/* The input's dims, with size-1 dims dropped and adjacent dims of the same
 * kind (kept or reduced) merged into groups, each with its C-order stride.
 * The reduced elements of one output are visited as an odometer over the
 * reduced groups but the last, times a loop over the last. */
typedef struct reduce_job {
  raf_opcode op;
  raf_dtype work;
  const void *x;
  raf_tensor *out;
  int nk, nr;
  int64_t kdim[RAF_MAX_RANK], kstride[RAF_MAX_RANK];
  int64_t rdim[RAF_MAX_RANK], rstride[RAF_MAX_RANK];
  int64_t count;      /* reduced elements per output */
  int64_t n_in, s_in; /* the last reduced group: size and stride */
  int64_t nouter;     /* count / n_in: odometer steps */
} reduce_job;

/* Visits the reduced elements of the output whose input offset is `base`,
 * in ascending C order, running BODY with `at` the offset of each. */
#define FOR_REDUCED(BODY)                                                      \
  do {                                                                         \
    int64_t idx_[RAF_MAX_RANK] = {0}, off_ = base;                             \
    for (int64_t q_ = 0; q_ < j->nouter; q_++) {                               \
      for (int64_t t_ = 0; t_ < j->n_in; t_++) {                               \
        int64_t at = off_ + t_ * j->s_in;                                      \
        BODY;                                                                  \
      }                                                                        \
      for (int g_ = j->nr - 2; g_ >= 0; g_--) {                                \
        off_ += j->rstride[g_];                                                \
        if (++idx_[g_] < j->rdim[g_])                                          \
          break;                                                               \
        off_ -= j->rstride[g_] * j->rdim[g_];                                  \
        idx_[g_] = 0;                                                          \
      }                                                                        \
    }                                                                          \
  } while (0)

/* One output of a float input read as T, into *res (double). */
#define REDUCE_FLOAT(T)                                                        \
  do {                                                                         \
    const T *x = j->x;                                                         \
    double acc;                                                                \
    switch (j->op) { /* a NaN acc stays: only a NaN replaces it */           \
    case RAF_OP_MAX:                                                           \
      acc = -INFINITY;                                                         \
      FOR_REDUCED({                                                            \
        double v = x[at];                                                      \
        if (v > acc || isnan(v))                                               \
          acc = v;                                                             \
      });                                                                      \
      break;                                                                   \
    case RAF_OP_MIN:                                                           \
      acc = INFINITY;                                                          \
      FOR_REDUCED({                                                            \
        double v = x[at];                                                      \
        if (v < acc || isnan(v))                                               \
          acc = v;                                                             \
      });                                                                      \
      break;                                                                   \
    default: /* sum, mean */                                                   \
      acc = 0;                                                                 \
      FOR_REDUCED(acc += (double)x[at]);                                       \
      if (j->op == RAF_OP_MEAN) /* NaN for no elements */                      \
        acc = j->count ? acc / (double)j->count : NAN;                         \
      break;                                                                   \
    }                                                                          \
    *res = acc;                                                                \
  } while (0)

static void reduce_int(const reduce_job *j, int64_t base, int64_t *res) {
  const int64_t *x = j->x;
  switch (j->op) {
  case RAF_OP_MAX: {
    int64_t acc = INT64_MIN;
    FOR_REDUCED(acc = x[at] > acc ? x[at] : acc);
    *res = acc;
    break;
  }
  case RAF_OP_MIN: {
    int64_t acc = INT64_MAX;
    FOR_REDUCED(acc = x[at] < acc ? x[at] : acc);
    *res = acc;
    break;
  }
  default: { /* sum wraps */
    uint64_t acc = 0;
    FOR_REDUCED(acc += (uint64_t)x[at]);
    *res = (int64_t)acc;
    break;
  }
  }
}

static void reduce_range(void *data, int64_t begin, int64_t end) {
  const reduce_job *j = data;
  raf_dtype out_dt = j->out->type->dtype;
  size_t osize = (size_t)raf_dtype_size(out_dt);
  for (int64_t o = begin; o < end; o++) {
    int64_t rest = o, base = 0;
    for (int g = j->nk - 1; g >= 0; g--) {
      base += rest % j->kdim[g] * j->kstride[g];
      rest /= j->kdim[g];
    }
    char *dst = (char *)j->out->data + (size_t)o * osize;
    if (j->work == RAF_I64) {
      int64_t r;
      reduce_int(j, base, &r);
      raf_elem_convert(out_dt, dst, RAF_I64, &r, 1);
    } else {
      double r, *res = &r;
      if (j->work == RAF_F64)
        REDUCE_FLOAT(double);
      else
        REDUCE_FLOAT(float);
      raf_elem_convert(out_dt, dst, RAF_F64, &r, 1);
    }
  }
}

raf_status raf_cpuref_reduce(const raf_kernel *k) {
  const raf_tensor *x = k->in[0];
  const raf_type *t = x->type;
  raf_dtype work = raf_cpuref_work_dtype(t->dtype);
  if (k->stmt->op == RAF_OP_MEAN && work == RAF_I64)
    return raf_kernel_fail(k, "not defined for %s", raf_dtype_name(t->dtype));
  if (k->out[0]->type->numel == 0)
    return RAF_OK;

  bool drop[RAF_MAX_RANK];
  raf_attr_value axes;
  bool all = !raf_stmt_attr(k->stmt, "axes", &axes);
  for (int d = 0; d < t->rank; d++)
    drop[d] = all;
  for (int i = 0; !all && i < axes.u.ints.n; i++) {
    int64_t a = axes.u.ints.v[i];
    drop[a < 0 ? a + t->rank : a] = true;
  }

  reduce_job j = {.op = k->stmt->op, .work = work, .out = k->out[0],
                  .count = 1};
  int64_t strides[RAF_MAX_RANK];
  raf_contiguous_strides(t, strides);
  int last = -1; /* kind of the last group: 0 kept, 1 reduced */
  for (int d = 0; d < t->rank; d++) {
    if (t->dims[d] == 1)
      continue; /* adds nothing to any offset */
    int kind = drop[d];
    int64_t *dim = kind ? j.rdim : j.kdim;
    int64_t *stride = kind ? j.rstride : j.kstride;
    int *n = kind ? &j.nr : &j.nk;
    if (kind == last) { /* C-contiguous with the group before: merge */
      dim[*n - 1] *= t->dims[d];
      stride[*n - 1] = strides[d];
    } else {
      dim[*n] = t->dims[d];
      stride[(*n)++] = strides[d];
    }
    if (kind)
      j.count *= t->dims[d];
    last = kind;
  }
  j.n_in = j.nr ? j.rdim[j.nr - 1] : 1;
  j.s_in = j.nr ? j.rstride[j.nr - 1] : 0;
  j.nouter = j.count ? j.count / j.n_in : 0;

  void *owned;
  raf_status rc = raf_cpuref_working_copy(k, x, work, &j.x, &owned);
  if (rc == RAF_OK)
    raf_kernel_parallel(k, k->out[0]->type->numel, raf_cpuref_grain(CHUNK_WORK, j.count),
                        reduce_range, &j);
  free(owned);
  return rc;
}

/* ---- argmax -------------------------------------------------------------- */

typedef struct argmax_job {
  raf_dtype work;
  const void *x;
  int64_t *out;
  int64_t n, inner;
} argmax_job;

#define ARGMAX(T, ISNAN)                                                       \
  do {                                                                         \
    const T *x = (const T *)j->x + base;                                       \
    T top = x[0];                                                              \
    for (int64_t i = 1; i < j->n && !ISNAN(top); i++) {                        \
      T v = x[i * j->inner];                                                   \
      if (v > top || ISNAN(v)) {                                               \
        top = v;                                                               \
        best = i;                                                              \
      }                                                                        \
    }                                                                          \
  } while (0)

#define NEVER_NAN(v) ((void)(v), 0)

static void argmax_range(void *data, int64_t begin, int64_t end) {
  const argmax_job *j = data;
  for (int64_t o = begin; o < end; o++) {
    int64_t base = o / j->inner * j->n * j->inner + o % j->inner, best = 0;
    if (j->work == RAF_F64)
      ARGMAX(double, isnan);
    else if (j->work == RAF_F32)
      ARGMAX(float, isnan);
    else
      ARGMAX(int64_t, NEVER_NAN);
    j->out[o] = best;
  }
}

raf_status raf_cpuref_argmax(const raf_kernel *k) {
  const raf_tensor *x = k->in[0];
  int64_t outer;
  argmax_job j = {.work = raf_cpuref_work_dtype(x->type->dtype),
                  .out = k->out[0]->data};
  split_at(x->type, axis_attr(k, "axis", x->type->rank), &outer, &j.n,
           &j.inner);
  if (k->out[0]->type->numel == 0) /* infer_argmax keeps n >= 1 */
    return RAF_OK;
  void *owned;
  raf_status rc = raf_cpuref_working_copy(k, x, j.work, &j.x, &owned);
  if (rc == RAF_OK)
    raf_kernel_parallel(k, outer * j.inner, raf_cpuref_grain(CHUNK_WORK, j.n), argmax_range, &j);
  free(owned);
  return rc;
}

/* ---- softmax, log_softmax ------------------------------------------------ */

typedef struct softmax_job {
  raf_dtype work;
  bool log;
  const void *x;
  void *y; /* in the working type */
  int64_t n, inner;
} softmax_job;

#define SOFTMAX_ROW(T, EXP)                                                    \
  do {                                                                         \
    const T *x = (const T *)j->x + base;                                       \
    T *y = (T *)j->y + base, top = -(T)INFINITY;                               \
    const int64_t n = j->n, s = j->inner;                                      \
    for (int64_t i = 0; i < n; i++)                                            \
      if (x[i * s] > top || isnan(x[i * s]))                                   \
        top = x[i * s];                                                        \
    double total = 0;                                                          \
    for (int64_t i = 0; i < n; i++)                                            \
      total += (double)EXP(x[i * s] - top);                                    \
    if (j->log) {                                                              \
      T lse = (T)log(total);                                                   \
      for (int64_t i = 0; i < n; i++)                                          \
        y[i * s] = (x[i * s] - top) - lse;                                     \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++)                                          \
        y[i * s] = (T)((double)EXP(x[i * s] - top) / total);                   \
    }                                                                          \
  } while (0)

static void softmax_range(void *data, int64_t begin, int64_t end) {
  const softmax_job *j = data;
  for (int64_t o = begin; o < end; o++) {
    int64_t base = o / j->inner * j->n * j->inner + o % j->inner;
    if (j->work == RAF_F64)
      SOFTMAX_ROW(double, exp);
    else
      SOFTMAX_ROW(float, expf);
  }
}

raf_status raf_cpuref_softmax(const raf_kernel *k) {
  const raf_tensor *x = k->in[0];
  raf_tensor *y = k->out[0];
  int64_t outer;
  softmax_job j = {.work = raf_cpuref_work_dtype(x->type->dtype),
                   .log = k->stmt->op == RAF_OP_LOG_SOFTMAX};
  split_at(x->type, axis_attr(k, "axis", x->type->rank), &outer, &j.n,
           &j.inner);
  if (y->type->numel == 0)
    return RAF_OK;
  void *own_x, *own_y = NULL;
  raf_status rc = raf_cpuref_working_copy(k, x, j.work, &j.x, &own_x);
  if (rc == RAF_OK)
    rc = work_out(k, y, j.work, &j.y, &own_y);
  if (rc == RAF_OK) {
    raf_kernel_parallel(k, outer * j.inner, raf_cpuref_grain(CHUNK_WORK, 3 * j.n),
                        softmax_range, &j);
    store_out(k, y, j.work, own_y);
  }
  free(own_x);
  free(own_y);
  return rc;
}

/* ---- layer_norm ---------------------------------------------------------- */

typedef struct layer_norm_job {
  raf_dtype work;
  const void *x, *gamma, *beta;
  void *y; /* in the working type */
  int64_t n;
  double eps;
} layer_norm_job;

#define LAYER_NORM_ROW(T)                                                      \
  do {                                                                         \
    const T *x = (const T *)j->x + r * n, *g = j->gamma, *b = j->beta;         \
    T *y = (T *)j->y + r * n;                                                  \
    double sum = 0, sq = 0;                                                    \
    for (int64_t i = 0; i < n; i++)                                            \
      sum += (double)x[i];                                                     \
    double mean = sum / (double)n;                                             \
    for (int64_t i = 0; i < n; i++) {                                          \
      double d = (double)x[i] - mean;                                          \
      sq += d * d;                                                             \
    }                                                                          \
    T m = (T)mean, rstd = (T)(1 / sqrt(sq / (double)n + j->eps));              \
    for (int64_t i = 0; i < n; i++)                                            \
      y[i] = (x[i] - m) * rstd * g[i] + b[i];                                  \
  } while (0)

static void layer_norm_range(void *data, int64_t begin, int64_t end) {
  const layer_norm_job *j = data;
  const int64_t n = j->n;
  for (int64_t r = begin; r < end; r++) {
    if (j->work == RAF_F64)
      LAYER_NORM_ROW(double);
    else
      LAYER_NORM_ROW(float);
  }
}

raf_status raf_cpuref_layer_norm(const raf_kernel *k) {
  const raf_tensor *x = k->in[0];
  raf_tensor *y = k->out[0];
  int axis = axis_attr(k, "axis", x->type->rank);
  layer_norm_job j = {.work = raf_cpuref_work_dtype(x->type->dtype),
                      .n = 1,
                      .eps = raf_stmt_attr_float(k->stmt, "eps")};
  for (int d = axis; d < x->type->rank; d++)
    j.n *= x->type->dims[d];
  if (y->type->numel == 0)
    return RAF_OK;
  void *own[4] = {NULL, NULL, NULL, NULL};
  raf_status rc = raf_cpuref_working_copy(k, x, j.work, &j.x, &own[0]);
  if (rc == RAF_OK)
    rc = raf_cpuref_working_copy(k, k->in[1], j.work, &j.gamma, &own[1]);
  if (rc == RAF_OK)
    rc = raf_cpuref_working_copy(k, k->in[2], j.work, &j.beta, &own[2]);
  if (rc == RAF_OK)
    rc = work_out(k, y, j.work, &j.y, &own[3]);
  if (rc == RAF_OK) {
    raf_kernel_parallel(k, y->type->numel / j.n, raf_cpuref_grain(CHUNK_WORK, 3 * j.n),
                        layer_norm_range, &j);
    store_out(k, y, j.work, own[3]);
  }
  for (int i = 0; i < 4; i++)
    free(own[i]);
  return rc;
}
