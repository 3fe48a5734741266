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

#endif
