/* test_llvm.c: property tests of the llvm dialect (codegen/ and
 * runtime/llvm.c) on random fused functions, each written as text as a
 * user (or the fuse pass) writes it, dispatched and run by the executor:
 *   - elementwise programs: random DAGs of every elementwise op the
 *     lowering takes, over random broadcasts, in every dtype, with
 *     constants, comparisons, where and casts; with scalar libm
 *     (RAF_JIT_MATH=exact) the results are bit-identical to cpu-ref's;
 *   - row programs: producers, a reduction or row op (sum, mean, max, min,
 *     softmax, log_softmax, layer_norm) over trailing or leading axes, and
 *     consumers, some through reshapes that merge or split dims; equal to
 *     cpu-ref within the reassociation of double sums;
 *   - column programs (reductions over the leading dims of at least 32
 *     columns, which the lowering walks in tiles of columns): full results
 *     with and without the reduction, and its consumers; with scalar libm
 *     bit-identical to cpu-ref's, whole tiles and the columns left alike;
 *   - mixed-precision programs (amp's): arguments and values in f32, bf16
 *     and f16, binary ops across dtypes through casts, casts between
 *     them; with scalar libm bit-identical to cpu-ref's; with a row op
 *     computed in f32 between casts, equal within its double sums'
 *     reassociation;
 *   - with the vectorised math (the default), results within a relative
 *     1e-3 of cpu-ref's (the chains amplify libmvec's few ulp), and
 *     bit-identical at 1 and 3 threads.
 * Almost every program must be compiled (not declined). The kernel cache
 * is a fresh temporary directory. The generator is a fixed-seed xorshift;
 * each failure prints the module. */
#include "codegen/codegen.h"
#include "ir/ir.h"
#include "runtime/exec.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#include "test/unit/check.h"
#include "test/unit/program.h"

/* ---- Building programs ------------------------------------------------------ */

typedef struct gval {
  char name[16];
  raf_dtype dt;
  int rank;
  int64_t dims[4];
} gval;

typedef struct text {
  char *s;
  size_t n, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  va_list ap;
  if (!t->s) /* no arithmetic on the NULL of an empty text */
    t->s = calloc(1, t->cap = 256);
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    if ((size_t)n < t->cap - t->n) {
      t->n += (size_t)n;
      return;
    }
    t->cap = t->cap * 2 + (size_t)n + 64;
    t->s = realloc(t->s, t->cap);
  }
}

static void tyname(char *buf, size_t size, const gval *v) {
  type_text(buf, size, v->dt, v->rank, v->dims);
}

/* The broadcast of a and b's shapes. */
static void bcast(const gval *a, const gval *b, gval *out) {
  out->rank = a->rank > b->rank ? a->rank : b->rank;
  for (int d = 0; d < out->rank; d++) {
    int da = d - (out->rank - a->rank), db = d - (out->rank - b->rank);
    int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
    out->dims[d] = x > y ? x : y;
  }
}

static bool is_float(raf_dtype dt) { return raf_dtype_is_float(dt); }

static const char *const FLOAT_UNARY[] = {
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
    "relu", "erf", "cos", "sin", "gelu", "gelu_tanh"};
static const char *const INT_UNARY[] = {"neg", "abs", "relu"};
static const char *const FLOAT_BINARY[] = {"add", "sub",     "mul",    "div",
                                           "pow", "maximum", "minimum"};
static const char *const INT_BINARY[] = {"add", "sub", "mul", "maximum",
                                         "minimum"};
static const char *const COMPARE[] = {"eq", "ne", "lt", "le", "gt", "ge"};
#define N(a) ((int)(sizeof a / sizeof a[0]))

/* "func @NAME(%a: T, ...) -> (T, ...)": the first nin of vals as
 * arguments, vals[res[..]] as results. */
static void put_signature(text *t, const char *name, const gval *vals,
                          int nin, const int *res, int nres) {
  char ty[64];
  put(t, "func @%s(", name);
  for (int i = 0; i < nin; i++) {
    tyname(ty, sizeof ty, &vals[i]);
    put(t, "%s%%%s: %s", i ? ", " : "", vals[i].name, ty);
  }
  put(t, ") -> (");
  for (int i = 0; i < nres; i++) {
    tyname(ty, sizeof ty, &vals[res[i]]);
    put(t, "%s%s", i ? ", " : "", ty);
  }
  put(t, ")");
}

