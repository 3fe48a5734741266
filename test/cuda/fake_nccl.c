/* fake_nccl.c: a stand-in for NCCL's libnccl.so.2, for testing the nccl
 * dialect (runtime/cuda/nccl.c) on machines without GPUs.
 *
 * Its device memory is the fake driver's (fake_driver.c): host memory at
 * addresses with bit 63 flipped. Its collectives are MPI's, between the
 * processes of the mpirun job that raf-run runs in (MPI_COMM_WORLD): at
 * once on the device's own stream, and on another stream when the fake
 * driver drains that stream (fake_cuda_enqueue), so that a reader that
 * does not wait for a collective on another stream reads its result not
 * yet written, as on a GPU. It checks what a NCCL would reject or
 * what would crash on a GPU: a buffer that is not device memory, a
 * communicator whose id was not drawn by ncclGetUniqueId (an id that was
 * never broadcast), ranks that disagree on the id, a count that does not
 * fit, a stream that is not one of the fake driver's live streams. f32,
 * f64, bf16 and the integers reduce (bf16 in f32, rounded once); f16 is
 * refused (the tests do not use it).
 *
 *   RAF_FAKE_NCCL_LOG=file   a line per call appended to file: "init
 *                            rank=R nranks=N", "all_reduce count=C
 *                            type=T op=sum|avg stream=S",
 *                            "reduce_scatter ...", "all_gather count=C
 *                            type=T stream=S", S the fake driver's number
 *                            of the stream it was queued on (1: the cuda
 *                            device's own, fake_common.h)
 *
 * Built as libnccl.so.2 in the build tree's fake-cuda/ beside the fake
 * driver (CMakeLists.txt); tests reach it through LD_LIBRARY_PATH.
 */
#include "fake_common.h"

#include <nccl.h>

#include <cuda.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char id_tag[] = "fake-nccl id";

struct ncclComm {
  int rank, nranks;
};


ncclResult_t ncclGetVersion(int *version) {
  *version = 22800;
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return "no error";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclSystemError: return "unhandled system error";
  default: return "internal error";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  memcpy(id->internal, id_tag, sizeof id_tag);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
                              int rank) {
  int started = 0, size = 0, mine = -1;
  MPI_Initialized(&started);
  if (!started)
    return ncclSystemError;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &mine);
  /* Every rank must hold the id rank 0 drew. */
  int good = memcmp(id.internal, id_tag, sizeof id_tag) == 0, all = 0;
  MPI_Allreduce(&good, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!all || nranks != size || rank != mine)
    return ncclInvalidUsage;
  struct ncclComm *c = malloc(sizeof *c);
  if (!c)
    return ncclSystemError;
  c->rank = rank;
  c->nranks = nranks;
  *comm = c;
  fake_log("RAF_FAKE_NCCL_LOG", "init rank=%d nranks=%d", rank, nranks);
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  free(comm);
  return ncclSuccess;
}

static MPI_Datatype mpi_type(ncclDataType_t t) {
  switch (t) {
  case ncclInt8: return MPI_INT8_T;
  case ncclUint8: return MPI_UINT8_T;
  case ncclInt32: return MPI_INT32_T;
  case ncclUint32: return MPI_UINT32_T;
  case ncclInt64: return MPI_INT64_T;
  case ncclUint64: return MPI_UINT64_T;
  case ncclFloat32: return MPI_FLOAT;
  case ncclFloat64: return MPI_DOUBLE;
  case ncclBfloat16: return MPI_FLOAT; /* widened */
  default: return MPI_DATATYPE_NULL;
  }
}

