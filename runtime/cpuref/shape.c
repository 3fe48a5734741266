/* shape.c: cpu-ref kernels for the ops that move elements without changing
 * them: transpose, broadcast_to, slice, concat, split and take. They admit
 * every dtype and copy elements by size (1, 2, 4 or 8 bytes), never
 * converting. Shapes, as ir/infer.c infers them:
 *
 * transpose(x) {perm}: result dim i is x's dim perm[i] (negative entries
 * count from the end); no perm reverses the dims, as NumPy's transpose.
 *
 * broadcast_to(x) {shape}: the result has exactly `shape`; x's dims,
 * right-aligned, are equal to shape's or 1 (NumPy's one-way rules).
 *
 * slice(x) {begin, end, strides}: per dim, Python's range(dim)[b:e:s]
 * (NumPy and ONNX Slice): negative b and e count from the end, then clamp
 * to [0, dim] for s > 0 and to [-1, dim - 1] for s < 0; the result dim is
 * the number of steps from b toward e, and element i reads b + i * s.
 * No strides means every step is 1.
 *
 * concat(a, b, ...) {axis}: operands equal but along `axis`; the result's
 * axis is the sum. split(x) {axis, sections = N | sizes = [..]}: the
 * inverse, N equal parts or parts of the given sizes, one result each.
 *
 * take(table, indices) {axis}: NumPy's take, the result
 * table.shape[:axis] + indices.shape + table.shape[axis+1:]; an index in
 * [-dim, 0) counts from the end (as NumPy and ONNX Gather); any other
 * index outside [0, dim) is an error naming it and the bound, reported
 * before anything is written.
 *
 * transpose, broadcast_to, slice and take are all "result element i reads
 * source element off(i)" where off is affine in the result's index (take:
 * per index). The result is written in C order, over flat ranges of a
 * fixed grain in parallel; within a range, runs along the innermost dim
 * are one memcpy when the source is contiguous there, else a loop
 * specialised to the element size. Dims of size 1 are dropped and dims
 * the source reads contiguously are merged first, so the runs are as long
 * as they can be. When the source is contiguous along another result dim
 * but not the innermost (a transposition), the result is copied in square
 * tiles of those two dims instead, so that both sides stay in cache.
 * concat and split copy contiguous row segments. Every result element is
 * written once from one source element, so results do not depend on the
 * thread count.
 */
#include "runtime/cpuref/cpuref.h"

#include <stdio.h>
#include <string.h>

/* Result elements per parallel chunk. */
#define GRAIN ((int64_t)1 << 16)

/* ---- Copies --------------------------------------------------------------- */

/* n elements of `size` bytes from src, `stride` elements apart, to dst
 * contiguously. */
#define STRIDED(SIZE)                                                          \
  for (int64_t i = 0; i < n; i++)                                              \
    memcpy(dst + i * SIZE, src + i * stride * SIZE, SIZE);

static void copy_run(char *dst, const char *src, int64_t n, int64_t stride,
                     size_t size) {
  if (stride == 1) {
    memcpy(dst, src, (size_t)n * size);
    return;
  }
  switch (size) {
  case 1: STRIDED(1) break;
  case 2: STRIDED(2) break;
  case 4: STRIDED(4) break;
  case 8: STRIDED(8) break;
  default:
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + (size_t)i * size, src + i * stride * (int64_t)size, size);
    break;
  }
}

/* ---- Affine gathers: transpose, broadcast_to, slice ----------------------- */

/* Result element at index (i_0, .., i_{rank-1}) reads the source element
 * at src + sum(i_d * strides[d]) (in elements). */
typedef struct affine_job {
  int rank;
  int64_t dims[RAF_MAX_RANK], strides[RAF_MAX_RANK];
  const char *src;
  char *dst;
  size_t size;
} affine_job;

/* Drops size-1 dims and merges neighbours the source reads as one dim
 * (stride[d] == stride[d + 1] * dims[d + 1], broadcast dims included);
 * leaves at least one dim. */
