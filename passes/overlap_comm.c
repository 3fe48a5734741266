/* overlap_comm.c: the overlap-comm pass: collectives that run while the
 * step computes.
 *
 * The shard pass writes each collective where its operand is ready (a
 * bucket's all_reduce just after its last gradient), but a collective
 * statement blocks until it is done, so the executor computes nothing
 * while it runs. This pass splits every collective between ranks into a
 * start and a wait, PyTorch DDP's bucketed async all-reduce and llm.c's
 * NCCL stream written into the IR:
 *
 *   %g = all_reduce(%b) {op = "mean", world_size = 2}
 * becomes
 *   %g = all_reduce(%b) {op = "mean", world_size = 2, async}
 *   ...                               (statements that do not read %g)
 *   %g.1 = wait(%g)
 *
 * The start moves as early as its operand's definition allows (with the
 * statements that cut and join its operand from the arguments, when
 * that is all it depends on: zero=3's gathers of parameters are
 * prefetched); the wait
 * goes just before the first statement that computes with the result
 * (the statements that only cut it up, the split of a bucket into its
 * gradients, move down to their own first readers first). So that the
 * ranks start the same collectives in the same order (MPI and NCCL match
 * them by order), a start never passes another start.
 *
 * Memory: an operand is read until its wait, and a result exists from its
 * start, so a collective in flight holds both. `budget` bounds the bytes
 * of the collectives in flight at any point: a start moves up only while
 * the budget holds, and where a start would exceed it, the oldest waits
 * in flight move up before it (at least one collective is always in
 * flight). plan-memory then keeps each operand alive until its wait
 * (ir/memplan.c), and the wait shares its operand's buffer.
 *
 * Requires: a verified module; runs after inline, fuse and remat (which
 * would otherwise see waits they need not know) and before plan-memory.
 * Preserves: what every function computes; the order of the collectives.
 * A collective of world_size 1 is the identity and stays as it is.
 */
#include "ir/memplan.h"
#include "passes/pass.h"

#include <stdlib.h>

typedef struct pair {
  raf_stmt *start, *wait;
  int64_t bytes; /* operand and result, held while in flight */
} pair;

typedef struct overlap {
  raf_module *m;
  int64_t budget; /* 0: no limit */
  pair *p;
  int n;
} overlap;

static bool splits(const raf_stmt *s) {
  return raf_op_can_be_async(s->op) && !raf_stmt_is_async(s) &&
         raf_stmt_attr_int(s, "world_size") > 1;
}

/* The first statement of f (in order, f numbered) that reads v. */
static raf_stmt *first_reader(const raf_value *v) {
  raf_stmt *first = NULL;
  for (const raf_use *u = v->uses; u; u = u->next)
    if (!first || u->user->order < first->order)
      first = u->user;
  return first;
}

/* Whether reader x of a collective's result only moves its bytes (the
 * shard pass's split of a bucket into gradients, their reshapes), so
 * that it may go down to its own first reader and the wait with it. */
static bool moves_only(const raf_stmt *x) {
  return x->op == RAF_OP_SPLIT || x->op == RAF_OP_RESHAPE ||
         x->op == RAF_OP_SLICE;
}

/* The first statement that reads any result of x, or NULL. */
static raf_stmt *first_reader_of_results(const raf_stmt *x) {
  raf_stmt *first = NULL;
  for (int r = 0; r < x->nresults; r++) {
    raf_stmt *y = first_reader(x->results[r]);
    if (y && (!first || y->order < first->order))
      first = y;
  }
  return first;
}

/* Moves the readers of v that only move bytes (and read nothing else
 * after v) down to their own first readers, so that v's first reader is
 * one that computes. f stays numbered. */
static void sink_movers(raf_func *f, raf_value *v) {
  for (raf_stmt *x = first_reader(v); x && moves_only(x);
       x = first_reader(v)) {
    raf_stmt *to = first_reader_of_results(x);
    if (!to || to == x->next)
      return;
    for (int i = 0; i < x->noperands; i++)
      if (x->operands[i].value != v)
        return;
    raf_stmt_move_before(x, to);
    raf_func_number(f);
  }
}

/* Makes s async, with its wait before the first reader of its result. */
static raf_status split(overlap *o, raf_func *f, raf_stmt *s, pair *out) {
  raf_value *h = s->results[0];
  sink_movers(f, h);
  raf_stmt *first = first_reader(h);
  int nuses = 0;
  for (const raf_use *u = h->uses; u; u = u->next)
    nuses++;
  raf_use **uses = malloc(sizeof *uses * (size_t)(nuses + 1));
  raf_stmt *w = uses ? raf_stmt_create(o->m, RAF_OP_WAIT, 1, &h, 1, &h->type,
                                       s->loc)
                     : NULL;
  raf_attr async = {"async", RAF_ATTR_BOOL, {.u.b = true}, s->loc};
  if (w)
    w->results[0]->func = f; /* its name goes in f's table */
  if (!w || raf_stmt_set_attr(o->m, s, &async) != RAF_OK ||
      raf_value_set_name(w->results[0], raf_func_derived_name(f, h->name)) !=
          RAF_OK) {
    free(uses);
    return RAF_ERROR;
  }
  /* The readers move to the wait's result (not the wait itself). */
  int k = 0;
  for (raf_use *u = h->uses; u; u = u->next)
    if (u->user != w)
      uses[k++] = u;
  for (int i = 0; i < k; i++)
    raf_use_set(uses[i], w->results[0]);
  free(uses);
  /* A dispatched start's wait runs on its dialect, which holds the job. */
  const raf_attr *dialect = raf_attrs_find(&s->attrs, "dialect");
  if (dialect && raf_stmt_set_attr(o->m, w, dialect) != RAF_OK)
    return RAF_ERROR;
  raf_stmt_insert_before(f, w, first);
  *out = (pair){s, w,
                raf_mem_bytes(s->operands[0].value->type) +
                    raf_mem_bytes(h->type)};
  return RAF_OK;
}

