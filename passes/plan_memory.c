/* plan_memory.c: the memory plan of every function (docs/Design.md, principle
 * 4): one arena per call, every value placed in it by its lifetime, dead
 * values' space reused, and values computed in place where an op allows
 * it, so the peak is known before running.
 *
 * Lifetimes. A function's statements run in their order (positions 0, 1,
 * ...; the return last). A value lives from its statement to its last
 * reader, both included: a statement's results never share space with
 * its operands, but through in-place execution (below).
 *
 * Places (ir/memplan.h):
 *  - arguments are the caller's buffers, never written (but donated);
 *  - returned values are written straight into their result's buffer,
 *    which the caller owns: for a call statement, the place the caller's
 *    plan gives the call's result; for the entry function, a buffer
 *    raf-run gets from the executor. They are not in the arena, since they
 *    outlive the call;
 *  - every other value gets [offset, offset + size) of the function's
 *    arena, sizes rounded up to 64 bytes, so offsets are 64-aligned.
 *
 * In place (option inplace=true). A statement's result takes over an
 * operand's buffer when the operand's last reader is that statement, it
 * lies in the arena, and
 *  - the op is one whose cpu-ref kernel reads each element before it
 *    writes the same element of the result (unary, binary, comparisons,
 *    where, with the result's type), or a copy (reshape, stop_gradient,
 *    which the executor then skips): raf_mem_op_inplace; or
 *  - the statement is a call of a {fused} function that permits it:
 *    raf_mem_call_inplace (the argument is read no later than the
 *    statement that makes the result, and by it only elementwise), and
 *    the operand is passed once; when its {dialect} mark names a dialect
 *    that compiles the call whole (raf_mem_call_compiled; remat's model
 *    of a module not yet dispatched asks raf_mem_call_compiled_estimate),
 *    the callee must also be elementwise
 *    through and through (raf_mem_compiled_call_inplace), so that its
 *    kernel can be compiled with the two buffers as one (an AdamW update
 *    over its param and moments).
 * Chains of such statements share one buffer.
 *
 * Donation (option donate=true). A result `{updates = %a}` of a function
 * no call names (its callers own its arguments otherwise) is computed
 * directly in %a's buffer, so that the runtime's copy after the call has
 * nothing to do and the update needs no buffer of its own: when it is made
 * by a statement, returned once, and nothing reads %a after that
 * statement. When that statement reads %a itself, it must be able to run
 * in place over it (the rules above). The result is marked {donated}.
 *
 * Placement. Buffers are placed as TensorFlow Lite's greedy-by-size
 * planner does: largest first, each in the smallest gap left by the
 * buffers already placed whose lifetimes meet its own, else above them.
 * The same rule in order of first use is tried too, and the smaller
 * arena kept. Buffers of 4 KiB or more get 320 bytes of padding (see
 * raf_plan_memory_padded()).
 *
 * Scratch. A library kernel's scratch (cuBLASLt's workspace, attention's
 * scores: raf_mem_scratch_of, by the statement's dialect) is a buffer
 * alive at its statement's position alone, placed like the others, so
 * that the arena holds everything the device uses, but at an offset
 * aligned to RAF_MEM_SCRATCH_ALIGN (256: cuBLASLt's workspace must be). It is known only once
 * dispatch has chosen the dialects: plan after it.
 *
 * Output: {arena = BYTES} on each function; {offsets = [..]} on each
 * statement but the return (-1 for a result outside the arena); {inplace
 * = [..]} on statements with a result in place (the operand index, -1 for
 * the others); {scratch = OFFSET} on statements with a scratch; {donated}
 * on results. An earlier plan is replaced.
 *
 * Requires: dispatch (passes.def's `requires`): the plan reads each
 * statement's dialect from its mark, the decision raf-run keeps, and the
 * pass manager runs dispatch{device=cpu} first on a module without marks.
 * A verified module whose statements are in execution order;
 * run it last: a later pass that moves or merges statements makes the
 * plan stale, and the verifier then refuses it (run plan-memory again).
 * Preserves: everything but the plan attributes.
 */
