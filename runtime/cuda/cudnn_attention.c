/* cudnn_attention.c: scaled_dot_product_attention and its gradient on
 * cuDNN's graph API (cudnn_internal.h).
 *
 * The forward is one graph, the one NVIDIA's cudnn-frontend builds for
 * flash attention, so that a fused engine can run it without writing the
 * L x S scores to memory (shapes per (batch.., head), folded into BH; T is
 * q's dtype; every score tensor is virtual):
 *
 *   s     = q k^T                      f32 [BH, 1, L, S]   (matmul; k^T a
 *                                                           strided view)
 *   s     = s * scale                                      (pointwise)
 *   s     = row >= col ? s : -inf      causal only         (GEN_INDEX x2,
 *                                                           CMP_GE, SELECT)
 *   m     = max over S of s            f32 [BH, 1, L, 1]   (reduction)
 *   e     = exp(s - m);  z = sum over S of e
 *   stats = m + log(z)                 f32 [BH, 1, L, 1]   (kept)
 *   o     = (e / z) v                  T   [BH, 1, L, Ev]  (the division
 *                                                           rounded to T)
 *
 * The causal mask is top-left aligned (keys j <= i), as raf's op and
 * PyTorch's is_causal define it.
 *
 * The gradient takes (dy, q, k, v) only (raf's op), so it runs the forward
 * again for o and stats, into its scratch (raf_cudnn_scratch_of), then
 * FlashAttention's backward in four graphs:
 *
 *   dsum = sum over Ev of dy * o       f32 [BH, 1, L, 1]
 *   p    = exp(masked scale q k^T - stats)                 (kept, T)
 *   ds   = p * (dy v^T - dsum) * scale                     (kept, T)
 *   dv   = p^T dy;  dq = ds k;  dk = ds^T q                (three products;
 *                                                           transposes are
 *                                                           strided views)
 *
 * This backward writes p and ds, BH x L x S each, as cublas's does: cuDNN's
 * fused backward is the SDPA_BWD operation of newer releases, which raf
 * does not use yet (docs/Dialects.md).
 */
#include "runtime/cuda/cudnn_internal.h"

#include <math.h>
#include <stdio.h>

/* Tensor ids: real tensors first, virtual ones from 100. */
enum {
  AT_Q = 1, AT_K, AT_V, AT_O, AT_STATS, AT_SCALE, AT_NEG_INF, AT_DY, AT_DQ,
  AT_DK, AT_DV, AT_DSUM, AT_P, AT_DS,
  AT_S = 100, AT_S_SCALED, AT_ROW, AT_COL, AT_KEEP, AT_S_MASKED, AT_MAX,
  AT_SHIFTED, AT_EXP, AT_SUM, AT_LOG, AT_PROBS, AT_PROD, AT_P_F32, AT_DP,
  AT_DP_CENTRED, AT_DS_F32
};

/* One attention's shapes: BH (batch.., heads) folded, L queries, S keys,
 * E and Ev feature widths. */
typedef struct att_shape {
  int64_t bh, l, s, e, ev;
  raf_dtype dtype;
  bool causal;
  float scale;
} att_shape;

static void shape_of(const raf_kernel *k, const raf_type *q,
                     const raf_type *kt, const raf_type *v, att_shape *a) {
  a->bh = 1;
  for (int i = 0; i < q->rank - 2; i++)
    a->bh *= q->dims[i];
  a->l = q->dims[q->rank - 2];
  a->e = q->dims[q->rank - 1];
  a->s = kt->dims[kt->rank - 2];
  a->ev = v->dims[v->rank - 1];
  a->dtype = q->dtype;
  a->causal = raf_stmt_attr_bool(k->stmt, "causal");
  raf_attr_value scale;
  a->scale = (float)(raf_stmt_attr(k->stmt, "scale", &scale)
                         ? scale.u.f
                         : 1.0 / sqrt((double)a->e));
}

