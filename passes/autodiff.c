/* autodiff.c: reverse-mode automatic differentiation.
 *
 * For a function @f whose one result is a scalar float loss, the pass
 * appends @f_grad: the same arguments (names, types and attributes), the
 * loss as first result, then the gradient of the loss with respect to
 * every {param} argument, in argument order (docs/LangRef.md's training
 * conventions). @f stays as it was.
 *
 *   func @f(%x: f32[8,4], %w: f32[4,2] {param}) -> f32[] {
 *     %h = matmul(%x, %w)
 *     %y = relu(%h)
 *     %l = sum(%y)
 *     return %l
 *   }
 * gives
 *   func @f_grad(%x: f32[8,4], %w: f32[4,2] {param}) -> (f32[], f32[4,2]) {
 *     %h = matmul(%x, %w)                   // the forward statements
 *     %y = relu(%h)
 *     %l = sum(%y)
 *     %l.grad = constant 1.0 : f32[]        // the seed
 *     %y.grad = broadcast_to(%l.grad) {shape = [8, 2]}
 *     %2 = constant 0.0 : f32[]
 *     %3 = le(%y, %2)                       // relu's gradient reads y
 *     %h.grad = where(%3, %2, %y.grad)
 *     %w.grad = matmul(%x, %h.grad) {transpose_a}
 *     return %l, %w.grad
 *   }
 *
 * A forward model in training mode may also update state: batch_norm's
 * running statistics. Such an @f returns the loss first and then each new
 * statistic marked {updates = %s}, s a {state} argument; @f_grad returns
 * those after the gradients, with the same marks, and nothing flows back
 * through them.
 *
 * How. @f's body is copied into @f_grad, with every call inlined (the
 * callee's statements copied in its place, recursively, with the names
 * the inline pass would give them), so the backward pass sees one
 * straight-line body: functions called from the loss are differentiated
 * through, and their own definitions are left alone. A forward walk then
 * marks the active values: float values that depend on a float {param}
 * through differentiable operands (ops.def's diff mask; integer and bool
 * values, labels, indices and dropout keys never are; stop_gradient's
 * mask is 0, so it cuts the graph). A backward walk from the loss, seeded
 * with 1, calls each statement's gradient rule (the grad column of
 * ops.def, rules in grad_rules.c) with the gradients of its results and
 * the set of operands that need one (active, differentiable, float), and
 * adds the gradients a value receives from several uses. A param the loss
 * does not depend on gets a zero constant of its type. Last, dce removes
 * what the gradients do not read: the forward values a rule does not need
 * die here (relu's gradient reads its output, so the forward relu's input
 * is freed as soon as the relu has run).
 *
 * Backward statements keep the location of the forward statement they
 * differentiate (the seed that of the return, a zero gradient that of its
 * argument), so a diagnostic or a NaN found by raf-run --check-numerics in
 * the backward pass points at the forward source line. The gradient of a
 * value %v is named %v.grad (with a ".N" suffix when several partial
 * gradients are added); temporaries get fresh numbers.
 *
 * Which functions. Option func=NAME (the '@' is optional) differentiates
 * that function; it is an error when it does not exist, has no {param}
 * argument, or does not return one scalar float (then only state
 * updates). Without it, every function that has a {param} argument and
 * returns one scalar float (then only state updates) is differentiated (so @f_grad and @f_train_step, which return more, are
 * not); when no function qualifies the error says why for each function
 * with a param.
 *
 * Errors, each located: a {param} argument of a non-float type; an
 * active statement whose op has no gradient rule (a backward operator:
 * gradients of gradients are not supported); a loss that depends on
 * batch_norm's running statistics; @f_grad already existing. On error no
 * function is added.
 *
 * Requires: a verified module (no recursion). Preserves: every existing
 * function. The new function is verified by the pass manager like any
 * other pass output.
 */
#include "passes/autodiff.h"
#include "passes/training.h"
#include "passes/pass.h"
#include "passes/ptrmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The pass's state ---------------------------------------------------- */

typedef struct autodiff {
  raf_ctx *ctx;
  raf_module *m;
  raf_func *g;   /* the gradient function being built */
  raf_ptrmap grads;  /* value of g -> its gradient so far */
  raf_ptrmap active; /* value of g -> non-NULL when it depends on a param */
  bool failed;
} autodiff;

