/* exec_plan.c: planning (exec_internal.h): raf_exec_create makes a plan
 * per function and binds its statements to kernels.
 *
 * Plans. A function's plan numbers its values into slots (arguments first,
 * then statement results in order) and turns each statement into a step:
 * the bound kernel, the operand and result slots, and the slots that die
 * after it. A value dies after its last use; a value nothing uses dies
 * right after the statement that made it; arguments belong to the caller
 * and returned values move to the caller, so neither is freed. Plans are
 * made once per function at raf_exec_create, so a call does no lookups.
 *
 * Calls. A `call` with no dialect annotation runs the callee's plan. One
 * annotated with a dialect (the dispatch pass's call rule: a dialect that
 * compiles the fused callee as a whole) runs that dialect's `call` kernel
 * like any statement, unless the dialect declines it at binding; then it
 * runs the callee's plan too.
 *
 * Dialect hooks (runtime/dialects.h). Before planning, raf_exec_create
 * calls each dialect's prepare hook (the llvm dialect compiles the fused
 * functions its calls name); binding a statement asks the dialect's bind
 * hook for the data its kernel gets (raf_kernel.bound). Nothing here knows
 * what a dialect does with them.
 *
 * A function with a memory plan (plan-memory's, in its attributes) gets
 * its places here too (attach_memory_plan), read once; exec.c runs it.
 */
#include "runtime/exec_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Planning ------------------------------------------------------------- */

plan *exec_find_plan(raf_exec *ex, const raf_func *f) {
  for (plan *p = ex->plans; p; p = p->next)
    if (p->func == f)
      return p;
  return NULL;
}

static void free_mplan(mplan *m);

static void free_plan(plan *p) {
  free_mplan(p->mem);
  for (int i = 0; i < p->nsteps; i++) {
    free(p->steps[i].in);
    free(p->steps[i].out);
    free(p->steps[i].dies);
  }
  free(p->steps);
  free(p->returned);
  free(p);
}

/* Whether dialect d's kernels run on the executor's device; reports a
 * located error at s when they do not (no silent run on another device). */
static bool runs_here(raf_exec *ex, const raf_stmt *s, raf_dialect d) {
  const char *kind = raf_device_kind_name(raf_device_kind_of(ex->device));
  const char *device = raf_dialect_get(d)->device;
  if (strcmp(device, kind) == 0)
    return true;
  raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                  "%s: no %s implementation (dialect '%s' runs on the %s, "
                  "not on %s)",
                  raf_op_table[s->op].name, kind, raf_dialect_get(d)->name,
                  device, raf_device_name(ex->device));
  return false;
}

/* Whether this build has dialect d; else a located error at s with the
 * reason its traits give. */
static bool built_here(raf_exec *ex, const raf_stmt *s, raf_dialect d) {
  const char *why = raf_dialect_unavailable(d);
  if (why && !raf_dialect_kernel(d, s->op))
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR, "%s: dialect %s: %s",
                    raf_op_table[s->op].name, raf_dialect_get(d)->name, why);
  return !why || raf_dialect_kernel(d, s->op);
}

/* The kernel bound to s, or NULL with a located error. */
static raf_kernel_fn bind(raf_exec *ex, const raf_stmt *s) {
  raf_dialect d = raf_stmt_dialect(s);
  const char *op = raf_op_table[s->op].name;
  if (d == RAF_DIALECT_COUNT) {
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "%s: no dialect chosen (run the dispatch pass)", op);
    return NULL;
  }
  const char *name = raf_dialect_get(d)->name;
  if (!raf_dialect_runs(d, s)) {
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "%s: dialect '%s' does not implement it", op, name);
    return NULL;
  }
  if (!runs_here(ex, s, d) || !built_here(ex, s, d))
    return NULL;
  raf_kernel_fn k = raf_dialect_kernel(d, s->op);
  if (!k)
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "%s: dialect '%s' has no kernel for it in this build", op,
                    name);
  return k;
}

/* The bind hook's data for s in dialect d (NULL when none). */
static const void *bind_data(raf_exec *ex, const raf_stmt *s, raf_dialect d,
                             bool *has_hook) {
  const raf_dialect_hooks *h = raf_dialect_hooks_of(d);
  *has_hook = h && h->bind;
  return *has_hook ? h->bind(ex->dialect_state[d], s) : NULL;
}

