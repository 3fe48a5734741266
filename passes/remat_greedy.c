/* remat_greedy.c: the remat pass's default solver (passes/remat.h).
 *
 * It works on the peak, one recomputation at a time, in the manner of
 * RAF's rematerialisation pass and of Checkmate's greedy baselines, but
 * against the model's exact peak rather than an estimate:
 *
 *  1. Run the schedule in the model (remat_model.c) and find the first
 *     moment P at the peak.
 *  2. Every copy of an output live at P that P does not read is a
 *     candidate: compute it again just before its next read after P, so
 *     that the copy dies at its last read before P. It is computed by its
 *     slice when it has one (a layer_norm from the residual its fused call
 *     also returns), else by its whole node, which also frees the node's
 *     other outputs that are not read again before. Its inputs are read
 *     there from their latest copies, and a copy that had died before P
 *     now lives across it: the bytes freed at P are the output's minus
 *     those inputs'. Further forms of the candidate also compute those
 *     inputs again, in the same stage, level by level (up to MAX_DEPTH),
 *     each where that keeps fewer bytes alive than the input would: the
 *     q, k, v that attention's gradient reads are a transpose of a
 *     reshape of a split of a matmul away from the layer norm that stays.
 *  3. Candidates are tried in order of bytes freed at P per FLOP
 *     recomputed (free ones first, the largest first); the first that
 *     lowers the peak, or keeps it and leaves fewer moments at it, is
 *     kept. Each kept step lowers (peak, moments at the peak)
 *     lexicographically, so the solver ends.
 *  4. It stops when the peak is within the budget, or when no candidate
 *     helps: the peak then is the least it reaches.
 *  5. Within the budget, it takes back each step the budget does not need,
 *     the costliest first: an early step a later one made unnecessary.
 * A step costs one run of the model, linear in the moments and reads, so a
 * GPT-2 step of a thousand statements is solved in tens of milliseconds.
 */
#include "passes/remat.h"

#include <stdlib.h>
#include <string.h>

/* Candidates tried per step before the solver gives up. */
#define MAX_TRIES 12
/* How deep a candidate recomputes the inputs of what it recomputes, and
 * the most steps one candidate takes. */
#define MAX_DEPTH 8
#define MAX_STEPS 32
/* When stuck: candidates tried with a few more steps after them. */
#define LOOK_TRIES 8
#define LOOK_STEPS 8

typedef struct candidate {
  raf_remat_step step[MAX_STEPS]; /* the output's, then its inputs' */
  int nsteps;
  int64_t freed; /* at P */
  double flops;
} candidate;

typedef struct solver {
  const raf_remat_graph *g;
  raf_remat_step *steps;
  int nsteps, cap;
} solver;

static int step_cmp(const void *a, const void *b) {
  const raf_remat_step *x = a, *y = b;
  if (x->stage != y->stage)
    return x->stage < y->stage ? -1 : 1;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  return x->out - y->out;
}

/* Adds the candidate's steps to the schedule, keeping it sorted. */
static bool add_steps(solver *S, const candidate *c) {
  if (S->nsteps + c->nsteps > S->cap) {
    int cap = 2 * S->cap + c->nsteps + 16;
    raf_remat_step *v = realloc(S->steps, sizeof *v * (size_t)cap);
    if (!v)
      return false;
    S->steps = v;
    S->cap = cap;
  }
  memcpy(S->steps + S->nsteps, c->step, sizeof *c->step * (size_t)c->nsteps);
  S->nsteps += c->nsteps;
  qsort(S->steps, (size_t)S->nsteps, sizeof *S->steps, step_cmp);
  return true;
}

static void remove_steps(solver *S, const candidate *c) {
  int k = 0;
  for (int j = 0; j < S->nsteps; j++) {
    bool drop = false;
    for (int q = 0; q < c->nsteps; q++)
      drop |= step_cmp(&S->steps[j], &c->step[q]) == 0;
    if (!drop)
      S->steps[k++] = S->steps[j];
  }
  S->nsteps = k;
}

/* How far a schedule is from a budget: its model peak, then the bytes over
 * the budget summed over its moments, then the moments at the peak. Less
 * is better; each kept step makes it less, so the solver ends. */
typedef struct standing {
  int64_t peak, excess;
  int at_peak;
} standing;

static bool better(const standing *a, const standing *b) {
  if (a->peak != b->peak)
    return a->peak < b->peak;
  if (a->excess != b->excess)
    return a->excess < b->excess;
  return a->at_peak < b->at_peak;
}

/* S's standing against budget (peak -1 on error); the trace into *trace
 * when it is not NULL. */
