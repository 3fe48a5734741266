/* internal.h: what the files of the onednn dialect (runtime/onednn/) share
 * in a build with oneDNN: the executor's state for the dialect, the
 * OpenMP guard, the caches of primitives, and each op family's bind and
 * kernel functions. common.c holds the hooks and the kernel table; the
 * design (plans made at bind time from cached primitives, oneDNN
 * single-threaded inside the executor's threads) is described there. */
#ifndef RAF_ONEDNN_INTERNAL_H
#define RAF_ONEDNN_INTERNAL_H

#include "runtime/dialects.h"
#include "runtime/vmath.h"

#include <dnnl.h>
#include <dnnl_debug.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static inline int64_t onednn_min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

/* bf16 <-> float by their bits, as raf_bf16_to_float and raf_float_to_bf16
 * (ir/module.c) compute them, written here so that the loops vectorize. */
static inline uint16_t onednn_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t quiet = (x >> 16) | 0x40; /* NaN: stays a NaN */
  uint32_t even = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
  return (uint16_t)((x & 0x7fffffff) > 0x7f800000 ? quiet : even);
}

/* dst[i] = src[i] rounded to bf16, to nearest even. */
RAF_VEC_LOOP static inline void
onednn_round_to_bf16(uint16_t *dst, const float *src, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    dst[i] = onednn_float_to_bf16(src[i]);
}

/* The calling thread's OpenMP threads set to one; returns the count to
 * restore with onednn_openmp_restore. */
int onednn_openmp_single(void);
void onednn_openmp_restore(int threads);

/* A matrix product C [m, n] = op(A) op(B) of dense bf16 matrices into a
 * dense C: bf16 (each sum rounded once), or f32 (f32_out), or f32 with
 * the product added to what C holds (accumulate). matmul.c. */
typedef struct onednn_mm_prim {
  bool ta, tb, f32_out, accumulate;
  int64_t m, n, k;
  dnnl_primitive_t p;
  dnnl_memory_desc_t a, b, c, scratch;
  size_t scratch_bytes;
} onednn_mm_prim;

/* A primitive of conv.c, pool.c or batch_norm.c: its key (the op family,
 * the dtype and the shape numbers; unused entries zero, so keys compare
 * by memcmp), and the memory descriptors of its arguments: the layout the
 * primitive runs on (md) and the tensor's own plain one (user), with a
 * reorder between them where they differ (user to md for an input, md to
 * user for a result), into a buffer of the caller's work memory. */
enum { ONEDNN_KEY_WORDS = 24, ONEDNN_MAX_ARGS = 12 };
typedef struct onednn_key {
  int64_t w[ONEDNN_KEY_WORDS];
} onednn_key;

typedef struct onednn_prim {
  onednn_key key;
  dnnl_primitive_t p;
  int nargs;
  int arg[ONEDNN_MAX_ARGS]; /* DNNL_ARG_* */
  int nin; /* arguments [0, nin) are inputs, the rest results */
  /* The scratchpad and the results zeroed before each run: oneDNN 2.6's
   * AMX (bf16) weight gradient reads its scratchpad unset where kernel
   * taps meet only padding (test_onednn found garbage there). */
  bool zero_memory;
  dnnl_memory_desc_t md[ONEDNN_MAX_ARGS];
  dnnl_memory_desc_t user[ONEDNN_MAX_ARGS];
  dnnl_primitive_t reorder[ONEDNN_MAX_ARGS]; /* NULL: md is user */
  size_t offset[ONEDNN_MAX_ARGS]; /* of a reordered argument's buffer */
  /* The reorder of input 1 (a convolution's weights) split into parts
   * along its outermost dimension, for threads to share: part t reorders
   * the elements at t * part_step[0] of the user layout into t *
   * part_step[1] of md (in elements); NULL when the layouts do not split
   * so. */
  dnnl_primitive_t part_reorder;
  int64_t parts, part_step[2];
  dnnl_memory_desc_t part_md[2]; /* user's part, md's part */
  dnnl_memory_desc_t scratch;
  size_t work_bytes; /* the scratchpad, then the reordered arguments */
} onednn_prim;

/* Fills pr->p and its arguments for pr->key; called with OpenMP single. */
typedef dnnl_status_t (*onednn_create_fn)(dnnl_engine_t engine,
                                          onednn_prim *pr);

