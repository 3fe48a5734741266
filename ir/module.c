/* module.c: building and editing IR: modules, functions, values, statements,
 * use lists, interned types and attribute lookup.
 *
 * Passes change the IR only through these functions, so use lists and the
 * per-function name tables never go stale.
 */
#include "ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Modules -------------------------------------------------------------- */

raf_module *raf_module_create(raf_ctx *ctx) {
  raf_module *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->ctx = ctx;
  raf_arena_init(&m->arena);
  raf_strmap_init(&m->funcs);
  return m;
}

void raf_module_destroy(raf_module *m) {
  if (!m)
    return;
  for (raf_func *f = m->first; f; f = f->next)
    raf_strmap_free(&f->names);
  raf_strmap_free(&m->funcs);
  free(m->type_table);
  raf_arena_free(&m->arena);
  free(m);
}

raf_ctx *raf_module_ctx(const raf_module *m) { return m->ctx; }

size_t raf_module_stmt_count(const raf_module *m) {
  size_t n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next)
      n++;
  return n;
}

char *raf_module_strdup(raf_module *m, const char *s) {
  return raf_arena_strndup(&m->arena, s, strlen(s));
}

void raf_module_visit_attrs(raf_module *m,
                            void (*visit)(raf_attrs *attrs, void *data),
                            void *data) {
  for (raf_func *f = m->first; f; f = f->next) {
    visit(&f->attrs, data);
    for (int i = 0; i < f->nargs; i++)
      visit(&f->args[i].attrs, data);
    for (int i = 0; i < f->nresults; i++)
      visit(&f->results[i].attrs, data);
    for (raf_stmt *s = f->first; s; s = s->next)
      visit(&s->attrs, data);
  }
}

/* ---- Types ---------------------------------------------------------------- */

static uint64_t type_hash(raf_dtype dt, int rank, const int64_t *dims) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)dt ^ ((uint64_t)rank << 8);
  for (int i = 0; i < rank; i++)
    h = (h ^ (uint64_t)dims[i]) * 1099511628211ull;
  return h;
}

raf_type *raf_type_get(raf_module *m, raf_dtype dt, int rank,
                       const int64_t *dims) {
  if (m->type_count * 2 >= m->type_buckets) {
    size_t nb = m->type_buckets ? m->type_buckets * 2 : 256;
    raf_type **table = calloc(nb, sizeof *table);
    if (!table)
      return NULL;
    for (size_t i = 0; i < m->type_buckets; i++)
      for (raf_type *t = m->type_table[i], *next; t; t = next) {
        next = t->hash_next;
        size_t b = type_hash(t->dtype, t->rank, t->dims) & (nb - 1);
        t->hash_next = table[b];
        table[b] = t;
      }
    free(m->type_table);
    m->type_table = table;
    m->type_buckets = nb;
  }
  size_t b = type_hash(dt, rank, dims) & (m->type_buckets - 1);
  for (raf_type *t = m->type_table[b]; t; t = t->hash_next)
    if (t->dtype == dt && t->rank == rank &&
        (rank == 0 || memcmp(t->dims, dims, sizeof(int64_t) * rank) == 0))
      return t;
  raf_type *t = RAF_NEW(&m->arena, raf_type);
  int64_t *d = RAF_NEW_ARRAY(&m->arena, int64_t, rank ? rank : 1);
  if (!t || !d)
    return NULL;
  t->dtype = dt;
  t->rank = rank;
  t->numel = 1;
  for (int i = 0; i < rank; i++) {
    d[i] = dims[i];
    /* Callers keep the count within int64_t; a 0 anywhere makes it 0, even
     * where the other dims alone would not fit. Unsigned: no UB. */
    t->numel = (int64_t)((uint64_t)t->numel * (uint64_t)dims[i]);
  }
  for (int i = 0; i < rank; i++)
    if (dims[i] == 0)
      t->numel = 0;
  t->dims = d;
  t->hash_next = m->type_table[b];
  m->type_table[b] = t;
  m->type_count++;
  return t;
}

raf_type *raf_type_with_dtype(raf_module *m, const raf_type *t, raf_dtype dt) {
  return raf_type_get(m, dt, t->rank, t->dims);
}

bool raf_type_same_shape(const raf_type *a, const raf_type *b) {
  if (a->rank != b->rank)
    return false;
  for (int d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d])
      return false;
  return true;
}

