/* table.c: the cpu-ref dialect's kernel table, one entry per op.
 *
 * cpu-ref implements every op (lang/dialects.def says so), so every op but
 * call and return, which the executor runs itself, has an entry; the unit
 * test test_dialects checks that none is missing.
 */
#include "runtime/cpuref/cpuref.h"
#include "runtime/dialects.h"

const raf_kernel_fn raf_cpuref_kernels[RAF_OP_COUNT] = {
    [RAF_OP_CONSTANT] = raf_cpuref_constant,
    /* every formula of lang/scalar.def */
#define UNARY(OP, f) [RAF_OP_##OP] = raf_cpuref_unary,
#define BINARY(OP, f) [RAF_OP_##OP] = raf_cpuref_binary,
#define COMPARE(OP, f) [RAF_OP_##OP] = raf_cpuref_compare,
#define TEST(OP, f) [RAF_OP_##OP] = raf_cpuref_isfinite,
#define BACKWARD(OP, f) [RAF_OP_##OP] = raf_cpuref_backward_elem,
#define NO_FORMULA(OP, why)
#include "lang/scalar.def"
#include "lang/scalar_end.h"
    [RAF_OP_WHERE] = raf_cpuref_where,
    [RAF_OP_CAST] = raf_cpuref_cast,
    /* reductions */
    [RAF_OP_SUM] = raf_cpuref_reduce,
    [RAF_OP_MEAN] = raf_cpuref_reduce,
    [RAF_OP_MAX] = raf_cpuref_reduce,
    [RAF_OP_MIN] = raf_cpuref_reduce,
    [RAF_OP_ARGMAX] = raf_cpuref_argmax,
    /* shapes */
    [RAF_OP_RESHAPE] = raf_cpuref_copy,
    [RAF_OP_TRANSPOSE] = raf_cpuref_transpose,
    [RAF_OP_BROADCAST_TO] = raf_cpuref_broadcast_to,
    [RAF_OP_SLICE] = raf_cpuref_slice,
    [RAF_OP_CONCAT] = raf_cpuref_concat,
    [RAF_OP_SPLIT] = raf_cpuref_split,
    [RAF_OP_TAKE] = raf_cpuref_take,
    /* linear algebra and layers */
    [RAF_OP_MATMUL] = raf_cpuref_matmul,
    [RAF_OP_SOFTMAX] = raf_cpuref_softmax,
    [RAF_OP_LOG_SOFTMAX] = raf_cpuref_softmax,
    [RAF_OP_LAYER_NORM] = raf_cpuref_layer_norm,
    [RAF_OP_DROPOUT] = raf_cpuref_dropout,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION] = raf_cpuref_attention,
    [RAF_OP_CONV2D] = raf_cpuref_conv2d,
    [RAF_OP_MAX_POOL2D] = raf_cpuref_pool2d,
    [RAF_OP_AVG_POOL2D] = raf_cpuref_pool2d,
    [RAF_OP_BATCH_NORM] = raf_cpuref_batch_norm,
    /* losses, autodiff, collectives */
    [RAF_OP_CROSS_ENTROPY] = raf_cpuref_cross_entropy,
    [RAF_OP_MSE_LOSS] = raf_cpuref_mse_loss,
    [RAF_OP_STOP_GRADIENT] = raf_cpuref_copy,
    [RAF_OP_WAIT] = raf_cpuref_copy,
    [RAF_OP_ALL_REDUCE] = raf_cpuref_collective,
    [RAF_OP_REDUCE_SCATTER] = raf_cpuref_collective,
    [RAF_OP_ALL_GATHER] = raf_cpuref_collective,
    [RAF_OP_ALL_SLICE] = raf_cpuref_collective,
    /* backward operators (grad.c) */
    [RAF_OP_SOFTMAX_GRAD] = raf_cpuref_softmax_grad,
    [RAF_OP_LOG_SOFTMAX_GRAD] = raf_cpuref_softmax_grad,
    [RAF_OP_LAYER_NORM_GRAD] = raf_cpuref_layer_norm_grad,
    [RAF_OP_CROSS_ENTROPY_GRAD] = raf_cpuref_cross_entropy_grad,
    [RAF_OP_TAKE_GRAD] = raf_cpuref_take_grad,
    [RAF_OP_SLICE_GRAD] = raf_cpuref_slice_grad,
    [RAF_OP_MAX_POOL2D_GRAD] = raf_cpuref_pool2d_grad,
    [RAF_OP_AVG_POOL2D_GRAD] = raf_cpuref_pool2d_grad,
    [RAF_OP_CONV2D_GRAD_INPUT] = raf_cpuref_conv2d_grad,
    [RAF_OP_CONV2D_GRAD_WEIGHT] = raf_cpuref_conv2d_grad,
    [RAF_OP_BATCH_NORM_GRAD] = raf_cpuref_batch_norm_grad,
    [RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD] = raf_cpuref_attention_grad,
};
