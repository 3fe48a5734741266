/* ops_shape.c: the mappers of ONNX's constant, shape and data-movement ops
 * (Constant, Shape, Size, ConstantOfShape, Reshape, Squeeze, Slice, Concat,
 * Split, Gather, Tile, ...) and of the reductions. Shape-only values are
 * folded here; a tensor input that .raf takes as an attribute (a Reshape's
 * shape, Slice's starts, ReduceSum's axes) must be known at import time
 * (imp_known). */
#include "raf-import/import.h"

#include <string.h>

static imp_value *poison(imp *im) {
  imp_value *v = imp_value_new(im, RAF_F32, 0, NULL);
  v->poisoned = true;
  return v;
}

/* The values of a known integer tensor input, at most cap of them; -1 when
 * it is not known (reported). */
static int known_ints(imp *im, imp_value *v, const char *what, int64_t *out,
                      int cap) {
  imp_tensor *t = imp_known(im, v, what);
  if (!t)
    return -1;
  if (t->numel > cap) {
    imp_unsupported(im, "%s has %lld values, more than %d", what,
                    (long long)t->numel, cap);
    return -1;
  }
  for (int64_t i = 0; i < t->numel; i++)
    out[i] = imp_get_i64(t, i);
  return (int)t->numel;
}

static imp_value *int_vector(imp *im, const int64_t *v, int n) {
  int64_t d = n;
  imp_tensor *t = imp_tensor_new(im, RAF_I64, 1, &d);
  if (!t)
    return poison(im);
  for (int i = 0; i < n; i++)
    imp_set_i64(t, i, v[i]);
  return imp_const_value(im, t);
}

/* --- constants ------------------------------------------------------------ */

static int map_constant(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                        int nins, imp_value **outs) {
  (void)ins, (void)nins;
  const Onnx__AttributeProto *a;
  if ((a = imp_attr(n, "value")) && a->t) {
    imp_tensor *t = imp_tensor_from_proto(im, a->t, "the Constant's value");
    if (!t)
      return -1;
    outs[0] = imp_const_value(im, t);
    return 1;
  }
  if ((a = imp_attr(n, "value_float"))) {
    outs[0] = imp_scalar(im, a->f, RAF_F32);
    return 1;
  }
  if ((a = imp_attr(n, "value_int"))) {
    imp_tensor *t = imp_tensor_new(im, RAF_I64, 0, NULL);
    if (!t)
      return -1;
    imp_set_i64(t, 0, a->i);
    outs[0] = imp_const_value(im, t);
    return 1;
  }
  if ((a = imp_attr(n, "value_floats"))) {
    int64_t d = (int64_t)a->n_floats;
    imp_tensor *t = imp_tensor_new(im, RAF_F32, 1, &d);
    if (!t)
      return -1;
    for (int64_t i = 0; i < d; i++)
      imp_set_f64(t, i, a->floats[i]);
    outs[0] = imp_const_value(im, t);
    return 1;
  }
  if ((a = imp_attr(n, "value_ints"))) {
    outs[0] = int_vector(im, a->ints, (int)a->n_ints);
    return 1;
  }
  return imp_unsupported(im, "a Constant without a tensor, float or int "
                             "value");
}

static int map_shape(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  int64_t start = imp_attr_int(n, "start", 0);
  int64_t end = imp_attr_int(n, "end", x->rank);
  if (start < 0) start += x->rank;
  if (end < 0) end += x->rank;
  start = start < 0 ? 0 : start > x->rank ? x->rank : start;
  end = end < 0 ? 0 : end > x->rank ? x->rank : end;
  if (end < start)
    end = start;
  outs[0] = int_vector(im, x->dims + start, (int)(end - start));
  return 1;
}

static int map_size(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_tensor *t = imp_tensor_new(im, RAF_I64, 0, NULL);
  if (!t)
    return -1;
  imp_set_i64(t, 0, imp_numel(ins[0]->rank, ins[0]->dims));
  outs[0] = imp_const_value(im, t);
  return 1;
}

