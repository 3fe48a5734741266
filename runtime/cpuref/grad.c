/* grad.c: cpu-ref kernels for the backward operators that the autodiff
 * pass makes (docs/LangRef.md, "Backward operators"). Each computes the
 * gradient of its forward op's operands from dy, the gradient of the
 * forward result, and the forward values it names, with PyTorch's
 * semantics (derivatives.yaml):
 *
 * (gelu_grad and the other elementwise backward operators are the
 * BACKWARD rows of lang/scalar.def, computed by elementwise.c.)
 * softmax_grad(dy, y): y * (dy - sum(dy * y)) along axis; log_softmax_grad
 * (dy, y): dy - exp(y) * sum(dy) along axis. y is the forward result.
 * layer_norm_grad(dy, x, gamma) -> (dx, dgamma, dbeta): per row of the
 * normalised dims, with xhat = (x - mean) * rstd, g = dy * gamma,
 * dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgamma sums
 * dy * xhat over the rows, dbeta sums dy.
 * cross_entropy_grad(dy, logits, labels): per row, (softmax(row) -
 * onehot(label)) times dy (its element under "none"; divided by the number
 * of counted labels under "mean"); rows whose label is ignore_index are 0,
 * other labels outside [0, C) are an error, as in the forward kernel.
 * take_grad(dy, indices) {axis, dim}: scatter-add of dy into zeros of the
 * table's shape (negative indices count from the end, as take does).
 * slice_grad(dy) {shape, begin, end, strides}: zeros of `shape` with dy
 * written where slice read it.
 * max_pool2d_grad(dy, x): each dy goes to the element its window's max
 * came from, chosen as the forward kernel and PyTorch choose it (the first
 * strict maximum, or the last NaN); avg_pool2d_grad(dy) {shape} spreads
 * dy / (KH * KW) over its window (count_include_pad).
 * conv2d_grad_input(dy, w) {shape}: the transposed convolution of dy;
 * conv2d_grad_weight(dy, x) {shape}: the correlation of dy with x.
 * batch_norm_grad(dy, x, gamma, mean, var) -> (dx, dgamma, dbeta): with
 * the batch statistics when training, the running mean and var otherwise.
 * scaled_dot_product_attention_grad(dy, q, k, v) -> (dq, dk, dv): the
 * scores and softmax are recomputed per (batch, head), as in
 * FlashAttention's backward.
 *
 * Numerics: every kernel but take_grad computes in double, from working
 * copies of its operands, and rounds once when it stores a result; f64
 * operands are read in place, and so are f32 ones (and f32 results written
 * in place) by layer_norm_grad and cross_entropy_grad, converting each
 * element exactly as it is read: the same arithmetic without the copies.
 * take_grad adds in the working type of cpuref.h (see there). Every result element is computed by one thread in an order
 * fixed by the shapes (sums in ascending index order), and the parallel
 * split is over independent outputs, so results do not depend on the
 * thread count.
 */
#include "runtime/cpuref/cpuref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* About this many element visits per parallel chunk. */
#define CHUNK_WORK ((int64_t)1 << 16)


static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- Working copies ------------------------------------------------------ */

/* Up to 8 buffers a kernel owns, freed together. */
typedef struct buffers {
  void *own[8];
  int n;
} buffers;

static void buffers_free(buffers *b) {
  for (int i = 0; i < b->n; i++)
    free(b->own[i]);
  b->n = 0;
}

/* t's elements as doubles: its own data when it is f64, else a converted
 * copy owned by b. NULL when out of memory (reported). */
static const double *in_f64(const raf_kernel *k, buffers *b,
                            const raf_tensor *t) {
  if (t->type->dtype == RAF_F64)
    return t->data;
  double *p = malloc(t->type->numel ? (size_t)t->type->numel * sizeof *p : 1);
  if (!p) {
    raf_kernel_fail(k, "out of memory for a working copy of %s",
                    raf_dtype_name(t->type->dtype));
    return NULL;
  }
  b->own[b->n++] = p;
  raf_elem_convert(RAF_F64, p, t->type->dtype, t->data, t->type->numel);
  return p;
}

/* Room for t's elements as doubles: t's own buffer when it is f64, else a
 * buffer owned by b, which out_done converts into t. Zeroed when asked. */
static double *out_f64(const raf_kernel *k, buffers *b, raf_tensor *t,
                       bool zero) {
  double *p = t->data;
  size_t n = (size_t)t->type->numel;
  if (t->type->dtype != RAF_F64) {
    p = malloc(n ? n * sizeof *p : 1);
    if (!p) {
      raf_kernel_fail(k, "out of memory for a working result");
      return NULL;
    }
    b->own[b->n++] = p;
  }
  if (zero)
    for (size_t i = 0; i < n; i++)
      p[i] = 0;
  return p;
}

static void out_done(raf_tensor *t, const double *p) {
  if ((const void *)p != t->data)
    raf_elem_convert(t->type->dtype, t->data, RAF_F64, p, t->type->numel);
}

/* A kernel's operands as doubles and its results' buffers; false when out
 * of memory (reported, and everything freed). */
