/* fake_cudnn_exec.c: what each operation of the fake cuDNN (fake_cudnn.c)
 * means: the modes and shapes it accepts, checked when the operation (or
 * the convolution, resample, pointwise, reduction or matmul descriptor it
 * uses) is finalized, and its computation on the host, when a plan runs.
 *
 * Every element is loaded as a double and computed in double (sums too),
 * then stored rounded to the output's type: half and bfloat16 to nearest
 * even through float (as a GPU kernel computing in f32 would round),
 * BOOLEAN as one byte 0 or 1, the integer types truncated (NaN as 0).
 * Tensors are any rank up to 8 with any strides, so a transposed operand
 * is a strided view; pointwise inputs and matmul batch dimensions of size
 * 1 broadcast. The formulas are cuDNN's, as its backend documentation
 * gives them; where the documentation leaves a choice (max pooling's tie
 * and NaN rules), the cudnn dialect's contract fixes it: the first strict
 * maximum of a window in row-major order, or its last NaN.
 */
#include "fake_common.h"
#include "fake_cudnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) fk_fail(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)
#define NOT_SUPPORTED(...) fk_fail(CUDNN_STATUS_NOT_SUPPORTED, __VA_ARGS__)

/* ---- Element types ------------------------------------------------------ */

size_t fk_dtype_size(cudnnDataType_t t) {
  switch (t) {
  case CUDNN_DATA_FLOAT: return 4;
  case CUDNN_DATA_HALF: return 2;
  case CUDNN_DATA_BFLOAT16: return 2;
  case CUDNN_DATA_INT8: return 1;
  case CUDNN_DATA_BOOLEAN: return 1;
  case CUDNN_DATA_INT32: return 4;
  case CUDNN_DATA_INT64: return 8;
  default: return 0;
  }
}

int64_t fk_span(const fk_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n += (t->dims[i] - 1) * t->strides[i];
  return n;
}

static bool is_float(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF ||
         t == CUDNN_DATA_BFLOAT16;
}

static uint16_t float_to_bf16(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  if (isnan(v))
    return (uint16_t)((u >> 16) | 0x40); /* quiet, never rounded to inf */
  u += 0x7fff + ((u >> 16) & 1);        /* round to nearest even */
  return (uint16_t)(u >> 16);
}

/* An integer of a double, without the undefined behaviour of converting
 * a NaN or an out-of-range value. */
static int64_t to_int(double x) {
  if (isnan(x))
    return 0;
  if (x >= 9.2e18)
    return INT64_MAX;
  if (x <= -9.2e18)
    return INT64_MIN;
  return (int64_t)x;
}

static double load(const fk_view *v, int64_t i) {
  const char *p = v->data;
  switch (v->t->type) {
  case CUDNN_DATA_FLOAT: return ((const float *)p)[i];
  case CUDNN_DATA_HALF: return half_to_float(((const uint16_t *)p)[i]);
  case CUDNN_DATA_BFLOAT16: {
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  case CUDNN_DATA_INT8: return ((const int8_t *)p)[i];
  case CUDNN_DATA_BOOLEAN: return ((const uint8_t *)p)[i] != 0;
  case CUDNN_DATA_INT32: return ((const int32_t *)p)[i];
  case CUDNN_DATA_INT64: return (double)((const int64_t *)p)[i];
  default: return 0;
  }
}

static void store(const fk_view *v, int64_t i, double x) {
  char *p = v->data;
  switch (v->t->type) {
  case CUDNN_DATA_FLOAT: ((float *)p)[i] = (float)x; break;
  case CUDNN_DATA_HALF: ((uint16_t *)p)[i] = float_to_half((float)x); break;
  case CUDNN_DATA_BFLOAT16:
    ((uint16_t *)p)[i] = float_to_bf16((float)x);
    break;
  case CUDNN_DATA_INT8: ((int8_t *)p)[i] = (int8_t)to_int(x); break;
  case CUDNN_DATA_BOOLEAN: ((uint8_t *)p)[i] = x != 0; break;
  case CUDNN_DATA_INT32: ((int32_t *)p)[i] = (int32_t)to_int(x); break;
  case CUDNN_DATA_INT64: ((int64_t *)p)[i] = to_int(x); break;
  default: break;
  }
}

/* ---- Indexing ----------------------------------------------------------- */

static int64_t numel(const fk_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->dims[i];
  return n;
}

/* Steps idx through dims in row-major order; false after the last. */
static bool next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i])
      return true;
    idx[i] = 0;
  }
  return false;
}

/* The element of t at idx (of a shape t broadcasts to: its dims of 1
 * take index 0). */
static int64_t offset(const fk_tensor *t, const int64_t *idx) {
  int64_t o = 0;
  for (int i = 0; i < t->rank; i++)
    o += (t->dims[i] == 1 ? 0 : idx[i]) * t->strides[i];
  return o;
}

/* Element [a, b, c, d] of a rank-4 tensor. */
static int64_t at4(const fk_tensor *t, int64_t a, int64_t b, int64_t c,
                   int64_t d) {
  return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] +
         d * t->strides[3];
}

static const fk_tensor *tensor(const fk_desc *op,
                               cudnnBackendAttributeName_t n) {
  const fk_desc *t = fk_sub(op, n);
  return t ? &t->t : NULL;
}

static fk_view view(const fk_env *env, const fk_desc *op,
                    cudnnBackendAttributeName_t n) {
  const fk_tensor *t = tensor(op, n);
  for (int i = 0; t && i < env->n; i++)
    if (env->views[i].t->uid == t->uid)
      return (fk_view){t, env->views[i].data};
  return (fk_view){NULL, NULL};
}

static bool same_dims(const fk_tensor *a, const fk_tensor *b) {
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i])
      return false;
  return true;
}

