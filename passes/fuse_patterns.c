/* fuse_patterns.c: the table of dialect-specific fusion patterns (see
 * passes/fuse.h for the contract, docs/Fusion.md for how to add one).
 *
 * A dialect whose library can run more than one op as one kernel adds a row
 * here: a name for the `patterns=` option of the fuse pass, its dialect, a
 * priority, and a match function. Nothing is on by default: a pattern
 * claims statements the generic rules would keep apart, so it is only
 * right where the dialect's kernel will run the fused function.
 *
 * The one pattern today, `matmul-epilogue`, is the shape cuBLASLt's
 * epilogues (and oneDNN's post-ops) take: a matmul or conv2d followed by
 * the chain of elementwise ops that each read the previous one as its only
 * user, over the same number of elements (bias add, then an activation),
 * at most 4 ops long. It serves as the example, and the tests use it to
 * check the extension point end to end.
 */
#include "passes/fuse.h"

/* The one user of v, or NULL when it has none or several. */
static raf_stmt *sole_user(const raf_value *v) {
  if (!v->uses || v->uses->next)
    return NULL;
  return v->uses->user;
}

static bool is_pointwise(const raf_stmt *s) {
  raf_fusion_class c = raf_op_table[s->op].fusion;
  return s->nresults == 1 &&
         (c == RAF_FUSE_ELEMWISE || c == RAF_FUSE_BROADCAST) &&
         s->op != RAF_OP_CONSTANT;
}

static int match_matmul_epilogue(raf_stmt *anchor, raf_stmt **members,
                                 int max) {
  if ((anchor->op != RAF_OP_MATMUL && anchor->op != RAF_OP_CONV2D) ||
      anchor->nresults != 1 || max < 2)
    return 0;
  int64_t numel = anchor->results[0]->type->numel;
  int n = 0;
  members[n++] = anchor;
  for (raf_stmt *cur = anchor; n < max && n < 5;) {
    raf_stmt *u = sole_user(cur->results[0]);
    if (!u || !is_pointwise(u) || u->results[0]->type->numel != numel)
      break;
    members[n++] = cur = u;
  }
  return n >= 2 ? n : 0;
}

static const raf_fuse_pattern patterns[] = {
    {"matmul-epilogue", "cublaslt", 10, match_matmul_epilogue},
};

const raf_fuse_pattern *raf_fuse_patterns(int *count) {
  *count = (int)(sizeof patterns / sizeof patterns[0]);
  return patterns;
}
