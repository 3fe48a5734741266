/* onednn.c: the onednn dialect: bf16 matmul and scaled_dot_product_attention
 * (and its gradient) on oneDNN's matrix products (AMX and AVX-512 BF16
 * where the CPU has them).
 *
 * Why: the amp pass leaves the matrix products of a training step in bf16.
 * Debian's OpenBLAS has no bf16 gemm, so the cblas dialect widens bf16 to
 * f32 and runs at sgemm's speed; oneDNN's brgemm kernels multiply bf16
 * tiles on AMX at about five times that rate (Sapphire Rapids, two cores).
 *
 * matmul: semantics are cblas's and cpu-ref's: rank >= 2, transpose_a and
 * transpose_b, NumPy-broadcast batch dims. The operands are bf16, the
 * products are summed in f32 and each result is rounded to bf16 once, to
 * nearest even (oneDNN's store). The sums run in oneDNN's order, and AMX
 * reads bf16 denormals as zero, so results differ from cpu-ref's (which
 * rounds a double sum) by bf16 rounding, like cblas's.
 *
 * scaled_dot_product_attention and its gradient, bf16: cblas.c's
 * algorithm and semantics (PyTorch's top-left causal mask, zeros for a
 * query without keys) on oneDNN products: per (batch, head), in blocks of
 * 64 query rows, S = q k^T with f32 results (a causal block only against
 * the keys its last row sees), times the scale, a stable softmax per row
 * in f32 (exp by raf_vexpf, vmath.h; the sum in double), P rounded to
 * bf16, out = P v (f32 sums, rounded once). The gradient recomputes P per
 * block and takes dv += P^T dy and dP = dy v^T in f32, dS = P * (dP -
 * rowsum(dP * P)) * scale in f32, rounded to bf16, dq = dS k (rounded
 * once) and dk += dS^T q in f32 (oneDNN's sum post-op); dk and dv round
 * once at the end. P and dS are rounded to bf16 for their products, as
 * bf16 FlashAttention does, so results differ from cblas's (float P) by
 * about bf16's rounding.
 *
 * f16: oneDNN 2.6 (Debian 12's) has no f16 matmul on the CPU, even with
 * avx512_fp16 (creating the primitive answers "unimplemented"), so f16
 * stays with cblas; the IMPL row of lang/dialects.def says bf16.
 *
 * Plans: creating a oneDNN primitive compiles a kernel (milliseconds),
 * and a training step calls the same shapes every step. So the bind hook,
 * once per statement at raf_exec_create, makes the statement's plan: its
 * split into tasks and the primitives of its block shapes (an attention's:
 * every block's products), taken from a cache keyed by (transposes, M, N,
 * K, result dtype, accumulated or not) in the executor's state for this
 * dialect, which the statements of a step share (GPT-2's 12 layers have
 * a handful of shapes). The kernel only reads the plan; release frees it
 * all with the state.
 *
 * Threads: Debian's oneDNN runs on OpenMP (libgomp). Left alone, oneDNN
 * inside each executor thread would start an OpenMP team of its own, one
 * thread per CPU, on top of the executor's threads, and libgomp's workers
 * spin for a while after every parallel region, taking cores from the
 * executor's next kernel. So oneDNN runs single-threaded (the calling
 * thread's OpenMP thread count is set to 1 around every primitive's
 * creation and execution, and restored after), and the kernel splits the
 * product into blocks of result rows, which run on the executor's threads
 * through raf_kernel_parallel, as cblas.c does with OpenBLAS. Rows, not
 * columns: oneDNN 2.6's brgemm takes only dense matrices, and a block of
 * C's rows is dense (and so is A's block, untransposed), where a block of
 * columns is strided and would fall back to oneDNN's gemm:jit at about
 * half the speed. A transposed A's block (columns of the stored matrix)
 * is packed into dense scratch first. The split depends on the shapes
 * only and every block is a product over the whole of K, so the results
 * are the same bits at every thread count.
 *
 * Scratchpad: oneDNN's own ("library" mode) may only run a primitive on
 * the thread that created it, and tasks run on any executor thread, so
 * the primitives take scratch memory from their caller ("user" mode):
 * each task allocates its own.
 *
 * Built without oneDNN (CMake did not find libdnnl-dev, or RAF_ONEDNN=OFF),
 * the dialect keeps its kernels, which fail saying why, and its prepare
 * hook refuses a module that asks for it; raf_dialect_unavailable says
 * why, so raf-run leaves it out of its default dialects.
 */
#include "runtime/onednn.h"

#include "runtime/dialects.h"

#include <stdlib.h>
#include <string.h>

