/* cblas.c: the cblas dialect: matmul and scaled_dot_product_attention (and
 * its gradient) on OpenBLAS's gemm, and cross_entropy (and its gradient)
 * with vectorized float exponentials.
 *
 * matmul(a, b) in f64 (cblas_dgemm), f32 (cblas_sgemm), bf16 and f16, with both
 * transpose flags (passed to gemm as CblasTrans, so nothing is copied) and
 * NumPy-broadcast batch dims: gemms per result matrix, at the operands'
 * matrix offsets (an operand whose batch dim is 1 keeps offset 0 along
 * it). When b is shared by every batch and a is neither transposed nor
 * broadcast, the batch folds into the rows: one gemm of M' = batch * M,
 * which is what `x [B, S, D] @ w [D, F]` needs and is much faster than B
 * small gemms.
 *
 * Threads: OpenBLAS runs single-threaded (its own pool would spin in
 * sched_yield between calls, taking a core from the executor's threads),
 * and the kernels split their gemms into tasks that run on the executor's
 * threads through raf_kernel_parallel: a large matrix product into blocks
 * of result columns (or rows, when there are more rows than columns),
 * small ones grouped. The split depends on the shapes only, and every
 * block is a gemm over the whole of K, so the results are the same bits at
 * every thread count.
 *
 * bf16: OpenBLAS's cblas_sbgemm (bf16 operands, float accumulation and
 * result) when the library has it; Debian's 0.3.21 declares it in cblas.h
 * but is built without BUILD_BFLOAT16, so the symbol is a weak reference
 * that the kernel checks. Without it the operands widen to f32 (exactly)
 * and cblas_sgemm computes the same float products and sums. f16 always
 * widens (OpenBLAS has no f16 gemm). Either way the float result rounds to
 * bf16 or f16 to nearest even once, as cpu-ref does.
 *
 * scaled_dot_product_attention(q, k, v) and its gradient, f32, bf16 and
 * f16 (bf16 and f16 widened exactly to float scratch, the f32 algorithm,
 * each result rounded once to nearest even): per (batch,
 * head) matrix, in blocks of 64 query rows, S = scale * q k^T by sgemm (a
 * causal block only against the keys its last row sees), a stable softmax
 * per row (the row's maximum subtracted; exp by raf_vexpf, vmath.h; the
 * sum in double; masked keys 0), then out = P v by sgemm. The gradient
 * recomputes P block by block (as FlashAttention's backward) and takes
 * dv += P^T dy, dP = dy v^T, dS = P * (dP - rowsum(dP * P)) * scale,
 * dq = dS k, dk += dS^T q, each an sgemm; dk and dv add the blocks in
 * order. Semantics are cpu-ref's (linalg.c, grad.c: PyTorch's top-left
 * causal mask, zeros for a query without keys); the numerics are float
 * throughout, so results differ from cpu-ref's (double for the gradient)
 * by float rounding.
 *
 * cross_entropy(logits, labels) and cross_entropy_grad(dy, logits,
 * labels), f32: per row, the maximum, exp(x - max) by raf_vexpf and the
 * sum of the exponentials in double (eight partial sums in a fixed order);
 * the loss is log(sum) - (x[label] - max), the gradient exp(x - max) *
 * (g / sum) with its label element (p - 1) * g in double (g the row's dy,
 * or dy / counted for "mean"). Semantics are cpu-ref's (loss.c, grad.c):
 * ignore_index rows give 0 and do not count, a NaN in a row makes it NaN,
 * and a label out of range runs cpu-ref's kernel, which reports it.
 */
#include "runtime/cpuref/cpuref.h"
#include "runtime/dialects.h"
#include "runtime/exec.h"
#include "runtime/rowmath.h"
#include "runtime/vmath.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#pragma weak cblas_sbgemm

/* About this many multiply-adds per parallel task. */
#define TASK_WORK ((int64_t)1 << 24)
/* At most this many blocks per matrix product. */
#define MAX_BLOCKS 8
/* Query rows per attention block. */
#define ATT_ROWS 64

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static bool fits_blasint(int64_t v) { return v <= INT_MAX; }

const char *raf_cblas_better_core(void) {
  if (getenv("OPENBLAS_CORETYPE"))
    return NULL;
  const char *core = openblas_get_corename();
  if (!core || strcmp(core, "Prescott") != 0)
    return NULL;
  /* Not Cooperlake for AVX-512 BF16: OpenBLAS 0.3.21 does not find that
   * name, and Debian's has no bf16 gemm anyway. */
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") ? "SkylakeX"
         : __builtin_cpu_supports("avx2")  ? "Haswell"
                                           : NULL;
}

