/* test_device.c: the device layer (runtime/device.h) and the executor's
 * transfers through it (runtime/exec.h).
 *
 * On the host: alloc, the three kinds of copy, memset, events, and an
 * executor whose function returns its argument (a device-to-device copy)
 * with raf_exec_write, raf_exec_read and raf_exec_host_data around it.
 * In a build with CUDA: the loader's refusals (a library that is not
 * there: "no NAME (no NVIDIA driver)"; one that is no driver), and, with
 * RAF_TEST_FAKE_CUDA=1 (CTest sets it, with LD_LIBRARY_PATH on the fake
 * driver of test/cuda/fake_driver.c), the same operations on the cuda
 * device, a machine without a GPU, a driver that lacks an entry point,
 * and a cpu statement refused on the cuda executor, and that the driver
 * library stays loaded after it was initialised and let go of (unloading
 * it after cuInit is unsafe). Its device pointers
 * crash the host if read directly, so passing means nothing did.
 *
 * `test_device --gpu` runs the cuda part on this machine's own driver and
 * GPU, and exits 77 (skipped) when there is none.
 */
#include "runtime/device.h"
#include "runtime/exec.h"

#ifdef RAF_HAVE_CUDA
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/driver.h"
#include "runtime/cuda/module.h"
#endif

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#include "test/unit/check.h"

static const char *last_error(raf_ctx *ctx) {
  const char *msg = "";
  if (raf_diag_count(ctx))
    raf_diag_get(ctx, raf_diag_count(ctx) - 1, NULL, NULL, &msg);
  return msg;
}

/* alloc, copies of every kind, memset and events on d. */
static void exercise(raf_device *d) {
  enum { N = 250 };
  float src[N], back[N];
  for (int i = 0; i < N; i++)
    src[i] = (float)i * 0.5f - 3;
  void *a = NULL, *b = NULL, *empty = NULL;
  CHECK(raf_device_alloc(d, sizeof src, &a) == RAF_OK && a);
  CHECK(raf_device_alloc(d, sizeof src, &b) == RAF_OK && b);
  CHECK(raf_device_alloc(d, 0, &empty) == RAF_OK && empty);
  if (!a || !b)
    return;
  CHECK((uintptr_t)a % 64 == 0 && (uintptr_t)b % 64 == 0);
  CHECK(raf_device_copy(d, a, src, sizeof src, RAF_COPY_HOST_TO_DEVICE) ==
        RAF_OK);
  CHECK(raf_device_copy(d, b, a, sizeof src, RAF_COPY_DEVICE_TO_DEVICE) ==
        RAF_OK);
  /* b[10..20) = 0, then a[0..5) = b[8..13) = {src[8], src[9], 0, 0, 0}. */
  CHECK(raf_device_memset(d, (char *)b + 10 * sizeof(float), 0,
                          10 * sizeof(float)) == RAF_OK);
  CHECK(raf_device_copy(d, a, (char *)b + 8 * sizeof(float),
                        5 * sizeof(float),
                        RAF_COPY_DEVICE_TO_DEVICE) == RAF_OK);
  CHECK(raf_device_synchronize(d) == RAF_OK);
  memset(back, 0xff, sizeof back);
  CHECK(raf_device_copy(d, back, b, sizeof back, RAF_COPY_DEVICE_TO_HOST) ==
        RAF_OK);
  for (int i = 0; i < N; i++)
    if (back[i] != (i >= 10 && i < 20 ? 0 : src[i])) {
      CHECK(!"b's elements");
      break;
    }
  CHECK(raf_device_copy(d, back, a, 6 * sizeof(float),
                        RAF_COPY_DEVICE_TO_HOST) == RAF_OK);
  CHECK(back[0] == src[8] && back[1] == src[9] && back[2] == 0 &&
        back[4] == 0 && back[5] == src[5]);

  raf_event *start = NULL, *end = NULL, *never = NULL;
  CHECK(raf_device_event_create(d, &start) == RAF_OK && start);
  CHECK(raf_device_event_create(d, &end) == RAF_OK && end);
  CHECK(raf_device_event_create(d, &never) == RAF_OK && never);
  CHECK(raf_device_event_record(d, start) == RAF_OK);
  CHECK(raf_device_memset(d, a, 7, sizeof src) == RAF_OK);
  CHECK(raf_device_event_record(d, end) == RAF_OK);
  double ms = -1;
  CHECK(raf_device_event_elapsed(d, start, end, &ms) == RAF_OK && ms >= 0);
  /* An event never recorded is an error, not a number. */
  CHECK(raf_device_event_elapsed(d, start, never, &ms) == RAF_ERROR);
  raf_device_event_destroy(d, start);
  raf_device_event_destroy(d, end);
  raf_device_event_destroy(d, never);
  raf_device_free(d, a);
  raf_device_free(d, b);
  raf_device_free(d, empty);
  raf_device_free(d, NULL);
}

