/* attention.c: the onednn dialect's bf16 scaled_dot_product_attention
 * and its gradient, on the matrix products of matmul.c.
 *
 * cblas.c's algorithm and semantics (PyTorch's top-left causal mask, zeros
 * for a query without keys) on oneDNN products: per (batch, head), in
 * blocks of 64 query rows, S = q k^T with f32 results (a causal block only
 * against the keys its last row sees), times the scale, a stable softmax
 * per row in f32 (exp by raf_vexpf, vmath.h; the sum in double), P rounded
 * to bf16, out = P v (f32 sums, rounded once). The gradient recomputes P
 * per block and takes dv += P^T dy and dP = dy v^T in f32, dS = P * (dP -
 * rowsum(dP * P)) * scale in f32, rounded to bf16, dq = dS k (rounded
 * once) and dk += dS^T q in f32 (oneDNN's sum post-op); dk and dv round
 * once at the end. P and dS are rounded to bf16 for their products, as
 * bf16 FlashAttention does, so results differ from cblas's (float P) by
 * about bf16's rounding. Tasks are (batch, head) items, so results are
 * the same bits at every thread count.
 */
#ifdef RAF_HAVE_ONEDNN

#include "runtime/onednn/internal.h"

#include "runtime/rowmath.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A block of an attention's query rows, [i0, i0 + rows), against the keys
 * [0, kmax) it sees, and the products of its steps (NULL when kmax is 0):
 *   forward   S = q k^T (f32), out = P v (bf16)
 *   backward  S, dv += P^T dy (f32), dP = dy v^T (f32), dq = dS k (bf16),
 *             dk += dS^T q (f32) */
typedef struct att_block {
  int64_t i0, rows, kmax;
  const onednn_mm_prim *scores, *out, *dv, *dp, *dq, *dk;
} att_block;

/* An attention statement's plan: `items` (batch, head) matrices of
 * lq x d queries, lk x d keys and lk x dv values, in blocks of query
 * rows. */
typedef struct att_plan {
  bool backward, causal;
  float scale;
  int64_t items, lq, lk, d, dv, rb;
  int64_t nblocks;
  att_block *blocks;
  size_t scratch_bytes; /* the largest scratchpad of the blocks' products */
  int64_t grain;
  char why[256]; /* non-empty: no plan, the kernel reports this */
} att_plan;
/* ---- scaled_dot_product_attention and its gradient ---------------------- */

/* Query rows per attention block (as cblas.c's). */
enum { ATT_ROWS = 64 };
/* About this many multiply-adds per attention task. */
#define ATT_TASK_WORK ((int64_t)1 << 24)

/* The keys query row i sees: PyTorch's top-left causal mask. */
static int64_t keys_of(const att_plan *p, int64_t i) {
  return p->causal ? onednn_min64(p->lk, i + 1) : p->lk;
}

static bool plan_block(onednn_state *st, att_plan *p, att_block *b) {
  b->kmax = p->causal ? onednn_min64(p->lk, b->i0 + b->rows) : p->lk;
  if (b->kmax == 0)
    return true;
  const int64_t rows = b->rows, kmax = b->kmax;
  const onednn_mm_prim scores = {
      .tb = true, .f32_out = true, .m = rows, .n = kmax, .k = p->d};
  b->scores = onednn_find_mm(st, scores, p->why, sizeof p->why);
  if (!p->backward) {
    const onednn_mm_prim out = {.m = rows, .n = p->dv, .k = kmax};
    b->out = b->scores ? onednn_find_mm(st, out, p->why, sizeof p->why) : NULL;
    return b->out != NULL;
  }
  const onednn_mm_prim dv = {.ta = true,
                             .f32_out = true,
                             .accumulate = true,
                             .m = kmax,
                             .n = p->dv,
                             .k = rows};
  const onednn_mm_prim dp = {
      .tb = true, .f32_out = true, .m = rows, .n = kmax, .k = p->dv};
  const onednn_mm_prim dq = {.m = rows, .n = p->d, .k = kmax};
  const onednn_mm_prim dk = {.ta = true,
                             .f32_out = true,
                             .accumulate = true,
                             .m = kmax,
                             .n = p->d,
                             .k = rows};
  const onednn_mm_prim keys[] = {dv, dp, dq, dk};
  const onednn_mm_prim **made[] = {&b->dv, &b->dp, &b->dq, &b->dk};
  for (int i = 0; i < 4 && b->scores; i++)
    if (!(*made[i] = onednn_find_mm(st, keys[i], p->why, sizeof p->why)))
      return false;
  return b->scores != NULL;
}

