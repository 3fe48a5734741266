/* fake_cudnn.c: a stand-in for NVIDIA's cuDNN 9 (libcudnn_graph.so.9, the
 * backend "graph" API), for testing raf's cudnn dialect on machines
 * without a GPU, beside the fake driver (fake_driver.c), whose device
 * memory is host memory at addresses with bit 63 flipped.
 *
 * It implements the part of the backend API that the dialect uses, and
 * validates it as cuDNN's documentation says, so that a call the real
 * library would refuse is refused here too, with the same status and a
 * message for cudnnGetLastErrorString:
 *
 *   - lifecycle: Create, SetAttribute*, Finalize, then Get or use. Setting
 *     after finalize, finalizing twice, a required attribute missing, an
 *     unfinalized descriptor as an attribute's value, a wrong attribute
 *     type or element count: CUDNN_STATUS_BAD_PARAM. An attribute the
 *     descriptor type does not have (or the fake does not implement):
 *     CUDNN_STATUS_NOT_SUPPORTED. Each type's attributes are a table
 *     below (type, counts, required, read or written tensor), so that
 *     Set, Get and the generic part of Finalize are table driven;
 *   - descriptors: TENSOR; CONVOLUTION, RESAMPLE, POINTWISE, REDUCTION,
 *     MATMUL; the operations CONVOLUTION_FORWARD, _BACKWARD_DATA,
 *     _BACKWARD_FILTER, RESAMPLE_FWD, _BWD, NORM_FORWARD, _BACKWARD,
 *     POINTWISE, REDUCTION, MATMUL (their shapes and modes are checked
 *     in fake_cudnn_exec.c); OPERATIONGRAPH (one descriptor per unique id,
 *     each virtual tensor written once and read, ops in any order but
 *     acyclic); ENGINEHEUR (RESULTS fills caller-created ENGINECFGs);
 *     EXECUTION_PLAN; VARIANT_PACK;
 *   - execution: every data pointer of the pack a device pointer honouring
 *     its tensor's BYTE_ALIGNMENT (by-value tensors: a host pointer), every
 *     non-virtual tensor of the graph in the pack and no other, the
 *     workspace a device pointer when the plan needs one. The graph is
 *     then computed on the host, synchronously, in topological order,
 *     with host storage for its virtual tensors (fake_cudnn_exec.c).
 *
 * The environment:
 *
 *   RAF_FAKE_CUDNN_VERSION=N     cudnnGetVersion's value (default 91900)
 *   RAF_FAKE_CUDNN_WORKSPACE=B   every plan needs a workspace of B bytes
 *                                (default 0, no workspace)
 *   RAF_FAKE_CUDNN_REFUSE=a,b    the heuristic offers no engine config for
 *                                a graph with one of these operations: a
 *                                log name ("conv_fwd", "pointwise:exp") or
 *                                the part before its colon ("pointwise")
 *   RAF_FAKE_CUDNN_LOG=file      a line per finalized graph and one per
 *                                execution appended to file:
 *                                "graph ops=NAME,NAME,..." and
 *                                "execute ops=NAME,NAME,... ws=BYTES"
 *
 * with the operations in the order they run, named conv_fwd,
 * conv_bwd_data, conv_bwd_filter, resample_fwd, resample_bwd, norm_fwd,
 * norm_bwd, pointwise:MODE (add, sub, mul, div, max, exp, log, rsqrt,
 * identity, cmp_ge, cmp_gt, binary_select, gen_index), reduction:add,
 * reduction:max and matmul.
 *
 * Built as libcudnn_graph.so.9, with the symlink libcudnn.so.9, in the
 * build tree's fake-cuda/ (CMakeLists.txt).
 */
#include "fake_cudnn.h"

#include "fake_common.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAGIC = 0x63646e6e, HANDLE_MAGIC = 0x68646e6e };

struct cudnnContext {
  uint32_t magic;
  cudaStream_t stream;
};

/* cuDNN keeps the last error per thread. */
static _Thread_local char last_error[512];

cudnnStatus_t fk_fail(cudnnStatus_t s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return s;
}

#define BAD(...) fk_fail(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)

/* ---- The attribute tables ----------------------------------------------- */

#define A(attr, ty, lo, hi, fl)                                             \
  {CUDNN_ATTR_##attr, CUDNN_TYPE_##ty, CUDNN_TYPE_##ty, lo, hi, fl,        \
   FK_NO_DESC}
/* A number set as either type (alpha and beta: FLOAT or DOUBLE; the
 * resample sizes: INT64 or FRACTION). */
#define A2(attr, ty, alt, lo, hi, fl)                                       \
  {CUDNN_ATTR_##attr, CUDNN_TYPE_##ty, CUDNN_TYPE_##alt, lo, hi, fl,       \
   FK_NO_DESC}
