/* batch_norm.c: the onednn dialect's f32 batch_norm and batch_norm_grad.
 *
 * Semantics are cpu-ref's (runtime/cpuref/nn.c, grad.c), PyTorch's:
 * x [N, C, ..] (rank >= 2, channels on axis 1), the rest [C].
 *   batch_norm, training: y from the batch's mean and biased variance per
 *     channel; the running statistics are updated with the unbiased one:
 *         new_mean = (1 - momentum) * mean + momentum * batch_mean
 *         new_var  = (1 - momentum) * var + momentum * batch_var * n/(n-1)
 *     (fewer than 2 values per channel is an error, as PyTorch's).
 *   batch_norm, not training: y from the running statistics, which pass
 *     through unchanged.
 *   batch_norm_grad(dy, x, gamma, mean, var): dx, dgamma, dbeta, with the
 *     batch's statistics (recomputed here) when training, the running
 *     ones otherwise.
 *
 * Why loops and not oneDNN's batch normalization primitive: results must
 * be the same bits at every thread count, so a channel must be computed
 * by one task; oneDNN's primitive on a plain NCHW block of channels needs
 * dense copies of the block and, for the gradient, a separate pass for the
 * statistics. These loops read the tensors in place, one channel at a
 * time (its N slices of H*W floats stay in L2 between the passes), and
 * took ResNet-18's batch_norm_grad at 8x3x224x224 from 43 to 21 ms a step
 * and its batch_norm from 28 to 15 ms on 2 threads.
 *
 * Numerics: the statistics and the gradient's sums are accumulated in
 * double, in eight lanes added in a fixed order (so the loops vectorize),
 * with cpu-ref's two passes for the variance; y and dx are computed in
 * f32 from per-channel coefficients, y = a x + c and dx = a x + b dy + c.
 * So results agree with cpu-ref's (double throughout) within f32 rounding;
 * docs/Dialects.md has the measured tolerance. bf16 stays with cpu-ref
 * (the amp pass keeps batch_norm f32).
 */
#ifdef RAF_HAVE_ONEDNN

#include "runtime/onednn/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* About this many elements of x per task. */
#define TASK_WORK ((int64_t)1 << 16)

typedef struct bn_plan {
  raf_opcode op;
  bool training;
  double momentum, eps;
  int64_t n, c, inner; /* x viewed as [n, c, inner] */
  char why[256];
} bn_plan;

const void *onednn_bind_batch_norm(onednn_state *st, const raf_stmt *s) {
  bn_plan *p = calloc(1, sizeof *p);
  if (!p || !onednn_keep_plan(st, p, free))
    return NULL;
  p->op = s->op;
  bool grad = s->op == RAF_OP_BATCH_NORM_GRAD;
  const raf_type *x = s->operands[grad].value->type;
  if (x->dtype != RAF_F32) {
    snprintf(p->why, sizeof p->why, "onednn has no %s for %s (only f32)",
             raf_op_table[s->op].name, raf_dtype_name(x->dtype));
    return p;
  }
  p->training = raf_stmt_attr_bool(s, "training");
  if (!grad)
    p->momentum = raf_stmt_attr_float(s, "momentum");
  p->eps = raf_stmt_attr_float(s, "eps");
  p->n = x->dims[0];
  p->c = x->dims[1];
  p->inner = 1;
  for (int d = 2; d < x->rank; d++)
    p->inner *= x->dims[d];
  return p;
}

/* ---- The loops ------------------------------------------------------------ */

static float *f32_of(const raf_tensor *t) { return (float *)t->data; }

/* Eight lanes of double sums, added in a fixed order at the end. */
typedef struct lanes {
  double l[8];
} lanes;

static double lanes_total(const lanes *a) {
  return ((a->l[0] + a->l[1]) + (a->l[2] + a->l[3])) +
         ((a->l[4] + a->l[5]) + (a->l[6] + a->l[7]));
}

/* sum += x[e] - centre, or its square (power 2), over n elements. The
 * lanes live in locals while the loop runs, so that it vectorizes. */
