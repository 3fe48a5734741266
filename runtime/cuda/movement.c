/* movement.c: the cuda dialect's kernels for the ops that codegen does not
 * lower: transpose, concat, split, slice and slice_grad (strided copies,
 * kernels.h's raf_move), take and take_grad (an embedding's gather and
 * its deterministic scatter-add), f32 argmax, f32 layer_norm_grad and
 * dropout (cpu-ref's Philox mask, runtime/philox.h), launched from the
 * hand-written PTX of kernels.cu (raf_cuda_embedded_ptx("kernels")).
 *
 * The kernels are queued on the device's stream like codegen's; each
 * launch looks its function up in the module the cuda dialect loaded at
 * prepare (cuda_dialect.c: raf_cuda_hand_module). take's indices are
 * checked on the host, from a copy, before the launch, with cpu-ref's
 * message. Never run on a GPU: the launches are checked against the fake
 * driver, the descriptors by test/unit/test_cuda_move.c on the CPU.
 */
#include "runtime/cuda/movement.h"

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/module.h"
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Descriptors (pure; test_cuda_move.c) --------------------------------- */

static void contiguous(const int64_t *dims, int rank, int64_t *strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    strides[d] = s;
    s *= dims[d];
  }
}

bool raf_move_transpose(const int64_t *src_dims, int rank, const int *perm,
                        raf_move *m) {
  memset(m, 0, sizeof *m);
  if (rank > RAF_MOVE_MAX_RANK)
    return false;
  int64_t src_strides[RAF_MOVE_MAX_RANK];
  contiguous(src_dims, rank, src_strides);
  m->rank = rank;
  m->n = 1;
  for (int d = 0; d < rank; d++) {
    m->dims[d] = src_dims[perm[d]];
    m->src_strides[d] = src_strides[perm[d]];
    m->n *= m->dims[d];
  }
  contiguous(m->dims, rank, m->dst_strides);
  return true;
}

bool raf_move_slice(const int64_t *part_dims, const int64_t *whole_dims,
                    int rank, const int64_t *start, const int64_t *step,
                    bool into_whole, raf_move *m) {
  memset(m, 0, sizeof *m);
  if (rank > RAF_MOVE_MAX_RANK || rank < 0)
    return false;
  int64_t part[RAF_MOVE_MAX_RANK], whole[RAF_MOVE_MAX_RANK], off = 0;
  contiguous(part_dims, rank, part);
  contiguous(whole_dims, rank, whole);
  m->rank = rank;
  m->n = 1;
  for (int d = 0; d < rank; d++) {
    m->dims[d] = part_dims[d];
    m->n *= part_dims[d];
    off += start[d] * whole[d];
    whole[d] *= step[d];
  }
  if (m->n == 0)
    return true; /* nothing to copy; start may be past the end */
  memcpy(into_whole ? m->src_strides : m->dst_strides, part,
         sizeof part[0] * (size_t)rank);
  memcpy(into_whole ? m->dst_strides : m->src_strides, whole,
         sizeof whole[0] * (size_t)rank);
  *(into_whole ? &m->dst_off : &m->src_off) = off;
  return true;
}

/* A block is the slice of the whole that starts at `at` along the axis,
 * with steps of 1. */
bool raf_move_block(const int64_t *part_dims, const int64_t *whole_dims,
                    int rank, int axis, int64_t at, bool into_whole,
                    raf_move *m) {
  int64_t start[RAF_MOVE_MAX_RANK] = {0}, step[RAF_MOVE_MAX_RANK];
  if (rank > RAF_MOVE_MAX_RANK || axis < 0 || axis >= rank) {
    memset(m, 0, sizeof *m);
    return false;
  }
  for (int d = 0; d < rank; d++)
    step[d] = 1;
  start[axis] = at;
  return raf_move_slice(part_dims, whole_dims, rank, start, step, into_whole,
                        m);
}

/* ---- Launches ------------------------------------------------------------- */

/* Blocks of RAF_CUDA_BLOCK threads, enough to cover n once (the kernels stride, so
 * any count is correct), at most 65535 * 16. */
static raf_cuda_dims cover(int64_t n) {
  int64_t blocks = (n + RAF_CUDA_BLOCK - 1) / RAF_CUDA_BLOCK;
  if (blocks < 1)
    blocks = 1;
  if (blocks > 65535 * 16)
    blocks = 65535 * 16;
  return (raf_cuda_dims){{(unsigned)blocks, 1, 1}, {RAF_CUDA_BLOCK, 1, 1}, 0};
}

