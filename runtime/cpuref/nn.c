/* nn.c: cpu-ref kernels for the layers dropout, conv2d, max_pool2d,
 * avg_pool2d and batch_norm, with PyTorch's semantics.
 *
 * dropout(x, key) {p}: y = x * (1 / (1 - p)) where element i is kept, else
 * 0. The mask is a pure function of (key, i), so autodiff regenerates it
 * (the gradient is dropout(dy, key) with the same p): element i (C order)
 * is kept by raf_dropout_keeps at index first + i, where a key i64[2] is
 * (seed, first) and an i64[] is the seed with first 0 (the shard pass
 * gives each rank the first index of its rows, so that it draws what one
 * process draws for them). The draw (runtime/philox.h: one Philox 4x32-10
 * block on dropout's stream; kept iff its uniform is at least p) is the
 * cuda dialect's kernel's too. The scale 1 / (1 - p) is computed in double and
 * rounded to the working type. p = 0 is the identity (a copy).
 *
 * conv2d(x, w) {stride, padding, dilation, groups}: x [N, C, H, W],
 * w [O, C / groups, KH, KW], y [N, O, OH, OW], the cross-correlation
 *     y[n, o, i, j] = sum over c in o's group, kh, kw of
 *         w[o, c, kh, kw] * x[n, g * C/groups + c, i * sh - ph + kh * dh,
 *                                                  j * sw - pw + kw * dw]
 * with out-of-range (padding) positions contributing nothing. Work runs in
 * parallel over (n, o) planes; each plane accumulates in the working type,
 * in the fixed order c, kh, kw ascending, with the inner loop along a
 * contiguous output row.
 *
 * max_pool2d, avg_pool2d (x) {kernel, stride, padding}: x [N, C, H, W],
 * y [N, C, OH, OW] (floor mode, infer_pool2d). max ignores the padded
 * positions (they are -inf), and propagates NaN as PyTorch does. avg counts
 * the padded positions as zeros and always divides by KH * KW: PyTorch's
 * default count_include_pad = True (in floor mode every window ends inside
 * the padded input, so its divisor is the full kernel area). Windows sum in
 * the working type, row by row.
 *
 * batch_norm(x, gamma, beta, mean, var) {eps, momentum, training}:
 * x [N, C, ..] (rank >= 2, channels on axis 1), the rest [C]. Training:
 * per channel, the batch mean and biased variance over every other axis
 * (two passes: mean, then the mean of squared deviations), y = (x - mean) /
 * sqrt(var + eps) * gamma + beta, and the running statistics
 *     new_mean = (1 - momentum) * mean_run + momentum * batch_mean
 *     new_var  = (1 - momentum) * var_run + momentum * batch_var * n/(n-1)
 * (the unbiased batch variance); fewer than 2 values per channel is an
 * error, as PyTorch's. Not training: y uses the running statistics, which
 * pass through unchanged. batch_norm computes in double for every dtype
 * (PyTorch accumulates its statistics in double too) and rounds once, on
 * store; channels run in parallel.
 *
 * Every result element is computed by one thread in an order fixed by the
 * shapes, so results are bit-identical at any thread count. f16 and bf16
 * compute in float (cpuref.h) and are rounded once, when stored.
 */
#include "runtime/cpuref/cpuref.h"

#include "runtime/philox.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* About this many multiply-adds per parallel chunk. */
#define CHUNK_WORK ((int64_t)1 << 18)
/* Elements per dropout step, converted through stack buffers. */
enum { CHUNK = 2048 };


static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The first and one past the last output index j in [0, nout) for which
 * j * stride + off lies in [0, n). */
static void valid_range(int64_t off, int64_t stride, int64_t n, int64_t nout,
                        int64_t *lo, int64_t *hi) {
  *lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  *hi = n - 1 - off < 0 ? 0 : min64(nout, (n - 1 - off) / stride + 1);
  if (*lo > *hi)
    *lo = *hi;
}


/* ---- dropout -------------------------------------------------------------- */

