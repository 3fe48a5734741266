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

/* A function pointer of a table struct to resolve: its symbol and its
 * offset in the struct. */
typedef struct raf_cuda_symbol {
  const char *name;
  size_t offset;
} raf_cuda_symbol;

/* raf_cuda_library_open, then every symbol of syms into the function
 * pointers of `table` (a struct whose members syms names). The handle, or
 * NULL when the library was not found or lacks a symbol ("P has no NAME
 * (WHAT)"), reported. */
void *raf_cuda_library_load(raf_ctx *ctx, const raf_cuda_library *lib,
                            const raf_cuda_symbol *syms, int nsyms,
                            void *table, char *path, size_t size);

#endif
