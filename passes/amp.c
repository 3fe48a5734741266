/* amp.c: automatic mixed precision, the amp pass (RAF's AutoCast; PyTorch's
 * torch.autocast and GradScaler).
 *
 * Option dtype=bf16|f16 (default bf16) is the low-precision type. Every
 * function of the module but fused ones is rewritten, statement by
 * statement in order, by the amp class of its op (the amp column of
 * lang/ops.def; docs/AMP.md reviews it against PyTorch's lists):
 *
 *   LOWP    matmul, conv2d, attention and their gradients: every f32 or
 *           low-precision operand is cast to the low type, so the op runs
 *           and returns in it (f64 ops and integer matmuls are left alone);
 *   FP32    softmax, layer_norm, batch_norm, the losses, exp, log, pow,
 *           rsqrt, erf, sum, mean and their gradients: f16 and bf16
 *           operands are cast to f32;
 *   FOLLOW  and NONE: the float operands are cast to the widest float type
 *           among them (bf16 with f16 gives f32, as torch.promote_types).
 *           An operand that broadcasts (fewer elements than the result: a
 *           bias, a scalar) does not widen the others, it follows them;
 *           this is PyTorch's rule for 0-dim tensors, extended to biases
 *           because a .raf linear layer is a matmul and a separate add.
 *
 * then the statement's result types are inferred again; later statements
 * see the new types. Casts: each value is cast to a type at most once per
 * function, just before its first use in that type, so that one cast of a
 * computed value serves the forward and the backward. The exception is
 * what the forward's cast would keep alive until the backward for nothing
 * (cast_again): in a function with a loss (raf_func_forward: @f_grad), the
 * backward casts arguments again (a weight's bf16 cast, next to the
 * backward matmul that reads it) and widens forward values again (the f32
 * logits of cross_entropy_grad), from what it keeps anyway; such casts are
 * marked {remat}, so that neither cse nor fuse moves them back into the
 * forward. The saved-for-backward memory (raf-opt --stats) is then the
 * forward's bf16 values, not their copies. A cast that would
 * undo a widening cast reads the widened value instead (no cast of a cast
 * is made), a splat constant is rewritten in the new type rather than cast,
 * and a `cast` whose operand the pass gave its target type goes. Signatures
 * never change: arguments keep their types (master weights stay f32), a
 * call's operands are cast to its callee's argument types, and the return
 * casts each result back to the function's declared type, so @f_grad's
 * gradients are f32. The optimizer's update reads f32 gradients and f32
 * states only, so it stays f32 in every pass order.
 *
 * dtype=f16 adds dynamic loss scaling (amp.h, loss_scale.c). Each gradient
 * function (named NAME_grad, of the shape `autodiff` makes) gains the
 * argument %loss_scale; its backward pass is seeded with it instead of the
 * constant 1 that autodiff writes (`%L.grad = constant 1.0`, for the
 * returned loss %L), and each gradient it returns is cast to f32 and then
 * multiplied by 1 / loss_scale. A function that calls it passes its own
 * %loss_scale (an argument it gains when it has none), and a training step
 * among them gets GradScaler's skip-and-adjust logic. bf16 has f32's range
 * and gets no scaling.
 *
 * Idempotent: a second run finds nothing to cast and the scaling in place.
 * A module with nothing to cast comes out byte-identical.
 *
 * Errors, located: a statement whose types cannot be made consistent (its
 * inference fails after the casts); with
 * f16, a gradient function without autodiff's seed; a training step that
 * does not call its gradient function (amp after inline: the gradients
 * would reach the update in bf16, and f16 has no place for its scaling).
 *
 * Requires: a verified module, after autodiff and before inline, dispatch,
 * fuse and plan-memory (passes/passes.def says so and the pass manager
 * refuses other orders, and modules already dispatched, fused or planned:
 * fuse then folds the casts into the kernels and the plan sees the new
 * sizes). Preserves: every signature.
 */
#include "passes/amp.h"
#include "passes/emit.h"
#include "passes/pass.h"
#include "passes/ptrmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct amp {
  raf_ctx *ctx;
  raf_module *m;
  raf_func *f;      /* the function being rewritten */
  raf_dtype low;    /* RAF_BF16 or RAF_F16 */
  raf_ptrmap casts[RAF_DTYPE_COUNT]; /* per target type: value -> its cast */
  raf_ptrmap again[RAF_DTYPE_COUNT]; /* the same, made again in the
                                      * backward (cast_again) */
  raf_ptrmap backward; /* the statements of f's backward pass */
  raf_ptrmap retyped; /* values whose type the pass changed */
  raf_value **unused; /* values that lost a use to a cast: maybe dead */
  size_t nunused, capunused;
  raf_status st;
} amp;