#include "ir/memplan.h"
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

/* A buffer: the values that overwrite one another in a chain. */
typedef struct buffer {
  int start, end; /* positions, inclusive (-1: an argument's) */
  int64_t size;   /* aligned */
  int64_t offset;
  int home;       /* -1: the arena; else the argument whose buffer it is */
  int second;     /* an argument's: the value that first overwrote it, -1 */
  int64_t align;  /* its offset's alignment: RAF_MEM_ALIGN, or scratch's */
} buffer;

/* A buffer's size in the arena: its bytes rounded up to 64, and for one of
 * 4 KiB or more, 5 cache lines more, so that large buffers placed one after
 * another do not all start at one address modulo 4096. (L1 cache sets and
 * the check for a load that follows a store go by the low 12 bits of the
 * address: a kernel streaming through several such buffers at once, an
 * optimizer update, ran 6% slower.) */
int64_t raf_plan_memory_padded(int64_t bytes) {
  return raf_mem_aligned(bytes) + (bytes >= 4096 ? 5 * RAF_MEM_ALIGN : 0);
}

/* ---- Placement ----------------------------------------------------------- */

typedef struct sort_key {
  int64_t size;
  int start, index;
} sort_key;

/* Largest first; then by first use. */
static int by_size(const void *a, const void *b) {
  const sort_key *x = a, *y = b;
  if (x->size != y->size)
    return x->size > y->size ? -1 : 1;
  if (x->start != y->start)
    return x->start < y->start ? -1 : 1;
  return x->index - y->index;
}

/* at rounded up to a multiple of align. */
static int64_t round_up(int64_t at, int64_t align) {
  return (at + align - 1) / align * align;
}

/* Places the buffers in the given order; returns the arena size, or -1
 * when out of memory. offsets[b] receives buffer b's place, a multiple of
 * its alignment. */
static int64_t place(const buffer *bufs, int n, const int *order,
                     int64_t *offsets) {
  int *placed = malloc(sizeof *placed * (size_t)(n + 1)); /* by offset */
  if (!placed)
    return -1;
  int nplaced = 0;
  int64_t top = 0;
  for (int o = 0; o < n; o++) {
    int b = order[o];
    const buffer *x = &bufs[b];
    if (x->home >= 0)
      continue;
    if (x->size == 0) {
      offsets[b] = 0;
      continue;
    }
    int64_t align = x->align;
    int64_t prev_end = 0, best = -1, best_gap = INT64_MAX;
    for (int j = 0; j < nplaced; j++) {
      const buffer *y = &bufs[placed[j]];
      if (y->home >= 0 || y->start > x->end || x->start > y->end)
        continue; /* never alive together */
      int64_t at = offsets[placed[j]], from = round_up(prev_end, align);
      if (at - from >= x->size && at - from < best_gap) {
        best = from;
        best_gap = at - from;
      }
      if (at + y->size > prev_end)
        prev_end = at + y->size;
    }
    offsets[b] = best >= 0 ? best : round_up(prev_end, align);
    int j = nplaced++;
    while (j > 0 && offsets[placed[j - 1]] > offsets[b]) {
      placed[j] = placed[j - 1];
      j--;
    }
    placed[j] = b;
    if (offsets[b] + x->size > top)
      top = offsets[b] + x->size;
  }
  free(placed);
  return top;
}