static bool setup(const raf_kernel *k, buffers *b, const double **in,
                  int nin, double **out, bool zero) {
  b->n = 0;
  for (int i = 0; i < nin; i++)
    if (!(in[i] = in_f64(k, b, k->in[i]))) {
      buffers_free(b);
      return false;
    }
  for (int i = 0; i < k->nout; i++)
    if (!(out[i] = out_f64(k, b, k->out[i], zero))) {
      buffers_free(b);
      return false;
    }
  return true;
}

static void finish(const raf_kernel *k, buffers *b, double **out) {
  for (int i = 0; i < k->nout; i++)
    out_done(k->out[i], out[i]);
  buffers_free(b);
}

/* x viewed as [outer, n, inner] around dim axis. */
static void around_axis(const raf_type *t, int axis, int64_t *outer,
                        int64_t *n, int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < axis; d++)
    *outer *= t->dims[d];
  for (int d = axis + 1; d < t->rank; d++)
    *inner *= t->dims[d];
  *n = t->dims[axis];
}

static int norm_axis(int64_t axis, int rank) {
  return (int)(axis < 0 ? axis + rank : axis);
}

/* ---- softmax_grad, log_softmax_grad -------------------------------------- */

typedef struct rows_job {
  const double *dy, *y;
  double *dx;
  int64_t n, inner;
  bool log;
} rows_job;

/* Row r is (outer r / inner, inner r % inner): n elements, stride inner. */
static void softmax_grad_rows(void *data, int64_t begin, int64_t end) {
  const rows_job *j = data;
  for (int64_t r = begin; r < end; r++) {
    int64_t base = r / j->inner * j->n * j->inner + r % j->inner;
    const double *dy = j->dy + base, *y = j->y + base;
    double *dx = j->dx + base, s = 0;
    int64_t st = j->inner;
    if (j->log) {
      for (int64_t e = 0; e < j->n; e++)
        s += dy[e * st];
      for (int64_t e = 0; e < j->n; e++)
        dx[e * st] = dy[e * st] - exp(y[e * st]) * s;
    } else {
      for (int64_t e = 0; e < j->n; e++)
        s += dy[e * st] * y[e * st];
      for (int64_t e = 0; e < j->n; e++)
        dx[e * st] = y[e * st] * (dy[e * st] - s);
    }
  }
}

raf_status raf_cpuref_softmax_grad(const raf_kernel *k) {
  const raf_type *t = k->out[0]->type;
  buffers b;
  const double *in[2];
  double *out[1];
  int64_t outer, n, inner;
  if (t->numel == 0)
    return RAF_OK;
  if (!setup(k, &b, in, 2, out, false))
    return RAF_ERROR;
  around_axis(t, norm_axis(raf_stmt_attr_int(k->stmt, "axis"), t->rank),
              &outer, &n, &inner);
  rows_job j = {in[0], in[1], out[0], n, inner,
                k->stmt->op == RAF_OP_LOG_SOFTMAX_GRAD};
  raf_kernel_parallel(k, outer * inner, raf_cpuref_grain(CHUNK_WORK, 2 * n), softmax_grad_rows,
                      &j);
  finish(k, &b, out);
  return RAF_OK;
}

/* ---- layer_norm_grad ----------------------------------------------------- */

/* In double as the other kernels; f32 operands are read in place and f32
 * results written in place (each element converted exactly on the way in,
 * rounded once on the way out), the same arithmetic without the working
 * copies. dgamma and dbeta add over the rows in ascending order, a block
 * of columns at a time (rows outer, so each row's block is read once and
 * contiguously). */
typedef struct ln_job {
  const double *dy, *x, *gamma; /* double operands, or NULL (f32) */
  double *dx, *dgamma, *dbeta;
  const float *fdy, *fx, *fgamma; /* f32 operands */
  float *fdx, *fdgamma, *fdbeta;
  double *mean, *rstd; /* per row */
  int64_t rows, n;
  double eps;
} ln_job;

#define LN_GRAD_ROWS(DY, X, GAMMA, DX)                                         \
  for (int64_t r = begin; r < end; r++) {                                      \
    double mean = 0, var = 0, mg = 0, mgx = 0;                                 \
    for (int64_t e = 0; e < n; e++)                                            \
      mean += (double)X[r * n + e];                                            \
    mean /= (double)n;                                                         \
    for (int64_t e = 0; e < n; e++)                                            \
      var += ((double)X[r * n + e] - mean) * ((double)X[r * n + e] - mean);    \
    var /= (double)n;                                                          \
    double rstd = 1 / sqrt(var + j->eps);                                      \
    for (int64_t e = 0; e < n; e++) {                                          \
      double g = (double)DY[r * n + e] * (double)GAMMA[e];                     \
      mg += g;                                                                 \
      mgx += g * ((double)X[r * n + e] - mean) * rstd;                         \
    }                                                                          \
    mg /= (double)n;                                                           \
    mgx /= (double)n;                                                          \
    for (int64_t e = 0; e < n; e++)                                            \
      DX[r * n + e] = rstd * ((double)DY[r * n + e] * (double)GAMMA[e] - mg -   \
                              ((double)X[r * n + e] - mean) * rstd * mgx);     \
    j->mean[r] = mean;                                                         \
    j->rstd[r] = rstd;                                                         \
  }