static bool wants_onednn(const raf_stmt *s) {
  const char *d = raf_stmt_attr_str(s, "dialect");
  return d && strcmp(d, "onednn") == 0;
}

/* The first statement of m annotated with this dialect, or NULL. */
static const raf_stmt *first_onednn_stmt(const raf_module *m) {
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (wants_onednn(s))
        return s;
  return NULL;
}

#ifndef RAF_HAVE_ONEDNN

const char *const raf_onednn_unavailable =
    "this build of raf has no oneDNN (dnnl.h and libdnnl were not found "
    "when it was configured, or RAF_ONEDNN was OFF; install libdnnl-dev and "
    "configure again)";

static raf_status onednn_missing(const raf_kernel *k) {
  return raf_kernel_fail(k, "dialect onednn: %s", raf_onednn_unavailable);
}

static raf_status onednn_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                                 void **state) {
  (void)ex;
  *state = NULL;
  const raf_stmt *s = first_onednn_stmt(m);
  if (!s)
    return RAF_OK;
  raf_diag_report(ctx, s->loc, RAF_SEV_ERROR, "%s: dialect onednn: %s",
                  raf_op_table[s->op].name, raf_onednn_unavailable);
  return RAF_ERROR;
}

const raf_dialect_hooks raf_onednn_hooks = {.prepare = onednn_prepare};

int raf_onednn_primitives(const raf_exec *ex) {
  (void)ex;
  return 0;
}

const raf_kernel_fn raf_onednn_kernels[RAF_OP_COUNT] = {
    [RAF_OP_MATMUL] = onednn_missing,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION] = onednn_missing,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD] = onednn_missing,
};

#else /* RAF_HAVE_ONEDNN */

#include "runtime/vmath.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>

/* libgomp's, which Debian's oneDNN runs on (declared here: not every
 * compiler ships an omp.h). */
int omp_get_max_threads(void);
void omp_set_num_threads(int);

const char *const raf_onednn_unavailable = NULL;

/* About this many multiply-adds per row block; at most MAX_BLOCKS blocks
 * of at least ROW_BLOCK_MIN rows (each block repacks all of B, so blocks
 * stay large). */
#define TASK_WORK ((int64_t)1 << 27)
enum { MAX_BLOCKS = 8, ROW_BLOCK_MIN = 256, ROW_BLOCK_ALIGN = 32 };
/* Small products are grouped into tasks of about this many. */
#define GROUP_WORK ((int64_t)1 << 22)

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The calling thread's OpenMP threads set to one; returns the count to
 * restore. */
static int openmp_single(void) {
  int threads = omp_get_max_threads();
  if (threads != 1)
    omp_set_num_threads(1);
  return threads;
}

static void openmp_restore(int threads) {
  if (threads != 1)
    omp_set_num_threads(threads);
}

/* A matrix product C [m, n] = op(A) op(B) of dense bf16 matrices into a
 * dense C: bf16 (each sum rounded once), or f32 (f32_out), or f32 with
 * the product added to what C holds (accumulate). */
typedef struct prim {
  bool ta, tb, f32_out, accumulate;
  int64_t m, n, k;
  dnnl_primitive_t p;
  dnnl_memory_desc_t a, b, c, scratch;
  size_t scratch_bytes;
} prim;

/* A matmul statement's plan: per result matrix (`nbatch` of them, at the
 * operands' broadcast offsets), blocks of `blk` result rows. */
typedef struct mm_plan {
  bool ta, tb;
  int64_t m, n, k;
  int64_t nbatch;
  int batch_rank;
  int64_t batch_dims[RAF_MAX_RANK];
  int64_t sa[RAF_MAX_RANK], sb[RAF_MAX_RANK]; /* batch strides, elements */
  int64_t blk, nblk, grain;
  const prim *full; /* a block of blk rows (or all of m) */
  const prim *last; /* the shorter last block, or NULL */
  char why[256];    /* non-empty: no plan, the kernel reports this */
} mm_plan;

/* A block of an attention's query rows, [i0, i0 + rows), against the keys
 * [0, kmax) it sees, and the products of its steps (NULL when kmax is 0):
 *   forward   S = q k^T (f32), out = P v (bf16)
 *   backward  S, dv += P^T dy (f32), dP = dy v^T (f32), dq = dS k (bf16),
 *             dk += dS^T q (f32) */
