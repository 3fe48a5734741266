/* optimizer.c: make the training step @f_train_step from a gradient
 * function @f_grad (docs/LangRef.md's training conventions).
 *
 * @f_grad returns the loss, then one gradient per {param} argument, in
 * argument order (what `autodiff` makes). The pass appends
 *
 *   func @f_train_step(<@f_grad's arguments>, <optimizer states>)
 *       -> (loss, <updated params> {updates = %p}, <new states> {updates = %s})
 *
 * whose body calls @f_grad and then applies the update rule to every
 * param (the forward's state updates that @f_grad returns after the
 * gradients, batch_norm's running statistics, are returned as they are,
 * after the optimizer's states, with the same {updates} marks), written with ordinary ops (mul, add, sqrt, ...), so that later
 * passes (inline, fuse) see forward, backward and update as one program.
 * The states are arguments marked {state, init = "zeros"}: `%P.momentum`
 * (momentum), `%P.m` and `%P.v` (adam, adamw) per param P, and `%step`, the
 * number of steps taken so far, an f32[] (exact to 2^24 steps) used by
 * adam's bias corrections and the learning-rate schedule.
 *
 * The formulas are torch.optim's, for the options given (t = step + 1, g
 * the gradient, after clipping):
 *   sgd       g += wd p;  p -= lr_t g
 *   momentum  g += wd p;  b = momentum b + g;  p -= lr_t b
 *   adam      g += wd p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
 *             p -= (lr_t / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 *   adamw     p *= 1 - lr_t wd, then adam without the wd term
 * clip_norm > 0 scales every gradient by min(1, clip_norm / (norm + 1e-6))
 * where norm is the global L2 norm over all gradients
 * (torch.nn.utils.clip_grad_norm_). The schedule: lr_t = lr t / warmup_steps
 * while t <= warmup_steps; then, when total_steps > 0, a cosine decay from
 * lr to min_lr over the remaining steps, lr_t = min_lr + (lr - min_lr)
 * (1 + cos(pi q)) / 2 with q = (t - warmup) / (total - warmup) clamped to
 * [0, 1]; otherwise lr.
 *
 * Which functions: the one named by option func=NAME, else every gradient
 * function (marked {grad_of = @f} by autodiff; in older modules, named
 * NAME_grad: passes/training.h). The step is named after the model,
 * @f_train_step, and marked {step_of = @f_grad}. A chosen function that does not have
 * @f_grad's shape (a scalar float loss first, then as many results as it
 * has params, each of its param's type), or a module with none, is a
 * located error that says what is expected.
 *
 * A gradient function that the amp pass loss-scaled (dtype=f16: an
 * argument %loss_scale) gives a step that passes the scale on, skips the
 * update when a gradient is not finite and adjusts the scale as
 * torch.cuda.amp.GradScaler does (passes/loss_scale.c).
 *
 * Requires: a verified module. Preserves: every existing function.
 */
#include "passes/amp.h"
#include "passes/emit.h"
#include "passes/pass.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { SGD, MOMENTUM, ADAM, ADAMW };

typedef struct options {
  enum kind kind;
  double lr, momentum, beta1, beta2, eps, weight_decay, clip_norm, min_lr;
  int64_t warmup, total;
} options;