static void ln_grad_rows(void *data, int64_t begin, int64_t end) {
  const ln_job *j = data;
  const int64_t n = j->n;
  if (j->x) {
    LN_GRAD_ROWS(j->dy, j->x, j->gamma, j->dx)
  } else {
    LN_GRAD_ROWS(j->fdy, j->fx, j->fgamma, j->fdx)
  }
}

/* Columns per block of ln_grad_params (its sums on the stack). */
enum { LN_COLS = 256 };

#define LN_GRAD_PARAMS(DY, X)                                                  \
  for (int64_t r = 0; r < j->rows; r++) {                                      \
    double mean = j->mean[r], rstd = j->rstd[r];                               \
    for (int64_t e = 0; e < w; e++) {                                          \
      double dy = (double)DY[r * j->n + e0 + e];                               \
      dg[e] += dy * ((double)X[r * j->n + e0 + e] - mean) * rstd;              \
      db[e] += dy;                                                             \
    }                                                                          \
  }

static void ln_grad_params(void *data, int64_t begin, int64_t end) {
  const ln_job *j = data;
  double dg[LN_COLS], db[LN_COLS];
  for (int64_t e0 = begin; e0 < end; e0 += LN_COLS) {
    int64_t w = min64(LN_COLS, end - e0);
    for (int64_t e = 0; e < w; e++)
      dg[e] = db[e] = 0;
    if (j->x) {
      LN_GRAD_PARAMS(j->dy, j->x)
    } else {
      LN_GRAD_PARAMS(j->fdy, j->fx)
    }
    for (int64_t e = 0; e < w; e++) {
      if (j->dgamma) {
        j->dgamma[e0 + e] = dg[e];
        j->dbeta[e0 + e] = db[e];
      } else {
        j->fdgamma[e0 + e] = (float)dg[e];
        j->fdbeta[e0 + e] = (float)db[e];
      }
    }
  }
}

raf_status raf_cpuref_layer_norm_grad(const raf_kernel *k) {
  const raf_type *xt = k->in[1]->type;
  buffers b = {.n = 0};
  const double *in[3] = {NULL, NULL, NULL};
  double *out[3] = {NULL, NULL, NULL};
  bool f32 = true;
  for (int i = 0; i < 3; i++)
    f32 &= k->in[i]->type->dtype == RAF_F32 && k->out[i]->type->dtype ==
                                                   RAF_F32;
  if (!f32 && !setup(k, &b, in, 3, out, false))
    return RAF_ERROR;
  ln_job j = {.dy = in[0], .x = in[1], .gamma = in[2], .dx = out[0],
              .dgamma = out[1], .dbeta = out[2],
              .n = k->in[2]->type->numel,
              .eps = raf_stmt_attr_float(k->stmt, "eps")};
  if (f32) {
    j.fdy = k->in[0]->data, j.fx = k->in[1]->data, j.fgamma = k->in[2]->data;
    j.fdx = k->out[0]->data, j.fdgamma = k->out[1]->data;
    j.fdbeta = k->out[2]->data;
  }
  /* gamma has the normalised dims' shape: its size is the row length. */
  j.rows = j.n ? xt->numel / j.n : 0;
  double *stats = malloc((size_t)(2 * j.rows + 1) * sizeof *stats);
  if (!stats) {
    buffers_free(&b);
    return raf_kernel_fail(k, "out of memory for the row statistics");
  }
  j.mean = stats;
  j.rstd = stats + j.rows;
  raf_kernel_parallel(k, j.rows, raf_cpuref_grain(CHUNK_WORK, 4 * j.n), ln_grad_rows, &j);
  raf_kernel_parallel(k, j.n, LN_COLS, ln_grad_params, &j);
  free(stats);
  if (!f32)
    finish(k, &b, out);
  return RAF_OK;
}

/* ---- cross_entropy_grad -------------------------------------------------- */

/* f32 logits and result are read and written in place, each exponential
 * computed once per element into a row of doubles: the same arithmetic as
 * the double working copies, without them (a vocabulary-wide row is the
 * largest tensor of a language model's step). */
typedef struct ce_job {
  const double *dy, *logits;
  const float *flogits; /* f32 logits, or NULL */
  const raf_tensor *labels;
  double *dx;
  float *fdx; /* f32 result, or NULL */
  int64_t classes, ignore;
  double scale; /* dy / count for "mean", dy for "sum"; unused for "none" */
  bool none;
  atomic_bool out_of_memory;
} ce_job;

#define CE_GRAD_ROW(X, DX)                                                     \
  do {                                                                         \
    double top = -INFINITY, total = 0;                                         \
    for (int64_t c = 0; c < C; c++)                                            \
      if ((double)X[c] > top || isnan(X[c]))                                   \
        top = X[c];                                                            \
    for (int64_t c = 0; c < C; c++)                                            \
      total += e[c] = exp((double)X[c] - top);                                 \
    for (int64_t c = 0; c < C; c++)                                            \
      DX[c] = (e[c] / total - (c == label)) * g;                               \
  } while (0)