typedef struct att_block {
  int64_t i0, rows, kmax;
  const prim *scores, *out, *dv, *dp, *dq, *dk;
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

/* What bind made for a statement. */
typedef struct plan {
  raf_opcode op;
  mm_plan mm;
  att_plan att;
} plan;

typedef struct onednn_state {
  dnnl_engine_t engine;
  prim **prims;
  int nprims, capprims;
  plan **plans;
  int nplans, capplans;
} onednn_state;

/* A row-major [rows, cols] matrix, or, transposed, the transpose of a
 * stored row-major [cols, rows] one. */
static dnnl_status_t matrix_md(dnnl_memory_desc_t *md, int64_t rows,
                               int64_t cols, bool transposed,
                               dnnl_data_type_t dt) {
  dnnl_dims_t dims = {rows, cols};
  dnnl_dims_t strides = {transposed ? 1 : cols, transposed ? rows : 1};
  return dnnl_memory_desc_init_by_strides(md, 2, dims, dt, strides);
}

/* Attributes: scratch memory from the caller, and C += for accumulate. */
static dnnl_status_t make_attr(const prim *p, dnnl_primitive_attr_t *attr) {
  dnnl_status_t rc = dnnl_primitive_attr_create(attr);
  if (rc == dnnl_success)
    rc = dnnl_primitive_attr_set_scratchpad_mode(*attr,
                                                 dnnl_scratchpad_mode_user);
  if (rc == dnnl_success && p->accumulate) {
    dnnl_post_ops_t ops = NULL;
    rc = dnnl_post_ops_create(&ops);
    if (rc == dnnl_success)
      rc = dnnl_post_ops_append_sum(ops, 1.0f);
    if (rc == dnnl_success)
      rc = dnnl_primitive_attr_set_post_ops(*attr, ops);
    if (ops)
      dnnl_post_ops_destroy(ops);
  }
  return rc;
}

static dnnl_status_t create_prim(dnnl_engine_t engine, prim *p) {
  dnnl_status_t rc = matrix_md(&p->a, p->m, p->k, p->ta, dnnl_bf16);
  if (rc == dnnl_success)
    rc = matrix_md(&p->b, p->k, p->n, p->tb, dnnl_bf16);
  if (rc == dnnl_success)
    rc = matrix_md(&p->c, p->m, p->n, false,
                   p->f32_out ? dnnl_f32 : dnnl_bf16);
  dnnl_matmul_desc_t desc;
  if (rc == dnnl_success)
    rc = dnnl_matmul_desc_init(&desc, &p->a, &p->b, NULL, &p->c);
  dnnl_primitive_attr_t attr = NULL;
  if (rc == dnnl_success)
    rc = make_attr(p, &attr);
  dnnl_primitive_desc_t pd = NULL;
  if (rc == dnnl_success)
    rc = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
  if (rc == dnnl_success) {
    const dnnl_memory_desc_t *s =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->scratch = *s;
    p->scratch_bytes = dnnl_memory_desc_get_size(s);
    rc = dnnl_primitive_create(&p->p, pd);
  }
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return rc;
}

/* The cached primitive of key's kind and shape, created on first use;
 * NULL with *why set when oneDNN has none or memory ran out. */
static const prim *find_prim(onednn_state *st, prim key, char *why,
                             size_t size) {
  for (int i = 0; i < st->nprims; i++) {
    const prim *p = st->prims[i];
    if (p->ta == key.ta && p->tb == key.tb && p->f32_out == key.f32_out &&
        p->accumulate == key.accumulate && p->m == key.m && p->n == key.n &&
        p->k == key.k)
      return p;
  }
  if (st->nprims == st->capprims) {
    int cap = st->capprims ? 2 * st->capprims : 16;
    prim **grown = realloc(st->prims, sizeof *grown * (size_t)cap);
    if (!grown) {
      snprintf(why, size, "out of memory for the oneDNN primitives");
      return NULL;
    }
    st->prims = grown;
    st->capprims = cap;
  }
  prim *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(why, size, "out of memory for the oneDNN primitives");
    return NULL;
  }
  *p = key;
  int threads = openmp_single();
  dnnl_status_t rc = create_prim(st->engine, p);
  openmp_restore(threads);
  if (rc != dnnl_success) {
    snprintf(why, size,
             "oneDNN has no bf16 matmul for [%lld,%lld]%s x [%lld,%lld]%s "
             "(%s)",
             (long long)key.m, (long long)key.k, key.ta ? " (transposed)" : "",
             (long long)key.k, (long long)key.n, key.tb ? " (transposed)" : "",
             dnnl_status2str(rc));
    free(p);
    return NULL;
  }
  st->prims[st->nprims++] = p;
  return p;
}

/* The plan of matmul statement s (bf16 operands; another dtype gets a
 * plan that says so). */