/* A call's kernel: NULL runs the callee's plan (no annotation, or the
 * dialect declined it); *ok false after a located error. */
static raf_kernel_fn bind_call(raf_exec *ex, const raf_stmt *s,
                               const void **bound, bool *ok) {
  raf_dialect d = raf_stmt_dialect(s);
  *bound = NULL;
  if (d == RAF_DIALECT_COUNT)
    return NULL;
  if (!raf_dialect_runs(d, s)) {
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "call: dialect '%s' does not implement a call of @%s",
                    raf_dialect_get(d)->name, s->callee->name);
    *ok = false;
    return NULL;
  }
  if (!runs_here(ex, s, d) || !built_here(ex, s, d)) {
    *ok = false;
    return NULL;
  }
  bool has_hook;
  *bound = bind_data(ex, s, d, &has_hook);
  raf_kernel_fn k = raf_dialect_kernel(d, s->op);
  return k && (*bound || !has_hook) ? k : NULL;
}

static int *slots_of(raf_strmap *slot_of, raf_value *const *v, int n) {
  int *out = calloc(n > 0 ? (size_t)n : 1, sizeof(int));
  for (int i = 0; out && i < n; i++)
    out[i] = (int)(intptr_t)raf_strmap_get(slot_of, v[i]->name,
                                           strlen(v[i]->name)) -
             1;
  return out;
}

static void put_slot(raf_strmap *slot_of, const raf_value *v, int slot1) {
  raf_strmap_put(slot_of, v->name, strlen(v->name), (void *)(intptr_t)slot1);
}

static plan *make_plan(raf_exec *ex, raf_func *f) {
  plan *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->func = f;
  raf_strmap slot_of; /* name -> slot + 1 */
  raf_strmap_init(&slot_of);
  int nslots = 0, nsteps = 0;
  for (int i = 0; i < f->nargs; i++)
    put_slot(&slot_of, f->args[i].value, ++nslots);
  raf_stmt *ret = NULL;
  for (raf_stmt *s = f->first; s; s = s->next) {
    if (s->op == RAF_OP_RETURN) {
      ret = s;
      continue;
    }
    nsteps++;
    for (int r = 0; r < s->nresults; r++)
      put_slot(&slot_of, s->results[r], ++nslots);
  }
  p->nslots = nslots;
  p->nsteps = nsteps;
  p->steps = calloc((size_t)(nsteps ? nsteps : 1), sizeof(step));
  /* dies_at[slot]: the step after which the slot's tensor is freed, the
   * later of its definition and its last use; -1 for never. */
  int *dies_at = malloc(sizeof(int) * (size_t)(nslots ? nslots : 1));
  bool ok = p->steps && dies_at && ret;
  for (int i = 0; ok && i < nslots; i++)
    dies_at[i] = -1;
  int k = 0;
  for (raf_stmt *s = f->first; ok && s; s = s->next) {
    if (s->op == RAF_OP_RETURN)
      continue;
    step *st = &p->steps[k];
    st->stmt = s;
    raf_value *ins[64], **inv = s->noperands <= 64
                                    ? ins
                                    : malloc(sizeof(raf_value *) *
                                             (size_t)s->noperands);
    for (int i = 0; inv && i < s->noperands; i++)
      inv[i] = s->operands[i].value;
    st->in = inv ? slots_of(&slot_of, inv, s->noperands) : NULL;
    if (inv != ins)
      free(inv);
    st->out = slots_of(&slot_of, s->results, s->nresults);
    ok = st->in && st->out;
    for (int i = 0; ok && i < s->noperands; i++)
      dies_at[st->in[i]] = k;
    for (int r = 0; ok && r < s->nresults; r++)
      dies_at[st->out[r]] = k;
    /* An async collective reads its operands until its wait. */
    const raf_stmt *start = s->op == RAF_OP_WAIT ? s->operands[0].value->def
                                                 : NULL;
    for (int i = 0; ok && start && i < start->noperands; i++) {
      int *in = slots_of(&slot_of, &start->operands[i].value, 1);
      ok = in != NULL;
      if (ok && dies_at[*in] < k)
        dies_at[*in] = k;
      free(in);
    }
    if (s->op == RAF_OP_CALL && ok) {
      st->kernel = bind_call(ex, s, &st->bound, &ok);
    } else if (ok) {
      st->kernel = bind(ex, s);
      ok = st->kernel != NULL;
      bool has_hook;
      if (ok)
        st->bound = bind_data(ex, s, raf_stmt_dialect(s), &has_hook);
    }
    k++;
  }
  if (ok) {
    raf_value **rv = malloc(sizeof *rv * (size_t)(ret->noperands + 1));
    for (int i = 0; rv && i < ret->noperands; i++)
      rv[i] = ret->operands[i].value;
    p->returned = rv ? slots_of(&slot_of, rv, ret->noperands) : NULL;
    free(rv);
    ok = p->returned != NULL;
  }
  /* Arguments belong to the caller and returned values move to it. */
  for (int i = 0; ok && i < f->nargs; i++)
    dies_at[i] = -1;
  for (int i = 0; ok && i < ret->noperands; i++)
    dies_at[p->returned[i]] = -1;
  for (int slot = 0; ok && slot < nslots; slot++) {
    if (dies_at[slot] < 0)
      continue;
    step *st = &p->steps[dies_at[slot]];
    int *d = realloc(st->dies, sizeof(int) * (size_t)(st->ndies + 1));
    if (!d) {
      ok = false;
      break;
    }
    st->dies = d;
    d[st->ndies++] = slot;
  }
  free(dies_at);
  raf_strmap_free(&slot_of);
  if (!ok) {
    if (!ret)
      raf_diag_report(ex->ctx, f->loc, RAF_SEV_ERROR,
                      "@%s has no return statement", f->name);
    free_plan(p);
    return NULL;
  }
  return p;
}

