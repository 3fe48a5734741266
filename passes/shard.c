/* shard.c: data-parallel training with ZeRO, the shard pass
 * (docs/Distributed.md; RAF's partition_gradient, Rajbhandari et al. 2020).
 *
 * Options world=N, zero=0|1|2|3, bucket=SIZE (default 25M),
 * batch_norm=sync|local. The pass
 * rewrites every training step @F_train_step that calls its gradient
 * function @F_grad into the program each of N ranks runs (SPMD):
 *
 *   - The data arguments (neither param nor state) become local: the
 *     batch, axis 0, divided by N (a scalar, such as dropout's key, is
 *     every rank's). @F_grad's statements are retyped for it
 *     (a reshape's or broadcast's shape, a slice's end along axis 0); the
 *     batch must stay the leading axis of everything computed from the
 *     data, which is checked statement by statement.
 *   - The loss @F_grad returns is all-reduced, so every rank holds, and
 *     raf-run logs, the global loss: the mean of the ranks' losses for a
 *     mean over the batch, their sum for a sum (loss_reduction: a loss
 *     that is neither is refused). The gradients are summed: autodiff made
 *     a mean's from the global count, so each rank's is its share.
 *     cross_entropy's mean, over the labels each rank counts, becomes the
 *     ranks' sums over the all-reduced count, summed (global_mean).
 *   - A dropout of the batch draws, on each rank, the mask one process
 *     draws for the rank's rows; batch_norm's statistics are all-reduced
 *     (batch_norm=sync, the default) or each rank's own with the running
 *     ones averaged (batch_norm=local); passes/shard_across.c.
 *   - zero=0: gradients are all-reduced inside @F_grad, in buckets
 *     of about bucket bytes, each just after its last gradient is made.
 *   - zero=1: the step reduce-scatters the gradients after @F_grad
 *     returns (every full gradient is alive then, as in ZeRO-1), and
 *     updates this rank's part of every parameter, with optimizer states
 *     that hold only that part (`sharded` arguments); the new parts are
 *     all-gathered into the full parameters.
 *   - zero=2: the reduce-scatter moves into @F_grad, just after each
 *     bucket's gradients are made, so the full gradients die early.
 *   - zero=3: the parameters are `sharded` too. @F_grad all-gathers each
 *     bucket of parameters just before its first forward use and again
 *     before its first backward use, so a full parameter lives only while
 *     its layer runs; the step updates the parts in place.
 *
 * A part is the tensor flattened row-major, zero-padded to a multiple of N
 * and cut into N equal pieces; rank r holds piece r. A bucket of several
 * parts communicates as one [N, sum of part sizes] matrix, concatenated
 * along axis 1, so that row r is rank r's pieces and one reduce_scatter or
 * all_gather along axis 0 serves the whole bucket.
 *
 * The update must be elementwise in each parameter, its gradient and its
 * states (sgd, momentum, adam, adamw), except for whole reductions to a
 * scalar (sum, min, max), which reduce the part and all-reduce the result
 * (clip_norm's squared norm, f16 loss scaling's "all finite" flag:
 * shard_reduce_part); any other statement that mixes a part with anything
 * else is a located error.
 *
 * Requires: a verified module, after optimizer and before inline,
 * dispatch, fuse, remat and plan-memory (passes/passes.def). Marks the
 * functions it rewrote with `world = N`.
 */
#include "passes/shard_internal.h"
#include "passes/amp.h"
#include "ir/memplan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

raf_status shard_fail(shard *S, raf_loc loc, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  raf_diag_report(S->ctx, loc, RAF_SEV_ERROR, "shard: %s", msg);
  S->st = RAF_ERROR;
  return RAF_ERROR;
}

int64_t shard_numel(const raf_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->dims[i];
  return n;
}

raf_type *shard_vec_type(shard *S, raf_dtype dt, int64_t n) {
  return raf_type_get(S->m, dt, 1, &n);
}

raf_type *shard_mat_type(shard *S, raf_dtype dt, int64_t rows, int64_t cols) {
  int64_t d[2] = {rows, cols};
  return raf_type_get(S->m, dt, 2, d);
}

raf_value *shard_reshape(raf_emitter *e, raf_value *v, const raf_type *to) {
  if (!v || v->type == to)
    return v;
  raf_attr a = raf_attr_ints(e->m, "shape", to->dims, to->rank);
  return raf_emit(e, RAF_OP_RESHAPE, 1, &v, &a, 1);
}

raf_value *shard_collective(shard *S, raf_emitter *e, raf_opcode op,
                            raf_value *v, const char *reduction) {
  raf_attr a[3] = {raf_attr_int("axis", 0),
                   raf_attr_int("world_size", S->world)};
  int n = 2;
  if (reduction)
    a[n++] = raf_attr_str("op", reduction);
  return raf_emit(e, op, 1, &v, a, n);
}

/* Elements in one rank's part of a tensor of type t. */
static int64_t part_len(const shard *S, const raf_type *t) {
  return (shard_numel(t) + S->world - 1) / S->world;
}

/* ---- Parts and buckets --------------------------------------------------- */

