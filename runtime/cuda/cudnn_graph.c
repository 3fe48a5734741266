/* cudnn_graph.c: building cuDNN graphs into cached execution plans, and
 * running them (cudnn_internal.h).
 *
 * The builder keeps the first failure and turns every later call into
 * nothing, so that a kernel writes its graph straight through and learns
 * once, at cdn_plan, whether cuDNN took it; the message then names the
 * call, the descriptor and cuDNN's own last error. The engine choice is
 * NVIDIA's mode A heuristics, in their order: the first configuration
 * that finalises into a plan whose workspace fits is kept, as
 * cudnn-frontend's default policy does.
 */
#include "runtime/cuda/cudnn_internal.h"

#include "runtime/cuda/cuda_device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Engine configurations asked of the heuristics at most. */
enum { CDN_CONFIGS = 8 };

void cdn_begin(cdn_graph *g, cudnn_state *st, const raf_kernel *k) {
  memset(g, 0, sizeof *g);
  g->st = st;
  g->k = k;
  g->status = CUDNN_STATUS_SUCCESS;
}

cudnnDataType_t cdn_dtype(raf_dtype dt) {
  switch (dt) {
  case RAF_BF16: return CUDNN_DATA_BFLOAT16;
  case RAF_F16: return CUDNN_DATA_HALF;
  case RAF_I8: return CUDNN_DATA_INT8;
  case RAF_BOOL: return CUDNN_DATA_BOOLEAN;
  case RAF_F64: return CUDNN_DATA_DOUBLE;
  default: return CUDNN_DATA_FLOAT;
  }
}

/* Records the first failure: what failed and cuDNN's last message. */
static void failed(cdn_graph *g, cudnnStatus_t s, const char *what,
                   int detail) {
  if (g->status != CUDNN_STATUS_SUCCESS)
    return;
  g->status = s;
  char last[96] = "";
  g->st->lib->cudnnGetLastErrorString(last, sizeof last);
  snprintf(g->failed, sizeof g->failed, "%s (%d): %s%s%s", what, detail,
           raf_cudnn_status_text(g->st->lib, s), last[0] ? ": " : "", last);
}

cudnnBackendDescriptor_t cdn_make(cdn_graph *g,
                                  cudnnBackendDescriptorType_t type) {
  if (g->status != CUDNN_STATUS_SUCCESS)
    return NULL;
  if (g->ndescs == CDN_MAX_DESCS) {
    failed(g, CUDNN_STATUS_NOT_SUPPORTED, "more descriptors than raf keeps",
           CDN_MAX_DESCS);
    return NULL;
  }
  cudnnBackendDescriptor_t d = NULL;
  cudnnStatus_t s = g->st->lib->cudnnBackendCreateDescriptor(type, &d);
  if (s != CUDNN_STATUS_SUCCESS) {
    failed(g, s, "cudnnBackendCreateDescriptor", (int)type);
    return NULL;
  }
  g->descs[g->ndescs++] = d;
  return d;
}

void cdn_set(cdn_graph *g, cudnnBackendDescriptor_t d,
             cudnnBackendAttributeName_t name,
             cudnnBackendAttributeType_t type, int64_t n, const void *values) {
  if (g->status != CUDNN_STATUS_SUCCESS || !d)
    return;
  cudnnStatus_t s =
      g->st->lib->cudnnBackendSetAttribute(d, name, type, n, values);
  if (s != CUDNN_STATUS_SUCCESS)
    failed(g, s, "cudnnBackendSetAttribute, attribute", (int)name);
}

