/* randprog.h: the common part of the random-program generators of the
 * property tests of passes (test_fuse_random, test_plan_memory): values of
 * rank 0..2 over two sizes R and C, in one float dtype per program (f32,
 * bf16 or f16, as the amp pass leaves activations), the program text
 * statement by statement, and the function around it. Each test has its
 * own statements and its own way of picking operands. Optionally (carried,
 * below) dropout, batch_norm and a moving average with the {state}
 * arguments they read and the {updates} results they carry. Header-only
 * (static inline), as program.h. */
#ifndef RAF_TEST_RANDPROG_H
#define RAF_TEST_RANDPROG_H

#include "test/unit/program.h"

#include <stdarg.h>

#ifndef MAXV /* a test may want longer programs */
#define MAXV 96
#endif

enum { K_F32, K_BOOL, K_I64 }; /* K_F32: the program's float dtype */

typedef struct val {
  int rank;
  int64_t d[2];
  int kind; /* K_*: compares make bools, argmax labels */
} val;

/* The float dtypes a program may be written in. */
static const raf_dtype RANDPROG_FLOATS[] = {RAF_F32, RAF_BF16, RAF_F16};

typedef struct gen {
  char *buf; /* the statements, then (wrap_function) the whole function */
  size_t len, cap;
  val v[MAXV];
  int n;
  int64_t R, C;
  int nparams; /* test_plan_memory's params */
  raf_dtype fdt; /* the float dtype of K_F32 values (choose_dtype) */
} gen;

/* Picks the program's float dtype: f32 half of the time, else bf16 or
 * f16. */
static inline void choose_dtype(gen *g) {
  g->fdt = rand_int(0, 1) ? RAF_F32 : RANDPROG_FLOATS[rand_int(1, 2)];
}

/* The float dtype's name, for the program text. */
static inline const char *fname(const gen *g) {
  return raf_dtype_name(g->fdt);
}

static inline void emit(gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void emit(gen *g, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(g->buf + g->len, g->cap - g->len, fmt, ap);
  va_end(ap);
  if (k > 0 && g->len + (size_t)k < g->cap)
    g->len += (size_t)k;
}

/* A new float value %v<n>; its number. */
static inline int new_val(gen *g, int rank, int64_t d0, int64_t d1) {
  g->v[g->n] = (val){rank, {d0, d1}, K_F32};
  return g->n++;
}

/* NumPy broadcasting of a and b into out (float); false when they do
 * not. */
static inline bool bcast(const val *a, const val *b, val *out) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  out->rank = r;
  out->kind = K_F32;
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    int64_t x = ia >= 0 ? a->d[ia] : 1, y = ib >= 0 ? b->d[ib] : 1;
    if (x != y && x != 1 && y != 1)
      return false;
    out->d[i] = x > y ? x : y;
  }
  return true;
}

/* Whether %v<k> is a float [R,C]. */
static inline bool is_rc(const gen *g, int k) {
  return g->v[k].rank == 2 && g->v[k].d[0] == g->R && g->v[k].d[1] == g->C &&
         g->v[k].kind == K_F32;
}

static inline void type_of(const gen *g, const val *x, char *buf,
                           size_t size) {
  raf_dtype dt = x->kind == K_BOOL ? RAF_BOOL : x->kind == K_I64 ? RAF_I64
                                                                 : g->fdt;
  type_text(buf, size, dt, x->rank, x->d);
}

/* %v<r> = a through another float dtype and back (the casts amp writes
 * between f32, bf16 and f16): appended, r returned. */
static inline int cast_round_trip(gen *g, int a) {
  raf_dtype other = g->fdt;
  while (other == g->fdt)
    other = RANDPROG_FLOATS[rand_int(0, 2)];
  const val *va = &g->v[a];
  int r = new_val(g, va->rank, va->d[0], va->d[1]);
  emit(g, "  %%v%d.t = cast(%%v%d) {dtype = %s}\n", r, a,
       raf_dtype_name(other));
  emit(g, "  %%v%d = cast(%%v%d.t) {dtype = %s}\n", r, r, fname(g));
  return r;
}

/* %v<p> = gt(a, b), %v<r> = where(p, a, b), b replaced by a when the two do
 * not broadcast: appended, r returned. */
