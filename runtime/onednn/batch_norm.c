/* batch_norm.c: the onednn dialect's f32 batch_norm and batch_norm_grad on
 * oneDNN's batch normalization primitives.
 *
 * Semantics are cpu-ref's (runtime/cpuref/nn.c, grad.c), PyTorch's:
 * x [N, C, ..] (rank >= 2, channels on axis 1), the rest [C].
 *   batch_norm, training: oneDNN's forward training gives y and the batch
 *     mean and biased variance per channel; the running statistics are
 *     updated here, in double, with the unbiased variance:
 *         new_mean = (1 - momentum) * mean + momentum * batch_mean
 *         new_var  = (1 - momentum) * var + momentum * batch_var * n/(n-1)
 *     (fewer than 2 values per channel is an error, as PyTorch's).
 *   batch_norm, not training: y from the running statistics (oneDNN's
 *     use_global_stats), which pass through unchanged.
 *   batch_norm_grad(dy, x, gamma, mean, var): dx, dgamma, dbeta by
 *     oneDNN's backward; training: with the batch's statistics, which the
 *     task recomputes in double (as cpu-ref; cheaper than oneDNN's
 *     training forward, which would also write a y); not training: with
 *     the running ones.
 * oneDNN computes in f32 (cpu-ref in double), so results agree within f32
 * rounding of the channel sums; docs/Dialects.md has the measured
 * tolerance. bf16 stays with cpu-ref (the amp pass keeps batch_norm f32).
 *
 * Tasks are blocks of channels (a split fixed by the shapes): a block is
 * a strided view of the plain tensor ([N, block, inner] in [N, C, inner]),
 * which oneDNN's kernels take as they are, and every channel's results
 * are computed by one task, so results are the same bits at every thread
 * count.
 */
#ifdef RAF_HAVE_ONEDNN

#include "runtime/onednn/internal.h"

#include "runtime/vmath.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* About this many elements per block of channels (its dense copies stay
 * in L2), at most MAX_BLOCKS blocks. */
#define TASK_WORK ((int64_t)1 << 16)
enum { MAX_BLOCKS = 4096 };

enum bn_kind {
  BN_TRAINING = 1,
  BN_INFERENCE,
  BN_GRAD_TRAINING,
  BN_GRAD_INFERENCE
};

/* The key's words; eps by its bits. */
enum { K_KIND, K_N, K_BLOCK, K_C, K_INNER, K_EPS };

typedef struct bn_plan {
  raf_opcode op;
  bool training;
  double momentum;
  int64_t n, c, inner, block, nblocks;
  /* The primitives of a block of channels and of the shorter last. */
  const onednn_prim *full, *last;
  size_t prim_bytes, work_bytes; /* per task */
  char why[256];
} bn_plan;

/* A block of channels of x, copied dense: [N, block, inner, 1]. */
static dnnl_status_t data_md(dnnl_memory_desc_t *md, const onednn_key *k) {
  dnnl_dims_t dims = {k->w[K_N], k->w[K_BLOCK], k->w[K_INNER], 1};
  return dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, dnnl_nchw);
}

static float eps_of(const onednn_key *k) {
  double eps;
  memcpy(&eps, &k->w[K_EPS], sizeof eps);
  return (float)eps;
}

static dnnl_status_t forward_desc(dnnl_batch_normalization_desc_t *desc,
                                  const onednn_key *k, bool training) {
  dnnl_memory_desc_t x;
  dnnl_status_t rc = data_md(&x, k);
  unsigned flags = dnnl_use_scale | dnnl_use_shift;
  if (!training)
    flags |= dnnl_use_global_stats;
  if (rc == dnnl_success)
    rc = dnnl_batch_normalization_forward_desc_init(
        desc, training ? dnnl_forward_training : dnnl_forward_inference, &x,
        eps_of(k), flags);
  return rc;
}

/* Arguments:
 *   training forward   src, scale, shift | dst, mean, variance
 *   inference forward  src, mean, variance, scale, shift | dst
 *   backward           src, mean, variance, diff_dst, scale, shift |
 *                      diff_src, diff_scale, diff_shift
 * (oneDNN 2.6's backward wants the shift it does not read). Forward and
 * backward run in place (y over x, dx over dy), as oneDNN allows. */
