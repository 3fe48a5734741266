/* cse.c: common-subexpression elimination.
 *
 * Two statements compute the same value when they have the same opcode, the
 * same operand values in the same order, the same attributes, the same
 * result types, the same callee (calls) and the same data (constants).
 * Every op is pure, so the later of the two can be dropped: its results'
 * uses move to the earlier one's results, which dominate them (in
 * straight-line code, earlier means dominating).
 *
 * What "the same" means, precisely:
 *  - attributes are compared as sets, by name, kind and value
 *    (raf_attr_value_equal), and one written equal to its schema default
 *    counts as absent: `sum(%x) {keepdims = false}` is `sum(%x)`. This is
 *    the printer's rule too, so two statements merge exactly when they
 *    would print alike apart from their result names;
 *  - constants are equal when they have the same type and the same
 *    elements, bit for bit (so 0.0 and -0.0 differ, and a NaN equals only
 *    the same NaN); a splat equals the dense constant of its type whose
 *    elements are all that one element;
 *  - `return` is never merged.
 *
 * The walk is forward, one function at a time, with an open-addressing
 * table of the statements seen so far, keyed by a 64-bit hash of all the
 * above and compared in full when hashes collide. Because a merged
 * statement's uses are redirected before the walk reaches them, whole
 * duplicated chains fold in the one walk: linear time in the size of the
 * function (and of its constants' data), which the 1M-statement benchmark
 * needs. The table is scratch memory, malloc'd for the pass and freed when
 * it ends; nothing outlives the call.
 *
 * Requires: a verified module.
 * Preserves: the first statement of every class of equal ones, with its
 * name, location and attributes; the order of what stays; signatures.
 * Merged statements are erased, not left dead.
 */
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

/* ---- Hashing ------------------------------------------------------------- */

