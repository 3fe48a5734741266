/* lang.h: the vocabulary of the .raf language, expanded from the .def tables.
 *
 * Element types (dtypes.def), attribute kinds (attrkinds.def) and operators
 * (ops.def) become enums here; the attribute-schema makers used by the op
 * table are defined here too. This header depends on nothing but libc: every
 * other layer builds on it.
 */
#ifndef RAF_LANG_H
#define RAF_LANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum raf_dtype {
#define DTYPE(e, s, size, cls) RAF_##e,
#include "lang/dtypes.def"
#undef DTYPE
  RAF_DTYPE_COUNT
} raf_dtype;

typedef enum raf_dtype_class {
  RAF_CLASS_FLOAT,
  RAF_CLASS_SINT,
  RAF_CLASS_UINT,
  RAF_CLASS_BOOL
} raf_dtype_class;

typedef enum raf_attr_kind {
#define ATTRKIND(e, desc) RAF_ATTR_##e,
#include "lang/attrkinds.def"
#undef ATTRKIND
  RAF_ATTR_KIND_COUNT
} raf_attr_kind;

typedef enum raf_opcode {
#define OP(e, ...) RAF_OP_##e,
#include "lang/ops.def"
#undef OP
  RAF_OP_COUNT
} raf_opcode;

typedef enum raf_fusion_class {
  RAF_FUSE_ELEMWISE,
  RAF_FUSE_BROADCAST,
  RAF_FUSE_INJECTIVE,
  RAF_FUSE_REDUCE,
  RAF_FUSE_OUT_FUSABLE,
  RAF_FUSE_OPAQUE
} raf_fusion_class;

typedef enum raf_amp_class {
  RAF_AMP_LOWP,
  RAF_AMP_FP32,
  RAF_AMP_FOLLOW,
  RAF_AMP_NONE
} raf_amp_class;

/* The inplace column of lang/ops.def. */
typedef enum raf_inplace_class {
  RAF_INPLACE_OVER,
  RAF_INPLACE_VIEW,
  RAF_INPLACE_ROWS,
  RAF_INPLACE_SEPARATE
} raf_inplace_class;
/* The classes as bits: the inplace column of lang/dialects.def. */
#define RAF_INPLACE_OVER_BIT (1u << RAF_INPLACE_OVER)
#define RAF_INPLACE_VIEW_BIT (1u << RAF_INPLACE_VIEW)
#define RAF_INPLACE_ROWS_BIT (1u << RAF_INPLACE_ROWS)

typedef enum raf_dialect {
#define DIALECT(e, name, device, priority, every_op, inplace) RAF_DIALECT_##e,
#define IMPL(d, op, dtypes)
#define FUSED(d, op, dtypes)
#include "lang/dialects.def"
#undef FUSED
#undef IMPL
#undef DIALECT
  RAF_DIALECT_COUNT
} raf_dialect;

/* Masks of dtypes an op admits (bit RAF_<dtype>). */
#define RAF_DTYPES_FLOATS                                                      \
  ((1u << RAF_F64) | (1u << RAF_F32) | (1u << RAF_F16) | (1u << RAF_BF16))
#define RAF_DTYPES_NUMBERS                                                     \
  (RAF_DTYPES_FLOATS | (1u << RAF_I64) | (1u << RAF_I32) | (1u << RAF_I8) |   \
   (1u << RAF_U8))
#define RAF_DTYPES_ANY (RAF_DTYPES_NUMBERS | (1u << RAF_BOOL))

/* Each op's mask, lang/ops.def's dtypes column, as a constant for tables
 * built at compile time: RAF_OP_DTYPES_ADD is RAF_DTYPES_NUMBERS. */
enum {
#define OP(e, name, nop, nres, attrs, infer, dtypes, ...)                      \
  RAF_OP_DTYPES_##e = RAF_DTYPES_##dtypes,
#include "lang/ops.def"
#undef OP
};

/* An attribute value. Which member is live follows the attribute's kind.
 * Pointers point into the owning module's arena (or static storage for the
 * schema defaults). */
typedef struct raf_attr_value {
  union {
    bool b;
    int64_t i;
    double f;
    const char *s;
    raf_dtype dt;
    struct {
      const int64_t *v;
      int n;
    } ints;
    struct {
      const double *v;
      int n;
    } floats;
    struct raf_value *value;
    struct raf_func *func;
    raf_dialect dialect;
  } u;
} raf_attr_value;