/* The smaller of the two placements, into bufs[].offset. */
static raf_status place_best(buffer *bufs, int n, int64_t *arena) {
  int *order = calloc((size_t)n + 1, sizeof *order);
  sort_key *keys = malloc(sizeof *keys * (size_t)(n + 1));
  int64_t *a = malloc(sizeof *a * (size_t)(n + 1));
  int64_t *b = malloc(sizeof *b * (size_t)(n + 1));
  raf_status rc = order && keys && a && b ? RAF_OK : RAF_ERROR;
  int64_t by_start = -1, sized = -1;
  if (rc == RAF_OK) {
    for (int i = 0; i < n; i++)
      order[i] = i; /* buffers are made in order of first use */
    by_start = place(bufs, n, order, a);
    for (int i = 0; i < n; i++)
      keys[i] = (sort_key){bufs[i].size, bufs[i].start, i};
    qsort(keys, (size_t)n, sizeof *keys, by_size);
    for (int i = 0; i < n; i++)
      order[i] = keys[i].index;
    sized = place(bufs, n, order, b);
    rc = by_start >= 0 && sized >= 0 ? RAF_OK : RAF_ERROR;
  }
  if (rc == RAF_OK) {
    bool first = by_start < sized;
    for (int i = 0; i < n; i++)
      bufs[i].offset = first ? a[i] : b[i];
    *arena = first ? by_start : sized;
  }
  free(order);
  free(keys);
  free(a);
  free(b);
  return rc;
}

/* ---- Attributes ---------------------------------------------------------- */

/* attrs without the named ones, with room for `extra` more; NULL when out
 * of memory. */
static raf_attr *without(raf_module *m, const raf_attrs *attrs,
                         const char *const *names, int nnames, int extra,
                         int *n) {
  raf_attr *v = RAF_NEW_ARRAY(&m->arena, raf_attr, attrs->n + extra + 1);
  *n = 0;
  for (int i = 0; v && i < attrs->n; i++) {
    bool drop = false;
    for (int j = 0; j < nnames; j++)
      drop |= strcmp(attrs->v[i].name, names[j]) == 0;
    if (!drop)
      v[(*n)++] = attrs->v[i];
  }
  return v;
}

static raf_attr ints_attr(const char *name, const int64_t *v, int n) {
  raf_attr a;
  memset(&a, 0, sizeof a);
  a.name = name;
  a.kind = RAF_ATTR_INTS;
  a.val.u.ints.v = v;
  a.val.u.ints.n = n;
  return a;
}

/* The plan's attributes, on functions, results and statements. */
static const char *const fattrs[] = {"arena"}, *const rattrs[] = {"donated"},
                         *const sattrs[] = {"offsets", "inplace", "scratch"};

static raf_status write_plan(raf_module *m, raf_mem_plan *p,
                             const buffer *bufs, const int *buf_of,
                             const int *scratch_buf, int64_t arena) {
  raf_func *f = p->f;
  int n;
  raf_attr *v = without(m, &f->attrs, fattrs, 1, 1, &n);
  if (!v)
    return RAF_ERROR;
  memset(&v[n], 0, sizeof v[n]);
  v[n].name = "arena";
  v[n].kind = RAF_ATTR_INT;
  v[n].val.u.i = arena;
  f->attrs = (raf_attrs){v, n + 1};
  raf_stmt *ret = p->stmt[p->nstmts];
  for (int q = 0; q < f->nresults; q++) {
    if (!(v = without(m, &f->results[q].attrs, rattrs, 1, 1, &n)))
      return RAF_ERROR;
    if (p->v[raf_mem_id(p, ret->operands[q].value)].kind ==
        RAF_MEM_DONATED) {
      memset(&v[n], 0, sizeof v[n]);
      v[n].name = "donated";
      v[n].kind = RAF_ATTR_BOOL;
      v[n++].val.u.b = true;
    }
    f->results[q].attrs = (raf_attrs){n ? v : NULL, n};
  }
  for (int k = 0; k < p->nstmts; k++) {
    raf_stmt *s = p->stmt[k];
    int64_t *offs = RAF_NEW_ARRAY(&m->arena, int64_t, s->nresults + 1);
    int64_t *inp = RAF_NEW_ARRAY(&m->arena, int64_t, s->nresults + 1);
    if (!offs || !inp || !(v = without(m, &s->attrs, sattrs, 3, 3, &n)))
      return RAF_ERROR;
    bool any = false;
    for (int r = 0; r < s->nresults; r++) {
      int id = p->first[k] + r;
      offs[r] = buf_of[id] >= 0 ? bufs[buf_of[id]].offset : -1;
      inp[r] = p->v[id].inplace;
      any |= inp[r] >= 0;
    }
    v[n++] = ints_attr("offsets", offs, s->nresults);
    if (any)
      v[n++] = ints_attr("inplace", inp, s->nresults);
    if (scratch_buf[k] >= 0) {
      memset(&v[n], 0, sizeof v[n]);
      v[n].name = "scratch";
      v[n].kind = RAF_ATTR_INT;
      v[n++].val.u.i = bufs[scratch_buf[k]].offset;
    }
    raf_stmt_set_attrs(m, s, v, n);
  }
  return RAF_OK;
}

