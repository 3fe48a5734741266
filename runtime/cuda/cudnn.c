/* cudnn.c: the cudnn dialect: conv2d and its gradients, max and average
 * pooling and theirs, and batch_norm and its gradient, on cuDNN 9's
 * backend (graph) API, on a CUDA device; attention is
 * cudnn_attention.c's.
 *
 * cuDNN is loaded at run time (cudnn_lib.h) by the prepare hook, only
 * when a statement of the module is bound to the dialect, with one handle
 * per executor. Prepare also checks each statement's op against the
 * version cuDNN reports (raf_cudnn_feature_version): a statement cuDNN is
 * too old for is a located error that names both versions, or, when
 * another enabled dialect of the device runs it, moves to that dialect
 * with a note saying so.
 *
 * Each kernel describes its op as a graph (cudnn_internal.h), cached as an
 * execution plan per shape, and runs it on the device's stream. Tensors
 * are raf's row-major buffers: NCHW activations, OIHW weights; a grouped
 * convolution is one whose weight has x's channels / groups (cuDNN infers
 * the groups from the shapes). Where cuDNN's graph wants what raf's op
 * does not pass on (the pooling's argmax, batch_norm's saved statistics),
 * the gradient kernel runs the forward graph again into its scratch
 * (raf_cudnn_scratch_of), as raf's gradient ops recompute on every
 * dialect.
 *
 * Numerics: float accumulation for every dtype (COMP_TYPE FLOAT); cuDNN
 * picks the algorithm, so results match cpu-ref's to float rounding, not
 * bit for bit (docs/Numerics.md).
 *
 * Checked against the fake cuDNN of test/cuda/fake_cudnn.c, which
 * validates the descriptors and computes the graphs on the host; never
 * run on a GPU yet.
 */
#include "runtime/cuda/cudnn_internal.h"

#include "runtime/cuda/cuda_device.h"
#include "runtime/dialects.h"
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cudnn_state *cudnn_state_of(const raf_kernel *k) {
  return raf_exec_dialect_state(k->ex, RAF_DIALECT_CUDNN);
}

char *cdn_scratch(cudnn_state *st, const raf_kernel *k) {
  char *s = k->scratch ? k->scratch : st->scratch;
  if (!s)
    raf_kernel_fail(k, "cudnn: no scratch (planned or the dialect's)");
  return s;
}

/* The state, or a failure when the dialect was not prepared. */
static cudnn_state *state(const raf_kernel *k) {
  cudnn_state *st = cudnn_state_of(k);
  if (!st)
    raf_kernel_fail(k, "cudnn: the dialect was not prepared");
  return st;
}

/* A part of k's scratch (raf_cudnn_scratch_of), or NULL (reported). */
static char *part(cudnn_state *st, const raf_kernel *k, raf_cudnn_part p) {
  char *s = cdn_scratch(st, k);
  int64_t at = raf_cudnn_scratch_of(k->stmt).part[p];
  return s && at >= 0 ? s + at : NULL;
}

/* Starts a key with the graph's kind and dtype. */
static size_t key_begin(char *key, const char *kind, raf_dtype dt) {
  return (size_t)snprintf(key, CDN_KEY, "%s %s ", kind, raf_dtype_name(dt));
}

static void key_ints(char *key, size_t *len, const raf_attr_value *v) {
  cdn_key_dims(key, len, (int)v->u.ints.n, v->u.ints.v);
}

/* ---- conv2d and its gradients --------------------------------------------- */

/* The tensors of a convolution graph, by role. */
enum { CONV_X = 1, CONV_W, CONV_Y };

typedef struct conv_attrs {
  raf_attr_value stride, padding, dilation;
} conv_attrs;

static void conv_attrs_of(const raf_stmt *s, conv_attrs *a) {
  raf_stmt_attr(s, "stride", &a->stride);
  raf_stmt_attr(s, "padding", &a->padding);
  raf_stmt_attr(s, "dilation", &a->dilation);
}

/* Describes a's cross-correlation on conv, f32 accumulation, the same
 * padding after as before. */