/* OpenBLAS's threads stay idle: the executor's threads run the gemms. */
static void blas_single_threaded(void) {
  if (openblas_get_num_threads() != 1)
    openblas_set_num_threads(1);
}

/* A gemm on row-major matrices, C = alpha op(A) op(B) + beta C, C [m, n]
 * with leading dimensions lda, ldb, ldc. */
typedef struct gemm_call {
  raf_dtype dt; /* of the buffers: RAF_F64, RAF_F32, or RAF_BF16 with C f32
                   (cblas_sbgemm) */
  bool ta, tb;
  int64_t m, n, k;
} gemm_call;

static void gemm_ld(const gemm_call *g, const void *a, int64_t lda,
                    const void *b, int64_t ldb, void *c, int64_t ldc,
                    double alpha, double beta) {
  enum CBLAS_TRANSPOSE ta = g->ta ? CblasTrans : CblasNoTrans;
  enum CBLAS_TRANSPOSE tb = g->tb ? CblasTrans : CblasNoTrans;
  blasint m = (blasint)g->m, n = (blasint)g->n, k = (blasint)g->k;
  blasint la = (blasint)lda, lb = (blasint)ldb, lc = (blasint)ldc;
  switch (g->dt) {
  case RAF_F64:
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, la, b, lb, beta, c,
                lc);
    break;
  case RAF_F32:
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, (float)alpha, a, la, b, lb,
                (float)beta, c, lc);
    break;
  default: /* RAF_BF16: the caller checked that cblas_sbgemm exists */
    cblas_sbgemm(CblasRowMajor, ta, tb, m, n, k, (float)alpha, a, la, b, lb,
                 (float)beta, c, lc);
    break;
  }
}

/* ---- matmul --------------------------------------------------------------- */

/* The gemms of a whole matmul as tasks: result matrix `batch`, block
 * `block` of its columns (split_n) or rows. */
typedef struct mm_job {
  gemm_call g;
  const char *a, *b;
  char *c;
  size_t asize, bsize, csize;
  int batch_rank;
  const int64_t *batch_dims;
  int64_t sa[RAF_MAX_RANK], sb[RAF_MAX_RANK]; /* matrix strides per dim */
  bool split_n;
  int64_t blk, nblk;
} mm_job;

static void mm_tasks(void *data, int64_t begin, int64_t end) {
  const mm_job *j = data;
  const gemm_call *g = &j->g;
  int64_t lda = g->ta ? g->m : g->k, ldb = g->tb ? g->k : g->n;
  for (int64_t t = begin; t < end; t++) {
    int64_t batch = t / j->nblk, bl = t % j->nblk;
    int64_t rest = batch, aoff = 0, boff = 0;
    for (int d = j->batch_rank - 1; d >= 0; d--) {
      int64_t idx = rest % j->batch_dims[d];
      rest /= j->batch_dims[d];
      aoff += idx * j->sa[d];
      boff += idx * j->sb[d];
    }
    const char *a = j->a + (size_t)aoff * j->asize;
    const char *b = j->b + (size_t)boff * j->bsize;
    char *c = j->c + (size_t)(batch * g->m * g->n) * j->csize;
    gemm_call sub = *g;
    if (j->split_n) {
      int64_t n0 = bl * j->blk;
      sub.n = min64(j->blk, g->n - n0);
      b += (size_t)(g->tb ? n0 * ldb : n0) * j->bsize;
      c += (size_t)n0 * j->csize;
    } else {
      int64_t m0 = bl * j->blk;
      sub.m = min64(j->blk, g->m - m0);
      a += (size_t)(g->ta ? m0 : m0 * lda) * j->asize;
      c += (size_t)(m0 * g->n) * j->csize;
    }
    gemm_ld(&sub, a, lda, b, ldb, c, g->n, 1.0, 0.0);
  }
}

/* Runs the gemms of the whole matmul: a, b and c hold elements of size
 * `size` (c's may differ: csize), laid out as the operand types say. */
