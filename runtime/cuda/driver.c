/* driver.c: loading the CUDA driver library (driver.h).
 *
 * dlopen, then cuGetProcAddress_v2 by dlsym (the one symbol looked up by
 * name), then every entry point of driver.def through it at
 * RAF_CUDA_ABI_VERSION: the driver returns the versioned function
 * (cuMemAlloc_v2 for cuMemAlloc) whose parameters match that version's
 * cuda.h, whatever newer versions it also has.
 *
 * Once cuInit has been called the library stays loaded for the life of
 * the process: the driver starts threads and registers handlers that
 * outlive any context, and unloading it under them is undefined (and
 * crashes some drivers at exit). Only a library that was never
 * initialised is closed again.
 */
#include "runtime/cuda/driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult(CUDAAPI *get_proc_fn)(const char *symbol, void **pfn,
                                       int version, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status);

/* Resolves one entry point into *pfn; false after reporting. */
static bool resolve(raf_ctx *ctx, const char *library, get_proc_fn get,
                    const char *name, void **pfn) {
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  *pfn = NULL;
  CUresult r = get(name, pfn, RAF_CUDA_ABI_VERSION,
                   CU_GET_PROC_ADDRESS_DEFAULT, &found);
  if (r == CUDA_SUCCESS && *pfn && found == CU_GET_PROC_ADDRESS_SUCCESS)
    return true;
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                  "%s has no %s (CUDA %d.%d): cuGetProcAddress returned "
                  "%d, status %d",
                  library, name, RAF_CUDA_ABI_VERSION / 1000,
                  RAF_CUDA_ABI_VERSION % 1000 / 10, (int)r, (int)found);
  *pfn = NULL;
  return false;
}

const char *raf_cuda_error_text(const raf_cuda_driver *drv, CUresult r,
                                char *buf, size_t size) {
  const char *text = NULL, *name = NULL;
  if (!drv || drv->cuGetErrorString(r, &text) != CUDA_SUCCESS)
    text = NULL;
  if (!drv || drv->cuGetErrorName(r, &name) != CUDA_SUCCESS)
    name = NULL;
  if (text && name)
    snprintf(buf, size, "%s (%s)", text, name);
  else
    snprintf(buf, size, "CUDA error %d", (int)r);
  return buf;
}

/* Whether dlerror's text says the file was not found. */
static bool no_such_file(const char *err) {
  return err && strstr(err, "No such file") != NULL;
}

raf_status raf_cuda_driver_load(raf_ctx *ctx, const char *library,
                                raf_cuda_driver **out) {
  *out = NULL;
  void *lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *err = dlerror();
    if (no_such_file(err))
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no %s (no NVIDIA driver)", library);
    else
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "cannot load %s: %s",
                      library, err ? err : "unknown error");
    return RAF_ERROR;
  }
  /* POSIX's way from dlsym's object pointer to a function pointer. */
  get_proc_fn get = NULL;
  void *sym = dlsym(lib, "cuGetProcAddress_v2");
  memcpy(&get, &sym, sizeof get);
  if (!get) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "%s has no cuGetProcAddress_v2: the NVIDIA driver is "
                    "older than CUDA 12.0, which raf needs",
                    library);
    dlclose(lib);
    return RAF_ERROR;
  }
  raf_cuda_driver *drv = calloc(1, sizeof *drv);
  if (!drv) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    dlclose(lib);
    return RAF_ERROR;
  }
  drv->library = lib;
  bool ok = true;
  void *pfn;
#define CU_ENTRY(name, params)                                                 \
  if (ok && (ok = resolve(ctx, library, get, #name, &pfn)))                    \
    memcpy(&drv->name, &pfn, sizeof pfn);
#include "runtime/cuda/driver.def"
#undef CU_ENTRY
  /* From here on the library is never closed (the file's comment). */
  drv->initialized = ok;
  CUresult r = ok ? drv->cuInit(0) : CUDA_SUCCESS;
  if (ok && r != CUDA_SUCCESS) {
    char why[256];
    raf_cuda_error_text(drv, r, why, sizeof why);
    if (r == CUDA_ERROR_NO_DEVICE)
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no CUDA device (cuInit: %s)", why);
    else
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "cuInit: %s", why);
    ok = false;
  }
  if (ok && (r = drv->cuDriverGetVersion(&drv->version)) != CUDA_SUCCESS) {
    char why[256];
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "cuDriverGetVersion: %s",
                    raf_cuda_error_text(drv, r, why, sizeof why));
    ok = false;
  }
  if (!ok) {
    raf_cuda_driver_unload(drv);
    return RAF_ERROR;
  }
  *out = drv;
  return RAF_OK;
}

void raf_cuda_driver_unload(raf_cuda_driver *drv) {
  if (!drv)
    return;
  /* After cuInit the handle is left open on purpose: see the top. */
  if (!drv->initialized)
    dlclose(drv->library);
  free(drv);
}
