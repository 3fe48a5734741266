/* emit.h: writing new statements into a function, with their result types
 * inferred, for the passes that generate code (optimizer, autodiff).
 *
 * An emitter inserts before a fixed statement (or appends) and gives every
 * statement it makes the same source location, so generated code points at
 * the source it came from. Errors are sticky: once a statement fails to
 * infer (reported as a located diagnostic) every later emit returns NULL and
 * `status` stays RAF_ERROR, so a generator can emit a whole formula and
 * check once at the end. NULL operands are accepted and propagate.
 */
#ifndef RAF_PASSES_EMIT_H
#define RAF_PASSES_EMIT_H

#include "ir/ir.h"

typedef struct raf_emitter {
  raf_module *m;
  raf_func *f;
  raf_stmt *before; /* NULL appends */
  raf_loc loc;
  raf_status status;
} raf_emitter;

void raf_emitter_init(raf_emitter *e, raf_func *f, raf_stmt *before,
                      raf_loc loc);

/* A statement of op over n operands with attrs; its results go to
 * results[0..nresults) when results is not NULL. Returns the first result,
 * or NULL on error. */
raf_value *raf_emit_multi(raf_emitter *e, raf_opcode op, int n,
                          raf_value *const *operands, const raf_attr *attrs,
                          int nattrs, int nresults, raf_value **results);
/* One-result shorthands. */
raf_value *raf_emit(raf_emitter *e, raf_opcode op, int n,
                    raf_value *const *operands, const raf_attr *attrs,
                    int nattrs);
raf_value *raf_emit1(raf_emitter *e, raf_opcode op, raf_value *a);
raf_value *raf_emit2(raf_emitter *e, raf_opcode op, raf_value *a,
                     raf_value *b);
/* `constant v : DT[]`, a scalar. */
raf_value *raf_emit_scalar(raf_emitter *e, raf_dtype dt, double v);
/* `constant v : t` as a splat of t's shape. */
raf_value *raf_emit_splat(raf_emitter *e, raf_type *t, double v);
/* `constant [v...] : i64[n]`, a dense vector. */
raf_value *raf_emit_ints(raf_emitter *e, const int64_t *v, int64_t n);
/* `call @callee(args)`; its callee->nresults results go to results. */
raf_status raf_emit_call(raf_emitter *e, raf_func *callee, raf_value *const *args,
                         raf_value **results);

/* Attribute makers for emit's attrs arrays. */
raf_attr raf_attr_int(const char *name, int64_t v);
raf_attr raf_attr_float(const char *name, double v);
raf_attr raf_attr_bool(const char *name, bool v);
raf_attr raf_attr_str(const char *name, const char *v);
/* The list is copied into the module's arena. */
raf_attr raf_attr_ints(raf_module *m, const char *name, const int64_t *v,
                       int n);

#endif