/* Whether t is [1, C, 1, 1]: a per-channel tensor of batch norm. */
static bool per_channel(const fk_tensor *t, int64_t c) {
  return t && t->rank == 4 && t->dims[0] == 1 && t->dims[1] == c &&
         t->dims[2] == 1 && t->dims[3] == 1;
}

static bool scalar_by_value(const fk_tensor *t) {
  return t && t->by_value && t->type == CUDNN_DATA_FLOAT;
}

/* Stores acc (row-major over out's dims) as out = alpha acc + beta out. */
static void store_scaled(const fk_view *out, const double *acc, double alpha,
                         double beta) {
  int64_t idx[CUDNN_DIM_MAX] = {0}, i = 0;
  do {
    int64_t o = offset(out->t, idx);
    double prior = beta != 0 ? beta * load(out, o) : 0;
    store(out, o, alpha * acc[i++] + prior);
  } while (next_index(out->t->rank, out->t->dims, idx));
}

/* ---- Convolution -------------------------------------------------------- */

enum { CONV_FWD, CONV_DATA, CONV_FILTER };

static const cudnnBackendAttributeName_t conv_names[3][6] = {
    /* x, w, y, desc, alpha, beta */
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
};

static cudnnStatus_t check_conv_desc(const fk_desc *d) {
  if (fk_int(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, 0, -1) != CUDNN_DATA_FLOAT)
    return NOT_SUPPORTED("CONVOLUTION: COMP_TYPE must be FLOAT");
  if (fk_int(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, 0, -1) !=
      CUDNN_CROSS_CORRELATION)
    return NOT_SUPPORTED("CONVOLUTION: CONV_MODE must be CROSS_CORRELATION");
  if (fk_int(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0, 0) != 2)
    return NOT_SUPPORTED("CONVOLUTION: SPATIAL_DIMS must be 2");
  static const cudnnBackendAttributeName_t arrays[4] = {
      CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
      CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
      CUDNN_ATTR_CONVOLUTION_POST_PADDINGS};
  for (int a = 0; a < 4; a++) {
    if (fk_count(d, arrays[a]) != 2)
      return BAD("CONVOLUTION: attribute %d has %lld elements, not "
                 "SPATIAL_DIMS",
                 (int)arrays[a], (long long)fk_count(d, arrays[a]));
    for (int i = 0; i < 2; i++)
      if (fk_int(d, arrays[a], i, 0) < (a < 2 ? 1 : 0))
        return BAD("CONVOLUTION: attribute %d element %d is %lld",
                   (int)arrays[a], i, (long long)fk_int(d, arrays[a], i, 0));
  }
  return CUDNN_STATUS_SUCCESS;
}

/* Output size of a window sweep: floor((in + pads - extent) / stride) + 1. */
static int64_t out_size(int64_t in, int64_t pre, int64_t post, int64_t extent,
                        int64_t stride) {
  int64_t span = in + pre + post - extent;
  return span < 0 ? 0 : span / stride + 1;
}

static cudnnStatus_t check_conv(const fk_desc *op, int kind) {
  const cudnnBackendAttributeName_t *n = conv_names[kind];
  const fk_tensor *x = tensor(op, n[0]), *w = tensor(op, n[1]),
                  *y = tensor(op, n[2]);
  const fk_desc *cd = fk_sub(op, n[3]);
  if (x->rank != 4 || w->rank != 4 || y->rank != 4)
    return NOT_SUPPORTED("convolution: tensors of rank 4 only");
  if (!is_float(x->type) || !is_float(w->type) || !is_float(y->type))
    return NOT_SUPPORTED("convolution: FLOAT, HALF or BFLOAT16 tensors only");
  int64_t g = x->dims[1] / w->dims[1];
  if (x->dims[1] % w->dims[1] || w->dims[0] % g)
    return BAD("convolution: %lld input channels and a filter [%lld, %lld, "
               ".] make no groups",
               (long long)x->dims[1], (long long)w->dims[0],
               (long long)w->dims[1]);
  for (int i = 0; i < 2; i++) {
    int64_t dil = fk_int(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, i, 1);
    int64_t want = out_size(
        x->dims[2 + i], fk_int(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, i, 0),
        fk_int(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, i, 0),
        dil * (w->dims[2 + i] - 1) + 1,
        fk_int(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, i, 1));
    if (y->dims[2 + i] != want)
      return BAD("convolution: output spatial dimension %d is %lld, not "
                 "%lld",
                 i, (long long)y->dims[2 + i], (long long)want);
  }
  if (y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0])
    return BAD("convolution: output [%lld, %lld, ...] for input batch %lld "
               "and %lld filters",
               (long long)y->dims[0], (long long)y->dims[1],
               (long long)x->dims[0], (long long)w->dims[0]);
  return CUDNN_STATUS_SUCCESS;
}

/* One loop for the three: forward sums x * w into y, backward data dy * w
 * into dx, backward filter dy * x into dw; then out = alpha sum + beta
 * out. */
