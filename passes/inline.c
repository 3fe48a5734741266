/* inline.c: replace every call by the body of the function it calls.
 *
 * `%r = call @g(%a, %b)` becomes a copy of @g's statements, with @g's
 * arguments read as %a and %b, and every use of %r reading the value @g
 * returns instead. Calls inside @g are inlined too, so afterwards no
 * function of the module contains a call. The verifier forbids recursion;
 * should the pass meet a cycle anyway (the verifier was skipped) it reports
 * it and stops rather than unroll forever.
 *
 * Order. Functions are processed callees first (a depth-first walk of the
 * call graph), so when a call of @g is inlined, @g itself has no calls left
 * and its body is copied once per call site, never re-walked: the work is
 * the size of the output. A copy is made in one forward pass over @g, with
 * @g's statements numbered (raf_func_number) so that the copy of the
 * statement defining an operand is found by position in an array, not by
 * a hash of value pointers.
 *
 * What a copy keeps: the op, attributes (an attribute naming a value of @g
 * is pointed at the copy of that value), callee, constant data (shared:
 * constant data is never written once built), result types, and the
 * location in @g's source, so diagnostics about inlined code point at the
 * line that wrote it. Names are fresh in the caller, built from the
 * callee's ("%h" -> "%h", or "%h.3" when the caller has an %h already).
 * Attributes of the call statement itself (a dialect annotation) have no
 * statement left to sit on and go.
 *
 * Option remove-dead (default false): afterwards, erase the functions that
 * had call sites before the pass and now have none, except the last
 * function of the module (the entry, by convention) and any function an
 * attribute still names (@f references). A function that was never called
 * stays: it may be an entry of its own (raf-run --function=NAME); fused
 * functions are treated like any other, since once their calls are inlined
 * nothing would run them.
 *
 * Requires: a verified module (no recursion).
 * Preserves: function signatures and attributes, the callers' statements
 * other than the calls, in order, with their names and locations.
 * Invalidates: statement orders of the callees (renumbered).
 */
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

/* Flags per function, in a scratch map keyed by name (names are unique in
 * a module). */
enum {
  F_VISITING = 1, /* on the depth-first stack */
  F_DONE = 2,     /* calls inlined */
  F_CALLED = 4,   /* had a call site before the pass */
  F_NAMED = 8     /* some attribute refers to it */
};

typedef struct inliner {
  raf_module *m;
  raf_ctx *ctx;
  raf_strmap flags;
  raf_stmt **copies; /* the copy of the callee's k-th statement */
  size_t cap;
  bool failed;
} inliner;

static raf_loc noloc(void) { return (raf_loc){NULL, 0, 0}; }

static void oom(inliner *in) {
  if (!in->failed)
    raf_diag_report(in->ctx, noloc(), RAF_SEV_ERROR, "inline: out of memory");
  in->failed = true;
}

static unsigned get_flags(inliner *in, const raf_func *f) {
  return (unsigned)(uintptr_t)raf_strmap_get(&in->flags, f->name,
                                             strlen(f->name));
}

static void set_flags(inliner *in, const raf_func *f, unsigned bits) {
  if (!raf_strmap_put(&in->flags, f->name, strlen(f->name),
                      (void *)(uintptr_t)bits))
    oom(in);
}

static void add_flags(inliner *in, const raf_func *f, unsigned bits) {
  set_flags(in, f, get_flags(in, f) | bits);
}


/* The caller's value for callee value v, at call site `call`. base is the
 * order of the callee's first statement. */
static raf_value *map_value(inliner *in, const raf_func *g, int64_t base,
                            const raf_stmt *call, raf_value *v) {
  if (!v || v->func != g)
    return v; /* not the callee's (cannot happen in verified IR) */
  if (!v->def)
    return v->index >= 0 && v->index < call->noperands
               ? call->operands[v->index].value
               : NULL;
  int64_t k = v->def->order - base;
  if (v->def->func != g || k < 0 || (size_t)k >= in->cap || !in->copies[k])
    return NULL;
  return in->copies[k]->results[v->index];
}