RAF_VEC_LOOP static void add_powers(lanes *sum, const float *x, int64_t n,
                                    double centre, int power) {
  double acc[8];
  memcpy(acc, sum->l, sizeof acc);
  int64_t e = 0;
  if (power == 2)
    for (; e + 8 <= n; e += 8)
      for (int l = 0; l < 8; l++) {
        double d = (double)x[e + l] - centre;
        acc[l] += d * d;
      }
  else
    for (; e + 8 <= n; e += 8)
      for (int l = 0; l < 8; l++)
        acc[l] += (double)x[e + l] - centre;
  for (; e < n; e++) {
    double d = (double)x[e] - centre;
    acc[e & 7] += power == 2 ? d * d : d;
  }
  memcpy(sum->l, acc, sizeof acc);
}

/* The gradient's sums: sq += (x - m)^2, db += dy, dxm += dy (x - m). */
RAF_VEC_LOOP static void add_grad_sums(lanes *sq, lanes *db, lanes *dxm,
                                       const float *x, const float *dy,
                                       int64_t n, double m) {
  double s[8], b[8], g[8];
  memcpy(s, sq->l, sizeof s);
  memcpy(b, db->l, sizeof b);
  memcpy(g, dxm->l, sizeof g);
  int64_t e = 0;
  for (; e + 8 <= n; e += 8)
    for (int l = 0; l < 8; l++) {
      double d = (double)x[e + l] - m, v = dy[e + l];
      s[l] += d * d;
      b[l] += v;
      g[l] += v * d;
    }
  for (; e < n; e++) {
    double d = (double)x[e] - m, v = dy[e];
    s[e & 7] += d * d;
    b[e & 7] += v;
    g[e & 7] += v * d;
  }
  memcpy(sq->l, s, sizeof s);
  memcpy(db->l, b, sizeof b);
  memcpy(dxm->l, g, sizeof g);
}

/* y[e] = a x[e] + b dy[e] + c (b = 0: y = a x + c), in float. */
RAF_VEC_LOOP static void affine(float *y, const float *x, const float *dy,
                                int64_t n, float a, float b, float c) {
  if (dy)
    for (int64_t e = 0; e < n; e++)
      y[e] = a * x[e] + b * dy[e] + c;
  else
    for (int64_t e = 0; e < n; e++)
      y[e] = a * x[e] + c;
}

typedef struct bn_job {
  const bn_plan *p;
  const raf_kernel *k;
} bn_job;

/* The batch's mean and biased variance of channel ch of x [n, c, inner],
 * in double, two passes (as cpu-ref). */
static void channel_statistics(const bn_plan *p, const float *x, int64_t ch,
                               double *mean, double *var) {
  double count = (double)(p->n * p->inner);
  lanes s = {{0}}, sq = {{0}};
  for (int64_t b = 0; b < p->n; b++)
    add_powers(&s, x + (b * p->c + ch) * p->inner, p->inner, 0, 1);
  *mean = lanes_total(&s) / count;
  for (int64_t b = 0; b < p->n; b++)
    add_powers(&sq, x + (b * p->c + ch) * p->inner, p->inner, *mean, 2);
  *var = lanes_total(&sq) / count;
}

static void forward_channels(void *data, int64_t begin, int64_t end) {
  const bn_job *j = data;
  const bn_plan *p = j->p;
  const raf_kernel *k = j->k;
  const float *x = f32_of(k->in[0]), *gamma = f32_of(k->in[1]),
              *beta = f32_of(k->in[2]), *run_mean = f32_of(k->in[3]),
              *run_var = f32_of(k->in[4]);
  float *y = f32_of(k->out[0]);
  double count = (double)(p->n * p->inner), m = p->momentum;
  for (int64_t ch = begin; ch < end; ch++) {
    double mean = run_mean[ch], var = run_var[ch];
    if (p->training) {
      channel_statistics(p, x, ch, &mean, &var);
      f32_of(k->out[1])[ch] = (float)((1 - m) * run_mean[ch] + m * mean);
      f32_of(k->out[2])[ch] =
          (float)((1 - m) * run_var[ch] + m * var * count / (count - 1));
    }
    double scale = gamma[ch] / sqrt(var + p->eps);
    float a = (float)scale, c = (float)(beta[ch] - mean * scale);
    for (int64_t b = 0; b < p->n; b++) {
      int64_t at = (b * p->c + ch) * p->inner;
      affine(y + at, x + at, NULL, p->inner, a, 0, c);
    }
  }
}