/* 3 for f64, 2 for f32, 1 for f16 and bf16; 0 for the rest. */
static int width(raf_dtype dt) {
  switch (dt) {
  case RAF_F64: return 3;
  case RAF_F32: return 2;
  case RAF_F16:
  case RAF_BF16: return 1;
  default: return 0;
  }
}

/* torch.promote_types on floats. */
static raf_dtype promote(raf_dtype a, raf_dtype b) {
  if (a == b || width(a) > width(b))
    return a;
  if (width(b) > width(a))
    return b;
  return RAF_F32; /* f16 with bf16 */
}

/* Ops that only reorder their operand's elements, all of them. */
static bool relayout(raf_opcode op) {
  return op == RAF_OP_RESHAPE || op == RAF_OP_TRANSPOSE;
}

/* Whether s is a constant with one value (a scalar or a splat). */
static bool one_value_constant(const raf_stmt *s) {
  return s && s->op == RAF_OP_CONSTANT &&
         (s->cdata->splat || s->cdata->count == 1);
}

/* Whether the cast of v to dt that `user` needs is made in the backward
 * pass, for the backward's uses only, rather than shared with the forward,
 * which would then keep it until the backward: user is a statement of the
 * backward, and either v is an argument (or a reshape, transpose, slice or
 * broadcast of one), which lives through the call anyway, so the backward
 * casts it again rather than keep a second copy (a weight's bf16 cast); or
 * the cast widens v, a value of the forward, so the backward keeps narrow
 * v rather than its wide cast (bf16 logits, not their f32 cast for
 * cross_entropy_grad). The cast is elementwise and exact: the same bits. */
static bool cast_again(const amp *A, const raf_value *v, raf_dtype dt,
                       const raf_stmt *user) {
  if (!raf_ptrmap_get(&A->backward, user) || one_value_constant(v->def))
    return false;
  if (width(v->type->dtype) > 0 && width(dt) > width(v->type->dtype))
    return !v->def || !raf_ptrmap_get(&A->backward, v->def);
  while (v->def && (relayout(v->def->op) || v->def->op == RAF_OP_SLICE ||
                    v->def->op == RAF_OP_BROADCAST_TO))
    v = v->def->operands[0].value;
  return v->def == NULL;
}

/* Marks c's statement {remat}: made in the backward from what lives
 * anyway, it must stay there: cse merges no such statement with the
 * forward's cast, and fuse groups it with no statement of the forward. */
static void mark_remat(amp *A, raf_value *c) {
  raf_attr a = raf_attr_bool("remat", true);
  if (c->def && raf_stmt_set_attr(A->m, c->def, &a) != RAF_OK)
    A->st = RAF_ERROR;
}

/* v as dt, for a use in statement `user` (before which a cast goes). */
static raf_value *cast_value(amp *A, raf_value *v, raf_dtype dt,
                             raf_stmt *user) {
  if (!v || v->type->dtype == dt)
    return v;
  /* The backward reuses the forward's casts but those of cast_again,
   * which it makes once more, for its own uses. */
  bool again = cast_again(A, v, dt, user);
  raf_ptrmap *casts = again ? &A->again[dt] : &A->casts[dt];
  raf_value *c = raf_ptrmap_get(casts, v);
  if (c)
    return c;
  const raf_stmt *d = v->def;
  /* Narrowing a widened value back gives the value that was widened. */
  if (d && d->op == RAF_OP_CAST) {
    raf_value *u = d->operands[0].value;
    if (u->type->dtype == dt && width(dt) > 0 &&
        width(v->type->dtype) > width(dt))
      return u;
  }
  raf_emitter e;
  raf_emitter_init(&e, A->f, user, user->loc);
  if (d && (relayout(d->op) ||
            ((d->op == RAF_OP_SLICE || d->op == RAF_OP_BROADCAST_TO) &&
             raf_ptrmap_get(&A->casts[dt], d->operands[0].value)))) {
    /* Cast before moving the data: the cast of the source serves (the
     * forward's cast of a matmul input, for the weight gradient's
     * reshape of it), so the wide source need not live on. */
    raf_value *src = cast_value(A, d->operands[0].value, dt, user);
    c = raf_emit(&e, d->op, 1, &src, d->attrs.v, d->attrs.n);
  } else if (one_value_constant(d)) {
    c = raf_emit_splat(&e, raf_type_with_dtype(A->m, v->type, dt),
                       raf_const_get_f64(v->type->dtype, d->cdata, 0));
  } else {
    raf_attr a = {.name = "dtype", .kind = RAF_ATTR_DTYPE, .val.u.dt = dt};
    c = raf_emit(&e, RAF_OP_CAST, 1, &v, &a, 1);
  }
  if (!c || !raf_ptrmap_put(casts, v, c)) {
    A->st = RAF_ERROR;
    return v;
  }
  if (again)
    mark_remat(A, c);
  char hint[256];
  snprintf(hint, sizeof hint, "%s.%s", v->name ? v->name : "",
           raf_dtype_name(dt));
  raf_value_set_name(c, raf_func_fresh_name(A->f, hint));
  return c;
}

