/* launch.c: a kernel launch, CTA by CTA, and the waits between threads.
 *
 * Each CTA's threads run in turn, each as far as it can (exec.c). When
 * none can go on, the waits are looked at: a barrier completes when every
 * thread it counts has arrived (a thread that exited counts as arrived,
 * as on the hardware), a warp collective when every lane of its member
 * mask waits at one of the same kind with the same mask. If nothing
 * completes and some thread still waits, the CTA is deadlocked, and the
 * launch fails saying who waits where, where a GPU would hang.
 *
 * The barrier intervals that the race check of memory.c compares are the
 * CTA's barrier completions: a thread released by one takes its number.
 */
#include "run.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ptx_fault(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
              ptx_status st, const char *fmt, ...) {
  if (cta->status != PTX_OK)
    return PTX_FAULTED;
  cta->status = st;
  if (!cta->report || !cta->report_size)
    return PTX_FAULTED;
  int n = snprintf(cta->report, cta->report_size,
                   "kernel %s, block (%u,%u,%u), thread (%u,%u,%u): ",
                   cta->kernel->name, cta->ctaid[0], cta->ctaid[1],
                   cta->ctaid[2], t->tid[0], t->tid[1], t->tid[2]);
  if (n < 0 || (size_t)n >= cta->report_size)
    return PTX_FAULTED;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(cta->report + n, cta->report_size - (size_t)n, fmt, ap);
  va_end(ap);
  if (m >= 0 && (size_t)(n + m) < cta->report_size && in)
    snprintf(cta->report + n + m, cta->report_size - (size_t)(n + m),
             " (PTX line %u)", in->line);
  return PTX_FAULTED;
}

static uint32_t generation; /* barrier completions, for the race check */

/* Whether a barrier instruction names a thread count (bar.sync a, b;
 * bar.red's predicate comes after it). */
static bool counted(const ptx_insn *in) {
  return in->nsrc > 1 + !!(in->flags & PTX_F_RED);
}

static unsigned bar_expected(const ptx_cta *cta, const ptx_thread *t) {
  return counted(t->wait) ? (unsigned)t->wait_b : cta->nthreads;
}

/* bar.red: the threads a barrier releases get the reduction of their
 * predicates (popc: how many are true; and, or). */
static void reduce_at_barrier(ptx_cta *cta, unsigned id) {
  uint64_t n = 0, all = 0;
  for (unsigned i = 0; i < cta->nthreads; i++) {
    ptx_thread *t = &cta->threads[i];
    if (t->state == PTX_AT_BARRIER && t->wait_a == id &&
        (t->wait->flags & PTX_F_RED)) {
      n += t->wait_c;
      all++;
    }
  }
  for (unsigned i = 0; i < cta->nthreads; i++) {
    ptx_thread *t = &cta->threads[i];
    const ptx_insn *in = t->wait;
    if (t->state != PTX_AT_BARRIER || t->wait_a != id ||
        !(in->flags & PTX_F_RED))
      continue;
    t->frames[t->depth].regs[in->dst[0]] = in->sub == PTX_BARRED_POPC ? n
                                           : in->sub == PTX_BARRED_AND
                                               ? n == all
                                               : n != 0;
  }
}

/* Completes the barriers that everyone they count has reached. */
static bool release_barriers(ptx_cta *cta, unsigned exited) {
  bool progress = false;
  for (unsigned id = 0; id < 16; id++) {
    unsigned arrived = 0, expected = 0;
    bool whole = false;
    for (unsigned i = 0; i < cta->nthreads; i++) {
      ptx_thread *t = &cta->threads[i];
      if (t->state != PTX_AT_BARRIER || t->wait_a != id)
        continue;
      arrived++;
      expected = bar_expected(cta, t);
      whole = !counted(t->wait);
    }
    if (!arrived)
      continue;
    arrived += cta->arrivals[id]; /* bar.arrive: counted, not waiting */
    /* Exited threads count for a barrier of the whole CTA (no thread
     * count: __syncthreads after an early return). A counted barrier
     * waits for its count: threads that bar.arrive and then exit were
     * counted by their bar.arrive, and counting them again released it
     * before its last waiters came. */
    if (whole)
      arrived += exited;
    if (arrived < expected)
      continue;
    generation++;
    cta->arrivals[id] = 0;
    reduce_at_barrier(cta, id);
    for (unsigned i = 0; i < cta->nthreads; i++) {
      ptx_thread *t = &cta->threads[i];
      if (t->state == PTX_AT_BARRIER && t->wait_a == id) {
        t->state = PTX_READY;
        t->epoch = generation;
      }
    }
    progress = true;
  }
  return progress;
}