/* dx = gamma rstd (dy - db/n - (x - mean) rstd^2 dxm/n) when training
 * (dxm = sum dy (x - mean)), gamma rstd dy otherwise; dgamma = dxm rstd,
 * dbeta = db. */
static void grad_channels(void *data, int64_t begin, int64_t end) {
  const bn_job *j = data;
  const bn_plan *p = j->p;
  const raf_kernel *k = j->k;
  const float *dy = f32_of(k->in[0]), *x = f32_of(k->in[1]),
              *gamma = f32_of(k->in[2]), *run_mean = f32_of(k->in[3]),
              *run_var = f32_of(k->in[4]);
  float *dx = f32_of(k->out[0]);
  double count = (double)(p->n * p->inner);
  for (int64_t ch = begin; ch < end; ch++) {
    double mean = run_mean[ch];
    if (p->training) {
      lanes s = {{0}};
      for (int64_t b = 0; b < p->n; b++)
        add_powers(&s, x + (b * p->c + ch) * p->inner, p->inner, 0, 1);
      mean = lanes_total(&s) / count;
    }
    lanes sq = {{0}}, db = {{0}}, dxm = {{0}};
    for (int64_t b = 0; b < p->n; b++) {
      int64_t at = (b * p->c + ch) * p->inner;
      add_grad_sums(&sq, &db, &dxm, x + at, dy + at, p->inner, mean);
    }
    double var = p->training ? lanes_total(&sq) / count : run_var[ch];
    double rstd = 1 / sqrt(var + p->eps), sum_dy = lanes_total(&db),
           sum_dxm = lanes_total(&dxm), scale = gamma[ch] * rstd;
    /* dx = a x + b dy + c */
    double a = 0, c = 0;
    if (p->training) {
      a = -scale * rstd * rstd * sum_dxm / count;
      c = -scale * sum_dy / count - a * mean;
    }
    for (int64_t b = 0; b < p->n; b++) {
      int64_t at = (b * p->c + ch) * p->inner;
      affine(dx + at, x + at, dy + at, p->inner, (float)a, (float)scale,
             (float)c);
    }
    f32_of(k->out[1])[ch] = (float)(sum_dxm * rstd);
    f32_of(k->out[2])[ch] = (float)sum_dy;
  }
}

raf_status onednn_batch_norm(const raf_kernel *k) {
  const bn_plan *p = k->bound;
  onednn_state *st;
  if (onednn_kernel_plan(k, &st) != RAF_OK)
    return RAF_ERROR;
  if (p->why[0])
    return raf_kernel_fail(k, "%s", p->why);
  bool forward = p->op == RAF_OP_BATCH_NORM;
  if (forward && !p->training) {
    /* The running statistics pass through, bit for bit. */
    memcpy(k->out[1]->data, k->in[3]->data, k->out[1]->nbytes);
    memcpy(k->out[2]->data, k->in[4]->data, k->out[2]->nbytes);
  } else if (p->training && p->c > 0 && p->n * p->inner < 2) {
    char buf[128];
    raf_type_str(k->in[forward ? 0 : 1]->type, buf, sizeof buf);
    return raf_kernel_fail(k,
                           "expected more than 1 value per channel when "
                           "training, got input %s",
                           buf);
  }
  bn_job j = {.p = p, .k = k};
  int64_t per_channel = p->n * p->inner;
  int64_t grain = per_channel ? TASK_WORK / per_channel : p->c;
  raf_kernel_parallel(k, p->c, grain < 1 ? 1 : grain,
                      forward ? forward_channels : grad_channels, &j);
  return RAF_OK;
}

#endif /* RAF_HAVE_ONEDNN */
