/* mpi.c: the mpi dialect: the collectives of a sharded module between
 * CPU processes, on MPI (Open MPI, Debian's libopenmpi-dev).
 *
 * A module the shard pass wrote (docs/Distributed.md) is one program that
 * every rank runs; its collectives carry world_size = N. Here they run
 * over MPI_COMM_WORLD, whose size must be N, with rank r the process
 * mpirun numbered r:
 *   all_reduce      the ring below, then a ring all-gather (through
 *                   copies padded to a multiple of N when N does not
 *                   divide the tensor); mean divides the sum by N;
 *                   min and max are MPI_Iallreduce
 *   reduce_scatter  a ring of MPI_Sendrecv (ring_reduce_scatter): rank r
 *                   keeps block r of the sum along `axis`
 *   all_gather      a ring of exchanges: the ranks' tensors end to end
 *                   along `axis`, in rank order
 *   all_slice       block r along `axis`, no communication
 * A collective with world_size = 1 is the identity and needs no MPI, so a
 * `shard{world=1}` module runs in one plain process here as on cpu-ref.
 *
 * Every collective between ranks runs on one communication thread per
 * process, in the order the program starts them, so the ranks match them
 * as MPI requires. A collective with `async` (the overlap-comm pass's)
 * only hands its job to that thread; its `wait` blocks until the job is
 * done, and the statements between compute meanwhile. One without blocks
 * at once. The thread waits for its messages by testing them with short
 * sleeps in between, so that it leaves the cores to the kernels, and
 * gives up on a peer that sends nothing for RAF_COMM_TIMEOUT seconds
 * (default 20; raf_mpi_set_timeout): the collective fails naming that
 * rank, rather than the job hanging on a killed rank or a cut link.
 * Where MPI cannot run threads (MPI_THREAD_MULTIPLE), the jobs run in the
 * kernels, as blocking collectives with the same timeout.
 *
 * Along an axis other than 0 a block is strided; it is packed into (or
 * unpacked from) rank-major scratch around the MPI call. f16 and bf16 sum
 * in f32 (MPI has no half types) and round once; the other dtypes sum in
 * their own type, integers wrapping as MPI's do.
 *
 * The dialect's state per executor counts the calls, the bytes this rank
 * sends by the ring algorithms' volume, the time the collectives took and
 * the time the step waited for them (raf_mpi_stats_of), for raf-run
 * --print-comm: what the difference hid behind compute.
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

typedef struct comm_job comm_job;

/* The dialect's state per executor: what --print-comm reports, the
 * ring's receive block for more than 2 ranks, kept between calls, and
 * the async collectives started and not yet waited for. */
typedef struct mpi_state {
  raf_mpi_stats stats;
  void *scratch;
  size_t scratch_bytes;
  comm_job *in_flight;
} mpi_state;

/* Waits for the collectives of st still in flight (none without MPI). */
static void drain(mpi_state *st);

/* Seconds without a message from a peer before a collective gives up:
 * raf_mpi_set_timeout's, else RAF_COMM_TIMEOUT's, else 20. */
static double timeout_s;

void raf_mpi_set_timeout(double seconds) { timeout_s = seconds; }

static double comm_timeout(void) {
  if (timeout_s <= 0) {
    const char *env = getenv("RAF_COMM_TIMEOUT");
    double v = env ? atof(env) : 0;
    timeout_s = v > 0 ? v : 20;
  }
  return timeout_s;
}

raf_mpi_stats raf_mpi_stats_of(const raf_exec *ex) {
  const mpi_state *st = raf_exec_dialect_state(ex, RAF_DIALECT_MPI);
  return st ? st->stats : (raf_mpi_stats){0};
}

static void mpi_release(void *state) {
  mpi_state *st = state;
  if (st) {
    drain(st);
    free(st->scratch);
  }
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

static void drain(mpi_state *st) { (void)st; }

static raf_status mpi_collective(const raf_kernel *k) {
  return raf_kernel_fail(k, "dialect mpi: %s", raf_dialect_unavailable(RAF_DIALECT_MPI));
}
#define mpi_wait mpi_collective

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
#include <pthread.h>

/* The communication thread and its queue of jobs (comm_job), in the
 * order the program started them. */
static struct {
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  comm_job *head, *tail;
  pthread_t thread;
  bool threaded, stop;
} comm = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER, NULL, NULL, 0, false, false};

