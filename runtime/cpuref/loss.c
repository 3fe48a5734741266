/* loss.c: cpu-ref kernels for cross_entropy and mse_loss, and the
 * single-process collectives.
 *
 * cross_entropy(logits, labels): logits [.., C] of any rank >= 1, labels
 * [..] (logits' shape without the last dim; a scalar for logits [C]) of any
 * integer type. Row i's loss is logsumexp(logits_i) - logits_i[labels_i],
 * the logsumexp made stable by subtracting the row's maximum. As PyTorch: a
 * label equal to `ignore_index` gives loss 0 and does not count; any other
 * label outside [0, C) is an error located at the statement, naming the
 * first such label. reduction "none" gives the per-row losses (labels'
 * shape), "sum" their sum, "mean" their sum over the number of rows not
 * ignored (NaN when there is none, as PyTorch).
 *
 * mse_loss(a, b): a and b of one shape; (a - b)^2 per element ("none"),
 * summed ("sum") or averaged over every element ("mean"; NaN when empty).
 *
 * Numerics: elementwise math (exp, a - b, squares) runs in the working type
 * of cpuref.h, double for f64 and float for f32/f16/bf16; every
 * accumulation (the softmax denominators, the sums of losses) runs in double
 * and is rounded once to the result's type. Rows (cross_entropy) and chunks
 * (mse_loss "none") are computed in parallel, each by one loop in a fixed
 * order, and the scalar reductions add in ascending index order on one
 * thread, so results do not depend on the thread count.
 *
 * all_reduce, reduce_scatter, all_gather, all_slice: in a single process
 * a world of one rank is all it can run; there every collective is the
 * identity (the sum or mean over one rank is x itself, and scattering or
 * gathering over one rank keeps the shape). A world_size above 1 is an
 * error: collectives between ranks are the mpi dialect's (runtime/mpi.c).
 */
#include "runtime/cpuref/cpuref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements gathered at once by mse_loss (on the stack). */
enum { CHUNK = 4096 };
/* About this many element visits per parallel chunk. */
#define CHUNK_WORK ((int64_t)1 << 16)

static bool reduction_is(const raf_kernel *k, const char *name) {
  return strcmp(raf_stmt_attr_str(k->stmt, "reduction"), name) == 0;
}

/* ---- cross_entropy ------------------------------------------------------- */

typedef struct ce_job {
  raf_dtype work;
  const void *logits; /* in the working type */
  const raf_tensor *labels;
  int64_t classes, ignore;
  double *loss; /* per row */
} ce_job;

#define CE_ROW(T, EXP)                                                         \
  do {                                                                         \
    const T *x = (const T *)j->logits + r * C;                                 \
    T top = -(T)INFINITY;                                                      \
    for (int64_t c = 0; c < C; c++)                                            \
      if (x[c] > top || isnan(x[c]))                                           \
        top = x[c];                                                            \
    double total = 0;                                                          \
    for (int64_t c = 0; c < C; c++)                                            \
      total += (double)EXP(x[c] - top);                                        \
    j->loss[r] = log(total) - ((double)x[label] - (double)top);                \
  } while (0)

static void ce_range(void *data, int64_t begin, int64_t end) {
  const ce_job *j = data;
  const int64_t C = j->classes;
  raf_dtype ldt = j->labels->type->dtype;
  for (int64_t r = begin; r < end; r++) {
    int64_t label = raf_elem_get_i64(ldt, j->labels->data, r);
    if (label == j->ignore)
      j->loss[r] = 0;
    else if (j->work == RAF_F64)
      CE_ROW(double, exp);
    else
      CE_ROW(float, expf);
  }
}


