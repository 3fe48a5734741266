/* fuse.h: the fusion pass's extension point for dialect-specific patterns.
 *
 * The generic rules of passes/fuse.c never put a matmul, a convolution or
 * an opaque op in a group: what a library kernel can absorb (cuBLASLt's
 * bias + GELU epilogue, a convolution + bias + ReLU) depends on the
 * library. A dialect that has such a kernel registers a pattern in the
 * table of passes/fuse_patterns.c; `raf-opt --fuse="patterns=NAME,..."`
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

#include "ir/ir.h"

typedef struct raf_fuse_pattern {
  const char *name;    /* the spelling in fuse's `patterns=` option */
  const char *dialect; /* the dialect whose kernel implements the group */
  int priority;        /* higher runs first; ties in table order */
  /* Looks at anchor (a statement not yet claimed) and its def-use
   * neighbourhood; on a match writes the group's statements (anchor
   * included, any order) to members and returns how many (at most max),
   * else 0. Must not change the IR. */
  int (*match)(raf_stmt *anchor, raf_stmt **members, int max);
} raf_fuse_pattern;

/* The registered patterns (passes/fuse_patterns.c); *count gets their
 * number. */
const raf_fuse_pattern *raf_fuse_patterns(int *count);

#endif
