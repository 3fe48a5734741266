/* program.h: the harness of the property tests: a fixed-seed generator,
 * and modules built from text as a user writes them, dispatched by the
 * dispatch pass and run through the executor. Header-only (static inline),
 * since every file in test/unit/ is a test program of its own. */
#ifndef RAF_TEST_PROGRAM_H
#define RAF_TEST_PROGRAM_H

#include "ir/ir.h"
#include "runtime/exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64: failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static inline uint64_t next_u64(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

/* Uniform in [lo, hi]. */
static inline int64_t rand_int(int64_t lo, int64_t hi) {
  return lo + (int64_t)(next_u64() % (uint64_t)(hi - lo + 1));
}

static inline double rand_unit(void) { /* [-1, 1) */
  return (double)(next_u64() >> 11) / 4503599627370496.0 - 1.0;
}


/* "f32[2,3]" from a dtype and dims. */
static inline void type_text(char *buf, size_t size, raf_dtype dt, int rank,
                      const int64_t *dims) {
  int n = snprintf(buf, size, "%s[", raf_dtype_name(dt));
  for (int d = 0; d < rank; d++)
    n += snprintf(buf + n, size - (size_t)n, "%s%lld", d ? "," : "",
                  (long long)dims[d]);
  snprintf(buf + n, size - (size_t)n, "]");
}

/* ---- Building and running a module ---------------------------------------- */

typedef struct program {
  raf_ctx *ctx;
  raf_module *m;
  raf_exec *ex;
} program;

/* program_open_pipeline, silent: on failure the diagnostics stay in p->ctx
 * (close p anyway). */
static inline bool program_try_open(program *p, const char *text,
                                    const char *pipeline, int threads) {
  memset(p, 0, sizeof *p);
  p->ctx = raf_ctx_create();
  p->m = raf_parse_module(p->ctx, "prop.raf", text, strlen(text), 1);
  bool ok = p->m && raf_verify_module(p->ctx, p->m) == RAF_OK;
  if (ok) {
    raf_pipeline *pl = raf_pipeline_create(p->ctx);
    raf_pipeline_options po;
    raf_pipeline_options_init(&po);
    ok = raf_pipeline_parse(pl, pipeline) == RAF_OK &&
         raf_pipeline_run(pl, p->m, &po) == RAF_OK &&
         raf_verify_module(p->ctx, p->m) == RAF_OK;
    raf_pipeline_destroy(pl);
  }
  if (ok) {
    raf_exec_options eo = {.threads = threads};
    p->ex = raf_exec_create(p->ctx, p->m, &eo);
    ok = p->ex != NULL;
  }
  return ok;
}

/* Parses and verifies text, runs `pipeline` (raf-opt -p syntax; it must
 * dispatch the module) and verifies it again, and makes an executor with
 * `threads` threads. On failure reports, prints the text and returns
 * false (close p anyway). */
static inline bool program_open_pipeline(program *p, const char *text,
                                         const char *pipeline, int threads) {
  bool ok = program_try_open(p, text, pipeline, threads);
  if (!ok) {
    raf_diag_render(p->ctx, stderr);
    fprintf(stderr, "in (%s):\n%s", pipeline, text);
  }
  return ok;
}

/* program_open_pipeline with the dispatch pass alone, to `dialects`. */
static inline bool program_open(program *p, const char *text,
                                const char *dialects, int threads) {
  char pipeline[128];
  snprintf(pipeline, sizeof pipeline, "dispatch{dialects=%s}", dialects);
  return program_open_pipeline(p, text, pipeline, threads);
}

/* The reference (cpu-ref, 2 threads) and the cblas dialect at 1 and 3
 * threads, for the tests that compare them. */
static inline bool program_open_cblas_trio(program *ref, program *blas,
                                           program *blas3, const char *text) {
  return program_open(ref, text, "cpu-ref", 2) &&
         program_open(blas, text, "cblas,cpu-ref", 1) &&
         program_open(blas3, text, "cblas,cpu-ref", 3);
}

static inline void program_close(program *p) {
  raf_exec_destroy(p->ex);
  raf_module_destroy(p->m);
  raf_ctx_destroy(p->ctx);
}

/* The function's arguments with random values: floats uniform in [-1, 1)
 * (rounded to the dtype), integers uniform over their whole range. */
static inline raf_tensor **random_args(program *p) {
  raf_func *f = p->m->first;
  raf_tensor **args = calloc((size_t)f->nargs, sizeof *args);
  for (int i = 0; i < f->nargs; i++) {
    raf_tensor *t = args[i] = raf_exec_alloc(p->ex, f->args[i].value->type);
    raf_dtype dt = t->type->dtype;
    for (int64_t e = 0; e < t->type->numel; e++) {
      if (raf_dtype_is_float(dt))
        raf_elem_set_f64(dt, t->data, e, rand_unit());
      else
        raf_elem_set_i64(dt, t->data, e, (int64_t)next_u64());
    }
  }
  return args;
}

/* Copies args (made by another program) into tensors of p. */
static inline raf_tensor **copy_args(program *p, raf_tensor **from) {
  raf_func *f = p->m->first;
  raf_tensor **args = calloc((size_t)f->nargs, sizeof *args);
  for (int i = 0; i < f->nargs; i++) {
    args[i] = raf_exec_alloc(p->ex, f->args[i].value->type);
    memcpy(args[i]->data, from[i]->data, from[i]->nbytes);
  }
  return args;
}

static inline void free_tensors(program *p, raf_tensor **ts, int n) {
  for (int i = 0; i < n; i++)
    if (ts[i])
      raf_exec_free(p->ex, ts[i]);
  free(ts);
}

/* Runs the program's one function; the result, or NULL (reported). */
static inline raf_tensor *run_one(program *p, raf_tensor **args) {
  raf_tensor *res = NULL;
  if (raf_exec_call(p->ex, p->m->first, args, &res) != RAF_OK) {
    raf_diag_render(p->ctx, stderr);
    return NULL;
  }
  return res;
}

/* Runs the program's first function; its nresults results (free them with
 * free_tensors), or NULL (reported). */
static inline raf_tensor **run_all(program *p, raf_tensor **args) {
  raf_func *f = p->m->first;
  raf_tensor **res = calloc((size_t)f->nresults, sizeof *res);
  if (raf_exec_call(p->ex, f, args, res) != RAF_OK) {
    raf_diag_render(p->ctx, stderr);
    free(res);
    return NULL;
  }
  return res;
}

static inline const char *dialect_of_first(const program *p) {
  return raf_stmt_dialect_name(p->m->first->first);
}

/* A kernel cache of the test's own (RAF_CACHE_DIR): dir is a mkdtemp
 * template, filled in. false when it cannot be made. */
static inline bool kernel_cache_open(char *dir) {
  if (!mkdtemp(dir)) {
    fprintf(stderr, "cannot make a kernel cache directory %s\n", dir);
    return false;
  }
  setenv("RAF_CACHE_DIR", dir, 1);
  return true;
}

static inline void kernel_cache_remove(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

#endif