static void conv_desc(cdn_graph *g, cudnnBackendDescriptor_t conv,
                      const conv_attrs *a) {
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cdn_set_dtype(g, conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT);
  cdn_set(g, conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
          CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  cdn_set_int64(g, conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 2);
  cdn_set(g, conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2,
          a->dilation.u.ints.v);
  cdn_set(g, conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2,
          a->stride.u.ints.v);
  cdn_set(g, conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2,
          a->padding.u.ints.v);
  cdn_set(g, conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2,
          a->padding.u.ints.v);
  cdn_finalize(g, conv);
}

/* One convolution operation of type (forward, backward data or filter)
 * over x [N, C, H, W], w [O, C / groups, KH, KW] and y [N, O, OH, OW]. */
static const cudnn_plan *conv_plan(cudnn_state *st, const raf_kernel *k,
                                   cudnnBackendDescriptorType_t type,
                                   const raf_type *x, const raf_type *w,
                                   const raf_type *y) {
  static const char *const kinds[] = {"conv_fwd", "conv_bwd_filter",
                                      "conv_bwd_data"};
  int kind = type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
                 ? 0
             : type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR
                 ? 1
                 : 2;
  conv_attrs a;
  conv_attrs_of(k->stmt, &a);
  char key[CDN_KEY];
  size_t len = key_begin(key, kinds[kind], x->dtype);
  cdn_key_dims(key, &len, x->rank, x->dims);
  cdn_key_dims(key, &len, w->rank, w->dims);
  key_ints(key, &len, &a.stride);
  key_ints(key, &len, &a.padding);
  key_ints(key, &len, &a.dilation);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (p)
    return p;
  cudnnDataType_t dt = cdn_dtype(x->dtype);
  cudnnBackendDescriptor_t tx = cdn_tensor(&g, CONV_X, dt, 4, x->dims, NULL, 0),
                           tw = cdn_tensor(&g, CONV_W, dt, 4, w->dims, NULL, 0),
                           ty = cdn_tensor(&g, CONV_Y, dt, 4, y->dims, NULL, 0);
  cudnnBackendDescriptor_t conv =
      cdn_make(&g, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv_desc(&g, conv, &a);
  cudnnBackendDescriptor_t op = cdn_make(&g, type);
  /* Each kind names the same three tensors by its own attributes. */
  static const cudnnBackendAttributeName_t names[3][6] = {
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}};
  cdn_set_desc(&g, op, names[kind][0], tx);
  cdn_set_desc(&g, op, names[kind][1], tw);
  cdn_set_desc(&g, op, names[kind][2], ty);
  cdn_set_desc(&g, op, names[kind][3], conv);
  cdn_set_float(&g, op, names[kind][4], 1.0f);
  cdn_set_float(&g, op, names[kind][5], 0.0f);
  cdn_add_op(&g, op);
  return cdn_plan(&g, key);
}

static raf_status conv_run(const raf_kernel *k,
                           cudnnBackendDescriptorType_t type,
                           const raf_tensor *x, const raf_tensor *w,
                           const raf_tensor *y) {
  cudnn_state *st = state(k);
  if (!st)
    return RAF_ERROR;
  if (x->type->numel == 0 || w->type->numel == 0 || y->type->numel == 0)
    return RAF_OK; /* an empty x or y; a gradient of nothing is zeros */
  const cudnn_plan *p = conv_plan(st, k, type, x->type, w->type, y->type);
  if (!p)
    return RAF_ERROR;
  int64_t uids[] = {CONV_X, CONV_W, CONV_Y};
  void *ptrs[] = {x->data, w->data, y->data};
  return cdn_execute(st, k, p, 3, uids, ptrs);
}

/* y = conv2d(x, w) */
static raf_status cudnn_conv2d(const raf_kernel *k) {
  return conv_run(k, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                  k->in[0], k->in[1], k->out[0]);
}

/* A gradient (dy, other operand) of nothing is zeros. */
static bool grad_of_nothing(const raf_kernel *k, raf_status *rc) {
  if (k->in[0]->type->numel != 0 && k->in[1]->type->numel != 0)
    return false;
  *rc = raf_device_memset(raf_exec_device(k->ex), k->out[0]->data, 0,
                          k->out[0]->nbytes);
  return true;
}

/* dx = conv2d_grad_input(dy, w) {shape = x's} */
static raf_status cudnn_conv2d_grad_input(const raf_kernel *k) {
  raf_status rc;
  if (grad_of_nothing(k, &rc))
    return rc;
  return conv_run(
      k, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
      k->out[0], k->in[1], k->in[0]);
}

/* dw = conv2d_grad_weight(dy, x) {shape = w's} */
static raf_status cudnn_conv2d_grad_weight(const raf_kernel *k) {
  raf_status rc;
  if (grad_of_nothing(k, &rc))
    return rc;
  return conv_run(
      k, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
      k->in[1], k->out[0], k->in[0]);
}

/* y = relu?(conv2d(x, w) + bias): a call of the `conv-bias-relu` form
 * (raf_cudnn_conv_bias_relu), one graph whose intermediates are virtual
 * (f32), for cuDNN's runtime fusion engines. */
enum { CBR_BIAS = 4, CBR_CONV = 100, CBR_SUM };

static raf_status cudnn_call(const raf_kernel *k) {
  cudnn_state *st = state(k);
  raf_conv_bias_relu c;
  if (!st)
    return RAF_ERROR;
  if (!raf_cudnn_conv_bias_relu(k->stmt->callee, &c))
    return raf_kernel_fail(k, "cudnn: a call of a function that is not a "
                              "convolution with its bias and relu");
  const raf_tensor *x = k->in[c.x], *w = k->in[c.w], *b = k->in[c.bias],
                   *y = k->out[0];
  if (y->type->numel == 0)
    return RAF_OK;
  const raf_type *yt = y->type;
  conv_attrs a;
  conv_attrs_of(c.conv, &a);
  char key[CDN_KEY];
  size_t len = key_begin(key, c.relu ? "conv_bias_relu" : "conv_bias",
                         x->type->dtype);
  cdn_key_dims(key, &len, x->type->rank, x->type->dims);
  cdn_key_dims(key, &len, w->type->rank, w->type->dims);
  key_ints(key, &len, &a.stride);
  key_ints(key, &len, &a.padding);
  key_ints(key, &len, &a.dilation);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (!p) {
    cudnnDataType_t dt = cdn_dtype(x->type->dtype), f = CUDNN_DATA_FLOAT;
    int64_t chan[4] = {1, yt->dims[1], 1, 1};
    cudnnBackendDescriptor_t conv_out =
        cdn_tensor(&g, CBR_CONV, f, 4, yt->dims, NULL, CDN_VIRTUAL);
    cudnnBackendDescriptor_t sum =
        c.relu ? cdn_tensor(&g, CBR_SUM, f, 4, yt->dims, NULL, CDN_VIRTUAL)
               : cdn_tensor(&g, CONV_Y, dt, 4, yt->dims, NULL, 0);
    cudnnBackendDescriptor_t conv =
        cdn_make(&g, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    conv_desc(&g, conv, &a);
    cudnnBackendDescriptor_t op =
        cdn_make(&g, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                 cdn_tensor(&g, CONV_X, dt, 4, x->type->dims, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                 cdn_tensor(&g, CONV_W, dt, 4, w->type->dims, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                 conv_out);
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                 conv);
    cdn_set_float(&g, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                  1.0f);
    cdn_set_float(&g, op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                  0.0f);
    cdn_add_op(&g, op);
    cdn_pointwise(&g, CUDNN_POINTWISE_ADD, conv_out,
                  cdn_tensor(&g, CBR_BIAS, dt, 4, chan, NULL, 0), NULL, sum,
                  0);
    if (c.relu)
      cdn_pointwise(&g, CUDNN_POINTWISE_RELU_FWD, sum, NULL, NULL,
                    cdn_tensor(&g, CONV_Y, dt, 4, yt->dims, NULL, 0), 0);
    if (!(p = cdn_plan(&g, key)))
      return RAF_ERROR;
  }
  int64_t uids[] = {CONV_X, CONV_W, CBR_BIAS, CONV_Y};
  void *ptrs[] = {x->data, w->data, b->data, y->data};
  return cdn_execute(st, k, p, 4, uids, ptrs);
}

/* ---- Pooling: cuDNN's resampling ------------------------------------------ */

enum { POOL_X = 1, POOL_Y, POOL_INDEX, POOL_DX, POOL_DY };

typedef struct pool_attrs {
  raf_attr_value kernel, stride, padding;
  bool max;
} pool_attrs;

static void pool_attrs_of(const raf_stmt *s, pool_attrs *a) {
  raf_stmt_attr(s, "kernel", &a->kernel);
  if (!raf_stmt_attr(s, "stride", &a->stride))
    a->stride = a->kernel;
  raf_stmt_attr(s, "padding", &a->padding);
  a->max = s->op == RAF_OP_MAX_POOL2D || s->op == RAF_OP_MAX_POOL2D_GRAD;
}

/* The resampling descriptor of a: max pooling pads with -inf, average
 * pooling with zeros counted in the window (PyTorch's count_include_pad),
 * the same padding after as before (floor mode). */
static cudnnBackendDescriptor_t resample_desc(cdn_graph *g,
                                              const pool_attrs *a) {
  cudnnBackendDescriptor_t r = cdn_make(g, CUDNN_BACKEND_RESAMPLE_DESCRIPTOR);
  cudnnResampleMode_t mode = a->max ? CUDNN_RESAMPLE_MAXPOOL
                                    : CUDNN_RESAMPLE_AVGPOOL_INCLUDE_PADDING;
  cudnnPaddingMode_t pad = a->max ? CUDNN_NEG_INF_PAD : CUDNN_ZERO_PAD;
  cdn_set(g, r, CUDNN_ATTR_RESAMPLE_MODE, CUDNN_TYPE_RESAMPLE_MODE, 1, &mode);
  cdn_set_dtype(g, r, CUDNN_ATTR_RESAMPLE_COMP_TYPE, CUDNN_DATA_FLOAT);
  cdn_set_int64(g, r, CUDNN_ATTR_RESAMPLE_SPATIAL_DIMS, 2);
  cdn_set(g, r, CUDNN_ATTR_RESAMPLE_PADDING_MODE, CUDNN_TYPE_PADDING_MODE, 1,
          &pad);
  cdn_set(g, r, CUDNN_ATTR_RESAMPLE_WINDOW_DIMS, CUDNN_TYPE_INT64, 2,
          a->kernel.u.ints.v);
  cdn_set(g, r, CUDNN_ATTR_RESAMPLE_STRIDES, CUDNN_TYPE_INT64, 2,
          a->stride.u.ints.v);
  cdn_set(g, r, CUDNN_ATTR_RESAMPLE_PRE_PADDINGS, CUDNN_TYPE_INT64, 2,
          a->padding.u.ints.v);
  cdn_set(g, r, CUDNN_ATTR_RESAMPLE_POST_PADDINGS, CUDNN_TYPE_INT64, 2,
          a->padding.u.ints.v);
  cdn_finalize(g, r);
  return r;
}

static size_t pool_key(char *key, const char *kind, const raf_type *x,
                       const raf_type *y, const pool_attrs *a) {
  size_t len = key_begin(key, kind, x->dtype);
  cdn_key_dims(key, &len, x->rank, x->dims);
  cdn_key_dims(key, &len, y->rank, y->dims);
  key_ints(key, &len, &a->kernel);
  key_ints(key, &len, &a->stride);
  key_ints(key, &len, &a->padding);
  return len;
}

/* The forward graph x -> y, with each window's pick when index. */
static const cudnn_plan *pool_fwd_plan(cudnn_state *st, const raf_kernel *k,
                                       const raf_type *x, const raf_type *y,
                                       const pool_attrs *a, bool index) {
  char key[CDN_KEY];
  pool_key(key, a->max ? (index ? "maxpool_fwd_index" : "maxpool_fwd")
                       : "avgpool_fwd",
           x, y, a);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (p)
    return p;
  cudnnDataType_t dt = cdn_dtype(x->dtype);
  cudnnBackendDescriptor_t r = resample_desc(&g, a);
  cudnnBackendDescriptor_t op =
      cdn_make(&g, CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR);
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_XDESC,
               cdn_tensor(&g, POOL_X, dt, 4, x->dims, NULL, 0));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_YDESC,
               cdn_tensor(&g, POOL_Y, dt, 4, y->dims, NULL, 0));
  if (index)
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_IDXDESC,
                 cdn_tensor(&g, POOL_INDEX, CUDNN_DATA_INT8, 4, y->dims, NULL,
                            0));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_FWD_DESC, r);
  cdn_add_op(&g, op);
  return cdn_plan(&g, key);
}

