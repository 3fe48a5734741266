/* remat_model.c: the memory model of a rematerialisation schedule
 * (passes/remat.h), which both of the remat pass's solvers reason in.
 *
 * The run of a schedule is a sequence of moments, one per computation:
 * stage t's recomputations in increasing node order, then node t. Each
 * computation makes a copy of its node; each read takes the latest copy
 * of its input. A copy lives from its moment to the last moment that reads
 * it; a node's last copy lives to the end when the node is returned. The
 * peak is found with a difference array over the moments, so the model
 * costs the number of moments plus the reads, whatever the form of the
 * schedule: the dense one is turned into steps first.
 */
#include "passes/remat.h"

#include <stdlib.h>
#include <string.h>

raf_status raf_remat_schedule_init(raf_remat_schedule *s, int n) {
  s->n = n;
  s->r = calloc((size_t)n * (size_t)n + 1, 1);
  return s->r ? RAF_OK : RAF_ERROR;
}

void raf_remat_schedule_free(raf_remat_schedule *s) {
  free(s->r);
  s->r = NULL;
  s->n = 0;
}

void raf_remat_trace_free(raf_remat_trace *t) {
  free(t->node);
  free(t->stage);
  free(t->out_base);
  free(t->last);
  free(t->copies_start);
  free(t->copies);
  free(t->reads_start);
  free(t->reads);
  free(t->live);
  memset(t, 0, sizeof *t);
}

/* A graph's outputs: its own, or one per node. */
typedef struct outputs {
  int *start, *rd_start, *rd, *node, *own;
  const int64_t *bytes;
  const bool *returned;
} outputs;

static bool outputs_of(const raf_remat_graph *g, outputs *o) {
  memset(o, 0, sizeof *o);
  if (g->out_start) {
    *o = (outputs){g->out_start, g->rd_start, g->rd, g->out_node, NULL,
                   g->out_bytes, g->out_returned};
    return true;
  }
  o->own = malloc(sizeof *o->own * (size_t)(g->n + 1));
  if (!o->own)
    return false;
  for (int i = 0; i <= g->n; i++)
    o->own[i] = i;
  *o = (outputs){o->own, g->in_start, g->in, o->own, o->own, g->bytes,
                 g->returned};
  return true;
}

