/* matmul.c: the onednn dialect's bf16 matmul (and the matrix products
 * attention.c builds on): oneDNN's brgemm kernels, AMX and AVX-512 BF16.
 *
 * Why: the amp pass leaves the matrix products of a training step in bf16.
 * Debian's OpenBLAS has no bf16 gemm, so the cblas dialect widens bf16 to
 * f32 and runs at sgemm's speed; oneDNN's brgemm kernels multiply bf16
 * tiles on AMX at about five times that rate (Sapphire Rapids, two cores).
 *
 * Semantics are cblas's and cpu-ref's: rank >= 2, transpose_a and
 * transpose_b, NumPy-broadcast batch dims. The operands are bf16, the
 * products are summed in f32 and each result is rounded to bf16 once, to
 * nearest even (oneDNN's store). The sums run in oneDNN's order, and AMX
 * reads bf16 denormals as zero, so results differ from cpu-ref's (which
 * rounds a double sum) by bf16 rounding, like cblas's.
 *
 * f16: oneDNN 2.6 (Debian 12's) has no f16 matmul on the CPU, even with
 * avx512_fp16 (creating the primitive answers "unimplemented"), so f16
 * stays with cblas; the IMPL row of lang/dialects.def says bf16. f32 stays
 * with cblas too: OpenBLAS's sgemm is as fast on these shapes (the
 * figures are in docs/Dialects.md).
 *
 * Primitives are cached by (transposes, M, N, K, result dtype, accumulated
 * or not). The kernel splits the product into blocks of result rows, run
 * through raf_kernel_parallel. Rows, not columns: oneDNN 2.6's brgemm
 * takes only dense matrices, and a block of C's rows is dense (and so is
 * A's block, untransposed), where a block of columns is strided and would
 * fall back to oneDNN's gemm:jit at about half the speed. A transposed A's
 * block (columns of the stored matrix) is packed into dense scratch
 * first. The split depends on the shapes only and every block is a
 * product over the whole of K, so the results are the same bits at every
 * thread count.
 */
#ifdef RAF_HAVE_ONEDNN

#include "runtime/onednn/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* About this many multiply-adds per row block; at most MAX_BLOCKS blocks
 * of at least ROW_BLOCK_MIN rows (each block repacks all of B, so blocks
 * stay large). */
