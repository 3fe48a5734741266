/* pool.c: the onednn dialect's max_pool2d, avg_pool2d and their
 * gradients, f32 and bf16, on oneDNN's pooling primitives.
 *
 * Semantics are cpu-ref's (runtime/cpuref/nn.c, grad.c), PyTorch's
 * defaults: floor mode; max ignores the padding; avg counts the padded
 * positions as zeros and divides by the kernel's area (count_include_pad,
 * oneDNN's pooling_avg_include_padding; in floor mode every window ends
 * inside the padded input, so its divisor is the whole kernel). The
 * right and bottom padding oneDNN wants is what the floor-mode output
 * size needs (none when the last input rows are never read).
 *
 * NaN: oneDNN's max pooling skips NaNs, where PyTorch and cpu-ref let a
 * NaN win its window (the last NaN, for the gradient). So the max kernels
 * scan each chunk's x for NaN first (one pass over data the pooling reads
 * anyway), and pool a chunk that has one with cpu-ref's loop instead.
 *
 * max_pool2d_grad(dy, x) has no forward workspace (the indices of the
 * maxima) to read. In f32 a loop here finds each window's maximum again
 * and sends dy there (max_grad_f32_planes); in bf16 each task pools its
 * images again with oneDNN's training forward, which records the maxima,
 * and then runs oneDNN's backward. Either way the element a window picked
 * is its first maximum in row-major order, as cpu-ref's (test_onednn
 * checks windows with ties). avg_pool2d_grad spreads dy / area over each
 * window.
 *
 * The tensors are plain NCHW and so are the primitives (pooling reads
 * and writes every element once; a reorder to a blocked layout would
 * cost as much as the pooling). Tasks are chunks of images (a split fixed
 * by the shapes), and every result element is computed by one task, so
 * results are the same bits at every thread count. Outputs are rounded
 * once; sums (avg, the gradients' overlaps) are f32.
 */
#ifdef RAF_HAVE_ONEDNN

#include "runtime/onednn/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* About this many elements read and written per chunk of images. */
#define TASK_WORK ((int64_t)1 << 20)
enum { MAX_CHUNKS = 16 };

enum pool_kind { POOL_FORWARD = 1, POOL_TRAINING, POOL_BACKWARD };

/* The key's words. */
enum {
  K_KIND,
  K_DTYPE,
  K_MAX,
  K_N,
  K_C,
  K_H,
  K_W,
  K_OH,
  K_OW,
  K_KH,
  K_KW,
  K_SH,
  K_SW,
  K_PH,
  K_PW
};

typedef struct pool_plan {
  raf_opcode op;
  raf_dtype dt;
  int64_t n, chunk, nchunks;
  int64_t x_image, y_image;
  int64_t c, h, w, oh, ow, kh, kw, sh, sw, ph, pw; /* for chunks with NaN */
  /* Per chunk size (full) and the shorter last: the op's primitive, and
   * for max_pool2d_grad the training forward that records the maxima. */
  const onednn_prim *full, *last, *full_fwd, *last_fwd;
  size_t work_bytes; /* per task: scratch and the forward's dst, workspace */
  char why[256];
} pool_plan;

