/* cuda_device.c: a CUDA GPU as a device (cuda_device.h, device.h).
 *
 * The device holds the driver (loaded by driver.c), the GPU's primary
 * context (the one the CUDA runtime and PyTorch use too, so memory and
 * modules could be shared with them) and one non-blocking stream, on which
 * every copy, memset and event is queued. Each operation makes the context
 * current first: the executor's threads and raf-run's may call it.
 *
 * Copies to and from the host synchronize the stream before they return,
 * which device.h's ordering asks for whatever the host memory is (the
 * driver already does so for pageable memory, raf's only kind so far);
 * overlapping transfers with work needs pinned staging buffers and events,
 * which are not written yet.
 *
 * Scratch (raf_cuda_scratch): kernels that need temporary device memory
 * for one statement (row statistics, a collective's staging) take it from
 * one block the device keeps, instead of cuMemAlloc and cuMemFree around
 * their launches: cuMemFree waits for the whole device, which would stall
 * the step at every such statement. Reuse is safe because the device has
 * one stream: a statement's kernels run after the previous statement's
 * are done with the block. A block outgrown may still be read by queued
 * work, so it is freed only once the stream is drained (synchronize,
 * destroy).
 *
 * Other streams (cuda_device.h's raf_cuda_stream_*: the nccl dialect's
 * communication stream) are their owners', ordered against the device's
 * stream by events; scratch is the device stream's only, since work on
 * another stream would not be ordered against the block's next user.
 */
#include "runtime/cuda/cuda_device.h"

#include "runtime/device_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct cuda_device {
  raf_device base; /* first: a raf_device * is a cuda_device * */
  raf_cuda_driver *drv;
  CUdevice dev;
  CUcontext context; /* the primary context, retained */
  CUstream stream;
  int major, minor; /* compute capability */
  void *scratch;    /* raf_cuda_scratch's block, scratch_bytes long */
  size_t scratch_bytes;
  void **retired; /* outgrown blocks, freed when the stream is drained */
  int nretired, retired_cap;
} cuda_device;

struct raf_event {
  CUevent event;
  bool recorded;
};

static cuda_device *cuda_of(raf_device *d) { return (cuda_device *)d; }

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* RAF_OK when r is CUDA_SUCCESS; else reports "cuda:N: what: why". */
static raf_status check(raf_device *d, CUresult r, const char *what) {
  if (r == CUDA_SUCCESS)
    return RAF_OK;
  char why[256];
  return raf_device_fail(
      d, "%s: %s", what,
      raf_cuda_error_text(cuda_of(d)->drv, r, why, sizeof why));
}

raf_status raf_cuda_device_make_current(raf_device *d) {
  cuda_device *c = cuda_of(d);
  return check(d, c->drv->cuCtxSetCurrent(c->context), "cuCtxSetCurrent");
}

const raf_cuda_driver *raf_cuda_device_driver(const raf_device *d) {
  return ((const cuda_device *)d)->drv;
}

static raf_status cuda_alloc(raf_device *d, size_t bytes, void **ptr) {
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  CUdeviceptr p = 0;
  CUresult r = cuda_of(d)->drv->cuMemAlloc(&p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY)
    return RAF_ERROR; /* the caller says what the memory was for */
  if (check(d, r, "cuMemAlloc") != RAF_OK)
    return RAF_ERROR;
  *ptr = (void *)(uintptr_t)p;
  return RAF_OK;
}

static void cuda_free(raf_device *d, void *ptr) {
  if (raf_cuda_device_make_current(d) == RAF_OK)
    check(d, cuda_of(d)->drv->cuMemFree(dptr(ptr)), "cuMemFree");
}