/* v (any shape) as the [N, part] matrix whose row r is rank r's part. */
static raf_value *as_rows(shard *S, raf_emitter *e, raf_value *v) {
  int64_t n = shard_numel(v->type), c = part_len(S, v->type);
  if (c * S->world == n)
    return shard_reshape(e, v, shard_mat_type(S, v->type->dtype, S->world, c));
  raf_value *flat = shard_reshape(e, v, shard_vec_type(S, v->type->dtype, n));
  {
    raf_value *pad[2] = {flat, raf_emit_splat(e, shard_vec_type(S, v->type->dtype,
                                                          c * S->world - n),
                                              0.0)};
    raf_attr axis = raf_attr_int("axis", 0);
    flat = raf_emit(e, RAF_OP_CONCAT, 2, pad, &axis, 1);
  }
  return shard_reshape(e, flat, shard_mat_type(S, v->type->dtype, S->world, c));
}

/* The full tensor of type full from its [N, part] matrix. */
static raf_value *from_rows(shard *S, raf_emitter *e, raf_value *rows,
                            raf_type *full) {
  int64_t n = shard_numel(full), c = part_len(S, full);
  if (c * S->world == n)
    return shard_reshape(e, rows, full);
  raf_value *flat = shard_reshape(e, rows, shard_vec_type(S, full->dtype, c * S->world));
  {
    int64_t b = 0;
    raf_attr a[2] = {raf_attr_ints(e->m, "begin", &b, 1),
                     raf_attr_ints(e->m, "end", &n, 1)};
    flat = raf_emit(e, RAF_OP_SLICE, 1, &flat, a, 2);
  }
  return shard_reshape(e, flat, full);
}

/* Concatenates the [N, c_i] or [1, c_i] matrices along axis 1, runs the
 * collective op on the bucket, and splits the result back into out[i]. */
static void bucket_op(shard *S, raf_emitter *e, raf_opcode op,
                      const char *reduction, raf_value **in, int n,
                      raf_value **out) {
  raf_value *all = in[0];
  raf_attr axis1 = raf_attr_int("axis", 1);
  if (n > 1)
    all = raf_emit(e, RAF_OP_CONCAT, n, in, &axis1, 1);
  all = shard_collective(S, e, op, all, reduction);
  if (n == 1 || !all) {
    out[0] = all;
    return;
  }
  int64_t *sizes = malloc(sizeof *sizes * (size_t)n);
  if (!sizes) {
    e->status = RAF_ERROR;
    return;
  }
  for (int i = 0; i < n; i++)
    sizes[i] = in[i]->type->dims[1];
  raf_attr a[2] = {axis1, raf_attr_ints(e->m, "sizes", sizes, n)};
  raf_emit_multi(e, RAF_OP_SPLIT, 1, &all, a, 2, n, out);
  free(sizes);
}

/* The number of vals[0..n) that make the next bucket: at least one, and
 * as many more as stay within S->bucket bytes. */
static int bucket_len(const shard *S, raf_value *const *vals, int n) {
  int64_t bytes = raf_mem_bytes(vals[0]->type);
  int j = 1;
  while (j < n && bytes + raf_mem_bytes(vals[j]->type) <= S->bucket)
    bytes += raf_mem_bytes(vals[j++]->type);
  return j;
}

/* Reduces the n gradients g[] as one bucket at e: all_reduce into full
 * gradients (zero=0), or reduce_scatter into parts, by grad_reduction. */
static void reduce_bucket(shard *S, raf_emitter *e, raf_value **g, int n,
                          bool scatter, raf_value **out) {
  raf_value **m = calloc((size_t)n, sizeof *m);
  if (!m) {
    e->status = RAF_ERROR;
    return;
  }
  for (int i = 0; i < n; i++)
    m[i] = scatter ? as_rows(S, e, g[i])
                   : shard_reshape(e, g[i], shard_mat_type(S, g[i]->type->dtype, 1,
                                               shard_numel(g[i]->type)));
  bucket_op(S, e, scatter ? RAF_OP_REDUCE_SCATTER : RAF_OP_ALL_REDUCE,
            S->grad_reduction, m, n, out);
  for (int i = 0; i < n; i++)
    out[i] = shard_reshape(e, out[i],
                     scatter ? shard_vec_type(S, g[i]->type->dtype,
                                        part_len(S, g[i]->type))
                             : g[i]->type);
  free(m);
}

/* All-gathers the n parts p[] (of tensors of types full[]) as one bucket
 * at e into the full tensors out[]. */
static void gather_bucket(shard *S, raf_emitter *e, raf_value **p,
                          raf_type **full, int n, raf_value **out) {
  raf_value **m = calloc((size_t)n, sizeof *m);
  if (!m) {
    e->status = RAF_ERROR;
    return;
  }
  for (int i = 0; i < n; i++)
    m[i] = shard_reshape(e, p[i], shard_mat_type(S, p[i]->type->dtype, 1,
                                     p[i]->type->dims[0]));
  bucket_op(S, e, RAF_OP_ALL_GATHER, NULL, m, n, out);
  for (int i = 0; i < n; i++)
    out[i] = from_rows(S, e, out[i], full[i]);
  free(m);
}

/* The emitter that inserts just after v is made (at the top for an
 * argument). */
static void emit_after(raf_emitter *e, raf_func *f, raf_value *v) {
  raf_stmt *before = v->def ? v->def->next : f->first;
  raf_emitter_init(e, f, before, v->def ? v->def->loc : f->loc);
}

