/* ops_nn.c: the mappers of ONNX's neural-network ops: matrix products,
 * softmax, normalisations, convolution and pooling (1-D as 2-D with a
 * height of 1; padding .raf cannot state made explicit), Pad, Dropout, and
 * the losses (their ONNX function bodies where .raf's ops differ). */
#include "raf-import/import.h"

#include <math.h>
#include <string.h>

static imp_value *sc(imp *im, double v, const imp_value *like) {
  return imp_scalar(im, v, like->dt);
}

/* --- linear algebra ------------------------------------------------------- */

static int map_matmul(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *a = ins[0], *b = ins[1];
  if (!imp_admits(im, a, im->row->raf))
    return -1;
  if (a->rank == 0 || b->rank == 0)
    return imp_unsupported(im, "MatMul of a scalar");
  bool sq_a = a->rank == 1, sq_b = b->rank == 1;
  if (sq_a) {
    int64_t d[2] = {1, a->dims[0]};
    a = imp_reshape(im, a, 2, d);
  }
  if (sq_b) {
    int64_t d[2] = {b->dims[0], 1};
    b = imp_reshape(im, b, 2, d);
  }
  if (a->poisoned || b->poisoned)
    return -1;
  imp_value ba = {.rank = a->rank - 2}, bb = {.rank = b->rank - 2};
  memcpy(ba.dims, a->dims, sizeof(int64_t) * (size_t)ba.rank);
  memcpy(bb.dims, b->dims, sizeof(int64_t) * (size_t)bb.rank);
  int rank;
  int64_t dims[RAF_MAX_RANK];
  if (!imp_broadcast(im, &ba, &bb, &rank, dims))
    return -1;
  if (rank + 2 > RAF_MAX_RANK)
    return imp_unsupported(im, "a result of rank %d", rank + 2);
  if (a->dims[a->rank - 1] != b->dims[b->rank - 2])
    return imp_unsupported(im, "inner dimensions differ");
  dims[rank] = a->dims[a->rank - 2];
  dims[rank + 1] = b->dims[b->rank - 1];
  imp_value *args[2] = {a, b};
  imp_value *y = imp_emit(im, "matmul", args, 2, NULL, a->dt, rank + 2, dims);
  int r = rank + 2;
  if (sq_b)
    r--;
  if (sq_a) {
    if (!sq_b)
      dims[r - 2] = dims[r - 1];
    r--;
  }
  outs[0] = imp_reshape(im, y, r, dims);
  return 1;
}

static int map_gemm(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  imp_value *a = ins[0], *b = ins[1], *c = nins > 2 ? ins[2] : NULL;
  if (!imp_admits(im, a, im->row->raf))
    return -1;
  if (a->rank != 2 || b->rank != 2)
    return imp_unsupported(im, "Gemm of ranks other than 2");
  bool ta = imp_attr_int(n, "transA", 0), tb = imp_attr_int(n, "transB", 0);
  int64_t d[2] = {ta ? a->dims[1] : a->dims[0], tb ? b->dims[0] : b->dims[1]};
  const char *attrs = ta && tb ? "{transpose_a, transpose_b}"
                      : ta     ? "{transpose_a}"
                      : tb     ? "{transpose_b}"
                               : NULL;
  imp_value *args[2] = {a, b};
  imp_value *y = imp_emit(im, "matmul", args, 2, attrs, a->dt, 2, d);
  double alpha = imp_attr_float(n, "alpha", 1.0);
  double beta = imp_attr_float(n, "beta", 1.0);
  if (alpha != 1.0)
    y = imp_binary(im, "mul", y, sc(im, alpha, a), a->dt);
  if (c) {
    if (beta != 1.0)
      c = imp_binary(im, "mul", c, sc(im, beta, a), a->dt);
    y = imp_binary(im, "add", y, c, a->dt);
  }
  outs[0] = y;
  return 1;
}

/* --- softmax -------------------------------------------------------------- */

static int map_softmax(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                       int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  const char *op = raf_op_table[im->row->raf].name;
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  if (im->opset >= 13) {
    int64_t axis = imp_attr_int(n, "axis", -1);
    if (imp_norm_axis(im, axis, x->rank) < 0)
      return -1;
    outs[0] = imp_emit(im, op, &x, 1,
                       axis != -1 ? imp_fmt(im, "{axis = %lld}", (long long)axis)
                                  : NULL,
                       x->dt, x->rank, x->dims);
    return 1;
  }
  /* Before opset 13 the input is coerced to 2-D at axis. */
  int a = imp_norm_axis(im, imp_attr_int(n, "axis", 1), x->rank);
  if (a < 0)
    return -1;
  int64_t flat[2] = {imp_numel(a, x->dims),
                     imp_numel(x->rank - a, x->dims + a)};
  imp_value *y = imp_reshape(im, x, 2, flat);
  y = imp_emit(im, op, &y, 1, NULL, x->dt, 2, flat);
  outs[0] = imp_reshape(im, y, x->rank, x->dims);
  return 1;
}