/* A random elementwise fused function @fused_0 and a @main calling it. */
static char *elementwise_program(raf_dtype dt) {
  gval F = {.rank = (int)rand_int(0, 4)};
  for (int d = 0; d < F.rank; d++)
    F.dims[d] = rand_int(1, 6);
  if (F.rank && rand_int(0, 2) == 0)
    F.dims[rand_int(0, F.rank - 1)] = rand_int(20, 300);
  gval vals[64];
  int nv = 0, nin = (int)rand_int(1, 4);
  for (int i = 0; i < nin; i++) {
    gval *v = &vals[nv++];
    snprintf(v->name, sizeof v->name, "a%d", i);
    v->dt = dt;
    v->rank = i == 0 ? F.rank : (int)rand_int(0, F.rank);
    for (int d = 0; d < v->rank; d++)
      v->dims[d] = i > 0 && rand_int(0, 2) == 0
                       ? 1
                       : F.dims[d + F.rank - v->rank];
  }
  text body = {0}, sig = {0};
  int nstmts = (int)rand_int(2, 10);
  for (int k = 0; k < nstmts; k++) {
    gval *a = &vals[rand_int(0, nv - 1)];
    gval *b = &vals[rand_int(0, nv - 1)];
    if (a->dt != dt)
      a = &vals[0];
    if (b->dt != dt)
      b = &vals[nin - 1];
    gval *r = &vals[nv];
    snprintf(r->name, sizeof r->name, "v%d", k);
    r->dt = dt;
    int kind = (int)rand_int(0, 9);
    bool fl = is_float(dt);
    if (kind <= 3) { /* unary */
      const char *op = fl ? FLOAT_UNARY[rand_int(0, N(FLOAT_UNARY) - 1)]
                          : INT_UNARY[rand_int(0, N(INT_UNARY) - 1)];
      *r = (gval){.dt = dt, .rank = a->rank};
      snprintf(r->name, sizeof r->name, "v%d", k);
      memcpy(r->dims, a->dims, sizeof r->dims);
      if (strcmp(op, "gelu_tanh") == 0)
        put(&body, "  %%%s = gelu(%%%s) {approximate = \"tanh\"}\n", r->name,
            a->name);
      else
        put(&body, "  %%%s = %s(%%%s)\n", r->name, op, a->name);
    } else if (kind <= 6) { /* binary */
      const char *op = fl ? FLOAT_BINARY[rand_int(0, N(FLOAT_BINARY) - 1)]
                          : INT_BINARY[rand_int(0, N(INT_BINARY) - 1)];
      bcast(a, b, r);
      put(&body, "  %%%s = %s(%%%s, %%%s)\n", r->name, op, a->name, b->name);
    } else if (kind == 7) { /* where(compare) */
      bcast(a, b, r);
      put(&body, "  %%%s.c = %s(%%%s, %%%s)\n", r->name,
          COMPARE[rand_int(0, N(COMPARE) - 1)], a->name, b->name);
      put(&body, "  %%%s = where(%%%s.c, %%%s, %%%s)\n", r->name, r->name,
          a->name, b->name);
    } else if (kind == 8) { /* a cast away and back */
      static const raf_dtype any[] = {RAF_F64, RAF_F32, RAF_F16, RAF_BF16,
                                      RAF_I64, RAF_I32, RAF_I8,  RAF_U8,
                                      RAF_BOOL};
      raf_dtype to = any[rand_int(0, N(any) - 1)];
      *r = *a;
      snprintf(r->name, sizeof r->name, "v%d", k);
      put(&body, "  %%%s.t = cast(%%%s) {dtype = %s}\n", r->name, a->name,
          raf_dtype_name(to));
      put(&body, "  %%%s = cast(%%%s.t) {dtype = %s}\n", r->name, r->name,
          raf_dtype_name(dt));
    } else { /* with a constant */
      *r = *a;
      snprintf(r->name, sizeof r->name, "v%d", k);
      static const char *const consts[] = {"0.5", "-2.0", "3.0", "0.0",
                                           "1.0"};
      static const char *const iconsts[] = {"3", "-2", "7", "0", "1"};
      const char *c = fl ? consts[rand_int(0, 4)] : iconsts[rand_int(0, 4)];
      if (dt == RAF_U8 && c[0] == '-')
        c = "5";
      put(&body, "  %%%s.k = constant %s : %s[]\n", r->name, c,
          raf_dtype_name(dt));
      put(&body, "  %%%s = %s(%%%s, %%%s.k)\n", r->name,
          fl ? FLOAT_BINARY[rand_int(0, 2)] : INT_BINARY[rand_int(0, 2)],
          a->name, r->name);
    }
    nv++;
  }
  /* Results: the last value, and maybe one or two more. */
  int res[3] = {nv - 1}, nres = 1 + (int)rand_int(0, 2);
  for (int i = 1; i < nres; i++)
    res[i] = (int)rand_int(nin, nv - 1);
  put_signature(&sig, "main", vals, nin, res, nres);
  put(&sig, " {\n  ");
  for (int i = 0; i < nres; i++)
    put(&sig, "%s%%r%d", i ? ", " : "", i);
  put(&sig, " = call @fused_0(");
  for (int i = 0; i < nin; i++)
    put(&sig, "%s%%%s", i ? ", " : "", vals[i].name);
  put(&sig, ")\n  return ");
  for (int i = 0; i < nres; i++)
    put(&sig, "%s%%r%d", i ? ", " : "", i);
  put(&sig, "\n}\n\n");
  put_signature(&sig, "fused_0", vals, nin, res, nres);
  put(&sig, " {fused} {\n%s  return ", body.s);
  for (int i = 0; i < nres; i++)
    put(&sig, "%s%%%s", i ? ", " : "", vals[res[i]].name);
  put(&sig, "\n}\n");
  free(body.s);
  return sig.s;
}

