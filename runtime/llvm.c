/* llvm.c: the llvm dialect: fused functions compiled by codegen/'s x86-64
 * JIT (LLVM ORC), bound to the calls the dispatch pass annotated.
 *
 * prepare (at raf_exec_create): every fused function that a `call {dialect
 * = "llvm"}` of the module names is compiled once (or loaded from the
 * kernel cache, codegen/cache.h); one the lowering declines is remembered
 * with its reason, and its calls run statement by statement (bind declines
 * them). The JIT is made only when some call asks for it. A call whose
 * memory plan computes results over its operands (`inplace`, plan-memory's)
 * gets a kernel of its own that takes each such pair as one buffer, or,
 * when the lowering cannot alias them, runs statement by statement.
 *
 * The kernel of `call`: checks cross_entropy labels as cpu-ref does, then
 * runs the compiled kernel over its rows with raf_kernel_parallel, in
 * ranges of a grain fixed by the shapes, so results are bit-identical at
 * every thread count.
 *
 * raf_llvm_report describes what the JIT did (raf-run --print-jit-stats).
 */
#include "runtime/llvm.h"

#include "codegen/codegen.h"
#include "runtime/dialects.h"
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct compiled {
  const raf_func *f;
  int *inplace; /* NULL, or per result of f the argument it overwrites */
  bool ok;      /* false: declined */
  raf_cg_kernel k;
  raf_cg_info info;
  char why[256];
} compiled;

typedef struct llvm_state {
  raf_jit *jit;
  compiled *funcs;
  int n, cap;
} llvm_state;

static bool wants_llvm(const raf_stmt *s) {
  return s->op == RAF_OP_CALL && raf_stmt_bound_to(s, RAF_DIALECT_LLVM) &&
         raf_dialect_runs(RAF_DIALECT_LLVM, s);
}

/* The kernel of f with the buffers `inplace` shares, once compiled. */
static compiled *find(llvm_state *st, const raf_func *f, const int *inplace) {
  for (int i = 0; i < st->n; i++)
    if (st->funcs[i].f == f &&
        raf_inplace_equal(st->funcs[i].inplace, inplace, f->nresults))
      return &st->funcs[i];
  return NULL;
}

static void release(void *state) {
  llvm_state *st = state;
  raf_jit_destroy(st->jit);
  for (int i = 0; i < st->n; i++)
    free(st->funcs[i].inplace);
  free(st->funcs);
  free(st);
}

static raf_status prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                          void **state) {
  (void)ex;
  llvm_state *st = calloc(1, sizeof *st);
  if (!st) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "llvm: out of memory");
    return RAF_ERROR;
  }
  *state = st;
  raf_status rc = RAF_OK;
  for (raf_func *g = m->first; g; g = g->next)
    for (raf_stmt *s = g->first; s; s = s->next) {
      if (!wants_llvm(s))
        continue;
      bool oom;
      int *inplace = raf_stmt_inplace(s, &oom);
      if (find(st, s->callee, inplace) || oom) {
        free(inplace);
        if (!oom)
          continue;
        raf_diag_report(ctx, s->loc, RAF_SEV_ERROR, "llvm: out of memory");
        return RAF_ERROR;
      }
      if (!st->jit && !(st->jit = raf_jit_create(ctx)))
        return RAF_ERROR;
      if (st->n == st->cap) {
        int cap = st->cap ? 2 * st->cap : 16;
        compiled *c = realloc(st->funcs, sizeof *c * (size_t)cap);
        if (!c) {
          free(inplace);
          raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                          "llvm: out of memory");
          return RAF_ERROR;
        }
        st->funcs = c;
        st->cap = cap;
      }
      compiled *c = &st->funcs[st->n++];
      memset(c, 0, sizeof *c);
      c->f = s->callee;
      c->inplace = inplace;
      bool declined;
      c->ok = raf_jit_compile(st->jit, s->callee, inplace, &c->k, &c->info,
                              &declined, c->why, sizeof c->why);
      if (!c->ok && !declined)
        rc = RAF_ERROR;
    }
  return rc;
}

static const void *bind(void *state, const raf_stmt *s) {
  llvm_state *st = state;
  if (!st || s->op != RAF_OP_CALL)
    return NULL;
  bool oom;
  int *inplace = raf_stmt_inplace(s, &oom);
  compiled *c = oom ? NULL : find(st, s->callee, inplace);
  free(inplace);
  return c && c->ok ? c : NULL;
}