/* An executor on d (which it takes over) running @id, which returns its
 * argument: results are copies on the device; the executor's transfers
 * put values in and take them out. */
static void exercise_exec(raf_ctx *ctx, raf_device *d) {
  const char *text = "func @id(%x: f32[5]) -> (f32[5], f32[5]) {\n"
                     "  return %x, %x\n"
                     "}\n";
  raf_module *m = raf_parse_module(ctx, "id.raf", text, strlen(text), 1);
  CHECK(m && raf_verify_module(ctx, m) == RAF_OK);
  raf_exec_options eo = {.device = d, .threads = 1};
  raf_exec *ex = m ? raf_exec_create(ctx, m, &eo) : NULL;
  CHECK(ex != NULL);
  if (!ex) {
    raf_module_destroy(m);
    return;
  }
  raf_device_kind kind = raf_device_kind_of(d);
  CHECK(raf_exec_device(ex) == d);
  raf_func *f = m->first;
  raf_tensor *x = raf_exec_alloc(ex, f->args[0].value->type);
  CHECK(x && x->device == kind);
  float in[5] = {1, -2, 3.5f, 1e30f, -0.0f}, out[5] = {0};
  CHECK(raf_exec_write(ex, x, 0, in, sizeof in) == RAF_OK);
  /* Out of bounds is refused. */
  CHECK(raf_exec_write(ex, x, 4, in, sizeof in) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "of a tensor of 20 bytes") != NULL);
  raf_tensor *r[2] = {NULL, NULL};
  CHECK(raf_exec_call(ex, f, &x, r) == RAF_OK);
  CHECK(r[0] && r[1] && r[0]->device == kind && r[0]->data != x->data);
  if (r[0] && r[1]) {
    CHECK(raf_exec_read(ex, r[1], 0, out, sizeof out) == RAF_OK);
    CHECK(memcmp(in, out, sizeof in) == 0);
    /* Staged through the host only where the host cannot address it. */
    void *staged = NULL;
    const float *h = raf_exec_host_data(ex, r[0], &staged);
    CHECK(h && memcmp(h, in, sizeof in) == 0);
    CHECK((staged != NULL) == !raf_device_host_addressable(d));
    free(staged);
    CHECK(raf_exec_zero(ex, r[0], 4, 8) == RAF_OK);
    CHECK(raf_exec_copy(ex, x, r[0]) == RAF_OK);
    CHECK(raf_exec_read(ex, x, 0, out, sizeof out) == RAF_OK);
    CHECK(out[0] == 1 && out[1] == 0 && out[2] == 0 && out[3] == 1e30f);
  }
  /* A host tensor is not an argument of a device executor. */
  float host_data[5];
  raf_tensor host = {f->args[0].value->type, host_data, sizeof host_data,
                     RAF_DEVICE_HOST};
  raf_tensor *hp = &host, *r2[2] = {NULL, NULL};
  if (kind != RAF_DEVICE_HOST) {
    CHECK(raf_exec_call(ex, f, &hp, r2) == RAF_ERROR);
    CHECK(strstr(last_error(ctx), "argument %x is on cpu") != NULL);
  }
  raf_exec_free(ex, r[0]);
  raf_exec_free(ex, r[1]);
  raf_exec_free(ex, x);
  CHECK(raf_exec_live_bytes(ex) == 0);
  raf_exec_destroy(ex);
  raf_module_destroy(m);
  raf_diag_clear(ctx);
}

