/* remat_write.c: between a function and its rematerialisation problem
 * (passes/remat.h): the graph of its statements, and a schedule written
 * back into it, undoably.
 *
 * The graph. Each statement before the return is a node; its results are
 * its outputs, with their sizes in the arena (raf_plan_memory_padded).
 * An {updates} result of an entry takes no space: plan-memory donates it
 * its argument's buffer. A node's cost is the cost model's FLOPs (ir/
 * cost.h), and at least one per element it writes, so that no copy is
 * free. Not recomputed: calls of functions that are not {fused} (they may
 * be anything) and collectives (they communicate).
 *
 * Slices. A call of a {fused} function with several results can compute
 * one of them alone: the callee's statements that result needs, reading
 * the call's other results where it meets them (a layer_norm from the
 * residual the call also returns; a gelu from the pre-activation that
 * gelu's gradient keeps). Only slices that read another result are
 * offered: without one, a slice costs what the call does.
 *
 * Writing a schedule. Each stage's steps become statements before the
 * stage's own: a clone of the node, or a call of the slice's function
 * (@callee.slice.K, made once per module and output), marked {remat};
 * from then on every read of an output takes its latest copy. Undoing
 * points the reads back at the originals and erases the clones; slice
 * functions nothing calls are erased at the end (raf_remat_drop_slices).
 */
#include "ir/cost.h"
#include "ir/memplan.h"
#include "passes/pass.h"
#include "passes/ptrmap.h"
#include "passes/remat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void raf_remat_graph_free(raf_remat_fn *G) {
  raf_remat_graph *g = &G->g;
  free(g->bytes);
  free(g->flops);
  free(g->can_recompute);
  free(g->returned);
  free(g->in_start);
  free(g->in);
  free(g->out_start);
  free(g->out_bytes);
  free(g->out_returned);
  free(g->rd_start);
  free(g->rd);
  free(g->out_node);
  free(g->has_slice);
  free(g->slice_flops);
  free(g->slice_start);
  free(g->slice_rd);
  free(g->out_share);
  free(G->stmt);
  free(G->opnd_start);
  free(G->opnd_out);
  memset(G, 0, sizeof *G);
}

/* Calls of {fused} functions, and every op but the collectives: those
 * communicate (the op table's: an op with a world_size attribute). */
static bool may_recompute(const raf_stmt *s) {
  const raf_op_info *o = &raf_op_table[s->op];
  if (s->op == RAF_OP_CALL)
    return s->callee && raf_attrs_find(&s->callee->attrs, "fused");
  return !raf_spec_find(o->attrs, o->nattrs, "world_size");
}

/* ---- Slices of a fused callee -------------------------------------------- */

/* The result of callee's return other than k that returns v, or -1. */
static int sibling(const raf_stmt *ret, int k, const raf_value *v) {
  for (int j = 0; j < ret->noperands; j++)
    if (j != k && ret->operands[j].value == v)
      return j;
  return -1;
}

/* What result k of a fused callee needs alone: the callee arguments and
 * the other results it reads (cutting there), and its FLOPs; flops is -1
 * when it reads no other result (no use as a slice). */
typedef struct slice_plan {
  bool *args, *sibs; /* by argument, by result */
  int nstmts;        /* the callee's statements, numbered */
  double flops;
} slice_plan;

static void slice_plan_free(slice_plan *p) {
  free(p->args);
  free(p->sibs);
  memset(p, 0, sizeof *p);
}