const raf_dialect_hooks raf_llvm_hooks = {prepare, bind, release};

/* ---- The kernel of call ---------------------------------------------------- */


/* cpu-ref's error for a label outside [0, classes), at the cross_entropy. */
static raf_status check_labels(const raf_kernel *k,
                               const raf_cg_label_check *c) {
  const raf_tensor *t = k->in[c->arg];
  for (int64_t r = 0; r < t->type->numel; r++) {
    int64_t label = raf_elem_get_i64(t->type->dtype, t->data, r);
    if (label == c->ignore || (label >= 0 && label < c->classes))
      continue;
    char where[128];
    raf_index_str(t->type, r, where, sizeof where);
    raf_kernel at = *k;
    at.stmt = c->stmt;
    if (c->backward)
      return raf_kernel_fail(&at, "label %lld (labels element %lld) is out "
                             "of range for %lld classes", (long long)label,
                             (long long)r, (long long)c->classes);
    return raf_kernel_fail(&at,
                           "label %lld%s%s is out of range for %lld classes "
                           "(and is not ignore_index = %lld)",
                           (long long)label, *where ? " at " : "", where,
                           (long long)c->classes, (long long)c->ignore);
  }
  return RAF_OK;
}

typedef struct job {
  raf_cg_host_fn fn;
  void *const *bufs;
} job;

static void run_rows(void *data, int64_t begin, int64_t end) {
  const job *j = data;
  j->fn(j->bufs, begin, end);
}

static raf_status llvm_call(const raf_kernel *k) {
  const compiled *c = k->bound;
  for (int i = 0; i < c->info.nchecks; i++)
    if (check_labels(k, &c->info.checks[i]) != RAF_OK)
      return RAF_ERROR;
  void *stack[64], **bufs = stack;
  int n = k->nin + k->nout, ns = c->info.nscratch;
  double *scratch = NULL;
  if (n + ns > 64 && !(bufs = malloc(sizeof *bufs * (size_t)(n + ns))))
    return raf_kernel_fail(k, "out of memory");
  if (ns && !(scratch = malloc(sizeof *scratch * (size_t)ns *
                               (size_t)(c->info.rows ? c->info.rows : 1)))) {
    if (bufs != stack)
      free(bufs);
    return raf_kernel_fail(k, "out of memory for the rows' losses");
  }
  for (int i = 0; i < k->nin; i++)
    bufs[i] = k->in[i]->data;
  for (int i = 0; i < k->nout; i++)
    bufs[k->nin + i] = k->out[i]->data;
  for (int i = 0; i < ns; i++)
    bufs[n + i] = scratch + (size_t)i * (size_t)c->info.rows;
  job j = {c->k.fn, bufs};
  if (c->info.rows == 0)
    c->k.fn(bufs, 0, 0); /* the single-element results still get stored */
  else
    raf_kernel_parallel(k, c->info.rows, c->info.grain, run_rows, &j);
  if (c->k.final)
    c->k.final(bufs);
  free(scratch);
  if (bufs != stack)
    free(bufs);
  return RAF_OK;
}

const raf_kernel_fn raf_llvm_kernels[RAF_OP_COUNT] = {
    [RAF_OP_CALL] = llvm_call,
};

/* ---- Report ---------------------------------------------------------------- */

void raf_llvm_report(const raf_exec *ex, FILE *out) {
  const llvm_state *st = raf_exec_dialect_state(ex, RAF_DIALECT_LLVM);
  if (!st || !st->jit) {
    fprintf(out, "jit: no fused function called with the llvm dialect\n");
    return;
  }
  raf_jit_stats s;
  raf_jit_get_stats(st->jit, &s);
  fprintf(out,
          "jit: %d fused functions: %d compiled, %d from the cache, %d "
          "reused, %d declined (%.1f ms)\n",
          st->n, s.compiled, s.cached, s.reused, s.declined, s.compile_ms);
  if (s.cache_rejected)
    fprintf(out, "jit: %d corrupt cache entries rewritten\n",
            s.cache_rejected);
  fprintf(out, "jit: cache %s\n", s.cache_dir ? s.cache_dir : "off");
  for (int i = 0; i < st->n; i++)
    if (!st->funcs[i].ok)
      fprintf(out, "jit: @%s runs statement by statement: %s\n",
              st->funcs[i].f->name, st->funcs[i].why);
}