static dnnl_status_t create_bn(dnnl_engine_t engine, onednn_prim *pr) {
  enum bn_kind kind = (enum bn_kind)pr->key.w[K_KIND];
  dnnl_batch_normalization_desc_t desc, fwd;
  if (kind == BN_TRAINING || kind == BN_INFERENCE) {
    dnnl_status_t rc = forward_desc(&desc, &pr->key, kind == BN_TRAINING);
    const int training[] = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT,
                            DNNL_ARG_DST, DNNL_ARG_MEAN,  DNNL_ARG_VARIANCE};
    const int inference[] = {DNNL_ARG_SRC,   DNNL_ARG_MEAN,  DNNL_ARG_VARIANCE,
                             DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_DST};
    if (rc != dnnl_success)
      return rc;
    return kind == BN_TRAINING
               ? onednn_make_prim(engine, pr, &desc, NULL, training, 6, 3, NULL)
               : onednn_make_prim(engine, pr, &desc, NULL, inference, 6, 5,
                                  NULL);
  }
  bool training = kind == BN_GRAD_TRAINING;
  dnnl_memory_desc_t x;
  dnnl_status_t rc = data_md(&x, &pr->key);
  unsigned flags = dnnl_use_scale | dnnl_use_shift;
  if (!training)
    flags |= dnnl_use_global_stats;
  if (rc == dnnl_success)
    rc = dnnl_batch_normalization_backward_desc_init(
        &desc, dnnl_backward, &x, &x, eps_of(&pr->key), flags);
  dnnl_primitive_desc_t hint = NULL;
  if (rc == dnnl_success)
    rc = forward_desc(&fwd, &pr->key, training);
  if (rc == dnnl_success)
    rc = dnnl_primitive_desc_create(&hint, &fwd, NULL, engine, NULL);
  const int args[] = {
      DNNL_ARG_SRC,      DNNL_ARG_MEAN,       DNNL_ARG_VARIANCE,
      DNNL_ARG_DIFF_DST, DNNL_ARG_SCALE,      DNNL_ARG_SHIFT,
      DNNL_ARG_DIFF_SRC, DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT};
  if (rc == dnnl_success)
    rc = onednn_make_prim(engine, pr, &desc, hint, args, 9, 6, NULL);
  if (hint)
    dnnl_primitive_desc_destroy(hint);
  return rc;
}

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

/* A task's work memory: the primitives' scratch (prim_bytes), the dense
 * copies of a block (x; and dy for the gradient), and three [block]
 * vectors (the gradient's recomputed mean and variance, a shift). */
static size_t block_bytes(const bn_plan *p) {
  return round64(sizeof(float) * (size_t)(p->n * p->block * p->inner));
}

static size_t vector_bytes(const bn_plan *p) {
  return round64(sizeof(float) * (size_t)p->block);
}

static void plan_bn(onednn_state *st, const raf_stmt *s, bn_plan *p) {
  p->op = s->op;
  bool grad = s->op == RAF_OP_BATCH_NORM_GRAD;
  const raf_type *x = s->operands[grad].value->type;
  if (x->dtype != RAF_F32) {
    snprintf(p->why, sizeof p->why, "onednn has no %s for %s (only f32)",
             raf_op_table[s->op].name, raf_dtype_name(x->dtype));
    return;
  }
  p->training = raf_stmt_attr_bool(s, "training");
  if (!grad)
    p->momentum = raf_stmt_attr_float(s, "momentum");
  double eps = raf_stmt_attr_float(s, "eps");
  p->n = x->dims[0];
  p->c = x->dims[1];
  p->inner = 1;
  for (int d = 2; d < x->rank; d++)
    p->inner *= x->dims[d];
  if (x->numel == 0)
    return; /* nothing to normalize: the kernel says what that means */
  int64_t per_channel = p->n * p->inner;
  int64_t want = p->c * per_channel / TASK_WORK;
  want = onednn_min64(onednn_min64(want, p->c), MAX_BLOCKS);
  want = want < 1 ? 1 : want;
  p->block = (p->c + want - 1) / want;
  p->nblocks = (p->c + p->block - 1) / p->block;
  onednn_key key = {{0}};
  int64_t *k = key.w;
  k[K_N] = p->n;
  k[K_C] = p->c;
  k[K_INNER] = p->inner;
  memcpy(&k[K_EPS], &eps, sizeof eps);
  enum bn_kind kind = grad
                          ? (p->training ? BN_GRAD_TRAINING : BN_GRAD_INFERENCE)
                          : (p->training ? BN_TRAINING : BN_INFERENCE);
  char what[128];
  snprintf(what, sizeof what, "f32 %s of %lldx%lldx%lld",
           raf_op_table[s->op].name, (long long)p->n, (long long)p->c,
           (long long)p->inner);
  const onednn_prim **made[2] = {&p->full, &p->last};
  int64_t sizes[2] = {p->block, p->c % p->block};
  k[K_KIND] = kind;
  for (int i = 0; i < 2 && sizes[i]; i++) {
    k[K_BLOCK] = sizes[i];
    *made[i] =
        onednn_find_prim(st, &key, create_bn, what, p->why, sizeof p->why);
    if (!*made[i])
      return;
    if ((*made[i])->work_bytes > p->prim_bytes)
      p->prim_bytes = round64((*made[i])->work_bytes);
  }
  p->work_bytes =
      p->prim_bytes + (grad ? 2 : 1) * block_bytes(p) + 3 * vector_bytes(p);
}