bool raf_type_equal(const raf_type *a, const raf_type *b) {
  return a->dtype == b->dtype && raf_type_same_shape(a, b);
}

void raf_type_str(const raf_type *t, char *buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "%s[", raf_dtype_name(t->dtype));
  for (int i = 0; i < t->rank && n < size; i++)
    n += (size_t)snprintf(buf + n, size - n, i ? ",%lld" : "%lld",
                          (long long)t->dims[i]);
  if (n < size)
    snprintf(buf + n, size - n, "]");
}

/* ---- Attributes ----------------------------------------------------------- */

const raf_attr *raf_attrs_find(const raf_attrs *a, const char *name) {
  for (int i = 0; i < a->n; i++)
    if (a->v[i].name == name || strcmp(a->v[i].name, name) == 0)
      return &a->v[i];
  return NULL;
}

const raf_attr_spec *raf_spec_find(const raf_attr_spec *s, int n,
                                   const char *name) {
  for (int i = 0; i < n; i++)
    if (s[i].name == name || strcmp(s[i].name, name) == 0)
      return &s[i];
  return NULL;
}

bool raf_stmt_attr(const raf_stmt *s, const char *name, raf_attr_value *out) {
  const raf_attr *a = raf_attrs_find(&s->attrs, name);
  if (a) {
    *out = a->val;
    return true;
  }
  const raf_op_info *op = &raf_op_table[s->op];
  const raf_attr_spec *spec = raf_spec_find(op->attrs, op->nattrs, name);
  if (!spec || spec->flags)
    return false;
  *out = spec->def;
  return true;
}

int64_t raf_stmt_attr_int(const raf_stmt *s, const char *name) {
  raf_attr_value v = {{0}};
  return raf_stmt_attr(s, name, &v) ? v.u.i : 0;
}

double raf_stmt_attr_float(const raf_stmt *s, const char *name) {
  raf_attr_value v = {{0}};
  return raf_stmt_attr(s, name, &v) ? v.u.f : 0.0;
}

bool raf_stmt_attr_bool(const raf_stmt *s, const char *name) {
  raf_attr_value v = {{0}};
  return raf_stmt_attr(s, name, &v) ? v.u.b : false;
}

const char *raf_stmt_attr_str(const raf_stmt *s, const char *name) {
  const raf_attr *a = raf_attrs_find(&s->attrs, name);
  if (a && a->kind != RAF_ATTR_STRING)
    return NULL; /* {dialect} is resolved to its enum: raf_stmt_dialect */
  raf_attr_value v = {{0}};
  return raf_stmt_attr(s, name, &v) ? v.u.s : NULL;
}

bool raf_op_can_be_async(raf_opcode op) {
  const raf_op_info *o = &raf_op_table[op];
  return raf_spec_find(o->attrs, o->nattrs, "async") != NULL;
}

bool raf_stmt_is_async(const raf_stmt *s) {
  return s && raf_op_can_be_async(s->op) && raf_stmt_attr_bool(s, "async");
}

raf_stmt *raf_stmt_async_wait(const raf_stmt *s) {
  if (!raf_stmt_is_async(s))
    return NULL;
  for (const raf_use *u = s->results[0]->uses; u; u = u->next)
    if (u->user->op == RAF_OP_WAIT)
      return u->user;
  return NULL;
}

bool raf_arg_flag(const raf_arg *a, const char *name) {
  const raf_attr *at = raf_attrs_find(&a->attrs, name);
  return at && at->kind == RAF_ATTR_BOOL && at->val.u.b;
}

const raf_arg *raf_result_updates(const raf_func *f, int i) {
  const raf_attr *u = raf_attrs_find(&f->results[i].attrs, "updates");
  for (int a = 0; u && u->kind == RAF_ATTR_VALUE && a < f->nargs; a++)
    if (f->args[a].value == u->val.u.value)
      return &f->args[a];
  return NULL;
}

bool raf_func_updates_params(const raf_func *f) {
  for (int i = 0; i < f->nresults; i++) {
    const raf_arg *a = raf_result_updates(f, i);
    if (a && raf_arg_flag(a, "param"))
      return true;
  }
  return false;
}