/* *p for result k of callee; false when out of memory. */
static bool slice_plan_of(raf_func *callee, int k, slice_plan *p) {
  memset(p, 0, sizeof *p);
  raf_func_number(callee);
  for (raf_stmt *x = callee->first; x; x = x->next)
    p->nstmts++;
  raf_stmt *ret = raf_func_return(callee);
  int cap = 2 * p->nstmts + 64;
  p->args = calloc((size_t)callee->nargs + 1, 1);
  p->sibs = calloc((size_t)callee->nresults + 1, 1);
  p->flops = -1;
  raf_value **stack = malloc(sizeof *stack * (size_t)cap);
  bool *seen = calloc((size_t)p->nstmts + 1, 1);
  bool ok = p->args && p->sibs && stack && seen && ret;
  int64_t base = callee->first->order;
  int sp = 0;
  bool any = false;
  double sum = 0;
  if (ok)
    stack[sp++] = ret->operands[k].value;
  while (ok && sp > 0) {
    raf_value *v = stack[--sp];
    int j = v == ret->operands[k].value ? -1 : sibling(ret, k, v);
    if (!v->def) {
      p->args[v->index] = true;
    } else if (j >= 0) {
      p->sibs[j] = any = true;
    } else if (!seen[v->def->order - base]) {
      raf_stmt *d = v->def;
      seen[d->order - base] = true;
      sum += raf_stmt_cost(d).flops;
      for (int i = 0; ok && i < d->noperands; i++) {
        ok = sp < cap;
        if (ok)
          stack[sp++] = d->operands[i].value;
      }
    }
  }
  if (ok && any) {
    double written = (double)ret->operands[k].value->type->numel;
    p->flops = sum > written ? sum : written;
  }
  free(stack);
  free(seen);
  if (!ok)
    slice_plan_free(p);
  return ok;
}

/* ---- The graph of a function --------------------------------------------- */

static int64_t out_id(const raf_remat_fn *G, const raf_value *v) {
  if (!v->def)
    return -1;
  return G->g.out_start[v->def->order - G->base] + v->index;
}

/* Adds output o to the list [start, *end) of rd unless it is there. */
static void add_read(int *rd, int start, int *end, int o) {
  for (int q = start; q < *end; q++)
    if (rd[q] == o)
      return;
  rd[(*end)++] = o;
}

/* The slices of node t's outputs, into the graph. */
static raf_status slices_of(raf_remat_fn *G, int t, int *d) {
  raf_remat_graph *g = &G->g;
  const raf_stmt *s = G->stmt[t];
  int q0 = g->out_start[t];
  for (int k = 0; k < s->nresults; k++)
    g->slice_start[q0 + k] = *d;
  if (s->op != RAF_OP_CALL || s->nresults < 2 || !g->can_recompute[t])
    return RAF_OK;
  raf_func *callee = s->callee;
  for (int k = 0; k < s->nresults; k++) {
    int q = q0 + k;
    slice_plan sp;
    g->slice_start[q] = *d;
    if (!slice_plan_of(callee, k, &sp))
      return RAF_ERROR;
    if (sp.flops >= 0) {
      g->has_slice[q] = true;
      g->slice_flops[q] = sp.flops;
      for (int a = 0; a < callee->nargs; a++) {
        int64_t o = sp.args[a] ? out_id(G, s->operands[a].value) : -1;
        if (o >= 0)
          add_read(g->slice_rd, g->slice_start[q], d, (int)o);
      }
      for (int j = 0; j < callee->nresults; j++)
        if (sp.sibs[j])
          add_read(g->slice_rd, g->slice_start[q], d, q0 + j);
    }
    slice_plan_free(&sp);
  }
  return RAF_OK;
}