void raf_plan_memory_clear(raf_module *m, raf_func *f) {
  int n;
  raf_attr *v = without(m, &f->attrs, fattrs, 1, 0, &n);
  if (v)
    f->attrs = (raf_attrs){n ? v : NULL, n};
  for (int q = 0; q < f->nresults; q++)
    if ((v = without(m, &f->results[q].attrs, rattrs, 1, 0, &n)))
      f->results[q].attrs = (raf_attrs){n ? v : NULL, n};
  for (raf_stmt *s = f->first; s; s = s->next)
    if ((v = without(m, &s->attrs, sattrs, 3, 0, &n)))
      raf_stmt_set_attrs(m, s, v, n);
}

/* ---- Planning a function ------------------------------------------------- */

/* Whether result r of the statement at position k may overwrite operand
 * i (in place or by donation). */
static bool may_overwrite(const raf_mem_plan *p, int k, int r, int i) {
  return raf_plan_memory_may_overwrite(p->stmt[k], r, i, p->dispatched);
}

bool raf_plan_memory_may_overwrite(const raf_stmt *s, int r, int i,
                                   bool dispatched) {
  if (s->op != RAF_OP_CALL)
    return raf_mem_op_inplace(s, i);
  if (!raf_mem_call_inplace(s->callee, i, r))
    return false;
  /* A call that dispatch gave a compiling dialect runs in place only in
   * the kernels the lowering can alias; another one runs statement by
   * statement (exec.c), off its dialect's kernels. */
  bool compiled = dispatched ? raf_mem_call_compiled(s)
                             : raf_mem_call_compiled_estimate(s);
  if (compiled && !raf_mem_compiled_call_inplace(s->callee, i, r))
    return false;
  int uses = 0;
  for (int j = 0; j < s->noperands; j++)
    uses += s->operands[j].value == s->operands[i].value;
  return uses == 1;
}

/* The arguments whose buffers may be donated: each one updated by a
 * result that a statement makes and that is returned once, of a function
 * no call names. donatable[a] is that result's position, or -1. */
static void find_donatable(const raf_mem_plan *p, bool on, int *donatable) {
  raf_func *f = p->f;
  raf_stmt *ret = p->stmt[p->nstmts];
  for (int a = 0; a < f->nargs; a++)
    donatable[a] = -1;
  if (!on)
    return;
  for (int q = 0; q < f->nresults; q++) {
    const raf_attr *up = raf_attrs_find(&f->results[q].attrs, "updates");
    raf_value *x = ret->operands[q].value;
    if (up && up->kind == RAF_ATTR_VALUE && up->val.u.value && x->def &&
        p->v[raf_mem_id(p, x)].nreturned == 1)
      donatable[up->val.u.value->index] = q;
  }
}

/* Whether a result of the statement at position k other than r
 * overwrites its operand i already: two results cannot both take its
 * buffer (an earlier result in the arena, or a recomputed fused call's
 * result beside the one that updates a state). */
static bool overwritten_by_other(const raf_mem_plan *p, int k, int r, int i) {
  const raf_stmt *s = p->stmt[k];
  for (int q = 0; q < s->nresults; q++) {
    int in = p->v[p->first[k] + q].inplace;
    if (q != r && in >= 0 && s->operands[in].value == s->operands[i].value)
      return true;
  }
  return false;
}

/* Donates argument a's buffer (with the chain that overwrites it, if
 * any) to the result v that updates it: v is written there when nothing
 * in it is read after v's statement, and that statement reads nothing in
 * it or may overwrite what it reads; else, when nothing there is read
 * after the statement at all, v is staged (made in the arena, moved after
 * its statement). Otherwise the chain moves to the arena, and v too when
 * `keep` (returned values are kept in the arena). */