raf_status raf_func_forward(raf_func *f, bool **fwd, int *n) {
  *fwd = NULL;
  *n = 0;
  raf_stmt *ret = raf_func_return(f);
  bool params = false;
  for (int a = 0; a < f->nargs; a++)
    params |= raf_arg_flag(&f->args[a], "param");
  if (!ret || !params || ret->noperands == 0 || f->nresults == 0)
    return RAF_OK;
  const raf_value *loss = ret->operands[0].value;
  if (!loss->def || loss->type->rank != 0 ||
      !raf_dtype_is_float(loss->type->dtype))
    return RAF_OK;
  raf_func_number(f);
  for (raf_stmt *s = f->first; s != ret; s = s->next)
    (*n)++;
  bool *mark = calloc((size_t)*n + 1, sizeof *mark);
  if (!mark)
    return RAF_ERROR;
  int64_t base = f->first->order;
  mark[loss->def->order - base] = true;
  /* Statements come before their readers: one walk back from the return
   * reaches everything the loss is made from. */
  for (raf_stmt *s = ret->prev; s; s = s->prev) {
    if (!mark[s->order - base])
      continue;
    for (int i = 0; i < s->noperands; i++) {
      const raf_stmt *d = s->operands[i].value->def;
      if (d)
        mark[d->order - base] = true;
    }
  }
  *fwd = mark;
  return RAF_OK;
}

bool raf_attr_value_equal(raf_attr_kind k, const raf_attr_value *a,
                          const raf_attr_value *b) {
  switch (k) {
  case RAF_ATTR_BOOL:
    return a->u.b == b->u.b;
  case RAF_ATTR_INT:
    return a->u.i == b->u.i;
  case RAF_ATTR_FLOAT:
    return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0;
  case RAF_ATTR_STRING:
    return (a->u.s == NULL) == (b->u.s == NULL) &&
           (!a->u.s || strcmp(a->u.s, b->u.s) == 0);
  case RAF_ATTR_DTYPE:
    return a->u.dt == b->u.dt;
  case RAF_ATTR_INTS:
    return a->u.ints.n == b->u.ints.n &&
           (a->u.ints.n == 0 || memcmp(a->u.ints.v, b->u.ints.v,
                                       sizeof(int64_t) * a->u.ints.n) == 0);
  case RAF_ATTR_FLOATS:
    return a->u.floats.n == b->u.floats.n &&
           (a->u.floats.n == 0 ||
            memcmp(a->u.floats.v, b->u.floats.v,
                   sizeof(double) * a->u.floats.n) == 0);
  case RAF_ATTR_VALUE:
    return a->u.value == b->u.value;
  case RAF_ATTR_FUNC:
    return a->u.func == b->u.func;
  case RAF_ATTR_DIALECT:
    return a->u.dialect == b->u.dialect;
  case RAF_ATTR_KIND_COUNT:
    break;
  }
  return false;
}

/* ---- Functions and values ------------------------------------------------- */

raf_func *raf_func_create(raf_module *m, const char *name, raf_loc loc) {
  size_t len = strlen(name);
  if (raf_strmap_get(&m->funcs, name, len))
    return NULL;
  raf_func *f = RAF_NEW(&m->arena, raf_func);
  if (!f)
    return NULL;
  f->name = raf_arena_strndup(&m->arena, name, len);
  f->loc = loc;
  f->module = m;
  raf_strmap_init(&f->names);
  if (!f->name || !raf_strmap_put(&m->funcs, f->name, len, f))
    return NULL;
  f->prev = m->last;
  if (m->last)
    m->last->next = f;
  else
    m->first = f;
  m->last = f;
  return f;
}

raf_func *raf_module_find_func(const raf_module *m, const char *name) {
  return raf_strmap_get(&m->funcs, name, strlen(name));
}

/* Drops from attrs the function attributes that name f. */
static void drop_func_refs(raf_attrs *attrs, const raf_func *f) {
  int n = 0;
  for (int i = 0; i < attrs->n; i++)
    if (!(attrs->v[i].kind == RAF_ATTR_FUNC && attrs->v[i].val.u.func == f))
      attrs->v[n++] = attrs->v[i];
  attrs->n = n;
}

void raf_func_erase(raf_func *f) {
  raf_module *m = f->module;
  /* The links to it (a step's {step_of}) go with it. */
  for (raf_func *g = m->first; g; g = g->next)
    if (g != f)
      drop_func_refs(&g->attrs, f);
  raf_strmap_remove(&m->funcs, f->name, strlen(f->name));
  raf_strmap_free(&f->names);
  if (f->prev)
    f->prev->next = f->next;
  else
    m->first = f->next;
  if (f->next)
    f->next->prev = f->prev;
  else
    m->last = f->prev;
  f->prev = f->next = NULL;
}

