/* cuda_device.h: the CUDA device (cuda_device.c), a device of device.h on
 * the Driver API of driver.h: one GPU, its primary context and one
 * stream. Compiled only in a build with the CUDA toolkit's headers
 * (RAF_HAVE_CUDA).
 */
#ifndef RAF_CUDA_DEVICE_H
#define RAF_CUDA_DEVICE_H

#include "runtime/cuda/driver.h"
#include "runtime/device.h"

/* raf_device_count and raf_device_open for RAF_DEVICE_CUDA. */
raf_status raf_cuda_device_count(raf_ctx *ctx, int *count);
raf_status raf_cuda_device_open(raf_ctx *ctx, int ordinal, raf_device **out);

/* The driver of a CUDA device (owned by the device): what kernels need to
 * load modules and launch on raf_device_stream(d). */
const raf_cuda_driver *raf_cuda_device_driver(const raf_device *d);
/* Makes the device's context current on the calling thread (each
 * operation of the device does so itself). */
raf_status raf_cuda_device_make_current(raf_device *d);
/* Device memory of at least `bytes` for the kernels a statement queues
 * next on the device's stream, in place of an allocation freed after
 * them (cuMemFree waits for the whole device): one block the device owns
 * and hands to every caller, grown when asked for more (the block outgrown
 * is freed once the stream is drained). *out is valid until the next call;
 * the work queued on it before then is ordered by the one stream. Running
 * out is RAF_ERROR with nothing reported (the caller says what it was
 * for), as raf_device_alloc. */
raf_status raf_cuda_scratch(raf_device *d, size_t bytes, void **out);
/* ---- Streams and events beside the device's own.
 * For work that runs beside the device's stream and is ordered against it
 * by events (the nccl dialect's communication stream, nccl.c). Each makes
 * the device's context current and reports a failure as the device does
 * ("cuda:N: cuStreamWaitEvent: why", raf_device_fail). The device's own
 * stream is raf_device_stream(d). */

/* A non-blocking stream (CU_STREAM_NON_BLOCKING: it does not synchronize
 * with the legacy default stream), the caller's to destroy. */
raf_status raf_cuda_stream_create(raf_device *d, CUstream *out);
/* Waits for the work queued on s, then destroys it; NULL is ignored. */
void raf_cuda_stream_destroy(raf_device *d, CUstream s);
/* Blocks the host until the work queued on s is done. */
raf_status raf_cuda_stream_synchronize(raf_device *d, CUstream s);
/* An event that can time (cuEventElapsedTime), the caller's to destroy. */
raf_status raf_cuda_event_create(raf_device *d, CUevent *out);
/* NULL is ignored. */
void raf_cuda_event_destroy(raf_device *d, CUevent e);
/* Records e on s: e completes when the work queued on s before it is
 * done. */
raf_status raf_cuda_event_record(raf_device *d, CUevent e, CUstream s);
/* The work queued on s from now on starts after e's latest record (made
 * before this call) completes; the host does not wait. Recording e again
 * later does not change what s waits for. */
raf_status raf_cuda_stream_wait_event(raf_device *d, CUstream s, CUevent e);
/* *done: whether e's record has completed, without waiting for it. */
raf_status raf_cuda_event_query(raf_device *d, CUevent e, bool *done);
/* The milliseconds from a's record to b's, both completed. */
raf_status raf_cuda_event_elapsed_ms(raf_device *d, CUevent a, CUevent b,
                                     double *ms);

/* The device's compute capability (9.0: *major 9, *minor 0), read when it
 * was opened. */
void raf_cuda_device_capability(const raf_device *d, int *major,
                                int *minor);

#endif