static inline int compare_where(gen *g, int a, int b) {
  val out;
  if (!bcast(&g->v[a], &g->v[b], &out))
    b = a, out = g->v[a];
  int p = new_val(g, out.rank, out.d[0], out.d[1]);
  g->v[p].kind = K_BOOL;
  emit(g, "  %%v%d = gt(%%v%d, %%v%d)\n", p, a, b);
  int r = new_val(g, out.rank, out.d[0], out.d[1]);
  emit(g, "  %%v%d = where(%%v%d, %%v%d, %%v%d)\n", r, p, a, b);
  return r;
}

/* Makes g->buf the function `func @f(ARGS) -> (LEAD..., res's types) {`,
 * the statements, `return LEAD_RETURNS..., res's values`: args is the
 * argument list, lead_results and lead_returns the text before the res
 * entries (empty, or ending in ", "). */
static inline void wrap_function(gen *g, const char *args,
                                 const char *lead_results,
                                 const char *lead_returns, const int *res,
                                 int nres) {
  size_t cap = g->len + strlen(args) + strlen(lead_results) +
               strlen(lead_returns) + 4096,
         n = 0;
  char *text = malloc(cap);
  n += (size_t)snprintf(text + n, cap - n, "func @f(%s) -> (%s", args,
                        lead_results);
  for (int j = 0; j < nres; j++) {
    char t[64];
    type_of(g, &g->v[res[j]], t, sizeof t);
    n += (size_t)snprintf(text + n, cap - n, "%s%s", j ? ", " : "", t);
  }
  n += (size_t)snprintf(text + n, cap - n, ") {\n");
  memcpy(text + n, g->buf, g->len);
  n += g->len;
  n += (size_t)snprintf(text + n, cap - n, "  return %s", lead_returns);
  for (int j = 0; j < nres; j++)
    n += (size_t)snprintf(text + n, cap - n, "%s%%v%d", j ? ", " : "", res[j]);
  snprintf(text + n, cap - n, "\n}\n");
  g->len = strlen(text);
  memcpy(g->buf, text, g->len + 1);
  free(text);
}

/* ---- State a program carries out of its function ---------------------------
 *
 * Optional (a test that never calls these generates what it did before):
 * dropout, batch_norm and a moving average, each reading or updating a
 * {state} argument, as a training step carries running statistics and a
 * random key from call to call (LangRef's training conventions). The
 * arguments are %key: i64[] (dropout's seed, advanced by one per call),
 * %rm, %rv: [C] (batch_norm's running mean and variance) and %ema: [R,C]
 * (a moving average of activations); a result {updates = ...} carries the
 * new value of each one the program changed. */

typedef struct carried {
  int mean, var; /* the latest running statistics, -1 while the arguments */
  int ema;       /* the latest moving average, -1 while the argument */
  int dropouts;  /* dropouts emitted: the key is advanced when any is */
  bool read_only; /* the states are read, never updated: no {updates}
                     results, no key advance (shard refuses a forward
                     that updates state) */
} carried;

static inline void carried_init(carried *c) {
  *c = (carried){.mean = -1, .var = -1, .ema = -1};
}

/* "%rm" or "%v<k>": a state's latest value, for the program text. */
static inline const char *state_name(int latest, const char *arg, char *buf,
                                     size_t size) {
  if (latest < 0)
    snprintf(buf, size, "%%%s", arg);
  else
    snprintf(buf, size, "%%v%d", latest);
  return buf;
}

/* %v<r> = dropout(a, %key) with a random p: appended, r returned. The mask
 * is a function of the key and the element's index alone, so every
 * transformation of the program must draw the same one. */
static inline int carry_dropout(gen *g, carried *c, int a) {
  static const double probs[] = {0.1, 0.25, 0.5, 0.75};
  const val *va = &g->v[a];
  int r = new_val(g, va->rank, va->d[0], va->d[1]);
  emit(g, "  %%v%d = dropout(%%v%d, %%key) {p = %g}\n", r, a,
       probs[rand_int(0, 3)]);
  c->dropouts++;
  return r;
}

