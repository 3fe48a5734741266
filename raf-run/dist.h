/* dist.h: raf-run as one rank of an MPI job (docs/Distributed.md).
 *
 * A function the shard pass wrote carries `world = N`. Under
 * `mpirun -np N raf-run ...` every process runs it as one rank, and the
 * command line means what it means for one process: each argument is
 * given whole (the global batch of a data argument, the full tensor of a
 * sharded one) and the rank takes its part; --save writes whole tensors
 * gathered on rank 0, which alone prints, logs and writes files.
 */
#ifndef RAF_RUN_DIST_H
#define RAF_RUN_DIST_H

#include "runtime/exec.h"

#include <stdio.h>

typedef struct rr_dist {
  int world, rank; /* 1 and 0 for a plain run */
} rr_dist;

/* The rank mpirun gave this process, read from the environment before MPI
 * starts (Open MPI's or PMI's variables); 0 outside mpirun. */
int rr_env_rank(void);
/* This process's rank among those on its machine; 0 outside mpirun. */
int rr_env_local_rank(void);
/* How many ranks of the job share this machine; 1 outside mpirun. */
int rr_env_local_ranks(void);

/* Reads f's `world` attribute and starts MPI when it is above 1, setting
 * *d. Reports and fails: world > 1 outside mpirun, or in a build without
 * MPI (each saying how to run it); a job whose size is not world; an
 * mpirun job of several processes for a function without `world`. */
raf_status rr_dist_start(raf_ctx *ctx, const raf_func *f, rr_dist *d);
/* Whether every rank runs what rank 0 runs: the same raf version, the same
 * module (its printed text, so that comments and spacing do not count),
 * the same function and the same number of steps. Ranks that differ would
 * wait in collectives that never match, or sum unlike tensors. Each rank
 * hashes its own; rank 0 gathers them, reports each rank that differs
 * ("rank 1 runs another module than rank 0 (hash ... vs ...)"), and the
 * ranks agree to fail together. Every rank calls it, after
 * rr_dist_start; a no-op in a plain run. */
raf_status rr_dist_check_same(raf_ctx *ctx, const rr_dist *d,
                              const raf_module *m, const raf_func *f,
                              long steps);
/* Ends MPI (after a run that did not abort). */
void rr_dist_finish(const rr_dist *d);

/* The type of argument i as the command line gives it: a data argument's
 * with the global batch (axis 0 times world), a sharded one's full type
 * (its `sharded` dims), else the argument's own type. NULL when out of
 * memory. */
raf_type *rr_dist_whole_type(raf_module *m, const raf_func *f, int i,
                             const rr_dist *d);
/* Copies this rank's part of whole (a host tensor of rr_dist_whole_type,
 * rr_host_tensor's) into part (on ex's device): the rank-th run of
 * part->nbytes bytes, zero past the end of whole. For a data argument that
 * is rows [r*b, (r+1)*b); for a sharded one, the r-th part of the
 * zero-padded, flattened tensor. In a plain run, all of whole. */
raf_status rr_dist_take_part(raf_exec *ex, const rr_dist *d,
                             const raf_tensor *whole, raf_tensor *part);
/* The inverse, for --save: gathers every rank's part (on ex's device) into
 * whole (a host tensor) on rank 0 (whole is unused elsewhere). Every rank
 * calls it, in the same order. */
raf_status rr_dist_gather(raf_ctx *ctx, raf_exec *ex, const rr_dist *d,
                          const raf_tensor *part, raf_tensor *whole);

/* Renders ctx's diagnostics to out, each line prefixed "rank R: " in a
 * job of several ranks. */
void rr_dist_render(const raf_ctx *ctx, const rr_dist *d, FILE *out);

#endif