static raf_loc noloc(void) { return (raf_loc){NULL, 0, 0}; }

static void oom(autodiff *A) {
  if (!A->failed)
    raf_diag_report(A->ctx, noloc(), RAF_SEV_ERROR, "autodiff: out of memory");
  A->failed = true;
}

static bool is_float(const raf_value *v) {
  return raf_dtype_is_float(v->type->dtype);
}

/* Operand i of op is differentiable by ops.def's mask (ALL covers the
 * operands of variadic ops past bit 31 too). */
static bool diff_operand(raf_opcode op, int i) {
  unsigned mask = raf_op_table[op].diff_mask;
  return mask == 0xffffffffu || (i < 32 && ((mask >> i) & 1));
}

static bool is_number(const char *s) {
  if (!*s)
    return false;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return false;
  return true;
}

/* Names v "<of>.grad" (".grad.N" when taken). */
static void name_grad(autodiff *A, raf_value *v, const raf_value *of) {
  char hint[128];
  snprintf(hint, sizeof hint, "%.100s.grad", of->name);
  const char *name = raf_func_fresh_name(A->g, hint);
  if (!name || raf_value_set_name(v, name) != RAF_OK)
    oom(A);
}

/* ---- Copying the forward body -------------------------------------------- */

/* Copies src's statements into g before `before` (NULL: at the end), with
 * src's arguments read as args[]; results[] receives the values src's
 * return reads. exact keeps src's value names (the copy of @f into an
 * empty @f_grad); else names are derived as the inline pass derives them.
 * Calls are copied as calls. */
static void copy_body(autodiff *A, raf_func *src, raf_stmt *before,
                      raf_value *const *args, raf_value **results,
                      bool exact) {
  raf_ptrmap map = {0};
  for (int i = 0; i < src->nargs; i++)
    if (!raf_ptrmap_put(&map, src->args[i].value, args[i]))
      oom(A);
  for (raf_stmt *t = src->first; t && !A->failed; t = t->next) {
    raf_value *small[16], **ops = small;
    raf_type *tsmall[16], **types = tsmall;
    if (t->noperands > 16)
      ops = malloc(sizeof *ops * (size_t)t->noperands);
    if (t->nresults > 16)
      types = malloc(sizeof *types * (size_t)t->nresults);
    if (!ops || !types) {
      oom(A);
    } else {
      for (int i = 0; i < t->noperands; i++)
        ops[i] = raf_ptrmap_get(&map, t->operands[i].value);
      if (t->op == RAF_OP_RETURN) {
        for (int i = 0; i < t->noperands; i++)
          results[i] = ops[i];
      } else {
        for (int i = 0; i < t->nresults; i++)
          types[i] = t->results[i]->type;
        raf_stmt *c = raf_stmt_create(A->m, t->op, t->noperands, ops,
                                      t->nresults, types, t->loc);
        if (!c) {
          oom(A);
        } else {
          raf_stmt_set_attrs(A->m, c, t->attrs.v, t->attrs.n);
          for (int i = 0; i < c->attrs.n; i++)
            if (c->attrs.v[i].kind == RAF_ATTR_VALUE)
              c->attrs.v[i].val.u.value =
                  raf_ptrmap_get(&map, c->attrs.v[i].val.u.value);
          c->callee = t->callee;
          c->cdata = t->cdata;
          for (int i = 0; i < c->nresults; i++) {
            const raf_value *r = t->results[i];
            const char *name = exact ? r->name
                                     : raf_func_derived_name(A->g, r->name);
            c->results[i]->func = A->g;
            if (!name || raf_value_set_name(c->results[i], name) != RAF_OK ||
                !raf_ptrmap_put(&map, r, c->results[i]))
              oom(A);
          }
          raf_stmt_insert_before(A->g, c, before);
        }
      }
    }
    if (ops != small)
      free(ops);
    if (types != tsmall)
      free(types);
  }
  raf_ptrmap_free(&map);
}

/* Replaces every call in g by a copy of its callee's body; the copies'
 * own calls are met later in the same walk. */
