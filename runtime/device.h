/* device.h: where tensors live, and the operations on that memory.
 *
 * A device is a memory and one ordered queue of work on it (a stream):
 * the host (plain memory; work is done when the call returns), or a CUDA
 * GPU (device memory and one CUDA stream; runtime/cuda/). The executor
 * owns one device (exec.h), and every copy into, out of or between tensor
 * buffers goes through it, so that nothing outside the device reads or
 * writes memory the host cannot address. docs/Device.md describes the
 * design; runtime/device_impl.h is the interface a device implements.
 *
 * Ownership, as in LLVM's C API, is stated per function: what a function
 * returns through an `out` pointer belongs to the caller, who gives it back
 * with the function named there; everything else is borrowed.
 *
 * Ordering. Work runs in the order it is queued on the device's stream.
 * A copy to or from the host is complete, as far as the host buffer goes,
 * when it returns: the host may read what came back, or reuse what it
 * gave. Copies between device buffers and memsets are queued: they come
 * before later work on the stream and are done after
 * raf_device_synchronize.
 *
 * Errors are reported to the context the device was opened with, naming
 * the device and the failed operation ("cuda:0: cuMemcpyDtoHAsync: an
 * illegal memory access was encountered"); no function exits or aborts.
 */
#ifndef RAF_DEVICE_H
#define RAF_DEVICE_H

#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>

/* The kinds of device. A tensor records the kind its buffer lives on
 * (raf_tensor.device); zero is the host, so a tensor made without a word
 * of it is host memory. */
typedef enum raf_device_kind {
  RAF_DEVICE_HOST,
  RAF_DEVICE_CUDA,
  RAF_DEVICE_KIND_COUNT
} raf_device_kind;

/* "cpu" for the host, "cuda": the spelling of raf-run's --device. */
const char *raf_device_kind_name(raf_device_kind k);
/* Looks a spelling up; false when it names no kind. */
bool raf_device_kind_from_name(const char *s, raf_device_kind *out);
/* Why devices of kind k cannot be opened in this build ("built without
 * CUDA (...)"), or NULL when they can (which says nothing of this machine:
 * a driver and a device are looked for when one is opened). */
const char *raf_device_kind_unavailable(raf_device_kind k);

typedef struct raf_device raf_device;
typedef struct raf_event raf_event;

typedef enum raf_copy_kind {
  RAF_COPY_HOST_TO_DEVICE,
  RAF_COPY_DEVICE_TO_HOST,
  RAF_COPY_DEVICE_TO_DEVICE
} raf_copy_kind;

/* How many devices of kind k this machine has: 1 for the host; for CUDA,
 * after loading the driver. RAF_ERROR (reported: no driver, or the build
 * has no CUDA) when it cannot tell; a machine with a driver and no GPU
 * has 0. */
raf_status raf_device_count(raf_ctx *ctx, raf_device_kind k, int *count);

/* Opens device number `ordinal` of kind k. *out belongs to the caller:
 * close it with raf_device_destroy, after freeing what was allocated on
 * it. ctx is borrowed, and must outlive the device: its errors go there.
 * A failure is reported in one line that says what is missing ("no
 * libcuda.so.1 (no NVIDIA driver)", "no CUDA device"), and *out is NULL. */
raf_status raf_device_open(raf_ctx *ctx, raf_device_kind k, int ordinal,
                           raf_device **out);
/* Sends d's later errors to ctx (borrowed, outliving the device) instead
 * of the context it was opened with: for a caller that opens it with
 * messages collected apart. */
void raf_device_set_ctx(raf_device *d, raf_ctx *ctx);
/* Waits for the device's queued work and closes it. NULL is ignored. */
void raf_device_destroy(raf_device *d);

raf_device_kind raf_device_kind_of(const raf_device *d);
/* "cpu", "cuda:0": the device in messages (owned by the device). */
const char *raf_device_name(const raf_device *d);
/* One line about the device, for --list-devices: "cuda:0: NVIDIA H200,
 * compute capability 9.0, 139.8 GiB" (owned by the device). */
const char *raf_device_describe(const raf_device *d);
/* Whether the host reads and writes the device's memory directly (the
 * host device): then a tensor's data may be used in place, not staged. */
bool raf_device_host_addressable(const raf_device *d);
/* The native stream that work for the device is queued on: a CUstream
 * for CUDA, NULL for the host (owned by the device). */
void *raf_device_stream(const raf_device *d);

/* ---- Memory --------------------------------------------------------------
 * Device pointers are void *, meaningful to the device only unless it is
 * host-addressable. */

/* `bytes` of device memory (at least 64-byte aligned; never a zero-size
 * request) into *ptr, which belongs to the caller: give it back with
 * raf_device_free. Lack of memory is RAF_ERROR with nothing reported, so
 * that the caller says what the memory was for; other failures are
 * reported. */
raf_status raf_device_alloc(raf_device *d, size_t bytes, void **ptr);
/* Gives back memory from raf_device_alloc (after the work queued on it).
 * NULL is ignored. */
void raf_device_free(raf_device *d, void *ptr);
/* Copies `bytes` from src to dst; `kind` says which of them is host
 * memory (see Ordering above). Both are borrowed. */
raf_status raf_device_copy(raf_device *d, void *dst, const void *src,
                           size_t bytes, raf_copy_kind kind);
/* Sets `bytes` of device memory at ptr to `byte`. */
raf_status raf_device_memset(raf_device *d, void *ptr, int byte,
                             size_t bytes);
/* Waits until all queued work is done. */
raf_status raf_device_synchronize(raf_device *d);

/* ---- Events: timing work on the stream ----------------------------------- */

/* A new event in *out, owned by the caller: destroy it with
 * raf_device_event_destroy. */
raf_status raf_device_event_create(raf_device *d, raf_event **out);
/* Marks the point of the stream that work queued so far reaches. */
raf_status raf_device_event_record(raf_device *d, raf_event *e);
/* The milliseconds between two recorded events, waiting for `end`. */
raf_status raf_device_event_elapsed(raf_device *d, raf_event *start,
                                    raf_event *end, double *ms);
/* NULL is ignored. */
void raf_device_event_destroy(raf_device *d, raf_event *e);

#endif
