/* mpi.c: the mpi dialect: the collectives of a sharded module between
 * CPU processes, on MPI (Open MPI, Debian's libopenmpi-dev).
 *
 * A module the shard pass wrote (docs/Distributed.md) is one program that
 * every rank runs; its collectives carry world_size = N. Here they run
 * over MPI_COMM_WORLD, whose size must be N, with rank r the process
 * mpirun numbered r:
 *   all_reduce      the ring below, then MPI_Allgather (MPI_Allreduce
 *                   when N does not divide the tensor); mean divides the
 *                   sum by N
 *   reduce_scatter  a ring of MPI_Sendrecv (ring_reduce_scatter): rank r
 *                   keeps block r of the sum along `axis`
 *   all_gather      MPI_Allgather: the ranks' tensors end to end along
 *                   `axis`, in rank order
 *   all_slice       block r along `axis`, no communication
 * A collective with world_size = 1 is the identity and needs no MPI, so a
 * `shard{world=1}` module runs in one plain process here as on cpu-ref.
 *
 * Blocking forms, on purpose: the executor runs one statement at a time,
 * so a non-blocking collective would be waited for by the next statement
 * anyway; the shard pass places each bucket's collective where its inputs
 * are ready so that a runtime with streams can overlap it later.
 *
 * Along an axis other than 0 a block is strided; it is packed into (or
 * unpacked from) rank-major scratch around the MPI call. f16 and bf16 sum
 * in f32 (MPI has no half types) and round once; the other dtypes sum in
 * their own type, integers wrapping as MPI's do.
 *
 * The dialect's state per executor counts the calls, the bytes this rank
 * sends by the ring algorithms' volume and the time spent in MPI
 * (raf_mpi_stats_of), for raf-run --print-comm.
 *
 * Built without MPI, the dialect keeps its kernels, which fail saying why,
 * and raf_dialect_unavailable says why (runtime/mpi_traits.c), so raf-run leaves it out of its
 * default dialects.
 */
#include "runtime/mpi.h"

#include "runtime/dialects.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The dialect's state per executor: what --print-comm reports, and the
 * ring's receive block for more than 2 ranks, kept between calls. */
typedef struct mpi_state {
  raf_mpi_stats stats;
  void *scratch;
  size_t scratch_bytes;
} mpi_state;

raf_mpi_stats raf_mpi_stats_of(const raf_exec *ex) {
  const mpi_state *st = raf_exec_dialect_state(ex, RAF_DIALECT_MPI);
  return st ? st->stats : (raf_mpi_stats){0};
}

static void mpi_release(void *state) {
  mpi_state *st = state;
  if (st)
    free(st->scratch);
  free(st);
}

raf_rank_blocks raf_rank_blocks_of(const raf_type *t, int64_t axis,
                                   int world) {
  raf_rank_blocks b = {1, raf_dtype_size(t->dtype)};
  for (int d = 0; d < t->rank; d++) {
    if (d < axis)
      b.outer *= t->dims[d];
    else
      b.block *= (size_t)(d == axis ? t->dims[d] / world : t->dims[d]);
  }
  return b;
}

size_t raf_collective_sent_bytes(raf_opcode op, size_t whole_bytes,
                                 int world) {
  size_t once = whole_bytes * (size_t)(world - 1) / (size_t)world;
  return op == RAF_OP_ALL_REDUCE ? 2 * once : once;
}

#ifndef RAF_HAVE_MPI

static raf_status mpi_collective(const raf_kernel *k) {
  return raf_kernel_fail(k, "dialect mpi: %s", raf_dialect_unavailable(RAF_DIALECT_MPI));
}

static raf_status mpi_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                              void **state) {
  (void)ex;
  *state = NULL;
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_MPI)) {
        raf_diag_report(ctx, s->loc, RAF_SEV_ERROR, "%s: dialect mpi: %s",
                        raf_op_table[s->op].name, raf_dialect_unavailable(RAF_DIALECT_MPI));
        return RAF_ERROR;
      }
  return RAF_OK;
}

static raf_status no_mpi(raf_ctx *ctx) {
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "%s",
                  raf_dialect_unavailable(RAF_DIALECT_MPI));
  return RAF_ERROR;
}