/* Inlines call (of a function with no calls left) where it stands. */
static void inline_call(inliner *in, raf_func *f, raf_stmt *call) {
  raf_func *g = call->callee;
  size_t n = 0;
  for (raf_stmt *t = g->first; t; t = t->next)
    n++;
  if (n > in->cap) {
    free(in->copies);
    in->copies = malloc(n * sizeof *in->copies);
    in->cap = in->copies ? n : 0;
    if (!in->copies) {
      oom(in);
      return;
    }
  }
  memset(in->copies, 0, n * sizeof *in->copies);
  raf_func_number(g); /* consecutive orders: order - base is the position */
  int64_t base = g->first ? g->first->order : 0;
  raf_value *ops[16];
  size_t k = 0;
  for (raf_stmt *t = g->first; t; t = t->next, k++) {
    if (t->op == RAF_OP_RETURN) {
      /* The call's results are what @g returns. */
      for (int i = 0; i < t->noperands && i < call->nresults; i++) {
        raf_value *r = map_value(in, g, base, call, t->operands[i].value);
        if (r)
          raf_value_replace_uses(call->results[i], r);
      }
      break;
    }
    raf_value **operands =
        t->noperands <= 16
            ? ops
            : malloc(sizeof(raf_value *) * (size_t)t->noperands);
    raf_type *tstack[16];
    raf_type **types =
        t->nresults <= 16 ? tstack
                          : malloc(sizeof(raf_type *) * (size_t)t->nresults);
    raf_stmt *c = NULL;
    if (operands && types) {
      for (int i = 0; i < t->noperands; i++)
        operands[i] = map_value(in, g, base, call, t->operands[i].value);
      for (int i = 0; i < t->nresults; i++)
        types[i] = t->results[i]->type;
      c = raf_stmt_create(in->m, t->op, t->noperands, operands, t->nresults,
                          types, t->loc);
    }
    if (operands != ops)
      free(operands);
    if (types != tstack)
      free(types);
    if (!c) {
      oom(in);
      return;
    }
    raf_stmt_set_attrs(in->m, c, t->attrs.v, t->attrs.n);
    for (int i = 0; i < c->attrs.n; i++)
      if (c->attrs.v[i].kind == RAF_ATTR_VALUE)
        c->attrs.v[i].val.u.value =
            map_value(in, g, base, call, c->attrs.v[i].val.u.value);
    c->callee = t->callee;
    c->cdata = t->cdata;
    for (int i = 0; i < c->nresults; i++) {
      const char *name = raf_func_derived_name(f, t->results[i]->name);
      c->results[i]->func = f;
      if (name)
        raf_value_set_name(c->results[i], name);
    }
    raf_stmt_insert_before(f, c, call);
    in->copies[k] = c;
  }
  for (int i = 0; i < call->nresults; i++)
    if (raf_value_has_uses(call->results[i])) {
      /* Only a malformed callee (no return) leaves uses behind. */
      raf_diag_report(in->ctx, call->loc, RAF_SEV_ERROR,
                      "inline: cannot inline @%s: it does not return "
                      "result %d", g->name, i);
      in->failed = true;
      return;
    }
  raf_stmt_erase(call);
}

/* Inlines every call in f, after doing the same to its callees. */
static void process(inliner *in, raf_func *f) {
  add_flags(in, f, F_VISITING);
  for (raf_stmt *s = f->first; s && !in->failed; s = s->next) {
    if (s->op != RAF_OP_CALL || !s->callee)
      continue;
    unsigned fl = get_flags(in, s->callee);
    if (fl & F_VISITING) {
      raf_diag_report(in->ctx, s->loc, RAF_SEV_ERROR,
                      "inline: @%s is reached again through this call "
                      "(recursion cannot be inlined)", s->callee->name);
      in->failed = true;
    } else if (!(fl & F_DONE)) {
      process(in, s->callee);
    }
  }
  for (raf_stmt *s = f->first, *next; s && !in->failed; s = next) {
    next = s->next;
    if (s->op == RAF_OP_CALL && s->callee)
      inline_call(in, f, s);
  }
  set_flags(in, f, (get_flags(in, f) & ~(unsigned)F_VISITING) | F_DONE);
}

/* A training step's {step_of} links it to the gradient function it
 * called, and does not keep that function alive once inlined: erasing it
 * drops the link (raf_func_erase). */
static void mark_named(raf_attrs *a, void *inliner_) {
  inliner *in = inliner_;
  for (int i = 0; i < a->n; i++)
    if (a->v[i].kind == RAF_ATTR_FUNC && a->v[i].val.u.func &&
        strcmp(a->v[i].name, "step_of") != 0)
      add_flags(in, a->v[i].val.u.func, F_NAMED);
}

/* Erases what remove-dead allows: see the header. Called with no calls
 * left in the module. */
static void remove_dead(inliner *in) {
  raf_module_visit_attrs(in->m, mark_named, in);
  for (raf_func *f = in->m->first, *next; f; f = next) {
    next = f->next;
    unsigned fl = get_flags(in, f);
    if (f != in->m->last && (fl & F_CALLED) && !(fl & F_NAMED))
      raf_func_erase(f);
  }
}

raf_status raf_pass_inline(raf_module *m, const raf_pass_args *args) {
  inliner in = {m, args->ctx, {0}, NULL, 0, false};
  raf_strmap_init(&in.flags);
  bool any = false;
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first; s; s = s->next)
      if (s->op == RAF_OP_CALL && s->callee) {
        add_flags(&in, s->callee, F_CALLED);
        any = true;
      }
  for (raf_func *f = m->first; any && f && !in.failed; f = f->next)
    if (!(get_flags(&in, f) & F_DONE))
      process(&in, f);
  if (!in.failed && any && raf_pass_opt_bool(args, "remove-dead"))
    remove_dead(&in);
  free(in.copies);
  raf_strmap_free(&in.flags);
  return in.failed ? RAF_ERROR : RAF_OK;
}
