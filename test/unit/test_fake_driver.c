/* test_fake_driver.c: the fake CUDA driver (test/cuda/fake_driver.c) as a
 * driver, through the entry points raf takes from cuGetProcAddress: its
 * kernels compute (the PTX interpreter), its JIT refuses what a driver
 * refuses with the log a driver writes, and a kernel's fault becomes the
 * sticky error of every later call. The faults run in child processes,
 * since a sticky error lasts as long as the process.
 *
 * Exits 77 (skipped) in a build without the CUDA toolkit's cuda.h.
 */
#ifndef RAF_HAVE_CUDA
int main(void) { return 77; }
#else
#include <cuda.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      failures++;                                                           \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                       \
      fprintf(stderr, __VA_ARGS__);                                         \
      fputc('\n', stderr);                                                  \
    }                                                                       \
  } while (0)

/* The entry points this test calls, by name. */
#define ENTRIES(X)                                                          \
  X(cuInit, (unsigned))                                                     \
  X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                      \
  X(cuCtxSetCurrent, (CUcontext))                                           \
  X(cuMemAlloc, (CUdeviceptr *, size_t))                                    \
  X(cuMemFree, (CUdeviceptr))                                               \
  X(cuMemcpyHtoDAsync, (CUdeviceptr, const void *, size_t, CUstream))      \
  X(cuMemcpyDtoHAsync, (void *, CUdeviceptr, size_t, CUstream))            \
  X(cuStreamCreate, (CUstream *, unsigned))                                 \
  X(cuStreamSynchronize, (CUstream))                                        \
  X(cuModuleLoadDataEx,                                                     \
    (CUmodule *, const void *, unsigned, CUjit_option *, void **))          \
  X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))            \
  X(cuModuleUnload, (CUmodule))                                             \
  X(cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned,   \
                     unsigned, unsigned, unsigned, CUstream, void **,       \
                     void **))                                              \
  X(cuLinkCreate, (unsigned, CUjit_option *, void **, CUlinkState *))       \
  X(cuLinkAddData, (CUlinkState, CUjitInputType, void *, size_t,            \
                    const char *, unsigned, CUjit_option *, void **))       \
  X(cuLinkDestroy, (CUlinkState))

static struct {
#define X(name, args) CUresult (*name) args;
  ENTRIES(X)
#undef X
} cu;

static CUstream stream;