static int map_hardmax(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                       int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0], *y = x;
  if (!imp_float_only(im, x))
    return -1;
  int axis;
  if (im->opset >= 13) {
    axis = imp_norm_axis(im, imp_attr_int(n, "axis", -1), x->rank);
    if (axis < 0)
      return -1;
  } else {
    int a = imp_norm_axis(im, imp_attr_int(n, "axis", 1), x->rank);
    if (a < 0)
      return -1;
    int64_t flat[2] = {imp_numel(a, x->dims),
                       imp_numel(x->rank - a, x->dims + a)};
    y = imp_reshape(im, x, 2, flat);
    axis = 1;
  }
  int64_t kd[RAF_MAX_RANK], iota_d[RAF_MAX_RANK];
  for (int i = 0; i < y->rank; i++) {
    kd[i] = i == axis ? 1 : y->dims[i];
    iota_d[i] = i == axis ? y->dims[i] : 1;
  }
  imp_value *idx = imp_emit(im, "argmax", &y, 1,
                 imp_fmt(im, "{axis = %d, keepdims}", axis), RAF_I64, y->rank,
                 kd);
  imp_tensor *iota = imp_tensor_new(im, RAF_I64, y->rank, iota_d);
  if (!iota)
    return -1;
  for (int64_t i = 0; i < iota->numel; i++)
    imp_set_i64(iota, i, i);
  imp_value *hot = imp_binary(im, "eq", idx, imp_const_value(im, iota),
                              RAF_BOOL);
  imp_value *r = imp_cast(im, hot, x->dt);
  outs[0] = imp_reshape(im, r, x->rank, x->dims);
  return 1;
}

/* --- normalisation -------------------------------------------------------- */

static imp_value *broadcast_to(imp *im, imp_value *x, int rank,
                               const int64_t *dims) {
  if (x->rank == rank &&
      !memcmp(x->dims, dims, sizeof(int64_t) * (size_t)rank))
    return x;
  return imp_emit(im, "broadcast_to", &x, 1,
                  imp_fmt(im, "{shape = %s}", imp_fmt_ints(im, dims, rank)),
                  x->dt, rank, dims);
}

static int map_layer_norm(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                          int nins, imp_value **outs) {
  imp_value *x = ins[0], *scale = ins[1], *bias = nins > 2 ? ins[2] : NULL;
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  int64_t axis = imp_attr_int(n, "axis", -1);
  int a = imp_norm_axis(im, axis, x->rank);
  if (a < 0)
    return -1;
  double eps = imp_attr_float(n, "epsilon", 1e-5);
  int nr = x->rank - a;
  const int64_t *nd = x->dims + a;
  scale = broadcast_to(im, scale, nr, nd);
  bias = bias ? broadcast_to(im, bias, nr, nd)
              : imp_splat(im, 0, x->dt, nr, nd);
  imp_value *args[3] = {x, scale, bias};
  const char *attrs = axis != -1 ? imp_fmt(im, "{axis = %lld, eps = %.9g}",
                                           (long long)axis, eps)
                                 : imp_fmt(im, "{eps = %.9g}", eps);
  outs[0] = imp_emit(im, "layer_norm", args, 3, attrs, x->dt, x->rank,
                     x->dims);
  if (n->n_output == 1)
    return 1;
  /* Mean and InvStdDev: the statistics, reduced with keepdims. */
  int64_t axes[RAF_MAX_RANK];
  for (int i = a; i < x->rank; i++)
    axes[i - a] = i;
  imp_value *mean = imp_reduce(im, "mean", x, axes, nr, true);
  imp_value *d = imp_binary(im, "sub", x, mean, x->dt);
  imp_value *var = imp_reduce(im, "mean", imp_binary(im, "mul", d, d, x->dt),
                              axes, nr, true);
  var = imp_binary(im, "add", var, sc(im, eps, x), x->dt);
  outs[1] = mean;
  outs[2] = imp_unary(im, "rsqrt", var);
  return 3;
}

static int map_instance_norm(imp *im, const Onnx__NodeProto *n,
                             imp_value **ins, int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0], *scale = ins[1], *bias = ins[2];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  if (x->rank < 3)
    return imp_unsupported(im, "InstanceNormalization of rank %d", x->rank);
  double eps = imp_attr_float(n, "epsilon", 1e-5);
  imp_value *args[3] = {x, imp_splat(im, 1, x->dt, x->rank - 2, x->dims + 2),
                        imp_splat(im, 0, x->dt, x->rank - 2, x->dims + 2)};
  imp_value *y = imp_emit(im, "layer_norm", args, 3,
                          imp_fmt(im, "{axis = 2, eps = %.9g}", eps), x->dt,
                          x->rank, x->dims);
  int64_t cs[RAF_MAX_RANK];
  cs[0] = x->dims[1];
  for (int i = 1; i < x->rank - 1; i++)
    cs[i] = 1;
  y = imp_binary(im, "mul", y, imp_reshape(im, scale, x->rank - 1, cs), x->dt);
  outs[0] = imp_binary(im, "add", y, imp_reshape(im, bias, x->rank - 1, cs),
                       x->dt);
  return 1;
}

static int map_mvn(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                   int nins, imp_value **outs) {
  (void)nins;
  /* The function body of the ONNX op, statement by statement. */
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  int na;
  const int64_t *a = imp_attr_ints(n, "axes", &na);
  int64_t dflt[3] = {0, 2, 3};
  if (!a) {
    a = dflt;
    na = 3;
  }
  if (na > RAF_MAX_RANK)
    return imp_unsupported(im, "too many axes");
  imp_value *mean = imp_reduce(im, "mean", x, a, na, true);
  imp_value *two = sc(im, 2, x);
  imp_value *msq = imp_binary(im, "pow", mean, two, x->dt);
  imp_value *sqm = imp_reduce(im, "mean", imp_binary(im, "pow", x, two, x->dt),
                              a, na, true);
  imp_value *std = imp_unary(im, "sqrt", imp_binary(im, "sub", sqm, msq, x->dt));
  imp_value *d = imp_binary(im, "sub", x, mean, x->dt);
  outs[0] = imp_binary(im, "div", d,
                       imp_binary(im, "add", std, sc(im, 1e-9, x), x->dt),
                       x->dt);
  return 1;
}

