/* device_host.c: the host as a device (device.h): memory from the C
 * library, copies and memsets done when the call returns (there is no
 * queue: the stream is the calling thread), and events that read the
 * monotonic clock. Every kind of copy is a memcpy.
 */
#include "runtime/device_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct raf_event {
  int64_t ns; /* CLOCK_MONOTONIC when recorded; -1 before */
};

static raf_status host_alloc(raf_device *d, size_t bytes, void **ptr) {
  (void)d;
  /* 64-byte alignment suits every vector unit (aligned_alloc wants a
   * multiple of the alignment). */
  *ptr = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  return *ptr ? RAF_OK : RAF_ERROR;
}

static void host_free(raf_device *d, void *ptr) {
  (void)d;
  free(ptr);
}

static raf_status host_copy(raf_device *d, void *dst, const void *src,
                            size_t bytes, raf_copy_kind kind) {
  (void)d;
  (void)kind;
  memcpy(dst, src, bytes);
  return RAF_OK;
}

static raf_status host_memset(raf_device *d, void *ptr, int byte,
                              size_t bytes) {
  (void)d;
  memset(ptr, byte, bytes);
  return RAF_OK;
}

static raf_status host_synchronize(raf_device *d) {
  (void)d;
  return RAF_OK;
}

static raf_status host_event_create(raf_device *d, raf_event **out) {
  if (!(*out = malloc(sizeof **out)))
    return raf_device_fail(d, "out of memory making an event");
  (*out)->ns = -1;
  return RAF_OK;
}

static raf_status host_event_record(raf_device *d, raf_event *e) {
  (void)d;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  e->ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  return RAF_OK;
}

static raf_status host_event_elapsed(raf_device *d, raf_event *start,
                                     raf_event *end, double *ms) {
  if (start->ns < 0 || end->ns < 0)
    return raf_device_fail(d, "elapsed time of an event never recorded");
  *ms = (double)(end->ns - start->ns) * 1e-6;
  return RAF_OK;
}

static void host_event_destroy(raf_device *d, raf_event *e) {
  (void)d;
  free(e);
}

static void host_destroy(raf_device *d) { free(d); }

static const raf_device_ops host_ops = {
    .kind = RAF_DEVICE_HOST,
    .host_addressable = true,
    .alloc = host_alloc,
    .free = host_free,
    .copy = host_copy,
    .memset = host_memset,
    .synchronize = host_synchronize,
    .event_create = host_event_create,
    .event_record = host_event_record,
    .event_elapsed = host_event_elapsed,
    .event_destroy = host_event_destroy,
    .destroy = host_destroy,
};

raf_status raf_device_host_open(raf_ctx *ctx, raf_device **out) {
  raf_device *d = calloc(1, sizeof *d);
  if (!d) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "out of memory opening the host device");
    return RAF_ERROR;
  }
  d->ops = &host_ops;
  d->ctx = ctx;
  snprintf(d->name, sizeof d->name, "cpu");
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(d->description, sizeof d->description, "cpu: the host, %ld CPU%s",
           cpus, cpus == 1 ? "" : "s");
  *out = d;
  return RAF_OK;
}