void raf_func_move_before(raf_module *m, raf_func *g, raf_func *before) {
  if (g == before || g->next == before)
    return;
  if (g->prev)
    g->prev->next = g->next;
  else
    m->first = g->next;
  if (g->next)
    g->next->prev = g->prev;
  else
    m->last = g->prev;
  g->next = before;
  g->prev = before->prev;
  if (before->prev)
    before->prev->next = g;
  else
    m->first = g;
  before->prev = g;
}

const char *raf_func_fresh_name(raf_func *f, const char *hint) {
  char buf[128];
  raf_arena *a = &f->module->arena;
  if (hint && !raf_strmap_get(&f->names, hint, strlen(hint)))
    return raf_arena_strndup(a, hint, strlen(hint));
  for (;;) {
    int n = hint ? snprintf(buf, sizeof buf, "%.100s.%llu", hint,
                            (unsigned long long)++f->fresh)
                 : snprintf(buf, sizeof buf, "%llu",
                            (unsigned long long)f->fresh++);
    if (!raf_strmap_get(&f->names, buf, (size_t)n))
      return raf_arena_strndup(a, buf, (size_t)n);
  }
}

const char *raf_func_derived_name(raf_func *f, const char *name) {
  char buf[128];
  size_t n = strlen(name), k = n;
  while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
    k--;
  if (k > 1 && k < n && name[k - 1] == '.')
    n = k - 1;
  bool numeric = true;
  for (size_t i = 0; i < n; i++)
    numeric = numeric && name[i] >= '0' && name[i] <= '9';
  if (numeric || n >= sizeof buf)
    return raf_func_fresh_name(f, NULL);
  memcpy(buf, name, n);
  buf[n] = 0;
  return raf_func_fresh_name(f, buf);
}

raf_status raf_value_set_name(raf_value *v, const char *name) {
  raf_func *f = v->func;
  size_t len = strlen(name);
  if (raf_strmap_get(&f->names, name, len))
    return RAF_ERROR;
  if (v->name)
    raf_strmap_remove(&f->names, v->name, strlen(v->name));
  v->name = name;
  return raf_strmap_put(&f->names, name, len, v) ? RAF_OK : RAF_ERROR;
}

raf_value *raf_func_add_arg(raf_func *f, const char *name, raf_type *t,
                            raf_loc loc) {
  raf_arena *a = &f->module->arena;
  raf_value *v = RAF_NEW(a, raf_value);
  raf_arg *args = RAF_NEW_ARRAY(a, raf_arg, f->nargs + 1);
  if (!v || !args)
    return NULL;
  if (f->nargs)
    memcpy(args, f->args, sizeof *args * f->nargs);
  v->type = t;
  v->func = f;
  v->index = f->nargs;
  v->loc = loc;
  const char *n = name ? raf_arena_strndup(a, name, strlen(name))
                       : raf_func_fresh_name(f, NULL);
  if (!n || raf_value_set_name(v, n) != RAF_OK)
    return NULL;
  args[f->nargs].value = v;
  f->args = args;
  f->nargs++;
  return v;
}

void raf_func_set_results(raf_func *f, int n, raf_type *const *types) {
  raf_result_sig *r = RAF_NEW_ARRAY(&f->module->arena, raf_result_sig, n);
  if (!r && n)
    return;
  for (int i = 0; i < n; i++)
    r[i].type = types[i];
  f->results = r;
  f->nresults = n;
}

raf_stmt *raf_func_return(const raf_func *f) {
  return f->last && f->last->op == RAF_OP_RETURN ? f->last : NULL;
}

void raf_func_number(raf_func *f) {
  for (raf_stmt *s = f->first; s; s = s->next)
    s->order = f->module->order_clock++;
}

/* ---- Statements and uses -------------------------------------------------- */

static void use_link(raf_use *u) {
  raf_value *v = u->value;
  u->prev = NULL;
  u->next = v->uses;
  if (v->uses)
    v->uses->prev = u;
  v->uses = u;
}

static void use_unlink(raf_use *u) {
  if (u->prev)
    u->prev->next = u->next;
  else if (u->value)
    u->value->uses = u->next;
  if (u->next)
    u->next->prev = u->prev;
  u->next = u->prev = NULL;
}

void raf_use_set(raf_use *u, raf_value *v) {
  if (u->value)
    use_unlink(u);
  u->value = v;
  if (v)
    use_link(u);
}

