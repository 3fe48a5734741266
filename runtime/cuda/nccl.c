/* nccl.c: the nccl dialect: the collectives of a sharded module between
 * GPUs, one rank per process, on NCCL (docs/Distributed.md).
 *
 * The same program as the mpi dialect's (runtime/mpi.c), on the cuda
 * device: mpirun starts N processes, raf-run opens one GPU in each (the
 * local rank's, modulo the GPUs the machine has) and starts MPI, and the
 * prepare hook makes one NCCL communicator of the N ranks: rank 0 draws
 * the unique id (ncclGetUniqueId), MPI broadcasts it, and every rank
 * calls ncclCommInitRank, as RAF's and llm.c's bootstraps do. Only a module
 * with a statement bound to the dialect and world_size above 1 makes one.
 *
 *   all_reduce      ncclAllReduce, ncclSum, ncclAvg (op = "mean"),
 *                   ncclMin or ncclMax
 *   reduce_scatter  ncclReduceScatter: rank r keeps block r along `axis`
 *   all_gather      ncclAllGather: the ranks' tensors end to end along
 *                   `axis`, in rank order
 *   all_slice       block r along `axis`, a copy on the device
 * Without a collective marked `async` (the overlap-comm pass's start,
 * whose result one `wait` reads), every call is queued on the device's
 * stream, so a collective runs after the kernels that made its operand
 * and before those that read its result, with no synchronisation on the
 * host. A module with one gets a communication stream per executor, on
 * which its collectives run instead, so that the kernels queued between a
 * start and its wait run beside it (llm.c's and PyTorch's NCCL stream),
 * ordered by events and never by the host:
 *   start  record `order` on the device's stream and make the
 *          communication stream wait for it (the operand is made, and
 *          whatever read the result's buffer before is done); the NCCL
 *          call between the job's `begin` and `end` events on the
 *          communication stream; the job goes on the in-flight list,
 *          keyed by the result's buffer (as the mpi dialect keys its
 *          jobs)
 *   wait   the device's stream waits for the job's `end`
 *          (cuStreamWaitEvent): every later kernel runs after the
 *          collective, and the host goes on queuing
 * plan-memory leaves the operand's buffer unwritten until the wait and
 * the result's to nothing else from the start to the wait, which is what
 * makes the two streams' work disjoint in between. A blocking collective
 * of such a module runs on the communication stream too, followed at once
 * by its wait: NCCL needs every rank to run a communicator's collectives
 * in one order, which one stream keeps and two would leave to the GPU.
 * The exception packs its blocks through the device's scratch
 * (reduce_scatter and all_gather along an axis other than 0:
 * raf_cuda_scratch is ordered by the device's stream alone): it runs on
 * the device's stream, after the communication stream's work (through
 * `order` again), even when `async`, and its wait finds no job.
 *
 * NCCL wants each rank's block contiguous: along axis 0 it is, and along
 * another axis the blocks are packed into (or unpacked from) rank-major
 * device scratch by one device copy per row before the axis (outer
 * rows). Halves sum in their
 * own type in NCCL (its reduction of bf16 and f16 accumulates as the
 * library chooses), unlike the mpi dialect's f32 sum: docs/Numerics.md.
 *
 * What it sends is counted as the mpi dialect counts it (the ring's
 * volume), for raf-run --print-comm, and what it took is timed on the
 * GPU by a pair of events around each NCCL call, read once they have
 * completed (harvest: never blocking the host): raf_mpi_stats' ns is the
 * collectives' time on their stream, waiting for the other ranks
 * included, and waited_ns the part of it the device's stream stalled
 * for: all of a collective on that stream, and for one on the
 * communication stream the time between a pair of events around the
 * device stream's cuStreamWaitEvent for it, which is how long the
 * kernels after its wait were held back on the GPU. Events
 * come from a pool and go back to it once read, so a step makes none
 * after the first.
 *
 * Never run on a GPU: checked against test/cuda/fake_nccl.c, a NCCL made
 * of MPI calls over the fake driver's host memory, whose work is done at
 * once whatever the stream. That the async collectives run on their own
 * stream, ordered by the events above, is checked (the fake logs the
 * stream of each call and each wait for an event); that they overlap
 * with compute on a real GPU, and what it gains, is not.
 */