static void donate(raf_mem_plan *p, buffer *bufs, int *nbufs, int *buf_of,
                   int a, int q, bool keep) {
  buffer *b = &bufs[buf_of[a]];
  raf_stmt *ret = p->stmt[p->nstmts];
  int id = raf_mem_id(p, ret->operands[q].value);
  raf_mem_value *v = &p->v[id];
  raf_stmt *s = p->stmt[v->def];
  int r = v->value->index, i = -1;
  bool ok = b->end < v->def;
  for (int j = 0; !ok && b->end == v->def && j < s->noperands; j++)
    if (!overwritten_by_other(p, v->def, r, j) &&
        buf_of[raf_mem_id(p, s->operands[j].value)] == buf_of[a] &&
        p->v[raf_mem_id(p, s->operands[j].value)].last == v->def &&
        may_overwrite(p, v->def, r, j)) {
      ok = true;
      i = j;
    }
  bool staged = !ok && b->end == v->def;
  if (ok || staged) {
    v->kind = RAF_MEM_DONATED;
    v->index = a;
    v->inplace = i;
    v->staged = staged;
    buf_of[id] = buf_of[a];
    b->end = p->nstmts;
    for (int x = 0; x < p->nvalues; x++)
      if (buf_of[x] == buf_of[a] && x != a && x != id) {
        p->v[x].kind = RAF_MEM_DONATED;
        p->v[x].index = a;
      }
    if (staged) { /* its place in the arena, for its statement only */
      buf_of[id] = *nbufs;
      bufs[(*nbufs)++] = (buffer){v->def, v->def, raf_plan_memory_padded(v->bytes),
                                  0, -1, -1, RAF_MEM_ALIGN};
    }
  } else {
    if (b->second >= 0) { /* the chain gets a buffer in the arena */
      p->v[b->second].inplace = -1;
      b->start = p->v[b->second].def;
      b->size = raf_plan_memory_padded(p->v[b->second].bytes);
      b->home = -1;
    }
    if (keep) {
      v->kind = RAF_MEM_ARENA;
      buf_of[id] = *nbufs;
      bufs[(*nbufs)++] = (buffer){v->def, v->last,
                                  raf_plan_memory_padded(v->bytes), 0, -1, -1,
                                  RAF_MEM_ALIGN};
    }
  }
  buf_of[a] = -1;
}