static void inline_calls(autodiff *A) {
  for (raf_stmt *s = A->g->first; s && !A->failed;) {
    if (s->op != RAF_OP_CALL) {
      s = s->next;
      continue;
    }
    raf_func *callee = s->callee;
    raf_value *small[16], **args = small, *rsmall[16], **res = rsmall;
    if (s->noperands > 16)
      args = malloc(sizeof *args * (size_t)s->noperands);
    if (s->nresults > 16)
      res = calloc((size_t)s->nresults, sizeof *res);
    if (!args || !res) {
      oom(A);
    } else {
      for (int i = 0; i < s->noperands; i++)
        args[i] = s->operands[i].value;
      memset(res, 0, sizeof *res * (size_t)s->nresults);
      raf_stmt *prev = s->prev;
      copy_body(A, callee, s, args, res, false);
      for (int i = 0; i < s->nresults && !A->failed; i++)
        if (res[i])
          raf_value_replace_uses(s->results[i], res[i]);
      if (!A->failed) {
        /* The values returned take the names of the call's results, so
         * that @f's names mean the same values in @f_grad (a value the
         * callee passes through from its arguments keeps its own). */
        const char *small_names[16], **names = small_names;
        if (s->nresults > 16 &&
            !(names = malloc(sizeof *names * (size_t)s->nresults))) {
          oom(A);
          names = small_names;
        }
        for (int i = 0; i < s->nresults && !A->failed; i++)
          names[i] = s->results[i]->name;
        raf_stmt *after = s->next;
        raf_stmt_erase(s);
        /* The copies lie between prev and after (none: an identity). */
        raf_stmt *first = prev ? prev->next : A->g->first;
        for (int i = 0; i < s->nresults && !A->failed; i++) {
          bool copied = false;
          for (raf_stmt *c = first; c != after && !copied; c = c->next)
            copied = res[i] && res[i]->def == c;
          for (int k = 0; k < i; k++)
            copied = copied && res[k] != res[i];
          if (copied && names[i])
            raf_value_set_name(res[i], names[i]);
        }
        if (names != small_names)
          free(names);
        s = first; /* go on at the first statement copied */
      }
    }
    if (args != small)
      free(args);
    if (res != rsmall)
      free(res);
  }
}

/* ---- Differentiating ----------------------------------------------------- */

static bool is_active(const autodiff *A, const raf_value *v) {
  return raf_ptrmap_get(&A->active, v) != NULL;
}

/* Marks, in one forward walk, the values that depend on a float param
 * through differentiable operands. */
static void mark_active(autodiff *A, const raf_func *f) {
  for (int i = 0; i < A->g->nargs; i++)
    if (raf_arg_flag(&f->args[i], "param") && is_float(A->g->args[i].value) &&
        !raf_ptrmap_put(&A->active, A->g->args[i].value, A->g))
      oom(A);
  for (raf_stmt *s = A->g->first; s && !A->failed; s = s->next) {
    bool any = false;
    for (int i = 0; i < s->noperands && !any; i++)
      any = diff_operand(s->op, i) && is_float(s->operands[i].value) &&
            is_active(A, s->operands[i].value);
    for (int i = 0; any && i < s->nresults; i++)
      if (is_float(s->results[i]) && !raf_ptrmap_put(&A->active, s->results[i], A->g))
        oom(A);
  }
}

/* Adds g, the gradient of v from one use, to v's gradient so far. */
static void accumulate(autodiff *A, raf_emitter *e, raf_value *v,
                       raf_value *g) {
  raf_value *old = raf_ptrmap_get(&A->grads, v);
  if (old) {
    g = raf_emit2(e, RAF_OP_ADD, old, g);
    if (!g)
      return;
    name_grad(A, g, v);
  }
  if (!raf_ptrmap_put(&A->grads, v, g))
    oom(A);
}

