/* exec.c: running the executor's plans (exec_internal.h; see exec.h for
 * what the executor promises).
 *
 * Plans (exec_plan.c) number a function's values into slots and turn each
 * statement into a step; a call runs them in order: allocate the results
 * of a step, run its kernel, free the slots whose last use it was. A
 * `call` step that no dialect bound runs its callee's plan.
 *
 * Planned functions (a memory plan in their attributes, plan-memory's;
 * the section at the end of this file) run in one arena per call instead:
 * no allocation per statement, nothing freed after one, results in place
 * over their operands, updates computed in their arguments' buffers.
 */
#include "runtime/exec_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "[1,0]": the index of flat element i of type t (empty for a scalar). */
void raf_index_str(const raf_type *t, int64_t i, char *buf, size_t size) {
  int64_t idx[RAF_MAX_RANK];
  for (int d = t->rank - 1; d >= 0; d--) {
    idx[d] = t->dims[d] ? i % t->dims[d] : 0;
    i = t->dims[d] ? i / t->dims[d] : 0;
  }
  size_t len = 0;
  buf[0] = '\0';
  for (int d = 0; d < t->rank && len < size; d++)
    len += (size_t)snprintf(buf + len, size - len, "%s%lld", d ? "," : "[",
                            (long long)idx[d]);
  if (t->rank && len < size)
    snprintf(buf + len, size - len, "]");
}

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

/* ---- Running -------------------------------------------------------------- */

/* ---- --check-numerics ------------------------------------------------------
 *
 * After each statement its float results are scanned (f16 and bf16 too);
 * the first NaN or Inf is an error at the statement, naming the op, the
 * result and the element. A call that a dialect ran as one kernel (a
 * fused function compiled by llvm) made its values inside the kernel,
 * where no statement can be named: it is replayed, its callee run
 * statement by statement on the same operands with the check on, so that
 * the error names the statement inside the fused function that made the
 * value, at its location, and a note names the call. Operands the kernel
 * computed results over (in place) are copied before it runs, so the
 * replay reads what the kernel read. If the replay makes no NaN or Inf
 * (a kernel's vectorised math can differ from libm in the last ulp), the
 * error names the call. */

/* The first NaN or Inf among t's elements into *at (-1 for none), and its
 * value into *v, read where the host can (staged from the device). */
static raf_status first_non_finite(raf_exec *ex, const raf_tensor *t,
                                   int64_t *at, double *v) {
  raf_dtype dt = t->type->dtype;
  *at = -1;
  if (!raf_dtype_is_float(dt))
    return RAF_OK;
  void *staged;
  const void *data = raf_exec_host_data(ex, t, &staged);
  if (!data)
    return RAF_ERROR;
  for (int64_t i = 0; i < t->type->numel; i++)
    if (!isfinite(*v = raf_elem_get_f64(dt, data, i))) {
      *at = i;
      break;
    }
  free(staged);
  return RAF_OK;
}

/* Whether a step is a call its dialect runs as one kernel. */
static bool runs_as_kernel(const step *st) {
  return st->stmt->op == RAF_OP_CALL && st->kernel && st->callee;
}

/* Before a call's kernel runs under --check-numerics: copies on the
 * device (not counted as tensor memory) of the operands whose buffers a
 * result shares, for a replay; *saved NULL when there are none. */
static raf_status save_overwritten(raf_exec *ex, const step *st,
                                   raf_tensor *const *in,
                                   raf_tensor *const *out,
                                   raf_tensor **saved) {
  const raf_stmt *s = st->stmt;
  *saved = NULL;
  for (int i = 0; i < s->noperands; i++) {
    bool shared = false;
    for (int r = 0; r < s->nresults && !shared; r++)
      shared = in[i]->data && in[i]->data == out[r]->data;
    if (!shared)
      continue;
    if (!*saved && !(*saved = calloc((size_t)s->noperands, sizeof **saved)))
      return RAF_ERROR;
    raf_tensor *c = &(*saved)[i];
    *c = *in[i];
    c->data = NULL;
    if (raf_device_alloc(ex->device, in[i]->nbytes, &c->data) != RAF_OK ||
        exec_copy_bytes(ex, c->data, c->device, in[i]->data, in[i]->device,
                        in[i]->nbytes) != RAF_OK)
      return RAF_ERROR;
  }
  return RAF_OK;
}