static void affine_simplify(affine_job *j) {
  int r = 0;
  for (int d = 0; d < j->rank; d++) {
    if (j->dims[d] == 1)
      continue;
    if (r > 0 && j->strides[r - 1] == j->strides[d] * j->dims[d]) {
      j->dims[r - 1] *= j->dims[d];
      j->strides[r - 1] = j->strides[d];
      continue;
    }
    j->dims[r] = j->dims[d];
    j->strides[r] = j->strides[d];
    r++;
  }
  if (r == 0) {
    j->dims[0] = 1;
    j->strides[0] = 1;
    r = 1;
  }
  j->rank = r;
}

static void affine_range(void *data, int64_t begin, int64_t end) {
  const affine_job *j = data;
  const int last = j->rank - 1;
  const int64_t *dims = j->dims, *strides = j->strides;
  const int64_t size = (int64_t)j->size;
  int64_t idx[RAF_MAX_RANK], off = 0, rest = begin;
  for (int d = last; d >= 0; d--) {
    idx[d] = rest % dims[d];
    rest /= dims[d];
    off += idx[d] * strides[d];
  }
  for (int64_t pos = begin; pos < end;) {
    int64_t n = dims[last] - idx[last];
    if (n > end - pos)
      n = end - pos;
    copy_run(j->dst + pos * size, j->src + off * size, n, strides[last],
             j->size);
    pos += n;
    if (pos >= end)
      break;
    /* The run ended the innermost dim: carry into the outer ones. */
    off -= idx[last] * strides[last];
    idx[last] = 0;
    for (int d = last - 1; d >= 0; d--) {
      off += strides[d];
      if (++idx[d] < dims[d])
        break;
      off -= strides[d] * dims[d];
      idx[d] = 0;
    }
  }
}

/* A transposition: the source is contiguous along result dim p but not
 * along the innermost one, so runs along the innermost dim would read one
 * element per cache line. The result is copied instead in TILE x TILE
 * tiles of (dim p, innermost dim), which both sides touch as a few lines.
 * The unit of parallel work is a tile: tiles of the innermost dim vary
 * fastest, then of dim p, then the other dims in C order. */
enum { TILE = 32 };

typedef struct tiled_job {
  const affine_job *a;
  int p;
  int64_t tiles_last, tiles_p;
  int64_t out_strides[RAF_MAX_RANK]; /* the result's, C order */
} tiled_job;

#define TILE_COPY(SIZE)                                                        \
  for (int64_t u = u0; u < u1; u++)                                            \
    for (int64_t v = v0; v < v1; v++)                                          \
      memcpy(dst + (u * ostride_p + v) * SIZE,                                 \
             src + (u + v * stride_last) * SIZE, SIZE);

static void tiled_range(void *data, int64_t begin, int64_t end) {
  const tiled_job *t = data;
  const affine_job *j = t->a;
  const int last = j->rank - 1, p = t->p;
  const int64_t ostride_p = t->out_strides[p], stride_last = j->strides[last];
  const size_t size = j->size;
  for (int64_t b = begin; b < end; b++) {
    int64_t rest = b;
    int64_t v0 = rest % t->tiles_last * TILE;
    rest /= t->tiles_last;
    int64_t u0 = rest % t->tiles_p * TILE;
    rest /= t->tiles_p;
    int64_t soff = 0, doff = 0;
    for (int d = last - 1; d >= 0; d--) {
      if (d == p)
        continue;
      int64_t i = rest % j->dims[d];
      rest /= j->dims[d];
      soff += i * j->strides[d];
      doff += i * t->out_strides[d];
    }
    int64_t u1 = u0 + TILE < j->dims[p] ? u0 + TILE : j->dims[p];
    int64_t v1 = v0 + TILE < j->dims[last] ? v0 + TILE : j->dims[last];
    const char *src = j->src + soff * (int64_t)size;
    char *dst = j->dst + doff * (int64_t)size;
    switch (size) {
    case 1: TILE_COPY(1) break;
    case 2: TILE_COPY(2) break;
    case 4: TILE_COPY(4) break;
    default: TILE_COPY(8) break;
    }
  }
}

