/* common.c: the onednn dialect's hooks, kernel table and shared machinery
 * (the executor's state, the caches of primitives, the OpenMP guard). The
 * dialect runs on oneDNN (Debian 12's libdnnl-dev, 2.6, C API):
 *   - bf16 matmul and scaled_dot_product_attention (and its gradient) on
 *     oneDNN's matrix products (AMX and AVX-512 BF16 where the CPU has
 *     them): matmul.c, attention.c;
 *   - f32 and bf16 conv2d, conv2d_grad_input and conv2d_grad_weight:
 *     conv.c;
 *   - f32 and bf16 max_pool2d, avg_pool2d and their gradients: pool.c;
 *   - f32 batch_norm and batch_norm_grad: batch_norm.c (on loops of its
 *     own, which beat oneDNN's primitive on plain layouts).
 * Each file's header says how and how closely it agrees with cpu-ref.
 *
 * Why: the matrix products and convolutions of a training step dominate
 * it. Debian's OpenBLAS has no bf16 gemm (the cblas dialect widens bf16 to
 * f32), and cpu-ref's convolutions compute in double, far too slowly to
 * train a ResNet; oneDNN has AVX-512 and AMX kernels for both.
 *
 * Plans: creating a oneDNN primitive compiles a kernel (milliseconds),
 * and a training step calls the same shapes every step. So the bind hook,
 * once per statement at raf_exec_create, makes the statement's plan: its
 * split into tasks and the primitives of its block shapes, taken from a
 * cache keyed by the primitive's kind and shape in the executor's state
 * for this dialect, which the statements of a step share (GPT-2's 12
 * layers, ResNet's repeated blocks: a handful of shapes). The kernel only
 * reads the plan; release frees it all with the state.
 *
 * Threads: Debian's oneDNN runs on OpenMP (libgomp). Left alone, oneDNN
 * inside each executor thread would start an OpenMP team of its own, one
 * thread per CPU, on top of the executor's threads, and libgomp's workers
 * spin for a while after every parallel region, taking cores from the
 * executor's next kernel. So oneDNN runs single-threaded (the calling
 * thread's OpenMP thread count is set to 1 around every primitive's
 * creation and execution, and restored after), and each kernel splits its
 * work into tasks (blocks of result rows, of images, of channels) that
 * run on the executor's threads through raf_kernel_parallel, as cblas.c
 * does with OpenBLAS. Every split depends on the shapes only, so results
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
 * why, so raf-run leaves it out of its default dialects. The other files
 * of this folder then compile to nothing.
 */
#include "runtime/onednn.h"

#include "runtime/dialects.h"

#include <stdlib.h>
#include <string.h>

/* The first statement of m annotated with this dialect, or NULL. */
static const raf_stmt *first_onednn_stmt(const raf_module *m) {
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_ONEDNN))
        return s;
  return NULL;
}

/* The ops of the dialect, each with its kernel (or onednn_missing). */
#define ONEDNN_OPS(X)                                                          \
  X(MATMUL, onednn_matmul)                                                     \
  X(SCALED_DOT_PRODUCT_ATTENTION, onednn_attention)                            \
  X(SCALED_DOT_PRODUCT_ATTENTION_GRAD, onednn_attention)                       \
  X(CONV2D, onednn_conv)                                                       \
  X(CONV2D_GRAD_INPUT, onednn_conv)                                            \
  X(CONV2D_GRAD_WEIGHT, onednn_conv)                                           \
  X(MAX_POOL2D, onednn_pool)                                                   \
  X(AVG_POOL2D, onednn_pool)                                                   \
  X(MAX_POOL2D_GRAD, onednn_pool)                                              \
  X(AVG_POOL2D_GRAD, onednn_pool)                                              \
  X(BATCH_NORM, onednn_batch_norm)                                             \
  X(BATCH_NORM_GRAD, onednn_batch_norm)

#ifndef RAF_HAVE_ONEDNN

static raf_status onednn_missing(const raf_kernel *k) {
  return raf_kernel_fail(k, "dialect onednn: %s", raf_dialect_unavailable(RAF_DIALECT_ONEDNN));
}

