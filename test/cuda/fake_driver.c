/* fake_driver.c: a stand-in for the NVIDIA driver's libcuda.so.1, for
 * testing the cuda device (runtime/cuda/) on machines without a GPU.
 *
 * It exports cuGetProcAddress_v2 only, as raf expects, and answers for
 * the entry points of runtime/cuda/driver.def: device memory is host
 * memory, copies and memsets are done at once, events read the clock.
 * Streams are checked handles; the driver's own work on any of them runs
 * at once, but work a fake library defers on a stream other than the
 * device's first (fake_cuda_enqueue: fake_nccl.c's collectives) runs only
 * when that stream is drained, a wait for an event recorded after it
 * included, so that a reader that skipped the wait reads stale data.
 * Modules are PTX, parsed and checked as the driver's JIT does, and
 * launches run their kernels in the PTX interpreter (test/cuda/ptx/), so
 * every kernel computes what a GPU would. A kernel's fault (an illegal or
 * misaligned address, a deadlock, a race on shared memory) is printed on
 * stderr with its kernel, block, thread and PTX line, and becomes the
 * context's sticky error, which every later call returns, as a real
 * asynchronous failure does. Device pointers are host addresses with bit
 * 63 flipped, so that host code that reads or writes device memory
 * directly crashes rather than passes.
 *
 * The environment shapes the fake machine:
 *   RAF_FAKE_CUDA_DEVICES=N     how many GPUs (default 1; 0: cuInit says
 *                               CUDA_ERROR_NO_DEVICE, as a driver does on
 *                               a machine without a GPU)
 *   RAF_FAKE_CUDA_MISSING=name  an entry point cuGetProcAddress lacks
 *   RAF_FAKE_CUDA_CC=M.m        the compute capability (default 9.0):
 *                               a module whose .target it cannot run is
 *                               refused (CUDA_ERROR_NO_BINARY_FOR_GPU)
 *   RAF_FAKE_CUDA_VERSION=N     what cuDriverGetVersion says (default
 *                               12040, CUDA 12.4, which takes PTX ISA up
 *                               to 8.4; 12000 takes 8.0, 13000 takes 9.0):
 *                               a newer .version is refused with
 *                               CUDA_ERROR_UNSUPPORTED_PTX_VERSION
 *   RAF_FAKE_CUDA_REQUIRE_MAXNTID=1  a launch of a kernel that declares no
 *                               .maxntid (or .reqntid) is refused
 *                               (CUDA_ERROR_INVALID_VALUE): without it
 *                               ptxas assumes 1024 threads a block and
 *                               may give each fewer registers than the
 *                               kernel could use
 *   RAF_FAKE_CUDA_MAX_INSNS=N   a launch running more than N instructions
 *                               fails (CUDA_ERROR_LAUNCH_TIMEOUT), naming
 *                               the kernel; default: no limit
 *   RAF_FAKE_CUDA_LOG=file      a line per module load ("load NAMES"), per
 *                               launch ("launch NAME grid=X,Y,Z
 *                               block=X,Y,Z shared=N params=...") and per
 *                               fault ("fault REPORT") appended to file;
 *                               and "stall cuMemFree" for a free while
 *                               launches are queued and not yet waited
 *                               for: on a GPU, cuMemFree waits for the
 *                               device there, stalling the step
 *   RAF_FAKE_CUDA_STATS=file    a line per launch ("insns NAME N ns T")
 *                               with the instructions it executed and the
 *                               nanoseconds the interpreter took
 *   RAF_FAKE_CUDA_STREAM_LOG=file  a line per stream made ("create
 *                               stream=N", N from 1 in order: the cuda
 *                               device's own is 1) and destroyed
 *                               ("destroy stream=N"), per event recorded
 *                               ("record stream=N") and per stream made
 *                               to wait for one ("wait stream=N for=M", M
 *                               the stream that recorded it)
 *   RAF_FAKE_CUDA_DEVICE_LOG=file  a line per primary context retained
 *                               ("retain N", N the device's ordinal)
 *                               appended to file: which GPU a process took
 *   RAF_FAKE_CUDA_REJECT=1      every module load (and cuLinkAddData)
 *                               fails as a bad PTX does, with a JIT log
 * The JIT linker (cuLink*) checks the PTX added, gives it back as the
 * "cubin", and logs "link NAME" per cuLinkComplete.
 * Memory still allocated when the last primary context is released is
 * reported on stderr ("fake cuda: N allocations never freed"), and so is
 * the library being unloaded (dlclose) after cuInit, before the process
 * exits ("fake cuda: libcuda unloaded after cuInit"): the real driver's
 * threads would still run code of the unloaded library.
 *
 * Built as libcuda.so.1 in the build tree's fake-cuda/ (CMakeLists.txt);
 * tests reach it through LD_LIBRARY_PATH.
 */
