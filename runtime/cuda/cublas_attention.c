/* cublas_attention.c: scaled_dot_product_attention and its gradient in
 * the cublas dialect: the matrix products on cuBLASLt (strided batches
 * over batch * heads), the softmax in attention.cu's kernels. This is
 * llm.c's attention without cuDNN, for q [BH.., L, E], k [BH.., S, E],
 * v [BH.., S, Ev] (BH the product of the leading dims):
 *
 *   forward   s = scale * q k^T            f32 [BH, L, S]   (cuBLASLt)
 *             p = softmax(s), causal mask  f32 in s, T in p (kernel)
 *             out = p v                    T [BH, L, Ev]     (cuBLASLt)
 *   backward  s, p recomputed as above
 *             dv = p^T dy                  T [BH, S, Ev]
 *             dp = dy v^T                  f32 [BH, L, S]
 *             ds = p * (dp - rowsum(dp * p)) * scale   T (kernel)
 *             dq = ds k                    T [BH, L, E]
 *             dk = ds^T q                  T [BH, S, E]
 *
 * Scratch: the forward BH * L * S floats (and as many elements of T when
 * T is not f32), the backward twice the floats, in the statement's scratch
 * that the memory plan places (raf_mem_scratch_of, ir/memplan.h), else
 * in the device's stream-ordered scratch (raf_cuda_scratch: no cuMemFree
 * after the launches, which would wait for the device). For GPT-2 124M
 * at B = 8,
 * T = 1024 (96 heads of 1024 x 1024) that is 384 MiB forward and 768 MiB
 * (plus 192 MiB of bf16) backward.
 * The causal products compute the masked half too (the softmax zeroes
 * it): simple, twice the work of FlashAttention's.
 */
#include "runtime/cuda/cublas_internal.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/kernels.h"

#include <math.h>

static const char *const fwd_names[3] = {"raf_attn_softmax_fwd_f32",
                                         "raf_attn_softmax_fwd_bf16",
                                         "raf_attn_softmax_fwd_f16"};
static const char *const bwd_names[3] = {"raf_attn_softmax_bwd_f32",
                                         "raf_attn_softmax_bwd_bf16",
                                         "raf_attn_softmax_bwd_f16"};

raf_status cublas_attention_load(cublas_state *st) {
  const char *ptx = raf_cuda_embedded_ptx("attention");
  if (!ptx) {
    raf_diag_report(st->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "cublas: this build has no attention.cu PTX");
    return RAF_ERROR;
  }
  if (raf_cuda_module_load(st->dev, ptx, "attention.cu", &st->attention) !=
      RAF_OK)
    return RAF_ERROR;
  for (int i = 0; i < 3; i++)
    if (raf_cuda_module_function(st->dev, st->attention, fwd_names[i],
                                 &st->softmax_fwd[i]) != RAF_OK ||
        raf_cuda_module_function(st->dev, st->attention, bwd_names[i],
                                 &st->softmax_bwd[i]) != RAF_OK)
      return RAF_ERROR;
  return RAF_OK;
}

/* The kernels' index of a dtype: f32, bf16, f16. */
static int dtype_index(raf_dtype dt) {
  return dt == RAF_BF16 ? 1 : dt == RAF_F16 ? 2 : 0;
}

/* The geometry of one call. */
typedef struct att_dims {
  raf_dtype dt;
  int64_t bh, L, S, E, Ev;
  float scale;
  int causal;
} att_dims;

static raf_status check(const raf_kernel *k, const raf_type *qt,
                        const raf_type *kt, const raf_type *vt,
                        att_dims *d) {
  int r = qt->rank;
  d->dt = qt->dtype;
  if (d->dt != RAF_F32 && d->dt != RAF_BF16 && d->dt != RAF_F16)
    return raf_kernel_fail(k, "cublas has no attention for %s",
                           raf_dtype_name(d->dt));
  d->L = qt->dims[r - 2];
  d->S = kt->dims[r - 2];
  d->E = qt->dims[r - 1];
  d->Ev = vt->dims[r - 1];
  d->bh = 1;
  for (int i = 0; i < r - 2; i++)
    d->bh *= qt->dims[i];
  d->causal = raf_stmt_attr_bool(k->stmt, "causal");
  raf_attr_value scale;
  d->scale = (float)(raf_stmt_attr(k->stmt, "scale", &scale)
                         ? scale.u.f
                         : 1.0 / sqrt((double)d->E));
  if (d->bh > INT32_MAX)
    return raf_kernel_fail(k, "cublas: more than 2^31 attention heads");
  return RAF_OK;
}

