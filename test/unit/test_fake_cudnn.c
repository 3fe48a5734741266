/* test_fake_cudnn.c: the fake cuDNN (test/cuda/fake_cudnn.c) as the cudnn
 * dialect uses it, through the backend API of cudnn_graph.h opened with
 * dlopen: each graph the dialect builds (convolutions forward and
 * backward, max and average pooling with their gradients, batch norm
 * training and its gradient, causal attention, a matmul of a transposed
 * operand) computes, on small random inputs, what a plain loop here
 * computes; and the fake refuses what cuDNN refuses (a tensor without a
 * unique id, a host pointer in a variant pack, attributes set wrongly)
 * and obeys its environment (RAF_FAKE_CUDNN_REFUSE, _VERSION, _LOG).
 *
 * Device pointers are host memory with bit 63 flipped, as the fake
 * driver's are; the fake only looks at the bit, so no driver is needed.
 *
 * Exits 77 (skipped) in a build without CUDA's cudnn_graph.h.
 */
#ifndef RAF_HAVE_FAKE_CUDNN
int main(void) { return 77; }
#else
#include <cudnn_graph.h>

#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* The entry points this test calls: name, return type, parameters. */
#define ENTRIES(X)                                                          \
  X(cudnnGetVersion, size_t, (void))                                        \
  X(cudnnGetLastErrorString, void, (char *, size_t))                        \
  X(cudnnCreate, cudnnStatus_t, (cudnnHandle_t *))                          \
  X(cudnnDestroy, cudnnStatus_t, (cudnnHandle_t))                           \
  X(cudnnSetStream, cudnnStatus_t, (cudnnHandle_t, cudaStream_t))           \
  X(cudnnBackendCreateDescriptor, cudnnStatus_t,                            \
    (cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *))             \
  X(cudnnBackendDestroyDescriptor, cudnnStatus_t,                           \
    (cudnnBackendDescriptor_t))                                             \
  X(cudnnBackendSetAttribute, cudnnStatus_t,                                \
    (cudnnBackendDescriptor_t, cudnnBackendAttributeName_t,                 \
     cudnnBackendAttributeType_t, int64_t, const void *))                   \
  X(cudnnBackendGetAttribute, cudnnStatus_t,                                \
    (cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t,           \
     cudnnBackendAttributeType_t, int64_t, int64_t *, void *))              \
  X(cudnnBackendFinalize, cudnnStatus_t, (cudnnBackendDescriptor_t))        \
  X(cudnnBackendExecute, cudnnStatus_t,                                     \
    (cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t))

static struct {
#define X(name, ret, args) ret(*name) args;
  ENTRIES(X)
#undef X
} dnn;

static void *lib;

static int load(void) {
  lib = dlopen(RAF_FAKE_CUDA_DIR "/libcudnn_graph.so.9", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return -1;
  }
#define X(name, ret, args)                                                  \
  *(void **)&dnn.name = dlsym(lib, #name);                                  \
  if (!dnn.name)                                                            \
    return -1;
  ENTRIES(X)
#undef X
  return 0;
}

static cudnnHandle_t handle;
static int64_t want_workspace; /* what plans report: RAF_FAKE_CUDNN_WORKSPACE */

/* ---- Building graphs ---------------------------------------------------- */

/* Every descriptor a test makes, destroyed at its end. */
static cudnnBackendDescriptor_t made[256];
static int nmade;

static cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = NULL;
  cudnnStatus_t s = dnn.cudnnBackendCreateDescriptor(type, &d);
  CHECK(s == CUDNN_STATUS_SUCCESS && nmade < 256, "create %d: %d", type, s);
  made[nmade++] = d;
  return d;
}

static void destroy_all(void) {
  while (nmade > 0)
    CHECK(dnn.cudnnBackendDestroyDescriptor(made[--nmade]) ==
              CUDNN_STATUS_SUCCESS,
          "destroy");
}

static void last_error(char *buf, size_t size) {
  dnn.cudnnGetLastErrorString(buf, size);
}

static void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                cudnnBackendAttributeType_t t, int64_t count, const void *v) {
  cudnnStatus_t s = dnn.cudnnBackendSetAttribute(d, n, t, count, v);
  char msg[256];
  last_error(msg, sizeof msg);
  CHECK(s == CUDNN_STATUS_SUCCESS, "set attribute %d: %d (%s)", n, s, msg);
}

static void set_i64(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                    int64_t v) {
  set(d, n, CUDNN_TYPE_INT64, 1, &v);
}

static void set_desc(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                     cudnnBackendDescriptor_t v) {
  set(d, n, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

static void set_enum(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t n,
                     cudnnBackendAttributeType_t t, int v) {
  set(d, n, t, 1, &v);
}

static void set_float(cudnnBackendDescriptor_t d,
                      cudnnBackendAttributeName_t n, float v) {
  set(d, n, CUDNN_TYPE_FLOAT, 1, &v);
}

static void finalize(cudnnBackendDescriptor_t d) {
  cudnnStatus_t s = dnn.cudnnBackendFinalize(d);
  char msg[256];
  last_error(msg, sizeof msg);
  CHECK(s == CUDNN_STATUS_SUCCESS, "finalize: %d (%s)", s, msg);
}

enum { REAL = 0, VIRT = 1, BYVAL = 2 };

/* A tensor of the given dims, packed row-major unless strides are given. */
static cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type,
                                       int rank, const int64_t *dims,
                                       const int64_t *strides, int kind) {
  int64_t packed[8];
  for (int i = rank - 1; i >= 0; i--)
    packed[i] = i == rank - 1 ? 1 : packed[i + 1] * dims[i + 1];
  cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set_enum(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank,
      strides ? strides : packed);
  set_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
  set_i64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16);
  bool virt = kind == VIRT, byval = kind == BYVAL;
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
  if (byval)
    set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &byval);
  finalize(t);
  return t;
}

