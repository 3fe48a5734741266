/* cuda_dialect.c: the cuda dialect: codegen's NVPTX kernels, launched on
 * the executor's CUDA device.
 *
 * Two kinds of statement are bound to it (lang/dialects.def):
 *   - a `call {dialect = "cuda"}` of a fused function: the callee is
 *     compiled as a whole by raf_cg_compile_ptx (codegen's NVPTX schedule,
 *     the on-disk kernel cache);
 *   - a statement of an op that lowering takes (its IMPL rows), outside
 *     any fused function: a one-statement kernel. The statement is copied
 *     into a fused function of its own (its operands as arguments, its
 *     results returned) in a module the dialect keeps, and compiled alike.
 *
 * prepare (at raf_exec_create) compiles every such function for the
 * device's architecture (the newest LLVM knows at or below the device's
 * compute capability: PTX runs on later GPUs, which the driver compiles
 * it for), has the driver compile each PTX to a cubin (cached on disk:
 * raf_cuda_module_load_cached), loads it as a module and keeps its
 * functions. A fused
 * callee the lowering declines runs statement by statement (bind declines
 * the call), as with the llvm dialect; a single statement it declines is
 * a located error, since nothing else on the device would run it. A call
 * whose memory plan computes results over operands (`inplace`) gets a
 * kernel of its own, compiled with the buffers shared.
 *
 * The data movement ops codegen does not lower (transpose, concat, split,
 * take, take_grad), and layer_norm_grad, run hand-written kernels (movement.c), from kernels.cu's
 * PTX, loaded once when some statement needs them.
 *
 * The kernel: checks cross_entropy labels as cpu-ref does (on the host,
 * from a staged copy of the labels), allocates the scratch arrays of the
 * rows' totals on the device, and queues each kernel of the PTX (the
 * kernel, then its `_final` one) on the device's stream with the buffers
 * as parameters. Nothing waits: the executor's copies are ordered after
 * the launches on the same stream.
 *
 * Nothing here has run on a GPU: the launches are checked against the
 * fake driver of test/cuda/ (geometry and parameters), and the PTX with
 * ptxas.
 */
#include "codegen/codegen.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/module.h"
#include "runtime/cuda/movement.h"
#include "runtime/dialects.h"
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct compiled {
  const raf_func *f;    /* the fused callee, or the one-statement wrapper */
  const raf_stmt *stmt; /* the single statement wrapped, or NULL */
  int *inplace;         /* NULL, or per result of f the argument it overwrites */
  bool ok;              /* false: declined */
  raf_cg_ptx ptx;
  raf_cuda_module *module;
  CUfunction fns[2];
  char why[256];
} compiled;

typedef struct cuda_state {
  raf_device *dev;
  char arch[16];
  raf_module *wrappers; /* the one-statement functions, or NULL */
  int nwrapped;
  compiled **funcs; /* owned, stable addresses (bind hands them out) */
  int n, cap;
  raf_cuda_module *hand; /* kernels.cu's, loaded when some statement needs it */
} cuda_state;

static raf_status cuda_run(const raf_kernel *k);

/* Whether op's kernel is one of the hand-written ones (movement.c, on
 * kernels.cu's PTX): the kernel table says. */
static bool is_hand(raf_opcode op) {
  return raf_cuda_kernels[op] && raf_cuda_kernels[op] != cuda_run;
}

raf_cuda_module *raf_cuda_hand_module(const raf_kernel *k) {
  const cuda_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_CUDA);
  return st ? st->hand : NULL;
}

static compiled *find_call(cuda_state *st, const raf_func *f,
                           const int *inplace) {
  for (int i = 0; i < st->n; i++)
    if (!st->funcs[i]->stmt && st->funcs[i]->f == f &&
        raf_inplace_equal(st->funcs[i]->inplace, inplace, f->nresults))
      return st->funcs[i];
  return NULL;
}

static compiled *find_stmt(cuda_state *st, const raf_stmt *s) {
  for (int i = 0; i < st->n; i++)
    if (st->funcs[i]->stmt == s)
      return st->funcs[i];
  return NULL;
}