static raf_status launch(const raf_kernel *k, const char *name,
                         raf_cuda_dims dims, void **params) {
  raf_device *dev = raf_exec_device(k->ex);
  raf_cuda_module *m = raf_cuda_hand_module(k);
  CUfunction f;
  if (!m)
    return raf_kernel_fail(k, "the hand-written cuda kernels are not loaded");
  if (raf_cuda_module_function(dev, m, name, &f) != RAF_OK)
    return RAF_ERROR;
  return raf_cuda_launch(dev, f, name, &dims, params);
}

static raf_status move(const raf_kernel *k, void *dst, const void *src,
                       const raf_move *m) {
  if (m->n == 0)
    return RAF_OK;
  char name[32];
  snprintf(name, sizeof name, "raf_move_%d",
           raf_dtype_size(k->in[0]->type->dtype));
  raf_move copy = *m;
  void *params[] = {&dst, &src, &copy};
  return launch(k, name, cover(m->n), params);
}

static int norm_axis(int64_t axis, int rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  return a >= 0 && a < rank ? (int)a : -1;
}

raf_status raf_cuda_transpose(const raf_kernel *k) {
  const raf_type *t = k->in[0]->type;
  raf_attr_value perm;
  bool given = raf_stmt_attr(k->stmt, "perm", &perm);
  int p[RAF_MAX_RANK];
  for (int i = 0; i < t->rank; i++)
    p[i] = given ? norm_axis(perm.u.ints.v[i], t->rank) : t->rank - 1 - i;
  raf_move m;
  if (!raf_move_transpose(t->dims, t->rank, p, &m))
    return raf_kernel_fail(k, "rank %d is above the kernel's %d", t->rank,
                           RAF_MOVE_MAX_RANK);
  return move(k, k->out[0]->data, k->in[0]->data, &m);
}

/* concat (into_whole: each operand into the result) and split (each
 * result out of the operand): blocks along the axis, in order. */
static raf_status blocks(const raf_kernel *k, bool into_whole) {
  const raf_tensor *whole = into_whole ? k->out[0] : k->in[0];
  raf_tensor *const *parts = into_whole ? k->in : k->out;
  int nparts = into_whole ? k->nin : k->nout;
  int rank = whole->type->rank;
  int axis = norm_axis(raf_stmt_attr_int(k->stmt, "axis"), rank);
  if (axis < 0)
    return raf_kernel_fail(k, "axis out of range for rank %d", rank);
  int64_t at = 0;
  for (int i = 0; i < nparts; i++) {
    raf_move m;
    if (!raf_move_block(parts[i]->type->dims, whole->type->dims, rank, axis,
                        at, into_whole, &m))
      return raf_kernel_fail(k, "rank %d is above the kernel's %d", rank,
                             RAF_MOVE_MAX_RANK);
    raf_status rc = into_whole ? move(k, whole->data, parts[i]->data, &m)
                               : move(k, parts[i]->data, whole->data, &m);
    if (rc != RAF_OK)
      return rc;
    at += parts[i]->type->dims[axis];
  }
  return RAF_OK;
}

raf_status raf_cuda_concat(const raf_kernel *k) { return blocks(k, true); }
raf_status raf_cuda_split(const raf_kernel *k) { return blocks(k, false); }

/* slice (whole = the operand) and slice_grad (whole = the result, zeros
 * first): the window of begin, end and strides, as raf_slice_range reads
 * them. */
static raf_status window(const raf_kernel *k, bool into_whole) {
  const raf_tensor *whole = into_whole ? k->out[0] : k->in[0];
  const raf_tensor *part = into_whole ? k->in[0] : k->out[0];
  int rank = whole->type->rank;
  raf_attr_value begin, end, strides;
  bool stepped = raf_stmt_attr(k->stmt, "strides", &strides);
  if (!raf_stmt_attr(k->stmt, "begin", &begin) ||
      !raf_stmt_attr(k->stmt, "end", &end) || begin.u.ints.n != rank ||
      end.u.ints.n != rank || (stepped && strides.u.ints.n != rank))
    return raf_kernel_fail(k, "begin, end and strides need %d entries", rank);
  int64_t start[RAF_MAX_RANK], step[RAF_MAX_RANK];
  for (int d = 0; d < rank; d++) {
    step[d] = stepped ? strides.u.ints.v[d] : 1;
    if (step[d] == 0)
      return raf_kernel_fail(k, "strides must be nonzero");
    (void)raf_slice_range(whole->type->dims[d], begin.u.ints.v[d],
                          end.u.ints.v[d], step[d], &start[d]);
  }
  raf_move m;
  if (!raf_move_slice(part->type->dims, whole->type->dims, rank, start, step,
                      into_whole, &m))
    return raf_kernel_fail(k, "rank %d is above the kernel's %d", rank,
                           RAF_MOVE_MAX_RANK);
  if (into_whole &&
      raf_device_memset(raf_exec_device(k->ex), k->out[0]->data, 0,
                        k->out[0]->nbytes) != RAF_OK)
    return RAF_ERROR;
  return move(k, k->out[0]->data, k->in[0]->data, &m);
}