static void *comm_main(void *unused);

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
      MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) !=
          MPI_SUCCESS) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "MPI did not start");
    return RAF_ERROR;
  }
  /* Errors come back as codes, reported as located errors, rather than
   * ending the job from inside MPI. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, world);
  /* Without MPI_THREAD_MULTIPLE the kernels run the jobs themselves. The
   * timeout is settled before the thread reads it. */
  (void)comm_timeout();
  comm.stop = false;
  comm.threaded = provided >= MPI_THREAD_MULTIPLE &&
                  pthread_create(&comm.thread, NULL, comm_main, NULL) == 0;
  return RAF_OK;
}

void raf_mpi_finish(void) {
  if (comm.threaded) {
    pthread_mutex_lock(&comm.mu);
    comm.stop = true;
    pthread_cond_signal(&comm.work);
    pthread_mutex_unlock(&comm.mu);
    pthread_join(comm.thread, NULL);
    comm.threaded = false;
  }
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

/* A collective for the communication thread: the statement and copies of
 * its tensors (their data stays where the executor put it until the
 * wait), and what came of it. */
struct comm_job {
  const raf_stmt *stmt;
  raf_tensor x, y;
  mpi_state *st;
  int world, rank;
  int rc;   /* MPI_SUCCESS, an MPI error code, or COMM_LOST */
  int lost; /* with COMM_LOST: the silent rank, -1 when not known */
  int64_t began, ended; /* on the thread that ran it */
  bool done;            /* under comm.mu */
  comm_job *queued;     /* the next in the thread's queue, under comm.mu */
  comm_job *next;       /* the next in the state's in_flight */
};

/* An error code beside MPI's: a peer sent nothing within the timeout. */
enum { COMM_LOST = -1 };

/* Waits for requests r[0..n), a receive from `from` first (-1: every
 * rank's part of one collective) and then a send to `to`, by testing them
 * with sleeps in between: a thread blocked inside MPI would poll and take
 * a core from the kernels. Gives up with COMM_LOST, naming the rank in
 * j->lost, when none completes for comm_timeout() seconds. */
static int poll_requests(comm_job *j, MPI_Request *r, int n, int from,
                         int to) {
  int64_t limit = (int64_t)(comm_timeout() * 1e9), last = now_ns();
  long pause = 1000; /* ns, doubling to 64 us while nothing completes */
  for (;;) {
    int pending = 0, completed = 0;
    for (int i = 0; i < n; i++) {
      int flag = 1;
      if (r[i] == MPI_REQUEST_NULL)
        continue;
      int rc = MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS)
        return rc;
      completed += flag;
      pending += !flag;
    }
    if (!pending)
      return MPI_SUCCESS;
    int64_t t = now_ns();
    if (completed) {
      last = t;
      pause = 1000;
    } else if (t - last > limit) {
      j->lost = r[0] != MPI_REQUEST_NULL ? from : to;
      return COMM_LOST;
    }
    struct timespec ts = {0, pause};
    nanosleep(&ts, NULL);
    if (pause < 64000)
      pause *= 2;
  }
}

/* Sends count elements at send to `to` and receives count into recv from
 * `from`, as MPI_Sendrecv, through poll_requests. */
static int exchange(comm_job *j, const void *send, void *recv, int count,
                    MPI_Datatype type, int to, int from) {
  MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int rc = MPI_Irecv(recv, count, type, from, 0, MPI_COMM_WORLD, &r[0]);
  if (rc == MPI_SUCCESS)
    rc = MPI_Isend(send, count, type, to, 0, MPI_COMM_WORLD, &r[1]);
  if (rc == MPI_SUCCESS)
    return poll_requests(j, r, 2, from, to);
  for (int i = 0; i < 2; i++)
    if (r[i] != MPI_REQUEST_NULL) {
      MPI_Cancel(&r[i]);
      MPI_Request_free(&r[i]);
    }
  return rc;
}

/* MPI_Reduce_scatter_block(MPI_SUM) as a ring of exchanges: rank r sends
 * to r + 1 and receives from r - 1; block j's partial sum starts at rank
 * j + 1 and gains a rank's block at each of the N - 1 hops until it ends,
 * whole, at rank j. Open MPI 4.1's own reduce_scatter_block and allreduce
 * take 3x as long between processes on one machine (51 MB over 2 ranks:
 * 53 ms against 15 ms), and a step's gradients go through here. Every
 * block is summed on one rank only, so an all_reduce built on it gives
 * every rank the same bits. The receive buffers alternate between out and
 * scratch (one block; needed from 3 ranks on) so that the last lands in
 * out. */