static raf_status onednn_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                                 void **state) {
  (void)ex;
  *state = NULL;
  const raf_stmt *s = first_onednn_stmt(m);
  if (!s)
    return RAF_OK;
  raf_diag_report(ctx, s->loc, RAF_SEV_ERROR, "%s: dialect onednn: %s",
                  raf_op_table[s->op].name, raf_dialect_unavailable(RAF_DIALECT_ONEDNN));
  return RAF_ERROR;
}

const raf_dialect_hooks raf_onednn_hooks = {.prepare = onednn_prepare};

int raf_onednn_primitives(const raf_exec *ex) {
  (void)ex;
  return 0;
}

#define MISSING(OP, fn) [RAF_OP_##OP] = onednn_missing,
const raf_kernel_fn raf_onednn_kernels[RAF_OP_COUNT] = {ONEDNN_OPS(MISSING)};

#else /* RAF_HAVE_ONEDNN */

#include "runtime/onednn/internal.h"

#include <stdio.h>

/* libgomp's, which Debian's oneDNN runs on (declared here: not every
 * compiler ships an omp.h). */
int omp_get_max_threads(void);
void omp_set_num_threads(int);

int onednn_openmp_single(void) {
  int threads = omp_get_max_threads();
  if (threads != 1)
    omp_set_num_threads(1);
  return threads;
}

void onednn_openmp_restore(int threads) {
  if (threads != 1)
    omp_set_num_threads(threads);
}

dnnl_data_type_t onednn_dtype(raf_dtype dt) {
  return dt == RAF_F32    ? dnnl_f32
         : dt == RAF_BF16 ? dnnl_bf16
                          : dnnl_data_type_undef;
}

void *onednn_alloc_aligned(size_t bytes, void **aligned) {
  char *base = malloc(bytes + 64);
  if (base)
    *aligned = base + (64 - (uintptr_t)base % 64) % 64;
  return base;
}

bool onednn_keep_plan(onednn_state *st, void *plan, void (*free_fn)(void *)) {
  if (st->nplans == st->capplans) {
    int cap = st->capplans ? 2 * st->capplans : 16;
    void **grown = realloc(st->plans, sizeof *grown * (size_t)cap);
    if (grown)
      st->plans = grown;
    void (**fns)(void *) =
        grown ? realloc(st->plan_free, sizeof *fns * (size_t)cap) : NULL;
    if (fns)
      st->plan_free = fns;
    if (!grown || !fns) {
      free_fn(plan);
      return false;
    }
    st->capplans = cap;
  }
  st->plans[st->nplans] = plan;
  st->plan_free[st->nplans++] = free_fn;
  return true;
}

/* ---- Primitives of conv.c, pool.c, batch_norm.c ----------------------------
 */

/* The reorder of md `from` into md `to`; none needs scratch memory (those
 * that would are refused: the caller then runs on plain layouts). */
static dnnl_status_t make_reorder(dnnl_engine_t engine,
                                  const dnnl_memory_desc_t *from,
                                  const dnnl_memory_desc_t *to,
                                  dnnl_primitive_t *reorder) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t rc = dnnl_primitive_attr_create(&attr);
  if (rc == dnnl_success)
    rc = dnnl_primitive_attr_set_scratchpad_mode(attr,
                                                 dnnl_scratchpad_mode_user);
  if (rc == dnnl_success)
    rc =
        dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, attr);
  if (rc == dnnl_success &&
      dnnl_memory_desc_get_size(
          dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0)))
    rc = dnnl_unimplemented;
  if (rc == dnnl_success)
    rc = dnnl_primitive_create(reorder, pd);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return rc;
}

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

/* Whether dimension 0 of md is outermost: plain blocking, no offset, no
 * padding of dimension 0, and its stride the largest. */
static bool outermost_dim0(const dnnl_memory_desc_t *md) {
  const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
  if (md->format_kind != dnnl_blocked || md->offset0 != 0 ||
      md->extra.flags != 0 || md->padded_dims[0] != md->dims[0])
    return false;
  for (int d = 1; d < md->ndims; d++)
    if (b->strides[d] > b->strides[0])
      return false;
  return true;
}

