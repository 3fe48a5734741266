/* dialect.c: the table of the dialects' traits records (ir/dialect.h),
 * one per row of lang/dialects.def, and the questions asked of them. */
#include "ir/dialect.h"

#include <string.h>

#define DIALECT(e, name, device, priority, every_op, inplace)                  \
  extern const raf_dialect_traits raf_dialect_traits_##e;
#define IMPL(d, op, dtypes)
#define FUSED(d, op, dtypes)
#include "lang/dialects.def"
#undef DIALECT

static const raf_dialect_traits *const traits[RAF_DIALECT_COUNT] = {
#define DIALECT(e, name, device, priority, every_op, inplace)                  \
  &raf_dialect_traits_##e,
#include "lang/dialects.def"
#undef FUSED
#undef IMPL
#undef DIALECT
};

const raf_dialect_traits *raf_dialect_traits_of(raf_dialect d) {
  return traits[d];
}

bool raf_dialect_rows_run_stmt(raf_dialect d, const raf_stmt *s) {
  return raf_dialect_implements(d, s->op, raf_stmt_key_dtype(s));
}

bool raf_dialect_rows_run_call(raf_dialect d, const raf_func *callee) {
  const raf_attr *fused =
      callee ? raf_attrs_find(&callee->attrs, "fused") : NULL;
  if (!fused || fused->kind != RAF_ATTR_BOOL || !fused->val.u.b)
    return false;
  for (const raf_stmt *s = callee->first; s; s = s->next)
    if (s->op != RAF_OP_RETURN &&
        !raf_dialect_fuses(d, s->op, raf_stmt_key_dtype(s)))
      return false;
  return true;
}

raf_scratch raf_dialect_no_scratch(const raf_stmt *s) {
  (void)s;
  return (raf_scratch){0, -1, -1, -1};
}

const char *raf_dialect_available(void) { return NULL; }

const char *raf_dialect_lacks_nothing(raf_opcode op) {
  (void)op;
  return NULL;
}

bool raf_dialect_implements_call(raf_dialect d, const raf_func *callee) {
  return traits[d]->runs_call(d, callee);
}

bool raf_dialect_runs(raf_dialect d, const raf_stmt *s) {
  if (s->op == RAF_OP_CALL)
    return traits[d]->runs_call(d, s->callee);
  return s->op != RAF_OP_RETURN && traits[d]->runs_stmt(d, s);
}

const char *raf_dialect_unavailable(raf_dialect d) {
  return traits[d]->unavailable();
}

raf_dialect raf_dialect_find_pattern(const char *name, size_t len,
                                     const raf_fuse_pattern **out) {
  for (int d = 0; d < RAF_DIALECT_COUNT; d++)
    for (int i = 0; i < traits[d]->npatterns; i++) {
      const raf_fuse_pattern *p = &traits[d]->patterns[i];
      if (strncmp(p->name, name, len) == 0 && p->name[len] == 0) {
        *out = p;
        return (raf_dialect)d;
      }
    }
  return RAF_DIALECT_COUNT;
}

raf_scratch raf_mem_scratch_of(const raf_stmt *s) {
  raf_dialect d = raf_stmt_dialect(s);
  return d == RAF_DIALECT_COUNT ? raf_dialect_no_scratch(s)
                                : traits[d]->scratch(s);
}

bool raf_mem_call_compiled(const raf_stmt *s) {
  raf_dialect d = raf_stmt_dialect(s);
  return s->op == RAF_OP_CALL && d != RAF_DIALECT_COUNT &&
         raf_dialect_runs(d, s);
}

bool raf_mem_call_compiled_estimate(const raf_stmt *s) {
  if (s->op != RAF_OP_CALL || raf_stmt_dialect(s) != RAF_DIALECT_COUNT)
    return raf_mem_call_compiled(s);
  for (int d = 0; d < RAF_DIALECT_COUNT; d++)
    if (raf_dialect_runs((raf_dialect)d, s))
      return true;
  return false;
}

bool raf_mem_dispatched(const raf_module *m) {
  for (const raf_func *f = m->first; f; f = f->next)
    for (const raf_stmt *s = f->first; s; s = s->next)
      if (raf_stmt_dialect(s) != RAF_DIALECT_COUNT)
        return true;
  return false;
}