static void plan_matmul(onednn_state *st, const raf_stmt *s, mm_plan *p) {
  const raf_type *at = s->operands[0].value->type,
                 *bt = s->operands[1].value->type, *ot = s->results[0]->type;
  if (at->dtype != RAF_BF16 || bt->dtype != RAF_BF16 ||
      ot->dtype != RAF_BF16) {
    snprintf(p->why, sizeof p->why, "onednn has no matmul for %s (only bf16)",
             raf_dtype_name(at->dtype));
    return;
  }
  p->ta = raf_stmt_attr_bool(s, "transpose_a");
  p->tb = raf_stmt_attr_bool(s, "transpose_b");
  p->m = ot->dims[ot->rank - 2];
  p->n = ot->dims[ot->rank - 1];
  p->k = at->dims[at->rank - 1 - p->ta];
  if (ot->numel == 0 || p->k == 0)
    return; /* nothing to multiply: the kernel writes zeros or nothing */
  p->nbatch = ot->numel / (p->m * p->n);
  p->batch_rank = ot->rank - 2;
  memcpy(p->batch_dims, ot->dims, sizeof(int64_t) * (size_t)p->batch_rank);
  raf_broadcast_strides(at, ot, p->sa);
  raf_broadcast_strides(bt, ot, p->sb);
  bool b_shared = true;
  for (int d = 0; d < p->batch_rank; d++)
    b_shared &= p->sb[d] == 0;
  if (p->nbatch > 1 && b_shared && !p->ta &&
      at->numel == p->nbatch * p->m * p->k) {
    /* a [batch.., M, K] is one [batch * M, K] matrix (as cblas.c). */
    p->m *= p->nbatch;
    p->nbatch = 1;
    p->batch_rank = 0;
  }
  /* Blocks of rows: enough for the work, at most MAX_BLOCKS, at least
   * ROW_BLOCK_MIN rows each, but two when that is all there is. */
  int64_t work = p->m * p->n * p->k;
  int64_t want = work / TASK_WORK, most = p->m / ROW_BLOCK_MIN;
  if (most < 2 && p->m >= 4 * ROW_BLOCK_ALIGN)
    most = 2;
  want = min64(min64(want, most), MAX_BLOCKS);
  want = want < 1 ? 1 : want;
  p->blk = (p->m + want - 1) / want;
  if (want > 1)
    p->blk = (p->blk + ROW_BLOCK_ALIGN - 1) / ROW_BLOCK_ALIGN * ROW_BLOCK_ALIGN;
  p->nblk = (p->m + p->blk - 1) / p->blk;
  p->grain = 1;
  if (p->nblk == 1 && work < GROUP_WORK)
    p->grain = GROUP_WORK / (work + 1) + 1;
  prim key = {.ta = p->ta, .tb = p->tb, .m = min64(p->blk, p->m), .n = p->n,
              .k = p->k};
  p->full = find_prim(st, key, p->why, sizeof p->why);
  key.m = p->m % p->blk;
  if (p->full && key.m)
    p->last = find_prim(st, key, p->why, sizeof p->why);
}

/* ---- Running ------------------------------------------------------------ */

/* Runs primitive pr on dense matrices a, b into c, with scratch (at least
 * pr->scratch_bytes). */
static dnnl_status_t run_prim(dnnl_engine_t engine, const prim *pr,
                              const void *a, const void *b, void *c,
                              void *scratch) {
  dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
  dnnl_stream_t stream = NULL;
  dnnl_status_t rc = dnnl_memory_create(&ma, &pr->a, engine, (void *)a);
  if (rc == dnnl_success)
    rc = dnnl_memory_create(&mb, &pr->b, engine, (void *)b);
  if (rc == dnnl_success)
    rc = dnnl_memory_create(&mc, &pr->c, engine, c);
  if (rc == dnnl_success && pr->scratch_bytes)
    rc = dnnl_memory_create(&ms, &pr->scratch, engine, scratch);
  if (rc == dnnl_success)
    rc = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
  if (rc == dnnl_success) {
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma},
                               {DNNL_ARG_WEIGHTS, mb},
                               {DNNL_ARG_DST, mc},
                               {DNNL_ARG_SCRATCHPAD, ms}};
    rc = dnnl_primitive_execute(pr->p, stream, ms ? 4 : 3, args);
    if (rc == dnnl_success)
      rc = dnnl_stream_wait(stream);
  }
  if (stream)
    dnnl_stream_destroy(stream);
  dnnl_memory_t mems[4] = {ma, mb, mc, ms};
  for (int i = 0; i < 4; i++)
    if (mems[i])
      dnnl_memory_destroy(mems[i]);
  return rc;
}