static int map_constant_of_shape(imp *im, const Onnx__NodeProto *n,
                                 imp_value **ins, int nins, imp_value **outs) {
  (void)nins;
  int64_t dims[RAF_MAX_RANK];
  int rank = known_ints(im, ins[0], "the ConstantOfShape shape", dims,
                        RAF_MAX_RANK);
  if (rank < 0)
    return -1;
  raf_dtype dt = RAF_F32;
  imp_tensor *val = NULL;
  const Onnx__AttributeProto *a = imp_attr(n, "value");
  if (a && a->t) {
    val = imp_tensor_from_proto(im, a->t, "the ConstantOfShape value");
    if (!val)
      return -1;
    dt = val->dt;
  }
  imp_tensor *t = imp_tensor_splat(im, dt, rank, dims);
  if (!t)
    return -1;
  if (val && val->numel)
    memcpy(t->data, val->data, (size_t)raf_dtype_size(dt));
  else
    imp_set_f64(t, 0, 0);
  outs[0] = imp_const_value(im, t);
  return 1;
}

static int map_eye_like(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                        int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  raf_dtype dt = x->dt;
  if (imp_attr(n, "dtype") &&
      !imp_dtype_from_onnx((int32_t)imp_attr_int(n, "dtype", 0), &dt))
    return imp_unsupported(im, "EyeLike of a type .raf lacks");
  if (x->rank != 2)
    return imp_unsupported(im, "EyeLike of rank %d", x->rank);
  int64_t k = imp_attr_int(n, "k", 0);
  imp_tensor *t = imp_tensor_new(im, dt, 2, x->dims);
  if (!t)
    return -1;
  for (int64_t i = 0; i < x->dims[0]; i++)
    for (int64_t j = 0; j < x->dims[1]; j++)
      imp_set_f64(t, i * x->dims[1] + j, j - i == k);
  outs[0] = imp_const_value(im, t);
  return 1;
}

/* --- reshapes ------------------------------------------------------------- */

static int map_reshape(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                       int nins, imp_value **outs) {
  imp_value *x = ins[0];
  int64_t shape[RAF_MAX_RANK];
  int rank;
  if (im->opset < 5) {
    int c;
    const int64_t *s = imp_attr_ints(n, "shape", &c);
    if (!s)
      return imp_unsupported(im, "Reshape without a shape");
    if (c > RAF_MAX_RANK)
      return imp_unsupported(im, "a shape of rank %d", c);
    memcpy(shape, s, sizeof(int64_t) * (size_t)c);
    rank = c;
  } else {
    if (nins < 2 || !ins[1])
      return imp_unsupported(im, "Reshape without a shape");
    rank = known_ints(im, ins[1], "the Reshape shape", shape, RAF_MAX_RANK);
    if (rank < 0)
      return -1;
  }
  bool allowzero = imp_attr_int(n, "allowzero", 0);
  int64_t out[RAF_MAX_RANK];
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < rank; i++) {
    out[i] = (!allowzero && shape[i] == 0 && i < x->rank) ? x->dims[i]
                                                          : shape[i];
    if (out[i] == -1 && infer < 0)
      infer = i;
    else if (out[i] < 0 || out[i] > IMP_MAX_DIM ||
             __builtin_mul_overflow(known, out[i], &known))
      return imp_unsupported(im, "a Reshape dimension of %lld",
                             (long long)out[i]);
  }
  if (infer >= 0)
    out[infer] = known ? imp_numel(x->rank, x->dims) / known : 0;
  outs[0] = imp_reshape(im, x, rank, out);
  return 1;
}

static int map_flatten(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                       int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  int64_t axis = imp_attr_int(n, "axis", 1);
  if (axis < 0)
    axis += x->rank;
  if (axis < 0 || axis > x->rank)
    return imp_unsupported(im, "Flatten axis out of range");
  int64_t d[2] = {imp_numel((int)axis, x->dims),
                  imp_numel(x->rank - (int)axis, x->dims + axis)};
  outs[0] = imp_reshape(im, x, 2, d);
  return 1;
}