#define D(attr, want, fl)                                                   \
  {CUDNN_ATTR_##attr, CUDNN_TYPE_BACKEND_DESCRIPTOR,                       \
   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1, fl, CUDNN_BACKEND_##want}
#define T(attr, fl) D(attr, TENSOR_DESCRIPTOR, fl)

static const fk_attr tensor_attrs[] = {
    A(TENSOR_DATA_TYPE, DATA_TYPE, 1, 1, FK_REQ),
    A(TENSOR_DIMENSIONS, INT64, 1, CUDNN_DIM_MAX, FK_REQ),
    A(TENSOR_STRIDES, INT64, 1, CUDNN_DIM_MAX, FK_REQ),
    A(TENSOR_UNIQUE_ID, INT64, 1, 1, FK_REQ),
    A(TENSOR_BYTE_ALIGNMENT, INT64, 1, 1, FK_REQ),
    A(TENSOR_IS_VIRTUAL, BOOLEAN, 1, 1, 0),
    A(TENSOR_IS_BY_VALUE, BOOLEAN, 1, 1, 0),
};

static const fk_attr conv_attrs[] = {
    A(CONVOLUTION_COMP_TYPE, DATA_TYPE, 1, 1, FK_REQ),
    A(CONVOLUTION_CONV_MODE, CONVOLUTION_MODE, 1, 1, FK_REQ),
    A(CONVOLUTION_SPATIAL_DIMS, INT64, 1, 1, FK_REQ),
    A(CONVOLUTION_DILATIONS, INT64, 1, CUDNN_DIM_MAX, FK_REQ),
    A(CONVOLUTION_FILTER_STRIDES, INT64, 1, CUDNN_DIM_MAX, FK_REQ),
    A(CONVOLUTION_PRE_PADDINGS, INT64, 1, CUDNN_DIM_MAX, FK_REQ),
    A(CONVOLUTION_POST_PADDINGS, INT64, 1, CUDNN_DIM_MAX, FK_REQ),
};

static const fk_attr conv_fwd_attrs[] = {
    A2(OPERATION_CONVOLUTION_FORWARD_ALPHA, FLOAT, DOUBLE, 1, 1, 0),
    A2(OPERATION_CONVOLUTION_FORWARD_BETA, FLOAT, DOUBLE, 1, 1, 0),
    D(OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CONVOLUTION_DESCRIPTOR, FK_REQ),
    T(OPERATION_CONVOLUTION_FORWARD_X, FK_REQ | FK_IN),
    T(OPERATION_CONVOLUTION_FORWARD_W, FK_REQ | FK_IN),
    T(OPERATION_CONVOLUTION_FORWARD_Y, FK_REQ | FK_OUT),
};

static const fk_attr conv_data_attrs[] = {
    A2(OPERATION_CONVOLUTION_BWD_DATA_ALPHA, FLOAT, DOUBLE, 1, 1, 0),
    A2(OPERATION_CONVOLUTION_BWD_DATA_BETA, FLOAT, DOUBLE, 1, 1, 0),
    D(OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CONVOLUTION_DESCRIPTOR,
      FK_REQ),
    T(OPERATION_CONVOLUTION_BWD_DATA_W, FK_REQ | FK_IN),
    T(OPERATION_CONVOLUTION_BWD_DATA_DY, FK_REQ | FK_IN),
    T(OPERATION_CONVOLUTION_BWD_DATA_DX, FK_REQ | FK_OUT),
};

static const fk_attr conv_filter_attrs[] = {
    A2(OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, FLOAT, DOUBLE, 1, 1, 0),
    A2(OPERATION_CONVOLUTION_BWD_FILTER_BETA, FLOAT, DOUBLE, 1, 1, 0),
    D(OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CONVOLUTION_DESCRIPTOR,
      FK_REQ),
    T(OPERATION_CONVOLUTION_BWD_FILTER_X, FK_REQ | FK_IN),
    T(OPERATION_CONVOLUTION_BWD_FILTER_DY, FK_REQ | FK_IN),
    T(OPERATION_CONVOLUTION_BWD_FILTER_DW, FK_REQ | FK_OUT),
};

static const fk_attr resample_attrs[] = {
    A(RESAMPLE_MODE, RESAMPLE_MODE, 1, 1, FK_REQ),
    A(RESAMPLE_COMP_TYPE, DATA_TYPE, 1, 1, FK_REQ),
    A(RESAMPLE_SPATIAL_DIMS, INT64, 1, 1, FK_REQ),
    A(RESAMPLE_PADDING_MODE, PADDING_MODE, 1, 1, FK_REQ),
    A2(RESAMPLE_PRE_PADDINGS, INT64, FRACTION, 1, CUDNN_DIM_MAX, FK_REQ),
    A2(RESAMPLE_POST_PADDINGS, INT64, FRACTION, 1, CUDNN_DIM_MAX, FK_REQ),
    A2(RESAMPLE_STRIDES, INT64, FRACTION, 1, CUDNN_DIM_MAX, FK_REQ),
    A2(RESAMPLE_WINDOW_DIMS, INT64, FRACTION, 1, CUDNN_DIM_MAX, FK_REQ),
};

static const fk_attr resample_fwd_attrs[] = {
    T(OPERATION_RESAMPLE_FWD_XDESC, FK_REQ | FK_IN),
    T(OPERATION_RESAMPLE_FWD_YDESC, FK_REQ | FK_OUT),
    T(OPERATION_RESAMPLE_FWD_IDXDESC, FK_OUT),
    D(OPERATION_RESAMPLE_FWD_DESC, RESAMPLE_DESCRIPTOR, FK_REQ),
};

static const fk_attr resample_bwd_attrs[] = {
    T(OPERATION_RESAMPLE_BWD_DXDESC, FK_REQ | FK_OUT),
    T(OPERATION_RESAMPLE_BWD_DYDESC, FK_REQ | FK_IN),
    T(OPERATION_RESAMPLE_BWD_IDXDESC, FK_IN),
    D(OPERATION_RESAMPLE_BWD_DESC, RESAMPLE_DESCRIPTOR, FK_REQ),
};

static const fk_attr norm_fwd_attrs[] = {
    A(OPERATION_NORM_FWD_MODE, NORM_MODE, 1, 1, FK_REQ),
    A(OPERATION_NORM_FWD_PHASE, NORM_FWD_PHASE, 1, 1, FK_REQ),
    T(OPERATION_NORM_FWD_XDESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_FWD_MEAN_DESC, FK_STAT),
    T(OPERATION_NORM_FWD_INV_VARIANCE_DESC, FK_STAT),
    T(OPERATION_NORM_FWD_SCALE_DESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_FWD_BIAS_DESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_FWD_EPSILON_DESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_FWD_EXP_AVG_FACTOR_DESC, FK_IN),
    T(OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC, FK_IN),
    T(OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC, FK_IN),
    T(OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC, FK_OUT),
    T(OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC, FK_OUT),
    T(OPERATION_NORM_FWD_YDESC, FK_REQ | FK_OUT),
};

static const fk_attr norm_bwd_attrs[] = {
    A(OPERATION_NORM_BWD_MODE, NORM_MODE, 1, 1, FK_REQ),
    T(OPERATION_NORM_BWD_XDESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_BWD_MEAN_DESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_BWD_INV_VARIANCE_DESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_BWD_DYDESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_BWD_SCALE_DESC, FK_REQ | FK_IN),
    T(OPERATION_NORM_BWD_EPSILON_DESC, FK_IN),
    T(OPERATION_NORM_BWD_DSCALE_DESC, FK_REQ | FK_OUT),
    T(OPERATION_NORM_BWD_DBIAS_DESC, FK_REQ | FK_OUT),
    T(OPERATION_NORM_BWD_DXDESC, FK_REQ | FK_OUT),
};

static const fk_attr pointwise_attrs[] = {
    A(POINTWISE_MODE, POINTWISE_MODE, 1, 1, FK_REQ),
    A(POINTWISE_MATH_PREC, DATA_TYPE, 1, 1, FK_REQ),
    A(POINTWISE_AXIS, INT64, 1, 1, 0),
};

static const fk_attr pointwise_op_attrs[] = {
    D(OPERATION_POINTWISE_PW_DESCRIPTOR, POINTWISE_DESCRIPTOR, FK_REQ),
    T(OPERATION_POINTWISE_XDESC, FK_REQ | FK_IN),
    T(OPERATION_POINTWISE_BDESC, FK_IN),
    T(OPERATION_POINTWISE_TDESC, FK_IN),
    T(OPERATION_POINTWISE_YDESC, FK_REQ | FK_OUT),
    A2(OPERATION_POINTWISE_ALPHA1, FLOAT, DOUBLE, 1, 1, 0),
    A2(OPERATION_POINTWISE_ALPHA2, FLOAT, DOUBLE, 1, 1, 0),
};

static const fk_attr reduction_attrs[] = {
    A(REDUCTION_OPERATOR, REDUCTION_OPERATOR_TYPE, 1, 1, FK_REQ),
    A(REDUCTION_COMP_TYPE, DATA_TYPE, 1, 1, FK_REQ),
};

static const fk_attr reduction_op_attrs[] = {
    T(OPERATION_REDUCTION_XDESC, FK_REQ | FK_IN),
    T(OPERATION_REDUCTION_YDESC, FK_REQ | FK_OUT),
    D(OPERATION_REDUCTION_DESC, REDUCTION_DESCRIPTOR, FK_REQ),
};

static const fk_attr matmul_attrs[] = {
    A(MATMUL_COMP_TYPE, DATA_TYPE, 1, 1, FK_REQ),
};

static const fk_attr matmul_op_attrs[] = {
    T(OPERATION_MATMUL_ADESC, FK_REQ | FK_IN),
    T(OPERATION_MATMUL_BDESC, FK_REQ | FK_IN),
    T(OPERATION_MATMUL_CDESC, FK_REQ | FK_OUT),
    D(OPERATION_MATMUL_DESC, MATMUL_DESCRIPTOR, FK_REQ),
};

static const fk_attr graph_attrs[] = {
    A(OPERATIONGRAPH_HANDLE, HANDLE, 1, 1, FK_REQ),
    {CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, 1024, FK_REQ, FK_ANY_OP},
};

static const fk_attr heur_attrs[] = {
    D(ENGINEHEUR_OPERATION_GRAPH, OPERATIONGRAPH_DESCRIPTOR, FK_REQ),
    A(ENGINEHEUR_MODE, HEUR_MODE, 1, 1, FK_REQ),
    {CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, INT64_MAX, FK_GET,
     CUDNN_BACKEND_ENGINECFG_DESCRIPTOR},
};

/* An engine config is filled by the heuristic, never set. */
static const fk_attr cfg_attrs[] = {
    A(ENGINECFG_WORKSPACE_SIZE, INT64, 1, 1, FK_GET),
};

static const fk_attr plan_attrs[] = {
    A(EXECUTION_PLAN_HANDLE, HANDLE, 1, 1, FK_REQ),
    D(EXECUTION_PLAN_ENGINE_CONFIG, ENGINECFG_DESCRIPTOR, FK_REQ),
    A(EXECUTION_PLAN_WORKSPACE_SIZE, INT64, 1, 1, FK_GET),
};

static const fk_attr pack_attrs[] = {
    A(VARIANT_PACK_UNIQUE_IDS, INT64, 0, 4096, FK_REQ),
    A(VARIANT_PACK_DATA_POINTERS, VOID_PTR, 0, 4096, FK_REQ),
    A(VARIANT_PACK_WORKSPACE, VOID_PTR, 1, 1, 0),
};

/* Each descriptor type the fake implements: its table, and whether it is
 * an operation (what a graph's OPS may hold). */
#define KIND(ty, table, op)                                                 \
  {CUDNN_BACKEND_##ty, #ty, table, (int)(sizeof table / sizeof table[0]), op}

static const struct kind {
  cudnnBackendDescriptorType_t type;
  const char *name;
  const fk_attr *attrs;
  int nattrs;
  bool op;
} kinds[] = {
    KIND(TENSOR_DESCRIPTOR, tensor_attrs, false),
    KIND(CONVOLUTION_DESCRIPTOR, conv_attrs, false),
    KIND(OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, conv_fwd_attrs, true),
    KIND(OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, conv_data_attrs, true),
    KIND(OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, conv_filter_attrs,
         true),
    KIND(RESAMPLE_DESCRIPTOR, resample_attrs, false),
    KIND(OPERATION_RESAMPLE_FWD_DESCRIPTOR, resample_fwd_attrs, true),
    KIND(OPERATION_RESAMPLE_BWD_DESCRIPTOR, resample_bwd_attrs, true),
    KIND(OPERATION_NORM_FORWARD_DESCRIPTOR, norm_fwd_attrs, true),
    KIND(OPERATION_NORM_BACKWARD_DESCRIPTOR, norm_bwd_attrs, true),
    KIND(POINTWISE_DESCRIPTOR, pointwise_attrs, false),
    KIND(OPERATION_POINTWISE_DESCRIPTOR, pointwise_op_attrs, true),
    KIND(REDUCTION_DESCRIPTOR, reduction_attrs, false),
    KIND(OPERATION_REDUCTION_DESCRIPTOR, reduction_op_attrs, true),
    KIND(MATMUL_DESCRIPTOR, matmul_attrs, false),
    KIND(OPERATION_MATMUL_DESCRIPTOR, matmul_op_attrs, true),
    KIND(OPERATIONGRAPH_DESCRIPTOR, graph_attrs, false),
    KIND(ENGINEHEUR_DESCRIPTOR, heur_attrs, false),
    KIND(ENGINECFG_DESCRIPTOR, cfg_attrs, false),
    KIND(EXECUTION_PLAN_DESCRIPTOR, plan_attrs, false),
    KIND(VARIANT_PACK_DESCRIPTOR, pack_attrs, false),
};

enum { NKINDS = sizeof kinds / sizeof kinds[0] };

static const struct kind *kind_of(cudnnBackendDescriptorType_t t) {
  for (int i = 0; i < NKINDS; i++)
    if (kinds[i].type == t)
      return &kinds[i];
  return NULL;
}

static const char *kind_name(cudnnBackendDescriptorType_t t) {
  const struct kind *k = kind_of(t);
  return k ? k->name : "an unknown descriptor type";
}

static bool is_op(cudnnBackendDescriptorType_t t) {
  const struct kind *k = kind_of(t);
  return k && k->op;
}

/* The bytes of one element of an attribute type. */
static size_t elem_size(cudnnBackendAttributeType_t t) {
  switch (t) {
  case CUDNN_TYPE_HANDLE: return sizeof(cudnnHandle_t);
  case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
  case CUDNN_TYPE_INT64: return sizeof(int64_t);
  case CUDNN_TYPE_FLOAT: return sizeof(float);
  case CUDNN_TYPE_DOUBLE: return sizeof(double);
  case CUDNN_TYPE_VOID_PTR: return sizeof(void *);
  case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(cudnnBackendDescriptor_t);
  case CUDNN_TYPE_FRACTION: return sizeof(cudnnFraction_t);
  case CUDNN_TYPE_INT32: return sizeof(int32_t);
  case CUDNN_TYPE_CHAR: return 1;
  default: return sizeof(int); /* the enumerations */
  }
}

/* ---- Descriptors, references, accessors --------------------------------- */

/* The caller's descriptor, or NULL (with the message) when it is not a
 * live one of ours. */
static fk_desc *desc_of(cudnnBackendDescriptor_t p, const char *what) {
  fk_desc *d = p;
  if (!d || d->magic != MAGIC || d->destroyed) {
    BAD("%s: not a live backend descriptor", what);
    return NULL;
  }
  return d;
}

static bool handle_ok(cudnnHandle_t h) {
  return h && h->magic == HANDLE_MAGIC;
}

static void release(fk_desc *d);

static void clear_slot(fk_slot *s) {
  if (s->set && s->type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
    for (int64_t i = 0; i < s->count; i++)
      release(((fk_desc **)s->data)[i]);
  free(s->data);
  *s = (fk_slot){0};
}

static void release(fk_desc *d) {
  if (!d || --d->refs > 0)
    return;
  for (int i = 0; i < d->nattrs; i++)
    clear_slot(&d->slot[i]);
  release(d->graph);
  free(d->ops);
  free(d->tensors);
  d->magic = 0;
  free(d);
}

/* ---- Entry points: library, handle -------------------------------------- */

size_t cudnnGetVersion(void) {
  const char *v = getenv("RAF_FAKE_CUDNN_VERSION");
  return v && *v ? (size_t)strtoull(v, NULL, 10) : 91900;
}

/* The statuses the fake returns, by name. */
const char *cudnnGetErrorString(cudnnStatus_t s) {
#define NAME(x)                                                             \
  case x: return #x;
  switch (s) {
    NAME(CUDNN_STATUS_SUCCESS)
    NAME(CUDNN_STATUS_BAD_PARAM)
    NAME(CUDNN_STATUS_NOT_SUPPORTED)
    NAME(CUDNN_STATUS_INTERNAL_ERROR)
    NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
  default: return "CUDNN_STATUS_UNKNOWN";
  }
#undef NAME
}

void cudnnGetLastErrorString(char *message, size_t max_size) {
  if (message && max_size)
    snprintf(message, max_size, "%s", last_error);
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  if (!handle)
    return BAD("cudnnCreate: handle is NULL");
  struct cudnnContext *h = calloc(1, sizeof *h);
  if (!h)
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "cudnnCreate: out of memory");
  h->magic = HANDLE_MAGIC;
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (!handle_ok(handle))
    return BAD("cudnnDestroy: not a handle of cudnnCreate");
  handle->magic = 0;
  free(handle);
  return CUDNN_STATUS_SUCCESS;
}

/* Any stream: the fake driver's run in order on the calling thread. */
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle_ok(handle))
    return BAD("cudnnSetStream: not a handle of cudnnCreate");
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Entry points: create, set, get, destroy ---------------------------- */

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *out) {
  if (!out)
    return BAD("cudnnBackendCreateDescriptor: descriptor is NULL");
  const struct kind *k = kind_of(type);
  if (!k)
    return fk_fail(CUDNN_STATUS_NOT_SUPPORTED,
                   "cudnnBackendCreateDescriptor: descriptor type %d is not "
                   "one the fake implements",
                   (int)type);
  fk_desc *d = calloc(1, sizeof *d);
  if (!d)
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "cudnnBackendCreateDescriptor: out of memory");
  d->magic = MAGIC;
  d->type = type;
  d->attrs = k->attrs;
  d->nattrs = k->nattrs;
  d->refs = 1;
  *out = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t p) {
  fk_desc *d = desc_of(p, "cudnnBackendDestroyDescriptor");
  if (!d)
    return CUDNN_STATUS_BAD_PARAM;
  d->destroyed = true; /* the caller's reference is gone; others live on */
  release(d);
  return CUDNN_STATUS_SUCCESS;
}

