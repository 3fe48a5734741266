/* exec.c: the executor (see exec.h for what it promises).
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
 * Memory. Every tensor comes from raf_exec_alloc, which keeps the live and
 * peak byte counts that --print-memory reports. Freed buffers are kept for
 * reuse by the next request of the same rounded size (a training step asks
 * for the same sizes every step): fresh pages from the system would cost a
 * page fault per 4 KiB on every step. The spare buffers count in neither
 * figure; they go back to the system when the executor is destroyed.
 */
#include "runtime/exec.h"

#include "runtime/dialects.h"
#include "runtime/pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct step {
  raf_stmt *stmt;
  raf_kernel_fn kernel; /* NULL for a call that runs its callee's plan */
  const void *bound;    /* the dialect's bind hook's data */
  struct plan *callee;  /* call */
  int *in, *out, *dies; /* slots */
  int ndies;
} step;

typedef struct plan {
  raf_func *func;
  int nslots;
  int nsteps; /* the statements before return */
  step *steps;
  int *returned; /* func->nresults slots */
  struct plan *next;
} plan;

/* A freed buffer kept for reuse, on the list of its bucket. */
typedef struct spare {
  size_t size;
  struct spare *next;
} spare;

enum { SPARE_BUCKETS = 64 };

struct raf_exec {
  raf_ctx *ctx;
  raf_module *m;
  raf_exec_options opts;
  raf_pool *pool;
  plan *plans;
  size_t live, peak;
  spare *spares[SPARE_BUCKETS]; /* by (size / 64) % SPARE_BUCKETS */
  void *dialect_state[RAF_DIALECT_COUNT]; /* the dialect hooks' */
};

raf_status raf_kernel_fail(const raf_kernel *k, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  raf_diag_report(k->ex->ctx, k->stmt->loc, RAF_SEV_ERROR, "%s: %s",
                  raf_op_table[k->stmt->op].name, msg);
  return RAF_ERROR;
}

typedef struct range_job {
  int64_t n, grain;
  raf_range_fn body;
  void *data;
} range_job;

static void run_chunk(void *data, int64_t index) {
  range_job *j = data;
  int64_t begin = index * j->grain;
  int64_t end = begin + j->grain < j->n ? begin + j->grain : j->n;
  j->body(j->data, begin, end);
}

void raf_kernel_parallel(const raf_kernel *k, int64_t n, int64_t grain,
                         raf_range_fn body, void *data) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  if (n <= grain || !k->ex->pool) {
    body(data, 0, n);
    return;
  }
  range_job j = {n, grain, body, data};
  raf_pool_run(k->ex->pool, (n + grain - 1) / grain, run_chunk, &j);
}

/* ---- Tensors -------------------------------------------------------------- */

raf_tensor *raf_exec_alloc(raf_exec *ex, raf_type *t) {
  raf_tensor *x = malloc(sizeof *x);
  size_t nbytes = (size_t)t->numel * (size_t)raf_dtype_size(t->dtype);
  /* 64-byte alignment suits every vector unit; never a zero-size request. */
  size_t rounded = nbytes ? (nbytes + 63) & ~(size_t)63 : 64;
  void *data = NULL;
  for (spare **at = &ex->spares[rounded / 64 % SPARE_BUCKETS]; x && *at;
       at = &(*at)->next)
    if ((*at)->size == rounded) {
      data = *at;
      *at = (*at)->next;
      break;
    }
  if (x && !data)
    data = aligned_alloc(64, rounded);
  if (!data) {
    free(x);
    char buf[128];
    raf_type_str(t, buf, sizeof buf);
    raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "out of memory allocating a %s tensor (%zu bytes)", buf,
                    nbytes);
    return NULL;
  }
  x->type = t;
  x->data = data;
  x->nbytes = nbytes;
  ex->live += nbytes;
  if (ex->live > ex->peak)
    ex->peak = ex->live;
  return x;
}

void raf_exec_free(raf_exec *ex, raf_tensor *t) {
  if (!t)
    return;
  ex->live -= t->nbytes;
  /* The buffer itself holds its spare record (it is at least 64 bytes). */
  spare *sp = t->data;
  sp->size = t->nbytes ? (t->nbytes + 63) & ~(size_t)63 : 64;
  sp->next = ex->spares[sp->size / 64 % SPARE_BUCKETS];
  ex->spares[sp->size / 64 % SPARE_BUCKETS] = sp;
  free(t);
}

size_t raf_exec_live_bytes(const raf_exec *ex) { return ex->live; }
size_t raf_exec_peak_bytes(const raf_exec *ex) { return ex->peak; }
int raf_exec_threads(const raf_exec *ex) { return raf_pool_threads(ex->pool); }

