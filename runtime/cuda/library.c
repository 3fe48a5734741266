/* library.c: finding and opening NVIDIA's libraries (library.h).
 *
 * The plan (raf_cuda_search_plan) is plain string work on an explicit
 * environment; the open step (raf_cuda_search_open) alone touches the
 * filesystem, through glob(3) and dlopen.
 */
#include "runtime/cuda/library.h"

#include <dlfcn.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RAF_CUDA_LIBDIR
#define RAF_CUDA_LIBDIR ""
#endif

/* cuBLASLt's major is the toolkit's, which the driver must be as new as:
 * the driver's major first. pip's CUDA 12 wheel (nvidia-cublas-cu12) keeps
 * it in nvidia/cublas/lib, CUDA 13's wheels in nvidia/cu13/lib. */
const raf_cuda_library raf_cuda_cublaslt_library = {
    .stem = "libcublasLt.so",
    .majors = {13, 12},
    .follows_driver = true,
    .pip = {"nvidia/cublas/lib", "nvidia/cu13/lib"},
    .env = "RAF_CUBLASLT",
    .what = "cuBLASLt",
    .source = "the CUDA toolkit"};

/* NCCL's major (2) is its own, not CUDA's. pip's wheels (nvidia-nccl-cu12
 * and -cu13) both keep it in nvidia/nccl/lib. */
const raf_cuda_library raf_cuda_nccl_library = {
    .stem = "libnccl.so",
    .majors = {2},
    .follows_driver = false,
    .pip = {"nvidia/nccl/lib"},
    .env = "RAF_NCCL",
    .what = "NCCL",
    .source = "NCCL (libnccl2)"};

/* cuDNN's major (9) is its own. Its backend API is in the split library
 * libcudnn_graph, which loads the engine libraries beside it; pip's wheels
 * (nvidia-cudnn-cu12 and -cu13, which PyTorch installs) keep it in
 * nvidia/cudnn/lib. */
const raf_cuda_library raf_cuda_cudnn_library = {
    .stem = "libcudnn_graph.so",
    .majors = {9},
    .follows_driver = false,
    .pip = {"nvidia/cudnn/lib"},
    .env = "RAF_CUDNN",
    .what = "cuDNN",
    .source = "cuDNN 9"};

static bool set(const char *s) { return s && s[0]; }

/* ---- The plan ------------------------------------------------------------- */

static void add_name(raf_cuda_search *p, const char *stem, int major) {
  char name[sizeof p->names[0]];
  int n = major > 0 ? snprintf(name, sizeof name, "%s.%d", stem, major)
                    : snprintf(name, sizeof name, "%s", stem);
  if (n < 0 || (size_t)n >= sizeof name || p->nnames == RAF_CUDA_SEARCH_NAMES)
    return;
  for (int i = 0; i < p->nnames; i++)
    if (strcmp(p->names[i], name) == 0)
      return;
  memcpy(p->names[p->nnames++], name, (size_t)n + 1);
}

/* Appends the folder that fmt makes, unless it is there already, too long
 * or past the plan's room (library.h: left out rather than cut short, since
 * a cut path names another folder). */
static void add_dir(raf_cuda_search *p, int site, const char *fmt, ...) {
  char path[RAF_CUDA_SEARCH_PATH];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(path, sizeof path, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof path || p->ndirs == RAF_CUDA_SEARCH_DIRS)
    return;
  for (int i = 0; i < p->ndirs; i++)
    if (strcmp(p->dirs[i].path, path) == 0)
      return;
  raf_cuda_search_dir *d = &p->dirs[p->ndirs++];
  memcpy(d->path, path, (size_t)n + 1);
  d->site = site;
}

/* A toolkit's two library folders: lib64 (a link to targets/T/lib in
 * NVIDIA's packages) and targets/T/lib, which some installs have alone. */
static void add_root(raf_cuda_search *p, const char *root) {
  add_dir(p, -1, "%s/lib64", root);
  add_dir(p, -1, "%s/targets/" RAF_CUDA_TARGET "/lib", root);
}

/* The library's pip folders under the site-packages folder `site`
 * (fmt), remembered once in p->sites for messages. */
static void add_site(raf_cuda_search *p, const raf_cuda_library *lib,
                     const char *fmt, ...) {
  char site[RAF_CUDA_SEARCH_PATH];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(site, sizeof site, fmt, ap);
  va_end(ap);
  if (n <= 0 || (size_t)n >= sizeof site || !lib->pip[0])
    return;
  int k = 0;
  while (k < p->nsites && strcmp(p->sites[k], site) != 0)
    k++;
  if (k == RAF_CUDA_SEARCH_DIRS)
    return;
  if (k == p->nsites)
    memcpy(p->sites[p->nsites++], site, (size_t)n + 1);
  for (int i = 0; i < 4 && lib->pip[i]; i++)
    add_dir(p, k, "%s/%s", site, lib->pip[i]);
}