static void release(void *state) {
  cuda_state *st = state;
  if (!st)
    return;
  for (int i = 0; i < st->n; i++) {
    compiled *c = st->funcs[i];
    raf_cuda_module_unload(st->dev, c->module);
    raf_cg_ptx_free(&c->ptx);
    free(c->inplace);
    free(c);
  }
  free(st->funcs);
  raf_cuda_module_unload(st->dev, st->hand);
  raf_module_destroy(st->wrappers);
  free(st);
}

/* A new zeroed entry, owned by st; NULL when out of memory. */
static compiled *add(cuda_state *st) {
  if (st->n == st->cap) {
    int cap = st->cap ? 2 * st->cap : 16;
    compiled **v = realloc(st->funcs, sizeof *v * (size_t)cap);
    if (!v)
      return NULL;
    st->funcs = v;
    st->cap = cap;
  }
  compiled *c = calloc(1, sizeof *c);
  if (c)
    st->funcs[st->n++] = c;
  return c;
}

/* "sm_90" for a compute capability 9.0 GPU: the newest architecture of
 * raf_cg_cuda_archs at or below it (not an "a" variant, whose PTX only
 * that exact GPU runs). false when the GPU is older than all of them. */
static bool arch_for(int major, int minor, char *buf, size_t size) {
  size_t n;
  const char *const *archs = raf_cg_cuda_archs(&n);
  int want = major * 10 + minor, best = -1;
  for (size_t i = 0; i < n; i++) {
    int v = atoi(archs[i] + 3);
    if (strchr(archs[i] + 3, 'a') || v > want || v <= best)
      continue;
    best = v;
    snprintf(buf, size, "%s", archs[i]);
  }
  return best >= 0;
}

/* The fused function of statement s alone: s's operands as arguments, s
 * copied (attributes shared with s's module, which outlives the
 * executor), its results returned. Owned by st->wrappers. NULL when out
 * of memory. */
static raf_func *wrap(cuda_state *st, raf_ctx *ctx, const raf_stmt *s) {
  if (!st->wrappers && !(st->wrappers = raf_module_create(ctx)))
    return NULL;
  raf_module *m = st->wrappers;
  char name[64];
  snprintf(name, sizeof name, "raf_%s_%d", raf_op_table[s->op].name,
           st->nwrapped++);
  raf_func *f = raf_func_create(m, name, s->loc);
  if (!f)
    return NULL;
  raf_value *args[64];
  raf_type *types[64];
  if (s->noperands > 64 || s->nresults > 64)
    return NULL;
  for (int i = 0; i < s->noperands; i++) {
    const raf_type *t = s->operands[i].value->type;
    raf_type *u = raf_type_get(m, t->dtype, t->rank, t->dims);
    if (!u || !(args[i] = raf_func_add_arg(f, NULL, u, s->loc)))
      return NULL;
  }
  for (int r = 0; r < s->nresults; r++) {
    const raf_type *t = s->results[r]->type;
    if (!(types[r] = raf_type_get(m, t->dtype, t->rank, t->dims)))
      return NULL;
  }
  raf_stmt *copy = raf_stmt_create(m, s->op, s->noperands, args, s->nresults,
                                   types, s->loc);
  if (!copy)
    return NULL;
  raf_stmt_set_attrs(m, copy, s->attrs.v, s->attrs.n);
  copy->cdata = s->cdata; /* a constant's data, in s's module */
  raf_stmt_insert_before(f, copy, NULL);
  raf_stmt *ret = raf_stmt_create(m, RAF_OP_RETURN, s->nresults,
                                  copy->results, 0, NULL, s->loc);
  raf_attr fused = {.name = "fused", .kind = RAF_ATTR_BOOL, .val.u.b = true,
                    .loc = s->loc};
  if (!ret || raf_attrs_set(m, &f->attrs, &fused, s->loc) != RAF_OK)
    return NULL;
  raf_stmt_insert_before(f, ret, NULL);
  raf_func_set_results(f, s->nresults, types);
  return s->nresults && !f->results ? NULL : f;
}

/* Compiles c->f to PTX and loads it. A decline leaves c->ok false with
 * c->why; an error is reported (at `at`) and is RAF_ERROR. */
