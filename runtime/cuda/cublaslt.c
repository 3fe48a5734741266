/* cublaslt.c: loading cuBLASLt (cublaslt.h).
 *
 * dlopen over a short list of names, then dlsym for every entry point of
 * cublaslt.def. cuBLASLt has no versioned lookup like the driver's
 * cuGetProcAddress: its exported names are its ABI, and the parameters of
 * those raf calls are the same in CUDA 12 and 13.
 */
#include "runtime/cuda/cublaslt.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RAF_CUDA_LIBDIR
#define RAF_CUDA_LIBDIR ""
#endif

static const char *const names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                    "libcublasLt.so"};
enum { NNAMES = sizeof names / sizeof names[0] };

/* dlopen of `path`; *err gets dlerror's text unless the file was not
 * there (then NULL). */
static void *open_one(const char *path, char *err, size_t size) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  err[0] = 0;
  if (!lib) {
    const char *e = dlerror();
    if (e && !strstr(e, "No such file"))
      snprintf(err, size, "%s", e);
  }
  return lib;
}

/* Tries the names in folder dir ("" for the loader's search path). */
static void *open_in(const char *dir, char *path, size_t size, char *err,
                     size_t esize) {
  for (int i = 0; i < NNAMES; i++) {
    if (dir[0])
      snprintf(path, size, "%s/%s", dir, names[i]);
    else
      snprintf(path, size, "%s", names[i]);
    void *lib = open_one(path, err, esize);
    if (lib || err[0])
      return lib;
  }
  return NULL;
}

raf_status raf_cublaslt_load(raf_ctx *ctx, raf_cublaslt **out) {
  *out = NULL;
  char path[256], err[512] = "";
  void *lib = NULL;
  const char *env = getenv("RAF_CUBLASLT");
  if (env && env[0]) {
    snprintf(path, sizeof path, "%s", env);
    lib = open_one(path, err, sizeof err);
    if (!lib && !err[0]) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no %s (cuBLASLt, RAF_CUBLASLT): set RAF_CUBLASLT or "
                      "install the CUDA toolkit",
                      path);
      return RAF_ERROR;
    }
  } else {
    char dir[200];
    const char *home = getenv("CUDA_HOME");
    lib = open_in("", path, sizeof path, err, sizeof err);
    if (!lib && !err[0] && home && home[0]) {
      snprintf(dir, sizeof dir, "%s/lib64", home);
      lib = open_in(dir, path, sizeof path, err, sizeof err);
    }
    if (!lib && !err[0] && RAF_CUDA_LIBDIR[0])
      lib = open_in(RAF_CUDA_LIBDIR, path, sizeof path, err, sizeof err);
    if (!lib && !err[0]) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no libcublasLt.so (cuBLASLt): set RAF_CUBLASLT or "
                      "install the CUDA toolkit");
      return RAF_ERROR;
    }
  }
  if (!lib) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "cannot load %s: %s",
                    path, err);
    return RAF_ERROR;
  }
  raf_cublaslt *lt = calloc(1, sizeof *lt);
  if (!lt) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    dlclose(lib);
    return RAF_ERROR;
  }
  lt->library = lib;
  snprintf(lt->path, sizeof lt->path, "%s", path);
  bool ok = true;
  /* POSIX's way from dlsym's object pointer to a function pointer. */
#define LT_ENTRY(ret, name, params)                                            \
  if (ok) {                                                                    \
    void *sym = dlsym(lib, #name);                                             \
    if (sym)                                                                   \
      memcpy(&lt->name, &sym, sizeof sym);                                     \
    else {                                                                     \
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,                        \
                      "%s has no %s (cuBLASLt)", path, #name);                 \
      ok = false;                                                              \
    }                                                                          \
  }
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