/* y = max_pool2d(x), avg_pool2d(x) */
static raf_status cudnn_pool2d(const raf_kernel *k) {
  cudnn_state *st = state(k);
  if (!st)
    return RAF_ERROR;
  if (k->out[0]->type->numel == 0)
    return RAF_OK;
  pool_attrs a;
  pool_attrs_of(k->stmt, &a);
  const cudnn_plan *p =
      pool_fwd_plan(st, k, k->in[0]->type, k->out[0]->type, &a, false);
  if (!p)
    return RAF_ERROR;
  int64_t uids[] = {POOL_X, POOL_Y};
  void *ptrs[] = {k->in[0]->data, k->out[0]->data};
  return cdn_execute(st, k, p, 2, uids, ptrs);
}

/* dx = max_pool2d_grad(dy, x), avg_pool2d_grad(dy) {shape}: max pooling
 * first runs the forward again for each window's pick, into scratch. */
static raf_status cudnn_pool2d_grad(const raf_kernel *k) {
  cudnn_state *st = state(k);
  if (!st)
    return RAF_ERROR;
  const raf_tensor *dy = k->in[0], *dx = k->out[0];
  if (dx->type->numel == 0)
    return RAF_OK;
  if (dy->type->numel == 0)
    return raf_device_memset(st->dev, dx->data, 0, dx->nbytes);
  pool_attrs a;
  pool_attrs_of(k->stmt, &a);
  char *y = NULL, *index = NULL;
  if (a.max) {
    const cudnn_plan *fwd =
        pool_fwd_plan(st, k, dx->type, dy->type, &a, true);
    y = part(st, k, RAF_CUDNN_Y);
    index = part(st, k, RAF_CUDNN_INDEX);
    if (!fwd || !y || !index)
      return RAF_ERROR;
    int64_t uids[] = {POOL_X, POOL_Y, POOL_INDEX};
    void *ptrs[] = {k->in[1]->data, y, index};
    if (cdn_execute(st, k, fwd, 3, uids, ptrs) != RAF_OK)
      return RAF_ERROR;
  }
  char key[CDN_KEY];
  pool_key(key, a.max ? "maxpool_bwd" : "avgpool_bwd", dx->type, dy->type,
           &a);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (!p) {
    cudnnDataType_t dt = cdn_dtype(dx->type->dtype);
    cudnnBackendDescriptor_t r = resample_desc(&g, &a);
    cudnnBackendDescriptor_t op =
        cdn_make(&g, CUDNN_BACKEND_OPERATION_RESAMPLE_BWD_DESCRIPTOR);
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DXDESC,
                 cdn_tensor(&g, POOL_DX, dt, 4, dx->type->dims, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DYDESC,
                 cdn_tensor(&g, POOL_DY, dt, 4, dy->type->dims, NULL, 0));
    if (a.max)
      cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_IDXDESC,
                   cdn_tensor(&g, POOL_INDEX, CUDNN_DATA_INT8, 4,
                              dy->type->dims, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_RESAMPLE_BWD_DESC, r);
    cdn_add_op(&g, op);
    if (!(p = cdn_plan(&g, key)))
      return RAF_ERROR;
  }
  int64_t uids[] = {POOL_DX, POOL_DY, POOL_INDEX};
  void *ptrs[] = {dx->data, dy->data, index};
  return cdn_execute(st, k, p, a.max ? 3 : 2, uids, ptrs);
}