static raf_status build(cuda_state *st, raf_ctx *ctx, compiled *c,
                        const raf_stmt *at) {
  bool declined = false;
  if (!raf_cg_compile_ptx(c->f, st->arch, NULL, c->inplace, &c->ptx,
                          &declined, c->why, sizeof c->why)) {
    if (declined)
      return RAF_OK;
    raf_diag_report(ctx, at->loc, RAF_SEV_ERROR, "cuda: compiling @%s: %s",
                    c->f->name, c->why);
    return RAF_ERROR;
  }
  if (raf_cuda_module_load_cached(st->dev, c->ptx.ptx, c->f->name,
                                  &c->module, NULL) != RAF_OK)
    return RAF_ERROR;
  for (int i = 0; i < c->ptx.nkernels && i < 2; i++)
    if (raf_cuda_module_function(st->dev, c->module, c->ptx.kernels[i].name,
                                 &c->fns[i]) != RAF_OK)
      return RAF_ERROR;
  c->ok = true;
  return RAF_OK;
}

static raf_status oom(raf_ctx *ctx, const raf_stmt *s) {
  raf_diag_report(ctx, s->loc, RAF_SEV_ERROR, "cuda: out of memory");
  return RAF_ERROR;
}

static const void *bind(void *state, const raf_stmt *s);

/* The statements of m bound to cuda: each fused callee (per in-place
 * plan) and each single statement compiled and loaded once. */
static raf_status prepare_stmt(cuda_state *st, raf_ctx *ctx,
                               const raf_stmt *s) {
  if (s->op == RAF_OP_CALL) {
    if (!raf_dialect_implements_call(RAF_DIALECT_CUDA, s->callee))
      return RAF_OK;
    bool no_mem;
    int *inplace = raf_stmt_inplace(s, &no_mem);
    if (no_mem)
      return oom(ctx, s);
    if (find_call(st, s->callee, inplace)) {
      free(inplace);
      return RAF_OK;
    }
    compiled *c = add(st);
    if (!c) {
      free(inplace);
      return oom(ctx, s);
    }
    c->f = s->callee;
    c->inplace = inplace;
    return build(st, ctx, c, s);
  }
  if (is_hand(s->op) && !st->hand) {
    const char *ptx = raf_cuda_embedded_ptx("kernels");
    if (!ptx) {
      raf_diag_report(ctx, s->loc, RAF_SEV_ERROR,
                      "cuda: %s: this build has no kernels.cu PTX",
                      raf_op_table[s->op].name);
      return RAF_ERROR;
    }
    return raf_cuda_module_load(st->dev, ptx, "kernels.cu", &st->hand);
  }
  if (s->op == RAF_OP_RETURN || s->op == RAF_OP_RESHAPE || is_hand(s->op) ||
      find_stmt(st, s))
    return RAF_OK;
  compiled *c = add(st);
  if (!c || !(c->f = wrap(st, ctx, s)))
    return oom(ctx, s);
  c->stmt = s;
  if (build(st, ctx, c, s) != RAF_OK)
    return RAF_ERROR;
  if (!c->ok) {
    raf_diag_report(ctx, s->loc, RAF_SEV_ERROR,
                    "cuda: %s: codegen does not lower it alone: %s",
                    raf_op_table[s->op].name, c->why);
    return RAF_ERROR;
  }
  return RAF_OK;
}

/* Whether some call of g in m runs its statements one by one: one that
 * is not cuda's, or that cuda declined. (A function nobody calls is an
 * entry point: it runs alone.) */
static bool runs_alone(cuda_state *st, const raf_module *m,
                       const raf_func *g) {
  bool called = false;
  for (const raf_func *h = m->first; h; h = h->next)
    for (const raf_stmt *s = h->first; s; s = s->next) {
      if (s->op != RAF_OP_CALL || s->callee != g)
        continue;
      called = true;
      if (!raf_stmt_bound_to(s, RAF_DIALECT_CUDA) || !bind(st, s))
        return true;
    }
  return !called;
}

