/* linalg.c: cpu-ref kernels for matmul and scaled_dot_product_attention.
 *
 * matmul(a, b): a [batch_a.., M, K] (stored [.., K, M] with transpose_a),
 * b [batch_b.., K, N] (stored [.., N, K] with transpose_b), result
 * [batch.., M, N] where the batch dims broadcast as NumPy's matmul. Both
 * operands have rank >= 2 (infer_matmul admits no rank-1 operand).
 *
 * attention(q, k, v): q [batch.., Lq, D], k [batch.., Lk, D],
 * v [batch.., Lk, Dv], result [batch.., Lq, Dv] (the leading dims, heads
 * included, are equal: infer_attention does not broadcast them). The
 * result row of query i is softmax(scale * q_i . k_j over j) @ v, the
 * softmax made stable by subtracting the row's maximum. `causal` keeps the
 * keys j <= i: PyTorch's is_causal mask, a top-left aligned tril of an
 * Lq x Lk matrix (so with Lq > Lk the last queries see every key). `scale`
 * defaults to 1/sqrt(D).
 *
 * Numerics, in the working type of cpuref.h: f64 in double; f32, f16 and
 * bf16 in float throughout (f32 also accumulates in float; f16 and bf16
 * are rounded once, when stored); integers accumulate in int64 with
 * wrapping arithmetic, wrapped to the storage width on store, which equals
 * NumPy's and PyTorch's wrapping at every step since wrapping is a ring
 * homomorphism. Every sum runs in ascending index order within one row, and
 * rows are independent, so results do not depend on the thread count.
 *
 * Operands not already in the working type and layout are first converted
 * to contiguous working copies ([.., M, K] and [.., K, N] for matmul), so
 * the inner loops read rows. matmul's loop order is i-k-j over tiles of
 * output columns held on the stack.
 */
#include "runtime/cpuref/cpuref.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Output columns accumulated at once by matmul (on the stack). */
enum { TILE = 256 };
/* About this many multiply-adds per parallel chunk. */
#define CHUNK_WORK ((int64_t)1 << 18)

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }


/* x as a contiguous array of dtype `work` with x's last two dims swapped
 * (each matrix transposed), when `transposed`; else as
 * raf_cpuref_working_copy. The copy is stored in *owned for the caller to
 * free. */
static raf_status working_copy(const raf_kernel *k, const raf_tensor *x,
                               bool transposed, raf_dtype work,
                               const void **out, void **owned) {
  if (!transposed)
    return raf_cpuref_working_copy(k, x, work, out, owned);
  const raf_type *t = x->type;
  raf_dtype dt = t->dtype;
  size_t ws = (size_t)raf_dtype_size(work), size = (size_t)raf_dtype_size(dt);
  char *buf = malloc(t->numel ? (size_t)t->numel * ws : 1);
  *owned = NULL;
  if (!buf)
    return raf_kernel_fail(k, "out of memory for a working copy of %s",
                           raf_dtype_name(dt));
  /* Stored [.., rows, cols]; the copy is [.., cols, rows]. */
  int64_t rows = t->dims[t->rank - 2], cols = t->dims[t->rank - 1];
  int64_t mat = rows * cols, nmat = mat ? t->numel / mat : 0;
  const char *src = x->data;
  for (int64_t m = 0; m < nmat; m++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++)
        raf_elem_convert(work, buf + (size_t)(m * mat + j * rows + i) * ws, dt,
                         src + (size_t)(m * mat + i * cols + j) * size, 1);
  *out = *owned = buf;
  return RAF_OK;
}

/* ---- matmul --------------------------------------------------------------- */

typedef struct matmul_job {
  raf_dtype work;
  raf_tensor *out;
  const void *a, *b; /* working copies: a [batch_a.., M, K], b [.., K, N] */
  int64_t m, kdim, n;
  int batch_rank; /* of the result's batch dims */
  const int64_t *batch_dims;
  /* Per result batch dim, the stride (in elements) of a's and b's
   * matrices; 0 where that operand broadcasts. */
  int64_t a_stride[RAF_MAX_RANK], b_stride[RAF_MAX_RANK];
} matmul_job;

/* acc[0, nt) = row i of a times columns [c0, c0 + nt) of b, accumulated in
 * A (unsigned for the integers, so that overflow wraps). */
