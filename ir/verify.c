/* verify.c: the verifier: every rule of the language that the types alone
 * do not enforce.
 *
 * It checks, reporting each violation with its location and going on:
 *  - functions: argument, result and function attributes; the body ends with
 *    the one `return`, whose operands match the signature; no call cycles;
 *  - statements: operands defined in the same function before their use
 *    (SSA dominance in straight-line code); attributes known, of the right
 *    kind, given once, required ones present;
 *  - types: every statement's result types are those its op infers, so
 *    shapes, operand counts, calls against callees and ranges are checked by
 *    the shape functions of ir/infer.c;
 *  - an async collective's result is read by one wait, and a wait reads
 *    one;
 *  - memory plans ({arena}, offsets, inplace, donated), when all the rest
 *    holds: ir/memplan.c.
 * Passes are run with the verifier after each one (--verify-each), so it
 * must be fast: linear in the size of the module (the plan check: in the
 * number of values times the values alive at once).
 */
#include "ir/ir.h"
#include "ir/memplan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct verifier {
  raf_ctx *ctx;
  raf_module *m;
  bool ok;
  bool has_calls; /* only then can there be a call cycle */
  /* After parse-time inference failed (raf_verify_unreported): statements
   * left without result types were reported by the parser, and operands
   * without types come from them, so neither is reported again. */
  bool partial;
} verifier;

__attribute__((format(printf, 3, 4))) static void fail(verifier *v,
                                                       raf_loc loc,
                                                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  raf_diag_vreport(v->ctx, loc, RAF_SEV_ERROR, fmt, ap);
  va_end(ap);
  v->ok = false;
}

static const char *type_str(const raf_type *t, char *buf, size_t n) {
  if (t)
    raf_type_str(t, buf, n);
  else
    snprintf(buf, n, "<unknown>");
  return buf;
}

/* The attribute of the two schemas that name most likely misspells. */
static const char *closest_attr(const char *name, const raf_attr_spec *s1,
                                int n1, const raf_attr_spec *s2, int n2) {
  const char *names[64];
  size_t n = 0;
  for (int i = 0; i < n1 && n < 64; i++)
    names[n++] = s1[i].name;
  for (int i = 0; i < n2 && n < 64; i++)
    names[n++] = s2[i].name;
  return raf_suggest(name, strlen(name), names, n);
}

/* Checks attrs against a schema (and, for statements, the universal one). */
static void check_attrs(verifier *v, const raf_attrs *attrs, raf_loc loc,
                        const char *what, const raf_attr_spec *s1, int n1,
                        const raf_attr_spec *s2, int n2) {
  for (int i = 0; i < attrs->n; i++) {
    const raf_attr *a = &attrs->v[i];
    raf_loc at = a->loc.line ? a->loc : loc;
    for (int j = 0; j < i; j++)
      if (strcmp(attrs->v[j].name, a->name) == 0)
        fail(v, at, "%s: attribute '%s' is given twice", what, a->name);
    const raf_attr_spec *spec = raf_spec_find(s1, n1, a->name);
    if (!spec)
      spec = raf_spec_find(s2, n2, a->name);
    if (!spec) {
      const char *near = closest_attr(a->name, s1, n1, s2, n2);
      fail(v, at, "%s: unknown attribute '%s'%s%s%s", what, a->name,
           near ? "; did you mean '" : "", near ? near : "",
           near ? "'?" : "");
      continue;
    }
    if (spec->kind != a->kind) {
      fail(v, at, "%s: attribute '%s' must be %s, not %s", what, a->name,
           raf_attr_kind_desc(spec->kind), raf_attr_kind_desc(a->kind));
      continue;
    }
    if (spec->choices && a->kind == RAF_ATTR_STRING) {
      /* choices is "a|b|c": match a whole alternative */
      size_t len = strlen(a->val.u.s);
      bool found = false;
      for (const char *c = spec->choices; *c && !found;) {
        const char *bar = strchr(c, '|');
        size_t n = bar ? (size_t)(bar - c) : strlen(c);
        found = n == len && memcmp(c, a->val.u.s, n) == 0;
        c += n + (bar ? 1 : 0);
      }
      if (!found)
        fail(v, at, "%s: attribute '%s' must be one of %s, not \"%s\"", what,
             a->name, spec->choices, a->val.u.s);
    }
  }
  const raf_attr_spec *schemas[2] = {s1, s2};
  int counts[2] = {n1, n2};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < counts[k]; i++)
      if ((schemas[k][i].flags & RAF_SPEC_REQUIRED) &&
          !raf_attrs_find(attrs, schemas[k][i].name))
        fail(v, loc, "%s: missing required attribute '%s'", what,
             schemas[k][i].name);
}