static cudnnBackendDescriptor_t f32(int64_t uid, int64_t a, int64_t b,
                                    int64_t c, int64_t d, int kind) {
  int64_t dims[4] = {a, b, c, d};
  return tensor(uid, CUDNN_DATA_FLOAT, 4, dims, NULL, kind);
}

static cudnnBackendDescriptor_t scalar(int64_t uid) {
  return f32(uid, 1, 1, 1, 1, BYVAL);
}

/* The device pointer of host memory. */
static void *dev(void *host) {
  return (void *)((uintptr_t)host ^ ((uintptr_t)1 << 63));
}

static float *randoms(int64_t n) {
  float *p = malloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
  return p;
}

/* The plan of a graph of ops, or NULL where the heuristic offers none. */
static cudnnBackendDescriptor_t plan_of(cudnnBackendDescriptor_t *ops,
                                        int nops) {
  cudnnBackendDescriptor_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops,
      ops);
  finalize(g);
  cudnnBackendDescriptor_t h = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set_desc(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g);
  set_enum(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE,
           CUDNN_HEUR_MODE_A);
  finalize(h);
  int64_t available = -1, got = -1;
  CHECK(dnn.cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                     &available, NULL) == CUDNN_STATUS_SUCCESS,
        "results count");
  if (available < 1)
    return NULL;
  cudnnBackendDescriptor_t cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  CHECK(dnn.cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                     &cfg) == CUDNN_STATUS_SUCCESS &&
            got == 1,
        "results");
  cudnnBackendDescriptor_t plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
  finalize(plan);
  int64_t ws = -1, n = 0;
  CHECK(dnn.cudnnBackendGetAttribute(
            plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
            1, &n, &ws) == CUDNN_STATUS_SUCCESS &&
            n == 1 && ws == want_workspace,
        "workspace size %lld", (long long)ws);
  return plan;
}

/* Executes a plan on n (uid, pointer) pairs; returns the status. */
static cudnnStatus_t execute(cudnnBackendDescriptor_t plan, int n,
                             const int64_t *uids, void **ptrs) {
  cudnnBackendDescriptor_t pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n,
      ptrs);
  void *ws = NULL;
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  finalize(pack);
  return dnn.cudnnBackendExecute(handle, plan, pack);
}

/* Builds, plans and executes a graph; device pointers of ptrs except
 * where byval[i]. */
static void run(cudnnBackendDescriptor_t *ops, int nops, int n,
                const int64_t *uids, void **host, const bool *byval) {
  cudnnBackendDescriptor_t plan = plan_of(ops, nops);
  void *ptrs[32];
  for (int i = 0; i < n; i++)
    ptrs[i] = byval && byval[i] ? host[i] : dev(host[i]);
  cudnnStatus_t s =
      plan ? execute(plan, n, uids, ptrs) : CUDNN_STATUS_NOT_SUPPORTED;
  char msg[256];
  last_error(msg, sizeof msg);
  CHECK(s == CUDNN_STATUS_SUCCESS, "execute: %d (%s)", s, msg);
}

static void check_close(const char *what, const float *got,
                        const double *want, int64_t n, double tol) {
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 3; i++)
    if (!(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])))) {
      bad++;
      CHECK(0, "%s[%lld] = %g, want %g", what, (long long)i, got[i], want[i]);
    }
}

/* Element [a, b, c, e] of a packed tensor of dims d. */
#define AT4(d, a, b, c, e)                                                  \
  ((((a) * (d)[1] + (b)) * (d)[2] + (c)) * (d)[3] + (e))

/* ---- Convolution -------------------------------------------------------- */

static cudnnBackendDescriptor_t conv_desc(void) {
  int64_t stride[2] = {2, 2}, pad[2] = {1, 1}, dil[2] = {1, 1};
  cudnnBackendDescriptor_t c = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  set_enum(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
           CUDNN_DATA_FLOAT);
  set_enum(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
           CUDNN_CROSS_CORRELATION);
  set_i64(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2);
  set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
  set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  finalize(c);
  return c;
}

/* One conv op of the given type, its tensors set by three attributes. */
static cudnnBackendDescriptor_t conv_op(cudnnBackendDescriptorType_t type,
                                        const cudnnBackendAttributeName_t *n,
                                        cudnnBackendDescriptor_t *t) {
  cudnnBackendDescriptor_t op = make(type);
  for (int i = 0; i < 3; i++)
    set_desc(op, n[i], t[i]);
  set_desc(op, n[3], conv_desc());
  set_float(op, n[4], 1.0f);
  set_float(op, n[5], 0.0f);
  finalize(op);
  return op;
}