#define ROW_TILE(T, A)                                                         \
  do {                                                                         \
    const T *arow = (const T *)j->a + aoff + i * K;                            \
    const T *bcols = (const T *)j->b + boff + c0;                              \
    A *acc = (A *)accbuf;                                                      \
    for (int64_t c = 0; c < nt; c++)                                           \
      acc[c] = 0;                                                              \
    for (int64_t kk = 0; kk < K; kk++) {                                       \
      A x = (A)arow[kk];                                                       \
      const T *brow = bcols + kk * N;                                          \
      for (int64_t c = 0; c < nt; c++)                                         \
        acc[c] += x * (A)brow[c];                                              \
    }                                                                          \
  } while (0)

static void matmul_rows(void *data, int64_t begin, int64_t end) {
  const matmul_job *j = data;
  const int64_t K = j->kdim, N = j->n;
  raf_dtype out_dt = j->out->type->dtype;
  size_t osize = (size_t)raf_dtype_size(out_dt);
  _Alignas(64) char accbuf[TILE * 8];
  for (int64_t r = begin; r < end; r++) {
    int64_t batch = r / j->m, i = r % j->m, aoff = 0, boff = 0;
    for (int d = j->batch_rank - 1; d >= 0; d--) {
      int64_t idx = batch % j->batch_dims[d];
      batch /= j->batch_dims[d];
      aoff += idx * j->a_stride[d];
      boff += idx * j->b_stride[d];
    }
    char *orow = (char *)j->out->data + (size_t)(r * N) * osize;
    for (int64_t c0 = 0; c0 < N; c0 += TILE) {
      int64_t nt = min64(TILE, N - c0);
      if (j->work == RAF_F64)
        ROW_TILE(double, double);
      else if (j->work == RAF_F32)
        ROW_TILE(float, float);
      else
        ROW_TILE(int64_t, uint64_t);
      raf_elem_convert(out_dt, orow + (size_t)c0 * osize, j->work, accbuf, nt);
    }
  }
}

raf_status raf_cpuref_matmul(const raf_kernel *k) {
  const raf_tensor *a = k->in[0], *b = k->in[1];
  raf_tensor *out = k->out[0];
  const raf_type *ot = out->type;
  bool ta = raf_stmt_attr_bool(k->stmt, "transpose_a");
  bool tb = raf_stmt_attr_bool(k->stmt, "transpose_b");
  matmul_job j = {.work = raf_cpuref_work_dtype(a->type->dtype),
                  .out = out,
                  .m = ot->dims[ot->rank - 2],
                  .n = ot->dims[ot->rank - 1],
                  .kdim = a->type->dims[a->type->rank - 1 - ta],
                  .batch_rank = ot->rank - 2,
                  .batch_dims = ot->dims};
  if (ot->numel == 0)
    return RAF_OK;
  /* The working copies keep the operands' batch layout and matrix sizes,
   * so the storage's broadcast strides address them too. */
  int64_t strides[RAF_MAX_RANK];
  raf_broadcast_strides(a->type, ot, strides);
  for (int d = 0; d < j.batch_rank; d++)
    j.a_stride[d] = strides[d];
  raf_broadcast_strides(b->type, ot, strides);
  for (int d = 0; d < j.batch_rank; d++)
    j.b_stride[d] = strides[d];

  void *own_a = NULL, *own_b = NULL;
  raf_status rc = working_copy(k, a, ta, j.work, &j.a, &own_a);
  if (rc == RAF_OK)
    rc = working_copy(k, b, tb, j.work, &j.b, &own_b);
  if (rc == RAF_OK) {
    int64_t rows = ot->numel / j.n; /* batch x M */
    raf_kernel_parallel(k, rows, raf_cpuref_grain(CHUNK_WORK, j.kdim * j.n), matmul_rows, &j);
  }
  free(own_a);
  free(own_b);
  return rc;
}

/* ---- scaled_dot_product_attention ----------------------------------------- */

typedef struct attention_job {
  raf_dtype work;
  raf_tensor *out;
  const void *q, *k, *v; /* working copies, shaped as the operands */
  int64_t lq, lk, d, dv;
  bool causal;
  double scale;
  atomic_bool out_of_memory;
} attention_job;

/* Result row r (batch r / Lq, query i = r % Lq) in acc, from the scores
 * buffer p of Lk elements. */