static void ce_grad_rows(void *data, int64_t begin, int64_t end) {
  ce_job *j = data;
  const int64_t C = j->classes;
  double *e = malloc((size_t)(C + 1) * sizeof *e);
  if (!e) {
    atomic_store(&j->out_of_memory, true);
    return;
  }
  for (int64_t r = begin; r < end; r++) {
    int64_t label = raf_elem_get_i64(j->labels->type->dtype, j->labels->data,
                                     r);
    if (label == j->ignore) {
      for (int64_t c = 0; c < C; c++) {
        if (j->fdx)
          j->fdx[r * C + c] = 0;
        else
          j->dx[r * C + c] = 0;
      }
      continue;
    }
    double g = j->none ? j->dy[r] : j->scale;
    if (j->flogits) {
      const float *x = j->flogits + r * C;
      float *dx = j->fdx + r * C;
      CE_GRAD_ROW(x, dx);
    } else {
      const double *x = j->logits + r * C;
      double *dx = j->dx + r * C;
      CE_GRAD_ROW(x, dx);
    }
  }
  free(e);
}

raf_status raf_cpuref_cross_entropy_grad(const raf_kernel *k) {
  const raf_type *lt = k->in[1]->type;
  const raf_tensor *labels = k->in[2];
  const char *red = raf_stmt_attr_str(k->stmt, "reduction");
  ce_job j = {.labels = labels,
              .classes = lt->dims[lt->rank - 1],
              .ignore = raf_stmt_attr_int(k->stmt, "ignore_index"),
              .none = strcmp(red, "none") == 0};
  atomic_init(&j.out_of_memory, false);
  int64_t rows = labels->type->numel, counted = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t label = raf_elem_get_i64(labels->type->dtype, labels->data, r);
    if (label == j.ignore)
      continue;
    if (label < 0 || label >= j.classes)
      return raf_kernel_fail(k, "label %lld (labels element %lld) is out of "
                             "range for %lld classes", (long long)label,
                             (long long)r, (long long)j.classes);
    counted++;
  }
  buffers b = {.n = 0};
  const double *in[2] = {NULL, NULL};
  double *out[1] = {NULL};
  bool f32 = lt->dtype == RAF_F32 && k->out[0]->type->dtype == RAF_F32;
  if (f32) {
    if (!(in[0] = in_f64(k, &b, k->in[0])))
      return RAF_ERROR;
    j.flogits = k->in[1]->data;
    j.fdx = k->out[0]->data;
  } else if (!setup(k, &b, in, 2, out, false)) {
    return RAF_ERROR;
  }
  j.dy = in[0];
  j.logits = in[1];
  j.dx = out[0];
  if (!j.none)
    j.scale = strcmp(red, "mean") == 0 ? in[0][0] / (double)counted
                                       : in[0][0];
  raf_kernel_parallel(k, rows, raf_cpuref_grain(CHUNK_WORK, 3 * j.classes), ce_grad_rows, &j);
  if (atomic_load(&j.out_of_memory)) {
    buffers_free(&b);
    return raf_kernel_fail(k, "out of memory for a row of exponentials");
  }
  if (f32)
    buffers_free(&b);
  else
    finish(k, &b, out);
  return RAF_OK;
}

/* ---- take_grad ----------------------------------------------------------- */

/* An embedding table is the largest tensor of many models, so take_grad
 * accumulates in the working type of cpuref.h (float for f32, f16 and
 * bf16, as PyTorch's embedding backward; double for f64), straight into
 * the result when it has that type, instead of a double copy. */
typedef struct take_job {
  raf_dtype work;
  const void *dy; /* in the working type */
  void *dx;
  const int64_t *idx; /* normalised to [0, dim) */
  int64_t nidx, dim, post;
} take_job;

#define TAKE_LANE(T)                                                           \
  for (int64_t t = 0; t < j->nidx; t++) {                                      \
    const T *src = (const T *)j->dy + (p * j->nidx + t) * j->post;             \
    T *dst = (T *)j->dx + (p * j->dim + j->idx[t]) * j->post;                  \
    for (int64_t q = q0; q < q1; q++)                                          \
      dst[q] += src[q];                                                        \
  }

/* Lanes are (p, q) pairs, p over the dims before axis and q over those
 * after; each lane adds its dy elements in index order. */
static void take_grad_lanes(void *data, int64_t begin, int64_t end) {
  const take_job *j = data;
  for (int64_t l = begin; l < end;) {
    int64_t p = l / j->post, q0 = l % j->post;
    int64_t q1 = min64(j->post, q0 + (end - l));
    if (j->work == RAF_F64) {
      TAKE_LANE(double)
    } else {
      TAKE_LANE(float)
    }
    l += q1 - q0;
  }
}

