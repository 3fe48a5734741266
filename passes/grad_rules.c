/* grad_rules.c: the gradient rule of every differentiable op, and the
 * registry of rules expanded from the grad column of lang/ops.def.
 *
 * Each rule grad_NAME writes the vector-Jacobian product of NAME with the
 * ops of the language (see autodiff.h for the contract), following
 * PyTorch's derivatives.yaml, so that the gradient function is ordinary
 * .raf that every pass understands and raf-run executes. Where the
 * gradient is a formula that would be wasteful in elementwise ops
 * (softmax, layer_norm, cross_entropy, gelu) or needs a scatter (take,
 * slice, pooling, convolution) it is one backward operator of ops.def.
 *
 * Conventions the rules share:
 *  - Broadcasting is undone by sum_to: the gradient of a broadcast operand
 *    is summed over the axes it was broadcast along, then reshaped to the
 *    operand's shape.
 *  - Rules read the forward result instead of recomputing it where the
 *    formula allows (exp, sqrt, rsqrt, tanh, sigmoid, relu, div, pow,
 *    softmax, log_softmax: RAF's GradInputSelect), and read no forward
 *    value they do not need (add and sub read none; relu reads y, not x).
 *  - Ties: maximum/minimum split the gradient evenly between equal
 *    operands; max/min reductions split it evenly among the tied maxima
 *    (PyTorch's amax/amin); max_pool2d sends it to the one element the
 *    forward kernel chose.
 *  - A gradient computed only for operands that need it (ad->need), so an
 *    input's gradient is never made.
 * Rules emit with NULL-propagating helpers and the emitter's sticky
 * status, so a rule computes its whole formula and the driver checks once.
 */
#include "passes/autodiff.h"

#include <string.h>

#define RULE_ARGS raf_ad *ad, raf_stmt *s, raf_value *const *dy, raf_value **dx

/* Declarations, then the registry, both from ops.def. */
#define GRAD(name) static raf_status grad_##name(RULE_ARGS);
#define NOGRAD
#define BACKWARD
#define OP(e, name, nop, nres, attrs, infer, dtypes, diff, grad, ...) grad
#include "lang/ops.def"
#undef OP
#undef GRAD
#undef NOGRAD
#undef BACKWARD

