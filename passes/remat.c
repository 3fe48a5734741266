/* remat.c: rematerialisation under a memory budget (docs/Remat.md).
 *
 * Training memory is mostly activations that the forward pass makes and
 * the backward pass reads much later. This pass chooses values to compute
 * again just before a late use rather than keep, so that the function's
 * planned peak (what plan-memory will place, what raf-opt --stats prints)
 * is within a budget, recomputing as few FLOPs as it can find.
 *
 * Each function is a graph of its statements (passes/remat.h); a solver
 * picks a schedule of recomputations in the model of that header, which
 * counts live bytes the way the memory plan does but without
 * fragmentation or in-place sharing. The pass then writes the schedule
 * into the function (a clone of the statement, marked {remat}, before the
 * stage that reads it again; later reads take the clone), plans it with
 * plan-memory's own code (raf_plan_memory_func) and reads its real peak
 * (raf_mem_stats_of). When the real peak is over the budget, the model's
 * budget is lowered by the difference and the solver runs again; after a
 * few rounds without success, or when the solver cannot get lower, the
 * budget is infeasible and the pass says what the least peak it reached
 * is. The function's plan is removed again: plan-memory comes later.
 *
 * Never recomputed: arguments (parameters, states, inputs: not nodes),
 * calls of functions that are not {fused}, collectives. A dropout is
 * recomputed from the same key, so it draws the same mask. A recomputation
 * reads its operands' latest copies; one that would need a value already
 * freed keeps that value alive to it (the model counts it) or recomputes
 * it too.
 *
 * Options: budget=SIZE (bytes; suffixes K, M, G are powers of 1024) or
 * ratio=R (of the function's peak without remat); solver=greedy|ilp;
 * func=NAME (default: the training steps, functions with an {updates}
 * result that no call names; in a module without one, every function
 * neither {fused} nor called); time-limit=S
 * (the ILP's).
 *
 * Requires: a verified module whose functions are not planned (run it
 * after fuse, before plan-memory). cse leaves {remat} statements alone.
 */
#include "ir/cost.h"
#include "ir/memplan.h"
#include "passes/pass.h"
#include "passes/remat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rounds of solving against the real plan before the budget is called
 * infeasible. */
#define MAX_ROUNDS 8
/* The largest function the exact solver takes. */
#define MAX_ILP_NODES 400

static raf_loc noloc(void) { return (raf_loc){NULL, 0, 0}; }

/* "1.5 GiB (1610612736 bytes)" */
static void size_str(int64_t bytes, char *buf, size_t size) {
  static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0)
    snprintf(buf, size, "%lld bytes", (long long)bytes);
  else
    snprintf(buf, size, "%.1f %s (%lld bytes)", v, unit[u],
             (long long)bytes);
}

/* SIZE: a number of bytes, with an optional K, M or G (powers of 1024). */
static bool parse_size(const char *s, int64_t *out) {
  char *end;
  double v = strtod(s, &end);
  double scale = 1;
  switch (*end) {
  case 'K': case 'k': scale = 1024.0; end++; break;
  case 'M': case 'm': scale = 1024.0 * 1024; end++; break;
  case 'G': case 'g': scale = 1024.0 * 1024 * 1024; end++; break;
  default: break;
  }
  if (end == s || *end || !(v >= 0) || v * scale > 9e18)
    return false;
  *out = (int64_t)(v * scale);
  return true;
}

/* ---- The graph of a function --------------------------------------------- */

typedef struct graph {
  raf_remat_graph g;
  raf_stmt **stmt; /* node -> statement */
  int64_t params;  /* bytes of the {param} and {state} arguments */
  double step_flops;
} graph;

static void graph_free(graph *G) {
  free(G->g.bytes);
  free(G->g.flops);
  free(G->g.can_recompute);
  free(G->g.returned);
  free(G->g.in_start);
  free(G->g.in);
  free(G->g.out_start);
  free(G->g.out_bytes);
  free(G->g.out_returned);
  free(G->g.rd_start);
  free(G->g.rd);
  free(G->g.out_node);
  free(G->stmt);
  memset(G, 0, sizeof *G);
}

static bool may_recompute(const raf_stmt *s) {
  switch (s->op) {
  case RAF_OP_CALL:
    return s->callee && raf_attrs_find(&s->callee->attrs, "fused");
  case RAF_OP_ALL_REDUCE:
  case RAF_OP_REDUCE_SCATTER:
  case RAF_OP_ALL_GATHER:
    return false;
  default:
    return true;
  }
}

