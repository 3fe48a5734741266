/* infer_internal.h: what the shape functions of ir/infer.c and
 * ir/infer_nn.c share: building results, admitting operands, reading
 * attributes, and the located messages they fail with (ir/infer.c's essay
 * states their conventions). Internal to those two files.
 *
 * A shape function of an op is named infer_OPNAME (lang/ops.def's infer
 * column); the helpers here are the other infer_ names.
 */
#ifndef RAF_IR_INFER_INTERNAL_H
#define RAF_IR_INFER_INTERNAL_H

#include "ir/ir.h"

#include <stdbool.h>
#include <stdint.h>

#define LL(x) ((long long)(x))
#define OPND(i) (in->operands[i])

/* A spelling returned by value: in C11 it lives until the end of the full
 * expression, so several can be passed to one raf_infer_fail call. */
typedef struct text {
  char s[192]; /* the longest type, bf16 with 8 twenty-digit dims, fits */
} text;

#define TY(t) (infer_type_text(t).s)
#define INTS(v, n) (infer_ints_text((v), (n)).s)

__attribute__((format(printf, 3, 4)))
raf_status infer_operand_fail(raf_infer *in, int at, const char *fmt, ...);
__attribute__((format(printf, 4, 5)))
raf_status infer_attr_fail(raf_infer *in, const char *name, bool types,
                           const char *fmt, ...);
text infer_type_text(const raf_type *t);
text infer_ints_text(const int64_t *v, int n);
bool infer_mul_ok(int64_t a, int64_t b, int64_t *out);
raf_status infer_check_rank(raf_infer *in, int64_t rank);
raf_status infer_too_large(raf_infer *in);
raf_status infer_set_result(raf_infer *in, int i, raf_dtype dt, int rank,
                            const int64_t *dims);
raf_status infer_admit(raf_infer *in, int i);
raf_status infer_admit_all(raf_infer *in);
raf_status infer_same_dtype(raf_infer *in, int i, int j);
raf_status infer_integer_operand(raf_infer *in, int i, const char *what);
raf_status infer_need_rank(raf_infer *in, int i, const char *what, int rank,
                           bool at_least);
raf_status infer_need_shape(raf_infer *in, int i, const char *what, int rank,
                            const int64_t *dims);
raf_status infer_normalize_axis(raf_infer *in, const char *attr, int64_t axis,
                                int rank, int *out);
bool infer_attr(const raf_infer *in, const char *name, raf_attr_value *v);
raf_status infer_need(raf_infer *in, const char *name, raf_attr_value *v);
int64_t infer_attr_int(const raf_infer *in, const char *name);
double infer_attr_float(const raf_infer *in, const char *name);
bool infer_attr_bool(const raf_infer *in, const char *name);
const char *infer_attr_str(const raf_infer *in, const char *name);
raf_status infer_check_ints(raf_infer *in, const char *name,
                            const raf_attr_value *v, int len, int64_t min);
bool infer_broadcast_into(int *rank, int64_t *dims, int r,
                          const int64_t *d);
int64_t infer_slice_len(int64_t dim, int64_t b, int64_t e, int64_t step);
raf_status infer_positive(raf_infer *in, const char *name, double x);

#endif
