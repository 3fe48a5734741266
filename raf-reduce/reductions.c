/* reductions.c: the ways raf-reduce makes a module smaller.
 *
 * Each reduction sees the module as a list of items (its statements, its
 * results, ...) in a fixed order, and applies itself to a range [lo, hi) of
 * them, so that the driver can try big chunks first and halve them (delta
 * debugging). count and apply enumerate items in the same order; apply
 * leaves a module that should verify, and the driver checks that it does.
 * A round runs them in the table's order, cheapest wins first: whole
 * functions and results take the most with them (dead-code removal follows
 * every candidate), then calls are inlined so that statements of callees
 * can go one by one, then statements, arguments, attributes and shapes.
 *
 *   functions    remove functions; their calls' results get stand-ins
 *   results      remove function results (from returns and call sites)
 *   inline       inline every call (passes/inline.c, remove-dead)
 *   statements   remove statements; their results' uses get stand-ins
 *   bypass       let a statement's result's uses read one of its operands of
 *                the same type instead (the statement then goes as dead):
 *                keeps the chain that removal would cut
 *   arguments    remove arguments: unused ones, or ones whose uses another
 *                argument of the same type can take
 *   attributes   drop attributes that are not required (the schema's
 *                default, or absence, takes over), then re-infer types
 *   shapes       set an argument's dimension to 1, then re-infer types
 *   halve-shapes halve an argument's dimension (when 1 does not verify)
 *
 * Stand-ins are described in edit.c.
 */
#include "raf-reduce/reduce.h"

#include <stdlib.h>
#include <string.h>

/* ---- functions ----------------------------------------------------------- */

/* Functions an attribute names cannot go: the reference would dangle. */
static bool removable_func(raf_module *m, const raf_func *f) {
  return !reduce_func_is_named(m, f);
}

static size_t count_functions(raf_module *m) {
  size_t n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    n += removable_func(m, f);
  return n;
}

static bool in_list(raf_func *const *v, size_t n, const raf_func *f) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == f)
      return true;
  return false;
}

static bool apply_functions(raf_module *m, size_t lo, size_t hi) {
  raf_func **gone = malloc(sizeof *gone * (hi - lo + 1));
  if (!gone)
    return false;
  size_t n = 0, k = 0;
  for (raf_func *f = m->first; f; f = f->next)
    if (removable_func(m, f) && k++ >= lo && k <= hi)
      gone[n++] = f;
  reduce_callees callees = reduce_callees_of(m);
  bool ok = true;
  for (raf_func *g = m->first; g && ok; g = g->next) {
    if (in_list(gone, n, g))
      continue;
    for (raf_stmt *s = g->first, *next; s && ok; s = next) {
      next = s->next;
      if (s->op == RAF_OP_CALL && in_list(gone, n, s->callee))
        ok = reduce_erase_stmt(s, &callees);
    }
  }
  for (size_t i = 0; ok && i < n; i++)
    raf_func_erase(gone[i]);
  free(callees.v);
  free(gone);
  return ok;
}

/* ---- results ------------------------------------------------------------- */

static size_t count_results(raf_module *m) {
  size_t n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    n += (size_t)f->nresults;
  return n;
}

static bool apply_results(raf_module *m, size_t lo, size_t hi) {
  size_t k = 0;
  bool ok = true;
  for (raf_func *f = m->first; f && ok; f = f->next) {
    int n = f->nresults;
    if (k + (size_t)n <= lo || k >= hi) {
      k += (size_t)n;
      continue;
    }
    bool *drop = calloc((size_t)n + 1, sizeof *drop);
    if (!drop)
      return false;
    for (int i = 0; i < n; i++, k++)
      drop[i] = k >= lo && k < hi;
    ok = reduce_drop_results(f, drop);
    free(drop);
  }
  return ok;
}

/* ---- inline -------------------------------------------------------------- */

static size_t count_inline(raf_module *m) {
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next)
      if (s->op == RAF_OP_CALL)
        return 1;
  return 0;
}

static bool apply_inline(raf_module *m, size_t lo, size_t hi) {
  (void)lo;
  (void)hi;
  raf_pipeline *p = raf_pipeline_create(m->ctx);
  if (!p)
    return false;
  raf_pipeline_options o;
  raf_pipeline_options_init(&o);
  o.verify_each = false; /* the driver verifies every candidate */
  bool ok = raf_pipeline_add(p, "inline", "remove-dead=true") == RAF_OK &&
            raf_pipeline_run(p, m, &o) == RAF_OK;
  raf_pipeline_destroy(p);
  return ok;
}

/* ---- statements ---------------------------------------------------------- */

static size_t count_statements(raf_module *m) {
  size_t n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next)
      n += s->op != RAF_OP_RETURN;
  return n;
}