const void *onednn_bind_batch_norm(onednn_state *st, const raf_stmt *s) {
  bn_plan *p = calloc(1, sizeof *p);
  if (!p || !onednn_keep_plan(st, p, free))
    return NULL;
  plan_bn(st, s, p);
  return p;
}

/* ---- Running ------------------------------------------------------------ */

typedef struct bn_job {
  const bn_plan *p;
  dnnl_engine_t engine;
  const raf_kernel *k;
  atomic_int status;
} bn_job;

static float *f32_of(const raf_tensor *t) { return (float *)t->data; }

/* The task's buffers in its work memory. */
typedef struct bn_buffers {
  char *prim;    /* the primitives' scratch */
  float *x, *dy; /* dense blocks */
  float *mean, *var, *shift;
} bn_buffers;

static bn_buffers buffers_of(const bn_plan *p, char *work) {
  bn_buffers b = {.prim = work};
  char *at = work + p->prim_bytes;
  b.x = (float *)at;
  if (p->op == RAF_OP_BATCH_NORM_GRAD) {
    b.dy = (float *)(at + block_bytes(p));
    at += block_bytes(p);
  }
  at += block_bytes(p);
  b.mean = (float *)at;
  b.var = (float *)(at + vector_bytes(p));
  b.shift = (float *)(at + 2 * vector_bytes(p));
  return b;
}

/* Channels [c0, c0 + block) of the [n, c, inner] tensor t to dense
 * [n, block, inner] (in), or back (!in). */
static void copy_block(const bn_plan *p, float *t, float *dense, int64_t c0,
                       int64_t block, bool in) {
  size_t bytes = sizeof(float) * (size_t)(block * p->inner);
  for (int64_t b = 0; b < p->n; b++) {
    float *strided = t + (b * p->c + c0) * p->inner;
    float *packed = dense + b * block * p->inner;
    if (in)
      memcpy(packed, strided, bytes);
    else
      memcpy(strided, packed, bytes);
  }
}

/* batch_norm of channels [c0, c0 + block). */
static dnnl_status_t forward_block(const bn_job *j, const onednn_prim *pr,
                                   int64_t c0, int64_t block,
                                   const bn_buffers *buf) {
  const bn_plan *p = j->p;
  const raf_kernel *k = j->k;
  float *gamma = f32_of(k->in[1]) + c0, *beta = f32_of(k->in[2]) + c0;
  float *mean = f32_of(k->in[3]) + c0, *var = f32_of(k->in[4]) + c0;
  copy_block(p, f32_of(k->in[0]), buf->x, c0, block, true);
  dnnl_status_t rc;
  if (!p->training) {
    void *args[6] = {buf->x, mean, var, gamma, beta, buf->x};
    rc = onednn_run_prim(j->engine, pr, args, 0, buf->prim);
  } else {
    /* The batch's statistics into the results, then the running update. */
    float *new_mean = f32_of(k->out[1]) + c0, *new_var = f32_of(k->out[2]) + c0;
    void *args[6] = {buf->x, gamma, beta, buf->x, new_mean, new_var};
    rc = onednn_run_prim(j->engine, pr, args, 0, buf->prim);
    double count = (double)(p->n * p->inner), m = p->momentum;
    for (int64_t c = 0; rc == dnnl_success && c < block; c++) {
      double batch_mean = new_mean[c], batch_var = new_var[c];
      new_mean[c] = (float)((1 - m) * mean[c] + m * batch_mean);
      new_var[c] =
          (float)((1 - m) * var[c] + m * batch_var * count / (count - 1));
    }
  }
  if (rc == dnnl_success)
    copy_block(p, f32_of(k->out[0]), buf->x, c0, block, false);
  return rc;
}

/* The sum of (x[e] - centre)^power (power 1 or 2) in double, in eight
 * lanes added in a fixed order (so that the loop vectorizes). */