/* The dtypes of mixed precision (the amp pass's): f32 master values, bf16
 * and f16 activations. */
static const raf_dtype MIXED[] = {RAF_F32, RAF_BF16, RAF_F16};

/* Appends `%<name> = cast(%<v>)` to dtype `to` when v is not of it; the
 * value to use (v itself, or the cast, stored in vals[*nv]). */
static gval *cast_to(text *body, gval *vals, int *nv, gval *v, raf_dtype to,
                     const char *name) {
  if (v->dt == to)
    return v;
  gval *c = &vals[(*nv)++];
  *c = *v;
  c->dt = to;
  snprintf(c->name, sizeof c->name, "%s", name);
  put(body, "  %%%s = cast(%%%s) {dtype = %s}\n", c->name, v->name,
      raf_dtype_name(to));
  return c;
}

/* A random mixed-precision fused function @fused_0 and a @main calling
 * it: arguments in f32, bf16 and f16, elementwise ops in each operand's
 * dtype, binary ops across dtypes through casts (as amp writes them),
 * casts between the three, and when `row` a row op (softmax,
 * log_softmax, layer_norm, a sum or mean over the last axis) computed in
 * f32 on a cast of a narrow value and cast back, as amp keeps reductions
 * in f32. Results in every dtype. */
static char *mixed_program(bool row) {
  gval F = {.rank = (int)rand_int(1, 3)};
  for (int d = 0; d < F.rank; d++)
    F.dims[d] = rand_int(1, 6);
  if (rand_int(0, 2) == 0)
    F.dims[F.rank - 1] = rand_int(20, 300);
  gval vals[96];
  int nv = 0, nin = (int)rand_int(2, 4);
  for (int i = 0; i < nin; i++) {
    gval *v = &vals[nv++];
    snprintf(v->name, sizeof v->name, "a%d", i);
    v->dt = MIXED[rand_int(0, N(MIXED) - 1)];
    v->rank = i == 0 ? F.rank : (int)rand_int(0, F.rank);
    for (int d = 0; d < v->rank; d++)
      v->dims[d] = i > 0 && rand_int(0, 2) == 0
                       ? 1
                       : F.dims[d + F.rank - v->rank];
  }
  text body = {0}, sig = {0};
  int nstmts = (int)rand_int(3, 12), first = nv;
  int row_at = row ? (int)rand_int(0, nstmts - 1) : -1;
  for (int k = 0; k < nstmts && nv < N(vals) - 4; k++) {
    gval *a = &vals[rand_int(0, nv - 1)];
    gval *b = &vals[rand_int(0, nv - 1)];
    char cname[16];
    snprintf(cname, sizeof cname, "v%d.c", k);
    gval r = {.dt = a->dt};
    snprintf(r.name, sizeof r.name, "v%d", k);
    int kind = (int)rand_int(0, 7);
    if (k == row_at) { /* f32 row op on the full shape, cast back */
      a = cast_to(&body, vals, &nv, &vals[0], RAF_F32, cname);
      r.dt = vals[0].dt;
      r.rank = a->rank;
      memcpy(r.dims, a->dims, sizeof r.dims);
      int op = (int)rand_int(0, 4);
      int64_t C = a->dims[a->rank - 1];
      if (op == 0)
        put(&body, "  %%%s.r = softmax(%%%s)\n", r.name, a->name);
      else if (op == 1)
        put(&body, "  %%%s.r = log_softmax(%%%s)\n", r.name, a->name);
      else if (op == 2)
        put(&body, "  %%%s.g = constant 1.5 : f32[%lld]\n"
                   "  %%%s.r = layer_norm(%%%s, %%%s.g, %%%s.g)\n",
            r.name, (long long)C, r.name, a->name, r.name, r.name);
      else
        put(&body, "  %%%s.r = %s(%%%s) {axes = [-1], keepdims}\n", r.name,
            op == 3 ? "sum" : "mean", a->name);
      if (op >= 3)
        r.dims[r.rank - 1] = 1;
      put(&body, "  %%%s = cast(%%%s.r) {dtype = %s}\n", r.name, r.name,
          raf_dtype_name(r.dt));
    } else if (kind <= 2) { /* unary in a's dtype */
      const char *op = FLOAT_UNARY[rand_int(0, N(FLOAT_UNARY) - 2)];
      r.rank = a->rank;
      memcpy(r.dims, a->dims, sizeof r.dims);
      put(&body, "  %%%s = %s(%%%s)\n", r.name, op, a->name);
    } else if (kind <= 5) { /* binary: b cast to a's dtype first */
      b = cast_to(&body, vals, &nv, b, a->dt, cname);
      bcast(a, b, &r);
      put(&body, "  %%%s = %s(%%%s, %%%s)\n", r.name,
          FLOAT_BINARY[rand_int(0, N(FLOAT_BINARY) - 1)], a->name, b->name);
    } else if (kind == 6) { /* where(compare) across dtypes */
      b = cast_to(&body, vals, &nv, b, a->dt, cname);
      bcast(a, b, &r);
      put(&body, "  %%%s.p = %s(%%%s, %%%s)\n", r.name,
          COMPARE[rand_int(0, N(COMPARE) - 1)], a->name, b->name);
      put(&body, "  %%%s = where(%%%s.p, %%%s, %%%s)\n", r.name, r.name,
          a->name, b->name);
    } else { /* a cast into another of the three */
      r.dt = MIXED[rand_int(0, N(MIXED) - 1)];
      r.rank = a->rank;
      memcpy(r.dims, a->dims, sizeof r.dims);
      put(&body, "  %%%s = cast(%%%s) {dtype = %s}\n", r.name, a->name,
          raf_dtype_name(r.dt));
    }
    vals[nv++] = r;
  }
  /* Results: the last value, and up to two more made in the body. */
  int res[3] = {nv - 1}, nres = 1 + (int)rand_int(0, 2);
  for (int i = 1; i < nres; i++)
    res[i] = (int)rand_int(first, nv - 1);
  put_signature(&sig, "main", vals, nin, res, nres);
  put(&sig, " {\n  ");
  for (int i = 0; i < nres; i++)
    put(&sig, "%s%%r%d", i ? ", " : "", i);
  put(&sig, " = call @fused_0(");
  for (int i = 0; i < nin; i++)
    put(&sig, "%s%%%s", i ? ", " : "", vals[i].name);
  put(&sig, ")\n  return ");
  for (int i = 0; i < nres; i++)
    put(&sig, "%s%%r%d", i ? ", " : "", i);
  put(&sig, "\n}\n\n");
  put_signature(&sig, "fused_0", vals, nin, res, nres);
  put(&sig, " {fused} {\n%s  return ", body.s);
  for (int i = 0; i < nres; i++)
    put(&sig, "%s%%%s", i ? ", " : "", vals[res[i]].name);
  put(&sig, "\n}\n");
  free(body.s);
  return sig.s;
}

