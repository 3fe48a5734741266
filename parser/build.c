/* build.c: the parser's semantic actions.
 *
 * The grammar hands over spans of source text; this file resolves names,
 * converts numbers, builds statements through the IR builder and reports
 * what is wrong with a location. Value names are resolved as they are used:
 * a name not yet defined gets a placeholder, which a later definition
 * replaces (the verifier then reports the use before the definition) and
 * which, if still undefined at the end of the function, is an error.
 */
#include "parser/build.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool raf_buf_push(raf_buf *b, const void *item, size_t size) {
  if (b->n == b->cap) {
    int cap = b->cap ? b->cap * 2 : 16;
    void *v = realloc(b->v, (size_t)cap * size);
    if (!v)
      return false;
    b->v = v;
    b->cap = cap;
  }
  memcpy((char *)b->v + (size_t)b->n * size, item, size);
  b->n++;
  return true;
}

void raf_parse_error(raf_parser *p, raf_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  raf_diag_vreport(p->ctx, loc, RAF_SEV_ERROR, fmt, ap);
  va_end(ap);
}

raf_loc raf_loc_of(raf_parser *p, int line, int col) {
  return (raf_loc){p->file, (uint32_t)line, (uint32_t)col};
}

static char *span_dup(raf_parser *p, raf_span s, int skip) {
  return raf_arena_strndup(&p->m->arena, s.s + skip, (size_t)(s.len - skip));
}

/* ---- Numbers -------------------------------------------------------------- */

static bool parse_i64(raf_parser *p, raf_span s, int64_t *out) {
  char buf[64];
  if (s.len >= (int)sizeof buf) {
    raf_parse_error(p, s.loc, "integer out of range: %.*s", s.len, s.s);
    return false;
  }
  memcpy(buf, s.s, (size_t)s.len);
  buf[s.len] = 0;
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno || *end) {
    raf_parse_error(p, s.loc, "%s: %s", *end ? "expected an integer"
                                             : "integer out of range", buf);
    return false;
  }
  *out = v;
  return true;
}

static double parse_f64(raf_span s) {
  char buf[128];
  int n = s.len < (int)sizeof buf - 1 ? s.len : (int)sizeof buf - 1;
  memcpy(buf, s.s, (size_t)n);
  buf[n] = 0;
  return strtod(buf, NULL); /* the lexer admits only valid floats */
}

static bool span_is_integer(raf_span s) {
  for (int i = 0; i < s.len; i++)
    if (!(s.s[i] == '-' || (s.s[i] >= '0' && s.s[i] <= '9')))
      return false;
  return true;
}

/* ---- Values --------------------------------------------------------------- */

static raf_value *resolve_value(raf_parser *p, raf_span name) {
  raf_func *f = p->func;
  const char *s = name.s + 1;
  size_t len = (size_t)name.len - 1;
  raf_value *v = raf_strmap_get(&f->names, s, len);
  if (v)
    return v;
  v = raf_strmap_get(&p->forward, s, len);
  if (v)
    return v;
  v = RAF_NEW(&p->m->arena, raf_value);
  if (!v)
    return NULL;
  v->name = span_dup(p, name, 1);
  v->func = f;
  v->index = -1;
  v->loc = name.loc;
  raf_strmap_put(&p->forward, v->name, len, v);
  RAF_BUF_PUSH(&p->placeholders, v);
  return v;
}

/* Defines name as v; reports a redefinition. */
static void define_value(raf_parser *p, raf_value *v, raf_span name) {
  const char *s = name.s + 1;
  size_t len = (size_t)name.len - 1;
  raf_value *old = raf_strmap_get(&p->func->names, s, len);
  if (old) {
    raf_parse_error(p, name.loc, "redefinition of value %.*s", name.len,
                    name.s);
    raf_diag_report(p->ctx, old->loc, RAF_SEV_NOTE, "previous definition here");
    return;
  }
  v->loc = name.loc;
  raf_value_set_name(v, span_dup(p, name, 1));
  raf_value *fwd = raf_strmap_get(&p->forward, s, len);
  if (fwd) {
    raf_value_replace_uses(fwd, v);
    raf_strmap_remove(&p->forward, s, len);
  }
}

