/* exec_internal.h: what the executor's files share (runtime/exec*.c; see
 * exec.h for what the executor promises): the plans, the executor itself,
 * and the records of the tensors it hands out.
 *   exec_mem.c   buffers and tensors: the counted memory, spare buffers
 *   exec_plan.c  planning and binding: raf_exec_create, raf_exec_destroy
 *   exec.c       running plans, --check-numerics, --profile
 * Nothing outside these files includes it.
 */
#ifndef RAF_EXEC_INTERNAL_H
#define RAF_EXEC_INTERNAL_H

#include "runtime/exec.h"

#include "ir/memplan.h"
#include "runtime/dialects.h"
#include "runtime/pool.h"

typedef struct step {
  raf_stmt *stmt;
  raf_kernel_fn kernel; /* NULL for a call that runs its callee's plan */
  const void *bound;    /* the dialect's bind hook's data */
  struct plan *callee;  /* call */
  int *in, *out, *dies; /* slots */
  int ndies;
  int64_t prof_ns, prof_runs; /* --profile: time in the kernel, and runs */
} step;

typedef struct plan {
  raf_func *func;
  int nslots;
  int nsteps; /* the statements before return */
  step *steps;
  int *returned; /* func->nresults slots */
  struct mplan *mem; /* the memory plan, when the function has one */
  struct plan *next;
} plan;

/* A planned function's places and scratch (exec_plan.c's
 * attach_memory_plan; run by exec.c's run_planned). */
typedef struct mplan {
  raf_mem_plan mp;    /* the places, by slot (a slot is a value id) */
  raf_tensor *view;   /* per slot: the record a call hands out */
  raf_tensor **slot;  /* per slot: the tensor during a call */
  raf_tensor **io;    /* a step's operands and results */
  bool *interp;       /* per step: a call run statement by statement */
  bool *skip;         /* per step: a copy in place, nothing to run */
  bool *moves;        /* per step: it has staged results to move */
} mplan;

/* A freed buffer kept for reuse, on the list of its bucket. The record
 * lives apart from the buffer, which may be device memory. */
typedef struct spare {
  void *data;
  size_t size; /* rounded */
  struct spare *next;
} spare;

enum { SPARE_BUCKETS = 64 };

struct raf_exec {
  raf_ctx *ctx;
  raf_module *m;
  raf_exec_options opts;
  raf_device *device; /* owned: every buffer is its memory */
  raf_pool *pool;
  plan *plans;
  size_t live, peak;
  spare *spares[SPARE_BUCKETS]; /* by (size / 64) % SPARE_BUCKETS */
  void *dialect_state[RAF_DIALECT_COUNT]; /* the dialect hooks' */
};

/* The arena of a planned call whose results live in it: given back when
 * the last of them is freed. */
typedef struct shared_arena {
  void *data;
  size_t bytes;
  int refs;
} shared_arena;

/* A tensor the executor hands out. A view's data belongs to something else:
 * an argument (a planned function's donated result), or a shared arena
 * (its other results), so freeing it frees the record and drops its
 * reference to the arena. */
typedef struct handed {
  raf_tensor t; /* first: a raf_tensor * is a handed * */
  bool view;
  shared_arena *owner;
} handed;

/* ---- exec_mem.c ---------------------------------------------------------- */

/* nbytes of counted memory on the executor's device (a spare buffer of
 * its rounded size, or a new one), 64-byte aligned; NULL when out of
 * memory (not reported: the caller says what it was for). */
void *exec_take_buffer(raf_exec *ex, size_t nbytes);
void exec_give_buffer(raf_exec *ex, void *data, size_t nbytes);
/* The spare buffers back to the system (raf_exec_destroy). */
void exec_free_spares(raf_exec *ex);
/* A new tensor record for data on the device that another tensor owns. */
raf_tensor *exec_view_of(raf_exec *ex, raf_type *t, void *data);
/* Copies n bytes from src (memory of kind `from`) to dst (of kind `to`)
 * through the executor's device; each kind is the host's or the device's. */
raf_status exec_copy_bytes(raf_exec *ex, void *dst, raf_device_kind to,
                           const void *src, raf_device_kind from, size_t n);

/* ---- exec_plan.c --------------------------------------------------------- */

plan *exec_find_plan(raf_exec *ex, const raf_func *f);

#endif