static void batched_gemm(const raf_kernel *k, gemm_call g, const void *a,
                         size_t asize, const void *b, size_t bsize, void *c,
                         size_t csize) {
  const raf_type *at = k->in[0]->type, *bt = k->in[1]->type,
                 *ot = k->out[0]->type;
  mm_job j = {.a = a, .b = b, .c = c, .asize = asize, .bsize = bsize,
              .csize = csize, .batch_rank = ot->rank - 2,
              .batch_dims = ot->dims};
  int64_t nbatch = ot->numel / (g.m * g.n);
  raf_broadcast_strides(at, ot, j.sa);
  raf_broadcast_strides(bt, ot, j.sb);
  bool b_shared = true;
  for (int d = 0; d < j.batch_rank; d++)
    b_shared &= j.sb[d] == 0;
  if (nbatch > 1 && b_shared && !g.ta && at->numel == nbatch * g.m * g.k &&
      fits_blasint(nbatch * g.m)) {
    /* a [batch.., M, K] is one [batch * M, K] matrix. */
    g.m *= nbatch;
    nbatch = 1;
    j.batch_rank = 0;
  }
  j.g = g;
  /* Blocks of the larger of M and N, so that what each block packs again
   * (all of the other operand) is the smaller share; blocks of at least
   * 512 rows or columns (narrower ones repack the other operand more often,
   * and OpenBLAS's kernels slow down on narrow column blocks), but two
   * blocks of at least 64 when that is all there is. */
  int64_t work = g.m * g.n * g.k;
  j.split_n = g.n > g.m;
  int64_t dim = j.split_n ? g.n : g.m, least = 512;
  int64_t want = work / TASK_WORK, most = dim / least;
  if (most < 2 && dim >= 128)
    most = 2;
  want = want > MAX_BLOCKS ? MAX_BLOCKS : want;
  want = want > most ? most : want;
  want = want < 1 ? 1 : want;
  j.blk = (dim + want - 1) / want;
  if (want > 1)
    j.blk = (j.blk + 63) / 64 * 64;
  j.nblk = (dim + j.blk - 1) / j.blk;
  int64_t grain = 1;
  if (j.nblk == 1 && work < TASK_WORK)
    grain = TASK_WORK / (work + 1) + 1;
  raf_kernel_parallel(k, nbatch * j.nblk, grain, mm_tasks, &j);
}

/* ---- f16 and bf16: widened to f32 scratch, rounded once ----------------- */

/* bf16 <-> float by their bits, as raf_bf16_to_float and raf_float_to_bf16
 * (ir/module.c) compute them, written here so that the loops vectorize. */
static inline float bf16_bits_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t quiet = (x >> 16) | 0x40;             /* NaN: stays a NaN */
  uint32_t even = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
  return (uint16_t)((x & 0x7fffffff) > 0x7f800000 ? quiet : even);
}

/* dst[i] = src[i] widened exactly to float (dt is RAF_BF16 or RAF_F16). */
RAF_VEC_LOOP static void widen_to_f32(float *dst, raf_dtype dt,
                                      const uint16_t *src, int64_t n) {
  if (dt == RAF_BF16)
    for (int64_t i = 0; i < n; i++)
      dst[i] = bf16_bits_to_float(src[i]);
  else
    for (int64_t i = 0; i < n; i++)
      dst[i] = raf_half_to_float(src[i]);
}

/* dst[i] = src[i] rounded to nearest even into dt (RAF_BF16 or RAF_F16),
 * as cpu-ref rounds its float results. */
RAF_VEC_LOOP static void round_from_f32(uint16_t *dst, raf_dtype dt,
                                        const float *src, int64_t n) {
  if (dt == RAF_BF16)
    for (int64_t i = 0; i < n; i++)
      dst[i] = float_to_bf16_bits(src[i]);
  else
    for (int64_t i = 0; i < n; i++)
      dst[i] = raf_float_to_half(src[i]);
}

/* Elements per conversion task: each element is converted alone, so the
 * split changes no bits. */
enum { CONVERT_GRAIN = 1 << 16 };

typedef struct convert_job {
  raf_dtype dt; /* RAF_BF16 or RAF_F16 */
  bool widen;   /* half -> float, else float -> half */
  float *f;
  uint16_t *h;
} convert_job;

static void convert_range(void *data, int64_t begin, int64_t end) {
  const convert_job *j = data;
  if (j->widen)
    widen_to_f32(j->f + begin, j->dt, j->h + begin, end - begin);
  else
    round_from_f32(j->h + begin, j->dt, j->f + begin, end - begin);
}

