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
  /* Rounded to 64 bytes, so that buffers of nearly the same size share
   * spares; never a zero-size request. */
  size_t rounded = nbytes ? (nbytes + 63) & ~(size_t)63 : 64;
  void *data = NULL;
  for (spare **at = &ex->spares[rounded / 64 % SPARE_BUCKETS]; *at;
       at = &(*at)->next)
    if ((*at)->size == rounded) {
      spare *sp = *at;
      data = sp->data;
      *at = sp->next;
      free(sp);
      break;
    }
  if (!data && raf_device_alloc(ex->device, rounded, &data) != RAF_OK)
    data = NULL;
  if (data) {
    ex->live += nbytes;
    if (ex->live > ex->peak)
      ex->peak = ex->live;
  }
  return data;
}

void exec_give_buffer(raf_exec *ex, void *data, size_t nbytes) {
  ex->live -= nbytes;
  /* The record is kept apart from the buffer, which the host may not be
   * able to write (device memory). */
  spare *sp = malloc(sizeof *sp);
  if (!sp) {
    raf_device_free(ex->device, data);
    return;
  }
  sp->data = data;
  sp->size = nbytes ? (nbytes + 63) & ~(size_t)63 : 64;
  sp->next = ex->spares[sp->size / 64 % SPARE_BUCKETS];
  ex->spares[sp->size / 64 % SPARE_BUCKETS] = sp;
}

raf_tensor *raf_exec_alloc(raf_exec *ex, raf_type *t) {
  handed *x = malloc(sizeof *x);
  size_t nbytes = (size_t)t->numel * (size_t)raf_dtype_size(t->dtype);
  size_t reported = raf_diag_count(ex->ctx);
  void *data = x ? exec_take_buffer(ex, nbytes) : NULL;
  if (!data) {
    free(x);
    char buf[128];
    raf_type_str(t, buf, sizeof buf);
    /* a device that failed for another reason (a kernel's fault, sticky
     * on a GPU) has said so: that is not running out of memory */
    if (raf_diag_count(ex->ctx) == reported)
      raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "out of memory allocating a %s tensor (%zu bytes)", buf,
                      nbytes);
    return NULL;
  }
  x->t = (raf_tensor){t, data, nbytes, raf_device_kind_of(ex->device)};
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
      raf_device_free(ex->device, sp->data);
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
                      (size_t)t->numel * (size_t)raf_dtype_size(t->dtype),
                      raf_device_kind_of(ex->device)};
  x->view = true;
  x->owner = NULL;
  return &x->t;
}

/* ---- Tensor data through the device ---------------------------------------
 * A tensor's bytes are host memory (raf_tensor.device is the host: the
 * host device's tensors, and host tensors raf-run stages) or the memory of
 * the executor's device. Every copy picks its kind from the two ends; two
 * host ends on a device the host cannot address are a plain memcpy. */

raf_device *raf_exec_device(const raf_exec *ex) { return ex->device; }

raf_dialect raf_exec_fallback(const raf_exec *ex, const raf_stmt *s,
                              raf_dialect from) {
  const char *list = ex->opts.dialects;
  bool after = false;
  while (list && *list) {
    size_t len = strcspn(list, ",");
    raf_dialect d;
    if (raf_dialect_from_name(list, len, &d)) {
      if (after && strcmp(raf_dialect_get(d)->device,
                          raf_dialect_get(from)->device) == 0 &&
          !raf_dialect_unavailable(d) && raf_dialect_runs(d, s))
        return d;
      after |= d == from;
    }
    list += len + (list[len] == ',');
  }
  return RAF_DIALECT_COUNT;
}

bool raf_exec_checks_numerics(const raf_exec *ex) {
  return ex->opts.check_numerics;
}

/* Checks that memory of kind k is the host's or the executor's device's. */
static raf_status reachable(raf_exec *ex, raf_device_kind k) {
  raf_device_kind mine = raf_device_kind_of(ex->device);
  if (k == RAF_DEVICE_HOST || k == mine)
    return RAF_OK;
  raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                  "a tensor on %s, but the executor runs on %s",
                  raf_device_kind_name(k), raf_device_name(ex->device));
  return RAF_ERROR;
}