typedef struct dropout_job {
  const raf_tensor *x;
  raf_tensor *y;
  raf_dtype work;
  double p, scale;
  uint64_t key, first; /* the seed, and the index of element 0 */
} dropout_job;

#define DROPOUT_APPLY(T)                                                       \
  do {                                                                         \
    T *v = (T *)buf, s = (T)j->scale;                                          \
    for (int64_t e = 0; e < n; e++)                                            \
      v[e] = keep[e] ? v[e] * s : (T)0;                                        \
  } while (0)

static void dropout_range(void *data, int64_t begin, int64_t end) {
  const dropout_job *j = data;
  raf_dtype dt = j->x->type->dtype;
  size_t size = (size_t)raf_dtype_size(dt);
  _Alignas(64) char buf[CHUNK * 8];
  bool keep[CHUNK];
  for (int64_t b = begin; b < end; b += CHUNK) {
    int64_t n = min64(CHUNK, end - b);
    for (int64_t e = 0; e < n; e++)
      keep[e] = raf_dropout_keeps(j->first + (uint64_t)(b + e), j->key, j->p);
    raf_elem_convert(j->work, buf, dt, (const char *)j->x->data + b * size, n);
    if (j->work == RAF_F64)
      DROPOUT_APPLY(double);
    else
      DROPOUT_APPLY(float);
    raf_elem_convert(dt, (char *)j->y->data + b * size, j->work, buf, n);
  }
}

raf_status raf_cpuref_dropout(const raf_kernel *k) {
  double p = raf_stmt_attr_float(k->stmt, "p");
  if (p == 0) {
    memcpy(k->out[0]->data, k->in[0]->data, k->out[0]->nbytes);
    return RAF_OK;
  }
  const raf_tensor *key = k->in[1];
  dropout_job j = {.x = k->in[0],
                   .y = k->out[0],
                   .work = raf_cpuref_work_dtype(k->in[0]->type->dtype),
                   .p = p,
                   .scale = 1.0 / (1.0 - p),
                   .key = (uint64_t)raf_elem_get_i64(RAF_I64, key->data, 0),
                   .first = key->type->numel > 1
                                ? (uint64_t)raf_elem_get_i64(RAF_I64,
                                                             key->data, 1)
                                : 0};
  raf_kernel_parallel(k, k->out[0]->type->numel, CHUNK * 4, dropout_range,
                      &j);
  return RAF_OK;
}

/* ---- conv2d --------------------------------------------------------------- */

typedef struct conv_job {
  raf_dtype work;
  raf_tensor *y;
  const void *x, *w; /* working copies */
  int64_t c, h, wd;  /* input channels, height, width */
  int64_t o, kh, kw, oh, ow;
  int64_t cg, og; /* channels per group: input, output */
  int64_t sh, sw, ph, pw, dh, dw;
  atomic_bool out_of_memory;
} conv_job;