/* A random row program: producers, one row op, consumers. */
static char *row_program(raf_dtype dt) {
  int rank = (int)rand_int(2, 3);
  int64_t dims[3];
  for (int d = 0; d < rank; d++)
    dims[d] = rand_int(1, 9);
  dims[rank - 1] = rand_int(1, 70);
  char F[64], C[64], R[64], RK[64];
  type_text(F, sizeof F, dt, rank, dims);
  type_text(C, sizeof C, dt, 1, dims + rank - 1);
  int64_t kd[3];
  for (int d = 0; d < rank; d++)
    kd[d] = d == rank - 1 ? 1 : dims[d];
  type_text(RK, sizeof RK, dt, rank, kd);
  type_text(R, sizeof R, dt, rank - 1, dims);
  text t = {0};
  static const char *const pre[] = {"add", "mul", "sub", "maximum"};
  static const char *const post[] = {"add", "mul", "sub", "div"};
  int kind = (int)rand_int(0, 9);
  const char *reds[] = {"sum", "mean", "max", "min"};
  const char *red = reds[rand_int(0, 3)];
  const char *p1 = pre[rand_int(0, 3)], *p2 = post[rand_int(0, 3)];
  const char *un = FLOAT_UNARY[rand_int(0, N(FLOAT_UNARY) - 2)];
  put(&t,
      "func @main(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {\n"
      "  %%r0, %%r1 = call @fused_0(%%x, %%b, %%g)\n"
      "  return %%r0, %%r1\n}\n\n"
      "func @fused_0(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {fused} {\n"
      "  %%h = %s(%%x, %%b)\n  %%u = %s(%%h)\n",
      F, C, C, F, kind <= 1 ? RK : kind == 2 ? R : F, F, C, C, F,
      kind <= 1 ? RK : kind == 2 ? R : F, p1, un);
  switch (kind) {
  case 0: /* trailing reduction, keepdims, with a consumer */
  case 1:
    put(&t, "  %%s = %s(%%u) {axes = [-1], keepdims}\n", red);
    put(&t, "  %%y = %s(%%h, %%s)\n  return %%y, %%s\n}\n", p2);
    break;
  case 2: /* trailing reduction without keepdims */
    put(&t, "  %%s = %s(%%u) {axes = [%d]}\n", red, rank - 1);
    put(&t, "  %%y = %s(%%u, %%g)\n  return %%y, %%s\n}\n", p2);
    break;
  case 3:
    put(&t, "  %%s = softmax(%%u)\n  %%y = %s(%%s, %%b)\n"
            "  return %%y, %%s\n}\n", p2);
    break;
  case 4:
    put(&t, "  %%s = log_softmax(%%u) {axis = 0}\n  %%y = %s(%%s, %%h)\n"
            "  return %%y, %%s\n}\n", p2);
    break;
  case 5:
    put(&t, "  %%s = layer_norm(%%u, %%g, %%b)\n  %%y = %s(%%s)\n"
            "  return %%y, %%s\n}\n", un);
    break;
  case 8:
  case 9: { /* reshapes: [A,B,C] + [B,C] viewed as [A*B,C] into a row op,
             * or [A*B,C] viewed as [A,B,C] into a sum over A */
    int64_t A = rand_int(1, 5), Bd = rand_int(1, 6), Cd = rand_int(1, 40);
    int64_t d3[3] = {A, Bd, Cd}, d2[2] = {A * Bd, Cd}, bc[2] = {Bd, Cd};
    char T3[64], T2[64], TB[64], TC[64], TS[64];
    type_text(T3, sizeof T3, dt, 3, d3);
    type_text(T2, sizeof T2, dt, 2, d2);
    type_text(TB, sizeof TB, dt, 2, bc);
    type_text(TC, sizeof TC, dt, 1, &Cd);
    type_text(TS, sizeof TS, dt, 2, bc);
    t.n = 0;
    if (kind == 8)
      put(&t,
          "func @main(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {\n"
          "  %%r0, %%r1 = call @fused_0(%%x, %%b, %%g)\n"
          "  return %%r0, %%r1\n}\n\n"
          "func @fused_0(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {fused} {\n"
          "  %%h = %s(%%x, %%b)\n"
          "  %%v = reshape(%%h) {shape = [%lld, %lld]}\n"
          "  %%s = layer_norm(%%v, %%g, %%g)\n  %%y = %s(%%s)\n"
          "  return %%v, %%y\n}\n",
          T3, TB, TC, T2, T2, T3, TB, TC, T2, T2, p1, (long long)(A * Bd),
          (long long)Cd, un);
    else
      put(&t,
          "func @main(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {\n"
          "  %%r0, %%r1 = call @fused_0(%%x, %%b, %%g)\n"
          "  return %%r0, %%r1\n}\n\n"
          "func @fused_0(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {fused} {\n"
          "  %%h = %s(%%x, %%b)\n"
          "  %%v = reshape(%%h) {shape = [%lld, %lld, %lld]}\n"
          "  %%s = %s(%%v) {axes = [0]}\n"
          "  return %%v, %%s\n}\n",
          T2, T2, TC, T3, TS, T2, T2, TC, T3, TS, p1, (long long)A,
          (long long)Bd, (long long)Cd, red);
    break;
  }
  default: { /* leading reduction: over dim 0, a "row" per column */
    int64_t ld[3];
    for (int d = 1; d < rank; d++)
      ld[d - 1] = dims[d];
    char L[64];
    type_text(L, sizeof L, dt, rank - 1, ld);
    t.n = 0;
    put(&t,
        "func @main(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {\n"
        "  %%r0, %%r1 = call @fused_0(%%x, %%b, %%g)\n"
        "  return %%r0, %%r1\n}\n\n"
        "func @fused_0(%%x: %s, %%b: %s, %%g: %s) -> (%s, %s) {fused} {\n"
        "  %%h = %s(%%x, %%b)\n  %%u = %s(%%h)\n"
        "  %%s = %s(%%u) {axes = [0]}\n  return %%u, %%s\n}\n",
        F, C, C, F, L, F, C, C, F, L, p1, un, red);
    break;
  }
  }
  return t.s;
}