bool raf_value_has_uses(const raf_value *v) { return v->uses != NULL; }

void raf_value_replace_uses(raf_value *from, raf_value *to) {
  while (from->uses)
    raf_use_set(from->uses, to);
}

raf_stmt *raf_stmt_create(raf_module *m, raf_opcode op, int noperands,
                          raf_value *const *operands, int nresults,
                          raf_type *const *result_types, raf_loc loc) {
  raf_arena *a = &m->arena;
  raf_stmt *s = RAF_NEW(a, raf_stmt);
  if (!s)
    return NULL;
  s->op = op;
  s->loc = loc;
  s->noperands = noperands;
  s->nresults = nresults;
  if (noperands) {
    s->operands = RAF_NEW_ARRAY(a, raf_use, noperands);
    if (!s->operands)
      return NULL;
    for (int i = 0; i < noperands; i++) {
      s->operands[i].user = s;
      if (operands && operands[i])
        raf_use_set(&s->operands[i], operands[i]);
    }
  }
  if (nresults) {
    s->results = RAF_NEW_ARRAY(a, raf_value *, nresults);
    raf_value *vals = RAF_NEW_ARRAY(a, raf_value, nresults);
    if (!s->results || !vals)
      return NULL;
    for (int i = 0; i < nresults; i++) {
      vals[i].def = s;
      vals[i].index = i;
      vals[i].loc = loc;
      vals[i].type = result_types ? result_types[i] : NULL;
      s->results[i] = &vals[i];
    }
  }
  return s;
}

void raf_stmt_set_attrs(raf_module *m, raf_stmt *s, const raf_attr *attrs,
                        int n) {
  s->attrs.v = n ? raf_arena_memdup(&m->arena, attrs, sizeof *attrs * n) : NULL;
  s->attrs.n = s->attrs.v ? n : 0;
}

raf_status raf_attrs_set(raf_module *m, raf_attrs *attrs, const raf_attr *a,
                         raf_loc loc) {
  int at = attrs->n;
  for (int i = 0; i < attrs->n; i++)
    if (strcmp(attrs->v[i].name, a->name) == 0)
      at = i;
  /* A fresh array: another statement may share the old one (a copy made
   * with raf_emit of s's attributes, say). */
  raf_attr *v = RAF_NEW_ARRAY(&m->arena, raf_attr, attrs->n + 1);
  if (!v)
    return RAF_ERROR;
  if (attrs->n)
    memcpy(v, attrs->v, sizeof *v * (size_t)attrs->n);
  v[at] = *a;
  v[at].loc = at < attrs->n ? attrs->v[at].loc : a->loc.file ? a->loc : loc;
  attrs->v = v;
  attrs->n += at == attrs->n;
  return RAF_OK;
}

raf_status raf_stmt_set_attr(raf_module *m, raf_stmt *s, const raf_attr *a) {
  return raf_attrs_set(m, &s->attrs, a, s->loc);
}

raf_status raf_stmt_set_attr_ints(raf_module *m, raf_stmt *s, const char *name,
                                  const int64_t *v, int n) {
  raf_attr a = {.name = name, .kind = RAF_ATTR_INTS};
  a.val.u.ints.v = n ? raf_arena_memdup(&m->arena, v, sizeof *v * (size_t)n)
                     : NULL;
  a.val.u.ints.n = n;
  if (n && !a.val.u.ints.v)
    return RAF_ERROR;
  return raf_stmt_set_attr(m, s, &a);
}

void raf_stmt_insert_before(raf_func *f, raf_stmt *s, raf_stmt *before) {
  s->func = f;
  if (before) {
    s->next = before;
    s->prev = before->prev;
    if (before->prev)
      before->prev->next = s;
    else
      f->first = s;
    before->prev = s;
    s->order = before->order;
  } else {
    s->prev = f->last;
    s->next = NULL;
    if (f->last)
      f->last->next = s;
    else
      f->first = s;
    f->last = s;
    s->order = f->module->order_clock++;
  }
  for (int i = 0; i < s->nresults; i++) {
    raf_value *v = s->results[i];
    v->func = f;
    if (!v->name)
      raf_value_set_name(v, raf_func_fresh_name(f, NULL));
  }
}

