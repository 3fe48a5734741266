/* cublaslt.c: loading cuBLASLt (cublaslt.h).
 *
 * library.h finds and opens it, then dlsym resolves every entry point of
 * cublaslt.def. cuBLASLt has no versioned lookup like the driver's
 * cuGetProcAddress: its exported names are its ABI, and the parameters of
 * those raf calls are the same in CUDA 12 and 13.
 */
#include "runtime/cuda/cublaslt.h"

#include "runtime/cuda/library.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                    "libcublasLt.so"};
static const raf_cuda_library cublaslt_library = {
    names, sizeof names / sizeof names[0], "RAF_CUBLASLT", "cuBLASLt",
    "the CUDA toolkit"};

raf_status raf_cublaslt_load(raf_ctx *ctx, raf_cublaslt **out) {
  *out = NULL;
  char path[256];
  void *lib = raf_cuda_library_open(ctx, &cublaslt_library, path, sizeof path);
  if (!lib)
    return RAF_ERROR;
  raf_cublaslt *lt = calloc(1, sizeof *lt);
  if (!lt) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  lt->library = lib;
  snprintf(lt->path, sizeof lt->path, "%s", path);
  bool ok = true;
#define LT_ENTRY(ret, name, params)                                            \
  ok = ok && raf_cuda_library_symbol(ctx, lib, path, &cublaslt_library, #name, \
                                     &lt->name, sizeof lt->name);
#include "runtime/cuda/cublaslt.def"
#undef LT_ENTRY
  if (!ok) {
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