void raf_cuda_search_plan(const raf_cuda_library *lib,
                          const raf_cuda_search_env *env,
                          raf_cuda_search *p) {
  memset(p, 0, sizeof *p);
  if (set(env->override)) {
    snprintf(p->override, sizeof p->override, "%s", env->override);
    return;
  }
  /* A library built for a newer CUDA than the driver's cannot run on it,
   * and one for an older major can: the driver's major first. */
  if (lib->follows_driver && env->driver_version > 0)
    add_name(p, lib->stem, env->driver_version / 1000);
  for (int i = 0; i < 4 && lib->majors[i]; i++)
    add_name(p, lib->stem, lib->majors[i]);
  add_name(p, lib->stem, 0);

  /* What the environment names, before what is merely installed. */
  add_dir(p, -1, "%s", "");
  if (set(env->cuda_home))
    add_root(p, env->cuda_home);
  for (const char *s = set(env->python_site) ? env->python_site : ""; *s;) {
    size_t n = strcspn(s, ":");
    if (n)
      add_site(p, lib, "%.*s", (int)n, s);
    s += n + (s[n] == ':');
  }
  if (set(env->virtual_env))
    add_site(p, lib, "%s/lib/python3*/site-packages", env->virtual_env);
  if (set(env->conda_prefix)) {
    add_site(p, lib, "%s/lib/python3*/site-packages", env->conda_prefix);
    add_dir(p, -1, "%s/lib", env->conda_prefix); /* conda's own packages */
  }
  if (set(env->libdir))
    add_dir(p, -1, "%s", env->libdir);
  add_root(p, "/usr/local/cuda");
  add_root(p, "/usr/local/cuda-*");
  add_dir(p, -1, "%s", "/usr/lib/" RAF_CUDA_MULTIARCH);
  if (set(env->home))
    add_site(p, lib, "%s/.local/lib/python3*/site-packages", env->home);
  add_site(p, lib, "%s", "/usr/local/lib/python3*/dist-packages");
  add_site(p, lib, "%s", "/usr/lib/python3/dist-packages");
  add_site(p, lib, "%s", "/usr/local/lib/python3*/site-packages");
}

void raf_cuda_search_env_get(const raf_cuda_library *lib, int driver_version,
                             raf_cuda_search_env *env) {
  *env = (raf_cuda_search_env){
      .override = getenv(lib->env),
      .cuda_home = getenv("CUDA_HOME"),
      .python_site = getenv("RAF_PYTHON_SITE"),
      .virtual_env = getenv("VIRTUAL_ENV"),
      .conda_prefix = getenv("CONDA_PREFIX"),
      .home = getenv("HOME"),
      .libdir = RAF_CUDA_LIBDIR,
      .driver_version = driver_version,
  };
}

/* ---- Opening -------------------------------------------------------------- */

/* Whether dlopen's error `err` for `path` says path itself is missing (a
 * missing dependency names the dependency, and is a failure to report). */
static bool not_found(const char *path, const char *err) {
  size_t n = strlen(path);
  return strncmp(err, path, n) == 0 && err[n] == ':' &&
         strstr(err + n, "No such file") != NULL;
}

/* a < b as versions: digit runs compare as numbers (python3.9 before
 * python3.12, cuda-12.9 before cuda-12.10). */
static int version_cmp(const char *a, const char *b) {
  while (*a && *b) {
    if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
      size_t na = strspn(a, "0123456789"), nb = strspn(b, "0123456789");
      if (na != nb)
        return na < nb ? -1 : 1;
      int c = strncmp(a, b, na);
      if (c)
        return c;
      a += na;
      b += nb;
    } else if (*a != *b) {
      return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
    } else {
      a++;
      b++;
    }
  }
  return *a ? 1 : *b ? -1 : 0;
}

static int newest_first(const void *a, const void *b) {
  return version_cmp(*(char *const *)b, *(char *const *)a);
}

/* The first failure to load, which is reported when nothing loads. */
typedef struct failure {
  char path[RAF_CUDA_SEARCH_PATH];
  char err[512];
} failure;

/* dlopen of path; NULL when it is missing, or after recording in *f the
 * first failure of a file that is there. */
static void *try_open(const char *path, failure *f) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *e = dlerror();
    if (!e)
      e = "unknown error";
    if (!f->path[0] && !not_found(path, e)) {
      snprintf(f->path, sizeof f->path, "%s", path);
      snprintf(f->err, sizeof f->err, "%s", e);
    }
  }
  return handle;
}

/* Tries the matches of dir/name, newest first. */
static void *open_in(const char *dir, const char *name, char *path,
                     size_t size, failure *f) {
  if (!dir[0]) {
    snprintf(path, size, "%s", name);
    return try_open(name, f);
  }
  char pattern[RAF_CUDA_SEARCH_PATH + 64];
  snprintf(pattern, sizeof pattern, "%s/%s", dir, name);
  glob_t g = {0}; /* globfree wants it set even when glob fails early */
  void *handle = NULL;
  if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0) {
    qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, newest_first);
    for (size_t i = 0; !handle && i < g.gl_pathc; i++) {
      snprintf(path, size, "%s", g.gl_pathv[i]);
      handle = try_open(g.gl_pathv[i], f);
    }
  }
  globfree(&g);
  return handle;
}