static int map_batch_norm(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                          int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  bool training = imp_attr_int(n, "training_mode", 0);
  if (im->opset < 7 && !imp_attr_int(n, "is_test", 0))
    training = true;
  int nout = 0;
  for (size_t i = 0; i < n->n_output; i++)
    nout += n->output[i] && *n->output[i];
  if (training || nout > 1)
    return imp_unsupported(im, "semantics differ: in training, ONNX updates "
                               "the running variance with the biased batch "
                               "variance, .raf (as PyTorch) with the "
                               "unbiased");
  if (imp_attr_int(n, "spatial", 1) != 1)
    return imp_unsupported(im, "BatchNormalization spatial=0");
  if (x->rank < 2)
    return imp_unsupported(im, "BatchNormalization of rank %d", x->rank);
  raf_dtype dts[3] = {x->dt, x->dt, x->dt};
  int ranks[3] = {x->rank, 1, 1};
  int64_t dims[3][RAF_MAX_RANK];
  memcpy(dims[0], x->dims, sizeof dims[0]);
  dims[1][0] = dims[2][0] = x->dims[1];
  imp_value *res[3];
  imp_emit_n(im, "batch_norm", ins, 5,
             imp_fmt(im, "{eps = %.9g, training = false}",
                     imp_attr_float(n, "epsilon", 1e-5)),
             3, dts, ranks, dims, res);
  outs[0] = res[0];
  return 1;
}

static int map_dropout(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                       int nins, imp_value **outs) {
  imp_value *x = ins[0];
  double ratio;
  bool training;
  if (im->opset >= 12) {
    ratio = 0.5;
    training = false;
    if (nins > 1 && ins[1]) {
      imp_tensor *t = imp_known(im, ins[1], "the Dropout ratio");
      if (!t || t->numel != 1)
        return -1;
      ratio = imp_get_f64(t, 0);
    }
    if (nins > 2 && ins[2]) {
      imp_tensor *t = imp_known(im, ins[2], "the Dropout training_mode");
      if (!t || t->numel != 1)
        return -1;
      training = imp_get_i64(t, 0) != 0;
    }
  } else {
    ratio = imp_attr_float(n, "ratio", 0.5);
    training = im->opset < 7 && !imp_attr_int(n, "is_test", 0);
  }
  if (training && ratio != 0)
    return imp_unsupported(im, "random: training-mode Dropout with a ratio "
                               "above 0");
  imp_value *y = x;
  if (training) {
    if (!imp_admits(im, x, im->row->raf))
      return -1;
    imp_value *args[2] = {x, imp_scalar(im, 0, RAF_I64)};
    y = imp_emit(im, "dropout", args, 2, "{p = 0.0}", x->dt, x->rank, x->dims);
  }
  outs[0] = y;
  if (n->n_output > 1 && n->output[1] && *n->output[1]) {
    outs[1] = imp_splat(im, 1, im->opset >= 10 ? RAF_BOOL : x->dt, x->rank,
                        x->dims);
    return 2;
  }
  return 1;
}

/* --- convolution and pooling ---------------------------------------------- */