static void test_conv(void) {
  /* X [2,4,7,6], W [6,2,3,3]: 2 groups; stride 2, padding 1: Y [2,6,4,3]. */
  const int64_t xd[4] = {2, 4, 7, 6}, wd[4] = {6, 2, 3, 3},
                yd[4] = {2, 6, 4, 3};
  const int64_t nx = 2 * 4 * 7 * 6, nw = 6 * 2 * 3 * 3, ny = 2 * 6 * 4 * 3;
  float *x = randoms(nx), *w = randoms(nw), *dy = randoms(ny);
  float *y = calloc(ny, 4), *dx = calloc(nx, 4), *dw = calloc(nw, 4);
  double *ry = calloc(ny, 8), *rdx = calloc(nx, 8), *rdw = calloc(nw, 8);
  int64_t cg = 2, kg = 3;
  for (int64_t b = 0; b < 2; b++)
    for (int64_t k = 0; k < 6; k++)
      for (int64_t p = 0; p < 4; p++)
        for (int64_t q = 0; q < 3; q++)
          for (int64_t c = 0; c < cg; c++)
            for (int64_t r = 0; r < 3; r++)
              for (int64_t s = 0; s < 3; s++) {
                int64_t h = p * 2 - 1 + r, v = q * 2 - 1 + s,
                        xc = k / kg * cg + c;
                if (h < 0 || h >= 7 || v < 0 || v >= 6)
                  continue;
                ry[AT4(yd, b, k, p, q)] +=
                    (double)x[AT4(xd, b, xc, h, v)] * w[AT4(wd, k, c, r, s)];
                rdw[AT4(wd, k, c, r, s)] +=
                    (double)dy[AT4(yd, b, k, p, q)] * x[AT4(xd, b, xc, h, v)];
              }
  /* The data gradient gathered per input element: the outputs whose
   * window covers it. */
  for (int64_t b = 0; b < 2; b++)
    for (int64_t xc = 0; xc < 4; xc++)
      for (int64_t h = 0; h < 7; h++)
        for (int64_t v = 0; v < 6; v++)
          for (int64_t k = xc / cg * kg; k < (xc / cg + 1) * kg; k++)
            for (int64_t r = 0; r < 3; r++)
              for (int64_t s = 0; s < 3; s++) {
                int64_t ph = h + 1 - r, pw = v + 1 - s;
                if (ph % 2 || pw % 2 || ph < 0 || pw < 0 || ph / 2 >= 4 ||
                    pw / 2 >= 3)
                  continue;
                rdx[AT4(xd, b, xc, h, v)] +=
                    (double)dy[AT4(yd, b, k, ph / 2, pw / 2)] *
                    w[AT4(wd, k, xc % cg, r, s)];
              }
  int64_t uids[3] = {1, 2, 3};
  static const cudnnBackendAttributeName_t fwd[6] = {
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static const cudnnBackendAttributeName_t data[6] = {
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static const cudnnBackendAttributeName_t filter[6] = {
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  struct {
    cudnnBackendDescriptorType_t type;
    const cudnnBackendAttributeName_t *names;
    void *host[3];
  } cases[3] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, fwd, {x, w, y}},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, data,
       {dx, w, dy}},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, filter,
       {x, dw, dy}},
  };
  for (int i = 0; i < 3; i++) {
    cudnnBackendDescriptor_t t[3] = {
        f32(1, xd[0], xd[1], xd[2], xd[3], REAL),
        f32(2, wd[0], wd[1], wd[2], wd[3], REAL),
        f32(3, yd[0], yd[1], yd[2], yd[3], REAL)};
    cudnnBackendDescriptor_t op = conv_op(cases[i].type, cases[i].names, t);
    run(&op, 1, 3, uids, cases[i].host, NULL);
    destroy_all();
  }
  check_close("conv y", y, ry, ny, 1e-5);
  check_close("conv dx", dx, rdx, nx, 1e-5);
  check_close("conv dw", dw, rdw, nw, 1e-5);
  free(x), free(w), free(dy), free(y), free(dx), free(dw);
  free(ry), free(rdx), free(rdw);
}

/* ---- Pooling ------------------------------------------------------------ */