static void check_entity_attrs(verifier *v, const raf_attrs *attrs,
                               raf_loc loc, const char *what, raf_entity e) {
  int n;
  const raf_attr_spec *s = raf_entity_attrs(e, &n);
  check_attrs(v, attrs, loc, what, s, n, NULL, 0);
}

/* A `sharded = [dims]` argument holds one rank's part of the full tensor of
 * those dims, flattened and zero-padded to a multiple of the function's
 * `world`: a vector of ceil(numel / world) elements. */
static void check_sharded_arg(verifier *v, const raf_func *f,
                              const raf_arg *a, const char *what) {
  const raf_attr *sh = raf_attrs_find(&a->attrs, "sharded");
  if (!sh || sh->kind != RAF_ATTR_INTS)
    return;
  const raf_attr *world = raf_attrs_find(&f->attrs, "world");
  if (!world || world->kind != RAF_ATTR_INT || world->val.u.i < 1) {
    fail(v, sh->loc, "%s: sharded needs the function attribute world = N",
         what);
    return;
  }
  int64_t numel = 1;
  for (int i = 0; i < sh->val.u.ints.n; i++) {
    int64_t d = sh->val.u.ints.v[i];
    if (d < 0 || (d && numel > INT64_MAX / d)) {
      fail(v, sh->loc, "%s: bad sharded shape", what);
      return;
    }
    numel *= d;
  }
  int64_t part = (numel + world->val.u.i - 1) / world->val.u.i;
  const raf_type *t = a->value->type;
  if (t->rank != 1 || t->dims[0] != part) {
    char buf[128];
    fail(v, sh->loc,
         "%s: a part of %lld elements over world = %lld is %s[%lld], not %s",
         what, (long long)numel, (long long)world->val.u.i,
         raf_dtype_name(t->dtype), (long long)part,
         type_str(t, buf, sizeof buf));
  }
}

static void check_signature(verifier *v, raf_func *f) {
  char what[160];
  for (int i = 0; i < f->nargs; i++) {
    raf_arg *a = &f->args[i];
    snprintf(what, sizeof what, "argument %%%s", a->value->name);
    check_entity_attrs(v, &a->attrs, a->value->loc, what, RAF_ENTITY_ARG);
    if (raf_arg_flag(a, "param") && raf_arg_flag(a, "state"))
      fail(v, a->value->loc, "%s: cannot be both param and state", what);
    const raf_attr *init = raf_attrs_find(&a->attrs, "init");
    if (init && init->kind == RAF_ATTR_STRING && !raf_init_parse(init->val.u.s, NULL))
      fail(v, init->loc,
           "%s: bad init \"%s\" (expected \"zeros\", \"ones\", "
           "\"normal(MEAN, STD)\" or \"uniform(LOW, HIGH)\")",
           what, init->val.u.s);
    check_sharded_arg(v, f, a, what);
  }
  for (int i = 0; i < f->nresults; i++) {
    raf_result_sig *r = &f->results[i];
    snprintf(what, sizeof what, "result %d of @%s", i, f->name);
    check_entity_attrs(v, &r->attrs, f->loc, what, RAF_ENTITY_RESULT);
    const raf_attr *up = raf_attrs_find(&r->attrs, "updates");
    if (!up || up->kind != RAF_ATTR_VALUE)
      continue;
    raf_value *arg = up->val.u.value;
    if (!arg || arg->def || arg->index < 0 || arg->func != f) {
      fail(v, up->loc, "%s: updates must name an argument of @%s", what,
           f->name);
    } else if (arg->type != r->type) {
      char a[128], b[128];
      fail(v, up->loc, "%s: updates %%%s of type %s with a result of type %s",
           what, arg->name, type_str(arg->type, a, sizeof a),
           type_str(r->type, b, sizeof b));
    } else {
      /* One buffer, one new value: two results may not update it. */
      for (int j = 0; j < i; j++) {
        const raf_attr *o = raf_attrs_find(&f->results[j].attrs, "updates");
        if (o && o->kind == RAF_ATTR_VALUE && o->val.u.value == arg) {
          fail(v, up->loc, "%s: result %d already updates %%%s", what, j,
               arg->name);
          break;
        }
      }
    }
  }
  snprintf(what, sizeof what, "function @%s", f->name);
  check_entity_attrs(v, &f->attrs, f->loc, what, RAF_ENTITY_FUNC);
}