static raf_status prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                          void **state) {
  *state = NULL;
  const raf_stmt *first = NULL;
  for (raf_func *g = m->first; g && !first; g = g->next)
    for (raf_stmt *s = g->first; s && !first; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_CUDA))
        first = s;
  if (!first)
    return RAF_OK;
  raf_device *dev = raf_exec_device(ex);
  if (raf_device_kind_of(dev) != RAF_DEVICE_CUDA) {
    raf_diag_report(ctx, first->loc, RAF_SEV_ERROR,
                    "cuda: the statement is bound to the cuda dialect, but "
                    "the executor runs on %s", raf_device_name(dev));
    return RAF_ERROR;
  }
  cuda_state *st = calloc(1, sizeof *st);
  if (!st)
    return oom(ctx, first);
  *state = st;
  st->dev = dev;
  int major, minor;
  raf_cuda_device_capability(dev, &major, &minor);
  if (!arch_for(major, minor, st->arch, sizeof st->arch)) {
    raf_diag_report(ctx, first->loc, RAF_SEV_ERROR,
                    "cuda: %s has compute capability %d.%d, older than any "
                    "architecture codegen emits PTX for",
                    raf_device_name(dev), major, minor);
    return RAF_ERROR;
  }
  /* The calls first: a fused function's statements get kernels of their
   * own only when some call of it runs them one by one, or when
   * --check-numerics may replay a call of it statement by statement. */
  for (raf_func *g = m->first; g; g = g->next)
    for (raf_stmt *s = g->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_CUDA) && s->op == RAF_OP_CALL &&
          prepare_stmt(st, ctx, s) != RAF_OK)
        return RAF_ERROR;
  for (raf_func *g = m->first; g; g = g->next) {
    if (raf_attrs_find(&g->attrs, "fused") && !runs_alone(st, m, g) &&
        !raf_exec_checks_numerics(ex))
      continue;
    for (raf_stmt *s = g->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_CUDA) && s->op != RAF_OP_CALL &&
          prepare_stmt(st, ctx, s) != RAF_OK)
        return RAF_ERROR;
  }
  return RAF_OK;
}

static const void *bind(void *state, const raf_stmt *s) {
  cuda_state *st = state;
  if (!st)
    return NULL;
  compiled *c = NULL;
  if (s->op == RAF_OP_CALL) {
    bool no_mem;
    int *inplace = raf_stmt_inplace(s, &no_mem);
    c = no_mem ? NULL : find_call(st, s->callee, inplace);
    free(inplace);
  } else if (s->op == RAF_OP_RESHAPE || is_hand(s->op)) {
    return st; /* their kernels need nothing bound: anything but NULL */
  } else {
    c = find_stmt(st, s);
  }
  return c && c->ok ? c : NULL;
}

const raf_dialect_hooks raf_cuda_hooks = {prepare, bind, release};

/* ---- The kernel ----------------------------------------------------------- */


/* cpu-ref's error for a label outside [0, classes), at the cross_entropy
 * (the statement itself for a one-statement kernel), from a copy of the
 * labels on the host: the kernel reads no logit for a bad label, but its
 * loss would be garbage. */
static raf_status check_labels(const raf_kernel *k, const compiled *c,
                               const raf_cg_label_check *ck) {
  const raf_tensor *t = k->in[ck->arg];
  void *staged = NULL;
  const void *data = raf_exec_host_data(k->ex, t, &staged);
  if (!data)
    return RAF_ERROR;
  raf_status rc = RAF_OK;
  for (int64_t r = 0; r < t->type->numel && rc == RAF_OK; r++) {
    int64_t label = raf_elem_get_i64(t->type->dtype, data, r);
    if (label == ck->ignore || (label >= 0 && label < ck->classes))
      continue;
    char where[128];
    raf_index_str(t->type, r, where, sizeof where);
    raf_kernel at = *k;
    at.stmt = c->stmt ? c->stmt : ck->stmt;
    if (ck->backward)
      rc = raf_kernel_fail(&at, "label %lld (labels element %lld) is out "
                           "of range for %lld classes", (long long)label,
                           (long long)r, (long long)ck->classes);
    else
      rc = raf_kernel_fail(&at,
                           "label %lld%s%s is out of range for %lld classes "
                           "(and is not ignore_index = %lld)",
                           (long long)label, *where ? " at " : "", where,
                           (long long)ck->classes, (long long)ck->ignore);
  }
  free(staged);
  return rc;
}

/* The call's (or the statement's) kernels, queued on the device's stream:
 * parameters are the operand buffers, the result buffers, then the
 * scratch arrays (info.nscratch arrays of info.rows doubles, one device
 * allocation freed after the launches, which the device orders). */
