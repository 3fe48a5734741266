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
 * Every call is queued on the device's stream, so a collective runs after
 * the kernels that made its operand and before those that read its
 * result, with no synchronisation on the host. NCCL wants each rank's
 * block contiguous: along axis 0 it is, and along another axis the blocks
 * are packed into (or unpacked from) rank-major device scratch by one
 * device copy per row before the axis (outer rows). Halves sum in their
 * own type in NCCL (its reduction of bf16 and f16 accumulates as the
 * library chooses), unlike the mpi dialect's f32 sum: docs/Numerics.md.
 *
 * What it sends is counted as the mpi dialect counts it (the ring's
 * volume), for raf-run --print-comm; the time is the GPU's, which
 * --profile measures with events.
 *
 * Never run on a GPU: checked against test/cuda/fake_nccl.c, a NCCL made
 * of MPI calls over the fake driver's host memory.
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

/* The dialect's state per executor: the library, the communicator (NULL
 * when the module needs none) and what --print-comm reports. */
typedef struct nccl_state {
  raf_nccl *nccl;
  ncclComm_t comm;
  int rank, world;
  raf_mpi_stats stats;
} nccl_state;

static void nccl_release(void *state) {
  nccl_state *st = state;
  if (!st)
    return;
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
  bool any = false, many = false;
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_NCCL)) {
        any = true;
        many |= raf_stmt_attr_int(s, "world_size") > 1;
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
  if (raf_nccl_load(ctx, &st->nccl) != RAF_OK)
    return RAF_ERROR;
  /* Without MPI, or in a job of one process, there is no group: the
   * kernels of world_size > 1 say how to run them. */
  if (many && raf_mpi_group(&st->rank, &st->world) && st->world > 1)
    return make_comm(ctx, dev, st);
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
  void *scratch = NULL;
  /* The device's stream-ordered scratch (NCCL runs on its stream), not
   * an allocation freed after the collective: cuMemFree would wait for
   * the whole device. */
  if (b.outer > 1 && s->op != RAF_OP_ALL_REDUCE &&
      raf_cuda_scratch(dev, (size_t)whole->nbytes, &scratch) != RAF_OK)
    return raf_kernel_fail(k, "out of %s memory for packing the blocks",
                           raf_device_name(dev));
  raf_dtype dt = x->type->dtype;
  const char *name = raf_stmt_attr_str(s, "op");
  ncclRedOp_t op = strcmp(name, "mean") == 0  ? ncclAvg
                   : strcmp(name, "min") == 0 ? ncclMin
                   : strcmp(name, "max") == 0 ? ncclMax
                                              : ncclSum;
  cudaStream_t stream = raf_device_stream(dev);
  ncclResult_t r = ncclSuccess;
  raf_status rc = raf_cuda_device_make_current(dev);
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
  st->stats.calls++;
  st->stats.bytes +=
      (int64_t)raf_collective_sent_bytes(s->op, whole->nbytes, world);
  if (r != ncclSuccess)
    return raf_kernel_fail(k, "NCCL: %s", result_text(st, r));
  return rc;
}

/* wait(%h): NCCL's collectives run on the device's one stream, which
 * orders every later kernel after them, so an async collective is done
 * for its readers already; the wait only moves the value where its
 * buffer is not the collective's (an unplanned run). Overlap on the GPU
 * needs a second stream, which this dialect does not use yet. */
static raf_status nccl_wait(const raf_kernel *k) {
  raf_tensor *h = k->in[0], *y = k->out[0];
  return h->data == y->data
             ? RAF_OK
             : raf_device_copy(raf_exec_device(k->ex), y->data, h->data,
                               y->nbytes, RAF_COPY_DEVICE_TO_DEVICE);
}

raf_mpi_stats raf_nccl_stats_of(const raf_exec *ex) {
  const nccl_state *st = raf_exec_dialect_state(ex, RAF_DIALECT_NCCL);
  return st ? st->stats : (raf_mpi_stats){0};
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