raf_status raf_cpuref_take_grad(const raf_kernel *k) {
  const raf_tensor *ix = k->in[1], *dy = k->in[0];
  raf_tensor *out = k->out[0];
  const raf_type *dt = out->type;
  int axis = norm_axis(raf_stmt_attr_int(k->stmt, "axis"), dt->rank);
  take_job j = {.work = raf_cpuref_work_dtype(dt->dtype),
                .nidx = ix->type->numel, .dim = dt->dims[axis], .post = 1};
  int64_t pre = 1;
  for (int d = 0; d < axis; d++)
    pre *= dt->dims[d];
  for (int d = axis + 1; d < dt->rank; d++)
    j.post *= dt->dims[d];
  size_t ws = (size_t)raf_dtype_size(j.work);
  bool own_dy = dy->type->dtype != j.work, own_dx = dt->dtype != j.work;
  int64_t *idx = malloc((size_t)(j.nidx + 1) * sizeof *idx);
  void *dyw = own_dy ? malloc((size_t)dy->type->numel * ws + 1) : dy->data;
  void *dxw = own_dx ? malloc((size_t)dt->numel * ws + 1) : out->data;
  raf_status rc = RAF_OK;
  if (!idx || !dyw || !dxw)
    rc = raf_kernel_fail(k, "out of memory for a working copy");
  for (int64_t t = 0; t < j.nidx && rc == RAF_OK; t++) {
    int64_t v = raf_elem_get_i64(ix->type->dtype, ix->data, t);
    if (v < -j.dim || v >= j.dim)
      rc = raf_kernel_fail(k, "index %lld (indices element %lld) is out of "
                           "bounds for axis %d with size %lld",
                           (long long)v, (long long)t, axis,
                           (long long)j.dim);
    else
      idx[t] = v < 0 ? v + j.dim : v;
  }
  if (rc == RAF_OK) {
    if (own_dy)
      raf_elem_convert(j.work, dyw, dy->type->dtype, dy->data,
                       dy->type->numel);
    memset(dxw, 0, (size_t)dt->numel * ws); /* 0.0 in float and double */
    j.idx = idx;
    j.dy = dyw;
    j.dx = dxw;
    raf_kernel_parallel(k, pre * j.post, raf_cpuref_grain(CHUNK_WORK, j.nidx), take_grad_lanes,
                        &j);
    if (own_dx)
      raf_elem_convert(dt->dtype, out->data, j.work, dxw, dt->numel);
  }
  free(idx);
  if (own_dy)
    free(dyw);
  if (own_dx)
    free(dxw);
  return rc;
}

/* ---- slice_grad ---------------------------------------------------------- */

typedef struct slice_job {
  const raf_tensor *dy;
  raf_tensor *dx;
  int rank;
  int64_t begin[RAF_MAX_RANK], step[RAF_MAX_RANK]; /* in dx's elements */
} slice_job;

/* dy element i goes to dx element sum(begin[d] + idx[d] * step[d]). */
static void slice_grad_range(void *data, int64_t begin, int64_t end) {
  const slice_job *j = data;
  const raf_type *t = j->dy->type;
  size_t size = (size_t)raf_dtype_size(t->dtype);
  int64_t idx[RAF_MAX_RANK], off = 0, rest = begin;
  for (int d = j->rank - 1; d >= 0; d--) {
    idx[d] = rest % t->dims[d];
    rest /= t->dims[d];
    off += j->begin[d] + idx[d] * j->step[d];
  }
  for (int64_t i = begin; i < end; i++) {
    memcpy((char *)j->dx->data + (size_t)off * size,
           (const char *)j->dy->data + (size_t)i * size, size);
    for (int d = j->rank - 1; d >= 0; d--) { /* the odometer */
      off += j->step[d];
      if (++idx[d] < t->dims[d])
        break;
      off -= j->step[d] * t->dims[d];
      idx[d] = 0;
    }
  }
}

raf_status raf_cpuref_slice_grad(const raf_kernel *k) {
  const raf_type *xt = k->out[0]->type, *yt = k->in[0]->type;
  raf_attr_value begin, end, strides;
  bool stepped = raf_stmt_attr(k->stmt, "strides", &strides);
  raf_stmt_attr(k->stmt, "begin", &begin);
  raf_stmt_attr(k->stmt, "end", &end);
  slice_job j = {.dy = k->in[0], .dx = k->out[0], .rank = xt->rank};
  int64_t strides_x[RAF_MAX_RANK];
  raf_contiguous_strides(xt, strides_x);
  for (int d = 0; d < xt->rank; d++) {
    int64_t s = stepped ? strides.u.ints.v[d] : 1, b;
    (void)raf_slice_range(xt->dims[d], begin.u.ints.v[d], end.u.ints.v[d], s,
                          &b);
    j.begin[d] = b * strides_x[d];
    j.step[d] = s * strides_x[d];
  }
  memset(k->out[0]->data, 0, k->out[0]->nbytes); /* 0.0 in every float */
  if (yt->numel)
    raf_kernel_parallel(k, yt->numel, CHUNK_WORK, slice_grad_range, &j);
  return RAF_OK;
}

/* ---- max_pool2d_grad, avg_pool2d_grad ------------------------------------ */

typedef struct pool_job {
  const double *dy, *x;
  double *dx;
  bool max;
  int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw;
} pool_job;

