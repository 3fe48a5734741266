/* device.c: the device interface of device.h, dispatched through each
 * device's table of operations (device_impl.h), and the choice of device
 * by kind: the host (device_host.c) in every build, CUDA (runtime/cuda/)
 * in a build configured with the CUDA toolkit's headers.
 */
#include "runtime/device_impl.h"

#ifdef RAF_HAVE_CUDA
#include "runtime/cuda/cuda_device.h"
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[RAF_DEVICE_KIND_COUNT] = {
    [RAF_DEVICE_HOST] = "cpu",
    [RAF_DEVICE_CUDA] = "cuda",
};

const char *raf_device_kind_name(raf_device_kind k) {
  return k >= 0 && k < RAF_DEVICE_KIND_COUNT ? kind_names[k] : "?";
}

bool raf_device_kind_from_name(const char *s, raf_device_kind *out) {
  for (int k = 0; k < RAF_DEVICE_KIND_COUNT; k++)
    if (strcmp(s, kind_names[k]) == 0) {
      *out = (raf_device_kind)k;
      return true;
    }
  return false;
}

const char *raf_device_kind_unavailable(raf_device_kind k) {
#ifndef RAF_HAVE_CUDA
  if (k == RAF_DEVICE_CUDA)
    return "built without CUDA (the CUDA toolkit's cuda.h was not found "
           "when raf was configured)";
#endif
  (void)k;
  return NULL;
}

raf_status raf_device_fail(raf_device *d, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  raf_diag_report(d->ctx, (raf_loc){0}, RAF_SEV_ERROR, "%s: %s", d->name,
                  msg);
  return RAF_ERROR;
}

void raf_device_set_ctx(raf_device *d, raf_ctx *ctx) { d->ctx = ctx; }

raf_status raf_device_count(raf_ctx *ctx, raf_device_kind k, int *count) {
  *count = 0;
  const char *why = raf_device_kind_unavailable(k);
  if (why) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "raf was %s", why);
    return RAF_ERROR;
  }
  if (k == RAF_DEVICE_HOST) {
    *count = 1;
    return RAF_OK;
  }
#ifdef RAF_HAVE_CUDA
  if (k == RAF_DEVICE_CUDA)
    return raf_cuda_device_count(ctx, count);
#endif
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "no device kind %d",
                  (int)k);
  return RAF_ERROR;
}

raf_status raf_device_open(raf_ctx *ctx, raf_device_kind k, int ordinal,
                           raf_device **out) {
  *out = NULL;
  const char *why = raf_device_kind_unavailable(k);
  if (why) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "raf was %s", why);
    return RAF_ERROR;
  }
  if (k == RAF_DEVICE_HOST && ordinal == 0)
    return raf_device_host_open(ctx, out);
#ifdef RAF_HAVE_CUDA
  if (k == RAF_DEVICE_CUDA)
    return raf_cuda_device_open(ctx, ordinal, out);
#endif
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "no %s device %d",
                  raf_device_kind_name(k), ordinal);
  return RAF_ERROR;
}

void raf_device_destroy(raf_device *d) {
  if (d)
    d->ops->destroy(d);
}

raf_device_kind raf_device_kind_of(const raf_device *d) {
  return d->ops->kind;
}
const char *raf_device_name(const raf_device *d) { return d->name; }
const char *raf_device_describe(const raf_device *d) {
  return d->description;
}
bool raf_device_host_addressable(const raf_device *d) {
  return d->ops->host_addressable;
}
void *raf_device_stream(const raf_device *d) { return d->stream; }

raf_status raf_device_alloc(raf_device *d, size_t bytes, void **ptr) {
  *ptr = NULL;
  return d->ops->alloc(d, bytes ? bytes : 1, ptr);
}

void raf_device_free(raf_device *d, void *ptr) {
  if (ptr)
    d->ops->free(d, ptr);
}

raf_status raf_device_copy(raf_device *d, void *dst, const void *src,
                           size_t bytes, raf_copy_kind kind) {
  if (bytes == 0 || dst == src)
    return RAF_OK;
  return d->ops->copy(d, dst, src, bytes, kind);
}

raf_status raf_device_memset(raf_device *d, void *ptr, int byte,
                             size_t bytes) {
  return bytes ? d->ops->memset(d, ptr, byte, bytes) : RAF_OK;
}

raf_status raf_device_synchronize(raf_device *d) {
  return d->ops->synchronize(d);
}

raf_status raf_device_event_create(raf_device *d, raf_event **out) {
  *out = NULL;
  return d->ops->event_create(d, out);
}

raf_status raf_device_event_record(raf_device *d, raf_event *e) {
  return d->ops->event_record(d, e);
}

raf_status raf_device_event_elapsed(raf_device *d, raf_event *start,
                                    raf_event *end, double *ms) {
  *ms = 0;
  return d->ops->event_elapsed(d, start, end, ms);
}

void raf_device_event_destroy(raf_device *d, raf_event *e) {
  if (e)
    d->ops->event_destroy(d, e);
}