typedef struct mm_job {
  const mm_plan *p;
  dnnl_engine_t engine;
  const uint16_t *a, *b;
  uint16_t *c;
  atomic_int status; /* the first failure's dnnl_status_t, or success */
} mm_job;

static void job_failed(mm_job *j, dnnl_status_t rc) {
  int expected = dnnl_success;
  atomic_compare_exchange_strong(&j->status, &expected, (int)rc);
}

/* Columns [m0, m0 + rows) of the stored [k, m] matrix a, into dense
 * [k, rows]. */
static void pack_columns(uint16_t *dst, const uint16_t *a, int64_t k,
                         int64_t m, int64_t m0, int64_t rows) {
  for (int64_t r = 0; r < k; r++)
    memcpy(dst + r * rows, a + r * m + m0, sizeof *dst * (size_t)rows);
}

/* Tasks [begin, end): task t is block t % nblk of result matrix t / nblk. */
static void mm_tasks(void *data, int64_t begin, int64_t end) {
  mm_job *j = data;
  const mm_plan *p = j->p;
  bool pack = p->ta && p->nblk > 1;
  size_t scratch = p->full->scratch_bytes;
  if (p->last && p->last->scratch_bytes > scratch)
    scratch = p->last->scratch_bytes;
  size_t packed = pack ? (size_t)(p->k * p->blk) : 0;
  /* The packed block first: oneDNN wants its scratch 64-byte aligned,
   * which malloc's 16 is not, so it gets a rounded offset. */
  size_t offset = (packed * sizeof(uint16_t) + 63) / 64 * 64;
  char *buf = malloc(offset + scratch + 64);
  if (!buf) {
    job_failed(j, dnnl_out_of_memory);
    return;
  }
  char *scratch_at = buf + offset;
  scratch_at += (64 - (uintptr_t)scratch_at % 64) % 64;
  int threads = openmp_single();
  for (int64_t t = begin; t < end; t++) {
    int64_t batch = t / p->nblk, bl = t % p->nblk;
    int64_t rest = batch, aoff = 0, boff = 0;
    for (int d = p->batch_rank - 1; d >= 0; d--) {
      int64_t idx = rest % p->batch_dims[d];
      rest /= p->batch_dims[d];
      aoff += idx * p->sa[d];
      boff += idx * p->sb[d];
    }
    int64_t m0 = bl * p->blk, rows = min64(p->blk, p->m - m0);
    const prim *pr = rows == p->full->m ? p->full : p->last;
    const uint16_t *a = j->a + aoff;
    if (!p->ta) {
      a += m0 * p->k;
    } else if (pack) {
      pack_columns((uint16_t *)buf, a, p->k, p->m, m0, rows);
      a = (const uint16_t *)buf;
    }
    uint16_t *c = j->c + batch * p->m * p->n + m0 * p->n;
    dnnl_status_t rc = run_prim(j->engine, pr, a, j->b + boff, c, scratch_at);
    if (rc != dnnl_success) {
      job_failed(j, rc);
      break;
    }
  }
  openmp_restore(threads);
  free(buf);
}

static raf_status onednn_matmul(const raf_kernel *k) {
  const mm_plan *p = k->bound;
  onednn_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_ONEDNN);
  if (!p || !st)
    return raf_kernel_fail(k, "dialect onednn: the statement has no plan "
                              "(out of memory when the executor was made)");
  if (p->why[0])
    return raf_kernel_fail(k, "%s", p->why);
  if (k->out[0]->type->numel == 0)
    return RAF_OK;
  if (p->k == 0) { /* an empty sum */
    memset(k->out[0]->data, 0, k->out[0]->nbytes);
    return RAF_OK;
  }
  mm_job j = {.p = p, .engine = st->engine, .a = k->in[0]->data,
              .b = k->in[1]->data, .c = k->out[0]->data};
  atomic_init(&j.status, dnnl_success);
  raf_kernel_parallel(k, p->nbatch * p->nblk, p->grain, mm_tasks, &j);
  dnnl_status_t rc = (dnnl_status_t)atomic_load(&j.status);
  if (rc != dnnl_success)
    return raf_kernel_fail(k, "oneDNN failed: %s", dnnl_status2str(rc));
  return RAF_OK;
}

/* ---- scaled_dot_product_attention and its gradient ---------------------- */

/* Query rows per attention block (as cblas.c's). */
enum { ATT_ROWS = 64 };
/* About this many multiply-adds per attention task. */
#define ATT_TASK_WORK ((int64_t)1 << 24)