/* ---- batch_norm ----------------------------------------------------------- */

enum {
  BN_X = 1, BN_Y, BN_SCALE, BN_BIAS, BN_EPS, BN_MOMENTUM, BN_MEAN, BN_INV_VAR,
  BN_RUN_MEAN_IN, BN_RUN_VAR_IN, BN_RUN_MEAN_OUT, BN_RUN_VAR_OUT, BN_DY,
  BN_DX, BN_DSCALE, BN_DBIAS, BN_VAR
};

/* x [N, C, ..] as cuDNN's [N, C, H, W]: the dims after C folded into H,
 * W of 1; a per-channel tensor is [1, C, 1, 1]. */
static void bn_dims(const raf_type *x, int64_t dims[4], int64_t chan[4]) {
  int64_t rest = 1;
  for (int i = 2; i < x->rank; i++)
    rest *= x->dims[i];
  dims[0] = x->dims[0];
  dims[1] = x->rank > 1 ? x->dims[1] : 1;
  dims[2] = rest;
  dims[3] = 1;
  chan[0] = chan[2] = chan[3] = 1;
  chan[1] = dims[1];
}

static cudnnBackendDescriptor_t bn_scalar(cdn_graph *g, int64_t uid) {
  static const int64_t one[4] = {1, 1, 1, 1};
  return cdn_tensor(g, uid, CUDNN_DATA_FLOAT, 4, one, NULL, CDN_BY_VALUE);
}