/* The plan of an attention statement (bf16; another dtype gets a plan
 * that says so). */
static void plan_attention(onednn_state *st, const raf_stmt *s, att_plan *p) {
  p->backward = s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD;
  const raf_type *qt = s->operands[p->backward].value->type,
                 *kt = s->operands[p->backward + 1].value->type,
                 *vt = s->operands[p->backward + 2].value->type;
  if (qt->dtype != RAF_BF16 || kt->dtype != RAF_BF16 || vt->dtype != RAF_BF16 ||
      s->operands[0].value->type->dtype != RAF_BF16) {
    snprintf(p->why, sizeof p->why,
             "onednn has no attention for %s (only bf16)",
             raf_dtype_name(s->operands[0].value->type->dtype));
    return;
  }
  int r = qt->rank;
  p->lq = qt->dims[r - 2];
  p->lk = kt->dims[r - 2];
  p->d = qt->dims[r - 1];
  p->dv = vt->dims[r - 1];
  p->causal = raf_stmt_attr_bool(s, "causal");
  raf_attr_value scale;
  p->scale =
      (float)(raf_stmt_attr(s, "scale", &scale) ? scale.u.f
                                                : 1.0 / sqrt((double)p->d));
  p->items = 1;
  for (int d = 0; d < r - 2; d++)
    p->items *= qt->dims[d];
  if (p->items == 0 || p->lq == 0)
    return; /* nothing to compute */
  p->rb = onednn_min64(p->lq, ATT_ROWS);
  p->nblocks = (p->lq + p->rb - 1) / p->rb;
  p->blocks = calloc((size_t)p->nblocks, sizeof *p->blocks);
  if (!p->blocks) {
    snprintf(p->why, sizeof p->why, "out of memory for the attention plan");
    return;
  }
  for (int64_t i = 0; i < p->nblocks; i++) {
    att_block *b = &p->blocks[i];
    b->i0 = i * p->rb;
    b->rows = onednn_min64(p->rb, p->lq - b->i0);
    if (!plan_block(st, p, b))
      return;
    const onednn_mm_prim *all[] = {b->scores, b->out, b->dv,
                                   b->dp,     b->dq,  b->dk};
    for (int e = 0; e < 6; e++)
      if (all[e] && all[e]->scratch_bytes > p->scratch_bytes)
        p->scratch_bytes = all[e]->scratch_bytes;
  }
  int64_t work = p->lq * p->lk * (p->d + p->dv) * (p->backward ? 3 : 1) + 1;
  p->grain = work >= ATT_TASK_WORK ? 1 : ATT_TASK_WORK / work + 1;
}

static void free_att_plan(void *plan) {
  att_plan *p = plan;
  free(p->blocks);
  free(p);
}

const void *onednn_bind_attention(onednn_state *st, const raf_stmt *s) {
  att_plan *p = calloc(1, sizeof *p);
  if (!p || !onednn_keep_plan(st, p, free_att_plan))
    return NULL;
  plan_attention(st, s, p);
  return p;
}

typedef struct att_job {
  const att_plan *p;
  dnnl_engine_t engine;
  const uint16_t *q, *k, *v, *dy;
  uint16_t *out, *dq, *dk, *dv;
  atomic_int status; /* the first failure's dnnl_status_t, or success */
} att_job;

static void att_failed(att_job *j, dnnl_status_t rc) {
  onednn_failed(&j->status, rc);
}

/* A task's buffers, each 64-byte aligned in one allocation. */
typedef struct att_buffers {
  void *base;
  float *s, *dp, *dk, *dv; /* scores and P; dP and dS; dk, dv sums */
  uint16_t *p16, *ds16;    /* P and dS rounded to bf16 */
  void *scratch;           /* oneDNN's scratchpad */
} att_buffers;