/* The conversions on the executor's threads. */
static void convert(const raf_kernel *k, raf_dtype dt, bool widen, float *f,
                    uint16_t *h, int64_t n) {
  convert_job j = {dt, widen, f, h};
  raf_kernel_parallel(k, n, CONVERT_GRAIN, convert_range, &j);
}

static bool is_half(raf_dtype dt) { return dt == RAF_BF16 || dt == RAF_F16; }

/* A float copy of a bf16 or f16 tensor (at least one element, so that an
 * empty tensor still gets a buffer); NULL when out of memory. */
static float *widened_copy(const raf_kernel *k, const raf_tensor *t) {
  int64_t n = t->type->numel;
  float *w = malloc((size_t)(n ? n : 1) * sizeof *w);
  if (w)
    convert(k, t->type->dtype, true, w, t->data, n);
  return w;
}

/* bf16 and f16: the float result in a scratch buffer, rounded into the
 * output once. bf16 operands go to cblas_sbgemm when the library has it;
 * otherwise (and always for f16, which OpenBLAS has no gemm for) they
 * widen exactly to f32 for cblas_sgemm, which computes the same float
 * products and sums. */
static raf_status matmul_half(const raf_kernel *k, gemm_call g) {
  const raf_tensor *a = k->in[0], *b = k->in[1];
  raf_tensor *out = k->out[0];
  raf_dtype dt = a->type->dtype;
  float *c = malloc((size_t)out->type->numel * sizeof *c);
  float *wa = NULL, *wb = NULL;
  bool widen = dt == RAF_F16 || !cblas_sbgemm;
  if (c && widen) {
    wa = widened_copy(k, a);
    wb = widened_copy(k, b);
  }
  raf_status rc = RAF_OK;
  if (!c || (widen && (!wa || !wb))) {
    rc = raf_kernel_fail(k, "out of memory for the %s working buffers",
                         raf_dtype_name(dt));
  } else if (widen) {
    g.dt = RAF_F32;
    batched_gemm(k, g, wa, sizeof *wa, wb, sizeof *wb, c, sizeof *c);
  } else {
    batched_gemm(k, g, a->data, 2, b->data, 2, c, sizeof *c);
  }
  if (rc == RAF_OK)
    convert(k, dt, false, c, out->data, out->type->numel);
  free(c);
  free(wa);
  free(wb);
  return rc;
}

static raf_status cblas_matmul(const raf_kernel *k) {
  const raf_type *at = k->in[0]->type, *ot = k->out[0]->type;
  raf_dtype dt = at->dtype;
  gemm_call g = {.dt = dt,
                 .ta = raf_stmt_attr_bool(k->stmt, "transpose_a"),
                 .tb = raf_stmt_attr_bool(k->stmt, "transpose_b"),
                 .m = ot->dims[ot->rank - 2],
                 .n = ot->dims[ot->rank - 1]};
  g.k = at->dims[at->rank - 1 - g.ta];
  if (dt != RAF_F64 && dt != RAF_F32 && !is_half(dt))
    return raf_kernel_fail(k, "cblas has no matmul for %s",
                           raf_dtype_name(dt));
  if (ot->numel == 0)
    return RAF_OK;
  if (g.k == 0) { /* an empty sum; gemm wants lda >= 1 */
    memset(k->out[0]->data, 0, k->out[0]->nbytes);
    return RAF_OK;
  }
  if (!fits_blasint(g.m) || !fits_blasint(g.n) || !fits_blasint(g.k))
    return raf_kernel_fail(k, "matrix dimensions exceed the BLAS integer "
                           "(%lld x %lld x %lld)", (long long)g.m,
                           (long long)g.k, (long long)g.n);
  blas_single_threaded();
  if (is_half(dt))
    return matmul_half(k, g);
  size_t size = (size_t)raf_dtype_size(dt);
  batched_gemm(k, g, k->in[0]->data, size, k->in[1]->data, size,
               k->out[0]->data, size);
  return RAF_OK;
}

/* ---- Row helpers: vectorized (vmath.h), sums in a fixed order ----------- */

/* Classes per chunk of a row's exponentials (on the stack). */
enum { CE_CHUNK = 2048 };

/* e[c] = exp(x[c] - top) for c < n, and their sum in double (as
 * raf_lanes_add sums, rowmath.h). */
