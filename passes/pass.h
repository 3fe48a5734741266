/* pass.h: what a pass is, for the files of passes/.
 *
 * A pass is a function from a module to the same module, changed in place,
 * that reports its errors as diagnostics and keeps no state between runs
 * (docs/Design.md, principle 2). Its options are a schema of attributes, parsed
 * from "key=value" text by the pass manager. Each pass is a row of
 * passes/passes.def and a file of its own.
 */
#ifndef RAF_PASS_H
#define RAF_PASS_H

#include "ir/ir.h"

typedef struct raf_pass_args {
  raf_ctx *ctx;
  raf_attrs options; /* as given; absent ones take the schema default */
  const raf_attr_spec *specs;
  int nspecs;
} raf_pass_args;

typedef raf_status (*raf_pass_fn)(raf_module *m, const raf_pass_args *args);

/* An option's value: the one given, else the default. */
int64_t raf_pass_opt_int(const raf_pass_args *a, const char *name);
double raf_pass_opt_float(const raf_pass_args *a, const char *name);
bool raf_pass_opt_bool(const raf_pass_args *a, const char *name);
const char *raf_pass_opt_str(const raf_pass_args *a, const char *name);
/* SIZE options (remat's budget, shard's bucket): a number of bytes with an
 * optional K, M or G (powers of 1024); false when s is not one. */
bool raf_pass_parse_size(const char *s, int64_t *out);

/* Erases every statement of f none of whose results is used (never the
 * return), in one backward walk; returns how many went. Defined in dce.c and
 * shared by the passes that leave dead statements behind. */
size_t raf_erase_dead(raf_func *f);

/* The memory plan's own placement, for the passes that reason about the
 * peak it will have (plan_memory.c). raf_plan_memory_func plans f alone,
 * as the plan-memory pass does (its callees' plans, when they have them,
 * count in raf_mem_stats_of); raf_plan_memory_clear removes a plan's
 * attributes from f; raf_plan_memory_padded is the bytes a buffer of
 * `bytes` takes in an arena. */
raf_status raf_plan_memory_func(raf_module *m, raf_func *f, bool inplace,
                                bool donation);
void raf_plan_memory_clear(raf_module *m, raf_func *f);
int64_t raf_plan_memory_padded(int64_t bytes);
/* Whether result r of s may overwrite operand i (in place, when s is that
 * operand's last reader), as the plan decides it: by s's dispatch mark in
 * a dispatched module (raf_mem_dispatched), else by the estimate of
 * raf_mem_call_compiled_estimate. */
bool raf_plan_memory_may_overwrite(const raf_stmt *s, int r, int i,
                                   bool dispatched);

#define PASS(id, ...) \
  raf_status raf_pass_##id(raf_module *m, const raf_pass_args *args);
#include "passes/passes.def"
#undef PASS

#endif