/* A message that grows, cut at its buffer's end. */
typedef struct text {
  char buf[4096];
  size_t len;
} text;

static void put(text *t, const char *fmt, ...) {
  if (t->len >= sizeof t->buf - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
  va_end(ap);
  if (n > 0)
    t->len += (size_t)n;
  if (t->len > sizeof t->buf - 1)
    t->len = sizeof t->buf - 1;
}

/* ", " between items and " or " before the last of n. */
static const char *sep(int i, int n) {
  return i == 0 ? "" : i == n - 1 ? " or " : ", ";
}

/* "no libcublasLt.so.12, .so.13 or .so (cuBLASLt) on the loader's path,
 * nor in DIRS, nor in PIPS of SITES: set ENV or install SOURCE". */
static void report_none(raf_ctx *ctx, const raf_cuda_library *lib,
                        const raf_cuda_search *p) {
  text t;
  t.len = 0;
  t.buf[0] = 0;
  size_t stem = strlen(lib->stem);
  /* Names after the first as their suffix from ".so": ".so.13". */
  bool so = stem >= 3 && strcmp(lib->stem + stem - 3, ".so") == 0;
  put(&t, "no ");
  for (int i = 0; i < p->nnames; i++) {
    const char *n = p->names[i];
    if (i && so && strncmp(n, lib->stem, stem) == 0)
      n += stem - 3;
    put(&t, "%s%s", sep(i, p->nnames), n);
  }
  put(&t, " (%s)", lib->what);
  bool loader = false;
  int nplain = 0;
  for (int i = 0; i < p->ndirs; i++) {
    loader |= !p->dirs[i].path[0];
    nplain += p->dirs[i].path[0] && p->dirs[i].site < 0;
  }
  const char *nor = loader ? ", nor in" : " in";
  if (loader)
    put(&t, " on the loader's path");
  if (nplain) {
    put(&t, "%s ", nor);
    nor = ", nor in";
    for (int i = 0, k = 0; i < p->ndirs; i++)
      if (p->dirs[i].path[0] && p->dirs[i].site < 0)
        put(&t, "%s%s", k++ ? ", " : "", p->dirs[i].path);
  }
  /* The pip folders once, then each site that has them. */
  int npip = 0;
  while (npip < 4 && lib->pip[npip])
    npip++;
  bool first = true;
  for (int k = 0; k < p->nsites; k++) {
    bool used = false;
    for (int i = 0; i < p->ndirs; i++)
      used |= p->dirs[i].site == k;
    if (!used)
      continue;
    if (first) {
      put(&t, "%s ", nor);
      for (int i = 0; i < npip; i++)
        put(&t, "%s%s", sep(i, npip), lib->pip[i]);
      put(&t, " of ");
    }
    put(&t, "%s%s", first ? "" : ", ", p->sites[k]);
    first = false;
  }
  raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                  "%s: set %s or install %s", t.buf, lib->env, lib->source);
}

void *raf_cuda_search_open(raf_ctx *ctx, const raf_cuda_library *lib,
                           const raf_cuda_search *p, char *path,
                           size_t size) {
  failure f = {"", ""};
  void *handle = NULL;
  if (p->override[0]) {
    snprintf(path, size, "%s", p->override);
    handle = try_open(p->override, &f);
    if (!handle && !f.path[0]) {
      raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "no %s (%s, %s): set %s or install %s", p->override,
                      lib->what, lib->env, lib->env, lib->source);
      return NULL;
    }
  }
  for (int n = 0; !handle && !p->override[0] && n < p->nnames; n++)
    for (int d = 0; !handle && d < p->ndirs; d++)
      handle = open_in(p->dirs[d].path, p->names[n], path, size, &f);
  if (handle)
    return handle;
  if (f.path[0]) {
    snprintf(path, size, "%s", f.path);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "cannot load %s: %s",
                    f.path, f.err);
  } else {
    report_none(ctx, lib, p);
  }
  return NULL;
}

void *raf_cuda_library_open(raf_ctx *ctx, const raf_cuda_library *lib,
                            int driver_version, char *path, size_t size) {
  raf_cuda_search_env env;
  raf_cuda_search_env_get(lib, driver_version, &env);
  raf_cuda_search *plan = malloc(sizeof *plan); /* 25 KiB: off the stack */
  if (!plan) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return NULL;
  }
  raf_cuda_search_plan(lib, &env, plan);
  void *handle = raf_cuda_search_open(ctx, lib, plan, path, size);
  free(plan);
  return handle;
}

void *raf_cuda_library_load(raf_ctx *ctx, const raf_cuda_library *lib,
                            int driver_version, const raf_cuda_symbol *syms,
                            int nsyms, void *table, char *path, size_t size) {
  void *handle = raf_cuda_library_open(ctx, lib, driver_version, path, size);
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