static raf_status attach_memory_plan(raf_exec *ex, plan *p);

raf_exec *raf_exec_create(raf_ctx *ctx, raf_module *m,
                          const raf_exec_options *opts) {
  raf_exec *ex = calloc(1, sizeof *ex);
  if (!ex) {
    raf_device_destroy(opts ? opts->device : NULL);
    return NULL;
  }
  ex->ctx = ctx;
  ex->m = m;
  if (opts)
    ex->opts = *opts;
  const char *sync = getenv("RAF_CUDA_SYNC"); /* raf_exec_options.sync_each */
  if (sync && strcmp(sync, "1") == 0)
    ex->opts.sync_each = true;
  ex->device = ex->opts.device;
  ex->opts.device = NULL; /* the executor's own now */
  bool ok = ex->device ||
            raf_device_open(ctx, RAF_DEVICE_HOST, 0, &ex->device) == RAF_OK;
  int threads = ex->opts.threads;
  if (threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (int)n : 1;
  }
  ex->pool = ok ? raf_pool_create(threads) : NULL;
  ok = ok && ex->pool != NULL;
  for (int d = 0; ok && d < RAF_DIALECT_COUNT; d++) {
    const raf_dialect_hooks *h = raf_dialect_hooks_of((raf_dialect)d);
    if (h && h->prepare)
      ok = h->prepare(ex, ctx, m, &ex->dialect_state[d]) == RAF_OK;
  }
  for (raf_func *f = m->first; ok && f; f = f->next) {
    plan *p = make_plan(ex, f);
    if (!p) {
      ok = false;
      continue;
    }
    p->next = ex->plans;
    ex->plans = p;
  }
  for (plan *p = ex->plans; ok && p; p = p->next)
    for (int i = 0; i < p->nsteps; i++)
      if (p->steps[i].stmt->op == RAF_OP_CALL)
        p->steps[i].callee = exec_find_plan(ex, p->steps[i].stmt->callee);
  for (plan *p = ex->plans; ok && p; p = p->next)
    ok = attach_memory_plan(ex, p) == RAF_OK;
  if (!ok) {
    raf_exec_destroy(ex);
    return NULL;
  }
  return ex;
}

void raf_exec_destroy(raf_exec *ex) {
  if (!ex)
    return;
  while (ex->plans) {
    plan *p = ex->plans;
    ex->plans = p->next;
    free_plan(p);
  }
  for (int d = 0; d < RAF_DIALECT_COUNT; d++) {
    const raf_dialect_hooks *h = raf_dialect_hooks_of((raf_dialect)d);
    if (h && h->release && ex->dialect_state[d])
      h->release(ex->dialect_state[d]);
  }
  raf_pool_destroy(ex->pool);
  if (ex->device)
    raf_device_synchronize(ex->device); /* nothing queued on what is freed */
  exec_free_spares(ex);
  raf_device_destroy(ex->device);
  free(ex);
}