static bool apply_statements(raf_module *m, size_t lo, size_t hi) {
  raf_stmt **chunk = malloc(sizeof *chunk * (hi - lo + 1));
  if (!chunk)
    return false;
  size_t n = 0, k = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next)
      if (s->op != RAF_OP_RETURN && k++ >= lo && k <= hi)
        chunk[n++] = s;
  reduce_callees callees = reduce_callees_of(m);
  bool ok = true;
  /* Last first: a statement whose every user goes too needs no stand-in. */
  while (ok && n > 0)
    ok = reduce_erase_stmt(chunk[--n], &callees);
  free(callees.v);
  free(chunk);
  return ok;
}

/* ---- bypass -------------------------------------------------------------- */

/* Calls visit on each (statement, result, operand) of the module where the
 * operand has the result's type and the result is used: the result's uses
 * can read the operand instead, which keeps the chain through the statement
 * that removing it (and reading a stand-in) would cut. Stops when visit
 * returns false. */
typedef bool (*bypass_fn)(raf_stmt *s, int result, int operand, size_t k,
                          void *data);

static size_t walk_bypasses(raf_module *m, bypass_fn visit, void *data) {
  size_t k = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first, *next; s; s = next) {
      next = s->next;
      for (int i = 0; i < s->nresults; i++)
        for (int j = 0; j < s->noperands; j++)
          if (raf_value_has_uses(s->results[i]) &&
              s->operands[j].value->type == s->results[i]->type) {
            if (visit && !visit(s, i, j, k, data))
              return k + 1;
            k++;
          }
    }
  return k;
}

typedef struct bypass_range {
  size_t lo, hi;
} bypass_range;

static bool bypass(raf_stmt *s, int result, int operand, size_t k,
                   void *range) {
  const bypass_range *r = range;
  if (k >= r->lo && k < r->hi)
    raf_value_replace_uses(s->results[result], s->operands[operand].value);
  return k + 1 < r->hi;
}

static size_t count_bypasses(raf_module *m) {
  return walk_bypasses(m, NULL, NULL);
}

static bool apply_bypasses(raf_module *m, size_t lo, size_t hi) {
  bypass_range r = {lo, hi};
  walk_bypasses(m, bypass, &r);
  return true;
}

/* ---- arguments ----------------------------------------------------------- */

/* Another argument of f of v's type, not being dropped, or NULL. */
static raf_value *sibling(const raf_func *f, const raf_value *v,
                          const bool *drop) {
  for (int i = 0; i < f->nargs; i++) {
    raf_value *w = f->args[i].value;
    if (w != v && w->type == v->type && !(drop && drop[i]))
      return w;
  }
  return NULL;
}

/* Arguments that can go alone: unused, or with a sibling to take their
 * uses; not named by an attribute (a result's `updates`). */
static bool removable_arg(raf_module *m, const raf_func *f, int i) {
  raf_value *v = f->args[i].value;
  return (!raf_value_has_uses(v) || sibling(f, v, NULL)) &&
         !reduce_value_is_named(m, v);
}

static size_t count_arguments(raf_module *m) {
  size_t n = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (int i = 0; i < f->nargs; i++)
      n += removable_arg(m, f, i);
  return n;
}

static bool apply_arguments(raf_module *m, size_t lo, size_t hi) {
  size_t k = 0;
  for (raf_func *f = m->first; f; f = f->next) {
    bool *drop = calloc((size_t)f->nargs + 1, sizeof *drop);
    if (!drop)
      return false;
    bool any = false;
    for (int i = 0; i < f->nargs; i++)
      if (removable_arg(m, f, i)) {
        drop[i] = k >= lo && k < hi;
        any |= drop[i];
        k++;
      }
    for (int i = 0; any && i < f->nargs; i++) {
      raf_value *v = f->args[i].value;
      if (!drop[i] || !raf_value_has_uses(v))
        continue;
      raf_value *w = sibling(f, v, drop);
      if (w)
        raf_value_replace_uses(v, w);
      else
        drop[i] = false; /* its siblings all go: it stays for them */
    }
    if (any)
      reduce_drop_args(f, drop);
    free(drop);
  }
  return true;
}

/* ---- attributes ---------------------------------------------------------- */

static bool required_in(const raf_attr_spec *specs, int n, const char *name) {
  const raf_attr_spec *s = raf_spec_find(specs, n, name);
  return s && (s->flags & RAF_SPEC_REQUIRED);
}

typedef struct attr_walk {
  size_t lo, hi, k; /* apply: drop items [lo, hi); count: k counts */
  bool drop;
} attr_walk;

