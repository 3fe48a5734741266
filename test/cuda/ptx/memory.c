/* memory.c: where a kernel's addresses point, and the checks a GPU does
 * not make.
 *
 * Global memory is what the fake driver allocated: a map of regions,
 * registered by cuMemAlloc (ptx_memory_add) and sorted by address, so an
 * access outside every region, or straddling two, is an illegal address
 * as soon as it happens, not a silent corruption of the host's heap. A
 * thread remembers the region of its last access, which is almost always
 * the region of its next.
 *
 * Shared memory is the CTA's, with a shadow per byte: who wrote it last
 * and who read it, in which barrier interval. A read of a byte nobody
 * wrote since the launch, and two threads touching the same byte in one
 * interval (one of them writing), are reported. Atomics never race.
 */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct region {
  uint64_t device;
  size_t bytes;
  unsigned char *host;
} region;

static region *regions;
static size_t nregions, regions_cap;

/* The index of the first region whose start is above p. */
static size_t upper(uint64_t p) {
  size_t lo = 0, hi = nregions;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (regions[mid].device <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

ptx_status ptx_memory_add(uint64_t device, void *host, size_t bytes) {
  if (nregions == regions_cap) {
    size_t cap = regions_cap ? regions_cap * 2 : 64;
    region *r = realloc(regions, cap * sizeof *r);
    if (!r)
      return PTX_OUT_OF_MEMORY;
    regions = r;
    regions_cap = cap;
  }
  size_t at = upper(device);
  memmove(&regions[at + 1], &regions[at], (nregions - at) * sizeof *regions);
  regions[at] = (region){device, bytes, host};
  nregions++;
  return PTX_OK;
}

ptx_status ptx_memory_remove(uint64_t device) {
  size_t at = upper(device);
  if (at == 0 || regions[at - 1].device != device)
    return PTX_INVALID_VALUE;
  memmove(&regions[at - 1], &regions[at], (nregions - at) * sizeof *regions);
  if (--nregions == 0) {
    free(regions);
    regions = NULL;
    regions_cap = 0;
  }
  return PTX_OK;
}

static const region *region_of(uint64_t p, size_t n) {
  size_t at = upper(p);
  if (at == 0)
    return NULL;
  const region *r = &regions[at - 1];
  return p - r->device + n <= r->bytes ? r : NULL;
}

void *ptx_memory_host(uint64_t p, size_t n) {
  const region *r = region_of(p, n);
  return r ? r->host + (p - r->device) : NULL;
}

static const char *space_name(int space) {
  static const char *const names[] = {"generic", "global", "shared",
                                      "local", "param", "const"};
  return names[space];
}

static void *global(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
                    int space, uint64_t a, unsigned size, bool write) {
  if (a >= t->alloc_lo && a + size <= t->alloc_hi && a + size > a)
    return (void *)(uintptr_t)(a + (uint64_t)t->alloc_delta);
  const region *r = region_of(a, size);
  if (!r) {
    ptx_fault(cta, t, in, PTX_ILLEGAL_ADDRESS,
              "out-of-bounds %s %s of %u bytes at 0x%llx (no allocation "
              "holds it)",
              space_name(space), write ? "store" : "load", size,
              (unsigned long long)a);
    return NULL;
  }
  t->alloc_lo = r->device;
  t->alloc_hi = r->device + r->bytes;
  t->alloc_delta = (int64_t)((uint64_t)(uintptr_t)r->host - r->device);
  return r->host + (a - r->device);
}

static void *shared(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
                    uint64_t a, unsigned size, bool write) {
  if (a + size > cta->shared_size || a + size < a) {
    ptx_fault(cta, t, in, PTX_ILLEGAL_ADDRESS,
              "out-of-bounds shared %s of %u bytes at offset %llu (the CTA "
              "has %u bytes of shared memory)",
              write ? "store" : "load", size, (unsigned long long)a,
              cta->shared_size);
    return NULL;
  }
  uint16_t me = (uint16_t)t->linear;
  for (unsigned i = 0; i < size; i++) {
    ptx_shadow *s = &cta->shadow[a + i];
    if (!write && s->writer == PTX_NOBODY) {
      ptx_fault(cta, t, in, PTX_LAUNCH_FAILED,
                "read of uninitialised shared memory at offset %llu (no "
                "thread wrote it since the launch)",
                (unsigned long long)(a + i));
      return NULL;
    }
    bool raced_write = s->writer != PTX_NOBODY && s->writer != me &&
                       s->writer != PTX_ATOMIC && s->write_epoch == t->epoch;
    bool raced_read = write && s->reader != PTX_NOBODY && s->reader != me &&
                      s->read_epoch == t->epoch;
    if (raced_write || raced_read) {
      unsigned other = raced_write ? s->writer : s->reader;
      char who[48];
      if (other == PTX_MANY)
        snprintf(who, sizeof who, "several threads");
      else
        snprintf(who, sizeof who, "thread (%u,%u,%u)",
                 cta->threads[other].tid[0], cta->threads[other].tid[1],
                 cta->threads[other].tid[2]);
      ptx_fault(cta, t, in, PTX_LAUNCH_FAILED,
                "data race on shared memory at offset %llu: this %s and a "
                "%s by %s with no barrier between",
                (unsigned long long)(a + i), write ? "write" : "read",
                raced_write ? "write" : "read", who);
      return NULL;
    }
    if (write) {
      s->writer = me;
      s->write_epoch = t->epoch;
    } else if (s->reader == PTX_NOBODY || s->read_epoch != t->epoch) {
      s->reader = me;
      s->read_epoch = t->epoch;
    } else if (s->reader != me) {
      s->reader = PTX_MANY;
    }
  }
  return cta->shared + a;
}

void ptx_shared_atomic(ptx_cta *cta, uint64_t a, unsigned size) {
  for (unsigned i = 0; i < size; i++)
    cta->shadow[a + i].writer = PTX_ATOMIC;
}

static void *local(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
                   uint64_t a, unsigned size, bool write) {
  if (a + size > t->local_top || a + size < a) {
    ptx_fault(cta, t, in, PTX_ILLEGAL_ADDRESS,
              "out-of-bounds local %s of %u bytes at offset %llu",
              write ? "store" : "load", size, (unsigned long long)a);
    return NULL;
  }
  return t->local + a;
}

static void *param(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
                   uint64_t a, unsigned size, bool write) {
  if (a < PTX_FRAME_PARAM) {
    if (write || a + size > cta->kparam_size) {
      ptx_fault(cta, t, in, PTX_ILLEGAL_ADDRESS,
                "%s the kernel's parameters at offset %llu",
                write ? "a store to" : "a load past",
                (unsigned long long)a);
      return NULL;
    }
    return (void *)(cta->kparams + a);
  }
  ptx_frame *f = &t->frames[t->depth];
  a -= PTX_FRAME_PARAM;
  if (a + size > f->fn->param_size) {
    ptx_fault(cta, t, in, PTX_ILLEGAL_ADDRESS,
              "out-of-bounds param access at offset %llu",
              (unsigned long long)a);
    return NULL;
  }
  return f->params + a;
}

void *ptx_address(ptx_cta *cta, ptx_thread *t, const ptx_insn *in,
                  int space, uint64_t a, unsigned size, bool write) {
  if (space == PTX_GENERIC) {
    if (a >> 63)
      space = PTX_GLOBAL;
    else if (a >= PTX_SHARED_WINDOW && a < PTX_SHARED_WINDOW + PTX_WINDOW_SIZE) {
      space = PTX_SHARED;
      a -= PTX_SHARED_WINDOW;
    } else if (a >= PTX_LOCAL_WINDOW && a < PTX_LOCAL_WINDOW + PTX_WINDOW_SIZE) {
      space = PTX_LOCAL;
      a -= PTX_LOCAL_WINDOW;
    } else {
      ptx_fault(cta, t, in, PTX_ILLEGAL_ADDRESS,
                "%s of %u bytes at 0x%llx, which is no state space's "
                "address",
                write ? "store" : "load", size, (unsigned long long)a);
      return NULL;
    }
  }
  /* Every access is aligned to its size (a vector's: the whole vector). */
  if (a % size && space != PTX_PARAM) {
    ptx_fault(cta, t, in, PTX_MISALIGNED_ADDRESS,
              "misaligned %s %s of %u bytes at %s0x%llx",
              space_name(space), write ? "store" : "load", size,
              space == PTX_GLOBAL || space == PTX_CONST ? "" : "offset ",
              (unsigned long long)a);
    return NULL;
  }
  switch (space) {
  case PTX_GLOBAL:
  case PTX_CONST:
    return global(cta, t, in, space, a, size, write);
  case PTX_SHARED:
    return shared(cta, t, in, a, size, write);
  case PTX_LOCAL:
    return local(cta, t, in, a, size, write);
  default:
    return param(cta, t, in, a, size, write);
  }
}
