/* driver.h: the CUDA Driver API, loaded at run time.
 *
 * raf never links libcuda: the NVIDIA driver's library is opened with
 * dlopen when a CUDA device is opened, and every entry point of
 * driver.def is resolved through the driver's cuGetProcAddress (as
 * IREE's CUDA HAL does), at one ABI version, so that a newer driver hands
 * back the functions whose parameters driver.def declares. Building needs
 * only the toolkit's cuda.h, for the types; running without a driver or a
 * GPU is an error that says which is missing.
 */
#ifndef RAF_CUDA_DRIVER_H
#define RAF_CUDA_DRIVER_H

#include "ir/ir.h"

#include <cuda.h>

/* The ABI version every entry point is asked for: CUDA 12.0, the first
 * with cuGetProcAddress_v2. A driver older than 12.0 is refused. */
enum { RAF_CUDA_ABI_VERSION = 12000 };

/* The library the NVIDIA driver installs. */
#define RAF_CUDA_DRIVER_LIBRARY "libcuda.so.1"

typedef struct raf_cuda_driver {
  void *library;    /* dlopen's handle */
  bool initialized; /* cuInit was called: the library is never closed */
  int version;   /* the driver's CUDA version: 12040 for 12.4 */
#define CU_ENTRY(name, params) CUresult(CUDAAPI *name) params;
#include "runtime/cuda/driver.def"
#undef CU_ENTRY
} raf_cuda_driver;

/* Opens the driver library `library` (RAF_CUDA_DRIVER_LIBRARY but in
 * tests), resolves every entry point and calls cuInit. *out belongs to the
 * caller: close it with raf_cuda_driver_unload. On failure reports one
 * line and sets *out to NULL:
 *   "no libcuda.so.1 (no NVIDIA driver)"           no such library
 *   "cannot load L: <dlerror>"                      another dlopen failure
 *   "L has no cuGetProcAddress_v2: ..."             a driver before 12.0
 *   "L has no cuMemAlloc (CUDA 12.0)"               an entry point missing
 *   "no CUDA device (cuInit: ...)"                  cuInit finds no GPU
 */
raf_status raf_cuda_driver_load(raf_ctx *ctx, const char *library,
                                raf_cuda_driver **out);
/* Frees drv; NULL is ignored. The library itself stays loaded once cuInit
 * has been called on it (unloading the driver after cuInit is unsafe): it
 * is the process's until exit. */
void raf_cuda_driver_unload(raf_cuda_driver *drv);

/* "out of memory (CUDA_ERROR_OUT_OF_MEMORY)": r in words, into buf. */
const char *raf_cuda_error_text(const raf_cuda_driver *drv, CUresult r,
                                char *buf, size_t size);

#endif