static bool read_options(const raf_pass_args *a, options *o) {
  static const char *const kinds[] = {"sgd", "momentum", "adam", "adamw"};
  const char *k = raf_pass_opt_str(a, "kind");
  o->kind = SGD;
  for (int i = 0; i < 4; i++)
    if (strcmp(k, kinds[i]) == 0)
      o->kind = (enum kind)i;
  o->lr = raf_pass_opt_float(a, "lr");
  o->momentum = raf_pass_opt_float(a, "momentum");
  o->beta1 = raf_pass_opt_float(a, "beta1");
  o->beta2 = raf_pass_opt_float(a, "beta2");
  o->eps = raf_pass_opt_float(a, "eps");
  /* torch.optim's defaults: AdamW decays by 0.01, the others not at all. */
  o->weight_decay = raf_attrs_find(&a->options, "weight_decay")
                        ? raf_pass_opt_float(a, "weight_decay")
                        : o->kind == ADAMW ? 0.01 : 0.0;
  o->clip_norm = raf_pass_opt_float(a, "clip_norm");
  o->min_lr = raf_pass_opt_float(a, "min_lr");
  o->warmup = raf_pass_opt_int(a, "warmup_steps");
  o->total = raf_pass_opt_int(a, "total_steps");
  const char *bad = NULL;
  if (!(o->lr >= 0))
    bad = "lr must be >= 0";
  else if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
    bad = "beta1 and beta2 must be in [0, 1)";
  else if (!(o->eps >= 0) || !(o->weight_decay >= 0) || !(o->clip_norm >= 0) ||
           !(o->momentum >= 0) || !(o->min_lr >= 0))
    bad = "eps, weight_decay, clip_norm, momentum and min_lr must be >= 0";
  else if (o->warmup < 0 || o->total < 0)
    bad = "warmup_steps and total_steps must be >= 0";
  else if (o->total > 0 && o->total <= o->warmup)
    bad = "total_steps must exceed warmup_steps";
  if (bad)
    raf_diag_report(a->ctx, (raf_loc){0}, RAF_SEV_ERROR, "optimizer: %s", bad);
  return bad == NULL;
}

/* Whether g has @f_grad's shape; otherwise reports why at g. */
static bool check_grad_func(raf_ctx *ctx, const raf_func *g) {
  const char *why = NULL;
  if (!raf_is_grad_func(g, &why))
    raf_diag_report(ctx, g->loc, RAF_SEV_ERROR,
                    "optimizer: @%s is not a gradient function: %s (expected "
                    "the loss, then one gradient per {param} argument, in "
                    "order, as `autodiff` makes)",
                    g->name, why);
  return why == NULL;
}

/* Adds an argument with attributes {flag, init = "zeros"} (flag "state")
 * or copies of attrs. */
static raf_value *add_state(raf_func *f, const char *hint, raf_type *t,
                            raf_loc loc) {
  raf_module *m = f->module;
  raf_value *v = raf_func_add_arg(f, raf_func_fresh_name(f, hint), t, loc);
  raf_attr attrs[2] = {raf_attr_bool("state", true),
                       raf_attr_str("init", "zeros")};
  if (v)
    f->args[f->nargs - 1].attrs =
        (raf_attrs){raf_arena_memdup(&m->arena, attrs, sizeof attrs), 2};
  return v;
}

/* The builder's shorthands, on a scalar of the loss dtype `dt`. */
typedef struct gen {
  raf_emitter e;
  raf_dtype dt;
  /* Scalar constants made so far, made once each. */
  double kval[32];
  raf_value *kvar[32];
  int nk;
} gen;

static raf_value *k(gen *g, double v) {
  for (int i = 0; i < g->nk; i++)
    if (g->kval[i] == v)
      return g->kvar[i];
  raf_value *c = raf_emit_scalar(&g->e, g->dt, v);
  if (c && g->nk < 32)
    g->kval[g->nk] = v, g->kvar[g->nk++] = c;
  return c;
}
static raf_value *add(gen *g, raf_value *a, raf_value *b) {
  return raf_emit2(&g->e, RAF_OP_ADD, a, b);
}
static raf_value *sub(gen *g, raf_value *a, raf_value *b) {
  return raf_emit2(&g->e, RAF_OP_SUB, a, b);
}
static raf_value *mul(gen *g, raf_value *a, raf_value *b) {
  return raf_emit2(&g->e, RAF_OP_MUL, a, b);
}
static raf_value *dvd(gen *g, raf_value *a, raf_value *b) {
  return raf_emit2(&g->e, RAF_OP_DIV, a, b);
}
/* a scalar constant, cast to the dtype of like when it differs */
static raf_value *like(gen *g, raf_value *scalar, raf_value *like) {
  if (!scalar || !like || like->type->dtype == g->dt)
    return scalar;
  raf_attr a = {.name = "dtype", .kind = RAF_ATTR_DTYPE,
                .val.u.dt = like->type->dtype};
  return raf_emit(&g->e, RAF_OP_CAST, 1, &scalar, &a, 1);
}