/* The (begin, end) padding of a conv or pool per spatial dimension. */
static bool pad_amounts(imp *im, const Onnx__NodeProto *n, const imp_value *x,
                        int nd, const int64_t *kernel, const int64_t *strides,
                        const int64_t *dil, int64_t *pb, int64_t *pe) {
  const char *autopad = imp_attr_string(im, n, "auto_pad", "NOTSET");
  if (!strcmp(autopad, "SAME_UPPER") || !strcmp(autopad, "SAME_LOWER")) {
    for (int i = 0; i < nd; i++) {
      int64_t in = x->dims[2 + i];
      int64_t out = (in + strides[i] - 1) / strides[i];
      int64_t total = (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in;
      if (total < 0)
        total = 0;
      int64_t small = total / 2, big = total - small;
      bool upper = !strcmp(autopad, "SAME_UPPER");
      pb[i] = upper ? small : big;
      pe[i] = upper ? big : small;
    }
    return true;
  }
  int c;
  const int64_t *pads = imp_attr_ints(n, "pads", &c);
  if (!strcmp(autopad, "VALID") || !pads) {
    memset(pb, 0, sizeof(int64_t) * (size_t)nd);
    memset(pe, 0, sizeof(int64_t) * (size_t)nd);
    return true;
  }
  if (c != 2 * nd) {
    imp_unsupported(im, "%d pads for %d spatial dimensions", c, nd);
    return false;
  }
  for (int i = 0; i < 2 * nd; i++)
    if (pads[i] < 0 || pads[i] > IMP_MAX_ATTR) {
      imp_unsupported(im, "a padding of %lld", (long long)pads[i]);
      return false;
    }
  memcpy(pb, pads, sizeof(int64_t) * (size_t)nd);
  memcpy(pe, pads + nd, sizeof(int64_t) * (size_t)nd);
  return true;
}

/* Reads an ints attribute of nd values, or fills dflt. */
static bool spatial_ints(imp *im, const Onnx__NodeProto *n, const char *name,
                         int nd, int64_t dflt, int64_t *out) {
  int c;
  const int64_t *v = imp_attr_ints(n, name, &c);
  if (!v) {
    for (int i = 0; i < nd; i++)
      out[i] = dflt;
    return true;
  }
  if (c != nd) {
    imp_unsupported(im, "%s has %d values for %d spatial dimensions", name,
                    c, nd);
    return false;
  }
  for (int i = 0; i < nd; i++)
    if (v[i] <= 0 || v[i] > IMP_MAX_ATTR) {
      imp_unsupported(im, "%s of %lld", name, (long long)v[i]);
      return false;
    }
  memcpy(out, v, sizeof(int64_t) * (size_t)nd);
  return true;
}

/* 1-D inputs [N, C, L] become [N, C, 1, L]. */
static imp_value *to2d(imp *im, imp_value *x, int nd) {
  if (nd == 2)
    return x;
  int64_t d[4] = {x->dims[0], x->dims[1], 1, x->dims[2]};
  return imp_reshape(im, x, 4, d);
}

static int map_conv(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  imp_value *x = ins[0], *w = ins[1], *b = nins > 2 ? ins[2] : NULL;
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  int nd = x->rank - 2;
  if (nd != 1 && nd != 2)
    return imp_unsupported(im, "%d-D convolution (.raf has 2-D)", nd);
  if (w->rank != x->rank)
    return imp_unsupported(im, "weight rank differs from the input's");
  int64_t kernel[2], strides[2], dil[2], pb[2], pe[2];
  if (!spatial_ints(im, n, "kernel_shape", nd, 0, kernel) ||
      !spatial_ints(im, n, "strides", nd, 1, strides) ||
      !spatial_ints(im, n, "dilations", nd, 1, dil))
    return -1;
  if (!imp_attr(n, "kernel_shape"))
    memcpy(kernel, w->dims + 2, sizeof(int64_t) * (size_t)nd);
  int64_t group = imp_attr_int(n, "group", 1);
  if (!pad_amounts(im, n, x, nd, kernel, strides, dil, pb, pe))
    return -1;
  imp_value *x2 = to2d(im, x, nd), *w2 = to2d(im, w, nd);
  if (nd == 1) {
    strides[1] = strides[0], strides[0] = 1;
    dil[1] = dil[0], dil[0] = 1;
    pb[1] = pb[0], pb[0] = 0;
    pe[1] = pe[0], pe[0] = 0;
  }
  int64_t pads[2] = {pb[0], pb[1]};
  if (pb[0] != pe[0] || pb[1] != pe[1]) {
    /* Asymmetric: zeros concatenated, then no padding. */
    int64_t b4[4] = {0, 0, pb[0], pb[1]}, e4[4] = {0, 0, pe[0], pe[1]};
    x2 = imp_pad_const(im, x2, b4, e4, 0);
    pads[0] = pads[1] = 0;
  }
  int64_t shape[4] = {x->dims[0], w->dims[0], 0, 0};
  for (int i = 0; i < 2; i++)
    shape[2 + i] = (x2->dims[2 + i] + 2 * pads[i] -
                    dil[i] * (w2->dims[2 + i] - 1) - 1) / strides[i] + 1;
  char attrs[256] = "";
  size_t len = 0;
#define ADD(...) len += (size_t)snprintf(attrs + len, sizeof attrs - len, __VA_ARGS__)
  if (strides[0] != 1 || strides[1] != 1)
    ADD("%sstride = [%lld, %lld]", len ? ", " : "", (long long)strides[0], (long long)strides[1]);
  if (pads[0] || pads[1])
    ADD("%spadding = [%lld, %lld]", len ? ", " : "", (long long)pads[0], (long long)pads[1]);
  if (dil[0] != 1 || dil[1] != 1)
    ADD("%sdilation = [%lld, %lld]", len ? ", " : "", (long long)dil[0], (long long)dil[1]);
  if (group != 1)
    ADD("%sgroups = %lld", len ? ", " : "", (long long)group);
#undef ADD
  imp_value *args[2] = {x2, w2};
  imp_value *y = imp_emit(im, "conv2d", args, 2,
                          len ? imp_fmt(im, "{%s}", attrs) : NULL, x->dt, 4,
                          shape);
  if (b) {
    int64_t bs[3] = {b->dims[0], 1, 1};
    if (b->rank != 1)
      return imp_unsupported(im, "a bias of rank %d", b->rank);
    y = imp_binary(im, "add", y, imp_reshape(im, b, 3, bs), x->dt);
  }
  if (nd == 1) {
    int64_t s3[3] = {shape[0], shape[1], shape[3]};
    y = imp_reshape(im, y, 3, s3);
  }
  outs[0] = y;
  return 1;
}

static int map_pool(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)nins;
  bool is_max = im->row->raf == RAF_OP_MAX_POOL2D;
  const char *op = raf_op_table[im->row->raf].name;
  imp_value *x = ins[0];
  int nd = x->rank - 2;
  if (nd != 1 && nd != 2)
    return imp_unsupported(im, "%d-D pooling (.raf has 2-D)", nd);
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  if (is_max && imp_attr_int(n, "storage_order", 0))
    return imp_unsupported(im, "MaxPool storage_order is not imported");
  int64_t kernel[2], strides[2], dil[2], pb[2], pe[2], extra[2] = {0, 0};
  if (!imp_attr(n, "kernel_shape"))
    return imp_unsupported(im, "pooling without kernel_shape");
  if (!spatial_ints(im, n, "kernel_shape", nd, 0, kernel) ||
      !spatial_ints(im, n, "strides", nd, 1, strides) ||
      !spatial_ints(im, n, "dilations", nd, 1, dil))
    return -1;
  for (int i = 0; i < nd; i++)
    if (dil[i] != 1)
      return imp_unsupported(im, "pooling with dilations (.raf pools have "
                                 "none)");
  if (!pad_amounts(im, n, x, nd, kernel, strides, dil, pb, pe))
    return -1;
  bool ceil_mode = imp_attr_int(n, "ceil_mode", 0);
  for (int i = 0; i < nd && ceil_mode; i++) {
    /* room for the last, partial window */
    int64_t in = x->dims[2 + i];
    int64_t span = in + pb[i] + pe[i] - kernel[i];
    int64_t out = (span + strides[i] - 1) / strides[i] + 1;
    if ((out - 1) * strides[i] >= in + pb[i])
      out--; /* no window starts in the end padding */
    extra[i] = (out - 1) * strides[i] + kernel[i] - (in + pb[i] + pe[i]);
    if (extra[i] < 0)
      extra[i] = 0;
  }
  imp_value *x2 = to2d(im, x, nd);
  if (nd == 1) {
    kernel[1] = kernel[0], kernel[0] = 1;
    strides[1] = strides[0], strides[0] = 1;
    pb[1] = pb[0], pb[0] = 0;
    pe[1] = pe[0], pe[0] = 0;
    extra[1] = extra[0], extra[0] = 0;
  }
  bool include = imp_attr_int(n, "count_include_pad", 0);
  bool direct = pb[0] == pe[0] && pb[1] == pe[1] && !extra[0] && !extra[1] &&
                2 * pb[0] <= kernel[0] && 2 * pb[1] <= kernel[1] &&
                (is_max || include || (!pb[0] && !pb[1]));
  int64_t padding[2] = {0, 0};
  imp_value *xp = x2;
  if (direct) {
    padding[0] = pb[0], padding[1] = pb[1];
  } else {
    /* Padding .raf pools cannot express (asymmetric, over half the kernel,
     * ceil_mode, padding left out of the average): the padding is
     * concatenated, max pools pad with -inf, and an average is divided by
     * the pooled mask of the counted positions. */
    int64_t b4[4] = {0, 0, pb[0], pb[1]};
    int64_t e4[4] = {0, 0, pe[0] + extra[0], pe[1] + extra[1]};
    xp = imp_pad_const(im, x2, b4, e4, is_max ? -INFINITY : 0);
  }
  int64_t out[2];
  for (int i = 0; i < 2; i++)
    out[i] = (xp->dims[2 + i] + 2 * padding[i] - kernel[i]) / strides[i] + 1;
  const char *pa = imp_fmt(
      im, "{kernel = [%lld, %lld], stride = [%lld, %lld]%s}",
      (long long)kernel[0], (long long)kernel[1], (long long)strides[0],
      (long long)strides[1],
      padding[0] || padding[1]
          ? imp_fmt(im, ", padding = [%lld, %lld]", (long long)padding[0],
                    (long long)padding[1])
          : "");
  int64_t ys[4] = {x->dims[0], x->dims[1], out[0], out[1]};
  imp_value *y = imp_emit(im, op, &xp, 1, pa, x->dt, 4, ys);
  if (!is_max && !direct) {
    int64_t h = x2->dims[2], w = x2->dims[3];
    int64_t md[4] = {1, 1, xp->dims[2], xp->dims[3]};
    imp_tensor *mask = imp_tensor_new(im, x->dt, 4, md);
    if (!mask)
      return -1;
    bool full = true;
    for (int64_t i = 0; i < md[2]; i++)
      for (int64_t j = 0; j < md[3]; j++) {
        bool in = include ? (i < pb[0] + h + pe[0] && j < pb[1] + w + pe[1])
                          : (i >= pb[0] && i < pb[0] + h && j >= pb[1] &&
                             j < pb[1] + w);
        imp_set_f64(mask, i * md[3] + j, in);
        full &= in;
      }
    if (!full) {
      imp_value *m = imp_const_value(im, mask);
      int64_t cs[4] = {1, 1, out[0], out[1]};
      imp_value *cnt = imp_emit(im, op, &m, 1, pa, x->dt, 4, cs);
      y = imp_binary(im, "div", y, cnt, x->dt);
    }
  }
  if (nd == 1) {
    int64_t s3[3] = {x->dims[0], x->dims[1], out[1]};
    y = imp_reshape(im, y, 3, s3);
  }
  outs[0] = y;
  return 1;
}