static cudnnBackendDescriptor_t pool_desc(bool max) {
  int64_t win[2] = {3, 3}, stride[2] = {2, 2}, pad[2] = {1, 1};
  cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_RESAMPLE_DESCRIPTOR);
  set_enum(d, CUDNN_ATTR_RESAMPLE_MODE, CUDNN_TYPE_RESAMPLE_MODE,
           max ? CUDNN_RESAMPLE_MAXPOOL
               : CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING);
  set_enum(d, CUDNN_ATTR_RESAMPLE_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
           CUDNN_DATA_FLOAT);
  set_i64(d, CUDNN_ATTR_RESAMPLE_SPATIAL_DIMS, 2);
  set_enum(d, CUDNN_ATTR_RESAMPLE_PADDING_MODE, CUDNN_TYPE_PADDING_MODE,
           max ? CUDNN_NEG_INF_PAD : CUDNN_ZERO_PAD);
  set(d, CUDNN_ATTR_RESAMPLE_WINDOW_DIMS, CUDNN_TYPE_INT64, 2, win);
  set(d, CUDNN_ATTR_RESAMPLE_STRIDES, CUDNN_TYPE_INT64, 2, stride);
  if (max) { /* fractions are accepted too */
    cudnnFraction_t f[2] = {{1, 1}, {1, 1}};
    set(d, CUDNN_ATTR_RESAMPLE_PRE_PADDINGS, CUDNN_TYPE_FRACTION, 2, f);
  } else
    set(d, CUDNN_ATTR_RESAMPLE_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(d, CUDNN_ATTR_RESAMPLE_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  finalize(d);
  return d;
}

static void test_pool(bool max) {
  /* X [2,3,5,5], window 3, stride 2, padding 1: Y [2,3,3,3]. */
  const int64_t xd[4] = {2, 3, 5, 5}, yd[4] = {2, 3, 3, 3};
  const int64_t nx = 150, ny = 54;
  float *x = randoms(nx), *dy = randoms(ny), *y = calloc(ny, 4),
        *dx = calloc(nx, 4);
  int8_t *idx = calloc(ny, 1);
  double *ry = calloc(ny, 8), *rdx = calloc(nx, 8);
  for (int64_t b = 0; b < 2; b++)
    for (int64_t c = 0; c < 3; c++)
      for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 3; j++) {
          double best = -INFINITY, sum = 0;
          int64_t bh = 0, bw = 0;
          for (int64_t r = 0; r < 3; r++)
            for (int64_t s = 0; s < 3; s++) {
              int64_t h = i * 2 - 1 + r, w = j * 2 - 1 + s;
              if (h < 0 || h >= 5 || w < 0 || w >= 5)
                continue;
              double v = x[AT4(xd, b, c, h, w)];
              sum += v;
              if (v > best)
                best = v, bh = h, bw = w;
            }
          double g = dy[AT4(yd, b, c, i, j)];
          ry[AT4(yd, b, c, i, j)] = max ? best : sum / 9;
          for (int64_t r = 0; r < 3; r++)
            for (int64_t s = 0; s < 3; s++) {
              int64_t h = i * 2 - 1 + r, w = j * 2 - 1 + s;
              if (h >= 0 && h < 5 && w >= 0 && w < 5 && !max)
                rdx[AT4(xd, b, c, h, w)] += g / 9;
            }
          if (max)
            rdx[AT4(xd, b, c, bh, bw)] += g;
        }
  /* Forward (with the index for max), then backward. */
  cudnnBackendDescriptor_t tx = f32(1, 2, 3, 5, 5, REAL),
                           ty = f32(2, 2, 3, 3, 3, REAL), tidx = NULL;
  cudnnBackendDescriptor_t fwd =
      make(CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR);
  set_desc(fwd, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC, tx);
  set_desc(fwd, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC, ty);
  if (max) {
    tidx = tensor(3, CUDNN_DATA_INT8, 4, yd, NULL, REAL);
    set_desc(fwd, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_IDXDESC, tidx);
  }
  set_desc(fwd, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC, pool_desc(max));
  finalize(fwd);
  int64_t uids[3] = {1, 2, 3};
  void *host[3] = {x, y, idx};
  run(&fwd, 1, max ? 3 : 2, uids, host, NULL);
  destroy_all();
  cudnnBackendDescriptor_t tdx = f32(4, 2, 3, 5, 5, REAL),
                           tdy = f32(5, 2, 3, 3, 3, REAL);
  cudnnBackendDescriptor_t bwd =
      make(CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR);
  set_desc(bwd, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DXDESC, tdx);
  set_desc(bwd, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DYDESC, tdy);
  if (max)
    set_desc(bwd, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_IDXDESC,
             tensor(3, CUDNN_DATA_INT8, 4, yd, NULL, REAL));
  set_desc(bwd, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DESC, pool_desc(max));
  finalize(bwd);
  int64_t buids[3] = {4, 5, 3};
  void *bhost[3] = {dx, dy, idx};
  run(&bwd, 1, max ? 3 : 2, buids, bhost, NULL);
  destroy_all();
  check_close(max ? "max pool y" : "avg pool y", y, ry, ny, 1e-6);
  check_close(max ? "max pool dx" : "avg pool dx", dx, rdx, nx, 1e-6);
  free(x), free(dy), free(y), free(dx), free(idx), free(ry), free(rdx);
}

/* ---- Batch norm --------------------------------------------------------- */

#define NF(x) CUDNN_ATTR_OPERATION_NORM_FWD_##x
#define NB(x) CUDNN_ATTR_OPERATION_NORM_BWD_##x