static void free_saved(raf_exec *ex, const step *st, raf_tensor *saved) {
  for (int i = 0; saved && i < st->stmt->noperands; i++)
    raf_device_free(ex->device, saved[i].data);
  free(saved);
}

static raf_status run_plan(raf_exec *ex, plan *p, raf_tensor *const *args,
                           raf_tensor **results);

/* Runs the callee of a kernel call statement by statement on the operands
 * (saved copies where the kernel overwrote them), with the check on:
 * RAF_ERROR when a statement inside reported. */
static raf_status replay_call(raf_exec *ex, const step *st,
                              raf_tensor *const *in, raf_tensor *saved) {
  const raf_stmt *s = st->stmt;
  raf_tensor **args = calloc((size_t)s->noperands + 1, sizeof *args);
  raf_tensor **made = calloc((size_t)s->nresults + 1, sizeof *made);
  raf_status rc = RAF_ERROR;
  if (args && made) {
    for (int i = 0; i < s->noperands; i++)
      args[i] = saved && saved[i].data ? &saved[i] : in[i];
    rc = run_plan(ex, st->callee, args, made);
    for (int r = 0; rc == RAF_OK && r < s->nresults; r++)
      raf_exec_free(ex, made[r]);
  }
  free(args);
  free(made);
  return rc;
}

static raf_status check_numerics(raf_exec *ex, const step *st,
                                 raf_tensor *const *in,
                                 raf_tensor *const *out, raf_tensor *saved) {
  const raf_stmt *s = st->stmt;
  for (int r = 0; r < s->nresults; r++) {
    int64_t i;
    double v;
    if (first_non_finite(ex, out[r], &i, &v) != RAF_OK)
      return RAF_ERROR;
    if (i < 0)
      continue;
    raf_dtype dt = out[r]->type->dtype;
    const char *what = isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    const char *dialect = raf_stmt_dialect_name(s);
    if (runs_as_kernel(st) && replay_call(ex, st, in, saved) != RAF_OK) {
      raf_diag_report(ex->ctx, s->loc, RAF_SEV_NOTE,
                      "in @%s, called here (its %s kernel made result %%%s "
                      "%s at flat index %lld)",
                      s->callee->name, dialect ? dialect : "compiled",
                      s->results[r]->name, what, (long long)i);
      return RAF_ERROR;
    }
    raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                    "%s: result %%%s has %s at flat index %lld "
                    "(--check-numerics)",
                    raf_op_table[s->op].name, s->results[r]->name, what,
                    (long long)i);
    if (dt == RAF_F16 && !isnan(v) && !runs_as_kernel(st))
      raf_diag_report(ex->ctx, s->loc, RAF_SEV_NOTE,
                      "f16's largest finite value is 65504: a larger result "
                      "is Inf");
    if (runs_as_kernel(st))
      raf_diag_report(ex->ctx, s->loc, RAF_SEV_NOTE,
                      "the statements of @%s, run one by one on the same "
                      "operands, make no NaN or Inf",
                      s->callee->name);
    return RAF_ERROR;
  }
  return RAF_OK;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A kernel on a device the host does not address (a GPU), timed by two
 * events of its stream around what it queues: the time the device spent,
 * not the time the host took to queue it. Waiting for the second event
 * synchronizes the stream after every kernel: profiling serializes. */
static raf_status run_kernel_events(raf_exec *ex, step *st, raf_kernel *k) {
  raf_device *d = ex->device;
  raf_event *start = NULL, *end = NULL;
  raf_status rc = raf_device_event_create(d, &start);
  if (rc == RAF_OK)
    rc = raf_device_event_create(d, &end);
  if (rc == RAF_OK)
    rc = raf_device_event_record(d, start);
  if (rc == RAF_OK)
    rc = st->kernel(k);
  double ms = 0;
  if (rc == RAF_OK)
    rc = raf_device_event_record(d, end);
  if (rc == RAF_OK)
    rc = raf_device_event_elapsed(d, start, end, &ms);
  raf_device_event_destroy(d, start);
  raf_device_event_destroy(d, end);
  st->prof_ns += (int64_t)(ms * 1e6);
  st->prof_runs++;
  return rc;
}

/* sync_each: waits for what k queued on a device the host does not
 * address; a fault there (an illegal address, a trap) is then this
 * statement's, and says so at its location, after the device's own line
 * (the driver's error): "%y = call @fused_3: the device failed ...".
 * Gives rc, k's own status, when there is nothing to add. */