/* Whether element e of a descriptor-valued attribute is acceptable. */
static cudnnStatus_t check_desc_elem(const fk_desc *d, const fk_attr *a,
                                     fk_desc *e, int64_t i) {
  const char *k = kind_name(d->type);
  if (!e || e->magic != MAGIC || e->destroyed)
    return BAD("%s: attribute %d element %lld is not a live descriptor", k,
               (int)a->name, (long long)i);
  if (a->want == FK_ANY_OP ? !is_op(e->type) : (int)e->type != a->want)
    return BAD("%s: attribute %d wants %s, not %s", k, (int)a->name,
               a->want == FK_ANY_OP ? "an operation"
                 : kind_name((cudnnBackendDescriptorType_t)a->want),
               kind_name(e->type));
  if (!e->finalized)
    return BAD("%s: attribute %d: the %s is not finalized", k, (int)a->name,
               kind_name(e->type));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t p,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type,
                                       int64_t count, const void *elems) {
  fk_desc *d = desc_of(p, "cudnnBackendSetAttribute");
  if (!d)
    return CUDNN_STATUS_BAD_PARAM;
  const char *k = kind_name(d->type);
  int i = fk_attr_index(d, name);
  if (i < 0)
    return fk_fail(CUDNN_STATUS_NOT_SUPPORTED,
                   "%s: no attribute %d (or not one the fake implements)", k,
                   (int)name);
  const fk_attr *a = &d->attrs[i];
  if (d->finalized)
    return BAD("%s: attribute %d set after finalize", k, (int)name);
  if (a->flags & FK_GET)
    return BAD("%s: attribute %d can only be read", k, (int)name);
  if (type != a->type && type != a->alt)
    return BAD("%s: attribute %d set with type %d, not %d", k, (int)name,
               (int)type, (int)a->type);
  if (count < a->min || count > a->max || (count > 0 && !elems))
    return BAD("%s: attribute %d set with %lld elements, not %lld..%lld", k,
               (int)name, (long long)count, (long long)a->min,
               (long long)a->max);
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
    for (int64_t j = 0; j < count; j++) {
      cudnnStatus_t s =
          check_desc_elem(d, a, ((fk_desc *const *)elems)[j], j);
      if (s != CUDNN_STATUS_SUCCESS)
        return s;
    }
  size_t bytes = (size_t)count * elem_size(type);
  void *copy = malloc(bytes ? bytes : 1);
  if (!copy)
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "%s: out of memory", k);
  if (bytes)
    memcpy(copy, elems, bytes);
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
    for (int64_t j = 0; j < count; j++)
      ((fk_desc **)copy)[j]->refs++;
  clear_slot(&d->slot[i]);
  d->slot[i] = (fk_slot){true, type, count, copy};
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t heur_results(fk_desc *d, int64_t requested,
                                  int64_t *count, void *elems);

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const p,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type,
                                       int64_t requested, int64_t *count,
                                       void *elems) {
  fk_desc *d = desc_of(p, "cudnnBackendGetAttribute");
  if (!d)
    return CUDNN_STATUS_BAD_PARAM;
  const char *k = kind_name(d->type);
  int i = fk_attr_index(d, name);
  if (i < 0)
    return fk_fail(CUDNN_STATUS_NOT_SUPPORTED,
                   "%s: no attribute %d (or not one the fake implements)", k,
                   (int)name);
  const fk_attr *a = &d->attrs[i];
  if (!d->finalized)
    return BAD("%s: attribute %d read before finalize", k, (int)name);
  if (type != a->type && type != a->alt)
    return BAD("%s: attribute %d read as type %d, not %d", k, (int)name,
               (int)type, (int)a->type);
  if (requested < 0 || (requested > 0 && !elems))
    return BAD("%s: attribute %d: no room for %lld elements", k, (int)name,
               (long long)requested);
  if (name == CUDNN_ATTR_ENGINEHEUR_RESULTS)
    return heur_results(d, requested, count, elems);
  if (a->flags & FK_GET) { /* the workspace sizes */
    if (count)
      *count = 1;
    if (requested >= 1)
      memcpy(elems, &d->workspace, sizeof d->workspace);
    return CUDNN_STATUS_SUCCESS;
  }
  const fk_slot *s = &d->slot[i];
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR)
    return fk_fail(CUDNN_STATUS_NOT_SUPPORTED,
                   "%s: attribute %d: the fake does not read descriptors back",
                   k, (int)name);
  if (!s->set)
    return BAD("%s: attribute %d was not set", k, (int)name);
  if (s->type != type)
    return BAD("%s: attribute %d was set with type %d", k, (int)name,
               (int)s->type);
  if (count)
    *count = s->count;
  int64_t n = requested < s->count ? requested : s->count;
  if (n > 0)
    memcpy(elems, s->data, (size_t)n * elem_size(type));
  return CUDNN_STATUS_SUCCESS;
}

