/* fuse_patterns.c: the table of dialect-specific fusion patterns (see
 * passes/fuse.h for the contract, docs/Fusion.md for how to add one).
 *
 * A dialect whose library can run more than one op as one kernel adds a row
 * here: a name for the `patterns=` option of the fuse pass, its dialect, a
 * priority, and a match function. Nothing is on by default: a pattern
 * claims statements the generic rules would keep apart, so it is only
 * right where the dialect's kernel will run the fused function.
 *
 * The one pattern today, `matmul-epilogue`, is cuBLASLt's: a product with
 * the bias, residual, GELU (keeping its input for the backward), GELU
 * derivative or bias gradient that cuBLASLt computes in the same call.
 * What it groups is exactly what ir/epilogue.h accepts, the same test the
 * cublas dialect's call rule makes, so that every group it makes runs as
 * one cublasLtMatmul and none falls back to its statements.
 */
#include "passes/fuse.h"
#include "ir/epilogue.h"

/* The first members of a candidate group, for raf_epilogue_match. */
typedef struct prefix {
  raf_stmt *const *m;
  int n;
} prefix;

static bool read_outside(const raf_value *v, void *arg) {
  const prefix *p = arg;
  for (const raf_use *u = v->uses; u; u = u->next) {
    bool inside = false;
    for (int i = 0; i < p->n && !inside; i++)
      inside = p->m[i] == u->user;
    if (!inside)
      return true;
  }
  return false;
}

static bool accepted(raf_stmt **members, int n) {
  prefix p = {members, n};
  return raf_epilogue_match((const raf_stmt *const *)members, n,
                            read_outside, &p, NULL);
}

/* The user of v that can continue an epilogue chain (an add, a gelu of v,
 * a gelu_grad whose gradient operand is v), when exactly one can. */
static raf_stmt *chain_user(const raf_value *v) {
  raf_stmt *found = NULL;
  for (const raf_use *u = v->uses; u; u = u->next) {
    raf_stmt *s = u->user;
    bool link = s->op == RAF_OP_ADD ||
                ((s->op == RAF_OP_GELU || s->op == RAF_OP_GELU_GRAD) &&
                 s->operands[0].value == v);
    if (!link || s == found)
      continue;
    if (found)
      return NULL;
    found = s;
  }
  return found;
}

/* The bias gradient's pair: the product mm = matmul(x, dy) {transpose_a}
 * and a sum of dy. */
static int bias_grad_pair(raf_stmt *mm, raf_stmt *sum, raf_stmt **members) {
  members[0] = mm;
  members[1] = sum;
  return accepted(members, 2) ? 2 : 0;
}

static int match_matmul_epilogue(raf_stmt *anchor, raf_stmt **members,
                                 int max) {
  enum { LONGEST = 4 }; /* the product, bias, residual or gelu */
  if (max < 2)
    return 0;
  if (anchor->op == RAF_OP_SUM) { /* the pair, met at its sum first */
    for (const raf_use *u = anchor->operands[0].value->uses; u; u = u->next)
      if (u->user->op == RAF_OP_MATMUL &&
          bias_grad_pair(u->user, anchor, members))
        return 2;
    return 0;
  }
  if (anchor->op != RAF_OP_MATMUL || anchor->nresults != 1)
    return 0;
  int n = 0;
  members[n++] = anchor;
  for (raf_stmt *cur = anchor; n < max && n < LONGEST;) {
    raf_stmt *u = chain_user(cur->results[0]);
    if (!u || u->nresults != 1)
      break;
    members[n++] = cur = u;
  }
  for (; n >= 2; n--) /* the longest chain cuBLASLt takes */
    if (accepted(members, n))
      return n;
  if (anchor->noperands == 2)
    for (const raf_use *u = anchor->operands[1].value->uses; u; u = u->next)
      if (u->user->op == RAF_OP_SUM && bias_grad_pair(anchor, u->user, members))
        return 2;
  return 0;
}

static const raf_fuse_pattern patterns[] = {
    {"matmul-epilogue", "cublas", 10, match_matmul_epilogue},
};

const raf_fuse_pattern *raf_fuse_patterns(int *count) {
  *count = (int)(sizeof patterns / sizeof patterns[0]);
  return patterns;
}
