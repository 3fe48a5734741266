/* cudnn_internal.h: what the cudnn dialect's files share: the executor's
 * state and the graph builder (cudnn_graph.c), over which cudnn.c
 * (convolutions, pooling, batch_norm) and cudnn_attention.c build their
 * graphs.
 *
 * Every op is one or a few graphs of cuDNN's backend API: tensors,
 * operations, an operation graph, then engine configurations from the
 * heuristics (mode A), the first that finalises into an execution plan
 * within the workspace (RAF_CUDNN_WORKSPACE_BYTES) kept. Plans are cached
 * in the state by a key string that names the graph's kind, shapes, dtypes
 * and attributes, so a graph is described to cuDNN once per shape; a run
 * only builds a variant pack (the tensors' unique ids and device
 * pointers) and executes the plan on the device's stream.
 *
 * A kernel's pattern:
 *
 *   char key[CDN_KEY];                     the graph's identity
 *   snprintf(key, ..., "conv_fwd %s ...", ...);
 *   cdn_graph g;
 *   const cudnn_plan *p = cdn_plan_begin(&g, st, k, key);
 *   if (!p) {
 *     ... cdn_tensor / cdn_make / cdn_set* / cdn_add_op ...
 *     p = cdn_plan(&g, key);              reports, frees g, NULL on failure
 *   }
 *   int64_t uids[] = {X, W, Y};
 *   void *ptrs[] = {x, w, y};
 *   return cdn_execute(st, k, p, 3, uids, ptrs);
 */
#ifndef RAF_CUDA_CUDNN_INTERNAL_H
#define RAF_CUDA_CUDNN_INTERNAL_H

#include "runtime/cuda/cudnn_lib.h"
#include "runtime/cuda/traits.h"
#include "runtime/kernel.h"

enum {
  CDN_KEY = 384,      /* a plan key's room */
  CDN_MAX_DESCS = 96, /* descriptors of one graph, its plan's included */
  CDN_MAX_OPS = 24,   /* operations of one graph */
};

/* One execution plan, with every descriptor it was made from (cuDNN's
 * plans refer to their graph and engine configuration, so all live as
 * long as the plan). */
typedef struct cudnn_plan {
  char key[CDN_KEY];
  cudnnBackendDescriptor_t plan;
  int64_t workspace; /* bytes, at most RAF_CUDNN_WORKSPACE_BYTES */
  cudnnBackendDescriptor_t descs[CDN_MAX_DESCS];
  int ndescs;
} cudnn_plan;

/* The dialect's state for one executor (cudnn.c owns it). */
typedef struct cudnn_state {
  raf_device *dev;
  raf_ctx *ctx;
  raf_cudnn_lib *lib;
  cudnnHandle_t handle;
  /* Device memory for statements without a planned scratch: the largest
   * scratch (raf_cudnn_scratch_of) among them; NULL when all have one. */
  void *scratch;
  cudnn_plan **plans;
  int nplans, cap_plans;
} cudnn_state;

/* The state of the executor k runs on; NULL when the dialect was not
 * prepared. */
cudnn_state *cudnn_state_of(const raf_kernel *k);

/* k's scratch: the planned one, else the state's; NULL (reported) when it
 * has neither. Parts are at raf_cudnn_scratch_of(k->stmt)'s offsets. */
char *cdn_scratch(cudnn_state *st, const raf_kernel *k);

/* ---- Building a graph (cudnn_graph.c) ------------------------------------ */

/* A graph under construction: the descriptors made for it, and the first
 * failure, after which every builder call does nothing, so that a kernel
 * builds a whole graph and checks once, at cdn_plan. */
typedef struct cdn_graph {
  cudnn_state *st;
  const raf_kernel *k;
  cudnnBackendDescriptor_t descs[CDN_MAX_DESCS];
  int ndescs;
  cudnnBackendDescriptor_t ops[CDN_MAX_OPS];
  int nops;
  cudnnStatus_t status; /* CUDNN_STATUS_SUCCESS until a call fails */
  char failed[160];     /* which call, on which descriptor, and cuDNN's
                           last error message */
} cdn_graph;

void cdn_begin(cdn_graph *g, cudnn_state *st, const raf_kernel *k);

/* cuDNN's data type of dt (f32, bf16, f16; int8 and bool for the pool's
 * index and the attention's mask). */
cudnnDataType_t cdn_dtype(raf_dtype dt);

