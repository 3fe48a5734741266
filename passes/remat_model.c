/* remat_model.c: the memory model of a rematerialisation schedule
 * (passes/remat.h), which both of the remat pass's solvers reason in.
 *
 * The run of a schedule is a sequence of moments, one per computation:
 * stage t's recomputations in increasing node order, then node t. Each
 * computation makes a copy of its node; each read takes the latest copy
 * of its input. A copy lives from its moment to the last moment that reads
 * it; a node's last copy lives to the end when the node is returned. The
 * peak is found with a difference array over the moments, so the model
 * costs the number of moments plus the reads.
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

int64_t raf_remat_model_peak(const raf_remat_graph *g,
                             const raf_remat_schedule *s,
                             double *extra_flops) {
  int n = g->n;
  size_t moments = (size_t)n;
  for (size_t k = 0; k < (size_t)n * (size_t)n; k++)
    moments += s->r[k] != 0;
  /* Copy c: made at moment c (copies are numbered by moment). */
  int *latest = malloc(sizeof *latest * (size_t)(n + 1));
  int *node_of = malloc(sizeof *node_of * (moments + 1));
  int *last = malloc(sizeof *last * (moments + 1));
  int64_t *delta = calloc(moments + 2, sizeof *delta);
  int64_t peak = -1;
  double extra = 0;
  if (!latest || !node_of || !last || !delta)
    goto done;
  for (int i = 0; i < n; i++)
    latest[i] = -1;
  int m = 0;
  for (int t = 0; t < n; t++)
    for (int i = 0; i <= t; i++) {
      if (i < t && !s->r[(size_t)t * (size_t)n + (size_t)i])
        continue;
      if (i < t) {
        if (!g->can_recompute[i])
          goto done;
        extra += g->flops[i];
      }
      for (int e = g->in_start[i]; e < g->in_start[i + 1]; e++) {
        int c = latest[g->in[e]];
        if (c < 0)
          goto done; /* reads a node not yet made */
        last[c] = m;
      }
      node_of[m] = i;
      last[m] = m;
      latest[i] = m++;
    }
  for (int i = 0; i < n; i++)
    if (g->returned[i])
      last[latest[i]] = m - 1;
  for (int c = 0; c < m; c++) {
    delta[c] += g->bytes[node_of[c]];
    delta[last[c] + 1] -= g->bytes[node_of[c]];
  }
  int64_t live = 0;
  peak = 0;
  for (int c = 0; c < m; c++) {
    live += delta[c];
    if (live > peak)
      peak = live;
  }
  if (extra_flops)
    *extra_flops = extra;
done:
  free(latest);
  free(node_of);
  free(last);
  free(delta);
  return peak;
}