/* The axes of Squeeze and Unsqueeze: an attribute before opset 13, an
 * input since. Returns their number, or -2 when absent, -1 on error. */
static int axes_of(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                   int nins, int64_t *axes, const char *what) {
  if (im->opset < 13) {
    int c;
    const int64_t *a = imp_attr_ints(n, "axes", &c);
    if (!a)
      return -2;
    if (c > RAF_MAX_RANK)
      return imp_unsupported(im, "too many axes");
    memcpy(axes, a, sizeof(int64_t) * (size_t)c);
    return c;
  }
  if (nins < 2 || !ins[1])
    return -2;
  return known_ints(im, ins[1], what, axes, RAF_MAX_RANK);
}

static int map_squeeze(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                       int nins, imp_value **outs) {
  imp_value *x = ins[0];
  int64_t axes[RAF_MAX_RANK];
  int na = axes_of(im, n, ins, nins, axes, "the Squeeze axes");
  if (na == -1)
    return -1;
  bool drop[RAF_MAX_RANK] = {0};
  for (int i = 0; i < x->rank; i++)
    drop[i] = na == -2 && x->dims[i] == 1;
  for (int i = 0; i < na; i++) {
    int a = imp_norm_axis(im, axes[i], x->rank);
    if (a < 0)
      return -1;
    drop[a] = true;
  }
  int64_t shape[RAF_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!drop[i])
      shape[r++] = x->dims[i];
  outs[0] = imp_reshape(im, x, r, shape);
  return 1;
}

static int map_unsqueeze(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                         int nins, imp_value **outs) {
  imp_value *x = ins[0];
  int64_t axes[RAF_MAX_RANK];
  int na = axes_of(im, n, ins, nins, axes, "the Unsqueeze axes");
  if (na == -1)
    return -1;
  if (na == -2)
    return imp_unsupported(im, "Unsqueeze without axes");
  int r = x->rank + na;
  if (r > RAF_MAX_RANK)
    return imp_unsupported(im, "a result of rank %d", r);
  bool ins_at[RAF_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int a = imp_norm_axis(im, axes[i], r);
    if (a < 0)
      return -1;
    ins_at[a] = true;
  }
  int64_t shape[RAF_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++)
    shape[i] = ins_at[i] ? 1 : (k < x->rank ? x->dims[k++] : 1);
  outs[0] = imp_reshape(im, x, r, shape);
  return 1;
}