/* Notes that v lost a use. */
static void remember(amp *A, raf_value *v) {
  if (A->nunused == A->capunused) {
    size_t cap = A->capunused ? 2 * A->capunused : 64;
    raf_value **grown = realloc(A->unused, cap * sizeof *grown);
    if (!grown) {
      A->st = RAF_ERROR;
      return;
    }
    A->unused = grown, A->capunused = cap;
  }
  A->unused[A->nunused++] = v;
}

/* Points u at to, remembering that u's old value may have died. */
static void replace_use(amp *A, raf_use *u, raf_value *to) {
  raf_value *from = u->value;
  if (from == to)
    return;
  raf_use_set(u, to);
  remember(A, from);
}

/* Erases the statements left without uses by the casts, and those that
 * only they used: a constant rewritten in another type, a reshape whose
 * cast moved above it. Statements that were dead before stay. */
static void erase_unused(amp *A) {
  while (A->nunused > 0 && A->st == RAF_OK) {
    raf_value *v = A->unused[--A->nunused];
    raf_stmt *s = v->def;
    if (!s || !s->func || s->op == RAF_OP_CALL)
      continue;
    bool used = false;
    for (int i = 0; i < s->nresults; i++)
      used |= raf_value_has_uses(s->results[i]);
    if (used)
      continue;
    for (int i = 0; i < s->noperands; i++)
      remember(A, s->operands[i].value);
    raf_stmt_erase(s);
  }
}

static bool is_float_value(const raf_value *v) {
  return raf_dtype_is_float(v->type->dtype);
}

/* The type each float operand of s is cast to, by s's amp class; NULL-like
 * RAF_DTYPE_COUNT leaves the operand alone. */
static void choose(const amp *A, const raf_stmt *s, raf_dtype *to) {
  int n = s->noperands;
  for (int i = 0; i < n; i++)
    to[i] = RAF_DTYPE_COUNT;
  switch (raf_op_table[s->op].amp) {
  case RAF_AMP_LOWP: {
    bool any = false, wide = false;
    for (int i = 0; i < n; i++) {
      raf_dtype dt = s->operands[i].value->type->dtype;
      any |= raf_dtype_is_float(dt);
      wide |= dt == RAF_F64;
    }
    for (int i = 0; any && !wide && i < n; i++)
      if (is_float_value(s->operands[i].value))
        to[i] = A->low;
    return;
  }
  case RAF_AMP_FP32:
    for (int i = 0; i < n; i++)
      if (width(s->operands[i].value->type->dtype) == 1)
        to[i] = RAF_F32;
    return;
  default: { /* FOLLOW, NONE */
    int64_t full = s->nresults ? s->results[0]->type->numel : 0;
    raf_dtype strong = RAF_DTYPE_COUNT, any = RAF_DTYPE_COUNT;
    for (int i = 0; i < n; i++) {
      const raf_value *v = s->operands[i].value;
      if (!is_float_value(v))
        continue;
      raf_dtype dt = v->type->dtype;
      any = any == RAF_DTYPE_COUNT ? dt : promote(any, dt);
      if (v->type->numel >= full)
        strong = strong == RAF_DTYPE_COUNT ? dt : promote(strong, dt);
    }
    raf_dtype target = strong != RAF_DTYPE_COUNT ? strong : any;
    for (int i = 0; target != RAF_DTYPE_COUNT && i < n; i++)
      if (is_float_value(s->operands[i].value))
        to[i] = target;
    return;
  }
  }
}