static dnnl_status_t pool_desc(dnnl_pooling_v2_desc_t *desc,
                               const onednn_key *k, enum pool_kind kind) {
  dnnl_data_type_t dt = (dnnl_data_type_t)k->w[K_DTYPE];
  dnnl_dims_t xd = {k->w[K_N], k->w[K_C], k->w[K_H], k->w[K_W]},
              yd = {k->w[K_N], k->w[K_C], k->w[K_OH], k->w[K_OW]};
  dnnl_memory_desc_t x, y;
  dnnl_status_t rc = dnnl_memory_desc_init_by_tag(&x, 4, xd, dt, dnnl_nchw);
  if (rc == dnnl_success)
    rc = dnnl_memory_desc_init_by_tag(&y, 4, yd, dt, dnnl_nchw);
  if (rc != dnnl_success)
    return rc;
  dnnl_alg_kind_t alg =
      k->w[K_MAX] ? dnnl_pooling_max : dnnl_pooling_avg_include_padding;
  dnnl_dims_t strides = {k->w[K_SH], k->w[K_SW]},
              kernel = {k->w[K_KH], k->w[K_KW]}, dilation = {0, 0},
              pad_l = {k->w[K_PH], k->w[K_PW]};
  dnnl_dims_t pad_r = {
      (k->w[K_OH] - 1) * k->w[K_SH] + k->w[K_KH] - k->w[K_H] - k->w[K_PH],
      (k->w[K_OW] - 1) * k->w[K_SW] + k->w[K_KW] - k->w[K_W] - k->w[K_PW]};
  for (int d = 0; d < 2; d++)
    pad_r[d] = pad_r[d] < 0 ? 0 : pad_r[d];
  if (kind == POOL_BACKWARD)
    return dnnl_pooling_v2_backward_desc_init(desc, alg, &x, &y, strides,
                                              kernel, dilation, pad_l, pad_r);
  return dnnl_pooling_v2_forward_desc_init(
      desc,
      kind == POOL_TRAINING ? dnnl_forward_training : dnnl_forward_inference,
      alg, &x, &y, strides, kernel, dilation, pad_l, pad_r);
}

/* Arguments: forward src | dst; training forward src | dst, workspace;
 * backward diff_dst (, workspace for max) | diff_src. */
static dnnl_status_t create_pool(dnnl_engine_t engine, onednn_prim *pr) {
  enum pool_kind kind = (enum pool_kind)pr->key.w[K_KIND];
  bool max = pr->key.w[K_MAX];
  dnnl_pooling_v2_desc_t desc, fwd;
  dnnl_status_t rc = pool_desc(&desc, &pr->key, kind);
  if (rc != dnnl_success)
    return rc;
  if (kind == POOL_FORWARD) {
    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    return onednn_make_prim(engine, pr, &desc, NULL, args, 2, 1, NULL);
  }
  if (kind == POOL_TRAINING) {
    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_WORKSPACE};
    return onednn_make_prim(engine, pr, &desc, NULL, args, 3, 1, NULL);
  }
  dnnl_primitive_desc_t hint = NULL;
  rc = pool_desc(&fwd, &pr->key, POOL_TRAINING);
  if (rc == dnnl_success)
    rc = dnnl_primitive_desc_create(&hint, &fwd, NULL, engine, NULL);
  const int with_ws[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WORKSPACE,
                         DNNL_ARG_DIFF_SRC};
  const int without[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC};
  if (rc == dnnl_success)
    rc = max ? onednn_make_prim(engine, pr, &desc, hint, with_ws, 3, 2, NULL)
             : onednn_make_prim(engine, pr, &desc, hint, without, 2, 1, NULL);
  if (hint)
    dnnl_primitive_desc_destroy(hint);
  return rc;
}

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

/* The work memory of a max_pool2d_grad task: the backward's, then the
 * forward's scratch, dst and workspace. */
static size_t grad_work_bytes(const onednn_prim *bwd, const onednn_prim *fwd) {
  return round64(bwd->work_bytes) + round64(fwd->work_bytes) +
         round64(dnnl_memory_desc_get_size(&fwd->md[1])) +
         round64(dnnl_memory_desc_get_size(&fwd->md[2]));
}