/* ---- Functions ------------------------------------------------------------ */

static void clear_function_state(raf_parser *p) {
  raf_strmap_free(&p->forward);
  raf_strmap_init(&p->forward);
  p->placeholders.n = 0;
  p->results.n = 0;
}

void raf_build_begin_func(raf_parser *p, raf_span name) {
  clear_function_state(p);
  char *n = span_dup(p, name, 1);
  p->func = n ? raf_func_create(p->m, n, name.loc) : NULL;
  if (!p->func) {
    raf_func *old = raf_module_find_func(p->m, n);
    raf_parse_error(p, name.loc, "redefinition of function %.*s", name.len,
                    name.s);
    if (old)
      raf_diag_report(p->ctx, old->loc, RAF_SEV_NOTE,
                      "previous definition here");
  }
}

void raf_build_param(raf_parser *p, raf_span name, raf_type *t,
                     const raf_attrs *attrs) {
  if (p->func && !t &&
      !raf_strmap_get(&p->func->names, name.s + 1, (size_t)name.len - 1)) {
    /* A bad type, already reported: the name still gets a (typeless)
     * value, so that its uses do not each report an undefined value. */
    raf_value *v = RAF_NEW(&p->m->arena, raf_value);
    if (v) {
      v->func = p->func;
      v->index = -1;
      define_value(p, v, name);
    }
  }
  if (!p->func || !t)
    return;
  if (raf_strmap_get(&p->func->names, name.s + 1, (size_t)name.len - 1)) {
    raf_parse_error(p, name.loc, "redefinition of value %.*s", name.len,
                    name.s);
    return;
  }
  raf_value *v = raf_func_add_arg(p->func, span_dup(p, name, 1), t, name.loc);
  if (v)
    p->func->args[p->func->nargs - 1].attrs = *attrs;
}

void raf_build_result(raf_parser *p, raf_type *t, const raf_attrs *attrs) {
  raf_result_sig r = {t, attrs ? *attrs : (raf_attrs){NULL, 0}};
  RAF_BUF_PUSH(&p->results, r);
}

void raf_build_results_done(raf_parser *p) {
  raf_func *f = p->func;
  int n = p->results.n;
  p->results.n = 0;
  if (!f)
    return;
  for (int i = 0; i < n; i++)
    if (!RAF_BUF_AT(&p->results, raf_result_sig, i).type)
      return;
  f->results = raf_arena_memdup(&p->m->arena, p->results.v,
                                sizeof(raf_result_sig) * (size_t)n);
  f->nresults = n;
}

void raf_build_end_func(raf_parser *p, const raf_attrs *attrs) {
  raf_func *f = p->func;
  if (f) {
    if (attrs)
      f->attrs = *attrs;
    for (int i = 0; i < p->placeholders.n; i++) {
      raf_value *v = RAF_BUF_AT(&p->placeholders, raf_value *, i);
      if (raf_strmap_get(&p->forward, v->name, strlen(v->name)) == v)
        raf_parse_error(p, v->loc, "use of undefined value %%%s", v->name);
    }
  }
  p->func = NULL;
  clear_function_state(p);
}

/* ---- Statements ----------------------------------------------------------- */

/* After an error in a statement, its result names still get (typeless)
 * values, so later uses do not each report an undefined value. The module
 * is thrown away anyway. */
void raf_build_poison_stmt(raf_parser *p) {
  for (int i = 0; p->func && i < p->lhs.n; i++) {
    raf_span name = RAF_BUF_AT(&p->lhs, raf_span, i);
    if (raf_strmap_get(&p->func->names, name.s + 1, (size_t)name.len - 1))
      continue;
    raf_value *v = RAF_NEW(&p->m->arena, raf_value);
    if (!v)
      break;
    v->func = p->func;
    v->index = -1;
    define_value(p, v, name);
  }
  raf_build_reset_stmt(p);
}

void raf_build_reset_stmt(raf_parser *p) {
  p->lhs.n = p->operands.n = p->types.n = p->attrs.n = 0;
  p->operand_locs.n = 0;
  p->lit.n = 0;
  p->lit_depth = 0;
  p->has_stmt_loc = false;
}

