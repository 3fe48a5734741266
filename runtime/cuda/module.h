/* module.h: PTX modules on a CUDA device, and kernel launches.
 *
 * Every GPU kernel of raf is PTX text: codegen's fused kernels
 * (raf_cg_compile_ptx) and the hand-written kernels of the .cu files of runtime/cuda/,
 * which nvcc turns into PTX when raf is built (raf_cuda_embedded_ptx). The
 * driver compiles PTX for the GPU it runs on when it is loaded, so one
 * build runs on every architecture from sm_80 on.
 *
 * Errors are reported to the device's context with what was being done
 * ("cuda:0: loading fused_3: ptxas fatal: ..."), including the driver's
 * JIT error log; nothing exits or prints.
 */
#ifndef RAF_CUDA_MODULE_H
#define RAF_CUDA_MODULE_H

#include "runtime/cuda/driver.h"
#include "runtime/device.h"

typedef struct raf_cuda_module raf_cuda_module;

/* Loads NUL-terminated PTX text on CUDA device d (cuModuleLoadDataEx).
 * `what` names it in messages ("fused_3", "kernels.cu"). *out belongs to
 * the caller: raf_cuda_module_unload. A PTX the driver rejects is an error
 * that quotes the JIT's error log. */
raf_status raf_cuda_module_load(raf_device *d, const char *ptx,
                                const char *what, raf_cuda_module **out);
/* As raf_cuda_module_load, for PTX generated at run time (codegen's):
 * compiled to a cubin by the driver's JIT linker (cuLinkCreate,
 * cuLinkAddData, cuLinkComplete), which goes into the on-disk kernel
 * cache (raf_cg_cache_put, ".cubin") keyed on the PTX, the device's
 * compute capability and the driver's version, and is loaded from there
 * on a later load of the same PTX (*cached set; NULL is fine): the
 * driver's JIT runs once per kernel, not once per process. */
raf_status raf_cuda_module_load_cached(raf_device *d, const char *ptx,
                                       const char *what,
                                       raf_cuda_module **out, bool *cached);
/* NULL is ignored. */
void raf_cuda_module_unload(raf_device *d, raf_cuda_module *m);

/* The kernel `name` (an .entry of the PTX) of module m into *out (owned by
 * the module). */
raf_status raf_cuda_module_function(raf_device *d, raf_cuda_module *m,
                                    const char *name, CUfunction *out);

/* One launch geometry: grid and block dims, and dynamic shared bytes. */
typedef struct raf_cuda_dims {
  unsigned grid[3], block[3];
  unsigned shared_bytes;
} raf_cuda_dims;

/* Queues kernel f (named `name` in messages) on d's stream with the
 * parameters `params` (an array of pointers to each parameter's value, as
 * cuLaunchKernel takes them). Returns when it is queued. */
raf_status raf_cuda_launch(raf_device *d, CUfunction f, const char *name,
                           const raf_cuda_dims *dims, void **params);

/* The PTX nvcc made at build time from runtime/cuda/NAME.cu ("kernels"
 * for kernels.cu), NUL-terminated static text, or NULL when no such file
 * was built (cuda_ptx.c, generated). */
const char *raf_cuda_embedded_ptx(const char *name);

#endif