static int by_order(const void *a, const void *b) {
  const raf_value *x = *(raf_value *const *)a, *y = *(raf_value *const *)b;
  int64_t ox = x->def ? x->def->order : -1, oy = y->def ? y->def->order : -1;
  return (ox > oy) - (ox < oy);
}

/* ---- The local batch ----------------------------------------------------- */

static bool is_data(const raf_arg *a) {
  return !raf_arg_flag(a, "param") && !raf_arg_flag(a, "state");
}

void shard_rescale_ints(shard *S, raf_stmt *s, const char *name, int k,
                         int64_t to) {
  const raf_attr *a = raf_attrs_find(&s->attrs, name);
  if (!a || a->kind != RAF_ATTR_INTS || a->val.u.ints.n <= k)
    return;
  int64_t v[RAF_MAX_RANK];
  int n = a->val.u.ints.n < RAF_MAX_RANK ? a->val.u.ints.n : RAF_MAX_RANK;
  memcpy(v, a->val.u.ints.v, sizeof *v * (size_t)n);
  if (to < 0 && v[k] % S->world) {
    shard_fail(S, a->loc, "%s[%d] = %lld of %s is not divisible by world = %lld",
         name, k, (long long)v[k], raf_op_table[s->op].name,
         (long long)S->world);
    return;
  }
  v[k] = to >= 0 ? to : v[k] / S->world;
  raf_stmt_set_attr_ints(S->m, s, name, v, n);
}

/* The local batch's version of a statement with a batched operand: its
 * shapes along axis 0 divided by N. */
static void rescale_stmt(shard *S, raf_stmt *s) {
  /* A shape is the batched value's, except the gradients of a table and
   * of a convolution's weight, which are a param's. */
  if (raf_attrs_find(&s->attrs, "shape") && s->op != RAF_OP_TAKE_GRAD &&
      s->op != RAF_OP_CONV2D_GRAD_WEIGHT)
    shard_rescale_ints(S, s, "shape", 0, -1);
  if (s->op == RAF_OP_SLICE || s->op == RAF_OP_SLICE_GRAD) {
    const raf_attr *b = raf_attrs_find(&s->attrs, "begin");
    const raf_attr *e = raf_attrs_find(&s->attrs, "end");
    /* The full shape along axis 0: the slice's input, or slice_grad's. */
    int64_t local = s->op == RAF_OP_SLICE
                        ? s->operands[0].value->type->dims[0]
                        : raf_attrs_find(&s->attrs, "shape")->val.u.ints.v[0];
    if (b && e && b->val.u.ints.n && b->val.u.ints.v[0] == 0 &&
        e->val.u.ints.v[0] >= local * S->world)
      shard_rescale_ints(S, s, "end", 0, local);
    else if (b && b->val.u.ints.n)
      shard_fail(S, s->loc, "%s cuts the batch axis; only whole batches shard",
           raf_op_table[s->op].name);
  }
}

/* Retypes f for the local batch: its data arguments, then every statement
 * that reads a batched value, checking that the batch stays on axis 0. */
static void localize(shard *S, raf_func *f) {
  for (int i = 0; i < f->nargs; i++) {
    raf_value *v = f->args[i].value;
    if (!is_data(&f->args[i]))
      continue;
    const raf_type *t = v->type;
    if (t->rank == 0) /* no batch: the same on every rank (dropout's key) */
      continue;
    if (t->dims[0] % S->world) {
      shard_fail(S, v->loc, "the batch of %%%s, %lld, is not divisible by "
           "world = %lld", v->name, (long long)t->dims[0],
           (long long)S->world);
      continue;
    }
    int64_t d[RAF_MAX_RANK];
    memcpy(d, t->dims, sizeof *d * (size_t)t->rank);
    d[0] /= S->world;
    v->type = raf_type_get(S->m, t->dtype, t->rank, d);
    raf_ptrmap_put(&S->batched, v, v);
  }
  raf_stmt *ret = raf_func_return(f);
  for (raf_stmt *s = f->first; s && s != ret && S->st == RAF_OK; s = s->next) {
    bool any = false;
    for (int i = 0; i < s->noperands; i++)
      any |= raf_ptrmap_get(&S->batched, s->operands[i].value) != NULL;
    if (!any || s == S->call) /* the call is retyped from its callee */
      continue;
    if (s->op == RAF_OP_CALL) {
      shard_fail(S, s->loc, "@%s is called with batch data; run inline first, or "
           "shard only @%s", s->callee->name, S->grad->name);
      return;
    }
    shard_localize_splats(S, s);
    rescale_stmt(S, s);
    if (s->op == RAF_OP_DROPOUT && S->world > 1 &&
        raf_ptrmap_get(&S->batched, s->operands[0].value))
      shard_rank_masks(S, s);
    raf_type *t[64];
    if (S->st != RAF_OK || s->nresults > 64 ||
        raf_infer_stmt(S->m, s, t, s->nresults) != RAF_OK) {
      if (S->st == RAF_OK)
        raf_diag_report(S->ctx, s->loc, RAF_SEV_NOTE,
                        "shard: the local batch made this statement "
                        "inconsistent: every value of batch size must be "
                        "computed from the data");
      S->st = RAF_ERROR;
      return;
    }
    for (int r = 0; r < s->nresults; r++) {
      raf_type *o = s->results[r]->type;
      if (t[r] == o)
        continue;
      bool lead = t[r]->rank == o->rank && o->rank > 0 &&
                  t[r]->dims[0] * S->world == o->dims[0];
      for (int k = 1; lead && k < o->rank; k++)
        lead = t[r]->dims[k] == o->dims[k];
      if (!lead) {
        char a[64], b[64];
        raf_type_str(o, a, sizeof a);
        raf_type_str(t[r], b, sizeof b);
        shard_fail(S, s->loc, "the batch is not the leading axis of %%%s (%s, "
             "which the local batch makes %s)", s->results[r]->name, a, b);
        return;
      }
      s->results[r]->type = t[r];
      raf_ptrmap_put(&S->batched, s->results[r], s->results[r]);
    }
  }
}