/* One block of RAF_CUDA_BLOCK threads per row, at most 2^20 blocks (each
 * strides over the rows). */
static raf_status launch_rows(cublas_state *st, CUfunction f,
                              const char *name, int64_t rows, void **params) {
  raf_cuda_dims dims = {.grid = {(unsigned)(rows < (1 << 20) ? rows
                                                             : (1 << 20)),
                                 1, 1},
                        .block = {RAF_CUDA_BLOCK, 1, 1}};
  return raf_cuda_launch(st->dev, f, name, &dims, params);
}

/* s = scale * q k^T, then the softmax into s (f32) and p (T). */
static raf_status scores(cublas_state *st, const raf_kernel *k,
                         const att_dims *d, const void *q, const void *kk,
                         float *s, void *p) {
  int64_t L = d->L, S = d->S, E = d->E, rows = d->bh * L;
  raf_status rc;
  if (E == 0)
    rc = raf_device_memset(st->dev, s, 0, (size_t)(rows * S) * sizeof(float));
  else
    rc = cublas_rowmajor(st, k, d->dt, RAF_F32, false, true, L, S, E, q, E,
                         L * E, kk, E, S * E, s, S, L * S, d->bh, d->scale,
                         0.0f);
  if (rc != RAF_OK)
    return rc;
  int i = dtype_index(d->dt);
  int64_t L_ = L, S_ = S;
  int causal = d->causal;
  void *params[] = {&s, &p, &rows, &L_, &S_, &causal};
  return launch_rows(st, st->softmax_fwd[i], fwd_names[i], rows, params);
}

/* The scratch parts of k (raf_mem_scratch_of's offsets) are at
 * base + offset - skip: its planned scratch (skip 0), else the device's
 * stream-ordered scratch (raf_cuda_scratch; no allocation freed after the
 * launches, which would wait for the whole device) holding the same
 * parts but for cuBLASLt's workspace at the start (skip: the dialect's
 * own workspace serves then). NULL after reporting. */
static char *scratch_base(cublas_state *st, const raf_kernel *k,
                          const raf_scratch *sc, int64_t *skip) {
  *skip = 0;
  if (k->scratch)
    return k->scratch;
  *skip = RAF_CUBLAS_WORKSPACE_BYTES;
  size_t bytes = (size_t)(sc->bytes - *skip);
  void *p = NULL;
  if (raf_cuda_scratch(st->dev, bytes, &p) != RAF_OK) {
    raf_kernel_fail(k, "out of device memory for the attention scores "
                       "(%zu MiB)",
                    bytes >> 20);
    return NULL;
  }
  return p;
}

/* Zeroes every result (no key to attend to). */
static raf_status zero_results(cublas_state *st, const raf_kernel *k) {
  for (int i = 0; i < k->nout; i++)
    if (k->out[i]->nbytes &&
        raf_device_memset(st->dev, k->out[i]->data, 0, k->out[i]->nbytes) !=
            RAF_OK)
      return RAF_ERROR;
  return RAF_OK;
}