/* Runs j (dims and strides set for the result's rank) over k's result. */
static raf_status affine_run(const raf_kernel *k, affine_job *j) {
  const raf_tensor *out = k->out[0];
  j->dst = out->data;
  j->size = (size_t)raf_dtype_size(out->type->dtype);
  if (out->type->numel == 0)
    return RAF_OK;
  affine_simplify(j);
  const int last = j->rank - 1;
  int p = -1;
  for (int d = 0; d < last && j->strides[last] != 0 && j->strides[last] != 1;
       d++)
    if (j->strides[d] == 1 && j->dims[d] >= TILE / 4)
      p = d;
  if (p < 0 || j->dims[last] < TILE / 4 || j->size > 8) {
    raf_kernel_parallel(k, out->type->numel, GRAIN, affine_range, j);
    return RAF_OK;
  }
  tiled_job t = {.a = j, .p = p};
  t.tiles_last = (j->dims[last] + TILE - 1) / TILE;
  t.tiles_p = (j->dims[p] + TILE - 1) / TILE;
  int64_t ntiles = out->type->numel / j->dims[last] / j->dims[p] *
                   t.tiles_last * t.tiles_p;
  t.out_strides[last] = 1;
  for (int d = last - 1; d >= 0; d--)
    t.out_strides[d] = t.out_strides[d + 1] * j->dims[d + 1];
  raf_kernel_parallel(k, ntiles, GRAIN / (TILE * TILE), tiled_range, &t);
  return RAF_OK;
}

/* An int-list attribute: as written or the default; false when absent. A
 * written value of another kind (the empty list) reads as empty, as in
 * ir/infer.c. */
static bool ints_attr(const raf_stmt *s, const char *name, const int64_t **v,
                      int *n) {
  raf_attr_value a;
  if (!raf_stmt_attr(s, name, &a))
    return false;
  const raf_attr *w = raf_attrs_find(&s->attrs, name);
  if (w && w->kind != RAF_ATTR_INTS) {
    *v = NULL;
    *n = 0;
    return true;
  }
  *v = a.u.ints.v;
  *n = a.u.ints.n;
  return true;
}

/* axis in [-rank, rank) as a dim index, or -1. */
static int norm_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    return -1;
  return (int)(axis < 0 ? axis + rank : axis);
}

/* The result must have the type inference gave; a kernel checks what it
 * relies on rather than reading out of bounds. */
static raf_status shape_mismatch(const raf_kernel *k, int i,
                                 const int64_t *dims, int rank) {
  const raf_type *t = k->out[i]->type;
  bool same = t->rank == rank;
  for (int d = 0; same && d < rank; d++)
    same = t->dims[d] == dims[d];
  if (same)
    return RAF_OK;
  char buf[128];
  raf_type_str(t, buf, sizeof buf);
  return raf_kernel_fail(k, "result %d has type %s, which its operands and "
                         "attributes do not give", i, buf);
}

raf_status raf_cpuref_transpose(const raf_kernel *k) {
  const raf_type *x = k->in[0]->type;
  const int64_t *perm = NULL;
  int n = 0, rank = x->rank;
  int64_t xs[RAF_MAX_RANK], dims[RAF_MAX_RANK];
  bool given = ints_attr(k->stmt, "perm", &perm, &n), seen[RAF_MAX_RANK] = {0};
  if (given && n != rank)
    return raf_kernel_fail(k, "perm has %d entries for rank %d", n, rank);
  raf_contiguous_strides(x, xs);
  affine_job j = {.rank = rank, .src = k->in[0]->data};
  for (int i = 0; i < rank; i++) {
    int a = given ? norm_axis(perm[i], rank) : rank - 1 - i;
    if (a < 0 || seen[a])
      return raf_kernel_fail(k, "perm entry %lld is out of range or repeated",
                             (long long)perm[i]);
    seen[a] = true;
    dims[i] = j.dims[i] = x->dims[a];
    j.strides[i] = xs[a];
  }
  if (shape_mismatch(k, 0, dims, rank))
    return RAF_ERROR;
  return affine_run(k, &j);
}

