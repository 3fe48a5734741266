/* dialect.h: the traits of the operator dialects, the one place that says
 * whether a dialect can run a statement, the scratch it needs, the groups
 * it fuses and why a build lacks it.
 *
 * lang/dialects.def lists the dialects and the ops each implements. What
 * rows cannot say (a product's shapes, a library's workspace, a library
 * this build was configured without) each dialect says in its traits
 * record, raf_dialect_traits_<ENUM> for its row's ENUM, defined beside its
 * kernels (runtime/cuda/traits.c for cuda, cublas and nccl; docs/Dialects.md
 * lists them). The records read the IR only, never a library, so they are
 * built into the IR library: raf-opt's dispatch and raf-run's executor ask
 * the same records and get the same answers. ir/, passes/ and codegen/ ask
 * through the functions below and never name a dialect.
 */
#ifndef RAF_IR_DIALECT_H
#define RAF_IR_DIALECT_H

#include "ir/memplan.h"

/* A fusion pattern of a dialect: statements the dialect's library runs as
 * one kernel, grouped by the fuse pass when its `patterns=` option names
 * the pattern (passes/fuse.h, docs/Fusion.md). */
typedef struct raf_fuse_pattern {
  const char *name; /* the spelling in fuse's `patterns=` option */
  int priority;     /* higher runs first; ties in table order */
  /* Looks at anchor (a statement not yet claimed) and its def-use
   * neighbourhood; on a match writes the group's statements (anchor
   * included, any order) to members and returns how many (at most max),
   * else 0. Must not change the IR. */
  int (*match)(raf_stmt *anchor, raf_stmt **members, int max);
} raf_fuse_pattern;

/* Every member is set: a dialect with nothing to add to its rows answers
 * with the defaults below (the unit test test_dialects checks it). */
typedef struct raf_dialect_traits {
  raf_dialect dialect; /* its row */
  /* Whether d runs statement s (not a call) alone: its rows
   * (raf_dialect_implements) and whatever else it needs of the shapes and
   * attributes. */
  bool (*runs_stmt)(raf_dialect d, const raf_stmt *s);
  /* Whether d runs a call of callee as one kernel: callee is `{fused}`,
   * d has a FUSED row for each of its statements but return, and the
   * structure is one d's compiler takes. */
  bool (*runs_call)(raf_dialect d, const raf_func *callee);
  /* The scratch s (bound to d) needs beside its operands and results. */
  raf_scratch (*scratch)(const raf_stmt *s);
  /* Its fusion patterns, npatterns of them (patterns may be NULL when 0). */
  const raf_fuse_pattern *patterns;
  int npatterns;
  /* Why this build cannot run d (a library not found when raf was
   * configured), or NULL when it can. */
  const char *(*unavailable)(void);
  /* For an op no dialect of d's device implements: why, when d knows (a
   * dialect to come, for dispatch's error), else NULL. */
  const char *(*lacks)(raf_opcode op);
} raf_dialect_traits;

/* The record of d. */
const raf_dialect_traits *raf_dialect_traits_of(raf_dialect d);

/* The defaults: the rows decide, no scratch, always available. */
bool raf_dialect_rows_run_stmt(raf_dialect d, const raf_stmt *s);
bool raf_dialect_rows_run_call(raf_dialect d, const raf_func *callee);
raf_scratch raf_dialect_no_scratch(const raf_stmt *s);
const char *raf_dialect_available(void);
const char *raf_dialect_lacks_nothing(raf_opcode op);

/* Whether d runs s: a call by runs_call of its callee, any other
 * statement by runs_stmt (the question dispatch asks, and the executor
 * again of the marks it is given). */
bool raf_dialect_runs(raf_dialect d, const raf_stmt *s);
/* Why this build cannot run d, or NULL when it can. */
const char *raf_dialect_unavailable(raf_dialect d);
/* The dialect whose fusion pattern is named name (len bytes), and the
 * pattern in *out; RAF_DIALECT_COUNT when no dialect has one. */
raf_dialect raf_dialect_find_pattern(const char *name, size_t len,
                                     const raf_fuse_pattern **out);

#endif