RAF_VEC_LOOP static double exp_sum(const float *x, float *e, int64_t n,
                                 float top) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t e0 = 0; e0 < n; e0 += CE_CHUNK) { /* CE_CHUNK % 8 == 0 */
    int64_t w = min64(CE_CHUNK, n - e0);
    float *out = e + e0;
    const float *in = x + e0;
    for (int64_t c = 0; c < w; c++)
      out[c] = raf_vexpf(in[c] - top);
    raf_lanes_add(acc, out, w);
  }
  return raf_lanes_total(acc);
}

/* ---- scaled_dot_product_attention and its gradient ----------------------- */

typedef struct att_job {
  raf_dtype dt; /* of every operand and result: f32, bf16 or f16 */
  const void *q, *k, *v, *dy;
  void *out, *dq, *dk, *dv; /* out for the forward, dq dk dv backward */
  int64_t lq, lk, d, dv_;
  bool causal;
  float scale;
  atomic_bool out_of_memory;
} att_job;

/* sgemm C [m, n] = alpha op(A) op(B) + beta C; an empty sum (k = 0) scales
 * C by beta. */
static void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  float alpha, const float *a, int64_t lda, const float *b,
                  int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t e = 0; e < n; e++)
        c[i * ldc + e] = beta == 0 ? 0 : c[i * ldc + e] * beta;
    return;
  }
  gemm_call g = {RAF_F32, ta, tb, m, n, k};
  gemm_ld(&g, a, lda, b, ldb, c, ldc, alpha, beta);
}

/* The keys query row i sees. */
static int64_t keys_of(const att_job *j, int64_t i) {
  return j->causal ? min64(j->lk, i + 1) : j->lk;
}

/* Scores of query rows [i0, i0 + rows) against keys [0, kmax) into s
 * [rows, kmax], made into the softmax rows P (zeros past a row's keys). */
static void probabilities(const att_job *j, const float *q, const float *k,
                          int64_t i0, int64_t rows, int64_t kmax, float *s) {
  const int64_t D = j->d;
  sgemm(false, true, rows, kmax, D, j->scale, q + i0 * D, D, k, D, 0.0f, s,
        kmax);
  for (int64_t r = 0; r < rows; r++) {
    float *row = s + r * kmax;
    int64_t nk = keys_of(j, i0 + r);
    if (nk > 0) {
      double total = raf_row_exp_sum_inplace(row, nk, raf_row_max(row, nk));
      raf_row_scale(row, nk, (float)(1 / total));
    }
    for (int64_t e = nk; e < kmax; e++)
      row[e] = 0;
  }
}

/* The key rows block [i0, i0 + rows) reaches. */
static int64_t block_keys(const att_job *j, int64_t i0, int64_t rows) {
  return j->causal ? min64(j->lk, i0 + rows) : j->lk;
}

/* Matrix `index` (n elements each) of a tensor at base, as floats: the
 * tensor's own in f32; bf16 and f16 widened exactly into scratch. */
static const float *item_in(const att_job *j, const void *base, int64_t index,
                            int64_t n, float *scratch) {
  if (j->dt == RAF_F32)
    return (const float *)base + index * n;
  widen_to_f32(scratch, j->dt, (const uint16_t *)base + index * n, n);
  return scratch;
}

/* Where matrix `index` of a result is computed in float: in place in f32,
 * else in scratch, which item_store rounds into the result once. */
static float *item_out(const att_job *j, void *base, int64_t index, int64_t n,
                       float *scratch) {
  return j->dt == RAF_F32 ? (float *)base + index * n : scratch;
}

static void item_store(const att_job *j, void *base, int64_t index, int64_t n,
                       const float *scratch) {
  if (j->dt != RAF_F32)
    round_from_f32((uint16_t *)base + index * n, j->dt, scratch, n);
}

/* A task's float buffers: `floats` of working space, and in bf16 or f16
 * the `halves` floats of the widened matrices of one (batch, head); NULL
 * (the job marked out of memory) when there is no memory. */
static float *task_buffers(att_job *j, int64_t floats, int64_t halves) {
  int64_t n = floats + (j->dt == RAF_F32 ? 0 : halves) + 1;
  float *buf = malloc((size_t)n * sizeof *buf);
  if (!buf)
    atomic_store(&j->out_of_memory, true);
  return buf;
}