typedef struct onednn_state {
  dnnl_engine_t engine;
  onednn_mm_prim **mm;
  int nmm, capmm;
  onednn_prim **prims;
  int nprims, capprims;
  /* The statements' plans, each freed with its function. */
  void **plans;
  void (**plan_free)(void *);
  int nplans, capplans;
} onednn_state;

/* Keeps plan (freed by free_fn at release); false when out of memory (the
 * plan is then freed). */
bool onednn_keep_plan(onednn_state *st, void *plan, void (*free_fn)(void *));

/* The cached matmul primitive of key's kind and shape (matmul.c). */
const onednn_mm_prim *onednn_find_mm(onednn_state *st, onednn_mm_prim key,
                                     char *why, size_t size);
dnnl_status_t onednn_run_mm(dnnl_engine_t engine, const onednn_mm_prim *pr,
                            const void *a, const void *b, void *c,
                            void *scratch);

/* The cached primitive of key, made by create on first use; NULL with
 * *why set (naming `what`) when oneDNN has none. */
const onednn_prim *onednn_find_prim(onednn_state *st, const onednn_key *key,
                                    onednn_create_fn create, const char *what,
                                    char *why, size_t size);

/* Makes pr's primitive from an op descriptor (forward `hint` for
 * backward ones, or NULL) with scratch memory from the caller, and takes
 * the memory descriptors of the `nargs` arguments `args`, the first nin
 * inputs; user[i] is argument i's own layout, or user is NULL when the op
 * descriptor names the layouts (no reorders). */
dnnl_status_t onednn_make_prim(dnnl_engine_t engine, onednn_prim *pr,
                               const void *op_desc,
                               const_dnnl_primitive_desc_t hint,
                               const int *args, int nargs, int nin,
                               const dnnl_memory_desc_t *user);

/* Runs pr with data[i] for argument i, in its user layout, or in the
 * primitive's own where bit i of `native` is set; work is at least
 * pr->work_bytes, 64-byte aligned. */
dnnl_status_t onednn_run_prim(dnnl_engine_t engine, const onednn_prim *pr,
                              void *const *data, unsigned native, void *work);

/* Argument i of pr from its user layout into the primitive's (an input),
 * or back (a result). */
dnnl_status_t onednn_reorder_arg(dnnl_engine_t engine, const onednn_prim *pr,
                                 int i, const void *from, void *to);
/* Part `part` of pr's split reorder of input 1 (pr->part_reorder). */
dnnl_status_t onednn_reorder_part(dnnl_engine_t engine, const onednn_prim *pr,
                                  int64_t part, const void *from, void *to);

/* malloc'd memory of at least bytes, and the 64-byte aligned address in
 * it (*aligned); NULL when out of memory. */
void *onednn_alloc_aligned(size_t bytes, void **aligned);

/* The oneDNN data type of dt: f32 or bf16 (others: dnnl_data_type_undef). */
dnnl_data_type_t onednn_dtype(raf_dtype dt);

/* Records the first failure of a job's tasks. */
static inline void onednn_failed(atomic_int *status, dnnl_status_t rc) {
  int expected = dnnl_success;
  atomic_compare_exchange_strong(status, &expected, (int)rc);
}

/* Each op family's plan for statement s (kept in st; NULL when out of
 * memory), and its kernel. */
const void *onednn_bind_matmul(onednn_state *st, const raf_stmt *s);
const void *onednn_bind_attention(onednn_state *st, const raf_stmt *s);
const void *onednn_bind_conv(onednn_state *st, const raf_stmt *s);
const void *onednn_bind_pool(onednn_state *st, const raf_stmt *s);
const void *onednn_bind_batch_norm(onednn_state *st, const raf_stmt *s);

raf_status onednn_matmul(const raf_kernel *k);
raf_status onednn_attention(const raf_kernel *k);
raf_status onednn_conv(const raf_kernel *k);
raf_status onednn_pool(const raf_kernel *k);
raf_status onednn_batch_norm(const raf_kernel *k);

/* The state of k's executor and k's plan, or a failure of k saying there
 * is none. */
raf_status onednn_kernel_plan(const raf_kernel *k, onednn_state **st);

#endif