/* The forward graph of batch normalisation: training (the batch's mean
 * and inverse deviation out, the running statistics updated) or
 * inference (mean and inverse deviation in). */
static const cudnn_plan *bn_fwd_plan(cudnn_state *st, const raf_kernel *k,
                                     const raf_type *x, bool training) {
  int64_t dims[4], chan[4];
  bn_dims(x, dims, chan);
  char key[CDN_KEY];
  size_t len = key_begin(key, training ? "bn_fwd_train" : "bn_fwd_infer",
                         x->dtype);
  cdn_key_dims(key, &len, 4, dims);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (p)
    return p;
  cudnnDataType_t dt = cdn_dtype(x->dtype), f = CUDNN_DATA_FLOAT;
#define CHAN(uid) cdn_tensor(&g, uid, f, 4, chan, NULL, 0)
  cudnnBackendDescriptor_t op =
      cdn_make(&g, CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  cudnnBackendNormMode_t mode = CUDNN_BATCH_NORM;
  cudnnBackendNormFwdPhase_t phase =
      training ? CUDNN_NORM_FWD_TRAINING : CUDNN_NORM_FWD_INFERENCE;
  cdn_set(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1,
          &mode);
  cdn_set(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE,
          CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase);
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_XDESC,
               cdn_tensor(&g, BN_X, dt, 4, dims, NULL, 0));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_YDESC,
               cdn_tensor(&g, BN_Y, dt, 4, dims, NULL, 0));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC,
               CHAN(BN_SCALE));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC,
               CHAN(BN_BIAS));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC,
               bn_scalar(&g, BN_EPS));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC,
               CHAN(BN_MEAN));
  cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC,
               CHAN(BN_INV_VAR));
  if (training) {
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC,
                 bn_scalar(&g, BN_MOMENTUM));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC,
                 CHAN(BN_RUN_MEAN_IN));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC,
                 CHAN(BN_RUN_VAR_IN));
    cdn_set_desc(&g, op,
                 CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC,
                 CHAN(BN_RUN_MEAN_OUT));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC,
                 CHAN(BN_RUN_VAR_OUT));
  }