/* f's result types from what its return returns. */
static void retype_results(raf_func *f) {
  raf_stmt *ret = raf_func_return(f);
  for (int i = 0; i < f->nresults; i++)
    f->results[i].type = ret->operands[i].value->type;
}

static void set_world(shard *S, raf_func *f) {
  raf_attr a = raf_attr_int("world", S->world);
  raf_attrs_set(S->m, &f->attrs, &a, f->loc);
}

const raf_type *shard_whole_type(shard *S, raf_value *v) {
  const raf_type *t = raf_ptrmap_get(&S->whole, v);
  return t ? t : v->type;
}

/* Arg v holds a part from now on: its type and its `sharded` attribute. */
static void make_part_arg(shard *S, raf_func *f, raf_value *v) {
  raf_ptrmap_put(&S->whole, v, v->type);
  raf_attr a = raf_attr_ints(S->m, "sharded", v->type->dims, v->type->rank);
  raf_attrs_set(S->m, &f->args[v->index].attrs, &a, v->loc);
  v->type = shard_vec_type(S, v->type->dtype, part_len(S, v->type));
}

/* ---- The gradient function ------------------------------------------------ */

/* Reduces @F_grad's gradients in buckets, each just after its last
 * gradient is made: all_reduce (zero=0) or reduce_scatter into parts. */
static void reduce_in_grad(shard *S) {
  raf_func *f = S->grad;
  raf_stmt *ret = raf_func_return(f);
  int n = raf_func_nparams(f); /* the gradients; the states follow */
  raf_value **g = calloc((size_t)n + 1, sizeof *g);
  raf_value **out = calloc((size_t)n + 1, sizeof *out);
  if (!g || !out) {
    S->st = RAF_ERROR;
    goto done;
  }
  for (int i = 0; i < n; i++)
    g[i] = ret->operands[1 + i].value;
  qsort(g, (size_t)n, sizeof *g, by_order);
  for (int i = 0, k; i < n && S->st == RAF_OK; i += k) {
    k = bucket_len(S, g + i, n - i);
    raf_emitter e;
    emit_after(&e, f, g[i + k - 1]);
    reduce_bucket(S, &e, g + i, k, S->zero >= 2, out + i);
    if ((S->st = e.status) != RAF_OK)
      break;
    for (int j = i; j < i + k; j++)
      for (int q = 1; q <= n; q++)
        if (ret->operands[q].value == g[j])
          raf_use_set(&ret->operands[q], out[j]);
  }
done:
  free(g);
  free(out);
}

/* How the loss reduces over the batch, so that the ranks' losses and
 * gradients combine into one process's: "mean" (cross_entropy and
 * mse_loss by default, a mean: the mean of the ranks' means, equal local
 * batches) or "sum" (their sum), seen through casts (amp's). Anything
 * else is a located error, never a guess. */
static const char *loss_reduction(shard *S, raf_value *loss,
                                  raf_stmt **made) {
  raf_stmt *s = loss->def;
  while (s && s->op == RAF_OP_CAST && s->operands[0].value->def)
    s = s->operands[0].value->def;
  if (!s) {
    shard_fail(S, S->grad->loc, "the loss @%s returns is not computed from the "
         "batch", S->grad->name);
    return NULL;
  }
  const char *r = NULL;
  switch (s->op) {
  case RAF_OP_CROSS_ENTROPY:
  case RAF_OP_MSE_LOSS:
    r = raf_stmt_attr_str(s, "reduction");
    r = !r ? "mean" : strcmp(r, "mean") == 0 ? "mean"
                    : strcmp(r, "sum") == 0  ? "sum" : NULL;
    break;
  case RAF_OP_MEAN: r = "mean"; break;
  case RAF_OP_SUM: r = "sum"; break;
  default: break;
  }
  *made = s;
  if (!r)
    shard_fail(S, s->loc, "cannot tell how the loss (%s) reduces over the batch, "
         "so not how the ranks' losses and gradients combine: it must be "
         "cross_entropy or mse_loss with reduction \"mean\" or \"sum\", "
         "or a mean or a sum", raf_op_table[s->op].name);
  return r;
}

/* v before any casts. */
static raf_value *uncast(raf_value *v) {
  while (v->def && v->def->op == RAF_OP_CAST)
    v = v->def->operands[0].value;
  return v;
}

/* cross_entropy's mean is over the labels it counts (those other than
 * ignore_index), and ranks count different numbers when some are ignored
 * (a masked LM): the mean of their means is not the global mean. So
 * @F_grad counts its labels, all-reduces the count C, and each rank's
 * loss becomes its sum of losses over C, and its cross_entropy_grad a sum
 * with dy / C: the sum of the ranks' losses and gradients is then one
 * process's mean and its gradient, whatever the ranks count. */