#include "fake_common.h"
#include "ptx/ptx.h"

#include <cuda.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <time.h>

enum { FAKE_DRIVER_VERSION = 12040 };

/* The first fault of a kernel: every later call returns it. */
static CUresult sticky = CUDA_SUCCESS;
#define STICKY()                                                             \
  do {                                                                       \
    if (sticky != CUDA_SUCCESS)                                              \
      return sticky;                                                         \
  } while (0)

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int driver_version(void) {
  const char *v = getenv("RAF_FAKE_CUDA_VERSION");
  return v && *v ? atoi(v) : FAKE_DRIVER_VERSION;
}


static long live_allocations;
static int retained; /* primary context references */
static int token;    /* what handles point at */

static void *host_of(CUdeviceptr p) { return (void *)(uintptr_t)(p ^ FAKE_DEVICE_BIT); }

static int device_count(void) {
  const char *v = getenv("RAF_FAKE_CUDA_DEVICES");
  return v && *v ? atoi(v) : 1;
}

/* The errors the fake gives, with the driver's names and strings. */
#define FAKE_ERRORS(X)                                                      \
  X(CUDA_SUCCESS, "no error")                                               \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")             \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                              \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                           \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                    \
  X(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                 \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                         \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,                                     \
    "the provided PTX was compiled with an unsupported toolchain.")         \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU,                                           \
    "no kernel image is available for execution on the device")             \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered") \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address")                    \
  X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                 \
  X(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated")

static const struct {
  CUresult code;
  const char *name, *string;
} errors[] = {
#define X(code, string) {code, #code, string},
    FAKE_ERRORS(X)
#undef X
};