/* %v<y>, %v<m>, %v<v> = batch_norm(a, %g, %bt, mean, var) in training mode
 * over a float [R,C] (R >= 2: the unbiased batch variance divides by R - 1),
 * the statistics the latest ones: appended, y returned (or a, when a does
 * not fit). %g and %bt are the program's [C] arguments. */
static inline int carry_batch_norm(gen *g, carried *c, int a) {
  if (!is_rc(g, a) || g->R < 2)
    return a;
  char mean[32], var[32];
  state_name(c->mean, "rm", mean, sizeof mean);
  state_name(c->var, "rv", var, sizeof var);
  int y = new_val(g, 2, g->R, g->C);
  c->mean = new_val(g, 1, g->C, 0);
  c->var = new_val(g, 1, g->C, 0);
  emit(g,
       "  %%v%d, %%v%d, %%v%d = batch_norm(%%v%d, %%g, %%bt, %s, %s) "
       "{momentum = %g}\n",
       y, c->mean, c->var, a, mean, var, (double)rand_int(1, 9) / 10);
  return y;
}

/* The moving average of a float [R,C]: ema - (ema - a) / 4, the latest
 * ema the operand: appended, the new average returned (or a, when a does
 * not fit). */
static inline int carry_ema(gen *g, carried *c, int a) {
  if (!is_rc(g, a))
    return a;
  char ema[32];
  state_name(c->ema, "ema", ema, sizeof ema);
  int diff = new_val(g, 2, g->R, g->C);
  emit(g, "  %%v%d = sub(%s, %%v%d)\n", diff, ema, a);
  int quarter = new_val(g, 0, 0, 0);
  emit(g, "  %%v%d = constant 0.25 : %s[]\n", quarter, fname(g));
  int step = new_val(g, 2, g->R, g->C);
  emit(g, "  %%v%d = mul(%%v%d, %%v%d)\n", step, diff, quarter);
  int r = new_val(g, 2, g->R, g->C);
  emit(g, "  %%v%d = sub(%s, %%v%d)\n", r, ema, step);
  c->ema = r;
  return r;
}

/* Appends the state's arguments to args ("%key: i64[] {state}, ..."),
 * each after ", "; returns false when args is too small. */
static inline bool carried_args(const gen *g, char *args, size_t size) {
  const char *f = fname(g);
  size_t n = strlen(args);
  int k = snprintf(args + n, size - n,
                   ", %%key: i64[] {state}, %%rm: %s[%lld] {state}, "
                   "%%rv: %s[%lld] {state}, %%ema: %s[%lld,%lld] {state}",
                   f, (long long)g->C, f, (long long)g->C, f,
                   (long long)g->R, (long long)g->C);
  return k > 0 && (size_t)k < size - n;
}

/* Emits the key's advance when a dropout read it, and appends to results
 * and returns the {updates} results of the states the program changed
 * (each text ending in ", ", for wrap_function's lead results). */
static inline void carried_results(gen *g, const carried *c, char *results,
                                   size_t rsize, char *returns,
                                   size_t tsize) {
  const char *f = fname(g);
  size_t nr = strlen(results), nt = strlen(returns);
  if (c->read_only)
    return;
  if (c->dropouts) {
    emit(g, "  %%key.one = constant 1 : i64[]\n");
    emit(g, "  %%key.next = add(%%key, %%key.one)\n");
    nr += (size_t)snprintf(results + nr, rsize - nr,
                           "i64[] {updates = %%key}, ");
    nt += (size_t)snprintf(returns + nt, tsize - nt, "%%key.next, ");
  }
  if (c->mean >= 0) {
    nr += (size_t)snprintf(results + nr, rsize - nr,
                           "%s[%lld] {updates = %%rm}, %s[%lld] "
                           "{updates = %%rv}, ",
                           f, (long long)g->C, f, (long long)g->C);
    nt += (size_t)snprintf(returns + nt, tsize - nt, "%%v%d, %%v%d, ",
                           c->mean, c->var);
  }
  if (c->ema >= 0) {
    snprintf(results + nr, rsize - nr, "%s[%lld,%lld] {updates = %%ema}, ",
             f, (long long)g->R, (long long)g->C);
    snprintf(returns + nt, tsize - nt, "%%v%d, ", c->ema);
  }
}

#endif
