/* test_cuda_library.c: the search for NVIDIA's libraries
 * (runtime/cuda/library.h), which cuBLASLt and NCCL are loaded by.
 *
 * The plan on explicit environments: the order of folders and names, the
 * driver's major first for cuBLASLt and not for NCCL, the override alone,
 * folders kept once, $RAF_PYTHON_SITE's empty entries skipped. Then the
 * open step on folders made in a temporary directory: a site-packages
 * layout under a venv's lib/python3.N, whose empty libcublasLt.so.12 the
 * glob finds (newest python first) and dlopen refuses, named in the
 * error; the driver's major tried in every folder before the others; a
 * file that fails passed over for one that loads; and the message when
 * none is found, which lists every folder and name.
 * Skipped (77) in a build without the CUDA toolkit.
 */
#include <stdio.h>

#ifndef RAF_HAVE_CUDA
int main(void) {
  fprintf(stderr, "test_cuda_library: built without CUDA\n");
  return 77;
}
#else
#include "runtime/cuda/library.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#include "test/unit/check.h"

#define T RAF_CUDA_TARGET
#define M RAF_CUDA_MULTIARCH

/* The loaders' own descriptions (library.c). */
static const raf_cuda_library *const cublaslt_lib =
    &raf_cuda_cublaslt_library;
static const raf_cuda_library *const nccl_lib = &raf_cuda_nccl_library;

static raf_cuda_search plan;

static bool names_are(const char *const *want, int n) {
  bool ok = plan.nnames == n;
  for (int i = 0; ok && i < n; i++)
    ok = strcmp(plan.names[i], want[i]) == 0;
  return ok;
}

/* The plan's folders are want, in order; the first difference printed. */
static bool dirs_are(const char *const *want, int n) {
  for (int i = 0; i < n || i < plan.ndirs; i++)
    if (i >= n || i >= plan.ndirs || strcmp(plan.dirs[i].path, want[i])) {
      fprintf(stderr, "folder %d: '%s', want '%s'\n", i,
              i < plan.ndirs ? plan.dirs[i].path : "(none)",
              i < n ? want[i] : "(none)");
      return false;
    }
  return true;
}