raf_status exec_copy_bytes(raf_exec *ex, void *dst, raf_device_kind to,
                           const void *src, raf_device_kind from, size_t n) {
  if (reachable(ex, to) != RAF_OK || reachable(ex, from) != RAF_OK)
    return RAF_ERROR;
  bool host_to = to == RAF_DEVICE_HOST, host_from = from == RAF_DEVICE_HOST;
  if (host_to && host_from && !raf_device_host_addressable(ex->device)) {
    if (n && dst != src)
      memcpy(dst, src, n);
    return RAF_OK;
  }
  raf_copy_kind kind = host_from && !host_to   ? RAF_COPY_HOST_TO_DEVICE
                       : !host_from && host_to ? RAF_COPY_DEVICE_TO_HOST
                                               : RAF_COPY_DEVICE_TO_DEVICE;
  return raf_device_copy(ex->device, dst, src, n, kind);
}

/* Whether [offset, offset + n) lies in t; reports it when it does not. */
static bool in_bounds(raf_exec *ex, const raf_tensor *t, size_t offset,
                      size_t n, const char *what) {
  if (offset <= t->nbytes && n <= t->nbytes - offset)
    return true;
  raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                  "%s of bytes [%zu, %zu) of a tensor of %zu bytes", what,
                  offset, offset + n, t->nbytes);
  return false;
}

raf_status raf_exec_write(raf_exec *ex, raf_tensor *t, size_t offset,
                          const void *src, size_t n) {
  if (!in_bounds(ex, t, offset, n, "write"))
    return RAF_ERROR;
  return exec_copy_bytes(ex, (char *)t->data + offset, t->device, src,
                         RAF_DEVICE_HOST, n);
}

raf_status raf_exec_read(raf_exec *ex, const raf_tensor *t, size_t offset,
                         void *dst, size_t n) {
  if (!in_bounds(ex, t, offset, n, "read"))
    return RAF_ERROR;
  return exec_copy_bytes(ex, dst, RAF_DEVICE_HOST,
                         (const char *)t->data + offset, t->device, n);
}

raf_status raf_exec_copy(raf_exec *ex, raf_tensor *dst,
                         const raf_tensor *src) {
  if (dst->nbytes != src->nbytes) {
    raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "copy of a tensor of %zu bytes into one of %zu",
                    src->nbytes, dst->nbytes);
    return RAF_ERROR;
  }
  return exec_copy_bytes(ex, dst->data, dst->device, src->data, src->device,
                         src->nbytes);
}

raf_status raf_exec_zero(raf_exec *ex, raf_tensor *t, size_t offset,
                         size_t n) {
  if (!in_bounds(ex, t, offset, n, "zeroing") ||
      reachable(ex, t->device) != RAF_OK)
    return RAF_ERROR;
  if (t->device == RAF_DEVICE_HOST &&
      !raf_device_host_addressable(ex->device)) {
    memset((char *)t->data + offset, 0, n);
    return RAF_OK;
  }
  return raf_device_memset(ex->device, (char *)t->data + offset, 0, n);
}

const void *raf_exec_host_data(raf_exec *ex, const raf_tensor *t,
                               void **staged) {
  *staged = NULL;
  if (t->device == RAF_DEVICE_HOST ||
      (t->device == raf_device_kind_of(ex->device) &&
       raf_device_host_addressable(ex->device)))
    return t->data;
  void *copy = malloc(t->nbytes ? t->nbytes : 1);
  if (!copy) {
    raf_diag_report(ex->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "out of memory staging a tensor of %zu bytes on the host",
                    t->nbytes);
    return NULL;
  }
  if (raf_exec_read(ex, t, 0, copy, t->nbytes) != RAF_OK) {
    free(copy);
    return NULL;
  }
  *staged = copy;
  return copy;
}
