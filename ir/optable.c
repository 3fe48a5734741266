/* optable.c: the op table and the language's other static facts, expanded
 * from the .def files in lang/. Nothing else in the project lists ops. */
#include "ir/ir.h"

#include <string.h>

#define VARIADIC RAF_VARIADIC
#define NOATTRS NULL, 0
#define ATTRS(...)                                                             \
  (const raf_attr_spec[]){__VA_ARGS__},                                        \
      (int)(sizeof((raf_attr_spec[]){__VA_ARGS__}) / sizeof(raf_attr_spec))
#define ALL 0xffffffffu

#define OP(e, name, nop, nres, attrs, infer, ...) raf_status infer(raf_infer *);
#include "lang/ops.def"
#undef OP

/* The gradient column belongs to passes/autodiff.c (ir/ depends on nothing
 * above it), so the op table leaves it out. */
#define OP(e, name, nop, nres, attrs, infer, dtypes, diff, grad, fusion, amp,  \
           cost, inplace)                                                      \
  {name,                                                                       \
   nop,                                                                        \
   nres,                                                                       \
   attrs,                                                                      \
   infer,                                                                      \
   RAF_DTYPES_##dtypes,                                                        \
   diff,                                                                       \
   RAF_FUSE_##fusion,                                                          \
   RAF_AMP_##amp,                                                              \
   cost,                                                                       \
   RAF_INPLACE_##inplace},
const raf_op_info raf_op_table[RAF_OP_COUNT] = {
#include "lang/ops.def"
};
#undef OP

bool raf_op_lookup(const char *name, size_t len, raf_opcode *out) {
  /* A linear scan: the spellings differ early, and there is no state to
   * build or share between threads. */
  for (int i = 0; i < RAF_OP_COUNT; i++) {
    const char *s = raf_op_table[i].name;
    if (s[0] == name[0] && strncmp(s, name, len) == 0 && s[len] == 0) {
      *out = (raf_opcode)i;
      return true;
    }
  }
  return false;
}

#define ENTITY_ATTR(where, spec) spec,
static const raf_attr_spec entity_specs[] = {
#include "lang/attrs.def"
};
#undef ENTITY_ATTR
#define ENTITY_ATTR(where, spec) RAF_ENTITY_##where,
static const raf_entity entity_of[] = {
#include "lang/attrs.def"
};
#undef ENTITY_ATTR

const raf_attr_spec *raf_entity_attrs(raf_entity e, int *count) {
  /* attrs.def keeps each entity's rows together. */
  int n = (int)(sizeof entity_of / sizeof entity_of[0]), first = -1, k = 0;
  for (int i = 0; i < n; i++)
    if (entity_of[i] == e) {
      if (first < 0)
        first = i;
      k++;
    }
  *count = k;
  return first < 0 ? NULL : &entity_specs[first];
}

static const struct {
  const char *name;
  int size;
  raf_dtype_class cls;
} dtype_facts[RAF_DTYPE_COUNT] = {
#define DTYPE(e, s, size, cls) {s, size, RAF_CLASS_##cls},
#include "lang/dtypes.def"
#undef DTYPE
};

const char *raf_dtype_name(raf_dtype dt) { return dtype_facts[dt].name; }
int raf_dtype_size(raf_dtype dt) { return dtype_facts[dt].size; }
raf_dtype_class raf_dtype_class_of(raf_dtype dt) { return dtype_facts[dt].cls; }
bool raf_dtype_is_float(raf_dtype dt) {
  return dtype_facts[dt].cls == RAF_CLASS_FLOAT;
}

bool raf_dtype_from_name(const char *s, size_t len, raf_dtype *out) {
  for (int i = 0; i < RAF_DTYPE_COUNT; i++)
    if (dtype_facts[i].name[0] == s[0] &&
        strncmp(dtype_facts[i].name, s, len) == 0 &&
        dtype_facts[i].name[len] == 0) {
      *out = (raf_dtype)i;
      return true;
    }
  return false;
}

const char *raf_attr_kind_desc(raf_attr_kind k) {
  static const char *const desc[] = {
#define ATTRKIND(e, d) d,
#include "lang/attrkinds.def"
#undef ATTRKIND
  };
  return desc[k];
}

static const raf_dialect_info dialect_facts[RAF_DIALECT_COUNT] = {
#define DIALECT(e, name, device, priority, every_op, inplace)                  \
  {name, device, priority, every_op, inplace},
#define IMPL(d, op, dtypes)
#define FUSED(d, op, dtypes)
#include "lang/dialects.def"
#undef FUSED
#undef IMPL
#undef DIALECT
};

typedef struct dialect_impl {
  raf_dialect dialect;
  raf_opcode op;
  unsigned dtypes;
} dialect_impl;

static const dialect_impl dialect_impls[] = {
#define DIALECT(e, name, device, priority, every_op, inplace)
#define IMPL(d, op, dtypes) {RAF_DIALECT_##d, RAF_OP_##op, dtypes},
#define FUSED(d, op, dtypes)
#include "lang/dialects.def"
#undef FUSED
#undef IMPL
#undef DIALECT
};

/* The FUSED rows; a sentinel keeps the array non-empty. */
static const dialect_impl dialect_fused[] = {
#define DIALECT(e, name, device, priority, every_op, inplace)
#define IMPL(d, op, dtypes)
#define FUSED(d, op, dtypes) {RAF_DIALECT_##d, RAF_OP_##op, dtypes},
#include "lang/dialects.def"
#undef FUSED
#undef IMPL
#undef DIALECT
    {RAF_DIALECT_COUNT, RAF_OP_COUNT, 0},
};

const raf_dialect_info *raf_dialect_get(raf_dialect d) {
  return &dialect_facts[d];
}

bool raf_dialect_from_name(const char *s, size_t len, raf_dialect *out) {
  for (int i = 0; i < RAF_DIALECT_COUNT; i++)
    if (strncmp(dialect_facts[i].name, s, len) == 0 &&
        dialect_facts[i].name[len] == 0) {
      *out = (raf_dialect)i;
      return true;
    }
  return false;
}

bool raf_dialect_implements(raf_dialect d, raf_opcode op, raf_dtype dt) {
  if (op == RAF_OP_CALL || op == RAF_OP_RETURN)
    return false;
  if (dialect_facts[d].every_op)
    return true;
  for (size_t i = 0; i < sizeof dialect_impls / sizeof dialect_impls[0]; i++)
    if (dialect_impls[i].dialect == d && dialect_impls[i].op == op)
      return (dialect_impls[i].dtypes >> dt) & 1;
  return false;
}

bool raf_dialect_fuses(raf_dialect d, raf_opcode op, raf_dtype dt) {
  for (size_t i = 0; i < sizeof dialect_fused / sizeof dialect_fused[0]; i++)
    if (dialect_fused[i].dialect == d && dialect_fused[i].op == op)
      return (dialect_fused[i].dtypes >> dt) & 1;
  return false;
}

bool raf_dialect_compiles_fused(raf_dialect d) {
  for (size_t i = 0; i < sizeof dialect_fused / sizeof dialect_fused[0]; i++)
    if (dialect_fused[i].dialect == d)
      return true;
  return false;
}

raf_dialect raf_stmt_dialect(const raf_stmt *s) {
  const raf_attr *a = raf_attrs_find(&s->attrs, "dialect");
  return a && a->kind == RAF_ATTR_DIALECT ? a->val.u.dialect
                                          : RAF_DIALECT_COUNT;
}

const char *raf_stmt_dialect_name(const raf_stmt *s) {
  raf_dialect d = raf_stmt_dialect(s);
  return d == RAF_DIALECT_COUNT ? NULL : dialect_facts[d].name;
}

bool raf_stmt_bound_to(const raf_stmt *s, raf_dialect d) {
  return raf_stmt_dialect(s) == d;
}

raf_dtype raf_stmt_key_dtype(const raf_stmt *s) {
  if (s->noperands > 0 && s->operands[0].value && s->operands[0].value->type)
    return s->operands[0].value->type->dtype;
  if (s->nresults > 0 && s->results[0]->type)
    return s->results[0]->type->dtype;
  return RAF_F32;
}