/* A random column program (codegen's column tiles, plan.h cg_plan_tile):
 * a reduction over the leading dims of x [R, C] (or [A, B, C] over
 * [0, 1]) with at least 32 columns, a producer, a full result that does
 * not read the reduction and one that does (broadcast along the reduced
 * dims), and a consumer of the reduction per column. Each column adds its
 * elements in ascending order, as cpu-ref: bit-identical with scalar
 * libm. */
static char *column_program(raf_dtype dt) {
  bool three = rand_int(0, 2) == 0;
  int64_t cols = rand_int(32, 200), A = rand_int(1, 4),
          R = rand_int(1, three ? 40 : 150);
  char F[64], C[64], K[64], RK[64];
  int64_t d3[3] = {A, R, cols}, d2[2] = {R, cols}, k3[3] = {1, 1, cols};
  type_text(F, sizeof F, dt, three ? 3 : 2, three ? d3 : d2);
  type_text(C, sizeof C, dt, 1, &cols);
  type_text(K, sizeof K, dt, three ? 3 : 2, three ? k3 : k3 + 1);
  type_text(RK, sizeof RK, dt, 1, &cols);
  static const char *const reds[] = {"sum", "mean", "max", "min"};
  static const char *const pre[] = {"add", "mul", "sub", "maximum"};
  static const char *const post[] = {"add", "mul", "sub", "div"};
  const char *red = reds[rand_int(0, 3)], *p1 = pre[rand_int(0, 3)],
             *p2 = post[rand_int(0, 3)];
  const char *un = FLOAT_UNARY[rand_int(0, N(FLOAT_UNARY) - 2)];
  const char *axes = three ? "[0, 1]" : "[0]";
  text t = {0};
  put(&t,
      "func @main(%%x: %s, %%b: %s) -> (%s, %s, %s, %s) {\n"
      "  %%r0, %%r1, %%r2, %%r3 = call @fused_0(%%x, %%b)\n"
      "  return %%r0, %%r1, %%r2, %%r3\n}\n\n"
      "func @fused_0(%%x: %s, %%b: %s) -> (%s, %s, %s, %s) {fused} {\n"
      "  %%h = %s(%%x, %%b)\n  %%u = %s(%%h)\n"
      "  %%s = %s(%%u) {axes = %s}\n"
      "  %%k = %s(%%u) {axes = %s, keepdims}\n"
      "  %%y = %s(%%h, %%k)\n  %%z = %s(%%s, %%b)\n"
      "  return %%u, %%s, %%y, %%z\n}\n",
      F, C, F, RK, F, RK, F, C, F, RK, F, RK, p1, un, red, axes, red, axes,
      p2, p2);
  (void)K;
  return t.s;
}

