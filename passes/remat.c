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
 * neither {fused} nor called); time-limit=S (the exact solver's, all its
 * solves in a function together). solver=ilp runs the greedy search
 * first and then the exact solver from its schedule (improve_by_ilp), so
 * it is never worse than greedy.
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
#include <time.h>

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

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What the exact solver did, for the remark. */
typedef struct ilp_outcome {
  bool ran;
  double deadline;      /* now_seconds() at which its time is up */
  bool timed_out;       /* some solve stopped at the time limit */
  double greedy_flops;  /* the greedy schedule's, or -1 when none met */
} ilp_outcome;

/* The exact solver's schedule for a model budget, from incumbent (NULL:
 * none) and within the time left; its model peak, INT64_MAX when it found
 * none, -1 on error (reported). */
static int64_t solve_ilp(const options *o, const raf_remat_fn *G,
                         int64_t budget, const raf_remat_schedule *incumbent,
                         const bool *stages, ilp_outcome *io, raf_remat_step **steps, int *nsteps,
                         raf_func *f) {
  raf_remat_schedule s;
  bool feasible = false, timed_out = false;
  char why[256] = "";
  double left = io->deadline - now_seconds();
  *steps = NULL;
  *nsteps = 0;
  if (left <= 0) {
    io->timed_out = true;
    return INT64_MAX;
  }
  if (raf_remat_schedule_init(&s, G->g.n) != RAF_OK)
    return -1;
  if (raf_remat_solve_ilp_from(&G->g, budget, left, incumbent, stages, &s,
                               &feasible, &timed_out, why,
                               sizeof why) != RAF_OK) {
    raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR, "remat: @%s: %s",
                    f->name, why);
    raf_remat_schedule_free(&s);
    return -1;
  }
  io->timed_out |= timed_out;
  int64_t peak = INT64_MAX;
  if (feasible)
    peak = raf_remat_schedule_steps(&s, steps, nsteps) == RAF_OK
               ? raf_remat_model_peak_steps(&G->g, *steps, *nsteps, NULL,
                                            NULL)
               : -1;
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

/* Writes a->steps into f and measures its plan; *a keeps it written. */
static raf_status measure(raf_module *m, raf_func *f, raf_remat_fn *G,
                          attempt *a) {
  a->flops = 0;
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

/* Solves for the model budget `target` (greedily, or with the exact
 * solver when io is not NULL), writes the schedule into f and measures
 * its plan; *a keeps it written. */
static raf_status try_target(const options *o, raf_module *m, raf_func *f,
                             raf_remat_fn *G, int64_t target,
                             ilp_outcome *io, attempt *a) {
  memset(a, 0, sizeof *a);
  a->reached = io ? solve_ilp(o, G, target, NULL, NULL, io, &a->steps,
                              &a->nsteps, f)
                  : raf_remat_solve_greedy(&G->g, target, &a->steps,
                                           &a->nsteps);
  if (a->reached < 0) {
    if (!io)
      raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                      "remat: out of memory solving @%s", f->name);
    return RAF_ERROR;
  }
  return measure(m, f, G, a);
}

/* A search for a schedule whose real peak is within a budget. */
typedef struct search {
  bool met;
  attempt best;    /* when met: written into f */
  int64_t target;  /* when met: best's model budget */
  int64_t least;   /* the least real peak of the schedules tried, and of
                    * none at all */
  int64_t lowest;  /* the real peak of the solver's lowest schedule (model
                    * budget 0), or -1 when the search met its budget
                    * before trying it */
} search;

/* Searches for `budget` (before: the peak without remat): rounds against
 * the real plan, then the solver's lowest schedule, then rounds that give
 * the model the plan's slack back while that recomputes less. With io,
 * the exact solver's search; else the greedy one's. */