static void check_plan(void) {
  raf_cuda_search_env env = {
      .cuda_home = "/opt/cuda",
      .python_site = "/a/sp:/b/sp",
      .virtual_env = "/venv",
      .conda_prefix = "/conda",
      .home = "/home/u",
      .libdir = "/tk/lib",
      .driver_version = 12040,
  };
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  const char *names12[] = {"libcublasLt.so.12", "libcublasLt.so.13",
                           "libcublasLt.so"};
  CHECK(names_are(names12, 3));
  CHECK(!plan.override[0]);
  /* The environment's folders, then the installed ones. */
  const char *all[] = {
      "",
      "/opt/cuda/lib64",
      "/opt/cuda/targets/" T "/lib",
      "/a/sp/nvidia/cublas/lib",
      "/a/sp/nvidia/cu13/lib",
      "/b/sp/nvidia/cublas/lib",
      "/b/sp/nvidia/cu13/lib",
      "/venv/lib/python3*/site-packages/nvidia/cublas/lib",
      "/venv/lib/python3*/site-packages/nvidia/cu13/lib",
      "/conda/lib/python3*/site-packages/nvidia/cublas/lib",
      "/conda/lib/python3*/site-packages/nvidia/cu13/lib",
      "/conda/lib",
      "/tk/lib",
      "/usr/local/cuda/lib64",
      "/usr/local/cuda/targets/" T "/lib",
      "/usr/local/cuda-*/lib64",
      "/usr/local/cuda-*/targets/" T "/lib",
      "/usr/lib/" M,
      "/home/u/.local/lib/python3*/site-packages/nvidia/cublas/lib",
      "/home/u/.local/lib/python3*/site-packages/nvidia/cu13/lib",
      "/usr/local/lib/python3*/dist-packages/nvidia/cublas/lib",
      "/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib",
      "/usr/lib/python3/dist-packages/nvidia/cublas/lib",
      "/usr/lib/python3/dist-packages/nvidia/cu13/lib",
      "/usr/local/lib/python3*/site-packages/nvidia/cublas/lib",
      "/usr/local/lib/python3*/site-packages/nvidia/cu13/lib",
  };
  CHECK(dirs_are(all, sizeof all / sizeof all[0]));
  CHECK(plan.nsites == 8 && strcmp(plan.sites[0], "/a/sp") == 0);
  CHECK(plan.dirs[3].site == 0 && plan.dirs[6].site == 1 &&
        plan.dirs[11].site == -1 && plan.dirs[25].site == 7);

  /* The driver's major first; unknown: newest first; a major raf has not
   * heard of is still tried first. */
  env.driver_version = 13000;
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  const char *names13[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                           "libcublasLt.so"};
  CHECK(names_are(names13, 3));
  env.driver_version = 0;
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  CHECK(names_are(names13, 3));
  env.driver_version = 14020;
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  const char *names14[] = {"libcublasLt.so.14", "libcublasLt.so.13",
                           "libcublasLt.so.12", "libcublasLt.so"};
  CHECK(names_are(names14, 4));

  /* NCCL's major is its own: the driver's changes nothing. */
  env.driver_version = 13000;
  raf_cuda_search_plan(nccl_lib, &env, &plan);
  const char *nccl_names[] = {"libnccl.so.2", "libnccl.so"};
  CHECK(names_are(nccl_names, 2));
  CHECK(plan.ndirs == 18 &&
        strcmp(plan.dirs[3].path, "/a/sp/nvidia/nccl/lib") == 0);

  /* cuDNN 9: the split library with the backend API, its major its own,
   * in pip's nvidia/cudnn/lib (PyTorch's wheels). */
  raf_cuda_search_plan(&raf_cuda_cudnn_library, &env, &plan);
  const char *cudnn_names[] = {"libcudnn_graph.so.9", "libcudnn_graph.so"};
  CHECK(names_are(cudnn_names, 2));
  CHECK(strcmp(plan.dirs[3].path, "/a/sp/nvidia/cudnn/lib") == 0);

  /* The override alone, whatever else is set. */
  env.override = "/x/libcublasLt.so.12";
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  CHECK(strcmp(plan.override, "/x/libcublasLt.so.12") == 0);
  CHECK(plan.nnames == 0 && plan.ndirs == 0);
  env.override = ""; /* set but empty: as unset */
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  CHECK(!plan.override[0] && plan.nnames == 3 && plan.ndirs == 26);

  /* Nothing set: the installed places only. $CUDA_HOME naming the
   * standard toolkit, or a site given twice, keeps each folder once, at
   * its first place; empty entries of $RAF_PYTHON_SITE are skipped. */
  raf_cuda_search_plan(nccl_lib, &(raf_cuda_search_env){0}, &plan);
  const char *bare[] = {
      "",
      "/usr/local/cuda/lib64",
      "/usr/local/cuda/targets/" T "/lib",
      "/usr/local/cuda-*/lib64",
      "/usr/local/cuda-*/targets/" T "/lib",
      "/usr/lib/" M,
      "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib",
      "/usr/lib/python3/dist-packages/nvidia/nccl/lib",
      "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib",
  };
  CHECK(dirs_are(bare, sizeof bare / sizeof bare[0]));
  raf_cuda_search_plan(
      nccl_lib,
      &(raf_cuda_search_env){.cuda_home = "/usr/local/cuda",
                             .python_site =
                                 "::/usr/lib/python3/dist-packages:",
                             .libdir = "/usr/local/cuda/lib64"},
      &plan);
  const char *dup[] = {
      "",
      "/usr/local/cuda/lib64",
      "/usr/local/cuda/targets/" T "/lib",
      "/usr/lib/python3/dist-packages/nvidia/nccl/lib",
      "/usr/local/cuda-*/lib64",
      "/usr/local/cuda-*/targets/" T "/lib",
      "/usr/lib/" M,
      "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib",
      "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib",
  };
  CHECK(dirs_are(dup, sizeof dup / sizeof dup[0]));
  CHECK(plan.nsites == 3); /* dist-packages given twice is one site */
}

/* ---- The open step, on a temporary directory ------------------------------ */

static char tmp[128];
static char made[64][RAF_CUDA_SEARCH_PATH]; /* to remove, last first */
static int nmade;

/* tmp/rel as a path, good for the next three calls (an environment
 * holds a few at once). */