static void test_host(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_device_kind k;
  CHECK(raf_device_kind_from_name("cpu", &k) && k == RAF_DEVICE_HOST);
  CHECK(raf_device_kind_from_name("cuda", &k) && k == RAF_DEVICE_CUDA);
  CHECK(!raf_device_kind_from_name("tpu", &k));
  CHECK(raf_device_kind_unavailable(RAF_DEVICE_HOST) == NULL);
  int count = 0;
  CHECK(raf_device_count(ctx, RAF_DEVICE_HOST, &count) == RAF_OK &&
        count == 1);
  raf_device *d = NULL;
  CHECK(raf_device_open(ctx, RAF_DEVICE_HOST, 1, &d) == RAF_ERROR && !d);
  CHECK(raf_device_open(ctx, RAF_DEVICE_HOST, 0, &d) == RAF_OK && d);
  if (!d) {
    raf_ctx_destroy(ctx);
    return;
  }
  CHECK(strcmp(raf_device_name(d), "cpu") == 0);
  CHECK(strncmp(raf_device_describe(d), "cpu: the host", 13) == 0);
  CHECK(raf_device_host_addressable(d) && !raf_device_stream(d));
  raf_diag_clear(ctx);
  exercise(d);
  CHECK(raf_diag_count(ctx) == 1); /* the event never recorded */
  raf_diag_clear(ctx);
  exercise_exec(ctx, d);
  raf_diag_clear(ctx);
  raf_ctx_destroy(ctx);
}

#ifdef RAF_HAVE_CUDA
/* The loader refuses what is not a driver, in one line that says why. */
static void test_loader_failures(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_cuda_driver *drv = NULL;
  CHECK(raf_cuda_driver_load(ctx, "libraf-no-such-driver.so.1", &drv) ==
            RAF_ERROR &&
        !drv);
  CHECK(raf_diag_count(ctx) == 1);
  CHECK(strcmp(last_error(ctx),
               "no libraf-no-such-driver.so.1 (no NVIDIA driver)") == 0);
  raf_diag_clear(ctx);
  /* A library that is there but is not a CUDA driver. */
  CHECK(raf_cuda_driver_load(ctx, "libm.so.6", &drv) == RAF_ERROR && !drv);
  CHECK(strstr(last_error(ctx), "libm.so.6 has no cuGetProcAddress_v2") !=
        NULL);
  raf_ctx_destroy(ctx);
}

/* The hand-written kernels' PTX is embedded; on a GPU, one of them runs:
 * raf_fill_f32 over 1000 floats on a grid smaller than the work. */
