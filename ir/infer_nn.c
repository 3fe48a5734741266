/* infer_nn.c: the shape functions of the layers, losses, collectives and
 * their gradients: matmul, softmax, layer_norm, dropout, attention,
 * convolution, pooling, batch_norm, cross_entropy, mse_loss, the
 * collectives, and the *_grad ops.
 *
 * They follow PyTorch's shapes for each layer (docs/LangRef.md) and the
 * conventions of ir/infer.c, whose entry point calls them through the op
 * table and whose helpers they share (ir/infer_internal.h).
 */
#include "ir/infer_internal.h"

#include <string.h>

/* ---- Linear algebra ------------------------------------------------------ */

raf_status infer_matmul(raf_infer *in) {
  const raf_type *a = OPND(0), *b = OPND(1);
  int64_t dims[RAF_MAX_RANK];
  if (infer_admit(in, 0) || infer_admit(in, 1) || infer_same_dtype(in, 0, 1) ||
      infer_need_rank(in, 0, "a", 2, true) ||
      infer_need_rank(in, 1, "b", 2, true))
    return RAF_ERROR;
  bool ta = infer_attr_bool(in, "transpose_a"),
       tb = infer_attr_bool(in, "transpose_b");
  int ra = a->rank, rb = b->rank, rank = ra - 2;
  int64_t m = a->dims[ra - 2 + ta], ka = a->dims[ra - 1 - ta];
  int64_t kb = b->dims[rb - 2 + tb], n = b->dims[rb - 1 - tb];
  if (ka != kb)
    return infer_operand_fail(in, 1, "contracting dimensions differ%s",
                        ta && tb ? " under transpose_a and transpose_b"
                        : ta     ? " under transpose_a"
                        : tb     ? " under transpose_b"
                                 : "");
  memcpy(dims, a->dims, (size_t)rank * sizeof *dims);
  if (!infer_broadcast_into(&rank, dims, rb - 2, b->dims))
    return infer_operand_fail(in, 1, "batch dimensions do not broadcast");
  dims[rank++] = m; /* rank <= RAF_MAX_RANK: both batch parts are <= 6 */
  dims[rank++] = n;
  return infer_set_result(in, 0, a->dtype, rank, dims);
}

/* ---- Neural-network layers ----------------------------------------------- */

raf_status infer_softmax(raf_infer *in) {
  int axis;
  if (infer_admit(in, 0) ||
      infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"),
                           OPND(0)->rank, &axis))
    return RAF_ERROR;
  in->results[0] = OPND(0);
  return RAF_OK;
}

/* gamma and beta have the shape of the normalised dims, x.shape[axis:]. */
raf_status infer_layer_norm(raf_infer *in) {
  const raf_type *x = OPND(0);
  int axis;
  if (infer_admit_all(in) || infer_same_dtype(in, 0, 1) ||
      infer_same_dtype(in, 0, 2) ||
      infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"), x->rank,
                           &axis) ||
      infer_need_shape(in, 1, "gamma", x->rank - axis, x->dims + axis) ||
      infer_need_shape(in, 2, "beta", x->rank - axis, x->dims + axis) ||
      infer_positive(in, "eps", infer_attr_float(in, "eps")))
    return RAF_ERROR;
  in->results[0] = OPND(0);
  return RAF_OK;
}

/* The key seeds the mask; it is not data, so only x admits the dtypes. */
raf_status infer_dropout(raf_infer *in) {
  const raf_type *key = OPND(1);
  double p = infer_attr_float(in, "p");
  if (infer_admit(in, 0))
    return RAF_ERROR;
  if (key->dtype != RAF_I64 ||
      !(key->rank == 0 || (key->rank == 1 && key->dims[0] == 2)))
    return infer_operand_fail(in, 1, "key must be i64[] or i64[2]");
  if (!(p >= 0 && p < 1)) /* also rejects NaN */
    return infer_attr_fail(in, "p", false, "p must be in [0, 1), got %g", p);
  in->results[0] = OPND(0);
  return RAF_OK;
}

/* q, k, v (operands first..first+2): [batch.., heads, seq, dim], with equal
 * leading dims; dims gets the result's shape, q's with v's last dim. */