static const char *at(const char *rel) {
  static char paths[4][RAF_CUDA_SEARCH_PATH];
  static int next;
  char *path = paths[next++ % 4];
  if (snprintf(path, RAF_CUDA_SEARCH_PATH, "%s/%s", tmp, rel) >=
      RAF_CUDA_SEARCH_PATH)
    failures++; /* no test path is that long */
  return path;
}

/* Makes tmp/rel, an empty file, and the folders above it. */
static void make_file(const char *rel) {
  char path[RAF_CUDA_SEARCH_PATH];
  snprintf(path, sizeof path, "%s/%s", tmp, rel);
  for (char *s = path + strlen(tmp) + 1; (s = strchr(s, '/')); s++) {
    *s = 0;
    if (mkdir(path, 0700) == 0 && nmade < 64)
      snprintf(made[nmade++], sizeof made[0], "%s", path);
    *s = '/';
  }
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f)
    fclose(f);
  if (nmade < 64)
    snprintf(made[nmade++], sizeof made[0], "%s", path);
}

/* Keeps only the plan's folders under tmp, so that the machine's own
 * libraries are not found. */
static void only_tmp(void) {
  int n = 0;
  for (int i = 0; i < plan.ndirs; i++)
    if (strncmp(plan.dirs[i].path, tmp, strlen(tmp)) == 0)
      plan.dirs[n++] = plan.dirs[i];
  plan.ndirs = n;
}

static const char *last_error(raf_ctx *ctx) {
  const char *msg = "";
  if (raf_diag_count(ctx))
    raf_diag_get(ctx, raf_diag_count(ctx) - 1, NULL, NULL, &msg);
  return msg;
}

/* Whether the last error is "cannot load tmp/rel: ...". */
static bool cannot_load(raf_ctx *ctx, const char *rel) {
  char want[RAF_CUDA_SEARCH_PATH + 32];
  snprintf(want, sizeof want, "cannot load %s: ", at(rel));
  bool ok = strncmp(last_error(ctx), want, strlen(want)) == 0;
  if (!ok)
    fprintf(stderr, "got '%s', want '%s...'\n", last_error(ctx), want);
  return ok;
}