/* "att_fwd bf16 [BH,L,S,E,Ev] causal": a graph's key. The scale is a
 * by-value input, not part of the key. */
static void key_of(char *key, const char *kind, const att_shape *a) {
  snprintf(key, CDN_KEY, "%s %s [%lld,%lld,%lld,%lld,%lld]%s", kind,
           raf_dtype_name(a->dtype), (long long)a->bh, (long long)a->l,
           (long long)a->s, (long long)a->e, (long long)a->ev,
           a->causal ? " causal" : "");
}

/* A [BH, 1, rows, cols] tensor, packed, or (transposed) the view of a
 * packed [BH, 1, cols, rows] buffer as [BH, 1, rows, cols]. */
static cudnnBackendDescriptor_t mat(cdn_graph *g, int64_t uid,
                                    cudnnDataType_t type, int64_t bh,
                                    int64_t rows, int64_t cols,
                                    bool transposed, unsigned flags) {
  int64_t dims[4] = {bh, 1, rows, cols};
  int64_t strides[4] = {rows * cols, rows * cols, transposed ? 1 : cols,
                        transposed ? rows : 1};
  return cdn_tensor(g, uid, type, 4, dims, strides, flags);
}

static cudnnBackendDescriptor_t scalar(cdn_graph *g, int64_t uid) {
  static const int64_t one[4] = {1, 1, 1, 1};
  return cdn_tensor(g, uid, CUDNN_DATA_FLOAT, 4, one, NULL, CDN_BY_VALUE);
}

/* The masked, scaled scores scale * q k^T of a, a virtual f32 [BH, 1, L,
 * S], built into g. */
static cudnnBackendDescriptor_t scores(cdn_graph *g, const att_shape *a) {
  cudnnDataType_t t = cdn_dtype(a->dtype), f = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t s = mat(g, AT_S, f, a->bh, a->l, a->s, false,
                                   CDN_VIRTUAL);
  cdn_matmul(g, mat(g, AT_Q, t, a->bh, a->l, a->e, false, 0),
             mat(g, AT_K, t, a->bh, a->e, a->s, true, 0), s);
  cudnnBackendDescriptor_t scaled =
      mat(g, AT_S_SCALED, f, a->bh, a->l, a->s, false, CDN_VIRTUAL);
  cdn_pointwise(g, CUDNN_POINTWISE_MUL, s, scalar(g, AT_SCALE), NULL, scaled,
                0);
  if (!a->causal)
    return scaled;
  cudnnBackendDescriptor_t row = mat(g, AT_ROW, CUDNN_DATA_INT32, a->bh, a->l,
                                     a->s, false, CDN_VIRTUAL),
                           col = mat(g, AT_COL, CUDNN_DATA_INT32, a->bh, a->l,
                                     a->s, false, CDN_VIRTUAL),
                           keep = mat(g, AT_KEEP, CUDNN_DATA_BOOLEAN, a->bh,
                                      a->l, a->s, false, CDN_VIRTUAL),
                           masked = mat(g, AT_S_MASKED, f, a->bh, a->l, a->s,
                                        false, CDN_VIRTUAL);
  cdn_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, scaled, NULL, NULL, row, 2);
  cdn_pointwise(g, CUDNN_POINTWISE_GEN_INDEX, scaled, NULL, NULL, col, 3);
  cdn_pointwise(g, CUDNN_POINTWISE_CMP_GE, row, col, NULL, keep, 0);
  cdn_pointwise(g, CUDNN_POINTWISE_BINARY_SELECT, scaled,
                scalar(g, AT_NEG_INF), keep, masked, 0);
  return masked;
}