/* The inner block of dimension 0 of md (1 when it has none). */
static int64_t dim0_block(const dnnl_memory_desc_t *md) {
  const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
  int64_t block = 1;
  for (int i = 0; i < b->inner_nblks; i++)
    if (b->inner_idxs[i] == 0)
      block *= b->inner_blks[i];
  return block;
}

/* pr's reorder of input 1 split along dimension 0, when both layouts have
 * it outermost: parts of PART_ROWS rows (a multiple of md's block), so
 * that each part is contiguous in both. Weight reorders run once per call
 * on the calling thread otherwise (about 9 ms for a 512x512x3x3 w). */
enum { PART_ROWS = 16 };
static dnnl_status_t make_part_reorder(dnnl_engine_t engine, onednn_prim *pr) {
  const dnnl_memory_desc_t *user = &pr->user[1], *md = &pr->md[1];
  int64_t rows = user->dims[0], block = dim0_block(md);
  if (!outermost_dim0(user) || !outermost_dim0(md) || dim0_block(user) != 1 ||
      PART_ROWS % block != 0 || rows % PART_ROWS != 0 || rows < 2 * PART_ROWS)
    return dnnl_success; /* no split: one reorder per call */
  pr->part_md[0] = *user;
  pr->part_md[1] = *md;
  for (int i = 0; i < 2; i++)
    pr->part_md[i].dims[0] = pr->part_md[i].padded_dims[0] = PART_ROWS;
  pr->parts = rows / PART_ROWS;
  pr->part_step[0] = PART_ROWS * user->format_desc.blocking.strides[0];
  pr->part_step[1] = PART_ROWS / block * md->format_desc.blocking.strides[0];
  dnnl_status_t rc = make_reorder(engine, &pr->part_md[0], &pr->part_md[1],
                                  &pr->part_reorder);
  if (rc != dnnl_success) { /* no split after all */
    pr->part_reorder = NULL;
    pr->parts = 0;
  }
  return dnnl_success;
}

/* Frees what onednn_make_prim made. */
static void unmake_prim(onednn_prim *pr) {
  if (pr->part_reorder)
    dnnl_primitive_destroy(pr->part_reorder);
  if (pr->p)
    dnnl_primitive_destroy(pr->p);
  for (int i = 0; i < ONEDNN_MAX_ARGS; i++)
    if (pr->reorder[i])
      dnnl_primitive_destroy(pr->reorder[i]);
}

dnnl_status_t onednn_make_prim(dnnl_engine_t engine, onednn_prim *pr,
                               const void *op_desc,
                               const_dnnl_primitive_desc_t hint,
                               const int *args, int nargs, int nin,
                               const dnnl_memory_desc_t *user) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_status_t rc = dnnl_primitive_attr_create(&attr);
  if (rc == dnnl_success)
    rc = dnnl_primitive_attr_set_scratchpad_mode(attr,
                                                 dnnl_scratchpad_mode_user);
  if (rc == dnnl_success)
    rc = dnnl_primitive_desc_create(&pd, op_desc, attr, engine, hint);
  if (rc == dnnl_success) {
    pr->nargs = nargs;
    pr->nin = nin;
    const dnnl_memory_desc_t *s =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    pr->scratch = *s;
    pr->work_bytes = round64(dnnl_memory_desc_get_size(s));
    for (int i = 0; i < nargs && rc == dnnl_success; i++) {
      pr->arg[i] = args[i];
      pr->md[i] =
          *dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, args[i]);
      pr->user[i] = user ? user[i] : pr->md[i];
      if (dnnl_memory_desc_equal(&pr->md[i], &pr->user[i]))
        continue;
      rc =
          i < nin
              ? make_reorder(engine, &pr->user[i], &pr->md[i], &pr->reorder[i])
              : make_reorder(engine, &pr->md[i], &pr->user[i], &pr->reorder[i]);
      pr->offset[i] = pr->work_bytes;
      pr->work_bytes += round64(dnnl_memory_desc_get_size(&pr->md[i]));
    }
  }
  if (rc == dnnl_success && nin > 1 && pr->reorder[1])
    rc = make_part_reorder(engine, pr);
  if (rc == dnnl_success)
    rc = dnnl_primitive_create(&pr->p, pd);
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  if (rc != dnnl_success) {
    unmake_prim(pr);
    memset(pr->reorder, 0, sizeof pr->reorder);
    pr->p = NULL;
    pr->part_reorder = NULL;
  }
  return rc;
}