static void pool_grad_planes(void *data, int64_t begin, int64_t end) {
  const pool_job *j = data;
  const int64_t H = j->h, W = j->w, OH = j->oh, OW = j->ow;
  double area = (double)(j->kh * j->kw);
  for (int64_t r = begin; r < end; r++) {
    const double *dy = j->dy + r * OH * OW, *x = j->x ? j->x + r * H * W : 0;
    double *dx = j->dx + r * H * W;
    for (int64_t i = 0; i < H * W; i++)
      dx[i] = 0;
    for (int64_t i = 0; i < OH; i++) {
      int64_t h0 = i * j->sh - j->ph;
      int64_t hlo = max64(h0, 0), hhi = min64(h0 + j->kh, H);
      for (int64_t q = 0; q < OW; q++) {
        int64_t w0 = q * j->sw - j->pw;
        int64_t wlo = max64(w0, 0), whi = min64(w0 + j->kw, W);
        double g = dy[i * OW + q];
        if (!j->max) {
          for (int64_t a = hlo; a < hhi; a++)
            for (int64_t c = wlo; c < whi; c++)
              dx[a * W + c] += g / area;
          continue;
        }
        /* As the forward kernel: the first strict maximum, or the last
         * NaN; PyTorch starts from the window's first element. */
        int64_t at = hlo * W + wlo;
        double top = -INFINITY;
        for (int64_t a = hlo; a < hhi; a++)
          for (int64_t c = wlo; c < whi; c++) {
            double v = x[a * W + c];
            if (v > top || isnan(v)) {
              top = v;
              at = a * W + c;
            }
          }
        if (hlo < hhi && wlo < whi)
          dx[at] += g;
      }
    }
  }
}

raf_status raf_cpuref_pool2d_grad(const raf_kernel *k) {
  const raf_type *xt = k->out[0]->type, *yt = k->in[0]->type;
  raf_attr_value kernel, stride, pad;
  raf_stmt_attr(k->stmt, "kernel", &kernel);
  if (!raf_stmt_attr(k->stmt, "stride", &stride))
    stride = kernel;
  raf_stmt_attr(k->stmt, "padding", &pad);
  bool max = k->stmt->op == RAF_OP_MAX_POOL2D_GRAD;
  buffers b;
  const double *in[2] = {NULL, NULL};
  double *out[1];
  if (!setup(k, &b, in, max ? 2 : 1, out, false))
    return RAF_ERROR;
  pool_job j = {.dy = in[0], .x = in[1], .dx = out[0], .max = max,
                .h = xt->dims[2], .w = xt->dims[3],
                .oh = yt->dims[2], .ow = yt->dims[3],
                .kh = kernel.u.ints.v[0], .kw = kernel.u.ints.v[1],
                .sh = stride.u.ints.v[0], .sw = stride.u.ints.v[1],
                .ph = pad.u.ints.v[0], .pw = pad.u.ints.v[1]};
  raf_kernel_parallel(k, xt->dims[0] * xt->dims[1],
                      raf_cpuref_grain(CHUNK_WORK, j.h * j.w + j.oh * j.ow * j.kh * j.kw),
                      pool_grad_planes, &j);
  finish(k, &b, out);
  return RAF_OK;
}

/* ---- conv2d_grad_input, conv2d_grad_weight -------------------------------- */

typedef struct conv_job {
  const double *dy, *other; /* w for the input gradient, x for the weight's */
  double *r;
  int64_t n, c, h, w;      /* x [N, C, H, W] */
  int64_t o, kh, kw;       /* w [O, C / groups, KH, KW] */
  int64_t oh, ow, cg, og;  /* dy [N, O, OH, OW]; channels per group */
  int64_t sh, sw, ph, pw, dh, dw;
} conv_job;

/* dx plane (n, c): every output (o, i, q) of c's group that read
 * x[n, c, i * sh - ph + a * dh, q * sw - pw + b * dw] adds w * dy there. */
static void conv_grad_input_planes(void *data, int64_t begin, int64_t end) {
  const conv_job *j = data;
  const int64_t H = j->h, W = j->w, OH = j->oh, OW = j->ow;
  for (int64_t r = begin; r < end; r++) {
    int64_t n = r / j->c, c = r % j->c, g = c / j->cg, cc = c % j->cg;
    double *dx = j->r + r * H * W;
    for (int64_t e = 0; e < H * W; e++)
      dx[e] = 0;
    for (int64_t o = g * j->og; o < (g + 1) * j->og; o++) {
      const double *dy = j->dy + (n * j->o + o) * OH * OW;
      const double *w = j->other + (o * j->cg + cc) * j->kh * j->kw;
      for (int64_t a = 0; a < j->kh; a++)
        for (int64_t b = 0; b < j->kw; b++) {
          double wv = w[a * j->kw + b];
          for (int64_t i = 0; i < OH; i++) {
            int64_t y = i * j->sh - j->ph + a * j->dh;
            if (y < 0 || y >= H)
              continue;
            for (int64_t q = 0; q < OW; q++) {
              int64_t x = q * j->sw - j->pw + b * j->dw;
              if (x >= 0 && x < W)
                dx[y * W + x] += wv * dy[i * OW + q];
            }
          }
        }
    }
  }
}

/* dw element (o, cc, a, b): the sum over n, i, q of dy[n, o, i, q] times
 * the x element it was multiplied with. */