static raf_status search_budget(const options *o, raf_module *m, raf_func *f,
                                raf_remat_fn *G, int64_t before,
                                int64_t budget, ilp_outcome *io,
                                search *s) {
  memset(s, 0, sizeof *s);
  s->least = before;
  s->lowest = -1;
  int64_t model = raf_remat_model_peak_steps(&G->g, NULL, 0, NULL, NULL);
  int64_t offset = before - model, target = 0;
  attempt a = {0};
  raf_status st = RAF_OK;
  for (int round = 0; st == RAF_OK && !s->met && round < MAX_ROUNDS;
       round++) {
    target = budget - offset;
    st = try_target(o, m, f, G, target, io, &a);
    if (st != RAF_OK)
      break;
    s->least = a.after < s->least ? a.after : s->least;
    s->met = a.after <= budget;
    if (s->met)
      break;
    attempt_undo(G, &a);
    attempt_free(&a);
    if (a.reached > target)
      break; /* the solver can get no lower */
    /* The plan needs more than the model: ask the model for less. */
    offset += a.after - budget > RAF_MEM_ALIGN ? a.after - budget
                                               : RAF_MEM_ALIGN;
    offset = offset > a.after - a.reached ? offset : a.after - a.reached;
  }
  /* Last, the schedule that takes the model as low as the solver goes. */
  if (st == RAF_OK && !s->met) {
    target = 0;
    st = try_target(o, m, f, G, target, io, &a);
    if (st == RAF_OK) {
      s->lowest = a.after;
      s->least = a.after < s->least ? a.after : s->least;
      s->met = a.after <= budget;
      if (!s->met) {
        attempt_undo(G, &a);
        attempt_free(&a);
      }
    }
  }
  if (st == RAF_OK && s->met)
    s->best = a;
  /* The plan may need less than the model: give the model the slack back
   * while that recomputes less. */
  for (int round = 0; st == RAF_OK && s->met && round < MAX_RELAX; round++) {
    int64_t t2 = target + (budget - s->best.after);
    if (t2 <= target + RAF_MEM_ALIGN)
      break;
    attempt_undo(G, &s->best);
    st = try_target(o, m, f, G, t2, io, &a);
    bool better = st == RAF_OK && a.after <= budget &&
                  a.flops < s->best.flops;
    if (better) {
      attempt_free(&s->best);
      s->best = a;
      target = t2;
      continue;
    }
    if (st == RAF_OK)
      attempt_undo(G, &a);
    attempt_free(&a);
    if (st == RAF_OK)
      st = raf_remat_write(m, f, G, s->best.steps, s->best.nsteps,
                           &s->best.w);
    break;
  }
  s->target = target;
  if (st != RAF_OK) {
    attempt_undo(G, &s->best);
    attempt_free(&s->best);
    s->met = false;
  }
  return st;
}

/* The least peak to name when the greedy search for a budget failed
 * (found: the least real peak it tried; lowest: that of the solver's
 * lowest schedule): the least that the greedy search reaches when asked for that very peak, so that the error
 * is reproducible (remat{budget=LEAST} succeeds; test_remat holds the pass
 * to it). The rounds depend on the budget: the least peak a search for
 * one budget tried may be a schedule that a search for that peak does not
 * try. So the least found is checked by searching for it; when that falls
 * short, the least that search found is checked in turn, a few times.
 * Failing that, the peak of the solver's lowest schedule: every search
 * that misses its budget tries that schedule, so it is always reached. */
#define LEAST_CHECKS 3
static raf_status reachable_least(const options *o, raf_module *m,
                                  raf_func *f, raf_remat_fn *G,
                                  int64_t before, int64_t found,
                                  int64_t lowest, int64_t *least) {
  int64_t candidate = found;
  int64_t fallback = lowest >= 0 && lowest < before ? lowest : before;
  for (int check = 0; check < LEAST_CHECKS && candidate < fallback;
       check++) {
    search s;
    raf_status st = search_budget(o, m, f, G, before, candidate, NULL, &s);
    if (st != RAF_OK)
      return st;
    if (s.met) {
      attempt_undo(G, &s.best);
      attempt_free(&s.best);
      *least = candidate;
      return RAF_OK;
    }
    candidate = s.least;
  }
  *least = candidate < fallback ? candidate : fallback;
  return RAF_OK;
}

/* A whole-node form of steps (a slice recomputes its node), for the exact
 * solver's incumbent. */