static standing evaluate(solver *S, int64_t budget, raf_remat_trace *trace) {
  raf_remat_trace own;
  raf_remat_trace *t = trace ? trace : &own;
  standing st = {raf_remat_model_peak_steps(S->g, S->steps, S->nsteps, NULL,
                                            t),
                 0, 0};
  for (int m = 0; st.peak >= 0 && m < t->moments; m++) {
    st.at_peak += t->live[m] == st.peak;
    st.excess += t->live[m] > budget ? t->live[m] - budget : 0;
  }
  if (!trace)
    raf_remat_trace_free(t);
  return st;
}


/* Drops the slices of nodes the schedule also recomputes whole in the same
 * stage, where that leaves its standing (now) no worse: the whole node made
 * the output just before. False when out of memory. */
static bool drop_redundant(solver *S, int64_t budget, const standing *now) {
  raf_remat_step *keep = malloc(sizeof *keep * (size_t)(S->nsteps + 1));
  if (!keep)
    return false;
  memcpy(keep, S->steps, sizeof *keep * (size_t)S->nsteps);
  int n = S->nsteps, k = 0;
  for (int q = 0; q < n; q++) {
    raf_remat_step whole = {S->steps[q].stage, S->steps[q].node, -1};
    if (S->steps[q].out < 0 ||
        !bsearch(&whole, keep, (size_t)n, sizeof *keep, step_cmp))
      S->steps[k++] = S->steps[q];
  }
  S->nsteps = k;
  standing after = k < n ? evaluate(S, budget, NULL) : *now;
  if (k < n && (after.peak < 0 || better(now, &after))) {
    memcpy(S->steps, keep, sizeof *keep * (size_t)n);
    S->nsteps = n;
  }
  free(keep);
  return true;
}

/* ---- The graph's outputs ------------------------------------------------- */

static int first_out(const raf_remat_graph *g, int node) {
  return g->out_start ? g->out_start[node] : node;
}

static int nouts(const raf_remat_graph *g, int node) {
  return g->out_start ? g->out_start[node + 1] - g->out_start[node] : 1;
}

static int node_of(const raf_remat_graph *g, int out) {
  return g->out_start ? g->out_node[out] : out;
}

static int64_t out_bytes(const raf_remat_graph *g, int out) {
  return g->out_start ? g->out_bytes[out] : g->bytes[out];
}

static bool has_slice(const raf_remat_graph *g, int out) {
  return g->has_slice && g->has_slice[out] && nouts(g, node_of(g, out)) > 1;
}

/* The outputs that step s reads. */
static void reads_of(const raf_remat_graph *g, const raf_remat_step *s,
                     const int **rd, int *nrd) {
  if (s->out >= 0) {
    int q = first_out(g, s->node) + s->out;
    *rd = g->slice_rd + g->slice_start[q];
    *nrd = g->slice_start[q + 1] - g->slice_start[q];
  } else if (g->out_start) {
    *rd = g->rd + g->rd_start[s->node];
    *nrd = g->rd_start[s->node + 1] - g->rd_start[s->node];
  } else {
    *rd = g->in + g->in_start[s->node];
    *nrd = g->in_start[s->node + 1] - g->in_start[s->node];
  }
}

static double step_flops(const raf_remat_graph *g, const raf_remat_step *s) {
  return s->out >= 0 ? g->slice_flops[first_out(g, s->node) + s->out]
                     : g->flops[s->node];
}

/* The step that computes output o again in `stage`: its slice if it has
 * one, else its node. */
static raf_remat_step step_for(const raf_remat_graph *g, int o, int stage) {
  int i = node_of(g, o);
  return (raf_remat_step){stage, i, has_slice(g, o) ? o - first_out(g, i)
                                                    : -1};
}

/* ---- The trace ----------------------------------------------------------- */

/* The order of moment m's computation, as a step. */
static raf_remat_step key_of(const raf_remat_trace *t, int m) {
  return (raf_remat_step){t->stage[m], t->node[m], t->slice[m]};
}