static uint64_t fmix(uint64_t h) { /* MurmurHash3's finaliser */
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static uint64_t mix(uint64_t h, uint64_t x) {
  return (h ^ fmix(x + 0x9e3779b97f4a7c15ull)) * 0x100000001b3ull;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (; n >= 8; b += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  if (n) /* b may be NULL when there are no bytes at all */
    memcpy(&tail, b, n);
  return mix(h, tail ^ ((uint64_t)n << 56));
}

static uint64_t hash_str(uint64_t h, const char *s) {
  return s ? hash_bytes(h, s, strlen(s)) : mix(h, 0);
}

static uint64_t ptr_bits(const void *p) { return (uint64_t)(uintptr_t)p; }

/* ---- Attributes ---------------------------------------------------------- */

/* Is a written as its schema's default, so that it means the same as no
 * attribute at all? The op's schema comes first, then the one of every
 * statement (lang/attrs.def), as in the printer. */
static bool is_default(const raf_stmt *s, const raf_attr *a) {
  const raf_op_info *op = &raf_op_table[s->op];
  const raf_attr_spec *spec = raf_spec_find(op->attrs, op->nattrs, a->name);
  if (!spec) {
    int n;
    const raf_attr_spec *all = raf_entity_attrs(RAF_ENTITY_STMT, &n);
    spec = raf_spec_find(all, n, a->name);
  }
  return spec && spec->flags == 0 && spec->kind == a->kind &&
         raf_attr_value_equal(a->kind, &a->val, &spec->def);
}

static uint64_t hash_attr_value(const raf_attr *a) {
  const raf_attr_value *v = &a->val;
  uint64_t h = (uint64_t)a->kind;
  switch (a->kind) {
  case RAF_ATTR_BOOL: return mix(h, v->u.b);
  case RAF_ATTR_INT: return mix(h, (uint64_t)v->u.i);
  case RAF_ATTR_FLOAT: return hash_bytes(h, &v->u.f, sizeof v->u.f);
  case RAF_ATTR_STRING: return hash_str(h, v->u.s);
  case RAF_ATTR_DTYPE: return mix(h, (uint64_t)v->u.dt);
  case RAF_ATTR_INTS:
    return hash_bytes(h, v->u.ints.v, sizeof(int64_t) * (size_t)v->u.ints.n);
  case RAF_ATTR_FLOATS:
    return hash_bytes(h, v->u.floats.v,
                      sizeof(double) * (size_t)v->u.floats.n);
  case RAF_ATTR_VALUE: return mix(h, ptr_bits(v->u.value));
  case RAF_ATTR_FUNC: return mix(h, ptr_bits(v->u.func));
  case RAF_ATTR_DIALECT: return mix(h, (uint64_t)v->u.dialect);
  case RAF_ATTR_KIND_COUNT: break;
  }
  return h;
}

/* Attributes are a set: the order they were written in does not matter, so
 * their hashes are summed. */
static uint64_t hash_attrs(const raf_stmt *s) {
  uint64_t sum = 0;
  for (int i = 0; i < s->attrs.n; i++) {
    const raf_attr *a = &s->attrs.v[i];
    if (!is_default(s, a))
      sum += fmix(hash_str(hash_attr_value(a), a->name));
  }
  return sum;
}

static int count_written(const raf_stmt *s) {
  int n = 0;
  for (int i = 0; i < s->attrs.n; i++)
    n += !is_default(s, &s->attrs.v[i]);
  return n;
}

static bool same_attrs(const raf_stmt *a, const raf_stmt *b) {
  if (a->attrs.n == 0 && b->attrs.n == 0)
    return true;
  if (count_written(a) != count_written(b))
    return false;
  /* Names are unique per statement (verified), so matching each written
   * attribute of a to one of b, with equal counts, is a bijection. */
  for (int i = 0; i < a->attrs.n; i++) {
    const raf_attr *x = &a->attrs.v[i];
    if (is_default(a, x))
      continue;
    const raf_attr *y = raf_attrs_find(&b->attrs, x->name);
    if (!y || is_default(b, y) || y->kind != x->kind ||
        !raf_attr_value_equal(x->kind, &x->val, &y->val))
      return false;
  }
  return true;
}

/* ---- Constant data ------------------------------------------------------- */

/* Whether every element of constant s is the same bytes; then *elem is one
 * of them (NULL when there are no elements). */
static bool uniform(const raf_stmt *s, const void **elem) {
  const raf_type *t = s->results[0]->type;
  const raf_const *c = s->cdata;
  size_t size = (size_t)raf_dtype_size(t->dtype);
  *elem = NULL;
  if (t->numel == 0)
    return true;
  *elem = c->data;
  if (c->splat)
    return true;
  const char *p = c->data;
  for (int64_t i = 1; i < c->count; i++)
    if (memcmp(p, p + (size_t)i * size, size) != 0)
      return false;
  return true;
}

static uint64_t hash_const(const raf_stmt *s) {
  const raf_type *t = s->results[0]->type;
  size_t size = (size_t)raf_dtype_size(t->dtype);
  const void *elem;
  if (!s->cdata)
    return 0;
  if (uniform(s, &elem))
    return elem ? hash_bytes(1, elem, size) : 1;
  return hash_bytes(2, s->cdata->data, size * (size_t)s->cdata->count);
}

static bool same_const(const raf_stmt *a, const raf_stmt *b) {
  if (!a->cdata || !b->cdata)
    return a->cdata == b->cdata;
  /* The types are already known to be equal. */
  size_t size = (size_t)raf_dtype_size(a->results[0]->type->dtype);
  const void *ea, *eb;
  bool ua = uniform(a, &ea), ub = uniform(b, &eb);
  if (ua != ub)
    return false;
  if (ua)
    return !ea || memcmp(ea, eb, size) == 0;
  return a->cdata->count == b->cdata->count &&
         memcmp(a->cdata->data, b->cdata->data,
                size * (size_t)a->cdata->count) == 0;
}

/* ---- Statements ---------------------------------------------------------- */

static uint64_t hash_stmt(const raf_stmt *s) {
  uint64_t h = mix((uint64_t)s->op, (uint64_t)s->noperands);
  h = mix(h, (uint64_t)s->nresults);
  for (int i = 0; i < s->noperands; i++)
    h = mix(h, ptr_bits(s->operands[i].value));
  for (int i = 0; i < s->nresults; i++)
    h = mix(h, ptr_bits(s->results[i]->type));
  h = mix(h, ptr_bits(s->callee));
  h = mix(h, hash_attrs(s));
  if (s->op == RAF_OP_CONSTANT)
    h = mix(h, hash_const(s));
  return fmix(h);
}

static bool same_stmt(const raf_stmt *a, const raf_stmt *b) {
  if (a->op != b->op || a->noperands != b->noperands ||
      a->nresults != b->nresults || a->callee != b->callee)
    return false;
  for (int i = 0; i < a->noperands; i++)
    if (a->operands[i].value != b->operands[i].value)
      return false;
  for (int i = 0; i < a->nresults; i++)
    if (a->results[i]->type != b->results[i]->type)
      return false;
  if (!same_attrs(a, b))
    return false;
  return a->op != RAF_OP_CONSTANT || same_const(a, b);
}

/* ---- The table ----------------------------------------------------------- */

typedef struct slot {
  uint64_t hash;
  raf_stmt *stmt; /* NULL: empty */
} slot;

typedef struct table {
  slot *slots;
  size_t alloc; /* slots allocated */
  size_t mask;  /* slots in use for this function, minus one */
} table;

/* Makes the table empty with room for n statements at most half full.
 * Only the part a function needs is cleared, so many small functions after
 * a big one cost what they are, not what the big one was. */
static bool table_reset(table *t, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n + 1)
    cap *= 2;
  if (cap > t->alloc) {
    free(t->slots);
    t->slots = malloc(cap * sizeof *t->slots);
    t->alloc = t->slots ? cap : 0;
    if (!t->slots)
      return false;
  }
  memset(t->slots, 0, cap * sizeof *t->slots);
  t->mask = cap - 1;
  return true;
}

/* The earlier statement equal to s, or NULL after recording s. */
static raf_stmt *table_find_or_add(table *t, raf_stmt *s) {
  uint64_t h = hash_stmt(s);
  size_t i = (size_t)h & t->mask;
  for (; t->slots[i].stmt; i = (i + 1) & t->mask)
    if (t->slots[i].hash == h && same_stmt(t->slots[i].stmt, s))
      return t->slots[i].stmt;
  t->slots[i].hash = h;
  t->slots[i].stmt = s;
  return NULL;
}

/* ---- The pass ------------------------------------------------------------ */

static raf_status cse_func(raf_func *f, table *t) {
  size_t n = 0;
  for (raf_stmt *s = f->first; s; s = s->next)
    n++;
  if (!table_reset(t, n))
    return RAF_ERROR;
  for (raf_stmt *s = f->first, *next; s; s = next) {
    next = s->next;
    /* A recomputation is there to be computed again (remat). */
    if (s->op == RAF_OP_RETURN || raf_attrs_find(&s->attrs, "remat"))
      continue;
    raf_stmt *same = table_find_or_add(t, s);
    if (!same)
      continue;
    for (int i = 0; i < s->nresults; i++)
      raf_value_replace_uses(s->results[i], same->results[i]);
    raf_stmt_erase(s);
  }
  return RAF_OK;
}

raf_status raf_pass_cse(raf_module *m, const raf_pass_args *args) {
  table t = {NULL, 0, 0};
  raf_status st = RAF_OK;
  for (raf_func *f = m->first; f && st == RAF_OK; f = f->next)
    st = cse_func(f, &t);
  free(t.slots);
  if (st != RAF_OK)
    raf_diag_report(args->ctx, (raf_loc){NULL, 0, 0}, RAF_SEV_ERROR,
                    "cse: out of memory");
  return st;
}