#define GRAD(name) grad_##name
#define NOGRAD NULL
#define BACKWARD NULL
#define OP(e, name, nop, nres, attrs, infer, dtypes, diff, grad, ...)         \
  [RAF_OP_##e] = grad,
static const raf_grad_rule rules[RAF_OP_COUNT] = {
#include "lang/ops.def"
};
#undef OP
#undef GRAD
#undef NOGRAD
#undef BACKWARD

#define GRAD(name) false
#define NOGRAD false
#define BACKWARD true
#define OP(e, name, nop, nres, attrs, infer, dtypes, diff, grad, ...)         \
  [RAF_OP_##e] = grad,
static const bool backward[RAF_OP_COUNT] = {
#include "lang/ops.def"
};
#undef OP
#undef GRAD
#undef NOGRAD
#undef BACKWARD

raf_grad_rule raf_grad_rule_for(raf_opcode op) { return rules[op]; }
bool raf_op_is_backward(raf_opcode op) { return backward[op]; }

/* ---- Helpers ------------------------------------------------------------- */

#define EM (&ad->e)
#define X(i) (s->operands[i].value)
#define Y(i) (s->results[i])
#define NEED(i) (ad->need[i])

static raf_value *op1(raf_ad *ad, raf_opcode op, raf_value *a) {
  return raf_emit1(EM, op, a);
}

static raf_value *op2(raf_ad *ad, raf_opcode op, raf_value *a, raf_value *b) {
  return raf_emit2(EM, op, a, b);
}

static raf_value *op3(raf_ad *ad, raf_opcode op, raf_value *a, raf_value *b,
                      raf_value *c) {
  raf_value *ops[3] = {a, b, c};
  return raf_emit(EM, op, 3, ops, NULL, 0);
}

/* `constant v : DT[]` in the element type of `like`. */
static raf_value *num(raf_ad *ad, const raf_value *like, double v) {
  return raf_emit_scalar(EM, like->type->dtype, v);
}

static raf_value *mul(raf_ad *ad, raf_value *a, raf_value *b) {
  return op2(ad, RAF_OP_MUL, a, b);
}

static raf_value *mulc(raf_ad *ad, raf_value *a, double c) {
  return a ? mul(ad, a, num(ad, a, c)) : NULL;
}

/* A written attribute of s, copied (its data is shared: attribute data is
 * never written once built); false when s does not write it. */
static bool pass_attr(const raf_stmt *s, const char *name, raf_attr *out,
                      int *n) {
  const raf_attr *a = raf_attrs_find(&s->attrs, name);
  if (!a)
    return false;
  out[(*n)++] = *a;
  return true;
}

static raf_attr dims_attr(raf_ad *ad, const char *name, const raf_type *t) {
  return raf_attr_ints(ad->m, name, t->dims, t->rank);
}

static raf_value *reshape_to(raf_ad *ad, raf_value *v, const raf_type *t) {
  if (!v || v->type == t)
    return v;
  raf_attr a = dims_attr(ad, "shape", t);
  return raf_emit(EM, RAF_OP_RESHAPE, 1, &v, &a, 1);
}

/* v summed down to type t, undoing NumPy broadcasting: the leading axes t
 * lacks and the axes where t has 1 are summed, then the result is
 * reshaped to t's shape. */
static raf_value *sum_to(raf_ad *ad, raf_value *v, const raf_type *t) {
  if (!v || v->type == t)
    return v;
  int r = v->type->rank, lead = r - t->rank, n = 0;
  int64_t axes[RAF_MAX_RANK];
  for (int i = 0; i < r; i++)
    if (i < lead || (t->dims[i - lead] == 1 && v->type->dims[i] != 1))
      axes[n++] = i;
  if (n) {
    raf_attr a = raf_attr_ints(ad->m, "axes", axes, n);
    v = raf_emit(EM, RAF_OP_SUM, 1, &v, &a, 1);
  }
  return reshape_to(ad, v, t);
}

/* The reduced axes of a reduction statement over x, as a mask. */
static void reduced_axes(const raf_stmt *s, const raf_type *x, bool *drop) {
  raf_attr_value axes;
  bool all = !raf_stmt_attr(s, "axes", &axes);
  for (int i = 0; i < x->rank; i++)
    drop[i] = all;
  for (int i = 0; !all && i < axes.u.ints.n; i++) {
    int64_t a = axes.u.ints.v[i];
    drop[a < 0 ? a + x->rank : a] = true;
  }
}

/* v (a reduction's result shape) reshaped to x's rank with 1 in the
 * reduced axes, as keepdims would have it. */
static raf_value *keep_dims(raf_ad *ad, raf_value *v, const raf_type *x,
                            const bool *drop) {
  int64_t dims[RAF_MAX_RANK];
  int lead = 0;
  while (lead < x->rank && drop[lead])
    lead++;
  bool inner = false; /* a reduced axis after a kept one */
  for (int i = lead; i < x->rank; i++)
    inner |= drop[i];
  if (!inner) /* only leading axes went: broadcasting puts them back */
    return v;
  for (int i = 0; i < x->rank; i++)
    dims[i] = drop[i] ? 1 : x->dims[i];
  raf_type *t = raf_type_get(ad->m, x->dtype, x->rank, dims);
  return t ? reshape_to(ad, v, t) : NULL;
}

static raf_value *broadcast_to(raf_ad *ad, raf_value *v, const raf_type *t) {
  if (!v || v->type == t)
    return v;
  raf_attr a = dims_attr(ad, "shape", t);
  return raf_emit(EM, RAF_OP_BROADCAST_TO, 1, &v, &a, 1);
}

/* ---- Unary --------------------------------------------------------------- */

static raf_status grad_neg(RULE_ARGS) {
  (void)s;
  dx[0] = op1(ad, RAF_OP_NEG, dy[0]);
  return RAF_OK;
}

/* dy * sign(x), sign(0) = 0. */
static raf_status grad_abs(RULE_ARGS) {
  raf_value *zero = num(ad, X(0), 0);
  raf_value *pos = op3(ad, RAF_OP_WHERE, op2(ad, RAF_OP_GT, X(0), zero),
                       dy[0], zero);
  dx[0] = op3(ad, RAF_OP_WHERE, op2(ad, RAF_OP_LT, X(0), zero),
              op1(ad, RAF_OP_NEG, dy[0]), pos);
  return RAF_OK;
}

static raf_status grad_exp(RULE_ARGS) {
  dx[0] = mul(ad, dy[0], Y(0));
  return RAF_OK;
}

static raf_status grad_log(RULE_ARGS) {
  dx[0] = op2(ad, RAF_OP_DIV, dy[0], X(0));
  return RAF_OK;
}

/* dy / (2 y) */
static raf_status grad_sqrt(RULE_ARGS) {
  dx[0] = op2(ad, RAF_OP_DIV, dy[0], mulc(ad, Y(0), 2));
  return RAF_OK;
}

/* -0.5 dy y^3 */
static raf_status grad_rsqrt(RULE_ARGS) {
  raf_value *y3 = mul(ad, mul(ad, Y(0), Y(0)), Y(0));
  dx[0] = mul(ad, dy[0], mulc(ad, y3, -0.5));
  return RAF_OK;
}

/* dy (1 - y^2) */
static raf_status grad_tanh(RULE_ARGS) {
  raf_value *one = num(ad, Y(0), 1);
  dx[0] = mul(ad, dy[0], op2(ad, RAF_OP_SUB, one, mul(ad, Y(0), Y(0))));
  return RAF_OK;
}

/* dy y (1 - y) */
static raf_status grad_sigmoid(RULE_ARGS) {
  raf_value *one = num(ad, Y(0), 1);
  dx[0] = mul(ad, dy[0], mul(ad, Y(0), op2(ad, RAF_OP_SUB, one, Y(0))));
  return RAF_OK;
}

/* PyTorch's threshold_backward on the output: 0 where y <= 0, so a NaN
 * passes its gradient through. */
static raf_status grad_relu(RULE_ARGS) {
  raf_value *zero = num(ad, Y(0), 0);
  dx[0] = op3(ad, RAF_OP_WHERE, op2(ad, RAF_OP_LE, Y(0), zero), zero, dy[0]);
  return RAF_OK;
}

/* dy 2/sqrt(pi) exp(-x^2) */
static raf_status grad_erf(RULE_ARGS) {
  raf_value *e = op1(ad, RAF_OP_EXP, op1(ad, RAF_OP_NEG, mul(ad, X(0), X(0))));
  dx[0] = mul(ad, dy[0], mulc(ad, e, 1.1283791670955126));
  return RAF_OK;
}

static raf_status grad_cos(RULE_ARGS) {
  dx[0] = op1(ad, RAF_OP_NEG, mul(ad, dy[0], op1(ad, RAF_OP_SIN, X(0))));
  return RAF_OK;
}

static raf_status grad_sin(RULE_ARGS) {
  dx[0] = mul(ad, dy[0], op1(ad, RAF_OP_COS, X(0)));
  return RAF_OK;
}

static raf_status grad_gelu(RULE_ARGS) {
  raf_attr a[1];
  int n = 0;
  raf_value *ops[2] = {dy[0], X(0)};
  pass_attr(s, "approximate", a, &n);
  dx[0] = raf_emit(EM, RAF_OP_GELU_GRAD, 2, ops, a, n);
  return RAF_OK;
}

/* silu_grad(dy, x): dy s (1 + x (1 - s)), s = sigmoid(x) (lang/scalar.def). */
static raf_status grad_silu(RULE_ARGS) {
  raf_value *ops[2] = {dy[0], X(0)};
  dx[0] = raf_emit(EM, RAF_OP_SILU_GRAD, 2, ops, NULL, 0);
  return RAF_OK;
}

/* ---- Binary -------------------------------------------------------------- */

static raf_status grad_add(RULE_ARGS) {
  for (int i = 0; i < 2; i++)
    if (NEED(i))
      dx[i] = sum_to(ad, dy[0], X(i)->type);
  return RAF_OK;
}

static raf_status grad_sub(RULE_ARGS) {
  if (NEED(0))
    dx[0] = sum_to(ad, dy[0], X(0)->type);
  if (NEED(1))
    dx[1] = op1(ad, RAF_OP_NEG, sum_to(ad, dy[0], X(1)->type));
  return RAF_OK;
}

static raf_status grad_mul(RULE_ARGS) {
  if (NEED(0))
    dx[0] = sum_to(ad, mul(ad, dy[0], X(1)), X(0)->type);
  if (NEED(1))
    dx[1] = sum_to(ad, mul(ad, X(0), dy[0]), X(1)->type);
  return RAF_OK;
}

/* t = dy / b; da = t, db = -t * y (y = a / b: no read of a). */
static raf_status grad_div(RULE_ARGS) {
  raf_value *t = op2(ad, RAF_OP_DIV, dy[0], X(1));
  if (NEED(0))
    dx[0] = sum_to(ad, t, X(0)->type);
  if (NEED(1))
    dx[1] = sum_to(ad, op1(ad, RAF_OP_NEG, mul(ad, t, Y(0))), X(1)->type);
  return RAF_OK;
}

/* PyTorch's pow_backward: da = dy b a^(b-1), 0 where b == 0;
 * db = dy y log(a), 0 where a == 0 and b >= 0. */
static raf_status grad_pow(RULE_ARGS) {
  raf_value *a = X(0), *b = X(1), *zero = num(ad, a, 0);
  if (NEED(0)) {
    raf_value *p = op2(ad, RAF_OP_POW, a, op2(ad, RAF_OP_SUB, b, num(ad, b, 1)));
    raf_value *g = mul(ad, dy[0], mul(ad, b, p));
    g = op3(ad, RAF_OP_WHERE, op2(ad, RAF_OP_EQ, b, zero), zero, g);
    dx[0] = sum_to(ad, g, a->type);
  }
  if (NEED(1)) {
    raf_value *g = mul(ad, dy[0], mul(ad, Y(0), op1(ad, RAF_OP_LOG, a)));
    raf_value *keep = op3(ad, RAF_OP_WHERE, op2(ad, RAF_OP_GE, b, zero), zero,
                          g);
    g = op3(ad, RAF_OP_WHERE, op2(ad, RAF_OP_EQ, a, zero), keep, g);
    dx[1] = sum_to(ad, g, b->type);
  }
  return RAF_OK;
}

/* Equal operands share the gradient evenly (PyTorch's maximum/minimum);
 * `loses` is the comparison under which operand 0 gets nothing. */
static raf_status minmax(RULE_ARGS, raf_opcode loses, raf_opcode wins) {
  raf_value *a = X(0), *b = X(1), *zero = num(ad, dy[0], 0);
  raf_value *half = op3(ad, RAF_OP_WHERE, op2(ad, RAF_OP_EQ, a, b),
                        mulc(ad, dy[0], 0.5), dy[0]);
  if (NEED(0))
    dx[0] = sum_to(ad, op3(ad, RAF_OP_WHERE, op2(ad, loses, a, b), zero, half),
                   a->type);
  if (NEED(1))
    dx[1] = sum_to(ad, op3(ad, RAF_OP_WHERE, op2(ad, wins, a, b), zero, half),
                   b->type);
  return RAF_OK;
}

static raf_status grad_maximum(RULE_ARGS) {
  return minmax(ad, s, dy, dx, RAF_OP_LT, RAF_OP_GT);
}

static raf_status grad_minimum(RULE_ARGS) {
  return minmax(ad, s, dy, dx, RAF_OP_GT, RAF_OP_LT);
}

/* ---- Selection and conversion -------------------------------------------- */

static raf_status grad_where(RULE_ARGS) {
  raf_value *zero = num(ad, dy[0], 0);
  if (NEED(1))
    dx[1] = sum_to(ad, op3(ad, RAF_OP_WHERE, X(0), dy[0], zero), X(1)->type);
  if (NEED(2))
    dx[2] = sum_to(ad, op3(ad, RAF_OP_WHERE, X(0), zero, dy[0]), X(2)->type);
  return RAF_OK;
}

static raf_status grad_cast(RULE_ARGS) {
  raf_attr a = {.name = "dtype", .kind = RAF_ATTR_DTYPE,
                .val.u.dt = X(0)->type->dtype};
  dx[0] = raf_emit(EM, RAF_OP_CAST, 1, &dy[0], &a, 1);
  return RAF_OK;
}

/* ---- Reductions ---------------------------------------------------------- */

/* dy spread back over x's shape. */
static raf_status grad_sum(RULE_ARGS) {
  bool drop[RAF_MAX_RANK];
  reduced_axes(s, X(0)->type, drop);
  dx[0] = broadcast_to(ad, keep_dims(ad, dy[0], X(0)->type, drop),
                       X(0)->type);
  return RAF_OK;
}

static raf_status grad_mean(RULE_ARGS) {
  const raf_type *x = X(0)->type;
  bool drop[RAF_MAX_RANK];
  int64_t count = 1;
  reduced_axes(s, x, drop);
  for (int i = 0; i < x->rank; i++)
    if (drop[i])
      count *= x->dims[i];
  raf_value *g = mulc(ad, dy[0], 1.0 / (double)count);
  dx[0] = broadcast_to(ad, keep_dims(ad, g, x, drop), x);
  return RAF_OK;
}

/* PyTorch's amax/amin backward: the gradient goes to the elements equal
 * to the result, split evenly among them. */
static raf_status grad_max(RULE_ARGS) {
  const raf_type *x = X(0)->type;
  bool drop[RAF_MAX_RANK];
  int64_t axes[RAF_MAX_RANK];
  int n = 0;
  reduced_axes(s, x, drop);
  for (int i = 0; i < x->rank; i++)
    if (drop[i])
      axes[n++] = i;
  raf_value *mask = op2(ad, RAF_OP_EQ, X(0), keep_dims(ad, Y(0), x, drop));
  raf_attr to = {.name = "dtype", .kind = RAF_ATTR_DTYPE, .val.u.dt = x->dtype};
  raf_value *ones = mask ? raf_emit(EM, RAF_OP_CAST, 1, &mask, &to, 1) : NULL;
  raf_attr sa[2] = {raf_attr_ints(ad->m, "axes", axes, n),
                    raf_attr_bool("keepdims", true)};
  raf_value *count = ones ? raf_emit(EM, RAF_OP_SUM, 1, &ones, sa, 2) : NULL;
  raf_value *share = op2(ad, RAF_OP_DIV, keep_dims(ad, dy[0], x, drop), count);
  dx[0] = op3(ad, RAF_OP_WHERE, mask, share, num(ad, dy[0], 0));
  return RAF_OK;
}

static raf_status grad_min(RULE_ARGS) { return grad_max(ad, s, dy, dx); }

/* ---- Shape manipulation -------------------------------------------------- */

static raf_status grad_reshape(RULE_ARGS) {
  dx[0] = reshape_to(ad, dy[0], X(0)->type);
  return RAF_OK;
}

/* The inverse permutation; no perm (reversed axes) is its own inverse. */
static raf_status grad_transpose(RULE_ARGS) {
  raf_attr_value perm;
  if (!raf_stmt_attr(s, "perm", &perm)) {
    dx[0] = op1(ad, RAF_OP_TRANSPOSE, dy[0]);
    return RAF_OK;
  }
  int64_t inv[RAF_MAX_RANK];
  int r = perm.u.ints.n;
  for (int i = 0; i < r; i++) {
    int64_t p = perm.u.ints.v[i];
    inv[p < 0 ? p + r : p] = i;
  }
  raf_attr a = raf_attr_ints(ad->m, "perm", inv, r);
  dx[0] = raf_emit(EM, RAF_OP_TRANSPOSE, 1, &dy[0], &a, 1);
  return RAF_OK;
}

static raf_status grad_broadcast_to(RULE_ARGS) {
  dx[0] = sum_to(ad, dy[0], X(0)->type);
  return RAF_OK;
}

static raf_status grad_slice(RULE_ARGS) {
  raf_attr a[4] = {dims_attr(ad, "shape", X(0)->type)};
  int n = 1;
  pass_attr(s, "begin", a, &n);
  pass_attr(s, "end", a, &n);
  pass_attr(s, "strides", a, &n);
  dx[0] = raf_emit(EM, RAF_OP_SLICE_GRAD, 1, &dy[0], a, n);
  return RAF_OK;
}

/* Operand i's part of dy, sliced along the axis. */
static raf_status grad_concat(RULE_ARGS) {
  const raf_type *t = Y(0)->type;
  int64_t axis = raf_stmt_attr_int(s, "axis"), off = 0;
  axis = axis < 0 ? axis + t->rank : axis;
  for (int i = 0; i < s->noperands; i++) {
    int64_t len = X(i)->type->dims[axis];
    if (NEED(i)) {
      int64_t begin[RAF_MAX_RANK] = {0}, end[RAF_MAX_RANK];
      memcpy(end, t->dims, sizeof(int64_t) * (size_t)t->rank);
      begin[axis] = off;
      end[axis] = off + len;
      raf_attr a[2] = {raf_attr_ints(ad->m, "begin", begin, t->rank),
                       raf_attr_ints(ad->m, "end", end, t->rank)};
      dx[i] = raf_emit(EM, RAF_OP_SLICE, 1, &dy[0], a, 2);
    }
    off += len;
  }
  return RAF_OK;
}

/* The parts' gradients concatenated, zeros for parts without one. */
static raf_status grad_split(RULE_ARGS) {
  raf_value *small[16], **parts = small;
  if (s->nresults > 16 &&
      !(parts = RAF_NEW_ARRAY(&ad->m->arena, raf_value *, s->nresults)))
    return RAF_ERROR;
  for (int i = 0; i < s->nresults; i++)
    parts[i] = dy[i] ? dy[i] : raf_emit_splat(EM, Y(i)->type, 0);
  raf_attr a[1];
  int n = 0;
  pass_attr(s, "axis", a, &n);
  dx[0] = raf_emit(EM, RAF_OP_CONCAT, s->nresults, parts, a, n);
  return RAF_OK;
}

static raf_status grad_take(RULE_ARGS) {
  const raf_type *t = X(0)->type;
  int64_t axis = raf_stmt_attr_int(s, "axis");
  axis = axis < 0 ? axis + t->rank : axis;
  raf_attr a[2] = {raf_attr_int("axis", axis),
                   raf_attr_int("dim", t->dims[axis])};
  raf_value *ops[2] = {dy[0], X(1)};
  dx[0] = raf_emit(EM, RAF_OP_TAKE_GRAD, 2, ops, a, 2);
  return RAF_OK;
}

/* ---- Linear algebra ------------------------------------------------------ */

static raf_value *matmul(raf_ad *ad, raf_value *a, raf_value *b, bool ta,
                         bool tb) {
  raf_attr at[2];
  int n = 0;
  if (ta)
    at[n++] = raf_attr_bool("transpose_a", true);
  if (tb)
    at[n++] = raf_attr_bool("transpose_b", true);
  raf_value *ops[2] = {a, b};
  return raf_emit(EM, RAF_OP_MATMUL, 2, ops, at, n);
}

/* With A = op(a), B = op(b) (op transposes when the flag says so), dA =
 * dy B^T and dB = A^T dy; a gradient of a transposed operand is the
 * transpose of that, which one matmul with swapped operands computes.
 * Broadcast batch dims are summed away. */
static raf_status grad_matmul(RULE_ARGS) {
  raf_value *a = X(0), *b = X(1), *g = dy[0];
  bool ta = raf_stmt_attr_bool(s, "transpose_a");
  bool tb = raf_stmt_attr_bool(s, "transpose_b");
  if (NEED(0)) {
    raf_value *r = !ta ? matmul(ad, g, b, false, !tb)  /* dy B^T */
                       : matmul(ad, b, g, tb, true);   /* (dy B^T)^T */
    dx[0] = sum_to(ad, r, a->type);
  }
  if (NEED(1) && b->type->rank == 2 && a->type->rank > 2 && !ta &&
      a->type->dims[a->type->rank - 1] > 0) {
    /* A weight shared by a batch (x [B, T, K] @ w [K, N]): fold the batch
     * into the rows, so that one matmul sums over it instead of making
     * a [B, K, N] gradient per batch element to sum afterwards. */
    const raf_type *at = a->type, *gt = g->type;
    int64_t rows = at->numel / at->dims[at->rank - 1];
    raf_type *a2 = raf_type_get(ad->m, at->dtype, 2,
                                (int64_t[]){rows, at->dims[at->rank - 1]});
    raf_type *g2 = raf_type_get(ad->m, gt->dtype, 2,
                                (int64_t[]){rows, gt->dims[gt->rank - 1]});
    if (!a2 || !g2)
      return RAF_ERROR;
    raf_value *af = reshape_to(ad, a, a2), *gf = reshape_to(ad, g, g2);
    dx[1] = !tb ? matmul(ad, af, gf, true, false)  /* A^T dy */
                : matmul(ad, gf, af, true, false); /* dy^T A */
  } else if (NEED(1)) {
    raf_value *r = !tb ? matmul(ad, a, g, !ta, false)  /* A^T dy */
                       : matmul(ad, g, a, true, ta);   /* (A^T dy)^T */
    dx[1] = sum_to(ad, r, b->type);
  }
  return RAF_OK;
}

/* ---- Neural-network layers ----------------------------------------------- */

static raf_status grad_softmax(RULE_ARGS) {
  raf_attr a[1];
  int n = 0;
  raf_value *ops[2] = {dy[0], Y(0)};
  pass_attr(s, "axis", a, &n);
  dx[0] = raf_emit(EM, s->op == RAF_OP_SOFTMAX ? RAF_OP_SOFTMAX_GRAD
                                               : RAF_OP_LOG_SOFTMAX_GRAD,
                   2, ops, a, n);
  return RAF_OK;
}

static raf_status grad_log_softmax(RULE_ARGS) {
  return grad_softmax(ad, s, dy, dx);
}

static raf_status grad_layer_norm(RULE_ARGS) {
  raf_attr a[2];
  int n = 0;
  raf_value *ops[3] = {dy[0], X(0), X(1)}, *r[3];
  pass_attr(s, "axis", a, &n);
  pass_attr(s, "eps", a, &n);
  raf_emit_multi(EM, RAF_OP_LAYER_NORM_GRAD, 3, ops, a, n, 3, r);
  for (int i = 0; i < 3; i++)
    dx[i] = r[i];
  return RAF_OK;
}

/* The mask is a pure function of the key: the gradient draws it again. */
static raf_status grad_dropout(RULE_ARGS) {
  raf_attr a[1];
  int n = 0;
  raf_value *ops[2] = {dy[0], X(1)};
  pass_attr(s, "p", a, &n);
  dx[0] = raf_emit(EM, RAF_OP_DROPOUT, 2, ops, a, n);
  return RAF_OK;
}

static raf_status grad_scaled_dot_product_attention(RULE_ARGS) {
  raf_attr a[2];
  int n = 0;
  raf_value *ops[4] = {dy[0], X(0), X(1), X(2)}, *r[3];
  pass_attr(s, "causal", a, &n);
  pass_attr(s, "scale", a, &n);
  raf_emit_multi(EM, RAF_OP_SCALED_DOT_PRODUCT_ATTENTION_GRAD, 4, ops, a, n, 3,
                 r);
  for (int i = 0; i < 3; i++)
    dx[i] = r[i];
  return RAF_OK;
}

/* conv2d_grad_input reads w, conv2d_grad_weight reads x: the first layer's
 * input gradient, never needed, never reads anything. */
static raf_status grad_conv2d(RULE_ARGS) {
  static const char *const names[] = {"stride", "padding", "dilation",
                                      "groups"};
  for (int i = 0; i < 2; i++) {
    if (!NEED(i))
      continue;
    raf_attr a[5];
    int n = 0;
    for (int k = 0; k < 4; k++)
      pass_attr(s, names[k], a, &n);
    a[n++] = dims_attr(ad, "shape", X(i)->type);
    raf_value *ops[2] = {dy[0], X(1 - i)};
    dx[i] = raf_emit(EM, i == 0 ? RAF_OP_CONV2D_GRAD_INPUT
                                : RAF_OP_CONV2D_GRAD_WEIGHT,
                     2, ops, a, n);
  }
  return RAF_OK;
}

static int pool_attrs(const raf_stmt *s, raf_attr *a) {
  int n = 0;
  pass_attr(s, "kernel", a, &n);
  pass_attr(s, "stride", a, &n);
  pass_attr(s, "padding", a, &n);
  return n;
}

static raf_status grad_max_pool2d(RULE_ARGS) {
  raf_attr a[3];
  int n = pool_attrs(s, a);
  raf_value *ops[2] = {dy[0], X(0)};
  dx[0] = raf_emit(EM, RAF_OP_MAX_POOL2D_GRAD, 2, ops, a, n);
  return RAF_OK;
}

static raf_status grad_avg_pool2d(RULE_ARGS) {
  raf_attr a[4];
  int n = pool_attrs(s, a);
  a[n++] = dims_attr(ad, "shape", X(0)->type);
  dx[0] = raf_emit(EM, RAF_OP_AVG_POOL2D_GRAD, 1, &dy[0], a, n);
  return RAF_OK;
}

/* The running statistics are state, not functions of the params that
 * PyTorch (or raf) differentiates: a loss that reads them is an error. */
static raf_status grad_batch_norm(RULE_ARGS) {
  if (dy[1] || dy[2]) {
    raf_diag_report(ad->ctx, s->loc, RAF_SEV_ERROR,
                    "autodiff: batch_norm: the loss depends on the new "
                    "running %s, which has no gradient",
                    dy[1] ? "mean" : "variance");
    return RAF_ERROR;
  }
  raf_attr a[2];
  int n = 0;
  raf_value *ops[5] = {dy[0], X(0), X(1), X(3), X(4)}, *r[3];
  pass_attr(s, "eps", a, &n);
  pass_attr(s, "training", a, &n);
  raf_emit_multi(EM, RAF_OP_BATCH_NORM_GRAD, 5, ops, a, n, 3, r);
  for (int i = 0; i < 3; i++)
    dx[i] = r[i];
  return RAF_OK;
}

/* ---- Losses -------------------------------------------------------------- */

static raf_status grad_cross_entropy(RULE_ARGS) {
  raf_attr a[2];
  int n = 0;
  raf_value *ops[3] = {dy[0], X(0), X(1)};
  pass_attr(s, "reduction", a, &n);
  pass_attr(s, "ignore_index", a, &n);
  dx[0] = raf_emit(EM, RAF_OP_CROSS_ENTROPY_GRAD, 3, ops, a, n);
  return RAF_OK;
}

/* d(a - b)^2 = 2 (a - b); "mean" divides by the element count. */
static raf_status grad_mse_loss(RULE_ARGS) {
  const char *red = raf_stmt_attr_str(s, "reduction");
  double c = 2;
  if (strcmp(red, "mean") == 0)
    c = 2.0 / (double)X(0)->type->numel;
  raf_value *diff = op2(ad, RAF_OP_SUB, X(0), X(1));
  raf_value *g = mul(ad, diff, mulc(ad, dy[0], c));
  if (NEED(0))
    dx[0] = g;
  if (NEED(1))
    dx[1] = op1(ad, RAF_OP_NEG, g);
  return RAF_OK;
}

/* ---- Collectives --------------------------------------------------------- */

/* Every rank's result is every rank's sum: the gradient is the sum of
 * every rank's dy (mean: their mean). min and max have none. */
static raf_status grad_all_reduce(RULE_ARGS) {
  const char *op = raf_stmt_attr_str(s, "op");
  if (strcmp(op, "min") == 0 || strcmp(op, "max") == 0) {
    raf_diag_report(ad->ctx, s->loc, RAF_SEV_ERROR,
                    "autodiff: all_reduce with op = \"%s\" has no gradient "
                    "(a flag or a bound over the ranks, not a value to "
                    "train through)", op);
    return RAF_ERROR;
  }
  raf_attr a[2];
  int n = 0;
  pass_attr(s, "op", a, &n);
  pass_attr(s, "world_size", a, &n);
  dx[0] = raf_emit(EM, RAF_OP_ALL_REDUCE, 1, &dy[0], a, n);
  return RAF_OK;
}

/* Each rank's slice of the reduction: the gradient gathers the slices'
 * gradients (divided by world_size for "mean"). */
static raf_status grad_reduce_scatter(RULE_ARGS) {
  raf_attr a[2];
  int n = 0;
  pass_attr(s, "axis", a, &n);
  pass_attr(s, "world_size", a, &n);
  raf_value *g = raf_emit(EM, RAF_OP_ALL_GATHER, 1, &dy[0], a, n);
  if (strcmp(raf_stmt_attr_str(s, "op"), "mean") == 0)
    g = mulc(ad, g, 1.0 / (double)raf_stmt_attr_int(s, "world_size"));
  dx[0] = g;
  return RAF_OK;
}

/* Every rank holds every rank's x: each rank's gradient is the sum over
 * ranks of its slice of dy. */
static raf_status grad_all_gather(RULE_ARGS) {
  raf_attr a[2];
  int n = 0;
  pass_attr(s, "axis", a, &n);
  pass_attr(s, "world_size", a, &n);
  dx[0] = raf_emit(EM, RAF_OP_REDUCE_SCATTER, 1, &dy[0], a, n);
  return RAF_OK;
}