raf_status raf_mpi_start(raf_ctx *ctx, int *rank, int *world) {
  *rank = 0;
  *world = 1;
  return no_mpi(ctx);
}
void raf_mpi_finish(void) {}
void raf_mpi_abort(int code) { exit(code); }
bool raf_mpi_any(bool mine) { return mine; }
bool raf_mpi_group(int *rank, int *world) {
  *rank = 0;
  *world = 1;
  return false;
}
raf_status raf_mpi_broadcast(raf_ctx *ctx, void *buf, size_t nbytes) {
  (void)buf, (void)nbytes;
  return no_mpi(ctx);
}
raf_status raf_mpi_gather(raf_ctx *ctx, const void *part, size_t nbytes,
                          void *all) {
  (void)part, (void)nbytes, (void)all;
  return no_mpi(ctx);
}

#else /* RAF_HAVE_MPI */

#include <limits.h>
#include <mpi.h>

static bool mpi_running(void) {
  int started = 0, finished = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&finished);
  return started && !finished;
}

static int comm_size(void) {
  int n = 1;
  if (mpi_running())
    MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

static void mpi_message(int code, char *buf, size_t size) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
    len = 0;
  snprintf(buf, size, "%.*s", len, text);
}

raf_status raf_mpi_start(raf_ctx *ctx, int *rank, int *world) {
  int provided = 0;
  *rank = 0;
  *world = 1;
  if (mpi_running() ||
      MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) !=
          MPI_SUCCESS) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "MPI did not start");
    return RAF_ERROR;
  }
  /* Errors come back as codes, reported as located errors, rather than
   * ending the job from inside MPI. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, world);
  return RAF_OK;
}

void raf_mpi_finish(void) {
  if (mpi_running())
    MPI_Finalize();
}

void raf_mpi_abort(int code) {
  if (mpi_running())
    MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}

bool raf_mpi_any(bool mine) {
  int in = mine, out = mine;
  if (mpi_running())
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  return out != 0;
}

bool raf_mpi_group(int *rank, int *world) {
  *rank = 0;
  *world = 1;
  if (!mpi_running())
    return false;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, world);
  return true;
}

/* Reports MPI error code rc of `what` ("gathering %zu bytes per rank")
 * on nbytes. */
static raf_status mpi_fail(raf_ctx *ctx, int rc, const char *what,
                           size_t nbytes) {
  char msg[MPI_MAX_ERROR_STRING + 1], doing[96];
  mpi_message(rc, msg, sizeof msg);
  snprintf(doing, sizeof doing, what, nbytes);
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "%s: %s", doing, msg);
  return RAF_ERROR;
}