raf_status raf_cuda_slice(const raf_kernel *k) { return window(k, false); }
raf_status raf_cuda_slice_grad(const raf_kernel *k) { return window(k, true); }

/* The indices on the host, checked as cpu-ref checks them (in [-dim,
 * dim)); RAF_ERROR reported at the statement. */
static raf_status check_indices(const raf_kernel *k, const raf_tensor *ix,
                                int axis, int64_t dim) {
  void *staged = NULL;
  const void *data = raf_exec_host_data(k->ex, ix, &staged);
  if (!data)
    return RAF_ERROR;
  raf_status rc = RAF_OK;
  for (int64_t i = 0; i < ix->type->numel && rc == RAF_OK; i++) {
    int64_t x = raf_elem_get_i64(ix->type->dtype, data, i);
    if (x >= -dim && x < dim)
      continue;
    char at[RAF_MAX_RANK * 24 + 8] = "";
    int64_t rest = i, pos[RAF_MAX_RANK];
    for (int d = ix->type->rank - 1; d >= 0; d--) {
      pos[d] = rest % ix->type->dims[d];
      rest /= ix->type->dims[d];
    }
    size_t len = 0;
    for (int d = 0; d < ix->type->rank; d++)
      len += (size_t)snprintf(at + len, sizeof at - len, "%s%lld",
                              d ? "," : "", (long long)pos[d]);
    rc = raf_kernel_fail(k, "index %lld (indices[%s]) is out of bounds for "
                         "axis %d with size %lld", (long long)x, at, axis,
                         (long long)dim);
  }
  free(staged);
  return rc;
}

/* take and take_grad's view: the table as [outer, dim, inner]. */
static raf_status take_view(const raf_kernel *k, const raf_type *table,
                            int64_t *outer, int64_t *dim, int64_t *inner,
                            int *axis) {
  *axis = norm_axis(raf_stmt_attr_int(k->stmt, "axis"), table->rank);
  if (*axis < 0)
    return raf_kernel_fail(k, "axis out of range for rank %d", table->rank);
  *outer = *inner = 1;
  for (int d = 0; d < *axis; d++)
    *outer *= table->dims[d];
  for (int d = *axis + 1; d < table->rank; d++)
    *inner *= table->dims[d];
  *dim = table->dims[*axis];
  return RAF_OK;
}

static bool index_dtype_ok(raf_dtype dt) {
  return dt == RAF_I64 || dt == RAF_I32;
}

/* What take and take_grad share: the view of `table` (take's operand,
 * take_grad's result) around the axis, and the indices (k->in[1]) checked
 * as cpu-ref checks them. */
static raf_status take_prepare(const raf_kernel *k, const raf_type *table,
                               int64_t *outer, int64_t *dim, int64_t *inner) {
  const raf_tensor *ix = k->in[1];
  int axis;
  if (take_view(k, table, outer, dim, inner, &axis) != RAF_OK)
    return RAF_ERROR;
  if (!index_dtype_ok(ix->type->dtype))
    return raf_kernel_fail(k, "%s indices: the cuda kernel takes i64 and i32",
                           raf_dtype_name(ix->type->dtype));
  return check_indices(k, ix, axis, *dim);
}

raf_status raf_cuda_take(const raf_kernel *k) {
  const raf_tensor *ix = k->in[1];
  int64_t outer, dim, inner, nidx = ix->type->numel;
  if (take_prepare(k, k->in[0]->type, &outer, &dim, &inner) != RAF_OK)
    return RAF_ERROR;
  if (k->out[0]->type->numel == 0)
    return RAF_OK;
  char name[32];
  snprintf(name, sizeof name, "raf_take_%d",
           raf_dtype_size(k->in[0]->type->dtype));
  void *dst = k->out[0]->data, *table = k->in[0]->data, *idx = ix->data;
  int idx32 = ix->type->dtype == RAF_I32;
  void *params[] = {&dst, &table, &idx, &idx32, &outer, &nidx, &dim, &inner};
  return launch(k, name, cover(k->out[0]->type->numel), params);
}