static raf_status graph_build(raf_func *f, graph *G) {
  memset(G, 0, sizeof *G);
  raf_func_number(f);
  raf_stmt *ret = raf_func_return(f);
  int n = 0, edges = 0, nout = 0;
  for (raf_stmt *s = f->first; s && s != ret; s = s->next) {
    n++;
    edges += s->noperands;
    nout += s->nresults;
  }
  raf_remat_graph *g = &G->g;
  g->n = n;
  g->bytes = calloc((size_t)n + 1, sizeof *g->bytes);
  g->flops = calloc((size_t)n + 1, sizeof *g->flops);
  g->can_recompute = calloc((size_t)n + 1, sizeof *g->can_recompute);
  g->returned = calloc((size_t)n + 1, sizeof *g->returned);
  g->in_start = calloc((size_t)n + 2, sizeof *g->in_start);
  g->in = calloc((size_t)edges + 1, sizeof *g->in);
  g->out_start = calloc((size_t)n + 2, sizeof *g->out_start);
  g->out_bytes = calloc((size_t)nout + 1, sizeof *g->out_bytes);
  g->out_returned = calloc((size_t)nout + 1, sizeof *g->out_returned);
  g->out_node = calloc((size_t)nout + 1, sizeof *g->out_node);
  g->rd_start = calloc((size_t)n + 2, sizeof *g->rd_start);
  g->rd = calloc((size_t)edges + 1, sizeof *g->rd);
  G->stmt = calloc((size_t)n + 1, sizeof *G->stmt);
  if (!ret || !g->bytes || !g->flops || !g->can_recompute || !g->returned ||
      !g->in_start || !g->in || !g->out_start || !g->out_bytes ||
      !g->out_returned || !g->out_node || !g->rd_start || !g->rd ||
      !G->stmt) {
    graph_free(G);
    return RAF_ERROR;
  }
  int64_t base = f->first->order;
  int t = 0, e = 0, d = 0, o = 0;
  for (raf_stmt *s = f->first; s != ret; s = s->next, t++) {
    G->stmt[t] = s;
    raf_cost c = raf_stmt_cost(s);
    G->step_flops += c.flops;
    double written = 0;
    g->out_start[t] = o;
    for (int r = 0; r < s->nresults; r++, o++) {
      g->out_bytes[o] =
          raf_plan_memory_padded(raf_mem_bytes(s->results[r]->type));
      g->out_node[o] = t;
      g->bytes[t] += g->out_bytes[o];
      written += (double)s->results[r]->type->numel;
    }
    /* A copy is not free: at least one operation per element written. */
    g->flops[t] = c.flops > written ? c.flops : written;
    g->can_recompute[t] = may_recompute(s);
    g->in_start[t] = e;
    g->rd_start[t] = d;
    for (int i = 0; i < s->noperands; i++) {
      raf_value *v = s->operands[i].value;
      if (!v->def)
        continue;
      int j = (int)(v->def->order - base), out = g->out_start[j] + v->index;
      bool seen = false;
      for (int q = g->in_start[t]; q < e; q++)
        seen |= g->in[q] == j;
      if (!seen)
        g->in[e++] = j;
      seen = false;
      for (int q = g->rd_start[t]; q < d; q++)
        seen |= g->rd[q] == out;
      if (!seen)
        g->rd[d++] = out;
    }
  }
  g->in_start[n] = e;
  g->rd_start[n] = d;
  g->out_start[n] = o;
  /* An update of an entry is donated its argument's buffer (plan-memory):
   * it takes no space of its own. */
  bool entry = !raf_mem_is_called(f);
  for (int i = 0; i < ret->noperands; i++) {
    raf_value *v = ret->operands[i].value;
    if (v->def) {
      int j = (int)(v->def->order - base), out = g->out_start[j] + v->index;
      g->returned[j] = true;
      g->out_returned[out] = true;
      if (entry && raf_attrs_find(&f->results[i].attrs, "updates")) {
        g->bytes[j] -= g->out_bytes[out];
        g->out_bytes[out] = 0;
      }
    }
  }
  for (int a = 0; a < f->nargs; a++)
    if (raf_arg_flag(&f->args[a], "param") ||
        raf_arg_flag(&f->args[a], "state"))
      G->params += raf_mem_bytes(f->args[a].value->type);
  return RAF_OK;
}

/* ---- Writing a schedule into the function -------------------------------- */

typedef struct written {
  raf_stmt **clone; /* per step */
  const raf_remat_step *steps;
  int nsteps;
} written;

/* The value that a read of v takes when copies[] holds each node's latest
 * copy. */