/* Tensor flags. */
enum {
  CDN_VIRTUAL = 1,  /* lives inside the graph only */
  CDN_BY_VALUE = 2, /* a scalar passed by a host pointer in the pack */
};

/* A finalised tensor descriptor: uid (unique in the graph), rank dims and
 * strides (elements; NULL for packed row-major), 16-byte alignment. */
cudnnBackendDescriptor_t cdn_tensor(cdn_graph *g, int64_t uid,
                                    cudnnDataType_t type, int rank,
                                    const int64_t *dims,
                                    const int64_t *strides, unsigned flags);

/* A new descriptor of type, owned by the graph (not finalised). */
cudnnBackendDescriptor_t cdn_make(cdn_graph *g,
                                  cudnnBackendDescriptorType_t type);
/* cudnnBackendSetAttribute of n values (what names the attribute in the
 * failure's message). */
void cdn_set(cdn_graph *g, cudnnBackendDescriptor_t d,
             cudnnBackendAttributeName_t name,
             cudnnBackendAttributeType_t type, int64_t n, const void *values);
/* Shorthands for one value. */
void cdn_set_desc(cdn_graph *g, cudnnBackendDescriptor_t d,
                  cudnnBackendAttributeName_t name,
                  cudnnBackendDescriptor_t value);
void cdn_set_int64(cdn_graph *g, cudnnBackendDescriptor_t d,
                   cudnnBackendAttributeName_t name, int64_t value);
void cdn_set_float(cdn_graph *g, cudnnBackendDescriptor_t d,
                   cudnnBackendAttributeName_t name, float value);
void cdn_set_dtype(cdn_graph *g, cudnnBackendDescriptor_t d,
                   cudnnBackendAttributeName_t name, cudnnDataType_t value);
void cdn_finalize(cdn_graph *g, cudnnBackendDescriptor_t d);
/* Finalises operation d and adds it to the graph. */
void cdn_add_op(cdn_graph *g, cudnnBackendDescriptor_t d);

/* Common operations, added to the graph. b and t may be NULL (unary
 * modes; t is BINARY_SELECT's condition: y = t ? x : b); axis is
 * GEN_INDEX's, ignored by the other modes. */
void cdn_pointwise(cdn_graph *g, cudnnPointwiseMode_t mode,
                   cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                   cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y,
                   int64_t axis);
/* y = the sum (ADD) or maximum (MAX) of x over the dims where y has 1. */
void cdn_reduction(cdn_graph *g, cudnnReduceTensorOp_t op,
                   cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y);
/* c [.., M, N] = a [.., M, K] b [.., K, N], f32 sums. */
void cdn_matmul(cdn_graph *g, cudnnBackendDescriptor_t a,
                cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c);

/* Makes the operation graph, asks the heuristics (mode A) for engine
 * configurations and keeps the first that finalises into a plan within the
 * workspace, cached in the state under key (which must not be cached yet).
 * The plan takes the graph's descriptors. On failure reports at k's
 * statement ("cudnn: no engine of cuDNN 9.19.0 runs conv2d of f32[..],
 * f32[..] (graph conv_fwd ...)", or the failing call with cuDNN's message)
 * and returns NULL; g is finished either way. */
const cudnn_plan *cdn_plan(cdn_graph *g, const char *key);

/* The cached plan of key, or NULL after beginning g (cdn_begin) to build
 * it. */
const cudnn_plan *cdn_plan_begin(cdn_graph *g, cudnn_state *st,
                                 const raf_kernel *k, const char *key);

/* Runs plan p on the device's stream with the n tensors uids[i] at ptrs[i]
 * (device pointers; host pointers for by-value tensors) and k's scratch's
 * workspace. */
raf_status cdn_execute(cudnn_state *st, const raf_kernel *k,
                       const cudnn_plan *p, int n, const int64_t *uids,
                       void *const *ptrs);

/* Appends "[2,3,8,8]" of rank dims to a key at *len (bounded by CDN_KEY). */
void cdn_key_dims(char *key, size_t *len, int rank, const int64_t *dims);

/* Frees every plan of the state (at release). */
void cdn_plans_free(cudnn_state *st);

/* ---- The attention kernels (cudnn_attention.c) --------------------------- */

raf_status cudnn_attention(const raf_kernel *k);
raf_status cudnn_attention_grad(const raf_kernel *k);

#endif
