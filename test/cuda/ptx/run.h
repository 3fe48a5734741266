/* run.h: a launch in progress, shared by the scheduler (launch.c), the
 * instruction semantics (exec.c) and memory (memory.c). Internal to the
 * interpreter.
 *
 * A launch runs one CTA at a time. Each thread runs (ptx_thread_run)
 * until it exits, faults, or reaches an instruction that waits for other
 * threads: a barrier (the whole CTA, or a named barrier's count) or a
 * warp collective (shfl.sync, vote.sync, bar.warp.sync: its member mask).
 * The scheduler completes those when everyone they wait for has arrived.
 */
#ifndef RAF_PTX_RUN_H
#define RAF_PTX_RUN_H

#include "ptx_internal.h"

enum ptx_thread_state {
  PTX_READY, PTX_AT_BARRIER, PTX_AT_WARP, PTX_EXITED, PTX_FAULTED
};

#define PTX_MAX_DEPTH 32

typedef struct ptx_frame {
  const ptx_function *fn;
  uint64_t *regs;
  bool own_regs;         /* not the launch's pool (a call's frame) */
  unsigned char *params; /* the frame's param area */
  uint32_t pc;
  uint32_t local_base;   /* of its .local variables in the thread's */
  const ptx_insn *call;  /* the caller's call, for the return value */
} ptx_frame;

/* Who touched a byte of shared memory last, for the race and
 * uninitialised-read checks: thread numbers, and the barrier interval
 * (epoch) of the access. */
#define PTX_NOBODY 0xffff
#define PTX_MANY 0xfffe
#define PTX_ATOMIC 0xfffd
typedef struct ptx_shadow {
  uint16_t writer, reader;
  uint32_t write_epoch, read_epoch;
} ptx_shadow;

typedef struct ptx_thread {
  unsigned tid[3];
  unsigned linear, lane, warp;
  int state;
  ptx_frame frames[PTX_MAX_DEPTH];
  int depth;
  unsigned char *local;
  uint32_t local_top, local_cap;
  uint32_t epoch;
  bool carry; /* add.cc's */
  /* where it waits: the instruction, and its operands' values */
  const ptx_insn *wait;
  uint64_t wait_a, wait_b, wait_c, wait_mask;
  /* the allocation of its last global access */
  uint64_t alloc_lo, alloc_hi;
  int64_t alloc_delta; /* host address minus device address */
} ptx_thread;

typedef struct ptx_cta {
  const ptx_function *kernel;
  const ptx_launch *launch;
  unsigned ctaid[3];
  unsigned nthreads;
  ptx_thread *threads;
  unsigned char *shared;
  uint32_t shared_size;
  ptx_shadow *shadow;
  const unsigned char *kparams;
  uint32_t kparam_size;
  uint32_t arrivals[16]; /* bar.arrive's, per barrier, not yet complete */
  uint64_t insns, max_insns;
  ptx_status status;
  char *report;
  size_t report_size;
} ptx_cta;

/* exec.c */
int ptx_thread_run(ptx_cta *cta, ptx_thread *t);
/* Starts frame `f` of t: registers (in `regs`, nregs + 1 slots, or
 * allocated when NULL), constants, special registers. */
ptx_status ptx_frame_start(ptx_cta *cta, ptx_thread *t, ptx_frame *f,
                           const ptx_function *fn, uint64_t *regs);

/* launch.c: reports a fault of thread t at instruction `in`; returns
 * PTX_FAULTED. */
int ptx_fault(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
              ptx_status st, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* memory.c: the host address of `size` bytes at address a of `space`
 * for thread t, checked (NULL after a fault). */
void *ptx_address(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
                  int space, uint64_t a, unsigned size, bool write);
/* Records an atomic access to shared memory at a (a space address). */
void ptx_shared_atomic(ptx_cta *cta, uint64_t a, unsigned size);

#endif