/* ---- Comparing ------------------------------------------------------------ */

/* Element i of a and b equal (bits, or both NaN), or close when tol > 0. */
static bool same_elem(const raf_tensor *a, const raf_tensor *b, int64_t i,
                      double tol) {
  raf_dtype dt = a->type->dtype;
  int size = raf_dtype_size(dt);
  if (memcmp((const char *)a->data + i * size,
             (const char *)b->data + i * size, (size_t)size) == 0)
    return true;
  if (!raf_dtype_is_float(dt))
    return false;
  double x = raf_elem_get_f64(dt, a->data, i), y = raf_elem_get_f64(dt, b->data, i);
  if (isnan(x) && isnan(y))
    return true;
  if (tol <= 0)
    return false;
  if (isinf(x) || isinf(y))
    return x == y;
  return fabs(x - y) <= tol * (1 + fabs(y));
}

/* Runs text with the dialects at `threads` threads, on random arguments or
 * copies of `from`; its results, or NULL when it did not build or run. */
static raf_tensor **run_with(const char *text, const char *dialects,
                             int threads, program *p, raf_tensor **from,
                             raf_tensor ***args_out) {
  if (!program_open(p, text, dialects, threads))
    return NULL;
  raf_tensor **args = from ? copy_args(p, from) : random_args(p);
  *args_out = args;
  return run_all(p, args);
}