/* The bytes of the collectives other than `skip` in flight just before
 * statement x (f numbered). */
static int64_t in_flight(const overlap *o, const raf_stmt *x, int skip) {
  int64_t bytes = 0;
  for (int i = 0; i < o->n; i++)
    if (i != skip && o->p[i].start->order < x->order &&
        o->p[i].wait->order >= x->order)
      bytes += o->p[i].bytes;
  return bytes;
}

/* Collects into chain[*n] (producers first) the statements that only
 * move bytes and make v from the function's arguments alone: zero=3's
 * parameter parts cut and joined into a bucket. Such a chain may move up
 * with the collective it feeds, to prefetch it. False when v depends on
 * anything else (or the chain is longer than max). */
static bool from_args(raf_value *v, raf_stmt **chain, int *n, int max) {
  raf_stmt *d = v->def;
  if (!d)
    return true;
  for (int i = 0; i < *n; i++)
    if (chain[i] == d)
      return true;
  if (!(moves_only(d) || d->op == RAF_OP_CONCAT) || *n == max)
    return false;
  for (int i = 0; i < d->noperands; i++)
    if (!from_args(d->operands[i].value, chain, n, max))
      return false;
  chain[(*n)++] = d;
  return true;
}

/* Moves pair i's start up, past statements it does not depend on, while
 * the budget holds; never above the previous start. A start whose
 * operand comes from the arguments by byte moves alone takes those
 * statements with it. */
static void hoist_start(overlap *o, raf_func *f, int i) {
  enum { MAX_CHAIN = 64 };
  raf_stmt *s = o->p[i].start, *chain[MAX_CHAIN + 1];
  int n = 0;
  if (!from_args(s->operands[0].value, chain, &n, MAX_CHAIN))
    n = 0;
  chain[n++] = s;
  raf_stmt *first = chain[0], *to = first;
  for (int c = 1; c < n; c++)
    if (chain[c]->order < first->order)
      first = to = chain[c];
  /* Without a chain, the operand's definition bounds the move. */
  const raf_stmt *operand = n == 1 ? s->operands[0].value->def : NULL;
  for (raf_stmt *x = first->prev; x; x = x->prev) {
    if (x == operand || (i > 0 && x == o->p[i - 1].start))
      break;
    if (o->budget && in_flight(o, x, i) + o->p[i].bytes > o->budget)
      break;
    to = x;
  }
  if (to == first)
    return;
  for (int c = 0; c < n; c++)
    raf_stmt_move_before(chain[c], to);
  raf_func_number(f);
}

/* Where a start finds more than the budget in flight, the oldest waits
 * in flight move up before it. */
static void pull_waits(overlap *o, raf_func *f) {
  for (int i = 1; o->budget && i < o->n; i++) {
    raf_stmt *s = o->p[i].start;
    for (int j = 0; j < i; j++) {
      if (in_flight(o, s, i) + o->p[i].bytes <= o->budget)
        break;
      if (o->p[j].wait->order > s->order) {
        raf_stmt_move_before(o->p[j].wait, s);
        raf_func_number(f);
      }
    }
  }
}

static raf_status overlap_func(overlap *o, raf_func *f) {
  int n = 0;
  for (raf_stmt *s = f->first; s; s = s->next)
    n += splits(s);
  if (!n)
    return RAF_OK;
  o->p = calloc((size_t)n, sizeof *o->p);
  o->n = 0;
  if (!o->p)
    return RAF_ERROR;
  raf_func_number(f);
  /* The collectives first: splitting one moves statements after it. */
  raf_stmt **todo = malloc(sizeof *todo * (size_t)n);
  if (!todo) {
    free(o->p);
    return RAF_ERROR;
  }
  int k = 0;
  for (raf_stmt *s = f->first; s; s = s->next)
    if (splits(s))
      todo[k++] = s;
  raf_status rc = RAF_OK;
  for (int i = 0; i < k && rc == RAF_OK; i++) {
    if (!raf_value_has_uses(todo[i]->results[0]))
      continue;
    rc = split(o, f, todo[i], &o->p[o->n]);
    o->n += rc == RAF_OK;
    raf_func_number(f);
  }
  free(todo);
  for (int i = 0; rc == RAF_OK && i < o->n; i++)
    hoist_start(o, f, i);
  if (rc == RAF_OK)
    pull_waits(o, f);
  free(o->p);
  o->p = NULL;
  return rc;
}

raf_status raf_pass_overlap_comm(raf_module *m, const raf_pass_args *args) {
  overlap o = {.m = m};
  const char *budget = raf_pass_opt_str(args, "budget");
  if (!raf_pass_parse_size(budget, &o.budget) || o.budget < 0) {
    raf_diag_report(args->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "overlap-comm: budget '%s' is not a size (bytes, or a "
                    "number with K, M or G; 0 for no limit)",
                    budget);
    return RAF_ERROR;
  }
  for (raf_func *f = m->first; f; f = f->next)
    if (overlap_func(&o, f) != RAF_OK) {
      raf_diag_report(args->ctx, f->loc, RAF_SEV_ERROR,
                      "overlap-comm: out of memory in @%s", f->name);
      return RAF_ERROR;
    }
  return RAF_OK;
}
