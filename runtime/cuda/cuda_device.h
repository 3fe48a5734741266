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
/* The device's compute capability (9.0: *major 9, *minor 0), read when it
 * was opened. */
void raf_cuda_device_capability(const raf_device *d, int *major,
                                int *minor);

#endif
