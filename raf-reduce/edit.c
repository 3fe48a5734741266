/* edit.c: the IR edits that raf-reduce's reductions share.
 *
 * A reduction takes something out of a module: a statement, a result, an
 * argument, an attribute, part of a shape. What depended on it must be left
 * well formed, and these helpers do that with the builder of ir/ir.h:
 *
 * - a value that goes away is replaced by a stand-in of the same type
 *   (reduce_stand_in): an argument when there is one of that type or the
 *   signature is free to grow, else a zero constant. Arguments are preferred
 *   because they are not statements, and a new one carries an `init`
 *   attribute so that raf-run can still make every argument;
 * - a result or argument that goes is removed from the signature, the
 *   return and every call site together;
 * - after a type or attribute changes, every type is inferred again
 *   (reduce_reinfer), which either gives a consistent module or says that
 *   the candidate is invalid.
 *
 * Nothing here verifies: the driver verifies every candidate before it is
 * tested. Everything allocated lives in the module's arena.
 */
#include "raf-reduce/reduce.h"

#include <stdlib.h>
#include <string.h>

reduce_callees reduce_callees_of(raf_module *m) {
  reduce_callees c = {NULL, 0};
  size_t cap = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next) {
      if (s->op != RAF_OP_CALL || !s->callee ||
          reduce_is_called(&c, s->callee))
        continue;
      if (c.n == cap) {
        cap = cap ? 2 * cap : 8;
        raf_func **v = realloc(c.v, cap * sizeof *v);
        if (!v)
          return c; /* then every function reads as uncalled but these */
        c.v = v;
      }
      c.v[c.n++] = s->callee;
    }
  return c;
}

bool reduce_is_called(const reduce_callees *c, const raf_func *f) {
  for (size_t i = 0; i < c->n; i++)
    if (c->v[i] == f)
      return true;
  return false;
}

/* What raf-run draws a new argument from: floats from a standard normal
 * (zeros would hide most miscompiles), other types as zeros (valid indices
 * for take, false for bool). */
static const char *init_for(raf_dtype dt) {
  return raf_dtype_is_float(dt) ? "normal(0, 1)" : "zeros";
}

static raf_value *new_arg(raf_func *f, raf_type *t) {
  raf_arena *a = &f->module->arena;
  const char *name = raf_func_fresh_name(f, "arg");
  raf_value *v = name ? raf_func_add_arg(f, name, t, f->loc) : NULL;
  raf_attr *init = RAF_NEW(a, raf_attr);
  if (!v || !init)
    return NULL;
  int n;
  const raf_attr_spec *specs = raf_entity_attrs(RAF_ENTITY_ARG, &n);
  const raf_attr_spec *spec = raf_spec_find(specs, n, "init");
  init->name = spec ? spec->name : "init";
  init->kind = RAF_ATTR_STRING;
  init->val.u.s = init_for(t->dtype);
  init->loc = f->loc;
  f->args[v->index].attrs = (raf_attrs){init, 1};
  return v;
}

static raf_value *zero_constant(raf_func *f, raf_type *t) {
  raf_module *m = f->module;
  raf_stmt *c = raf_stmt_create(m, RAF_OP_CONSTANT, 0, NULL, 1, &t, f->loc);
  raf_const *data = RAF_NEW(&m->arena, raf_const);
  void *zero = raf_arena_alloc(&m->arena, (size_t)raf_dtype_size(t->dtype));
  const char *name = raf_func_fresh_name(f, "zero");
  if (!c || !data || !zero || !name)
    return NULL;
  *data = (raf_const){1, true, zero};
  c->cdata = data;
  c->results[0]->func = f;
  if (raf_value_set_name(c->results[0], name) != RAF_OK)
    return NULL;
  raf_stmt_insert_before(f, c, f->first);
  return c->results[0];
}