/* The copy of output o that step s reads: the last made before s. */
static int latest_copy(const raf_remat_trace *t, int o,
                       const raf_remat_step *s) {
  int lo = t->copies_start[o], hi = t->copies_start[o + 1], best = -1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    raf_remat_step k = key_of(t, t->co_moment[t->copies[mid]]);
    if (step_cmp(&k, s) < 0) {
      best = t->copies[mid];
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return best;
}

/* Whether step s comes after moment P. */
static bool after(const raf_remat_trace *t, int P, const raf_remat_step *s) {
  raf_remat_step k = key_of(t, P);
  return step_cmp(s, &k) > 0;
}

/* ---- Candidates ---------------------------------------------------------- */

/* Whether a step of c makes output o. */
static bool makes(const raf_remat_graph *g, const candidate *c, int o) {
  int i = node_of(g, o), k = o - first_out(g, i);
  for (int q = 0; q < c->nsteps; q++)
    if (c->step[q].node == i && (c->step[q].out < 0 || c->step[q].out == k))
      return true;
  return false;
}

/* The bytes that step s of c keeps alive across P, reading copies that
 * died before it, after c computes again, up to `depth` levels down, each
 * such input whose recomputation keeps less alive than the input would. */
static int64_t expand(const raf_remat_graph *g, const raf_remat_trace *t,
                      int P, candidate *c, const raf_remat_step *s,
                      int depth) {
  const int *rd;
  int nrd;
  int64_t lost = 0;
  reads_of(g, s, &rd, &nrd);
  for (int e = 0; e < nrd; e++) {
    int o = rd[e], co = latest_copy(t, o, s);
    if (co < 0 || t->co_moment[co] >= P || t->last[co] >= P ||
        makes(g, c, o))
      continue; /* alive across P anyway, or made again after it */
    int64_t bytes = out_bytes(g, o);
    raf_remat_step w = step_for(g, o, s->stage);
    if (depth == 0 || !g->can_recompute[w.node] || !after(t, P, &w) ||
        c->nsteps == MAX_STEPS) {
      lost += bytes;
      continue;
    }
    int mark = c->nsteps;
    double flops = c->flops;
    c->step[c->nsteps++] = w;
    c->flops += step_flops(g, &w);
    int64_t lost_w = expand(g, t, P, c, &w, depth - 1);
    if (lost_w < bytes) {
      lost += lost_w;
    } else { /* keeping the input alive is cheaper */
      c->nsteps = mark;
      c->flops = flops;
      lost += bytes;
    }
  }
  return lost;
}

static double score(const candidate *c) {
  return (double)c->freed / (c->flops + 1e-9);
}

static int by_score(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  double sx = score(x), sy = score(y);
  if (sx != sy)
    return sx > sy ? -1 : 1;
  if (x->freed != y->freed)
    return x->freed > y->freed ? -1 : 1;
  return step_cmp(&x->step[0], &y->step[0]);
}

/* The bytes at P that step s frees: the copies it replaces that live
 * across P, are not read at P, and are not read again before s. */
static int64_t freed_by(const raf_remat_graph *g, const raf_remat_trace *t,
                        int P, const raf_remat_step *s, const bool *read_at_p,
                        const int *next_read) {
  int q0 = first_out(g, s->node) + (s->out < 0 ? 0 : s->out);
  int q1 = s->out < 0 ? q0 + nouts(g, s->node) : q0 + 1;
  int64_t freed = 0;
  for (int q = q0; q < q1; q++) {
    int co = latest_copy(t, q, s);
    if (co < 0 || t->co_moment[co] >= P || t->last[co] < P || read_at_p[co])
      continue;
    int u = next_read[co];
    raf_remat_step ku = u >= 0 ? key_of(t, u) : *s;
    if (u < 0 || step_cmp(&ku, s) > 0)
      freed += out_bytes(g, q);
  }
  return freed;
}

/* Most bytes freed first; then as by_score. */
static int by_freed(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->freed != y->freed)
    return x->freed > y->freed ? -1 : 1;
  return by_score(a, b);
}

/* Fewest FLOPs first; then as by_freed. */
static int by_cost(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->flops != y->flops)
    return x->flops < y->flops ? -1 : 1;
  return by_freed(a, b);
}

/* Drops the slices of nodes that c also recomputes whole in their stage:
 * the node makes that output already (a slice reading a result its node
 * must make again brings the node in). */
static void drop_covered(const raf_remat_graph *g, candidate *c) {
  int k = 0;
  for (int q = 0; q < c->nsteps; q++) {
    bool covered = false;
    for (int r = 0; c->step[q].out >= 0 && r < c->nsteps; r++)
      covered |= c->step[r].out < 0 && c->step[r].node == c->step[q].node &&
                 c->step[r].stage == c->step[q].stage;
    if (covered)
      c->flops -= step_flops(g, &c->step[q]);
    else
      c->step[k++] = c->step[q];
  }
  c->nsteps = k;
}