static raf_value *latest(const graph *G, raf_stmt **copies, raf_value *v) {
  if (!v->def)
    return v;
  int j = (int)(v->def->order - G->stmt[0]->order);
  return copies[j] ? copies[j]->results[v->index] : v;
}

static raf_stmt *clone_stmt(raf_module *m, raf_func *f, const raf_stmt *s,
                            raf_value **operands, raf_stmt *before) {
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
    memcpy(attrs, s->attrs.v, sizeof *attrs * (size_t)s->attrs.n);
    memset(&attrs[s->attrs.n], 0, sizeof *attrs);
    attrs[s->attrs.n].name = "remat";
    attrs[s->attrs.n].kind = RAF_ATTR_BOOL;
    attrs[s->attrs.n].val.u.b = true;
    raf_stmt_set_attrs(m, c, attrs, s->attrs.n + 1);
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

/* Writes steps into f: each stage's recomputations before its statement,
 * and every read redirected to the latest copy. Undo with unwrite. */
static raf_status write_steps(raf_module *m, raf_func *f, const graph *G,
                              const raf_remat_step *steps, int nsteps,
                              written *w) {
  int n = G->g.n;
  /* Positions from orders (latest()): planning renumbered f. */
  raf_func_number(f);
  w->clone = calloc((size_t)nsteps + 1, sizeof *w->clone);
  w->steps = steps;
  w->nsteps = 0;
  raf_stmt **copies = calloc((size_t)n + 1, sizeof *copies);
  raf_value **ops = NULL;
  int maxops = 1;
  for (int t = 0; t < n; t++)
    if (G->stmt[t]->noperands > maxops)
      maxops = G->stmt[t]->noperands;
  ops = malloc(sizeof *ops * (size_t)maxops);
  raf_status st = w->clone && copies && ops ? RAF_OK : RAF_ERROR;
  raf_stmt *ret = raf_func_return(f);
  int k = 0;
  for (int t = 0; st == RAF_OK && t <= n; t++) {
    for (; k < nsteps && steps[k].stage == t; k++) {
      const raf_stmt *s = G->stmt[steps[k].node];
      for (int i = 0; i < s->noperands; i++)
        ops[i] = latest(G, copies, s->operands[i].value);
      raf_stmt *c = clone_stmt(m, f, s, ops, G->stmt[t]);
      if (!c) {
        st = RAF_ERROR;
        break;
      }
      w->clone[w->nsteps++] = c;
      copies[steps[k].node] = c;
    }
    raf_stmt *s = t < n ? G->stmt[t] : ret;
    for (int i = 0; st == RAF_OK && i < s->noperands; i++) {
      raf_value *v = latest(G, copies, s->operands[i].value);
      if (v != s->operands[i].value)
        raf_use_set(&s->operands[i], v);
    }
  }
  free(copies);
  free(ops);
  return st;
}

/* Undoes write_steps: every read goes back to the original, clones go. */
static void unwrite(const graph *G, written *w) {
  for (int k = w->nsteps - 1; k >= 0; k--) {
    raf_stmt *c = w->clone[k];
    const raf_stmt *s = G->stmt[w->steps[k].node];
    for (int r = 0; r < c->nresults; r++)
      raf_value_replace_uses(c->results[r], s->results[r]);
    raf_stmt_erase(c);
  }
  free(w->clone);
  memset(w, 0, sizeof *w);
}

/* The peak that plan-memory's plan of f has (the figure --stats prints). */
static raf_status real_peak(raf_module *m, raf_func *f, int64_t *peak) {
  raf_memory_stats st = {0};
  raf_status rc = raf_plan_memory_func(m, f, true, true);
  if (rc == RAF_OK)
    rc = raf_mem_stats_of(f, &st);
  raf_plan_memory_clear(m, f);
  *peak = st.peak;
  return rc;
}

/* ---- The pass ------------------------------------------------------------- */

typedef struct options {
  raf_ctx *ctx;
  int64_t budget; /* or -1 */
  double ratio;   /* or 0 */
  bool ilp;
  double time_limit;
} options;

/* The solver's schedule for a model budget; its model peak, -1 on error. */
static int64_t solve(const options *o, const graph *G, int64_t budget,
                     raf_remat_step **steps, int *nsteps, raf_func *f) {
  if (!o->ilp)
    return raf_remat_solve_greedy(&G->g, budget, steps, nsteps);
  raf_remat_schedule s;
  bool feasible = false, timed_out = false;
  char why[256] = "";
  *steps = NULL;
  *nsteps = 0;
  if (raf_remat_schedule_init(&s, G->g.n) != RAF_OK)
    return -1;
  if (raf_remat_solve_ilp(&G->g, budget, o->time_limit, &s, &feasible,
                          &timed_out, why, sizeof why) != RAF_OK) {
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR, "remat: @%s: %s",
                    f->name, why);
    raf_remat_schedule_free(&s);
    return -1;
  }
  int n = G->g.n, k = 0;
  int64_t peak = INT64_MAX;
  if (feasible) {
    for (size_t x = 0; x < (size_t)n * (size_t)n; x++)
      k += s.r[x] != 0;
    *steps = malloc(sizeof **steps * (size_t)(k + 1));
    if (*steps) {
      for (int t = 0; t < n; t++)
        for (int i = 0; i < t; i++)
          if (s.r[(size_t)t * (size_t)n + (size_t)i])
            (*steps)[(*nsteps)++] = (raf_remat_step){t, i};
      peak = raf_remat_model_peak_steps(&G->g, *steps, *nsteps, NULL, NULL);
    } else {
      peak = -1;
    }
  } else if (timed_out) {
    raf_diag_report(o->ctx, f->loc, RAF_SEV_WARNING,
                    "remat: @%s: the exact solver found no schedule in "
                    "%g s", f->name, o->time_limit);
  }
  raf_remat_schedule_free(&s);
  return peak;
}