static imp_value *transpose(imp *im, imp_value *x, const int64_t *perm) {
  int64_t dims[RAF_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    dims[i] = x->dims[perm[i]];
  return imp_emit(im, "transpose", &x, 1,
                  imp_fmt(im, "{perm = %s}", imp_fmt_ints(im, perm, x->rank)),
                  x->dt, x->rank, dims);
}

static int map_transpose(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                         int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  int c;
  const int64_t *perm = imp_attr_ints(n, "perm", &c);
  int64_t p[RAF_MAX_RANK];
  bool seen[RAF_MAX_RANK] = {0};
  if (perm && c != x->rank)
    return imp_unsupported(im, "perm of %d axes for rank %d", c, x->rank);
  for (int i = 0; i < x->rank; i++) {
    p[i] = perm ? perm[i] : x->rank - 1 - i;
    if (p[i] < 0 || p[i] >= x->rank || seen[p[i]])
      return imp_unsupported(im, "perm is not a permutation");
    seen[p[i]] = true;
  }
  if (!perm) {
    int64_t dims[RAF_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
      dims[i] = x->dims[p[i]];
    outs[0] = imp_emit(im, "transpose", &x, 1, NULL, x->dt, x->rank, dims);
    return 1;
  }
  outs[0] = transpose(im, x, p);
  return 1;
}

static imp_value *broadcast_to(imp *im, imp_value *x, int rank,
                               const int64_t *dims) {
  return imp_emit(im, "broadcast_to", &x, 1,
                  imp_fmt(im, "{shape = %s}", imp_fmt_ints(im, dims, rank)),
                  x->dt, rank, dims);
}

static int map_expand(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  imp_value shape = {.dt = x->dt};
  shape.rank = known_ints(im, ins[1], "the Expand shape", shape.dims,
                          RAF_MAX_RANK);
  if (shape.rank < 0 || !imp_shape_ok(im, shape.rank, shape.dims))
    return -1;
  int rank;
  int64_t dims[RAF_MAX_RANK];
  if (!imp_broadcast(im, x, &shape, &rank, dims))
    return -1;
  outs[0] = broadcast_to(im, x, rank, dims);
  return 1;
}

static int map_slice(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  imp_value *x = ins[0];
  int64_t starts[RAF_MAX_RANK], ends[RAF_MAX_RANK], axes[RAF_MAX_RANK],
      steps[RAF_MAX_RANK];
  int ns, ne, na = -1, nst = -1;
  if (im->opset < 10) {
    const int64_t *s = imp_attr_ints(n, "starts", &ns);
    const int64_t *e = imp_attr_ints(n, "ends", &ne);
    const int64_t *a = imp_attr_ints(n, "axes", &na);
    if (!a)
      na = -1;
    if (ns > RAF_MAX_RANK || ne > RAF_MAX_RANK || na > RAF_MAX_RANK)
      return imp_unsupported(im, "too many axes");
    if (ns)
      memcpy(starts, s, sizeof(int64_t) * (size_t)ns);
    if (ne)
      memcpy(ends, e, sizeof(int64_t) * (size_t)ne);
    if (na > 0)
      memcpy(axes, a, sizeof(int64_t) * (size_t)na);
  } else {
    if (nins < 3 || !ins[1] || !ins[2])
      return imp_unsupported(im, "Slice without starts and ends");
    ns = known_ints(im, ins[1], "the Slice starts", starts, RAF_MAX_RANK);
    ne = known_ints(im, ins[2], "the Slice ends", ends, RAF_MAX_RANK);
    if (ns < 0 || ne < 0)
      return -1;
    if (nins > 3 && ins[3] &&
        (na = known_ints(im, ins[3], "the Slice axes", axes, RAF_MAX_RANK)) < 0)
      return -1;
    if (nins > 4 && ins[4] &&
        (nst = known_ints(im, ins[4], "the Slice steps", steps,
                          RAF_MAX_RANK)) < 0)
      return -1;
  }
  if (ns != ne || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
    return imp_unsupported(im, "Slice inputs of different lengths");
  int64_t begin[RAF_MAX_RANK] = {0}, end[RAF_MAX_RANK], strides[RAF_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    end[i] = x->dims[i];
    strides[i] = 1;
  }
  for (int i = 0; i < ns; i++) {
    int a = imp_norm_axis(im, na >= 0 ? axes[i] : i, x->rank);
    if (a < 0)
      return -1;
    begin[a] = starts[i];
    end[a] = ends[i];
    strides[a] = nst >= 0 ? steps[i] : 1;
  }
  outs[0] = imp_slice(im, x, begin, end, strides);
  return 1;
}

static int map_concat(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  for (int i = 0; i < nins; i++)
    if (!ins[i])
      return imp_unsupported(im, "an empty Concat input");
  if (!imp_attr(n, "axis"))
    return imp_unsupported(im, "Concat without an axis");
  int a = imp_norm_axis(im, imp_attr_int(n, "axis", 0), ins[0]->rank);
  if (a < 0)
    return -1;
  for (int i = 1; i < nins; i++)
    if (ins[i]->dt != ins[0]->dt)
      return imp_unsupported(im, "Concat of different element types");
  outs[0] = imp_concat(im, ins, nins, a);
  return 1;
}

static int map_split(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  imp_value *x = ins[0];
  int64_t axis = imp_attr_int(n, "axis", 0);
  int a = imp_norm_axis(im, axis, x->rank);
  if (a < 0)
    return -1;
  int nout = (int)n->n_output;
  int64_t sizes[64];
  int nsizes = -1;
  if (im->opset < 13) {
    const int64_t *s = imp_attr_ints(n, "split", &nsizes);
    if (!s)
      nsizes = -1;
    else if (nsizes > 64)
      return imp_unsupported(im, "too many outputs");
    else if (nsizes)
      memcpy(sizes, s, sizeof(int64_t) * (size_t)nsizes);
  } else if (nins > 1 && ins[1]) {
    nsizes = known_ints(im, ins[1], "the Split sizes", sizes, 64);
    if (nsizes < 0)
      return -1;
  }
  if (nsizes == 0)
    nsizes = -1;
  const char *attrs;
  if (nsizes < 0) {
    if (imp_attr(n, "num_outputs") || nout == 0 || x->dims[a] % nout)
      return imp_unsupported(im, "an uneven Split");
    for (int i = 0; i < nout; i++)
      sizes[i] = x->dims[a] / nout;
    attrs = imp_fmt(im, "{axis = %lld, sections = %d}", (long long)axis, nout);
  } else {
    if (nsizes != nout)
      return imp_unsupported(im, "%d split sizes for %d outputs", nsizes,
                             nout);
    int64_t total = 0;
    for (int i = 0; i < nsizes; i++) {
      if (sizes[i] > IMP_MAX_DIM)
        return imp_unsupported(im, "a split size of %lld",
                               (long long)sizes[i]);
      if (sizes[i] <= 0)
        return imp_unsupported(im, "split sizes of 0 (.raf sizes are "
                                   "positive)");
      total += sizes[i];
    }
    if (total != x->dims[a])
      return imp_unsupported(im, "split sizes do not add up");
    attrs = imp_fmt(im, "{axis = %lld, sizes = %s}", (long long)axis,
                    imp_fmt_ints(im, sizes, nsizes));
  }
  raf_dtype dts[64];
  int ranks[64];
  int64_t dims[64][RAF_MAX_RANK];
  for (int i = 0; i < nout; i++) {
    dts[i] = x->dt;
    ranks[i] = x->rank;
    memcpy(dims[i], x->dims, sizeof dims[i]);
    dims[i][a] = sizes[i];
  }
  imp_emit_n(im, "split", &x, 1, attrs, nout, dts, ranks, dims, outs);
  return nout;
}

static int map_gather(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0], *idx = ins[1];
  if (x->rank < 1) /* ONNX's Gather wants data of rank >= 1 */
    return imp_unsupported(im, "Gather of a rank-0 value");
  int64_t axis = imp_attr_int(n, "axis", 0);
  int a = imp_norm_axis(im, axis, x->rank);
  if (a < 0)
    return -1;
  int rank = x->rank - 1 + idx->rank;
  if (rank > RAF_MAX_RANK)
    return imp_unsupported(im, "a result of rank %d", rank);
  int64_t dims[RAF_MAX_RANK];
  int r = 0;
  for (int i = 0; i < a; i++)
    dims[r++] = x->dims[i];
  for (int i = 0; i < idx->rank; i++)
    dims[r++] = idx->dims[i];
  for (int i = a + 1; i < x->rank; i++)
    dims[r++] = x->dims[i];
  if (!imp_int_indices(im, idx))
    return -1;
  if (imp_foldable(x) && imp_foldable(idx)) {
    imp_tensor *t = imp_tensor_new(im, x->dt, rank, dims);
    if (!t || !(x->konst = imp_tensor_dense(im, x->konst)) ||
        !(idx->konst = imp_tensor_dense(im, idx->konst)))
      return -1;
    int64_t outer = imp_numel(a, x->dims), inner = 1, ni = idx->konst->numel;
    for (int i = a + 1; i < x->rank; i++)
      inner *= x->dims[i];
    size_t es = (size_t)raf_dtype_size(x->dt);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < ni; j++) {
        int64_t k = imp_get_i64(idx->konst, j);
        if (k < 0)
          k += x->dims[a];
        if (k < 0 || k >= x->dims[a])
          return imp_unsupported(im, "index %lld out of range", (long long)k);
        memcpy((char *)t->data + ((o * ni + j) * inner) * (int64_t)es,
               (char *)x->konst->data + ((o * x->dims[a] + k) * inner) * (int64_t)es,
               (size_t)inner * es);
      }
    outs[0] = imp_const_value(im, t);
    return 1;
  }
  imp_value *args[2] = {x, idx};
  outs[0] = imp_emit(im, "take", args, 2,
                     axis ? imp_fmt(im, "{axis = %lld}", (long long)axis) : NULL,
                     x->dt, rank, dims);
  return 1;
}

static int map_tile(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                    int nins, imp_value **outs) {
  (void)n, (void)nins;
  imp_value *x = ins[0];
  int64_t reps[RAF_MAX_RANK];
  int nr = known_ints(im, ins[1], "the Tile repeats", reps, RAF_MAX_RANK);
  if (nr < 0)
    return -1;
  if (nr != x->rank)
    return imp_unsupported(im, "%d repeats for rank %d", nr, x->rank);
  if (2 * x->rank > RAF_MAX_RANK)
    return imp_unsupported(im, "Tile of rank %d (needs rank %d inside)",
                           x->rank, 2 * x->rank);
  /* x [s0, s1, ..] -> [1, s0, 1, s1, ..] -> [r0, s0, r1, s1, ..] */
  int64_t inter[RAF_MAX_RANK], wide[RAF_MAX_RANK], out[RAF_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    if (reps[i] < 0 || reps[i] > IMP_MAX_DIM)
      return imp_unsupported(im, "a repeat of %lld", (long long)reps[i]);
    inter[2 * i] = 1;
    inter[2 * i + 1] = x->dims[i];
    wide[2 * i] = reps[i];
    wide[2 * i + 1] = x->dims[i];
    out[i] = reps[i] * x->dims[i];
  }
  imp_value *y = imp_reshape(im, x, 2 * x->rank, inter);
  y = broadcast_to(im, y, 2 * x->rank, wide);
  outs[0] = imp_reshape(im, y, x->rank, out);
  return 1;
}

static int map_depth_space(imp *im, const Onnx__NodeProto *n,
                           imp_value **ins, int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  int64_t b = imp_attr_int(n, "blocksize", 0);
  if (x->rank != 4 || b <= 0 || b > 65536)
    return imp_unsupported(im, "needs a rank-4 input and a blocksize "
                               "from 1 to 65536");
  int64_t N = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  bool to_space = !strcmp(n->op_type, "DepthToSpace");
  if (to_space ? c % (b * b) : (h % b || w % b))
    return imp_unsupported(im, "dimensions not divisible by the blocksize");
  if (to_space) {
    bool dcr = !strcmp(imp_attr_string(im, n, "mode", "DCR"), "DCR");
    int64_t s1[6] = {N, b, b, c / (b * b), h, w};
    int64_t s2[6] = {N, c / (b * b), b, b, h, w};
    int64_t p1[6] = {0, 3, 4, 1, 5, 2}, p2[6] = {0, 1, 4, 2, 5, 3};
    imp_value *t = imp_reshape(im, x, 6, dcr ? s1 : s2);
    t = transpose(im, t, dcr ? p1 : p2);
    int64_t o[4] = {N, c / (b * b), h * b, w * b};
    outs[0] = imp_reshape(im, t, 4, o);
    return 1;
  }
  int64_t s[6] = {N, c, h / b, b, w / b, b};
  int64_t p[6] = {0, 3, 5, 1, 2, 4};
  imp_value *t = transpose(im, imp_reshape(im, x, 6, s), p);
  int64_t o[4] = {N, c * b * b, h / b, w / b};
  outs[0] = imp_reshape(im, t, 4, o);
  return 1;
}

static int map_trilu(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                     int nins, imp_value **outs) {
  imp_value *x = ins[0];
  int64_t k = 0;
  if (nins > 1 && ins[1]) {
    int64_t kv[1];
    if (known_ints(im, ins[1], "the Trilu k", kv, 1) != 1)
      return imp_unsupported(im, "Trilu k is not one value");
    k = kv[0];
  }
  if (x->rank < 2)
    return imp_unsupported(im, "Trilu of rank %d", x->rank);
  int64_t d[2] = {x->dims[x->rank - 2], x->dims[x->rank - 1]};
  imp_tensor *m = imp_tensor_new(im, RAF_BOOL, 2, d);
  if (!m)
    return -1;
  bool upper = imp_attr_int(n, "upper", 1);
  for (int64_t i = 0; i < d[0]; i++)
    for (int64_t j = 0; j < d[1]; j++)
      imp_set_i64(m, i * d[1] + j, upper ? j - i >= k : j - i <= k);
  outs[0] = imp_where(im, imp_const_value(im, m), x,
                      imp_scalar(im, 0, x->dt));
  return 1;
}

/* --- reductions ----------------------------------------------------------- */

static int map_reduce(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  /* An ONNX reduction is pre (mul for a square), then the row's .raf
   * reduction, then post; it admits the element types all three admit. */
  static const struct {
    const char *onnx;
    raf_opcode pre, post;
    int axes_input_from;
  } rows[] = {
      {"ReduceSum", IMP_NO_OP, IMP_NO_OP, 13},
      {"ReduceMean", IMP_NO_OP, IMP_NO_OP, 18},
      {"ReduceMax", IMP_NO_OP, IMP_NO_OP, 18},
      {"ReduceMin", IMP_NO_OP, IMP_NO_OP, 18},
      {"ReduceL1", RAF_OP_ABS, IMP_NO_OP, 18},
      {"ReduceL2", RAF_OP_MUL, RAF_OP_SQRT, 18},
      {"ReduceSumSquare", RAF_OP_MUL, IMP_NO_OP, 18},
      {"ReduceLogSum", IMP_NO_OP, RAF_OP_LOG, 18},
      {"ReduceLogSumExp", RAF_OP_EXP, RAF_OP_LOG, 18}};
  int r = 0;
  while (strcmp(rows[r].onnx, n->op_type))
    r++;
  raf_opcode pre = rows[r].pre, op = im->row->raf, post = rows[r].post;
  imp_value *x = ins[0];
  int64_t axes[RAF_MAX_RANK];
  int na = -1;
  if (im->opset >= rows[r].axes_input_from) {
    if (nins > 1 && ins[1] &&
        (na = known_ints(im, ins[1], "the reduction axes", axes,
                         RAF_MAX_RANK)) < 0)
      return -1;
  } else {
    const int64_t *a = imp_attr_ints(n, "axes", &na);
    if (!a)
      na = -1;
    else if (na > RAF_MAX_RANK)
      return imp_unsupported(im, "too many axes");
    else if (na)
      memcpy(axes, a, sizeof(int64_t) * (size_t)na);
  }
  bool keep = imp_attr_int(n, "keepdims", 1);
  if (na == 0)
    na = -1;
  if (na < 0 && imp_attr_int(n, "noop_with_empty_axes", 0)) {
    outs[0] = x;
    return 1;
  }
  if ((pre != IMP_NO_OP && !imp_admits(im, x, pre)) ||
      !imp_admits(im, x, op) ||
      (post != IMP_NO_OP && !imp_admits(im, x, post)))
    return -1;
  if (pre == RAF_OP_MUL)
    x = imp_binary(im, "mul", x, x, x->dt);
  else if (pre != IMP_NO_OP)
    x = imp_unary(im, raf_op_table[pre].name, x);
  imp_value *y = imp_reduce(im, raf_op_table[op].name, x,
                            na < 0 ? NULL : axes, na < 0 ? 0 : na, keep);
  if (post != IMP_NO_OP)
    y = imp_unary(im, raf_op_table[post].name, y);
  outs[0] = y;
  return 1;
}

static int map_argmax(imp *im, const Onnx__NodeProto *n, imp_value **ins,
                      int nins, imp_value **outs) {
  (void)nins;
  imp_value *x = ins[0];
  int64_t axis = imp_attr_int(n, "axis", 0);
  int a = imp_norm_axis(im, axis, x->rank);
  if (a < 0)
    return -1;
  bool keep = imp_attr_int(n, "keepdims", 1);
  if (!strcmp(n->op_type, "ArgMin")) {
    if (!imp_is_float(x->dt))
      return imp_unsupported(im, "semantics differ: ArgMin of integers "
                                 "as argmax(neg(x)) overflows");
    x = imp_unary(im, "neg", x);
  }
  if (!imp_admits(im, x, im->row->raf))
    return -1;
  bool last = imp_attr_int(n, "select_last_index", 0);
  if (last) {
    /* The last largest is the first of the reversed axis. */
    int64_t b[RAF_MAX_RANK], e[RAF_MAX_RANK], s[RAF_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
      b[i] = i == a ? -1 : 0;
      e[i] = i == a ? -x->dims[i] - 1 : x->dims[i];
      s[i] = i == a ? -1 : 1;
    }
    x = imp_slice(im, x, b, e, s);
  }
  int64_t dims[RAF_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (i != a)
      dims[r++] = x->dims[i];
    else if (keep)
      dims[r++] = 1;
  imp_value *y = imp_emit(im, "argmax", &x, 1,
                          imp_fmt(im, "{axis = %lld%s}", (long long)axis,
                                  keep ? ", keepdims" : ""),
                          RAF_I64, r, dims);
  if (last)
    y = imp_binary(im, "sub", imp_scalar(im, (double)(x->dims[a] - 1), RAF_I64),
                   y, RAF_I64);
  outs[0] = y;
  return 1;
}

const imp_op imp_ops_shape[] = {
    {"Constant", map_constant, IMP_NO_OP, 0},
    {"Shape", map_shape, IMP_NO_OP, 1},
    {"Size", map_size, IMP_NO_OP, 1},
    {"ConstantOfShape", map_constant_of_shape, IMP_NO_OP, 1},
    {"EyeLike", map_eye_like, IMP_NO_OP, 1},
    {"Reshape", map_reshape, IMP_NO_OP, 1},
    {"Flatten", map_flatten, IMP_NO_OP, 1},
    {"Squeeze", map_squeeze, IMP_NO_OP, 1},
    {"Unsqueeze", map_unsqueeze, IMP_NO_OP, 1},
    {"Transpose", map_transpose, IMP_NO_OP, 1},
    {"Expand", map_expand, IMP_NO_OP, 2},
    {"Slice", map_slice, IMP_NO_OP, 1},
    {"Concat", map_concat, IMP_NO_OP, 1},
    {"Split", map_split, IMP_NO_OP, 1},
    {"Gather", map_gather, IMP_NO_OP, 2},
    {"Tile", map_tile, IMP_NO_OP, 2},
    {"DepthToSpace", map_depth_space, IMP_NO_OP, 1},
    {"SpaceToDepth", map_depth_space, IMP_NO_OP, 1},
    {"Trilu", map_trilu, IMP_NO_OP, 1},
    {"ReduceSum", map_reduce, RAF_OP_SUM, 1},
    {"ReduceMean", map_reduce, RAF_OP_MEAN, 1},
    {"ReduceMax", map_reduce, RAF_OP_MAX, 1},
    {"ReduceMin", map_reduce, RAF_OP_MIN, 1},
    {"ReduceL1", map_reduce, RAF_OP_SUM, 1},
    {"ReduceL2", map_reduce, RAF_OP_SUM, 1},
    {"ReduceSumSquare", map_reduce, RAF_OP_SUM, 1},
    {"ReduceLogSum", map_reduce, RAF_OP_SUM, 1},
    {"ReduceLogSumExp", map_reduce, RAF_OP_SUM, 1},
    {"ArgMax", map_argmax, RAF_OP_ARGMAX, 1},
    {"ArgMin", map_argmax, RAF_OP_ARGMAX, 1},
    {NULL, NULL, IMP_NO_OP, 0}};