#include "runtime/cuda/nccl.h"

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/library.h"
#include "runtime/dialects.h"
#include "runtime/exec.h"
#include "runtime/mpi.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Loading -------------------------------------------------------------- */

static const raf_cuda_symbol symbols[] = {
#define NCCL_ENTRY(ret, name, params) {#name, offsetof(raf_nccl, name)},
#include "runtime/cuda/nccl.def"
#undef NCCL_ENTRY
};

raf_status raf_nccl_load(raf_ctx *ctx, raf_nccl **out) {
  raf_nccl *nccl = calloc(1, sizeof *nccl);
  *out = NULL;
  if (!nccl) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  nccl->library = raf_cuda_library_load(
      ctx, &raf_cuda_nccl_library, 0, symbols,
      sizeof symbols / sizeof symbols[0], nccl, nccl->path, sizeof nccl->path);
  bool ok = nccl->library != NULL;
  if (ok && nccl->ncclGetVersion(&nccl->version) != ncclSuccess)
    nccl->version = 0;
  if (ok && nccl->version < 21000) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "%s is NCCL %d; the nccl dialect needs 2.10 or later "
                    "(ncclAvg)", nccl->path, nccl->version);
    ok = false;
  }
  if (!ok) {
    raf_nccl_unload(nccl);
    return RAF_ERROR;
  }
  *out = nccl;
  return RAF_OK;
}

void raf_nccl_unload(raf_nccl *nccl) { free(nccl); }

/* ---- The dialect ---------------------------------------------------------- */

/* A collective between ranks, timed by a pair of events on the stream it
 * ran on; one on the communication stream also holds the events around
 * the device stream's wait for it. */
typedef struct nccl_job {
  void *result;        /* the result's buffer: what its wait looks for */
  bool side;           /* ran on the communication stream */
  CUevent begin, end;  /* around the NCCL call */
  CUevent stall, resumed; /* around the device stream's wait (side) */
  struct nccl_job *next;
} nccl_job;

/* The dialect's state per executor: the library, the communicator (NULL
 * when the module needs none), the communication stream (NULL when no
 * statement is async), the jobs started and not waited for, those done
 * with whose times are not read yet, spare events and jobs, and what
 * --print-comm reports. */
typedef struct nccl_state {
  raf_nccl *nccl;
  raf_device *dev;
  ncclComm_t comm;
  int rank, world;
  CUstream side;   /* the communication stream */
  CUevent order;   /* orders one stream after the other at a collective */
  nccl_job *in_flight, *timed, *spare;
  CUevent *events; /* the pool: events whose records were read */
  int nevents, events_cap;
  raf_mpi_stats stats;
} nccl_state;

static void free_jobs(nccl_state *st, nccl_job *j) {
  while (j) {
    nccl_job *next = j->next;
    CUevent e[] = {j->begin, j->end, j->stall, j->resumed};
    for (int i = 0; i < 4; i++)
      raf_cuda_event_destroy(st->dev, e[i]);
    free(j);
    j = next;
  }
}

static void nccl_release(void *state) {
  nccl_state *st = state;
  if (!st)
    return;
  /* Drains the communication stream first: collectives started and never
   * waited for (a step that failed midway) still read and write the
   * executor's buffers, which are freed next. */
  raf_cuda_stream_destroy(st->dev, st->side);
  free_jobs(st, st->in_flight);
  free_jobs(st, st->timed);
  free_jobs(st, st->spare);
  for (int i = 0; i < st->nevents; i++)
    raf_cuda_event_destroy(st->dev, st->events[i]);
  free(st->events);
  raf_cuda_event_destroy(st->dev, st->order);
  if (st->comm)
    st->nccl->ncclCommDestroy(st->comm);
  raf_nccl_unload(st->nccl);
  free(st);
}

static const char *result_text(const nccl_state *st, ncclResult_t r) {
  const char *t = st->nccl->ncclGetErrorString(r);
  return t ? t : "unknown NCCL error";
}