raf_status raf_remat_graph_build(raf_func *f, raf_remat_fn *G) {
  memset(G, 0, sizeof *G);
  raf_func_number(f);
  raf_stmt *ret = raf_func_return(f);
  bool dispatched = raf_mem_dispatched(f->module);
  int n = 0, edges = 0, nout = 0, slots = 0;
  for (raf_stmt *s = f->first; s && s != ret; s = s->next) {
    n++;
    edges += s->noperands;
    nout += s->nresults;
    if (s->op == RAF_OP_CALL && s->nresults > 1)
      slots += s->nresults * (s->noperands + s->nresults);
  }
  raf_remat_graph *g = &G->g;
  size_t N = (size_t)n + 2, E = (size_t)edges + 1, O = (size_t)nout + 2;
  g->n = n;
  g->bytes = calloc(N, sizeof *g->bytes);
  g->flops = calloc(N, sizeof *g->flops);
  g->can_recompute = calloc(N, sizeof *g->can_recompute);
  g->returned = calloc(N, sizeof *g->returned);
  g->in_start = calloc(N, sizeof *g->in_start);
  g->in = calloc(E, sizeof *g->in);
  g->out_start = calloc(N, sizeof *g->out_start);
  g->out_bytes = calloc(O, sizeof *g->out_bytes);
  g->out_returned = calloc(O, sizeof *g->out_returned);
  g->out_node = calloc(O, sizeof *g->out_node);
  g->rd_start = calloc(N, sizeof *g->rd_start);
  g->rd = calloc(E, sizeof *g->rd);
  g->has_slice = calloc(O, sizeof *g->has_slice);
  g->slice_flops = calloc(O, sizeof *g->slice_flops);
  g->slice_start = calloc(O, sizeof *g->slice_start);
  g->slice_rd = calloc((size_t)slots + 1, sizeof *g->slice_rd);
  g->out_share = malloc(sizeof *g->out_share * O);
  G->stmt = calloc(N, sizeof *G->stmt);
  G->opnd_start = calloc(N, sizeof *G->opnd_start);
  G->opnd_out = calloc(E, sizeof *G->opnd_out);
  if (!ret || !g->bytes || !g->flops || !g->can_recompute || !g->returned ||
      !g->in_start || !g->in || !g->out_start || !g->out_bytes ||
      !g->out_returned || !g->out_node || !g->rd_start || !g->rd ||
      !g->has_slice || !g->slice_flops || !g->slice_start || !g->slice_rd || !g->out_share ||
      !G->stmt || !G->opnd_start || !G->opnd_out) {
    raf_remat_graph_free(G);
    return RAF_ERROR;
  }
  G->base = f->first->order;
  int t = 0, e = 0, d = 0, o = 0, x = 0;
  for (raf_stmt *s = f->first; s != ret; s = s->next, t++) {
    G->stmt[t] = s;
    raf_cost c = raf_stmt_cost(s);
    G->step_flops += c.flops;
    double written = 0;
    g->out_start[t] = o;
    for (int r = 0; r < s->nresults; r++, o++) {
      /* The operand the plan may run this result over. */
      g->out_share[o] = -1;
      for (int i = 0; i < s->noperands && g->out_share[o] < 0; i++) {
        int64_t in = out_id(G, s->operands[i].value);
        if (in >= 0 && raf_plan_memory_may_overwrite(s, r, i, dispatched))
          g->out_share[o] = (int)in;
      }
      g->out_bytes[o] =
          raf_plan_memory_padded(raf_mem_bytes(s->results[r]->type));
      g->out_node[o] = t;
      g->bytes[t] += g->out_bytes[o];
      written += (double)s->results[r]->type->numel;
    }
    g->flops[t] = c.flops > written ? c.flops : written;
    g->can_recompute[t] = may_recompute(s);
    g->in_start[t] = e;
    g->rd_start[t] = d;
    G->opnd_start[t] = x;
    for (int i = 0; i < s->noperands; i++) {
      raf_value *v = s->operands[i].value;
      int64_t out = out_id(G, v);
      G->opnd_out[x++] = (int)out;
      if (out < 0)
        continue;
      int j = g->out_node[out], end = e;
      add_read(g->in, g->in_start[t], &end, j);
      e = end;
      add_read(g->rd, g->rd_start[t], &d, (int)out);
    }
  }
  g->in_start[n] = e;
  g->rd_start[n] = d;
  g->out_start[n] = o;
  G->opnd_start[n] = x;
  int sd = 0;
  for (t = 0; t < n; t++)
    if (slices_of(G, t, &sd) != RAF_OK) {
      raf_remat_graph_free(G);
      return RAF_ERROR;
    }
  g->slice_start[o] = sd;
  /* An update of an entry is donated its argument's buffer (plan-memory):
   * it takes no space of its own. */
  bool entry = !raf_mem_is_called(f);
  for (int i = 0; i < ret->noperands; i++) {
    int64_t out = out_id(G, ret->operands[i].value);
    if (out < 0)
      continue;
    int j = g->out_node[out];
    g->returned[j] = true;
    g->out_returned[out] = true;
    if (entry && raf_attrs_find(&f->results[i].attrs, "updates")) {
      g->bytes[j] -= g->out_bytes[out];
      g->out_bytes[out] = 0;
    }
  }
  for (int a = 0; a < f->nargs; a++)
    if (raf_arg_flag(&f->args[a], "param") ||
        raf_arg_flag(&f->args[a], "state"))
      G->params += raf_mem_bytes(f->args[a].value->type);
  return RAF_OK;
}

/* ---- Slice functions ----------------------------------------------------- */

