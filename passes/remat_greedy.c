/* remat_greedy.c: the remat pass's default solver (passes/remat.h).
 *
 * It works on the peak, one recomputation at a time, in the manner of
 * RAF's rematerialisation pass and of Checkmate's greedy baselines, but
 * against the model's exact peak rather than an estimate:
 *
 *  1. Run the schedule in the model (remat_model.c) and find the first
 *     moment P at the peak.
 *  2. Every copy live at P that P does not read is a candidate: recompute
 *     its node just before its next read after P, so the copy dies at its
 *     last read before P. Its inputs are read there from their latest
 *     copies, and a copy that had died before P now lives across it: the
 *     bytes freed at P are the node's minus those inputs'. A second form
 *     of the candidate also recomputes those inputs, in the same stage, when
 *     that frees more.
 *  3. Candidates are tried in order of bytes freed at P per FLOP
 *     recomputed (free recomputations first, the largest first); the first
 *     that lowers the peak, or keeps it and leaves fewer moments at it, is
 *     kept. Each kept step lowers (peak, moments at the peak)
 *     lexicographically, so the solver ends.
 *  4. It stops when the peak is within the budget, or when no candidate
 *     helps: the peak then is the least it reaches.
 * A step costs one run of the model, linear in the moments and reads, so a
 * GPT-2 step of thousands of statements is solved in milliseconds.
 */
#include "passes/remat.h"

#include <stdlib.h>
#include <string.h>

/* Candidates tried per step before the solver gives up. */
#define MAX_TRIES 12
/* How deep a candidate recomputes the inputs of what it recomputes, and
 * the most statements one candidate recomputes. */
#define MAX_DEPTH 8
#define MAX_STEPS 32

typedef struct candidate {
  raf_remat_step step[MAX_STEPS]; /* the node, then inputs recomputed */
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
  return x->node - y->node;
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
      drop |= S->steps[j].stage == c->step[q].stage &&
              S->steps[j].node == c->step[q].node;
    if (!drop)
      S->steps[k++] = S->steps[j];
  }
  S->nsteps = k;
}

/* The model's peak and the number of moments at it; peak -1 on error. */
static int64_t evaluate(solver *S, int *at_peak, raf_remat_trace *trace) {
  raf_remat_trace own;
  raf_remat_trace *t = trace ? trace : &own;
  int64_t peak = raf_remat_model_peak_steps(S->g, S->steps, S->nsteps, NULL,
                                            t);
  *at_peak = 0;
  for (int m = 0; peak >= 0 && m < t->moments; m++)
    *at_peak += t->live[m] == peak;
  if (!trace)
    raf_remat_trace_free(t);
  return peak;
}

/* The latest copy of node w that a recomputation in `stage` reads: its
 * last copy made in a stage <= stage (w precedes the recomputed node, so
 * all of w's copies in that stage come first). -1 when none. */