const onednn_prim *onednn_find_prim(onednn_state *st, const onednn_key *key,
                                    onednn_create_fn create, const char *what,
                                    char *why, size_t size) {
  for (int i = 0; i < st->nprims; i++)
    if (memcmp(&st->prims[i]->key, key, sizeof *key) == 0)
      return st->prims[i];
  if (st->nprims == st->capprims) {
    int cap = st->capprims ? 2 * st->capprims : 16;
    onednn_prim **grown = realloc(st->prims, sizeof *grown * (size_t)cap);
    if (!grown) {
      snprintf(why, size, "out of memory for the oneDNN primitives");
      return NULL;
    }
    st->prims = grown;
    st->capprims = cap;
  }
  onednn_prim *pr = calloc(1, sizeof *pr);
  if (!pr) {
    snprintf(why, size, "out of memory for the oneDNN primitives");
    return NULL;
  }
  pr->key = *key;
  int threads = onednn_openmp_single();
  dnnl_status_t rc = create(st->engine, pr);
  onednn_openmp_restore(threads);
  if (rc != dnnl_success) {
    snprintf(why, size, "oneDNN has no %s (%s)", what, dnnl_status2str(rc));
    free(pr);
    return NULL;
  }
  st->prims[st->nprims++] = pr;
  return pr;
}

/* Runs primitive p on `n` arguments (memory on data[i] of md[i]). */
static dnnl_status_t execute(dnnl_engine_t engine, dnnl_primitive_t p, int n,
                             const int *arg, const dnnl_memory_desc_t *md,
                             void *const *data) {
  dnnl_memory_t mems[ONEDNN_MAX_ARGS + 1] = {NULL};
  dnnl_exec_arg_t args[ONEDNN_MAX_ARGS + 1];
  dnnl_stream_t stream = NULL;
  dnnl_status_t rc = dnnl_success;
  for (int i = 0; i < n && rc == dnnl_success; i++) {
    rc = dnnl_memory_create(&mems[i], &md[i], engine, data[i]);
    args[i] = (dnnl_exec_arg_t){arg[i], mems[i]};
  }
  if (rc == dnnl_success)
    rc = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
  if (rc == dnnl_success) {
    rc = dnnl_primitive_execute(p, stream, n, args);
    if (rc == dnnl_success)
      rc = dnnl_stream_wait(stream);
  }
  if (stream)
    dnnl_stream_destroy(stream);
  for (int i = 0; i < n; i++)
    if (mems[i])
      dnnl_memory_destroy(mems[i]);
  return rc;
}

dnnl_status_t onednn_reorder_arg(dnnl_engine_t engine, const onednn_prim *pr,
                                 int i, const void *from, void *to) {
  const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
  bool input = i < pr->nin;
  const dnnl_memory_desc_t md[2] = {input ? pr->user[i] : pr->md[i],
                                    input ? pr->md[i] : pr->user[i]};
  void *data[2] = {(void *)from, to};
  return execute(engine, pr->reorder[i], 2, arg, md, data);
}

dnnl_status_t onednn_reorder_part(dnnl_engine_t engine, const onednn_prim *pr,
                                  int64_t part, const void *from, void *to) {
  const int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
  size_t size = dnnl_data_type_size(pr->md[1].data_type);
  void *data[2] = {(char *)from + (size_t)(part * pr->part_step[0]) * size,
                   (char *)to + (size_t)(part * pr->part_step[1]) * size};
  return execute(engine, pr->part_reorder, 2, arg, pr->part_md, data);
}