/* The keys query row i sees: PyTorch's top-left causal mask. */
static int64_t keys_of(const att_plan *p, int64_t i) {
  return p->causal ? min64(p->lk, i + 1) : p->lk;
}

static bool plan_block(onednn_state *st, att_plan *p, att_block *b) {
  b->kmax = p->causal ? min64(p->lk, b->i0 + b->rows) : p->lk;
  if (b->kmax == 0)
    return true;
  const int64_t rows = b->rows, kmax = b->kmax;
  const prim scores = {.tb = true, .f32_out = true, .m = rows, .n = kmax,
                       .k = p->d};
  b->scores = find_prim(st, scores, p->why, sizeof p->why);
  if (!p->backward) {
    const prim out = {.m = rows, .n = p->dv, .k = kmax};
    b->out = b->scores ? find_prim(st, out, p->why, sizeof p->why) : NULL;
    return b->out != NULL;
  }
  const prim dv = {.ta = true, .f32_out = true, .accumulate = true,
                   .m = kmax, .n = p->dv, .k = rows};
  const prim dp = {.tb = true, .f32_out = true, .m = rows, .n = kmax,
                   .k = p->dv};
  const prim dq = {.m = rows, .n = p->d, .k = kmax};
  const prim dk = {.ta = true, .f32_out = true, .accumulate = true,
                   .m = kmax, .n = p->d, .k = rows};
  const prim keys[] = {dv, dp, dq, dk};
  const prim **made[] = {&b->dv, &b->dp, &b->dq, &b->dk};
  for (int i = 0; i < 4 && b->scores; i++)
    if (!(*made[i] = find_prim(st, keys[i], p->why, sizeof p->why)))
      return false;
  return b->scores != NULL;
}

/* The plan of an attention statement (bf16; another dtype gets a plan
 * that says so). */
static void plan_attention(onednn_state *st, const raf_stmt *s,
                           att_plan *p) {
  p->backward = s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD;
  const raf_type *qt = s->operands[p->backward].value->type,
                 *kt = s->operands[p->backward + 1].value->type,
                 *vt = s->operands[p->backward + 2].value->type;
  if (qt->dtype != RAF_BF16 || kt->dtype != RAF_BF16 ||
      vt->dtype != RAF_BF16 ||
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
  p->scale = (float)(raf_stmt_attr(s, "scale", &scale)
                         ? scale.u.f
                         : 1.0 / sqrt((double)p->d));
  p->items = 1;
  for (int d = 0; d < r - 2; d++)
    p->items *= qt->dims[d];
  if (p->items == 0 || p->lq == 0)
    return; /* nothing to compute */
  p->rb = min64(p->lq, ATT_ROWS);
  p->nblocks = (p->lq + p->rb - 1) / p->rb;
  p->blocks = calloc((size_t)p->nblocks, sizeof *p->blocks);
  if (!p->blocks) {
    snprintf(p->why, sizeof p->why, "out of memory for the attention plan");
    return;
  }
  for (int64_t i = 0; i < p->nblocks; i++) {
    att_block *b = &p->blocks[i];
    b->i0 = i * p->rb;
    b->rows = min64(p->rb, p->lq - b->i0);
    if (!plan_block(st, p, b))
      return;
    const prim *all[] = {b->scores, b->out, b->dv, b->dp, b->dq, b->dk};
    for (int e = 0; e < 6; e++)
      if (all[e] && all[e]->scratch_bytes > p->scratch_bytes)
        p->scratch_bytes = all[e]->scratch_bytes;
  }
  int64_t work = p->lq * p->lk * (p->d + p->dv) * (p->backward ? 3 : 1) + 1;
  p->grain = work >= ATT_TASK_WORK ? 1 : ATT_TASK_WORK / work + 1;
}

/* bf16 <-> float by their bits, as raf_bf16_to_float and raf_float_to_bf16
 * (ir/module.c) compute them, written here so that the loops vectorize. */
static inline uint16_t float_to_bf16_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t quiet = (x >> 16) | 0x40; /* NaN: stays a NaN */
  uint32_t even = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
  return (uint16_t)((x & 0x7fffffff) > 0x7f800000 ? quiet : even);
}

/* dst[i] = src[i] rounded to bf16, to nearest even. */
RAF_VEC_LOOP static void round_to_bf16(uint16_t *dst, const float *src,
                                       int64_t n) {
  for (int64_t i = 0; i < n; i++)
    dst[i] = float_to_bf16_bits(src[i]);
}

/* The row's maximum, or NaN when it holds one (the softmax is then NaN,
 * as cpu-ref's). */