static int latest_copy(const raf_remat_trace *t, int w, int stage) {
  int lo = t->copies_start[w], hi = t->copies_start[w + 1], best = -1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (t->stage[t->copies[mid]] <= stage) {
      best = t->copies[mid];
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return best;
}

/* Whether a recomputation of node i in `stage` comes after moment P. */
static bool after(const raf_remat_trace *t, int P, int stage, int i) {
  return stage > t->stage[P] || (stage == t->stage[P] && i > t->node[P]);
}

/* The outputs a node reads: g's, or its inputs when it has none. */
static void reads_of(const raf_remat_graph *g, int i, const int **rd,
                     int *nrd) {
  const int *start = g->out_start ? g->rd_start : g->in_start;
  *rd = (g->out_start ? g->rd : g->in) + start[i];
  *nrd = start[i + 1] - start[i];
}

static int out_node(const raf_remat_graph *g, int out) {
  return g->out_start ? g->out_node[out] : out;
}

static int out_index(const raf_remat_graph *g, int out) {
  return g->out_start ? out - g->out_start[g->out_node[out]] : 0;
}

static int64_t out_bytes(const raf_remat_graph *g, int out) {
  return g->out_start ? g->out_bytes[out] : g->bytes[out];
}

/* The bytes that reading node i's inputs in `stage` keeps alive across P
 * (their latest copies there died before P), with the nodes of those
 * inputs in `extended` (at most 8 listed) and their bytes in ext_bytes. */
static int64_t extension(const raf_remat_graph *g, const raf_remat_trace *t,
                         int P, int stage, int i, int *extended,
                         int64_t *ext_bytes, int *next) {
  int64_t bytes = 0;
  const int *rd;
  int nrd;
  reads_of(g, i, &rd, &nrd);
  *next = 0;
  for (int e = 0; e < nrd; e++) {
    int w = out_node(g, rd[e]), c = latest_copy(t, w, stage);
    if (c < 0 || c >= P)
      continue;
    int co = t->out_base[c] + out_index(g, rd[e]);
    if (t->last[co] >= P)
      continue;
    bytes += out_bytes(g, rd[e]);
    int q = 0;
    while (q < *next && extended[q] != w)
      q++;
    if (q == *next && *next < 8) {
      extended[*next] = w;
      ext_bytes[(*next)++] = 0;
    }
    if (q < *next)
      ext_bytes[q] += out_bytes(g, rd[e]);
  }
  return bytes;
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

static bool has_step(const candidate *c, int node) {
  for (int q = 0; q < c->nsteps; q++)
    if (c->step[q].node == node)
      return true;
  return false;
}

/* The bytes that recomputing node i in `stage` (already in c) keeps alive
 * across P, after recomputing in c, up to `depth` levels down, each input
 * whose recomputation keeps less alive than the input itself would. */
static int64_t expand(const raf_remat_graph *g, const raf_remat_trace *t,
                      int P, candidate *c, int i, int stage, int depth) {
  int ext[8], next;
  int64_t ext_bytes[8];
  int64_t lost = extension(g, t, P, stage, i, ext, ext_bytes, &next);
  for (int q = 0; depth > 0 && q < next; q++) {
    int w = ext[q];
    if (has_step(c, w)) { /* already made again, after P */
      lost -= ext_bytes[q];
      continue;
    }
    if (!g->can_recompute[w] || !after(t, P, stage, w) ||
        c->nsteps == MAX_STEPS)
      continue;
    int mark = c->nsteps;
    double flops = c->flops;
    c->step[c->nsteps++] = (raf_remat_step){stage, w};
    c->flops += g->flops[w];
    int64_t lost_w = expand(g, t, P, c, w, stage, depth - 1);
    if (lost_w < ext_bytes[q]) {
      lost += lost_w - ext_bytes[q];
    } else { /* keeping w alive is cheaper */
      c->nsteps = mark;
      c->flops = flops;
    }
  }
  return lost;
}

/* The candidates at the first peak moment P of trace t, best first. */
static candidate *candidates(const raf_remat_graph *g,
                             const raf_remat_trace *t, int P, int *ncand) {
  int M = t->moments, nout = t->out_base[M];
  int *next_read = malloc(sizeof *next_read * (size_t)(M + 1));
  bool *read_at_p = calloc((size_t)nout + 1, 1);
  candidate *v = malloc(sizeof *v * (size_t)((MAX_DEPTH + 1) * M + 1));
  int *copy_of = malloc(sizeof *copy_of * (size_t)(nout + 1));
  *ncand = 0;
  if (!next_read || !read_at_p || !v || !copy_of) {
    free(next_read);
    free(read_at_p);
    free(v);
    free(copy_of);
    return NULL;
  }
  for (int c = 0; c < M; c++) {
    next_read[c] = -1;
    for (int co = t->out_base[c]; co < t->out_base[c + 1]; co++)
      copy_of[co] = c;
  }
  for (int r = t->reads_start[P]; r < t->reads_start[P + 1]; r++)
    read_at_p[t->reads[r]] = true;
  for (int m = P + 1; m < M; m++)
    for (int r = t->reads_start[m]; r < t->reads_start[m + 1]; r++)
      if (next_read[copy_of[t->reads[r]]] < 0)
        next_read[copy_of[t->reads[r]]] = m;
  for (int c = 0; c < P; c++) {
    int i = t->node[c], u = next_read[c];
    if (u < 0 || !g->can_recompute[i])
      continue;
    int64_t freed = 0, first = g->out_start ? g->out_start[i] : i;
    for (int co = t->out_base[c]; co < t->out_base[c + 1]; co++)
      if (t->last[co] >= P && !read_at_p[co])
        freed += out_bytes(g, (int)first + (co - t->out_base[c]));
    int stage = t->stage[u];
    if (freed == 0 || !after(t, P, stage, i))
      continue; /* nothing to free, or it would be made again before P */
    int ext[8], next;
    int64_t ext_bytes[8];
    int64_t lost = extension(g, t, P, stage, i, ext, ext_bytes, &next);
    candidate a = {{{stage, i}}, 1, freed - lost, g->flops[i]};
    if (a.freed > 0)
      v[(*ncand)++] = a;
    /* With the inputs that would live across P recomputed too, ever
     * deeper: a transformer's saved q, k, v are a transpose of a split of
     * a matmul of a layer norm away from the residual that stays. */
    int64_t prev_steps = 1;
    for (int depth = 1; depth <= MAX_DEPTH; depth++) {
      candidate b = {{{stage, i}}, 1, freed, g->flops[i]};
      b.freed -= expand(g, t, P, &b, i, stage, depth);
      if (b.nsteps == prev_steps)
        continue; /* as the last depth's; a deeper one may differ */
      prev_steps = b.nsteps;
      if (b.freed > 0) {
        qsort(b.step, (size_t)b.nsteps, sizeof *b.step, step_cmp);
        v[(*ncand)++] = b;
      }
    }
  }
  qsort(v, (size_t)*ncand, sizeof *v, by_score);
  free(next_read);
  free(read_at_p);
  free(copy_of);
  return v;
}

int64_t raf_remat_solve_greedy(const raf_remat_graph *g, int64_t budget,
                               raf_remat_step **steps, int *nsteps) {
  solver S = {g, NULL, 0, 0};
  int64_t peak = -1;
  for (;;) {
    raf_remat_trace t;
    int count;
    peak = evaluate(&S, &count, &t);
    if (peak < 0 || peak <= budget) {
      raf_remat_trace_free(&t);
      break;
    }
    int P = 0;
    while (t.live[P] != peak)
      P++;
    int ncand;
    candidate *cand = candidates(g, &t, P, &ncand);
    raf_remat_trace_free(&t);
    if (!cand) {
      peak = -1;
      break;
    }
    bool kept = false;
    for (int k = 0; k < ncand && k < MAX_TRIES && !kept; k++) {
      if (!add_steps(&S, &cand[k])) {
        peak = -1;
        break;
      }
      int count2;
      int64_t peak2 = evaluate(&S, &count2, NULL);
      kept = peak2 >= 0 && (peak2 < peak || (peak2 == peak && count2 < count));
      if (!kept)
        remove_steps(&S, &cand[k]);
    }
    free(cand);
    if (!kept || peak < 0)
      break;
  }
  if (peak < 0) {
    free(S.steps);
    S.steps = NULL;
    S.nsteps = 0;
  }
  *steps = S.steps;
  *nsteps = S.nsteps;
  return peak;
}