static void conv_grad_weight_elems(void *data, int64_t begin, int64_t end) {
  const conv_job *j = data;
  const int64_t H = j->h, W = j->w, OH = j->oh, OW = j->ow;
  for (int64_t e = begin; e < end; e++) {
    int64_t b = e % j->kw, a = e / j->kw % j->kh, cc = e / (j->kw * j->kh) %
                                                       j->cg;
    int64_t o = e / (j->kw * j->kh * j->cg), c = o / j->og * j->cg + cc;
    double s = 0;
    for (int64_t n = 0; n < j->n; n++) {
      const double *dy = j->dy + (n * j->o + o) * OH * OW;
      const double *x = j->other + (n * j->c + c) * H * W;
      for (int64_t i = 0; i < OH; i++) {
        int64_t y = i * j->sh - j->ph + a * j->dh;
        if (y < 0 || y >= H)
          continue;
        for (int64_t q = 0; q < OW; q++) {
          int64_t xx = q * j->sw - j->pw + b * j->dw;
          if (xx >= 0 && xx < W)
            s += dy[i * OW + q] * x[y * W + xx];
        }
      }
    }
    j->r[e] = s;
  }
}

raf_status raf_cpuref_conv2d_grad(const raf_kernel *k) {
  bool input = k->stmt->op == RAF_OP_CONV2D_GRAD_INPUT;
  const raf_type *yt = k->in[0]->type;
  const raf_type *xt = input ? k->out[0]->type : k->in[1]->type;
  const raf_type *wt = input ? k->in[1]->type : k->out[0]->type;
  raf_attr_value stride, pad, dil;
  raf_stmt_attr(k->stmt, "stride", &stride);
  raf_stmt_attr(k->stmt, "padding", &pad);
  raf_stmt_attr(k->stmt, "dilation", &dil);
  int64_t groups = raf_stmt_attr_int(k->stmt, "groups");
  buffers b;
  const double *in[2];
  double *out[1];
  if (!setup(k, &b, in, 2, out, false))
    return RAF_ERROR;
  conv_job j = {.dy = in[0], .other = in[1], .r = out[0],
                .n = xt->dims[0], .c = xt->dims[1], .h = xt->dims[2],
                .w = xt->dims[3], .o = wt->dims[0], .kh = wt->dims[2],
                .kw = wt->dims[3], .oh = yt->dims[2], .ow = yt->dims[3],
                .cg = wt->dims[1], .og = wt->dims[0] / groups,
                .sh = stride.u.ints.v[0], .sw = stride.u.ints.v[1],
                .ph = pad.u.ints.v[0], .pw = pad.u.ints.v[1],
                .dh = dil.u.ints.v[0], .dw = dil.u.ints.v[1]};
  int64_t per = j.og * j.kh * j.kw * j.oh * j.ow;
  if (input)
    raf_kernel_parallel(k, j.n * j.c, raf_cpuref_grain(CHUNK_WORK, per), conv_grad_input_planes,
                        &j);
  else
    raf_kernel_parallel(k, wt->numel, raf_cpuref_grain(CHUNK_WORK, j.n * j.oh * j.ow),
                        conv_grad_weight_elems, &j);
  finish(k, &b, out);
  return RAF_OK;
}

/* ---- batch_norm_grad ----------------------------------------------------- */

typedef struct bn_job {
  const double *dy, *x, *gamma, *mean, *var;
  double *dx, *dgamma, *dbeta;
  int64_t n, c, inner;
  double eps;
  bool training;
} bn_job;

#define FOR_CHANNEL(body)                                                      \
  for (int64_t b = 0; b < j->n; b++)                                           \
    for (int64_t e = 0; e < j->inner; e++) {                                   \
      int64_t at = (b * j->c + ch) * j->inner + e;                             \
      body;                                                                    \
    }

static void bn_grad_channels(void *data, int64_t begin, int64_t end) {
  const bn_job *j = data;
  for (int64_t ch = begin; ch < end; ch++) {
    double count = (double)(j->n * j->inner), mean = j->mean[ch],
           var = j->var[ch];
    if (j->training) {
      double s = 0, sq = 0;
      FOR_CHANNEL(s += j->x[at]);
      mean = s / count;
      FOR_CHANNEL(sq += (j->x[at] - mean) * (j->x[at] - mean));
      var = sq / count;
    }
    double rstd = 1 / sqrt(var + j->eps), db = 0, dg = 0;
    FOR_CHANNEL({
      db += j->dy[at];
      dg += j->dy[at] * (j->x[at] - mean) * rstd;
    });
    double scale = j->gamma[ch] * rstd;
    if (j->training) {
      FOR_CHANNEL(j->dx[at] = scale * (j->dy[at] - db / count -
                                       (j->x[at] - mean) * rstd * dg / count));
    } else {
      FOR_CHANNEL(j->dx[at] = scale * j->dy[at]);
    }
    j->dgamma[ch] = dg;
    j->dbeta[ch] = db;
  }
}

raf_status raf_cpuref_batch_norm_grad(const raf_kernel *k) {
  const raf_type *xt = k->in[1]->type;
  buffers b;
  const double *in[5];
  double *out[3];
  if (!setup(k, &b, in, 5, out, false))
    return RAF_ERROR;
  bn_job j = {.dy = in[0], .x = in[1], .gamma = in[2], .mean = in[3],
              .var = in[4], .dx = out[0], .dgamma = out[1], .dbeta = out[2],
              .n = xt->dims[0], .c = xt->dims[1], .inner = 1,
              .eps = raf_stmt_attr_float(k->stmt, "eps"),
              .training = raf_stmt_attr_bool(k->stmt, "training")};
  for (int d = 2; d < xt->rank; d++)
    j.inner *= xt->dims[d];
  raf_kernel_parallel(k, j.c, raf_cpuref_grain(CHUNK_WORK, 4 * j.n * j.inner), bn_grad_channels,
                      &j);
  finish(k, &b, out);
  return RAF_OK;
}