static void att_forward_items(void *data, int64_t begin, int64_t end) {
  att_job *j = data;
  const int64_t Lq = j->lq, Lk = j->lk, D = j->d, Dv = j->dv_;
  int64_t rb = Lq ? min64(Lq, ATT_ROWS) : 1;
  float *s = task_buffers(j, rb * Lk, Lq * D + Lk * D + Lk * Dv + Lq * Dv);
  if (!s)
    return;
  float *wq = s + rb * Lk, *wk = wq + Lq * D, *wv = wk + Lk * D,
        *wo = wv + Lk * Dv;
  for (int64_t bh = begin; bh < end; bh++) {
    const float *q = item_in(j, j->q, bh, Lq * D, wq),
                *k = item_in(j, j->k, bh, Lk * D, wk),
                *v = item_in(j, j->v, bh, Lk * Dv, wv);
    float *o = item_out(j, j->out, bh, Lq * Dv, wo);
    for (int64_t i0 = 0; i0 < Lq; i0 += rb) {
      int64_t rows = min64(rb, Lq - i0), kmax = block_keys(j, i0, rows);
      probabilities(j, q, k, i0, rows, kmax, s);
      sgemm(false, false, rows, Dv, kmax, 1.0f, s, kmax, v, Dv, 0.0f,
            o + i0 * Dv, Dv);
    }
    item_store(j, j->out, bh, Lq * Dv, o);
  }
  free(s);
}

static void att_backward_items(void *data, int64_t begin, int64_t end) {
  att_job *j = data;
  const int64_t Lq = j->lq, Lk = j->lk, D = j->d, Dv = j->dv_;
  int64_t rb = Lq ? min64(Lq, ATT_ROWS) : 1;
  float *p = task_buffers(j, 2 * rb * Lk,
                          2 * (Lq * D + Lk * D + Lk * Dv) + Lq * Dv);
  if (!p)
    return;
  float *ds = p + rb * Lk;
  float *wq = ds + rb * Lk, *wk = wq + Lq * D, *wv = wk + Lk * D,
        *wdy = wv + Lk * Dv, *wdq = wdy + Lq * Dv, *wdk = wdq + Lq * D,
        *wdv = wdk + Lk * D;
  for (int64_t bh = begin; bh < end; bh++) {
    const float *q = item_in(j, j->q, bh, Lq * D, wq),
                *k = item_in(j, j->k, bh, Lk * D, wk),
                *v = item_in(j, j->v, bh, Lk * Dv, wv),
                *dy = item_in(j, j->dy, bh, Lq * Dv, wdy);
    float *dq = item_out(j, j->dq, bh, Lq * D, wdq),
          *dk = item_out(j, j->dk, bh, Lk * D, wdk),
          *dv = item_out(j, j->dv, bh, Lk * Dv, wdv);
    memset(dk, 0, (size_t)(Lk * D) * sizeof *dk);
    memset(dv, 0, (size_t)(Lk * Dv) * sizeof *dv);
    for (int64_t i0 = 0; i0 < Lq; i0 += rb) {
      int64_t rows = min64(rb, Lq - i0), kmax = block_keys(j, i0, rows);
      if (kmax == 0) { /* no keys: the rows' dq is an empty sum */
        memset(dq + i0 * D, 0, (size_t)(rows * D) * sizeof *dq);
        continue;
      }
      probabilities(j, q, k, i0, rows, kmax, p);
      /* dv[0, kmax) += P^T dy; dP = dy v^T. */
      sgemm(true, false, kmax, Dv, rows, 1.0f, p, kmax, dy + i0 * Dv, Dv,
            1.0f, dv, Dv);
      sgemm(false, true, rows, kmax, Dv, 1.0f, dy + i0 * Dv, Dv, v, Dv, 0.0f,
            ds, kmax);
      for (int64_t r = 0; r < rows; r++) {
        const float *pr = p + r * kmax;
        float *dr = ds + r * kmax;
        int64_t nk = keys_of(j, i0 + r);
        raf_row_softmax_backward(dr, pr, nk, (float)raf_row_dot(dr, pr, nk),
                             j->scale);
        for (int64_t e = nk; e < kmax; e++)
          dr[e] = 0;
      }
      /* dq = dS k; dk[0, kmax) += dS^T q. */
      sgemm(false, false, rows, D, kmax, 1.0f, ds, kmax, k, D, 0.0f,
            dq + i0 * D, D);
      sgemm(true, false, kmax, D, rows, 1.0f, ds, kmax, q + i0 * D, D, 1.0f,
            dk, D);
    }
    item_store(j, j->dq, bh, Lq * D, dq);
    item_store(j, j->dk, bh, Lk * D, dk);
    item_store(j, j->dv, bh, Lk * Dv, dv);
  }
  free(p);
}