#define ATTENTION_ROW(T, EXP)                                                  \
  do {                                                                         \
    const T *qrow = (const T *)j->q + r * D;                                   \
    const T *keys = (const T *)j->k + batch * Lk * D;                          \
    const T *vals = (const T *)j->v + batch * Lk * Dv;                         \
    T *p = (T *)scratch, *acc = p + Lk, scale = (T)j->scale;                   \
    T top = -(T)INFINITY, total = 0;                                           \
    for (int64_t key = 0; key < nkeys; key++) {                                \
      T s = 0;                                                                 \
      for (int64_t c = 0; c < D; c++)                                          \
        s += qrow[c] * keys[key * D + c];                                      \
      p[key] = s * scale;                                                      \
      if (p[key] > top)                                                        \
        top = p[key];                                                          \
    }                                                                          \
    for (int64_t key = 0; key < nkeys; key++) {                                \
      p[key] = EXP(p[key] - top);                                              \
      total += p[key];                                                         \
    }                                                                          \
    for (int64_t c = 0; c < Dv; c++)                                           \
      acc[c] = 0;                                                              \
    for (int64_t key = 0; key < nkeys; key++) {                                \
      T w = p[key] / total; /* softmax first, then @ v, as PyTorch */          \
      for (int64_t c = 0; c < Dv; c++)                                         \
        acc[c] += w * vals[key * Dv + c];                                      \
    }                                                                          \
  } while (0)

static void attention_rows(void *data, int64_t begin, int64_t end) {
  attention_job *j = data;
  const int64_t Lk = j->lk, D = j->d, Dv = j->dv;
  raf_dtype out_dt = j->out->type->dtype;
  size_t ws = (size_t)raf_dtype_size(j->work);
  size_t osize = (size_t)raf_dtype_size(out_dt);
  /* scores [Lk] then the result row [Dv], in the working type. */
  void *scratch = malloc((size_t)(Lk + Dv) * ws + 1);
  if (!scratch) {
    atomic_store(&j->out_of_memory, true);
    return;
  }
  for (int64_t r = begin; r < end; r++) {
    int64_t batch = r / j->lq, i = r % j->lq;
    /* Lk == 0 leaves no key: the row is an empty sum, zeros (PyTorch). */
    int64_t nkeys = j->causal ? min64(Lk, i + 1) : Lk;
    if (j->work == RAF_F64)
      ATTENTION_ROW(double, exp);
    else
      ATTENTION_ROW(float, expf);
    raf_elem_convert(out_dt, (char *)j->out->data + (size_t)(r * Dv) * osize,
                     j->work, (char *)scratch + (size_t)Lk * ws, Dv);
  }
  free(scratch);
}

raf_status raf_cpuref_attention(const raf_kernel *k) {
  const raf_type *qt = k->in[0]->type, *kt = k->in[1]->type,
                 *vt = k->in[2]->type;
  int r = qt->rank;
  attention_job j = {.work = raf_cpuref_work_dtype(qt->dtype),
                     .out = k->out[0],
                     .lq = qt->dims[r - 2],
                     .lk = kt->dims[r - 2],
                     .d = qt->dims[r - 1],
                     .dv = vt->dims[r - 1],
                     .causal = raf_stmt_attr_bool(k->stmt, "causal")};
  raf_attr_value scale;
  j.scale = raf_stmt_attr(k->stmt, "scale", &scale)
                ? scale.u.f
                : 1.0 / sqrt((double)j.d);
  atomic_init(&j.out_of_memory, false);
  if (k->out[0]->type->numel == 0)
    return RAF_OK;

  void *own[3] = {NULL, NULL, NULL};
  const void **copies[3] = {&j.q, &j.k, &j.v};
  raf_status rc = RAF_OK;
  for (int i = 0; i < 3 && rc == RAF_OK; i++)
    rc = working_copy(k, k->in[i], false, j.work, copies[i], &own[i]);
  if (rc == RAF_OK) {
    int64_t rows = k->out[0]->type->numel / j.dv; /* batch x Lq */
    raf_kernel_parallel(k, rows, raf_cpuref_grain(CHUNK_WORK, j.lk * (j.d + j.dv)),
                        attention_rows, &j);
    if (atomic_load(&j.out_of_memory))
      rc = raf_kernel_fail(k, "out of memory for the attention scores");
  }
  for (int i = 0; i < 3; i++)
    free(own[i]);
  return rc;
}