raf_status raf_cpuref_broadcast_to(const raf_kernel *k) {
  const raf_type *x = k->in[0]->type, *out = k->out[0]->type;
  bool ok = out->rank >= x->rank;
  for (int i = 1; ok && i <= x->rank; i++) {
    int64_t d = x->dims[x->rank - i];
    ok = d == 1 || d == out->dims[out->rank - i];
  }
  if (!ok) {
    char a[128], b[128];
    raf_type_str(x, a, sizeof a);
    raf_type_str(out, b, sizeof b);
    return raf_kernel_fail(k, "cannot broadcast %s to %s", a, b);
  }
  affine_job j = {.rank = out->rank, .src = k->in[0]->data};
  memcpy(j.dims, out->dims, (size_t)out->rank * sizeof *j.dims);
  raf_broadcast_strides(x, out, j.strides);
  return affine_run(k, &j);
}

raf_status raf_cpuref_slice(const raf_kernel *k) {
  const raf_type *x = k->in[0]->type;
  const int64_t *b, *e, *s = NULL;
  int nb = 0, ne = 0, ns = 0, rank = x->rank;
  int64_t xs[RAF_MAX_RANK], dims[RAF_MAX_RANK], base = 0;
  if (!ints_attr(k->stmt, "begin", &b, &nb) ||
      !ints_attr(k->stmt, "end", &e, &ne) || nb != rank || ne != rank ||
      (ints_attr(k->stmt, "strides", &s, &ns) && ns != rank))
    return raf_kernel_fail(k, "begin, end and strides need %d entries", rank);
  raf_contiguous_strides(x, xs);
  affine_job j = {.rank = rank};
  for (int d = 0; d < rank; d++) {
    int64_t dim = x->dims[d], step = s ? s[d] : 1;
    if (step == 0)
      return raf_kernel_fail(k, "strides must be nonzero");
    int64_t bd, len = raf_slice_range(dim, b[d], e[d], step, &bd);
    dims[d] = j.dims[d] = len;
    /* With len > 1, |step| < dim, so the product cannot overflow. */
    j.strides[d] = len > 1 ? step * xs[d] : 0;
    if (len > 0)
      base += bd * xs[d]; /* 0 <= bd < dim */
  }
  if (shape_mismatch(k, 0, dims, rank))
    return RAF_ERROR;
  j.src = (const char *)k->in[0]->data +
          base * raf_dtype_size(x->dtype);
  return affine_run(k, &j);
}

/* ---- concat and split ------------------------------------------------------ */

/* A tensor `whole` is the concatenation along `axis` of `pieces`: viewed
 * as [outer, row] with row = whole's axis dim * inner (inner: the product
 * of the dims after axis), piece p fills seg(p) = its axis dim * inner
 * consecutive columns of each row, after those of pieces 0..p-1. Ranges
 * are of whole's elements; `into_whole` copies the pieces into whole
 * (concat), else whole into the pieces (split). */
typedef struct blocks_job {
  char *whole;
  raf_tensor *const *pieces;
  int npieces, axis;
  int64_t row, inner;
  size_t size;
  bool into_whole;
} blocks_job;

static int64_t seg(const blocks_job *j, int p) {
  return j->pieces[p]->type->dims[j->axis] * j->inner;
}