static raf_status remat_func(const options *o, raf_module *m, raf_func *f) {
  if (raf_attrs_find(&f->attrs, "arena")) {
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                    "remat: @%s is planned: run remat before plan-memory",
                    f->name);
    return RAF_ERROR;
  }
  graph G;
  if (graph_build(f, &G) != RAF_OK)
    return RAF_ERROR;
  if (o->ilp && G.g.n > MAX_ILP_NODES) {
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                    "remat: @%s has %d statements; solver=ilp takes at most "
                    "%d (use the default solver)", f->name, G.g.n,
                    MAX_ILP_NODES);
    graph_free(&G);
    return RAF_ERROR;
  }
  int64_t before, budget;
  raf_status st = real_peak(m, f, &before);
  budget = o->budget >= 0 ? o->budget : (int64_t)floor(o->ratio * before);
  char b1[64], b2[64];
  size_str(budget, b1, sizeof b1);
  if (st == RAF_OK && budget < G.params) {
    size_str(G.params, b2, sizeof b2);
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                    "@%s: budget %s is below its parameters and states "
                    "alone, %s", f->name, b1, b2);
    st = RAF_ERROR;
  }
  if (st != RAF_OK || before <= budget) {
    graph_free(&G);
    return st;
  }
  int64_t model = raf_remat_model_peak_steps(&G.g, NULL, 0, NULL, NULL);
  int64_t offset = before - model, after = before, least = before;
  raf_remat_step *steps = NULL;
  int nsteps = 0;
  written w = {NULL, NULL, 0};
  bool done = false;
  for (int round = 0; st == RAF_OK && !done && round < MAX_ROUNDS; round++) {
    free(steps);
    int64_t reached = solve(o, &G, budget - offset, &steps, &nsteps, f);
    if (reached < 0) {
      if (!o->ilp)
        raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                        "remat: out of memory solving @%s", f->name);
      st = RAF_ERROR;
      break;
    }
    if (write_steps(m, f, &G, steps, nsteps, &w) != RAF_OK ||
        real_peak(m, f, &after) != RAF_OK) {
      st = RAF_ERROR;
      break;
    }
    if (after < least)
      least = after;
    done = after <= budget;
    if (!done) {
      unwrite(&G, &w);
      if (reached > budget - offset)
        break; /* the solver can get no lower */
      /* The plan needs more than the model: ask the model for less. */
      offset += after - budget > RAF_MEM_ALIGN ? after - budget
                                               : RAF_MEM_ALIGN;
      offset = offset > after - reached ? offset : after - reached;
    }
  }
  if (st == RAF_OK && !done) {
    size_str(least, b2, sizeof b2);
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                    "@%s: budget %s is below the least peak remat can "
                    "reach, %s", f->name, b1, b2);
    st = RAF_ERROR;
  }
  if (st == RAF_OK) {
    double extra = 0;
    for (int k = 0; k < nsteps; k++)
      extra += raf_stmt_cost(G.stmt[steps[k].node]).flops;
    char b0[64], b3[64];
    size_str(before, b0, sizeof b0);
    size_str(after, b3, sizeof b3);
    raf_diag_report(o->ctx, f->loc, RAF_SEV_NOTE,
                    "remat: @%s: peak %s -> %s (budget %s); %d values "
                    "recomputed, %.4g FLOPs more (%.1f%% of the step)",
                    f->name, b0, b3, b1, nsteps, extra,
                    G.step_flops > 0 ? 100 * extra / G.step_flops : 0.0);
    free(w.clone);
  } else if (w.clone) {
    unwrite(&G, &w);
  }
  free(steps);
  graph_free(&G);
  return st;
}