/* Infers s's results again from its (recast) operands. */
static void retype(amp *A, raf_stmt *s) {
  raf_type *types[16];
  raf_type **t = s->nresults <= 16 ? types
                                   : malloc(sizeof *t * (size_t)s->nresults);
  if (!t || raf_infer_stmt(A->m, s, t, s->nresults) != RAF_OK) {
    if (t)
      raf_diag_report(A->ctx, s->loc, RAF_SEV_NOTE,
                      "amp: the operands of %s were cast to mixed precision "
                      "here; no type makes this statement consistent",
                      raf_op_table[s->op].name);
    A->st = RAF_ERROR;
  } else {
    for (int i = 0; i < s->nresults; i++)
      if (s->results[i]->type != t[i]) {
        s->results[i]->type = t[i];
        raf_ptrmap_put(&A->retyped, s->results[i], s->results[i]);
      }
  }
  if (t != types)
    free(t);
}

/* A `cast` of a value the pass retyped: gone when it became an identity,
 * or when it narrows a widened value back. Returns true when s went. */
static bool drop_cast(amp *A, raf_stmt *s) {
  raf_value *v = s->operands[0].value, *r = s->results[0];
  if (!raf_ptrmap_get(&A->retyped, v))
    return false;
  raf_value *to = NULL;
  if (v->type == r->type)
    to = v;
  else if (v->def && v->def->op == RAF_OP_CAST &&
           v->def->operands[0].value->type == r->type &&
           width(v->type->dtype) > width(r->type->dtype))
    to = v->def->operands[0].value;
  if (!to)
    return false;
  raf_value_replace_uses(r, to);
  remember(A, v);
  raf_stmt_erase(s);
  return true;
}

/* Rewrites one statement; s may be erased. */
static void rewrite(amp *A, raf_stmt *s) {
  raf_dtype to[64];
  switch (s->op) {
  case RAF_OP_CONSTANT:
    return;
  case RAF_OP_RETURN:
    for (int i = 0; i < s->noperands && i < A->f->nresults; i++)
      replace_use(A, &s->operands[i],
                  cast_value(A, s->operands[i].value,
                             A->f->results[i].type->dtype, s));
    return;
  case RAF_OP_CALL:
    for (int i = 0; i < s->noperands && i < s->callee->nargs; i++)
      replace_use(A, &s->operands[i],
                  cast_value(A, s->operands[i].value,
                             s->callee->args[i].value->type->dtype, s));
    return;
  case RAF_OP_CAST:
    if (drop_cast(A, s))
      return;
    break;
  default:
    break;
  }
  bool changed = false;
  for (int i = 0; i < s->noperands; i++)
    changed |= raf_ptrmap_get(&A->retyped, s->operands[i].value) != NULL;
  if (s->op != RAF_OP_CAST && s->noperands <= 64) {
    choose(A, s, to);
    for (int i = 0; i < s->noperands; i++) {
      raf_value *v = s->operands[i].value;
      if (to[i] == RAF_DTYPE_COUNT || v->type->dtype == to[i])
        continue;
      replace_use(A, &s->operands[i], cast_value(A, v, to[i], s));
      changed = true;
    }
  }
  if (changed)
    retype(A, s);
}

/* Notes the statements of f's backward pass (raf_func_forward): where the
 * function has a loss, those that the loss is not computed from. */
static raf_status find_backward(amp *A, raf_func *f) {
  bool *fwd;
  int n;
  if (raf_func_forward(f, &fwd, &n) != RAF_OK)
    return RAF_ERROR;
  int k = 0;
  for (raf_stmt *s = f->first; fwd && k < n; s = s->next, k++)
    if (!fwd[k] && !raf_ptrmap_put(&A->backward, s, s)) {
      free(fwd);
      return RAF_ERROR;
    }
  free(fwd);
  return RAF_OK;
}

static raf_status rewrite_func(amp *A, raf_func *f) {
  A->f = f;
  if (find_backward(A, f) != RAF_OK)
    A->st = RAF_ERROR;
  for (raf_stmt *s = f->first, *next; s; s = next) {
    next = s->next;
    rewrite(A, s);
  }
  erase_unused(A);
  for (int i = 0; i < RAF_DTYPE_COUNT; i++) {
    raf_ptrmap_free(&A->casts[i]);
    raf_ptrmap_free(&A->again[i]);
  }
  raf_ptrmap_free(&A->backward);
  return A->st;
}

/* ---- Loss scaling (dtype=f16) --------------------------------------------- */