/* The forward graph: o and stats from q, k and v. */
static const cudnn_plan *forward_plan(cudnn_state *st, const raf_kernel *k,
                                      const att_shape *a) {
  char key[CDN_KEY];
  key_of(key, "att_fwd", a);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (p)
    return p;
  cudnnDataType_t t = cdn_dtype(a->dtype), f = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t s = scores(&g, a);
#define ROWS(uid, flags) mat(&g, uid, f, a->bh, a->l, 1, false, flags)
#define SCORES(uid, type) mat(&g, uid, type, a->bh, a->l, a->s, false, \
                              CDN_VIRTUAL)
  cudnnBackendDescriptor_t max = ROWS(AT_MAX, CDN_VIRTUAL),
                           shifted = SCORES(AT_SHIFTED, f),
                           e = SCORES(AT_EXP, f), sum = ROWS(AT_SUM, CDN_VIRTUAL),
                           log_sum = ROWS(AT_LOG, CDN_VIRTUAL),
                           probs = SCORES(AT_PROBS, t);
  cdn_reduction(&g, CUDNN_REDUCE_TENSOR_MAX, s, max);
  cdn_pointwise(&g, CUDNN_POINTWISE_SUB, s, max, NULL, shifted, 0);
  cdn_pointwise(&g, CUDNN_POINTWISE_EXP, shifted, NULL, NULL, e, 0);
  cdn_reduction(&g, CUDNN_REDUCE_TENSOR_ADD, e, sum);
  cdn_pointwise(&g, CUDNN_POINTWISE_LOG, sum, NULL, NULL, log_sum, 0);
  cdn_pointwise(&g, CUDNN_POINTWISE_ADD, max, log_sum, NULL, ROWS(AT_STATS, 0),
                0);
  cdn_pointwise(&g, CUDNN_POINTWISE_DIV, e, sum, NULL, probs, 0);
  cdn_matmul(&g, probs, mat(&g, AT_V, t, a->bh, a->s, a->ev, false, 0),
             mat(&g, AT_O, t, a->bh, a->l, a->ev, false, 0));
#undef ROWS
#undef SCORES
  return cdn_plan(&g, key);
}

static raf_status run_forward(cudnn_state *st, const raf_kernel *k,
                              const att_shape *a, void *q, void *kk, void *v,
                              void *o, void *stats) {
  const cudnn_plan *p = forward_plan(st, k, a);
  if (!p)
    return RAF_ERROR;
  float scale = a->scale, neg_inf = -INFINITY;
  int64_t uids[] = {AT_Q, AT_K, AT_V, AT_O, AT_STATS, AT_SCALE, AT_NEG_INF};
  void *ptrs[] = {q, kk, v, o, stats, &scale, &neg_inf};
  return cdn_execute(st, k, p, a->causal ? 7 : 6, uids, ptrs);
}

/* Whether the attention has nothing to compute; then the results are
 * zeros (sets *rc). */
static bool empty(cudnn_state *st, const raf_kernel *k, const att_shape *a,
                  raf_status *rc) {
  *rc = RAF_OK;
  if (a->bh * a->l * a->s * a->e * a->ev != 0)
    return false;
  for (int i = 0; i < k->nout && *rc == RAF_OK; i++)
    if (k->out[i]->nbytes)
      *rc = raf_device_memset(st->dev, k->out[i]->data, 0, k->out[i]->nbytes);
  return true;
}

/* What both kernels start with: the state, the shapes of q, k and v
 * (operands q_at..q_at + 2) and the scratch. Returns the scratch, or NULL
 * with *rc set: RAF_ERROR (reported), or RAF_OK when there was nothing to
 * compute. */
static char *begin(const raf_kernel *k, int q_at, cudnn_state **st,
                   att_shape *a, raf_status *rc) {
  *rc = RAF_ERROR;
  if (!(*st = cudnn_state_of(k))) {
    raf_kernel_fail(k, "cudnn: the dialect was not prepared");
    return NULL;
  }
  shape_of(k, k->in[q_at]->type, k->in[q_at + 1]->type,
           k->in[q_at + 2]->type, a);
  if (empty(*st, k, a, rc))
    return NULL;
  *rc = RAF_ERROR; /* should the scratch be missing */
  return cdn_scratch(*st, k);
}

