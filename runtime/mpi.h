/* mpi.h: the mpi dialect's process group, for raf-run and tests.
 *
 * The mpi dialect (runtime/mpi.c) runs the collectives of a sharded
 * module (docs/Distributed.md) between the processes mpirun started, one
 * rank per process, over MPI_COMM_WORLD. The driver starts MPI once, before
 * it makes an executor, and finishes it at exit; the kernels find the
 * group through MPI itself. In a build without MPI every function here
 * reports the reason raf_dialect_unavailable gives (ir/dialect.h) and
 * fails.
 */
#ifndef RAF_MPI_H
#define RAF_MPI_H

#include "ir/dialect.h"
#include "runtime/exec.h"


/* Starts MPI (MPI_Init_thread, multiple: the collectives run on a
 * communication thread of their own) and sets *rank and *world. Reports and fails when MPI cannot start
 * or the build has none. Call at most once per process. */
raf_status raf_mpi_start(raf_ctx *ctx, int *rank, int *world);
/* Seconds a collective waits for a silent peer before it fails naming
 * it (default: RAF_COMM_TIMEOUT from the environment, else 20). */
void raf_mpi_set_timeout(double seconds);
/* Ends MPI after a run (MPI_Finalize). A no-op when MPI never started. */
void raf_mpi_finish(void);
/* Ends every rank of the job at once with exit status code (MPI_Abort): for
 * an error on one rank while the others may wait in a collective. */
void raf_mpi_abort(int code);

/* Whether any rank passes true (every rank must call it): how the ranks
 * agree to stop together after a failure that need not be everywhere. */
bool raf_mpi_any(bool mine);

/* Gathers each rank's nbytes at part, in rank order, into all on rank 0
 * (nbytes * world bytes; all is unused elsewhere). Every rank calls it
 * with the same nbytes. */
raf_status raf_mpi_gather(raf_ctx *ctx, const void *part, size_t nbytes,
                          void *all);

/* Whether MPI is running (raf_mpi_start and not finished), with this
 * process's rank and the job's size; false, with 0 and 1, when not: how
 * another dialect (nccl) finds the group it bootstraps from. */
bool raf_mpi_group(int *rank, int *world);
/* Sends nbytes at buf from rank 0 to every rank (MPI_Bcast); every rank
 * calls it with the same nbytes. */
raf_status raf_mpi_broadcast(raf_ctx *ctx, void *buf, size_t nbytes);

/* A collective's tensor cut along `axis` into the ranks' blocks, as
 * [outer][world][block]: outer is the product of the dims before axis,
 * block the bytes of one rank's block in one outer row. The mpi and nccl
 * dialects both move blocks so. */
typedef struct raf_rank_blocks {
  int64_t outer;
  size_t block;
} raf_rank_blocks;
raf_rank_blocks raf_rank_blocks_of(const raf_type *whole, int64_t axis,
                                   int world);
/* The bytes a rank sends for collective op by the ring algorithms'
 * volume, whole_bytes the size of the tensor that holds every rank's
 * block (the operand of all_reduce and reduce_scatter, all_gather's
 * result): all_reduce 2(N-1)/N of it, the others (N-1)/N. What both
 * dialects count for --print-comm. */
size_t raf_collective_sent_bytes(raf_opcode op, size_t whole_bytes,
                                 int world);

/* What the mpi dialect's collectives did in ex since it was made. bytes
 * counts what this rank sends by the ring algorithms' volume (all_reduce
 * 2(N-1)/N of the tensor, reduce_scatter and all_gather (N-1)/N of the
 * whole), the volume the ZeRO paper's figures count; ns is the time spent
 * in the collectives, waiting for the other ranks included. */
typedef struct raf_mpi_stats {
  int64_t calls, bytes, ns;
  /* Of ns, the time the step waited for the collectives; the rest ran
   * behind compute (async collectives, docs/Distributed.md). */
  int64_t waited_ns;
} raf_mpi_stats;
raf_mpi_stats raf_mpi_stats_of(const raf_exec *ex);
/* The same for the nccl dialect (runtime/cuda/nccl.c, in a build with
 * NCCL only): ns from events around each NCCL call on the GPU, read once
 * they completed, and waited_ns the time the device's stream was held
 * for them (all of a collective on that stream). */
raf_mpi_stats raf_nccl_stats_of(const raf_exec *ex);
/* Both dialects' together (runtime/dialect.c): what raf-run --print-comm
 * reports. */
raf_mpi_stats raf_comm_stats_of(const raf_exec *ex);

#endif