static void plan_pool(onednn_state *st, const raf_stmt *s, pool_plan *p) {
  p->op = s->op;
  bool grad =
      s->op == RAF_OP_MAX_POOL2D_GRAD || s->op == RAF_OP_AVG_POOL2D_GRAD;
  bool max = s->op == RAF_OP_MAX_POOL2D || s->op == RAF_OP_MAX_POOL2D_GRAD;
  const raf_type *x = grad ? s->results[0]->type : s->operands[0].value->type,
                 *y = grad ? s->operands[0].value->type : s->results[0]->type;
  p->dt = x->dtype;
  if (onednn_dtype(p->dt) == dnnl_data_type_undef) {
    snprintf(p->why, sizeof p->why,
             "onednn has no %s for %s (only f32 and bf16)",
             raf_op_table[s->op].name, raf_dtype_name(p->dt));
    return;
  }
  raf_attr_value kernel, stride, pad;
  raf_stmt_attr(s, "kernel", &kernel);
  if (!raf_stmt_attr(s, "stride", &stride))
    stride = kernel;
  raf_stmt_attr(s, "padding", &pad);
  onednn_key key = {{0}};
  int64_t *k = key.w;
  k[K_KIND] = grad ? POOL_BACKWARD : POOL_FORWARD;
  k[K_DTYPE] = onednn_dtype(p->dt);
  k[K_MAX] = max;
  k[K_C] = x->dims[1];
  k[K_H] = x->dims[2];
  k[K_W] = x->dims[3];
  k[K_OH] = y->dims[2];
  k[K_OW] = y->dims[3];
  k[K_KH] = kernel.u.ints.v[0];
  k[K_KW] = kernel.u.ints.v[1];
  k[K_SH] = stride.u.ints.v[0];
  k[K_SW] = stride.u.ints.v[1];
  k[K_PH] = pad.u.ints.v[0];
  k[K_PW] = pad.u.ints.v[1];
  p->n = x->dims[0];
  p->c = k[K_C], p->h = k[K_H], p->w = k[K_W], p->oh = k[K_OH];
  p->ow = k[K_OW], p->kh = k[K_KH], p->kw = k[K_KW], p->sh = k[K_SH];
  p->sw = k[K_SW], p->ph = k[K_PH], p->pw = k[K_PW];
  p->x_image = k[K_C] * k[K_H] * k[K_W];
  p->y_image = k[K_C] * k[K_OH] * k[K_OW];
  if (x->numel == 0 || y->numel == 0)
    return; /* nothing to pool: the kernel writes zeros or nothing */
  int64_t per_image = p->y_image * k[K_KH] * k[K_KW] + p->x_image;
  int64_t want = p->n * per_image / TASK_WORK;
  want = onednn_min64(onednn_min64(want, p->n), MAX_CHUNKS);
  want = want < 1 ? 1 : want;
  p->chunk = (p->n + want - 1) / want;
  p->nchunks = (p->n + p->chunk - 1) / p->chunk;
  char what[128];
  snprintf(what, sizeof what, "%s %s of %lldx%lldx%lld", raf_dtype_name(p->dt),
           raf_op_table[s->op].name, (long long)k[K_C], (long long)k[K_H],
           (long long)k[K_W]);
  const onednn_prim **made[2][2] = {{&p->full, &p->full_fwd},
                                    {&p->last, &p->last_fwd}};
  int64_t sizes[2] = {p->chunk, p->n % p->chunk};
  for (int i = 0; i < 2 && sizes[i]; i++) {
    k[K_N] = sizes[i];
    k[K_KIND] = grad ? POOL_BACKWARD : POOL_FORWARD;
    *made[i][0] =
        onednn_find_prim(st, &key, create_pool, what, p->why, sizeof p->why);
    if (!*made[i][0])
      return;
    size_t bytes = (*made[i][0])->work_bytes;
    if (grad && max) {
      k[K_KIND] = POOL_TRAINING;
      *made[i][1] =
          onednn_find_prim(st, &key, create_pool, what, p->why, sizeof p->why);
      if (!*made[i][1])
        return;
      bytes = grad_work_bytes(*made[i][0], *made[i][1]);
    }
    if (bytes > p->work_bytes)
      p->work_bytes = bytes;
  }
}

static void free_pool_plan(void *plan) { free(plan); }

