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
 * Requires: a verified module whose functions are not planned: after fuse,
 * before plan-memory, which the pass manager holds it to (passes.def).
 * cse leaves {remat} statements alone.
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
/* Rounds that give the model the slack the plan leaves. */
#define MAX_RELAX 4
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

/* ---- The pass ------------------------------------------------------------ */

typedef struct options {
  raf_ctx *ctx;
  int64_t budget; /* or -1 */
  double ratio;   /* or 0 */
  bool ilp;
  double time_limit;
} options;

/* The solver's schedule for a model budget; its model peak, -1 on error. */
static int64_t solve(const options *o, const raf_remat_fn *G, int64_t budget,
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
  int64_t peak = INT64_MAX;
  if (feasible) {
    peak = raf_remat_schedule_steps(&s, steps, nsteps) == RAF_OK
               ? raf_remat_model_peak_steps(&G->g, *steps, *nsteps, NULL,
                                            NULL)
               : -1;
  } else if (timed_out) {
    raf_diag_report(o->ctx, f->loc, RAF_SEV_WARNING,
                    "remat: @%s: the exact solver found no schedule in "
                    "%g s", f->name, o->time_limit);
  }
  raf_remat_schedule_free(&s);
  return peak;
}

/* One schedule tried: solved for a model budget, written, measured. */
typedef struct attempt {
  raf_remat_step *steps;
  int nsteps;
  int64_t reached; /* its model peak */
  int64_t after;   /* its real one */
  double flops;    /* what its statements cost */
  raf_remat_written w;
} attempt;

static void attempt_undo(raf_remat_fn *G, attempt *a) {
  if (a->w.clone)
    raf_remat_unwrite(G, &a->w);
}

static void attempt_free(attempt *a) {
  free(a->steps);
  a->steps = NULL;
  a->nsteps = 0;
}

/* Solves for the model budget `target`, writes the schedule into f and
 * measures its plan; *a keeps it written. */
static raf_status try_target(const options *o, raf_module *m, raf_func *f,
                             raf_remat_fn *G, int64_t target, attempt *a) {
  memset(a, 0, sizeof *a);
  a->reached = solve(o, G, target, &a->steps, &a->nsteps, f);
  if (a->reached < 0) {
    if (!o->ilp)
      raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                      "remat: out of memory solving @%s", f->name);
    return RAF_ERROR;
  }
  if (raf_remat_write(m, f, G, a->steps, a->nsteps, &a->w) != RAF_OK ||
      real_peak(m, f, &a->after) != RAF_OK) {
    attempt_undo(G, a);
    attempt_free(a);
    return RAF_ERROR;
  }
  for (int k = 0; k < a->w.nsteps; k++)
    a->flops += raf_stmt_cost(a->w.clone[k]).flops;
  return RAF_OK;
}