static int map_global_pool(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                           int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  int64_t axes[RAF_MAX_RANK];
  for (int i = 2; i < x->rank; i++)
    axes[i - 2] = i;
  outs[0] = imp_reduce(im, raf_op_table[im->row->raf].name, x, axes,
                       x->rank - 2, true);
  return 1;
}

static imp_value *slice_axis(imp *im, imp_value *x, int axis, int64_t begin,
                             int64_t end, int64_t stride) {
  int64_t b[RAF_MAX_RANK] = {0}, e[RAF_MAX_RANK], s[RAF_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    e[i] = x->dims[i];
    s[i] = 1;
  }
  b[axis] = begin, e[axis] = end, s[axis] = stride;
  return imp_slice(im, x, b, e, s);
}

static int map_pad(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                   int nins, imp_value **outs) {
  imp_value *x = ins[0], *value = NULL;
  const char *mode = imp_attr_string(im, n, "mode", "constant");
  int64_t pads[2 * RAF_MAX_RANK];
  int np;
  double cvalue = 0;
  if (im->opset < 11) {
    const int64_t *p = imp_attr_ints(n, "pads", &np);
    if (np > 2 * RAF_MAX_RANK)
      return imp_unsupported(im, "too many pads");
    if (np)
      memcpy(pads, p, sizeof(int64_t) * (size_t)np);
    cvalue = imp_attr_float(n, "value", 0.0);
  } else {
    if (nins < 2 || !ins[1])
      return imp_unsupported(im, "Pad without pads");
    imp_tensor *t = imp_known(im, ins[1], "the Pad pads");
    if (!t)
      return -1;
    if (t->numel > 2 * RAF_MAX_RANK)
      return imp_unsupported(im, "too many pads");
    np = (int)t->numel;
    for (int i = 0; i < np; i++)
      pads[i] = imp_get_i64(t, i);
    if (nins > 2 && ins[2])
      value = ins[2];
  }
  if (nins > 3 && ins[3])
    return imp_unsupported(im, "Pad axes are not imported");
  int r = x->rank;
  if (np != 2 * r)
    return imp_unsupported(im, "%d pads for rank %d", np, r);
  const int64_t *begins = pads, *ends = pads + r;
  if (!strcmp(mode, "constant")) {
    if (!value || imp_foldable(value)) {
      if (value)
        cvalue = imp_get_f64(value->konst, 0);
      outs[0] = imp_pad_const(im, x, begins, ends, cvalue);
      return 1;
    }
    /* A run-time pad value: pad with zeros, then select. */
    imp_value *y = imp_pad_const(im, x, begins, ends, 0);
    imp_tensor *mask = imp_tensor_new(im, RAF_BOOL, y->rank, y->dims);
    if (!mask)
      return -1;
    for (int64_t o = 0; o < mask->numel; o++) {
      int64_t rem = o;
      bool inside = true;
      for (int i = r - 1; i >= 0; i--) {
        int64_t k = rem % y->dims[i];
        rem /= y->dims[i];
        inside &= k >= begins[i] && k < begins[i] + x->dims[i];
      }
      imp_set_i64(mask, o, inside);
    }
    outs[0] = imp_where(im, imp_const_value(im, mask), y, value);
    return 1;
  }
  for (int i = 0; i < 2 * r; i++)
    if (pads[i] < 0)
      return imp_unsupported(im, "negative pads with mode %s", mode);
  bool edge = !strcmp(mode, "edge");
  if (!edge && strcmp(mode, "reflect"))
    return imp_unsupported(im, "Pad mode %s is not imported", mode);
  for (int axis = 0; axis < r; axis++) {
    int64_t b = begins[axis], e = ends[axis], len = x->dims[axis];
    if (!b && !e)
      continue;
    imp_value *parts[3];
    int k = 0;
    if (edge) {
      int64_t d[RAF_MAX_RANK];
      memcpy(d, x->dims, sizeof d);
      if (b) {
        d[axis] = b;
        parts[k++] = broadcast_to(im, slice_axis(im, x, axis, 0, 1, 1), r, d);
      }
      parts[k++] = x;
      if (e) {
        d[axis] = e;
        parts[k++] = broadcast_to(im, slice_axis(im, x, axis, len - 1, len, 1),
                                  r, d);
      }
    } else {
      if (b >= len || e >= len)
        return imp_unsupported(im, "a reflect pad wider than the input");
      if (b)
        parts[k++] = slice_axis(im, x, axis, b, 0, -1);
      parts[k++] = x;
      if (e) {
        int64_t end = len - 2 - e;
        parts[k++] = slice_axis(im, x, axis, len - 2, end >= 0 ? end : -len - 1,
                                -1);
      }
    }
    x = imp_concat(im, parts, k, axis);
  }
  outs[0] = x;
  return 1;
}