static raf_status whole_nodes(const raf_remat_step *steps, int nsteps, int n,
                              raf_remat_schedule *s) {
  if (raf_remat_schedule_init(s, n) != RAF_OK)
    return RAF_ERROR;
  for (int k = 0; k < nsteps; k++)
    s->r[(size_t)steps[k].stage * (size_t)n + (size_t)steps[k].node] = 1;
  return RAF_OK;
}

/* Whether a's steps are the schedule s. */
static bool same_nodes(const attempt *a, const raf_remat_schedule *s) {
  raf_remat_schedule mine;
  if (whole_nodes(a->steps, a->nsteps, s->n, &mine) != RAF_OK)
    return false;
  bool same = memcmp(mine.r, s->r, (size_t)s->n * (size_t)s->n) == 0;
  raf_remat_schedule_free(&mine);
  return same;
}

/* The model peak of s counting whole nodes (the exact solver's view). */
static int64_t peak_by_nodes(const raf_remat_graph *g,
                             const raf_remat_schedule *s) {
  raf_remat_graph whole = *g;
  whole.out_start = NULL;
  whole.has_slice = NULL;
  whole.out_share = NULL;
  return raf_remat_model_peak(&whole, s, NULL);
}

/* Improves the greedy search's schedule (written into f) with the exact
 * solver, from that schedule as its incumbent: at a model budget the
 * incumbent meets, by whole nodes, and lower when the real plan of the
 * solver's schedule goes over the budget. A schedule replaces the best
 * only when its real peak is within the budget and it costs fewer FLOPs,
 * so the result is never worse than greedy's. */
static raf_status improve_by_ilp(const options *o, raf_module *m, raf_func *f,
                                 raf_remat_fn *G, int64_t budget, search *s,
                                 ilp_outcome *io) {
  raf_remat_schedule start;
  bool *stages = calloc((size_t)G->g.n + 1, sizeof *stages);
  if (!stages ||
      whole_nodes(s->best.steps, s->best.nsteps, G->g.n, &start) != RAF_OK) {
    free(stages);
    return RAF_ERROR;
  }
  /* The stages greedy recomputes at: the whole program took no schedule
   * of a one-layer GPT-2 step in 60 s; around the incumbent's stages it
   * is solved in seconds (docs/Remat.md). */
  for (int k = 0; k < s->best.nsteps; k++)
    stages[s->best.steps[k].stage] = true;
  int64_t by_nodes = peak_by_nodes(&G->g, &start);
  int64_t target = by_nodes > s->target ? by_nodes : s->target;
  /* The least target whose schedule the plan put over the budget, and the
   * greatest with nothing cheaper than greedy's: the next target is
   * between them. */
  int64_t over_at = INT64_MAX, none_at = -1;
  raf_status st = by_nodes >= 0 ? RAF_OK : RAF_ERROR;
  for (int round = 0; st == RAF_OK && round < MAX_ROUNDS; round++) {
    attempt a = {0};
    a.reached = solve_ilp(o, G, target, &start, stages, io, &a.steps,
                          &a.nsteps, f);
    if (a.reached < 0) {
      st = RAF_ERROR;
      break;
    }
    bool none = a.reached == INT64_MAX || same_nodes(&a, &start);
    int64_t over = 0;
    if (!none) {
      attempt_undo(G, &s->best);
      st = measure(m, f, G, &a);
      if (st == RAF_OK && a.after <= budget && a.flops < s->best.flops) {
        attempt_free(&s->best);
        s->best = a;
        break;
      }
      if (st == RAF_OK) {
        over = a.after - budget;
        attempt_undo(G, &a);
        st = raf_remat_write(m, f, G, s->best.steps, s->best.nsteps,
                             &s->best.w);
      }
    }
    attempt_free(&a);
    if (st != RAF_OK || io->deadline <= now_seconds() || (!none && over <= 0))
      break; /* out of time, or within the budget and no cheaper */
    if (none)
      none_at = target;
    else
      over_at = target;
    if (over_at == INT64_MAX)
      break; /* nothing cheaper even at the loosest target */
    /* The plan needs more than the model: ask the model for less, by the
     * excess, or halfway to where nothing was cheaper. */
    int64_t next = none_at < 0 ? over_at - (over > RAF_MEM_ALIGN ? over
                                                                 : RAF_MEM_ALIGN)
                               : none_at + (over_at - none_at) / 2;
    if (next <= none_at || over_at - next < RAF_MEM_ALIGN)
      break;
    target = next;
  }
  raf_remat_schedule_free(&start);
  free(stages);
  return st;
}

