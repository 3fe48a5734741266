/* shard_across.c: the statements that look across the rows of the batch
 * or across the parts of a param, for the shard pass (passes/shard.c,
 * docs/Distributed.md).
 *
 * Retyping @F_grad for a rank's rows keeps every row's own arithmetic, and
 * running the update over parts keeps every element's, but some
 * statements look further, and would silently train differently from one
 * process:
 *
 *   - a mean's gradient, which autodiff spreads over the global batch's
 *     shape as a broadcast constant (shard_localize_splats);
 *   - dropout, whose mask is a function of the element's index, which the
 *     local batch restarts at 0 on every rank (shard_rank_masks);
 *   - batch_norm in training, whose statistics are over the whole batch
 *     (shard_batch_norms): batch_norm=sync all-reduces them, so that every
 *     rank normalises with one process's statistics (SyncBatchNorm);
 *     batch_norm=local normalises each rank's rows with their own, and
 *     averages the running statistics over the ranks at the end of the
 *     step (PyTorch DDP's default behaviour, up to DDP broadcasting rank
 *     0's instead);
 *   - at zero >= 1, a reduction of a whole param-shaped value in the
 *     update, which sees only the rank's part: clip_norm's squared norm,
 *     f16 loss scaling's "all finite" flag (shard_reduce_part).
 */
#include "passes/shard_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A dropout of batched x draws its mask from the element's index in x,
 * which the local batch would restart at 0 on every rank: its key becomes
 * (seed, first), where first, the index of the rank's first element in
 * one process's x, is this rank's row of a table of every rank's. Each
 * rank then draws the mask one process draws for its rows. The gradient's
 * dropout reads the same key for a tensor of the same size: it reuses the
 * keyed value (S->masks) the forward's made. */
void shard_rank_masks(shard *S, raf_stmt *s) {
  raf_value *key = s->operands[1].value;
  int64_t local = shard_numel(s->operands[0].value->type);
  for (int i = 0; i < S->nmasks; i++)
    if (S->masks[i].key == key && S->masks[i].local == local) {
      raf_use_set(&s->operands[1], S->masks[i].keyed);
      return;
    }
  shard_mask *grown =
      realloc(S->masks, sizeof *grown * (size_t)(S->nmasks + 1));
  int64_t *table = calloc((size_t)S->world * 2, sizeof *table);
  if (!grown || !table) {
    free(table);
    S->masks = grown ? grown : S->masks;
    S->st = RAF_ERROR;
    return;
  }
  S->masks = grown;
  raf_emitter e;
  raf_emitter_init(&e, s->func, s, s->loc);
  raf_value *keyed;
  if (key->type->rank == 0) { /* concat(seed, first): the table's column */
    for (int64_t r = 0; r < S->world; r++)
      table[r] = r * local;
    raf_value *mine = shard_collective(
        S, &e, RAF_OP_ALL_SLICE, raf_emit_ints(&e, table, S->world), NULL);
    raf_value *pair[2] = {
        shard_reshape(&e, key, shard_vec_type(S, RAF_I64, 1)), mine};
    raf_attr axis = raf_attr_int("axis", 0);
    keyed = raf_emit(&e, RAF_OP_CONCAT, 2, pair, &axis, 1);
  } else { /* (seed, first0) + the table's row (0, first) */
    for (int64_t r = 0; r < S->world; r++)
      table[2 * r + 1] = r * local;
    raf_value *rows = shard_reshape(
        &e, raf_emit_ints(&e, table, 2 * S->world),
        shard_mat_type(S, RAF_I64, S->world, 2));
    raf_value *mine = shard_reshape(
        &e, shard_collective(S, &e, RAF_OP_ALL_SLICE, rows, NULL),
        shard_vec_type(S, RAF_I64, 2));
    keyed = raf_emit2(&e, RAF_OP_ADD, key, mine);
  }
  free(table);
  if ((S->st = e.status) != RAF_OK)
    return;
  S->masks[S->nmasks++] = (shard_mask){s->operands[1].value, local, keyed};
  raf_use_set(&s->operands[1], keyed);
}

/* A mean's gradient, made by autodiff, spreads a scalar over the global
 * batch's shape with broadcast_to of constants; where s reads one beside
 * a batched value of the local batch's rows, it takes the local shape
 * (every row of a broadcast scalar is the same, so this is its local
 * part). */