/* Compares the llvm dialect against cpu-ref on one program (tol 0:
 * bit-identity), and the llvm dialect at 2 and 3 threads. */
static void check_program(const char *text, double tol, bool threads_too) {
  program ref, got, got3;
  raf_tensor **ra, **ga, **g3a = NULL;
  raf_tensor **want = run_with(text, "cblas,cpu-ref", 2, &ref, NULL, &ra);
  CHECK(want != NULL);
  if (!want) {
    fprintf(stderr, "%s", text);
    program_close(&ref);
    return;
  }
  raf_tensor **res = run_with(text, "llvm,cblas,cpu-ref", 2, &got, ra, &ga);
  CHECK(res != NULL);
  raf_func *f = ref.m->first;
  bool ok = res != NULL;
  for (int r = 0; ok && r < f->nresults; r++)
    for (int64_t i = 0; ok && i < want[r]->type->numel; i++)
      if (!same_elem(res[r], want[r], i, tol)) {
        fprintf(stderr,
                "test_llvm: result %d element %lld: llvm %.9g, cpu-ref %.9g "
                "(tol %g)\n%s",
                r, (long long)i,
                raf_elem_get_f64(res[r]->type->dtype, res[r]->data, i),
                raf_elem_get_f64(want[r]->type->dtype, want[r]->data, i), tol,
                text);
        ok = false;
      }
  CHECK(ok);
  if (res && threads_too) {
    raf_tensor **r3 = run_with(text, "llvm,cblas,cpu-ref", 3, &got3, ra, &g3a);
    bool same = r3 != NULL;
    for (int r = 0; same && r < f->nresults; r++)
      same = memcmp(r3[r]->data, res[r]->data, res[r]->nbytes) == 0;
    if (!same)
      fprintf(stderr, "test_llvm: 3 threads differ from 2\n%s", text);
    CHECK(same);
    if (r3)
      free_tensors(&got3, r3, f->nresults);
    free_tensors(&got3, g3a, f->nargs);
    program_close(&got3);
  }
  if (res)
    free_tensors(&got, res, f->nresults);
  free_tensors(&got, ga, f->nargs);
  program_close(&got);
  free_tensors(&ref, want, f->nresults);
  free_tensors(&ref, ra, f->nargs);
  program_close(&ref);
}

/* Whether the lowering took the program's fused function. */
static bool compiles(const char *text) {
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, "prop.raf", text, strlen(text), 1);
  char why[256] = "";
  bool ok = m && raf_cg_supports(raf_module_find_func(m, "fused_0"), NULL,
                                 why, sizeof why);
  if (getenv("TEST_LLVM_VERBOSE") && !ok)
    fprintf(stderr, "test_llvm: declined: %s\n", why);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
  return ok;
}

/* In place (raf_jit_compile's inplace): an update whose first result is
 * computed in its param's buffer, while a later result still reads the
 * param's old value, gives the bits of the kernel with separate buffers;
 * a kernel with a row op is declined. */