#define TASK_WORK ((int64_t)1 << 27)
enum { MAX_BLOCKS = 8, ROW_BLOCK_MIN = 256, ROW_BLOCK_ALIGN = 32 };
/* Small products are grouped into tasks of about this many. */
#define GROUP_WORK ((int64_t)1 << 22)

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
  const onednn_mm_prim *full; /* a block of blk rows (or all of m) */
  const onednn_mm_prim *last; /* the shorter last block, or NULL */
  char why[256];              /* non-empty: no plan, the kernel reports this */
} mm_plan;
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
static dnnl_status_t make_attr(const onednn_mm_prim *p,
                               dnnl_primitive_attr_t *attr) {
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

static dnnl_status_t create_prim(dnnl_engine_t engine, onednn_mm_prim *p) {
  dnnl_status_t rc = matrix_md(&p->a, p->m, p->k, p->ta, dnnl_bf16);
  if (rc == dnnl_success)
    rc = matrix_md(&p->b, p->k, p->n, p->tb, dnnl_bf16);
  if (rc == dnnl_success)
    rc = matrix_md(&p->c, p->m, p->n, false, p->f32_out ? dnnl_f32 : dnnl_bf16);
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
const onednn_mm_prim *onednn_find_mm(onednn_state *st, onednn_mm_prim key,
                                     char *why, size_t size) {
  for (int i = 0; i < st->nmm; i++) {
    const onednn_mm_prim *p = st->mm[i];
    if (p->ta == key.ta && p->tb == key.tb && p->f32_out == key.f32_out &&
        p->accumulate == key.accumulate && p->m == key.m && p->n == key.n &&
        p->k == key.k)
      return p;
  }
  if (st->nmm == st->capmm) {
    int cap = st->capmm ? 2 * st->capmm : 16;
    onednn_mm_prim **grown = realloc(st->mm, sizeof *grown * (size_t)cap);
    if (!grown) {
      snprintf(why, size, "out of memory for the oneDNN primitives");
      return NULL;
    }
    st->mm = grown;
    st->capmm = cap;
  }
  onednn_mm_prim *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(why, size, "out of memory for the oneDNN primitives");
    return NULL;
  }
  *p = key;
  int threads = onednn_openmp_single();
  dnnl_status_t rc = create_prim(st->engine, p);
  onednn_openmp_restore(threads);
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
  st->mm[st->nmm++] = p;
  return p;
}

/* The plan of matmul statement s (bf16 operands; another dtype gets a
 * plan that says so). */
static void plan_matmul(onednn_state *st, const raf_stmt *s, mm_plan *p) {
  const raf_type *at = s->operands[0].value->type,
                 *bt = s->operands[1].value->type, *ot = s->results[0]->type;
  if (at->dtype != RAF_BF16 || bt->dtype != RAF_BF16 || ot->dtype != RAF_BF16) {
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
  want = onednn_min64(onednn_min64(want, most), MAX_BLOCKS);
  want = want < 1 ? 1 : want;
  p->blk = (p->m + want - 1) / want;
  if (want > 1)
    p->blk = (p->blk + ROW_BLOCK_ALIGN - 1) / ROW_BLOCK_ALIGN * ROW_BLOCK_ALIGN;
  p->nblk = (p->m + p->blk - 1) / p->blk;
  p->grain = 1;
  if (p->nblk == 1 && work < GROUP_WORK)
    p->grain = GROUP_WORK / (work + 1) + 1;
  onednn_mm_prim key = {.ta = p->ta,
                        .tb = p->tb,
                        .m = onednn_min64(p->blk, p->m),
                        .n = p->n,
                        .k = p->k};
  p->full = onednn_find_mm(st, key, p->why, sizeof p->why);
  key.m = p->m % p->blk;
  if (p->full && key.m)
    p->last = onednn_find_mm(st, key, p->why, sizeof p->why);
}

const void *onednn_bind_matmul(onednn_state *st, const raf_stmt *s) {
  mm_plan *p = calloc(1, sizeof *p);
  if (!p || !onednn_keep_plan(st, p, free))
    return NULL;
  plan_matmul(st, s, p);
  return p;
}

/* ---- Running ------------------------------------------------------------ */

/* Runs primitive pr on dense matrices a, b into c, with scratch (at least
 * pr->scratch_bytes). */
dnnl_status_t onednn_run_mm(dnnl_engine_t engine, const onednn_mm_prim *pr,
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
  onednn_failed(&j->status, rc);
}

/* Columns [m0, m0 + rows) of the stored [k, m] matrix a, into dense
 * [k, rows]. */
static void pack_columns(uint16_t *dst, const uint16_t *a, int64_t k, int64_t m,
                         int64_t m0, int64_t rows) {
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
  int threads = onednn_openmp_single();
  for (int64_t t = begin; t < end; t++) {
    int64_t batch = t / p->nblk, bl = t % p->nblk;
    int64_t rest = batch, aoff = 0, boff = 0;
    for (int d = p->batch_rank - 1; d >= 0; d--) {
      int64_t idx = rest % p->batch_dims[d];
      rest /= p->batch_dims[d];
      aoff += idx * p->sa[d];
      boff += idx * p->sb[d];
    }
    int64_t m0 = bl * p->blk, rows = onednn_min64(p->blk, p->m - m0);
    const onednn_mm_prim *pr = rows == p->full->m ? p->full : p->last;
    const uint16_t *a = j->a + aoff;
    if (!p->ta) {
      a += m0 * p->k;
    } else if (pack) {
      pack_columns((uint16_t *)buf, a, p->k, p->m, m0, rows);
      a = (const uint16_t *)buf;
    }
    uint16_t *c = j->c + batch * p->m * p->n + m0 * p->n;
    dnnl_status_t rc =
        onednn_run_mm(j->engine, pr, a, j->b + boff, c, scratch_at);
    if (rc != dnnl_success) {
      job_failed(j, rc);
      break;
    }
  }
  onednn_openmp_restore(threads);
  free(buf);
}

raf_status onednn_matmul(const raf_kernel *k) {
  const mm_plan *p = k->bound;
  onednn_state *st;
  if (onednn_kernel_plan(k, &st) != RAF_OK)
    return RAF_ERROR;
  if (p->why[0])
    return raf_kernel_fail(k, "%s", p->why);
  if (k->out[0]->type->numel == 0)
    return RAF_OK;
  if (p->k == 0) { /* an empty sum */
    memset(k->out[0]->data, 0, k->out[0]->nbytes);
    return RAF_OK;
  }
  mm_job j = {.p = p,
              .engine = st->engine,
              .a = k->in[0]->data,
              .b = k->in[1]->data,
              .c = k->out[0]->data};
  atomic_init(&j.status, dnnl_success);
  raf_kernel_parallel(k, p->nbatch * p->nblk, p->grain, mm_tasks, &j);
  dnnl_status_t rc = (dnnl_status_t)atomic_load(&j.status);
  if (rc != dnnl_success)
    return raf_kernel_fail(k, "oneDNN failed: %s", dnnl_status2str(rc));
  return RAF_OK;
}
#endif /* RAF_HAVE_ONEDNN */