static void test_batch_norm(void) {
  enum { N = 3, C = 4, H = 2, W = 5, NX = N * C * H * W };
  const int64_t xd[4] = {N, C, H, W};
  float *x = randoms(NX), *dy = randoms(NX), *scale = randoms(C),
        *bias = randoms(C), *rm = randoms(C), *rv = randoms(C);
  for (int c = 0; c < C; c++)
    rv[c] += 2.0f;
  float *y = calloc(NX, 4), *mean = calloc(C, 4), *inv = calloc(C, 4),
        *rm_out = calloc(C, 4), *rv_out = calloc(C, 4), *dx = calloc(NX, 4),
        *dscale = calloc(C, 4), *dbias = calloc(C, 4);
  float eps = 1e-5f, factor = 0.1f;
  double ry[NX], rdx[NX], rmean[C], rinv[C], rrm[C], rrv[C], rds[C], rdb[C];
  const double n = N * H * W;
  for (int c = 0; c < C; c++) {
    double s = 0, q = 0;
    for (int b = 0; b < N; b++)
      for (int i = 0; i < H * W; i++)
        s += x[AT4(xd, b, c, i / W, i % W)];
    rmean[c] = s / n;
    for (int b = 0; b < N; b++)
      for (int i = 0; i < H * W; i++) {
        double v = x[AT4(xd, b, c, i / W, i % W)] - rmean[c];
        q += v * v;
      }
    rinv[c] = 1 / sqrt(q / n + eps);
    rrm[c] = 0.9 * rm[c] + 0.1 * rmean[c];
    rrv[c] = 0.9 * rv[c] + 0.1 * q / (n - 1);
    double sdy = 0, sdyx = 0;
    for (int b = 0; b < N; b++)
      for (int i = 0; i < H * W; i++) {
        int64_t k = AT4(xd, b, c, i / W, i % W);
        double xhat = (x[k] - rmean[c]) * rinv[c];
        ry[k] = xhat * scale[c] + bias[c];
        sdy += dy[k];
        sdyx += dy[k] * xhat;
      }
    rds[c] = sdyx;
    rdb[c] = sdy;
    for (int b = 0; b < N; b++)
      for (int i = 0; i < H * W; i++) {
        int64_t k = AT4(xd, b, c, i / W, i % W);
        double xhat = (x[k] - rmean[c]) * rinv[c];
        rdx[k] = scale[c] * rinv[c] * (dy[k] - sdy / n - xhat * sdyx / n);
      }
  }
  cudnnBackendDescriptor_t fwd =
      make(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  set_enum(fwd, NF(MODE), CUDNN_TYPE_NORM_MODE, CUDNN_BATCH_NORM);
  set_enum(fwd, NF(PHASE), CUDNN_TYPE_NORM_FWD_PHASE, CUDNN_NORM_FWD_TRAINING);
  set_desc(fwd, NF(XDESC), f32(1, N, C, H, W, REAL));
  set_desc(fwd, NF(SCALE_DESC), f32(2, 1, C, 1, 1, REAL));
  set_desc(fwd, NF(BIAS_DESC), f32(3, 1, C, 1, 1, REAL));
  set_desc(fwd, NF(EPSILON_DESC), scalar(4));
  set_desc(fwd, NF(YDESC), f32(5, N, C, H, W, REAL));
  set_desc(fwd, NF(MEAN_DESC), f32(6, 1, C, 1, 1, REAL));
  set_desc(fwd, NF(INV_VARIANCE_DESC), f32(7, 1, C, 1, 1, REAL));
  set_desc(fwd, NF(EXP_AVG_FACTOR_DESC), scalar(8));
  set_desc(fwd, NF(INPUT_RUNNING_MEAN_DESC), f32(9, 1, C, 1, 1, REAL));
  set_desc(fwd, NF(INPUT_RUNNING_VAR_DESC), f32(10, 1, C, 1, 1, REAL));
  set_desc(fwd, NF(OUTPUT_RUNNING_MEAN_DESC), f32(11, 1, C, 1, 1, REAL));
  set_desc(fwd, NF(OUTPUT_RUNNING_VAR_DESC), f32(12, 1, C, 1, 1, REAL));
  finalize(fwd);
  int64_t uids[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  void *host[12] = {x, scale, bias, &eps, y, mean, inv, &factor, rm, rv,
                    rm_out, rv_out};
  bool byval[12] = {[3] = true, [7] = true};
  run(&fwd, 1, 12, uids, host, byval);
  destroy_all();
  check_close("bn y", y, ry, NX, 1e-5);
  check_close("bn mean", mean, rmean, C, 1e-6);
  check_close("bn inv_variance", inv, rinv, C, 1e-5);
  check_close("bn running mean", rm_out, rrm, C, 1e-6);
  check_close("bn running var", rv_out, rrv, C, 1e-6);

  cudnnBackendDescriptor_t bwd =
      make(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
  set_enum(bwd, NB(MODE), CUDNN_TYPE_NORM_MODE, CUDNN_BATCH_NORM);
  set_desc(bwd, NB(XDESC), f32(1, N, C, H, W, REAL));
  set_desc(bwd, NB(DYDESC), f32(2, N, C, H, W, REAL));
  set_desc(bwd, NB(SCALE_DESC), f32(3, 1, C, 1, 1, REAL));
  set_desc(bwd, NB(MEAN_DESC), f32(4, 1, C, 1, 1, REAL));
  set_desc(bwd, NB(INV_VARIANCE_DESC), f32(5, 1, C, 1, 1, REAL));
  set_desc(bwd, NB(DSCALE_DESC), f32(6, 1, C, 1, 1, REAL));
  set_desc(bwd, NB(DBIAS_DESC), f32(7, 1, C, 1, 1, REAL));
  set_desc(bwd, NB(DXDESC), f32(8, N, C, H, W, REAL));
  finalize(bwd);
  int64_t buids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  void *bhost[8] = {x, dy, scale, mean, inv, dscale, dbias, dx};
  run(&bwd, 1, 8, buids, bhost, NULL);
  destroy_all();
  check_close("bn dx", dx, rdx, NX, 1e-4);
  check_close("bn dscale", dscale, rds, C, 1e-5);
  check_close("bn dbias", dbias, rdb, C, 1e-5);
  free(x), free(dy), free(scale), free(bias), free(rm), free(rv), free(y);
  free(mean), free(inv), free(rm_out), free(rv_out), free(dx), free(dscale);
  free(dbias);
}

/* ---- Attention and matmul ----------------------------------------------- */

static cudnnBackendDescriptor_t pw_op(cudnnPointwiseMode_t mode,
                                      cudnnBackendDescriptor_t x,
                                      cudnnBackendDescriptor_t b,
                                      cudnnBackendDescriptor_t t,
                                      cudnnBackendDescriptor_t y,
                                      int64_t axis) {
  cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set_enum(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode);
  set_enum(d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE,
           CUDNN_DATA_FLOAT);
  if (mode == CUDNN_POINTWISE_GEN_INDEX)
    set_i64(d, CUDNN_ATTR_POINTWISE_AXIS, axis);
  finalize(d);
  cudnnBackendDescriptor_t op =
      make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, d);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b)
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  if (t)
    set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  finalize(op);
  return op;
}

static cudnnBackendDescriptor_t reduce_op(cudnnReduceTensorOp_t r,
                                          cudnnBackendDescriptor_t x,
                                          cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  set_enum(d, CUDNN_ATTR_REDUCTION_OPERATOR,
           CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, r);
  set_enum(d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
           CUDNN_DATA_FLOAT);
  finalize(d);
  cudnnBackendDescriptor_t op =
      make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, d);
  finalize(op);
  return op;
}