/* The rule of s for the gradients dy of its results. */
static void differentiate(autodiff *A, raf_stmt *s, raf_value **dy) {
  bool small[16], *need = small;
  raf_value *dsmall[16], **dx = dsmall;
  int n = s->noperands, wanted = 0;
  if (n > 16) {
    need = malloc(sizeof *need * (size_t)n);
    dx = malloc(sizeof *dx * (size_t)n);
  }
  if (!need || !dx) {
    oom(A);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    raf_value *v = s->operands[i].value;
    need[i] = diff_operand(s->op, i) && is_float(v) && is_active(A, v);
    wanted += need[i];
    dx[i] = NULL;
  }
  if (!wanted)
    goto done;
  const raf_op_info *op = &raf_op_table[s->op];
  raf_grad_rule rule = raf_grad_rule_for(s->op);
  if (!rule) {
    if (raf_op_is_backward(s->op))
      raf_diag_report(A->ctx, s->loc, RAF_SEV_ERROR,
                      "autodiff: %s is a backward operator and has no "
                      "gradient rule (gradients of gradients are not "
                      "supported)", op->name);
    else
      raf_diag_report(A->ctx, s->loc, RAF_SEV_ERROR,
                      "autodiff: %s has no gradient rule", op->name);
    A->failed = true;
    goto done;
  }
  raf_ad ad = {A->ctx, A->m, {0}, need};
  raf_emitter_init(&ad.e, A->g, NULL, s->loc);
  int64_t mark = A->m->order_clock; /* statements the rule makes are later */
  if (rule(&ad, s, dy, dx) != RAF_OK || ad.e.status != RAF_OK) {
    A->failed = true;
    goto done;
  }
  for (int i = 0; i < n && !A->failed; i++) {
    raf_value *v = s->operands[i].value;
    if (!need[i] || !dx[i])
      continue;
    if (dx[i]->type != v->type) {
      char want[192], got[192];
      raf_type_str(v->type, want, sizeof want);
      raf_type_str(dx[i]->type, got, sizeof got);
      raf_diag_report(A->ctx, s->loc, RAF_SEV_ERROR,
                      "autodiff: internal error: the gradient rule of %s "
                      "made %s for operand %d of type %s", op->name, got, i,
                      want);
      A->failed = true;
      break;
    }
    if (dx[i]->def && dx[i]->def->order >= mark && is_number(dx[i]->name))
      name_grad(A, dx[i], v);
  }
  /* Named first, added second, so the names count up down the body. */
  for (int i = 0; i < n && !A->failed; i++)
    if (need[i] && dx[i])
      accumulate(A, &ad.e, s->operands[i].value, dx[i]);
done:
  if (need != small)
    free(need);
  if (dx != dsmall)
    free(dx);
}

/* The backward walk, from the last forward statement to the first. */
static void backward(autodiff *A, raf_stmt *last) {
  for (raf_stmt *s = last; s && !A->failed; s = s->prev) {
    raf_value *small[16], **dy = small;
    if (s->nresults > 16 &&
        !(dy = malloc(sizeof *dy * (size_t)s->nresults))) {
      oom(A);
      break;
    }
    bool any = false;
    for (int i = 0; i < s->nresults; i++)
      any |= (dy[i] = raf_ptrmap_get(&A->grads, s->results[i])) != NULL;
    if (any)
      differentiate(A, s, dy);
    if (dy != small)
      free(dy);
  }
}

/* ---- Choosing functions -------------------------------------------------- */

/* Why f is not a loss to differentiate, or NULL when it is one: one scalar
 * float result, or that followed by the forward's state updates (results
 * marked {updates = %s}, s a {state} argument: batch_norm's running
 * statistics). */
static const char *not_a_loss(const raf_func *f, char *buf, size_t size) {
  if (f->nresults < 1) {
    snprintf(buf, size, "returns nothing, not a scalar float loss");
    return buf;
  }
  const raf_type *t = f->results[0].type;
  if (t->rank != 0 || !raf_dtype_is_float(t->dtype)) {
    char ty[192];
    raf_type_str(t, ty, sizeof ty);
    snprintf(buf, size, "returns %s, not a scalar float loss", ty);
    return buf;
  }
  for (int i = 1; i < f->nresults; i++)
    if (!raf_result_updates_state(f, i)) {
      snprintf(buf, size,
               "returns %d results: a scalar float loss may be followed "
               "only by results that update a {state} argument",
               f->nresults);
      return buf;
    }
  if (!raf_func_nparams(f)) {
    snprintf(buf, size, "has no {param} argument to differentiate with "
             "respect to");
    return buf;
  }
  return NULL;
}