static void test_module(raf_device *d, bool fake) {
  const char *ptx = raf_cuda_embedded_ptx("kernels");
  CHECK(ptx && strstr(ptx, ".entry raf_fill_f32") != NULL);
  /* PTX ISA 8.0, which every driver from CUDA 12.0 on loads, whatever
   * the toolkit's nvcc wrote (9.0 for CUDA 13): cmake/embed_ptx.cmake. */
  CHECK(ptx && strstr(ptx, "\n.version 8.0\n") != NULL);
  CHECK(raf_cuda_embedded_ptx("no-such-file") == NULL);
  if (fake)
    return;
  raf_cuda_module *m = NULL;
  CUfunction fill = NULL;
  float *buf = NULL;
  CHECK(raf_cuda_module_load(d, ptx, "kernels", &m) == RAF_OK);
  CHECK(m && raf_cuda_module_function(d, m, "raf_fill_f32", &fill) == RAF_OK);
  CHECK(raf_device_alloc(d, 1000 * sizeof(float), (void **)&buf) == RAF_OK);
  if (fill && buf) {
    float value = 2.5f;
    int64_t n = 1000;
    void *params[] = {&buf, &value, &n};
    raf_cuda_dims dims = {{2, 1, 1}, {128, 1, 1}, 0};
    CHECK(raf_cuda_launch(d, fill, "raf_fill_f32", &dims, params) == RAF_OK);
    float host[1000];
    CHECK(raf_device_copy(d, host, buf, sizeof host,
                          RAF_COPY_DEVICE_TO_HOST) == RAF_OK);
    int wrong = 0;
    for (int i = 0; i < 1000; i++)
      wrong += host[i] != 2.5f;
    CHECK(wrong == 0);
  }
  raf_device_free(d, buf);
  CUfunction none = NULL;
  CHECK(!m || raf_cuda_module_function(d, m, "no_such_kernel", &none) ==
                  RAF_ERROR);
  raf_cuda_module_unload(d, m);
  /* PTX the driver rejects: the message carries the JIT's log. */
  CHECK(raf_cuda_module_load(d, ".version 8.0\n.target sm_80\nbogus;\n",
                             "bogus", &m) == RAF_ERROR && !m);
}

/* raf_cuda_scratch: one block reused while it is large enough, a larger
 * one when asked for more (the old one freed once the stream is drained),
 * device memory either way. */
static void test_scratch(raf_device *d) {
  void *a = NULL, *b = NULL, *c = NULL;
  CHECK(raf_cuda_scratch(d, 1000, &a) == RAF_OK && a);
  CHECK(raf_cuda_scratch(d, 10, &b) == RAF_OK && b == a);
  CHECK(raf_cuda_scratch(d, 1 << 20, &c) == RAF_OK && c && c != a);
  CHECK(raf_cuda_scratch(d, 1000, &b) == RAF_OK && b == c);
  if (c) /* the block is device memory: a memset and a copy back work */
    CHECK(raf_device_memset(d, c, 7, 1 << 20) == RAF_OK);
  unsigned char back[16] = {0};
  CHECK(c && raf_device_copy(d, back, c, sizeof back,
                             RAF_COPY_DEVICE_TO_HOST) == RAF_OK &&
        back[15] == 7);
  CHECK(raf_device_synchronize(d) == RAF_OK);
  void *big = NULL; /* running out is the caller's to report */
  CHECK(raf_cuda_scratch(d, (size_t)1 << 50, &big) == RAF_ERROR && !big);
}

/* A stream beside the device's, ordered by events (cuda_device.h): a
 * memset on the device's stream, a copy on the other after it, a copy
 * back on the device's after that; the host never waits in between, so
 * on a GPU the bytes come back right only if both waits order the work
 * (8 MiB: long enough on a GPU to lose a race). Then the events' query
 * and elapsed time, and a wait for an event never recorded refused by the
 * fake (a real driver lets it pass). */