static CUresult fake_cuGetErrorString(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == e) {
      *s = errors[i].string;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGetErrorName(CUresult e, const char **s) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == e) {
      *s = errors[i].name;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

static bool initialised, exiting;
static bool queued; /* launches not yet waited for */
/* Runs the work fake libraries deferred on every stream (below). */
static void drain_all(void);

static void at_exit(void) { exiting = true; }

__attribute__((destructor)) static void unloaded(void) {
  if (initialised && !exiting)
    fprintf(stderr, "fake cuda: libcuda unloaded after cuInit\n");
}

static CUresult fake_cuInit(unsigned int flags) {
  (void)flags;
  if (!initialised) {
    initialised = true;
    atexit(at_exit); /* runs before the library's destructors at exit */
  }
  return device_count() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

static CUresult fake_cuDriverGetVersion(int *v) {
  *v = driver_version();
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int *n) {
  *n = device_count();
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal < 0 || ordinal >= device_count())
    return CUDA_ERROR_INVALID_VALUE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice d) {
  snprintf(name, (size_t)len, "raf fake GPU %d", (int)d);
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetAttribute(int *v, CUdevice_attribute a,
                                          CUdevice d) {
  (void)d;
  const char *cc = getenv("RAF_FAKE_CUDA_CC");
  int major = 9, minor = 0;
  if (cc && *cc && sscanf(cc, "%d.%d", &major, &minor) != 2)
    return CUDA_ERROR_INVALID_VALUE;
  *v = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? major
       : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? minor
                                                           : 0;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice d) {
  (void)d;
  *bytes = (size_t)1 << 30;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  const char *path = getenv("RAF_FAKE_CUDA_DEVICE_LOG");
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (f) {
    fprintf(f, "retain %d\n", (int)d);
    fclose(f);
  }
  retained++;
  *c = (CUcontext)&token;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice d) {
  (void)d;
  drain_all();
  if (--retained == 0 && live_allocations)
    fprintf(stderr, "fake cuda: %ld allocations never freed\n",
            live_allocations);
  return CUDA_SUCCESS;
}

static CUresult fake_cuCtxSetCurrent(CUcontext c) {
  return c == (CUcontext)&token ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  STICKY();
  if (bytes > ((size_t)1 << 30))
    return CUDA_ERROR_OUT_OF_MEMORY;
  /* cuMemAlloc's alignment: 256 bytes. */
  void *h = aligned_alloc(256, (bytes + 255) & ~(size_t)255);
  if (!h)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)h ^ FAKE_DEVICE_BIT;
  if (ptx_memory_add(*p, h, bytes ? bytes : 1) != PTX_OK) {
    free(h);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  live_allocations++;
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemFree(CUdeviceptr p) {
  if (!(p & FAKE_DEVICE_BIT))
    return CUDA_ERROR_INVALID_VALUE; /* a host pointer */
  drain_all(); /* cuMemFree waits for the device */
  if (queued)
    fake_log("RAF_FAKE_CUDA_LOG", "stall cuMemFree");
  if (ptx_memory_remove(p) != PTX_OK)
    return CUDA_ERROR_INVALID_VALUE; /* not an allocation's start */
  live_allocations--;
  free(host_of(p));
  return CUDA_SUCCESS;
}

/* Streams: slots of a fixed table (fake_common.h's fake_stream), never
 * reused, so that a destroyed stream stays recognisably dead. Work runs
 * at once whatever the stream, so every stream is always drained; what
 * the fake checks is that each handle is a live stream. */
enum { MAX_STREAMS = 256 };
static fake_stream streams[MAX_STREAMS];
static int nstreams;

/* The live stream s, or NULL. */
static fake_stream *stream_of(CUstream s) {
  fake_stream *f = (fake_stream *)s;
  if (f < streams || f >= streams + nstreams || f->magic != FAKE_STREAM_LIVE)
    return NULL;
  return f;
}

/* An event: the time of its last record in ns (-1 before any, -2 while
 * work deferred before it has not run), the stream that recorded it and
 * its position in that stream's deferred work; a pending one is on its
 * stream's list, which gives it its time when the work before it ran. */
typedef struct fake_event {
  int64_t ns;
  int stream;
  long pos;
  struct fake_event *next_pending;
} fake_event;

/* Work a fake library deferred (fake_cuda_enqueue) on a stream other
 * than the first: positions [base, queued) of the stream's count, those
 * before `done` run. */
typedef struct deferred {
  void (*run)(void *);
  void *arg;
} deferred;
typedef struct stream_queue {
  deferred *w;
  long base, done, queued;
  long cap;
  fake_event *pending; /* recorded after work not yet run */
} stream_queue;
static stream_queue queues[MAX_STREAMS];

/* Runs the work deferred on stream `id` up to position `upto`. */
static void drain(int id, long upto) {
  stream_queue *q = &queues[id - 1];
  while (q->done < upto && q->done < q->queued) {
    deferred w = q->w[q->done - q->base];
    q->done++; /* first: the work may itself use the driver */
    w.run(w.arg);
    /* The events recorded after it are done now. */
    for (fake_event **link = &q->pending; *link;) {
      fake_event *t = *link;
      if (t->pos > q->done) {
        link = &t->next_pending;
        continue;
      }
      t->ns = now_ns();
      *link = t->next_pending;
    }
  }
  if (q->done == q->queued)
    q->base = q->done; /* empty: the array starts over */
}

static void drain_all(void) {
  for (int i = 0; i < nstreams; i++)
    drain(i + 1, queues[i].queued);
}

/* For the fake libraries (fake_nccl.c), which find it with dlsym: queues
 * run(arg) on stream s, where a GPU would run it later. On the first
 * stream (the cuda device's own) it runs at once, as the other fakes'
 * work does (cuBLASLt's and cuDNN's compute when called, and they read
 * what the device's stream wrote); on another it runs only when the
 * stream is drained up to it: by the next operation on that stream, a
 * synchronize, a query of an event recorded after it, a wait for such an
 * event (cuStreamWaitEvent: the waiting stream's later work sees it
 * done), cuMemFree or the stream's destruction. So a stream that reads
 * the work's result without waiting for it reads it not yet written, as
 * on a GPU. 0, or -1 for a stream that is not live or no memory. */
__attribute__((visibility("default"))) int
fake_cuda_enqueue(CUstream s, void (*run)(void *), void *arg) {
  fake_stream *f = stream_of(s);
  if (!f)
    return -1;
  if (f->id == 1) {
    run(arg);
    return 0;
  }
  stream_queue *q = &queues[f->id - 1];
  if (q->queued - q->base == q->cap) {
    long cap = q->cap ? 2 * q->cap : 16;
    deferred *grown = realloc(q->w, sizeof *grown * (size_t)cap);
    if (!grown)
      return -1;
    q->w = grown;
    q->cap = cap;
  }
  q->w[q->queued++ - q->base] = (deferred){run, arg};
  return 0;
}

/* Copies check that device ends are device pointers, on a live stream. */
static CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src,
                                       size_t n, CUstream s) {
  STICKY();
  if (!stream_of(s))
    return CUDA_ERROR_INVALID_VALUE;
  drain(stream_of(s)->id, LONG_MAX);
  if (!(dst & FAKE_DEVICE_BIT) || (n && !ptx_memory_host(dst, n)))
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(host_of(dst), src, n);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n,
                                       CUstream s) {
  STICKY();
  if (!stream_of(s))
    return CUDA_ERROR_INVALID_VALUE;
  drain(stream_of(s)->id, LONG_MAX);
  if (!(src & FAKE_DEVICE_BIT) || (n && !ptx_memory_host(src, n)))
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, host_of(src), n);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src,
                                       size_t n, CUstream s) {
  STICKY();
  if (!stream_of(s))
    return CUDA_ERROR_INVALID_VALUE;
  drain(stream_of(s)->id, LONG_MAX);
  if (!(dst & FAKE_DEVICE_BIT) || !(src & FAKE_DEVICE_BIT) ||
      (n && (!ptx_memory_host(dst, n) || !ptx_memory_host(src, n))))
    return CUDA_ERROR_INVALID_VALUE;
  memmove(host_of(dst), host_of(src), n);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n,
                                     CUstream s) {
  STICKY();
  if (!stream_of(s))
    return CUDA_ERROR_INVALID_VALUE;
  drain(stream_of(s)->id, LONG_MAX);
  if (!(p & FAKE_DEVICE_BIT) || (n && !ptx_memory_host(p, n)))
    return CUDA_ERROR_INVALID_VALUE;
  memset(host_of(p), v, n);
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamCreate(CUstream *s, unsigned int flags) {
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)
    return CUDA_ERROR_INVALID_VALUE;
  if (nstreams == MAX_STREAMS)
    return CUDA_ERROR_OUT_OF_MEMORY;
  fake_stream *f = &streams[nstreams++];
  *f = (fake_stream){FAKE_STREAM_LIVE, nstreams};
  *s = (CUstream)f;
  fake_log("RAF_FAKE_CUDA_STREAM_LOG", "create stream=%d", f->id);
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamDestroy(CUstream s) {
  fake_stream *f = stream_of(s);
  if (!f)
    return CUDA_ERROR_INVALID_VALUE;
  drain(f->id, LONG_MAX); /* the driver lets queued work finish */
  f->magic = FAKE_STREAM_DEAD;
  fake_log("RAF_FAKE_CUDA_STREAM_LOG", "destroy stream=%d", f->id);
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamSynchronize(CUstream s) {
  STICKY();
  fake_stream *f = stream_of(s);
  if (!f)
    return CUDA_ERROR_INVALID_VALUE;
  drain(f->id, LONG_MAX);
  queued = false;
  return CUDA_SUCCESS;
}

/* Runs what e's record waits for, which gives the record its time. */
static void complete(fake_event *t) {
  if (t->ns == -2)
    drain(t->stream, t->pos);
}

/* Takes pending event t off its stream's list. */
static void unlist(fake_event *t) {
  if (t->ns != -2)
    return;
  for (fake_event **link = &queues[t->stream - 1].pending; *link;
       link = &(*link)->next_pending)
    if (*link == t) {
      *link = t->next_pending;
      return;
    }
}

static CUresult fake_cuEventCreate(CUevent *e, unsigned int flags) {
  (void)flags;
  fake_event *t = malloc(sizeof *t);
  if (!t)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *t = (fake_event){-1, 0, 0, NULL};
  *e = (CUevent)t;
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventRecord(CUevent e, CUstream s) {
  fake_stream *f = stream_of(s);
  if (!e || !f)
    return CUDA_ERROR_INVALID_VALUE;
  stream_queue *q = &queues[f->id - 1];
  fake_event *t = (fake_event *)e;
  unlist(t);
  *t = (fake_event){now_ns(), f->id, q->queued, NULL};
  if (q->done < q->queued) {
    t->ns = -2;
    t->next_pending = q->pending;
    q->pending = t;
  }
  fake_log("RAF_FAKE_CUDA_STREAM_LOG", "record stream=%d", f->id);
  return CUDA_SUCCESS;
}

/* The work is done already; what is checked is the call. A real driver
 * lets a wait for an event never recorded pass at once; here it is
 * refused, since raf always records first and such a wait would order
 * nothing. */
static CUresult fake_cuStreamWaitEvent(CUstream s, CUevent e,
                                       unsigned int flags) {
  STICKY();
  fake_stream *f = stream_of(s);
  fake_event *t = (fake_event *)e;
  if (!f || !t || flags != CU_EVENT_WAIT_DEFAULT || t->ns == -1)
    return CUDA_ERROR_INVALID_VALUE;
  /* s's later work runs on the host right after this call: what it
   * waits for runs now. */
  complete(t);
  fake_log("RAF_FAKE_CUDA_STREAM_LOG", "wait stream=%d for=%d", f->id,
           t->stream);
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventSynchronize(CUevent e) {
  STICKY();
  queued = false;
  complete((fake_event *)e);
  return ((fake_event *)e)->ns >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Done once recorded: a query runs the deferred work before the record
 * (the fake has no other time to run it). */
static CUresult fake_cuEventQuery(CUevent e) {
  STICKY();
  if (!e)
    return CUDA_ERROR_INVALID_VALUE;
  complete((fake_event *)e);
  return ((fake_event *)e)->ns >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  complete((fake_event *)a);
  complete((fake_event *)b);
  int64_t t0 = ((fake_event *)a)->ns, t1 = ((fake_event *)b)->ns;
  if (t0 < 0 || t1 < 0)
    return CUDA_ERROR_INVALID_VALUE;
  *ms = (float)((double)(t1 - t0) * 1e-6);
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventDestroy(CUevent e) {
  if (e)
    unlist((fake_event *)e);
  free(e);
  return CUDA_SUCCESS;
}

/* A function is a kernel of a loaded module, in a fixed table so that
 * unloading its module makes a later launch of it fail. */
typedef struct fake_function {
  ptx_module *module;
  ptx_kernel *kernel;
} fake_function;

static fake_function functions[4096];
static int nfunctions;

/* Copies msg into the JIT's error log buffer of the options, if given. */
static void jit_error(unsigned n, const CUjit_option *o, void **v,
                      const char *msg) {
  char *buf = NULL;
  size_t size = 0;
  for (unsigned i = 0; i < n; i++)
    if (o[i] == CU_JIT_ERROR_LOG_BUFFER)
      buf = v[i];
    else if (o[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      size = (size_t)(uintptr_t)v[i];
  if (buf && size)
    snprintf(buf, size, "%s", msg);
}

static CUresult cuda_error(ptx_status st) {
  switch (st) {
  case PTX_OK: return CUDA_SUCCESS;
  case PTX_INVALID_PTX: return CUDA_ERROR_INVALID_PTX;
  case PTX_UNSUPPORTED_VERSION: return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  case PTX_NO_BINARY: return CUDA_ERROR_NO_BINARY_FOR_GPU;
  case PTX_INVALID_VALUE: return CUDA_ERROR_INVALID_VALUE;
  case PTX_OUT_OF_MEMORY: return CUDA_ERROR_OUT_OF_MEMORY;
  case PTX_ILLEGAL_ADDRESS: return CUDA_ERROR_ILLEGAL_ADDRESS;
  case PTX_MISALIGNED_ADDRESS: return CUDA_ERROR_MISALIGNED_ADDRESS;
  case PTX_DEADLOCK: case PTX_TOO_MANY_INSNS: return CUDA_ERROR_LAUNCH_TIMEOUT;
  default: return CUDA_ERROR_LAUNCH_FAILED;
  }
}

/* Parses and checks PTX as the driver's JIT does; the caller owns *m. */
static CUresult compile(const char *ptx, unsigned n, const CUjit_option *o,
                        void **v, ptx_module **m) {
  if (getenv("RAF_FAKE_CUDA_REJECT")) {
    jit_error(n, o, v, "ptxas fatal   : the fake driver rejects every PTX");
    return CUDA_ERROR_INVALID_PTX;
  }
  ptx_device dev = {driver_version(), 9, 0};
  const char *cc = getenv("RAF_FAKE_CUDA_CC");
  if (cc && *cc && sscanf(cc, "%d.%d", &dev.cc_major, &dev.cc_minor) != 2)
    return CUDA_ERROR_INVALID_VALUE;
  char log[1024];
  ptx_status st = ptx_module_load(ptx, &dev, m, log, sizeof log);
  if (st != PTX_OK)
    jit_error(n, o, v, log);
  return cuda_error(st);
}

static CUresult fake_cuModuleLoadDataEx(CUmodule *m, const void *image,
                                        unsigned int n, CUjit_option *o,
                                        void **v) {
  STICKY();
  ptx_module *pm;
  CUresult r = compile(image, n, o, v, &pm);
  if (r != CUDA_SUCCESS)
    return r;
  char names[1024];
  ptx_module_kernel_names(pm, names, sizeof names);
  fake_log("RAF_FAKE_CUDA_LOG", "load %s", names);
  *m = (CUmodule)pm;
  return CUDA_SUCCESS;
}

static CUresult fake_cuModuleGetFunction(CUfunction *f, CUmodule m,
                                         const char *name) {
  STICKY();
  ptx_kernel *k = ptx_module_kernel((ptx_module *)m, name);
  if (!k)
    return CUDA_ERROR_NOT_FOUND;
  for (int i = 0; i < nfunctions; i++)
    if (functions[i].kernel == k) {
      *f = (CUfunction)&functions[i];
      return CUDA_SUCCESS;
    }
  if (nfunctions == (int)(sizeof functions / sizeof functions[0]))
    return CUDA_ERROR_OUT_OF_MEMORY;
  functions[nfunctions] = (fake_function){(ptx_module *)m, k};
  *f = (CUfunction)&functions[nfunctions++];
  return CUDA_SUCCESS;
}

static CUresult fake_cuModuleUnload(CUmodule m) {
  for (int i = 0; i < nfunctions; i++)
    if (functions[i].module == (ptx_module *)m)
      functions[i] = (fake_function){NULL, NULL}; /* a launch is refused */
  ptx_module_free((ptx_module *)m);
  return CUDA_SUCCESS;
}

/* The launch's line of the log: each parameter its .entry declares (the
 * first 16): a 64-bit one as "ptr" when it is a device pointer, else its
 * value (a size; a host pointer would be a huge number), 32-bit ones by
 * value, a struct as "struct". */
static void log_launch(const ptx_kernel *k, const unsigned g[3],
                       const unsigned b[3], unsigned shared, void **params) {
  char vals[512] = "";
  int np = ptx_kernel_param_count(k);
  for (int i = 0; i < np && i < 16; i++) {
    size_t len = strlen(vals);
    char t = ptx_kernel_param_kind(k, i);
    const char *sep = i ? "," : "";
    if (t == 'p') {
      uint64_t v = *(const uint64_t *)params[i];
      if (v & FAKE_DEVICE_BIT)
        snprintf(vals + len, sizeof vals - len, "%sptr", sep);
      else
        snprintf(vals + len, sizeof vals - len, "%s%llu", sep,
                 (unsigned long long)v);
    } else if (t == 'd') {
      snprintf(vals + len, sizeof vals - len, "%s%g", sep,
               *(const double *)params[i]);
    } else if (t == 's') {
      snprintf(vals + len, sizeof vals - len, "%sstruct", sep);
    } else if (t == 'f') {
      snprintf(vals + len, sizeof vals - len, "%s%g", sep,
               (double)*(const float *)params[i]);
    } else {
      snprintf(vals + len, sizeof vals - len, "%s%d", sep,
               *(const int *)params[i]);
    }
  }
  fake_log("RAF_FAKE_CUDA_LOG",
           "launch %s grid=%u,%u,%u block=%u,%u,%u shared=%u params=%s",
           ptx_kernel_name(k), g[0], g[1], g[2], b[0], b[1], b[2], shared,
           vals);
}

/* Runs the kernel in the interpreter, to the end, before returning: the
 * stream's order is kept since everything else is synchronous too. A
 * fault becomes the sticky error. */
static CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                                    unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream s,
                                    void **params, void **extra) {
  STICKY();
  const fake_function *ff = (const fake_function *)f;
  if (!ff || !ff->kernel || !stream_of(s) || extra)
    return CUDA_ERROR_INVALID_VALUE;
  drain(stream_of(s)->id, LONG_MAX);
  int np = ptx_kernel_param_count(ff->kernel);
  for (int i = 0; i < np; i++)
    if (!params || !params[i])
      return CUDA_ERROR_INVALID_VALUE;
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  log_launch(ff->kernel, g, b, shared, params);
  const char *require = getenv("RAF_FAKE_CUDA_REQUIRE_MAXNTID");
  if (require && *require == '1' && !ptx_kernel_max_threads(ff->kernel)) {
    fprintf(stderr, "fake cuda: kernel %s declares no .maxntid\n",
            ptx_kernel_name(ff->kernel));
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char *max = getenv("RAF_FAKE_CUDA_MAX_INSNS");
  ptx_launch l = {{gx, gy, gz}, {bx, by, bz}, shared, params,
                  max && *max ? strtoull(max, NULL, 10) : 0};
  char report[1024];
  uint64_t insns;
  int64_t t0 = now_ns();
  ptx_status st = ptx_kernel_run(ff->kernel, &l, report, sizeof report,
                                 &insns);
  fake_log("RAF_FAKE_CUDA_STATS", "insns %s %llu ns %lld",
           ptx_kernel_name(ff->kernel), (unsigned long long)insns,
           (long long)(now_ns() - t0));
  if (st == PTX_INVALID_VALUE || st == PTX_OUT_OF_MEMORY) {
    fprintf(stderr, "fake cuda: %s\n", report);
    return cuda_error(st); /* refused at once, as a bad launch is */
  }
  queued = true;
  if (st != PTX_OK) {
    fprintf(stderr, "fake cuda: %s\n", report);
    fake_log("RAF_FAKE_CUDA_LOG", "fault %s", report);
    sticky = cuda_error(st);
  }
  return CUDA_SUCCESS;
}

/* The linker's "cubin" is the PTX itself (which the fake's module load
 * takes), checked as it is added: a link state holds a copy of the data
 * added; cuLinkComplete logs "link NAME". */
typedef struct fake_link {
  char *data;
  size_t size;
  char name[128];
  unsigned nopts; /* cuLinkCreate's options: where the JIT log goes */
  CUjit_option opts[8];
  void *values[8];
} fake_link;

static CUresult fake_cuLinkCreate(unsigned int n, CUjit_option *o, void **v,
                                  CUlinkState *state) {
  STICKY();
  fake_link *l = calloc(1, sizeof *l);
  if (!l)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (unsigned i = 0; i < n && i < 8; i++) {
    l->opts[i] = o[i];
    l->values[i] = v[i];
  }
  l->nopts = n < 8 ? n : 8;
  *state = (CUlinkState)l;
  return CUDA_SUCCESS;
}

static CUresult fake_cuLinkAddData(CUlinkState state, CUjitInputType type,
                                   void *data, size_t size, const char *name,
                                   unsigned int n, CUjit_option *o, void **v) {
  fake_link *l = (fake_link *)state;
  if (type != CU_JIT_INPUT_PTX || l->data)
    return CUDA_ERROR_NOT_SUPPORTED;
  (void)n, (void)o, (void)v;
  if (!(l->data = malloc(size + 1)))
    return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(l->data, data, size);
  l->data[size] = '\0';
  l->size = size;
  ptx_module *m;
  CUresult r = compile(l->data, l->nopts, l->opts, l->values, &m);
  if (r != CUDA_SUCCESS) {
    free(l->data);
    l->data = NULL;
    return r;
  }
  ptx_module_free(m);
  snprintf(l->name, sizeof l->name, "%s", name ? name : "");
  return CUDA_SUCCESS;
}

static CUresult fake_cuLinkComplete(CUlinkState state, void **cubin,
                                    size_t *size) {
  fake_link *l = (fake_link *)state;
  if (!l->data)
    return CUDA_ERROR_INVALID_VALUE;
  fake_log("RAF_FAKE_CUDA_LOG", "link %s", l->name);
  *cubin = l->data;
  *size = l->size;
  return CUDA_SUCCESS;
}

static CUresult fake_cuLinkDestroy(CUlinkState state) {
  fake_link *l = (fake_link *)state;
  free(l->data);
  free(l);
  return CUDA_SUCCESS;
}

static const struct {
  const char *name;
  void (*fn)(void);
} entries[] = {
#define E(name) {#name, (void (*)(void))fake_##name}
    E(cuGetErrorString), E(cuGetErrorName), E(cuInit),
    E(cuDriverGetVersion), E(cuDeviceGetCount), E(cuDeviceGet),
    E(cuDeviceGetName), E(cuDeviceGetAttribute), E(cuDeviceTotalMem),
    E(cuDevicePrimaryCtxRetain), E(cuDevicePrimaryCtxRelease),
    E(cuCtxSetCurrent), E(cuMemAlloc), E(cuMemFree), E(cuMemcpyHtoDAsync),
    E(cuMemcpyDtoHAsync), E(cuMemcpyDtoDAsync), E(cuMemsetD8Async),
    E(cuStreamCreate), E(cuStreamDestroy), E(cuStreamSynchronize),
    E(cuStreamWaitEvent), E(cuEventQuery),
    E(cuEventCreate), E(cuEventRecord), E(cuEventSynchronize),
    E(cuEventElapsedTime), E(cuEventDestroy), E(cuModuleLoadDataEx),
    E(cuModuleGetFunction), E(cuModuleUnload), E(cuLaunchKernel),
    E(cuLinkCreate), E(cuLinkAddData), E(cuLinkComplete), E(cuLinkDestroy),
#undef E
};

/* As the driver: a version above its own is CUDA_ERROR_INVALID_VALUE; an
 * unknown symbol is success with a NULL function. */
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn,
                                     int version, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *status) {
  (void)flags;
  *pfn = NULL;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (version > driver_version())
    return CUDA_ERROR_INVALID_VALUE;
  const char *missing = getenv("RAF_FAKE_CUDA_MISSING");
  if (missing && strcmp(missing, symbol) == 0)
    return CUDA_SUCCESS;
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(entries[i].name, symbol) == 0) {
      memcpy(pfn, &entries[i].fn, sizeof *pfn);
      if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  return CUDA_SUCCESS;
}