/* ---- Making @f_grad ------------------------------------------------------ */

/* Marks @f_grad's results from `first` on, the forward's state updates,
 * {updates = %s} as f marks them, with s the same argument of @f_grad. */
static void copy_update_marks(autodiff *A, const raf_func *f,
                              raf_value *const *args, int first) {
  if (A->g->nresults != first + f->nresults - 1)
    return; /* raf_func_set_results ran out of memory */
  for (int i = 1; i < f->nresults; i++) {
    const raf_attr *u = raf_attrs_find(&f->results[i].attrs, "updates");
    raf_value *arg = NULL;
    for (int a = 0; u && a < f->nargs; a++)
      if (f->args[a].value == u->val.u.value)
        arg = args[a];
    raf_attr mark = {.name = "updates", .kind = RAF_ATTR_VALUE,
                     .val.u.value = arg};
    raf_attrs *dst = &A->g->results[first + i - 1].attrs;
    dst->v = raf_arena_memdup(&A->m->arena, &mark, sizeof mark);
    dst->n = dst->v ? 1 : 0;
    if (!dst->v)
      oom(A);
  }
}

static raf_status make_grad(raf_ctx *ctx, raf_module *m, raf_func *f) {
  char name[256];
  snprintf(name, sizeof name, "%s_grad", f->name);
  if (raf_module_find_func(m, name)) {
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "autodiff: cannot make @%s: the module already has a "
                    "function of that name", name);
    return RAF_ERROR;
  }
  for (int i = 0; i < f->nargs; i++) {
    const raf_value *a = f->args[i].value;
    if (raf_arg_flag(&f->args[i], "param") && !is_float(a)) {
      char ty[192];
      raf_type_str(a->type, ty, sizeof ty);
      raf_diag_report(ctx, a->loc, RAF_SEV_ERROR,
                      "autodiff: @%s: param %%%s has type %s; only float "
                      "params have gradients", f->name, a->name, ty);
      return RAF_ERROR;
    }
  }
  autodiff A = {ctx, m, raf_func_create(m, name, f->loc), {0}, {0}, false};
  if (!A.g || raf_training_mark_grad(A.g, f) != RAF_OK) {
    oom(&A);
    return RAF_ERROR;
  }
  /* Results: the loss, the gradients, then the forward's state updates. */
  int nparams = raf_func_nparams(f), nupdates = f->nresults - 1;
  int nres = 1 + nparams + nupdates;
  raf_value **args = malloc(sizeof *args * (size_t)(f->nargs + 1));
  raf_value **ret = calloc((size_t)nres, sizeof *ret);
  raf_value **updates = calloc((size_t)nupdates + 1, sizeof *updates);
  raf_type **types = malloc(sizeof *types * (size_t)nres);
  if (!args || !ret || !updates || !types)
    oom(&A);
  for (int i = 0; i < f->nargs && !A.failed; i++) {
    const raf_arg *a = &f->args[i];
    args[i] = raf_func_add_arg(A.g, a->value->name, a->value->type,
                               a->value->loc);
    if (!args[i]) {
      oom(&A);
      break;
    }
    A.g->args[i].attrs.n = a->attrs.n;
    A.g->args[i].attrs.v =
        a->attrs.n ? raf_arena_memdup(&m->arena, a->attrs.v,
                                      sizeof *a->attrs.v * (size_t)a->attrs.n)
                   : NULL;
  }
  if (!A.failed)
    copy_body(&A, f, NULL, args, ret, true);
  if (!A.failed)
    inline_calls(&A);
  if (!A.failed)
    mark_active(&A, f);
  raf_value *loss = ret[0];
  for (int i = 0; i < nupdates && !A.failed; i++)
    updates[i] = ret[1 + i];
  raf_stmt *fret = raf_func_return(f);
  raf_loc ret_loc = fret ? fret->loc : f->loc;
  raf_stmt *last = A.g->last;
  raf_emitter e;
  raf_emitter_init(&e, A.g, NULL, ret_loc);
  if (!A.failed && loss && is_active(&A, loss)) {
    raf_value *seed = raf_emit_scalar(&e, loss->type->dtype, 1.0);
    if (seed) {
      name_grad(&A, seed, loss);
      if (!raf_ptrmap_put(&A.grads, loss, seed))
        oom(&A);
    }
    backward(&A, last);
  }
  /* The results: the loss, then each param's gradient (zeros when the
   * loss does not depend on it). */
  for (int i = 0, k = 1; i < f->nargs && !A.failed; i++) {
    if (!raf_arg_flag(&f->args[i], "param"))
      continue;
    raf_value *p = args[i], *g = raf_ptrmap_get(&A.grads, p);
    if (!g) {
      e.loc = p->loc;
      if ((g = raf_emit_splat(&e, p->type, 0.0)))
        name_grad(&A, g, p);
    }
    ret[k] = g;
    types[k++] = p->type;
  }
  for (int i = 0; i < nupdates && !A.failed; i++) {
    ret[1 + nparams + i] = updates[i];
    types[1 + nparams + i] = updates[i]->type;
  }
  if (!A.failed && e.status == RAF_OK && loss) {
    ret[0] = loss;
    types[0] = loss->type;
    raf_stmt *r = raf_stmt_create(m, RAF_OP_RETURN, nres, ret, 0, NULL,
                                  ret_loc);
    if (!r) {
      oom(&A);
    } else {
      raf_stmt_insert_before(A.g, r, NULL);
      raf_func_set_results(A.g, nres, types);
      copy_update_marks(&A, f, args, 1 + nparams);
      raf_erase_dead(A.g);
    }
  } else {
    A.failed = true;
  }
  free(args);
  free(ret);
  free(updates);
  free(types);
  raf_ptrmap_free(&A.grads);
  raf_ptrmap_free(&A.active);
  if (A.failed) {
    /* Nothing calls the half-built function; dropping it leaves the
     * module as it was (its statements stay in the arena, unreachable). */
    raf_func_erase(A.g);
    return RAF_ERROR;
  }
  return RAF_OK;
}