static bool att_buffers_make(const att_plan *p, att_buffers *b) {
  size_t block = (size_t)(p->rb * p->lk);
  size_t sizes[7] = {block * 4, block * 2, 0, 0, 0, 0, p->scratch_bytes};
  if (p->backward) {
    sizes[2] = block * 4;
    sizes[3] = block * 2;
    sizes[4] = (size_t)(p->lk * p->d) * 4;
    sizes[5] = (size_t)(p->lk * p->dv) * 4;
  }
  size_t total = 64;
  for (int i = 0; i < 7; i++)
    total += (sizes[i] + 63) / 64 * 64;
  memset(b, 0, sizeof *b);
  b->base = malloc(total);
  if (!b->base)
    return false;
  char *at = (char *)b->base + (64 - (uintptr_t)b->base % 64) % 64;
  void **where[7] = {(void **)&b->s,    (void **)&b->p16, (void **)&b->dp,
                     (void **)&b->ds16, (void **)&b->dk,  (void **)&b->dv,
                     &b->scratch};
  for (int i = 0; i < 7; i++) {
    *where[i] = at;
    at += (sizes[i] + 63) / 64 * 64;
  }
  return true;
}

/* The softmax rows P of block b (from its scores in buf->s, [rows, kmax]),
 * zeros past each row's keys, and P rounded into buf->p16. */
static void block_probabilities(const att_plan *p, const att_block *b,
                                const att_buffers *buf) {
  for (int64_t r = 0; r < b->rows; r++) {
    float *row = buf->s + r * b->kmax;
    int64_t nk = keys_of(p, b->i0 + r);
    raf_row_scale(row, nk, p->scale);
    if (nk > 0) {
      double total = raf_row_exp_sum_inplace(row, nk, raf_row_max(row, nk));
      raf_row_scale(row, nk, (float)(1 / total));
    }
    for (int64_t e = nk; e < b->kmax; e++)
      row[e] = 0;
  }
  onednn_round_to_bf16(buf->p16, buf->s, b->rows * b->kmax);
}

/* One (batch, head) item's forward: per block, S = q k^T, P, out = P v. */
static dnnl_status_t att_forward_item(att_job *j, const att_buffers *buf,
                                      int64_t item) {
  const att_plan *p = j->p;
  const uint16_t *q = j->q + item * p->lq * p->d,
                 *k = j->k + item * p->lk * p->d,
                 *v = j->v + item * p->lk * p->dv;
  uint16_t *out = j->out + item * p->lq * p->dv;
  for (int64_t i = 0; i < p->nblocks; i++) {
    const att_block *b = &p->blocks[i];
    uint16_t *o = out + b->i0 * p->dv;
    if (b->kmax == 0) { /* no keys: zeros, as cpu-ref */
      memset(o, 0, sizeof *o * (size_t)(b->rows * p->dv));
      continue;
    }
    dnnl_status_t rc = onednn_run_mm(j->engine, b->scores, q + b->i0 * p->d, k,
                                     buf->s, buf->scratch);
    if (rc != dnnl_success)
      return rc;
    block_probabilities(p, b, buf);
    rc = onednn_run_mm(j->engine, b->out, buf->p16, v, o, buf->scratch);
    if (rc != dnnl_success)
      return rc;
  }
  return dnnl_success;
}

/* One item's gradient: per block, P again, dv += P^T dy, dP = dy v^T,
 * dS, dq = dS k, dk += dS^T q; dk and dv rounded once at the end. */