/* lr_t for step t (a scalar). */
static raf_value *schedule(gen *g, const options *o, raf_value *t) {
  raf_value *lr = k(g, o->lr);
  raf_value *warm = NULL, *decay = NULL;
  if (o->warmup > 0)
    warm = mul(g, lr, dvd(g, t, k(g, (double)o->warmup)));
  if (o->total > 0) {
    raf_value *q = dvd(g, sub(g, t, k(g, (double)o->warmup)),
                       k(g, (double)(o->total - o->warmup)));
    q = raf_emit2(&g->e, RAF_OP_MINIMUM,
                  raf_emit2(&g->e, RAF_OP_MAXIMUM, q, k(g, 0)), k(g, 1));
    raf_value *c = raf_emit1(&g->e, RAF_OP_COS, mul(g, q, k(g, 3.14159265358979323846)));
    decay = add(g, k(g, o->min_lr),
                mul(g, k(g, (o->lr - o->min_lr) / 2), add(g, k(g, 1), c)));
  }
  if (!warm)
    return decay ? decay : lr;
  raf_value *in_warmup = raf_emit2(&g->e, RAF_OP_LE, t, k(g, (double)o->warmup));
  raf_value *ops[3] = {in_warmup, warm, decay ? decay : lr};
  return raf_emit(&g->e, RAF_OP_WHERE, 3, ops, NULL, 0);
}

/* sqrt(sum over all gradients of g^2): the global norm. */
static raf_value *global_norm(gen *g, raf_value **grads, int n) {
  raf_value *total = NULL;
  for (int i = 0; i < n; i++) {
    raf_value *sq = raf_emit1(&g->e, RAF_OP_SUM, mul(g, grads[i], grads[i]));
    if (sq && sq->type->dtype != g->dt) {
      raf_attr a = {.name = "dtype", .kind = RAF_ATTR_DTYPE, .val.u.dt = g->dt};
      sq = raf_emit(&g->e, RAF_OP_CAST, 1, &sq, &a, 1);
    }
    total = total ? add(g, total, sq) : sq;
  }
  return raf_emit1(&g->e, RAF_OP_SQRT, total);
}

/* The index of v among f's arguments (raf_is_grad_func checked that an
 * {updates} result of a gradient function names one). */
static int arg_index_of(const raf_func *f, const raf_value *v) {
  int i = 0;
  while (i < f->nargs - 1 && f->args[i].value != v)
    i++;
  return i;
}