void raf_build_stmt_loc(raf_parser *p, raf_span file, raf_span line,
                        raf_span col) {
  int64_t l, c;
  if (!parse_i64(p, line, &l) || !parse_i64(p, col, &c))
    return;
  if (l < 1 || l > UINT32_MAX || c < 1 || c > UINT32_MAX) {
    raf_parse_error(p, l < 1 || l > UINT32_MAX ? line.loc : col.loc,
                    "location %lld:%lld is out of range", (long long)l,
                    (long long)c);
    return;
  }
  /* The file name is a string: its escapes are undone, as the printer
   * makes them. */
  const char *name = raf_build_string_attr(p, file).val.u.s;
  /* The statement is already built: patch its location. */
  if (p->func && p->func->last && name) {
    raf_loc loc = {raf_ctx_intern(p->ctx, name), (uint32_t)l, (uint32_t)c};
    raf_stmt *s = p->func->last;
    s->loc = loc;
    for (int i = 0; i < s->nresults; i++)
      s->results[i]->loc = loc;
  }
}

void raf_build_lhs(raf_parser *p, raf_span name) {
  RAF_BUF_PUSH(&p->lhs, name);
}

void raf_build_operand(raf_parser *p, raf_span name) {
  if (!p->func)
    return;
  raf_value *v = resolve_value(p, name);
  RAF_BUF_PUSH(&p->operands, v);
  RAF_BUF_PUSH(&p->operand_locs, name.loc);
}

void raf_build_stmt_type(raf_parser *p, raf_type *t) {
  RAF_BUF_PUSH(&p->types, t);
}

/* Makes the statement from the collected results, operands and types. */
static raf_stmt *finish_stmt(raf_parser *p, raf_opcode op, raf_loc loc,
                             const raf_attrs *attrs) {
  raf_stmt *s = NULL;
  int nres = p->lhs.n;
  if (!p->func)
    goto done;
  if (p->types.n && p->types.n != nres) {
    raf_parse_error(p, loc, "statement defines %d value%s but states %d type%s",
                    nres, nres == 1 ? "" : "s", p->types.n,
                    p->types.n == 1 ? "" : "s");
    goto done;
  }
  for (int i = 0; i < p->types.n; i++)
    if (!RAF_BUF_AT(&p->types, raf_type *, i))
      goto done; /* a bad type, already reported */
  s = raf_stmt_create(p->m, op, p->operands.n, (raf_value **)p->operands.v,
                      nres, p->types.n ? (raf_type **)p->types.v : NULL, loc);
  if (!s)
    goto done;
  if (attrs)
    s->attrs = *attrs;
  for (int i = 0; i < s->noperands && i < p->operand_locs.n; i++)
    s->operands[i].loc = RAF_BUF_AT(&p->operand_locs, raf_loc, i);
  for (int i = 0; i < nres; i++) {
    raf_span name = RAF_BUF_AT(&p->lhs, raf_span, i);
    s->results[i]->func = p->func;
    define_value(p, s->results[i], name);
    if (!s->results[i]->name) /* a redefinition: keep the IR consistent */
      raf_value_set_name(s->results[i], raf_func_fresh_name(p->func, NULL));
  }
  raf_stmt_insert_before(p->func, s, NULL);
done:
  if (s)
    raf_build_reset_stmt(p);
  else
    raf_build_poison_stmt(p);
  return s;
}