/* --- losses and one-hot selections ---------------------------------------- */

static imp_value *iota_along(imp *im, int64_t len, int rank, int axis,
                             raf_dtype dt) {
  int64_t d[RAF_MAX_RANK];
  for (int i = 0; i < rank; i++)
    d[i] = i == axis ? len : 1;
  imp_tensor *t = imp_tensor_new(im, dt, rank, d);
  imp_value *v = imp_value_new(im, dt, rank, d);
  if (!t) {
    v->poisoned = true;
    return v;
  }
  for (int64_t i = 0; i < len; i++)
    imp_set_i64(t, i, i);
  v->konst = t;
  return v;
}

/* Negative indices count from the end: where(idx < 0, idx + n, idx). */
static imp_value *wrap_negative(imp *im, imp_value *idx, int64_t n) {
  imp_value *neg = imp_binary(im, "lt", idx, imp_scalar(im, 0, idx->dt),
                              RAF_BOOL);
  imp_value *wrapped = imp_binary(im, "add", idx,
                                  imp_scalar(im, (double)n, idx->dt), idx->dt);
  return imp_where(im, neg, wrapped, idx);
}

/* ONNX GatherElements as a one-hot selection: for each index, the elements
 * of x along axis where an iota equals it, summed (one term is not 0). */