static raf_status attention_dims(raf_infer *in, int first, int64_t *dims) {
  const raf_type *q = OPND(first), *k = OPND(first + 1), *v = OPND(first + 2);
  static const char *const names[] = {"q", "k", "v"};
  raf_attr_value scale;
  for (int i = first; i < first + 3; i++)
    if (infer_admit(in, i))
      return RAF_ERROR;
  if (infer_same_dtype(in, first, first + 1) ||
      infer_same_dtype(in, first, first + 2) ||
      infer_need_rank(in, first, "q", 3, true))
    return RAF_ERROR;
  int r = q->rank;
  for (int i = 1; i < 3; i++) {
    const raf_type *t = OPND(first + i);
    if (t->rank != r ||
        memcmp(t->dims, q->dims, (size_t)(r - 2) * sizeof *dims) != 0)
      return infer_operand_fail(in, first + i,
                                "the leading dimensions of %s do "
                                "not match q's",
                                names[i]);
  }
  if (q->dims[r - 1] != k->dims[r - 1])
    return infer_operand_fail(in, first + 1, "q and k head dimensions differ "
                        "(%lld vs %lld)", LL(q->dims[r - 1]),
                        LL(k->dims[r - 1]));
  if (k->dims[r - 2] != v->dims[r - 2])
    return infer_operand_fail(in, first + 2, "k and v sequence lengths differ "
                        "(%lld vs %lld)", LL(k->dims[r - 2]),
                        LL(v->dims[r - 2]));
  if (infer_attr(in, "scale", &scale) && infer_positive(in, "scale", scale.u.f))
    return RAF_ERROR;
  memcpy(dims, q->dims, (size_t)r * sizeof *dims);
  dims[r - 1] = v->dims[r - 1];
  return RAF_OK;
}

raf_status infer_attention(raf_infer *in) {
  int64_t dims[RAF_MAX_RANK];
  if (attention_dims(in, 0, dims))
    return RAF_ERROR;
  return infer_set_result(in, 0, OPND(0)->dtype, OPND(0)->rank, dims);
}

/* Output size of a window sliding over the two spatial dims, PyTorch's
 * floor((in + 2*pad - dil*(k-1) - 1) / stride) + 1. The caller has checked
 * pad >= 0 and k, stride, dil >= 1 (dil NULL means 1). */
static raf_status window2d(raf_infer *in, const int64_t *hw, const int64_t *k,
                           const int64_t *pad, const int64_t *stride,
                           const int64_t *dil, int64_t *out) {
  int64_t extent[2], padded[2];
  for (int i = 0; i < 2; i++) {
    if (!infer_mul_ok(dil ? dil[i] : 1, k[i] - 1, &extent[i]) ||
        extent[i] == INT64_MAX || pad[i] > (INT64_MAX - hw[i]) / 2)
      return raf_infer_fail(in, "window sizes overflow");
    extent[i] += 1;
    padded[i] = hw[i] + 2 * pad[i];
  }
  if (extent[0] > padded[0] || extent[1] > padded[1])
    return infer_operand_fail(in, -1, "kernel extent %lldx%lld exceeds padded "
                        "input %lldx%lld", LL(extent[0]), LL(extent[1]),
                        LL(padded[0]), LL(padded[1]));
  for (int i = 0; i < 2; i++)
    out[i] = (padded[i] - extent[i]) / stride[i] + 1;
  return RAF_OK;
}

/* The result shape of conv2d over an input of shape x [N, C, H, W] (spelt
 * xs in messages) with weight shape w [O, C / groups, KH, KW] (spelt ws);
 * the ranks are checked. The backward ops pass a shape attribute for one
 * of the two. */
static raf_status conv2d_dims(raf_infer *in, const int64_t *x, const char *xs,
                              const int64_t *w, const char *ws,
                              int64_t *dims) {
  raf_attr_value stride, pad, dil;
  if (infer_need(in, "stride", &stride) || infer_need(in, "padding", &pad) ||
      infer_need(in, "dilation", &dil) ||
      infer_check_ints(in, "stride", &stride, 2, 1) ||
      infer_check_ints(in, "padding", &pad, 2, 0) ||
      infer_check_ints(in, "dilation", &dil, 2, 1))
    return RAF_ERROR;
  int64_t groups = infer_attr_int(in, "groups"), c = x[1], o = w[0];
  if (groups < 1)
    return infer_attr_fail(in, "groups", false,
                           "groups must be at least 1, got "
                           "%lld",
                           LL(groups));
  if (c % groups || o % groups)
    return infer_attr_fail(in, "groups", true,
                           "groups = %lld does not divide the "
                           "%lld %s channels",
                           LL(groups), LL(c % groups ? c : o),
                           c % groups ? "input" : "output");
  if (w[1] != c / groups)
    return raf_infer_fail(in, "weight %s with groups = %lld does not fit the "
                          "%lld channels of %s", ws, LL(groups), LL(c), xs);
  if (w[2] < 1 || w[3] < 1)
    return raf_infer_fail(in, "weight %s has an empty kernel", ws);
  if (window2d(in, x + 2, w + 2, pad.u.ints.v, stride.u.ints.v, dil.u.ints.v,
               dims + 2))
    return RAF_ERROR;
  dims[0] = x[0];
  dims[1] = o;
  return RAF_OK;
}