#undef CHAN
  cdn_add_op(&g, op);
  return cdn_plan(&g, key);
}

/* inv_var = rsqrt(var + eps), per channel: what inference-mode norm
 * takes in place of the running variance. */
static raf_status bn_inv_var(cudnn_state *st, const raf_kernel *k, int64_t c,
                             void *var, float *eps, void *inv_var) {
  char key[CDN_KEY];
  snprintf(key, sizeof key, "bn_inv_var f32 [%lld]", (long long)c);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (!p) {
    int64_t chan[4] = {1, c, 1, 1};
    cudnnDataType_t f = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t sum =
        cdn_tensor(&g, BN_MEAN, f, 4, chan, NULL, CDN_VIRTUAL);
    cdn_pointwise(&g, CUDNN_POINTWISE_ADD,
                  cdn_tensor(&g, BN_VAR, f, 4, chan, NULL, 0),
                  bn_scalar(&g, BN_EPS), NULL, sum, 0);
    cdn_pointwise(&g, CUDNN_POINTWISE_RSQRT, sum, NULL, NULL,
                  cdn_tensor(&g, BN_INV_VAR, f, 4, chan, NULL, 0), 0);
    if (!(p = cdn_plan(&g, key)))
      return RAF_ERROR;
  }
  int64_t uids[] = {BN_VAR, BN_EPS, BN_INV_VAR};
  void *ptrs[] = {var, eps, inv_var};
  return cdn_execute(st, k, p, 3, uids, ptrs);
}

/* Runs the forward graph with x, gamma, beta and the running statistics
 * of k (batch_norm's operands 0-4, or batch_norm_grad's 1, 2 and 3-4),
 * into y, mean, inv_var and the new running statistics. */
static raf_status bn_forward(cudnn_state *st, const raf_kernel *k,
                             const raf_tensor *x, bool training,
                             void *const in[4], void *y, void *mean,
                             void *inv_var, void *const run_out[2]) {
  float eps = (float)raf_stmt_attr_float(k->stmt, "eps");
  float momentum = k->stmt->op == RAF_OP_BATCH_NORM
                       ? (float)raf_stmt_attr_float(k->stmt, "momentum")
                       : 0.0f;
  const cudnn_plan *p = bn_fwd_plan(st, k, x->type, training);
  if (!p)
    return RAF_ERROR;
  if (training) {
    int64_t uids[] = {BN_X,      BN_Y,           BN_SCALE,
                      BN_BIAS,   BN_EPS,         BN_MEAN,
                      BN_INV_VAR, BN_MOMENTUM,    BN_RUN_MEAN_IN,
                      BN_RUN_VAR_IN, BN_RUN_MEAN_OUT, BN_RUN_VAR_OUT};
    void *ptrs[] = {x->data, y,      in[0],  in[1],  &eps,       mean,
                    inv_var, &momentum, in[2], in[3], run_out[0], run_out[1]};
    return cdn_execute(st, k, p, 12, uids, ptrs);
  }
  int64_t c = x->type->rank > 1 ? x->type->dims[1] : 1;
  if (bn_inv_var(st, k, c, in[3], &eps, inv_var) != RAF_OK)
    return RAF_ERROR;
  int64_t uids[] = {BN_X, BN_Y, BN_SCALE, BN_BIAS, BN_EPS, BN_MEAN,
                    BN_INV_VAR};
  void *ptrs[] = {x->data, y, in[0], in[1], &eps, in[2], inv_var};
  return cdn_execute(st, k, p, 7, uids, ptrs);
}

/* y, new_mean, new_var = batch_norm(x, gamma, beta, mean, var) */
static raf_status cudnn_batch_norm(const raf_kernel *k) {
  cudnn_state *st = state(k);
  if (!st)
    return RAF_ERROR;
  bool training = raf_stmt_attr_bool(k->stmt, "training");
  void *in[4] = {k->in[1]->data, k->in[2]->data, k->in[3]->data,
                 k->in[4]->data};
  void *mean = training ? part(st, k, RAF_CUDNN_MEAN) : NULL;
  void *inv_var = part(st, k, RAF_CUDNN_INV_VAR);
  if ((training && !mean) || !inv_var)
    return RAF_ERROR;
  if (!training) { /* the running statistics pass through */
    raf_device *dev = st->dev;
    if (raf_device_copy(dev, k->out[1]->data, k->in[3]->data,
                        k->out[1]->nbytes, RAF_COPY_DEVICE_TO_DEVICE) != RAF_OK ||
        raf_device_copy(dev, k->out[2]->data, k->in[4]->data,
                        k->out[2]->nbytes, RAF_COPY_DEVICE_TO_DEVICE) != RAF_OK)
      return RAF_ERROR;
  }
  void *run_out[2] = {k->out[1]->data, k->out[2]->data};
  return bn_forward(st, k, k->in[0], training, in, k->out[0]->data, mean,
                    inv_var, run_out);
}