/* ---- Finalize ----------------------------------------------------------- */

static cudnnStatus_t finalize_tensor(fk_desc *d) {
  fk_tensor *t = &d->t;
  int64_t rank = fk_count(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
  if (rank != fk_count(d, CUDNN_ATTR_TENSOR_STRIDES))
    return BAD("TENSOR_DESCRIPTOR: %lld dimensions but %lld strides",
               (long long)rank,
               (long long)fk_count(d, CUDNN_ATTR_TENSOR_STRIDES));
  t->rank = (int)rank;
  for (int i = 0; i < t->rank; i++) {
    t->dims[i] = fk_int(d, CUDNN_ATTR_TENSOR_DIMENSIONS, i, 0);
    t->strides[i] = fk_int(d, CUDNN_ATTR_TENSOR_STRIDES, i, 0);
    if (t->dims[i] < 1 || t->strides[i] < 1)
      return BAD("TENSOR_DESCRIPTOR: dimension %d is %lld with stride %lld",
                 i, (long long)t->dims[i], (long long)t->strides[i]);
  }
  t->type = (cudnnDataType_t)fk_int(d, CUDNN_ATTR_TENSOR_DATA_TYPE, 0, -1);
  t->uid = fk_int(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0, 0);
  t->align = fk_int(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0, 0);
  t->is_virtual = fk_int(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, 0, 0);
  t->by_value = fk_int(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, 0, 0);
  if (!fk_dtype_size(t->type))
    return fk_fail(CUDNN_STATUS_NOT_SUPPORTED,
                   "TENSOR_DESCRIPTOR %lld: data type %d is not one the fake "
                   "implements",
                   (long long)t->uid, (int)t->type);
  if (t->align < 1 || (t->align & (t->align - 1)))
    return BAD("TENSOR_DESCRIPTOR %lld: BYTE_ALIGNMENT %lld is not a power "
               "of two",
               (long long)t->uid, (long long)t->align);
  if (t->is_virtual && t->by_value)
    return BAD("TENSOR_DESCRIPTOR %lld: virtual and by value",
               (long long)t->uid);
  for (int i = 0; t->by_value && i < t->rank; i++)
    if (t->dims[i] != 1)
      return BAD("TENSOR_DESCRIPTOR %lld: by value, but not a scalar",
                 (long long)t->uid);
  return CUDNN_STATUS_SUCCESS;
}

/* An operation: its tensors, read and written, by the table's roles (norm
 * forward's statistics by its phase), then its own checks. */
static cudnnStatus_t finalize_op(fk_desc *d) {
  bool training = d->type == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR &&
                  fk_int(d, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, 0, -1) ==
                      CUDNN_NORM_FWD_TRAINING;
  d->nin = d->nout = 0;
  for (int i = 0; i < d->nattrs; i++) {
    unsigned f = d->attrs[i].flags;
    fk_desc *t = d->slot[i].set && d->attrs[i].want ==
                                       CUDNN_BACKEND_TENSOR_DESCRIPTOR
                     ? ((fk_desc **)d->slot[i].data)[0]
                     : NULL;
    if (!t)
      continue;
    if ((f & FK_OUT) || ((f & FK_STAT) && training))
      d->out[d->nout++] = t;
    else
      d->in[d->nin++] = t;
  }
  for (int i = 0; i < d->nout; i++)
    if (d->out[i]->t.by_value)
      return BAD("%s: output tensor %lld is by value", kind_name(d->type),
                 (long long)d->out[i]->t.uid);
  return fk_check_op(d);
}

static bool same_tensor(const fk_tensor *a, const fk_tensor *b) {
  if (a->type != b->type || a->rank != b->rank ||
      a->is_virtual != b->is_virtual || a->by_value != b->by_value)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i] || a->strides[i] != b->strides[i])
      return false;
  return true;
}

