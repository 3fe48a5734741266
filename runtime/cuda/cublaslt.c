/* cublaslt.c: loading cuBLASLt (cublaslt.h).
 *
 * library.h finds and opens it, then dlsym resolves every entry point of
 * cublaslt.def. cuBLASLt has no versioned lookup like the driver's
 * cuGetProcAddress: its exported names are its ABI, and the parameters of
 * those raf calls are the same in CUDA 12 and 13.
 */
#include "runtime/cuda/cublaslt.h"

#include "runtime/cuda/library.h"

#include <stddef.h>
#include <stdlib.h>

static const raf_cuda_symbol symbols[] = {
#define LT_ENTRY(ret, name, params) {#name, offsetof(raf_cublaslt, name)},
#include "runtime/cuda/cublaslt.def"
#undef LT_ENTRY
};

raf_status raf_cublaslt_load(raf_ctx *ctx, int driver_version,
                             raf_cublaslt **out) {
  raf_cublaslt *lt = calloc(1, sizeof *lt);
  *out = NULL;
  if (!lt) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  lt->library = raf_cuda_library_load(
      ctx, &raf_cuda_cublaslt_library, driver_version, symbols,
      sizeof symbols / sizeof symbols[0], lt, lt->path, sizeof lt->path);
  if (!lt->library) {
    raf_cublaslt_unload(lt);
    return RAF_ERROR;
  }
  lt->version = lt->cublasLtGetVersion();
  *out = lt;
  return RAF_OK;
}

void raf_cublaslt_unload(raf_cublaslt *lt) {
  /* The library stays loaded: cuBLASLt keeps process-wide state (its
   * static C++ runtime's allocations among it) that unloading would strand,
   * and a later executor opens it again for nothing. */
  free(lt);
}

const char *raf_cublaslt_status_text(const raf_cublaslt *lt,
                                     cublasStatus_t s) {
  const char *t = lt ? lt->cublasLtGetStatusString(s) : NULL;
  return t ? t : "unknown cuBLAS status";
}