/* x: [N, C, H, W]; w: [O, C / groups, KH, KW]. */
raf_status infer_conv2d(raf_infer *in) {
  const raf_type *x = OPND(0), *w = OPND(1);
  int64_t dims[4];
  if (infer_admit_all(in) || infer_same_dtype(in, 0, 1) ||
      infer_need_rank(in, 0, "x", 4, false) ||
      infer_need_rank(in, 1, "w", 4, false) ||
      conv2d_dims(in, x->dims, TY(x), w->dims, TY(w), dims))
    return RAF_ERROR;
  return infer_set_result(in, 0, x->dtype, 4, dims);
}

/* The result shape of a pooling window over x [N, C, H, W]. No stride
 * means the kernel's; padding is at most half the kernel, as PyTorch
 * requires. */
static raf_status pool2d_dims(raf_infer *in, const int64_t *x,
                              int64_t *dims) {
  raf_attr_value kernel, stride, pad;
  if (infer_need(in, "kernel", &kernel) ||
      infer_check_ints(in, "kernel", &kernel, 2, 1))
    return RAF_ERROR;
  if (!infer_attr(in, "stride", &stride))
    stride = kernel;
  if (infer_check_ints(in, "stride", &stride, 2, 1) ||
      infer_need(in, "padding", &pad) ||
      infer_check_ints(in, "padding", &pad, 2, 0))
    return RAF_ERROR;
  const int64_t *k = kernel.u.ints.v, *p = pad.u.ints.v;
  if (p[0] > k[0] / 2 || p[1] > k[1] / 2)
    return infer_attr_fail(in, "padding", false,
                           "padding should be at most half "
                           "of kernel size, got padding %s for kernel %s",
                           INTS(p, 2), INTS(k, 2));
  if (window2d(in, x + 2, k, p, stride.u.ints.v, NULL, dims + 2))
    return RAF_ERROR;
  dims[0] = x[0];
  dims[1] = x[1];
  return RAF_OK;
}

raf_status infer_pool2d(raf_infer *in) {
  const raf_type *x = OPND(0);
  int64_t dims[4];
  if (infer_admit(in, 0) || infer_need_rank(in, 0, "x", 4, false) ||
      pool2d_dims(in, x->dims, dims))
    return RAF_ERROR;
  return infer_set_result(in, 0, x->dtype, 4, dims);
}

/* Results: y (x's type), then the new running mean and variance, [C]. */
raf_status infer_batch_norm(raf_infer *in) {
  static const char *const names[] = {"x", "gamma", "beta", "mean", "var"};
  const raf_type *x = OPND(0);
  double momentum = infer_attr_float(in, "momentum");
  if (infer_admit_all(in) || infer_need_rank(in, 0, "x", 2, true))
    return RAF_ERROR;
  for (int i = 1; i < 5; i++)
    if (infer_same_dtype(in, 0, i) ||
        infer_need_shape(in, i, names[i], 1, x->dims + 1))
      return RAF_ERROR;
  if (infer_positive(in, "eps", infer_attr_float(in, "eps")))
    return RAF_ERROR;
  if (!(momentum >= 0 && momentum <= 1))
    return infer_attr_fail(in, "momentum", false,
                           "momentum must be in [0, 1], got "
                           "%g",
                           momentum);
  in->results[0] = OPND(0);
  if (infer_set_result(in, 1, x->dtype, 1, x->dims + 1))
    return RAF_ERROR;
  in->results[2] = in->results[1];
  return RAF_OK;
}

/* ---- Losses -------------------------------------------------------------- */