/* Takes s out of its function's list, leaving everything else as it is. */
static void stmt_unlink(raf_stmt *s) {
  raf_func *f = s->func;
  if (s->prev)
    s->prev->next = s->next;
  else
    f->first = s->next;
  if (s->next)
    s->next->prev = s->prev;
  else
    f->last = s->prev;
  s->prev = s->next = NULL;
}

void raf_stmt_move_before(raf_stmt *s, raf_stmt *before) {
  if (s == before)
    return;
  raf_func *f = s->func;
  stmt_unlink(s);
  raf_stmt_insert_before(f, s, before);
}

void raf_stmt_erase(raf_stmt *s) {
  raf_func *f = s->func;
  for (int i = 0; i < s->noperands; i++)
    raf_use_set(&s->operands[i], NULL);
  for (int i = 0; i < s->nresults; i++) {
    raf_value *v = s->results[i];
    if (v->name && raf_strmap_get(&f->names, v->name, strlen(v->name)) == v)
      raf_strmap_remove(&f->names, v->name, strlen(v->name));
  }
  stmt_unlink(s);
  s->func = NULL;
}

/* ---- Element conversions -------------------------------------------------- */

float raf_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f,
           mant = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { /* subnormal: normalise */
      int e = -1;
      do {
        mant <<= 1;
        e++;
      } while (!(mant & 0x400));
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t raf_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) /* inf or nan */
    return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
  if (exp >= 0x1f)
    return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10)
      return (uint16_t)sign;
    mant |= 0x800000;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1),
             mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      half++;
    return (uint16_t)(sign | half);
  }
  uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    h++; /* may carry into the exponent, which is still correct */
  return (uint16_t)h;
}

float raf_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t raf_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1); /* round to nearest even */
  return (uint16_t)(x >> 16);
}

double raf_const_get_f64(raf_dtype dt, const raf_const *c, int64_t i) {
  int64_t k = c->splat ? 0 : i;
  const char *p = (const char *)c->data + k * raf_dtype_size(dt);
  switch (dt) {
  case RAF_F64: { double v; memcpy(&v, p, 8); return v; }
  case RAF_F32: { float v; memcpy(&v, p, 4); return v; }
  case RAF_F16: { uint16_t v; memcpy(&v, p, 2); return raf_half_to_float(v); }
  case RAF_BF16: { uint16_t v; memcpy(&v, p, 2); return raf_bf16_to_float(v); }
  default: return (double)raf_const_get_i64(dt, c, i);
  }
}

int64_t raf_const_get_i64(raf_dtype dt, const raf_const *c, int64_t i) {
  int64_t k = c->splat ? 0 : i;
  const char *p = (const char *)c->data + k * raf_dtype_size(dt);
  switch (dt) {
  case RAF_I64: { int64_t v; memcpy(&v, p, 8); return v; }
  case RAF_I32: { int32_t v; memcpy(&v, p, 4); return v; }
  case RAF_I8: return (int8_t)*p;
  case RAF_U8: case RAF_BOOL: return (uint8_t)*p;
  default: return (int64_t)raf_const_get_f64(dt, c, i);
  }
}

bool raf_init_parse(const char *s, raf_init_spec *out) {
  raf_init_spec spec = {RAF_INIT_ZEROS, 0, 0};
  double a, b;
  int end = -1; /* set only when the closing parenthesis matched */
  if (strcmp(s, "zeros") == 0) {
    spec.kind = RAF_INIT_ZEROS;
  } else if (strcmp(s, "ones") == 0) {
    spec.kind = RAF_INIT_ONES;
  } else if (sscanf(s, "normal(%lf ,%lf )%n", &a, &b, &end) == 2 && end > 0 &&
             s[end] == '\0' && isfinite(a) && isfinite(b) && b >= 0) {
    spec = (raf_init_spec){RAF_INIT_NORMAL, a, b};
  } else if ((end = -1, sscanf(s, "uniform(%lf ,%lf )%n", &a, &b, &end)) ==
                 2 &&
             end > 0 && s[end] == '\0' && isfinite(a) && isfinite(b) &&
             a <= b) {
    spec = (raf_init_spec){RAF_INIT_UNIFORM, a, b};
  } else if ((end = -1, sscanf(s, "constant(%lf )%n", &a, &end)) == 1 &&
             end > 0 && s[end] == '\0' && isfinite(a)) {
    spec = (raf_init_spec){RAF_INIT_CONSTANT, a, 0};
  } else {
    return false;
  }
  if (out)
    *out = spec;
  return true;
}