const void *onednn_bind_pool(onednn_state *st, const raf_stmt *s) {
  pool_plan *p = calloc(1, sizeof *p);
  if (!p || !onednn_keep_plan(st, p, free_pool_plan))
    return NULL;
  plan_pool(st, s, p);
  return p;
}

/* ---- Running ------------------------------------------------------------ */

typedef struct pool_job {
  const pool_plan *p;
  dnnl_engine_t engine;
  const char *a, *x; /* x or dy; x of max_pool2d_grad */
  char *r;
  size_t size;
  atomic_int status;
} pool_job;

/* Whether x[0, n) of dtype dt (f32 or bf16) holds a NaN. */
static bool has_nan(const void *x, raf_dtype dt, int64_t n) {
  bool nan = false;
  if (dt == RAF_F32) {
    const float *f = x;
    for (int64_t e = 0; e < n; e++)
      nan |= f[e] != f[e];
  } else {
    const uint16_t *b = x;
    for (int64_t e = 0; e < n; e++)
      nan |= (b[e] & 0x7fff) > 0x7f80;
  }
  return nan;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Max pooling of images [i0, i0 + images) as cpu-ref's: per window its
 * first strict maximum, or its last NaN; forward into y, or, with dy,
 * the gradient into dx (f32 sums, rounded once). */
static dnnl_status_t max_pool_reference(const pool_plan *p, const char *x,
                                        const char *dy, char *out, int64_t i0,
                                        int64_t images) {
  const int64_t H = p->h, W = p->w, OH = p->oh, OW = p->ow;
  float *sums = NULL;
  if (dy) {
    sums = calloc((size_t)(H * W), sizeof *sums);
    if (!sums)
      return dnnl_out_of_memory;
  }
  for (int64_t plane = i0 * p->c; plane < (i0 + images) * p->c; plane++) {
    int64_t xo = plane * H * W, yo = plane * OH * OW;
    if (dy)
      memset(sums, 0, sizeof *sums * (size_t)(H * W));
    for (int64_t i = 0; i < OH; i++) {
      int64_t h0 = i * p->sh - p->ph;
      int64_t hlo = max64(h0, 0), hhi = onednn_min64(h0 + p->kh, H);
      for (int64_t q = 0; q < OW; q++) {
        int64_t w0 = q * p->sw - p->pw;
        int64_t wlo = max64(w0, 0), whi = onednn_min64(w0 + p->kw, W);
        double top = -INFINITY;
        int64_t at = hlo * W + wlo;
        for (int64_t a = hlo; a < hhi; a++)
          for (int64_t b = wlo; b < whi; b++) {
            double v = raf_elem_get_f64(p->dt, x, xo + a * W + b);
            if (v > top || v != v) {
              top = v;
              at = a * W + b;
            }
          }
        if (!dy)
          raf_elem_set_f64(p->dt, out, yo + i * OW + q, top);
        else if (hlo < hhi && wlo < whi)
          sums[at] += (float)raf_elem_get_f64(p->dt, dy, yo + i * OW + q);
      }
    }
    for (int64_t e = 0; dy && e < H * W; e++)
      raf_elem_set_f64(p->dt, out, xo + e, sums[e]);
  }
  free(sums);
  return dnnl_success;
}

/* max_pool2d_grad of one chunk: the training forward of its x records
 * the maxima in the workspace; the backward sends dy there. */
static dnnl_status_t max_grad_chunk(const pool_job *j, const onednn_prim *bwd,
                                    const onednn_prim *fwd, const void *dy,
                                    const void *x, void *dx, char *work) {
  char *fwd_work = work + round64(bwd->work_bytes);
  char *dst = fwd_work + round64(fwd->work_bytes);
  char *ws = dst + round64(dnnl_memory_desc_get_size(&fwd->md[1]));
  void *fwd_args[3] = {(void *)x, dst, ws};
  dnnl_status_t rc = onednn_run_prim(j->engine, fwd, fwd_args, 0, fwd_work);
  void *bwd_args[3] = {(void *)dy, ws, dx};
  if (rc == dnnl_success)
    rc = onednn_run_prim(j->engine, bwd, bwd_args, 0, work);
  return rc;
}

/* One tap of the windows q in [qlo, qhi) of an output row: row[q * sw]
 * (at index base + q * sw of the plane) replaces the window's best when
 * it is greater or a NaN. Strides 1 and 2 (pooling's usual) get loops of
 * their own, which vectorize. */
#define VISIT_TAP(SW)                                                          \
  for (int64_t q = qlo; q < qhi; q++) {                                        \
    float v = row[q * (SW)];                                                   \
    bool take = v > best[q] || v != v;                                         \
    best[q] = take ? v : best[q];                                              \
    at[q] = take ? base + q * (SW) : at[q];                                    \
  }

RAF_VEC_LOOP static void visit_tap(float *restrict best, int64_t *restrict at,
                                   const float *restrict row, int64_t base,
                                   int64_t qlo, int64_t qhi, int64_t sw) {
  if (sw == 1)
    VISIT_TAP(1)
  else if (sw == 2)
    VISIT_TAP(2)
  else
    VISIT_TAP(sw)
}

/* max_pool2d_grad of planes [begin, end) (image * channels + channel) of
 * f32 tensors, without oneDNN: per output row, each window's first strict
 * maximum or last NaN (cpu-ref's choice) found by visiting the taps in
 * row-major order for all of the row's windows at once (a loop over the
 * output columns, which vectorizes), then dy added there in f32. Against
 * pooling each chunk again with oneDNN's training forward to get the
 * maxima, this took ResNet-18's max_pool2d_grad at 8x64x112x112 from 13
 * to 8 ms on 2 threads, and it needs no NaN scan. */
static void max_grad_f32_planes(void *data, int64_t begin, int64_t end) {
  pool_job *j = data;
  const pool_plan *p = j->p;
  const int64_t H = p->h, W = p->w, OH = p->oh, OW = p->ow;
  float *best = malloc(sizeof *best * (size_t)OW);
  int64_t *at = malloc(sizeof *at * (size_t)OW);
  if (!best || !at) {
    free(best);
    free(at);
    onednn_failed(&j->status, dnnl_out_of_memory);
    return;
  }
  for (int64_t plane = begin; plane < end; plane++) {
    const float *x = (const float *)j->x + plane * H * W;
    const float *dy = (const float *)j->a + plane * OH * OW;
    float *dx = (float *)j->r + plane * H * W;
    memset(dx, 0, sizeof *dx * (size_t)(H * W));
    for (int64_t i = 0; i < OH; i++) {
      int64_t h0 = i * p->sh - p->ph;
      int64_t hlo = max64(h0, 0), hhi = onednn_min64(h0 + p->kh, H);
      if (hlo >= hhi)
        continue; /* the window is all padding: nothing to send */
      for (int64_t q = 0; q < OW; q++) {
        best[q] = -INFINITY;
        at[q] = hlo * W + max64(q * p->sw - p->pw, 0);
      }
      for (int64_t a = hlo; a < hhi; a++)
        for (int64_t b = 0; b < p->kw; b++) {
          /* The columns q whose window has tap b inside the input:
           * 0 <= q * sw - pw + b < W. */
          int64_t off = b - p->pw;
          int64_t qlo = off >= 0 ? 0 : (-off + p->sw - 1) / p->sw;
          int64_t qhi = W - off <= 0 ? 0 : (W - off + p->sw - 1) / p->sw;
          qhi = onednn_min64(qhi, OW);
          visit_tap(best, at, x + a * W + off, a * W + off, qlo, qhi, p->sw);
        }
      for (int64_t q = 0; q < OW; q++) {
        int64_t w0 = q * p->sw - p->pw;
        if (max64(w0, 0) < onednn_min64(w0 + p->kw, W))
          dx[at[q]] += dy[i * OW + q];
      }
    }
  }
  free(best);
  free(at);
}

static void pool_tasks(void *data, int64_t begin, int64_t end) {
  pool_job *j = data;
  const pool_plan *p = j->p;
  void *work = NULL;
  void *base = onednn_alloc_aligned(p->work_bytes, &work);
  if (!base) {
    onednn_failed(&j->status, dnnl_out_of_memory);
    return;
  }
  bool grad =
      p->op == RAF_OP_MAX_POOL2D_GRAD || p->op == RAF_OP_AVG_POOL2D_GRAD;
  int threads = onednn_openmp_single();
  for (int64_t t = begin; t < end; t++) {
    int64_t i0 = t * p->chunk;
    bool full = onednn_min64(p->chunk, p->n - i0) == p->chunk;
    const onednn_prim *pr = full ? p->full : p->last;
    size_t xo = (size_t)(i0 * p->x_image) * j->size,
           yo = (size_t)(i0 * p->y_image) * j->size;
    dnnl_status_t rc = dnnl_success;
    bool max = p->op == RAF_OP_MAX_POOL2D || p->op == RAF_OP_MAX_POOL2D_GRAD;
    const char *x = p->op == RAF_OP_MAX_POOL2D ? j->a : j->x;
    int64_t images = onednn_min64(p->chunk, p->n - i0);
    if (max && has_nan(x + xo, p->dt, images * p->x_image)) {
      rc = max_pool_reference(p, x, p->op == RAF_OP_MAX_POOL2D ? NULL : j->a,
                              j->r, i0, images);
    } else if (p->op == RAF_OP_MAX_POOL2D_GRAD) {
      rc = max_grad_chunk(j, pr, full ? p->full_fwd : p->last_fwd, j->a + yo,
                          j->x + xo, j->r + xo, work);
    } else {
      void *args[2] = {(void *)(j->a + (grad ? yo : xo)),
                       j->r + (grad ? xo : yo)};
      rc = onednn_run_prim(j->engine, pr, args, 0, work);
    }
    if (rc != dnnl_success) {
      onednn_failed(&j->status, rc);
      break;
    }
  }
  onednn_openmp_restore(threads);
  free(base);
}

raf_status onednn_pool(const raf_kernel *k) {
  const pool_plan *p = k->bound;
  onednn_state *st;
  if (onednn_kernel_plan(k, &st) != RAF_OK)
    return RAF_ERROR;
  if (p->why[0])
    return raf_kernel_fail(k, "%s", p->why);
  if (!p->full) { /* an empty operand or result */
    memset(k->out[0]->data, 0, k->out[0]->nbytes);
    return RAF_OK;
  }
  pool_job j = {.p = p,
                .engine = st->engine,
                .a = k->in[0]->data,
                .x = p->op == RAF_OP_MAX_POOL2D_GRAD ? k->in[1]->data : NULL,
                .r = k->out[0]->data,
                .size = (size_t)raf_dtype_size(p->dt)};
  atomic_init(&j.status, dnnl_success);
  if (p->op == RAF_OP_MAX_POOL2D_GRAD && p->dt == RAF_F32) {
    int64_t plane = p->h * p->w + p->oh * p->ow * p->kh * p->kw;
    int64_t grain = TASK_WORK / 16 / (plane ? plane : 1);
    raf_kernel_parallel(k, p->n * p->c, grain < 1 ? 1 : grain,
                        max_grad_f32_planes, &j);
  } else {
    raf_kernel_parallel(k, p->nchunks, 1, pool_tasks, &j);
  }
  dnnl_status_t rc = (dnnl_status_t)atomic_load(&j.status);
  if (rc != dnnl_success)
    return raf_kernel_fail(k, "oneDNN failed: %s", dnnl_status2str(rc));
  return RAF_OK;
}

#endif /* RAF_HAVE_ONEDNN */
