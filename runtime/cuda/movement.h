/* movement.h: the cuda dialect's hand-written data movement kernels
 * (movement.c, on kernels.cu's PTX); the descriptors they launch with
 * are kernels.h's.
 */
#ifndef RAF_CUDA_MOVEMENT_H
#define RAF_CUDA_MOVEMENT_H

#include "runtime/cuda/kernels.h"
#include "runtime/cuda/module.h"
#include "runtime/kernel.h"

/* The kernels of the ops (runtime/cuda/cuda_dialect.c's table). */
raf_status raf_cuda_transpose(const raf_kernel *k);
raf_status raf_cuda_concat(const raf_kernel *k);
raf_status raf_cuda_split(const raf_kernel *k);
raf_status raf_cuda_slice(const raf_kernel *k);
raf_status raf_cuda_slice_grad(const raf_kernel *k);
raf_status raf_cuda_take(const raf_kernel *k);
raf_status raf_cuda_take_grad(const raf_kernel *k);
raf_status raf_cuda_argmax(const raf_kernel *k);
raf_status raf_cuda_layer_norm_grad(const raf_kernel *k);
raf_status raf_cuda_dropout(const raf_kernel *k);

/* The module of kernels.cu the cuda dialect loaded for k's executor
 * (owned by the dialect's state), or NULL (cuda_dialect.c). */
raf_cuda_module *raf_cuda_hand_module(const raf_kernel *k);

#endif
