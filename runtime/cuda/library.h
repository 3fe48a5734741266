/* library.h: finding and opening a library of NVIDIA's at run time.
 *
 * raf links none of NVIDIA's libraries: the driver comes through
 * cuGetProcAddress (driver.h), and cuBLASLt (cublaslt.h) and NCCL
 * (nccl.h) through dlopen and dlsym, from whichever of these is found
 * first:
 *   $ENV, a file name or path; when set, nothing else is tried
 *   each of the names on the loader's search path
 *   the same names in $CUDA_HOME/lib64, then in the toolkit's library
 *   folder found when raf was configured (RAF_CUDA_LIBDIR)
 */
#ifndef RAF_CUDA_LIBRARY_H
#define RAF_CUDA_LIBRARY_H

#include "ir/ir.h"

#include <stddef.h>

/* What to look for: the names to try, newest first (the last is the
 * unversioned name messages use), the variable that overrides them, what
 * the library is in words ("cuBLASLt") and where it comes from ("the CUDA
 * toolkit"). */
typedef struct raf_cuda_library {
  const char *const *names;
  int nnames;
  const char *env;
  const char *what;
  const char *source;
} raf_cuda_library;

/* dlopen's handle of the first library of lib found, its name in path;
 * the handle belongs to the caller (dlclose). On failure reports one line
 * and returns NULL:
 *   "no NAME (WHAT): set ENV or install SOURCE"       none found
 *   "no P (WHAT, ENV): set ENV or install SOURCE"     ENV names none
 *   "cannot load P: <dlerror>"                        another failure */
void *raf_cuda_library_open(raf_ctx *ctx, const raf_cuda_library *lib,
                            char *path, size_t size);

/* Resolves symbol `name` of handle into *fn (a function pointer's
 * storage, fn_size bytes); false, reported as "P has no NAME (WHAT)", when
 * the library lacks it. */
bool raf_cuda_library_symbol(raf_ctx *ctx, void *handle, const char *path,
                             const raf_cuda_library *lib, const char *name,
                             void *fn, size_t fn_size);

#endif
