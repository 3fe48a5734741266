/* device_impl.h: what a device implements (the interface of device.h).
 *
 * A device is a table of operations (raf_device_ops) and the state every
 * device has (struct raf_device), which an implementation puts first in
 * its own struct: a raf_device * is then a pointer to it. device.c's
 * functions check their arguments and call through the table, so an
 * operation only does its device's work. Each operation reports its own
 * failures with raf_device_fail (device.h says which it reports).
 */
#ifndef RAF_DEVICE_IMPL_H
#define RAF_DEVICE_IMPL_H

#include "runtime/device.h"

typedef struct raf_device_ops {
  raf_device_kind kind;
  bool host_addressable;
  raf_status (*alloc)(raf_device *d, size_t bytes, void **ptr);
  void (*free)(raf_device *d, void *ptr);
  raf_status (*copy)(raf_device *d, void *dst, const void *src, size_t bytes,
                     raf_copy_kind kind);
  raf_status (*memset)(raf_device *d, void *ptr, int byte, size_t bytes);
  raf_status (*synchronize)(raf_device *d);
  raf_status (*event_create)(raf_device *d, raf_event **out);
  raf_status (*event_record)(raf_device *d, raf_event *e);
  raf_status (*event_elapsed)(raf_device *d, raf_event *start,
                              raf_event *end, double *ms);
  void (*event_destroy)(raf_device *d, raf_event *e);
  /* Frees the device's own state, the struct included. */
  void (*destroy)(raf_device *d);
} raf_device_ops;

struct raf_device {
  const raf_device_ops *ops;
  raf_ctx *ctx;         /* where errors go (borrowed) */
  void *stream;         /* the native stream, or NULL */
  char name[32];        /* "cpu", "cuda:0" */
  char description[200];
};

/* Reports "NAME: message" (the device's name) as an error, and returns
 * RAF_ERROR. */
raf_status raf_device_fail(raf_device *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The host device (device_host.c). */
raf_status raf_device_host_open(raf_ctx *ctx, raf_device **out);

#endif