/* The communicator of the job's ranks, drawn on rank 0 and broadcast. */
static raf_status make_comm(raf_ctx *ctx, raf_device *dev, nccl_state *st) {
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclResult_t r = ncclSuccess;
  if (st->rank == 0)
    r = st->nccl->ncclGetUniqueId(&id);
  /* Every rank takes part in the broadcast, even after rank 0 failed, so
   * that none waits for it; rank 0's failure then reaches all of them as
   * an id of zeros, which ncclCommInitRank refuses. */
  if (raf_mpi_broadcast(ctx, &id, sizeof id) != RAF_OK)
    return RAF_ERROR;
  if (r == ncclSuccess && raf_cuda_device_make_current(dev) != RAF_OK)
    return RAF_ERROR;
  if (r == ncclSuccess)
    r = st->nccl->ncclCommInitRank(&st->comm, st->world, id, st->rank);
  if (r == ncclSuccess)
    return RAF_OK;
  st->comm = NULL;
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                  "nccl: the communicator of %d ranks (rank %d): %s",
                  st->world, st->rank, result_text(st, r));
  return RAF_ERROR;
}

static raf_status nccl_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                               void **state) {
  *state = NULL;
  bool any = false, many = false, async = false;
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_NCCL)) {
        any = true;
        many |= raf_stmt_attr_int(s, "world_size") > 1;
        async |= raf_stmt_attr_bool(s, "async");
      }
  raf_device *dev = raf_exec_device(ex);
  if (!any || raf_device_kind_of(dev) != RAF_DEVICE_CUDA)
    return RAF_OK; /* binding refuses a cpu executor's statements */
  nccl_state *st = calloc(1, sizeof *st);
  if (!st) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  *state = st;
  st->dev = dev;
  if (raf_nccl_load(ctx, &st->nccl) != RAF_OK)
    return RAF_ERROR;
  /* Without MPI, or in a job of one process, there is no group: the
   * kernels of world_size > 1 say how to run them. */
  if (!many || !raf_mpi_group(&st->rank, &st->world) || st->world < 2)
    return RAF_OK;
  if (make_comm(ctx, dev, st) != RAF_OK)
    return RAF_ERROR;
  /* The communication stream, only where a start can use it. */
  if (async && (raf_cuda_stream_create(dev, &st->side) != RAF_OK ||
                raf_cuda_event_create(dev, &st->order) != RAF_OK))
    return RAF_ERROR;
  return RAF_OK;
}

/* ---- Events and jobs ------------------------------------------------------ */

/* An event from the pool, or a new one. */
static raf_status take_event(nccl_state *st, CUevent *e) {
  if (st->nevents > 0) {
    *e = st->events[--st->nevents];
    return RAF_OK;
  }
  return raf_cuda_event_create(st->dev, e);
}

/* Returns e to the pool (destroys it when the pool cannot grow). */
static void give_event(nccl_state *st, CUevent e) {
  if (!e)
    return;
  if (st->nevents == st->events_cap) {
    int cap = st->events_cap ? 2 * st->events_cap : 16;
    CUevent *grown = realloc(st->events, sizeof *grown * (size_t)cap);
    if (!grown) {
      raf_cuda_event_destroy(st->dev, e);
      return;
    }
    st->events = grown;
    st->events_cap = cap;
  }
  st->events[st->nevents++] = e;
}

/* Returns j's events to the pool and j to the spares. */
static void give_job(nccl_state *st, nccl_job *j) {
  give_event(st, j->begin);
  give_event(st, j->end);
  give_event(st, j->stall);
  give_event(st, j->resumed);
  *j = (nccl_job){.next = st->spare};
  st->spare = j;
}

/* A job with the events it needs (four on the communication stream,
 * else two). */