/* reduction = "none" keeps the per-element shape; "mean" and "sum" (the
 * choices were checked with the other attributes) give a scalar. */
static raf_status loss_result(raf_infer *in, raf_dtype dt, int rank,
                              const int64_t *dims) {
  if (strcmp(infer_attr_str(in, "reduction"), "none") == 0)
    return infer_set_result(in, 0, dt, rank, dims);
  return infer_set_result(in, 0, dt, 0, NULL);
}

/* logits [.., classes], labels [..] of class indices. */
raf_status infer_cross_entropy(raf_infer *in) {
  const raf_type *logits = OPND(0);
  if (infer_admit(in, 0) || infer_need_rank(in, 0, "logits", 1, true) ||
      infer_integer_operand(in, 1, "labels") ||
      infer_need_shape(in, 1, "labels", logits->rank - 1, logits->dims))
    return RAF_ERROR;
  return loss_result(in, logits->dtype, logits->rank - 1, logits->dims);
}

/* No broadcasting: a prediction and its target have one shape. */
raf_status infer_mse_loss(raf_infer *in) {
  const raf_type *a = OPND(0), *b = OPND(1);
  if (infer_admit_all(in) || infer_same_dtype(in, 0, 1))
    return RAF_ERROR;
  if (a != b) /* interned, and the element types agree */
    return infer_operand_fail(in, 1, "shapes differ");
  return loss_result(in, a->dtype, a->rank, a->dims);
}

/* ---- Collectives --------------------------------------------------------- */

/* all_reduce keeps the shape and ignores axis (so the default 0 also serves
 * scalars); reduce_scatter and all_slice divide dim[axis] by world_size,
 * all_gather multiplies it. */
raf_status infer_collective(raf_infer *in) {
  const raf_type *x = OPND(0);
  int64_t ws = infer_attr_int(in, "world_size"), dims[RAF_MAX_RANK];
  int axis;
  if (infer_admit(in, 0))
    return RAF_ERROR;
  if (ws < 1)
    return infer_attr_fail(in, "world_size", false,
                     "world_size must be at least 1, got %lld", LL(ws));
  if (in->stmt->op == RAF_OP_ALL_REDUCE) {
    in->results[0] = OPND(0);
    return RAF_OK;
  }
  if (infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"), x->rank,
                           &axis))
    return RAF_ERROR;
  memcpy(dims, x->dims, (size_t)x->rank * sizeof *dims);
  if (in->stmt->op == RAF_OP_REDUCE_SCATTER ||
      in->stmt->op == RAF_OP_ALL_SLICE) {
    if (dims[axis] % ws)
      return infer_attr_fail(in, "world_size", true,
                             "axis %d has size %lld, which "
                             "world_size = %lld does not divide",
                             axis, LL(dims[axis]), LL(ws));
    dims[axis] /= ws;
  } else if (!infer_mul_ok(dims[axis], ws, &dims[axis])) {
    return infer_too_large(in);
  }
  return infer_set_result(in, 0, x->dtype, x->rank, dims);
}

/* ---- Backward operators -------------------------------------------------- */

/* The autodiff pass makes these (docs/LangRef.md, "Backward operators").
 * Operand 0 is always dy, the gradient of the forward op's result; the
 * checks say which forward shape each gradient must have, so a backward
 * op written by hand is checked like any other. */

/* Operand i must be exactly operand j's type (dy against a forward value). */
static raf_status same_type(raf_infer *in, int i, int j, const char *what,
                            const char *of) {
  if (OPND(i) == OPND(j)) /* interned */
    return RAF_OK;
  return infer_operand_fail(in, i, "%s must have the type of %s", what, of);
}

/* A shape attribute: entries non-negative, len of them (any when < 0). */
static raf_status shape_attr(raf_infer *in, raf_attr_value *v, int len) {
  if (infer_need(in, "shape", v) || infer_check_ints(in, "shape", v, len, 0) ||
      infer_check_rank(in, v->u.ints.n))
    return RAF_ERROR;
  int64_t numel = 1;
  for (int i = 0; i < v->u.ints.n; i++)
    if (!infer_mul_ok(numel, v->u.ints.v[i], &numel))
      return infer_too_large(in);
  return RAF_OK;
}

/* The elementwise backward operators (gelu_grad, ...)(dy, x): dy and x of
 * one type, the result's. */
