/* kernel.h: what a kernel is, for every dialect of runtime/.
 *
 * A kernel computes the results of one statement from its operands. The
 * executor hands it the statement (for attributes and location), the
 * operand tensors and result tensors already allocated with the result
 * types; the kernel fills the results and returns RAF_OK, or reports a
 * located error with raf_kernel_fail. Kernels never allocate results, keep
 * no state, and never print.
 *
 * Parallel work goes through raf_kernel_parallel, which splits [0, n) into
 * chunks of a fixed grain: a chunk's work never depends on the number of
 * threads, so results are bit-identical at every thread count (a reduction
 * combines per-chunk partials in chunk order).
 */
#ifndef RAF_KERNEL_H
#define RAF_KERNEL_H

#include "ir/ir.h"
#include "runtime/device.h"

/* A tensor: a buffer holding type->numel elements in C order, in the
 * memory of `device`: the host's (zero, the default), or the executor's
 * device's, which only that device's kernels and copies may touch
 * (raf_exec_read and friends, exec.h). */
typedef struct raf_tensor {
  raf_type *type;
  void *data;
  size_t nbytes;
  raf_device_kind device;
} raf_tensor;

typedef struct raf_exec raf_exec;

typedef struct raf_kernel {
  raf_exec *ex;
  const raf_stmt *stmt;
  int nin, nout;
  raf_tensor *const *in;
  raf_tensor *const *out;
  /* What the dialect's bind hook prepared for this statement (dialects.h),
   * or NULL. */
  const void *bound;
  /* The scratch the memory plan placed for the statement
   * (raf_mem_scratch_of's size and parts, ir/memplan.h), in the arena on
   * the executor's device; NULL when none was planned. */
  void *scratch;
} raf_kernel;

typedef raf_status (*raf_kernel_fn)(const raf_kernel *k);

/* Writes the index of flat element i of type t, "[1,0]" (empty for a
 * scalar), into buf: where a kernel's error points in a tensor. */
void raf_index_str(const raf_type *t, int64_t i, char *buf, size_t size);

/* Reports "OP: message" at the statement and returns RAF_ERROR. */
raf_status raf_kernel_fail(const raf_kernel *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Calls body(data, begin, end) over chunks of [0, n) of `grain` elements
 * (the last one shorter), on the executor's threads; runs inline when n is
 * at most grain. */
typedef void (*raf_range_fn)(void *data, int64_t begin, int64_t end);
void raf_kernel_parallel(const raf_kernel *k, int64_t n, int64_t grain,
                         raf_range_fn body, void *data);

/* The kernel of a dialect for an op, or NULL (runtime/dialect.c). */
raf_kernel_fn raf_dialect_kernel(raf_dialect d, raf_opcode op);

/* ---- Element access (runtime/elem.c) ------------------------------------
 * Element i of a buffer of dtype dt, converted. Floats convert to integers
 * by truncation toward zero (C and NumPy); to bool by != 0. Integers wrap
 * to their width on store. */
double raf_elem_get_f64(raf_dtype dt, const void *p, int64_t i);
void raf_elem_set_f64(raf_dtype dt, void *p, int64_t i, double v);
int64_t raf_elem_get_i64(raf_dtype dt, const void *p, int64_t i);
void raf_elem_set_i64(raf_dtype dt, void *p, int64_t i, int64_t v);
/* n elements of src (dtype from) into dst (dtype to), converted as cast
 * does; f16 and bf16 round to nearest even. */
void raf_elem_convert(raf_dtype to, void *dst, raf_dtype from,
                      const void *src, int64_t n);

/* Strides (in elements) that read operand type `t` broadcast to `out`'s
 * shape (NumPy rules; broadcast dims get stride 0), right-aligned to out's
 * rank: strides[0..out->rank). */
void raf_broadcast_strides(const raf_type *t, const raf_type *out,
                           int64_t *strides);
/* C-order strides of a type. */
void raf_contiguous_strides(const raf_type *t, int64_t *strides);

#endif