static raf_status take_job(nccl_state *st, bool side, nccl_job **out) {
  nccl_job *j = st->spare;
  if (j)
    st->spare = j->next;
  else if (!(j = calloc(1, sizeof *j)))
    return RAF_ERROR;
  *j = (nccl_job){.side = side};
  raf_status rc = take_event(st, &j->begin);
  if (rc == RAF_OK)
    rc = take_event(st, &j->end);
  if (rc == RAF_OK && side)
    rc = take_event(st, &j->stall);
  if (rc == RAF_OK && side)
    rc = take_event(st, &j->resumed);
  if (rc != RAF_OK) {
    give_job(st, j);
    return RAF_ERROR;
  }
  *out = j;
  return RAF_OK;
}

/* Adds the times of the timed jobs whose events have completed to the
 * statistics and recycles them; the others wait for a later call. Never
 * blocks the host. */
static raf_status harvest(nccl_state *st) {
  nccl_job **link = &st->timed;
  while (*link) {
    nccl_job *j = *link;
    bool done = false;
    /* The last record of the job: `resumed` comes after `end` on the
     * device's stream, which waited for it. */
    if (raf_cuda_event_query(st->dev, j->side ? j->resumed : j->end,
                             &done) != RAF_OK)
      return RAF_ERROR;
    if (!done) {
      link = &j->next;
      continue;
    }
    double took = 0, waited = 0;
    if (raf_cuda_event_elapsed_ms(st->dev, j->begin, j->end, &took) !=
            RAF_OK ||
        (j->side && raf_cuda_event_elapsed_ms(st->dev, j->stall, j->resumed,
                                               &waited) != RAF_OK))
      return RAF_ERROR;
    if (!j->side || waited > took)
      waited = took;
    st->stats.ns += (int64_t)(took * 1e6 + 0.5);
    st->stats.waited_ns += (int64_t)(waited * 1e6 + 0.5);
    *link = j->next;
    give_job(st, j);
  }
  return RAF_OK;
}

static ncclDataType_t nccl_type(raf_dtype dt) {
  switch (dt) {
  case RAF_F64: return ncclFloat64;
  case RAF_F32: return ncclFloat32;
  case RAF_F16: return ncclFloat16;
  case RAF_BF16: return ncclBfloat16;
  case RAF_I64: return ncclInt64;
  case RAF_I32: return ncclInt32;
  case RAF_I8: return ncclInt8;
  case RAF_U8:
  case RAF_BOOL:
  default: return ncclUint8;
  }
}

/* Copies block `rank` of every outer row of whole ([outer][N][block])
 * to or from part ([outer][block]), on the device's stream. */
static raf_status copy_block(raf_device *dev, const raf_rank_blocks *b,
                             int world, int rank, char *whole, char *part,
                             bool to_part) {
  for (int64_t o = 0; o < b->outer; o++) {
    char *w = whole + ((size_t)o * (size_t)world + (size_t)rank) * b->block;
    char *p = part + (size_t)o * b->block;
    if (raf_device_copy(dev, to_part ? p : w, to_part ? w : p, b->block,
                        RAF_COPY_DEVICE_TO_DEVICE) != RAF_OK)
      return RAF_ERROR;
  }
  return RAF_OK;
}

/* Copies between whole ([outer][N][block]) and rank-major scratch
 * ([N][outer][block]) in the direction to_scratch says. */
static raf_status repack(raf_device *dev, const raf_rank_blocks *b, int world,
                         char *whole, char *scratch, bool to_scratch) {
  size_t rank_bytes = (size_t)b->outer * b->block;
  for (int r = 0; r < world; r++)
    if (copy_block(dev, b, world, r, whole, scratch + (size_t)r * rank_bytes,
                   to_scratch) != RAF_OK)
      return RAF_ERROR;
  return RAF_OK;
}

/* The device's stream waits for job j on the communication stream (the
 * host does not), between `stall` and `resumed`, whose interval is how
 * long it was held back: waited_ns. j then waits for its times to be
 * read. */
