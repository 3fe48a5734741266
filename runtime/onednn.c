/* onednn.c: the onednn dialect: bf16 matmul on oneDNN's kernels (AMX and
 * AVX-512 BF16 where the CPU has them).
 *
 * Why: the amp pass leaves the matrix products of a training step in bf16.
 * Debian's OpenBLAS has no bf16 gemm, so the cblas dialect widens bf16 to
 * f32 and runs at sgemm's speed; oneDNN's brgemm kernels multiply bf16
 * tiles on AMX at about five times that rate (Sapphire Rapids, two cores).
 *
 * Semantics are cblas's and cpu-ref's matmul: rank >= 2, transpose_a and
 * transpose_b, NumPy-broadcast batch dims. The operands are bf16, the
 * products are summed in f32 and each result is rounded to bf16 once, to
 * nearest even (oneDNN's store). The sums run in oneDNN's order, and AMX
 * reads bf16 denormals as zero, so results differ from cpu-ref's (which
 * rounds a double sum) by bf16 rounding, like cblas's.
 *
 * f16: oneDNN 2.6 (Debian 12's) has no f16 matmul on the CPU, even with
 * avx512_fp16 (creating the primitive answers "unimplemented"), so f16
 * stays with cblas; the IMPL row of lang/dialects.def says bf16.
 *
 * Plans: creating a oneDNN primitive compiles a kernel (milliseconds),
 * and a training step calls the same shapes every step. So the bind hook,
 * once per statement at raf_exec_create, makes the statement's plan: its
 * split into tasks and the primitives of its block shapes, taken from a
 * cache keyed by (transposes, M, N, K) in the executor's state for this
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
};

#else /* RAF_HAVE_ONEDNN */

#include <dnnl.h>
#include <dnnl_debug.h>
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

/* A bf16 matrix product C [m, n] = op(A) op(B), all three dense. */
typedef struct prim {
  bool ta, tb;
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

typedef struct onednn_state {
  dnnl_engine_t engine;
  prim **prims;
  int nprims, capprims;
  mm_plan **plans;
  int nplans, capplans;
} onednn_state;

/* A row-major [rows, cols] bf16 matrix, or, transposed, the transpose of
 * a stored row-major [cols, rows] one. */
static dnnl_status_t matrix_md(dnnl_memory_desc_t *md, int64_t rows,
                               int64_t cols, bool transposed) {
  dnnl_dims_t dims = {rows, cols};
  dnnl_dims_t strides = {transposed ? 1 : cols, transposed ? rows : 1};
  return dnnl_memory_desc_init_by_strides(md, 2, dims, dnnl_bf16, strides);
}

static dnnl_status_t create_prim(dnnl_engine_t engine, prim *p) {
  dnnl_status_t rc = matrix_md(&p->a, p->m, p->k, p->ta);
  if (rc == dnnl_success)
    rc = matrix_md(&p->b, p->k, p->n, p->tb);
  if (rc == dnnl_success)
    rc = matrix_md(&p->c, p->m, p->n, false);
  dnnl_matmul_desc_t desc;
  if (rc == dnnl_success)
    rc = dnnl_matmul_desc_init(&desc, &p->a, &p->b, NULL, &p->c);
  dnnl_primitive_attr_t attr = NULL;
  if (rc == dnnl_success)
    rc = dnnl_primitive_attr_create(&attr);
  if (rc == dnnl_success)
    rc = dnnl_primitive_attr_set_scratchpad_mode(attr,
                                                 dnnl_scratchpad_mode_user);
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

/* The cached primitive of a shape, created on first use; NULL with *why
 * set when oneDNN has none or memory ran out. */
static const prim *find_prim(onednn_state *st, bool ta, bool tb, int64_t m,
                             int64_t n, int64_t k, char *why, size_t size) {
  for (int i = 0; i < st->nprims; i++) {
    const prim *p = st->prims[i];
    if (p->ta == ta && p->tb == tb && p->m == m && p->n == n && p->k == k)
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
  *p = (prim){.ta = ta, .tb = tb, .m = m, .n = n, .k = k};
  int threads = openmp_single();
  dnnl_status_t rc = create_prim(st->engine, p);
  openmp_restore(threads);
  if (rc != dnnl_success) {
    snprintf(why, size,
             "oneDNN has no bf16 matmul for [%lld,%lld]%s x [%lld,%lld]%s "
             "(%s)",
             (long long)m, (long long)k, ta ? " (transposed)" : "",
             (long long)k, (long long)n, tb ? " (transposed)" : "",
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
  p->full = find_prim(st, p->ta, p->tb, min64(p->blk, p->m), p->n, p->k,
                      p->why, sizeof p->why);
  int64_t rest = p->m % p->blk;
  if (p->full && rest)
    p->last = find_prim(st, p->ta, p->tb, rest, p->n, p->k, p->why,
                        sizeof p->why);
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

/* ---- Hooks ---------------------------------------------------------------- */

static void onednn_release(void *state) {
  onednn_state *st = state;
  for (int i = 0; i < st->nprims; i++) {
    dnnl_primitive_destroy(st->prims[i]->p);
    free(st->prims[i]);
  }
  for (int i = 0; i < st->nplans; i++)
    free(st->plans[i]);
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
  if (!st || s->op != RAF_OP_MATMUL)
    return NULL;
  if (st->nplans == st->capplans) {
    int cap = st->capplans ? 2 * st->capplans : 16;
    mm_plan **grown = realloc(st->plans, sizeof *grown * (size_t)cap);
    if (!grown)
      return NULL;
    st->plans = grown;
    st->capplans = cap;
  }
  mm_plan *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  st->plans[st->nplans++] = p;
  plan_matmul(st, s, p);
  return p;
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
};

#endif /* RAF_HAVE_ONEDNN */