static imp_value *gather_elements(imp *im, imp_value *x, imp_value *idx,
                                  int64_t axis) {
  int a = imp_norm_axis(im, axis, x->rank);
  if (a < 0 || x->rank + 1 > RAF_MAX_RANK || idx->rank != x->rank) {
    if (a >= 0)
      imp_unsupported(im, "GatherElements of these ranks");
    imp_value *p = imp_value_new(im, x->dt, 0, NULL);
    p->poisoned = true;
    return p;
  }
  if (!imp_int_indices(im, idx)) {
    imp_value *p = imp_value_new(im, x->dt, 0, NULL);
    p->poisoned = true;
    return p;
  }
  int64_t len = x->dims[a];
  /* x restricted to the index's extent on the other axes */
  bool differ = false;
  int64_t shape[RAF_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    shape[i] = i == a ? len : idx->dims[i];
    differ |= i != a && idx->dims[i] != x->dims[i];
  }
  if (differ) {
    int64_t zero[RAF_MAX_RANK] = {0};
    x = imp_slice(im, x, zero, shape, NULL);
  }
  if (idx->dt != RAF_I64)
    idx = imp_cast(im, idx, RAF_I64);
  idx = wrap_negative(im, idx, len);
  int64_t ie[RAF_MAX_RANK], xe[RAF_MAX_RANK];
  for (int i = 0, j = 0; i <= x->rank; i++) {
    ie[i] = i == a + 1 ? 1 : idx->dims[j];
    if (i != a + 1)
      j++;
  }
  for (int i = 0, j = 0; i <= x->rank; i++) {
    xe[i] = i == a ? 1 : x->dims[j];
    if (i != a)
      j++;
  }
  imp_value *iv = imp_reshape(im, idx, x->rank + 1, ie);
  imp_value *xv = imp_reshape(im, x, x->rank + 1, xe);
  imp_value *hot = imp_binary(im, "eq", iv,
                              iota_along(im, len, x->rank + 1, a + 1, RAF_I64),
                              RAF_BOOL);
  imp_value *sel = imp_where(im, hot, xv, imp_scalar(im, 0, x->dt));
  int64_t ax = a + 1;
  return imp_reduce(im, "sum", sel, &ax, 1, false);
}

static int map_gather_elements(imp *im, const Onnx__NodeProto *n,
                               imp_value **ins, int nins, imp_value **outs) {
  (void)nins;
  outs[0] = gather_elements(im, ins[0], ins[1], imp_attr_int(n, "axis", 0));
  return 1;
}

/* NegativeLogLikelihoodLoss as its ONNX function body does it. */
static imp_value *nll_loss(imp *im, imp_value *x, imp_value *target,
                           imp_value *weight, const int64_t *ignore,
                           const char *red) {
  int64_t td[RAF_MAX_RANK];
  if (target->rank + 1 > RAF_MAX_RANK || target->rank < 1) {
    imp_unsupported(im, "a target of rank %d", target->rank);
    return imp_scalar(im, 0, x->dt);
  }
  td[0] = target->dims[0];
  td[1] = 1;
  for (int i = 1; i < target->rank; i++)
    td[i + 1] = target->dims[i];
  imp_value *t = imp_reshape(im, target, target->rank + 1, td);
  imp_value *mask = NULL;
  if (ignore) {
    mask = imp_binary(im, "eq", t, imp_scalar(im, (double)*ignore, t->dt),
                      RAF_BOOL);
    t = imp_where(im, mask, imp_scalar(im, 0, t->dt), t);
  }
  imp_value *g = gather_elements(im, x, t, 1);
  if (mask)
    g = imp_where(im, mask, imp_scalar(im, 0, x->dt), g);
  imp_value *loss = imp_reshape(im, imp_unary(im, "neg", g), target->rank,
                                target->dims);
  imp_value *w = NULL;
  if (weight) {
    imp_value *args[2] = {weight, imp_reshape(im, t, target->rank,
                                              target->dims)};
    w = imp_emit(im, "take", args, 2, NULL, x->dt, target->rank,
                 target->dims);
  }
  if (mask) {
    imp_value *m = imp_reshape(im, mask, target->rank, target->dims);
    w = imp_where(im, m, imp_scalar(im, 0, x->dt),
                  w ? w : imp_scalar(im, 1, x->dt));
  }
  if (w)
    loss = imp_binary(im, "mul", loss, w, x->dt);
  if (!strcmp(red, "none"))
    return loss;
  if (!strcmp(red, "sum"))
    return imp_reduce(im, "sum", loss, NULL, 0, false);
  if (!w)
    return imp_reduce(im, "mean", loss, NULL, 0, false);
  return imp_binary(im, "div", imp_reduce(im, "sum", loss, NULL, 0, false),
                    imp_reduce(im, "sum", w, NULL, 0, false), x->dt);
}

static int map_nll_loss(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                        int nins, imp_value **outs) {
  if (!imp_float_only(im, ins[0]))
    return -1;
  const Onnx__AttributeProto *ig = imp_attr(n, "ignore_index");
  outs[0] = nll_loss(im, ins[0], ins[1], nins > 2 ? ins[2] : NULL,
                     ig ? &ig->i : NULL,
                     imp_attr_string(im, n, "reduction", "mean"));
  return 1;
}

static int map_onehot(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  (void)nins;
  imp_value *idx = ins[0], *values = ins[2];
  imp_tensor *dt = imp_known(im, ins[1], "the OneHot depth");
  if (!dt)
    return -1;
  if (dt->numel != 1)
    return imp_unsupported(im, "a OneHot depth of %lld values",
                           (long long)dt->numel);
  int64_t depth = imp_get_i64(dt, 0);
  if (depth <= 0 || depth > ((int64_t)1 << 24))
    return imp_unsupported(im, "a OneHot depth of %lld", (long long)depth);
  int r = idx->rank + 1;
  if (r > RAF_MAX_RANK || values->rank != 1 || values->dims[0] != 2)
    return imp_unsupported(im, "OneHot of these shapes");
  int a = imp_norm_axis(im, imp_attr_int(n, "axis", -1), r);
  if (a < 0)
    return -1;
  if (imp_is_float(idx->dt))
    idx = imp_cast(im, idx, RAF_I64);
  if (!imp_int_indices(im, idx))
    return -1;
  idx = wrap_negative(im, idx, depth);
  int64_t ie[RAF_MAX_RANK];
  for (int i = 0, j = 0; i < r; i++)
    ie[i] = i == a ? 1 : idx->dims[j++];
  imp_value *iv = imp_reshape(im, idx, r, ie);
  imp_value *hot = imp_binary(im, "eq", iv, iota_along(im, depth, r, a, idx->dt),
                              RAF_BOOL);
  int64_t one = 1, e0 = 0, e1 = 1, e2 = 2;
  imp_value *off = imp_reshape(im, imp_slice(im, values, &e0, &e1, NULL), 0,
                               &one);
  imp_value *on = imp_reshape(im, imp_slice(im, values, &e1, &e2, NULL), 0,
                              &one);
  outs[0] = imp_where(im, hot, on, off);
  return 1;
}