void cdn_set_desc(cdn_graph *g, cudnnBackendDescriptor_t d,
                  cudnnBackendAttributeName_t name,
                  cudnnBackendDescriptor_t value) {
  cdn_set(g, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
}

void cdn_set_int64(cdn_graph *g, cudnnBackendDescriptor_t d,
                   cudnnBackendAttributeName_t name, int64_t value) {
  cdn_set(g, d, name, CUDNN_TYPE_INT64, 1, &value);
}

void cdn_set_float(cdn_graph *g, cudnnBackendDescriptor_t d,
                   cudnnBackendAttributeName_t name, float value) {
  cdn_set(g, d, name, CUDNN_TYPE_FLOAT, 1, &value);
}

void cdn_set_dtype(cdn_graph *g, cudnnBackendDescriptor_t d,
                   cudnnBackendAttributeName_t name, cudnnDataType_t value) {
  cdn_set(g, d, name, CUDNN_TYPE_DATA_TYPE, 1, &value);
}

void cdn_finalize(cdn_graph *g, cudnnBackendDescriptor_t d) {
  if (g->status != CUDNN_STATUS_SUCCESS || !d)
    return;
  cudnnStatus_t s = g->st->lib->cudnnBackendFinalize(d);
  if (s != CUDNN_STATUS_SUCCESS)
    failed(g, s, "cudnnBackendFinalize, operation", g->nops);
}

void cdn_add_op(cdn_graph *g, cudnnBackendDescriptor_t d) {
  cdn_finalize(g, d);
  if (g->status != CUDNN_STATUS_SUCCESS)
    return;
  if (g->nops == CDN_MAX_OPS) {
    failed(g, CUDNN_STATUS_NOT_SUPPORTED, "more operations than raf keeps",
           CDN_MAX_OPS);
    return;
  }
  g->ops[g->nops++] = d;
}

cudnnBackendDescriptor_t cdn_tensor(cdn_graph *g, int64_t uid,
                                    cudnnDataType_t type, int rank,
                                    const int64_t *dims,
                                    const int64_t *strides, unsigned flags) {
  int64_t packed[RAF_MAX_RANK];
  if (!strides) {
    int64_t step = 1;
    for (int i = rank - 1; i >= 0; i--) {
      packed[i] = step;
      step *= dims[i];
    }
    strides = packed;
  }
  cudnnBackendDescriptor_t t = cdn_make(g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  bool virt = flags & CDN_VIRTUAL, by_value = flags & CDN_BY_VALUE;
  cdn_set_dtype(g, t, CUDNN_ATTR_TENSOR_DATA_TYPE, type);
  cdn_set(g, t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims);
  cdn_set(g, t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides);
  cdn_set_int64(g, t, CUDNN_ATTR_TENSOR_UNIQUE_ID, uid);
  cdn_set_int64(g, t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16);
  if (virt)
    cdn_set(g, t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
  if (by_value)
    cdn_set(g, t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1,
            &by_value);
  if (g->status == CUDNN_STATUS_SUCCESS && t) {
    cudnnStatus_t s = g->st->lib->cudnnBackendFinalize(t);
    if (s != CUDNN_STATUS_SUCCESS)
      failed(g, s, "cudnnBackendFinalize, tensor", (int)uid);
  }
  return t;
}

void cdn_pointwise(cdn_graph *g, cudnnPointwiseMode_t mode,
                   cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                   cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y,
                   int64_t axis) {
  cudnnBackendDescriptor_t pw = cdn_make(g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cdn_set(g, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1,
          &mode);
  cdn_set_dtype(g, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT);
  if (mode == CUDNN_POINTWISE_GEN_INDEX)
    cdn_set_int64(g, pw, CUDNN_ATTR_POINTWISE_AXIS, axis);
  cdn_finalize(g, pw);
  cudnnBackendDescriptor_t op =
      cdn_make(g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  cdn_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  cdn_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b)
    cdn_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  if (t)
    cdn_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
  cdn_set_desc(g, op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  cdn_add_op(g, op);
}

void cdn_reduction(cdn_graph *g, cudnnReduceTensorOp_t op,
                   cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
  cudnnBackendDescriptor_t r = cdn_make(g, CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  cdn_set(g, r, CUDNN_ATTR_REDUCTION_OPERATOR,
          CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &op);
  cdn_set_dtype(g, r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT);
  cdn_finalize(g, r);
  cudnnBackendDescriptor_t o =
      cdn_make(g, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  cdn_set_desc(g, o, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  cdn_set_desc(g, o, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  cdn_set_desc(g, o, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
  cdn_add_op(g, o);
}

void cdn_matmul(cdn_graph *g, cudnnBackendDescriptor_t a,
                cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
  cudnnBackendDescriptor_t m = cdn_make(g, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  cdn_set_dtype(g, m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_DATA_FLOAT);
  cdn_finalize(g, m);
  cudnnBackendDescriptor_t o =
      cdn_make(g, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  cdn_set_desc(g, o, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  cdn_set_desc(g, o, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  cdn_set_desc(g, o, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  cdn_set_desc(g, o, CUDNN_ATTR_OPERATION_MATMUL_DESC, m);
  cdn_add_op(g, o);
}

/* ---- Plans ---------------------------------------------------------------- */

const cudnn_plan *cdn_plan_begin(cdn_graph *g, cudnn_state *st,
                                 const raf_kernel *k, const char *key) {
  for (int i = 0; i < st->nplans; i++)
    if (strcmp(st->plans[i]->key, key) == 0)
      return st->plans[i];
  cdn_begin(g, st, k);
  return NULL;
}

static void plan_free(cudnn_state *st, cudnn_plan *p) {
  for (int i = p->ndescs - 1; i >= 0; i--)
    st->lib->cudnnBackendDestroyDescriptor(p->descs[i]);
  free(p);
}

void cdn_plans_free(cudnn_state *st) {
  for (int i = 0; i < st->nplans; i++)
    plan_free(st, st->plans[i]);
  free(st->plans);
  st->plans = NULL;
  st->nplans = st->cap_plans = 0;
}

/* "conv2d of f32[2,3,8,8], f32[4,3,3,3]": the statement's op and operand
 * types, for the message of a graph no engine takes. */
static void describe(const raf_kernel *k, char *buf, size_t size) {
  size_t len = (size_t)snprintf(buf, size, "%s of ",
                                raf_op_table[k->stmt->op].name);
  for (int i = 0; i < k->nin && len < size; i++) {
    const raf_type *t = k->in[i]->type;
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                            raf_dtype_name(t->dtype));
    cdn_key_dims(buf, &len, t->rank, t->dims);
    if (len >= size)
      break;
  }
}

/* The first configuration of the heuristics' that finalises into a plan
 * within the workspace, made in g (so that it is freed with it on
 * failure); NULL when none does. */
static cudnnBackendDescriptor_t first_plan(cdn_graph *g,
                                           cudnnBackendDescriptor_t graph,
                                           int64_t *workspace) {
  const raf_cudnn_lib *lib = g->st->lib;
  cudnnBackendDescriptor_t heur =
      cdn_make(g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  cdn_set_desc(g, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  cdn_set(g, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
          &mode);
  cdn_finalize(g, heur);
  cudnnBackendDescriptor_t configs[CDN_CONFIGS];
  for (int i = 0; i < CDN_CONFIGS; i++)
    configs[i] = cdn_make(g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  if (g->status != CUDNN_STATUS_SUCCESS)
    return NULL;
  int64_t n = 0;
  cudnnStatus_t s = lib->cudnnBackendGetAttribute(
      heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      CDN_CONFIGS, &n, configs);
  if (s != CUDNN_STATUS_SUCCESS) {
    failed(g, s, "cudnnBackendGetAttribute, engine heuristics", (int)n);
    return NULL;
  }
  for (int64_t i = 0; i < n && i < CDN_CONFIGS; i++) {
    cudnnBackendDescriptor_t plan =
        cdn_make(g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (!plan)
      return NULL;
    cudnnHandle_t h = g->st->handle;
    int64_t ws = 0, got = 0;
    /* A configuration the engine cannot finalise for this graph is the
     * heuristics' to offer and ours to pass over, not an error. */
    if (lib->cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                      CUDNN_TYPE_HANDLE, 1,
                                      &h) == CUDNN_STATUS_SUCCESS &&
        lib->cudnnBackendSetAttribute(
            plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &configs[i]) == CUDNN_STATUS_SUCCESS &&
        lib->cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS &&
        lib->cudnnBackendGetAttribute(
            plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
            1, &got, &ws) == CUDNN_STATUS_SUCCESS &&
        ws <= RAF_CUDNN_WORKSPACE_BYTES) {
      *workspace = ws;
      return plan;
    }
  }
  return NULL;
}

static void graph_free(cdn_graph *g) {
  for (int i = g->ndescs - 1; i >= 0; i--)
    g->st->lib->cudnnBackendDestroyDescriptor(g->descs[i]);
  g->ndescs = 0;
}

const cudnn_plan *cdn_plan(cdn_graph *g, const char *key) {
  cudnn_state *st = g->st;
  cudnnBackendDescriptor_t graph =
      cdn_make(g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cudnnHandle_t h = st->handle;
  cdn_set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
          &h);
  cdn_set(g, graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, g->nops, g->ops);
  if (g->status == CUDNN_STATUS_SUCCESS && graph) {
    cudnnStatus_t s = st->lib->cudnnBackendFinalize(graph);
    if (s != CUDNN_STATUS_SUCCESS)
      failed(g, s, "cudnnBackendFinalize, operation graph of ops", g->nops);
  }
  int64_t workspace = 0;
  cudnnBackendDescriptor_t plan =
      g->status == CUDNN_STATUS_SUCCESS ? first_plan(g, graph, &workspace)
                                        : NULL;
  char what[256];
  cudnn_plan *p = NULL;
  if (!plan) {
    describe(g->k, what, sizeof what);
    char version[32];
    raf_cudnn_version_str(st->lib->version, version, sizeof version);
    if (g->status != CUDNN_STATUS_SUCCESS)
      raf_kernel_fail(g->k, "cudnn: cuDNN %s refused the graph of %s: %s",
                      version, what, g->failed);
    else
      raf_kernel_fail(g->k,
                      "cudnn: no engine of cuDNN %s runs %s (graph `%s`; "
                      "none of the heuristics' configurations finalises "
                      "within the %lld MiB workspace)",
                      version, what, key,
                      (long long)(RAF_CUDNN_WORKSPACE_BYTES >> 20));
    graph_free(g);
    return NULL;
  }
  if (st->nplans == st->cap_plans) {
    int cap = st->cap_plans ? 2 * st->cap_plans : 16;
    cudnn_plan **grown = realloc(st->plans, sizeof *grown * (size_t)cap);
    if (!grown)
      goto oom;
    st->plans = grown;
    st->cap_plans = cap;
  }
  p = calloc(1, sizeof *p);
  if (!p)
    goto oom;
  snprintf(p->key, sizeof p->key, "%s", key);
  p->plan = plan;
  p->workspace = workspace;
  memcpy(p->descs, g->descs, sizeof g->descs[0] * (size_t)g->ndescs);
  p->ndescs = g->ndescs;
  g->ndescs = 0;
  st->plans[st->nplans++] = p;
  return p;
oom:
  graph_free(g);
  raf_kernel_fail(g->k, "out of memory");
  return NULL;
}

void cdn_key_dims(char *key, size_t *len, int rank, const int64_t *dims) {
  for (int i = 0; i < rank && *len < CDN_KEY; i++)
    *len += (size_t)snprintf(key + *len, CDN_KEY - *len, "%s%lld",
                             i ? "," : "[", (long long)dims[i]);
  if (*len < CDN_KEY)
    *len += (size_t)snprintf(key + *len, CDN_KEY - *len, "]");
}

/* ---- Running -------------------------------------------------------------- */

raf_status cdn_execute(cudnn_state *st, const raf_kernel *k,
                       const cudnn_plan *p, int n, const int64_t *uids,
                       void *const *ptrs) {
  /* cuDNN runs in the context current on the calling thread, which may be
   * any of the executor's, on the stream its handle is given. */
  if (raf_cuda_device_make_current(st->dev) != RAF_OK)
    return RAF_ERROR;
  const raf_cudnn_lib *lib = st->lib;
  char *workspace = NULL;
  if (p->workspace > 0 && !(workspace = cdn_scratch(st, k)))
    return RAF_ERROR;
  cudnnBackendDescriptor_t pack = NULL;
  const char *what = "cudnnBackendCreateDescriptor, variant pack";
  cudnnStatus_t s = lib->cudnnBackendCreateDescriptor(
      CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
  if (s == CUDNN_STATUS_SUCCESS) {
    what = "cudnnBackendSetAttribute, variant pack";
    s = lib->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                      CUDNN_TYPE_INT64, n, uids);
  }
  if (s == CUDNN_STATUS_SUCCESS)
    s = lib->cudnnBackendSetAttribute(pack,
                                      CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, n, ptrs);
  if (s == CUDNN_STATUS_SUCCESS)
    s = lib->cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                      CUDNN_TYPE_VOID_PTR, 1, &workspace);
  if (s == CUDNN_STATUS_SUCCESS) {
    what = "cudnnBackendFinalize, variant pack";
    s = lib->cudnnBackendFinalize(pack);
  }
  if (s == CUDNN_STATUS_SUCCESS) {
    what = "cudnnSetStream";
    s = lib->cudnnSetStream(st->handle,
                            (cudaStream_t)raf_device_stream(st->dev));
  }
  if (s == CUDNN_STATUS_SUCCESS) {
    what = "cudnnBackendExecute";
    s = lib->cudnnBackendExecute(st->handle, p->plan, pack);
  }
  char last[128] = "";
  if (s != CUDNN_STATUS_SUCCESS)
    lib->cudnnGetLastErrorString(last, sizeof last);
  if (pack)
    lib->cudnnBackendDestroyDescriptor(pack);
  if (s == CUDNN_STATUS_SUCCESS)
    return RAF_OK;
  return raf_kernel_fail(k, "cudnn: %s (graph `%s`): %s%s%s", what, p->key,
                         raf_cudnn_status_text(lib, s), last[0] ? ": " : "",
                         last);
}