static void global_mean(shard *S, raf_stmt *ce) {
  raf_value *labels = ce->operands[1].value, *loss = ce->results[0];
  int64_t ignore = raf_attrs_find(&ce->attrs, "ignore_index")
                       ? raf_stmt_attr_int(ce, "ignore_index")
                       : -100;
  raf_emitter e;
  raf_emitter_init(&e, S->grad, ce, ce->loc);
  raf_value *kept = raf_emit2(&e, RAF_OP_NE, labels,
                              raf_emit_scalar(&e, labels->type->dtype,
                                              (double)ignore));
  raf_attr f32 = {.name = "dtype", .kind = RAF_ATTR_DTYPE,
                  .val.u.dt = loss->type->dtype};
  raf_value *count = raf_emit1(&e, RAF_OP_SUM,
                               raf_emit(&e, RAF_OP_CAST, 1, &kept, &f32, 1));
  count = shard_collective(S, &e, RAF_OP_ALL_REDUCE, count, "sum");
  if (count)
    raf_value_set_name(count, raf_func_fresh_name(S->grad, "labels.counted"));
  raf_attr sum = raf_attr_str("reduction", "sum");
  if ((S->st = e.status) != RAF_OK ||
      raf_stmt_set_attr(S->m, ce, &sum) != RAF_OK) {
    S->st = RAF_ERROR;
    return;
  }
  raf_emitter_init(&e, S->grad, ce->next, ce->loc);
  raf_value *local = raf_emit2(&e, RAF_OP_DIV, loss, count);
  if ((S->st = e.status) != RAF_OK)
    return;
  raf_value_replace_uses(loss, local);
  raf_use_set(&local->def->operands[0], loss); /* the div reads the sum */
  /* The backward's cross_entropy_grad of the same logits and labels (amp
   * may have the backward read a cast of its own: the logits are the
   * same through casts). */
  for (raf_stmt *g = ce->next; g; g = g->next) {
    if (g->op != RAF_OP_CROSS_ENTROPY_GRAD || g->operands[2].value != labels)
      continue;
    if (uncast(g->operands[1].value) != uncast(ce->operands[0].value)) {
      shard_fail(S, g->loc, "this cross_entropy_grad of the loss's labels "
                 "reads other logits than the loss's cross_entropy, so the "
                 "pass cannot make its mean the global one");
      return;
    }
    raf_emitter_init(&e, S->grad, g, g->loc);
    raf_value *dy = g->operands[0].value, *c = count;
    if (dy->type->dtype != count->type->dtype) {
      raf_attr dt = {.name = "dtype", .kind = RAF_ATTR_DTYPE,
                     .val.u.dt = dy->type->dtype};
      c = raf_emit(&e, RAF_OP_CAST, 1, &count, &dt, 1);
    }
    raf_value *scaled = raf_emit2(&e, RAF_OP_DIV, dy, c);
    if ((S->st = e.status) != RAF_OK ||
        raf_stmt_set_attr(S->m, g, &sum) != RAF_OK) {
      S->st = RAF_ERROR;
      return;
    }
    raf_use_set(&g->operands[0], scaled);
  }
}

/* The loss of every rank's samples: the mean of the ranks' means, or the
 * sum of their sums. */
static void reduce_loss(shard *S) {
  raf_stmt *ret = raf_func_return(S->grad);
  raf_emitter e;
  raf_emitter_init(&e, S->grad, ret, ret->loc);
  raf_value *l = shard_collective(S, &e, RAF_OP_ALL_REDUCE,
                            ret->operands[0].value, S->reduction);
  if ((S->st = e.status) == RAF_OK)
    raf_use_set(&ret->operands[0], l);
}

typedef struct param_use {
  raf_value *p;
  raf_type *full;
  raf_use **uses; /* this phase's uses */
  int n;
  int64_t first;  /* the order of the first of them */
} param_use;

static int by_first(const void *a, const void *b) {
  const param_use *x = a, *y = b;
  return (x->first > y->first) - (x->first < y->first);
}

/* The uses of p in one phase: forward (up to the loss, order <= split) or
 * backward; collected before anything is emitted. */
static bool collect_uses(param_use *u, raf_value *p, int64_t split,
                         int phase) {
  *u = (param_use){p, p->type, NULL, 0, INT64_MAX};
  int n = 0;
  for (raf_use *x = p->uses; x; x = x->next)
    n += (x->user->order <= split) == (phase == 0);
  if (!n)
    return true;
  if (!(u->uses = calloc((size_t)n, sizeof *u->uses)))
    return false;
  for (raf_use *x = p->uses; x; x = x->next)
    if ((x->user->order <= split) == (phase == 0)) {
      u->uses[u->n++] = x;
      if (x->user->order < u->first)
        u->first = x->user->order;
    }
  return true;
}

/* Gathers the phase's params in buckets, in order of first use, each just
 * before the first use of its first param. */