static raf_status attention_common(const raf_kernel *k, att_job *j,
                                   const raf_type *qt, const raf_type *kt,
                                   const raf_type *vt, bool backward) {
  int r = qt->rank;
  j->lq = qt->dims[r - 2];
  j->lk = kt->dims[r - 2];
  j->d = qt->dims[r - 1];
  j->dv_ = vt->dims[r - 1];
  j->causal = raf_stmt_attr_bool(k->stmt, "causal");
  raf_attr_value scale;
  j->scale = (float)(raf_stmt_attr(k->stmt, "scale", &scale)
                         ? scale.u.f
                         : 1.0 / sqrt((double)j->d));
  atomic_init(&j->out_of_memory, false);
  if (!fits_blasint(j->lq) || !fits_blasint(j->lk) || !fits_blasint(j->d) ||
      !fits_blasint(j->dv_))
    return raf_kernel_fail(k, "attention dimensions exceed the BLAS integer");
  int64_t items = 1;
  for (int d = 0; d < r - 2; d++)
    items *= qt->dims[d];
  if (items == 0)
    return RAF_OK;
  blas_single_threaded();
  int64_t work = j->lq * j->lk * (j->d + j->dv_) * (backward ? 3 : 1) + 1;
  int64_t grain = work >= TASK_WORK ? 1 : TASK_WORK / work + 1;
  raf_kernel_parallel(k, items, grain,
                      backward ? att_backward_items : att_forward_items, j);
  if (atomic_load(&j->out_of_memory))
    return raf_kernel_fail(k, "out of memory for the attention scores");
  return RAF_OK;
}

/* bf16 and f16 run the f32 algorithm on each (batch, head)'s matrices
 * widened exactly to float, each result rounded once to nearest even
 * (cpu-ref, too, rounds its results once), instead of leaving them to the
 * reference's double kernels. */
static raf_status check_attention_dtype(const raf_kernel *k, raf_dtype dt) {
  if (dt == RAF_F32 || is_half(dt))
    return RAF_OK;
  return raf_kernel_fail(k, "cblas has no attention for %s",
                         raf_dtype_name(dt));
}

static raf_status cblas_attention(const raf_kernel *k) {
  att_job j = {.dt = k->in[0]->type->dtype, .q = k->in[0]->data,
               .k = k->in[1]->data, .v = k->in[2]->data,
               .out = k->out[0]->data};
  if (check_attention_dtype(k, j.dt) != RAF_OK)
    return RAF_ERROR;
  return attention_common(k, &j, k->in[0]->type, k->in[1]->type,
                          k->in[2]->type, false);
}

static raf_status cblas_attention_grad(const raf_kernel *k) {
  att_job j = {.dt = k->in[1]->type->dtype, .dy = k->in[0]->data,
               .q = k->in[1]->data, .k = k->in[2]->data,
               .v = k->in[3]->data, .dq = k->out[0]->data,
               .dk = k->out[1]->data, .dv = k->out[2]->data};
  if (check_attention_dtype(k, j.dt) != RAF_OK)
    return RAF_ERROR;
  return attention_common(k, &j, k->in[1]->type, k->in[2]->type,
                          k->in[3]->type, true);
}

/* ---- cross_entropy and its gradient (f32) -------------------------------- */

typedef struct ce_job {
  const float *x;
  const raf_tensor *labels;
  int64_t classes, ignore;
  double *loss;       /* forward: per row */
  const float *dy;    /* backward: dy[r] ("none"), or NULL */
  double scale;       /* backward: the factor of every row otherwise */
  float *dx;
} ce_job;

static void ce_rows(void *data, int64_t begin, int64_t end) {
  const ce_job *j = data;
  const int64_t C = j->classes;
  float e[CE_CHUNK];
  for (int64_t r = begin; r < end; r++) {
    int64_t label = raf_elem_get_i64(j->labels->type->dtype,
                                     j->labels->data, r);
    if (label == j->ignore) {
      j->loss[r] = 0;
      continue;
    }
    const float *x = j->x + r * C;
    float top = raf_row_max(x, C);
    double total = 0;
    for (int64_t c0 = 0; c0 < C; c0 += CE_CHUNK)
      total += exp_sum(x + c0, e, min64(CE_CHUNK, C - c0), top);
    j->loss[r] = log(total) - ((double)x[label] - (double)top);
  }
}