static void check_open(raf_ctx *ctx) {
  char path[RAF_CUDA_SEARCH_PATH];
  const char *sp12 = "venv/lib/python3.12/site-packages";
  char rel[RAF_CUDA_SEARCH_PATH];
  /* A venv with two pythons: the glob finds both, python3.12 first. */
  make_file("venv/lib/python3.9/site-packages/nvidia/cublas/lib/"
            "libcublasLt.so.12");
  snprintf(rel, sizeof rel, "%s/nvidia/cublas/lib/libcublasLt.so.12", sp12);
  make_file(rel);
  raf_cuda_search_env env = {.virtual_env = at("venv"),
                             .driver_version = 12040};
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  only_tmp();
  CHECK(plan.ndirs == 2);
  path[0] = 0;
  CHECK(raf_cuda_search_open(ctx, cublaslt_lib, &plan, path, sizeof path) ==
        NULL);
  CHECK(cannot_load(ctx, rel));
  CHECK(strcmp(path, at(rel)) == 0);

  /* The driver's major in every folder before the others: a .so.13 in
   * an earlier folder waits for the .so.12 of a later one. */
  make_file("a/nvidia/cu13/lib/libcublasLt.so.13");
  make_file("b/nvidia/cublas/lib/libcublasLt.so.12");
  char sites[2 * RAF_CUDA_SEARCH_PATH];
  snprintf(sites, sizeof sites, "%s/a:%s/b", tmp, tmp);
  env = (raf_cuda_search_env){.python_site = sites, .driver_version = 12040};
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  only_tmp();
  CHECK(raf_cuda_search_open(ctx, cublaslt_lib, &plan, path, sizeof path) ==
        NULL);
  CHECK(cannot_load(ctx, "b/nvidia/cublas/lib/libcublasLt.so.12"));
  env.driver_version = 13000;
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  only_tmp();
  CHECK(raf_cuda_search_open(ctx, cublaslt_lib, &plan, path, sizeof path) ==
        NULL);
  CHECK(cannot_load(ctx, "a/nvidia/cu13/lib/libcublasLt.so.13"));

  /* A file that does not load is passed over for one that does: an empty
   * libm.so.6 first, then the loader's. */
  make_file("m/nvidia/cublas/lib/libm.so.6");
  const raf_cuda_library libm = {.stem = "libm.so",
                                 .majors = {6},
                                 .pip = {"nvidia/cublas/lib"},
                                 .env = "RAF_TEST_LIBM",
                                 .what = "libm",
                                 .source = "glibc"};
  raf_cuda_search_plan(&libm,
                       &(raf_cuda_search_env){.python_site = at("m")},
                       &plan);
  raf_cuda_search_dir loader = plan.dirs[0];
  only_tmp();
  plan.dirs[plan.ndirs++] = loader;
  size_t before = raf_diag_count(ctx);
  void *h = raf_cuda_search_open(ctx, &libm, &plan, path, sizeof path);
  CHECK(h != NULL && strcmp(path, "libm.so.6") == 0);
  CHECK(raf_diag_count(ctx) == before);
  if (h)
    dlclose(h);

  /* The override: a file that is not there, and one that does not load. */
  env = (raf_cuda_search_env){.override = at("none/libcublasLt.so.12")};
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  CHECK(raf_cuda_search_open(ctx, cublaslt_lib, &plan, path, sizeof path) ==
        NULL);
  char want[1024];
  snprintf(want, sizeof want,
           "no %s (cuBLASLt, RAF_CUBLASLT): set RAF_CUBLASLT or install the "
           "CUDA toolkit",
           at("none/libcublasLt.so.12"));
  CHECK(strcmp(last_error(ctx), want) == 0);
  env.override = at("b/nvidia/cublas/lib/libcublasLt.so.12");
  raf_cuda_search_plan(cublaslt_lib, &env, &plan);
  CHECK(raf_cuda_search_open(ctx, cublaslt_lib, &plan, path, sizeof path) ==
        NULL);
  CHECK(cannot_load(ctx, "b/nvidia/cublas/lib/libcublasLt.so.12"));

  /* None found: every folder and name in one line, sites once. */
  const raf_cuda_library nothing = {.stem = "libraf-none.so",
                                    .majors = {13, 12},
                                    .follows_driver = true,
                                    .pip = {"nvidia/none/lib", "nvidia/cu/lib"},
                                    .env = "RAF_NONE",
                                    .what = "nothing",
                                    .source = "nothing"};
  env = (raf_cuda_search_env){.cuda_home = at("cuda"),
                              .python_site = at("a"),
                              .home = at("home"),
                              .driver_version = 12000};
  raf_cuda_search_plan(&nothing, &env, &plan);
  CHECK(raf_cuda_search_open(ctx, &nothing, &plan, path, sizeof path) ==
        NULL);
  snprintf(want, sizeof want,
           "no libraf-none.so.12, .so.13 or .so (nothing) on the loader's "
           "path, nor in %s/cuda/lib64, %s/cuda/targets/" T "/lib, "
           "/usr/local/cuda/lib64, /usr/local/cuda/targets/" T "/lib, "
           "/usr/local/cuda-*/"
           "lib64, /usr/local/cuda-*/targets/" T "/lib, /usr/lib/" M ", nor "
           "in nvidia/none/lib or nvidia/cu/lib of %s/a, %s/home/.local/lib/"
           "python3*/site-packages, /usr/local/lib/python3*/dist-packages, "
           "/usr/lib/python3/dist-packages, /usr/local/lib/python3*/"
           "site-packages: set RAF_NONE or install nothing",
           tmp, tmp, tmp, tmp);
  CHECK(strcmp(last_error(ctx), want) == 0);
  if (strcmp(last_error(ctx), want))
    fprintf(stderr, "got  %s\nwant %s\n", last_error(ctx), want);
}

int main(void) {
  check_plan();
  const char *dir = getenv("TMPDIR");
  snprintf(tmp, sizeof tmp, "%s/raf-cuda-library-XXXXXX",
           dir && dir[0] ? dir : "/tmp");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  raf_ctx *ctx = raf_ctx_create();
  check_open(ctx);
  raf_ctx_destroy(ctx);
  while (nmade)
    remove(made[--nmade]);
  rmdir(tmp);
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  return failures != 0;
}
#endif