static raf_status sync_after(raf_exec *ex, const raf_kernel *k,
                             raf_status rc) {
  if (!ex->opts.sync_each || raf_device_host_addressable(ex->device))
    return rc;
  /* a fault of its first kernel may surface at the launch of its next */
  if (rc == RAF_OK && raf_device_synchronize(ex->device) == RAF_OK)
    return RAF_OK;
  const raf_stmt *s = k->stmt;
  raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                  "%s%s%s%s%s%s: the device failed in this statement's "
                  "kernels on %s (synchronised after each statement: "
                  "--cuda-sync-each or RAF_CUDA_SYNC=1)",
                  s->nresults ? "%" : "", s->nresults ? s->results[0]->name : "",
                  s->nresults ? " = " : "", raf_op_table[s->op].name,
                  s->callee ? " @" : "", s->callee ? s->callee->name : "",
                  raf_device_name(ex->device));
  return RAF_ERROR;
}

static raf_status run_kernel_timed(raf_exec *ex, step *st, raf_kernel *k);

/* A step's kernel, timed when profiling, and waited for with sync_each. */
static raf_status run_kernel(raf_exec *ex, step *st, raf_kernel *k) {
  return sync_after(ex, k, run_kernel_timed(ex, st, k));
}

/* Only kernels are timed: a call that runs its callee's plan is the sum of
 * the callee's steps, which are timed themselves. */
static raf_status run_kernel_timed(raf_exec *ex, step *st, raf_kernel *k) {
  if (!ex->opts.profile)
    return st->kernel(k);
  if (!raf_device_host_addressable(ex->device))
    return run_kernel_events(ex, st, k);
  int64_t t0 = now_ns();
  raf_status rc = st->kernel(k);
  st->prof_ns += now_ns() - t0;
  st->prof_runs++;
  return rc;
}

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
  raf_kernel k = {ex, s, s->noperands, s->nresults, in, out, st->bound, NULL};
  if (run_kernel(ex, st, &k) != RAF_OK)
    return RAF_ERROR;
  if (ex->opts.check_numerics) /* results are fresh: nothing overwritten */
    return check_numerics(ex, st, in, out, NULL);
  return RAF_OK;
}

static raf_status run_planned(raf_exec *ex, plan *p, raf_tensor *const *args,
                              raf_tensor **results, bool given);

static raf_status run_plan(raf_exec *ex, plan *p, raf_tensor *const *args,
                           raf_tensor **results) {
  if (p->mem)
    return run_planned(ex, p, args, results, false);
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
      if (!c || raf_exec_copy(ex, c, t) != RAF_OK)
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
  plan *p = exec_find_plan(ex, f);
  if (!p) {
    raf_diag_report(ex->ctx, f->loc, RAF_SEV_ERROR, "@%s was not planned",
                    f->name);
    return RAF_ERROR;
  }
  /* Kernels read their operands where they run. */
  raf_device_kind here = raf_device_kind_of(ex->device);
  for (int i = 0; i < f->nargs; i++)
    if (args[i]->device != here) {
      raf_diag_report(ex->ctx, f->loc, RAF_SEV_ERROR,
                      "@%s: argument %%%s is on %s, but the executor runs on "
                      "%s",
                      f->name, f->args[i].value->name,
                      raf_device_kind_name(args[i]->device),
                      raf_device_name(ex->device));
      return RAF_ERROR;
    }
  return run_plan(ex, p, args, results);
}

raf_status raf_exec_donate(raf_exec *ex, raf_func *f, raf_tensor *const *args,
                           raf_tensor *const *results) {
  for (int r = 0; r < f->nresults; r++) {
    const raf_attr *a = raf_attrs_find(&f->results[r].attrs, "updates");
    if (!a || a->kind != RAF_ATTR_VALUE || !a->val.u.value)
      continue;
    int k = a->val.u.value->index;
    /* A planned function's donated result is in the buffer already. */
    if (k >= 0 && k < f->nargs && args[k]->nbytes == results[r]->nbytes &&
        args[k]->data != results[r]->data &&
        raf_exec_copy(ex, args[k], results[r]) != RAF_OK)
      return RAF_ERROR;
  }
  return RAF_OK;
}