static void ce_grad_rows(void *data, int64_t begin, int64_t end) {
  const ce_job *j = data;
  const int64_t C = j->classes;
  for (int64_t r = begin; r < end; r++) {
    int64_t label = raf_elem_get_i64(j->labels->type->dtype,
                                     j->labels->data, r);
    float *dx = j->dx + r * C;
    if (label == j->ignore) {
      memset(dx, 0, (size_t)C * sizeof *dx);
      continue;
    }
    const float *x = j->x + r * C;
    double g = j->dy ? (double)j->dy[r] : j->scale;
    float top = raf_row_max(x, C);
    double total = exp_sum(x, dx, C, top);
    double p = (double)dx[label] / total;
    raf_row_scale(dx, C, (float)(g / total));
    dx[label] = (float)((p - 1) * g);
  }
}

/* The labels' count (not ignored), or -1 when one is out of range: then
 * the reference kernel runs, to report it as it does. */
static int64_t count_labels(const raf_tensor *labels, int64_t classes,
                            int64_t ignore) {
  int64_t counted = 0;
  for (int64_t r = 0; r < labels->type->numel; r++) {
    int64_t label = raf_elem_get_i64(labels->type->dtype, labels->data, r);
    if (label == ignore)
      continue;
    if (label < 0 || label >= classes)
      return -1;
    counted++;
  }
  return counted;
}

static raf_status cblas_cross_entropy(const raf_kernel *k) {
  const raf_tensor *logits = k->in[0], *labels = k->in[1];
  raf_tensor *out = k->out[0];
  const raf_type *lt = logits->type;
  ce_job j = {.x = logits->data, .labels = labels,
              .classes = lt->dims[lt->rank - 1],
              .ignore = raf_stmt_attr_int(k->stmt, "ignore_index")};
  int64_t counted = count_labels(labels, j.classes, j.ignore);
  if (lt->dtype != RAF_F32 || out->type->dtype != RAF_F32 || counted < 0)
    return raf_cpuref_cross_entropy(k);
  int64_t rows = labels->type->numel;
  j.loss = malloc((size_t)rows * sizeof *j.loss + 1);
  if (!j.loss)
    return raf_kernel_fail(k, "out of memory for the per-row losses");
  raf_kernel_parallel(k, rows, (1 << 17) / (j.classes + 1) + 1, ce_rows, &j);
  const char *red = raf_stmt_attr_str(k->stmt, "reduction");
  float *y = out->data;
  if (strcmp(red, "none") == 0) {
    for (int64_t r = 0; r < rows; r++)
      y[r] = (float)j.loss[r];
  } else {
    double total = 0;
    for (int64_t r = 0; r < rows; r++)
      total += j.loss[r];
    if (strcmp(red, "mean") == 0)
      total = counted ? total / (double)counted : NAN; /* all ignored */
    y[0] = (float)total;
  }
  free(j.loss);
  return RAF_OK;
}

static raf_status cblas_cross_entropy_grad(const raf_kernel *k) {
  const raf_tensor *dy = k->in[0], *logits = k->in[1], *labels = k->in[2];
  raf_tensor *out = k->out[0];
  const raf_type *lt = logits->type;
  ce_job j = {.x = logits->data, .labels = labels, .dx = out->data,
              .classes = lt->dims[lt->rank - 1],
              .ignore = raf_stmt_attr_int(k->stmt, "ignore_index")};
  int64_t counted = count_labels(labels, j.classes, j.ignore);
  if (lt->dtype != RAF_F32 || dy->type->dtype != RAF_F32 ||
      out->type->dtype != RAF_F32 || counted < 0)
    return raf_cpuref_cross_entropy_grad(k);
  const char *red = raf_stmt_attr_str(k->stmt, "reduction");
  const float *g = dy->data;
  if (strcmp(red, "none") == 0)
    j.dy = g;
  else
    j.scale = strcmp(red, "mean") == 0 ? (double)g[0] / (double)counted
                                       : (double)g[0];
  raf_kernel_parallel(k, labels->type->numel,
                      (1 << 17) / (j.classes + 1) + 1, ce_grad_rows, &j);
  return RAF_OK;
}

const raf_kernel_fn raf_cblas_kernels[RAF_OP_COUNT] = {
    [RAF_OP_MATMUL] = cblas_matmul,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION] = cblas_attention,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD] = cblas_attention_grad,
    [RAF_OP_CROSS_ENTROPY] = cblas_cross_entropy,
    [RAF_OP_CROSS_ENTROPY_GRAD] = cblas_cross_entropy_grad,
};