static cudnnBackendDescriptor_t matmul_op(cudnnBackendDescriptor_t a,
                                          cudnnBackendDescriptor_t b,
                                          cudnnBackendDescriptor_t c) {
  cudnnBackendDescriptor_t d = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  set_enum(d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
           CUDNN_DATA_FLOAT);
  finalize(d);
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, d);
  finalize(op);
  return op;
}

/* The dialect's causal attention forward, f32, its operations given in
 * reverse (the fake orders them). */
static void test_attention(void) {
  enum { BH = 2, L = 5, E = 4, NQ = BH * L * E };
  float *q = randoms(NQ), *k = randoms(NQ), *v = randoms(NQ);
  float *o = calloc(NQ, 4), *stats = calloc(BH * L, 4);
  float scale = 0.5f, neg = -INFINITY;
  double ro[NQ], rstats[BH * L];
  for (int b = 0; b < BH; b++)
    for (int i = 0; i < L; i++) {
      double s[L], mx = -INFINITY, z = 0;
      for (int j = 0; j <= i; j++) {
        s[j] = 0;
        for (int e = 0; e < E; e++)
          s[j] += (double)q[(b * L + i) * E + e] * k[(b * L + j) * E + e];
        s[j] *= scale;
        mx = s[j] > mx ? s[j] : mx;
      }
      for (int j = 0; j <= i; j++)
        z += exp(s[j] - mx);
      rstats[b * L + i] = mx + log(z);
      for (int e = 0; e < E; e++) {
        double acc = 0;
        for (int j = 0; j <= i; j++)
          acc += exp(s[j] - mx) / z * v[(b * L + j) * E + e];
        ro[(b * L + i) * E + e] = acc;
      }
    }
  const int64_t ktd[4] = {BH, 1, E, L}, kts[4] = {L * E, L * E, 1, E};
  const int64_t ld[4] = {BH, 1, L, L};
  cudnnBackendDescriptor_t tq = f32(1, BH, 1, L, E, REAL),
                           tk = tensor(2, CUDNN_DATA_FLOAT, 4, ktd, kts, REAL),
                           tv = f32(3, BH, 1, L, E, REAL),
                           to = f32(4, BH, 1, L, E, REAL),
                           tstats = f32(5, BH, 1, L, 1, REAL),
                           tscale = scalar(6), tneg = scalar(7);
  cudnnBackendDescriptor_t s = f32(10, BH, 1, L, L, VIRT),
                           s2 = f32(11, BH, 1, L, L, VIRT),
                           r = tensor(12, CUDNN_DATA_INT32, 4, ld, NULL, VIRT),
                           c = tensor(13, CUDNN_DATA_INT32, 4, ld, NULL, VIRT),
                           m = tensor(14, CUDNN_DATA_BOOLEAN, 4, ld, NULL,
                                      VIRT),
                           s3 = f32(15, BH, 1, L, L, VIRT),
                           mx = f32(16, BH, 1, L, 1, VIRT),
                           d = f32(17, BH, 1, L, L, VIRT),
                           e = f32(18, BH, 1, L, L, VIRT),
                           z = f32(19, BH, 1, L, 1, VIRT),
                           lz = f32(20, BH, 1, L, 1, VIRT),
                           p = f32(21, BH, 1, L, L, VIRT);
  cudnnBackendDescriptor_t ops[14] = {
      matmul_op(tq, tk, s),
      pw_op(CUDNN_POINTWISE_MUL, s, tscale, NULL, s2, 0),
      pw_op(CUDNN_POINTWISE_GEN_INDEX, s2, NULL, NULL, r, 2),
      pw_op(CUDNN_POINTWISE_GEN_INDEX, s2, NULL, NULL, c, 3),
      pw_op(CUDNN_POINTWISE_CMP_GE, r, c, NULL, m, 0),
      pw_op(CUDNN_POINTWISE_BINARY_SELECT, s2, tneg, m, s3, 0),
      reduce_op(CUDNN_REDUCE_TENSOR_MAX, s3, mx),
      pw_op(CUDNN_POINTWISE_SUB, s3, mx, NULL, d, 0),
      pw_op(CUDNN_POINTWISE_EXP, d, NULL, NULL, e, 0),
      reduce_op(CUDNN_REDUCE_TENSOR_ADD, e, z),
      pw_op(CUDNN_POINTWISE_LOG, z, NULL, NULL, lz, 0),
      pw_op(CUDNN_POINTWISE_ADD, mx, lz, NULL, tstats, 0),
      pw_op(CUDNN_POINTWISE_DIV, e, z, NULL, p, 0),
      matmul_op(p, tv, to),
  };
  cudnnBackendDescriptor_t reversed[14];
  for (int i = 0; i < 14; i++)
    reversed[i] = ops[13 - i];
  int64_t uids[7] = {1, 2, 3, 4, 5, 6, 7};
  void *host[7] = {q, k, v, o, stats, &scale, &neg};
  bool byval[7] = {[5] = true, [6] = true};
  run(reversed, 14, 7, uids, host, byval);
  destroy_all();
  check_close("attention o", o, ro, NQ, 1e-5);
  check_close("attention stats", stats, rstats, BH * L, 1e-5);
  free(q), free(k), free(v), free(o), free(stats);
}