static void check_return(verifier *v, raf_func *f, raf_stmt *ret) {
  if (ret->noperands != f->nresults) {
    fail(v, ret->loc, "return: @%s returns %d value%s, not %d", f->name,
         f->nresults, f->nresults == 1 ? "" : "s", ret->noperands);
    return;
  }
  for (int i = 0; i < ret->noperands; i++) {
    raf_value *x = ret->operands[i].value;
    if (v->partial && x && !x->type)
      continue;
    if (x && x->type != f->results[i].type) {
      char a[128], b[128];
      fail(v, ret->loc, "return: value %d has type %s but @%s returns %s", i,
           type_str(x->type, a, sizeof a), f->name,
           type_str(f->results[i].type, b, sizeof b));
    }
  }
}

/* base: the first order given in this walk; earlier orders are stale. */
static void check_stmt(verifier *v, raf_func *f, raf_stmt *s, int64_t base) {
  const raf_op_info *op = &raf_op_table[s->op];
  bool operands_ok = true;
  for (int i = 0; i < s->noperands; i++) {
    raf_value *x = s->operands[i].value;
    raf_loc at = s->operands[i].loc.line ? s->operands[i].loc : s->loc;
    if (!x) {
      fail(v, at, "%s: operand %d is missing", op->name, i);
      operands_ok = false;
    } else if (x->func != f) {
      fail(v, at, "%s: operand %%%s belongs to another function",
           op->name, x->name);
      operands_ok = false;
    } else if (x->def ? (x->def->func != f || x->def->order < base ||
                         x->def->order >= s->order)
                      : (x->index < 0 || x->index >= f->nargs ||
                         f->args[x->index].value != x)) {
      fail(v, at, "%s: operand %%%s is used before its definition",
           op->name, x->name);
      operands_ok = false;
    }
  }
  if (v->partial)
    for (int i = 0; i < s->nresults; i++)
      if (!s->results[i]->type)
        return; /* the parser checked the rest and reported what it found */
  int ns;
  const raf_attr_spec *stmt_specs = raf_entity_attrs(RAF_ENTITY_STMT, &ns);
  size_t before = raf_error_count(v->ctx);
  check_attrs(v, &s->attrs, s->loc, op->name, op->attrs, op->nattrs,
              stmt_specs, ns);
  if (s->op == RAF_OP_CONSTANT && !s->cdata)
    fail(v, s->loc, "constant: no data");
  if (!operands_ok || raf_error_count(v->ctx) != before)
    return; /* inference would only repeat the problem */
  if (v->partial) {
    if (s->op == RAF_OP_CALL && !s->callee)
      return;
    for (int i = 0; i < s->noperands; i++)
      if (!s->operands[i].value->type)
        return;
  }
  raf_type *stack[16];
  raf_type **types = s->nresults <= 16
                         ? stack
                         : malloc(sizeof(raf_type *) * (size_t)s->nresults);
  if (!types)
    return;
  if (raf_infer_stmt(v->m, s, types, s->nresults) != RAF_OK) {
    v->ok = false;
  } else {
    for (int i = 0; i < s->nresults; i++)
      if (types[i] != s->results[i]->type) {
        char a[128], b[128];
        fail(v, s->loc, "%s: result %%%s has type %s but %s infers %s",
             op->name, s->results[i]->name,
             type_str(s->results[i]->type, a, sizeof a), op->name,
             type_str(types[i], b, sizeof b));
      }
  }
  if (types != stack)
    free(types);
}

/* An async collective and its wait come in pairs: the collective's
 * result is read by one `wait` and by nothing else (not even the return),
 * since until the wait the dialect may still be writing it. */