static raf_status cuda_copy(raf_device *d, void *dst, const void *src,
                            size_t bytes, raf_copy_kind kind) {
  cuda_device *c = cuda_of(d);
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  switch (kind) {
  case RAF_COPY_HOST_TO_DEVICE:
    if (check(d, c->drv->cuMemcpyHtoDAsync(dptr(dst), src, bytes, c->stream),
              "cuMemcpyHtoDAsync") != RAF_OK)
      return RAF_ERROR;
    return check(d, c->drv->cuStreamSynchronize(c->stream),
                 "cuStreamSynchronize");
  case RAF_COPY_DEVICE_TO_HOST:
    if (check(d, c->drv->cuMemcpyDtoHAsync(dst, dptr(src), bytes, c->stream),
              "cuMemcpyDtoHAsync") != RAF_OK)
      return RAF_ERROR;
    return check(d, c->drv->cuStreamSynchronize(c->stream),
                 "cuStreamSynchronize");
  case RAF_COPY_DEVICE_TO_DEVICE:
    return check(d,
                 c->drv->cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes,
                                           c->stream),
                 "cuMemcpyDtoDAsync");
  }
  return raf_device_fail(d, "copy of unknown kind %d", (int)kind);
}

static raf_status cuda_memset(raf_device *d, void *ptr, int byte,
                              size_t bytes) {
  cuda_device *c = cuda_of(d);
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  return check(d,
               c->drv->cuMemsetD8Async(dptr(ptr), (unsigned char)byte, bytes,
                                       c->stream),
               "cuMemsetD8Async");
}

/* Frees the scratch blocks outgrown, once nothing queued can read them
 * (the stream is drained). */
static void free_retired(cuda_device *c) {
  for (int i = 0; i < c->nretired; i++)
    check(&c->base, c->drv->cuMemFree(dptr(c->retired[i])), "cuMemFree");
  c->nretired = 0;
}

static raf_status cuda_synchronize(raf_device *d) {
  cuda_device *c = cuda_of(d);
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  if (check(d, c->drv->cuStreamSynchronize(c->stream),
            "cuStreamSynchronize") != RAF_OK)
    return RAF_ERROR;
  free_retired(c);
  return RAF_OK;
}

raf_status raf_cuda_scratch(raf_device *d, size_t bytes, void **out) {
  cuda_device *c = cuda_of(d);
  *out = NULL;
  if (bytes <= c->scratch_bytes) {
    *out = c->scratch;
    return RAF_OK;
  }
  /* Room to retire the current block first, so that nothing leaks. */
  if (c->scratch && c->nretired == c->retired_cap) {
    int cap = c->retired_cap ? 2 * c->retired_cap : 4;
    void **grown = realloc(c->retired, sizeof *grown * (size_t)cap);
    if (!grown)
      return RAF_ERROR;
    c->retired = grown;
    c->retired_cap = cap;
  }
  void *p = NULL;
  if (cuda_alloc(d, bytes, &p) != RAF_OK)
    return RAF_ERROR;
  if (c->scratch)
    c->retired[c->nretired++] = c->scratch;
  c->scratch = p;
  c->scratch_bytes = bytes;
  *out = p;
  return RAF_OK;
}

static raf_status cuda_event_create(raf_device *d, raf_event **out) {
  raf_event *e = calloc(1, sizeof *e);
  if (!e)
    return raf_device_fail(d, "out of memory making an event");
  if (raf_cuda_device_make_current(d) != RAF_OK ||
      check(d, cuda_of(d)->drv->cuEventCreate(&e->event, CU_EVENT_DEFAULT),
            "cuEventCreate") != RAF_OK) {
    free(e);
    return RAF_ERROR;
  }
  *out = e;
  return RAF_OK;
}

static raf_status cuda_event_record(raf_device *d, raf_event *e) {
  cuda_device *c = cuda_of(d);
  if (raf_cuda_device_make_current(d) != RAF_OK ||
      check(d, c->drv->cuEventRecord(e->event, c->stream), "cuEventRecord") !=
          RAF_OK)
    return RAF_ERROR;
  e->recorded = true;
  return RAF_OK;
}

static raf_status cuda_event_elapsed(raf_device *d, raf_event *start,
                                     raf_event *end, double *ms) {
  cuda_device *c = cuda_of(d);
  if (!start->recorded || !end->recorded)
    return raf_device_fail(d, "elapsed time of an event never recorded");
  float f = 0;
  if (raf_cuda_device_make_current(d) != RAF_OK ||
      check(d, c->drv->cuEventSynchronize(end->event),
            "cuEventSynchronize") != RAF_OK ||
      check(d, c->drv->cuEventElapsedTime(&f, start->event, end->event),
            "cuEventElapsedTime") != RAF_OK)
    return RAF_ERROR;
  *ms = f;
  return RAF_OK;
}