/* Builds @<base>_train_step from the gradient function gf. */
static raf_status build_step(raf_ctx *ctx, raf_module *m, raf_func *gf,
                             const options *o) {
  char *name = raf_training_step_name(gf);
  if (!name)
    return RAF_ERROR;
  raf_func *f = raf_func_create(m, name, gf->loc);
  if (!f)
    raf_diag_report(ctx, gf->loc, RAF_SEV_ERROR,
                    "optimizer: @%s exists already", name);
  free(name);
  if (!f || raf_training_mark_step(f, gf) != RAF_OK)
    return RAF_ERROR;

  int nargs = gf->nargs, nparams = raf_func_nparams(gf);
  int nforward = gf->nresults - 1 - nparams; /* the forward's state updates */
  raf_value **args = calloc((size_t)nargs, sizeof *args);
  raf_value **call_res = calloc((size_t)gf->nresults, sizeof *call_res);
  /* results: loss, params, then states (at most 2 per param, and step),
   * then the forward's state updates */
  int cap = 1 + 3 * nparams + 1 + nforward, nres = 0;
  raf_value **res = calloc((size_t)cap, sizeof *res);
  raf_value **upd = calloc((size_t)cap, sizeof *upd); /* what each updates */
  raf_value **params = calloc((size_t)nparams + 1, sizeof *params);
  raf_value **grads = calloc((size_t)nparams + 1, sizeof *grads);
  raf_value **states = calloc((size_t)(2 * nparams) + 1, sizeof *states);
  raf_status st = RAF_ERROR;
  if (!args || !call_res || !res || !upd || !params || !grads || !states)
    goto done;

  /* @f_grad's arguments, with their attributes. */
  for (int i = 0, p = 0; i < nargs; i++) {
    const raf_arg *a = &gf->args[i];
    args[i] = raf_func_add_arg(f, a->value->name, a->value->type,
                               a->value->loc);
    if (!args[i])
      goto done;
    f->args[i].attrs = a->attrs;
    if (raf_arg_flag(a, "param"))
      params[p++] = args[i];
  }
  /* The states. */
  bool adam = o->kind == ADAM || o->kind == ADAMW;
  int nstates = 0;
  for (int p = 0; p < nparams; p++) {
    char hint[256];
    const char *pn = params[p]->name;
    if (o->kind == MOMENTUM) {
      snprintf(hint, sizeof hint, "%s.momentum", pn);
      states[nstates++] = add_state(f, hint, params[p]->type, gf->loc);
    } else if (adam) {
      snprintf(hint, sizeof hint, "%s.m", pn);
      states[nstates++] = add_state(f, hint, params[p]->type, gf->loc);
      snprintf(hint, sizeof hint, "%s.v", pn);
      states[nstates++] = add_state(f, hint, params[p]->type, gf->loc);
    }
  }
  gen g = {.dt = gf->results[0].type->dtype};
  raf_value *step = NULL;
  if (adam || o->warmup > 0 || o->total > 0)
    step = add_state(f, "step", raf_type_get(m, g.dt, 0, NULL), gf->loc);

  raf_emitter_init(&g.e, f, NULL, gf->loc);
  if (raf_emit_call(&g.e, gf, args, call_res) != RAF_OK)
    goto done;
  res[nres++] = call_res[0]; /* the loss */
  for (int p = 0; p < nparams; p++)
    grads[p] = call_res[1 + p];

  raf_value *t = step ? add(&g, step, k(&g, 1)) : NULL;
  raf_value *lr = t ? schedule(&g, o, t) : k(&g, o->lr);
  if (o->clip_norm > 0) {
    raf_value *norm = global_norm(&g, grads, nparams);
    raf_value *coef = dvd(&g, k(&g, o->clip_norm), add(&g, norm, k(&g, 1e-6)));
    coef = raf_emit2(&g.e, RAF_OP_MINIMUM, coef, k(&g, 1));
    for (int p = 0; p < nparams; p++)
      grads[p] = mul(&g, grads[p], like(&g, coef, grads[p]));
  }
  raf_value *bc1 = NULL, *sqrt_bc2 = NULL;
  if (adam) {
    bc1 = sub(&g, k(&g, 1), raf_emit2(&g.e, RAF_OP_POW, k(&g, o->beta1), t));
    sqrt_bc2 = raf_emit1(
        &g.e, RAF_OP_SQRT,
        sub(&g, k(&g, 1), raf_emit2(&g.e, RAF_OP_POW, k(&g, o->beta2), t)));
  }
  raf_value *step_size = adam ? dvd(&g, lr, bc1) : lr;

  int s = 0, first_state_res = 1 + nparams;
  nres = first_state_res; /* params fill [1, 1 + nparams) */
  for (int p = 0; p < nparams; p++) {
    raf_value *w = params[p], *gr = grads[p], *nw;
    if (o->weight_decay > 0 && o->kind != ADAMW)
      gr = add(&g, gr, mul(&g, w, like(&g, k(&g, o->weight_decay), w)));
    if (o->kind == SGD) {
      nw = sub(&g, w, mul(&g, gr, like(&g, lr, w)));
    } else if (o->kind == MOMENTUM) {
      raf_value *b = states[s++];
      raf_value *nb = add(&g, mul(&g, b, like(&g, k(&g, o->momentum), b)), gr);
      res[nres] = nb, upd[nres++] = b;
      nw = sub(&g, w, mul(&g, nb, like(&g, lr, w)));
    } else {
      raf_value *mm = states[s++], *vv = states[s++];
      if (o->kind == ADAMW && o->weight_decay > 0)
        w = mul(&g, w, like(&g, sub(&g, k(&g, 1),
                                    mul(&g, lr, k(&g, o->weight_decay))), w));
      raf_value *nm = add(&g, mul(&g, mm, like(&g, k(&g, o->beta1), mm)),
                          mul(&g, gr, like(&g, k(&g, 1 - o->beta1), gr)));
      raf_value *nv = add(&g, mul(&g, vv, like(&g, k(&g, o->beta2), vv)),
                          mul(&g, mul(&g, gr, gr),
                              like(&g, k(&g, 1 - o->beta2), gr)));
      raf_value *denom =
          add(&g, dvd(&g, raf_emit1(&g.e, RAF_OP_SQRT, nv),
                      like(&g, sqrt_bc2, nv)),
              like(&g, k(&g, o->eps), nv));
      nw = sub(&g, w, mul(&g, dvd(&g, nm, denom), like(&g, step_size, w)));
      res[nres] = nm, upd[nres++] = mm;
      res[nres] = nv, upd[nres++] = vv;
    }
    res[1 + p] = nw, upd[1 + p] = params[p];
  }
  if (step)
    res[nres] = t, upd[nres++] = step;
  /* The forward's running statistics update the same arguments here. */
  for (int i = 0; i < nforward; i++) {
    int r = 1 + nparams + i;
    const raf_attr *u = raf_attrs_find(&gf->results[r].attrs, "updates");
    res[nres] = call_res[r];
    upd[nres++] = args[arg_index_of(gf, u->val.u.value)];
  }
  if (g.e.status != RAF_OK)
    goto done;

  raf_type **types = calloc((size_t)nres, sizeof *types);
  if (!types)
    goto done;
  for (int i = 0; i < nres; i++)
    types[i] = res[i]->type;
  raf_func_set_results(f, nres, types);
  free(types);
  for (int i = 1; i < nres; i++) {
    raf_attr a = {.name = "updates", .kind = RAF_ATTR_VALUE,
                  .val.u.value = upd[i]};
    f->results[i].attrs =
        (raf_attrs){raf_arena_memdup(&m->arena, &a, sizeof a), 1};
  }
  raf_stmt *ret = raf_stmt_create(m, RAF_OP_RETURN, nres, res, 0, NULL,
                                  gf->loc);
  if (!ret)
    goto done;
  raf_stmt_insert_before(f, ret, NULL);
  /* A gradient function that amp loss-scaled (dtype=f16): the step skips
   * non-finite updates and carries the scale. */
  st = raf_func_arg_index(gf, RAF_LOSS_SCALE) >= 0
           ? raf_loss_scale_step(ctx, f, call_res[0]->def)
           : RAF_OK;
done:
  free(args);
  free(call_res);
  free(res);
  free(upd);
  free(params);
  free(grads);
  free(states);
  return st;
}

