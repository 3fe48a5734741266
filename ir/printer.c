/* printer.c: the canonical text of a module, and its Graphviz picture.
 *
 * Canonical means that printing, parsing and printing again gives the same
 * bytes (docs/LangRef.md, "Printing"): names are kept as they are, attributes come in schema
 * order with defaults left out, a true flag is printed as its bare name, and
 * every float is printed with the fewest digits that parse back to the same
 * bits of its type. Output goes through a local buffer because a module of a
 * million statements must print in well under a second.
 */
#include "ir/ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
  FILE *f;
  size_t n;
  char buf[1 << 16];
} out;

static void flush(out *o) {
  fwrite(o->buf, 1, o->n, o->f);
  o->n = 0;
}

static void put(out *o, const char *s, size_t len) {
  if (o->n + len > sizeof o->buf) {
    flush(o);
    if (len > sizeof o->buf) {
      fwrite(s, 1, len, o->f);
      return;
    }
  }
  memcpy(o->buf + o->n, s, len);
  o->n += len;
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void put_int(out *o, int64_t v) {
  char b[24];
  int i = sizeof b;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    b[--i] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    b[--i] = '-';
  put(o, b + i, sizeof b - (size_t)i);
}

/* Does text parse back to the same value of dtype dt? */
static bool round_trips(const char *text, double v, raf_dtype dt) {
  double back = strtod(text, NULL);
  switch (dt) {
  case RAF_F32:
    return (float)back == (float)v;
  case RAF_F16:
    return raf_float_to_half((float)back) == raf_float_to_half((float)v);
  case RAF_BF16:
    return raf_float_to_bf16((float)back) == raf_float_to_bf16((float)v);
  default:
    return back == v;
  }
}

/* Shortest text for v as a value of dt that reads as a float. */
static void format_float(double v, raf_dtype dt, char *buf, size_t size) {
  if (isnan(v)) {
    snprintf(buf, size, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, size, v < 0 ? "-inf" : "inf");
    return;
  }
  /* The fewest significant digits that read back to the same bits, then,
   * as Python's repr: plain decimals for exponents in [-4, 16), else
   * scientific (10.0, 1000.0, 0.001, but 1e-05 and 1e+16). */
  int prec = 1;
  for (; prec < 17; prec++) {
    snprintf(buf, size, "%.*e", prec - 1, v);
    if (round_trips(buf, v, dt))
      break;
  }
  snprintf(buf, size, "%.*e", prec - 1, v);
  const char *e = strchr(buf, 'e');
  int exp10 = e ? atoi(e + 1) : 0;
  if (e && exp10 >= -4 && exp10 < 16) {
    /* Place the point among the shortest digits, padding with zeros. */
    char digits[24], *d = digits, fixed[48];
    int n = 0, k = 0;
    for (const char *c = buf; c < e; c++)
      if (*c >= '0' && *c <= '9')
        digits[n++] = *c;
    if (v < 0 || (v == 0 && signbit(v)))
      fixed[k++] = '-';
    if (exp10 < 0) {
      fixed[k++] = '0';
      fixed[k++] = '.';
      for (int i = 0; i < -exp10 - 1; i++)
        fixed[k++] = '0';
      for (int i = 0; i < n; i++)
        fixed[k++] = d[i];
    } else {
      for (int i = 0; i <= exp10; i++)
        fixed[k++] = i < n ? d[i] : '0';
      fixed[k++] = '.';
      if (n > exp10 + 1)
        for (int i = exp10 + 1; i < n; i++)
          fixed[k++] = d[i];
      else
        fixed[k++] = '0';
    }
    fixed[k] = '\0';
    snprintf(buf, size, "%s", fixed);
  }
  if (!strpbrk(buf, ".en")) {
    size_t n = strlen(buf);
    if (n + 3 <= size)
      memcpy(buf + n, ".0", 3);
  }
}

static void put_float(out *o, double v, raf_dtype dt) {
  char b[40];
  format_float(v, dt, b, sizeof b);
  puts_(o, b);
}

static void put_type(out *o, const raf_type *t) {
  puts_(o, raf_dtype_name(t->dtype));
  put(o, "[", 1);
  for (int i = 0; i < t->rank; i++) {
    if (i)
      put(o, ",", 1);
    put_int(o, t->dims[i]);
  }
  put(o, "]", 1);
}

static void put_maybe_type(out *o, const raf_type *t) {
  if (t)
    put_type(o, t);
  else
    puts_(o, "<unknown>");
}

static void put_value(out *o, const raf_value *v) {
  put(o, "%", 1);
  puts_(o, v ? v->name : "<null>");
}

static void put_string(out *o, const char *s) {
  put(o, "\"", 1);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      put(o, "\\", 1);
    put(o, s, 1);
  }
  put(o, "\"", 1);
}