static int tensor_index(const fk_desc *g, int64_t uid) {
  for (int i = 0; i < g->ntensors; i++)
    if (g->tensors[i]->t.uid == uid)
      return i;
  return -1;
}

/* Whether op writes (or reads) the tensor of this unique id. */
static bool op_uses(const fk_desc *op, bool writes, int64_t uid) {
  for (int i = 0; i < (writes ? op->nout : op->nin); i++)
    if ((writes ? op->out : op->in)[i]->t.uid == uid)
      return true;
  return false;
}

/* The names of a graph's operations, comma separated, in order. */
static void graph_names(const fk_desc *g, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < g->nops && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "," : "",
                             g->ops[i]->name);
}

/* Collects one tensor per unique id, checks the virtual tensors' writers
 * and readers, and orders the operations so that each runs after the
 * writers of what it reads (Kahn's, the earliest ready one first, so a
 * graph given in order keeps it). */
static cudnnStatus_t finalize_graph(fk_desc *g) {
  const fk_slot *ops = fk_slot_of(g, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  cudnnHandle_t h = *(cudnnHandle_t *)fk_slot_of(
                        g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE)->data;
  if (!handle_ok(h))
    return BAD("OPERATIONGRAPH: HANDLE is not a handle of cudnnCreate");
  int n = (int)ops->count;
  fk_desc **given = ops->data;
  g->ops = calloc((size_t)n, sizeof *g->ops);
  g->tensors = calloc((size_t)n * 2 * FK_MAX_OP_TENSORS, sizeof *g->tensors);
  bool *placed = calloc((size_t)n, sizeof *placed);
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  if (!g->ops || !g->tensors || !placed) {
    s = fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                "OPERATIONGRAPH: out of memory");
    goto done;
  }
  for (int i = 0; i < n && !s; i++) {
    for (int j = 0; j < i; j++)
      if (given[j] == given[i])
        s = BAD("OPERATIONGRAPH: operation %d is also operation %d", i, j);
    for (int j = 0; j < given[i]->nin + given[i]->nout && !s; j++) {
      fk_desc *t = j < given[i]->nin ? given[i]->in[j]
                                     : given[i]->out[j - given[i]->nin];
      int k = tensor_index(g, t->t.uid);
      if (k < 0)
        g->tensors[g->ntensors++] = t;
      else if (!same_tensor(&g->tensors[k]->t, &t->t))
        s = BAD("OPERATIONGRAPH: unique id %lld names two different tensors",
                (long long)t->t.uid);
    }
  }
  for (int k = 0; k < g->ntensors && !s; k++) {
    const fk_tensor *t = &g->tensors[k]->t;
    int writers = 0, readers = 0;
    for (int i = 0; i < n; i++) {
      writers += op_uses(given[i], true, t->uid);
      readers += op_uses(given[i], false, t->uid);
    }
    if (writers > 1)
      s = BAD("OPERATIONGRAPH: tensor %lld is written by %d operations",
              (long long)t->uid, writers);
    else if (t->is_virtual && (writers != 1 || readers < 1))
      s = BAD("OPERATIONGRAPH: virtual tensor %lld is written by %d and read "
              "by %d operations (must be 1 and at least 1)",
              (long long)t->uid, writers, readers);
  }
  for (g->nops = 0; g->nops < n && !s;) {
    int ready = -1;
    for (int i = 0; i < n && ready < 0; i++) {
      bool ok = !placed[i];
      for (int j = 0; j < given[i]->nin && ok; j++)
        for (int w = 0; w < n && ok; w++)
          if (w != i && !placed[w] &&
              op_uses(given[w], true, given[i]->in[j]->t.uid))
            ok = false;
      if (ok)
        ready = i;
    }
    if (ready < 0)
      s = BAD("OPERATIONGRAPH: the operations form a cycle");
    else {
      placed[ready] = true;
      g->ops[g->nops++] = given[ready];
    }
  }
  if (!s) {
    char names[1024];
    graph_names(g, names, sizeof names);
    fake_log("RAF_FAKE_CUDNN_LOG", "graph ops=%s", names);
  }
done:
  if (s) { /* the caller may set OPS again and retry */
    free(g->ops), free(g->tensors);
    g->ops = g->tensors = NULL;
    g->nops = g->ntensors = 0;
  }
  free(placed);
  return s;
}