raf_status raf_mpi_broadcast(raf_ctx *ctx, void *buf, size_t nbytes) {
  int rc = nbytes > INT_MAX ? MPI_ERR_COUNT
                            : MPI_Bcast(buf, (int)nbytes, MPI_BYTE, 0,
                                        MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? RAF_OK : mpi_fail(ctx, rc, "broadcasting %zu bytes", nbytes);
}

raf_status raf_mpi_gather(raf_ctx *ctx, const void *part, size_t nbytes,
                          void *all) {
  int rc = nbytes > INT_MAX ? MPI_ERR_COUNT
                            : MPI_Gather(part, (int)nbytes, MPI_BYTE, all,
                                         (int)nbytes, MPI_BYTE, 0,
                                         MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? RAF_OK
                           : mpi_fail(ctx, rc, "gathering %zu bytes per rank", nbytes);
}

static raf_status mpi_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                              void **state) {
  (void)ex, (void)ctx, (void)m;
  *state = calloc(1, sizeof(mpi_state));
  return *state ? RAF_OK : RAF_ERROR;
}

static MPI_Datatype mpi_type(raf_dtype dt) {
  switch (dt) {
  case RAF_F64: return MPI_DOUBLE;
  case RAF_F32: return MPI_FLOAT;
  case RAF_I64: return MPI_INT64_T;
  case RAF_I32: return MPI_INT32_T;
  case RAF_I8: return MPI_INT8_T;
  case RAF_U8: return MPI_UINT8_T;
  case RAF_F16:
  case RAF_BF16: return MPI_UINT16_T; /* moved, never summed */
  case RAF_BOOL:
  default: return MPI_UINT8_T;
  }
}

static bool is_half(raf_dtype dt) { return dt == RAF_F16 || dt == RAF_BF16; }

/* Copies between whole ([outer][N][block]) and rank-major scratch
 * ([N][outer][block]) in the direction `to_scratch` says. */
static void repack(const raf_rank_blocks *b, int world, char *whole,
                   char *scratch, bool to_scratch) {
  for (int r = 0; r < world; r++)
    for (int64_t o = 0; o < b->outer; o++) {
      char *w = whole + ((size_t)o * (size_t)world + (size_t)r) * b->block;
      char *s = scratch + ((size_t)r * (size_t)b->outer + (size_t)o) * b->block;
      memcpy(to_scratch ? s : w, to_scratch ? w : s, b->block);
    }
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* x[0..n) /= world. The sums of a step's gradients pass through here, so
 * f32 and f64 get loops the compiler vectorises; a division, not a
 * multiplication by 1/world, so that a mean over 3 ranks rounds as one
 * process's would. */
static void divide(raf_dtype dt, void *x, int64_t n, int world) {
  if (dt == RAF_F32) {
    float *f = x, w = (float)world;
    for (int64_t i = 0; i < n; i++)
      f[i] /= w;
  } else if (dt == RAF_F64) {
    double *d = x, w = world;
    for (int64_t i = 0; i < n; i++)
      d[i] /= w;
  } else if (raf_dtype_is_float(dt)) {
    for (int64_t i = 0; i < n; i++)
      raf_elem_set_f64(dt, x, i, raf_elem_get_f64(dt, x, i) / world);
  } else {
    for (int64_t i = 0; i < n; i++)
      raf_elem_set_i64(dt, x, i, raf_elem_get_i64(dt, x, i) / world);
  }
}

/* dst[i] = a[i] + b[i], in the sum's type; integers wrap, as MPI's do,
 * through their unsigned types. */
static void add(raf_dtype dt, void *dst, const void *a, const void *b,
                int64_t n) {
#define ADD(T)                                                                \
  for (int64_t i = 0; i < n; i++)                                             \
    ((T *)dst)[i] = (T)(((const T *)a)[i] + ((const T *)b)[i]);               \
  return
  switch (raf_dtype_size(dt)) {
  case 8:
    if (dt == RAF_F64) {
      ADD(double);
    }
    ADD(uint64_t);
  case 4:
    if (dt == RAF_F32) {
      ADD(float);
    }
    ADD(uint32_t);
  default: ADD(uint8_t);
  }
#undef ADD
}

/* MPI_Reduce_scatter_block(MPI_SUM) as a ring of MPI_Sendrecv: rank r
 * sends to r + 1 and receives from r - 1; block j's partial sum starts at
 * rank j + 1 and gains a rank's block at each of the N - 1 hops until it
 * ends, whole, at rank j. Open MPI 4.1's own reduce_scatter_block and
 * allreduce take 3x as long between processes on one machine (51 MB over
 * 2 ranks: 53 ms against 15 ms), and a step's gradients go through here.
 * Every block is summed on one rank only, so an all_reduce built on it
 * gives every rank the same bits. The receive buffers alternate between
 * out and scratch (one block; needed from 3 ranks on) so that the last
 * lands in out. */
static int ring_reduce_scatter(raf_dtype dt, const void *in, void *out,
                               int count, void *scratch, int world,
                               int rank) {
  MPI_Datatype type = mpi_type(dt);
  size_t block = (size_t)count * raf_dtype_size(dt);
  int to = (rank + 1) % world, from = (rank + world - 1) % world;
  const char *send = (const char *)in + (size_t)from * block;
  for (int step = 0; step < world - 1; step++) {
    int j = ((rank - 2 - step) % world + world) % world;
    char *recv = (world - 2 - step) % 2 ? scratch : out;
    int rc = MPI_Sendrecv(send, count, type, to, 0, recv, count, type, from,
                          0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return rc;
    add(dt, recv, recv, (const char *)in + (size_t)j * block, count);
    send = recv;
  }
  return MPI_SUCCESS;
}

/* Makes the state's scratch hold one block of count elements of dt when
 * the ring needs it (more than 2 ranks); an MPI error code. */
static int ring_scratch(const raf_kernel *k, int world, int64_t count,
                        raf_dtype dt) {
  mpi_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_MPI);
  size_t bytes = (size_t)count * raf_dtype_size(dt);
  if (world <= 2 || (st && st->scratch_bytes >= bytes))
    return MPI_SUCCESS;
  void *grown = st ? realloc(st->scratch, bytes) : NULL;
  if (!grown)
    return MPI_ERR_NO_MEM;
  st->scratch = grown;
  st->scratch_bytes = bytes;
  return MPI_SUCCESS;
}

/* Sums count_in elements of in over the ranks into out: all of them
 * (the ring, then MPI_Allgather) or, with scatter, this rank's
 * count_in / N (the ring); mean divides by N. */
static int reduce(const raf_kernel *k, const void *in, void *out,
                  int64_t count_in, int64_t count_out, bool scatter,
                  bool mean, int world, int rank) {
  raf_dtype dt = k->in[0]->type->dtype;
  bool half = is_half(dt);
  float *wide_in = NULL, *wide_out = NULL;
  if (half) {
    wide_in = malloc((size_t)count_in * sizeof(float));
    wide_out = malloc((size_t)count_out * sizeof(float) + 1);
    if (!wide_in || !wide_out) {
      free(wide_in), free(wide_out);
      return MPI_ERR_NO_MEM;
    }
    raf_elem_convert(RAF_F32, wide_in, dt, in, count_in);
  }
  raf_dtype sum_dt = half ? RAF_F32 : dt;
  const void *src = half ? wide_in : in;
  void *dst = half ? (void *)wide_out : out;
  int rc = ring_scratch(k, world, count_in / world, sum_dt);
  mpi_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_MPI);
  void *scratch = st ? st->scratch : NULL;
  if (rc == MPI_SUCCESS && scatter) {
    rc = ring_reduce_scatter(sum_dt, src, dst, (int)count_out, scratch,
                             world, rank);
  } else if (rc == MPI_SUCCESS && count_out % world == 0) {
    /* A ring all-reduce: the reduce-scatter into this rank's block of
     * dst, then every block to every rank. */
    int block = (int)(count_out / world);
    size_t bytes = (size_t)block * raf_dtype_size(sum_dt);
    rc = ring_reduce_scatter(sum_dt, src, (char *)dst + (size_t)rank * bytes,
                             block, scratch, world, rank);
    if (rc == MPI_SUCCESS)
      rc = MPI_Allgather(MPI_IN_PLACE, block, mpi_type(sum_dt), dst, block,
                         mpi_type(sum_dt), MPI_COMM_WORLD);
  } else if (rc == MPI_SUCCESS) {
    rc = MPI_Allreduce(src, dst, (int)count_out, mpi_type(sum_dt), MPI_SUM,
                       MPI_COMM_WORLD);
  }
  if (rc == MPI_SUCCESS && mean)
    divide(sum_dt, dst, count_out, world);
  if (half && rc == MPI_SUCCESS)
    raf_elem_convert(dt, out, RAF_F32, wide_out, count_out);
  free(wide_in);
  free(wide_out);
  return rc;
}

/* all_reduce's op = "min" or "max": exact in every type, so halves go
 * through f32 and back unchanged. */
static int extreme(const raf_kernel *k, const void *in, void *out,
                   int64_t count, bool max) {
  raf_dtype dt = k->in[0]->type->dtype;
  float *wide = NULL;
  if (is_half(dt)) {
    if (!(wide = malloc((size_t)count * sizeof(float) + 1)))
      return MPI_ERR_NO_MEM;
    raf_elem_convert(RAF_F32, wide, dt, in, count);
  }
  int rc = MPI_Allreduce(wide ? MPI_IN_PLACE : in, wide ? (void *)wide : out,
                         (int)count, mpi_type(wide ? RAF_F32 : dt),
                         max ? MPI_MAX : MPI_MIN, MPI_COMM_WORLD);
  if (wide && rc == MPI_SUCCESS)
    raf_elem_convert(dt, out, RAF_F32, wide, count);
  free(wide);
  return rc;
}

static raf_status mpi_collective(const raf_kernel *k) {
  const raf_stmt *s = k->stmt;
  raf_tensor *x = k->in[0], *y = k->out[0];
  int64_t n = raf_stmt_attr_int(s, "world_size");
  if (n == 1) {
    memcpy(y->data, x->data, y->nbytes);
    return RAF_OK;
  }
  int world = comm_size();
  if (n != world && !mpi_running())
    return raf_kernel_fail(k, "world_size = %lld needs one process per "
                              "rank: run it as `mpirun -np %lld raf-run ...`",
                           (long long)n, (long long)n);
  if (n != world)
    return raf_kernel_fail(k, "world_size = %lld, but this MPI job has %d "
                              "ranks", (long long)n, world);
  if (x->type->numel > INT_MAX)
    return raf_kernel_fail(k, "more than 2^31 - 1 elements in one "
                              "collective");
  int64_t axis = s->op == RAF_OP_ALL_REDUCE ? 0 : raf_stmt_attr_int(s, "axis");
  /* The tensor whose axis holds every rank's block. */
  raf_tensor *whole = s->op == RAF_OP_ALL_GATHER ? y : x;
  raf_rank_blocks b = raf_rank_blocks_of(whole->type, axis, world);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (s->op == RAF_OP_ALL_SLICE) {
    for (int64_t o = 0; o < b.outer; o++)
      memcpy((char *)y->data + (size_t)o * b.block,
             (char *)x->data + ((size_t)o * (size_t)world + (size_t)rank) *
                                   b.block,
             b.block);
    return RAF_OK;
  }
  /* Along axis 0 the blocks are rank-major already. */
  char *scratch = NULL;
  if (b.outer > 1 && s->op != RAF_OP_ALL_REDUCE &&
      !(scratch = malloc(whole->nbytes)))
    return raf_kernel_fail(k, "out of memory");
  const char *op = raf_stmt_attr_str(s, "op");
  bool mean = strcmp(op, "mean") == 0;
  bool min = strcmp(op, "min") == 0, max = strcmp(op, "max") == 0;
  mpi_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_MPI);
  int64_t t0 = now_ns();
  int rc;
  if (s->op == RAF_OP_ALL_REDUCE && (min || max)) {
    rc = extreme(k, x->data, y->data, x->type->numel, max);
  } else if (s->op == RAF_OP_ALL_REDUCE) {
    rc = reduce(k, x->data, y->data, x->type->numel, y->type->numel, false,
                mean, world, rank);
  } else if (s->op == RAF_OP_REDUCE_SCATTER) {
    if (scratch)
      repack(&b, world, x->data, scratch, true);
    rc = reduce(k, scratch ? scratch : x->data, y->data, x->type->numel,
                y->type->numel, true, mean, world, rank);
  } else { /* all_gather */
    MPI_Datatype type = mpi_type(x->type->dtype);
    rc = MPI_Allgather(x->data, (int)x->type->numel, type,
                       scratch ? scratch : y->data, (int)x->type->numel, type,
                       MPI_COMM_WORLD);
    if (scratch && rc == MPI_SUCCESS)
      repack(&b, world, y->data, scratch, false);
  }
  free(scratch);
  if (st) {
    st->stats.calls++;
    st->stats.bytes +=
        (int64_t)raf_collective_sent_bytes(s->op, whole->nbytes, world);
    st->stats.ns += now_ns() - t0;
  }
  if (rc == MPI_SUCCESS)
    return RAF_OK;
  char msg[MPI_MAX_ERROR_STRING + 1];
  mpi_message(rc, msg, sizeof msg);
  return raf_kernel_fail(k, "MPI: %s", msg);
}

#endif /* RAF_HAVE_MPI */

/* Either build's prepare hook and kernel (without MPI, ones that refuse). */
const raf_dialect_hooks raf_mpi_hooks = {.prepare = mpi_prepare,
                                         .release = mpi_release};

const raf_kernel_fn raf_mpi_kernels[RAF_OP_COUNT] = {
    [RAF_OP_ALL_REDUCE] = mpi_collective,
    [RAF_OP_REDUCE_SCATTER] = mpi_collective,
    [RAF_OP_ALL_GATHER] = mpi_collective,
    [RAF_OP_ALL_SLICE] = mpi_collective,
};