/* o = scaled_dot_product_attention(q, k, v) {causal, scale} */
raf_status cudnn_attention(const raf_kernel *k) {
  cudnn_state *st;
  att_shape a;
  raf_status rc;
  char *scratch = begin(k, 0, &st, &a, &rc);
  if (!scratch)
    return rc;
  void *stats = scratch + raf_cudnn_scratch_of(k->stmt).part[RAF_CUDNN_STATS];
  return run_forward(st, k, &a, k->in[0]->data, k->in[1]->data,
                     k->in[2]->data, k->out[0]->data, stats);
}

/* ---- The gradient --------------------------------------------------------- */

/* dsum = rowsum(dy * o) */
static const cudnn_plan *dsum_plan(cudnn_state *st, const raf_kernel *k,
                                   const att_shape *a) {
  char key[CDN_KEY];
  key_of(key, "att_dsum", a);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (p)
    return p;
  cudnnDataType_t t = cdn_dtype(a->dtype), f = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t prod =
      mat(&g, AT_PROD, f, a->bh, a->l, a->ev, false, CDN_VIRTUAL);
  cdn_pointwise(&g, CUDNN_POINTWISE_MUL,
                mat(&g, AT_DY, t, a->bh, a->l, a->ev, false, 0),
                mat(&g, AT_O, t, a->bh, a->l, a->ev, false, 0), NULL, prod,
                0);
  cdn_reduction(&g, CUDNN_REDUCE_TENSOR_ADD, prod,
                mat(&g, AT_DSUM, f, a->bh, a->l, 1, false, 0));
  return cdn_plan(&g, key);
}

/* p = exp(scores - stats) and ds = p * (dy v^T - dsum) * scale, both kept
 * in q's dtype. */
static const cudnn_plan *ds_plan(cudnn_state *st, const raf_kernel *k,
                                 const att_shape *a) {
  char key[CDN_KEY];
  key_of(key, "att_ds", a);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (p)
    return p;
  cudnnDataType_t t = cdn_dtype(a->dtype), f = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t s = scores(&g, a);
#define SCORES(uid, type, flags) \
  mat(&g, uid, type, a->bh, a->l, a->s, false, flags)
  cudnnBackendDescriptor_t shifted = SCORES(AT_SHIFTED, f, CDN_VIRTUAL),
                           probs = SCORES(AT_P_F32, f, CDN_VIRTUAL),
                           dp = SCORES(AT_DP, f, CDN_VIRTUAL),
                           centred = SCORES(AT_DP_CENTRED, f, CDN_VIRTUAL),
                           ds = SCORES(AT_DS_F32, f, CDN_VIRTUAL);
  cdn_pointwise(&g, CUDNN_POINTWISE_SUB, s,
                mat(&g, AT_STATS, f, a->bh, a->l, 1, false, 0), NULL, shifted,
                0);
  cdn_pointwise(&g, CUDNN_POINTWISE_EXP, shifted, NULL, NULL, probs, 0);
  cdn_pointwise(&g, CUDNN_POINTWISE_IDENTITY, probs, NULL, NULL,
                SCORES(AT_P, t, 0), 0);
  cdn_matmul(&g, mat(&g, AT_DY, t, a->bh, a->l, a->ev, false, 0),
             mat(&g, AT_V, t, a->bh, a->ev, a->s, true, 0), dp);
  cdn_pointwise(&g, CUDNN_POINTWISE_SUB, dp,
                mat(&g, AT_DSUM, f, a->bh, a->l, 1, false, 0), NULL, centred,
                0);
  cdn_pointwise(&g, CUDNN_POINTWISE_MUL, probs, centred, NULL, ds, 0);
  cdn_pointwise(&g, CUDNN_POINTWISE_MUL, ds, scalar(&g, AT_SCALE), NULL,
                SCORES(AT_DS, t, 0), 0);
#undef SCORES
  return cdn_plan(&g, key);
}

/* c [BH, 1, M, N] = a [BH, 1, M, K] b [BH, 1, K, N], either operand a
 * transposed view; ids AT_P (a) and AT_DY (b) stand for any operands. */