static cudnnStatus_t run_conv(const fk_desc *op, const fk_env *env,
                              int kind) {
  const cudnnBackendAttributeName_t *n = conv_names[kind];
  fk_view x = view(env, op, n[0]), w = view(env, op, n[1]),
          y = view(env, op, n[2]);
  const fk_desc *cd = fk_sub(op, n[3]);
  const fk_view *out = kind == CONV_FWD ? &y : kind == CONV_DATA ? &x : &w;
  double *acc = calloc((size_t)numel(out->t), sizeof *acc);
  if (!acc)
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "convolution: out of memory");
  const int64_t *xd = x.t->dims, *wd = w.t->dims, *yd = y.t->dims;
  int64_t cg = wd[1], kg = wd[0] / (xd[1] / wd[1]);
  int64_t sh = fk_int(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 0, 1),
          sw = fk_int(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 1, 1),
          dh = fk_int(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, 0, 1),
          dw = fk_int(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, 1, 1),
          ph = fk_int(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 0, 0),
          pw = fk_int(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 1, 0);
  for (int64_t b = 0; b < yd[0]; b++)
    for (int64_t k = 0; k < yd[1]; k++)
      for (int64_t p = 0; p < yd[2]; p++)
        for (int64_t q = 0; q < yd[3]; q++) {
          double dy = kind == CONV_FWD ? 0 : load(&y, at4(y.t, b, k, p, q));
          for (int64_t c = 0; c < cg; c++)
            for (int64_t r = 0; r < wd[2]; r++)
              for (int64_t s = 0; s < wd[3]; s++) {
                int64_t h = p * sh - ph + r * dh, ww = q * sw - pw + s * dw;
                if (h < 0 || h >= xd[2] || ww < 0 || ww >= xd[3])
                  continue;
                int64_t xc = k / kg * cg + c;
                int64_t xo = at4(x.t, b, xc, h, ww), wo = at4(w.t, k, c, r, s);
                if (kind == CONV_FWD)
                  acc[((b * yd[1] + k) * yd[2] + p) * yd[3] + q] +=
                      load(&x, xo) * load(&w, wo);
                else if (kind == CONV_DATA)
                  acc[((b * xd[1] + xc) * xd[2] + h) * xd[3] + ww] +=
                      dy * load(&w, wo);
                else
                  acc[((k * wd[1] + c) * wd[2] + r) * wd[3] + s] +=
                      dy * load(&x, xo);
              }
        }
  store_scaled(out, acc, fk_num(op, n[4], 1), fk_num(op, n[5], 0));
  free(acc);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Resample (pooling) ------------------------------------------------- */

typedef struct pool {
  bool max;
  int64_t win[2], stride[2], pre[2], post[2];
} pool;

static pool pool_of(const fk_desc *d) {
  pool p = {fk_int(d, CUDNN_ATTR_RESAMPLE_MODE, 0, -1) ==
                CUDNN_RESAMPLE_MAXPOOL,
            {0}, {0}, {0}, {0}};
  for (int i = 0; i < 2; i++) {
    p.win[i] = fk_int(d, CUDNN_ATTR_RESAMPLE_WINDOW_DIMS, i, 0);
    p.stride[i] = fk_int(d, CUDNN_ATTR_RESAMPLE_STRIDES, i, 0);
    p.pre[i] = fk_int(d, CUDNN_ATTR_RESAMPLE_PRE_PADDINGS, i, 0);
    p.post[i] = fk_int(d, CUDNN_ATTR_RESAMPLE_POST_PADDINGS, i, 0);
  }
  return p;
}

static cudnnStatus_t check_resample_desc(const fk_desc *d) {
  int64_t mode = fk_int(d, CUDNN_ATTR_RESAMPLE_MODE, 0, -1);
  int64_t pad = fk_int(d, CUDNN_ATTR_RESAMPLE_PADDING_MODE, 0, -1);
  if (mode != CUDNN_RESAMPLE_MAXPOOL &&
      mode != CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING)
    return NOT_SUPPORTED("RESAMPLE: MODE must be MAXPOOL or "
                         "AVGPOOL_INCLUDE_PADDING");
  if (pad != (mode == CUDNN_RESAMPLE_MAXPOOL ? CUDNN_NEG_INF_PAD
                                             : CUDNN_ZERO_PAD))
    return NOT_SUPPORTED("RESAMPLE: PADDING_MODE must be NEG_INF_PAD for max "
                         "pooling and ZERO_PAD for average pooling");
  if (fk_int(d, CUDNN_ATTR_RESAMPLE_COMP_TYPE, 0, -1) != CUDNN_DATA_FLOAT)
    return NOT_SUPPORTED("RESAMPLE: COMP_TYPE must be FLOAT");
  if (fk_int(d, CUDNN_ATTR_RESAMPLE_SPATIAL_DIMS, 0, 0) != 2)
    return NOT_SUPPORTED("RESAMPLE: SPATIAL_DIMS must be 2");
  static const cudnnBackendAttributeName_t arrays[4] = {
      CUDNN_ATTR_RESAMPLE_WINDOW_DIMS, CUDNN_ATTR_RESAMPLE_STRIDES,
      CUDNN_ATTR_RESAMPLE_PRE_PADDINGS, CUDNN_ATTR_RESAMPLE_POST_PADDINGS};
  for (int a = 0; a < 4; a++) {
    const fk_slot *s = fk_slot_of(d, arrays[a]);
    if (s->count != 2)
      return BAD("RESAMPLE: attribute %d has %lld elements, not SPATIAL_DIMS",
                 (int)arrays[a], (long long)s->count);
    for (int i = 0; i < 2; i++) {
      if (s->type == CUDNN_TYPE_FRACTION &&
          ((const cudnnFraction_t *)s->data)[i].denominator != 1)
        return NOT_SUPPORTED("RESAMPLE: attribute %d: a fraction with a "
                             "denominator other than 1",
                             (int)arrays[a]);
      if (fk_int(d, arrays[a], i, 0) < (a < 2 ? 1 : 0))
        return BAD("RESAMPLE: attribute %d element %d is %lld",
                   (int)arrays[a], i, (long long)fk_int(d, arrays[a], i, 0));
    }
  }
  pool p = pool_of(d);
  if (p.max && p.win[0] * p.win[1] > 127)
    return NOT_SUPPORTED("RESAMPLE: a max window of more than 127 elements "
                         "has no INT8 index");
  return CUDNN_STATUS_SUCCESS;
}