static void gather_phase(shard *S, param_use *pu, int np) {
  qsort(pu, (size_t)np, sizeof *pu, by_first);
  raf_value **parts = calloc((size_t)np + 1, sizeof *parts);
  raf_value **full = calloc((size_t)np + 1, sizeof *full);
  raf_type **types = calloc((size_t)np + 1, sizeof *types);
  if (!parts || !full || !types)
    S->st = RAF_ERROR;
  int live = 0; /* params unused in this phase sort last */
  for (; live < np && pu[live].n && S->st == RAF_OK; live++) {
    parts[live] = pu[live].p;
    types[live] = pu[live].full;
  }
  for (int i = 0, k; i < live && S->st == RAF_OK; i += k) {
    k = bucket_len(S, parts + i, live - i);
    raf_stmt *at = NULL;
    for (int j = 0; j < pu[i].n; j++)
      if (pu[i].uses[j]->user->order == pu[i].first)
        at = pu[i].uses[j]->user;
    raf_emitter e;
    raf_emitter_init(&e, S->grad, at, at->loc);
    gather_bucket(S, &e, parts + i, types + i, k, full + i);
    if ((S->st = e.status) != RAF_OK)
      break;
    for (int j = i; j < i + k; j++)
      for (int q = 0; q < pu[j].n; q++)
        raf_use_set(pu[j].uses[q], full[j]);
  }
  free(parts);
  free(full);
  free(types);
}

/* zero=3: @F_grad's params become parts, gathered per bucket before the
 * forward's first use of the bucket, and again before the backward's. */
static void gather_params(shard *S, int64_t split) {
  raf_func *f = S->grad;
  param_use *pu[2] = {calloc((size_t)f->nargs + 1, sizeof(param_use)),
                      calloc((size_t)f->nargs + 1, sizeof(param_use))};
  int np = 0;
  if (!pu[0] || !pu[1])
    S->st = RAF_ERROR;
  for (int i = 0; i < f->nargs && S->st == RAF_OK; i++) {
    if (!raf_arg_flag(&f->args[i], "param"))
      continue;
    for (int phase = 0; phase < 2; phase++)
      if (!collect_uses(&pu[phase][np], f->args[i].value, split, phase))
        S->st = RAF_ERROR;
    np++;
  }
  for (int i = 0; i < f->nargs && S->st == RAF_OK; i++)
    if (raf_arg_flag(&f->args[i], "param"))
      make_part_arg(S, f, f->args[i].value);
  for (int phase = 0; phase < 2 && S->st == RAF_OK; phase++)
    gather_phase(S, pu[phase], np);
  for (int phase = 0; phase < 2; phase++) {
    for (int i = 0; pu[phase] && i < np; i++)
      free(pu[phase][i].uses);
    free(pu[phase]);
  }
}

/* ---- The training step ---------------------------------------------------- */

/* The statements of the step after the call: the update. */
typedef struct stmt_list {
  raf_stmt **v;
  int n;
} stmt_list;

static stmt_list update_stmts(shard *S) {
  stmt_list l = {0};
  raf_stmt *ret = raf_func_return(S->step);
  for (raf_stmt *s = S->call->next; s != ret; s = s->next)
    l.n++;
  l.v = calloc((size_t)l.n + 1, sizeof *l.v);
  if (!l.v) {
    S->st = RAF_ERROR;
    l.n = 0;
    return l;
  }
  l.n = 0;
  for (raf_stmt *s = S->call->next; s != ret; s = s->next)
    l.v[l.n++] = s;
  return l;
}

/* A state the update may shard: more than one element, and @F_grad does
 * not read it. */
static bool shardable_state(shard *S, raf_value *v) {
  if (v->def || v->func != S->step ||
      !raf_arg_flag(&S->step->args[v->index], "state") || shard_numel(v->type) <= 1)
    return false;
  for (raf_use *u = v->uses; u; u = u->next)
    if (u->user == S->call)
      return false;
  return true;
}

/* Rewrites one update statement over parts: its full operands read their
 * parts (a state becomes a part argument on first sight) and its results
 * are parts. Statements that touch no part are the step's scalars. */
static void update_over_parts(shard *S, raf_stmt *s) {
  bool touches = false;
  for (int i = 0; i < s->noperands; i++) {
    raf_value *v = s->operands[i].value;
    touches |= raf_ptrmap_get(&S->part, v) || shardable_state(S, v);
  }
  if (!touches)
    return;
  raf_value *whole = raf_ptrmap_get(&S->part, s->operands[0].value);
  if ((s->op == RAF_OP_SUM || s->op == RAF_OP_MIN || s->op == RAF_OP_MAX) &&
      whole && s->results[0]->type->rank == 0) {
    shard_reduce_part(S, s, whole);
    return;
  }
  raf_fusion_class fc = raf_op_table[s->op].fusion;
  if (s->op == RAF_OP_CALL ||
      (fc != RAF_FUSE_ELEMWISE && fc != RAF_FUSE_BROADCAST)) {
    shard_fail(S, s->loc, "%s reads a parameter's update, which must be "
         "elementwise in each parameter to shard it (zero >= 1)",
         raf_op_table[s->op].name);
    return;
  }
  for (int i = 0; i < s->noperands; i++) {
    raf_value *v = s->operands[i].value, *p;
    if (!raf_ptrmap_get(&S->part, v) && shardable_state(S, v)) {
      make_part_arg(S, S->step, v);
      raf_ptrmap_put(&S->part, v, v);
    }
    if ((p = raf_ptrmap_get(&S->part, v))) {
      raf_use_set(&s->operands[i], p);
    } else if (shard_numel(v->type) > 1) {
      shard_fail(S, s->loc, "%s mixes a parameter's update with %%%s, which is "
           "not elementwise in it", raf_op_table[s->op].name, v->name);
      return;
    }
  }
  raf_type *t[16];
  if (s->nresults > 16 || raf_infer_stmt(S->m, s, t, s->nresults) != RAF_OK) {
    S->st = RAF_ERROR;
    return;
  }
  for (int r = 0; r < s->nresults; r++) {
    raf_ptrmap_put(&S->whole, s->results[r], s->results[r]->type);
    s->results[r]->type = t[r];
    raf_ptrmap_put(&S->part, s->results[r], s->results[r]);
  }
}