RAF_VEC_LOOP static float row_max(const float *x, int64_t n) {
  float m[8];
  bool nan = false;
  for (int l = 0; l < 8; l++)
    m[l] = -INFINITY;
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int l = 0; l < 8; l++) {
      float v = x[c + l];
      m[l] = v > m[l] ? v : m[l];
      nan |= v != v;
    }
  for (; c < n; c++) {
    m[0] = x[c] > m[0] ? x[c] : m[0];
    nan |= x[c] != x[c];
  }
  float top = m[0];
  for (int l = 1; l < 8; l++)
    top = m[l] > top ? m[l] : top;
  return nan ? NAN : top;
}

/* Eight partial sums in double in a fixed order, added pairwise. */
static inline double lanes_total(const double acc[8]) {
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
         ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* x[c] = exp(x[c] - top) in place, and their sum in double. */
RAF_VEC_LOOP static double exp_sum_inplace(float *x, int64_t n, float top) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t c = 0; c < n; c++)
    x[c] = raf_vexpf(x[c] - top);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += (double)x[c + l];
  for (; c < n; c++)
    acc[c & 7] += (double)x[c];
  return lanes_total(acc);
}

/* The sum of a[c] * b[c] in double. */
RAF_VEC_LOOP static double dot_double(const float *a, const float *b,
                                      int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 8 <= n; c += 8)
    for (int l = 0; l < 8; l++)
      acc[l] += (double)a[c + l] * (double)b[c + l];
  for (; c < n; c++)
    acc[c & 7] += (double)a[c] * (double)b[c];
  return lanes_total(acc);
}

/* x *= by over a row. */
RAF_VEC_LOOP static void scale_row(float *x, int64_t n, float by) {
  for (int64_t e = 0; e < n; e++)
    x[e] *= by;
}

/* dS = P * (dP - dot) * scale over a row, in place of dP. */
RAF_VEC_LOOP static void softmax_backward_row(float *d, const float *p,
                                              int64_t n, float dot,
                                              float scale) {
  for (int64_t c = 0; c < n; c++)
    d[c] = p[c] * (d[c] - dot) * scale;
}

typedef struct att_job {
  const att_plan *p;
  dnnl_engine_t engine;
  const uint16_t *q, *k, *v, *dy;
  uint16_t *out, *dq, *dk, *dv;
  atomic_int status; /* the first failure's dnnl_status_t, or success */
} att_job;

static void att_failed(att_job *j, dnnl_status_t rc) {
  int expected = dnnl_success;
  atomic_compare_exchange_strong(&j->status, &expected, (int)rc);
}

/* A task's buffers, each 64-byte aligned in one allocation. */
typedef struct att_buffers {
  void *base;
  float *s, *dp, *dk, *dv;  /* scores and P; dP and dS; dk, dv sums */
  uint16_t *p16, *ds16;     /* P and dS rounded to bf16 */
  void *scratch;            /* oneDNN's scratchpad */
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
  void **where[7] = {(void **)&b->s,  (void **)&b->p16, (void **)&b->dp,
                     (void **)&b->ds16, (void **)&b->dk, (void **)&b->dv,
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
    scale_row(row, nk, p->scale);
    if (nk > 0) {
      double total = exp_sum_inplace(row, nk, row_max(row, nk));
      scale_row(row, nk, (float)(1 / total));
    }
    for (int64_t e = nk; e < b->kmax; e++)
      row[e] = 0;
  }
  round_to_bf16(buf->p16, buf->s, b->rows * b->kmax);
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
    dnnl_status_t rc = run_prim(j->engine, b->scores, q + b->i0 * p->d, k,
                                buf->s, buf->scratch);
    if (rc != dnnl_success)
      return rc;
    block_probabilities(p, b, buf);
    rc = run_prim(j->engine, b->out, buf->p16, v, o, buf->scratch);
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
    dnnl_status_t rc = run_prim(j->engine, b->scores, qb, k, buf->s,
                                buf->scratch);
    if (rc == dnnl_success) {
      block_probabilities(p, b, buf);
      rc = run_prim(j->engine, b->dv, buf->p16, dyb, buf->dv, buf->scratch);
    }
    if (rc == dnnl_success)
      rc = run_prim(j->engine, b->dp, dyb, v, buf->dp, buf->scratch);
    if (rc != dnnl_success)
      return rc;
    for (int64_t r = 0; r < b->rows; r++) {
      const float *pr = buf->s + r * b->kmax;
      float *dr = buf->dp + r * b->kmax;
      int64_t nk = keys_of(p, b->i0 + r);
      softmax_backward_row(dr, pr, nk, (float)dot_double(dr, pr, nk),
                           p->scale);
      for (int64_t e = nk; e < b->kmax; e++)
        dr[e] = 0;
    }
    round_to_bf16(buf->ds16, buf->dp, b->rows * b->kmax);
    rc = run_prim(j->engine, b->dq, buf->ds16, k, dq + b->i0 * p->d,
                  buf->scratch);
    if (rc == dnnl_success)
      rc = run_prim(j->engine, b->dk, buf->ds16, qb, buf->dk, buf->scratch);
    if (rc != dnnl_success)
      return rc;
  }
  round_to_bf16(j->dk + item * p->lk * p->d, buf->dk, p->lk * p->d);
  round_to_bf16(j->dv + item * p->lk * p->dv, buf->dv, p->lk * p->dv);
  return dnnl_success;
}