/* @callee.slice.K: result k of callee alone, from the arguments it needs
 * and the other results it reads, in that order. NULL when out of memory. */
static raf_func *make_slice(raf_module *m, raf_func *callee, int k,
                            raf_func *before) {
  char name[160];
  int n = 0;
  do
    snprintf(name, sizeof name, n ? "%.100s.slice.%d.%d" : "%.100s.slice.%d",
             callee->name, k, n);
  while (raf_module_find_func(m, name) && ++n);
  slice_plan sp;
  if (!slice_plan_of(callee, k, &sp))
    return NULL;
  bool *need = calloc((size_t)sp.nstmts + 1, 1);
  raf_func *fn = NULL;
  raf_ptrmap map = {0};
  raf_stmt *ret = raf_func_return(callee);
  if (!need || sp.flops < 0)
    goto done;
  fn = raf_func_create(m, name, callee->loc);
  if (!fn)
    goto done;
  raf_func_move_before(m, fn, before);
  bool ok = true;
  for (int a = 0; ok && a < callee->nargs; a++)
    if (sp.args[a]) {
      raf_value *v = callee->args[a].value;
      raf_value *x = raf_func_add_arg(fn, v->name, v->type, v->loc);
      ok = x && raf_ptrmap_put(&map, v, x);
    }
  for (int j = 0; ok && j < callee->nresults; j++)
    if (sp.sibs[j]) {
      raf_value *v = ret->operands[j].value;
      raf_value *x = raf_func_add_arg(fn, v->name, v->type, v->loc);
      ok = x && raf_ptrmap_put(&map, v, x);
    }
  /* The statements result k needs: those whose results lead to it without
   * passing through the other results (now arguments). */
  for (raf_stmt *s = ret->prev; ok && s; s = s->prev) {
    bool needed = false;
    for (int r = 0; r < s->nresults; r++) {
      raf_value *v = s->results[r];
      if (raf_ptrmap_get(&map, v))
        continue; /* an argument now */
      if (v == ret->operands[k].value)
        needed = true;
      for (raf_use *u = v->uses; u && !needed; u = u->next)
        needed = u->user != ret && need[u->user->order - callee->first->order];
    }
    need[s->order - callee->first->order] = needed;
  }
  raf_value *ops[64], *rv = NULL;
  for (raf_stmt *s = callee->first; ok && s != ret; s = s->next) {
    if (!need[s->order - callee->first->order])
      continue;
    if (s->noperands > 64) {
      ok = false;
      break;
    }
    for (int i = 0; i < s->noperands; i++)
      ops[i] = raf_ptrmap_get(&map, s->operands[i].value);
    raf_stmt *c = raf_remat_clone(m, fn, s, ops, NULL, false);
    ok = c != NULL;
    for (int r = 0; ok && r < s->nresults; r++)
      ok = raf_ptrmap_put(&map, s->results[r], c->results[r]);
  }
  rv = ok ? raf_ptrmap_get(&map, ret->operands[k].value) : NULL;
  raf_stmt *r = rv ? raf_stmt_create(m, RAF_OP_RETURN, 1, &rv, 0, NULL,
                                     ret->loc)
                   : NULL;
  raf_attr fused = {.name = "fused", .kind = RAF_ATTR_BOOL, .val.u.b = true,
                    .loc = callee->loc};
  if (r) {
    raf_stmt_insert_before(fn, r, NULL);
    raf_func_set_results(fn, 1, &rv->type);
    fn->attrs.v = raf_arena_memdup(&m->arena, &fused, sizeof fused);
    fn->attrs.n = fn->attrs.v ? 1 : 0;
  }
  if (!r || !fn->results || !fn->attrs.v) {
    raf_func_erase(fn); /* nothing calls it yet */
    fn = NULL;
  } else { /* the callee may be planned for the time of the pass */
    raf_plan_memory_clear(m, fn);
  }
done:
  raf_ptrmap_free(&map);
  slice_plan_free(&sp);
  free(need);
  return fn;
}

