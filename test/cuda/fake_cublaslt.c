/* fake_cublaslt.c: a stand-in for NVIDIA's libcublasLt, for testing the
 * cublas dialect (runtime/cuda/cublas.c) on machines without a GPU,
 * beside the fake driver (fake_driver.c), whose device memory is host
 * memory at addresses with bit 63 flipped.
 *
 * It exports the entry points of runtime/cuda/cublaslt.def and checks
 * what cuBLASLt would refuse or what would fault on a GPU: descriptors
 * made by it, matrix shapes that agree (op(A) m x k, op(B) k x n, C and D
 * m x n), leading dimensions of at least the rows, equal batch counts,
 * device pointers for the matrices and the workspace, a workspace no
 * smaller than the preference's limit. cublasLtMatmul then computes
 * D = alpha op(A) op(B) + beta C on the host, column-major, in f32 and
 * bf16 (f32 sums), as cuBLASLt defines it, so that a module of matmuls
 * gives real values on the fake device, as the fake driver's kernels do.
 * A product above RAF_FAKE_CUBLASLT_MAX_MACS multiply-adds (no limit by
 * default) is refused with CUBLAS_STATUS_NOT_SUPPORTED and a line on
 * stderr, never left uncomputed. f16 is computed as bf16 is (f32 sums,
 * the result rounded to nearest even).
 *
 * The epilogues raf uses are computed too, as cublasLt.h defines them:
 * bias, GELU (PyTorch's tanh form) with or without bias and aux output,
 * DGELU against the aux input, and BGRADA (op(A) summed over k); their
 * pointers must be device memory and the aux leading dimension at least m
 * and a multiple of 8.
 *
 *   RAF_FAKE_CUBLASLT_LOG=file   a line per matmul appended to file:
 *                                "matmul m=M n=N k=K batch=B ta=0|1
 *                                tb=0|1 type=f32|bf16|f16 computed"
 *                                and " epilogue=NAME" unless the default
 *
 * Built as libcublasLt.so.13 in the build tree's fake-cuda/ (CMakeLists.txt);
 * tests reach it through LD_LIBRARY_PATH or RAF_CUBLASLT.
 */
#include "fake_common.h"

#include <cublasLt.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAGIC = 0x6c74 };

typedef struct fake_desc {
  int magic;
  cublasOperation_t ta, tb;
  cublasLtEpilogue_t epilogue;
  void *bias, *aux; /* the epilogue's vector and matrix */
  int64_t aux_ld;
} fake_desc;

typedef struct fake_layout {
  int magic;
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld, stride;
  int32_t batch;
} fake_layout;

typedef struct fake_pref {
  int magic;
  size_t max_workspace;
} fake_pref;

static int handle_token;

/* The epilogues raf asks for, by the names of the log; NULL for others. */
static const char *epilogue_name(cublasLtEpilogue_t e) {
  switch (e) {
  case CUBLASLT_EPILOGUE_DEFAULT: return "default";
  case CUBLASLT_EPILOGUE_BIAS: return "bias";
  case CUBLASLT_EPILOGUE_GELU: return "gelu";
  case CUBLASLT_EPILOGUE_GELU_AUX: return "gelu_aux";
  case CUBLASLT_EPILOGUE_GELU_BIAS: return "gelu_bias";
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "gelu_aux_bias";
  case CUBLASLT_EPILOGUE_DGELU: return "dgelu";
  case CUBLASLT_EPILOGUE_BGRADA: return "bgrada";
  default: return NULL;
  }
}

static int has_bias(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_BGRADA;
}

static int has_aux(cublasLtEpilogue_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU;
}

/* What cuBLASLt requires of an epilogue's attributes, for a product of m
 * rows in `batch` batches: a bias or aux pointer where it has one, an aux
 * leading dimension of at least m and a multiple of 8, and (as raf uses
 * them) no batch. */