void shard_localize_splats(shard *S, raf_stmt *s) {
  int64_t rows = -1;
  for (int i = 0; i < s->noperands; i++) {
    raf_value *v = s->operands[i].value;
    if (raf_ptrmap_get(&S->batched, v) && v->type->rank > 0)
      rows = v->type->dims[0];
  }
  for (int i = 0; i < s->noperands && rows > 0; i++) {
    raf_value *v = s->operands[i].value;
    raf_stmt *d = v->def;
    if (raf_ptrmap_get(&S->batched, v) || !d || d->op != RAF_OP_BROADCAST_TO ||
        d->operands[0].value->type->rank != 0 || v->type->rank == 0 ||
        v->type->dims[0] != rows * S->world)
      continue;
    shard_rescale_ints(S, d, "shape", 0, -1);
    int64_t dims[RAF_MAX_RANK];
    memcpy(dims, v->type->dims, sizeof *dims * (size_t)v->type->rank);
    dims[0] = rows;
    v->type = raf_type_get(S->m, v->type->dtype, v->type->rank, dims);
    raf_ptrmap_put(&S->batched, v, v);
  }
}

/* ---- batch_norm ----------------------------------------------------------- */

/* The global batch statistics of one batch_norm's x [n, C, ...], kept for
 * its gradient: each [1, C, 1, ...], to broadcast against x. */
typedef struct batch_stats {
  raf_value *x, *centred, *rstd, *mean, *var;
  double count; /* values per channel in one process's batch */
} batch_stats;

typedef struct norm_rewrite {
  shard *S;
  raf_emitter e;
  batch_stats *stats;
  int nstats, cap;
} norm_rewrite;

/* x's channel-shaped type [1, C, 1, ...] and the axes other than 1. */
static raf_type *channel_type(shard *S, const raf_type *x, int64_t *axes,
                              int *naxes) {
  int64_t d[RAF_MAX_RANK];
  *naxes = 0;
  for (int i = 0; i < x->rank; i++) {
    d[i] = i == 1 ? x->dims[1] : 1;
    if (i != 1)
      axes[(*naxes)++] = i;
  }
  return raf_type_get(S->m, x->dtype, x->rank, d);
}

/* The sum over every rank's rows of v [n, C, ...], per channel. */
static raf_value *global_channel_sum(norm_rewrite *R, raf_value *v,
                                     raf_value **local) {
  int64_t axes[RAF_MAX_RANK];
  int naxes;
  channel_type(R->S, v->type, axes, &naxes);
  raf_attr a[2] = {raf_attr_ints(R->e.m, "axes", axes, naxes),
                   raf_attr_bool("keepdims", true)};
  raf_value *s = raf_emit(&R->e, RAF_OP_SUM, 1, &v, a, 2);
  if (local)
    *local = s;
  return shard_collective(R->S, &R->e, RAF_OP_ALL_REDUCE, s, "sum");
}

static raf_value *scalar(norm_rewrite *R, raf_dtype dt, double v) {
  return raf_emit_scalar(&R->e, dt, v);
}

/* v [C] as [1, C, 1, ...] for x, or back. */
static raf_value *as_channels(norm_rewrite *R, raf_value *v, const raf_type *x) {
  int64_t axes[RAF_MAX_RANK];
  int naxes;
  return shard_reshape(&R->e, v, channel_type(R->S, x, axes, &naxes));
}

static raf_value *as_vector(norm_rewrite *R, raf_value *v) {
  return shard_reshape(&R->e, v,
                       shard_vec_type(R->S, v->type->dtype, v->type->dims[1]));
}

/* The statistics of x over every rank's rows, as batch_norm computes them
 * over one process's batch: the mean, then the mean of squared deviations
 * (two passes, two all-reduces of C values each). */
static batch_stats *global_stats(norm_rewrite *R, raf_value *x, double eps) {
  for (int i = 0; i < R->nstats; i++)
    if (R->stats[i].x == x)
      return &R->stats[i];
  if (R->nstats == R->cap) {
    int cap = R->cap ? 2 * R->cap : 4;
    batch_stats *s = realloc(R->stats, sizeof *s * (size_t)cap);
    if (!s)
      return NULL;
    R->stats = s;
    R->cap = cap;
  }
  batch_stats *b = &R->stats[R->nstats++];
  raf_dtype dt = x->type->dtype;
  b->x = x;
  b->count = (double)(shard_numel(x->type) / x->type->dims[1]) *
             (double)R->S->world;
  b->mean = raf_emit2(&R->e, RAF_OP_DIV, global_channel_sum(R, x, NULL),
                      scalar(R, dt, b->count));
  b->centred = raf_emit2(&R->e, RAF_OP_SUB, x, b->mean);
  raf_value *sq = raf_emit2(&R->e, RAF_OP_MUL, b->centred, b->centred);
  b->var = raf_emit2(&R->e, RAF_OP_DIV, global_channel_sum(R, sq, NULL),
                     scalar(R, dt, b->count));
  b->rstd = raf_emit1(&R->e, RAF_OP_RSQRT,
                      raf_emit2(&R->e, RAF_OP_ADD, b->var, scalar(R, dt, eps)));
  return b;
}