static raf_value *add_scale_arg(raf_func *f) {
  char init[64];
  snprintf(init, sizeof init, "constant(%.17g)", RAF_LOSS_SCALE_INIT);
  return raf_func_add_state(f, RAF_LOSS_SCALE,
                            raf_type_get(f->module, RAF_F32, 0, NULL), init);
}

/* Seeds g's backward pass with a new argument %loss_scale: the statement
 * `%L.grad = constant 1.0` for g's returned loss %L becomes a use of it. */
static raf_status seed_with_scale(raf_ctx *ctx, raf_func *g) {
  raf_stmt *ret = raf_func_return(g);
  const raf_value *loss = ret && ret->noperands ? ret->operands[0].value : NULL;
  char want[256];
  snprintf(want, sizeof want, "%s.grad", loss && loss->name ? loss->name : "");
  raf_stmt *seed = NULL;
  for (raf_stmt *s = g->first; s && !seed; s = s->next)
    if (one_value_constant(s) && s->results[0]->type->rank == 0 &&
        strcmp(s->results[0]->name, want) == 0 &&
        raf_const_get_f64(s->results[0]->type->dtype, s->cdata, 0) == 1.0)
      seed = s;
  if (!seed) {
    raf_diag_report(ctx, g->loc, RAF_SEV_ERROR,
                    "amp: dtype=f16 scales the loss of @%s, but it has no "
                    "backward seed `%%%s = constant 1.0` as autodiff writes "
                    "it; run amp right after autodiff",
                    g->name, want);
    return RAF_ERROR;
  }
  raf_value *scale = add_scale_arg(g);
  if (!scale)
    return RAF_ERROR;
  raf_value *by = scale;
  if (seed->results[0]->type != scale->type) {
    raf_emitter e;
    raf_emitter_init(&e, g, seed, seed->loc);
    raf_attr a = {.name = "dtype", .kind = RAF_ATTR_DTYPE,
                  .val.u.dt = seed->results[0]->type->dtype};
    by = raf_emit(&e, RAF_OP_CAST, 1, &scale, &a, 1);
    if (!by)
      return RAF_ERROR;
  }
  raf_value_replace_uses(seed->results[0], by);
  raf_stmt_erase(seed);
  return RAF_OK;
}

/* Divides every gradient g returns by its %loss_scale, in f32 or wider.
 * The forward's state updates (results marked {updates = %s}: batch_norm's
 * running statistics) were never scaled, and pass through. */
static raf_status unscale_results(raf_func *g) {
  raf_stmt *ret = raf_func_return(g);
  raf_value *scale = g->args[raf_func_arg_index(g, RAF_LOSS_SCALE)].value;
  raf_emitter e;
  raf_emitter_init(&e, g, ret, ret->loc);
  raf_value *inv = raf_emit2(&e, RAF_OP_DIV, raf_emit_scalar(&e, RAF_F32, 1),
                             scale);
  if (inv)
    raf_value_set_name(inv, raf_func_fresh_name(g, "loss_scale.inv"));
  for (int i = 1; i < ret->noperands; i++) {
    raf_value *v = ret->operands[i].value;
    if (!is_float_value(v) || raf_attrs_find(&g->results[i].attrs, "updates"))
      continue;
    raf_value *k = inv;
    if (v->type->dtype != RAF_F32) {
      raf_attr a = {.name = "dtype", .kind = RAF_ATTR_DTYPE,
                    .val.u.dt = v->type->dtype};
      k = raf_emit(&e, RAF_OP_CAST, 1, &inv, &a, 1);
    }
    raf_value *u = raf_emit2(&e, RAF_OP_MUL, v, k);
    if (u)
      raf_use_set(&ret->operands[i], u);
  }
  return e.status;
}

/* Replaces call (of a function that gained %loss_scale last) by one that
 * passes scale too, keeping the results' names; returns the new call. */
static raf_stmt *pass_scale(raf_func *caller, raf_stmt *call,
                            raf_value *scale) {
  raf_module *m = caller->module;
  int n = call->noperands;
  raf_value **ops = malloc(sizeof *ops * ((size_t)n + 1));
  raf_type **types = malloc(sizeof *types * ((size_t)call->nresults + 1));
  const char **names = malloc(sizeof *names * ((size_t)call->nresults + 1));
  raf_stmt *s = NULL;
  if (ops && types && names) {
    for (int i = 0; i < n; i++)
      ops[i] = call->operands[i].value;
    ops[n] = scale;
    for (int i = 0; i < call->nresults; i++)
      types[i] = call->results[i]->type, names[i] = call->results[i]->name;
    s = raf_stmt_create(m, RAF_OP_CALL, n + 1, ops, call->nresults, types,
                        call->loc);
  }
  if (s) {
    s->callee = call->callee;
    s->attrs = call->attrs;
    raf_stmt_insert_before(caller, s, call);
    for (int i = 0; i < call->nresults; i++)
      raf_value_replace_uses(call->results[i], s->results[i]);
    raf_stmt_erase(call);
    for (int i = 0; i < s->nresults; i++)
      raf_value_set_name(s->results[i], names[i]);
  }
  free(ops);
  free(types);
  free(names);
  return s;
}