raf_status raf_cpuref_cross_entropy(const raf_kernel *k) {
  const raf_tensor *logits = k->in[0], *labels = k->in[1];
  raf_tensor *out = k->out[0];
  const raf_type *lt = logits->type;
  int64_t rows = labels->type->numel;
  ce_job j = {.work = raf_cpuref_work_dtype(lt->dtype),
              .labels = labels,
              .classes = lt->dims[lt->rank - 1],
              .ignore = raf_stmt_attr_int(k->stmt, "ignore_index")};

  /* The labels first, so the error names the first bad one. */
  int64_t counted = 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t label = raf_elem_get_i64(labels->type->dtype, labels->data, r);
    if (label == j.ignore)
      continue;
    if (label < 0 || label >= j.classes) {
      char where[128];
      raf_index_str(labels->type, r, where, sizeof where);
      return raf_kernel_fail(k, "label %lld%s%s is out of range for %lld "
                             "classes (and is not ignore_index = %lld)",
                             (long long)label, *where ? " at " : "", where,
                             (long long)j.classes, (long long)j.ignore);
    }
    counted++;
  }

  void *own_x = NULL;
  j.loss = malloc((size_t)rows * sizeof *j.loss + 1);
  if (!j.loss)
    return raf_kernel_fail(k, "out of memory for the per-row losses");
  j.logits = logits->data;
  if (lt->dtype != j.work) {
    own_x = malloc((size_t)lt->numel * (size_t)raf_dtype_size(j.work) + 1);
    if (!own_x) {
      free(j.loss);
      return raf_kernel_fail(k, "out of memory for a working copy of %s",
                             raf_dtype_name(lt->dtype));
    }
    raf_elem_convert(j.work, own_x, lt->dtype, logits->data, lt->numel);
    j.logits = own_x;
  }
  int64_t grain = j.classes >= CHUNK_WORK ? 1 : CHUNK_WORK / (j.classes + 1);
  raf_kernel_parallel(k, rows, grain, ce_range, &j);

  if (reduction_is(k, "none")) {
    raf_elem_convert(out->type->dtype, out->data, RAF_F64, j.loss, rows);
  } else {
    double total = 0;
    for (int64_t r = 0; r < rows; r++)
      total += j.loss[r];
    if (reduction_is(k, "mean"))
      total = counted ? total / (double)counted : NAN; /* all ignored */
    raf_elem_convert(out->type->dtype, out->data, RAF_F64, &total, 1);
  }
  free(own_x);
  free(j.loss);
  return RAF_OK;
}

/* ---- mse_loss ------------------------------------------------------------ */

/* The n squared differences from flat element b on, in the working type,
 * into abuf (bbuf is scratch; both hold CHUNK elements). */
static void squares(const raf_kernel *k, raf_dtype work, int64_t b, int64_t n,
                    void *abuf, void *bbuf) {
  const raf_type *t = k->in[0]->type;
  raf_cpuref_gather(k->in[0], t, b, n, work, abuf);
  raf_cpuref_gather(k->in[1], t, b, n, work, bbuf);
  if (work == RAF_F64) {
    double *x = abuf;
    const double *y = bbuf;
    for (int64_t i = 0; i < n; i++)
      x[i] = (x[i] - y[i]) * (x[i] - y[i]);
  } else {
    float *x = abuf;
    const float *y = bbuf;
    for (int64_t i = 0; i < n; i++)
      x[i] = (x[i] - y[i]) * (x[i] - y[i]);
  }
}

static void mse_none_range(void *data, int64_t begin, int64_t end) {
  const raf_kernel *k = data;
  raf_dtype dt = k->out[0]->type->dtype, work = raf_cpuref_work_dtype(dt);
  _Alignas(64) char abuf[CHUNK * 8], bbuf[CHUNK * 8];
  for (int64_t b = begin; b < end; b += CHUNK) {
    int64_t n = end - b < CHUNK ? end - b : CHUNK;
    squares(k, work, b, n, abuf, bbuf);
    raf_elem_convert(dt, (char *)k->out[0]->data + b * raf_dtype_size(dt),
                     work, abuf, n);
  }
}

raf_status raf_cpuref_mse_loss(const raf_kernel *k) {
  const raf_type *t = k->in[0]->type;
  raf_tensor *out = k->out[0];
  if (reduction_is(k, "none")) {
    raf_kernel_parallel(k, t->numel, CHUNK * 4, mse_none_range, (void *)k);
    return RAF_OK;
  }
  raf_dtype work = raf_cpuref_work_dtype(t->dtype);
  _Alignas(64) char abuf[CHUNK * 8], bbuf[CHUNK * 8];
  double total = 0;
  for (int64_t b = 0; b < t->numel; b += CHUNK) {
    int64_t n = t->numel - b < CHUNK ? t->numel - b : CHUNK;
    squares(k, work, b, n, abuf, bbuf);
    for (int64_t i = 0; i < n; i++)
      total += work == RAF_F64 ? ((const double *)abuf)[i]
                               : (double)((const float *)abuf)[i];
  }
  if (reduction_is(k, "mean"))
    total = t->numel ? total / (double)t->numel : NAN; /* empty */
  raf_elem_convert(out->type->dtype, out->data, RAF_F64, &total, 1);
  return RAF_OK;
}

/* ---- Collectives --------------------------------------------------------- */

raf_status raf_cpuref_collective(const raf_kernel *k) {
  int64_t world = raf_stmt_attr_int(k->stmt, "world_size");
  if (world != 1)
    return raf_kernel_fail(
        k, "world_size = %lld: cpu-ref runs one rank; collectives "
           "between ranks run on the mpi dialect, under mpirun",
        (long long)world);
  /* One rank: the result has x's type, and is x. */
  memcpy(k->out[0]->data, k->in[0]->data, k->out[0]->nbytes);
  return RAF_OK;
}