static int epilogue_valid(const fake_desc *d, uint64_t m, int32_t batch) {
  if (d->epilogue == CUBLASLT_EPILOGUE_DEFAULT)
    return 1;
  return batch == 1 && (!has_bias(d->epilogue) || d->bias) &&
         (!has_aux(d->epilogue) ||
          (d->aux && d->aux_ld >= (int64_t)m && d->aux_ld % 8 == 0));
}

/* PyTorch's tanh approximation of GELU, and its derivative. */
static float gelu(float x) {
  const float k = 0.7978845608f; /* sqrt(2 / pi) */
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

static float dgelu(float x) {
  const float k = 0.7978845608f;
  float t = tanhf(k * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * x * x);
}


size_t cublasLtGetVersion(void) { return 130000; }

const char *cublasLtGetStatusString(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  default: return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  *handle = (cublasLtHandle_t)&handle_token;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return handle == (cublasLtHandle_t)&handle_token
             ? CUBLAS_STATUS_SUCCESS
             : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (compute != CUBLAS_COMPUTE_32F &&
      compute != CUBLAS_COMPUTE_32F_FAST_TF32)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (scale != CUDA_R_32F)
    return CUBLAS_STATUS_INVALID_VALUE;
  fake_desc *d = calloc(1, sizeof *d);
  if (!d)
    return CUBLAS_STATUS_ALLOC_FAILED;
  d->magic = MAGIC;
  d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  *desc = (cublasLtMatmulDesc_t)d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  free(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(
    cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
    const void *buf, size_t bytes) {
  fake_desc *d = (fake_desc *)desc;
  if (!d || d->magic != MAGIC)
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((attr == CUBLASLT_MATMUL_DESC_TRANSA ||
       attr == CUBLASLT_MATMUL_DESC_TRANSB) &&
      bytes == sizeof(cublasOperation_t)) {
    cublasOperation_t op;
    memcpy(&op, buf, sizeof op);
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
      return CUBLAS_STATUS_INVALID_VALUE;
    *(attr == CUBLASLT_MATMUL_DESC_TRANSA ? &d->ta : &d->tb) = op;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE && bytes == sizeof(uint32_t)) {
    memcpy(&d->epilogue, buf, bytes);
    return epilogue_name(d->epilogue) ? CUBLAS_STATUS_SUCCESS
                                      : CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if ((attr == CUBLASLT_MATMUL_DESC_BIAS_POINTER ||
       attr == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER) &&
      bytes == sizeof(void *)) {
    memcpy(attr == CUBLASLT_MATMUL_DESC_BIAS_POINTER ? &d->bias : &d->aux, buf,
           bytes);
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD && bytes == sizeof(int64_t)) {
    memcpy(&d->aux_ld, buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_NOT_SUPPORTED; /* what raf does not set */
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (ld < (int64_t)rows || ld < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  fake_layout *l = calloc(1, sizeof *l);
  if (!l)
    return CUBLAS_STATUS_ALLOC_FAILED;
  *l = (fake_layout){MAGIC, type, rows, cols, ld, 0, 1};
  *layout = (cublasLtMatrixLayout_t)l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  free(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
    const void *buf, size_t bytes) {
  fake_layout *l = (fake_layout *)layout;
  if (!l || l->magic != MAGIC)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && bytes == sizeof(int32_t)) {
    memcpy(&l->batch, buf, bytes);
    return l->batch >= 1 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
  }
  if (attr == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET &&
      bytes == sizeof(int64_t)) {
    memcpy(&l->stride, buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  fake_pref *p = calloc(1, sizeof *p);
  if (!p)
    return CUBLAS_STATUS_ALLOC_FAILED;
  p->magic = MAGIC;
  *pref = (cublasLtMatmulPreference_t)p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  free(pref);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
    const void *buf, size_t bytes) {
  fake_pref *p = (fake_pref *)pref;
  if (!p || p->magic != MAGIC)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
      bytes == sizeof(uint64_t)) {
    uint64_t v;
    memcpy(&v, buf, sizeof v);
    p->max_workspace = (size_t)v;
    return CUBLAS_STATUS_SUCCESS;
  }
  /* The alignments: any value is a valid hint. */
  return bytes == sizeof(uint32_t) ? CUBLAS_STATUS_SUCCESS
                                   : CUBLAS_STATUS_INVALID_VALUE;
}

/* Whether the layouts fit a product: op(A) m x k, op(B) k x n, C m x n. */
static int shapes_agree(const fake_desc *d, const fake_layout *a,
                        const fake_layout *b, const fake_layout *c,
                        uint64_t *m, uint64_t *n, uint64_t *k) {
  uint64_t am = d->ta == CUBLAS_OP_N ? a->rows : a->cols;
  uint64_t ak = d->ta == CUBLAS_OP_N ? a->cols : a->rows;
  uint64_t bk = d->tb == CUBLAS_OP_N ? b->rows : b->cols;
  uint64_t bn = d->tb == CUBLAS_OP_N ? b->cols : b->rows;
  *m = am, *n = bn, *k = ak;
  return ak == bk && c->rows == am && c->cols == bn &&
         a->batch == c->batch && b->batch == c->batch &&
         a->type == b->type && (c->type == a->type || c->type == CUDA_R_32F);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
    cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t pref, int requested,
    cublasLtMatmulHeuristicResult_t *results, int *found) {
  const fake_desc *dd = (const fake_desc *)desc;
  const fake_layout *la = (const fake_layout *)a, *lb = (const fake_layout *)b,
                    *lc = (const fake_layout *)c;
  uint64_t m, n, k;
  *found = 0;
  if (handle != (cublasLtHandle_t)&handle_token || !dd || !la || !lb ||
      !lc || !pref || requested < 1 || c != d ||
      !shapes_agree(dd, la, lb, lc, &m, &n, &k) ||
      !epilogue_valid(dd, m, lc->batch))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (la->type != CUDA_R_32F && la->type != CUDA_R_16BF &&
      la->type != CUDA_R_16F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  memset(&results[0], 0, sizeof results[0]);
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

static float load(cudaDataType t, const void *p, int64_t i) {
  if (t == CUDA_R_32F)
    return ((const float *)p)[i];
  if (t == CUDA_R_16F)
    return half_to_float(((const uint16_t *)p)[i]);
  uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void store(cudaDataType t, void *p, int64_t i, float v) {
  if (t == CUDA_R_32F) {
    ((float *)p)[i] = v;
    return;
  }
  if (t == CUDA_R_16F) {
    ((uint16_t *)p)[i] = float_to_half(v);
    return;
  }
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  u += 0x7fff + ((u >> 16) & 1); /* round to nearest even */
  ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
}

cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,
    const void *A, cublasLtMatrixLayout_t a, const void *B,
    cublasLtMatrixLayout_t b, const void *beta, const void *C,
    cublasLtMatrixLayout_t c, void *D, cublasLtMatrixLayout_t d,
    const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspace_bytes,
    cudaStream_t stream) {
  (void)stream;
  const fake_desc *dd = (const fake_desc *)desc;
  const fake_layout *la = (const fake_layout *)a, *lb = (const fake_layout *)b,
                    *lc = (const fake_layout *)c;
  const void *ha = fake_host_of(A), *hb = fake_host_of(B), *hc = fake_host_of(C);
  void *hd = fake_host_of(D);
  uint64_t m, n, k;
  if (handle != (cublasLtHandle_t)&handle_token || !algo || !dd || !la ||
      !lb || !lc || c != d || !ha || !hb || !hc || !hd || !alpha || !beta ||
      (workspace_bytes && !fake_host_of(workspace)) ||
      (uintptr_t)workspace % 256 != 0 || /* cuBLASLt's alignment */
      !shapes_agree(dd, la, lb, lc, &m, &n, &k) ||
      !epilogue_valid(dd, m, lc->batch))
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtEpilogue_t e = dd->epilogue;
  void *bias = has_bias(e) ? fake_host_of(dd->bias) : NULL;
  void *aux = has_aux(e) ? fake_host_of(dd->aux) : NULL;
  if ((has_bias(e) && !bias) || (has_aux(e) && !aux))
    return CUBLAS_STATUS_INVALID_VALUE; /* not device memory */
  if (la->type != CUDA_R_32F && la->type != CUDA_R_16BF &&
      la->type != CUDA_R_16F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const char *limit = getenv("RAF_FAKE_CUBLASLT_MAX_MACS");
  double macs = (double)m * (double)n * (double)k * lc->batch;
  if (limit && *limit && macs > atof(limit)) {
    fprintf(stderr,
            "fake cuBLASLt: a product of %.0f multiply-adds, above "
            "RAF_FAKE_CUBLASLT_MAX_MACS\n",
            macs);
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  fake_log("RAF_FAKE_CUBLASLT_LOG",
           "matmul m=%llu n=%llu k=%llu batch=%d ta=%d tb=%d type=%s "
           "computed%s%s",
           (unsigned long long)m, (unsigned long long)n,
           (unsigned long long)k, lc->batch, dd->ta == CUBLAS_OP_T,
           dd->tb == CUBLAS_OP_T,
           la->type == CUDA_R_32F   ? "f32"
           : la->type == CUDA_R_16F ? "f16"
                                    : "bf16",
           e == CUBLASLT_EPILOGUE_DEFAULT ? "" : " epilogue=",
           e == CUBLASLT_EPILOGUE_DEFAULT ? "" : epilogue_name(e));
  float al, be;
  memcpy(&al, alpha, sizeof al);
  memcpy(&be, beta, sizeof be);
  for (int32_t q = 0; q < lc->batch; q++)
    for (uint64_t j = 0; j < n; j++)
      for (uint64_t i = 0; i < m; i++) {
        float acc = 0.0f;
        for (uint64_t p = 0; p < k; p++) {
          /* op(A)[i, p] and op(B)[p, j], column-major */
          int64_t ai = dd->ta == CUBLAS_OP_N ? (int64_t)(i + p * la->ld)
                                             : (int64_t)(p + i * la->ld);
          int64_t bi = dd->tb == CUBLAS_OP_N ? (int64_t)(p + j * lb->ld)
                                             : (int64_t)(j + p * lb->ld);
          acc += load(la->type, ha, q * la->stride + ai) *
                 load(lb->type, hb, q * lb->stride + bi);
        }
        int64_t ci = q * lc->stride + (int64_t)(i + j * lc->ld);
        float prior = be != 0.0f ? load(lc->type, hc, ci) : 0.0f;
        float x = al * acc + be * prior;
        int64_t xi = (int64_t)(i + j * dd->aux_ld);
        if (has_bias(e) && e != CUBLASLT_EPILOGUE_BGRADA)
          x += load(lc->type, bias, (int64_t)i);
        if (has_aux(e) && e != CUBLASLT_EPILOGUE_DGELU)
          store(lc->type, aux, xi, x); /* GELU's input */
        if (e == CUBLASLT_EPILOGUE_DGELU)
          x *= dgelu(load(lc->type, aux, xi));
        else if (e != CUBLASLT_EPILOGUE_DEFAULT && e != CUBLASLT_EPILOGUE_BIAS &&
                 e != CUBLASLT_EPILOGUE_BGRADA)
          x = gelu(x);
        store(lc->type, hd, ci, x);
      }
  /* The bias gradient of A: op(A) [m, k] summed over k. */
  for (uint64_t i = 0; e == CUBLASLT_EPILOGUE_BGRADA && i < m; i++) {
    float sum = 0.0f;
    for (uint64_t p = 0; p < k; p++)
      sum += load(la->type, ha,
                  dd->ta == CUBLAS_OP_N ? (int64_t)(i + p * la->ld)
                                        : (int64_t)(p + i * la->ld));
    store(lc->type, bias, (int64_t)i, sum);
  }
  return CUBLAS_STATUS_SUCCESS;
}