/* The slice function of (callee, k), made on first use. */
static raf_func *slice_fn(raf_remat_fn *G, raf_module *m, raf_func *callee,
                          int k, raf_func *before) {
  for (int i = 0; i < G->nslices; i++)
    if (G->slices[i].callee == callee && G->slices[i].k == k)
      return G->slices[i].fn;
  if (G->nslices == G->slices_cap) {
    int cap = 2 * G->slices_cap + 8;
    void *v = realloc(G->slices, sizeof *G->slices * (size_t)cap);
    if (!v)
      return NULL;
    G->slices = v;
    G->slices_cap = cap;
  }
  raf_func *fn = make_slice(m, callee, k, before);
  if (fn)
    G->slices[G->nslices++] = (raf_remat_slice_fn){callee, k, fn};
  return fn;
}

void raf_remat_drop_slices(raf_remat_fn *G) {
  for (int i = 0; i < G->nslices; i++) {
    raf_func *fn = G->slices[i].fn;
    bool called = false;
    for (raf_func *f = fn->module->first; f && !called; f = f->next)
      for (raf_stmt *s = f->first; s && !called; s = s->next)
        called = s->op == RAF_OP_CALL && s->callee == fn;
    if (!called)
      raf_func_erase(fn);
  }
  free(G->slices);
  G->slices = NULL;
  G->nslices = G->slices_cap = 0;
}

/* ---- Writing a schedule -------------------------------------------------- */

raf_stmt *raf_remat_clone(raf_module *m, raf_func *f, const raf_stmt *s,
                          raf_value **operands, raf_stmt *before,
                          bool mark) {
  raf_type *types[16];
  raf_type **tv = s->nresults <= 16
                      ? types
                      : malloc(sizeof *tv * (size_t)s->nresults);
  raf_attr *attrs = malloc(sizeof *attrs * (size_t)(s->attrs.n + 1));
  raf_stmt *c = NULL;
  if (tv && attrs) {
    for (int r = 0; r < s->nresults; r++)
      tv[r] = s->results[r]->type;
    c = raf_stmt_create(m, s->op, s->noperands, operands, s->nresults, tv,
                        s->loc);
  }
  if (c) {
    int n = s->attrs.n;
    if (n)
      memcpy(attrs, s->attrs.v, sizeof *attrs * (size_t)n);
    if (mark && !raf_attrs_find(&s->attrs, "remat")) { /* amp's casts */
      memset(&attrs[n], 0, sizeof *attrs);
      attrs[n].name = "remat";
      attrs[n].kind = RAF_ATTR_BOOL;
      attrs[n++].val.u.b = true;
    }
    raf_stmt_set_attrs(m, c, attrs, n);
    c->callee = s->callee;
    c->cdata = s->cdata;
    for (int r = 0; r < c->nresults; r++) {
      c->results[r]->func = f;
      const char *name = raf_func_derived_name(f, s->results[r]->name);
      if (name)
        raf_value_set_name(c->results[r], name);
    }
    raf_stmt_insert_before(f, c, before);
  }
  if (tv != types)
    free(tv);
  free(attrs);
  return c;
}

/* The value a read of operand slot i of node t takes, latest[] holding
 * each output's latest copy (NULL: the original). */
static raf_value *read_slot(const raf_remat_fn *G, raf_value **latest, int t,
                            int i) {
  raf_value *v = G->stmt[t]->operands[i].value;
  int o = G->opnd_out[G->opnd_start[t] + i];
  return o >= 0 && latest[o] ? latest[o] : v;
}