int64_t raf_remat_model_peak_steps(const raf_remat_graph *g,
                                   const raf_remat_step *steps, int nsteps,
                                   double *extra_flops,
                                   raf_remat_trace *trace) {
  int n = g->n, moments = n + nsteps;
  raf_remat_trace own, *t = trace ? trace : &own;
  memset(t, 0, sizeof *t);
  t->moments = moments;
  outputs o;
  if (!outputs_of(g, &o))
    return -1;
  size_t m1 = (size_t)moments + 1, nreads = (size_t)o.rd_start[n];
  size_t nout = (size_t)o.start[n];
  for (int k = 0; k < nsteps; k++) {
    int i = steps[k].node;
    if (i < 0 || i >= steps[k].stage || steps[k].stage >= n) {
      free(o.own);
      return -1;
    }
    nreads += (size_t)(o.rd_start[i + 1] - o.rd_start[i]);
    nout += (size_t)(o.start[i + 1] - o.start[i]);
  }
  int *latest = malloc(sizeof *latest * (size_t)(n + 1));
  int64_t *delta = calloc(m1 + 1, sizeof *delta);
  t->node = malloc(sizeof *t->node * m1);
  t->stage = malloc(sizeof *t->stage * m1);
  t->out_base = malloc(sizeof *t->out_base * (m1 + 1));
  t->last = malloc(sizeof *t->last * (nout + 1));
  t->copies_start = calloc((size_t)n + 2, sizeof *t->copies_start);
  t->copies = malloc(sizeof *t->copies * m1);
  t->reads_start = malloc(sizeof *t->reads_start * (m1 + 1));
  t->reads = malloc(sizeof *t->reads * (nreads + 1));
  t->live = malloc(sizeof *t->live * m1);
  int64_t peak = -1;
  double extra = 0;
  if (!latest || !delta || !t->node || !t->stage || !t->out_base ||
      !t->last || !t->copies_start || !t->copies || !t->reads_start ||
      !t->reads || !t->live)
    goto done;
  for (int i = 0; i < n; i++)
    latest[i] = -1;
  int m = 0, k = 0, r = 0, base = 0;
  for (int stage = 0; stage < n; stage++) {
    for (;;) {
      bool step = k < nsteps && steps[k].stage == stage;
      if (step && k > 0 && steps[k - 1].stage == stage &&
          steps[k - 1].node >= steps[k].node)
        goto done; /* not sorted */
      int i = step ? steps[k++].node : stage;
      if (step) {
        if (!g->can_recompute[i])
          goto done;
        extra += g->flops[i];
      }
      t->reads_start[m] = r;
      for (int e = o.rd_start[i]; e < o.rd_start[i + 1]; e++) {
        int out = o.rd[e], j = o.node[out], c = latest[j];
        if (c < 0)
          goto done; /* reads a node not yet made */
        int co = t->out_base[c] + (out - o.start[j]);
        t->last[co] = m;
        t->reads[r++] = co;
      }
      t->node[m] = i;
      t->stage[m] = stage;
      t->out_base[m] = base;
      for (int q = o.start[i]; q < o.start[i + 1]; q++)
        t->last[base++] = m;
      t->copies_start[i + 1]++;
      latest[i] = m++;
      if (!step)
        break;
    }
  }
  if (k != nsteps)
    goto done; /* steps out of order */
  t->reads_start[m] = r;
  t->out_base[m] = base;
  for (int i = 0; i < n; i++) {
    t->copies_start[i + 1] += t->copies_start[i];
    for (int q = o.start[i]; q < o.start[i + 1]; q++)
      if (o.returned[q])
        t->last[t->out_base[latest[i]] + (q - o.start[i])] = m - 1;
  }
  for (int i = 0; i < n; i++)
    latest[i] = t->copies_start[i]; /* the next slot of node i's copies */
  for (int c = 0; c < m; c++) {
    int i = t->node[c];
    t->copies[latest[i]++] = c;
    for (int q = o.start[i]; q < o.start[i + 1]; q++) {
      int co = t->out_base[c] + (q - o.start[i]);
      delta[c] += o.bytes[q];
      delta[t->last[co] + 1] -= o.bytes[q];
    }
  }
  int64_t live = 0;
  peak = 0;
  for (int c = 0; c < m; c++) {
    live += delta[c];
    t->live[c] = live;
    if (live > peak)
      peak = live;
  }
  if (extra_flops)
    *extra_flops = extra;
done:
  free(latest);
  free(delta);
  free(o.own);
  if (!trace || peak < 0)
    raf_remat_trace_free(t);
  return peak;
}

int64_t raf_remat_model_peak(const raf_remat_graph *g,
                             const raf_remat_schedule *s,
                             double *extra_flops) {
  int n = g->n, nsteps = 0;
  for (int t = 0; t < n; t++)
    for (int i = 0; i < n; i++)
      if (s->r[(size_t)t * (size_t)n + (size_t)i]) {
        if (i >= t)
          return -1;
        nsteps++;
      }
  raf_remat_step *steps = malloc(sizeof *steps * (size_t)(nsteps + 1));
  if (!steps)
    return -1;
  int k = 0;
  for (int t = 0; t < n; t++)
    for (int i = 0; i < t; i++)
      if (s->r[(size_t)t * (size_t)n + (size_t)i])
        steps[k++] = (raf_remat_step){t, i};
  int64_t peak = raf_remat_model_peak_steps(g, steps, nsteps, extra_flops,
                                            NULL);
  free(steps);
  return peak;
}