static raf_status product(cudnn_state *st, const raf_kernel *k,
                          const att_shape *at, const char *kind, int64_t m,
                          int64_t n, int64_t kk, bool trans_a, bool trans_b,
                          void *a, void *b, void *c) {
  char key[CDN_KEY];
  snprintf(key, sizeof key, "%s %s [%lld,%lld,%lld,%lld]", kind,
                     raf_dtype_name(at->dtype), (long long)at->bh,
                     (long long)m, (long long)n, (long long)kk);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (!p) {
    cudnnDataType_t t = cdn_dtype(at->dtype);
    cdn_matmul(&g, mat(&g, AT_P, t, at->bh, m, kk, trans_a, 0),
               mat(&g, AT_DY, t, at->bh, kk, n, trans_b, 0),
               mat(&g, AT_DV, t, at->bh, m, n, false, 0));
    if (!(p = cdn_plan(&g, key)))
      return RAF_ERROR;
  }
  int64_t uids[] = {AT_P, AT_DY, AT_DV};
  void *ptrs[] = {a, b, c};
  return cdn_execute(st, k, p, 3, uids, ptrs);
}

/* dq, dk, dv = scaled_dot_product_attention_grad(dy, q, k, v) */
raf_status cudnn_attention_grad(const raf_kernel *k) {
  cudnn_state *st;
  att_shape a;
  raf_status rc;
  char *scratch = begin(k, 1, &st, &a, &rc);
  if (!scratch)
    return rc;
  raf_cudnn_scratch parts = raf_cudnn_scratch_of(k->stmt);
  void *stats = scratch + parts.part[RAF_CUDNN_STATS],
       *o = scratch + parts.part[RAF_CUDNN_O],
       *dsum = scratch + parts.part[RAF_CUDNN_DSUM],
       *p = scratch + parts.part[RAF_CUDNN_P],
       *ds = scratch + parts.part[RAF_CUDNN_DS];
  void *dy = k->in[0]->data, *q = k->in[1]->data, *kk = k->in[2]->data,
       *v = k->in[3]->data;
  if (run_forward(st, k, &a, q, kk, v, o, stats) != RAF_OK)
    return RAF_ERROR;
  const cudnn_plan *plan = dsum_plan(st, k, &a);
  if (!plan)
    return RAF_ERROR;
  int64_t dsum_uids[] = {AT_DY, AT_O, AT_DSUM};
  void *dsum_ptrs[] = {dy, o, dsum};
  if (cdn_execute(st, k, plan, 3, dsum_uids, dsum_ptrs) != RAF_OK)
    return RAF_ERROR;
  if (!(plan = ds_plan(st, k, &a)))
    return RAF_ERROR;
  float scale = a.scale, neg_inf = -INFINITY;
  int64_t ds_uids[] = {AT_Q,  AT_K,    AT_V,  AT_DY,     AT_STATS,
                       AT_DSUM, AT_P, AT_DS, AT_SCALE, AT_NEG_INF};
  void *ds_ptrs[] = {q, kk, v, dy, stats, dsum, p, ds, &scale, &neg_inf};
  if (cdn_execute(st, k, plan, a.causal ? 10 : 9, ds_uids, ds_ptrs) != RAF_OK)
    return RAF_ERROR;
  /* dv [S, Ev] = p^T [S, L] dy [L, Ev]; dq [L, E] = ds [L, S] k [S, E];
   * dk [S, E] = ds^T [S, L] q [L, E]. */
  if (product(st, k, &a, "att_dv", a.s, a.ev, a.l, true, false, p, dy,
              k->out[2]->data) != RAF_OK ||
      product(st, k, &a, "att_dq", a.l, a.e, a.s, false, false, ds, kk,
              k->out[0]->data) != RAF_OK)
    return RAF_ERROR;
  return product(st, k, &a, "att_dk", a.s, a.e, a.l, true, false, ds, q,
                 k->out[1]->data);
}