static raf_status cuda_run(const raf_kernel *k) {
  /* reshape: the same bytes in C order, copied on the device (the lowering
   * declines a reshape alone, having no element map to compute). */
  if (k->stmt->op == RAF_OP_RESHAPE)
    return raf_exec_copy(k->ex, k->out[0], k->in[0]);
  const compiled *c = k->bound;
  if (!c) /* bind declined it: prepare reported why */
    return raf_kernel_fail(k, "no cuda kernel was compiled for it");
  const raf_cg_info *info = &c->ptx.info;
  raf_device *dev = raf_exec_device(k->ex);
  for (int i = 0; i < info->nchecks; i++)
    if (check_labels(k, c, &info->checks[i]) != RAF_OK)
      return RAF_ERROR;
  int n = k->nin + k->nout, ns = info->nscratch;
  void *stack[64], **bufs = stack, *pstack[64], **params = pstack;
  if (n + ns > 64 && (!(bufs = malloc(sizeof *bufs * (size_t)(n + ns))) ||
                      !(params = malloc(sizeof *params * (size_t)(n + ns))))) {
    if (bufs != stack)
      free(bufs);
    return raf_kernel_fail(k, "out of memory");
  }
  void *scratch = NULL;
  size_t rows = (size_t)(info->rows ? info->rows : 1);
  raf_status rc = RAF_OK;
  /* The device's stream-ordered scratch: no cuMemFree after the
   * launches, which would wait for the whole device. */
  if (ns && raf_cuda_scratch(dev, sizeof(double) * (size_t)ns * rows,
                             &scratch) != RAF_OK)
    rc = raf_kernel_fail(k, "out of %s memory for the rows' totals",
                         raf_device_name(dev));
  for (int i = 0; i < k->nin; i++)
    bufs[i] = k->in[i]->data;
  for (int i = 0; i < k->nout; i++)
    bufs[k->nin + i] = k->out[i]->data;
  for (int i = 0; i < ns && scratch; i++)
    bufs[n + i] = (char *)scratch + sizeof(double) * (size_t)i * rows;
  for (int i = 0; i < n + ns; i++)
    params[i] = &bufs[i];
  for (int i = 0; i < c->ptx.nkernels && i < 2 && rc == RAF_OK; i++) {
    const raf_cg_launch *l = &c->ptx.kernels[i];
    raf_cuda_dims dims = {
        {(unsigned)l->grid[0], (unsigned)l->grid[1], (unsigned)l->grid[2]},
        {(unsigned)l->block[0], (unsigned)l->block[1], (unsigned)l->block[2]},
        0}; /* the kernels' shared memory is static */
    rc = raf_cuda_launch(dev, c->fns[i], l->name, &dims, params);
  }
  if (bufs != stack)
    free(bufs);
  if (params != pstack)
    free(params);
  return rc;
}

/* The kernel table: call, and every op of lang/codegen_ops.def (the
 * cuda dialect's IMPL rows expand the same list), run the same way, as
 * what bind prepared says; the hand-written kernels of the other IMPL rows
 * (test_dialects checks the rows and the table agree). */
const raf_kernel_fn raf_cuda_kernels[RAF_OP_COUNT] = {
    [RAF_OP_CALL] = cuda_run,
#define CODEGEN_OP(op, dtypes) [RAF_OP_##op] = cuda_run,
#include "lang/codegen_ops.def"
#undef CODEGEN_OP
    [RAF_OP_TRANSPOSE] = raf_cuda_transpose,
    [RAF_OP_CONCAT] = raf_cuda_concat,
    [RAF_OP_SPLIT] = raf_cuda_split,
    [RAF_OP_SLICE] = raf_cuda_slice,
    [RAF_OP_SLICE_GRAD] = raf_cuda_slice_grad,
    [RAF_OP_DROPOUT] = raf_cuda_dropout,
    [RAF_OP_TAKE] = raf_cuda_take,
    [RAF_OP_TAKE_GRAD] = raf_cuda_take_grad,
    [RAF_OP_LAYER_NORM_GRAD] = raf_cuda_layer_norm_grad,
    [RAF_OP_ARGMAX] = raf_cuda_argmax,
};
