/* cpuref.h: the cpu-ref dialect's kernels, shared by its files.
 *
 * cpu-ref is the reference: a kernel for every op of lang/ops.def in every
 * dtype the op admits, written to be clearly right before fast. It computes
 * in a working type per storage type: double for f64, float for f32, f16
 * and bf16 (stored rounded to nearest even), int64 for the integers and
 * bool (wrapped to the storage width). The table in table.c maps each op to
 * one of these functions; families of ops share a function that switches on
 * the statement's op.
 */
#ifndef RAF_CPUREF_H
#define RAF_CPUREF_H

#include "runtime/kernel.h"

/* The working dtype of a storage dtype: RAF_F64, RAF_F32 or RAF_I64. */
raf_dtype raf_cpuref_work_dtype(raf_dtype dt);

/* Elements [begin, begin + n) of the output of shape `out`, read from x
 * broadcast to that shape, converted into dst as dtype `work`. */
void raf_cpuref_gather(const raf_tensor *x, const raf_type *out,
                       int64_t begin, int64_t n, raf_dtype work, void *dst);

/* common.c */
/* Items per parallel chunk so that a chunk makes about chunk_work element
 * visits (at least one item). */
int64_t raf_cpuref_grain(int64_t chunk_work, int64_t work_per_item);
/* n elements of src (dtype from) into dst (dtype to), in parallel chunks. */
void raf_cpuref_convert(const raf_kernel *k, raf_dtype to, void *dst,
                        raf_dtype from, const void *src, int64_t n);
/* x's elements as a contiguous array of dtype work: x's own data when it
 * already is, else a new converted buffer, also stored in *owned for the
 * caller to free (out of memory is reported at the statement). */
raf_status raf_cpuref_working_copy(const raf_kernel *k, const raf_tensor *x,
                                   raf_dtype work, const void **out,
                                   void **owned);

/* elementwise.c */
raf_status raf_cpuref_unary(const raf_kernel *k);
raf_status raf_cpuref_binary(const raf_kernel *k);
raf_status raf_cpuref_compare(const raf_kernel *k);
raf_status raf_cpuref_isfinite(const raf_kernel *k);
/* gelu_grad and every BACKWARD row of lang/scalar.def */
raf_status raf_cpuref_backward_elem(const raf_kernel *k);
raf_status raf_cpuref_where(const raf_kernel *k);
raf_status raf_cpuref_cast(const raf_kernel *k);
raf_status raf_cpuref_copy(const raf_kernel *k); /* stop_gradient, reshape */
raf_status raf_cpuref_constant(const raf_kernel *k);

/* reduce.c */
raf_status raf_cpuref_reduce(const raf_kernel *k); /* sum mean max min */
raf_status raf_cpuref_argmax(const raf_kernel *k);
raf_status raf_cpuref_softmax(const raf_kernel *k); /* and log_softmax */
raf_status raf_cpuref_layer_norm(const raf_kernel *k);

/* shape.c */
raf_status raf_cpuref_transpose(const raf_kernel *k);
raf_status raf_cpuref_broadcast_to(const raf_kernel *k);
raf_status raf_cpuref_slice(const raf_kernel *k);
raf_status raf_cpuref_concat(const raf_kernel *k);
raf_status raf_cpuref_split(const raf_kernel *k);
raf_status raf_cpuref_take(const raf_kernel *k);

/* linalg.c */
raf_status raf_cpuref_matmul(const raf_kernel *k);
raf_status raf_cpuref_attention(const raf_kernel *k);

/* nn.c */
raf_status raf_cpuref_dropout(const raf_kernel *k);
raf_status raf_cpuref_conv2d(const raf_kernel *k);
raf_status raf_cpuref_pool2d(const raf_kernel *k); /* max and avg */
raf_status raf_cpuref_batch_norm(const raf_kernel *k);

/* loss.c */
raf_status raf_cpuref_cross_entropy(const raf_kernel *k);
raf_status raf_cpuref_mse_loss(const raf_kernel *k);
raf_status raf_cpuref_collective(const raf_kernel *k);

/* grad.c: the backward operators of the autodiff pass */
raf_status raf_cpuref_softmax_grad(const raf_kernel *k); /* and log_softmax */
raf_status raf_cpuref_layer_norm_grad(const raf_kernel *k);
raf_status raf_cpuref_cross_entropy_grad(const raf_kernel *k);
raf_status raf_cpuref_take_grad(const raf_kernel *k);
raf_status raf_cpuref_slice_grad(const raf_kernel *k);
raf_status raf_cpuref_pool2d_grad(const raf_kernel *k); /* max and avg */
raf_status raf_cpuref_conv2d_grad(const raf_kernel *k); /* input, weight */
raf_status raf_cpuref_batch_norm_grad(const raf_kernel *k);
raf_status raf_cpuref_attention_grad(const raf_kernel *k);

#endif
