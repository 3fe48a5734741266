/* fuse.h: the fusion pass's extension point for dialect-specific patterns.
 *
 * The generic rules of passes/fuse.c never put a matmul, a convolution or
 * an opaque op in a group: what a library kernel can absorb (cuBLASLt's
 * bias + GELU epilogue, a convolution + bias + ReLU) depends on the
 * library. A dialect that has such a kernel lists a pattern in its traits
 * (ir/dialect.h); `raf-opt --fuse="patterns=NAME,..."`
 * turns it on. Patterns run before the generic rules, highest priority
 * first, over the statements in order; the group a pattern claims is
 * sealed (the generic rules neither grow it nor merge into it) and becomes
 * a fused function like any other.
 *
 * A pattern only proposes: the pass refuses a match that claims a
 * statement already claimed, a `call`, `return` or `constant`, a statement
 * with several results, has fewer than two statements, or would make the
 * program cyclic (a path from the group out and back in). Constants the
 * group uses are copied in by the same rule as for generic groups.
 */
#ifndef RAF_PASSES_FUSE_H
#define RAF_PASSES_FUSE_H

#include "ir/dialect.h"

/* The patterns are the dialects' (raf_fuse_pattern, the patterns of each
 * dialect's traits in ir/dialect.h). */

#endif