static void test_side_stream(raf_ctx *ctx, raf_device *d, bool fake) {
  enum { BYTES = 8 << 20 };
  const raf_cuda_driver *drv = raf_cuda_device_driver(d);
  CUstream main = raf_device_stream(d), side = NULL;
  CUevent made = NULL, copied = NULL, never = NULL;
  void *a = NULL, *b = NULL;
  CHECK(raf_cuda_stream_create(d, &side) == RAF_OK && side && side != main);
  CHECK(raf_cuda_event_create(d, &made) == RAF_OK && made);
  CHECK(raf_cuda_event_create(d, &copied) == RAF_OK && copied);
  CHECK(raf_cuda_event_create(d, &never) == RAF_OK && never);
  CHECK(raf_device_alloc(d, BYTES, &a) == RAF_OK && a);
  CHECK(raf_device_alloc(d, BYTES, &b) == RAF_OK && b);
  if (!side || !made || !copied || !never || !a || !b)
    return;
  CHECK(raf_device_memset(d, b, 0, BYTES) == RAF_OK);
  CHECK(raf_device_memset(d, a, 9, BYTES) == RAF_OK);
  CHECK(raf_cuda_event_record(d, made, main) == RAF_OK);
  CHECK(raf_cuda_stream_wait_event(d, side, made) == RAF_OK);
  CHECK(drv->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)b,
                               (CUdeviceptr)(uintptr_t)a, BYTES,
                               side) == CUDA_SUCCESS);
  CHECK(raf_cuda_event_record(d, copied, side) == RAF_OK);
  CHECK(raf_cuda_stream_wait_event(d, main, copied) == RAF_OK);
  unsigned char back[16] = {0};
  CHECK(raf_device_copy(d, back, (char *)b + BYTES - sizeof back,
                        sizeof back, RAF_COPY_DEVICE_TO_HOST) == RAF_OK);
  CHECK(back[0] == 9 && back[15] == 9);
  bool done = false;
  CHECK(raf_cuda_event_query(d, copied, &done) == RAF_OK && done);
  double ms = -1;
  CHECK(raf_cuda_event_elapsed_ms(d, made, copied, &ms) == RAF_OK &&
        ms >= 0);
  CHECK(raf_diag_count(ctx) == 0);
  if (fake) {
    CHECK(raf_cuda_stream_wait_event(d, main, never) == RAF_ERROR);
    CHECK(strstr(last_error(ctx), "cuda:0: cuStreamWaitEvent: invalid "
                                     "argument") != NULL);
    raf_diag_clear(ctx);
  }
  raf_cuda_event_destroy(d, made);
  raf_cuda_event_destroy(d, copied);
  raf_cuda_event_destroy(d, never);
  raf_cuda_stream_destroy(d, side);
  raf_device_free(d, a);
  raf_device_free(d, b);
  CHECK(raf_diag_count(ctx) == 0);
}

/* The cuda device on the driver LD_LIBRARY_PATH finds (the fake, or with
 * --gpu the machine's own). */
