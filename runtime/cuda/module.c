/* module.c: PTX modules and launches on a CUDA device (module.h).
 *
 * The driver's JIT writes its diagnostics into buffers the caller gives
 * (CU_JIT_ERROR_LOG_BUFFER); they are what makes a rejected PTX
 * debuggable, so a failed load quotes them.
 */
#include "runtime/cuda/module.h"

#include "codegen/codegen.h"
#include "runtime/cuda/cuda_device.h"
#include "runtime/device_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct raf_cuda_module {
  CUmodule module;
};

/* RAF_OK when r is CUDA_SUCCESS; else reports "cuda:N: what: why". */
static raf_status check(raf_device *d, CUresult r, const char *what,
                        const char *name) {
  if (r == CUDA_SUCCESS)
    return RAF_OK;
  char why[256];
  return raf_device_fail(
      d, "%s %s: %s", what, name,
      raf_cuda_error_text(raf_cuda_device_driver(d), r, why, sizeof why));
}

raf_status raf_cuda_module_load(raf_device *d, const char *ptx,
                                const char *what, raf_cuda_module **out) {
  *out = NULL;
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  const raf_cuda_driver *drv = raf_cuda_device_driver(d);
  char log[4096] = "";
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule module = NULL;
  CUresult r = drv->cuModuleLoadDataEx(&module, ptx, 2, opts, values);
  if (r != CUDA_SUCCESS) {
    char why[256];
    log[sizeof log - 1] = '\0';
    size_t n = strlen(log);
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
      log[--n] = '\0';
    return raf_device_fail(d, "loading %s: %s%s%s", what,
                           raf_cuda_error_text(drv, r, why, sizeof why),
                           n ? ": " : "", log);
  }
  raf_cuda_module *m = malloc(sizeof *m);
  if (!m) {
    drv->cuModuleUnload(module);
    return raf_device_fail(d, "loading %s: out of memory", what);
  }
  m->module = module;
  *out = m;
  return RAF_OK;
}

/* The driver's JIT log, trimmed, after ": " (or "" when empty). */
static const char *trimmed(char *log, size_t size) {
  log[size - 1] = '\0';
  size_t n = strlen(log);
  while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
    log[--n] = '\0';
  return log;
}

raf_status raf_cuda_module_load_cached(raf_device *d, const char *ptx,
                                       const char *what,
                                       raf_cuda_module **out, bool *cached) {
  *out = NULL;
  if (cached)
    *cached = false;
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  const raf_cuda_driver *drv = raf_cuda_device_driver(d);
  int major, minor;
  raf_cuda_device_capability(d, &major, &minor);
  char cc[32], version[32];
  snprintf(cc, sizeof cc, "cc %d.%d", major, minor);
  snprintf(version, sizeof version, "driver %d", drv->version);
  const char *pieces[] = {"cubin", ptx, cc, version, NULL};
  size_t size = 0;
  void *cubin = raf_cg_cache_get(pieces, ".cubin", &size);
  if (cubin) {
    raf_status rc = raf_cuda_module_load(d, cubin, what, out);
    free(cubin);
    if (rc == RAF_OK && cached)
      *cached = true;
    return rc;
  }
  char log[4096] = "";
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUlinkState link = NULL;
  CUresult r = drv->cuLinkCreate(2, opts, values, &link);
  if (r == CUDA_SUCCESS)
    r = drv->cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx,
                           strlen(ptx) + 1, what, 0, NULL, NULL);
  void *image = NULL;
  if (r == CUDA_SUCCESS)
    r = drv->cuLinkComplete(link, &image, &size);
  raf_status rc;
  if (r != CUDA_SUCCESS) {
    char why[256];
    const char *l = trimmed(log, sizeof log);
    rc = raf_device_fail(d, "compiling %s: %s%s%s", what,
                         raf_cuda_error_text(drv, r, why, sizeof why),
                         *l ? ": " : "", l);
  } else {
    /* The cache is an optimisation: a failed put changes nothing. */
    (void)raf_cg_cache_put(pieces, ".cubin", image, size);
    rc = raf_cuda_module_load(d, image, what, out);
  }
  if (link)
    drv->cuLinkDestroy(link); /* owns image */
  return rc;
}

void raf_cuda_module_unload(raf_device *d, raf_cuda_module *m) {
  if (!m)
    return;
  if (raf_cuda_device_make_current(d) == RAF_OK)
    raf_cuda_device_driver(d)->cuModuleUnload(m->module);
  free(m);
}

raf_status raf_cuda_module_function(raf_device *d, raf_cuda_module *m,
                                    const char *name, CUfunction *out) {
  *out = NULL;
  return check(d,
               raf_cuda_device_driver(d)->cuModuleGetFunction(out, m->module,
                                                              name),
               "cuModuleGetFunction", name);
}

raf_status raf_cuda_launch(raf_device *d, CUfunction f, const char *name,
                           const raf_cuda_dims *dims, void **params) {
  if (raf_cuda_device_make_current(d) != RAF_OK)
    return RAF_ERROR;
  return check(d,
               raf_cuda_device_driver(d)->cuLaunchKernel(
                   f, dims->grid[0], dims->grid[1], dims->grid[2],
                   dims->block[0], dims->block[1], dims->block[2],
                   dims->shared_bytes, (CUstream)raf_device_stream(d), params,
                   NULL),
               "launching", name);
}