/* ---- Planning ------------------------------------------------------------- */

static plan *find_plan(raf_exec *ex, const raf_func *f) {
  for (plan *p = ex->plans; p; p = p->next)
    if (p->func == f)
      return p;
  return NULL;
}

static void free_plan(plan *p) {
  for (int i = 0; i < p->nsteps; i++) {
    free(p->steps[i].in);
    free(p->steps[i].out);
    free(p->steps[i].dies);
  }
  free(p->steps);
  free(p->returned);
  free(p);
}

/* The kernel bound to s, or NULL with a located error. */
static raf_kernel_fn bind(raf_exec *ex, const raf_stmt *s) {
  const char *name = raf_stmt_attr_str(s, "dialect");
  const char *op = raf_op_table[s->op].name;
  if (!name) {
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "%s: no dialect chosen (run the dispatch pass)", op);
    return NULL;
  }
  raf_dialect d;
  if (!raf_dialect_from_name(name, strlen(name), &d) ||
      !raf_dialect_implements(d, s->op, raf_stmt_key_dtype(s))) {
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "%s: dialect '%s' does not implement it", op, name);
    return NULL;
  }
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
  const char *name = raf_stmt_attr_str(s, "dialect");
  *bound = NULL;
  if (!name)
    return NULL;
  raf_dialect d;
  if (!raf_dialect_from_name(name, strlen(name), &d) ||
      !raf_dialect_implements_call(d, s->callee)) {
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "call: dialect '%s' does not implement a call of @%s",
                    name, s->callee->name);
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
    if (s->op == RAF_OP_CALL && ok) {
      st->kernel = bind_call(ex, s, &st->bound, &ok);
    } else if (ok) {
      st->kernel = bind(ex, s);
      ok = st->kernel != NULL;
      const char *name = raf_stmt_attr_str(s, "dialect");
      raf_dialect d;
      bool has_hook;
      if (ok && raf_dialect_from_name(name, strlen(name), &d))
        st->bound = bind_data(ex, s, d, &has_hook);
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

raf_exec *raf_exec_create(raf_ctx *ctx, raf_module *m,
                          const raf_exec_options *opts) {
  raf_exec *ex = calloc(1, sizeof *ex);
  if (!ex)
    return NULL;
  ex->ctx = ctx;
  ex->m = m;
  if (opts)
    ex->opts = *opts;
  int threads = ex->opts.threads;
  if (threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 ? (int)n : 1;
  }
  ex->pool = raf_pool_create(threads);
  bool ok = ex->pool != NULL;
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
        p->steps[i].callee = find_plan(ex, p->steps[i].stmt->callee);
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
  for (int b = 0; b < SPARE_BUCKETS; b++)
    while (ex->spares[b]) {
      spare *sp = ex->spares[b];
      ex->spares[b] = sp->next;
      free(sp);
    }
  free(ex);
}

void *raf_exec_dialect_state(const raf_exec *ex, raf_dialect d) {
  return d >= 0 && d < RAF_DIALECT_COUNT ? ex->dialect_state[d] : NULL;
}

/* ---- Running -------------------------------------------------------------- */

/* The first NaN or Inf among t's elements, or -1. */
static int64_t first_non_finite(const raf_tensor *t) {
  raf_dtype dt = t->type->dtype;
  if (!raf_dtype_is_float(dt))
    return -1;
  for (int64_t i = 0; i < t->type->numel; i++)
    if (!isfinite(raf_elem_get_f64(dt, t->data, i)))
      return i;
  return -1;
}

static raf_status check_numerics(raf_exec *ex, const raf_stmt *s,
                                 raf_tensor *const *out) {
  for (int r = 0; r < s->nresults; r++) {
    int64_t i = first_non_finite(out[r]);
    if (i < 0)
      continue;
    double v = raf_elem_get_f64(out[r]->type->dtype, out[r]->data, i);
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "%s: result %%%s has %s at flat index %lld "
                    "(--check-numerics)",
                    raf_op_table[s->op].name, s->results[r]->name,
                    isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf", (long long)i);
    return RAF_ERROR;
  }
  return RAF_OK;
}

static raf_status run_plan(raf_exec *ex, plan *p, raf_tensor *const *args,
                           raf_tensor **results);

static raf_status run_step_with(raf_exec *ex, step *st, raf_tensor **slot,
                                raf_tensor **in, raf_tensor **out);

static raf_status run_step(raf_exec *ex, step *st, raf_tensor **slot) {
  raf_stmt *s = st->stmt;
  /* Operand and result tensors: on the stack, or (a call of a function
   * with many params, say) on the heap. */
  raf_tensor *small[2 * 64], **in = small, **out = small + 64;
  if (s->noperands > 64 || s->nresults > 64) {
    in = malloc(sizeof *in * (size_t)(s->noperands + s->nresults + 1));
    if (!in) {
      raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR, "%s: out of memory",
                      raf_op_table[s->op].name);
      return RAF_ERROR;
    }
    out = in + s->noperands;
  }
  raf_status rc = run_step_with(ex, st, slot, in, out);
  if (in != small)
    free(in);
  return rc;
}