static int ring_reduce_scatter(comm_job *j, raf_dtype dt, const void *in,
                               void *out, int count, void *scratch) {
  int world = j->world, rank = j->rank;
  MPI_Datatype type = mpi_type(dt);
  size_t block = (size_t)count * raf_dtype_size(dt);
  int to = (rank + 1) % world, from = (rank + world - 1) % world;
  const char *send = (const char *)in + (size_t)from * block;
  for (int step = 0; step < world - 1; step++) {
    int b = ((rank - 2 - step) % world + world) % world;
    char *recv = (world - 2 - step) % 2 ? scratch : out;
    int rc = exchange(j, send, recv, count, type, to, from);
    if (rc != MPI_SUCCESS)
      return rc;
    add(dt, recv, recv, (const char *)in + (size_t)b * block, count);
    send = recv;
  }
  return MPI_SUCCESS;
}

/* MPI_Allgather in place as a ring: out holds N blocks of count elements,
 * this rank's already at block `rank`; at hop s a rank passes on block
 * rank - s and receives block rank - s - 1 from its left neighbour. A
 * ring rather than MPI_Allgather so that a silent peer is named. */
static int ring_all_gather(comm_job *j, MPI_Datatype type, size_t elem,
                           void *out, int count) {
  int world = j->world, rank = j->rank;
  int to = (rank + 1) % world, from = (rank + world - 1) % world;
  size_t block = (size_t)count * elem;
  for (int step = 0; step < world - 1; step++) {
    int send = ((rank - step) % world + world) % world;
    int recv = ((rank - step - 1) % world + world) % world;
    int rc = exchange(j, (char *)out + (size_t)send * block,
                      (char *)out + (size_t)recv * block, count, type, to,
                      from);
    if (rc != MPI_SUCCESS)
      return rc;
  }
  return MPI_SUCCESS;
}

/* MPI_Iallreduce in place, through poll_requests. */
static int all_reduce_op(comm_job *j, void *buf, int count, MPI_Datatype type,
                         MPI_Op op) {
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, count, type, op, MPI_COMM_WORLD,
                          &r);
  return rc == MPI_SUCCESS ? poll_requests(j, &r, 1, -1, -1) : rc;
}

/* Makes the state's scratch hold one block of count elements of dt when
 * the ring needs it (more than 2 ranks); an MPI error code. */