/* The call of output k's slice of node i, before `before`. */
static raf_stmt *write_slice(raf_remat_fn *G, raf_module *m, raf_func *f,
                             int i, int k, raf_value **latest,
                             raf_stmt *before) {
  raf_stmt *s = G->stmt[i];
  raf_func *fn = slice_fn(G, m, s->callee, k, f);
  if (!fn)
    return NULL;
  raf_func *callee = s->callee;
  raf_value **ops = malloc(sizeof *ops * (size_t)(fn->nargs + 1));
  slice_plan sp;
  int n = 0;
  /* Its arguments: the callee's it keeps, then the results it reads. */
  if (ops && slice_plan_of(callee, k, &sp)) {
    for (int a = 0; a < callee->nargs && n < fn->nargs; a++)
      if (sp.args[a])
        ops[n++] = read_slot(G, latest, i, a);
    for (int j = 0; j < callee->nresults && n < fn->nargs; j++)
      if (sp.sibs[j]) {
        int o = G->g.out_start[i] + j;
        ops[n++] = latest[o] ? latest[o] : s->results[j];
      }
    slice_plan_free(&sp);
  }
  if (n != fn->nargs || !ops) {
    free(ops);
    return NULL;
  }
  raf_stmt *c = raf_stmt_create(m, RAF_OP_CALL, n, ops, 1,
                                &s->results[k]->type, s->loc);
  free(ops);
  /* The dialect that runs the call runs its slice: the slice's statements
   * are some of the callee's. */
  raf_attr attrs[2] = {{.name = "remat", .kind = RAF_ATTR_BOOL,
                        .val.u.b = true, .loc = s->loc}};
  const raf_attr *dialect = raf_attrs_find(&s->attrs, "dialect");
  if (!c)
    return NULL;
  if (dialect) {
    attrs[1] = attrs[0];
    attrs[0] = *dialect;
  }
  raf_stmt_set_attrs(m, c, attrs, dialect ? 2 : 1);
  c->callee = fn;
  c->results[0]->func = f;
  const char *name = raf_func_derived_name(f, s->results[k]->name);
  if (name)
    raf_value_set_name(c->results[0], name);
  raf_stmt_insert_before(f, c, before);
  return c;
}

raf_status raf_remat_write(raf_module *m, raf_func *f, raf_remat_fn *G,
                           const raf_remat_step *steps, int nsteps,
                           raf_remat_written *w) {
  int n = G->g.n, nout = G->g.out_start[n];
  /* Orders give positions (out_id): planning renumbered f. */
  raf_func_number(f);
  G->base = G->stmt[0]->order;
  w->clone = calloc((size_t)nsteps + 1, sizeof *w->clone);
  w->steps = steps;
  w->nsteps = 0;
  raf_value **latest = calloc((size_t)nout + 1, sizeof *latest);
  int maxops = 1;
  for (int t = 0; t < n; t++)
    if (G->stmt[t]->noperands > maxops)
      maxops = G->stmt[t]->noperands;
  raf_value **ops = malloc(sizeof *ops * (size_t)maxops);
  raf_status st = w->clone && latest && ops ? RAF_OK : RAF_ERROR;
  raf_stmt *ret = raf_func_return(f);
  int k = 0;
  for (int t = 0; st == RAF_OK && t <= n; t++) {
    raf_stmt *at = t < n ? G->stmt[t] : ret;
    for (; st == RAF_OK && k < nsteps && steps[k].stage == t; k++) {
      int i = steps[k].node, q0 = G->g.out_start[i];
      raf_stmt *c;
      if (steps[k].out < 0) {
        for (int a = 0; a < G->stmt[i]->noperands; a++)
          ops[a] = read_slot(G, latest, i, a);
        c = raf_remat_clone(m, f, G->stmt[i], ops, at, true);
        for (int r = 0; c && r < c->nresults; r++)
          latest[q0 + r] = c->results[r];
      } else {
        c = write_slice(G, m, f, i, steps[k].out, latest, at);
        if (c)
          latest[q0 + steps[k].out] = c->results[0];
      }
      if (!c)
        st = RAF_ERROR;
      else
        w->clone[w->nsteps++] = c;
    }
    if (t == n) { /* the return reads results by value */
      for (int i = 0; st == RAF_OK && i < ret->noperands; i++) {
        raf_value *v = ret->operands[i].value;
        int64_t o = out_id(G, v);
        if (o >= 0 && latest[o])
          raf_use_set(&ret->operands[i], latest[o]);
      }
      break;
    }
    for (int i = 0; st == RAF_OK && i < at->noperands; i++) {
      raf_value *v = read_slot(G, latest, t, i);
      if (v != at->operands[i].value)
        raf_use_set(&at->operands[i], v);
    }
  }
  free(latest);
  free(ops);
  return st;
}

void raf_remat_unwrite(raf_remat_fn *G, raf_remat_written *w) {
  for (int k = w->nsteps - 1; k >= 0; k--) {
    raf_stmt *c = w->clone[k];
    const raf_stmt *s = G->stmt[w->steps[k].node];
    int out = w->steps[k].out;
    for (int r = 0; r < c->nresults; r++)
      raf_value_replace_uses(c->results[r], s->results[out < 0 ? r : out]);
    raf_stmt_erase(c);
  }
  free(w->clone);
  memset(w, 0, sizeof *w);
}