/* The remark on the exact solver: its FLOPs against greedy's. */
static void report_ilp(const options *o, const raf_func *f,
                       const ilp_outcome *io, double flops) {
  char stop[96] = "";
  if (io->timed_out)
    snprintf(stop, sizeof stop, "; stopped at its time limit (%g s)",
             o->time_limit);
  if (io->greedy_flops < 0)
    raf_diag_report(o->ctx, f->loc, RAF_SEV_NOTE,
                    "remat: @%s: exact solver: %.4g FLOPs recomputed; the "
                    "greedy solver meets no schedule within the budget%s",
                    f->name, flops, stop);
  else
    raf_diag_report(o->ctx, f->loc, RAF_SEV_NOTE,
                    "remat: @%s: exact solver: %.4g FLOPs recomputed, "
                    "greedy %.4g (%.1f%% fewer)%s", f->name, flops,
                    io->greedy_flops,
                    io->greedy_flops > 0
                        ? 100 * (1 - flops / io->greedy_flops)
                        : 0.0,
                    stop);
}

static raf_status remat_func(const options *o, raf_module *m, raf_func *f) {
  raf_remat_fn G;
  if (raf_remat_graph_build(f, &G) != RAF_OK)
    return RAF_ERROR;
  options greedy_only = *o;
  if (o->ilp && G.g.n > MAX_ILP_NODES) { /* greedy's schedule, said so */
    raf_diag_report(o->ctx, f->loc, RAF_SEV_NOTE,
                    "remat: @%s has %d statements, more than the exact "
                    "solver takes (%d): solver=ilp keeps the greedy "
                    "solver's schedule", f->name, G.g.n, MAX_ILP_NODES);
    greedy_only.ilp = false;
    o = &greedy_only;
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
  /* The greedy search first, also for solver=ilp: the exact solver starts
   * from its schedule, or, when it met nothing, searches on its own. */
  search s;
  ilp_outcome io = {o->ilp, now_seconds() + o->time_limit, false, -1};
  st = search_budget(o, m, f, &G, before, budget, NULL, &s);
  if (st == RAF_OK && o->ilp && s.met) {
    io.greedy_flops = s.best.flops;
    st = improve_by_ilp(o, m, f, &G, budget, &s, &io);
  }
  int64_t greedy_least = s.least, greedy_lowest = s.lowest;
  if (st == RAF_OK && o->ilp && !s.met)
    st = search_budget(o, m, f, &G, before, budget, &io, &s);
  if (st == RAF_OK && !s.met) {
    int64_t least;
    st = reachable_least(o, m, f, &G, before, greedy_least, greedy_lowest,
                         &least);
    if (st == RAF_OK) {
      size_str(least, b2, sizeof b2);
      raf_diag_report(o->ctx, f->loc, RAF_SEV_ERROR,
                      "@%s: budget %s is below the least peak remat can "
                      "reach, %s", f->name, b1, b2);
      st = RAF_ERROR;
    }
  }
  if (st == RAF_OK) {
    char b0[64], b3[64];
    size_str(before, b0, sizeof b0);
    size_str(s.best.after, b3, sizeof b3);
    raf_diag_report(o->ctx, f->loc, RAF_SEV_NOTE,
                    "remat: @%s: peak %s -> %s (budget %s); %d values "
                    "recomputed, %.4g FLOPs more (%.1f%% of the step)",
                    f->name, b0, b3, b1, s.best.w.nsteps, s.best.flops,
                    G.step_flops > 0 ? 100 * s.best.flops / G.step_flops
                                     : 0.0);
    if (io.ran)
      report_ilp(o, f, &io, s.best.flops);
    free(s.best.w.clone);
    s.best.w.clone = NULL;
  } else {
    attempt_undo(&G, &s.best);
  }
  attempt_free(&s.best);
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