enum {
  RAF_SPEC_REQUIRED = 1, /* must be present */
  RAF_SPEC_OPTIONAL = 2  /* may be absent, and then has no value */
};

/* One attribute of a schema: its name, kind and default. */
typedef struct raf_attr_spec {
  const char *name;
  raf_attr_kind kind;
  unsigned flags;      /* RAF_SPEC_*; neither means "has a default" */
  raf_attr_value def;  /* the default, when flags is 0 */
  const char *choices; /* "a|b|c" for enumerated strings, else NULL */
} raf_attr_spec;

/* Makers for ops.def and attrs.def. */
#define A_BOOL(n, d) {n, RAF_ATTR_BOOL, 0, {.u.b = d}, NULL}
#define A_INT(n, d) {n, RAF_ATTR_INT, 0, {.u.i = d}, NULL}
#define A_INT_REQ(n) {n, RAF_ATTR_INT, RAF_SPEC_REQUIRED, {.u.i = 0}, NULL}
#define A_INT_OPT(n) {n, RAF_ATTR_INT, RAF_SPEC_OPTIONAL, {.u.i = 0}, NULL}
#define A_FLOAT(n, d) {n, RAF_ATTR_FLOAT, 0, {.u.f = d}, NULL}
#define A_FLOAT_OPT(n) {n, RAF_ATTR_FLOAT, RAF_SPEC_OPTIONAL, {.u.f = 0}, NULL}
#define A_STR(n, d, choices) {n, RAF_ATTR_STRING, 0, {.u.s = d}, choices}
#define A_STR_OPT(n) {n, RAF_ATTR_STRING, RAF_SPEC_OPTIONAL, {.u.s = NULL}, NULL}
#define A_DTYPE_REQ(n) {n, RAF_ATTR_DTYPE, RAF_SPEC_REQUIRED, {.u.i = 0}, NULL}
#define A_INTS_REQ(n)                                                          \
  {n, RAF_ATTR_INTS, RAF_SPEC_REQUIRED, {.u.ints = {NULL, 0}}, NULL}
#define A_INTS_OPT(n)                                                          \
  {n, RAF_ATTR_INTS, RAF_SPEC_OPTIONAL, {.u.ints = {NULL, 0}}, NULL}
#define A_INTS(n, ...)                                                         \
  {n,                                                                          \
   RAF_ATTR_INTS,                                                              \
   0,                                                                          \
   {.u.ints = {(const int64_t[]){__VA_ARGS__},                                 \
               (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))}},    \
   NULL}
#define A_VALUE_OPT(n)                                                         \
  {n, RAF_ATTR_VALUE, RAF_SPEC_OPTIONAL, {.u.value = NULL}, NULL}
#define A_FUNC_OPT(n)                                                          \
  {n, RAF_ATTR_FUNC, RAF_SPEC_OPTIONAL, {.u.func = NULL}, NULL}
#define A_DIALECT_OPT(n)                                                       \
  {n, RAF_ATTR_DIALECT, RAF_SPEC_OPTIONAL, {.u.dialect = 0}, NULL}

/* Static facts about dtypes. */
const char *raf_dtype_name(raf_dtype dt);
int raf_dtype_size(raf_dtype dt);
raf_dtype_class raf_dtype_class_of(raf_dtype dt);
bool raf_dtype_is_float(raf_dtype dt);
/* Looks a spelling up; returns false when it names no dtype. */
bool raf_dtype_from_name(const char *s, size_t len, raf_dtype *out);
const char *raf_attr_kind_desc(raf_attr_kind k);

/* Facts about the dialects of lang/dialects.def. */
typedef struct raf_dialect_info {
  const char *name;
  const char *device;
  int priority;
  bool every_op;
  unsigned inplace; /* RAF_INPLACE_*_BIT: the in-place kinds it honours */
} raf_dialect_info;
const raf_dialect_info *raf_dialect_get(raf_dialect d);
/* Looks a spelling up; returns false when it names no dialect. */
bool raf_dialect_from_name(const char *s, size_t len, raf_dialect *out);

#endif