static void check_inplace(void) {
  static const char text[] =
      "func @up(%p: f32[1003], %g: f32[1003], %b: f32[1], %lr: f32[])\n"
      "    -> (f32[1003], f32[1003]) {fused} {\n"
      "  %s = mul(%g, %lr) : f32[1003]\n"
      "  %n = sub(%p, %s) : f32[1003]\n"
      "  %q = mul(%p, %p) : f32[1003]\n"
      "  %r = add(%q, %b) : f32[1003]\n"
      "  return %n, %r\n"
      "}\n"
      "func @row(%x: f32[8,16]) -> (f32[8,16]) {fused} {\n"
      "  %y = softmax(%x) {axis = 1} : f32[8,16]\n"
      "  return %y\n"
      "}\n";
  raf_ctx *ctx = raf_ctx_create();
  raf_module *m = raf_parse_module(ctx, "inplace.raf", text, strlen(text), 1);
  raf_jit *j = m && raf_verify_module(ctx, m) == RAF_OK ? raf_jit_create(ctx)
                                                       : NULL;
  CHECK(j != NULL);
  if (!j) {
    raf_diag_render(ctx, stderr);
    raf_module_destroy(m);
    raf_ctx_destroy(ctx);
    return;
  }
  enum { N = 1003 };
  static float p[N], p2[N], g[N], n[N], r[N], r2[N];
  float b = 0.25f, lr = 0.125f;
  for (int i = 0; i < N; i++) {
    p[i] = p2[i] = (float)rand_unit();
    g[i] = (float)rand_unit();
  }
  raf_cg_kernel k, kin;
  raf_cg_info info, iin;
  bool declined;
  char why[256];
  int over_p[] = {0, -1};
  const raf_func *up = raf_module_find_func(m, "up");
  bool ok = raf_jit_compile(j, up, NULL, &k, &info, &declined, why,
                            sizeof why) &&
            raf_jit_compile(j, up, over_p, &kin, &iin, &declined, why,
                            sizeof why);
  CHECK(ok);
  if (ok) {
    void *sep[] = {p, g, &b, &lr, n, r};
    k.fn(sep, 0, info.rows);
    void *same[] = {p2, g, &b, &lr, p2, r2}; /* %n over %p */
    for (int64_t lo = 0; lo < iin.rows; lo += iin.grain)
      kin.fn(same, lo, lo + iin.grain < iin.rows ? lo + iin.grain : iin.rows);
    CHECK(memcmp(p2, n, sizeof n) == 0);
    CHECK(memcmp(r2, r, sizeof r) == 0);
  }
  int over_x[] = {0};
  CHECK(!raf_jit_compile(j, raf_module_find_func(m, "row"), over_x, &k, &info,
                         &declined, why, sizeof why) &&
        declined);
  raf_jit_destroy(j);
  raf_module_destroy(m);
  raf_ctx_destroy(ctx);
}

int main(void) {
  char dir[] = "/tmp/raf-test-llvm-XXXXXX";
  if (!kernel_cache_open(dir))
    return 1;
  check_inplace();
  static const raf_dtype dts[] = {RAF_F32, RAF_F64, RAF_F16, RAF_BF16,
                                  RAF_I64, RAF_I32, RAF_I8,  RAF_U8};
  int total = 0, taken = 0;
  /* Scalar libm: bit-identical. */
  setenv("RAF_JIT_MATH", "exact", 1);
  for (int i = 0; i < 160; i++) {
    char *text = elementwise_program(dts[i % N(dts)]);
    taken += compiles(text);
    total++;
    check_program(text, 0, i % 8 == 0);
    free(text);
  }
  static const raf_dtype fdts[] = {RAF_F32, RAF_F64, RAF_F16, RAF_BF16};
  static const double rtol[] = {1e-5, 1e-12, 2e-3, 1.6e-2};
  for (int i = 0; i < 80; i++) {
    char *text = row_program(fdts[i % 4]);
    taken += compiles(text);
    total++;
    check_program(text, rtol[i % 4], i % 4 == 0);
    free(text);
  }
  for (int i = 0; i < 40; i++) {
    char *text = column_program(fdts[i % 4]);
    taken += compiles(text);
    total++;
    check_program(text, 0, i % 2 == 0);
    free(text);
  }
  /* Mixed precision: f32, bf16 and f16 through casts, elementwise
   * bit-identical; with a row op in f32 between casts, within the
   * reassociation of its double sums and one rounding of the result to
   * bf16 (which that can flip). */
  for (int i = 0; i < 120; i++) {
    bool row = i % 3 == 2;
    char *text = mixed_program(row);
    taken += compiles(text);
    total++;
    check_program(text, row ? 1.6e-2 : 0, i % 6 == 0);
    free(text);
  }
  /* The vectorised math. */
  unsetenv("RAF_JIT_MATH");
  for (int i = 0; i < 24; i++) {
    char *text = elementwise_program(fdts[i % 4]);
    check_program(text, i % 4 >= 2 ? 2e-2 : 1e-3, true);
    free(text);
  }
  fprintf(stderr, "test_llvm: %d of %d programs compiled\n", taken, total);
  CHECK(taken >= total * 9 / 10);
  kernel_cache_remove(dir);
  if (failures)
    fprintf(stderr, "test_llvm: %d failures\n", failures);
  return failures != 0;
}