raf_status raf_plan_memory_func(raf_module *m, raf_func *f, bool inplace,
                                bool donation) {
  raf_mem_plan p;
  if (raf_mem_analyze(f, &p) != RAF_OK)
    return RAF_ERROR;
  int *buf_of = malloc(sizeof *buf_of * (size_t)(p.nvalues + 1));
  int *donatable = malloc(sizeof *donatable * (size_t)(f->nargs + 1));
  int *scratch_buf = malloc(sizeof *scratch_buf * (size_t)(p.nstmts + 1));
  /* A buffer per value and per statement's scratch, at most. */
  buffer *bufs =
      malloc(sizeof *bufs * (size_t)(p.nvalues + p.nstmts + 1));
  raf_status rc =
      buf_of && bufs && donatable && scratch_buf ? RAF_OK : RAF_ERROR;
  int nbufs = 0;
  for (int id = 0; rc == RAF_OK && id < p.nvalues; id++)
    buf_of[id] = -1;
  /* A function no call names keeps its returned values in the arena
   * (the executor hands them out as views of it); a called one writes
   * them into its caller's places. Only the former donates. */
  bool called = raf_mem_is_called(f);
  if (rc == RAF_OK)
    find_donatable(&p, donation && !called, donatable);
  for (int id = f->nargs; rc == RAF_OK && !called && id < p.nvalues; id++)
    if (p.v[id].kind == RAF_MEM_RESULT)
      p.v[id].kind = RAF_MEM_ARENA;
  for (int a = 0; rc == RAF_OK && a < f->nargs; a++)
    if (donatable[a] >= 0) /* the update stays out until donate() */
      p.v[raf_mem_id(&p, p.stmt[p.nstmts]->operands[donatable[a]].value)]
          .kind = RAF_MEM_RESULT;
  for (int a = 0; rc == RAF_OK && a < f->nargs; a++)
    if (donatable[a] >= 0) {
      buf_of[a] = nbufs;
      bufs[nbufs++] = (buffer){-1, p.v[a].last, 0, 0, a, -1, RAF_MEM_ALIGN};
    }
  /* In place: each result joins the buffer of an operand it may
   * overwrite, in the arena or a donatable argument's, but for an
   * argument whose update the same statement makes: that buffer is the
   * update's (donate below), and another result there would keep it from
   * it (an optimizer's update of a param's part and its moments). */
  for (int k = 0; rc == RAF_OK && k < p.nstmts; k++) {
    raf_stmt *s = p.stmt[k];
    for (int r = 0; r < s->nresults; r++) {
      int id = p.first[k] + r;
      raf_mem_value *v = &p.v[id];
      if (v->kind != RAF_MEM_ARENA)
        continue;
      for (int i = 0; inplace && i < s->noperands && v->inplace < 0; i++) {
        int u = raf_mem_id(&p, s->operands[i].value);
        bool taken = overwritten_by_other(&p, k, r, i);
        bool reserved =
            u < f->nargs && donatable[u] >= 0 &&
            p.stmt[p.nstmts]->operands[donatable[u]].value->def == s;
        if (buf_of[u] >= 0 && p.v[u].last == k && !taken && !reserved &&
            may_overwrite(&p, k, r, i)) {
          v->inplace = i;
          buf_of[id] = buf_of[u];
          bufs[buf_of[id]].end = v->last;
          if (u < f->nargs)
            bufs[buf_of[id]].second = id;
        }
      }
      if (v->inplace < 0) {
        buf_of[id] = nbufs;
        bufs[nbufs++] =
            (buffer){k, v->last, raf_plan_memory_padded(v->bytes), 0, -1, -1,
                     RAF_MEM_ALIGN};
      }
    }
  }
  for (int a = 0; rc == RAF_OK && a < f->nargs; a++)
    if (donatable[a] >= 0)
      donate(&p, bufs, &nbufs, buf_of, a, donatable[a], !called);
  /* A library kernel's scratch lives during its statement alone. */
  for (int k = 0; rc == RAF_OK && k < p.nstmts; k++) {
    int64_t bytes = raf_mem_scratch_of(p.stmt[k]).bytes;
    scratch_buf[k] = bytes > 0 ? nbufs : -1;
    if (bytes > 0)
      bufs[nbufs++] =
          (buffer){k, k, raf_plan_memory_padded(bytes), 0, -1, -1,
                   RAF_MEM_SCRATCH_ALIGN};
  }
  int64_t arena = 0;
  if (rc == RAF_OK)
    rc = place_best(bufs, nbufs, &arena);
  if (rc == RAF_OK) {
    for (int id = 0; id < p.nvalues; id++) /* arena offsets only */
      if (buf_of[id] >= 0 && bufs[buf_of[id]].home >= 0)
        buf_of[id] = -1;
    rc = write_plan(m, &p, bufs, buf_of, scratch_buf, arena);
  }
  free(scratch_buf);
  free(buf_of);
  free(donatable);
  free(bufs);
  raf_mem_free(&p);
  return rc;
}

raf_status raf_pass_plan_memory(raf_module *m, const raf_pass_args *args) {
  bool inplace = raf_pass_opt_bool(args, "inplace");
  bool donation = raf_pass_opt_bool(args, "donate");
  for (raf_func *f = m->first; f; f = f->next)
    if (raf_plan_memory_func(m, f, inplace, donation) != RAF_OK) {
      raf_diag_report(args->ctx, f->loc, RAF_SEV_ERROR,
                      "plan-memory: out of memory planning @%s", f->name);
      return RAF_ERROR;
    }
  return RAF_OK;
}