/* Integers written for float attributes are floats (eps = 1). */
static void coerce_attrs(raf_stmt *s, raf_module *m) {
  const raf_op_info *op = &raf_op_table[s->op];
  for (int i = 0; i < s->attrs.n; i++) {
    raf_attr *a = &s->attrs.v[i];
    const raf_attr_spec *spec = raf_spec_find(op->attrs, op->nattrs, a->name);
    if (!spec)
      continue;
    a->name = spec->name; /* the schema's spelling: compared by pointer */
    if (spec->kind == RAF_ATTR_FLOAT && a->kind == RAF_ATTR_INT) {
      a->kind = RAF_ATTR_FLOAT;
      a->val.u.f = (double)a->val.u.i;
    } else if (spec->kind == RAF_ATTR_FLOATS && a->kind == RAF_ATTR_INTS) {
      double *v = RAF_NEW_ARRAY(&m->arena, double, a->val.u.ints.n + 1);
      for (int k = 0; v && k < a->val.u.ints.n; k++)
        v[k] = (double)a->val.u.ints.v[k];
      int n = a->val.u.ints.n;
      a->kind = RAF_ATTR_FLOATS;
      a->val.u.floats.v = v;
      a->val.u.floats.n = n;
    } else if (spec->kind == RAF_ATTR_INTS && a->kind == RAF_ATTR_INT) {
      /* a lone integer where a list is expected stays an error */
    }
  }
}

void raf_build_op(raf_parser *p, raf_span name, raf_loc loc,
                  const raf_attrs *attrs) {
  raf_opcode op;
  if (!raf_op_lookup(name.s, (size_t)name.len, &op) || op == RAF_OP_CONSTANT ||
      op == RAF_OP_CALL || op == RAF_OP_RETURN) {
    /* constant, call and return have syntax of their own: no suggestion. */
    const char *names[RAF_OP_COUNT];
    size_t n = 0;
    for (int i = 0; i < RAF_OP_COUNT; i++)
      if (i != RAF_OP_CONSTANT && i != RAF_OP_CALL && i != RAF_OP_RETURN)
        names[n++] = raf_op_table[i].name;
    const char *near = raf_suggest(name.s, (size_t)name.len, names, n);
    raf_parse_error(p, name.loc, "unknown operator '%.*s'%s%s%s", name.len,
                    name.s, near ? "; did you mean '" : "", near ? near : "",
                    near ? "'?" : "");
    raf_build_poison_stmt(p);
    return;
  }
  raf_stmt *s = finish_stmt(p, op, loc, attrs);
  if (s)
    coerce_attrs(s, p->m);
}

void raf_build_call(raf_parser *p, raf_span callee, raf_loc loc,
                    const raf_attrs *attrs) {
  raf_stmt *s = finish_stmt(p, RAF_OP_CALL, loc, attrs);
  if (s) {
    raf_pending_call c = {s, callee};
    RAF_BUF_PUSH(&p->calls, c);
  }
}

void raf_build_return(raf_parser *p, raf_loc loc) {
  finish_stmt(p, RAF_OP_RETURN, loc, NULL);
}

/* ---- Constants ------------------------------------------------------------ */

static bool store_element(raf_parser *p, raf_dtype dt, raf_span s, void *dst) {
  if (raf_dtype_is_float(dt)) {
    double d = parse_f64(s);
    switch (dt) {
    case RAF_F64: memcpy(dst, &d, 8); break;
    case RAF_F32: { float f = (float)d; memcpy(dst, &f, 4); break; }
    case RAF_F16: { uint16_t h = raf_float_to_half((float)d); memcpy(dst, &h, 2); break; }
    default: { uint16_t h = raf_float_to_bf16((float)d); memcpy(dst, &h, 2); break; }
    }
    return true;
  }
  if (!span_is_integer(s)) {
    raf_parse_error(p, s.loc, "expected an integer for %s, got %.*s",
                    raf_dtype_name(dt), s.len, s.s);
    return false;
  }
  int64_t v;
  if (!parse_i64(p, s, &v))
    return false;
  static const struct { int64_t lo, hi; } range[RAF_DTYPE_COUNT] = {
      [RAF_I64] = {INT64_MIN, INT64_MAX}, [RAF_I32] = {INT32_MIN, INT32_MAX},
      [RAF_I8] = {-128, 127}, [RAF_U8] = {0, 255}, [RAF_BOOL] = {0, 1}};
  if (v < range[dt].lo || v > range[dt].hi) {
    raf_parse_error(p, s.loc, "%lld is out of range for %s", (long long)v,
                    raf_dtype_name(dt));
    return false;
  }
  switch (dt) {
  case RAF_I64: memcpy(dst, &v, 8); break;
  case RAF_I32: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
  default: { uint8_t x = (uint8_t)v; memcpy(dst, &x, 1); break; }
  }
  return true;
}