raf_status raf_cuda_take_grad(const raf_kernel *k) {
  const raf_tensor *ix = k->in[1];
  int64_t outer, dim, inner, nidx = ix->type->numel;
  if (take_prepare(k, k->out[0]->type, &outer, &dim, &inner) != RAF_OK)
    return RAF_ERROR;
  if (k->out[0]->type->numel == 0)
    return RAF_OK;
  void *dst = k->out[0]->data, *dy = k->in[0]->data, *idx = ix->data;
  int idx32 = ix->type->dtype == RAF_I32;
  int64_t rows = outer * dim;
  raf_cuda_dims dims = {{(unsigned)(rows < 65535 * 16 ? rows : 65535 * 16),
                         1, 1},
                        {inner >= RAF_CUDA_BLOCK ? RAF_CUDA_BLOCK : 32u, 1, 1},
                        0};
  void *params[] = {&dst, &dy, &idx, &idx32, &outer, &nidx, &dim, &inner};
  return launch(k, "raf_take_grad_f32", dims, params);
}

raf_status raf_cuda_argmax(const raf_kernel *k) {
  const raf_type *xt = k->in[0]->type;
  int axis = norm_axis(raf_stmt_attr_int(k->stmt, "axis"), xt->rank);
  if (axis < 0)
    return raf_kernel_fail(k, "axis out of range for rank %d", xt->rank);
  int64_t outer = 1, dim = xt->dims[axis], inner = 1;
  for (int d = 0; d < axis; d++)
    outer *= xt->dims[d];
  for (int d = axis + 1; d < xt->rank; d++)
    inner *= xt->dims[d];
  if (outer * inner == 0)
    return RAF_OK;
  void *dst = k->out[0]->data, *x = k->in[0]->data;
  void *params[] = {&dst, &x, &outer, &dim, &inner};
  return launch(k, "raf_argmax_f32", cover(outer * inner), params);
}

/* layer_norm_grad in f32 (kernels.cu): the rows' dx and statistics, then
 * the columns' dgamma and dbeta, with 2 * rows floats of statistics (each
 * row's mean and rstd) on the device between them. */
raf_status raf_cuda_layer_norm_grad(const raf_kernel *k) {
  const raf_type *xt = k->in[1]->type;
  int axis = norm_axis(raf_stmt_attr_int(k->stmt, "axis"), xt->rank);
  if (axis < 0)
    return raf_kernel_fail(k, "axis out of range for rank %d", xt->rank);
  int64_t n = 1;
  for (int d = axis; d < xt->rank; d++)
    n *= xt->dims[d];
  int64_t rows = n ? xt->numel / n : 0;
  if (rows == 0 || n == 0)
    return RAF_OK;
  raf_device *dev = raf_exec_device(k->ex);
  void *stats = NULL;
  /* The device's stream-ordered scratch, not an allocation freed after
   * the launches (cuMemFree waits for the whole device). */
  if (raf_cuda_scratch(dev, sizeof(float) * 2 * (size_t)rows, &stats) !=
      RAF_OK)
    return raf_kernel_fail(k, "out of %s memory for the rows' statistics",
                           raf_device_name(dev));
  raf_attr_value eps_attr;
  double eps = raf_stmt_attr(k->stmt, "eps", &eps_attr) ? eps_attr.u.f : 1e-5;
  void *dx = k->out[0]->data, *dgamma = k->out[1]->data,
       *dbeta = k->out[2]->data, *dy = k->in[0]->data, *x = k->in[1]->data,
       *gamma = k->in[2]->data;
  void *rows_params[] = {&dx, &stats, &dy, &x, &gamma, &rows, &n, &eps};
  raf_status rc = launch(k, "raf_layer_norm_grad_rows_f32", cover(rows),
                         rows_params);
  void *col_params[] = {&dgamma, &dbeta, &dy, &x, &stats, &rows, &n};
  if (rc == RAF_OK)
    rc = launch(k, "raf_layer_norm_grad_params_f32", cover(n), col_params);
  return rc;
}

/* dropout: p = 0 is a copy; else kernels.cu's mask and scale, the key
 * read on the device. */
raf_status raf_cuda_dropout(const raf_kernel *k) {
  double p = raf_stmt_attr_float(k->stmt, "p");
  raf_device *dev = raf_exec_device(k->ex);
  int64_t n = k->out[0]->type->numel;
  if (p == 0 || n == 0)
    return raf_device_copy(dev, k->out[0]->data, k->in[0]->data,
                           k->out[0]->nbytes, RAF_COPY_DEVICE_TO_DEVICE);
  char name[32];
  snprintf(name, sizeof name, "raf_dropout_%s",
           raf_dtype_name(k->in[0]->type->dtype));
  void *y = k->out[0]->data, *x = k->in[0]->data, *key = k->in[1]->data;
  int64_t nkey = k->in[1]->type->numel;
  float scale = (float)(1.0 / (1.0 - p));
  void *params[] = {&y, &x, &key, &nkey, &n, &p, &scale};
  return launch(k, name, cover(n), params);
}
