/* remat.h: the rematerialisation problem, shared by the remat pass's
 * solvers (passes/remat.c: the pass and its greedy solver; passes/
 * remat_ilp.c: the exact one).
 *
 * A function's statements before its return are the graph's nodes, in
 * order; node t is the statement at position t. A node's inputs are the
 * nodes whose results it reads (arguments are not nodes: they live in the
 * caller's buffers the whole call, so no schedule changes them).
 *
 * A schedule says which nodes are recomputed, and where: before stage t
 * (the statement at position t) it runs the nodes i < t with R(t, i) set,
 * in increasing i (a topological order, since the function's is one), and
 * then node t itself. Every read takes the latest copy of its input: a
 * recomputed one from this stage, else the copy an earlier stage made.
 *
 * The memory model is the memory plan's lifetime rule (docs/Memory.md):
 * each copy lives from the moment it is made to the last moment that reads
 * it, both included; a returned node's last copy lives to the end. The
 * model's peak is the largest sum of live copies' bytes at any moment.
 * It is the plan's peak in the arena without fragmentation or in-place
 * sharing; the pass checks each schedule against the real plan
 * (raf_plan_memory_peak) and tightens the model's budget by the
 * difference. This is Checkmate's model (Jain et al., MLSys 2020).
 */
#ifndef RAF_PASSES_REMAT_H
#define RAF_PASSES_REMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "include/raf/raf.h"

typedef struct raf_remat_graph {
  int n;            /* nodes */
  int64_t *bytes;   /* per node: its results' bytes, each rounded up to
                     * the plan's alignment */
  double *flops;    /* per node: the cost of computing it once */
  bool *can_recompute; /* false for nodes no schedule may recompute */
  bool *returned;   /* its last copy lives to the end */
  int *in_start;    /* node t's inputs are in[in_start[t] .. in_start[t+1]),
                     * each < t, without repeats */
  int *in;
} raf_remat_graph;

/* A schedule: R(t, i) = r[t * n + i], for i < t (the rest is 0). */
typedef struct raf_remat_schedule {
  int n;
  unsigned char *r;
} raf_remat_schedule;

/* An empty schedule for n nodes (no recomputation); RAF_ERROR when out of
 * memory. Free with raf_remat_schedule_free. */
raf_status raf_remat_schedule_init(raf_remat_schedule *s, int n);
void raf_remat_schedule_free(raf_remat_schedule *s);

/* The model's peak of g run under s, in bytes, and its recomputed FLOPs
 * (the sum of flops[i] over every R(t, i) set) into *extra_flops (may be
 * NULL). Returns -1 when s is invalid (a recomputation that reads a node
 * not yet made, or recomputes a node that may not be) or out of memory. */
int64_t raf_remat_model_peak(const raf_remat_graph *g,
                             const raf_remat_schedule *s,
                             double *extra_flops);

/* The exact solver (passes/remat_ilp.c, on GLPK): the schedule of least
 * recomputed FLOPs whose model peak is at most budget, into *out
 * (initialised by the caller for g->n nodes). RAF_OK with *feasible set
 * when found; RAF_OK with *feasible false when no schedule meets the
 * budget (or none was found within time_limit seconds: *timed_out then);
 * RAF_ERROR when the solver is not built in or fails, with why. */
raf_status raf_remat_solve_ilp(const raf_remat_graph *g, int64_t budget,
                               double time_limit, raf_remat_schedule *out,
                               bool *feasible, bool *timed_out,
                               char *why, size_t why_size);

#endif