static raf_status device_waits(nccl_state *st, nccl_job *j) {
  CUstream main = raf_device_stream(st->dev);
  raf_status rc = raf_cuda_event_record(st->dev, j->stall, main);
  if (rc == RAF_OK)
    rc = raf_cuda_stream_wait_event(st->dev, main, j->end);
  if (rc == RAF_OK)
    rc = raf_cuda_event_record(st->dev, j->resumed, main);
  if (rc != RAF_OK) {
    /* The streams are not known to be in order now: drain the
     * communication stream before the buffers are touched again. */
    raf_cuda_stream_synchronize(st->dev, st->side);
    give_job(st, j);
    return RAF_ERROR; /* reported by the device */
  }
  j->next = st->timed;
  st->timed = j;
  return RAF_OK;
}

static raf_status nccl_collective(const raf_kernel *k) {
  const raf_stmt *s = k->stmt;
  raf_tensor *x = k->in[0], *y = k->out[0];
  raf_device *dev = raf_exec_device(k->ex);
  int64_t n = raf_stmt_attr_int(s, "world_size");
  if (n == 1)
    return x->data == y->data
               ? RAF_OK
               : raf_device_copy(dev, y->data, x->data, y->nbytes,
                                 RAF_COPY_DEVICE_TO_DEVICE);
  nccl_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_NCCL);
  if (!st || !st->comm)
    return raf_kernel_fail(k, "world_size = %lld needs one process per "
                              "rank: run it as `mpirun -np %lld raf-run "
                              "--device=cuda ...`",
                           (long long)n, (long long)n);
  if (n != st->world)
    return raf_kernel_fail(k, "world_size = %lld, but this job has %d "
                              "ranks", (long long)n, st->world);
  int world = st->world, rank = st->rank;
  int64_t axis = s->op == RAF_OP_ALL_REDUCE ? 0 : raf_stmt_attr_int(s, "axis");
  /* The tensor whose axis holds every rank's block. */
  raf_tensor *whole = s->op == RAF_OP_ALL_GATHER ? y : x;
  raf_rank_blocks b = raf_rank_blocks_of(whole->type, axis, world);
  if (s->op == RAF_OP_ALL_SLICE)
    return copy_block(dev, &b, world, rank, x->data, y->data, true);
  bool packs = b.outer > 1 && s->op != RAF_OP_ALL_REDUCE;
  void *scratch = NULL;
  /* The device's stream-ordered scratch (NCCL runs on its stream), not
   * an allocation freed after the collective: cuMemFree would wait for
   * the whole device. */
  if (packs &&
      raf_cuda_scratch(dev, (size_t)whole->nbytes, &scratch) != RAF_OK)
    return raf_kernel_fail(k, "out of %s memory for packing the blocks",
                           raf_device_name(dev));
  /* Times read from the jobs done with so far (their events reused). */
  if (harvest(st) != RAF_OK)
    return RAF_ERROR;
  /* With a communication stream, every collective that can runs there,
   * the blocking ones too (their wait follows at once): NCCL needs each
   * rank to run a communicator's collectives in one order, and two
   * streams running them would leave that order to the GPU. One that
   * packs runs on the device's stream after the communication stream's
   * work instead, and the next one there waits for it. */
  bool side = st->side && !packs;
  bool async = side && raf_stmt_attr_bool(s, "async");
  nccl_job *job = NULL;
  if (take_job(st, side, &job) != RAF_OK)
    return raf_kernel_fail(k, "out of memory");
  raf_dtype dt = x->type->dtype;
  const char *name = raf_stmt_attr_str(s, "op");
  ncclRedOp_t op = strcmp(name, "mean") == 0  ? ncclAvg
                   : strcmp(name, "min") == 0 ? ncclMin
                   : strcmp(name, "max") == 0 ? ncclMax
                                              : ncclSum;
  CUstream main = raf_device_stream(dev);
  cudaStream_t stream = side ? st->side : main;
  ncclResult_t r = ncclSuccess;
  raf_status rc = raf_cuda_device_make_current(dev);
  /* The stream that runs it waits for the other: on the communication
   * stream, for the device's (the operand is made, the result's buffer
   * free); on the device's, for the collectives before it. */
  if (rc == RAF_OK && st->side) {
    rc = raf_cuda_event_record(dev, st->order, side ? main : st->side);
    if (rc == RAF_OK)
      rc = raf_cuda_stream_wait_event(dev, side ? st->side : main,
                                      st->order);
  }
  if (rc == RAF_OK)
    rc = raf_cuda_event_record(dev, job->begin, stream);
  if (rc != RAF_OK) {
    /* reported by the device */
  } else if (s->op == RAF_OP_ALL_REDUCE) {
    r = st->nccl->ncclAllReduce(x->data, y->data, (size_t)x->type->numel,
                                nccl_type(dt), op, st->comm, stream);
  } else if (s->op == RAF_OP_REDUCE_SCATTER) {
    if (scratch)
      rc = repack(dev, &b, world, x->data, scratch, true);
    if (rc == RAF_OK)
      r = st->nccl->ncclReduceScatter(scratch ? scratch : x->data, y->data,
                                      (size_t)y->type->numel, nccl_type(dt),
                                      op, st->comm, stream);
  } else { /* all_gather: bytes, whatever the dtype */
    r = st->nccl->ncclAllGather(x->data, scratch ? scratch : y->data,
                                x->nbytes, ncclUint8, st->comm, stream);
    if (r == ncclSuccess && scratch)
      rc = repack(dev, &b, world, y->data, scratch, false);
  }
  /* `end` after the unpacking, which is part of the collective. */
  if (rc == RAF_OK && r == ncclSuccess)
    rc = raf_cuda_event_record(dev, job->end, stream);
  st->stats.calls++;
  st->stats.bytes +=
      (int64_t)raf_collective_sent_bytes(s->op, whole->nbytes, world);
  if (rc != RAF_OK || r != ncclSuccess) {
    give_job(st, job);
    return r != ncclSuccess ? raf_kernel_fail(k, "NCCL: %s",
                                              result_text(st, r))
                            : rc;
  }
  job->result = y->data;
  if (async) {
    job->next = st->in_flight;
    st->in_flight = job;
    return RAF_OK;
  }
  /* Blocking: the device's stream waits for it now, as its wait would. */
  if (side)
    return device_waits(st, job);
  job->next = st->timed;
  st->timed = job;
  return RAF_OK;
}