raf_value *reduce_stand_in(raf_func *f, raf_type *t,
                           const reduce_callees *callees) {
  for (int i = 0; i < f->nargs; i++)
    if (f->args[i].value->type == t)
      return f->args[i].value;
  return reduce_is_called(callees, f) ? zero_constant(f, t) : new_arg(f, t);
}

bool reduce_erase_stmt(raf_stmt *s, const reduce_callees *callees) {
  for (int i = 0; i < s->nresults; i++) {
    raf_value *r = s->results[i];
    if (!raf_value_has_uses(r))
      continue;
    raf_value *in = reduce_stand_in(s->func, r->type, callees);
    if (!in)
      return false;
    raf_value_replace_uses(r, in);
  }
  raf_stmt_erase(s);
  return true;
}

/* Replaces call (of a function whose results were just reduced to those
 * with keep[i]) by a call with only those results, keeping their names. */
static bool rebuild_call(raf_stmt *call, const bool *keep, int nkept,
                         const reduce_callees *callees) {
  raf_func *g = call->func;
  raf_module *m = g->module;
  for (int i = 0; i < call->nresults; i++)
    if (!keep[i] && raf_value_has_uses(call->results[i])) {
      raf_value *in = reduce_stand_in(g, call->results[i]->type, callees);
      if (!in)
        return false;
      raf_value_replace_uses(call->results[i], in);
    }
  if (nkept == 0) {
    raf_stmt_erase(call); /* a call has at least one result */
    return true;
  }
  raf_value **ops = malloc(sizeof *ops * (size_t)(call->noperands + 1));
  raf_type **types = malloc(sizeof *types * (size_t)nkept);
  const char **names = malloc(sizeof *names * (size_t)nkept);
  raf_stmt *c = NULL;
  if (ops && types && names) {
    for (int i = 0; i < call->noperands; i++)
      ops[i] = call->operands[i].value;
    for (int i = 0, k = 0; i < call->nresults; i++)
      if (keep[i])
        types[k++] = call->results[i]->type;
    c = raf_stmt_create(m, RAF_OP_CALL, call->noperands, ops, nkept, types,
                        call->loc);
  }
  if (c) {
    c->callee = call->callee;
    raf_stmt_set_attrs(m, c, call->attrs.v, call->attrs.n);
    for (int i = 0, k = 0; i < call->nresults; i++)
      if (keep[i]) {
        names[k] = call->results[i]->name;
        raf_value_replace_uses(call->results[i], c->results[k++]);
      }
    raf_stmt *next = call->next; /* the return at least follows a call */
    raf_stmt_erase(call);        /* frees the names for the new results */
    for (int k = 0; k < nkept; k++) {
      c->results[k]->func = g;
      if (names[k])
        raf_value_set_name(c->results[k], names[k]);
    }
    raf_stmt_insert_before(g, c, next);
  }
  free(ops);
  free(types);
  free(names);
  return c != NULL;
}

bool reduce_drop_results(raf_func *f, const bool *drop) {
  raf_module *m = f->module;
  raf_stmt *ret = raf_func_return(f);
  if (!ret)
    return false;
  int n = f->nresults, kept = 0;
  bool *keep = malloc(sizeof *keep * (size_t)(n + 1));
  raf_value **vals = malloc(sizeof *vals * (size_t)(n + 1));
  raf_result_sig *sigs = RAF_NEW_ARRAY(&m->arena, raf_result_sig, n + 1);
  bool ok = keep && vals && sigs;
  for (int i = 0; ok && i < n; i++) {
    keep[i] = !drop[i];
    if (keep[i]) {
      sigs[kept] = f->results[i];
      vals[kept++] = i < ret->noperands ? ret->operands[i].value : NULL;
    }
  }
  raf_stmt *newret =
      ok ? raf_stmt_create(m, RAF_OP_RETURN, kept, vals, 0, NULL, ret->loc)
         : NULL;
  if (newret) {
    raf_stmt_insert_before(f, newret, ret);
    raf_stmt_erase(ret);
    f->results = sigs;
    f->nresults = kept;
    reduce_callees callees = reduce_callees_of(m);
    for (raf_func *g = m->first; g && ok; g = g->next)
      for (raf_stmt *s = g->first, *next; s && ok; s = next) {
        next = s->next;
        if (s->op == RAF_OP_CALL && s->callee == f && s->nresults == n)
          ok = rebuild_call(s, keep, kept, &callees);
      }
    free(callees.v);
  }
  free(keep);
  free(vals);
  return ok && newret;
}