/* Plans every function that has no plan, so that a call's figures in
 * raf_mem_stats_of are its callee's plan, as after plan-memory; marks them
 * in planned[] for unplan. */
static raf_status plan_all(raf_module *m, bool *planned, int nfuncs) {
  int i = 0;
  for (raf_func *f = m->first; f && i < nfuncs; f = f->next, i++) {
    planned[i] = !raf_attrs_find(&f->attrs, "arena");
    if (planned[i] && raf_plan_memory_func(m, f, true, true) != RAF_OK)
      return RAF_ERROR;
  }
  return RAF_OK;
}

static void unplan(raf_module *m, const bool *planned, int nfuncs) {
  int i = 0;
  for (raf_func *f = m->first; f && i < nfuncs; f = f->next, i++)
    if (planned[i])
      raf_plan_memory_clear(m, f);
}

/* A training step: a function with an {updates} result that no call names. */
static bool is_step(const raf_func *f) {
  for (int q = 0; q < f->nresults; q++)
    if (raf_attrs_find(&f->results[q].attrs, "updates"))
      return !raf_mem_is_called(f);
  return false;
}

raf_status raf_pass_remat(raf_module *m, const raf_pass_args *args) {
  options o = {args->ctx, -1, 0, false, 0};
  const raf_attr *b = raf_attrs_find(&args->options, "budget");
  const raf_attr *r = raf_attrs_find(&args->options, "ratio");
  const char *name = raf_pass_opt_str(args, "func");
  o.ilp = strcmp(raf_pass_opt_str(args, "solver"), "ilp") == 0;
  o.time_limit = raf_pass_opt_float(args, "time-limit");
  if (!b == !r) {
    raf_diag_report(args->ctx, noloc(), RAF_SEV_ERROR,
                    "remat: give one of budget=SIZE or ratio=R");
    return RAF_ERROR;
  }
  if (b && !parse_size(raf_pass_opt_str(args, "budget"), &o.budget)) {
    raf_diag_report(args->ctx, b->loc, RAF_SEV_ERROR,
                    "remat: budget '%s' is not a size (bytes, or a number "
                    "with K, M or G)", raf_pass_opt_str(args, "budget"));
    return RAF_ERROR;
  }
  if (r && !((o.ratio = raf_pass_opt_float(args, "ratio")) > 0)) {
    raf_diag_report(args->ctx, r->loc, RAF_SEV_ERROR,
                    "remat: ratio must be above 0");
    return RAF_ERROR;
  }
  if (name && !raf_module_find_func(m, name)) {
    raf_diag_report(args->ctx, noloc(), RAF_SEV_ERROR,
                    "remat: no function @%s", name);
    return RAF_ERROR;
  }
  int nfuncs = 0;
  for (raf_func *f = m->first; f; f = f->next)
    nfuncs++;
  raf_func **targets = calloc((size_t)nfuncs + 1, sizeof *targets);
  bool *planned = calloc((size_t)nfuncs + 1, sizeof *planned);
  /* By default the training steps; else every entry. */
  int ntargets = 0;
  bool steps_only = false;
  for (raf_func *f = m->first; f; f = f->next)
    steps_only |= is_step(f);
  for (raf_func *f = m->first; targets && f; f = f->next)
    if (name ? strcmp(f->name, name) == 0
             : steps_only ? is_step(f)
                          : !raf_attrs_find(&f->attrs, "fused") &&
                                !raf_mem_is_called(f))
      targets[ntargets++] = f;
  raf_status st = targets && planned ? RAF_OK : RAF_ERROR;
  for (int i = 0; st == RAF_OK && i < ntargets; i++)
    if (raf_attrs_find(&targets[i]->attrs, "arena")) {
      raf_diag_report(args->ctx, targets[i]->loc, RAF_SEV_ERROR,
                      "remat: @%s is planned: run remat before plan-memory",
                      targets[i]->name);
      st = RAF_ERROR;
    }
  if (st == RAF_OK)
    st = plan_all(m, planned, nfuncs);
  for (int i = 0; st == RAF_OK && i < ntargets; i++) {
    raf_plan_memory_clear(m, targets[i]);
    if (remat_func(&o, m, targets[i]) != RAF_OK)
      st = RAF_ERROR;
  }
  if (planned)
    unplan(m, planned, nfuncs);
  free(targets);
  free(planned);
  return st;
}