static void test_cuda(bool fake) {
  raf_ctx *ctx = raf_ctx_create();
  int count = 0;
  CHECK(raf_device_count(ctx, RAF_DEVICE_CUDA, &count) == RAF_OK &&
        count >= 1);
  /* raf_device_count loaded the driver, called cuInit and let it go: the
   * library must still be mapped (RTLD_NOLOAD finds it, opens nothing). */
  void *still = dlopen(RAF_CUDA_DRIVER_LIBRARY, RTLD_NOW | RTLD_NOLOAD);
  CHECK(still != NULL);
  if (still)
    dlclose(still);
  raf_device *d = NULL;
  CHECK(raf_device_open(ctx, RAF_DEVICE_CUDA, 0, &d) == RAF_OK && d);
  if (!d) {
    raf_diag_render(ctx, stderr);
    raf_ctx_destroy(ctx);
    return;
  }
  printf("%s\n", raf_device_describe(d));
  CHECK(strcmp(raf_device_name(d), "cuda:0") == 0);
  CHECK(!raf_device_host_addressable(d) && raf_device_stream(d));
  if (fake)
    CHECK(strcmp(raf_device_describe(d),
                 "cuda:0: raf fake GPU 0, compute capability 9.0, 1.0 GiB, "
                 "driver for CUDA 12.4") == 0);
  raf_diag_clear(ctx);
  exercise(d);
  CHECK(raf_diag_count(ctx) == 1);
  CHECK(strstr(last_error(ctx), "cuda:0: elapsed time of an event never "
                                "recorded") != NULL);
  raf_diag_clear(ctx);
  test_scratch(d);
  CHECK(raf_diag_count(ctx) == 0);
  test_side_stream(ctx, d, fake);
  CHECK(raf_diag_count(ctx) == 0);
  raf_diag_clear(ctx);
  test_module(d, fake);
  CHECK(raf_diag_count(ctx) == (fake ? 0 : 2));
  if (!fake && raf_diag_count(ctx) == 2)
    printf("expected: %s\n", last_error(ctx));
  raf_diag_clear(ctx);
  exercise_exec(ctx, d);

  /* Device memory that runs out is the caller's to report. */
  if (raf_device_open(ctx, RAF_DEVICE_CUDA, 0, &d) == RAF_OK) {
    void *p = NULL;
    CHECK(raf_device_alloc(d, (size_t)1 << 50, &p) == RAF_ERROR && !p);
    CHECK(raf_diag_count(ctx) == 0);
    raf_device_destroy(d);
  }
  CHECK(raf_device_open(ctx, RAF_DEVICE_CUDA, count, &d) == RAF_ERROR);
  CHECK(strstr(last_error(ctx), "no CUDA device") != NULL);
  raf_diag_clear(ctx);

  /* A cpu statement is refused at binding, at its location. */
  const char *text = "func @f(%x: f32[2]) -> f32[2] {\n"
                     "  %y = neg(%x) {dialect = \"cpu-ref\"}\n"
                     "  return %y\n"
                     "}\n";
  raf_module *m = raf_parse_module(ctx, "neg.raf", text, strlen(text), 1);
  CHECK(m && raf_verify_module(ctx, m) == RAF_OK);
  raf_exec_options eo = {.threads = 1};
  if (m && raf_device_open(ctx, RAF_DEVICE_CUDA, 0, &eo.device) == RAF_OK) {
    CHECK(raf_exec_create(ctx, m, &eo) == NULL);
    raf_loc loc = {0};
    const char *msg = "";
    if (raf_diag_count(ctx))
      raf_diag_get(ctx, 0, &loc, NULL, &msg);
    CHECK(loc.line == 2);
    CHECK(strcmp(msg, "neg: no cuda implementation (dialect 'cpu-ref' runs "
                      "on the cpu, not on cuda:0)") == 0);
  }
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

/* The fake driver's machines: no GPU, and a driver without an entry. */
static void test_fake_failures(void) {
  raf_ctx *ctx = raf_ctx_create();
  raf_device *d = NULL;
  setenv("RAF_FAKE_CUDA_DEVICES", "0", 1);
  CHECK(raf_device_open(ctx, RAF_DEVICE_CUDA, 0, &d) == RAF_ERROR && !d);
  CHECK(strcmp(last_error(ctx),
               "no CUDA device (cuInit: no CUDA-capable device is detected "
               "(CUDA_ERROR_NO_DEVICE))") == 0);
  unsetenv("RAF_FAKE_CUDA_DEVICES");
  raf_diag_clear(ctx);
  setenv("RAF_FAKE_CUDA_MISSING", "cuMemAlloc", 1);
  CHECK(raf_device_open(ctx, RAF_DEVICE_CUDA, 0, &d) == RAF_ERROR && !d);
  CHECK(strncmp(last_error(ctx),
                "libcuda.so.1 has no cuMemAlloc (CUDA 12.0)", 41) == 0);
  unsetenv("RAF_FAKE_CUDA_MISSING");
  raf_ctx_destroy(ctx);
}
#endif

int main(int argc, char **argv) {
  bool gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
  if (!gpu)
    test_host();
#ifdef RAF_HAVE_CUDA
  if (gpu) {
    raf_ctx *ctx = raf_ctx_create();
    int count = 0;
    bool none = raf_device_count(ctx, RAF_DEVICE_CUDA, &count) != RAF_OK ||
                count == 0;
    if (none)
      raf_diag_render(ctx, stdout);
    raf_ctx_destroy(ctx);
    if (none)
      return 77;
    test_cuda(false);
  } else {
    test_loader_failures();
    const char *fake = getenv("RAF_TEST_FAKE_CUDA");
    if (fake && strcmp(fake, "1") == 0) {
      test_cuda(true);
      test_fake_failures();
    }
  }
#else
  if (gpu) {
    printf("built without CUDA\n");
    return 77;
  }
#endif
  if (failures)
    fprintf(stderr, "%d checks failed\n", failures);
  return failures != 0;
}