static void shuffle(ptx_cta *cta, ptx_thread **lanes, uint32_t mask,
                    const ptx_insn *in, bool *bad) {
  for (unsigned i = 0; i < 32 && !*bad; i++) {
    if (!(mask >> i & 1))
      continue;
    ptx_thread *t = lanes[i];
    uint32_t b = (uint32_t)t->wait_b & 31, c = (uint32_t)t->wait_c;
    int seg = (int)(c >> 8 & 31), cval = (int)(c & 31), lane = (int)i;
    int max_lane = (lane & seg) | (cval & ~seg), min_lane = lane & seg;
    int j;
    bool p;
    switch (in->sub) {
    case PTX_SHFL_UP: j = lane - (int)b; p = j >= max_lane; break;
    case PTX_SHFL_DOWN: j = lane + (int)b; p = j <= max_lane; break;
    case PTX_SHFL_BFLY: j = lane ^ (int)b; p = j <= max_lane; break;
    default: j = min_lane | ((int)b & ~seg); p = j <= max_lane; break;
    }
    if (!p)
      j = lane;
    if (j < 0 || j > 31 || !(mask >> j & 1)) {
      ptx_fault(cta, t, t->wait, PTX_LAUNCH_FAILED,
                "shfl.sync reads lane %d, outside its member mask 0x%08x", j,
                mask);
      *bad = true;
      return;
    }
    uint64_t *r = t->frames[t->depth].regs;
    r[in->dst[0]] = lanes[j]->wait_a & 0xffffffffu;
    if (in->dst[1] >= 0)
      r[in->dst[1]] = p;
  }
}

static void vote(ptx_thread **lanes, uint32_t mask, const ptx_insn *in) {
  uint32_t ballot = 0;
  for (unsigned i = 0; i < 32; i++)
    if ((mask >> i & 1) && lanes[i]->wait_a)
      ballot |= 1u << i;
  uint64_t v = in->sub == PTX_VOTE_ALL ? ballot == mask
               : in->sub == PTX_VOTE_ANY ? ballot != 0
               : in->sub == PTX_VOTE_UNI ? (ballot == 0 || ballot == mask)
                                         : ballot;
  for (unsigned i = 0; i < 32; i++)
    if (mask >> i & 1)
      lanes[i]->frames[lanes[i]->depth].regs[in->dst[0]] = v;
}

/* Completes the warp collectives whose member masks have all arrived. */
static bool release_warps(ptx_cta *cta) {
  bool progress = false;
  for (unsigned w = 0; w * 32 < cta->nthreads; w++) {
    ptx_thread *lanes[32] = {0};
    for (unsigned i = 0; i < 32 && w * 32 + i < cta->nthreads; i++)
      lanes[i] = &cta->threads[w * 32 + i];
    for (unsigned i = 0; i < 32; i++) {
      ptx_thread *t = lanes[i];
      if (!t || t->state != PTX_AT_WARP)
        continue;
      uint32_t mask = (uint32_t)t->wait_mask;
      const ptx_insn *in = t->wait;
      if (!(mask >> i & 1)) {
        ptx_fault(cta, t, in, PTX_LAUNCH_FAILED,
                  "its member mask 0x%08x leaves out its own lane %u", mask, i);
        return false;
      }
      bool ready = true;
      for (unsigned j = 0; j < 32 && ready; j++) {
        if (!(mask >> j & 1))
          continue;
        ptx_thread *o = lanes[j];
        if (!o || o->state == PTX_EXITED) {
          ptx_fault(cta, t, in, PTX_DEADLOCK,
                    "%s's member mask 0x%08x names lane %u, which %s",
                    in->op == PTX_OP_SHFL ? "shfl.sync"
                    : in->op == PTX_OP_VOTE ? "vote.sync" : "bar.warp.sync",
                    mask, j, o ? "has exited" : "does not exist");
          return false;
        }
        ready = o->state == PTX_AT_WARP && o->wait->op == in->op &&
                o->wait->sub == in->sub && (uint32_t)o->wait_mask == mask;
      }
      if (!ready)
        continue;
      bool bad = false;
      if (in->op == PTX_OP_SHFL)
        shuffle(cta, lanes, mask, in, &bad);
      else if (in->op == PTX_OP_VOTE)
        vote(lanes, mask, in);
      if (bad)
        return false;
      /* bar.warp.sync orders the lanes' memory accesses: a barrier
       * interval of their own for the race check (which then misses a
       * race of theirs with another warp's access in the old interval) */
      if (in->op == PTX_OP_BARWARP)
        generation++;
      for (unsigned j = 0; j < 32; j++)
        if (mask >> j & 1) {
          lanes[j]->state = PTX_READY;
          if (in->op == PTX_OP_BARWARP)
            lanes[j]->epoch = generation;
        }
      progress = true;
    }
  }
  return progress;
}