static int load_driver(void) {
  void *lib = dlopen(RAF_FAKE_CUDA_DIR "/libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return -1;
  }
  CUresult (*get)(const char *, void **, int, cuuint64_t,
                  CUdriverProcAddressQueryResult *);
  *(void **)&get = dlsym(lib, "cuGetProcAddress_v2");
  if (!get)
    return -1;
#define X(name, args)                                                       \
  if (get(#name, (void **)&cu.name, 12000, 0, NULL) != CUDA_SUCCESS ||      \
      !cu.name)                                                             \
    return -1;
  ENTRIES(X)
#undef X
  CUcontext ctx;
  if (cu.cuInit(0) || cu.cuDevicePrimaryCtxRetain(&ctx, 0) ||
      cu.cuCtxSetCurrent(ctx) || cu.cuStreamCreate(&stream, 0))
    return -1;
  return 0;
}

/* p[i] += 1 for i < n; one thread an element; stores one past the end
 * when n is odd (the fault's kernel). */
static const char *const kernels =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry add_one(.param .u64 p, .param .u32 n)\n"
    ".maxntid 128, 1, 1\n"
    "{\n"
    "  .reg .pred %p<3>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [p];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  and.b32 %r2, %r1, 1;\n"
    "  setp.eq.s32 %p2, %r2, 1;\n"
    "  @%p2 add.s32 %r1, %r1, 1;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  mul.wide.u32 %rd2, %r5, 4;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.f32 %f1, [%rd3];\n"
    "  add.f32 %f2, %f1, 0f3F800000;\n"
    "  st.global.f32 [%rd3], %f2;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

static CUresult load(const char *ptx, CUmodule *m, char *log, size_t size) {
  CUjit_option o[2] = {CU_JIT_ERROR_LOG_BUFFER,
                       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[2] = {log, (void *)(uintptr_t)size};
  log[0] = '\0';
  return cu.cuModuleLoadDataEx(m, ptx, 2, o, v);
}

static CUresult launch(CUfunction f, unsigned grid, unsigned block,
                       CUdeviceptr p, unsigned n) {
  void *params[] = {&p, &n};
  return cu.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, params,
                           NULL);
}

static void test_computes(void) {
  char log[512];
  CUmodule m;
  CUfunction f;
  CHECK(load(kernels, &m, log, sizeof log) == CUDA_SUCCESS, "load: %s", log);
  CHECK(cu.cuModuleGetFunction(&f, m, "add_one") == CUDA_SUCCESS, "function");
  float host[300];
  for (int i = 0; i < 300; i++)
    host[i] = (float)i;
  CUdeviceptr d;
  CHECK(cu.cuMemAlloc(&d, sizeof host) == CUDA_SUCCESS, "alloc");
  cu.cuMemcpyHtoDAsync(d, host, sizeof host, stream);
  CHECK(launch(f, 3, 128, d, 300) == CUDA_SUCCESS, "launch");
  CHECK(cu.cuStreamSynchronize(stream) == CUDA_SUCCESS, "sync");
  cu.cuMemcpyDtoHAsync(host, d, sizeof host, stream);
  for (int i = 0; i < 300; i++)
    CHECK(host[i] == (float)i + 1, "element %d: %g", i, (double)host[i]);
  /* a kernel without .maxntid, refused only when asked to be */
  char loose[2048];
  snprintf(loose, sizeof loose, "%s", kernels);
  memcpy(strstr(loose, ".maxntid 128, 1, 1"), "//", 2);
  CUmodule lm;
  CUfunction lf;
  CHECK(load(loose, &lm, log, sizeof log) == CUDA_SUCCESS, "load: %s", log);
  cu.cuModuleGetFunction(&lf, lm, "add_one");
  setenv("RAF_FAKE_CUDA_REQUIRE_MAXNTID", "1", 1);
  CHECK(launch(lf, 1, 32, d, 32) == CUDA_ERROR_INVALID_VALUE,
        "a kernel without .maxntid under RAF_FAKE_CUDA_REQUIRE_MAXNTID");
  CHECK(launch(f, 1, 32, d, 32) == CUDA_SUCCESS, "one with it");
  unsetenv("RAF_FAKE_CUDA_REQUIRE_MAXNTID");
  CHECK(launch(lf, 1, 32, d, 32) == CUDA_SUCCESS, "not asked");
  cu.cuModuleUnload(lm);
  /* a block beyond .maxntid is refused at once, and is not sticky */
  CHECK(launch(f, 1, 256, d, 300) == CUDA_ERROR_INVALID_VALUE,
        "256 threads against .maxntid 128");
  CHECK(cu.cuStreamSynchronize(stream) == CUDA_SUCCESS, "not sticky");
  /* copies and frees outside an allocation */
  CHECK(cu.cuMemcpyDtoHAsync(host, d + 8, sizeof host, stream) ==
            CUDA_ERROR_INVALID_VALUE,
        "a copy past the allocation's end");
  CHECK(cu.cuMemFree(d + 4) == CUDA_ERROR_INVALID_VALUE,
        "a free inside an allocation");
  CHECK(cu.cuMemFree(d) == CUDA_SUCCESS, "free");
  cu.cuModuleUnload(m);
}

static void test_jit_refusals(void) {
  char log[512], ptx[2048];
  CUmodule m;
  /* CUDA 12.0 takes PTX ISA 8.0; 12.4 (the default) 8.4 */
  snprintf(ptx, sizeof ptx, "%s", kernels);
  memcpy(strstr(ptx, "8.0"), "8.4", 3);
  setenv("RAF_FAKE_CUDA_VERSION", "12000", 1);
  CHECK(load(ptx, &m, log, sizeof log) == CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        "8.4 on a 12.0 driver");
  CHECK(strstr(log, "line 1;") && strstr(log, "Unsupported .version 8.4") &&
            strstr(log, "'8.0'"),
        "the JIT log: %s", log);
  unsetenv("RAF_FAKE_CUDA_VERSION");
  CHECK(load(ptx, &m, log, sizeof log) == CUDA_SUCCESS, "8.4 on 12.4: %s", log);
  cu.cuModuleUnload(m);
  /* a target newer than the device */
  snprintf(ptx, sizeof ptx, "%s", kernels);
  memcpy(strstr(ptx, "sm_80"), "sm_99", 5);
  CHECK(load(ptx, &m, log, sizeof log) == CUDA_ERROR_NO_BINARY_FOR_GPU,
        "sm_99 on a 9.0 device");
  /* an unknown instruction, at its line */
  snprintf(ptx, sizeof ptx, "%s", kernels);
  memcpy(strstr(ptx, "add.f32"), "adx.f32", 7);
  CHECK(load(ptx, &m, log, sizeof log) == CUDA_ERROR_INVALID_PTX, "adx");
  CHECK(strstr(log, "line 25;") && strstr(log, "adx.f32"), "log: %s", log);
  /* the linker checks what is added */
  CUlinkState link;
  CUjit_option o[2] = {CU_JIT_ERROR_LOG_BUFFER,
                       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[2] = {log, (void *)(uintptr_t)sizeof log};
  log[0] = '\0';
  CHECK(cu.cuLinkCreate(2, o, v, &link) == CUDA_SUCCESS, "link");
  CHECK(cu.cuLinkAddData(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "x",
                         0, NULL, NULL) == CUDA_ERROR_INVALID_PTX,
        "link of a bad PTX");
  CHECK(strstr(log, "adx.f32") != NULL, "link log: %s", log);
  cu.cuLinkDestroy(link);
}

/* Runs `body` in a child; its exit status. */
static int in_child(void (*body)(void)) {
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    failures = 0;
    body();
    _exit(failures ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void fault_is_sticky(void) {
  char log[512];
  CUmodule m;
  CUfunction f;
  CUdeviceptr d, e;
  load(kernels, &m, log, sizeof log);
  cu.cuModuleGetFunction(&f, m, "add_one");
  cu.cuMemAlloc(&d, 3 * sizeof(float));
  /* n = 3 is odd: thread 3 stores one past the allocation */
  CHECK(launch(f, 1, 32, d, 3) == CUDA_SUCCESS, "the launch itself succeeds");
  CHECK(cu.cuStreamSynchronize(stream) == CUDA_ERROR_ILLEGAL_ADDRESS,
        "the fault at the next synchronisation");
  CHECK(cu.cuMemAlloc(&e, 4) == CUDA_ERROR_ILLEGAL_ADDRESS, "sticky");
}

static void free_after_launch_stalls(void) {
  char log[512], path[] = "/tmp/raf-fake-log-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  setenv("RAF_FAKE_CUDA_LOG", path, 1);
  CUmodule m;
  CUfunction f;
  CUdeviceptr d;
  load(kernels, &m, log, sizeof log);
  cu.cuModuleGetFunction(&f, m, "add_one");
  cu.cuMemAlloc(&d, 64 * sizeof(float));
  launch(f, 1, 64, d, 64);
  cu.cuMemFree(d); /* a GPU waits for the launch here */
  cu.cuMemAlloc(&d, 64 * sizeof(float));
  launch(f, 1, 64, d, 64);
  cu.cuStreamSynchronize(stream);
  cu.cuMemFree(d); /* nothing queued: no stall */
  FILE *h = fopen(path, "r");
  char line[256];
  int stalls = 0;
  while (h && fgets(line, sizeof line, h))
    stalls += strncmp(line, "stall cuMemFree", 15) == 0;
  if (h)
    fclose(h);
  unlink(path);
  CHECK(stalls == 1, "%d stalls logged, 1 expected", stalls);
}

int main(void) {
  if (load_driver() != 0) {
    fprintf(stderr, "cannot load the fake driver\n");
    return 1;
  }
  test_computes();
  test_jit_refusals();
  CHECK(in_child(fault_is_sticky) == 0, "the sticky fault");
  CHECK(in_child(free_after_launch_stalls) == 0, "the stall");
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
#endif