/* Threads %loss_scale through the callers of the scaled function g, and
 * gives the training steps among them GradScaler's logic. */
static raf_status scale_callers(raf_ctx *ctx, raf_module *m, raf_func *g) {
  int si = raf_func_arg_index(g, RAF_LOSS_SCALE);
  for (raf_func *f = m->first; f; f = f->next)
    for (raf_stmt *s = f->first, *next; s; s = next) {
      next = s->next;
      if (s->op != RAF_OP_CALL || s->callee != g || s->noperands > si)
        continue;
      int fi = raf_func_arg_index(f, RAF_LOSS_SCALE);
      raf_value *scale = fi >= 0 ? f->args[fi].value : add_scale_arg(f);
      raf_stmt *call = scale ? pass_scale(f, s, scale) : NULL;
      if (!call)
        return RAF_ERROR;
      if (raf_func_updates_params(f) && raf_loss_scale_step(ctx, f, call) != RAF_OK)
        return RAF_ERROR;
    }
  return RAF_OK;
}

/* A training step (a result updates a {param}) must call its gradient
 * function: inlined, the gradients lose the f32 boundary of @f_grad's
 * return (the update would read bf16 gradients) and f16 has no place for
 * the scaling. A forward that updates only state (batch_norm's running
 * statistics) is no step. */
static raf_status check_steps(raf_ctx *ctx, const raf_module *m) {
  for (const raf_func *f = m->first; f; f = f->next) {
    bool calls = false;
    for (const raf_stmt *s = f->first; s && !calls; s = s->next)
      calls = s->op == RAF_OP_CALL && raf_is_grad_func(s->callee, NULL);
    if (!raf_func_updates_params(f) || calls)
      continue;
    raf_diag_report(ctx, f->loc, RAF_SEV_ERROR,
                    "amp: @%s is a training step that does not call its "
                    "gradient function; run amp before inline, so that the "
                    "update reads f32 gradients",
                    f->name);
    return RAF_ERROR;
  }
  return RAF_OK;
}

raf_status raf_pass_amp(raf_module *m, const raf_pass_args *args) {
  amp A = {.ctx = args->ctx, .m = m, .st = RAF_OK};
  A.low = strcmp(raf_pass_opt_str(args, "dtype"), "f16") == 0 ? RAF_F16
                                                               : RAF_BF16;
  if (check_steps(args->ctx, m) != RAF_OK)
    return RAF_ERROR;
  /* Gradient functions to scale: seeded before the casts, so that the
   * scale reaches the seed's every use in whatever type it takes there. */
  int nscaled = 0;
  raf_func **scaled = NULL;
  if (A.low == RAF_F16) {
    for (raf_func *f = m->first; f; f = f->next)
      nscaled += raf_training_is_grad(NULL, f) && raf_is_grad_func(f, NULL) &&
                 raf_func_arg_index(f, RAF_LOSS_SCALE) < 0;
    scaled = calloc((size_t)nscaled + 1, sizeof *scaled);
    if (!scaled)
      return RAF_ERROR;
    nscaled = 0;
    for (raf_func *f = m->first; f; f = f->next)
      if (raf_training_is_grad(NULL, f) && raf_is_grad_func(f, NULL) &&
          raf_func_arg_index(f, RAF_LOSS_SCALE) < 0) {
        if (seed_with_scale(args->ctx, f) != RAF_OK)
          A.st = RAF_ERROR;
        scaled[nscaled++] = f;
      }
  }
  for (raf_func *f = m->first; f && A.st == RAF_OK; f = f->next)
    rewrite_func(&A, f);
  for (int i = 0; i < nscaled && A.st == RAF_OK; i++)
    if (unscale_results(scaled[i]) != RAF_OK ||
        scale_callers(args->ctx, m, scaled[i]) != RAF_OK)
      A.st = RAF_ERROR;
  raf_ptrmap_free(&A.retyped);
  free(A.unused);
  free(scaled);
  return A.st;
}