static void check_async(verifier *v, const raf_stmt *s) {
  if (s->op == RAF_OP_WAIT) {
    const raf_value *x = s->operands[0].value;
    if (x && !raf_stmt_is_async(x->def))
      fail(v, s->operands[0].loc.line ? s->operands[0].loc : s->loc,
           "wait: %%%s is not the result of an async collective", x->name);
    return;
  }
  if (!raf_stmt_is_async(s))
    return;
  int waits = 0, others = 0;
  for (const raf_use *u = s->results[0]->uses; u; u = u->next)
    *(u->user->op == RAF_OP_WAIT ? &waits : &others) += 1;
  if (waits != 1 || others)
    fail(v, s->loc,
         "%s: the result %%%s of an async collective must be read by one "
         "wait and nothing else (it has %d wait%s and %d other reader%s)",
         raf_op_table[s->op].name, s->results[0]->name, waits,
         waits == 1 ? "" : "s", others, others == 1 ? "" : "s");
}

static void check_func(verifier *v, raf_func *f) {
  check_signature(v, f);
  int64_t base = v->m->order_clock;
  if (!f->last || f->last->op != RAF_OP_RETURN)
    fail(v, f->last ? f->last->loc : f->loc,
         "function @%s does not end with return", f->name);
  for (raf_stmt *s = f->first; s; s = s->next) {
    /* Numbering as we go: an operand's definition was visited earlier in
     * this walk exactly when its order lies in [base, s->order). */
    s->order = v->m->order_clock++;
    if (s->op == RAF_OP_CALL)
      v->has_calls = true;
    if (s->func != f) {
      fail(v, s->loc, "statement is linked into @%s but belongs elsewhere",
           f->name);
      continue;
    }
    if (s->op == RAF_OP_RETURN) {
      if (s->next)
        fail(v, s->loc, "return must be the last statement of @%s", f->name);
      check_return(v, f, s);
    }
    check_stmt(v, f, s, base);
    check_async(v, s);
  }
}

/* Depth-first search for a call cycle through f; mark: 0 new, 1 on the
 * stack, 2 done. Marks live in a scratch map keyed by function name. */
static bool calls_cycle(verifier *v, raf_func *f, raf_strmap *marks) {
  size_t len = strlen(f->name);
  uintptr_t mark = (uintptr_t)raf_strmap_get(marks, f->name, len);
  if (mark == 1)
    return true;
  if (mark == 2)
    return false;
  raf_strmap_put(marks, f->name, len, (void *)1);
  for (raf_stmt *s = f->first; s; s = s->next)
    if (s->op == RAF_OP_CALL && s->callee && calls_cycle(v, s->callee, marks)) {
      fail(v, s->loc, "call: @%s is reached again through this call "
                      "(recursion is not allowed)", s->callee->name);
      raf_strmap_put(marks, f->name, len, (void *)2);
      return false; /* one report per cycle */
    }
  raf_strmap_put(marks, f->name, len, (void *)2);
  return false;
}

bool raf_verify_stmt_attrs(raf_ctx *ctx, raf_module *m, const raf_stmt *s) {
  verifier v = {ctx, m, true, false, false};
  int ns;
  const raf_attr_spec *stmt_specs = raf_entity_attrs(RAF_ENTITY_STMT, &ns);
  const raf_op_info *op = &raf_op_table[s->op];
  check_attrs(&v, &s->attrs, s->loc, op->name, op->attrs, op->nattrs,
              stmt_specs, ns);
  return v.ok;
}

static raf_status verify(raf_ctx *ctx, raf_module *m, bool partial) {
  verifier v = {ctx, m, true, false, partial};
  for (raf_func *f = m->first; f; f = f->next)
    check_func(&v, f);
  if (v.has_calls) {
    raf_strmap marks;
    raf_strmap_init(&marks);
    for (raf_func *f = m->first; f; f = f->next)
      calls_cycle(&v, f, &marks);
    raf_strmap_free(&marks);
  }
  /* Memory plans (ir/memplan.c), once the rest holds. */
  if (v.ok && !partial && raf_mem_verify_module(ctx, m) != RAF_OK)
    v.ok = false;
  return v.ok ? RAF_OK : RAF_ERROR;
}

raf_status raf_verify_module(raf_ctx *ctx, raf_module *m) {
  return verify(ctx, m, false);
}

void raf_verify_unreported(raf_ctx *ctx, raf_module *m) {
  verify(ctx, m, true);
}