static void put_attr_value(out *o, const raf_attr *a) {
  const raf_attr_value *v = &a->val;
  switch (a->kind) {
  case RAF_ATTR_BOOL: puts_(o, v->u.b ? "true" : "false"); break;
  case RAF_ATTR_INT: put_int(o, v->u.i); break;
  case RAF_ATTR_FLOAT: put_float(o, v->u.f, RAF_F64); break;
  case RAF_ATTR_STRING: put_string(o, v->u.s ? v->u.s : ""); break;
  case RAF_ATTR_DTYPE: puts_(o, raf_dtype_name(v->u.dt)); break;
  case RAF_ATTR_INTS:
    put(o, "[", 1);
    for (int i = 0; i < v->u.ints.n; i++) {
      if (i)
        put(o, ", ", 2);
      put_int(o, v->u.ints.v[i]);
    }
    put(o, "]", 1);
    break;
  case RAF_ATTR_FLOATS:
    put(o, "[", 1);
    for (int i = 0; i < v->u.floats.n; i++) {
      if (i)
        put(o, ", ", 2);
      put_float(o, v->u.floats.v[i], RAF_F64);
    }
    put(o, "]", 1);
    break;
  case RAF_ATTR_VALUE: put_value(o, v->u.value); break;
  case RAF_ATTR_FUNC:
    put(o, "@", 1);
    puts_(o, v->u.func ? v->u.func->name : "<null>");
    break;
  case RAF_ATTR_DIALECT: put_string(o, raf_dialect_get(v->u.dialect)->name); break;
  case RAF_ATTR_KIND_COUNT: break;
  }
}

static bool is_default(const raf_attr *a, const raf_attr_spec *spec) {
  return spec && spec->flags == 0 && spec->kind == a->kind &&
         raf_attr_value_equal(a->kind, &a->val, &spec->def);
}

static void put_attr(out *o, const raf_attr *a, bool *first) {
  put(o, *first ? " {" : ", ", 2);
  *first = false;
  puts_(o, a->name);
  if (a->kind == RAF_ATTR_BOOL && a->val.u.b)
    return;
  put(o, " = ", 3);
  put_attr_value(o, a);
}

/* Prints " {...}" for the attributes that differ from their defaults: first
 * in the order of the two schemas, then any the schemas do not know. */
static void put_attrs(out *o, const raf_attrs *attrs, const raf_attr_spec *s1,
                      int n1, const raf_attr_spec *s2, int n2) {
  if (attrs->n == 0)
    return;
  bool first = true;
  const raf_attr_spec *schemas[2] = {s1, s2};
  int counts[2] = {n1, n2};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < counts[k]; i++)
      for (int j = 0; j < attrs->n; j++)
        if ((attrs->v[j].name == schemas[k][i].name ||
             strcmp(attrs->v[j].name, schemas[k][i].name) == 0) &&
            !is_default(&attrs->v[j], &schemas[k][i]))
          put_attr(o, &attrs->v[j], &first);
  for (int j = 0; j < attrs->n; j++)
    if (!raf_spec_find(s1, n1, attrs->v[j].name) &&
        !raf_spec_find(s2, n2, attrs->v[j].name))
      put_attr(o, &attrs->v[j], &first);
  if (!first)
    put(o, "}", 1);
}

static void put_entity_attrs(out *o, const raf_attrs *attrs, raf_entity e) {
  int n;
  const raf_attr_spec *s = raf_entity_attrs(e, &n);
  put_attrs(o, attrs, s, n, NULL, 0);
}

static void put_element(out *o, const raf_stmt *s, int64_t i) {
  raf_dtype dt = s->results[0]->type->dtype;
  if (dt == RAF_BOOL)
    puts_(o, raf_const_get_i64(dt, s->cdata, i) ? "true" : "false");
  else if (raf_dtype_is_float(dt))
    put_float(o, raf_const_get_f64(dt, s->cdata, i), dt);
  else
    put_int(o, raf_const_get_i64(dt, s->cdata, i));
}

/* Nested lists of the elements of dims[d..], starting at element *i. */
static void put_dense(out *o, const raf_stmt *s, const raf_type *t, int d,
                      int64_t *i) {
  if (d == t->rank) {
    put_element(o, s, (*i)++);
    return;
  }
  put(o, "[", 1);
  for (int64_t k = 0; k < t->dims[d]; k++) {
    if (k)
      put(o, ", ", 2);
    put_dense(o, s, t, d + 1, i);
  }
  put(o, "]", 1);
}