void raf_build_constant(raf_parser *p, raf_loc loc, raf_loc lit_loc,
                        const raf_attrs *attrs, raf_type *t) {
  raf_const *c = NULL;
  bool ok = t && !p->lit_error && p->func;
  if (ok && p->lit_rank > 0) {
    bool same = p->lit_rank == t->rank;
    for (int i = 0; same && i < t->rank; i++)
      same = p->lit_dims[i + 1] == t->dims[i];
    if (!same) {
      char tb[128], lb[160];
      raf_type_str(t, tb, sizeof tb);
      int n = snprintf(lb, sizeof lb, "[");
      for (int i = 0; i < p->lit_rank && n < (int)sizeof lb; i++)
        n += snprintf(lb + n, sizeof lb - (size_t)n, i ? ",%lld" : "%lld",
                      (long long)p->lit_dims[i + 1]);
      raf_parse_error(p, lit_loc, "constant has shape %s] but its type is %s",
                      lb, tb);
      ok = false;
    }
  }
  if (ok) {
    int64_t count = p->lit_rank == 0 ? 1 : t->numel;
    int size = raf_dtype_size(t->dtype);
    c = RAF_NEW(&p->m->arena, raf_const);
    void *data = raf_arena_alloc(&p->m->arena, (size_t)(count * size));
    if (!c || !data)
      ok = false;
    for (int64_t i = 0; ok && i < count; i++)
      ok = store_element(p, t->dtype, RAF_BUF_AT(&p->lit, raf_span, i),
                         (char *)data + i * size);
    if (ok) {
      c->count = count;
      c->splat = p->lit_rank == 0 && t->rank > 0;
      c->data = data;
    }
  }
  if (!ok) {
    raf_build_poison_stmt(p);
    return;
  }
  RAF_BUF_PUSH(&p->types, t);
  raf_stmt *s = finish_stmt(p, RAF_OP_CONSTANT, loc, attrs);
  if (s)
    s->cdata = c;
}

void raf_build_lit_scalar(raf_parser *p, raf_span n) {
  if (p->lit.n == 0 && p->lit_depth == 0) {
    p->lit_rank = 0;
    p->lit_error = 0;
  }
  /* The first element fixes the rank, unless an empty list came first
   * (`[[], 1]`). */
  if (p->lit.n == 0 && (p->lit_rank < 0 || p->lit_depth == 0))
    p->lit_rank = p->lit_depth;
  else if (p->lit_rank != p->lit_depth && !p->lit_error) {
    raf_parse_error(p, n.loc, "constant elements are nested unevenly");
    p->lit_error = 1;
  }
  if (p->lit_depth > 0 && p->lit_depth <= RAF_MAX_RANK)
    p->lit_count[p->lit_depth]++;
  RAF_BUF_PUSH(&p->lit, n);
}

void raf_build_lit_open(raf_parser *p, raf_loc loc) {
  if (p->lit_depth == 0) { /* a new literal */
    p->lit.n = 0;
    p->lit_error = 0;
    p->lit_rank = -1;
    for (int i = 0; i <= RAF_MAX_RANK; i++)
      p->lit_dims[i] = -1;
  }
  /* lit_depth counts every level; only the first RAF_MAX_RANK are
   * recorded, the literal being an error below them. */
  p->lit_depth++;
  if (p->lit_depth > RAF_MAX_RANK) {
    if (!p->lit_error)
      raf_parse_error(p, loc, "constant nested deeper than rank %d",
                      RAF_MAX_RANK);
    p->lit_error = 1;
    return;
  }
  p->lit_count[p->lit_depth] = 0;
}

