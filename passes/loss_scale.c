/* loss_scale.c: dynamic loss scaling of a training step, with the semantics
 * of torch.cuda.amp.GradScaler (amp.h says who calls it).
 *
 * f16's smallest normal number is 6.1e-5, and gradients often lie below
 * it: the backward pass then computes zeros. Multiplying the loss by a
 * large scale S before the backward pass (amp does it by seeding the
 * backward pass with S) lifts the gradients into f16's range; they are
 * divided by S in f32 before the update. A too large S overflows to inf,
 * so the scale adapts, each step:
 *
 *   ok     = every gradient element is finite
 *   params, moments, step counter = ok ? their new values : unchanged
 *   clean  = loss_scale_growth + 1
 *   if ok and clean == 2000: S *= 2 (when S * 2 is finite), clean = 0
 *   if not ok:               S *= 0.5, clean = 0
 *   loss_scale_growth = clean
 *
 * written into the step as ordinary statements before its return:
 *
 *   %fin = isfinite(%w.grad); %c = cast(%fin) {dtype = f32}; %m = min(%c)
 *   %ok = gt(minimum of the %m, 0)
 *   %w.new = where(%ok, <update of %w>, %w)          (every {updates} result)
 *   ... the scale and the count as above, with where ...
 *   return ..., %loss_scale.new {updates = %loss_scale},
 *               %loss_scale_growth.new {updates = %loss_scale_growth}
 *
 * so fuse folds the checks into one reduction per gradient and the
 * selections into the parameters' update kernels, and plan-memory still
 * updates params in place.
 */
#include "passes/amp.h"
#include "passes/emit.h"

#include <stdlib.h>
#include <string.h>

int raf_func_arg_index(const raf_func *f, const char *name) {
  for (int i = 0; i < f->nargs; i++)
    if (strcmp(f->args[i].value->name, name) == 0)
      return i;
  return -1;
}

raf_value *raf_func_add_state(raf_func *f, const char *name, raf_type *t,
                              const char *init) {
  raf_module *m = f->module;
  raf_value *v = raf_func_add_arg(f, name, t, f->loc);
  raf_attr attrs[2] = {raf_attr_bool("state", true),
                       raf_attr_str("init", raf_module_strdup(m, init))};
  if (v)
    f->args[f->nargs - 1].attrs =
        (raf_attrs){raf_arena_memdup(&m->arena, attrs, sizeof attrs), 2};
  return v;
}

/* True where every element of every float gradient is finite: a bool[]. */
static raf_value *all_finite(raf_emitter *e, raf_value *const *grads, int n) {
  raf_attr to_f32 = {.name = "dtype", .kind = RAF_ATTR_DTYPE,
                     .val.u.dt = RAF_F32};
  raf_value *least = NULL;
  for (int i = 0; i < n; i++) {
    if (!grads[i] || !raf_dtype_is_float(grads[i]->type->dtype))
      continue;
    raf_value *fin = raf_emit1(e, RAF_OP_ISFINITE, grads[i]);
    raf_value *m = raf_emit1(e, RAF_OP_MIN,
                             raf_emit(e, RAF_OP_CAST, 1, &fin, &to_f32, 1));
    least = least ? raf_emit2(e, RAF_OP_MINIMUM, least, m) : m;
  }
  if (!least)
    least = raf_emit_scalar(e, RAF_F32, 1);
  return raf_emit2(e, RAF_OP_GT, least, raf_emit_scalar(e, RAF_F32, 0));
}

static raf_value *select3(raf_emitter *e, raf_value *c, raf_value *a,
                          raf_value *b) {
  raf_value *ops[3] = {c, a, b};
  return raf_emit(e, RAF_OP_WHERE, 3, ops, NULL, 0);
}