/* ---- Planned functions ------------------------------------------------------
 *
 * A function with a memory plan (ir/memplan.h, written by the plan-memory
 * pass, checked here again as the verifier does) runs in one arena per
 * call, taken whole from the counted memory at the start and given back at
 * the end: its statements' results are views into the arena (records made
 * once, at raf_exec_create), into an argument's buffer (donation), or into
 * the buffer of the function's result. When a call statement of a planned
 * function runs its callee, the callee writes its results straight into
 * the caller's places for them ("given" results); called from elsewhere
 * (raf_exec_call, an unplanned caller), a planned function allocates each
 * result when its statement runs, and hands a donated result back as a
 * view of its argument. Nothing is freed after a statement; no statement
 * allocates. No function is active twice at once (calls do not recurse),
 * so a plan's views and scratch arrays serve every call of it.
 *
 * In place: a kernel may get an operand and a result that share a buffer
 * (cpu-ref's elementwise kernels read an element before they write it); a
 * copy in place (reshape, stop_gradient) runs nothing; a call with a
 * result in place over an operand runs the kernel its dialect bound for
 * that (the llvm dialect compiles one that takes the pair as one buffer),
 * else its callee statement by statement. */


/* A call from a planned function: the callee writes into out's buffers. */
static raf_status call_into(raf_exec *ex, step *st, raf_tensor **in,
                            raf_tensor **out) {
  plan *g = st->callee;
  if (g->mem)
    return run_planned(ex, g, in, out, true);
  int n = st->stmt->nresults;
  raf_tensor **made = calloc((size_t)n + 1, sizeof *made);
  if (!made)
    return RAF_ERROR;
  raf_status rc = run_plan(ex, g, in, made);
  for (int r = 0; r < n; r++) {
    if (rc == RAF_OK)
      rc = raf_exec_copy(ex, out[r], made[r]);
    raf_exec_free(ex, made[r]);
  }
  free(made);
  return rc;
}

/* The results of a call that allocates its own: views of the arena for
 * values kept there (sharing it through *sh, made here), views of the
 * arguments donated results are in, the tensors of values that had
 * buffers of their own, and copies (an argument returned, a value
 * returned twice). */
static raf_status hand_results(raf_exec *ex, plan *p, raf_tensor *const *args,
                               raf_tensor **results, char *arena,
                               shared_arena **sh) {
  mplan *m = p->mem;
  raf_func *f = p->func;
  for (int q = 0; q < f->nresults; q++) {
    int id = p->returned[q];
    const raf_mem_value *v = &m->mp.v[id];
    raf_tensor *t = m->slot[id];
    if (v->kind == RAF_MEM_RESULT && v->index == q) {
      results[q] = t;
    } else if (v->kind == RAF_MEM_DONATED) {
      results[q] = exec_view_of(ex, t->type, args[v->index]->data);
    } else if (v->kind == RAF_MEM_ARENA && id >= f->nargs &&
               v->returned == q) {
      if (!*sh && (*sh = malloc(sizeof **sh)))
        **sh = (shared_arena){arena, (size_t)m->mp.arena, 0};
      if (*sh && (results[q] = exec_view_of(ex, t->type, t->data))) {
        ((handed *)results[q])->owner = *sh;
        (*sh)->refs++;
      }
    } else if ((results[q] = raf_exec_alloc(ex, t->type)) &&
               raf_exec_copy(ex, results[q], t) != RAF_OK) {
      return RAF_ERROR; /* the caller frees results[q] */
    }
    if (!results[q])
      return RAF_ERROR;
  }
  return RAF_OK;
}