static void cuda_event_destroy(raf_device *d, raf_event *e) {
  if (raf_cuda_device_make_current(d) == RAF_OK)
    check(d, cuda_of(d)->drv->cuEventDestroy(e->event), "cuEventDestroy");
  free(e);
}

/* ---- Streams and events beside the device's own (cuda_device.h) ---- */

raf_status raf_cuda_stream_create(raf_device *d, CUstream *out) {
  *out = NULL;
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  return check(d, cuda_of(d)->drv->cuStreamCreate(out, CU_STREAM_NON_BLOCKING),
               "cuStreamCreate");
}

void raf_cuda_stream_destroy(raf_device *d, CUstream s) {
  /* cuStreamDestroy returns at once and lets queued work finish, but the
   * caller frees what that work reads next: drain it first. */
  if (s && raf_cuda_stream_synchronize(d, s) == RAF_OK)
    check(d, cuda_of(d)->drv->cuStreamDestroy(s), "cuStreamDestroy");
}

raf_status raf_cuda_stream_synchronize(raf_device *d, CUstream s) {
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  return check(d, cuda_of(d)->drv->cuStreamSynchronize(s),
               "cuStreamSynchronize");
}

raf_status raf_cuda_event_create(raf_device *d, CUevent *out) {
  *out = NULL;
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  return check(d, cuda_of(d)->drv->cuEventCreate(out, CU_EVENT_DEFAULT),
               "cuEventCreate");
}

void raf_cuda_event_destroy(raf_device *d, CUevent e) {
  if (e && raf_cuda_device_make_current(d) == RAF_OK)
    check(d, cuda_of(d)->drv->cuEventDestroy(e), "cuEventDestroy");
}

raf_status raf_cuda_event_record(raf_device *d, CUevent e, CUstream s) {
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  return check(d, cuda_of(d)->drv->cuEventRecord(e, s), "cuEventRecord");
}

raf_status raf_cuda_stream_wait_event(raf_device *d, CUstream s, CUevent e) {
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  return check(d,
               cuda_of(d)->drv->cuStreamWaitEvent(s, e, CU_EVENT_WAIT_DEFAULT),
               "cuStreamWaitEvent");
}

raf_status raf_cuda_event_query(raf_device *d, CUevent e, bool *done) {
  *done = false;
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  CUresult r = cuda_of(d)->drv->cuEventQuery(e);
  if (r == CUDA_ERROR_NOT_READY)
    return RAF_OK;
  *done = r == CUDA_SUCCESS;
  return check(d, r, "cuEventQuery");
}

raf_status raf_cuda_event_elapsed_ms(raf_device *d, CUevent a, CUevent b,
                                     double *ms) {
  float f = 0;
  *ms = 0;
  if (raf_cuda_device_make_current(d) != RAF_OK ||
      check(d, cuda_of(d)->drv->cuEventElapsedTime(&f, a, b),
            "cuEventElapsedTime") != RAF_OK)
    return RAF_ERROR;
  *ms = f;
  return RAF_OK;
}

/* Frees what was made of c so far (open fails midway too). */
static void cuda_destroy(raf_device *d) {
  cuda_device *c = cuda_of(d);
  if (c->context && raf_cuda_device_make_current(d) == RAF_OK &&
      c->stream) {
    check(d, c->drv->cuStreamSynchronize(c->stream), "cuStreamSynchronize");
    free_retired(c);
    if (c->scratch)
      check(d, c->drv->cuMemFree(dptr(c->scratch)), "cuMemFree");
    check(d, c->drv->cuStreamDestroy(c->stream), "cuStreamDestroy");
  }
  free(c->retired);
  if (c->context)
    check(d, c->drv->cuDevicePrimaryCtxRelease(c->dev),
          "cuDevicePrimaryCtxRelease");
  raf_cuda_driver_unload(c->drv);
  free(c);
}

static const raf_device_ops cuda_ops = {
    .kind = RAF_DEVICE_CUDA,
    .host_addressable = false,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy = cuda_copy,
    .memset = cuda_memset,
    .synchronize = cuda_synchronize,
    .event_create = cuda_event_create,
    .event_record = cuda_event_record,
    .event_elapsed = cuda_event_elapsed,
    .event_destroy = cuda_event_destroy,
    .destroy = cuda_destroy,
};