static dnnl_status_t att_backward_item(att_job *j, const att_buffers *buf,
                                       int64_t item) {
  const att_plan *p = j->p;
  const uint16_t *q = j->q + item * p->lq * p->d,
                 *k = j->k + item * p->lk * p->d,
                 *v = j->v + item * p->lk * p->dv,
                 *dy = j->dy + item * p->lq * p->dv;
  uint16_t *dq = j->dq + item * p->lq * p->d;
  memset(buf->dk, 0, sizeof *buf->dk * (size_t)(p->lk * p->d));
  memset(buf->dv, 0, sizeof *buf->dv * (size_t)(p->lk * p->dv));
  for (int64_t i = 0; i < p->nblocks; i++) {
    const att_block *b = &p->blocks[i];
    const uint16_t *qb = q + b->i0 * p->d, *dyb = dy + b->i0 * p->dv;
    if (b->kmax == 0) { /* no keys: dq is an empty sum */
      memset(dq + b->i0 * p->d, 0, sizeof *dq * (size_t)(b->rows * p->d));
      continue;
    }
    dnnl_status_t rc =
        onednn_run_mm(j->engine, b->scores, qb, k, buf->s, buf->scratch);
    if (rc == dnnl_success) {
      block_probabilities(p, b, buf);
      rc =
          onednn_run_mm(j->engine, b->dv, buf->p16, dyb, buf->dv, buf->scratch);
    }
    if (rc == dnnl_success)
      rc = onednn_run_mm(j->engine, b->dp, dyb, v, buf->dp, buf->scratch);
    if (rc != dnnl_success)
      return rc;
    for (int64_t r = 0; r < b->rows; r++) {
      const float *pr = buf->s + r * b->kmax;
      float *dr = buf->dp + r * b->kmax;
      int64_t nk = keys_of(p, b->i0 + r);
      raf_row_softmax_backward(dr, pr, nk, (float)raf_row_dot(dr, pr, nk),
                               p->scale);
      for (int64_t e = nk; e < b->kmax; e++)
        dr[e] = 0;
    }
    onednn_round_to_bf16(buf->ds16, buf->dp, b->rows * b->kmax);
    rc = onednn_run_mm(j->engine, b->dq, buf->ds16, k, dq + b->i0 * p->d,
                       buf->scratch);
    if (rc == dnnl_success)
      rc =
          onednn_run_mm(j->engine, b->dk, buf->ds16, qb, buf->dk, buf->scratch);
    if (rc != dnnl_success)
      return rc;
  }
  onednn_round_to_bf16(j->dk + item * p->lk * p->d, buf->dk, p->lk * p->d);
  onednn_round_to_bf16(j->dv + item * p->lk * p->dv, buf->dv, p->lk * p->dv);
  return dnnl_success;
}

static void att_tasks(void *data, int64_t begin, int64_t end) {
  att_job *j = data;
  att_buffers buf;
  if (!att_buffers_make(j->p, &buf)) {
    att_failed(j, dnnl_out_of_memory);
    return;
  }
  int threads = onednn_openmp_single();
  for (int64_t item = begin; item < end; item++) {
    dnnl_status_t rc = j->p->backward ? att_backward_item(j, &buf, item)
                                      : att_forward_item(j, &buf, item);
    if (rc != dnnl_success) {
      att_failed(j, rc);
      break;
    }
  }
  onednn_openmp_restore(threads);
  free(buf.base);
}

raf_status onednn_attention(const raf_kernel *k) {
  const att_plan *p = k->bound;
  onednn_state *st;
  if (onednn_kernel_plan(k, &st) != RAF_OK)
    return RAF_ERROR;
  if (p->why[0])
    return raf_kernel_fail(k, "%s", p->why);
  att_job j = {.p = p, .engine = st->engine};
  if (p->backward) {
    j.dy = k->in[0]->data;
    j.q = k->in[1]->data;
    j.k = k->in[2]->data;
    j.v = k->in[3]->data;
    j.dq = k->out[0]->data;
    j.dk = k->out[1]->data;
    j.dv = k->out[2]->data;
    if (p->lq == 0) { /* no queries: dk and dv are empty sums */
      memset(k->out[1]->data, 0, k->out[1]->nbytes);
      memset(k->out[2]->data, 0, k->out[2]->nbytes);
    }
  } else {
    j.q = k->in[0]->data;
    j.k = k->in[1]->data;
    j.v = k->in[2]->data;
    j.out = k->out[0]->data;
  }
  if (p->items == 0 || p->lq == 0)
    return RAF_OK;
  atomic_init(&j.status, dnnl_success);
  raf_kernel_parallel(k, p->items, p->grain, att_tasks, &j);
  dnnl_status_t rc = (dnnl_status_t)atomic_load(&j.status);
  if (rc != dnnl_success)
    return raf_kernel_fail(k, "oneDNN failed: %s", dnnl_status2str(rc));
  return RAF_OK;
}
#endif /* RAF_HAVE_ONEDNN */
