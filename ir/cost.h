/* cost.h: the cost model: how much arithmetic a statement does and how
 * many bytes it moves, before anything runs.
 *
 * Figures come from the op table's cost column (floating-point operations
 * per element, lang/ops.def) and, for the ops whose work is not per
 * element (matmul, conv2d, attention and their gradients: cost -1), from
 * their shapes. A call costs what its callee's statements cost; the bytes
 * a call of a {fused} function moves are its operands and results only,
 * since the kernel keeps the rest in registers. The remat pass uses the
 * model today; fusion, dispatch and the GPU can use the same one.
 */
#ifndef RAF_IR_COST_H
#define RAF_IR_COST_H

#include "ir/ir.h"

typedef struct raf_cost {
  double flops; /* floating-point operations (a multiply-add is 2) */
  double bytes; /* bytes read and written: operands and results */
} raf_cost;

/* The cost of running s once. s must be verified (its types known). */
raf_cost raf_stmt_cost(const raf_stmt *s);
/* The cost of one call of f: the sum over its statements. */
raf_cost raf_func_cost(const raf_func *f);

#endif