/* C [3,4,2] = A B, A a transposed view of [3,5,4] storage, B [1,5,2]
 * broadcast over the batch. */
static void test_matmul(void) {
  float *a = randoms(60), *b = randoms(10), *c = calloc(24, 4);
  double rc[24];
  for (int q = 0; q < 3; q++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 2; j++) {
        double acc = 0;
        for (int k = 0; k < 5; k++)
          acc += (double)a[q * 20 + k * 4 + i] * b[k * 2 + j];
        rc[(q * 4 + i) * 2 + j] = acc;
      }
  const int64_t ad[3] = {3, 4, 5}, as[3] = {20, 1, 4}, bd[3] = {1, 5, 2},
                cd[3] = {3, 4, 2};
  cudnnBackendDescriptor_t op =
      matmul_op(tensor(1, CUDNN_DATA_FLOAT, 3, ad, as, REAL),
                tensor(2, CUDNN_DATA_FLOAT, 3, bd, NULL, REAL),
                tensor(3, CUDNN_DATA_FLOAT, 3, cd, NULL, REAL));
  int64_t uids[3] = {1, 2, 3};
  void *host[3] = {a, b, c};
  run(&op, 1, 3, uids, host, NULL);
  destroy_all();
  check_close("matmul c", c, rc, 24, 1e-5);
  free(a), free(b), free(c);
}

/* Casts (IDENTITY) of rank-1 f32 ties to bf16 and f16 round to nearest
 * even. */
static void test_cast(void) {
  /* Tensors ask for 16-byte alignment. */
  _Alignas(16) float x[2] = {1 + 0x1p-8f, 1 + 0x3p-8f};
  _Alignas(16) float xh[2] = {1 + 0x1p-11f, 1 + 0x3p-11f};
  _Alignas(16) uint16_t bf[2], h[2];
  const int64_t two[1] = {2};
  cudnnBackendDescriptor_t ops[2] = {
      pw_op(CUDNN_POINTWISE_IDENTITY,
            tensor(1, CUDNN_DATA_FLOAT, 1, two, NULL, REAL), NULL, NULL,
            tensor(2, CUDNN_DATA_BFLOAT16, 1, two, NULL, REAL), 0),
      pw_op(CUDNN_POINTWISE_IDENTITY,
            tensor(3, CUDNN_DATA_FLOAT, 1, two, NULL, REAL), NULL, NULL,
            tensor(4, CUDNN_DATA_HALF, 1, two, NULL, REAL), 0)};
  int64_t uids[4] = {1, 2, 3, 4};
  void *host[4] = {x, bf, xh, h};
  run(ops, 2, 4, uids, host, NULL);
  destroy_all();
  CHECK(bf[0] == 0x3f80 && bf[1] == 0x3f82, "bf16 %#x %#x", bf[0], bf[1]);
  CHECK(h[0] == 0x3c00 && h[1] == 0x3c02, "f16 %#x %#x", h[0], h[1]);
}

/* ---- Validation and the environment ------------------------------------- */