void raf_build_lit_close(raf_parser *p, raf_loc loc) {
  int d = p->lit_depth;
  if (d > RAF_MAX_RANK || d < 1) {
    p->lit_depth--;
    return;
  }
  if (p->lit_dims[d] < 0)
    p->lit_dims[d] = p->lit_count[d];
  else if (p->lit_dims[d] != p->lit_count[d] && !p->lit_error) {
    raf_parse_error(p, loc, "constant rows differ in length (%lld vs %lld)",
                    (long long)p->lit_dims[d], (long long)p->lit_count[d]);
    p->lit_error = 1;
  }
  if (p->lit_count[d] == 0) { /* an empty list: its depth is the rank */
    if (p->lit_rank < 0)
      p->lit_rank = d;
    else if (p->lit_rank != d && !p->lit_error) { /* `[1, []]` */
      raf_parse_error(p, loc, "constant elements are nested unevenly");
      p->lit_error = 1;
    }
  }
  p->lit_depth--;
  if (p->lit_depth > 0 && p->lit_depth <= RAF_MAX_RANK)
    p->lit_count[p->lit_depth]++;
}

/* ---- Types ---------------------------------------------------------------- */

void raf_build_dim(raf_parser *p, raf_span n) {
  int64_t v;
  if (!parse_i64(p, n, &v))
    v = -1;
  else if (v < 0)
    raf_parse_error(p, n.loc, "dimension must not be negative: %lld",
                    (long long)v);
  RAF_BUF_PUSH(&p->dims, v);
}

raf_type *raf_build_type(raf_parser *p, raf_span dtype) {
  raf_dtype dt;
  raf_dtype_from_name(dtype.s, (size_t)dtype.len, &dt);
  int rank = p->dims.n;
  p->dims.n = 0;
  if (rank > RAF_MAX_RANK) {
    raf_parse_error(p, dtype.loc, "rank %d exceeds the maximum of %d", rank,
                    RAF_MAX_RANK);
    return NULL;
  }
  const int64_t *dims = p->dims.v;
  int64_t numel = 1;
  bool fits = true;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0)
      return NULL;
    if (numel != 0 && dims[i] > INT64_MAX / numel)
      fits = false;
    else
      numel *= dims[i];
  }
  /* Element counts are int64_t everywhere. */
  if (!fits && numel != 0) {
    raf_parse_error(p, dtype.loc, "type has more than %lld elements",
                    (long long)INT64_MAX);
    return NULL;
  }
  return raf_type_get(p->m, dt, rank, dims);
}

/* ---- Attributes ----------------------------------------------------------- */

void raf_build_attrs_begin(raf_parser *p) { p->attrs.n = 0; }

void raf_build_attr_push(raf_parser *p, const raf_attr *a) {
  RAF_BUF_PUSH(&p->attrs, *a);
}

raf_attrs raf_build_attrs_end(raf_parser *p) {
  raf_attrs r = {raf_arena_memdup(&p->m->arena, p->attrs.v,
                                  sizeof(raf_attr) * (size_t)p->attrs.n),
                 p->attrs.n};
  p->attrs.n = 0;
  return r;
}

static raf_attr named(raf_parser *p, raf_span name, raf_attr a) {
  a.name = raf_ctx_intern_span(p->ctx, name.s, (size_t)name.len);
  a.loc = name.loc;
  return a;
}

raf_attr raf_build_flag(raf_parser *p, raf_span name) {
  return named(p, name, raf_build_bool_attr(true));
}

/* {dialect = "NAME"} names a row of lang/dialects.def: resolved here,
 * once, so that no later reader looks the name up, and an unknown one is
 * an error where it is written. */
static void resolve_dialect(raf_parser *p, raf_attr *a) {
  raf_dialect d;
  const char *name = a->val.u.s ? a->val.u.s : "";
  if (raf_dialect_from_name(name, strlen(name), &d)) {
    a->kind = RAF_ATTR_DIALECT;
    a->val.u.dialect = d;
    return;
  }
  const char *names[RAF_DIALECT_COUNT];
  char known[256] = "";
  for (int i = 0; i < RAF_DIALECT_COUNT; i++) {
    names[i] = raf_dialect_get((raf_dialect)i)->name;
    snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
             i ? ", " : "", names[i]);
  }
  const char *near = raf_suggest(name, strlen(name), names, RAF_DIALECT_COUNT);
  raf_parse_error(p, a->loc, "unknown dialect \"%s\"%s%s%s (known: %s)", name,
                  near ? "; did you mean '" : "", near ? near : "",
                  near ? "'?" : "", known);
}