RAF_VEC_LOOP static double lanes_sum(const float *x, int64_t n, double centre,
                                     int power) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t e = 0;
  for (; e + 8 <= n; e += 8)
    for (int l = 0; l < 8; l++) {
      double d = (double)x[e + l] - centre;
      acc[l] += power == 2 ? d * d : d;
    }
  for (; e < n; e++) {
    double d = (double)x[e] - centre;
    acc[e & 7] += power == 2 ? d * d : d;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* The mean and biased variance of each channel of a dense block
 * [n, block, inner], in double (two passes, as cpu-ref), rounded to f32. */
static void block_statistics(const bn_plan *p, const float *x, int64_t block,
                             float *mean, float *var) {
  double count = (double)(p->n * p->inner);
  for (int64_t c = 0; c < block; c++) {
    double sum = 0, sq = 0;
    for (int64_t b = 0; b < p->n; b++)
      sum += lanes_sum(x + (b * block + c) * p->inner, p->inner, 0, 1);
    double m = sum / count;
    for (int64_t b = 0; b < p->n; b++)
      sq += lanes_sum(x + (b * block + c) * p->inner, p->inner, m, 2);
    mean[c] = (float)m;
    var[c] = (float)(sq / count);
  }
}

/* batch_norm_grad of channels [c0, c0 + block); training: with the
 * batch's statistics, computed here. */
static dnnl_status_t grad_block(const bn_job *j, const onednn_prim *pr,
                                int64_t c0, int64_t block,
                                const bn_buffers *buf) {
  const bn_plan *p = j->p;
  const raf_kernel *k = j->k;
  float *gamma = f32_of(k->in[2]) + c0, *mean = f32_of(k->in[3]) + c0,
        *var = f32_of(k->in[4]) + c0;
  float *dgamma = f32_of(k->out[1]) + c0, *dbeta = f32_of(k->out[2]) + c0;
  copy_block(p, f32_of(k->in[0]), buf->dy, c0, block, true);
  copy_block(p, f32_of(k->in[1]), buf->x, c0, block, true);
  memset(buf->shift, 0, sizeof(float) * (size_t)block);
  dnnl_status_t rc = dnnl_success;
  if (p->training) {
    mean = buf->mean;
    var = buf->var;
    block_statistics(p, buf->x, block, mean, var);
  }
  void *args[9] = {buf->x,     mean,    var,    buf->dy, gamma,
                   buf->shift, buf->dy, dgamma, dbeta};
  if (rc == dnnl_success)
    rc = onednn_run_prim(j->engine, pr, args, 0, buf->prim);
  if (rc == dnnl_success)
    copy_block(p, f32_of(k->out[0]), buf->dy, c0, block, false);
  return rc;
}

static void bn_tasks(void *data, int64_t begin, int64_t end) {
  bn_job *j = data;
  const bn_plan *p = j->p;
  void *work = NULL;
  void *base = onednn_alloc_aligned(p->work_bytes, &work);
  if (!base) {
    onednn_failed(&j->status, dnnl_out_of_memory);
    return;
  }
  int threads = onednn_openmp_single();
  for (int64_t t = begin; t < end; t++) {
    int64_t c0 = t * p->block, block = onednn_min64(p->block, p->c - c0);
    bool full = block == p->block;
    bn_buffers buf = buffers_of(p, work);
    dnnl_status_t rc =
        p->op == RAF_OP_BATCH_NORM
            ? forward_block(j, full ? p->full : p->last, c0, block, &buf)
            : grad_block(j, full ? p->full : p->last, c0, block, &buf);
    if (rc != dnnl_success) {
      onednn_failed(&j->status, rc);
      break;
    }
  }
  onednn_openmp_restore(threads);
  free(base);
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
  if (!p->full) { /* no elements: the gradients are empty sums */
    for (int i = 0; !forward && i < 3; i++)
      memset(k->out[i]->data, 0, k->out[i]->nbytes);
    return RAF_OK;
  }
  bn_job j = {.p = p, .engine = st->engine, .k = k};
  atomic_init(&j.status, dnnl_success);
  raf_kernel_parallel(k, p->nblocks, 1, bn_tasks, &j);
  dnnl_status_t rc = (dnnl_status_t)atomic_load(&j.status);
  if (rc != dnnl_success)
    return raf_kernel_fail(k, "oneDNN failed: %s", dnnl_status2str(rc));
  return RAF_OK;
}

#endif /* RAF_HAVE_ONEDNN */
