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

#include "ir/ir.h"

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
  /* Optional (NULL: each node is one output of its bytes): the results of
   * nodes, which live and die one by one, as the plan's values do. Node
   * t's outputs are out_start[t] .. out_start[t+1]); node t reads the
   * outputs rd[rd_start[t] .. rd_start[t+1]), without repeats. bytes and
   * returned above are then the sums over a node's outputs. */
  int *out_start;
  int64_t *out_bytes;
  bool *out_returned;
  int *rd_start, *rd;
  int *out_node; /* per output: its node */
  /* Optional (NULL: none), with the outputs: slices. A node that calls a
   * {fused} function of several results may compute one of them alone,
   * from the call's operands and from its other results (the layer_norm
   * of a residual that the same call returns). Output o has one when
   * has_slice[o]; it reads the outputs slice_rd[slice_start[o] ..
   * slice_start[o+1]) and costs slice_flops[o]. */
  bool *has_slice;
  double *slice_flops;
  int *slice_start, *slice_rd;
  /* Optional (NULL: none), with the outputs: out_share[o] is the output
   * that o may overwrite (an input its node reads), or -1. When the node's
   * moment is that input copy's last read, the two count once there, as
   * the plan runs the result in place. */
  int *out_share;
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

/* The sparse form of a schedule, which the greedy solver and the pass use
 * (a function has thousands of nodes and recomputes a few hundred): its
 * recomputations as steps, sorted by stage, node, then out. A step
 * recomputes the whole node (out -1) or the slice of its output `out`
 * (0 for its first). */
typedef struct raf_remat_step {
  int stage, node, out;
} raf_remat_step;

/* What the model finds, for the greedy solver. Each moment computes a node
 * or a slice and makes copies of its outputs ("copy outputs", numbered in
 * the order they are made). */
typedef struct raf_remat_trace {
  int moments;
  int *node;     /* per moment: the node it computes */
  int *stage;    /* per moment */
  int *slice;    /* per moment: -1, or the output it computes alone */
  int *co_base;  /* moment m makes copy outputs co_base[m] .. co_base[m+1]) */
  int *co_out;   /* per copy output: the graph's output it copies */
  int *co_moment;
  int *last;     /* per copy output: the last moment it lives */
  int *copies_start; /* output o's copy outputs, in order: */
  int *copies;       /* copies[copies_start[o] .. copies_start[o+1]) */
  int *reads_start;  /* the copy outputs moment m reads: */
  int *reads;        /* reads[reads_start[m] .. reads_start[m+1]) */
  int64_t *live;     /* per moment: the bytes live at it */
} raf_remat_trace;

/* s's recomputations as steps, in order, into *steps (malloc'd; the caller
 * frees it); RAF_ERROR when out of memory. */
raf_status raf_remat_schedule_steps(const raf_remat_schedule *s,
                                   raf_remat_step **steps, int *nsteps);

/* raf_remat_model_peak for a schedule in sparse form; fills *trace when it
 * is not NULL (free it with raf_remat_trace_free, also after an error). */
int64_t raf_remat_model_peak_steps(const raf_remat_graph *g,
                                   const raf_remat_step *steps, int nsteps,
                                   double *extra_flops,
                                   raf_remat_trace *trace);
void raf_remat_trace_free(raf_remat_trace *t);

/* The greedy solver (passes/remat_greedy.c): recomputations that bring the
 * model peak to at most budget, choosing at each step the copy live across
 * the peak whose recomputation frees the most bytes per FLOP. Writes the
 * schedule into *steps (malloc'd, *nsteps entries; the caller frees it)
 * and returns its model peak, which is above budget when the solver found
 * no way further down (the least it reached); -1 when out of memory. */
int64_t raf_remat_solve_greedy(const raf_remat_graph *g, int64_t budget,
                               raf_remat_step **steps, int *nsteps);

/* ---- The pass's side (passes/remat_write.c) ----------------------------- */

typedef struct raf_remat_slice_fn {
  raf_func *callee;
  int k;
  raf_func *fn; /* @callee.slice.K */
} raf_remat_slice_fn;

/* A function's problem: the graph, and what writing a schedule needs. */
typedef struct raf_remat_fn {
  raf_remat_graph g;
  raf_stmt **stmt;      /* node -> statement */
  int64_t base;         /* the order of stmt[0] */
  int *opnd_start;      /* node t's operand slots are opnd_out[opnd_start[t]
                         * .. opnd_start[t+1]): each one's output, or -1
                         * for an argument */
  int *opnd_out;
  int64_t params;       /* bytes of the {param} and {state} arguments */
  double step_flops;    /* the cost model's FLOPs of one call */
  raf_remat_slice_fn *slices; /* made so far */
  int nslices, slices_cap;
} raf_remat_fn;

/* A schedule written into a function: the statement of each step. */
typedef struct raf_remat_written {
  raf_stmt **clone;
  const raf_remat_step *steps;
  int nsteps;
} raf_remat_written;

/* The problem of f (see remat_write.c); RAF_ERROR when out of memory.
 * Free with raf_remat_graph_free. */
raf_status raf_remat_graph_build(raf_func *f, raf_remat_fn *G);
void raf_remat_graph_free(raf_remat_fn *G);
/* Writes steps (sorted) into f as {remat} statements; undo it with
 * raf_remat_unwrite (also after an error). */
raf_status raf_remat_write(raf_module *m, raf_func *f, raf_remat_fn *G,
                           const raf_remat_step *steps, int nsteps,
                           raf_remat_written *w);
void raf_remat_unwrite(raf_remat_fn *G, raf_remat_written *w);
/* Erases the slice functions no call names, and forgets them all. */
void raf_remat_drop_slices(raf_remat_fn *G);
/* A copy of s with the given operands, inserted into f before `before`
 * (NULL: at the end), with s's attributes, and {remat} when mark. */
raf_stmt *raf_remat_clone(raf_module *m, raf_func *f, const raf_stmt *s,
                          raf_value **operands, raf_stmt *before, bool mark);

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
/* The same, from incumbent (NULL: none), a schedule of whole nodes (no
 * slices): the solver looks only for schedules that recompute fewer FLOPs
 * than it, and returns the incumbent itself when it finds none (*timed_out
 * set when the time limit passed first) and the incumbent's model peak,
 * counting whole nodes, is within budget. stages (NULL: all): per stage,
 * whether it may recompute anything. */
raf_status raf_remat_solve_ilp_from(const raf_remat_graph *g,
                                    int64_t budget, double time_limit,
                                    const raf_remat_schedule *incumbent,
                                    const bool *stages,
                                    raf_remat_schedule *out, bool *feasible,
                                    bool *timed_out, char *why,
                                    size_t why_size);

#endif