static void test_validation(void) {
  char msg[256];
  /* A tensor without UNIQUE_ID. */
  int64_t dims[4] = {1, 2, 3, 4}, strides[4] = {24, 12, 4, 1};
  cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set_enum(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE,
           CUDNN_DATA_FLOAT);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  set_i64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16);
  CHECK(dnn.cudnnBackendFinalize(t) == CUDNN_STATUS_BAD_PARAM,
        "a tensor without UNIQUE_ID finalized");
  last_error(msg, sizeof msg);
  CHECK(strstr(msg, "required attribute 906"), "message: %s", msg);
  /* Wrong type, wrong count, unknown attribute, set after finalize. */
  float f = 1;
  CHECK(dnn.cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                     CUDNN_TYPE_FLOAT, 1, &f) ==
            CUDNN_STATUS_BAD_PARAM,
        "UNIQUE_ID set as FLOAT");
  CHECK(dnn.cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                     CUDNN_TYPE_INT64, 9, dims) ==
            CUDNN_STATUS_BAD_PARAM,
        "9 dimensions");
  CHECK(dnn.cudnnBackendSetAttribute(t, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                                     CUDNN_TYPE_DATA_TYPE, 1, &f) ==
            CUDNN_STATUS_NOT_SUPPORTED,
        "a convolution attribute on a tensor");
  set_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 1);
  finalize(t);
  CHECK(dnn.cudnnBackendFinalize(t) == CUDNN_STATUS_BAD_PARAM,
        "finalized twice");
  CHECK(dnn.cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                                     CUDNN_TYPE_INT64, 1, dims) ==
            CUDNN_STATUS_BAD_PARAM,
        "set after finalize");
  /* An unfinalized tensor as an operation's attribute. */
  cudnnBackendDescriptor_t raw = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  CHECK(dnn.cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &raw) == CUDNN_STATUS_BAD_PARAM,
        "an unfinalized tensor in an operation");
  destroy_all();

  /* A host pointer in the variant pack; then the same graph refused. */
  _Alignas(16) float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4];
  int64_t d2[3] = {1, 2, 2}, uids[3] = {1, 2, 3};
  cudnnBackendDescriptor_t mm =
      matmul_op(tensor(1, CUDNN_DATA_FLOAT, 3, d2, NULL, REAL),
                tensor(2, CUDNN_DATA_FLOAT, 3, d2, NULL, REAL),
                tensor(3, CUDNN_DATA_FLOAT, 3, d2, NULL, REAL));
  cudnnBackendDescriptor_t plan = plan_of(&mm, 1);
  void *ptrs[3] = {dev(a), b, dev(c)};
  CHECK(plan && execute(plan, 3, uids, ptrs) == CUDNN_STATUS_BAD_PARAM,
        "a host pointer executed");
  last_error(msg, sizeof msg);
  CHECK(strstr(msg, "not device memory"), "message: %s", msg);
  ptrs[1] = dev(b);
  CHECK(plan && execute(plan, 2, uids, ptrs) == CUDNN_STATUS_BAD_PARAM,
        "a pack without C executed");
  setenv("RAF_FAKE_CUDNN_REFUSE", "conv_fwd,matmul", 1);
  CHECK(plan_of(&mm, 1) == NULL, "RAF_FAKE_CUDNN_REFUSE: a config offered");
  setenv("RAF_FAKE_CUDNN_REFUSE", "pointwise", 1);
  CHECK(plan_of(&mm, 1) != NULL, "RAF_FAKE_CUDNN_REFUSE: matmul refused");
  unsetenv("RAF_FAKE_CUDNN_REFUSE");
  /* A plan that needs a workspace: executing without one is refused. */
  setenv("RAF_FAKE_CUDNN_WORKSPACE", "256", 1);
  want_workspace = 256;
  plan = plan_of(&mm, 1);
  CHECK(plan && execute(plan, 3, uids, ptrs) == CUDNN_STATUS_BAD_PARAM,
        "executed without the workspace");
  unsetenv("RAF_FAKE_CUDNN_WORKSPACE");
  want_workspace = 0;
  destroy_all();

  /* Graphs cuDNN refuses: a virtual tensor no operation reads, one unique
   * id for two shapes. */
  cudnnBackendDescriptor_t bad[2] = {
      pw_op(CUDNN_POINTWISE_EXP, f32(1, 1, 1, 2, 2, REAL), NULL, NULL,
            f32(2, 1, 1, 2, 2, VIRT), 0),
      pw_op(CUDNN_POINTWISE_EXP, f32(3, 1, 1, 1, 4, REAL), NULL, NULL,
            f32(1, 1, 1, 1, 4, REAL), 0)};
  for (int i = 0; i < 2; i++) {
    cudnnBackendDescriptor_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        i + 1, bad);
    CHECK(dnn.cudnnBackendFinalize(g) == CUDNN_STATUS_BAD_PARAM,
          "bad graph %d finalized", i);
    last_error(msg, sizeof msg);
    CHECK(strstr(msg, i ? "two different tensors" : "virtual tensor 2"),
          "message: %s", msg);
  }
  destroy_all();

  setenv("RAF_FAKE_CUDNN_VERSION", "90100", 1);
  CHECK(dnn.cudnnGetVersion() == 90100, "version %zu", dnn.cudnnGetVersion());
  unsetenv("RAF_FAKE_CUDNN_VERSION");
  CHECK(dnn.cudnnGetVersion() == 91900, "version %zu", dnn.cudnnGetVersion());
}

/* The log: a line per finalized graph and per execution. */
static void test_log(void) {
  char path[] = "/tmp/test_fake_cudnn_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0)
    return;
  close(fd);
  setenv("RAF_FAKE_CUDNN_LOG", path, 1);
  _Alignas(16) float x[4] = {1, 2, 3, 4}, y[4];
  cudnnBackendDescriptor_t op =
      pw_op(CUDNN_POINTWISE_EXP, f32(1, 1, 1, 2, 2, REAL), NULL, NULL,
            f32(2, 1, 1, 2, 2, REAL), 0);
  int64_t uids[2] = {1, 2};
  void *host[2] = {x, y};
  run(&op, 1, 2, uids, host, NULL);
  destroy_all();
  unsetenv("RAF_FAKE_CUDNN_LOG");
  CHECK(fabsf(y[3] - expf(4)) < 1e-4f, "exp: %g", y[3]);
  char text[256] = {0};
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
  (void)got;
  if (f)
    fclose(f);
  unlink(path);
  CHECK(!strcmp(text, "graph ops=pointwise:exp\n"
                      "execute ops=pointwise:exp ws=0\n"),
        "log:\n%s", text);
}

int main(void) {
  if (load() != 0) {
    fprintf(stderr, "cannot load the fake cuDNN\n");
    return 1;
  }
  unsetenv("RAF_FAKE_CUDNN_WORKSPACE");
  unsetenv("RAF_FAKE_CUDNN_REFUSE");
  srand(7);
  CHECK(dnn.cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS, "cudnnCreate");
  CHECK(dnn.cudnnSetStream(handle, NULL) == CUDNN_STATUS_SUCCESS,
        "cudnnSetStream");
  test_conv();
  test_pool(true);
  test_pool(false);
  test_batch_norm();
  test_attention();
  test_matmul();
  test_cast();
  test_validation();
  test_log();
  CHECK(dnn.cudnnDestroy(handle) == CUDNN_STATUS_SUCCESS, "cudnnDestroy");
  dlclose(lib);
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
#endif