/* Whether RAF_FAKE_CUDNN_REFUSE names one of the graph's operations. */
static bool refused(const fk_desc *g) {
  const char *env = getenv("RAF_FAKE_CUDNN_REFUSE");
  if (!env || !*env)
    return false;
  for (int i = 0; i < g->nops; i++) {
    const char *name = g->ops[i]->name, *colon = strchr(name, ':');
    size_t whole = strlen(name), kind = colon ? (size_t)(colon - name) : whole;
    for (const char *p = env; *p;) {
      size_t len = strcspn(p, ",");
      if ((len == whole && !strncmp(p, name, len)) ||
          (len == kind && !strncmp(p, name, len)))
        return true;
      p += len + (p[len] == ',');
    }
  }
  return false;
}

static int64_t workspace_bytes(void) {
  const char *env = getenv("RAF_FAKE_CUDNN_WORKSPACE");
  long long v = env && *env ? strtoll(env, NULL, 10) : 0;
  return v > 0 ? v : 0;
}

/* RESULTS: with nothing requested, how many configs there are; else fills
 * the caller's ENGINECFG descriptors with this graph's one config. */
static cudnnStatus_t heur_results(fk_desc *d, int64_t requested,
                                  int64_t *count, void *elems) {
  if (!count)
    return BAD("ENGINEHEUR: RESULTS read without an element count");
  int64_t n = requested < d->nconfigs ? requested : d->nconfigs;
  if (requested == 0) {
    *count = d->nconfigs;
    return CUDNN_STATUS_SUCCESS;
  }
  for (int64_t i = 0; i < n; i++) {
    fk_desc *c = ((fk_desc **)elems)[i];
    if (!c || c->magic != MAGIC || c->destroyed ||
        c->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
      return BAD("ENGINEHEUR: RESULTS element %lld is not an ENGINECFG "
                 "descriptor",
                 (long long)i);
  }
  fk_desc *g = fk_sub(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
  for (int64_t i = 0; i < n; i++) {
    fk_desc *c = ((fk_desc **)elems)[i];
    g->refs++;
    release(c->graph);
    c->graph = g;
    c->workspace = workspace_bytes();
    c->finalized = true;
  }
  *count = n;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_pack(fk_desc *d) {
  int64_t n = fk_count(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  if (n != fk_count(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS))
    return BAD("VARIANT_PACK: %lld unique ids but %lld data pointers",
               (long long)n,
               (long long)fk_count(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < i; j++)
      if (fk_int(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, i, 0) ==
          fk_int(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, j, 0))
        return BAD("VARIANT_PACK: unique id %lld twice",
                   (long long)fk_int(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, i,
                                     0));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t p) {
  fk_desc *d = desc_of(p, "cudnnBackendFinalize");
  if (!d)
    return CUDNN_STATUS_BAD_PARAM;
  const char *k = kind_name(d->type);
  if (d->finalized)
    return BAD("%s: finalized twice", k);
  for (int i = 0; i < d->nattrs; i++)
    if ((d->attrs[i].flags & FK_REQ) && !d->slot[i].set)
      return BAD("%s: required attribute %d is not set", k,
                 (int)d->attrs[i].name);
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  switch (d->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    s = finalize_tensor(d);
    break;
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    s = finalize_graph(d);
    break;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: {
    int64_t mode = fk_int(d, CUDNN_ATTR_ENGINEHEUR_MODE, 0, -1);
    if (mode < 0 || mode >= CUDNN_HEUR_MODES_COUNT)
      return BAD("ENGINEHEUR: MODE %lld is not a heuristic mode",
                 (long long)mode);
    d->nconfigs = !refused(fk_sub(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH));
    break;
  }
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    return BAD("ENGINECFG: the fake's engine configs come filled from "
               "ENGINEHEUR's RESULTS");
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
    cudnnHandle_t h = *(cudnnHandle_t *)fk_slot_of(
                          d, CUDNN_ATTR_EXECUTION_PLAN_HANDLE)->data;
    if (!handle_ok(h))
      return BAD("EXECUTION_PLAN: HANDLE is not a handle of cudnnCreate");
    d->workspace =
        fk_sub(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)->workspace;
    break;
  }
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    s = finalize_pack(d);
    break;
  default:
    s = is_op(d->type) ? finalize_op(d) : fk_check_op(d);
    break;
  }
  if (s == CUDNN_STATUS_SUCCESS)
    d->finalized = true;
  return s;
}

/* ---- Execute ------------------------------------------------------------ */

/* Matches the pack's pointers to the graph's tensors, as cuDNN would
 * fault or refuse: views[i] is the data of g->tensors[i]. */
static cudnnStatus_t bind_pack(const fk_desc *g, const fk_desc *pack,
                               int64_t ws, fk_view *views) {
  int64_t n = fk_count(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  void *const *ptrs =
      fk_slot_of(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)->data;
  for (int64_t i = 0; i < n; i++) {
    int64_t uid = fk_int(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, i, 0);
    int k = tensor_index(g, uid);
    if (k < 0)
      return BAD("cudnnBackendExecute: unique id %lld of the variant pack "
                 "is no tensor of the graph",
                 (long long)uid);
    const fk_tensor *t = &g->tensors[k]->t;
    if (t->is_virtual)
      return BAD("cudnnBackendExecute: tensor %lld is virtual, but in the "
                 "variant pack",
                 (long long)uid);
    if (t->by_value) {
      if (!ptrs[i] || fake_host_of(ptrs[i]))
        return BAD("cudnnBackendExecute: by-value tensor %lld needs a host "
                   "pointer, not %p",
                   (long long)uid, ptrs[i]);
      views[k].data = ptrs[i];
      continue;
    }
    char *host = fake_host_of(ptrs[i]);
    if (!host)
      return BAD("cudnnBackendExecute: tensor %lld's pointer %p is not "
                 "device memory",
                 (long long)uid, ptrs[i]);
    if ((uintptr_t)host % (uintptr_t)t->align)
      return BAD("cudnnBackendExecute: tensor %lld's pointer %p is not "
                 "aligned to its BYTE_ALIGNMENT %lld",
                 (long long)uid, ptrs[i], (long long)t->align);
    views[k].data = host;
  }
  for (int k = 0; k < g->ntensors; k++)
    if (!g->tensors[k]->t.is_virtual && !views[k].data)
      return BAD("cudnnBackendExecute: tensor %lld is not in the variant "
                 "pack",
                 (long long)g->tensors[k]->t.uid);
  const fk_slot *wslot = fk_slot_of(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
  void *w = wslot ? *(void *const *)wslot->data : NULL;
  if (ws > 0 && !fake_host_of(w))
    return BAD("cudnnBackendExecute: the plan needs a workspace of %lld "
               "bytes, and %p is not device memory",
               (long long)ws, w);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle,
                                  cudnnBackendDescriptor_t plan_p,
                                  cudnnBackendDescriptor_t pack_p) {
  if (!handle_ok(handle))
    return BAD("cudnnBackendExecute: not a handle of cudnnCreate");
  fk_desc *plan = desc_of(plan_p, "cudnnBackendExecute: the plan");
  if (!plan)
    return CUDNN_STATUS_BAD_PARAM;
  fk_desc *pack = desc_of(pack_p, "cudnnBackendExecute: the variant pack");
  if (!pack)
    return CUDNN_STATUS_BAD_PARAM;
  if (plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      !plan->finalized)
    return BAD("cudnnBackendExecute: not a finalized EXECUTION_PLAN");
  if (pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !pack->finalized)
    return BAD("cudnnBackendExecute: not a finalized VARIANT_PACK");
  const fk_desc *g =
      fk_sub(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)->graph;
  fk_view *views = calloc((size_t)g->ntensors, sizeof *views);
  if (!views)
    return fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "cudnnBackendExecute: out of memory");
  for (int k = 0; k < g->ntensors; k++)
    views[k].t = &g->tensors[k]->t;
  cudnnStatus_t s = bind_pack(g, pack, plan->workspace, views);
  /* Virtual tensors live for the execution only, zeroed. */
  for (int k = 0; k < g->ntensors && !s; k++)
    if (views[k].t->is_virtual) {
      views[k].data = calloc((size_t)fk_span(views[k].t),
                             fk_dtype_size(views[k].t->type));
      if (!views[k].data)
        s = fk_fail(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                    "cudnnBackendExecute: out of memory");
    }
  fk_env env = {g->ntensors, views};
  for (int i = 0; i < g->nops && !s; i++)
    s = fk_run_op(g->ops[i], &env);
  if (!s) {
    char names[1024];
    graph_names(g, names, sizeof names);
    fake_log("RAF_FAKE_CUDNN_LOG", "execute ops=%s ws=%lld", names,
             (long long)plan->workspace);
  }
  for (int k = 0; k < g->ntensors; k++)
    if (views[k].t->is_virtual)
      free(views[k].data);
  free(views);
  return s;
}