/* The number of GPUs drv sees; reports a failure. */
static raf_status count_with(raf_ctx *ctx, raf_cuda_driver *drv,
                             int *count) {
  CUresult r = drv->cuDeviceGetCount(count);
  if (r == CUDA_SUCCESS)
    return RAF_OK;
  char why[256];
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "cuDeviceGetCount: %s",
                  raf_cuda_error_text(drv, r, why, sizeof why));
  return RAF_ERROR;
}

raf_status raf_cuda_device_count(raf_ctx *ctx, int *count) {
  raf_cuda_driver *drv;
  *count = 0;
  if (raf_cuda_driver_load(ctx, RAF_CUDA_DRIVER_LIBRARY, &drv) != RAF_OK)
    return RAF_ERROR;
  raf_status rc = count_with(ctx, drv, count);
  raf_cuda_driver_unload(drv);
  return rc;
}

/* One line about the device for raf_device_describe. */
static raf_status describe(cuda_device *c, int ordinal) {
  raf_device *d = &c->base;
  char name[128] = "";
  int major = 0, minor = 0;
  size_t bytes = 0;
  const raf_cuda_driver *drv = c->drv;
  if (check(d, drv->cuDeviceGetName(name, (int)sizeof name, c->dev),
            "cuDeviceGetName") != RAF_OK ||
      check(d,
            drv->cuDeviceGetAttribute(
                &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev),
            "cuDeviceGetAttribute") != RAF_OK ||
      check(d,
            drv->cuDeviceGetAttribute(
                &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev),
            "cuDeviceGetAttribute") != RAF_OK ||
      check(d, drv->cuDeviceTotalMem(&bytes, c->dev), "cuDeviceTotalMem") !=
          RAF_OK)
    return RAF_ERROR;
  snprintf(d->description, sizeof d->description,
           "cuda:%d: %s, compute capability %d.%d, %.1f GiB, driver for "
           "CUDA %d.%d",
           ordinal, name, major, minor, (double)bytes / (1u << 30),
           drv->version / 1000, drv->version % 1000 / 10);
  c->major = major;
  c->minor = minor;
  return RAF_OK;
}

void raf_cuda_device_capability(const raf_device *d, int *major,
                                int *minor) {
  const cuda_device *c = (const cuda_device *)d;
  *major = c->major;
  *minor = c->minor;
}

raf_status raf_cuda_device_open(raf_ctx *ctx, int ordinal, raf_device **out) {
  *out = NULL;
  raf_cuda_driver *drv;
  if (raf_cuda_driver_load(ctx, RAF_CUDA_DRIVER_LIBRARY, &drv) != RAF_OK)
    return RAF_ERROR;
  int count = 0;
  if (count_with(ctx, drv, &count) != RAF_OK) {
    raf_cuda_driver_unload(drv);
    return RAF_ERROR;
  }
  if (ordinal < 0 || ordinal >= count) {
    if (count == 0)
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no CUDA device (the NVIDIA driver finds none)");
    else
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no CUDA device %d (this machine has %d)", ordinal,
                      count);
    raf_cuda_driver_unload(drv);
    return RAF_ERROR;
  }
  cuda_device *c = calloc(1, sizeof *c);
  if (!c) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    raf_cuda_driver_unload(drv);
    return RAF_ERROR;
  }
  c->drv = drv;
  raf_device *d = &c->base;
  d->ops = &cuda_ops;
  d->ctx = ctx;
  snprintf(d->name, sizeof d->name, "cuda:%d", ordinal);
  bool ok =
      check(d, drv->cuDeviceGet(&c->dev, ordinal), "cuDeviceGet") == RAF_OK &&
      describe(c, ordinal) == RAF_OK &&
      check(d, drv->cuDevicePrimaryCtxRetain(&c->context, c->dev),
            "cuDevicePrimaryCtxRetain") == RAF_OK &&
      raf_cuda_device_make_current(d) == RAF_OK &&
      check(d, drv->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate") == RAF_OK;
  if (!ok) {
    cuda_destroy(d);
    return RAF_ERROR;
  }
  d->stream = c->stream;
  *out = d;
  return RAF_OK;
}