static raf_status remat_func(const options *o, raf_module *m, raf_func *f) {
  raf_remat_fn G;
  if (raf_remat_graph_build(f, &G) != RAF_OK)
    return RAF_ERROR;
  if (o->ilp && G.g.n > MAX_ILP_NODES) {
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                    "remat: @%s has %d statements; solver=ilp takes at most "
                    "%d (use the default solver)", f->name, G.g.n,
                    MAX_ILP_NODES);
    raf_remat_graph_free(&G);
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
  if (st == RAF_OK && before <= budget) {
    size_str(before, b2, sizeof b2);
    raf_diag_report(o->ctx, f->loc, RAF_SEV_NOTE,
                    "remat: @%s: peak %s is within the budget %s; nothing "
                    "recomputed", f->name, b2, b1);
  }
  if (st != RAF_OK || before <= budget) {
    raf_remat_graph_free(&G);
    return st;
  }
  int64_t model = raf_remat_model_peak_steps(&G.g, NULL, 0, NULL, NULL);
  int64_t offset = before - model, least = before, target = 0;
  attempt best = {0}, a = {0};
  bool done = false;
  for (int round = 0; st == RAF_OK && !done && round < MAX_ROUNDS; round++) {
    target = budget - offset;
    st = try_target(o, m, f, &G, target, &a);
    if (st != RAF_OK)
      break;
    if (a.after < least)
      least = a.after;
    done = a.after <= budget;
    if (done) {
      best = a;
      break;
    }
    attempt_undo(&G, &a);
    attempt_free(&a);
    if (a.reached > target)
      break; /* the solver can get no lower */
    /* The plan needs more than the model: ask the model for less. */
    offset += a.after - budget > RAF_MEM_ALIGN ? a.after - budget
                                               : RAF_MEM_ALIGN;
    offset = offset > a.after - a.reached ? offset : a.after - a.reached;
  }
  /* Last, the schedule that takes the model as low as the solver goes: it
   * decides the least peak the error names, which is then reachable, since
   * it is the same schedule whatever the budget (test_remat holds the pass
   * to that: the peak named is accepted as a budget). A round above may
   * have reached lower, but with a target that budget would not give. */
  if (st == RAF_OK && !done) {
    target = 0;
    st = try_target(o, m, f, &G, target, &a);
    if (st == RAF_OK) {
      /* No remat at all may be lower still: then it is the least. */
      least = a.after < before ? a.after : before;
      done = a.after <= budget;
      if (done) {
        best = a;
      } else {
        attempt_undo(&G, &a);
        attempt_free(&a);
      }
    }
  }
  /* The plan may need less than the model: give the model the slack back
   * while that recomputes less. */
  for (int round = 0; st == RAF_OK && done && round < MAX_RELAX; round++) {
    int64_t t2 = target + (budget - best.after);
    if (t2 <= target + RAF_MEM_ALIGN)
      break;
    attempt_undo(&G, &best);
    st = try_target(o, m, f, &G, t2, &a);
    bool better = st == RAF_OK && a.after <= budget && a.flops < best.flops;
    if (better) {
      attempt_free(&best);
      best = a;
      target = t2;
      continue;
    }
    if (st == RAF_OK)
      attempt_undo(&G, &a);
    attempt_free(&a);
    if (st == RAF_OK)
      st = raf_remat_write(m, f, &G, best.steps, best.nsteps, &best.w);
    break;
  }
  if (st == RAF_OK && !done) {
    size_str(least, b2, sizeof b2);
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                    "@%s: budget %s is below the least peak remat can "
                    "reach, %s", f->name, b1, b2);
    st = RAF_ERROR;
  }
  if (st == RAF_OK) {
    char b0[64], b3[64];
    size_str(before, b0, sizeof b0);
    size_str(best.after, b3, sizeof b3);
    raf_diag_report(o->ctx, f->loc, RAF_SEV_NOTE,
                    "remat: @%s: peak %s -> %s (budget %s); %d values "
                    "recomputed, %.4g FLOPs more (%.1f%% of the step)",
                    f->name, b0, b3, b1, best.w.nsteps, best.flops,
                    G.step_flops > 0 ? 100 * best.flops / G.step_flops
                                     : 0.0);
    free(best.w.clone);
    best.w.clone = NULL;
  } else {
    attempt_undo(&G, &best);
  }
  attempt_free(&best);
  raf_remat_drop_slices(&G);
  raf_remat_graph_free(&G);
  return st;
}

/* A training step: a function that updates its params, and no call names. */
static bool is_step(const raf_func *f) {
  return raf_func_updates_params(f) && !raf_mem_is_called(f);
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
  if (b && !raf_pass_parse_size(raf_pass_opt_str(args, "budget"), &o.budget)) {
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
  raf_status st = targets ? RAF_OK : RAF_ERROR;
  /* Every function planned, so that a call's figures in raf_mem_stats_of
   * are its callee's plan, as after plan-memory; the targets are planned
   * again for each schedule tried, and every plan goes at the end (the
   * manager has made sure there was none before: passes.def). */
  for (raf_func *f = m->first; st == RAF_OK && f; f = f->next)
    st = raf_plan_memory_func(m, f, true, true);
  for (int i = 0; st == RAF_OK && i < ntargets; i++) {
    raf_plan_memory_clear(m, targets[i]);
    if (remat_func(&o, m, targets[i]) != RAF_OK)
      st = RAF_ERROR;
  }
  for (raf_func *f = m->first; f; f = f->next)
    raf_plan_memory_clear(m, f);
  free(targets);
  return st;
}