/* acc[OH * OW] = the output plane (n, oc). */
#define CONV_PLANE(T)                                                          \
  do {                                                                         \
    T *acc = (T *)scratch;                                                     \
    for (int64_t e = 0; e < OH * OW; e++)                                      \
      acc[e] = 0;                                                              \
    for (int64_t c = 0; c < j->cg; c++) {                                      \
      const T *xp = (const T *)j->x + ((n * j->c) + c0 + c) * H * W;           \
      const T *wp = (const T *)j->w + (oc * j->cg + c) * KH * KW;              \
      for (int64_t a = 0; a < KH; a++) {                                       \
        int64_t ilo, ihi;                                                      \
        valid_range(a * j->dh - j->ph, j->sh, H, OH, &ilo, &ihi);              \
        for (int64_t b = 0; b < KW; b++) {                                     \
          T wv = wp[a * KW + b];                                               \
          int64_t off = b * j->dw - j->pw, jlo, jhi;                           \
          valid_range(off, j->sw, W, OW, &jlo, &jhi);                          \
          for (int64_t i = ilo; i < ihi; i++) {                                \
            /* The input element of output column jlo, and its step. */     \
            const T *xs = xp + (i * j->sh + a * j->dh - j->ph) * W +           \
                          jlo * j->sw + off;                                   \
            T *as = acc + i * OW + jlo;                                        \
            if (j->sw == 1)                                                    \
              for (int64_t q = 0; q < jhi - jlo; q++)                          \
                as[q] += wv * xs[q];                                           \
            else                                                               \
              for (int64_t q = 0; q < jhi - jlo; q++)                          \
                as[q] += wv * xs[q * j->sw];                                   \
          }                                                                    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  } while (0)

static void conv_planes(void *data, int64_t begin, int64_t end) {
  conv_job *j = data;
  const int64_t H = j->h, W = j->wd, KH = j->kh, KW = j->kw, OH = j->oh,
                OW = j->ow;
  raf_dtype out_dt = j->y->type->dtype;
  size_t osize = (size_t)raf_dtype_size(out_dt);
  void *scratch = malloc((size_t)(OH * OW) * (size_t)raf_dtype_size(j->work));
  if (!scratch) {
    atomic_store(&j->out_of_memory, true);
    return;
  }
  for (int64_t r = begin; r < end; r++) {
    int64_t n = r / j->o, oc = r % j->o, c0 = oc / j->og * j->cg;
    if (j->work == RAF_F64)
      CONV_PLANE(double);
    else
      CONV_PLANE(float);
    raf_elem_convert(out_dt, (char *)j->y->data + (size_t)(r * OH * OW) * osize,
                     j->work, scratch, OH * OW);
  }
  free(scratch);
}

raf_status raf_cpuref_conv2d(const raf_kernel *k) {
  const raf_type *xt = k->in[0]->type, *wt = k->in[1]->type,
                 *yt = k->out[0]->type;
  raf_attr_value stride, pad, dil;
  raf_stmt_attr(k->stmt, "stride", &stride);
  raf_stmt_attr(k->stmt, "padding", &pad);
  raf_stmt_attr(k->stmt, "dilation", &dil);
  int64_t groups = raf_stmt_attr_int(k->stmt, "groups");
  conv_job j = {.work = raf_cpuref_work_dtype(xt->dtype),
                .y = k->out[0],
                .c = xt->dims[1],
                .h = xt->dims[2],
                .wd = xt->dims[3],
                .o = wt->dims[0],
                .kh = wt->dims[2],
                .kw = wt->dims[3],
                .oh = yt->dims[2],
                .ow = yt->dims[3],
                .cg = wt->dims[1],
                .og = wt->dims[0] / groups,
                .sh = stride.u.ints.v[0],
                .sw = stride.u.ints.v[1],
                .ph = pad.u.ints.v[0],
                .pw = pad.u.ints.v[1],
                .dh = dil.u.ints.v[0],
                .dw = dil.u.ints.v[1]};
  atomic_init(&j.out_of_memory, false);
  if (yt->numel == 0)
    return RAF_OK;
  void *own_x = NULL, *own_w = NULL;
  raf_status rc = raf_cpuref_working_copy(k, k->in[0], j.work, &j.x, &own_x);
  if (rc == RAF_OK)
    rc = raf_cpuref_working_copy(k, k->in[1], j.work, &j.w, &own_w);
  if (rc == RAF_OK) {
    raf_kernel_parallel(k, yt->dims[0] * j.o,
                        raf_cpuref_grain(CHUNK_WORK, j.oh * j.ow * j.cg * j.kh * j.kw),
                        conv_planes, &j);
    if (atomic_load(&j.out_of_memory))
      rc = raf_kernel_fail(k, "out of memory for a conv2d output plane");
  }
  free(own_x);
  free(own_w);
  return rc;
}

/* ---- max_pool2d, avg_pool2d ----------------------------------------------- */

typedef struct pool_job {
  raf_dtype work;
  const raf_tensor *x;
  raf_tensor *y;
  bool max;
  int64_t h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  atomic_bool out_of_memory;
} pool_job;

/* Output plane into out from the input plane in. */
#define POOL_PLANE(T)                                                          \
  do {                                                                         \
    const T *in = (const T *)scratch;                                          \
    T *out = (T *)scratch + H * W, area = (T)(j->kh * j->kw);                  \
    for (int64_t i = 0; i < OH; i++) {                                         \
      int64_t h0 = i * j->sh - j->ph;                                          \
      int64_t hlo = max64(h0, 0), hhi = min64(h0 + j->kh, H);                  \
      for (int64_t q = 0; q < OW; q++) {                                       \
        int64_t w0 = q * j->sw - j->pw;                                        \
        int64_t wlo = max64(w0, 0), whi = min64(w0 + j->kw, W);                \
        T r = j->max ? -(T)INFINITY : (T)0;                                    \
        for (int64_t a = hlo; a < hhi; a++)                                    \
          for (int64_t b = wlo; b < whi; b++) {                                \
            T v = in[a * W + b];                                               \
            if (!j->max)                                                       \
              r += v;                                                          \
            else if (v > r || isnan(v))                                        \
              r = v;                                                           \
          }                                                                    \
        out[i * OW + q] = j->max ? r : r / area;                               \
      }                                                                        \
    }                                                                          \
  } while (0)

static void pool_planes(void *data, int64_t begin, int64_t end) {
  pool_job *j = data;
  const int64_t H = j->h, W = j->w, OH = j->oh, OW = j->ow;
  raf_dtype dt = j->x->type->dtype;
  size_t size = (size_t)raf_dtype_size(dt), ws = (size_t)raf_dtype_size(j->work);
  /* The input plane [H, W], then the output plane [OH, OW]. */
  void *scratch = malloc((size_t)(H * W + OH * OW) * ws);
  if (!scratch) {
    atomic_store(&j->out_of_memory, true);
    return;
  }
  for (int64_t r = begin; r < end; r++) {
    raf_elem_convert(j->work, scratch, dt,
                     (const char *)j->x->data + (size_t)(r * H * W) * size,
                     H * W);
    if (j->work == RAF_F64)
      POOL_PLANE(double);
    else
      POOL_PLANE(float);
    raf_elem_convert(dt, (char *)j->y->data + (size_t)(r * OH * OW) * size,
                     j->work, (char *)scratch + (size_t)(H * W) * ws, OH * OW);
  }
  free(scratch);
}

raf_status raf_cpuref_pool2d(const raf_kernel *k) {
  const raf_type *xt = k->in[0]->type, *yt = k->out[0]->type;
  raf_attr_value kernel, stride, pad;
  raf_stmt_attr(k->stmt, "kernel", &kernel);
  if (!raf_stmt_attr(k->stmt, "stride", &stride))
    stride = kernel;
  raf_stmt_attr(k->stmt, "padding", &pad);
  pool_job j = {.work = raf_cpuref_work_dtype(xt->dtype),
                .x = k->in[0],
                .y = k->out[0],
                .max = k->stmt->op == RAF_OP_MAX_POOL2D,
                .h = xt->dims[2],
                .w = xt->dims[3],
                .oh = yt->dims[2],
                .ow = yt->dims[3],
                .kh = kernel.u.ints.v[0],
                .kw = kernel.u.ints.v[1],
                .sh = stride.u.ints.v[0],
                .sw = stride.u.ints.v[1],
                .ph = pad.u.ints.v[0],
                .pw = pad.u.ints.v[1]};
  atomic_init(&j.out_of_memory, false);
  if (yt->numel == 0)
    return RAF_OK;
  raf_kernel_parallel(k, yt->dims[0] * yt->dims[1],
                      raf_cpuref_grain(CHUNK_WORK, j.oh * j.ow * j.kh * j.kw + j.h * j.w),
                      pool_planes, &j);
  if (atomic_load(&j.out_of_memory))
    return raf_kernel_fail(k, "out of memory for a pooling plane");
  return RAF_OK;
}

/* ---- batch_norm ----------------------------------------------------------- */

typedef struct bn_job {
  const raf_tensor *x, *gamma, *beta, *mean, *var;
  raf_tensor *y, *new_mean, *new_var;
  int64_t n, c, inner; /* x is [n, c, inner] */
  double eps, momentum;
  bool training;
} bn_job;

/* Calls the block's statement with v[0, m) the doubles of x[b, ch, e0..]
 * for every batch index b and piece of the inner dims, in order. */
#define FOR_CHANNEL_PIECES(stmt)                                               \
  for (int64_t b = 0; b < j->n; b++)                                           \
    for (int64_t e0 = 0; e0 < j->inner; e0 += CHUNK) {                         \
      int64_t m = min64(CHUNK, j->inner - e0);                                 \
      size_t at = (size_t)((b * j->c + ch) * j->inner + e0);                   \
      raf_elem_convert(RAF_F64, v, dt, (const char *)j->x->data + at * size,   \
                       m);                                                     \
      stmt;                                                                    \
    }

static void bn_channels(void *data, int64_t begin, int64_t end) {
  const bn_job *j = data;
  raf_dtype dt = j->x->type->dtype;
  size_t size = (size_t)raf_dtype_size(dt);
  double v[CHUNK];
  for (int64_t ch = begin; ch < end; ch++) {
    double mean = raf_elem_get_f64(dt, j->mean->data, ch);
    double var = raf_elem_get_f64(dt, j->var->data, ch);
    double new_mean = mean, new_var = var;
    if (j->training) {
      double count = (double)(j->n * j->inner), sum = 0, sq = 0;
      FOR_CHANNEL_PIECES(for (int64_t e = 0; e < m; e++) sum += v[e]);
      double bmean = sum / count;
      FOR_CHANNEL_PIECES(for (int64_t e = 0; e < m; e++) {
        double d = v[e] - bmean;
        sq += d * d;
      });
      double bvar = sq / count;
      new_mean = (1 - j->momentum) * mean + j->momentum * bmean;
      new_var = (1 - j->momentum) * var +
                j->momentum * (sq / (count - 1)); /* unbiased */
      mean = bmean;
      var = bvar;
    }
    double scale = raf_elem_get_f64(dt, j->gamma->data, ch) /
                   sqrt(var + j->eps);
    double shift = raf_elem_get_f64(dt, j->beta->data, ch);
    FOR_CHANNEL_PIECES({
      for (int64_t e = 0; e < m; e++)
        v[e] = (v[e] - mean) * scale + shift;
      raf_elem_convert(dt, (char *)j->y->data + at * size, RAF_F64, v, m);
    });
    if (j->training) { /* else the caller copied them */
      raf_elem_set_f64(dt, j->new_mean->data, ch, new_mean);
      raf_elem_set_f64(dt, j->new_var->data, ch, new_var);
    }
  }
}

raf_status raf_cpuref_batch_norm(const raf_kernel *k) {
  const raf_type *xt = k->in[0]->type;
  bn_job j = {.x = k->in[0],
              .gamma = k->in[1],
              .beta = k->in[2],
              .mean = k->in[3],
              .var = k->in[4],
              .y = k->out[0],
              .new_mean = k->out[1],
              .new_var = k->out[2],
              .n = xt->dims[0],
              .c = xt->dims[1],
              .eps = raf_stmt_attr_float(k->stmt, "eps"),
              .momentum = raf_stmt_attr_float(k->stmt, "momentum"),
              .training = raf_stmt_attr_bool(k->stmt, "training")};
  j.inner = 1;
  for (int d = 2; d < xt->rank; d++)
    j.inner *= xt->dims[d];
  if (!j.training) {
    /* The running statistics pass through, bit for bit. */
    memcpy(k->out[1]->data, k->in[3]->data, k->out[1]->nbytes);
    memcpy(k->out[2]->data, k->in[4]->data, k->out[2]->nbytes);
  } else if (j.c > 0 && j.n * j.inner < 2) {
    char buf[128];
    raf_type_str(xt, buf, sizeof buf);
    return raf_kernel_fail(k, "expected more than 1 value per channel when "
                           "training, got input %s", buf);
  }
  raf_kernel_parallel(k, j.c, raf_cpuref_grain(CHUNK_WORK, 3 * j.n * j.inner), bn_channels, &j);
  return RAF_OK;
}