raf_status raf_loss_scale_step(raf_ctx *ctx, raf_func *step, raf_stmt *call) {
  raf_module *m = step->module;
  raf_func *g = call->callee;
  int si = raf_func_arg_index(g, RAF_LOSS_SCALE);
  raf_stmt *ret = raf_func_return(step);
  if (raf_func_arg_index(step, RAF_LOSS_SCALE_GROWTH) >= 0)
    return RAF_OK;
  if (si < 0 || si >= call->noperands || !ret ||
      call->operands[si].value->def != NULL) {
    raf_diag_report(ctx, call->loc, RAF_SEV_ERROR,
                    "amp: @%s: the loss scale passed to @%s must be an "
                    "argument of @%s",
                    step->name, g->name, step->name);
    return RAF_ERROR;
  }
  raf_value *scale = call->operands[si].value;
  raf_value *growth = raf_func_add_state(step, RAF_LOSS_SCALE_GROWTH,
                                raf_type_get(m, RAF_I64, 0, NULL), "zeros");
  int n = ret->noperands;
  raf_value **res = calloc((size_t)n + 2, sizeof *res);
  raf_value **grads = calloc((size_t)call->nresults, sizeof *grads);
  raf_type **types = calloc((size_t)n + 2, sizeof *types);
  raf_attrs *attrs = calloc((size_t)n + 2, sizeof *attrs);
  raf_status st = RAF_ERROR;
  if (!growth || !res || !grads || !types || !attrs)
    goto done;

  raf_emitter e;
  raf_emitter_init(&e, step, ret, call->loc);
  int ngrads = raf_func_nparams(g);
  for (int i = 0; i < ngrads; i++)
    grads[i] = call->results[1 + i];
  raf_value *ok = all_finite(&e, grads, ngrads);
  for (int i = 0; i < n; i++) {
    res[i] = ret->operands[i].value;
    attrs[i] = step->results[i].attrs;
    const raf_attr *u = raf_attrs_find(&attrs[i], "updates");
    /* The forward ran whatever the gradients hold, so its running
     * statistics are kept, as PyTorch keeps them when GradScaler skips. */
    bool forward_state = res[i]->def == call;
    if (u && !forward_state)
      res[i] = select3(&e, ok, res[i], u->val.u.value);
  }
  /* The scale and the count of clean steps (GradScaler's update). */
  raf_value *clean = raf_emit2(&e, RAF_OP_ADD, growth,
                               raf_emit_scalar(&e, RAF_I64, 1));
  raf_value *due = raf_emit2(
      &e, RAF_OP_GE, clean,
      raf_emit_scalar(&e, RAF_I64, RAF_LOSS_SCALE_INTERVAL));
  raf_value *grown = raf_emit2(
      &e, RAF_OP_MUL, scale,
      raf_emit_scalar(&e, RAF_F32, RAF_LOSS_SCALE_GROWTH_FACTOR));
  raf_value *kept = select3(&e, raf_emit1(&e, RAF_OP_ISFINITE, grown), grown,
                            scale);
  raf_value *backed = raf_emit2(
      &e, RAF_OP_MUL, scale,
      raf_emit_scalar(&e, RAF_F32, RAF_LOSS_SCALE_BACKOFF));
  raf_value *zero = raf_emit_scalar(&e, RAF_I64, 0);
  res[n] = select3(&e, ok, select3(&e, due, kept, scale), backed);
  res[n + 1] = select3(&e, ok, select3(&e, due, zero, clean), zero);
  if (e.status != RAF_OK)
    goto done;
  raf_value_set_name(res[n], raf_func_fresh_name(step, "loss_scale.new"));
  raf_value_set_name(res[n + 1],
                     raf_func_fresh_name(step, "loss_scale_growth.new"));
  raf_value *upd[2] = {scale, growth};
  for (int i = 0; i < 2; i++) {
    raf_attr a = {.name = "updates", .kind = RAF_ATTR_VALUE,
                  .val.u.value = upd[i]};
    attrs[n + i] = (raf_attrs){raf_arena_memdup(&m->arena, &a, sizeof a), 1};
  }
  for (int i = 0; i < n + 2; i++)
    types[i] = res[i]->type;
  raf_stmt *nret = raf_stmt_create(m, RAF_OP_RETURN, n + 2, res, 0, NULL,
                                   ret->loc);
  if (!nret)
    goto done;
  raf_stmt_insert_before(step, nret, ret);
  raf_stmt_erase(ret);
  raf_func_set_results(step, n + 2, types);
  for (int i = 0; i < n + 2 && step->nresults == n + 2; i++)
    step->results[i].attrs = attrs[i];
  st = step->nresults == n + 2 ? RAF_OK : RAF_ERROR;
done:
  free(res);
  free(grads);
  free(types);
  free(attrs);
  return st;
}