/* y, new_mean, new_var = batch_norm(x, gamma, beta, mean, var) with the
 * global statistics:
 *   y = (x - mean_b) * rstd_b * gamma + beta
 *   new_mean = (1 - momentum) * mean + momentum * mean_b
 *   new_var = (1 - momentum) * var + momentum * var_b * n / (n - 1) */
static void sync_forward(norm_rewrite *R, raf_stmt *s) {
  raf_value *x = s->operands[0].value;
  raf_dtype dt = x->type->dtype;
  double m = raf_stmt_attr_float(s, "momentum");
  batch_stats *b = global_stats(R, x, raf_stmt_attr_float(s, "eps"));
  if (!b || R->e.status != RAF_OK)
    return;
  raf_value *gamma = as_channels(R, s->operands[1].value, x->type);
  raf_value *beta = as_channels(R, s->operands[2].value, x->type);
  raf_value *y = raf_emit2(&R->e, RAF_OP_MUL, b->centred, b->rstd);
  y = raf_emit2(&R->e, RAF_OP_ADD, raf_emit2(&R->e, RAF_OP_MUL, y, gamma),
                beta);
  raf_value *run[2], *batch[2] = {b->mean, b->var};
  double unbias[2] = {1, b->count / (b->count - 1)};
  for (int i = 0; i < 2; i++) {
    raf_value *old = s->operands[3 + i].value;
    raf_value *kept = raf_emit2(&R->e, RAF_OP_MUL, old, scalar(R, dt, 1 - m));
    raf_value *fresh = raf_emit2(&R->e, RAF_OP_MUL, as_vector(R, batch[i]),
                                 scalar(R, dt, m * unbias[i]));
    run[i] = raf_emit2(&R->e, RAF_OP_ADD, kept, fresh);
  }
  if (R->e.status != RAF_OK)
    return;
  raf_value_replace_uses(s->results[0], y);
  raf_value_replace_uses(s->results[1], run[0]);
  raf_value_replace_uses(s->results[2], run[1]);
  raf_stmt_erase(s);
}

/* dx, dgamma, dbeta = batch_norm_grad(dy, x, gamma, mean, var) with the
 * global statistics: with xhat = (x - mean_b) * rstd_b and the sums over
 * every rank's rows Sdy = sum(dy), Sdyx = sum(dy * xhat) per channel,
 *   dx = gamma * rstd_b * (dy - Sdy / n - xhat * Sdyx / n)
 * (each rank's dy is its share of one process's: docs/Distributed.md);
 * dgamma and dbeta are this rank's sums, which the pass reduces over the
 * ranks as it does every param's gradient. */
static void sync_backward(norm_rewrite *R, raf_stmt *s) {
  raf_value *dy = s->operands[0].value, *x = s->operands[1].value;
  raf_dtype dt = x->type->dtype;
  batch_stats *b = global_stats(R, x, raf_stmt_attr_float(s, "eps"));
  if (!b || R->e.status != RAF_OK)
    return;
  raf_value *xhat = raf_emit2(&R->e, RAF_OP_MUL, b->centred, b->rstd);
  raf_value *dbeta, *dgamma;
  raf_value *sdy = global_channel_sum(R, dy, &dbeta);
  raf_value *sdyx = global_channel_sum(
      R, raf_emit2(&R->e, RAF_OP_MUL, dy, xhat), &dgamma);
  raf_value *n = scalar(R, dt, b->count);
  raf_value *dx = raf_emit2(&R->e, RAF_OP_SUB, dy,
                            raf_emit2(&R->e, RAF_OP_DIV, sdy, n));
  dx = raf_emit2(&R->e, RAF_OP_SUB, dx,
                 raf_emit2(&R->e, RAF_OP_MUL, xhat,
                           raf_emit2(&R->e, RAF_OP_DIV, sdyx, n)));
  raf_value *gamma = as_channels(R, s->operands[2].value, x->type);
  dx = raf_emit2(&R->e, RAF_OP_MUL, dx,
                 raf_emit2(&R->e, RAF_OP_MUL, gamma, b->rstd));
  dgamma = as_vector(R, dgamma);
  dbeta = as_vector(R, dbeta);
  if (R->e.status != RAF_OK)
    return;
  raf_value *now[3] = {dx, dgamma, dbeta};
  for (int i = 0; i < 3; i++)
    raf_value_replace_uses(s->results[i], now[i]);
  raf_stmt_erase(s);
}

/* batch_norm=local: the running statistics @F_grad returns, each rank's
 * own, become their mean over the ranks at its return. */