/* ---- scaled_dot_product_attention_grad ------------------------------------ */

typedef struct att_job {
  const double *dy, *q, *k, *v;
  double *dq, *dk, *dv;
  int64_t lq, lk, d, dv_;
  bool causal;
  double scale;
  atomic_bool out_of_memory;
} att_job;

/* One (batch, head) matrix per item: P = softmax(scale * q k^T) row by
 * row (causal rows see keys 0..i), then dv = P^T dy, dP = dy v^T,
 * dS = P * (dP - rowsum(dP * P)), dq = scale * dS k, dk = scale * dS^T q. */
static void att_grad_items(void *data, int64_t begin, int64_t end) {
  att_job *j = data;
  const int64_t Lq = j->lq, Lk = j->lk, D = j->d, Dv = j->dv_;
  double *p = malloc((size_t)(2 * Lq * Lk + 1) * sizeof *p);
  if (!p) {
    atomic_store(&j->out_of_memory, true);
    return;
  }
  double *ds = p + Lq * Lk;
  for (int64_t bh = begin; bh < end; bh++) {
    const double *q = j->q + bh * Lq * D, *k = j->k + bh * Lk * D,
                 *v = j->v + bh * Lk * Dv, *dy = j->dy + bh * Lq * Dv;
    double *dq = j->dq + bh * Lq * D, *dk = j->dk + bh * Lk * D,
           *dv = j->dv + bh * Lk * Dv;
    for (int64_t i = 0; i < Lq; i++) {
      int64_t nk = j->causal ? min64(Lk, i + 1) : Lk;
      double *row = p + i * Lk, top = -INFINITY, total = 0;
      for (int64_t key = 0; key < Lk; key++) {
        double s = 0;
        if (key >= nk) {
          row[key] = 0;
          continue;
        }
        for (int64_t c = 0; c < D; c++)
          s += q[i * D + c] * k[key * D + c];
        row[key] = s * j->scale;
        if (row[key] > top)
          top = row[key];
      }
      for (int64_t key = 0; key < nk; key++)
        total += row[key] = exp(row[key] - top);
      for (int64_t key = 0; key < nk; key++)
        row[key] /= total;
      /* dP row into ds, then dS. */
      double dot = 0;
      for (int64_t key = 0; key < nk; key++) {
        double s = 0;
        for (int64_t c = 0; c < Dv; c++)
          s += dy[i * Dv + c] * v[key * Dv + c];
        ds[i * Lk + key] = s;
        dot += s * row[key];
      }
      for (int64_t key = 0; key < Lk; key++)
        ds[i * Lk + key] =
            key < nk ? row[key] * (ds[i * Lk + key] - dot) * j->scale : 0;
    }
    for (int64_t i = 0; i < Lq; i++)
      for (int64_t c = 0; c < D; c++) {
        double s = 0;
        for (int64_t key = 0; key < Lk; key++)
          s += ds[i * Lk + key] * k[key * D + c];
        dq[i * D + c] = s;
      }
    for (int64_t key = 0; key < Lk; key++) {
      for (int64_t c = 0; c < D; c++) {
        double s = 0;
        for (int64_t i = 0; i < Lq; i++)
          s += ds[i * Lk + key] * q[i * D + c];
        dk[key * D + c] = s;
      }
      for (int64_t c = 0; c < Dv; c++) {
        double s = 0;
        for (int64_t i = 0; i < Lq; i++)
          s += p[i * Lk + key] * dy[i * Dv + c];
        dv[key * Dv + c] = s;
      }
    }
  }
  free(p);
}

raf_status raf_cpuref_attention_grad(const raf_kernel *k) {
  const raf_type *qt = k->in[1]->type, *kt = k->in[2]->type,
                 *vt = k->in[3]->type;
  int r = qt->rank;
  buffers b;
  const double *in[4];
  double *out[3];
  if (!setup(k, &b, in, 4, out, false))
    return RAF_ERROR;
  att_job j = {.dy = in[0], .q = in[1], .k = in[2], .v = in[3],
               .dq = out[0], .dk = out[1], .dv = out[2],
               .lq = qt->dims[r - 2], .lk = kt->dims[r - 2],
               .d = qt->dims[r - 1], .dv_ = vt->dims[r - 1],
               .causal = raf_stmt_attr_bool(k->stmt, "causal")};
  raf_attr_value scale;
  j.scale = raf_stmt_attr(k->stmt, "scale", &scale)
                ? scale.u.f
                : 1.0 / sqrt((double)j.d);
  atomic_init(&j.out_of_memory, false);
  int64_t items = 1;
  for (int d = 0; d < r - 2; d++)
    items *= qt->dims[d];
  raf_kernel_parallel(k, items, raf_cpuref_grain(CHUNK_WORK, j.lq * j.lk * (2 * j.d + 2 * j.dv_)),
                      att_grad_items, &j);
  if (atomic_load(&j.out_of_memory)) {
    buffers_free(&b);
    return raf_kernel_fail(k, "out of memory for the attention scores");
  }
  finish(k, &b, out);
  return RAF_OK;
}