/* Adds the forms of the candidate that starts with step s. */
static void add_forms(const raf_remat_graph *g, const raf_remat_trace *t,
                      int P, const raf_remat_step *s, int64_t freed,
                      candidate *v, int *ncand) {
  int prev = -1;
  for (int depth = 0; depth <= MAX_DEPTH; depth++) {
    candidate c = {{*s}, 1, freed, step_flops(g, s)};
    c.freed -= expand(g, t, P, &c, s, depth);
    drop_covered(g, &c);
    if (c.nsteps == prev)
      continue; /* as the last depth's; a deeper one may differ */
    prev = c.nsteps;
    if (c.freed > 0) {
      qsort(c.step, (size_t)c.nsteps, sizeof *c.step, step_cmp);
      v[(*ncand)++] = c;
    }
  }
}

/* The candidates at the first peak moment P of trace t, best first. */
static candidate *candidates(const raf_remat_graph *g,
                             const raf_remat_trace *t, int P, int *ncand,
                             int (*by)(const void *, const void *)) {
  int M = t->moments, nco = t->co_base[M];
  int *next_read = malloc(sizeof *next_read * (size_t)(nco + 1));
  bool *read_at_p = calloc((size_t)nco + 1, 1);
  /* Two forms (slice, node) per copy output, each at every depth. */
  size_t cap = (size_t)(2 * (MAX_DEPTH + 1)) * (size_t)nco + 1;
  candidate *v = malloc(sizeof *v * cap);
  *ncand = 0;
  if (!next_read || !read_at_p || !v) {
    free(next_read);
    free(read_at_p);
    free(v);
    return NULL;
  }
  for (int co = 0; co < nco; co++)
    next_read[co] = -1;
  for (int r = t->reads_start[P]; r < t->reads_start[P + 1]; r++)
    read_at_p[t->reads[r]] = true;
  for (int m = P + 1; m < M; m++)
    for (int r = t->reads_start[m]; r < t->reads_start[m + 1]; r++)
      if (next_read[t->reads[r]] < 0)
        next_read[t->reads[r]] = m;
  for (int co = 0; co < t->co_base[P]; co++) {
    int o = t->co_out[co], i = node_of(g, o), u = next_read[co];
    if (t->last[co] < P || read_at_p[co] || u < 0 || !g->can_recompute[i])
      continue;
    int stage = t->stage[u];
    raf_remat_step forms[2] = {{stage, i, -1}, step_for(g, o, stage)};
    for (int f = 0; f < (forms[1].out >= 0 ? 2 : 1); f++) {
      if (!after(t, P, &forms[f]))
        continue; /* it would be made again before P */
      int64_t freed = freed_by(g, t, P, &forms[f], read_at_p, next_read);
      if (freed > 0)
        add_forms(g, t, P, &forms[f], freed, v, ncand);
    }
  }
  qsort(v, (size_t)*ncand, sizeof *v, by);
  /* The same candidate comes from each output its node frees. */
  int k = 0;
  for (int j = 0; j < *ncand; j++) {
    bool dup = k > 0 && v[k - 1].nsteps == v[j].nsteps &&
               v[k - 1].freed == v[j].freed;
    for (int q = 0; dup && q < v[j].nsteps; q++)
      dup = step_cmp(&v[k - 1].step[q], &v[j].step[q]) == 0;
    if (!dup)
      v[k++] = v[j];
  }
  *ncand = k;
  free(next_read);
  free(read_at_p);
  return v;
}

static int by_flops(const void *a, const void *b, void *g_) {
  const raf_remat_graph *g = g_;
  double x = step_flops(g, a), y = step_flops(g, b);
  return x > y ? -1 : x < y;
}

/* Step 5: the steps the budget does not need, the costliest first, go
 * again. Returns the peak, -1 when out of memory. */
static int64_t prune(solver *S, int64_t budget, int64_t peak) {
  raf_remat_step *order = malloc(sizeof *order * (size_t)(S->nsteps + 1));
  if (!order)
    return -1;
  int n = S->nsteps;
  if (n)
    memcpy(order, S->steps, sizeof *order * (size_t)n);
  /* qsort_r is not C11: a stable insertion sort by FLOPs, descending. */
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && by_flops(&order[j - 1], &order[j],
                                      (void *)S->g) > 0; j--) {
      raf_remat_step t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  for (int i = 0; i < n && peak >= 0; i++) {
    candidate c = {{order[i]}, 1, 0, 0};
    remove_steps(S, &c);
    int64_t p = evaluate(S, budget, NULL).peak;
    if (p >= 0 && p <= budget)
      peak = p;
    else if (!add_steps(S, &c))
      peak = -1;
  }
  free(order);
  return peak;
}

/* Steps 1 to 4 in S, trying at each step the first `tries` candidates in
 * order of *by (by_score, or by_freed). Returns the peak, -1 when out of
 * memory. */