static void average_running_stats(shard *S) {
  raf_stmt *ret = raf_func_return(S->grad);
  raf_emitter e;
  raf_emitter_init(&e, S->grad, ret, ret->loc);
  for (int q = 1; q < ret->noperands; q++) {
    raf_value *v = ret->operands[q].value;
    if (!v->def || v->def->op != RAF_OP_BATCH_NORM || v == v->def->results[0])
      continue;
    raf_value *mean = shard_collective(S, &e, RAF_OP_ALL_REDUCE, v, "mean");
    if ((S->st = e.status) != RAF_OK)
      return;
    raf_use_set(&ret->operands[q], mean);
  }
}

void shard_batch_norms(shard *S) {
  bool any = false;
  for (raf_stmt *s = S->grad->first; s; s = s->next)
    any |= (s->op == RAF_OP_BATCH_NORM || s->op == RAF_OP_BATCH_NORM_GRAD) &&
           raf_stmt_attr_bool(s, "training") &&
           raf_ptrmap_get(&S->batched, s->operands[s->op ==
                                                   RAF_OP_BATCH_NORM_GRAD]
                                           .value);
  if (!any || S->world == 1)
    return;
  if (!S->sync_batch_norm) {
    if (S->zero == 3) {
      shard_fail(S, S->grad->loc, "@%s has batch_norm, and batch_norm=local "
                 "keeps each rank's own batch statistics, which zero=3 "
                 "(every param a rank's part, gathered only while its layer "
                 "runs) does not pair with; use batch_norm=sync or zero <= 2",
                 S->grad->name);
      return;
    }
    average_running_stats(S);
    return;
  }
  norm_rewrite R = {.S = S};
  raf_stmt *next;
  for (raf_stmt *s = S->grad->first; s && S->st == RAF_OK; s = next) {
    next = s->next;
    bool fwd = s->op == RAF_OP_BATCH_NORM,
         bwd = s->op == RAF_OP_BATCH_NORM_GRAD;
    if ((!fwd && !bwd) || !raf_stmt_attr_bool(s, "training") ||
        !raf_ptrmap_get(&S->batched, s->operands[bwd].value))
      continue;
    raf_emitter_init(&R.e, S->grad, s, s->loc);
    if (fwd)
      sync_forward(&R, s);
    else
      sync_backward(&R, s);
    S->st = R.e.status;
  }
  free(R.stats);
}

/* ---- Reductions over parts ------------------------------------------------ */

/* zero >= 1: s, a sum, min or max of a whole value whose part is part,
 * reduces the part instead, with the padding (past the value's end, on the
 * last ranks) replaced by the op's identity, and the scalar is all-reduced
 * with the same op: every rank holds one process's result, so every rank
 * clips by the same norm and makes the same skip decision. */
void shard_reduce_part(shard *S, raf_stmt *s, raf_value *part) {
  raf_value *full = s->operands[0].value;
  int64_t n = shard_numel(shard_whole_type(S, full)), c = part->type->dims[0];
  const char *op = s->op == RAF_OP_SUM ? "sum"
                   : s->op == RAF_OP_MIN ? "min" : "max";
  raf_emitter e;
  raf_emitter_init(&e, s->func, s, s->loc);
  if (c * S->world != n) {
    int64_t *valid = calloc((size_t)(c * S->world), sizeof *valid);
    if (!valid) {
      S->st = RAF_ERROR;
      return;
    }
    for (int64_t i = 0; i < n; i++)
      valid[i] = 1;
    raf_value *mine = shard_collective(
        S, &e, RAF_OP_ALL_SLICE,
        shard_reshape(&e, raf_emit_ints(&e, valid, c * S->world),
                      shard_mat_type(S, RAF_I64, S->world, c)),
        NULL);
    free(valid);
    mine = shard_reshape(&e, mine, shard_vec_type(S, RAF_I64, c));
    raf_value *keep = raf_emit2(&e, RAF_OP_NE, mine,
                                raf_emit_scalar(&e, RAF_I64, 0));
    double identity = s->op == RAF_OP_SUM ? 0
                      : s->op == RAF_OP_MIN ? INFINITY : -INFINITY;
    raf_value *ops[3] = {keep, part, raf_emit_splat(&e, part->type, identity)};
    part = raf_emit(&e, RAF_OP_WHERE, 3, ops, NULL, 0);
  }
  if ((S->st = e.status) != RAF_OK)
    return;
  raf_use_set(&s->operands[0], part);
  raf_value *local = s->results[0];
  raf_emitter_init(&e, s->func, s->next, s->loc);
  raf_value *global = shard_collective(S, &e, RAF_OP_ALL_REDUCE, local, op);
  if ((S->st = e.status) != RAF_OK)
    return;
  raf_value_replace_uses(local, global);
  raf_use_set(&global->def->operands[0], local);
}
