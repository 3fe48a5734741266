/* emit.c: statements built with inferred result types (see emit.h). */
#include "passes/emit.h"

#include <stdlib.h>
#include <string.h>

void raf_emitter_init(raf_emitter *e, raf_func *f, raf_stmt *before,
                      raf_loc loc) {
  e->m = f->module;
  e->f = f;
  e->before = before;
  e->loc = loc;
  e->status = RAF_OK;
}

static raf_value *fail(raf_emitter *e) {
  e->status = RAF_ERROR;
  return NULL;
}

/* Creates, types and inserts a statement; callee for calls. */
static raf_stmt *build(raf_emitter *e, raf_opcode op, int n,
                       raf_value *const *operands, const raf_attr *attrs,
                       int nattrs, int nresults, raf_func *callee) {
  if (e->status != RAF_OK)
    return NULL;
  for (int i = 0; i < n; i++)
    if (!operands[i]) {
      fail(e);
      return NULL;
    }
  raf_type *small[8], **types = small;
  if (nresults > 8 && !(types = calloc((size_t)nresults, sizeof *types))) {
    fail(e);
    return NULL;
  }
  raf_stmt *s = raf_stmt_create(e->m, op, n, operands, nresults, NULL, e->loc);
  if (s) {
    s->callee = callee;
    raf_stmt_set_attrs(e->m, s, attrs, nattrs);
  }
  if (!s || raf_infer_stmt(e->m, s, types, nresults) != RAF_OK) {
    if (s) /* drop the operand uses of the statement that never lands */
      for (int i = 0; i < n; i++)
        raf_use_set(&s->operands[i], NULL);
    s = NULL;
    fail(e);
  } else {
    for (int i = 0; i < nresults; i++)
      s->results[i]->type = types[i];
    raf_stmt_insert_before(e->f, s, e->before);
  }
  if (types != small)
    free(types);
  return s;
}

raf_value *raf_emit_multi(raf_emitter *e, raf_opcode op, int n,
                          raf_value *const *operands, const raf_attr *attrs,
                          int nattrs, int nresults, raf_value **results) {
  raf_stmt *s = build(e, op, n, operands, attrs, nattrs, nresults, NULL);
  for (int i = 0; results && i < nresults; i++)
    results[i] = s ? s->results[i] : NULL;
  return s && nresults ? s->results[0] : NULL;
}

raf_value *raf_emit(raf_emitter *e, raf_opcode op, int n,
                    raf_value *const *operands, const raf_attr *attrs,
                    int nattrs) {
  return raf_emit_multi(e, op, n, operands, attrs, nattrs, 1, NULL);
}

raf_value *raf_emit1(raf_emitter *e, raf_opcode op, raf_value *a) {
  return raf_emit(e, op, 1, &a, NULL, 0);
}

raf_value *raf_emit2(raf_emitter *e, raf_opcode op, raf_value *a,
                     raf_value *b) {
  raf_value *ops[2] = {a, b};
  return raf_emit(e, op, 2, ops, NULL, 0);
}

raf_value *raf_emit_splat(raf_emitter *e, raf_type *t, double v) {
  if (e->status != RAF_OK)
    return NULL;
  raf_const *c = RAF_NEW(&e->m->arena, raf_const);
  void *data = c ? raf_arena_alloc(&e->m->arena, 8) : NULL;
  raf_stmt *s = data ? raf_stmt_create(e->m, RAF_OP_CONSTANT, 0, NULL, 1, &t,
                                       e->loc)
                     : NULL;
  if (!s)
    return fail(e);
  memset(data, 0, 8);
  /* The element in the constant's dtype, as the parser stores it. */
  switch (t->dtype) {
  case RAF_F64: *(double *)data = v; break;
  case RAF_F32: *(float *)data = (float)v; break;
  case RAF_F16: *(uint16_t *)data = raf_float_to_half((float)v); break;
  case RAF_BF16: *(uint16_t *)data = raf_float_to_bf16((float)v); break;
  case RAF_I64: *(int64_t *)data = (int64_t)v; break;
  case RAF_I32: *(int32_t *)data = (int32_t)v; break;
  case RAF_I8: *(int8_t *)data = (int8_t)v; break;
  case RAF_U8: *(uint8_t *)data = (uint8_t)v; break;
  case RAF_BOOL: *(uint8_t *)data = v != 0; break;
  default: break;
  }
  c->count = 1;
  c->splat = t->rank > 0;
  c->data = data;
  s->cdata = c;
  raf_stmt_insert_before(e->f, s, e->before);
  return s->results[0];
}

raf_value *raf_emit_scalar(raf_emitter *e, raf_dtype dt, double v) {
  raf_type *t = raf_type_get(e->m, dt, 0, NULL);
  return t ? raf_emit_splat(e, t, v) : fail(e);
}

raf_value *raf_emit_ints(raf_emitter *e, const int64_t *v, int64_t n) {
  if (e->status != RAF_OK)
    return NULL;
  raf_type *t = raf_type_get(e->m, RAF_I64, 1, &n);
  raf_const *c = RAF_NEW(&e->m->arena, raf_const);
  void *data = c ? raf_arena_alloc(&e->m->arena, sizeof *v * (size_t)n + 1)
                 : NULL;
  raf_stmt *s = t && data ? raf_stmt_create(e->m, RAF_OP_CONSTANT, 0, NULL, 1,
                                            &t, e->loc)
                          : NULL;
  if (!s)
    return fail(e);
  memcpy(data, v, sizeof *v * (size_t)n);
  c->count = n;
  c->splat = false;
  c->data = data;
  s->cdata = c;
  raf_stmt_insert_before(e->f, s, e->before);
  return s->results[0];
}

raf_status raf_emit_call(raf_emitter *e, raf_func *callee,
                         raf_value *const *args, raf_value **results) {
  raf_stmt *s = build(e, RAF_OP_CALL, callee->nargs, args, NULL, 0,
                      callee->nresults, callee);
  for (int i = 0; i < callee->nresults; i++)
    results[i] = s ? s->results[i] : NULL;
  return s ? RAF_OK : RAF_ERROR;
}

raf_attr raf_attr_int(const char *name, int64_t v) {
  return (raf_attr){.name = name, .kind = RAF_ATTR_INT, .val.u.i = v};
}

raf_attr raf_attr_float(const char *name, double v) {
  return (raf_attr){.name = name, .kind = RAF_ATTR_FLOAT, .val.u.f = v};
}

raf_attr raf_attr_bool(const char *name, bool v) {
  return (raf_attr){.name = name, .kind = RAF_ATTR_BOOL, .val.u.b = v};
}

raf_attr raf_attr_str(const char *name, const char *v) {
  return (raf_attr){.name = name, .kind = RAF_ATTR_STRING, .val.u.s = v};
}

raf_attr raf_attr_ints(raf_module *m, const char *name, const int64_t *v,
                       int n) {
  raf_attr a = {.name = name, .kind = RAF_ATTR_INTS};
  a.val.u.ints.v = n ? raf_arena_memdup(&m->arena, v, sizeof *v * (size_t)n)
                     : NULL;
  a.val.u.ints.n = n;
  return a;
}