static int ring_scratch(mpi_state *st, int world, int64_t count,
                        raf_dtype dt) {
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
 * (the ring, then the ring all-gather) or, with scatter, this rank's
 * count_in / N (the ring); mean divides by N. */
static int reduce(comm_job *j, const void *in, void *out, int64_t count_in,
                  int64_t count_out, bool scatter, bool mean) {
  raf_dtype dt = j->x.type->dtype;
  int world = j->world;
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
  /* One block: this rank's part (scatter), or of the padded whole. */
  int rc = ring_scratch(j->st, world,
                        scatter ? count_out : (count_out + world - 1) / world,
                        sum_dt);
  void *scratch = j->st ? j->st->scratch : NULL;
  if (rc == MPI_SUCCESS && scatter) {
    rc = ring_reduce_scatter(j, sum_dt, src, dst, (int)count_out, scratch);
  } else if (rc == MPI_SUCCESS) {
    /* A ring all-reduce: the reduce-scatter into this rank's block of
     * dst, then every block to every rank. A count that the ranks do not
     * divide (the loss, a scalar) goes through copies padded with zeros
     * to the next multiple. */
    size_t elem = raf_dtype_size(sum_dt);
    int64_t padded = (count_out + world - 1) / world * world;
    char *pad = padded == count_out ? NULL
                                    : calloc(2 * (size_t)padded, elem);
    if (pad)
      memcpy(pad, src, (size_t)count_out * elem);
    const void *from = pad ? pad : src;
    char *to = pad ? pad + (size_t)padded * elem : dst;
    int block = (int)(padded / world);
    if (padded != count_out && !pad)
      rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
      rc = ring_reduce_scatter(j, sum_dt, from,
                               to + (size_t)j->rank * (size_t)block * elem,
                               block, scratch);
    if (rc == MPI_SUCCESS)
      rc = ring_all_gather(j, mpi_type(sum_dt), elem, to, block);
    if (pad && rc == MPI_SUCCESS)
      memcpy(dst, to, (size_t)count_out * elem);
    free(pad);
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
static int extreme(comm_job *j, bool max) {
  raf_dtype dt = j->x.type->dtype;
  int64_t count = j->x.type->numel;
  float *wide = NULL;
  if (is_half(dt)) {
    if (!(wide = malloc((size_t)count * sizeof(float) + 1)))
      return MPI_ERR_NO_MEM;
    raf_elem_convert(RAF_F32, wide, dt, j->x.data, count);
  } else {
    memcpy(j->y.data, j->x.data, j->y.nbytes);
  }
  int rc = all_reduce_op(j, wide ? (void *)wide : j->y.data, (int)count,
                         mpi_type(wide ? RAF_F32 : dt),
                         max ? MPI_MAX : MPI_MIN);
  if (wide && rc == MPI_SUCCESS)
    raf_elem_convert(dt, j->y.data, RAF_F32, wide, count);
  free(wide);
  return rc;
}

/* Runs job j's collective (on the communication thread, or in the kernel
 * without one); sets j->rc. */
static void run_job(comm_job *j) {
  const raf_stmt *s = j->stmt;
  raf_tensor *x = &j->x, *y = &j->y;
  int world = j->world;
  j->began = now_ns();
  int64_t axis = s->op == RAF_OP_ALL_REDUCE ? 0 : raf_stmt_attr_int(s, "axis");
  /* The tensor whose axis holds every rank's block. */
  raf_tensor *whole = s->op == RAF_OP_ALL_GATHER ? y : x;
  raf_rank_blocks b = raf_rank_blocks_of(whole->type, axis, world);
  /* Along axis 0 the blocks are rank-major already. */
  char *scratch = NULL;
  if (b.outer > 1 && s->op != RAF_OP_ALL_REDUCE &&
      !(scratch = malloc(whole->nbytes))) {
    j->rc = MPI_ERR_NO_MEM;
    j->ended = now_ns();
    return;
  }
  const char *op = raf_stmt_attr_str(s, "op");
  bool mean = strcmp(op, "mean") == 0;
  bool min = strcmp(op, "min") == 0, max = strcmp(op, "max") == 0;
  int rc;
  if (s->op == RAF_OP_ALL_REDUCE && (min || max)) {
    rc = extreme(j, max);
  } else if (s->op == RAF_OP_ALL_REDUCE) {
    rc = reduce(j, x->data, y->data, x->type->numel, y->type->numel, false,
                mean);
  } else if (s->op == RAF_OP_REDUCE_SCATTER) {
    if (scratch)
      repack(&b, world, x->data, scratch, true);
    rc = reduce(j, scratch ? scratch : x->data, y->data, x->type->numel,
                y->type->numel, true, mean);
  } else { /* all_gather: this rank's block in place, then the ring */
    char *all = scratch ? scratch : y->data;
    memcpy(all + (size_t)j->rank * x->nbytes, x->data, x->nbytes);
    rc = ring_all_gather(j, mpi_type(x->type->dtype),
                         raf_dtype_size(x->type->dtype), all,
                         (int)x->type->numel);
    if (scratch && rc == MPI_SUCCESS)
      repack(&b, world, y->data, scratch, false);
  }
  free(scratch);
  j->rc = rc;
  j->ended = now_ns();
}

static void *comm_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&comm.mu);
  for (;;) {
    while (!comm.head && !comm.stop)
      pthread_cond_wait(&comm.work, &comm.mu);
    if (!comm.head)
      break;
    comm_job *j = comm.head;
    pthread_mutex_unlock(&comm.mu);
    run_job(j);
    pthread_mutex_lock(&comm.mu);
    comm.head = j->queued;
    if (!comm.head)
      comm.tail = NULL;
    j->done = true;
    pthread_cond_broadcast(&comm.done);
  }
  pthread_mutex_unlock(&comm.mu);
  return NULL;
}

/* Hands j to the communication thread, or runs it here without one. */
static void submit(comm_job *j) {
  if (!comm.threaded) {
    run_job(j);
    j->done = true;
    return;
  }
  pthread_mutex_lock(&comm.mu);
  if (comm.tail)
    comm.tail->queued = j;
  else
    comm.head = j;
  comm.tail = j;
  pthread_cond_signal(&comm.work);
  pthread_mutex_unlock(&comm.mu);
}

/* Blocks until j is done and counts it in j->st's statistics: the time
 * it took, and the part of it the step waited for, since t0. */
static void finish(comm_job *j, int64_t t0) {
  if (comm.threaded) {
    pthread_mutex_lock(&comm.mu);
    while (!j->done)
      pthread_cond_wait(&comm.done, &comm.mu);
    pthread_mutex_unlock(&comm.mu);
  }
  mpi_state *st = j->st;
  if (st) {
    int64_t took = j->ended - j->began, waited = now_ns() - t0;
    st->stats.calls++;
    st->stats.bytes += (int64_t)raf_collective_sent_bytes(
        j->stmt->op,
        j->stmt->op == RAF_OP_ALL_GATHER ? j->y.nbytes : j->x.nbytes,
        j->world);
    st->stats.ns += took;
    st->stats.waited_ns += waited < took ? waited : took;
  }
}

/* The kernel's report of a job that failed. */
static raf_status job_status(const raf_kernel *k, const comm_job *j) {
  if (j->rc == MPI_SUCCESS)
    return RAF_OK;
  /* The wait's report names its collective; the collective's own
   * report has its name already. */
  const char *name = k->stmt->op == RAF_OP_WAIT
                         ? raf_op_table[j->stmt->op].name
                         : "";
  const char *colon = *name ? ": " : "";
  double limit = comm_timeout();
  int lost = j->lost < 0 && j->world == 2 ? 1 - j->rank : j->lost;
  if (j->rc == COMM_LOST && lost >= 0)
    return raf_kernel_fail(k,
                           "%s%snothing from rank %d for %g s: rank %d is "
                           "lost (its process ended or its host is "
                           "unreachable; RAF_COMM_TIMEOUT sets the limit)",
                           name, colon, lost, limit, lost);
  if (j->rc == COMM_LOST)
    return raf_kernel_fail(k,
                           "%s%snothing from the other ranks for %g s: a "
                           "rank is lost (its process ended or its host is "
                           "unreachable; RAF_COMM_TIMEOUT sets the limit)",
                           name, colon, limit);
  char msg[MPI_MAX_ERROR_STRING + 1];
  mpi_message(j->rc, msg, sizeof msg);
  return raf_kernel_fail(k, "%s%sMPI: %s", name, colon, msg);
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
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (s->op == RAF_OP_ALL_SLICE) {
    raf_rank_blocks b = raf_rank_blocks_of(x->type, raf_stmt_attr_int(s, "axis"),
                                           world);
    for (int64_t o = 0; o < b.outer; o++)
      memcpy((char *)y->data + (size_t)o * b.block,
             (char *)x->data + ((size_t)o * (size_t)world + (size_t)rank) *
                                   b.block,
             b.block);
    return RAF_OK;
  }
  comm_job *j = calloc(1, sizeof *j);
  if (!j)
    return raf_kernel_fail(k, "out of memory");
  *j = (comm_job){.stmt = s, .x = *x, .y = *y, .world = world, .rank = rank,
                  .lost = -1,
                  .st = raf_exec_dialect_state(k->ex, RAF_DIALECT_MPI)};
  int64_t t0 = now_ns();
  submit(j);
  if (raf_stmt_attr_bool(s, "async") && j->st) {
    j->next = j->st->in_flight;
    j->st->in_flight = j;
    return RAF_OK;
  }
  finish(j, t0);
  raf_status rc = job_status(k, j);
  free(j);
  return rc;
}

/* wait(%h): finishes the async collective that writes %h's buffer. One
 * that ran at once (world_size = 1) left no job. */
static raf_status mpi_wait(const raf_kernel *k) {
  mpi_state *st = raf_exec_dialect_state(k->ex, RAF_DIALECT_MPI);
  raf_tensor *h = k->in[0], *y = k->out[0];
  comm_job **link = st ? &st->in_flight : NULL;
  while (link && *link && (*link)->y.data != h->data)
    link = &(*link)->next;
  raf_status rc = RAF_OK;
  if (link && *link) {
    comm_job *j = *link;
    *link = j->next;
    j->next = NULL;
    finish(j, now_ns());
    rc = job_status(k, j);
    free(j);
  }
  if (rc == RAF_OK && y->data != h->data)
    memcpy(y->data, h->data, y->nbytes);
  return rc;
}

static void drain(mpi_state *st) {
  while (st->in_flight) {
    comm_job *j = st->in_flight;
    st->in_flight = j->next;
    j->next = NULL;
    finish(j, now_ns());
    free(j);
  }
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
    [RAF_OP_WAIT] = mpi_wait,
};
