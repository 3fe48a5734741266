/* exec_mem.c: the executor's memory (exec_internal.h): buffers and the
 * tensors it hands out.
 *
 * Every buffer comes from exec_take_buffer (raf_exec_alloc's tensors,
 * planned functions' arenas), which keeps the live and peak byte counts
 * that --print-memory reports. Freed buffers are kept for reuse by the
 * next request of the same rounded size (a training step asks for the
 * same sizes every step): fresh pages from the system would cost a page
 * fault per 4 KiB on every step. The spare buffers count in neither
 * figure; they go back to the system when the executor is destroyed.
 */
#include "runtime/exec_internal.h"

#include <stdlib.h>
#include <string.h>

void *exec_take_buffer(raf_exec *ex, size_t nbytes) {
  /* 64-byte alignment suits every vector unit; never a zero-size request. */
  size_t rounded = nbytes ? (nbytes + 63) & ~(size_t)63 : 64;
  void *data = NULL;
  for (spare **at = &ex->spares[rounded / 64 % SPARE_BUCKETS]; *at;
       at = &(*at)->next)
    if ((*at)->size == rounded) {
      data = *at;
      *at = (*at)->next;
      break;
    }
  if (!data)
    data = aligned_alloc(64, rounded);
  if (data) {
    ex->live += nbytes;
    if (ex->live > ex->peak)
      ex->peak = ex->live;
  }
  return data;
}

void exec_give_buffer(raf_exec *ex, void *data, size_t nbytes) {
  ex->live -= nbytes;
  /* The buffer itself holds its spare record (it is at least 64 bytes). */
  spare *sp = data;
  sp->size = nbytes ? (nbytes + 63) & ~(size_t)63 : 64;
  sp->next = ex->spares[sp->size / 64 % SPARE_BUCKETS];
  ex->spares[sp->size / 64 % SPARE_BUCKETS] = sp;
}

raf_tensor *raf_exec_alloc(raf_exec *ex, raf_type *t) {
  handed *x = malloc(sizeof *x);
  size_t nbytes = (size_t)t->numel * (size_t)raf_dtype_size(t->dtype);
  void *data = x ? exec_take_buffer(ex, nbytes) : NULL;
  if (!data) {
    free(x);
    char buf[128];
    raf_type_str(t, buf, sizeof buf);
    raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "out of memory allocating a %s tensor (%zu bytes)", buf,
                    nbytes);
    return NULL;
  }
  x->t = (raf_tensor){t, data, nbytes};
  x->view = false;
  x->owner = NULL;
  return &x->t;
}

void raf_exec_free(raf_exec *ex, raf_tensor *t) {
  if (!t)
    return;
  handed *x = (handed *)t;
  if (!x->view) {
    exec_give_buffer(ex, t->data, t->nbytes);
  } else if (x->owner && --x->owner->refs == 0) {
    exec_give_buffer(ex, x->owner->data, x->owner->bytes);
    free(x->owner);
  }
  free(x);
}

void exec_free_spares(raf_exec *ex) {
  for (int b = 0; b < SPARE_BUCKETS; b++)
    while (ex->spares[b]) {
      spare *sp = ex->spares[b];
      ex->spares[b] = sp->next;
      free(sp);
    }
}

size_t raf_exec_live_bytes(const raf_exec *ex) { return ex->live; }
size_t raf_exec_peak_bytes(const raf_exec *ex) { return ex->peak; }

raf_tensor *exec_view_of(raf_exec *ex, raf_type *t, void *data) {
  handed *x = malloc(sizeof *x);
  if (!x) {
    raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return NULL;
  }
  x->t = (raf_tensor){t, data,
                      (size_t)t->numel * (size_t)raf_dtype_size(t->dtype)};
  x->view = true;
  x->owner = NULL;
  return &x->t;
}