void reduce_drop_args(raf_func *f, const bool *drop) {
  int n = f->nargs, kept = 0;
  bool *gone = calloc((size_t)n + 1, sizeof *gone);
  if (!gone)
    return;
  for (int i = 0; i < n; i++) {
    raf_value *v = f->args[i].value;
    if (drop[i] && !raf_value_has_uses(v)) {
      gone[i] = true;
      raf_strmap_remove(&f->names, v->name, strlen(v->name));
      continue;
    }
    f->args[kept] = f->args[i];
    v->index = kept++;
  }
  f->nargs = kept;
  for (raf_func *g = f->module->first; g; g = g->next)
    for (raf_stmt *s = g->first; s; s = s->next) {
      if (s->op != RAF_OP_CALL || s->callee != f || s->noperands != n)
        continue;
      int k = 0;
      for (int i = 0; i < n; i++)
        if (!gone[i])
          raf_use_set(&s->operands[k++], s->operands[i].value);
      for (int i = k; i < n; i++)
        raf_use_set(&s->operands[i], NULL);
      s->noperands = k;
    }
  free(gone);
}

bool reduce_reinfer(raf_module *m) {
  int nfuncs = 0;
  for (raf_func *f = m->first; f; f = f->next)
    nfuncs++;
  raf_type *stack[16];
  /* Each sweep settles at least one more level of the call graph, which is
   * acyclic: nfuncs + 1 sweeps always reach the fixed point. */
  for (int sweep = 0; sweep <= nfuncs; sweep++) {
    bool changed = false;
    for (raf_func *f = m->first; f; f = f->next)
      for (raf_stmt *s = f->first; s; s = s->next) {
        if (s->op == RAF_OP_RETURN) {
          for (int i = 0; i < s->noperands && i < f->nresults; i++)
            if (f->results[i].type != s->operands[i].value->type) {
              f->results[i].type = s->operands[i].value->type;
              changed = true;
            }
          continue;
        }
        raf_type **types =
            s->nresults <= 16 ? stack
                              : malloc(sizeof *types * (size_t)s->nresults);
        if (!types || raf_infer_stmt(m, s, types, s->nresults) != RAF_OK) {
          if (types != stack)
            free(types);
          return false;
        }
        for (int i = 0; i < s->nresults; i++)
          if (s->results[i]->type != types[i]) {
            s->results[i]->type = types[i];
            changed = true;
          }
        if (types != stack)
          free(types);
      }
    if (!changed)
      return true;
  }
  return true;
}

typedef struct named_query {
  const raf_func *func;
  const raf_value *value;
  bool found;
} named_query;

static void find_reference(raf_attrs *a, void *query) {
  named_query *q = query;
  for (int i = 0; i < a->n; i++)
    if ((a->v[i].kind == RAF_ATTR_FUNC && q->func &&
         a->v[i].val.u.func == q->func) ||
        (a->v[i].kind == RAF_ATTR_VALUE && q->value &&
         a->v[i].val.u.value == q->value))
      q->found = true;
}

bool reduce_func_is_named(raf_module *m, const raf_func *f) {
  named_query q = {f, NULL, false};
  raf_module_visit_attrs(m, find_reference, &q);
  return q.found;
}

bool reduce_value_is_named(raf_module *m, const raf_value *v) {
  named_query q = {NULL, v, false};
  raf_module_visit_attrs(m, find_reference, &q);
  return q.found;
}