static raf_status run_step_with(raf_exec *ex, step *st, raf_tensor **slot,
                                raf_tensor **in, raf_tensor **out) {
  raf_stmt *s = st->stmt;
  for (int i = 0; i < s->noperands; i++)
    in[i] = slot[st->in[i]];
  if (s->op == RAF_OP_CALL && !st->kernel) {
    raf_status rc = run_plan(ex, st->callee, in, out);
    for (int r = 0; r < s->nresults; r++)
      slot[st->out[r]] = out[r];
    return rc;
  }
  for (int r = 0; r < s->nresults; r++) {
    out[r] = slot[st->out[r]] = raf_exec_alloc(ex, s->results[r]->type);
    if (!out[r])
      return RAF_ERROR;
  }
  raf_kernel k = {ex, s, s->noperands, s->nresults, in, out, st->bound};
  if (st->kernel(&k) != RAF_OK)
    return RAF_ERROR;
  if (ex->opts.check_numerics)
    return check_numerics(ex, s, out);
  return RAF_OK;
}

static raf_status run_plan(raf_exec *ex, plan *p, raf_tensor *const *args,
                           raf_tensor **results) {
  raf_func *f = p->func;
  raf_tensor *stack[256];
  raf_tensor **slot =
      p->nslots <= 256 ? stack : calloc((size_t)p->nslots, sizeof *slot);
  if (!slot)
    return RAF_ERROR;
  if (slot == stack)
    memset(stack, 0, sizeof(raf_tensor *) * (size_t)p->nslots);
  for (int i = 0; i < f->nargs; i++)
    slot[i] = args[i];
  raf_status rc = RAF_OK;
  for (int i = 0; i < p->nsteps && rc == RAF_OK; i++) {
    step *st = &p->steps[i];
    rc = run_step(ex, st, slot);
    for (int d = 0; d < st->ndies; d++) {
      raf_exec_free(ex, slot[st->dies[d]]);
      slot[st->dies[d]] = NULL;
    }
  }
  /* A value returned twice, or an argument returned, is copied so that
   * every result is a tensor of its own. */
  for (int r = 0; r < f->nresults; r++) {
    int from = p->returned[r];
    bool shared = from < f->nargs;
    for (int q = 0; q < r; q++)
      shared |= p->returned[q] == from;
    raf_tensor *t = slot[from];
    if (rc == RAF_OK && shared && t) {
      raf_tensor *c = raf_exec_alloc(ex, t->type);
      if (c)
        memcpy(c->data, t->data, t->nbytes);
      else
        rc = RAF_ERROR;
      t = c;
    }
    results[r] = t;
  }
  if (rc != RAF_OK) {
    /* Free what was made, once each: the slots still live, the copies. */
    for (int r = 0; r < f->nresults; r++)
      if (results[r] && results[r] != slot[p->returned[r]])
        raf_exec_free(ex, results[r]);
    for (int i = f->nargs; i < p->nslots; i++)
      raf_exec_free(ex, slot[i]);
    for (int r = 0; r < f->nresults; r++)
      results[r] = NULL;
  }
  if (slot != stack)
    free(slot);
  return rc;
}

raf_status raf_exec_call(raf_exec *ex, raf_func *f, raf_tensor *const *args,
                         raf_tensor **results) {
  plan *p = find_plan(ex, f);
  if (!p) {
    raf_diag_report(ex->ctx, f->loc, RAF_SEV_ERROR, "@%s was not planned",
                    f->name);
    return RAF_ERROR;
  }
  return run_plan(ex, p, args, results);
}

void raf_exec_donate(raf_func *f, raf_tensor *const *args,
                     raf_tensor *const *results) {
  for (int r = 0; r < f->nresults; r++) {
    const raf_attr *a = raf_attrs_find(&f->results[r].attrs, "updates");
    if (!a || a->kind != RAF_ATTR_VALUE || !a->val.u.value)
      continue;
    int k = a->val.u.value->index;
    if (k >= 0 && k < f->nargs && args[k]->nbytes == results[r]->nbytes)
      memcpy(args[k]->data, results[r]->data, results[r]->nbytes);
  }
}