void *raf_exec_dialect_state(const raf_exec *ex, raf_dialect d) {
  return d >= 0 && d < RAF_DIALECT_COUNT ? ex->dialect_state[d] : NULL;
}

int raf_exec_threads(const raf_exec *ex) { return raf_pool_threads(ex->pool); }

int raf_exec_profile(const raf_exec *ex, raf_profile_entry **entries) {
  int n = 0;
  for (const plan *p = ex->plans; p; p = p->next)
    for (int i = 0; i < p->nsteps; i++)
      n += p->steps[i].prof_runs > 0;
  *entries = calloc((size_t)n + 1, sizeof **entries);
  if (!*entries)
    return -1;
  int k = 0;
  for (const plan *p = ex->plans; p; p = p->next)
    for (int i = 0; i < p->nsteps; i++)
      if (p->steps[i].prof_runs > 0)
        (*entries)[k++] = (raf_profile_entry){
            p->steps[i].stmt, p->steps[i].prof_ns, p->steps[i].prof_runs};
  return n;
}

static void free_mplan(mplan *m) {
  if (!m)
    return;
  raf_mem_free(&m->mp);
  free(m->view);
  free(m->slot);
  free(m->io);
  free(m->interp);
  free(m->skip);
  free(m->moves);
  free(m);
}

static raf_status attach_memory_plan(raf_exec *ex, plan *p) {
  mplan *m = calloc(1, sizeof *m);
  if (!m)
    return RAF_ERROR;
  if (raf_mem_read(ex->ctx, p->func, &m->mp) != RAF_OK ||
      !m->mp.planned) {
    bool planned = m->mp.planned;
    free_mplan(m);
    return planned ? RAF_ERROR : RAF_OK;
  }
  raf_mem_plan *mp = &m->mp;
  int nio = 1;
  for (int k = 0; k < p->nsteps; k++) {
    const raf_stmt *s = p->steps[k].stmt;
    if (s->noperands + s->nresults > nio)
      nio = s->noperands + s->nresults;
  }
  size_t n = (size_t)mp->nvalues + 1, ns = (size_t)p->nsteps + 1;
  m->view = calloc(n, sizeof *m->view);
  m->slot = calloc(n, sizeof *m->slot);
  m->io = calloc((size_t)nio, sizeof *m->io);
  m->interp = calloc(ns, sizeof *m->interp);
  m->skip = calloc(ns, sizeof *m->skip);
  m->moves = calloc(ns, sizeof *m->moves);
  if (!m->view || !m->slot || !m->io || !m->interp || !m->skip ||
      !m->moves ||
      mp->nvalues != p->nslots || mp->nstmts != p->nsteps) {
    free_mplan(m);
    raf_diag_report(ex->ctx, p->func->loc, RAF_SEV_ERROR,
                    "out of memory planning @%s", p->func->name);
    return RAF_ERROR;
  }
  for (int id = 0; id < mp->nvalues; id++)
    m->view[id] = (raf_tensor){mp->v[id].value->type, NULL,
                               (size_t)mp->v[id].bytes,
                               raf_device_kind_of(ex->device)};
  for (int k = 0; k < p->nsteps; k++) {
    const step *st = &p->steps[k];
    for (int r = 0; r < st->stmt->nresults; r++) {
      m->moves[k] |= mp->v[st->out[r]].staged;
      if (mp->v[st->out[r]].inplace >= 0) {
        /* A dialect's bind hook bound a call only to a kernel that honours
         * its `inplace` (runtime/dialects.h); one with no hook cannot. */
        m->interp[k] =
            st->stmt->op == RAF_OP_CALL && st->kernel && !st->bound;
        /* A wait shares its operand's buffer as a view does, but must
         * run: that is where the collective is waited for. */
        m->skip[k] = raf_op_table[st->stmt->op].inplace == RAF_INPLACE_VIEW &&
                     st->stmt->op != RAF_OP_WAIT;
      }
    }
  }
  p->mem = m;
  return RAF_OK;
}