/* wait(%h): the device's stream waits for the async collective that
 * writes %h's buffer (the host does not); a collective that ran on the
 * device's stream (world_size = 1, packed through scratch) left no job,
 * its stream order is enough. The value then moves only where the wait's
 * buffer is not the collective's (an unplanned run). */
static raf_status nccl_wait(const raf_kernel *k) {
  raf_tensor *h = k->in[0], *y = k->out[0];
  raf_device *dev = raf_exec_device(k->ex);
  nccl_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_NCCL);
  nccl_job **link = st ? &st->in_flight : NULL;
  while (link && *link && (*link)->result != h->data)
    link = &(*link)->next;
  if (link && *link) {
    nccl_job *j = *link;
    *link = j->next;
    if (device_waits(st, j) != RAF_OK)
      return RAF_ERROR;
  }
  return h->data == y->data
             ? RAF_OK
             : raf_device_copy(dev, y->data, h->data, y->nbytes,
                               RAF_COPY_DEVICE_TO_DEVICE);
}

raf_mpi_stats raf_nccl_stats_of(const raf_exec *ex) {
  nccl_state *st = raf_exec_dialect_state(ex, RAF_DIALECT_NCCL);
  if (!st)
    return (raf_mpi_stats){0};
  /* The times of what has completed: after a step's outputs were read
   * back (the device's stream drained, which waited for every async
   * collective), all of them. A failure to read them was reported by the
   * device; the counts stand. */
  harvest(st);
  return st->stats;
}

const raf_dialect_hooks raf_nccl_hooks = {.prepare = nccl_prepare,
                                          .release = nccl_release};

const raf_kernel_fn raf_nccl_kernels[RAF_OP_COUNT] = {
    [RAF_OP_ALL_REDUCE] = nccl_collective,
    [RAF_OP_REDUCE_SCATTER] = nccl_collective,
    [RAF_OP_ALL_GATHER] = nccl_collective,
    [RAF_OP_ALL_SLICE] = nccl_collective,
    [RAF_OP_WAIT] = nccl_wait,
};
