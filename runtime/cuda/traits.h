/* traits.h: facts of the cuda folder's dialects that their traits
 * (runtime/cuda/traits.c) and their kernels share. */
#ifndef RAF_CUDA_TRAITS_H
#define RAF_CUDA_TRAITS_H

#include "ir/dialect.h"

/* The cuBLASLt workspace of each cublas kernel: 32 MiB, what llm.c gives
 * it (Hopper's fastest kernels want it). A cublas statement's scratch
 * starts with it, so that every product finds it at the scratch's start;
 * it must be 256-byte aligned (RAF_MEM_SCRATCH_ALIGN). */
#define RAF_CUBLAS_WORKSPACE_BYTES ((int64_t)32 << 20)

/* The cuDNN workspace of each cudnn kernel: 64 MiB, the most an engine's
 * plan may ask for (plans that want more are passed over). A cudnn
 * statement's scratch starts with it, 256-byte aligned as every cuDNN
 * workspace must be. */
#define RAF_CUDNN_WORKSPACE_BYTES ((int64_t)64 << 20)

/* The parts of a cudnn statement's scratch after the workspace: what a
 * forward keeps for its gradient in cuDNN's graphs, and what a gradient
 * recomputes, since raf's gradient ops take the forward's operands only
 * (docs/Dialects.md). */
typedef enum raf_cudnn_part {
  RAF_CUDNN_Y,        /* max_pool2d_grad: the pooled x; batch_norm_grad: y */
  RAF_CUDNN_INDEX,    /* max_pool2d_grad: each window's pick (int8) */
  RAF_CUDNN_MEAN,     /* batch_norm: the batch mean [C] (f32) */
  RAF_CUDNN_INV_VAR,  /* batch_norm: 1 / sqrt(var + eps) [C] (f32) */
  RAF_CUDNN_RUN_MEAN, /* batch_norm_grad: the rerun's running mean [C] */
  RAF_CUDNN_RUN_VAR,  /* ... and variance [C], unused */
  RAF_CUDNN_STATS,    /* attention: each row's logsumexp [BH, L] (f32) */
  RAF_CUDNN_O,        /* attention's gradient: the output again [BH, L, Ev] */
  RAF_CUDNN_DSUM,     /* ... rowsum(dy * o) [BH, L] (f32) */
  RAF_CUDNN_P,        /* ... the probabilities [BH, L, S] (q's dtype) */
  RAF_CUDNN_DS,       /* ... the scores' gradient [BH, L, S] (q's dtype) */
  RAF_CUDNN_PARTS
} raf_cudnn_part;

typedef struct raf_cudnn_scratch {
  int64_t bytes;                  /* the whole, workspace first */
  int64_t part[RAF_CUDNN_PARTS];  /* byte offsets; -1 where s has none */
} raf_cudnn_scratch;

/* A fused function of cudnn's `conv-bias-relu` form: y = conv2d(x, w) +
 * bias, then relu when it follows, with bias per channel (f32[1, C, 1, 1]
 * or [C, 1, 1] against y [N, C, H, W]), x, w and bias arguments and y its
 * one result: one graph for cuDNN's runtime fusion engines. */
typedef struct raf_conv_bias_relu {
  const raf_stmt *conv, *add, *relu; /* relu NULL when absent */
  int x, w, bias;                    /* their argument indices */
} raf_conv_bias_relu;

/* Whether f has that form (and its parts in *out, when not NULL). */
bool raf_cudnn_conv_bias_relu(const raf_func *f, raf_conv_bias_relu *out);

/* The scratch of cudnn statement s: its traits' answer (traits.c) and
 * where its kernel finds each part. */
raf_cudnn_scratch raf_cudnn_scratch_of(const raf_stmt *s);

#endif