static int64_t descend(solver *S, int64_t budget, int tries,
                       int (*by)(const void *, const void *), int lookahead,
                       int max_steps);

/* When no candidate lowers the peak alone: a candidate followed by a few
 * more (up to LOOK_STEPS, themselves without lookahead) that together get
 * below `peak`, among the first LOOK_TRIES. Keeps them in S and returns
 * true when found. */
static bool look_ahead(solver *S, const candidate *cand, int ncand,
                       int64_t peak, int (*by)(const void *, const void *),
                       bool *oom) {
  raf_remat_step *keep = malloc(sizeof *keep * (size_t)(S->nsteps + 1));
  int n = S->nsteps;
  if (!keep) {
    *oom = true;
    return false;
  }
  if (n)
    memcpy(keep, S->steps, sizeof *keep * (size_t)n);
  bool found = false;
  for (int k = 0; k < ncand && k < LOOK_TRIES && !found && !*oom; k++) {
    if (!add_steps(S, &cand[k])) {
      *oom = true;
      break;
    }
    int64_t p = descend(S, peak - 1, MAX_TRIES, by, 0, LOOK_STEPS);
    *oom = p < 0;
    found = p >= 0 && p < peak;
    if (!found) {
      if (n)
        memcpy(S->steps, keep, sizeof *keep * (size_t)n);
      S->nsteps = n;
    }
  }
  free(keep);
  return found;
}

static int64_t descend(solver *S, int64_t budget, int tries,
                       int (*by)(const void *, const void *), int lookahead,
                       int max_steps) {
  standing now = {-1, 0, 0};
  for (int step = 0;; step++) {
    raf_remat_trace t;
    now = evaluate(S, budget, &t);
    if (now.peak < 0 || now.peak <= budget) {
      raf_remat_trace_free(&t);
      break;
    }
    int P = 0;
    while (t.live[P] != now.peak)
      P++;
    int ncand;
    candidate *cand = candidates(S->g, &t, P, &ncand, by);
    raf_remat_trace_free(&t);
    if (!cand)
      return -1;
    bool kept = false, oom = false;
    for (int k = 0; k < ncand && k < tries && !kept && !oom; k++) {
      /* A candidate may repeat a step the schedule has: skip it. */
      bool dup = false;
      for (int q = 0; q < cand[k].nsteps && !dup; q++)
        dup = S->nsteps > 0 &&
              bsearch(&cand[k].step[q], S->steps, (size_t)S->nsteps,
                      sizeof *S->steps, step_cmp) != NULL;
      if (dup)
        continue;
      if (!add_steps(S, &cand[k])) {
        oom = true;
        break;
      }
      standing after = evaluate(S, budget, NULL);
      kept = after.peak >= 0 && better(&after, &now);
      if (!kept)
        remove_steps(S, &cand[k]);
      else
        oom = !drop_redundant(S, budget, &after);
    }
    if (!kept && !oom && lookahead > 0)
      kept = look_ahead(S, cand, ncand, now.peak, by, &oom);
    free(cand);
    if (oom)
      return -1;
    if (!kept || step + 1 == max_steps)
      break;
  }
  if (now.peak >= 0 && max_steps > 0) /* what S holds now */
    now = evaluate(S, budget, NULL);
  return now.peak;
}

int64_t raf_remat_solve_greedy(const raf_remat_graph *g, int64_t budget,
                               raf_remat_step **steps, int *nsteps) {
  /* By bytes per FLOP first; when that gets stuck above the budget, again
   * from scratch by bytes alone, trying every candidate: it reaches lower,
   * and pruning takes back what it spent needlessly. The lower of the two
   * peaks is the least the solver reaches. */
  static int (*const order[])(const void *, const void *) = {
      by_score, by_freed, by_cost};
  static const int tries[] = {MAX_TRIES, 1 << 30, 1 << 30};
  solver best = {g, NULL, 0, 0};
  int64_t best_peak = -1;
  for (int r = 0; r < 3; r++) {
    solver S = {g, NULL, 0, 0};
    int64_t peak = descend(&S, budget, tries[r], order[r], 1, 1 << 30);
    if (peak >= 0 && peak <= budget)
      peak = prune(&S, budget, peak);
    if (peak >= 0 && (best_peak < 0 || peak < best_peak)) {
      free(best.steps);
      best = S;
      best_peak = peak;
    } else {
      free(S.steps);
    }
    if (peak < 0 || peak <= budget)
      break;
  }
  if (best_peak < 0) {
    free(best.steps);
    best.steps = NULL;
    best.nsteps = 0;
  }
  *steps = best.steps;
  *nsteps = best.nsteps;
  return best_peak;
}