static void put_stmt(out *o, const raf_stmt *s, unsigned flags) {
  const raf_op_info *op = &raf_op_table[s->op];
  int ns;
  const raf_attr_spec *stmt_specs = raf_entity_attrs(RAF_ENTITY_STMT, &ns);
  put(o, "  ", 2);
  for (int i = 0; i < s->nresults; i++) {
    if (i)
      put(o, ", ", 2);
    put_value(o, s->results[i]);
  }
  if (s->nresults)
    put(o, " = ", 3);
  puts_(o, op->name);
  if (s->op == RAF_OP_CONSTANT) {
    put(o, " ", 1);
    const raf_type *t = s->results[0]->type;
    int64_t i = 0;
    if (s->cdata && s->cdata->splat)
      put_element(o, s, 0);
    else if (s->cdata && t)
      put_dense(o, s, t, 0, &i);
    put_attrs(o, &s->attrs, stmt_specs, ns, NULL, 0);
  } else if (s->op == RAF_OP_RETURN) {
    for (int i = 0; i < s->noperands; i++) {
      put(o, i ? ", " : " ", i ? 2 : 1);
      put_value(o, s->operands[i].value);
    }
  } else {
    if (s->op == RAF_OP_CALL) {
      put(o, " @", 2);
      puts_(o, s->callee ? s->callee->name : "<null>");
    }
    put(o, "(", 1);
    for (int i = 0; i < s->noperands; i++) {
      if (i)
        put(o, ", ", 2);
      put_value(o, s->operands[i].value);
    }
    put(o, ")", 1);
    put_attrs(o, &s->attrs, op->attrs, op->nattrs, stmt_specs, ns);
  }
  for (int i = 0; i < s->nresults; i++) {
    put(o, i ? ", " : " : ", i ? 2 : 3);
    put_maybe_type(o, s->results[i]->type);
  }
  if ((flags & RAF_PRINT_LOC) && s->loc.line) {
    puts_(o, " loc(");
    put_string(o, s->loc.file ? s->loc.file : "");
    put(o, ":", 1);
    put_int(o, s->loc.line);
    put(o, ":", 1);
    put_int(o, s->loc.col);
    put(o, ")", 1);
  }
  put(o, "\n", 1);
}

static void put_func(out *o, const raf_func *f, unsigned flags) {
  puts_(o, "func @");
  puts_(o, f->name);
  put(o, "(", 1);
  for (int i = 0; i < f->nargs; i++) {
    if (i)
      put(o, ", ", 2);
    put_value(o, f->args[i].value);
    put(o, ": ", 2);
    put_maybe_type(o, f->args[i].value->type);
    put_entity_attrs(o, &f->args[i].attrs, RAF_ENTITY_ARG);
  }
  puts_(o, ") -> ");
  bool bare = f->nresults == 1 && f->results[0].attrs.n == 0;
  if (!bare)
    put(o, "(", 1);
  for (int i = 0; i < f->nresults; i++) {
    if (i)
      put(o, ", ", 2);
    put_maybe_type(o, f->results[i].type);
    put_entity_attrs(o, &f->results[i].attrs, RAF_ENTITY_RESULT);
  }
  if (!bare)
    put(o, ")", 1);
  put_entity_attrs(o, &f->attrs, RAF_ENTITY_FUNC);
  puts_(o, " {\n");
  for (const raf_stmt *s = f->first; s; s = s->next)
    put_stmt(o, s, flags);
  puts_(o, "}\n");
}

void raf_print_module(const raf_module *m, FILE *f, unsigned flags) {
  out *o = malloc(sizeof *o);
  if (!o)
    return;
  o->f = f;
  o->n = 0;
  for (const raf_func *fn = m->first; fn; fn = fn->next) {
    if (fn != m->first)
      put(o, "\n", 1);
    put_func(o, fn, flags);
  }
  flush(o);
  free(o);
}

/* ---- Graphviz ------------------------------------------------------------- */

void raf_print_dot(const raf_module *m, FILE *f) {
  fprintf(f, "digraph raf {\n  node [shape=box, fontname=\"monospace\"];\n");
  int k = 0;
  for (const raf_func *fn = m->first; fn; fn = fn->next, k++) {
    fprintf(f, "  subgraph cluster_%d {\n    label=\"@%s\";\n", k, fn->name);
    for (int i = 0; i < fn->nargs; i++) {
      char t[128];
      raf_type_str(fn->args[i].value->type, t, sizeof t);
      fprintf(f, "    \"%d.%s\" [shape=ellipse, label=\"%%%s: %s\"];\n", k,
              fn->args[i].value->name, fn->args[i].value->name, t);
    }
    /* A statement's node is named after its first result; value names are
     * unique in a function, so nodes never clash. */
    for (const raf_stmt *s = fn->first; s; s = s->next) {
      const char *label = s->op == RAF_OP_CALL && s->callee
                              ? s->callee->name
                              : raf_op_table[s->op].name;
      fprintf(f, "    \"%d.%s\" [label=\"%s%s", k,
              s->nresults ? s->results[0]->name : "return",
              s->op == RAF_OP_CALL ? "call @" : "", label);
      for (int i = 0; i < s->nresults; i++) {
        char t[128] = "?";
        if (s->results[i]->type)
          raf_type_str(s->results[i]->type, t, sizeof t);
        fprintf(f, "\\n%%%s: %s", s->results[i]->name, t);
      }
      fprintf(f, "\"];\n");
      for (int i = 0; i < s->noperands; i++) {
        const raf_value *v = s->operands[i].value;
        if (v)
          fprintf(f, "    \"%d.%s\" -> \"%d.%s\";\n", k,
                  v->def ? v->def->results[0]->name : v->name, k,
                  s->nresults ? s->results[0]->name : "return");
      }
    }
    fprintf(f, "  }\n");
  }
  fprintf(f, "}\n");
}
