/* remat_ilp.c: placeholder until the exact solver lands. */
#include "passes/remat.h"

#include <stdio.h>

raf_status raf_remat_solve_ilp(const raf_remat_graph *g, int64_t budget,
                               double time_limit, raf_remat_schedule *out,
                               bool *feasible, bool *timed_out, char *why,
                               size_t why_size) {
  (void)g, (void)budget, (void)time_limit, (void)out;
  *feasible = *timed_out = false;
  snprintf(why, why_size, "raf was built without GLPK");
  return RAF_ERROR;
}
