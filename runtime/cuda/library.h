/* library.h: finding and opening a library of NVIDIA's at run time.
 *
 * raf links none of NVIDIA's libraries: the driver comes through
 * cuGetProcAddress (driver.h), and cuBLASLt (cublaslt.h) and NCCL
 * (nccl.h) through dlopen and dlsym. A machine may keep them in the
 * toolkit, in a distribution's folder or in Python's site-packages (where
 * PyTorch's pip wheels put them), and its driver decides which major
 * version can run, so the search is:
 *
 *   $ENV, a file name or path; when set, nothing else is tried.
 *   Else each name, in this order: the driver's major first when the
 *   library follows the driver (libcublasLt.so.12 for a 12.x driver, .so.13
 *   for 13.x), then the other known majors, newest first, then the
 *   unversioned name; each name is tried in every folder, in this order,
 *   before the next name:
 *     the loader's search path (LD_LIBRARY_PATH, ld.so.cache, ...)
 *     $CUDA_HOME/lib64 and $CUDA_HOME/targets/T/lib
 *     the library's site-packages folders (nvidia/cublas/lib, ...) under
 *       each of $RAF_PYTHON_SITE's folders (':'-separated),
 *       $VIRTUAL_ENV/lib/python3.N/site-packages and
 *       $CONDA_PREFIX/lib/python3.N/site-packages (python3.N: a glob of
 *       python3*); then $CONDA_PREFIX/lib
 *     the toolkit's library folder found when raf was configured
 *     /usr/local/cuda/lib64, /usr/local/cuda/targets/T/lib, the same of
 *       /usr/local/cuda-*, and /usr/lib/M
 *     the site-packages folders under ~/.local/lib/python3.N/site-packages,
 *       /usr/local/lib/python3.N/dist-packages, /usr/lib/python3/dist-packages
 *       and /usr/local/lib/python3.N/site-packages
 *   (T is x86_64-linux and M x86_64-linux-gnu on x86-64; sbsa-linux and
 *   aarch64-linux-gnu on Arm.) What the environment names comes before
 *   what is merely installed. A glob's matches are tried newest first
 *   (python3.12 before python3.9).
 *
 * The search is two steps, so that tests can check the first without a
 * filesystem: raf_cuda_search_plan makes the ordered folders and names
 * from an explicit raf_cuda_search_env, and raf_cuda_search_open expands
 * the folders' globs and dlopens the candidates.
 */
#ifndef RAF_CUDA_LIBRARY_H
#define RAF_CUDA_LIBRARY_H

#include "ir/ir.h"

#include <stddef.h>

#if defined(__aarch64__)
#define RAF_CUDA_TARGET "sbsa-linux"
#define RAF_CUDA_MULTIARCH "aarch64-linux-gnu"
#else
#define RAF_CUDA_TARGET "x86_64-linux"
#define RAF_CUDA_MULTIARCH "x86_64-linux-gnu"
#endif

/* What to look for: the file name before its major ("libcublasLt.so"),
 * the majors known, newest first (0-terminated), whether the driver's
 * major goes first, the folders under site-packages that pip's wheels use
 * (NULL-terminated), the variable that overrides the search, what the
 * library is in words ("cuBLASLt") and where it comes from ("the CUDA
 * toolkit"). */
typedef struct raf_cuda_library {
  const char *stem;
  int majors[4];
  bool follows_driver;
  const char *pip[4];
  const char *env;
  const char *what;
  const char *source;
} raf_cuda_library;

/* The libraries raf loads this way (library.c), one description each, which
 * their loaders (cublaslt.c, nccl.c, cudnn_lib.c) and the search's test share. */
extern const raf_cuda_library raf_cuda_cublaslt_library;
extern const raf_cuda_library raf_cuda_nccl_library;
extern const raf_cuda_library raf_cuda_cudnn_library;

/* Everything the search reads from outside, so that a test can give its
 * own: the variables (NULL or "" when unset), the toolkit folder found at
 * configure time and cuDriverGetVersion's number (12040; 0 unknown). */
typedef struct raf_cuda_search_env {
  const char *override; /* $ENV of the library */
  const char *cuda_home;
  const char *python_site; /* $RAF_PYTHON_SITE */
  const char *virtual_env;
  const char *conda_prefix;
  const char *home;
  const char *libdir;
  int driver_version;
} raf_cuda_search_env;

/* The process's environment for lib. */
void raf_cuda_search_env_get(const raf_cuda_library *lib, int driver_version,
                             raf_cuda_search_env *env);

enum {
  RAF_CUDA_SEARCH_NAMES = 8,
  RAF_CUDA_SEARCH_DIRS = 48,
  RAF_CUDA_SEARCH_PATH = 256
};

/* One folder of a search: a path that may hold glob patterns ("" is the
 * loader's search path), and for a folder under site-packages the index
 * of its site in sites (else -1), which lets a message list each site
 * once. */
typedef struct raf_cuda_search_dir {
  char path[RAF_CUDA_SEARCH_PATH];
  int site;
} raf_cuda_search_dir;

/* The candidates, in order: every dir for names[0], then every dir for
 * names[1], ...; or, when override is not empty, that file alone. Folders
 * past RAF_CUDA_SEARCH_DIRS (a $RAF_PYTHON_SITE of dozens) are left out,
 * as are paths too long for RAF_CUDA_SEARCH_PATH; a folder given twice is
 * kept once, at its first place. */
typedef struct raf_cuda_search {
  char override[RAF_CUDA_SEARCH_PATH];
  char names[RAF_CUDA_SEARCH_NAMES][64];
  int nnames;
  raf_cuda_search_dir dirs[RAF_CUDA_SEARCH_DIRS];
  int ndirs;
  char sites[RAF_CUDA_SEARCH_DIRS][RAF_CUDA_SEARCH_PATH];
  int nsites;
} raf_cuda_search;

/* Fills *plan with lib's candidates under env (library.h's top). Pure: it
 * reads neither the filesystem nor the environment. */
void raf_cuda_search_plan(const raf_cuda_library *lib,
                          const raf_cuda_search_env *env,
                          raf_cuda_search *plan);

/* dlopen's handle of the first candidate of plan that loads, its path in
 * `path`; each folder is a glob(3) pattern whose matches are tried newest
 * first. A candidate that exists but does not load is passed over for the
 * next. On failure reports one line and returns NULL:
 *   "no NAME, .so.N or .so (WHAT) on the loader's path, in DIR, ..., or in
 *    PIP, ... under SITE, ...: set ENV or install SOURCE"  none found
 *   "no P (WHAT, ENV): set ENV or install SOURCE"     the override names none
 *   "cannot load P: <dlerror>"       the first that was found but failed */
void *raf_cuda_search_open(raf_ctx *ctx, const raf_cuda_library *lib,
                           const raf_cuda_search *plan, char *path,
                           size_t size);

/* raf_cuda_search_open of the process's plan for lib and driver_version
 * (cuDriverGetVersion's number, 0 when unknown); the handle belongs to
 * the caller (dlclose). */
void *raf_cuda_library_open(raf_ctx *ctx, const raf_cuda_library *lib,
                            int driver_version, char *path, size_t size);

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
                            int driver_version, const raf_cuda_symbol *syms,
                            int nsyms, void *table, char *path, size_t size);

#endif