raf_status raf_pass_autodiff(raf_module *m, const raf_pass_args *args) {
  const char *only = raf_pass_opt_str(args, "func");
  char why[256];
  if (only && *only == '@')
    only++;
  if (only) {
    raf_func *f = raf_module_find_func(m, only);
    if (!f) {
      raf_diag_report(args->ctx, noloc(), RAF_SEV_ERROR,
                      "autodiff: no function @%s in the module", only);
      return RAF_ERROR;
    }
    if (not_a_loss(f, why, sizeof why)) {
      raf_diag_report(args->ctx, f->loc, RAF_SEV_ERROR,
                      "autodiff: cannot differentiate @%s: it %s", f->name,
                      why);
      return RAF_ERROR;
    }
    return make_grad(args->ctx, m, f);
  }
  /* Collect first: the pass appends functions while it walks. */
  int n = 0, total = 0;
  for (raf_func *f = m->first; f; f = f->next)
    total++;
  raf_func **chosen = malloc(sizeof *chosen * (size_t)(total + 1));
  if (!chosen) {
    raf_diag_report(args->ctx, noloc(), RAF_SEV_ERROR,
                    "autodiff: out of memory");
    return RAF_ERROR;
  }
  for (raf_func *f = m->first; f; f = f->next)
    if (!not_a_loss(f, why, sizeof why))
      chosen[n++] = f;
  raf_status st = RAF_OK;
  if (n == 0) {
    raf_diag_report(args->ctx, noloc(), RAF_SEV_ERROR,
                    "autodiff: no function to differentiate: none has a "
                    "{param} argument and one scalar float result (or "
                    "choose one with func=NAME)");
    for (raf_func *f = m->first; f; f = f->next)
      if (raf_func_nparams(f) && not_a_loss(f, why, sizeof why))
        raf_diag_report(args->ctx, f->loc, RAF_SEV_NOTE, "@%s %s", f->name,
                        why);
    st = RAF_ERROR;
  }
  for (int i = 0; i < n; i++)
    if (make_grad(args->ctx, m, chosen[i]) != RAF_OK)
      st = RAF_ERROR;
  free(chosen);
  return st;
}