static int map_softmax_ce(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                          int nins, imp_value **outs) {
  imp_value *x = ins[0], *labels = ins[1];
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  if (x->rank < 2)
    return imp_unsupported(im, "scores of rank %d", x->rank);
  const char *red = imp_attr_string(im, n, "reduction", "mean");
  const Onnx__AttributeProto *ig = imp_attr(n, "ignore_index");
  bool want_lp = n->n_output > 1 && n->output[1] && *n->output[1];
  if (nins > 2 && ins[2]) {
    /* Class weights, which cross_entropy lacks: the ONNX function body,
     * log_softmax then the negative log-likelihood. */
    imp_value *lp = imp_emit(im, "log_softmax", &x, 1, "{axis = 1}", x->dt,
                             x->rank, x->dims);
    outs[0] = nll_loss(im, lp, labels, ins[2], ig ? &ig->i : NULL, red);
    outs[1] = lp;
    return want_lp ? 2 : 1;
  }
  if (!ig && labels->spec) {
    for (int64_t i = 0; i < labels->spec->numel; i++)
      if (imp_get_i64(labels->spec, i) == -100)
        return imp_unsupported(im, "semantics differ: label -100 without "
                                   "ignore_index");
  }
  /* ONNX has the classes on axis 1, .raf on the last axis. */
  imp_value *xt = x;
  if (x->rank > 2) {
    int64_t perm[RAF_MAX_RANK], d[RAF_MAX_RANK];
    perm[0] = 0;
    for (int i = 2; i < x->rank; i++)
      perm[i - 1] = i;
    perm[x->rank - 1] = 1;
    for (int i = 0; i < x->rank; i++)
      d[i] = x->dims[perm[i]];
    xt = imp_emit(im, "transpose", &x, 1,
                  imp_fmt(im, "{perm = %s}", imp_fmt_ints(im, perm, x->rank)),
                  x->dt, x->rank, d);
  }
  char attrs[128] = "";
  if (strcmp(red, "mean") && ig)
    snprintf(attrs, sizeof attrs, "{reduction = \"%s\", ignore_index = %lld}",
             red, (long long)ig->i);
  else if (strcmp(red, "mean"))
    snprintf(attrs, sizeof attrs, "{reduction = \"%s\"}", red);
  else if (ig)
    snprintf(attrs, sizeof attrs, "{ignore_index = %lld}", (long long)ig->i);
  bool none = !strcmp(red, "none");
  imp_value *args[2] = {xt, labels};
  outs[0] = imp_emit(im, "cross_entropy", args, 2,
                     *attrs ? imp_fmt(im, "%s", attrs) : NULL, x->dt,
                     none ? labels->rank : 0, labels->dims);
  if (!want_lp)
    return 1;
  outs[1] = imp_emit(im, "log_softmax", &x, 1, "{axis = 1}", x->dt, x->rank,
                     x->dims);
  return 2;
}

const imp_op imp_ops_nn[] = {
    {"MatMul", map_matmul, RAF_OP_MATMUL, 2},
    {"Gemm", map_gemm, RAF_OP_MATMUL, 2},
    {"Softmax", map_softmax, RAF_OP_SOFTMAX, 1},
    {"LogSoftmax", map_softmax, RAF_OP_LOG_SOFTMAX, 1},
    {"Hardmax", map_hardmax, IMP_NO_OP, 1},
    {"LayerNormalization", map_layer_norm, RAF_OP_LAYER_NORM, 2},
    {"InstanceNormalization", map_instance_norm, RAF_OP_LAYER_NORM, 3},
    {"MeanVarianceNormalization", map_mvn, RAF_OP_MEAN, 1},
    {"BatchNormalization", map_batch_norm, RAF_OP_BATCH_NORM, 5},
    {"Dropout", map_dropout, RAF_OP_DROPOUT, 1},
    {"Conv", map_conv, RAF_OP_CONV2D, 2},
    {"MaxPool", map_pool, RAF_OP_MAX_POOL2D, 1},
    {"AveragePool", map_pool, RAF_OP_AVG_POOL2D, 1},
    {"GlobalAveragePool", map_global_pool, RAF_OP_MEAN, 1},
    {"GlobalMaxPool", map_global_pool, RAF_OP_MAX, 1},
    {"Pad", map_pad, IMP_NO_OP, 1},
    {"GatherElements", map_gather_elements, IMP_NO_OP, 2},
    {"NegativeLogLikelihoodLoss", map_nll_loss, IMP_NO_OP, 2},
    {"OneHot", map_onehot, IMP_NO_OP, 3},
    {"SoftmaxCrossEntropyLoss", map_softmax_ce, RAF_OP_CROSS_ENTROPY, 2},
    {NULL, NULL, IMP_NO_OP, 0}};