static void att_tasks(void *data, int64_t begin, int64_t end) {
  att_job *j = data;
  att_buffers buf;
  if (!att_buffers_make(j->p, &buf)) {
    att_failed(j, dnnl_out_of_memory);
    return;
  }
  int threads = openmp_single();
  for (int64_t item = begin; item < end; item++) {
    dnnl_status_t rc = j->p->backward ? att_backward_item(j, &buf, item)
                                      : att_forward_item(j, &buf, item);
    if (rc != dnnl_success) {
      att_failed(j, rc);
      break;
    }
  }
  openmp_restore(threads);
  free(buf.base);
}

static raf_status onednn_attention(const raf_kernel *k) {
  const att_plan *p = k->bound;
  onednn_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_ONEDNN);
  if (!p || !st)
    return raf_kernel_fail(k, "dialect onednn: the statement has no plan "
                              "(out of memory when the executor was made)");
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

/* ---- Hooks ---------------------------------------------------------------- */

static void onednn_release(void *state) {
  onednn_state *st = state;
  for (int i = 0; i < st->nprims; i++) {
    dnnl_primitive_destroy(st->prims[i]->p);
    free(st->prims[i]);
  }
  for (int i = 0; i < st->nplans; i++) {
    free(st->plans[i]->att.blocks);
    free(st->plans[i]);
  }
  free(st->prims);
  free(st->plans);
  if (st->engine)
    dnnl_engine_destroy(st->engine);
  free(st);
}

/* The state (an engine, no primitives yet) when some statement of m is
 * annotated with this dialect; none otherwise. */
static raf_status onednn_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                                 void **state) {
  (void)ex;
  *state = NULL;
  const raf_stmt *s = first_onednn_stmt(m);
  if (!s)
    return RAF_OK;
  onednn_state *st = calloc(1, sizeof *st);
  dnnl_status_t rc = st ? dnnl_engine_create(&st->engine, dnnl_cpu, 0)
                        : dnnl_out_of_memory;
  if (rc != dnnl_success) {
    raf_diag_report(ctx, s->loc, RAF_SEV_ERROR,
                    "%s: dialect onednn: no oneDNN CPU engine (%s)",
                    raf_op_table[s->op].name, dnnl_status2str(rc));
    free(st);
    return RAF_ERROR;
  }
  *state = st;
  return RAF_OK;
}

/* A statement's plan, kept in the state; NULL when out of memory (the
 * kernel then reports it). */
static const void *onednn_bind(void *state, const raf_stmt *s) {
  onednn_state *st = state;
  bool attention = s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION ||
                   s->op == RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD;
  if (!st || (s->op != RAF_OP_MATMUL && !attention))
    return NULL;
  if (st->nplans == st->capplans) {
    int cap = st->capplans ? 2 * st->capplans : 16;
    plan **grown = realloc(st->plans, sizeof *grown * (size_t)cap);
    if (!grown)
      return NULL;
    st->plans = grown;
    st->capplans = cap;
  }
  plan *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  st->plans[st->nplans++] = p;
  p->op = s->op;
  if (!attention) {
    plan_matmul(st, s, &p->mm);
    return &p->mm;
  }
  plan_attention(st, s, &p->att);
  return &p->att;
}

int raf_onednn_primitives(const raf_exec *ex) {
  const onednn_state *st = raf_exec_dialect_state(ex, RAF_DIALECT_ONEDNN);
  return st ? st->nprims : 0;
}

const raf_dialect_hooks raf_onednn_hooks = {
    .prepare = onednn_prepare,
    .bind = onednn_bind,
    .release = onednn_release,
};

const raf_kernel_fn raf_onednn_kernels[RAF_OP_COUNT] = {
    [RAF_OP_MATMUL] = onednn_matmul,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION] = onednn_attention,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD] = onednn_attention,
};

#endif /* RAF_HAVE_ONEDNN */
