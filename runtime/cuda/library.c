/* library.c: finding and opening NVIDIA's libraries (library.h). */
#include "runtime/cuda/library.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RAF_CUDA_LIBDIR
#define RAF_CUDA_LIBDIR ""
#endif

/* dlopen of `path`; *err gets dlerror's text unless the file was not
 * there (then it stays empty). */
static void *open_one(const char *path, char *err, size_t size) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  err[0] = 0;
  if (!handle) {
    const char *e = dlerror();
    if (e && !strstr(e, "No such file"))
      snprintf(err, size, "%s", e);
  }
  return handle;
}

/* Tries lib's names in folder dir ("" for the loader's search path). */
static void *open_in(const raf_cuda_library *lib, const char *dir, char *path,
                     size_t size, char *err, size_t esize) {
  for (int i = 0; i < lib->nnames; i++) {
    if (dir[0])
      snprintf(path, size, "%s/%s", dir, lib->names[i]);
    else
      snprintf(path, size, "%s", lib->names[i]);
    void *handle = open_one(path, err, esize);
    if (handle || err[0])
      return handle;
  }
  return NULL;
}

void *raf_cuda_library_open(raf_ctx *ctx, const raf_cuda_library *lib,
                            char *path, size_t size) {
  char err[512] = "";
  void *handle = NULL;
  const char *env = getenv(lib->env);
  if (env && env[0]) {
    snprintf(path, size, "%s", env);
    handle = open_one(path, err, sizeof err);
    if (!handle && !err[0]) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no %s (%s, %s): set %s or install %s", path,
                      lib->what, lib->env, lib->env, lib->source);
      return NULL;
    }
  } else {
    char dir[200];
    const char *home = getenv("CUDA_HOME");
    handle = open_in(lib, "", path, size, err, sizeof err);
    if (!handle && !err[0] && home && home[0]) {
      snprintf(dir, sizeof dir, "%s/lib64", home);
      handle = open_in(lib, dir, path, size, err, sizeof err);
    }
    if (!handle && !err[0] && RAF_CUDA_LIBDIR[0])
      handle = open_in(lib, RAF_CUDA_LIBDIR, path, size, err, sizeof err);
    if (!handle && !err[0]) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no %s (%s): set %s or install %s",
                      lib->names[lib->nnames - 1], lib->what, lib->env,
                      lib->source);
      return NULL;
    }
  }
  if (!handle)
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "cannot load %s: %s",
                    path, err);
  return handle;
}

void *raf_cuda_library_load(raf_ctx *ctx, const raf_cuda_library *lib,
                            const raf_cuda_symbol *syms, int nsyms,
                            void *table, char *path, size_t size) {
  void *handle = raf_cuda_library_open(ctx, lib, path, size);
  for (int i = 0; handle && i < nsyms; i++) {
    void *sym = dlsym(handle, syms[i].name);
    if (!sym) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "%s has no %s (%s)",
                      path, syms[i].name, lib->what);
      return NULL; /* stays loaded, as a library found always does */
    }
    /* POSIX's way from dlsym's object pointer to a function pointer. */
    memcpy((char *)table + syms[i].offset, &sym, sizeof sym);
  }
  return handle;
}