static void report_deadlock(ptx_cta *cta, unsigned exited) {
  for (unsigned i = 0; i < cta->nthreads; i++) {
    ptx_thread *t = &cta->threads[i];
    if (t->state == PTX_AT_BARRIER) {
      unsigned at = 0;
      for (unsigned j = 0; j < cta->nthreads; j++)
        at += cta->threads[j].state == PTX_AT_BARRIER &&
              cta->threads[j].wait_a == t->wait_a;
      ptx_fault(cta, t, t->wait, PTX_DEADLOCK,
                "deadlock: barrier %llu waits for %u threads; %u arrived, "
                "%u exited, %u wait elsewhere",
                (unsigned long long)t->wait_a, bar_expected(cta, t), at,
                exited, cta->nthreads - at - exited);
      return;
    }
    if (t->state == PTX_AT_WARP) {
      ptx_fault(cta, t, t->wait, PTX_DEADLOCK,
                "deadlock: a warp collective with member mask 0x%08x whose "
                "lanes wait elsewhere",
                (unsigned)t->wait_mask);
      return;
    }
  }
}

static ptx_status run_cta(ptx_cta *cta) {
  for (;;) {
    for (unsigned i = 0; i < cta->nthreads; i++) {
      ptx_thread *t = &cta->threads[i];
      if (t->state == PTX_READY)
        t->state = ptx_thread_run(cta, t);
      if (cta->status != PTX_OK)
        return cta->status;
    }
    unsigned exited = 0;
    for (unsigned i = 0; i < cta->nthreads; i++)
      exited += cta->threads[i].state == PTX_EXITED;
    if (exited == cta->nthreads)
      return PTX_OK;
    bool progress = release_barriers(cta, exited);
    progress |= release_warps(cta);
    if (cta->status != PTX_OK)
      return cta->status;
    if (!progress) {
      report_deadlock(cta, exited);
      return cta->status;
    }
  }
}

static ptx_status check_geometry(const ptx_function *fn, const ptx_launch *l,
                                 char *report, size_t size) {
  unsigned long long n =
      (unsigned long long)l->block[0] * l->block[1] * l->block[2];
  const unsigned *m = fn->maxntid, *q = fn->reqntid;
  const char *why = NULL;
  if (!n || !l->grid[0] || !l->grid[1] || !l->grid[2])
    why = "an empty grid or block";
  else if (n > 1024 || l->block[2] > 64)
    why = "a block of more than 1024 threads (or 64 in z)";
  else if (l->grid[1] > 65535 || l->grid[2] > 65535)
    why = "a grid of more than 65535 in y or z";
  else if (m[0] && n > (unsigned long long)m[0] * m[1] * m[2])
    why = "a block larger than the kernel's .maxntid";
  else if (q[0] && (l->block[0] != q[0] || l->block[1] != q[1] ||
                    l->block[2] != q[2]))
    why = "a block other than the kernel's .reqntid";
  if (!why)
    return PTX_OK;
  snprintf(report, size, "kernel %s: launch of block (%u,%u,%u): %s",
           fn->name, l->block[0], l->block[1], l->block[2], why);
  return PTX_INVALID_VALUE;
}