static void blocks_range(void *data, int64_t begin, int64_t end) {
  const blocks_job *j = data;
  int64_t size = (int64_t)j->size;
  int64_t r = begin / j->row, c = begin % j->row, col = 0;
  int p = 0;
  /* The piece holding column c (columns [col, col + seg(p))). */
  while (c >= col + seg(j, p))
    col += seg(j, p++);
  for (int64_t pos = begin; pos < end;) {
    int64_t in = c - col, n = seg(j, p) - in;
    if (n > end - pos)
      n = end - pos;
    char *w = j->whole + pos * size;
    char *q = (char *)j->pieces[p]->data + (r * seg(j, p) + in) * size;
    if (j->into_whole)
      memcpy(w, q, (size_t)(n * size));
    else
      memcpy(q, w, (size_t)(n * size));
    pos += n;
    c += n;
    /* On to the next piece with any columns, or the next row. */
    while (pos < end && c >= col + seg(j, p)) {
      col += seg(j, p);
      if (++p == j->npieces) {
        p = 0;
        c = col = 0;
        r++;
      }
    }
  }
}

static raf_status blocks(const raf_kernel *k, raf_tensor *whole,
                         raf_tensor *const *pieces, int npieces,
                         bool into_whole) {
  const raf_type *w = whole->type;
  int64_t axis_attr = raf_stmt_attr_int(k->stmt, "axis");
  int axis = norm_axis(axis_attr, w->rank);
  if (axis < 0)
    return raf_kernel_fail(k, "axis %lld is out of range for rank %d",
                           (long long)axis_attr, w->rank);
  int64_t inner = 1, total = 0;
  for (int d = axis + 1; d < w->rank; d++)
    inner *= w->dims[d];
  for (int p = 0; p < npieces; p++) {
    const raf_type *t = pieces[p]->type;
    bool ok = t->rank == w->rank;
    for (int d = 0; ok && d < w->rank; d++)
      ok = d == axis || t->dims[d] == w->dims[d];
    if (!ok)
      return raf_kernel_fail(k, "%s %d does not fit along axis %d",
                             into_whole ? "operand" : "result", p, axis);
    total += t->dims[axis];
  }
  if (total != w->dims[axis])
    return raf_kernel_fail(k, "the parts' sizes along axis %d sum to %lld, "
                           "not %lld", axis, (long long)total,
                           (long long)w->dims[axis]);
  if (w->numel == 0)
    return RAF_OK;
  blocks_job j = {whole->data, pieces, npieces, axis, w->dims[axis] * inner,
                  inner, (size_t)raf_dtype_size(w->dtype), into_whole};
  raf_kernel_parallel(k, w->numel, GRAIN, blocks_range, &j);
  return RAF_OK;
}

raf_status raf_cpuref_concat(const raf_kernel *k) {
  return blocks(k, k->out[0], k->in, k->nin, true);
}

raf_status raf_cpuref_split(const raf_kernel *k) {
  return blocks(k, k->in[0], k->out, k->nout, false);
}

/* ---- take ------------------------------------------------------------------ */

static int64_t index_at(raf_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case RAF_I64: return ((const int64_t *)p)[i];
  case RAF_I32: return ((const int32_t *)p)[i];
  case RAF_I8: return ((const int8_t *)p)[i];
  case RAF_U8: return ((const uint8_t *)p)[i];
  default: return raf_elem_get_i64(dt, p, i);
  }
}

/* The result viewed as [outer, nidx, inner] reads the table viewed as
 * [outer, dim, inner]: result[o, i, c] = table[o, indices[i], c]. */
typedef struct take_job {
  const char *table;
  char *dst;
  const void *indices;
  raf_dtype idt;
  int64_t nidx, dim, inner;
  size_t size;
} take_job;

/* take with inner == 1: result[o, i] = table[o, indices[i]], element by
 * element. */
#define TAKE_ELEMS(SIZE)                                                       \
  for (int64_t i = i0; i < i1; i++) {                                          \
    int64_t x = index_at(j->idt, j->indices, i);                               \
    memcpy(dst + (i - i0) * SIZE, row + (x < 0 ? x + j->dim : x) * SIZE,      \
           SIZE);                                                              \
  }