/* zero=1, 2: this rank's part of the full param p, made after the call. */
static raf_value *part_of(shard *S, raf_emitter *e, raf_value *p) {
  raf_value *rows = as_rows(S, e, p);
  raf_value *mine = shard_collective(S, e, RAF_OP_ALL_SLICE, rows, NULL);
  return shard_reshape(e, mine, shard_vec_type(S, p->type->dtype, part_len(S, p->type)));
}

/* zero >= 1: the update runs over parts. */
static void shard_update(shard *S) {
  raf_func *f = S->step;
  stmt_list upd = update_stmts(S);
  raf_emitter e;
  raf_emitter_init(&e, f, S->call->next, S->call->loc);
  /* The gradients' parts: reduce-scattered here (zero=1) or by @F_grad. */
  int ng = raf_func_nparams(S->grad); /* the gradients; the states follow */
  raf_value **g = calloc((size_t)ng + 1, sizeof *g);
  raf_value **out = calloc((size_t)ng + 1, sizeof *out);
  if (!g || !out)
    S->st = RAF_ERROR;
  for (int i = 0; i < ng && S->st == RAF_OK; i++)
    g[i] = S->call->results[1 + i];
  for (int i = 0, k; S->zero == 1 && i < ng && S->st == RAF_OK; i += k) {
    k = bucket_len(S, g + i, ng - i);
    reduce_bucket(S, &e, g + i, k, true, out + i);
  }
  for (int i = 0, j = 0; i < ng && S->st == RAF_OK; i++) {
    raf_ptrmap_put(&S->part, g[i], S->zero == 1 ? out[i] : g[i]);
    while (!raf_arg_flag(&S->grad->args[j], "param")) /* g[i]'s param */
      j++;
    if (S->zero >= 2) /* made a part by @F_grad */
      raf_ptrmap_put(&S->whole, g[i],
                     (void *)shard_whole_type(S, S->grad->args[j].value));
    j++;
  }
  /* The params' parts. */
  for (int i = 0; i < f->nargs && S->st == RAF_OK; i++) {
    raf_value *p = f->args[i].value;
    if (raf_arg_flag(&f->args[i], "param"))
      raf_ptrmap_put(&S->part, p, S->zero == 3 ? p : part_of(S, &e, p));
  }
  if (S->st == RAF_OK)
    S->st = e.status;
  for (int i = 0; i < upd.n && S->st == RAF_OK; i++)
    update_over_parts(S, upd.v[i]);
  free(upd.v);
  free(g);
  free(out);
}

/* The step's return: a param's new part is all-gathered (zero=1, 2) or
 * returned as the part (zero=3); a state's new part is returned. */
static void shard_return(shard *S) {
  raf_func *f = S->step;
  raf_stmt *ret = raf_func_return(f);
  int n = ret->noperands, np = 0;
  raf_value **parts = calloc((size_t)n + 1, sizeof *parts);
  raf_value **full = calloc((size_t)n + 1, sizeof *full);
  raf_type **types = calloc((size_t)n + 1, sizeof *types);
  int *at = calloc((size_t)n + 1, sizeof *at);
  if (!parts || !full || !types || !at) {
    S->st = RAF_ERROR;
    goto done;
  }
  for (int q = 0; q < n && S->st == RAF_OK; q++) {
    raf_value *v = ret->operands[q].value;
    const raf_attr *up = raf_attrs_find(&f->results[q].attrs, "updates");
    bool is_part = raf_ptrmap_get(&S->part, v) == v;
    raf_value *a = up ? up->val.u.value : NULL;
    if (!is_part)
      continue;
    if (!a || raf_attrs_find(&f->args[a->index].attrs, "sharded")) {
      if (!a)
        shard_fail(S, ret->loc, "result %d of @%s is a parameter's part, which "
             "updates no sharded argument", q, f->name);
      continue;
    }
    parts[np] = v;
    types[np] = a->type;
    at[np++] = q;
  }
  /* In the order the update makes them, each bucket gathered just after
   * its last part is made. */
  for (int i = 1; i < np; i++)
    for (int j = i; j > 0 && by_order(&parts[j - 1], &parts[j]) > 0; j--) {
      raf_value *pv = parts[j];
      raf_type *tv = types[j];
      int av = at[j];
      parts[j] = parts[j - 1], types[j] = types[j - 1], at[j] = at[j - 1];
      parts[j - 1] = pv, types[j - 1] = tv, at[j - 1] = av;
    }
  for (int i = 0, k; i < np && S->st == RAF_OK; i += k) {
    k = bucket_len(S, parts + i, np - i);
    raf_emitter e;
    emit_after(&e, f, parts[i + k - 1]);
    gather_bucket(S, &e, parts + i, types + i, k, full + i);
    S->st = e.status;
  }
  if (S->st == RAF_OK)
    for (int i = 0; i < np; i++)
      raf_use_set(&ret->operands[at[i]], full[i]);
done:
  free(parts);
  free(full);
  free(types);
  free(at);
}