/* Counts the droppable attributes of one list, dropping those in range. */
static void walk_attrs(attr_walk *w, raf_attrs *a, const raf_attr_spec *op,
                       int nop, raf_entity e) {
  int n;
  const raf_attr_spec *specs = raf_entity_attrs(e, &n);
  int kept = 0;
  for (int i = 0; i < a->n; i++) {
    const char *name = a->v[i].name;
    bool droppable = !required_in(op, nop, name) &&
                     !required_in(specs, n, name);
    bool drop = droppable && w->drop && w->k >= w->lo && w->k < w->hi;
    w->k += droppable;
    if (!drop)
      a->v[kept++] = a->v[i];
  }
  a->n = kept;
}

static void walk_module(raf_module *m, attr_walk *w) {
  for (raf_func *f = m->first; f; f = f->next) {
    walk_attrs(w, &f->attrs, NULL, 0, RAF_ENTITY_FUNC);
    for (int i = 0; i < f->nargs; i++)
      walk_attrs(w, &f->args[i].attrs, NULL, 0, RAF_ENTITY_ARG);
    for (int i = 0; i < f->nresults; i++)
      walk_attrs(w, &f->results[i].attrs, NULL, 0, RAF_ENTITY_RESULT);
    for (raf_stmt *s = f->first; s; s = s->next) {
      const raf_op_info *op = &raf_op_table[s->op];
      walk_attrs(w, &s->attrs, op->attrs, op->nattrs, RAF_ENTITY_STMT);
    }
  }
}

static size_t count_attributes(raf_module *m) {
  attr_walk w = {0, 0, 0, false};
  walk_module(m, &w);
  return w.k;
}

static bool apply_attributes(raf_module *m, size_t lo, size_t hi) {
  attr_walk w = {lo, hi, 0, true};
  walk_module(m, &w);
  return reduce_reinfer(m); /* keepdims, transpose_a, ... change types */
}

/* ---- shapes -------------------------------------------------------------- */

/* Calls visit on every dimension of an argument larger than min, in
 * order; visit returns the new size. */
typedef int64_t (*dim_fn)(int64_t dim, size_t k, void *data);

static size_t walk_dims(raf_module *m, int64_t min, dim_fn visit,
                        void *data) {
  size_t k = 0;
  for (raf_func *f = m->first; f; f = f->next)
    for (int i = 0; i < f->nargs; i++) {
      raf_value *v = f->args[i].value;
      int64_t dims[RAF_MAX_RANK];
      bool changed = false;
      for (int d = 0; d < v->type->rank; d++) {
        dims[d] = v->type->dims[d];
        if (dims[d] > min) {
          int64_t nd = visit ? visit(dims[d], k, data) : dims[d];
          changed |= nd != dims[d];
          dims[d] = nd;
          k++;
        }
      }
      if (changed) {
        raf_type *t = raf_type_get(m, v->type->dtype, v->type->rank, dims);
        if (t)
          v->type = t;
      }
    }
  return k;
}

typedef struct dim_range {
  size_t lo, hi;
  bool halve;
} dim_range;

static int64_t shrink_dim(int64_t dim, size_t k, void *range) {
  const dim_range *r = range;
  if (k < r->lo || k >= r->hi)
    return dim;
  return r->halve ? dim / 2 : 1;
}

static size_t count_shapes(raf_module *m) { return walk_dims(m, 1, NULL, NULL); }

static bool apply_shapes(raf_module *m, size_t lo, size_t hi) {
  dim_range r = {lo, hi, false};
  walk_dims(m, 1, shrink_dim, &r);
  return reduce_reinfer(m);
}

/* Halving a 2 gives 1, which `shapes` tried already. */
static size_t count_halves(raf_module *m) { return walk_dims(m, 2, NULL, NULL); }

static bool apply_halves(raf_module *m, size_t lo, size_t hi) {
  dim_range r = {lo, hi, true};
  walk_dims(m, 2, shrink_dim, &r);
  return reduce_reinfer(m);
}

const reduce_pass reduce_passes[] = {
    {"functions", "remove functions", count_functions, apply_functions},
    {"results", "remove function results", count_results, apply_results},
    {"inline", "inline every call", count_inline, apply_inline},
    {"statements", "remove statements", count_statements, apply_statements},
    {"bypass", "replace statements by an operand of the same type",
     count_bypasses, apply_bypasses},
    {"arguments", "remove arguments", count_arguments, apply_arguments},
    {"attributes", "drop attributes that are not required", count_attributes,
     apply_attributes},
    {"shapes", "set argument dimensions to 1", count_shapes, apply_shapes},
    {"halve-shapes", "halve argument dimensions", count_halves, apply_halves},
};
const size_t reduce_npasses = sizeof reduce_passes / sizeof reduce_passes[0];