raf_status cublas_attention(const raf_kernel *k) {
  cublas_state *st = cublas_state_of(k);
  if (!st || !st->attention)
    return raf_kernel_fail(k, "cublas: the dialect was not prepared");
  att_dims d;
  if (check(k, k->in[0]->type, k->in[1]->type, k->in[2]->type, &d) != RAF_OK)
    return RAF_ERROR;
  if (k->out[0]->type->numel == 0)
    return RAF_OK;
  if (d.S == 0)
    return zero_results(st, k);
  raf_scratch sc = raf_mem_scratch_of(k->stmt);
  int64_t skip;
  char *base = scratch_base(st, k, &sc, &skip);
  if (!base)
    return RAF_ERROR;
  float *s = (float *)(base + (sc.scores - skip));
  void *p = d.dt != RAF_F32 ? base + (sc.probs - skip) : (void *)s;
  raf_status rc = RAF_OK;
  if (rc == RAF_OK)
    rc = scores(st, k, &d, k->in[0]->data, k->in[1]->data, s, p);
  if (rc == RAF_OK)
    rc = cublas_rowmajor(st, k, d.dt, d.dt, false, false, d.L, d.Ev, d.S, p,
                         d.S, d.L * d.S, k->in[2]->data, d.Ev, d.S * d.Ev,
                         k->out[0]->data, d.Ev, d.L * d.Ev, d.bh, 1.0f, 0.0f);
  return rc;
}

raf_status cublas_attention_grad(const raf_kernel *k) {
  cublas_state *st = cublas_state_of(k);
  if (!st || !st->attention)
    return raf_kernel_fail(k, "cublas: the dialect was not prepared");
  att_dims d;
  if (check(k, k->in[1]->type, k->in[2]->type, k->in[3]->type, &d) != RAF_OK)
    return RAF_ERROR;
  const void *dy = k->in[0]->data, *q = k->in[1]->data, *kk = k->in[2]->data,
             *v = k->in[3]->data;
  void *dq = k->out[0]->data, *dk = k->out[1]->data, *dv = k->out[2]->data;
  if (d.bh == 0)
    return RAF_OK;
  if (d.S == 0 || d.L == 0)
    return zero_results(st, k);
  int64_t L = d.L, S = d.S, E = d.E, Ev = d.Ev, rows = d.bh * L;
  size_t n = (size_t)(rows * S);
  raf_scratch sc = raf_mem_scratch_of(k->stmt);
  int64_t skip;
  char *base = scratch_base(st, k, &sc, &skip);
  if (!base)
    return RAF_ERROR;
  float *s = (float *)(base + (sc.scores - skip));
  float *dp = (float *)(base + (sc.dscores - skip));
  void *p = d.dt != RAF_F32 ? base + (sc.probs - skip) : (void *)s;
  raf_status rc = RAF_OK;
  /* ds overwrites p (T) once dv is queued, or dp in place for f32 (the
   * kernel reads a row's dp whole before it writes it). */
  void *ds = d.dt == RAF_F32 ? (void *)dp : p;
  if (rc == RAF_OK)
    rc = scores(st, k, &d, q, kk, s, p);
  if (rc == RAF_OK && Ev > 0) /* dv = p^T dy */
    rc = cublas_rowmajor(st, k, d.dt, d.dt, true, false, S, Ev, L, p, S,
                         L * S, dy, Ev, L * Ev, dv, Ev, S * Ev, d.bh, 1.0f,
                         0.0f);
  if (rc == RAF_OK) /* dp = dy v^T */
    rc = Ev == 0 ? raf_device_memset(st->dev, dp, 0, n * sizeof(float))
                 : cublas_rowmajor(st, k, d.dt, RAF_F32, false, true, L, S,
                                   Ev, dy, Ev, L * Ev, v, Ev, S * Ev, dp, S,
                                   L * S, d.bh, 1.0f, 0.0f);
  if (rc == RAF_OK) {
    int i = dtype_index(d.dt);
    int64_t S_ = S;
    float scale = d.scale;
    void *params[] = {&s, &dp, &ds, &rows, &S_, &scale};
    rc = launch_rows(st, st->softmax_bwd[i], bwd_names[i], rows, params);
  }
  if (rc == RAF_OK && E > 0) /* dq = ds k */
    rc = cublas_rowmajor(st, k, d.dt, d.dt, false, false, L, E, S, ds, S,
                         L * S, kk, E, S * E, dq, E, L * E, d.bh, 1.0f, 0.0f);
  if (rc == RAF_OK && E > 0) /* dk = ds^T q */
    rc = cublas_rowmajor(st, k, d.dt, d.dt, true, false, S, E, L, ds, S,
                         L * S, q, E, L * E, dk, E, S * E, d.bh, 1.0f, 0.0f);
  return rc;
}
