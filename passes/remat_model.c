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
  free(t->slice);
  free(t->co_base);
  free(t->co_out);
  free(t->co_moment);
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

static int step_order(const raf_remat_step *a, const raf_remat_step *b) {
  if (a->stage != b->stage)
    return a->stage < b->stage ? -1 : 1;
  if (a->node != b->node)
    return a->node < b->node ? -1 : 1;
  return a->out - b->out;
}

/* Whether step k is valid alone: a node or slice that may be computed
 * again, before a later stage. */
static bool valid_step(const raf_remat_graph *g, const outputs *o,
                       const raf_remat_step *s) {
  if (s->node < 0 || s->node >= s->stage || s->stage >= g->n ||
      !g->can_recompute[s->node])
    return false;
  if (s->out < 0)
    return s->out == -1;
  int q = o->start[s->node] + s->out;
  return q < o->start[s->node + 1] && g->has_slice && g->has_slice[q];
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
  size_t nco = (size_t)o.start[n];
  for (int k = 0; k < nsteps; k++) {
    const raf_remat_step *s = &steps[k];
    if (!valid_step(g, &o, s) ||
        (k > 0 && step_order(&steps[k - 1], s) >= 0)) {
      free(o.own);
      return -1;
    }
    int i = s->node, q = o.start[i] + s->out;
    nreads += (size_t)(s->out < 0 ? o.rd_start[i + 1] - o.rd_start[i]
                                  : g->slice_start[q + 1] - g->slice_start[q]);
    nco += (size_t)(s->out < 0 ? o.start[i + 1] - o.start[i] : 1);
  }
  int nout = o.start[n];
  int *latest = malloc(sizeof *latest * (size_t)(nout + 1));
  int64_t *delta = calloc(m1 + 1, sizeof *delta);
  /* In place: per copy output, the input copy it may overwrite, or -1. */
  int *over = malloc(sizeof *over * (nco + 1));
  t->node = malloc(sizeof *t->node * m1);
  t->stage = malloc(sizeof *t->stage * m1);
  t->slice = malloc(sizeof *t->slice * m1);
  t->co_base = malloc(sizeof *t->co_base * (m1 + 1));
  t->co_out = malloc(sizeof *t->co_out * (nco + 1));
  t->co_moment = malloc(sizeof *t->co_moment * (nco + 1));
  t->last = malloc(sizeof *t->last * (nco + 1));
  t->copies_start = calloc((size_t)nout + 2, sizeof *t->copies_start);
  t->copies = malloc(sizeof *t->copies * (nco + 1));
  t->reads_start = malloc(sizeof *t->reads_start * (m1 + 1));
  t->reads = malloc(sizeof *t->reads * (nreads + 1));
  t->live = malloc(sizeof *t->live * m1);
  int64_t peak = -1;
  double extra = 0;
  if (!latest || !delta || !over || !t->node || !t->stage || !t->slice ||
      !t->co_base || !t->co_out || !t->co_moment || !t->last ||
      !t->copies_start || !t->copies || !t->reads_start || !t->reads ||
      !t->live)
    goto done;
  for (int q = 0; q < nout; q++)
    latest[q] = -1;
  int m = 0, k = 0, r = 0, co = 0;
  for (int stage = 0; stage < n; stage++) {
    for (;;) {
      bool step = k < nsteps && steps[k].stage == stage;
      int i = step ? steps[k].node : stage, out = step ? steps[k].out : -1;
      k += step;
      const int *rd;
      int nrd, q0 = o.start[i], q1 = o.start[i + 1];
      if (out < 0) {
        rd = o.rd + o.rd_start[i];
        nrd = o.rd_start[i + 1] - o.rd_start[i];
        extra += step ? g->flops[i] : 0;
      } else {
        q0 += out;
        q1 = q0 + 1;
        rd = g->slice_rd + g->slice_start[q0];
        nrd = g->slice_start[q0 + 1] - g->slice_start[q0];
        extra += g->slice_flops[q0];
      }
      t->reads_start[m] = r;
      for (int e = 0; e < nrd; e++) {
        int c = latest[rd[e]];
        if (c < 0)
          goto done; /* reads an output not yet made */
        t->last[c] = m;
        t->reads[r++] = c;
      }
      t->node[m] = i;
      t->stage[m] = stage;
      t->slice[m] = out;
      t->co_base[m] = co;
      for (int q = q0; q < q1; q++, co++) {
        int sh = out < 0 && g->out_share ? g->out_share[q] : -1;
        over[co] = sh >= 0 ? latest[sh] : -1;
        t->co_out[co] = q;
        t->co_moment[co] = m;
        t->last[co] = m;
        t->copies_start[q + 1]++;
        latest[q] = co;
      }
      m++;
      if (!step)
        break;
    }
  }
  t->reads_start[m] = r;
  t->co_base[m] = co;
  for (int q = 0; q < nout; q++) {
    t->copies_start[q + 1] += t->copies_start[q];
    if (o.returned[q])
      t->last[latest[q]] = m - 1;
  }
  for (int q = 0; q < nout; q++)
    latest[q] = t->copies_start[q]; /* the next slot of q's copies */
  for (int c = 0; c < co; c++) {
    int q = t->co_out[c];
    t->copies[latest[q]++] = c;
    delta[t->co_moment[c]] += o.bytes[q];
    delta[t->last[c] + 1] -= o.bytes[q];
  }
  /* A result made over the input copy its moment reads last shares that
   * copy's buffer there; each input copy is taken once. */
  for (int c = 0; c < co; c++) {
    int in = over[c];
    if (in >= 0 && t->last[in] == t->co_moment[c] && over[in] != -2) {
      int64_t b = o.bytes[t->co_out[c]] < o.bytes[t->co_out[in]]
                      ? o.bytes[t->co_out[c]]
                      : o.bytes[t->co_out[in]];
      delta[t->co_moment[c]] -= b;
      delta[t->co_moment[c] + 1] += b;
      over[in] = -2; /* taken */
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
  free(over);
  free(o.own);
  if (!trace || peak < 0)
    raf_remat_trace_free(t);
  return peak;
}

raf_status raf_remat_schedule_steps(const raf_remat_schedule *s,
                                   raf_remat_step **steps, int *nsteps) {
  size_t n = (size_t)s->n;
  int k = 0;
  *nsteps = 0;
  for (size_t x = 0; x < n * n; x++)
    k += s->r[x] != 0;
  *steps = malloc(sizeof **steps * (size_t)(k + 1));
  if (!*steps)
    return RAF_ERROR;
  for (size_t t = 0; t < n; t++)
    for (size_t i = 0; i < n; i++)
      if (s->r[t * n + i])
        (*steps)[(*nsteps)++] = (raf_remat_step){(int)t, (int)i, -1};
  return RAF_OK;
}

int64_t raf_remat_model_peak(const raf_remat_graph *g,
                             const raf_remat_schedule *s,
                             double *extra_flops) {
  raf_remat_step *steps;
  int nsteps;
  if (raf_remat_schedule_steps(s, &steps, &nsteps) != RAF_OK)
    return -1;
  /* An R(t, i) with i >= t is not a step: model_peak_steps refuses it. */
  int64_t peak = raf_remat_model_peak_steps(g, steps, nsteps, extra_flops,
                                            NULL);
  free(steps);
  return peak;
}
