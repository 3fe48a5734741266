/* run.h: the public executor API of raf: running the functions of a module.
 *
 * The model is raf.h's, and so the LLVM C API's: opaque handles, and each
 * function says who owns what it returns. An executor borrows a verified
 * module (which must outlive it), chooses a dialect for each statement
 * (see raf_executor_create), opens a device and runs functions there.
 * Tensors live on the executor's device; their data crosses to and from
 * host memory only through raf_tensor_write and raf_tensor_read.
 *
 * Errors are values, as in raf.h: a function that can fail returns
 * RAF_ERROR (or NULL) and reports located diagnostics in the module's
 * context (raf_module_ctx). Nothing here exits, aborts or writes to a
 * stream. A typical embedding (docs/Embedding.md):
 *
 *   raf_executor *ex;
 *   raf_executor_options o;
 *   raf_executor_options_init(&o);
 *   if (raf_executor_create(m, &o, &ex) != RAF_OK) ... render the context
 *   raf_func *f = raf_executor_find(ex, "f");
 *   raf_tensor *x = raf_tensor_create(ex, "f32", 2, (int64_t[]){2, 3});
 *   raf_tensor_write(ex, x, data, sizeof data);
 *   raf_tensor *y;
 *   raf_executor_call(ex, f, &x, 1, &y, 1);
 *   raf_tensor_read(ex, y, out, sizeof out);
 *   raf_tensor_destroy(ex, x); raf_tensor_destroy(ex, y);
 *   raf_executor_destroy(ex);
 */
#ifndef RAF_RUN_H
#define RAF_RUN_H

#include "include/raf/raf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct raf_executor raf_executor;
typedef struct raf_tensor raf_tensor;

/* ---- Executors ----------------------------------------------------------- */

typedef struct raf_executor_options {
  /* "cpu" or "cuda"; NULL: the device of the dialects the module's
   * statements are marked with ({dialect = "..."}, the dispatch pass's
   * marks), or "cpu" when none is marked. */
  const char *device;
  int device_ordinal;   /* which device of that kind (0: the first) */
  /* The enabled dialects, highest priority first ("cblas,cpu-ref"); NULL:
   * every dialect of the device this build can run, by the priorities of
   * lang/dialects.def. */
  const char *dialects;
  int threads;          /* CPU threads; 0: one per online CPU */
  bool check_numerics;  /* stop at the first NaN or Inf a statement makes */
  bool profile;         /* time every kernel run (raf-run --profile) */
  bool sync_each;       /* on a GPU, wait after every kernel (a fault is
                         * then named at its statement) */
} raf_executor_options;

/* Sets every option to its default (zero, NULL). */
void raf_executor_options_init(raf_executor_options *o);

/* Creates an executor for m, verified, which it borrows and annotates: m
 * must outlive it. Opens the device, then chooses each statement's
 * dialect (the dispatch pass): a statement marked with an enabled dialect
 * of the device keeps its mark; one unmarked, or marked with a dialect
 * that is not enabled (another device's, one left out of o->dialects, one
 * this build lacks), gets the first enabled dialect that implements it.
 * raf_executor_replaced_marks counts the marks replaced. o may be NULL
 * (the defaults). On success *out is a new executor the caller owns (free
 * it with raf_executor_destroy); on failure it is NULL and the reasons are
 * reported in m's context. */
raf_status raf_executor_create(raf_module *m, const raf_executor_options *o,
                               raf_executor **out);
/* Frees ex and its device. NULL is ignored. Tensors of ex must be
 * destroyed before it. */
void raf_executor_destroy(raf_executor *ex);

/* The device ex runs on: "cpu" or "cuda" (static storage). */
const char *raf_executor_device(const raf_executor *ex);
/* The enabled dialects of the choice, highest priority first (owned by
 * ex). */
const char *raf_executor_dialects(const raf_executor *ex);
/* How many statements came marked with a dialect that the choice replaced
 * with another. */
int raf_executor_replaced_marks(const raf_executor *ex);
/* The most tensor memory that was live at once, in bytes. */
size_t raf_executor_peak_bytes(const raf_executor *ex);

/* The function named name (without '@'), owned by the module; NULL, and an
 * error naming the module's functions, when there is none. NULL name: the
 * module's last function. */
raf_func *raf_executor_find(raf_executor *ex, const char *name);
/* f's name (owned by the module), and its numbers of arguments and
 * results. */
const char *raf_func_name(const raf_func *f);
int raf_func_arg_count(const raf_func *f);
int raf_func_result_count(const raf_func *f);

/* Calls f with args[0..nargs), which ex's tensors of f's argument types
 * (dtype and shape) must be, and stores its nresults results in
 * results[0..nresults) as new tensors the caller owns (destroy each with
 * raf_tensor_destroy). Wrong counts or types are reported, naming the
 * argument, before anything runs. On failure results are left NULL. */
raf_status raf_executor_call(raf_executor *ex, raf_func *f,
                             raf_tensor *const *args, int nargs,
                             raf_tensor **results, int nresults);

/* ---- Tensors ------------------------------------------------------------- */

/* A new tensor on ex's device of dtype ("f32", "i64", ...: the spellings
 * of docs/LangRef.md) and shape dims[0..rank), its data zeroed. The caller
 * owns it and frees it with raf_tensor_destroy before ex. NULL, reported,
 * for an unknown dtype, a negative dimension or no memory. */
raf_tensor *raf_tensor_create(raf_executor *ex, const char *dtype, int rank,
                              const int64_t *dims);
/* A new zeroed tensor of the type of f's argument i, owned as above. */
raf_tensor *raf_tensor_create_arg(raf_executor *ex, const raf_func *f, int i);
/* Frees t (NULL is ignored). */
void raf_tensor_destroy(raf_executor *ex, raf_tensor *t);

/* t's dtype spelling (static storage), rank, dimension `axis` and size in
 * bytes. */
const char *raf_tensor_dtype(const raf_tensor *t);
int raf_tensor_rank(const raf_tensor *t);
int64_t raf_tensor_dim(const raf_tensor *t, int axis);
size_t raf_tensor_bytes(const raf_tensor *t);

/* Copies bytes of host memory into t, or t into host memory; bytes must be
 * t's size (raf_tensor_bytes), else it is reported and nothing moves. The
 * data is in the dtype's little-endian layout, row-major. */
raf_status raf_tensor_write(raf_executor *ex, raf_tensor *t,
                            const void *data, size_t bytes);
raf_status raf_tensor_read(raf_executor *ex, const raf_tensor *t, void *data,
                           size_t bytes);

#ifdef __cplusplus
}
#endif
#endif