void raf_build_attr_name(raf_parser *p, raf_attr *a, raf_span name) {
  *a = named(p, name, *a);
  if (a->kind == RAF_ATTR_STRING && strcmp(a->name, "dialect") == 0 &&
      !p->bad_string)
    resolve_dialect(p, a);
}

raf_attr raf_build_int_attr(raf_parser *p, raf_span n) {
  raf_attr a = {0};
  a.kind = RAF_ATTR_INT;
  parse_i64(p, n, &a.val.u.i);
  return a;
}

raf_attr raf_build_float_attr(raf_parser *p, raf_span n) {
  (void)p;
  raf_attr a = {0};
  a.kind = RAF_ATTR_FLOAT;
  a.val.u.f = parse_f64(n);
  return a;
}

raf_attr raf_build_string_attr(raf_parser *p, raf_span s) {
  raf_attr a = {0};
  a.kind = RAF_ATTR_STRING;
  char *out = raf_arena_alloc(&p->m->arena, (size_t)s.len + 1);
  int n = 0;
  /* Strip the quotes and undo the \" and \\ escapes. */
  int end = s.len > 1 && s.s[s.len - 1] == '"' ? s.len - 1 : s.len;
  p->bad_string = end == s.len;
  for (int i = 1; out && i < end; i++) {
    if (s.s[i] == '\\' && i + 1 < end) {
      i++;
      if (s.s[i] != '"' && s.s[i] != '\\') {
        raf_loc at = s.loc;
        at.col += (uint32_t)i - 1;
        p->bad_string = true;
        raf_parse_error(p, at, "unknown escape '\\%c' in string (only \\\" "
                        "and \\\\ are escapes)", s.s[i]);
      }
    }
    out[n++] = s.s[i];
  }
  a.val.u.s = out ? out : "";
  return a;
}

raf_attr raf_build_bool_attr(bool b) {
  raf_attr a = {0};
  a.kind = RAF_ATTR_BOOL;
  a.val.u.b = b;
  return a;
}

raf_attr raf_build_dtype_attr(raf_span s) {
  raf_attr a = {0};
  a.kind = RAF_ATTR_DTYPE;
  raf_dtype_from_name(s.s, (size_t)s.len, &a.val.u.dt);
  return a;
}

raf_attr raf_build_value_attr(raf_parser *p, raf_span name) {
  raf_attr a = {0};
  a.kind = RAF_ATTR_VALUE;
  if (p->func)
    a.val.u.value = resolve_value(p, name);
  return a;
}

raf_attr raf_build_func_attr(raf_parser *p, raf_span name) {
  raf_attr a = {0};
  a.kind = RAF_ATTR_FUNC;
  p->nfuncrefs++;
  /* Functions may be defined later: the name rides in the string member
   * until parse.c resolves every function attribute of the module. */
  a.val.u.s = span_dup(p, name, 1);
  return a;
}

raf_attr raf_build_list_attr(raf_parser *p) {
  raf_attr a = {0};
  int n = p->nums.n;
  bool all_int = true;
  for (int i = 0; i < n; i++)
    all_int = all_int && span_is_integer(RAF_BUF_AT(&p->nums, raf_span, i));
  if (all_int) {
    int64_t *v = RAF_NEW_ARRAY(&p->m->arena, int64_t, n + 1);
    for (int i = 0; v && i < n; i++)
      parse_i64(p, RAF_BUF_AT(&p->nums, raf_span, i), &v[i]);
    a.kind = RAF_ATTR_INTS;
    a.val.u.ints.v = v;
    a.val.u.ints.n = v ? n : 0;
  } else {
    double *v = RAF_NEW_ARRAY(&p->m->arena, double, n + 1);
    for (int i = 0; v && i < n; i++)
      v[i] = parse_f64(RAF_BUF_AT(&p->nums, raf_span, i));
    a.kind = RAF_ATTR_FLOATS;
    a.val.u.floats.v = v;
    a.val.u.floats.n = v ? n : 0;
  }
  p->nums.n = 0;
  return a;
}