raf_status raf_pass_optimizer(raf_module *m, const raf_pass_args *args) {
  options o;
  if (!read_options(args, &o))
    return RAF_ERROR;
  const char *only = raf_pass_opt_str(args, "func");
  if (only && *only == '@')
    only++;
  /* Collect first: the pass appends functions while it walks. */
  int n = 0, cap = 0;
  raf_func **chosen = NULL;
  for (raf_func *f = m->first; f; f = f->next) {
    bool pick = only ? strcmp(f->name, only) == 0
                     : raf_training_is_grad(args->ctx, f);
    if (!pick)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 4;
      raf_func **grown = realloc(chosen, (size_t)cap * sizeof *grown);
      if (!grown) {
        free(chosen);
        return RAF_ERROR;
      }
      chosen = grown;
    }
    chosen[n++] = f;
  }
  raf_status st = RAF_OK;
  if (n == 0) {
    if (only)
      raf_diag_report(args->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "optimizer: no function @%s in the module", only);
    else
      raf_diag_report(args->ctx, (raf_loc){0}, RAF_SEV_ERROR,
                      "optimizer: the module has no gradient function: "
                      "expected one that autodiff made ({grad_of = @f}), "
                      "or func=NAME");
    st = RAF_ERROR;
  }
  for (int i = 0; i < n; i++)
    if (!check_grad_func(args->ctx, chosen[i]) ||
        build_step(args->ctx, m, chosen[i], &o) != RAF_OK)
      st = RAF_ERROR;
  free(chosen);
  return st;
}