raf_status infer_elem_grad(raf_infer *in) {
  if (infer_admit_all(in) || same_type(in, 0, 1, "dy", "x"))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* softmax_grad, log_softmax_grad(dy, y): y is the forward result. */
raf_status infer_softmax_grad(raf_infer *in) {
  int axis;
  if (infer_admit_all(in) || same_type(in, 0, 1, "dy", "y") ||
      infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"),
                           OPND(1)->rank, &axis))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* layer_norm_grad(dy, x, gamma) -> (dx, dgamma, dbeta). */
raf_status infer_layer_norm_grad(raf_infer *in) {
  const raf_type *x = OPND(1);
  int axis;
  if (infer_admit_all(in) || same_type(in, 0, 1, "dy", "x") ||
      infer_same_dtype(in, 1, 2) ||
      infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"), x->rank,
                           &axis) ||
      infer_need_shape(in, 2, "gamma", x->rank - axis, x->dims + axis) ||
      infer_positive(in, "eps", infer_attr_float(in, "eps")))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  in->results[1] = in->results[2] = OPND(2);
  return RAF_OK;
}

/* cross_entropy_grad(dy, logits, labels): dy is the loss's gradient, a
 * scalar, or the labels' shape under reduction = "none". */
raf_status infer_cross_entropy_grad(raf_infer *in) {
  const raf_type *logits = OPND(1);
  bool none = strcmp(infer_attr_str(in, "reduction"), "none") == 0;
  if (infer_admit(in, 0) || infer_admit(in, 1) || infer_same_dtype(in, 0, 1) ||
      infer_need_rank(in, 1, "logits", 1, true) ||
      infer_integer_operand(in, 2, "labels") ||
      infer_need_shape(in, 2, "labels", logits->rank - 1, logits->dims) ||
      infer_need_shape(in, 0, "dy", none ? logits->rank - 1 : 0, logits->dims))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* take_grad(dy, indices) {axis, dim}: the gradient of take(table, indices)
 * with table.shape[axis] = dim; dy is take's result shape, so the table's
 * rank is dy's minus the indices' plus one, and axis counts in it. */
raf_status infer_take_grad(raf_infer *in) {
  const raf_type *dy = OPND(0), *ix = OPND(1);
  raf_attr_value dim;
  int64_t dims[RAF_MAX_RANK];
  int axis, rank = dy->rank - ix->rank + 1;
  if (infer_admit(in, 0) || infer_integer_operand(in, 1, "indices") ||
      infer_need(in, "dim", &dim))
    return RAF_ERROR;
  if (rank < 1)
    return infer_operand_fail(in, 0, "dy has a lower rank than indices");
  if (infer_normalize_axis(in, "axis", infer_attr_int(in, "axis"), rank, &axis))
    return RAF_ERROR;
  if (memcmp(dy->dims + axis, ix->dims, (size_t)ix->rank * sizeof *dims))
    return infer_operand_fail(in, 0, "dy does not hold indices at axis %d",
                              axis);
  if (dim.u.i < 0)
    return infer_attr_fail(in, "dim", false,
                           "dim must be non-negative, got %lld", LL(dim.u.i));
  memcpy(dims, dy->dims, (size_t)axis * sizeof *dims);
  dims[axis] = dim.u.i;
  memcpy(dims + axis + 1, dy->dims + axis + ix->rank,
         (size_t)(rank - axis - 1) * sizeof *dims);
  return infer_set_result(in, 0, dy->dtype, rank, dims);
}

/* slice_grad(dy) {shape, begin, end, strides}: dy is what slice of a
 * tensor of `shape` gives; the result has `shape`. */
raf_status infer_slice_grad(raf_infer *in) {
  const raf_type *dy = OPND(0);
  raf_attr_value shape, begin, end, strides;
  int64_t dims[RAF_MAX_RANK];
  bool stepped = infer_attr(in, "strides", &strides);
  if (infer_admit(in, 0) || shape_attr(in, &shape, -1))
    return RAF_ERROR;
  int n = shape.u.ints.n;
  if (infer_need(in, "begin", &begin) || infer_need(in, "end", &end) ||
      infer_check_ints(in, "begin", &begin, n, INT64_MIN) ||
      infer_check_ints(in, "end", &end, n, INT64_MIN) ||
      (stepped && infer_check_ints(in, "strides", &strides, n, INT64_MIN)))
    return RAF_ERROR;
  for (int i = 0; i < n; i++) {
    int64_t step = stepped ? strides.u.ints.v[i] : 1;
    if (step == 0)
      return infer_attr_fail(in, "strides", false,
                             "strides must be nonzero, got %s",
                             INTS(strides.u.ints.v, n));
    dims[i] = infer_slice_len(shape.u.ints.v[i], begin.u.ints.v[i],
                              end.u.ints.v[i], step);
  }
  if (infer_need_shape(in, 0, "dy", n, dims))
    return RAF_ERROR;
  return infer_set_result(in, 0, dy->dtype, n, shape.u.ints.v);
}

/* max_pool2d_grad(dy, x): dy has the pooled shape of x. */
raf_status infer_max_pool2d_grad(raf_infer *in) {
  int64_t dims[4];
  if (infer_admit_all(in) || infer_same_dtype(in, 0, 1) ||
      infer_need_rank(in, 1, "x", 4, false) ||
      pool2d_dims(in, OPND(1)->dims, dims) ||
      infer_need_shape(in, 0, "dy", 4, dims))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  return RAF_OK;
}

/* avg_pool2d_grad(dy) {.., shape}: the input's shape is an attribute, since
 * avg_pool2d's gradient reads no forward value. */
raf_status infer_avg_pool2d_grad(raf_infer *in) {
  raf_attr_value shape;
  int64_t dims[4];
  if (infer_admit(in, 0) || shape_attr(in, &shape, 4) ||
      pool2d_dims(in, shape.u.ints.v, dims) ||
      infer_need_shape(in, 0, "dy", 4, dims))
    return RAF_ERROR;
  return infer_set_result(in, 0, OPND(0)->dtype, 4, shape.u.ints.v);
}

/* conv2d_grad_input(dy, w) {.., shape = x's}, conv2d_grad_weight(dy, x)
 * {.., shape = w's}: dy has the shape conv2d(x, w) gives; the result has
 * `shape`. */
raf_status infer_conv2d_grad(raf_infer *in) {
  bool input = in->stmt->op == RAF_OP_CONV2D_GRAD_INPUT;
  const raf_type *t = OPND(1);
  raf_attr_value shape;
  int64_t dims[4];
  if (infer_admit_all(in) || infer_same_dtype(in, 0, 1) ||
      infer_need_rank(in, 1, input ? "w" : "x", 4, false) ||
      shape_attr(in, &shape, 4))
    return RAF_ERROR;
  const int64_t *s = shape.u.ints.v;
  if ((input ? conv2d_dims(in, s, INTS(s, 4), t->dims, TY(t), dims)
             : conv2d_dims(in, t->dims, TY(t), s, INTS(s, 4), dims)) ||
      infer_need_shape(in, 0, "dy", 4, dims))
    return RAF_ERROR;
  return infer_set_result(in, 0, t->dtype, 4, s);
}

/* batch_norm_grad(dy, x, gamma, mean, var) -> (dx, dgamma, dbeta); mean
 * and var are the running statistics, read when not training. */
raf_status infer_batch_norm_grad(raf_infer *in) {
  static const char *const names[] = {"dy", "x", "gamma", "mean", "var"};
  const raf_type *x = OPND(1);
  if (infer_admit_all(in) || infer_need_rank(in, 1, "x", 2, true) ||
      same_type(in, 0, 1, "dy", "x"))
    return RAF_ERROR;
  for (int i = 2; i < 5; i++)
    if (infer_same_dtype(in, 1, i) ||
        infer_need_shape(in, i, names[i], 1, x->dims + 1))
      return RAF_ERROR;
  if (infer_positive(in, "eps", infer_attr_float(in, "eps")))
    return RAF_ERROR;
  in->results[0] = OPND(1);
  in->results[1] = in->results[2] = OPND(2);
  return RAF_OK;
}

/* scaled_dot_product_attention_grad(dy, q, k, v) -> (dq, dk, dv). */
raf_status infer_attention_grad(raf_infer *in) {
  int64_t dims[RAF_MAX_RANK];
  if (infer_admit(in, 0) || attention_dims(in, 1, dims) ||
      infer_same_dtype(in, 0, 1) ||
      infer_need_shape(in, 0, "dy", OPND(1)->rank, dims))
    return RAF_ERROR;
  for (int i = 0; i < 3; i++)
    in->results[i] = OPND(i + 1);
  return RAF_OK;
}
