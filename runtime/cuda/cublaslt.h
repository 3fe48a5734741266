/* cublaslt.h: cuBLASLt, loaded at run time.
 *
 * As with the driver (driver.h), raf never links cuBLAS: the cublas
 * dialect opens libcublasLt with dlopen when an executor first needs it,
 * and resolves the entry points of cublaslt.def with dlsym. Building
 * needs only the toolkit's cublasLt.h, for the types. The library is
 * looked for as library.h says: libcublasLt.so.N for the driver's CUDA
 * major N first, then .so.13, .so.12 and libcublasLt.so, on the loader's
 * path, in the toolkit's folders and in pip's nvidia/cublas/lib and
 * nvidia/cu13/lib; RAF_CUBLASLT overrides the search.
 */
#ifndef RAF_CUDA_CUBLASLT_H
#define RAF_CUDA_CUBLASLT_H

#include "ir/ir.h"

#include <cublasLt.h>

typedef struct raf_cublaslt {
  void *library;  /* dlopen's handle */
  size_t version; /* cublasLtGetVersion: 130000 for 13.0.0 */
  char path[256]; /* the name it was opened by */
#define LT_ENTRY(ret, name, params) ret (*name) params;
#include "runtime/cuda/cublaslt.def"
#undef LT_ENTRY
} raf_cublaslt;

/* Finds and opens cuBLASLt for the driver of cuDriverGetVersion's
 * driver_version (12040; 0 when unknown) and resolves every entry point.
 * *out belongs to the caller: raf_cublaslt_unload. On failure reports one
 * line and sets *out to NULL:
 *   "no libcublasLt.so.12, .so.13 or .so (cuBLASLt) on the loader's path,
 *    nor in DIRS, nor in nvidia/cublas/lib or nvidia/cu13/lib of SITES:
 *    set RAF_CUBLASLT or install the CUDA toolkit"   none found
 *   "no P (cuBLASLt, RAF_CUBLASLT): set RAF_CUBLASLT or install the CUDA
 *    toolkit"                                    RAF_CUBLASLT names none
 *   "cannot load P: <dlerror>"                  another dlopen failure
 *   "P has no cublasLtMatmul (cuBLASLt)"        an entry point missing */
raf_status raf_cublaslt_load(raf_ctx *ctx, int driver_version,
                             raf_cublaslt **out);
/* Frees lt; the library itself stays loaded for the process (dlclose
 * would strand cuBLASLt's process-wide allocations). NULL is ignored. */
void raf_cublaslt_unload(raf_cublaslt *lt);

/* The status in words ("CUBLAS_STATUS_NOT_SUPPORTED"), or a number. */
const char *raf_cublaslt_status_text(const raf_cublaslt *lt,
                                     cublasStatus_t s);

#endif