dnnl_status_t onednn_run_prim(dnnl_engine_t engine, const onednn_prim *pr,
                              void *const *data, unsigned native, void *work) {
  int arg[ONEDNN_MAX_ARGS + 1];
  dnnl_memory_desc_t md[ONEDNN_MAX_ARGS + 1];
  void *at[ONEDNN_MAX_ARGS + 1];
  dnnl_status_t rc = dnnl_success;
  for (int i = 0; i < pr->nargs; i++) {
    arg[i] = pr->arg[i];
    md[i] = pr->md[i];
    at[i] = data[i];
    if (!pr->reorder[i] || native & (1u << i))
      continue;
    at[i] = (char *)work + pr->offset[i];
    if (i < pr->nin && rc == dnnl_success)
      rc = onednn_reorder_arg(engine, pr, i, data[i], at[i]);
  }
  if (pr->zero_memory) {
    memset(work, 0, dnnl_memory_desc_get_size(&pr->scratch));
    for (int i = pr->nin; i < pr->nargs; i++)
      memset(at[i], 0, dnnl_memory_desc_get_size(&pr->md[i]));
  }
  int n = pr->nargs;
  if (dnnl_memory_desc_get_size(&pr->scratch)) {
    arg[n] = DNNL_ARG_SCRATCHPAD;
    md[n] = pr->scratch;
    at[n++] = work;
  }
  if (rc == dnnl_success)
    rc = execute(engine, pr->p, n, arg, md, at);
  for (int i = pr->nin; i < pr->nargs && rc == dnnl_success; i++)
    if (pr->reorder[i] && !(native & (1u << i)))
      rc = onednn_reorder_arg(engine, pr, i, at[i], data[i]);
  return rc;
}

raf_status onednn_kernel_plan(const raf_kernel *k, onednn_state **st) {
  *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_ONEDNN);
  if (!k->bound || !*st)
    return raf_kernel_fail(k, "dialect onednn: the statement has no plan "
                              "(out of memory when the executor was made)");
  return RAF_OK;
}

/* ---- Hooks ----------------------------------------------------------------
 */

static void onednn_release(void *state) {
  onednn_state *st = state;
  for (int i = 0; i < st->nmm; i++) {
    dnnl_primitive_destroy(st->mm[i]->p);
    free(st->mm[i]);
  }
  for (int i = 0; i < st->nprims; i++) {
    unmake_prim(st->prims[i]);
    free(st->prims[i]);
  }
  for (int i = 0; i < st->nplans; i++)
    st->plan_free[i](st->plans[i]);
  free(st->mm);
  free(st->prims);
  free(st->plans);
  free(st->plan_free);
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
  dnnl_status_t rc =
      st ? dnnl_engine_create(&st->engine, dnnl_cpu, 0) : dnnl_out_of_memory;
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
  if (!st)
    return NULL;
  switch (s->op) {
  case RAF_OP_MATMUL:
    return onednn_bind_matmul(st, s);
  case RAF_OP_SCALED_DOT_PRODUCT_ATTENTION:
  case RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD:
    return onednn_bind_attention(st, s);
  case RAF_OP_CONV2D:
  case RAF_OP_CONV2D_GRAD_INPUT:
  case RAF_OP_CONV2D_GRAD_WEIGHT:
    return onednn_bind_conv(st, s);
  case RAF_OP_MAX_POOL2D:
  case RAF_OP_AVG_POOL2D:
  case RAF_OP_MAX_POOL2D_GRAD:
  case RAF_OP_AVG_POOL2D_GRAD:
    return onednn_bind_pool(st, s);
  case RAF_OP_BATCH_NORM:
  case RAF_OP_BATCH_NORM_GRAD:
    return onednn_bind_batch_norm(st, s);
  default:
    return NULL;
  }
}

int raf_onednn_primitives(const raf_exec *ex) {
  const onednn_state *st = raf_exec_dialect_state(ex, RAF_DIALECT_ONEDNN);
  return st ? st->nmm + st->nprims : 0;
}

const raf_dialect_hooks raf_onednn_hooks = {
    .prepare = onednn_prepare,
    .bind = onednn_bind,
    .release = onednn_release,
};

#define KERNEL(OP, fn) [RAF_OP_##OP] = fn,
const raf_kernel_fn raf_onednn_kernels[RAF_OP_COUNT] = {ONEDNN_OPS(KERNEL)};

#endif /* RAF_HAVE_ONEDNN */