/* ---- The pass ------------------------------------------------------------- */

static raf_status shard_step(shard *S) {
  const raf_attr *w = raf_attrs_find(&S->step->attrs, "world");
  if (w)
    return shard_fail(S, S->step->loc, "@%s is sharded already (world = %lld)",
                S->step->name, (long long)w->val.u.i);
  raf_func_number(S->grad);
  raf_func_number(S->step);
  raf_stmt *gret = raf_func_return(S->grad);
  raf_value *loss = gret->operands[0].value;
  int64_t split = loss->def ? loss->def->order : -1;
  raf_stmt *made = NULL;
  if (!(S->reduction = loss_reduction(S, loss, &made)))
    return S->st;
  /* A mean's gradient is made by autodiff from constants, 1 / the
   * global batch's count (grad_mean, grad_mse_loss): each rank's gradient
   * is its share of the global one already, and the ranks' sum is one
   * process's gradient, while the loss, a mean over the local batch, is
   * their mean. cross_entropy_grad counts its own labels instead, the
   * local ones: global_mean makes its result a share too. */
  S->grad_reduction = "sum";
  /* At world 1 every count is the rank's: the step stays bit for bit the
   * unsharded one. */
  if (made->op == RAF_OP_CROSS_ENTROPY && strcmp(S->reduction, "mean") == 0 &&
      S->world > 1) {
    global_mean(S, made);
    S->reduction = "sum";
    if (S->st != RAF_OK)
      return S->st;
    raf_func_number(S->grad);
    split = loss->def ? loss->def->order : -1;
  }
  localize(S, S->grad);
  if (S->st == RAF_OK)
    shard_batch_norms(S);
  if (S->st != RAF_OK)
    return S->st;
  raf_func_number(S->grad);
  split = loss->def ? loss->def->order : -1;
  reduce_loss(S);
  if (S->st == RAF_OK && S->zero == 3)
    gather_params(S, split);
  if (S->st == RAF_OK && S->zero != 1)
    reduce_in_grad(S);
  if (S->st != RAF_OK)
    return S->st;
  retype_results(S->grad);
  set_world(S, S->grad);
  /* The step: its local batch and param parts, then the call's types. */
  for (int i = 0; S->zero == 3 && i < S->step->nargs; i++)
    if (raf_arg_flag(&S->step->args[i], "param"))
      make_part_arg(S, S->step, S->step->args[i].value);
  localize(S, S->step);
  raf_type *t[4096];
  if (S->st != RAF_OK || S->call->nresults > 4096 ||
      raf_infer_stmt(S->m, S->call, t, S->call->nresults) != RAF_OK)
    return S->st = RAF_ERROR;
  for (int r = 0; r < S->call->nresults; r++)
    S->call->results[r]->type = t[r];
  if (S->zero >= 1)
    shard_update(S);
  if (S->st == RAF_OK && S->zero >= 1)
    shard_return(S);
  if (S->st == RAF_OK) {
    retype_results(S->step);
    set_world(S, S->step);
  }
  return S->st;
}

raf_status raf_pass_shard(raf_module *m, const raf_pass_args *args) {
  shard S = {.ctx = args->ctx, .m = m,
             .world = raf_pass_opt_int(args, "world"),
             .zero = (int)raf_pass_opt_int(args, "zero"),
             .sync_batch_norm =
                 strcmp(raf_pass_opt_str(args, "batch_norm"), "sync") == 0};
  raf_loc noloc = {0};
  const char *bucket = raf_pass_opt_str(args, "bucket");
  if (S.world < 1 || S.world > 65536) {
    raf_diag_report(args->ctx, noloc, RAF_SEV_ERROR,
                    "shard: world must be from 1 to 65536, got %lld",
                    (long long)S.world);
    return RAF_ERROR;
  }
  if (S.zero < 0 || S.zero > 3) {
    raf_diag_report(args->ctx, noloc, RAF_SEV_ERROR,
                    "shard: zero must be 0, 1, 2 or 3, got %d", S.zero);
    return RAF_ERROR;
  }
  if (!raf_pass_parse_size(bucket, &S.bucket) || S.bucket < 1) {
    raf_diag_report(args->ctx, noloc, RAF_SEV_ERROR,
                    "shard: bucket '%s' is not a size (bytes, or a number "
                    "with K, M or G)", bucket);
    return RAF_ERROR;
  }
  int done = 0;
  for (raf_func *f = m->first; f && S.st == RAF_OK; f = f->next) {
    raf_stmt *call = NULL;
    if (!raf_training_step_grad(args->ctx, f, &call))
      continue;
    S.step = f;
    S.call = call;
    S.grad = call->callee;
    shard_step(&S);
    raf_ptrmap_free(&S.batched);
    raf_ptrmap_free(&S.part);
    raf_ptrmap_free(&S.whole);
    free(S.masks);
    S.masks = NULL;
    S.nmasks = 0;
    done++;
  }
  if (S.st == RAF_OK && !done) {
    raf_diag_report(args->ctx, noloc, RAF_SEV_ERROR,
                    "shard: no training step (@F_train_step calling "
                    "@F_grad) in the module; run autodiff and optimizer "
                    "first");
    return RAF_ERROR;
  }
  return S.st;
}