/* x and y of a pooling (dx and dy backward), idx its index tensor. */
static cudnnStatus_t check_pool(const fk_desc *d, const fk_tensor *x,
                                const fk_tensor *y, const fk_tensor *idx) {
  pool p = pool_of(d);
  if (x->rank != 4 || y->rank != 4)
    return NOT_SUPPORTED("resample: tensors of rank 4 only");
  if (!is_float(x->type) || !is_float(y->type))
    return NOT_SUPPORTED("resample: FLOAT, HALF or BFLOAT16 data only");
  if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1])
    return BAD("resample: batch and channels differ");
  for (int i = 0; i < 2; i++) {
    int64_t want = out_size(x->dims[2 + i], p.pre[i], p.post[i], p.win[i],
                            p.stride[i]);
    if (y->dims[2 + i] != want)
      return BAD("resample: output spatial dimension %d is %lld, not %lld", i,
                 (long long)y->dims[2 + i], (long long)want);
  }
  if (idx && !p.max)
    return BAD("resample: an index tensor for average pooling");
  if (idx && (idx->type != CUDNN_DATA_INT8 || !same_dims(idx, y)))
    return BAD("resample: the index tensor must be INT8 of the pooled dims");
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t run_pool_fwd(const fk_desc *op, const fk_env *env) {
  fk_view x = view(env, op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC),
          y = view(env, op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC),
          ix = view(env, op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_IDXDESC);
  pool p = pool_of(fk_sub(op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC));
  const int64_t *xd = x.t->dims, *yd = y.t->dims;
  for (int64_t b = 0; b < yd[0]; b++)
    for (int64_t c = 0; c < yd[1]; c++)
      for (int64_t i = 0; i < yd[2]; i++)
        for (int64_t j = 0; j < yd[3]; j++) {
          double best = 0, sum = 0;
          int64_t pick = 0;
          for (int64_t r = 0; r < p.win[0]; r++)
            for (int64_t s = 0; s < p.win[1]; s++) {
              int64_t h = i * p.stride[0] - p.pre[0] + r,
                      w = j * p.stride[1] - p.pre[1] + s;
              bool in = h >= 0 && h < xd[2] && w >= 0 && w < xd[3];
              double v = in ? load(&x, at4(x.t, b, c, h, w))
                            : p.max ? -INFINITY : 0;
              int64_t k = r * p.win[1] + s;
              if (k == 0 || isnan(v) || (!isnan(best) && v > best))
                best = v, pick = k;
              sum += v;
            }
          int64_t o = at4(y.t, b, c, i, j);
          store(&y, o, p.max ? best : sum / (double)(p.win[0] * p.win[1]));
          if (ix.data)
            store(&ix, at4(ix.t, b, c, i, j), (double)pick);
        }
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t run_pool_bwd(const fk_desc *op, const fk_env *env) {
  fk_view dx = view(env, op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DXDESC),
          dy = view(env, op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DYDESC),
          ix = view(env, op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_IDXDESC);
  pool p = pool_of(fk_sub(op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DESC));
  const int64_t *xd = dx.t->dims, *yd = dy.t->dims;
  double *acc = calloc((size_t)numel(dx.t), sizeof *acc);
  if (!acc)
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "resample: out of memory");
  for (int64_t b = 0; b < yd[0]; b++)
    for (int64_t c = 0; c < yd[1]; c++)
      for (int64_t i = 0; i < yd[2]; i++)
        for (int64_t j = 0; j < yd[3]; j++) {
          double g = load(&dy, at4(dy.t, b, c, i, j));
          int64_t pick =
              p.max ? to_int(load(&ix, at4(ix.t, b, c, i, j))) : -1;
          for (int64_t r = 0; r < p.win[0]; r++)
            for (int64_t s = 0; s < p.win[1]; s++) {
              int64_t h = i * p.stride[0] - p.pre[0] + r,
                      w = j * p.stride[1] - p.pre[1] + s;
              if (h < 0 || h >= xd[2] || w < 0 || w >= xd[3] ||
                  (p.max && r * p.win[1] + s != pick))
                continue;
              acc[((b * xd[1] + c) * xd[2] + h) * xd[3] + w] +=
                  p.max ? g : g / (double)(p.win[0] * p.win[1]);
            }
        }
  store_scaled(&dx, acc, 1, 0);
  free(acc);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Batch norm --------------------------------------------------------- */

#define NF(x) CUDNN_ATTR_OPERATION_NORM_FWD_##x
#define NB(x) CUDNN_ATTR_OPERATION_NORM_BWD_##x

static cudnnStatus_t check_norm_fwd(const fk_desc *op) {
  const fk_tensor *x = tensor(op, NF(XDESC));
  int64_t phase = fk_int(op, NF(PHASE), 0, -1);
  if (fk_int(op, NF(MODE), 0, -1) != CUDNN_BATCH_NORM)
    return NOT_SUPPORTED("norm forward: MODE must be BATCH_NORM");
  if (phase != CUDNN_NORM_FWD_TRAINING && phase != CUDNN_NORM_FWD_INFERENCE)
    return BAD("norm forward: PHASE %lld", (long long)phase);
  if (x->rank != 4 || !is_float(x->type))
    return NOT_SUPPORTED("norm forward: X must be a float tensor of rank 4");
  const fk_tensor *y = tensor(op, NF(YDESC));
  if (!same_dims(x, y) || !is_float(y->type))
    return BAD("norm forward: Y must be a float tensor of X's dims");
  if (!scalar_by_value(tensor(op, NF(EPSILON_DESC))))
    return BAD("norm forward: EPSILON must be a by-value FLOAT scalar");
  static const cudnnBackendAttributeName_t chans[8] = {
      NF(SCALE_DESC), NF(BIAS_DESC), NF(MEAN_DESC), NF(INV_VARIANCE_DESC),
      NF(INPUT_RUNNING_MEAN_DESC), NF(INPUT_RUNNING_VAR_DESC),
      NF(OUTPUT_RUNNING_MEAN_DESC), NF(OUTPUT_RUNNING_VAR_DESC)};
  for (int i = 0; i < 8; i++) {
    const fk_tensor *t = tensor(op, chans[i]);
    if (i < 4 && !t)
      return BAD("norm forward: attribute %d (needed) is not set",
                 (int)chans[i]);
    if (t && (!per_channel(t, x->dims[1]) || !is_float(t->type) ||
              (i >= 2 && t->type != CUDNN_DATA_FLOAT)))
      return BAD("norm forward: attribute %d must be [1, C, 1, 1] (FLOAT "
                 "for the statistics)",
                 (int)chans[i]);
  }
  /* The running statistics: all of them and the factor, or none. */
  int running = 0;
  for (int i = 4; i < 8; i++)
    running += tensor(op, chans[i]) != NULL;
  running += tensor(op, NF(EXP_AVG_FACTOR_DESC)) != NULL;
  if (running && (running != 5 || phase != CUDNN_NORM_FWD_TRAINING))
    return BAD("norm forward: the running statistics need all four running "
               "tensors and EXP_AVG_FACTOR, in training");
  if (running && !scalar_by_value(tensor(op, NF(EXP_AVG_FACTOR_DESC))))
    return BAD("norm forward: EXP_AVG_FACTOR must be a by-value FLOAT "
               "scalar");
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t check_norm_bwd(const fk_desc *op) {
  const fk_tensor *x = tensor(op, NB(XDESC));
  if (fk_int(op, NB(MODE), 0, -1) != CUDNN_BATCH_NORM)
    return NOT_SUPPORTED("norm backward: MODE must be BATCH_NORM");
  if (x->rank != 4 || !is_float(x->type))
    return NOT_SUPPORTED("norm backward: X must be a float tensor of rank 4");
  if (!same_dims(x, tensor(op, NB(DYDESC))) ||
      !same_dims(x, tensor(op, NB(DXDESC))))
    return BAD("norm backward: DY and DX must have X's dims");
  static const cudnnBackendAttributeName_t chans[5] = {
      NB(SCALE_DESC), NB(MEAN_DESC), NB(INV_VARIANCE_DESC), NB(DSCALE_DESC),
      NB(DBIAS_DESC)};
  for (int i = 0; i < 5; i++)
    if (!per_channel(tensor(op, chans[i]), x->dims[1]))
      return BAD("norm backward: attribute %d must be [1, C, 1, 1]",
                 (int)chans[i]);
  const fk_tensor *eps = tensor(op, NB(EPSILON_DESC));
  if (eps && !scalar_by_value(eps))
    return BAD("norm backward: EPSILON must be a by-value FLOAT scalar");
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t run_norm_fwd(const fk_desc *op, const fk_env *env) {
  fk_view x = view(env, op, NF(XDESC)), y = view(env, op, NF(YDESC)),
          sc = view(env, op, NF(SCALE_DESC)), bi = view(env, op, NF(BIAS_DESC)),
          mean = view(env, op, NF(MEAN_DESC)),
          inv = view(env, op, NF(INV_VARIANCE_DESC)),
          eps = view(env, op, NF(EPSILON_DESC)),
          f = view(env, op, NF(EXP_AVG_FACTOR_DESC)),
          rm_in = view(env, op, NF(INPUT_RUNNING_MEAN_DESC)),
          rv_in = view(env, op, NF(INPUT_RUNNING_VAR_DESC)),
          rm_out = view(env, op, NF(OUTPUT_RUNNING_MEAN_DESC)),
          rv_out = view(env, op, NF(OUTPUT_RUNNING_VAR_DESC));
  bool training = fk_int(op, NF(PHASE), 0, -1) == CUDNN_NORM_FWD_TRAINING;
  const int64_t *d = x.t->dims;
  double n = (double)(d[0] * d[2] * d[3]), e = load(&eps, 0);
  for (int64_t c = 0; c < d[1]; c++) {
    int64_t co = c * mean.t->strides[1];
    double m, iv;
    if (training) {
      double sum = 0, sq = 0;
      for (int64_t b = 0; b < d[0]; b++)
        for (int64_t h = 0; h < d[2]; h++)
          for (int64_t w = 0; w < d[3]; w++)
            sum += load(&x, at4(x.t, b, c, h, w));
      m = sum / n;
      for (int64_t b = 0; b < d[0]; b++)
        for (int64_t h = 0; h < d[2]; h++)
          for (int64_t w = 0; w < d[3]; w++) {
            double v = load(&x, at4(x.t, b, c, h, w)) - m;
            sq += v * v;
          }
      double var = sq / n;
      iv = 1 / sqrt(var + e);
      store(&mean, co, m);
      store(&inv, c * inv.t->strides[1], iv);
      if (f.data) {
        double k = load(&f, 0), unbiased = n > 1 ? var * n / (n - 1) : var;
        store(&rm_out, c * rm_out.t->strides[1],
              (1 - k) * load(&rm_in, c * rm_in.t->strides[1]) + k * m);
        store(&rv_out, c * rv_out.t->strides[1],
              (1 - k) * load(&rv_in, c * rv_in.t->strides[1]) + k * unbiased);
      }
    } else {
      m = load(&mean, co);
      iv = load(&inv, c * inv.t->strides[1]);
    }
    double s = load(&sc, c * sc.t->strides[1]),
           o = load(&bi, c * bi.t->strides[1]);
    for (int64_t b = 0; b < d[0]; b++)
      for (int64_t h = 0; h < d[2]; h++)
        for (int64_t w = 0; w < d[3]; w++)
          store(&y, at4(y.t, b, c, h, w),
                (load(&x, at4(x.t, b, c, h, w)) - m) * iv * s + o);
  }
  return CUDNN_STATUS_SUCCESS;
}

/* The training-mode gradient, with xhat = (x - mean) inv. */
static cudnnStatus_t run_norm_bwd(const fk_desc *op, const fk_env *env) {
  fk_view x = view(env, op, NB(XDESC)), dy = view(env, op, NB(DYDESC)),
          dx = view(env, op, NB(DXDESC)), sc = view(env, op, NB(SCALE_DESC)),
          mean = view(env, op, NB(MEAN_DESC)),
          inv = view(env, op, NB(INV_VARIANCE_DESC)),
          ds = view(env, op, NB(DSCALE_DESC)),
          db = view(env, op, NB(DBIAS_DESC));
  const int64_t *d = x.t->dims;
  double n = (double)(d[0] * d[2] * d[3]);
  for (int64_t c = 0; c < d[1]; c++) {
    double m = load(&mean, c * mean.t->strides[1]),
           iv = load(&inv, c * inv.t->strides[1]),
           s = load(&sc, c * sc.t->strides[1]), dbias = 0, dscale = 0;
    for (int64_t b = 0; b < d[0]; b++)
      for (int64_t h = 0; h < d[2]; h++)
        for (int64_t w = 0; w < d[3]; w++) {
          double g = load(&dy, at4(dy.t, b, c, h, w));
          dbias += g;
          dscale += g * (load(&x, at4(x.t, b, c, h, w)) - m) * iv;
        }
    for (int64_t b = 0; b < d[0]; b++)
      for (int64_t h = 0; h < d[2]; h++)
        for (int64_t w = 0; w < d[3]; w++) {
          double xhat = (load(&x, at4(x.t, b, c, h, w)) - m) * iv;
          double g = load(&dy, at4(dy.t, b, c, h, w));
          store(&dx, at4(dx.t, b, c, h, w),
                s * iv / n * (n * g - dbias - xhat * dscale));
        }
    store(&ds, c * ds.t->strides[1], dscale);
    store(&db, c * db.t->strides[1], dbias);
  }
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Pointwise ---------------------------------------------------------- */

#define PW(x) CUDNN_ATTR_OPERATION_POINTWISE_##x

static const struct pw_mode {
  cudnnPointwiseMode_t mode;
  const char *name;
  int arity; /* inputs: 1 (X), 2 (X, B) or 3 (X, B, T) */
} pw_modes[] = {
    {CUDNN_POINTWISE_ADD, "add", 2},
    {CUDNN_POINTWISE_SUB, "sub", 2},
    {CUDNN_POINTWISE_MUL, "mul", 2},
    {CUDNN_POINTWISE_DIV, "div", 2},
    {CUDNN_POINTWISE_MAX, "max", 2},
    {CUDNN_POINTWISE_EXP, "exp", 1},
    {CUDNN_POINTWISE_LOG, "log", 1},
    {CUDNN_POINTWISE_RSQRT, "rsqrt", 1},
    {CUDNN_POINTWISE_IDENTITY, "identity", 1},
    {CUDNN_POINTWISE_RELU_FWD, "relu_fwd", 1},
    {CUDNN_POINTWISE_CMP_GE, "cmp_ge", 2},
    {CUDNN_POINTWISE_CMP_GT, "cmp_gt", 2},
    {CUDNN_POINTWISE_BINARY_SELECT, "binary_select", 3},
    {CUDNN_POINTWISE_GEN_INDEX, "gen_index", 1},
};

static const struct pw_mode *pw_mode_of(int64_t mode) {
  for (size_t i = 0; i < sizeof pw_modes / sizeof pw_modes[0]; i++)
    if ((int64_t)pw_modes[i].mode == mode)
      return &pw_modes[i];
  return NULL;
}

static cudnnStatus_t check_pointwise_desc(const fk_desc *d) {
  int64_t mode = fk_int(d, CUDNN_ATTR_POINTWISE_MODE, 0, -1);
  if (!pw_mode_of(mode))
    return NOT_SUPPORTED("POINTWISE: mode %lld is not one the fake "
                         "implements",
                         (long long)mode);
  if (fk_int(d, CUDNN_ATTR_POINTWISE_MATH_PREC, 0, -1) != CUDNN_DATA_FLOAT)
    return NOT_SUPPORTED("POINTWISE: MATH_PREC must be FLOAT");
  if (mode == CUDNN_POINTWISE_GEN_INDEX &&
      !fk_slot_of(d, CUDNN_ATTR_POINTWISE_AXIS))
    return BAD("POINTWISE: GEN_INDEX needs AXIS");
  return CUDNN_STATUS_SUCCESS;
}

/* Whether t broadcasts to y: the same rank, each dim equal or 1. */
static bool broadcasts(const fk_tensor *t, const fk_tensor *y) {
  if (t->rank != y->rank)
    return false;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] != y->dims[i] && t->dims[i] != 1)
      return false;
  return true;
}

static cudnnStatus_t check_pointwise(fk_desc *op) {
  const fk_desc *pd = fk_sub(op, PW(PW_DESCRIPTOR));
  const struct pw_mode *m =
      pw_mode_of(fk_int(pd, CUDNN_ATTR_POINTWISE_MODE, 0, -1));
  const fk_tensor *x = tensor(op, PW(XDESC)), *b = tensor(op, PW(BDESC)),
                  *t = tensor(op, PW(TDESC)), *y = tensor(op, PW(YDESC));
  if ((m->arity >= 2) != (b != NULL) || (m->arity == 3) != (t != NULL))
    return BAD("pointwise %s: takes %d inputs (X%s%s)", m->name, m->arity,
               m->arity >= 2 ? ", B" : "", m->arity == 3 ? ", T" : "");
  if (!broadcasts(x, y) || (b && !broadcasts(b, y)) || (t && !broadcasts(t, y)))
    return BAD("pointwise %s: an input does not broadcast to Y", m->name);
  if (m->mode == CUDNN_POINTWISE_GEN_INDEX) {
    int64_t axis = fk_int(pd, CUDNN_ATTR_POINTWISE_AXIS, 0, -1);
    if (!same_dims(x, y))
      return BAD("pointwise gen_index: X's dims must be Y's");
    if (axis < 0 || axis >= y->rank)
      return BAD("pointwise gen_index: AXIS %lld of a rank %d tensor",
                 (long long)axis, y->rank);
  }
  snprintf(op->name, sizeof op->name, "pointwise:%s", m->name);
  return CUDNN_STATUS_SUCCESS;
}

static double pw_apply(cudnnPointwiseMode_t mode, double x, double b,
                       double t) {
  switch (mode) {
  case CUDNN_POINTWISE_ADD: return x + b;
  case CUDNN_POINTWISE_SUB: return x - b;
  case CUDNN_POINTWISE_MUL: return x * b;
  case CUDNN_POINTWISE_DIV: return x / b;
  case CUDNN_POINTWISE_MAX: return isnan(x) || isnan(b) ? NAN : x > b ? x : b;
  case CUDNN_POINTWISE_EXP: return exp(x);
  case CUDNN_POINTWISE_LOG: return log(x);
  case CUDNN_POINTWISE_RSQRT: return 1 / sqrt(x);
  case CUDNN_POINTWISE_RELU_FWD: return isnan(x) ? x : x > 0 ? x : 0;
  case CUDNN_POINTWISE_CMP_GE: return x >= b;
  case CUDNN_POINTWISE_CMP_GT: return x > b;
  case CUDNN_POINTWISE_BINARY_SELECT: return t != 0 ? x : b;
  default: return x; /* IDENTITY */
  }
}

/* y = op(alpha1 x, alpha2 b), or t ? x : b; GEN_INDEX: the index along
 * AXIS. */
static cudnnStatus_t run_pointwise(const fk_desc *op, const fk_env *env) {
  const fk_desc *pd = fk_sub(op, PW(PW_DESCRIPTOR));
  cudnnPointwiseMode_t mode =
      (cudnnPointwiseMode_t)fk_int(pd, CUDNN_ATTR_POINTWISE_MODE, 0, -1);
  int64_t axis = fk_int(pd, CUDNN_ATTR_POINTWISE_AXIS, 0, 0);
  fk_view x = view(env, op, PW(XDESC)), b = view(env, op, PW(BDESC)),
          t = view(env, op, PW(TDESC)), y = view(env, op, PW(YDESC));
  bool scaled = mode != CUDNN_POINTWISE_BINARY_SELECT &&
                mode != CUDNN_POINTWISE_GEN_INDEX;
  double a1 = scaled ? fk_num(op, PW(ALPHA1), 1) : 1,
         a2 = scaled ? fk_num(op, PW(ALPHA2), 1) : 1;
  int64_t idx[CUDNN_DIM_MAX] = {0};
  do {
    double v;
    if (mode == CUDNN_POINTWISE_GEN_INDEX)
      v = (double)idx[axis];
    else
      v = pw_apply(mode, a1 * load(&x, offset(x.t, idx)),
                   b.data ? a2 * load(&b, offset(b.t, idx)) : 0,
                   t.data ? load(&t, offset(t.t, idx)) : 0);
    store(&y, offset(y.t, idx), v);
  } while (next_index(y.t->rank, y.t->dims, idx));
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Reduction and matmul ----------------------------------------------- */

#define RD(x) CUDNN_ATTR_OPERATION_REDUCTION_##x

static cudnnStatus_t check_reduction_desc(const fk_desc *d) {
  int64_t r = fk_int(d, CUDNN_ATTR_REDUCTION_OPERATOR, 0, -1);
  if (r != CUDNN_REDUCE_TENSOR_ADD && r != CUDNN_REDUCE_TENSOR_MAX)
    return NOT_SUPPORTED("REDUCTION: OPERATOR must be ADD or MAX");
  if (fk_int(d, CUDNN_ATTR_REDUCTION_COMP_TYPE, 0, -1) != CUDNN_DATA_FLOAT)
    return NOT_SUPPORTED("REDUCTION: COMP_TYPE must be FLOAT");
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t check_reduction(fk_desc *op) {
  const fk_tensor *x = tensor(op, RD(XDESC)), *y = tensor(op, RD(YDESC));
  if (!broadcasts(y, x))
    return BAD("reduction: each of Y's dims must be X's or 1");
  bool max = fk_int(fk_sub(op, RD(DESC)), CUDNN_ATTR_REDUCTION_OPERATOR, 0,
                    -1) == CUDNN_REDUCE_TENSOR_MAX;
  snprintf(op->name, sizeof op->name, "reduction:%s", max ? "max" : "add");
  return CUDNN_STATUS_SUCCESS;
}

/* Reduces every dim where Y's is 1 and X's is not. */
static cudnnStatus_t run_reduction(const fk_desc *op, const fk_env *env) {
  fk_view x = view(env, op, RD(XDESC)), y = view(env, op, RD(YDESC));
  bool max = fk_int(fk_sub(op, RD(DESC)), CUDNN_ATTR_REDUCTION_OPERATOR, 0,
                    -1) == CUDNN_REDUCE_TENSOR_MAX;
  int64_t ny = numel(y.t);
  double *acc = malloc((size_t)ny * sizeof *acc);
  if (!acc)
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "reduction: out of memory");
  for (int64_t i = 0; i < ny; i++)
    acc[i] = max ? -INFINITY : 0;
  int64_t idx[CUDNN_DIM_MAX] = {0};
  do {
    int64_t k = 0; /* y's element, row-major */
    for (int i = 0; i < y.t->rank; i++)
      k = k * y.t->dims[i] + (y.t->dims[i] == 1 ? 0 : idx[i]);
    double v = load(&x, offset(x.t, idx));
    if (!max)
      acc[k] += v;
    else if (isnan(v) || v > acc[k])
      acc[k] = v; /* a NaN stays: nothing compares above it */
  } while (next_index(x.t->rank, x.t->dims, idx));
  store_scaled(&y, acc, 1, 0);
  free(acc);
  return CUDNN_STATUS_SUCCESS;
}

#define MM(x) CUDNN_ATTR_OPERATION_MATMUL_##x

static cudnnStatus_t check_matmul(const fk_desc *op) {
  const fk_tensor *a = tensor(op, MM(ADESC)), *b = tensor(op, MM(BDESC)),
                  *c = tensor(op, MM(CDESC));
  int r = c->rank;
  if (r < 2 || a->rank != r || b->rank != r)
    return BAD("matmul: A, B and C must have one rank, at least 2");
  if (!is_float(a->type) || !is_float(b->type) || !is_float(c->type))
    return NOT_SUPPORTED("matmul: FLOAT, HALF or BFLOAT16 tensors only");
  if (a->dims[r - 2] != c->dims[r - 2] || b->dims[r - 1] != c->dims[r - 1] ||
      a->dims[r - 1] != b->dims[r - 2])
    return BAD("matmul: [.., %lld, %lld] x [.., %lld, %lld] is not "
               "[.., %lld, %lld]",
               (long long)a->dims[r - 2], (long long)a->dims[r - 1],
               (long long)b->dims[r - 2], (long long)b->dims[r - 1],
               (long long)c->dims[r - 2], (long long)c->dims[r - 1]);
  for (int i = 0; i < r - 2; i++)
    if ((a->dims[i] != c->dims[i] && a->dims[i] != 1) ||
        (b->dims[i] != c->dims[i] && b->dims[i] != 1))
      return BAD("matmul: batch dimension %d does not broadcast", i);
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t run_matmul(const fk_desc *op, const fk_env *env) {
  fk_view a = view(env, op, MM(ADESC)), b = view(env, op, MM(BDESC)),
          c = view(env, op, MM(CDESC));
  int r = c.t->rank;
  int64_t kn = a.t->dims[r - 1];
  int64_t idx[CUDNN_DIM_MAX] = {0};
  do {
    /* offset() broadcasts the batch dims and puts A at [.., m, 0] and B
     * at [.., 0, n] when the K index is 0. */
    int64_t ai[CUDNN_DIM_MAX], bi[CUDNN_DIM_MAX];
    memcpy(ai, idx, sizeof ai);
    memcpy(bi, idx, sizeof bi);
    ai[r - 1] = 0;
    bi[r - 2] = 0;
    int64_t ao = offset(a.t, ai), bo = offset(b.t, bi);
    double acc = 0;
    for (int64_t k = 0; k < kn; k++)
      acc += load(&a, ao + k * a.t->strides[r - 1]) *
             load(&b, bo + k * b.t->strides[r - 2]);
    store(&c, offset(c.t, idx), acc);
  } while (next_index(r, c.t->dims, idx));
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Dispatch ----------------------------------------------------------- */

static const char *const fixed_names[] = {
    [CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR] = "conv_fwd",
    [CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR] =
        "conv_bwd_data",
    [CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR] =
        "conv_bwd_filter",
    [CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR] = "resample_fwd",
    [CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR] = "resample_bwd",
    [CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR] = "norm_fwd",
    [CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR] = "norm_bwd",
    [CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR] = "matmul",
};

cudnnStatus_t fk_check_op(fk_desc *d) {
  if ((size_t)d->type < sizeof fixed_names / sizeof fixed_names[0] &&
      fixed_names[d->type])
    snprintf(d->name, sizeof d->name, "%s", fixed_names[d->type]);
  switch (d->type) {
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return check_conv_desc(d);
  case CUDNN_BACKEND_RESAMPLE_DESCRIPTOR: return check_resample_desc(d);
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return check_pointwise_desc(d);
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: return check_reduction_desc(d);
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    return fk_int(d, CUDNN_ATTR_MATMUL_COMP_TYPE, 0, -1) == CUDNN_DATA_FLOAT
               ? CUDNN_STATUS_SUCCESS
               : NOT_SUPPORTED("MATMUL: COMP_TYPE must be FLOAT");
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    return check_conv(d, CONV_FWD);
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    return check_conv(d, CONV_DATA);
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    return check_conv(d, CONV_FILTER);
  case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR:
    return check_pool(fk_sub(d, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC),
                      tensor(d, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC),
                      tensor(d, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC),
                      tensor(d, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_IDXDESC));
  case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR: {
    const fk_desc *rd = fk_sub(d, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DESC);
    const fk_tensor *idx = tensor(d, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_IDXDESC);
    if (pool_of(rd).max && !idx)
      return NOT_SUPPORTED("resample backward: max pooling needs IDXDESC");
    return check_pool(rd, tensor(d, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DXDESC),
                      tensor(d, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DYDESC), idx);
  }
  case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
    return check_norm_fwd(d);
  case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
    return check_norm_bwd(d);
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    return check_pointwise(d);
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    return check_reduction(d);
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    return check_matmul(d);
  default:
    return CUDNN_STATUS_SUCCESS;
  }
}

cudnnStatus_t fk_run_op(const fk_desc *op, const fk_env *env) {
  switch (op->type) {
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    return run_conv(op, env, CONV_FWD);
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    return run_conv(op, env, CONV_DATA);
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    return run_conv(op, env, CONV_FILTER);
  case CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR:
    return run_pool_fwd(op, env);
  case CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR:
    return run_pool_bwd(op, env);
  case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
    return run_norm_fwd(op, env);
  case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
    return run_norm_bwd(op, env);
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    return run_pointwise(op, env);
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    return run_reduction(op, env);
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    return run_matmul(op, env);
  default:
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR, "not an operation");
  }
}