static void take_elems(void *data, int64_t begin, int64_t end) {
  const take_job *j = data;
  int64_t size = (int64_t)j->size;
  for (int64_t pos = begin; pos < end;) {
    int64_t o = pos / j->nidx, i0 = pos % j->nidx;
    int64_t i1 = end - pos < j->nidx - i0 ? i0 + (end - pos) : j->nidx;
    const char *row = j->table + o * j->dim * size;
    char *dst = j->dst + pos * size;
    switch (size) {
    case 1: TAKE_ELEMS(1) break;
    case 2: TAKE_ELEMS(2) break;
    case 4: TAKE_ELEMS(4) break;
    default: TAKE_ELEMS(8) break;
    }
    pos += i1 - i0;
  }
}

static void take_range(void *data, int64_t begin, int64_t end) {
  const take_job *j = data;
  int64_t size = (int64_t)j->size, inner = j->inner;
  int64_t c = begin % inner, i = begin / inner % j->nidx,
          o = begin / inner / j->nidx;
  for (int64_t pos = begin; pos < end;) {
    int64_t n = inner - c;
    if (n > end - pos)
      n = end - pos;
    int64_t x = index_at(j->idt, j->indices, i);
    if (x < 0)
      x += j->dim; /* checked before: now in [0, dim) */
    memcpy(j->dst + pos * size,
           j->table + ((o * j->dim + x) * inner + c) * size,
           (size_t)(n * size));
    pos += n;
    c = 0;
    if (++i == j->nidx) {
      i = 0;
      o++;
    }
  }
}

raf_status raf_cpuref_take(const raf_kernel *k) {
  const raf_type *t = k->in[0]->type, *ix = k->in[1]->type;
  int64_t axis_attr = raf_stmt_attr_int(k->stmt, "axis");
  int axis = norm_axis(axis_attr, t->rank);
  if (axis < 0)
    return raf_kernel_fail(k, "axis %lld is out of range for rank %d",
                           (long long)axis_attr, t->rank);
  int64_t dims[RAF_MAX_RANK], inner = 1, dim = t->dims[axis];
  int rank = 0;
  if (t->rank - 1 + ix->rank > RAF_MAX_RANK)
    return raf_kernel_fail(k, "the result's rank exceeds %d", RAF_MAX_RANK);
  for (int d = 0; d < axis; d++)
    dims[rank++] = t->dims[d];
  for (int d = 0; d < ix->rank; d++)
    dims[rank++] = ix->dims[d];
  for (int d = axis + 1; d < t->rank; d++)
    inner *= dims[rank++] = t->dims[d];
  if (shape_mismatch(k, 0, dims, rank))
    return RAF_ERROR;
  /* Every index is checked, in order, before anything is copied. */
  raf_dtype idt = ix->dtype;
  for (int64_t i = 0; i < ix->numel; i++) {
    int64_t x = index_at(idt, k->in[1]->data, i);
    if (x >= -dim && x < dim)
      continue;
    char at[RAF_MAX_RANK * 24 + 8] = "";
    int64_t rest = i, pos[RAF_MAX_RANK];
    for (int d = ix->rank - 1; d >= 0; d--) {
      pos[d] = rest % ix->dims[d];
      rest /= ix->dims[d];
    }
    size_t len = 0;
    for (int d = 0; d < ix->rank; d++)
      len += (size_t)snprintf(at + len, sizeof at - len, "%s%lld",
                              d ? "," : "", (long long)pos[d]);
    return raf_kernel_fail(k, "index %lld (indices[%s]) is out of bounds for "
                           "axis %d with size %lld", (long long)x, at, axis,
                           (long long)dim);
  }
  const raf_tensor *out = k->out[0];
  if (out->type->numel == 0)
    return RAF_OK;
  take_job j = {k->in[0]->data, out->data, k->in[1]->data, idt, ix->numel,
                dim, inner, (size_t)raf_dtype_size(t->dtype)};
  raf_kernel_parallel(k, out->type->numel, GRAIN,
                      inner == 1 ? take_elems : take_range, &j);
  return RAF_OK;
}
