/* exec.h: the executor: runs a function of a verified, dispatched module.
 *
 * raf_exec_create binds every statement of the module to the kernel of the
 * dialect its `dialect` annotation names (the dispatch pass writes them)
 * and plans each function once: a slot per value, and after each statement
 * the slots whose last use it was, which are freed there. A call then runs
 * the plan: allocate the results of a statement, run its kernel, free what
 * died. `call` statements run the callee's plan recursively, unless the
 * dispatch pass gave them a dialect that compiles the callee (the llvm
 * dialect's JIT-compiled kernels): those run that dialect's kernel.
 *
 * A function with a memory plan (the plan-memory pass; docs/Memory.md)
 * runs in one arena per call, taken whole at the call's start: its
 * statements' results are places in the arena (or in their operands'
 * buffers, or their arguments' for donated updates), and nothing is
 * allocated or freed per statement.
 *
 * Tensor memory is counted: raf_exec_peak_bytes is the most that was live
 * at once, arguments, results and arenas included.
 *
 * Device. The executor owns one device (runtime/device.h; the host unless
 * told otherwise): every tensor it allocates and every arena is that
 * device's memory, and every statement must be bound to a dialect that
 * runs there (a statement of a cpu dialect on a cuda executor is a located
 * error, never a silent run on the host). Tensor data crosses between the
 * host and the device only through raf_exec_write, raf_exec_read,
 * raf_exec_copy, raf_exec_zero and raf_exec_host_data below, which are
 * plain memcpy on the host device (docs/Device.md).
 */
#ifndef RAF_EXEC_H
#define RAF_EXEC_H

#include "runtime/kernel.h"

typedef struct raf_exec_options {
  /* The device to run on, which raf_exec_create takes over (it is closed
   * with the executor, or when raf_exec_create fails); NULL: the host. */
  raf_device *device;
  int threads;         /* 0: one per online CPU */
  bool check_numerics; /* stop at the first NaN or Inf a statement makes */
  bool profile;        /* time every kernel run (raf_exec_profile) */
  /* On a device the host does not address (a GPU): wait for the device
   * after every statement's kernel, so that a kernel that faults is named
   * (a located error at its statement) instead of surfacing at a later
   * synchronisation. Serialises the stream. RAF_CUDA_SYNC=1 in the
   * environment turns it on for every executor. */
  bool sync_each;
  /* The enabled dialects, highest first, as dispatch's option
   * ("cudnn,cublas,cuda"), which the caller keeps alive: where a dialect
   * finds at prepare that it cannot run a statement after all (a library
   * too old for it), the next of these that runs it may take it
   * (raf_exec_fallback). NULL: none may. */
  const char *dialects;
} raf_exec_options;

/* One statement's kernel time, summed over the runs since the executor
 * was made (options.profile). */
typedef struct raf_profile_entry {
  const raf_stmt *stmt;
  int64_t ns, runs;
} raf_profile_entry;

/* The statements that ran a kernel, in plan order, in a new array (*entries,
 * the caller frees it); their count, or -1 when out of memory. */
int raf_exec_profile(const raf_exec *ex, raf_profile_entry **entries);

/* An executor for m, which it borrows (m must outlive it). Reports unbound
 * statements (no dialect annotation, or a dialect with no kernel for the
 * op in this build) as located errors and returns NULL. */
raf_exec *raf_exec_create(raf_ctx *ctx, raf_module *m,
                          const raf_exec_options *opts);
void raf_exec_destroy(raf_exec *ex);
int raf_exec_threads(const raf_exec *ex);

/* A tensor of type t (uninitialised data), counted in the executor's
 * memory; NULL when out of memory (reported). Free with raf_exec_free. */
raf_tensor *raf_exec_alloc(raf_exec *ex, raf_type *t);
void raf_exec_free(raf_exec *ex, raf_tensor *t);

/* Calls f with args (f->nargs tensors of f's argument types, borrowed) and
 * stores f->nresults new tensors in results (owned by the caller, freed
 * with raf_exec_free). On error results are left NULL.
 * When f is planned, results kept in its arena share it (it is given back
 * when the last of them is freed), and a result its plan donates ({updates
 * = %a, donated}) is written into args[a] during the call and handed back
 * as a view of it, so raf_exec_donate has nothing left to copy. */
raf_status raf_exec_call(raf_exec *ex, raf_func *f, raf_tensor *const *args,
                         raf_tensor **results);
/* Copies every result that carries {updates = %arg} into that argument's
 * buffer: the in-place donation of docs/LangRef.md's training conventions. */
raf_status raf_exec_donate(raf_exec *ex, raf_func *f, raf_tensor *const *args,
                           raf_tensor *const *results);

/* The state a dialect's prepare hook made for this executor (dialects.h),
 * or NULL. */
void *raf_exec_dialect_state(const raf_exec *ex, raf_dialect d);

size_t raf_exec_live_bytes(const raf_exec *ex);
size_t raf_exec_peak_bytes(const raf_exec *ex);

/* ---- Tensor data (runtime/exec_mem.c) ------------------------------------
 * A tensor given to these lives on the host (raf_tensor.device zero: a
 * host tensor of the caller's) or on the executor's device. Copies to and
 * from the host are done when they return. Each reports its failure. */

/* The executor's device (owned by the executor). */
raf_device *raf_exec_device(const raf_exec *ex);
/* For a prepare hook: the dialect after `from` among the enabled ones
 * (options.dialects) that runs s on from's device in this build, or
 * RAF_DIALECT_COUNT when none does. */
raf_dialect raf_exec_fallback(const raf_exec *ex, const raf_stmt *s,
                              raf_dialect from);
/* Whether it runs with options.check_numerics (a dialect compiling fused
 * functions as kernels also readies their statements, for the replay). */
bool raf_exec_checks_numerics(const raf_exec *ex);
/* n bytes of host memory src into t's bytes from `offset`. */
raf_status raf_exec_write(raf_exec *ex, raf_tensor *t, size_t offset,
                          const void *src, size_t n);
/* n of t's bytes from `offset` into host memory dst. */
raf_status raf_exec_read(raf_exec *ex, const raf_tensor *t, size_t offset,
                         void *dst, size_t n);
/* src's bytes into dst, of the same size. */
raf_status raf_exec_copy(raf_exec *ex, raf_tensor *dst,
                         const raf_tensor *src);
/* n of t's bytes from `offset` set to zero. */
raf_status raf_exec_zero(raf_exec *ex, raf_tensor *t, size_t offset,
                         size_t n);
/* t's bytes where the host can read them: t->data itself when the host
 * addresses it (*staged NULL), else a copy in a new host buffer (*staged,
 * which the caller frees with free()). NULL when that fails. */
const void *raf_exec_host_data(raf_exec *ex, const raf_tensor *t,
                               void **staged);

#endif