ptx_status ptx_kernel_run(ptx_kernel *k, const ptx_launch *l, char *report,
                          size_t report_size, uint64_t *insns) {
  const ptx_function *fn = k->fn;
  const ptx_module *m = fn->module;
  if (report && report_size)
    report[0] = '\0';
  if (insns)
    *insns = 0;
  ptx_status st = check_geometry(fn, l, report, report_size);
  if (st != PTX_OK)
    return st;
  ptx_cta cta = {.kernel = fn, .launch = l, .report = report,
                 .report_size = report_size, .max_insns = l->max_insns};
  cta.nthreads = l->block[0] * l->block[1] * l->block[2];
  uint32_t dyn_at = m->static_shared;
  for (int i = 0; i < m->nvars; i++)
    if (m->vars[i].space == PTX_SHARED && m->vars[i].size == 0)
      dyn_at = (uint32_t)m->vars[i].address;
  cta.shared_size = (l->dynamic_shared ? dyn_at : m->static_shared) +
                    l->dynamic_shared;
  if (cta.shared_size > 227 * 1024) {
    snprintf(report, report_size,
             "kernel %s: %u bytes of shared memory, more than a CTA has",
             fn->name, cta.shared_size);
    return PTX_INVALID_VALUE;
  }
  unsigned char *kparams = calloc(fn->param_size + 1, 1);
  cta.threads = calloc(cta.nthreads, sizeof *cta.threads);
  cta.shared = calloc(cta.shared_size + 1, 1);
  cta.shadow = malloc((cta.shared_size + 1) * sizeof *cta.shadow);
  /* frame 0's registers, every thread's, reused by each CTA */
  uint64_t *regs = malloc((size_t)cta.nthreads * ((size_t)fn->nregs + 1) *
                          sizeof *regs);
  if (!kparams || !cta.threads || !cta.shared || !cta.shadow || !regs) {
    st = PTX_OUT_OF_MEMORY;
    goto done;
  }
  for (int i = 0; i < fn->nparams; i++)
    memcpy(kparams + fn->params[i].offset, l->params[i], fn->params[i].size);
  cta.kparams = kparams;
  cta.kparam_size = fn->param_size;
  for (unsigned z = 0; z < l->grid[2] && st == PTX_OK; z++)
    for (unsigned y = 0; y < l->grid[1] && st == PTX_OK; y++)
      for (unsigned x = 0; x < l->grid[0] && st == PTX_OK; x++) {
        cta.ctaid[0] = x, cta.ctaid[1] = y, cta.ctaid[2] = z;
        memset(cta.shared, 0, cta.shared_size);
        memset(cta.arrivals, 0, sizeof cta.arrivals);
        for (uint32_t i = 0; i < cta.shared_size; i++)
          cta.shadow[i] = (ptx_shadow){PTX_NOBODY, PTX_NOBODY, 0, 0};
        generation++;
        for (unsigned i = 0; i < cta.nthreads && st == PTX_OK; i++) {
          ptx_thread *t = &cta.threads[i];
          unsigned char *local = t->local;
          uint32_t cap = t->local_cap;
          memset(t, 0, sizeof *t);
          t->local = local;
          t->local_cap = cap;
          t->tid[0] = i % l->block[0];
          t->tid[1] = i / l->block[0] % l->block[1];
          t->tid[2] = i / (l->block[0] * l->block[1]);
          t->linear = i;
          t->lane = i % 32;
          t->warp = i / 32;
          t->epoch = generation;
          t->state = PTX_READY;
          st = ptx_frame_start(&cta, t, &t->frames[0], fn,
                               regs + (size_t)i * ((size_t)fn->nregs + 1));
        }
        if (st == PTX_OK)
          st = run_cta(&cta);
        /* frames of threads that did not exit (a fault) */
        for (unsigned i = 0; i < cta.nthreads; i++) {
          ptx_thread *t = &cta.threads[i];
          if (t->state == PTX_EXITED)
            continue;
          for (int d = t->depth; d >= 0; d--) {
            if (t->frames[d].own_regs)
              free(t->frames[d].regs);
            free(t->frames[d].params);
            t->frames[d].regs = NULL;
            t->frames[d].params = NULL;
          }
        }
      }
done:
  if (insns)
    *insns = cta.insns;
  if (cta.threads)
    for (unsigned i = 0; i < cta.nthreads; i++)
      free(cta.threads[i].local);
  free(cta.threads);
  free(cta.shared);
  free(cta.shadow);
  free(regs);
  free(kparams);
  return st;
}