static raf_status run_planned(raf_exec *ex, plan *p, raf_tensor *const *args,
                              raf_tensor **results, bool given) {
  mplan *m = p->mem;
  raf_mem_plan *mp = &m->mp;
  raf_func *f = p->func;
  size_t reported = raf_diag_count(ex->ctx);
  char *arena = exec_take_buffer(ex, (size_t)mp->arena);
  if (!arena) {
    if (raf_diag_count(ex->ctx) == reported) /* else the device said why */
      raf_diag_report(ex->ctx, f->loc, RAF_SEV_ERROR,
                      "out of memory allocating the arena of @%s (%lld bytes)",
                      f->name, (long long)mp->arena);
    return RAF_ERROR;
  }
  for (int q = 0; !given && q < f->nresults; q++)
    results[q] = NULL;
  for (int id = 0; id < mp->nvalues; id++) {
    const raf_mem_value *v = &mp->v[id];
    raf_tensor *t = &m->view[id];
    m->slot[id] = t;
    if (id < f->nargs)
      m->slot[id] = args[id];
    else if (v->kind == RAF_MEM_ARENA || v->staged)
      t->data = arena + v->offset;
    else if (v->kind == RAF_MEM_DONATED)
      t->data = args[v->index]->data;
    else if (given)
      t->data = results[v->index]->data;
    else
      m->slot[id] = NULL; /* allocated when its statement runs */
  }
  raf_status rc = RAF_OK;
  for (int k = 0; k < p->nsteps && rc == RAF_OK; k++) {
    step *st = &p->steps[k];
    raf_stmt *s = st->stmt;
    raf_tensor **in = m->io, **out = m->io + s->noperands;
    for (int i = 0; i < s->noperands; i++)
      in[i] = m->slot[st->in[i]];
    for (int r = 0; r < s->nresults && rc == RAF_OK; r++) {
      int id = st->out[r];
      if (!m->slot[id] && !(m->slot[id] = raf_exec_alloc(ex, m->view[id].type)))
        rc = RAF_ERROR;
      out[r] = m->slot[id];
    }
    if (rc != RAF_OK || m->skip[k])
      continue;
    raf_tensor *saved = NULL; /* --check-numerics: operands overwritten */
    if (s->op == RAF_OP_CALL && (!st->kernel || m->interp[k])) {
      rc = call_into(ex, st, in, out);
    } else {
      if (ex->opts.check_numerics && runs_as_kernel(st) &&
          save_overwritten(ex, st, in, out, &saved) != RAF_OK) {
        raf_diag_report(ex->ctx, s->loc, RAF_SEV_ERROR,
                        "call: out of memory saving operands for "
                        "--check-numerics");
        rc = RAF_ERROR;
      }
      raf_kernel kn = {ex, s, s->noperands, s->nresults, in, out, st->bound,
                       mp->scratch[k] >= 0 ? arena + mp->scratch[k] : NULL};
      if (rc == RAF_OK)
        rc = run_kernel(ex, st, &kn);
    }
    if (rc == RAF_OK && ex->opts.check_numerics)
      rc = check_numerics(ex, st, in, out, saved);
    free_saved(ex, st, saved);
    int64_t t0 = m->moves[k] && ex->opts.profile ? now_ns() : 0;
    for (int r = 0; rc == RAF_OK && m->moves[k] && r < s->nresults; r++) {
      const raf_mem_value *v = &mp->v[st->out[r]];
      if (!v->staged)
        continue;
      /* Into the argument's buffer, now that the statement has read it. */
      rc = exec_copy_bytes(ex, args[v->index]->data, args[v->index]->device,
                           out[r]->data, out[r]->device, out[r]->nbytes);
      out[r]->data = args[v->index]->data;
    }
    if (t0) /* the statement's cost includes moving what it staged */
      st->prof_ns += now_ns() - t0;
  }
  if (rc == RAF_OK && given) {
    /* An argument returned, or a value returned twice, is copied. */
    for (int q = 0; q < f->nresults; q++) {
      raf_tensor *t = m->slot[p->returned[q]];
      if (rc == RAF_OK && t->data != results[q]->data)
        rc = raf_exec_copy(ex, results[q], t);
    }
  }
  shared_arena *sh = NULL;
  if (rc == RAF_OK && !given)
    rc = hand_results(ex, p, args, results, arena, &sh);
  /* Results kept in the arena hold it; the last one freed gives it back. */
  bool held = sh && sh->refs > 0;
  if (sh && !held)
    free(sh);
  if (rc != RAF_OK && !given) {
    /* What was allocated: results made so far, copies, views. */
    for (int q = 0; q < f->nresults; q++) {
      const raf_mem_value *v = &mp->v[p->returned[q]];
      if (results[q] && !(v->kind == RAF_MEM_RESULT && v->index == q))
        raf_exec_free(ex, results[q]);
      results[q] = NULL;
    }
    for (int id = f->nargs; id < mp->nvalues; id++)
      if (mp->v[id].kind == RAF_MEM_RESULT)
        raf_exec_free(ex, m->slot[id]);
  }
  if (!held)
    exec_give_buffer(ex, arena, (size_t)mp->arena);
  return rc;
}