/* dx, dgamma, dbeta = batch_norm_grad(dy, x, gamma, mean, var) {training}:
 * the forward again for the batch's statistics, then cuDNN's backward. */
static raf_status cudnn_batch_norm_grad(const raf_kernel *k) {
  cudnn_state *st = state(k);
  if (!st)
    return RAF_ERROR;
  const raf_tensor *x = k->in[1];
  char *mean = part(st, k, RAF_CUDNN_MEAN),
       *inv_var = part(st, k, RAF_CUDNN_INV_VAR), *y = part(st, k, RAF_CUDNN_Y),
       *run_mean = part(st, k, RAF_CUDNN_RUN_MEAN),
       *run_var = part(st, k, RAF_CUDNN_RUN_VAR);
  if (!mean || !inv_var || !y || !run_mean || !run_var)
    return RAF_ERROR;
  /* beta does not change the statistics: gamma stands in for it. */
  void *in[4] = {k->in[2]->data, k->in[2]->data, k->in[3]->data,
                 k->in[4]->data};
  void *run_out[2] = {run_mean, run_var};
  if (bn_forward(st, k, x, true, in, y, mean, inv_var, run_out) != RAF_OK)
    return RAF_ERROR;
  int64_t dims[4], chan[4];
  bn_dims(x->type, dims, chan);
  char key[CDN_KEY];
  size_t len = key_begin(key, "bn_bwd", x->type->dtype);
  cdn_key_dims(key, &len, 4, dims);
  cdn_graph g;
  const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
  if (!p) {
    cudnnDataType_t dt = cdn_dtype(x->type->dtype), f = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t op =
        cdn_make(&g, CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
    cudnnBackendNormMode_t mode = CUDNN_BATCH_NORM;
    cdn_set(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE,
            1, &mode);
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_XDESC,
                 cdn_tensor(&g, BN_X, dt, 4, dims, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC,
                 cdn_tensor(&g, BN_DY, dt, 4, dims, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC,
                 cdn_tensor(&g, BN_DX, dt, 4, dims, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC,
                 cdn_tensor(&g, BN_SCALE, f, 4, chan, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC,
                 cdn_tensor(&g, BN_MEAN, f, 4, chan, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC,
                 cdn_tensor(&g, BN_INV_VAR, f, 4, chan, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC,
                 cdn_tensor(&g, BN_DSCALE, f, 4, chan, NULL, 0));
    cdn_set_desc(&g, op, CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC,
                 cdn_tensor(&g, BN_DBIAS, f, 4, chan, NULL, 0));
    cdn_add_op(&g, op);
    if (!(p = cdn_plan(&g, key)))
      return RAF_ERROR;
  }
  int64_t uids[] = {BN_X,    BN_DY,      BN_DX,     BN_SCALE,
                    BN_MEAN, BN_INV_VAR, BN_DSCALE, BN_DBIAS};
  void *ptrs[] = {x->data, k->in[0]->data, k->out[0]->data, k->in[2]->data,
                  mean,    inv_var,        k->out[1]->data, k->out[2]->data};
  return cdn_execute(st, k, p, 8, uids, ptrs);
}

/* ---- Hooks ---------------------------------------------------------------- */

static void cudnn_release(void *state) {
  cudnn_state *st = state;
  if (!st)
    return;
  if (st->lib)
    cdn_plans_free(st);
  if (st->scratch)
    raf_device_free(st->dev, st->scratch);
  if (st->handle)
    st->lib->cudnnDestroy(st->handle);
  raf_cudnn_lib_unload(st->lib);
  free(st);
}

/* Checks each of m's cudnn statements against the version of cuDNN
 * loaded: one it is too old for moves to the next enabled dialect that
 * runs it, with a note, when its memory was not planned for cudnn's
 * scratch; otherwise it is an error. Runs before the other dialects
 * prepare (the cudnn row comes first in lang/dialects.def), so that the
 * dialect taking a statement prepares it. */
static bool check_versions(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                           const raf_cudnn_lib *lib) {
  bool ok = true;
  char found[32], need[32];
  raf_cudnn_version_str(lib->version, found, sizeof found);
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next) {
      size_t v = raf_cudnn_feature_version(s->op);
      if (!raf_stmt_bound_to(s, RAF_DIALECT_CUDNN) || lib->version >= v)
        continue;
      raf_cudnn_version_str(v, need, sizeof need);
      const char *op = raf_op_table[s->op].name;
      raf_dialect next = raf_exec_fallback(ex, s, RAF_DIALECT_CUDNN);
      bool planned = raf_attrs_find(&s->attrs, "scratch") != NULL;
      if (next == RAF_DIALECT_COUNT || planned) {
        raf_diag_report(ctx, s->loc, RAF_SEV_ERROR,
                        "cudnn: %s needs cuDNN %s or later; %s is cuDNN %s%s",
                        op, need, lib->path, found,
                        planned ? " (and its memory was planned for cudnn: "
                                  "dispatch without it)"
                                : " (no other enabled dialect runs it)");
        ok = false;
        continue;
      }
      raf_attr attrs[64];
      int n = 0;
      for (int i = 0; i < s->attrs.n && n < 63; i++)
        if (strcmp(s->attrs.v[i].name, "dialect") != 0)
          attrs[n++] = s->attrs.v[i];
      attrs[n++] = (raf_attr){.name = "dialect",
                              .kind = RAF_ATTR_DIALECT,
                              .val.u.dialect = next};
      raf_stmt_set_attrs(m, s, attrs, n);
      raf_diag_report(ctx, s->loc, RAF_SEV_NOTE,
                      "cudnn: %s needs cuDNN %s or later; %s is cuDNN %s: "
                      "running it on %s",
                      op, need, lib->path, found,
                      raf_dialect_get(next)->name);
    }
  return ok;
}

static raf_status cudnn_prepare(raf_exec *ex, raf_ctx *ctx, raf_module *m,
                                void **state) {
  *state = NULL;
  int64_t unplanned = 0; /* the largest scratch a statement lacks */
  bool any = false;
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (raf_stmt_bound_to(s, RAF_DIALECT_CUDNN)) {
        any = true;
        int64_t need = raf_cudnn_scratch_of(s).bytes;
        if (!raf_attrs_find(&s->attrs, "scratch") && need > unplanned)
          unplanned = need;
      }
  raf_device *dev = raf_exec_device(ex);
  if (!any || raf_device_kind_of(dev) != RAF_DEVICE_CUDA)
    return RAF_OK; /* binding refuses the statements, saying where */
  cudnn_state *st = calloc(1, sizeof *st);
  if (!st) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR, "out of memory");
    return RAF_ERROR;
  }
  st->dev = dev;
  st->ctx = ctx;
  raf_status rc = raf_cudnn_lib_load(ctx, &st->lib);
  if (rc == RAF_OK && !check_versions(ex, ctx, m, st->lib))
    rc = RAF_ERROR;
  if (rc == RAF_OK)
    rc = raf_cuda_device_make_current(dev);
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  if (rc == RAF_OK &&
      (s = st->lib->cudnnCreate(&st->handle)) != CUDNN_STATUS_SUCCESS) {
    char version[32];
    raf_cudnn_version_str(st->lib->version, version, sizeof version);
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "cudnn: cudnnCreate of %s (cuDNN %s): %s", st->lib->path,
                    version, raf_cudnn_status_text(st->lib, s));
    rc = RAF_ERROR;
  }
  if (rc == RAF_OK && unplanned > 0 &&
      raf_device_alloc(dev, (size_t)unplanned, &st->scratch) != RAF_OK) {
    raf_diag_report(ctx, (raf_loc){0}, RAF_SEV_ERROR,
                    "%s: out of memory for cuDNN's scratch (%lld MiB)",
                    raf_device_name(dev), (long long)(unplanned >> 20));
    rc = RAF_ERROR;
  }
  if (rc != RAF_OK) {
    cudnn_release(st);
    return RAF_ERROR;
  }
  *state = st;
  return RAF_OK;
}

const raf_dialect_hooks raf_cudnn_hooks = {
    .prepare = cudnn_prepare,
    .release = cudnn_release,
};

const raf_kernel_fn raf_cudnn_kernels[RAF_OP_COUNT] = {
    [RAF_OP_CONV2D] = cudnn_conv2d,
    [RAF_OP_CONV2D_GRAD_INPUT] = cudnn_conv2d_grad_input,
    [RAF_OP_CONV2D_GRAD_WEIGHT] = cudnn_conv2d_grad_weight,
    [RAF_OP_MAX_POOL2D] = cudnn_pool2d,
    [RAF_OP_AVG_POOL2D] = cudnn_pool2d,
    [RAF_OP_MAX_POOL2D_GRAD] = cudnn_pool2d_grad,
    [RAF_OP_AVG_POOL2D_GRAD] = cudnn_pool2d_grad,
    [RAF_OP_BATCH_NORM] = cudnn_batch_norm,
    [RAF_OP_BATCH_NORM_GRAD] = cudnn_batch_norm_grad,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION] = cudnn_attention,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD] = cudnn_attention_grad,
    [RAF_OP_CALL] = cudnn_call,
};