static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint16_t f32_to_bf16(float f) { /* round to nearest even */
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* A collective checked and logged when called, run when its stream gets
 * to it (submit). */
typedef struct fake_job {
  int kind; /* 0 all_reduce, 1 reduce_scatter, 2 all_gather */
  const void *in;
  void *out;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  MPI_Datatype mt;
  int nranks;
} fake_job;

/* out = the ranks' sum (avg: over nranks; or min, max) of in,
 * MPI_Allreduce, or this rank's count of it (reduce_scatter). */
static ncclResult_t run_reduce(const fake_job *j) {
  size_t count = j->count;
  size_t total = j->kind == 1 ? count * (size_t)j->nranks : count;
  ncclRedOp_t op = j->op;
  MPI_Op mop = op == ncclMin ? MPI_MIN : op == ncclMax ? MPI_MAX : MPI_SUM;
  int bf16 = j->type == ncclBfloat16;
  float *wide_in = NULL, *wide_out = NULL;
  if (bf16) {
    wide_in = malloc(total * sizeof(float) + 1);
    wide_out = malloc(count * sizeof(float) + 1);
    if (!wide_in || !wide_out) {
      free(wide_in), free(wide_out);
      return ncclSystemError;
    }
    for (size_t i = 0; i < total; i++)
      wide_in[i] = bf16_to_f32(((const uint16_t *)j->in)[i]);
  }
  const void *src = bf16 ? (const void *)wide_in : j->in;
  void *dst = bf16 ? (void *)wide_out : j->out;
  int rc = j->kind == 1
               ? MPI_Reduce_scatter_block(src, dst, (int)count, j->mt, mop,
                                          MPI_COMM_WORLD)
               : MPI_Allreduce(src == dst ? MPI_IN_PLACE : src, dst,
                               (int)count, j->mt, mop, MPI_COMM_WORLD);
  for (size_t i = 0; rc == MPI_SUCCESS && op == ncclAvg && i < count; i++) {
    int n = j->nranks;
    switch (j->type) {
    case ncclFloat32: ((float *)dst)[i] /= (float)n; break;
    case ncclBfloat16: ((float *)dst)[i] /= (float)n; break;
    case ncclFloat64: ((double *)dst)[i] /= n; break;
    case ncclInt64: ((int64_t *)dst)[i] /= n; break;
    case ncclUint64: ((uint64_t *)dst)[i] /= (uint64_t)n; break;
    case ncclInt32: ((int32_t *)dst)[i] /= n; break;
    case ncclUint32: ((uint32_t *)dst)[i] /= (uint32_t)n; break;
    case ncclInt8: ((int8_t *)dst)[i] = (int8_t)(((int8_t *)dst)[i] / n); break;
    default: ((uint8_t *)dst)[i] = (uint8_t)(((uint8_t *)dst)[i] / n); break;
    }
  }
  for (size_t i = 0; bf16 && rc == MPI_SUCCESS && i < count; i++)
    ((uint16_t *)j->out)[i] = f32_to_bf16(wide_out[i]);
  free(wide_in);
  free(wide_out);
  return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

static ncclResult_t run_job(const fake_job *j) {
  if (j->kind != 2)
    return run_reduce(j);
  int rc = MPI_Allgather(j->in, (int)j->count, j->mt, j->out, (int)j->count,
                         j->mt, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

static void run_deferred(void *arg) {
  /* Too late to return the failure: say it (MPI's own errors abort). */
  if (run_job(arg) != ncclSuccess)
    fprintf(stderr, "fake nccl: a collective run late failed\n");
  free(arg);
}

/* Runs j where a GPU would: on the fake driver's stream, deferred until
 * that stream is drained on any stream but the device's own
 * (fake_driver.c's fake_cuda_enqueue, found in the loaded fake driver),
 * at once where there is none. */
static ncclResult_t submit(const fake_job *j, cudaStream_t stream) {
  typedef int enqueue_fn(CUstream, void (*)(void *), void *);
  static enqueue_fn *enqueue;
  static int looked;
  if (!looked) {
    looked = 1;
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *fn = driver ? dlsym(driver, "fake_cuda_enqueue") : NULL;
    memcpy(&enqueue, &fn, sizeof fn);
  }
  if (!enqueue)
    return run_job(j);
  fake_job *copy = malloc(sizeof *copy);
  if (!copy)
    return ncclSystemError;
  *copy = *j;
  if (enqueue(stream, run_deferred, copy) != 0) {
    free(copy);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

/* Checks and logs a reduction (scatter 0: all_reduce, 1: reduce_scatter
 * of count per rank), then submits it. */
static ncclResult_t reduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream,
                           int scatter) {
  const void *in = fake_host_of(send);
  void *out = fake_host_of(recv);
  MPI_Datatype mt = mpi_type(type);
  size_t total = scatter ? count * (size_t)comm->nranks : count;
  int sid = fake_stream_id(stream);
  if (!in || !out || !sid || mt == MPI_DATATYPE_NULL || total > INT32_MAX ||
      (op != ncclSum && op != ncclAvg && op != ncclMin && op != ncclMax))
    return ncclInvalidArgument;
  static const char *const names[] = {[ncclSum] = "sum", [ncclAvg] = "avg",
                                      [ncclMin] = "min", [ncclMax] = "max"};
  fake_log("RAF_FAKE_NCCL_LOG", "%s count=%zu type=%d op=%s stream=%d",
           scatter ? "reduce_scatter" : "all_reduce", count, (int)type,
           names[op], sid);
  fake_job j = {scatter, in, out, count, type, op, mt, comm->nranks};
  return submit(&j, stream);
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return reduce(send, recv, count, type, op, comm, stream, 0);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count,
                               ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return reduce(send, recv, count, type, op, comm, stream, 1);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclComm_t comm,
                           cudaStream_t stream) {
  const void *in = fake_host_of(send);
  int sid = fake_stream_id(stream);
  void *out = fake_host_of(recv);
  MPI_Datatype mt = type == ncclBfloat16 || type == ncclFloat16
                        ? MPI_UINT16_T
                        : mpi_type(type);
  if (!in || !out || !sid || mt == MPI_DATATYPE_NULL || count > INT32_MAX)
    return ncclInvalidArgument;
  fake_log("RAF_FAKE_NCCL_LOG", "all_gather count=%zu type=%d stream=%d",
           count, (int)type, sid);
  fake_job j = {2, in, out, count, type, ncclSum, mt, comm->nranks};
  return submit(&j, stream);
}
